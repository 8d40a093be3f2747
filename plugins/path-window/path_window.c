/*
 * path-window - the prompt path that reads short prompt parts through the
 * decode windows: S tokens per forward pass, with the very code a decode
 * step runs (the engine's forward_window), S = [spec] window.
 *
 * Why: a batched run has a fixed cost (on a GPU build, streaming the chunk's
 * non-resident experts and refilling the expert-cache slots it borrowed),
 * while a window costs one decode step per S tokens.  So a part of at most
 * [prompt] short_read tokens (--short-read N, default 64) without picture
 * rows is read here; longer parts, and every part when short_read is 0, are
 * left to the next path in [prompt] paths (normally path-batched).
 *
 * This plugin has no [path-window] section keys: its knobs are shared with
 * the engine under [prompt] and [spec].
 */
#include <errno.h>
#include <stdint.h>

#include "strata/plugin.h"

#define DEFAULT_SHORT_READ 64u

struct window {
	const struct strata_host *host;
	uint32_t short_read; /* 0 = accept nothing */
};

/* Digits only, 0..UINT32_MAX; no sign, space or suffix slips through. */
static int parse_count(const char *s, uint32_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > UINT32_MAX)
			return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

static int window_probe(const struct strata_host *host)
{
	(void)host;
	return 1; /* it only calls back into the engine: fits every machine */
}

static int window_create(const struct strata_host *host, void **state)
{
	struct window *w;
	const char *spec;

	*state = NULL;
	if (!host || host->version < 1)
		return -EPROTO;
	w = host->aligned_alloc(sizeof(void *) * 2, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->host = host;
	w->short_read = DEFAULT_SHORT_READ;
	spec = host->config_get(host, "prompt", "short_read");
	if (spec && parse_count(spec, &w->short_read)) {
		/* The core checks the key; this guards a host that hands text unchecked. */
		host->log(host, STRATA_LOG_ERROR,
			  "[prompt] short_read = '%s' is invalid: expected a token count >= 0", spec);
		host->aligned_free(w);
		return -EINVAL;
	}
	*state = w;
	return 0;
}

static void window_destroy(void *state)
{
	struct window *w = state;

	if (w)
		w->host->aligned_free(w);
}

static int window_accepts(void *state, const struct strata_part *part)
{
	const struct window *w = state;

	return w->short_read > 0 && part->n_tokens <= w->short_read && part->n_pictures == 0;
}

static int window_run(void *state, const struct strata_part *part,
		      const struct strata_engine_iface *eng)
{
	struct window *w = state;
	uint32_t s, done, n;

	if (!eng || eng->version < 1 || !eng->forward_window || !eng->window) {
		w->host->log(w->host, STRATA_LOG_ERROR, "engine has no decode-window forward pass");
		return -EINVAL;
	}
	s = eng->window(eng->engine);
	if (!s) {
		w->host->log(w->host, STRATA_LOG_ERROR, "engine reports a decode window of 0 tokens");
		return -EINVAL;
	}
	for (done = 0; done < part->n_tokens; done += n) {
		int rc;

		n = part->n_tokens - done < s ? part->n_tokens - done : s;
		rc = eng->forward_window(eng->engine, part->tokens + done, n);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static const struct strata_path_ops window_ops = {
	.version = 1,
	.create = window_create,
	.destroy = window_destroy,
	.accepts = window_accepts,
	.run = window_run,
};

static const struct strata_plugin_desc window_desc = {
	.abi = STRATA_PLUGIN_ABI_NEEDS(0),
	.kind = STRATA_PLUGIN_PATH,
	.name = "path-window",
	.version = "1.0.0",
	.description = "short prompt parts (<= [prompt] short_read tokens) read through the "
		       "decode windows, [spec] window tokens per step",
	.probe = window_probe,
	.ops = &window_ops,
	.config_keys = NULL,
};

STRATA_PLUGIN_DEFINE(window_desc)
