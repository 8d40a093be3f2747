/*
 * draft.c - prompt-lookup drafting (see draft.h).
 *
 * A backwards scan per n-gram size: the contexts speculation runs in are a
 * few thousand tokens, so a scan of the sequence (a few microseconds) costs
 * nothing next to the forward pass it saves, and needs no index to keep in
 * step with rollbacks.
 */
#include "sample/draft.h"

#include <string.h>

/* The start of the most recent earlier occurrence of hist[n-g .. n), or -1. */
static int64_t find_earlier(const int32_t *hist, uint32_t n, uint32_t g)
{
	const int32_t *tail = hist + n - g;

	for (int64_t i = (int64_t)n - g - 1; i >= 0; i--)
		if (hist[i + g - 1] == tail[g - 1] && !memcmp(hist + i, tail, g * sizeof(*hist)))
			return i;
	return -1;
}

uint32_t strata_draft_lookup(const int32_t *hist, uint32_t n, uint32_t gmin, uint32_t gmax,
			     int32_t *out, uint32_t max)
{
	if (gmin < 1)
		gmin = 1;
	if (gmax >= n)
		gmax = n ? n - 1 : 0; /* an earlier occurrence needs a token before the tail */
	for (uint32_t g = gmax; g >= gmin && max; g--) {
		int64_t at = find_earlier(hist, n, g);
		uint32_t from, k;

		if (at < 0)
			continue;
		from = (uint32_t)at + g; /* < n: the occurrence starts before n - g */
		k = n - from < max ? n - from : max;
		memcpy(out, hist + from, k * sizeof(*out));
		return k;
	}
	return 0;
}
