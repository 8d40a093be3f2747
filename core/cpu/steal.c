/*
 * steal.c - shares of a product's rows, stolen from when they end unevenly
 * (steal.h).
 */
#include "steal.h"

/* The owner takes this fraction of what remains of its range at a time:
 * large pieces while much is left, ones near min_piece at the end. */
#define OWN_DIV 4

static uint64_t pack(int64_t front, int64_t back)
{
	return (uint64_t)back << 32 | (uint64_t)front;
}

static int64_t front_of(uint64_t v)
{
	return (int64_t)(v & 0xffffffffu);
}

static int64_t back_of(uint64_t v)
{
	return (int64_t)(v >> 32);
}

void strata_steal_init(struct strata_steal *s, int64_t n, int nth, int64_t min_piece)
{
	s->nth = nth;
	s->min_piece = min_piece > 0 ? min_piece : 1;
	for (int i = 0; i < nth; i++) {
		const int64_t per = n / nth, rem = n % nth;
		const int64_t b = i * per + (i < rem ? i : rem);

		atomic_init(&s->r[i].fb, pack(b, b + per + (i < rem ? 1 : 0)));
	}
}

/* A piece from the front of share i's own range. */
static int take_own(struct strata_steal *s, int i, int64_t *u0, int64_t *u1)
{
	uint64_t v = atomic_load_explicit(&s->r[i].fb, memory_order_relaxed);

	for (;;) {
		const int64_t f = front_of(v), b = back_of(v);
		int64_t n = (b - f) / OWN_DIV;

		if (f >= b)
			return 0;
		if (n < s->min_piece)
			n = s->min_piece;
		if (n > b - f)
			n = b - f;
		if (atomic_compare_exchange_weak_explicit(&s->r[i].fb, &v, pack(f + n, b),
							  memory_order_relaxed,
							  memory_order_relaxed)) {
			*u0 = f;
			*u1 = f + n;
			return 1;
		}
	}
}

/* Move the back half of the largest other range into share i's own
 * (empty) one, where it can be stolen again; 0 when all are empty. */
static int steal(struct strata_steal *s, int i)
{
	for (;;) {
		int victim = -1;
		int64_t most = 0, f, b, n;
		uint64_t v = 0;

		for (int j = 0; j < s->nth; j++) {
			uint64_t w = atomic_load_explicit(&s->r[j].fb, memory_order_relaxed);

			if (j != i && back_of(w) - front_of(w) > most) {
				most = back_of(w) - front_of(w);
				victim = j;
				v = w;
			}
		}
		if (victim < 0)
			return 0;
		f = front_of(v);
		b = back_of(v);
		n = b - f <= s->min_piece ? b - f : (b - f + 1) / 2;
		if (n < s->min_piece && b - f >= s->min_piece)
			n = s->min_piece;
		if (atomic_compare_exchange_strong_explicit(&s->r[victim].fb, &v, pack(f, b - n),
							    memory_order_relaxed,
							    memory_order_relaxed)) {
			atomic_store_explicit(&s->r[i].fb, pack(b - n, b), memory_order_relaxed);
			return 1;
		}
	}
}

int strata_steal_next(struct strata_steal *s, int ith, int64_t *u0, int64_t *u1)
{
	while (!take_own(s, ith, u0, u1))
		if (!steal(s, ith))
			return 0;
	return 1;
}
