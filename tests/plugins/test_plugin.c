/*
 * test_plugin.c - the loader tests' plugins, one variant per TP_<VARIANT>
 * define (see CMakeLists.txt).  TP_NAME is "test-<variant>".
 *
 * The good variant is a real path plugin: it accepts text parts of at most
 * [test-good] max_tokens tokens (default 16) and feeds them through the
 * engine's decode windows, so a test can tell which path ran a part.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strata/plugin.h"

#if defined(TP_ABI)
#define TP_ABI_VALUE ((uint32_t)((2u << 16) | 0u))
#elif defined(TP_NEWER)
#define TP_ABI_VALUE ((uint32_t)((STRATA_PLUGIN_ABI_MAJOR << 16) | 9u))
#else
#define TP_ABI_VALUE STRATA_PLUGIN_ABI
#endif

/* Every variant compiles every method; some variants leave some unused. */
#if defined(__GNUC__)
#define TP_UNUSED __attribute__((unused))
#else
#define TP_UNUSED
#endif

struct tp_state {
	const struct strata_host *host;
	uint32_t max_tokens;
};

static int tp_probe(const struct strata_host *host)
{
	(void)host;
#if defined(TP_PROBE0)
	return 0;
#else
	return 3;
#endif
}

static TP_UNUSED int tp_create(const struct strata_host *host, void **state)
{
	struct tp_state *s;
	const char *v = host->config_get(host, NULL, "max_tokens");
	char *end;
	unsigned long max = 16;

	*state = NULL;
	if (v) {
		errno = 0;
		max = strtoul(v, &end, 10);
		if (errno || *end || end == v || max == 0 || max > UINT32_MAX) {
			host->log(host, STRATA_LOG_ERROR, "max_tokens = '%s' is not a count", v);
			return -EINVAL;
		}
	}
	s = host->aligned_alloc(64, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->host = host;
	s->max_tokens = (uint32_t)max;
	*state = s;
	return 0;
}

static TP_UNUSED void tp_destroy(void *state)
{
	struct tp_state *s = state;

	if (s)
		s->host->aligned_free(s);
}

static TP_UNUSED int tp_accepts(void *state, const struct strata_part *part)
{
	struct tp_state *s = state;

	return part->n_pictures == 0 && part->n_tokens <= s->max_tokens;
}

static TP_UNUSED int tp_run(void *state, const struct strata_part *part,
		  const struct strata_engine_iface *eng)
{
	uint32_t w, done, n;

	(void)state;
	if (!eng->forward_window || !eng->window)
		return -ENOTSUP;
	w = eng->window(eng->engine);
	for (done = 0; done < part->n_tokens; done += n) {
		int rc;

		n = part->n_tokens - done < w ? part->n_tokens - done : w;
		rc = eng->forward_window(eng->engine, part->tokens + done, n);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static const char *const tp_keys[] = { "max_tokens", NULL };

#if defined(TP_IO)

/*
 * A whole io ops table (the loader checks every required method, and reads
 * past a shorter stand-in: ASan saw it).  The loader tests only load, list
 * and refuse this variant; it never opens a file, so each method says so.
 */
static int tp_io_open(const struct strata_host *host, const char *path, uint32_t flags,
		      uint32_t depth, void **handle)
{
	(void)host;
	(void)path;
	(void)flags;
	(void)depth;
	*handle = NULL;
	return -ENOSYS;
}

static void tp_io_close(void *handle)
{
	(void)handle;
}

static int tp_io_caps(void *handle, struct strata_io_caps *caps)
{
	(void)handle;
	(void)caps;
	return -ENOSYS;
}

static int64_t tp_io_size(void *handle)
{
	(void)handle;
	return -ENOSYS;
}

static int tp_io_submit(void *handle, struct strata_io_req *const *reqs, uint32_t n)
{
	(void)handle;
	(void)reqs;
	(void)n;
	return -ENOSYS;
}

static int tp_io_reap(void *handle, struct strata_io_req **done, uint32_t min_done,
		      uint32_t max_done, int timeout_ms)
{
	(void)handle;
	(void)done;
	(void)min_done;
	(void)max_done;
	(void)timeout_ms;
	return -ENOSYS;
}

static const struct strata_io_ops tp_ops = {
	.version = 1,
	.open = tp_io_open,
	.close = tp_io_close,
	.caps = tp_io_caps,
	.size = tp_io_size,
	.submit = tp_io_submit,
	.reap = tp_io_reap,
};
#define TP_KIND STRATA_PLUGIN_IO
#define TP_OPS (&tp_ops)

#elif defined(TP_NEWER)

/*
 * A path table from a future header: version 2 appends a method.  This core
 * knows version 1 only; calling the appended method would abort the test.
 */
static void tp_future(void *state)
{
	(void)state;
	abort();
}

static const struct {
	struct strata_path_ops v1;
	void (*future)(void *state);
} tp_ops = {
	.v1 = { .version = 2, .create = tp_create, .destroy = tp_destroy,
		.accepts = tp_accepts, .run = tp_run },
	.future = tp_future,
};
#define TP_KIND STRATA_PLUGIN_PATH
#define TP_OPS (&tp_ops)

#else

static const struct strata_path_ops tp_ops = {
	.version = 1,
	.create = tp_create,
	.destroy = tp_destroy,
#if defined(TP_NULLMETHOD)
	.accepts = NULL,
#else
	.accepts = tp_accepts,
#endif
	.run = tp_run,
};
#define TP_KIND STRATA_PLUGIN_PATH
#define TP_OPS (&tp_ops)

#endif

static TP_UNUSED const struct strata_plugin_desc tp_desc = {
	.abi = TP_ABI_VALUE,
	.kind = TP_KIND,
	.name = TP_NAME,
	.version = "0.0.1",
	.description = "loader test plugin",
	.probe = tp_probe,
	.ops = TP_OPS,
	.config_keys = tp_keys,
};

#if defined(TP_NOENTRY)
/* Exported, but under another name: the loader must not find an entry. */
STRATA_PLUGIN_EXPORT const struct strata_plugin_desc *strata_plugin_entry_v0(void)
{
	return &tp_desc;
}
#else
STRATA_PLUGIN_EXPORT const struct strata_plugin_desc *strata_plugin_entry(void)
{
#if defined(TP_NULLENTRY)
	return NULL;
#else
	return &tp_desc;
#endif
}
#endif
