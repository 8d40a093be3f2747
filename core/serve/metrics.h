/*
 * metrics.h - the server's counters, exposed as Prometheus text (/metrics).
 */
#ifndef STRATA_SERVE_METRICS_H
#define STRATA_SERVE_METRICS_H

#include <pthread.h>
#include <stdint.h>

#include "util/strbuf.h"
#include "strata.h"

#define STRATA_TTFT_BUCKETS 12

struct strata_metrics {
	pthread_mutex_t lock;
	uint64_t by_status[600];      /* HTTP responses by status code (100..599) */
	uint64_t prompt_tokens;       /* prompt tokens evaluated */
	uint64_t gen_tokens;          /* tokens generated */
	uint64_t reused_tokens;       /* prompt tokens resumed from the sequence's state */
	uint64_t ckpt_hits;           /* requests that resumed from a checkpoint */
	uint64_t cancelled;           /* generations stopped because the client left */
	double prompt_tps, decode_tps;/* of the last generation */
	uint64_t ttft_count[STRATA_TTFT_BUCKETS + 1]; /* per bucket, the last is +Inf */
	double ttft_sum;
	uint64_t ttft_n;
	uint64_t failed;              /* generations the engine failed (500) */
	uint64_t spec_windows, spec_drafted, spec_accepted; /* speculative decoding's totals */
	int experts;                  /* streamed experts: xs holds their totals */
	struct strata_expert_stats xs;
	int gpu_cache;                /* a device's expert cache: gc holds its totals */
	struct strata_gpu_cache_stats gc;
};

/* Zero the counters and make the lock; 0 or a negative errno. */
int strata_metrics_init(struct strata_metrics *m);
void strata_metrics_destroy(struct strata_metrics *m);

/* One generation the engine failed. */
void strata_metrics_failed(struct strata_metrics *m);
/* The streamed experts' totals now (shown from then on). */
void strata_metrics_experts(struct strata_metrics *m, const struct strata_expert_stats *st);
/* The device's expert cache totals (strata_engine_gpu_cache_stats). */
void strata_metrics_gpu_cache(struct strata_metrics *m, const struct strata_gpu_cache_stats *st);

/* One response sent with HTTP status `status`. */
void strata_metrics_status(struct strata_metrics *m, unsigned status);

/*
 * One finished generation: token counts, prompt and decode milliseconds,
 * n_reused prompt tokens resumed (> 0 counts a checkpoint hit), ttft_s the
 * seconds from the request's arrival to its first token (< 0: no token),
 * cancelled when the client went away.
 */
void strata_metrics_generation(struct strata_metrics *m, uint32_t n_prompt, uint32_t n_gen,
			       double prompt_ms, double gen_ms, uint32_t n_reused,
			       double ttft_s, int cancelled);

/*
 * Append the Prometheus text exposition (format 0.0.4) to out; queued and
 * busy are the queue's state now.
 */
/* A generation's verify windows, drafted tokens and kept drafts ([spec] drafter). */
void strata_metrics_spec(struct strata_metrics *m, uint32_t windows, uint32_t drafted,
			 uint32_t accepted);

void strata_metrics_render(struct strata_metrics *m, unsigned queued, int busy,
			   struct strata_buf *out);

#endif
