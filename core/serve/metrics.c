/*
 * metrics.c - counters, gauges and a first-token latency histogram in the
 * Prometheus text format (https://prometheus.io/docs/instrumenting/exposition_formats/).
 */
#include "serve/metrics.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Upper bounds of the first-token latency buckets, in seconds. */
static const double g_ttft_le[STRATA_TTFT_BUCKETS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
};

int strata_metrics_init(struct strata_metrics *m)
{
	memset(m, 0, sizeof(*m));
	return -pthread_mutex_init(&m->lock, NULL);
}

void strata_metrics_destroy(struct strata_metrics *m)
{
	pthread_mutex_destroy(&m->lock);
}

void strata_metrics_status(struct strata_metrics *m, unsigned status)
{
	if (status >= 600)
		return;
	pthread_mutex_lock(&m->lock);
	m->by_status[status]++;
	pthread_mutex_unlock(&m->lock);
}

void strata_metrics_failed(struct strata_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	m->failed++;
	pthread_mutex_unlock(&m->lock);
}

void strata_metrics_experts(struct strata_metrics *m, const struct strata_expert_stats *st)
{
	pthread_mutex_lock(&m->lock);
	m->experts = 1;
	m->xs = *st;
	pthread_mutex_unlock(&m->lock);
}

void strata_metrics_gpu_cache(struct strata_metrics *m, const struct strata_gpu_cache_stats *st)
{
	pthread_mutex_lock(&m->lock);
	m->gpu_cache = 1;
	m->gc = *st;
	pthread_mutex_unlock(&m->lock);
}

void strata_metrics_spec(struct strata_metrics *m, uint32_t windows, uint32_t drafted,
			 uint32_t accepted)
{
	pthread_mutex_lock(&m->lock);
	m->spec_windows += windows;
	m->spec_drafted += drafted;
	m->spec_accepted += accepted;
	pthread_mutex_unlock(&m->lock);
}

void strata_metrics_generation(struct strata_metrics *m, uint32_t n_prompt, uint32_t n_gen,
			       double prompt_ms, double gen_ms, uint32_t n_reused,
			       double ttft_s, int cancelled)
{
	size_t b = 0;

	pthread_mutex_lock(&m->lock);
	m->prompt_tokens += n_prompt - n_reused;
	m->gen_tokens += n_gen;
	m->reused_tokens += n_reused;
	m->ckpt_hits += n_reused > 0;
	m->cancelled += cancelled != 0;
	if (prompt_ms > 0 && n_prompt > n_reused)
		m->prompt_tps = (n_prompt - n_reused) * 1e3 / prompt_ms;
	if (gen_ms > 0 && n_gen > 0)
		m->decode_tps = n_gen * 1e3 / gen_ms;
	if (ttft_s >= 0) {
		while (b < STRATA_TTFT_BUCKETS && ttft_s > g_ttft_le[b])
			b++;
		m->ttft_count[b]++;
		m->ttft_sum += ttft_s;
		m->ttft_n++;
	}
	pthread_mutex_unlock(&m->lock);
}

static void family(struct strata_buf *out, const char *name, const char *type, const char *help)
{
	strata_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render_ttft(const struct strata_metrics *m, struct strata_buf *out)
{
	uint64_t cum = 0;

	family(out, "strata_first_token_seconds", "histogram",
	       "Seconds from a request's arrival to its first generated token.");
	for (size_t b = 0; b < STRATA_TTFT_BUCKETS; b++) {
		cum += m->ttft_count[b];
		strata_buf_printf(out, "strata_first_token_seconds_bucket{le=\"%g\"} %llu\n",
				  g_ttft_le[b], (unsigned long long)cum);
	}
	cum += m->ttft_count[STRATA_TTFT_BUCKETS];
	strata_buf_printf(out, "strata_first_token_seconds_bucket{le=\"+Inf\"} %llu\n",
			  (unsigned long long)cum);
	strata_buf_printf(out, "strata_first_token_seconds_sum %.6f\n", m->ttft_sum);
	strata_buf_printf(out, "strata_first_token_seconds_count %llu\n", (unsigned long long)m->ttft_n);
}

/* One counter family per what[i] ({suffix, help}), named strata_PREFIX_SUFFIX_total. */
static void render_counters(struct strata_buf *out, const char *prefix,
			    const char *const (*what)[2], const uint64_t *v, size_t n)
{
	char name[80];

	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "strata_%s_%s_total", prefix, what[i][0]);
		family(out, name, "counter", what[i][1]);
		strata_buf_printf(out, "%s %llu\n", name, (unsigned long long)v[i]);
	}
}

static void render_experts(const struct strata_metrics *m, struct strata_buf *out)
{
	static const char *const what[][2] = {
		{ "hits", "Streamed experts found in the RAM cache." },
		{ "misses", "Streamed experts read from the model file." },
		{ "reads", "Expert reads that landed." },
		{ "read_bytes", "Bytes of expert reads that landed." },
		{ "read_retries", "Expert reads repeated after a failure or a short count." },
		{ "fetch_failures", "Forward passes failed by an expert read." },
	};
	const uint64_t v[] = { m->xs.hits, m->xs.misses, m->xs.reads, m->xs.bytes,
			       m->xs.retries, m->xs.failures };

	render_counters(out, "expert", what, v, sizeof(v) / sizeof(v[0]));
	family(out, "strata_expert_cache_slots", "gauge", "Experts the RAM cache holds.");
	strata_buf_printf(out, "strata_expert_cache_slots %u\n", m->xs.slots);
}

static void render_gpu_cache(const struct strata_metrics *m, struct strata_buf *out)
{
	static const char *const what[][2] = {
		{ "hits", "Routed (token, expert) pairs whose expert the device's cache held." },
		{ "misses", "Routed (token, expert) pairs whose expert it did not hold." },
		{ "fills", "Experts copied into a free cache slot on first use." },
		{ "swaps", "Cached experts replaced by adaptive rounds." },
		{ "link_runs", "Missed experts copied over the link and run on the device." },
		{ "lent", "Experts prompt chunks streamed into borrowed cache slots." },
		{ "refills", "Experts copied back into borrowed slots before decoding." },
		{ "copied_bytes", "Expert bytes copied to the device while running." },
	};
	const uint64_t v[] = { m->gc.hits, m->gc.misses, m->gc.fills, m->gc.swaps, m->gc.pcie,
			       m->gc.lent, m->gc.refills, m->gc.bytes_in };

	render_counters(out, "gpu_expert", what, v, sizeof(v) / sizeof(v[0]));
	family(out, "strata_gpu_expert_cache_slots", "gauge", "Experts the device's cache holds.");
	strata_buf_printf(out, "strata_gpu_expert_cache_slots %u\n", m->gc.slots);
}

void strata_metrics_render(struct strata_metrics *m, unsigned queued, int busy,
			   struct strata_buf *out)
{
	pthread_mutex_lock(&m->lock);
	family(out, "strata_requests_total", "counter", "HTTP responses by status code.");
	for (unsigned s = 100; s < 600; s++)
		if (m->by_status[s])
			strata_buf_printf(out, "strata_requests_total{status=\"%u\"} %llu\n", s,
					  (unsigned long long)m->by_status[s]);
	family(out, "strata_prompt_tokens_total", "counter", "Prompt tokens evaluated.");
	strata_buf_printf(out, "strata_prompt_tokens_total %llu\n", (unsigned long long)m->prompt_tokens);
	family(out, "strata_generated_tokens_total", "counter", "Tokens generated.");
	strata_buf_printf(out, "strata_generated_tokens_total %llu\n", (unsigned long long)m->gen_tokens);
	family(out, "strata_prompt_tokens_per_second", "gauge",
	       "Prompt evaluation speed of the last generation.");
	strata_buf_printf(out, "strata_prompt_tokens_per_second %.3f\n", m->prompt_tps);
	family(out, "strata_decode_tokens_per_second", "gauge",
	       "Generation speed of the last generation.");
	strata_buf_printf(out, "strata_decode_tokens_per_second %.3f\n", m->decode_tps);
	render_ttft(m, out);
	family(out, "strata_spec_windows_total", "counter",
	       "Forward passes that verified drafted tokens ([spec] drafter).");
	strata_buf_printf(out, "strata_spec_windows_total %llu\n",
			  (unsigned long long)m->spec_windows);
	family(out, "strata_spec_drafted_tokens_total", "counter", "Tokens drafted for verification.");
	strata_buf_printf(out, "strata_spec_drafted_tokens_total %llu\n",
			  (unsigned long long)m->spec_drafted);
	family(out, "strata_spec_accepted_tokens_total", "counter",
	       "Drafted tokens the model kept.");
	strata_buf_printf(out, "strata_spec_accepted_tokens_total %llu\n",
			  (unsigned long long)m->spec_accepted);
	family(out, "strata_checkpoint_hits_total", "counter",
	       "Requests that resumed from a turn checkpoint instead of re-reading the prompt.");
	strata_buf_printf(out, "strata_checkpoint_hits_total %llu\n", (unsigned long long)m->ckpt_hits);
	family(out, "strata_prompt_tokens_reused_total", "counter",
	       "Prompt tokens resumed from the sequence's state, not evaluated.");
	strata_buf_printf(out, "strata_prompt_tokens_reused_total %llu\n",
			  (unsigned long long)m->reused_tokens);
	family(out, "strata_requests_cancelled_total", "counter",
	       "Generations stopped because the client disconnected.");
	strata_buf_printf(out, "strata_requests_cancelled_total %llu\n", (unsigned long long)m->cancelled);
	/* the engine's thread writes these too (under the lock): read them under it */
	family(out, "strata_requests_failed_total", "counter",
	       "Generations the engine failed (answered 500 with its error).");
	strata_buf_printf(out, "strata_requests_failed_total %llu\n", (unsigned long long)m->failed);
	if (m->experts)
		render_experts(m, out);
	if (m->gpu_cache)
		render_gpu_cache(m, out);
	pthread_mutex_unlock(&m->lock);
	family(out, "strata_queue_waiting", "gauge", "Requests waiting for the engine.");
	strata_buf_printf(out, "strata_queue_waiting %u\n", queued);
	family(out, "strata_busy", "gauge", "1 while a generation runs.");
	strata_buf_printf(out, "strata_busy %d\n", busy ? 1 : 0);
}
