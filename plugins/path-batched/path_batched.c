/*
 * path-batched - the prompt path that takes every part and feeds it to the
 * engine's batched forward pass in chunks.
 *
 * The chunk size is the [prefill] chunk setting (--prefill, STRATA_PREFILL_CHUNK):
 *   auto      8192 tokens
 *   auto:N    N tokens
 *   N         N tokens
 * with N >= 1, and never more than the engine's max_batch().  Larger chunks
 * amortise weight reads over more tokens; smaller ones bound the activation
 * memory and let the PLE reads of the next chunk overlap this one's compute.
 *
 * This plugin has no [path-batched] section keys: its one knob is shared
 * with the engine under [prefill].
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "strata/plugin.h"

#define AUTO_CHUNK 8192u

struct batched {
	const struct strata_host *host;
	uint32_t chunk;
};

/* Digits only, 1..UINT32_MAX; no sign, space or suffix slips through. */
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
	if (v < 1)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int parse_chunk(const char *spec, uint32_t *chunk)
{
	if (!strcmp(spec, "auto")) {
		*chunk = AUTO_CHUNK;
		return 0;
	}
	if (!strncmp(spec, "auto:", 5))
		return parse_count(spec + 5, chunk);
	return parse_count(spec, chunk);
}

static int batched_probe(const struct strata_host *host)
{
	(void)host;
	return 1; /* plain CPU-side loop: fits every machine */
}

static int batched_create(const struct strata_host *host, void **state)
{
	struct batched *b;
	const char *spec;

	*state = NULL;
	if (!host || host->version < 1)
		return -EPROTO;
	spec = host->config_get(host, "prefill", "chunk");
	if (!spec)
		spec = "auto";
	b = host->aligned_alloc(sizeof(void *) * 2, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->host = host;
	if (parse_chunk(spec, &b->chunk)) {
		host->log(host, STRATA_LOG_ERROR,
			  "[prefill] chunk = '%s' is invalid: expected auto, auto:N or N "
			  "with 1 <= N <= %u",
			  spec, (unsigned)UINT32_MAX);
		host->aligned_free(b);
		return -EINVAL;
	}
	*state = b;
	return 0;
}

static void batched_destroy(void *state)
{
	struct batched *b = state;

	if (b)
		b->host->aligned_free(b);
}

static int batched_accepts(void *state, const struct strata_part *part)
{
	(void)state;
	(void)part;
	return 1;
}

static int batched_run(void *state, const struct strata_part *part,
		       const struct strata_engine_iface *eng)
{
	struct batched *b = state;
	uint32_t chunk = b->chunk, done, n;

	if (!eng || eng->version < 1 || !eng->forward_batch) {
		b->host->log(b->host, STRATA_LOG_ERROR, "engine has no batched forward pass");
		return -EINVAL;
	}
	if (eng->max_batch) {
		uint32_t cap = eng->max_batch(eng->engine);

		if (!cap) {
			b->host->log(b->host, STRATA_LOG_ERROR, "engine reports a max batch of 0");
			return -EINVAL;
		}
		if (cap < chunk)
			chunk = cap;
	}
	for (done = 0; done < part->n_tokens; done += n) {
		int rc;

		n = part->n_tokens - done < chunk ? part->n_tokens - done : chunk;
		rc = eng->forward_batch(eng->engine, part->tokens + done, n);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static const struct strata_path_ops batched_ops = {
	.version = 1,
	.create = batched_create,
	.destroy = batched_destroy,
	.accepts = batched_accepts,
	.run = batched_run,
};

static const struct strata_plugin_desc batched_desc = {
	.abi = STRATA_PLUGIN_ABI_NEEDS(0),
	.kind = STRATA_PLUGIN_PATH,
	.name = "path-batched",
	.version = "1.0.0",
	.description = "prompt parts fed to the model in batched chunks ([prefill] chunk)",
	.probe = batched_probe,
	.ops = &batched_ops,
	.config_keys = NULL,
};

STRATA_PLUGIN_DEFINE(batched_desc)
