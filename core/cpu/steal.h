/*
 * steal.h - private: a product's row groups shared among the pool's
 * threads by ranges that can be stolen from.
 *
 * Why: decode runs ~90 products a token, each 20-60 us on two threads.
 * Handed out as four equal chunks from one counter, the thread that ends
 * first waited on the other's last chunk: ~1.6 us a product, 5-10% of a
 * decode step (bench-qwen3moe, Zen 5, 2 threads).  Here each share owns a
 * contiguous range and takes it front to back in shrinking pieces (its rows
 * stay one stream for the prefetchers); a share whose range is done takes
 * the back half of the largest remaining range, so the threads end within
 * about one piece of each other, and a helper that wakes late finds its
 * range already shortened from the back.
 *
 * Each range is one 64-bit word, back << 32 | front, changed only by
 * compare-and-swap: the owner moves front up, thieves move back down.
 */
#ifndef STRATA_STEAL_H
#define STRATA_STEAL_H

#include <stdatomic.h>
#include <stdint.h>

#define STRATA_STEAL_MAX 64 /* shares; more threads use the chunk counter */

struct strata_steal {
	int nth;
	int64_t min_piece; /* units below which a piece is not cut further */
	struct {
		_Alignas(64) _Atomic uint64_t fb;
	} r[STRATA_STEAL_MAX];
};

/*
 * Split units [0, n) into nth near-equal ranges (1 <= nth <=
 * STRATA_STEAL_MAX, n < 2^32), one per share, pieces of at least
 * min_piece units (>= 1) while that many remain.
 */
void strata_steal_init(struct strata_steal *s, int64_t n, int nth, int64_t min_piece);

/*
 * The next piece [*u0, *u1) for share ith: from the front of its own range
 * while any is left, else from the back of the largest other one.  1 when a
 * piece was taken, 0 when every range is empty.  Thread-safe.
 */
int strata_steal_next(struct strata_steal *s, int ith, int64_t *u0, int64_t *u1);

#endif
