/*
 * ple_stats.c - read-latency histograms and the per-chunk stats line.
 */
#include "ple/ple_int.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/*
 * Buckets: exact microseconds below 32, then 16 buckets per power of two,
 * so any latency up to ~70 minutes lands in a bucket ~6% wide.
 */
static uint32_t bucket_of(uint64_t us)
{
	uint32_t e = 0;

	if (us < 32)
		return (uint32_t)us;
	for (uint64_t v = us; v > 1; v >>= 1)
		e++;
	{
		uint32_t idx = 32 + (e - 5) * 16 + (uint32_t)((us >> (e - 4)) & 15);

		return idx < PLE_HIST_BUCKETS ? idx : PLE_HIST_BUCKETS - 1;
	}
}

/* The middle of bucket i, in microseconds. */
static double bucket_mid(uint32_t i)
{
	uint32_t e, sub;

	if (i < 32)
		return i;
	e = (i - 32) / 16 + 5;
	sub = (i - 32) % 16;
	return ((double)(16 + sub) + 0.5) * (double)(1ull << (e - 4));
}

void strata_ple_hist_add(struct ple_hist *h, uint64_t ns)
{
	h->n[bucket_of(ns / 1000)]++;
	h->count++;
}

void strata_ple_hist_merge(struct ple_hist *into, const struct ple_hist *h)
{
	for (int i = 0; i < PLE_HIST_BUCKETS; i++)
		into->n[i] += h->n[i];
	into->count += h->count;
}

double strata_ple_hist_quantile(const struct ple_hist *h, double q)
{
	uint64_t want, seen = 0;

	if (!h->count)
		return 0;
	want = (uint64_t)(q * (double)h->count);
	if (want >= h->count)
		want = h->count - 1;
	for (uint32_t i = 0; i < PLE_HIST_BUCKETS; i++) {
		seen += h->n[i];
		if (seen > want)
			return bucket_mid(i);
	}
	return bucket_mid(PLE_HIST_BUCKETS - 1);
}

void strata_ple_stats_line(const struct strata_ple_stats *s, char *buf, size_t n)
{
	double hit = s->rows ? 100.0 * (double)s->hits / (double)s->rows : 0.0;

	snprintf(buf, n,
		 "ple io: %llu rows, %.1f%% row-cache hits, %llu SSD reads (%.1f MB), "
		 "read p50/p99 %.0f/%.0f us, blocked %.2f ms (submit %.2f ms)",
		 (unsigned long long)s->rows, hit, (unsigned long long)s->reads,
		 (double)s->reads * STRATA_PLE_PAGE / 1e6, s->read_p50_us, s->read_p99_us,
		 s->blocked_ms, s->submit_ms);
}
