/*
 * draft.h - drafters for speculative decoding that need no weights.
 *
 * Prompt lookup: text that repeats itself (code being edited, quotes,
 * tables, a list's structure) is drafted from the sequence's own tokens.
 * The sequence's last g tokens are looked for earlier in it, the largest g
 * first, and the tokens that followed the most recent earlier occurrence
 * are the draft.  The model then verifies the draft in one forward pass
 * (sampler.h, strata_sampler_verify), so a wrong draft costs time, never a
 * different output.
 */
#ifndef STRATA_DRAFT_H
#define STRATA_DRAFT_H

#include <stdint.h>

/*
 * Up to max tokens into out: what followed the most recent earlier
 * occurrence of hist[n-g .. n), for the largest g in [gmin, gmax] that
 * occurs earlier (gmin >= 1).  The draft never reads past hist[n-1].
 * Returns how many tokens were written; 0 when nothing matches (or n, max
 * or gmax is 0).  O(n * gmax) per call.
 */
uint32_t strata_draft_lookup(const int32_t *hist, uint32_t n, uint32_t gmin, uint32_t gmax,
			     int32_t *out, uint32_t max);

#endif
