/*
 * sampler.c - repetition penalty, top-k, top-p, min-p, temperature, draw.
 *
 * Cost per token is one pass over the vocabulary plus work on the few
 * candidates that survive: top-k keeps a k-element heap instead of sorting
 * the vocabulary, and top-p without top-k is a quickselect on probability
 * mass.  The penalty works on a copy, so the caller's logits are never
 * written.
 */
#include "sample/sampler.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "plat/plat.h"
#include "util/log.h"

struct cand {
	float v;   /* logit */
	float w;   /* exp(v - max), for top-p */
	int32_t id;
};

struct strata_sampler {
	struct strata_sampler_params p;
	int32_t n_vocab;
	uint64_t seed;
	uint64_t rng[4];
	struct cand *cand; /* n_vocab */
	float *work;       /* n_vocab penalised logits; NULL when the penalty is off */
	uint32_t *stamp;   /* n_vocab: "already penalised this call" marks */
	uint32_t gen;
	int32_t *hist;     /* ring of the last repeat_last_n tokens */
	int32_t n_hist, pos;
};

/* ---- random numbers: splitmix64 to seed, xoshiro256** to draw ------------- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t next_u64(uint64_t s[4])
{
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

/* Uniform in [0, 1) with 53 random bits. */
static double next_double(uint64_t s[4])
{
	return (double)(next_u64(s) >> 11) * 0x1.0p-53;
}

static uint64_t fresh_seed(void)
{
	uint64_t v;
	struct timespec ts;

	if (strata_random_bytes(&v, sizeof(v)) == 0 && v != STRATA_SAMPLER_SEED_RANDOM)
		return v;
	clock_gettime(CLOCK_REALTIME, &ts);
	v = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
	return v == STRATA_SAMPLER_SEED_RANDOM ? 0 : v;
}

/* ---- create / free ------------------------------------------------------------ */

static int check_params(const struct strata_sampler_params *p, int32_t n_vocab)
{
	const char *bad = NULL;

	if (n_vocab <= 0)
		bad = "n_vocab must be > 0";
	else if (isnan(p->temp))
		bad = "temp is NaN";
	else if (p->top_k < 0)
		bad = "top_k must be >= 0";
	else if (!(p->top_p > 0 && p->top_p <= 1))
		bad = "top_p must be in (0, 1]";
	else if (!(p->min_p >= 0 && p->min_p <= 1))
		bad = "min_p must be in [0, 1]";
	else if (!(p->repeat_penalty > 0 && isfinite(p->repeat_penalty)))
		bad = "repeat_penalty must be > 0";
	else if (p->repeat_last_n < 0)
		bad = "repeat_last_n must be >= 0";
	if (!bad)
		return 0;
	strata_error("sampler: %s (n_vocab %d, temp %g, top_k %d, top_p %g, min_p %g, "
		     "repeat_penalty %g, repeat_last_n %d)", bad, (int)n_vocab, (double)p->temp,
		     (int)p->top_k, (double)p->top_p, (double)p->min_p,
		     (double)p->repeat_penalty, (int)p->repeat_last_n);
	return -EINVAL;
}

int strata_sampler_create(const struct strata_sampler_params *p, int32_t n_vocab,
			  struct strata_sampler **out)
{
	struct strata_sampler *s;
	uint64_t x;
	int rc;

	*out = NULL;
	if ((rc = check_params(p, n_vocab)))
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->p = *p;
	s->n_vocab = n_vocab;
	s->cand = malloc((size_t)n_vocab * sizeof(*s->cand));
	rc = s->cand ? 0 : -ENOMEM;
	if (p->repeat_penalty != 1.0f && p->repeat_last_n > 0) {
		s->work = malloc((size_t)n_vocab * sizeof(*s->work));
		s->stamp = calloc((size_t)n_vocab, sizeof(*s->stamp));
		s->hist = malloc((size_t)p->repeat_last_n * sizeof(*s->hist));
		if (!s->work || !s->stamp || !s->hist)
			rc = -ENOMEM;
	}
	if (rc) {
		strata_sampler_free(s);
		return -ENOMEM;
	}
	s->seed = p->seed == STRATA_SAMPLER_SEED_RANDOM ? fresh_seed() : p->seed;
	x = s->seed;
	for (int i = 0; i < 4; i++)
		s->rng[i] = splitmix64(&x);
	*out = s;
	return 0;
}

void strata_sampler_free(struct strata_sampler *s)
{
	if (!s)
		return;
	free(s->cand);
	free(s->work);
	free(s->stamp);
	free(s->hist);
	free(s);
}

void strata_sampler_reset(struct strata_sampler *s)
{
	s->n_hist = 0;
	s->pos = 0;
}

void strata_sampler_accept(struct strata_sampler *s, int32_t tok)
{
	int32_t cap = s->p.repeat_last_n;

	if (!s->hist || tok < 0 || tok >= s->n_vocab)
		return;
	s->hist[s->pos] = tok;
	s->pos = (s->pos + 1) % cap;
	if (s->n_hist < cap)
		s->n_hist++;
}

uint64_t strata_sampler_seed(const struct strata_sampler *s)
{
	return s->seed;
}

/* ---- the chain ---------------------------------------------------------------- */

/* Each distinct recent token once, as llama.cpp does: positive / penalty, negative * penalty. */
static const float *penalise(struct strata_sampler *s, const float *logits)
{
	float pen = s->p.repeat_penalty;

	if (!s->work || s->n_hist == 0)
		return logits;
	memcpy(s->work, logits, (size_t)s->n_vocab * sizeof(float));
	if (++s->gen == 0) {
		memset(s->stamp, 0, (size_t)s->n_vocab * sizeof(*s->stamp));
		s->gen = 1;
	}
	for (int32_t i = 0; i < s->n_hist; i++) {
		int32_t t = s->hist[i];

		if (s->stamp[t] == s->gen)
			continue;
		s->stamp[t] = s->gen;
		s->work[t] = s->work[t] > 0 ? s->work[t] / pen : s->work[t] * pen;
	}
	return s->work;
}

/* a ranks before b: higher logit, then lower id, so every order is total. */
static int better(const struct cand *a, const struct cand *b)
{
	return a->v > b->v || (a->v == b->v && a->id < b->id);
}

static void swap(struct cand *a, struct cand *b)
{
	struct cand t = *a;

	*a = *b;
	*b = t;
}

/* Restore the min-heap (worst at the root) below i. */
static void sift(struct cand *c, int32_t n, int32_t i)
{
	for (;;) {
		int32_t l = 2 * i + 1, r = l + 1, t = i;

		if (l < n && better(&c[t], &c[l]))
			t = l;
		if (r < n && better(&c[t], &c[r]))
			t = r;
		if (t == i)
			return;
		swap(&c[i], &c[t]);
		i = t;
	}
}

/* The k best of src into c[0..k), best first: a k-heap over one pass. */
static void top_k(struct cand *c, const float *src, int32_t n, int32_t k)
{
	for (int32_t i = 0; i < k; i++)
		c[i] = (struct cand){ src[i], 0, i };
	for (int32_t i = k / 2; i-- > 0;)
		sift(c, k, i);
	for (int32_t i = k; i < n; i++) {
		/* An equal logit never wins: its id is higher than every id held. */
		if (src[i] > c[0].v) {
			c[0] = (struct cand){ src[i], 0, i };
			sift(c, k, 0);
		}
	}
	/* Heapsort: popping the worst to the back leaves the best first. */
	for (int32_t m = k; m > 1; m--) {
		swap(&c[0], &c[m - 1]);
		sift(c, m - 1, 0);
	}
}

/*
 * Top-p on m unsorted candidates with their weights w: the fewest best ones
 * whose weight reaches need, moved to the front (in no particular order);
 * returns how many.  A quickselect on mass instead of a sort, so a flat
 * distribution over 150K tokens costs a few passes, not n log n.
 */
static int32_t top_p_unsorted(struct cand *c, int32_t m, double need)
{
	/* c[0..lo) are kept and rank above all the rest; the answer is in (lo, hi]. */
	int32_t lo = 0, hi = m;
	double kept = 0;

	while (hi - lo > 1) {
		int32_t p = lo;
		double above = 0;

		swap(&c[lo + (hi - lo) / 2], &c[hi - 1]); /* pivot to the end */
		for (int32_t j = lo; j < hi - 1; j++)
			if (better(&c[j], &c[hi - 1])) {
				above += c[j].w;
				swap(&c[p++], &c[j]);
			}
		swap(&c[p], &c[hi - 1]);
		if (kept + above >= need) {
			hi = p;
		} else {
			kept += above + c[p].w;
			lo = p + 1;
			if (kept >= need)
				return lo;
		}
	}
	return hi;
}

/*
 * First index of the highest value.  Eight running maxima keep the pass free
 * of a loop-carried dependency (a single max chains every step on the last);
 * the second pass stops at the first hit.
 */
static int32_t argmax(const float *x, int32_t n)
{
	float lane[8], mx = -INFINITY;
	int32_t i = 0;

	for (int j = 0; j < 8; j++)
		lane[j] = -INFINITY;
	for (; i + 8 <= n; i += 8)
		for (int j = 0; j < 8; j++)
			lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
	for (; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	for (int j = 0; j < 8; j++)
		mx = lane[j] > mx ? lane[j] : mx;
	for (i = 0; i < n; i++)
		if (x[i] == mx)
			return i;
	return 0; /* all NaN */
}

/*
 * The candidates top-k leaves, best first (*sorted = 1), or with top-k off
 * the whole vocabulary in id order; *mx is the highest logit.  When top-p is
 * off, min-p's cut is made here so the rest never enters the array.
 */
static int32_t candidates(struct strata_sampler *s, const float *src, float *mx, int *sorted)
{
	struct cand *c = s->cand;
	int32_t n = s->n_vocab, k = s->p.top_k, m = 0;
	float thr = -INFINITY;

	if (k > 0 && k < n) {
		top_k(c, src, n, k);
		*mx = c[0].v;
		*sorted = 1;
		return k;
	}
	*mx = src[argmax(src, n)];
	if (s->p.top_p >= 1.0f && s->p.min_p > 0.0f)
		thr = *mx + logf(s->p.min_p);
	for (int32_t i = 0; i < n; i++) {
		/* Branch-free: which tokens pass is as good as random to the predictor. */
		c[m] = (struct cand){ src[i], 0, i };
		m += src[i] >= thr;
	}
	*sorted = 0;
	return m;
}

/* Top-p over c[0..m): how many to keep (moved to the front). */
static int32_t top_p(struct cand *c, int32_t m, float p, float mx, int sorted)
{
	double sum = 0, need, cum = 0;
	int32_t i = 0;

	for (int32_t j = 0; j < m; j++) {
		c[j].w = expf(c[j].v - mx);
		sum += c[j].w;
	}
	need = (double)p * sum;
	if (!sorted)
		return top_p_unsorted(c, m, need);
	while (i < m) {
		cum += c[i++].w;
		if (cum >= need)
			break;
	}
	return i;
}

/*
 * The chain up to the draw: the candidates left in s->cand[0..m) with their
 * unnormalised probabilities in .v and *sum their total.  Returns m, or 0
 * with *tok the token when there is nothing to draw (greedy; every logit
 * masked or NaN).
 */
static int32_t weigh(struct strata_sampler *s, const float *logits, double *sum, int32_t *tok)
{
	const float *src = penalise(s, logits);
	struct cand *c = s->cand;
	int32_t m;
	int sorted;
	float mx;

	*sum = 0;
	if (!(s->p.temp > 0)) {
		*tok = argmax(src, s->n_vocab);
		return 0;
	}
	m = candidates(s, src, &mx, &sorted);
	if (m == 0 || (isinf(mx) && mx < 0)) {
		*tok = argmax(src, s->n_vocab); /* all masked (or NaN): nothing to draw from */
		return 0;
	}
	if (s->p.top_p < 1.0f)
		m = top_p(c, m, s->p.top_p, mx, sorted);
	if (s->p.min_p > 0.0f) {
		/* p_i >= min_p * p_max  <=>  logit_i >= logit_max + log(min_p): no softmax needed. */
		float thr = mx + logf(s->p.min_p);
		int32_t j = 0;

		for (int32_t i = 0; i < m; i++)
			if (c[i].v >= thr)
				c[j++] = c[i];
		m = j;
	}
	for (int32_t i = 0; i < m; i++) {
		c[i].v = expf((c[i].v - mx) / s->p.temp);
		*sum += c[i].v;
	}
	return m;
}

/* A draw from c[0..m) by weight (total sum), leaving out id `skip` (-1: none). */
static int32_t draw(struct strata_sampler *s, int32_t m, double sum, int32_t skip)
{
	const struct cand *c = s->cand;
	double u = next_double(s->rng) * sum, acc = 0;
	int32_t last = -1;

	for (int32_t i = 0; i < m; i++) {
		if (c[i].id == skip)
			continue;
		acc += c[i].v;
		last = c[i].id;
		if (u < acc)
			return c[i].id;
	}
	return last; /* u within rounding of the total */
}

int32_t strata_sampler_sample(struct strata_sampler *s, const float *logits)
{
	double sum;
	int32_t tok, m = weigh(s, logits, &sum, &tok);

	return m ? draw(s, m, sum, -1) : tok;
}

int32_t strata_sampler_verify(struct strata_sampler *s, const float *logits, int32_t draft,
			      int *accepted)
{
	double sum, wd = 0;
	int32_t tok, m = weigh(s, logits, &sum, &tok);

	if (!m) {
		*accepted = tok == draft;
		return tok;
	}
	for (int32_t i = 0; i < m; i++)
		if (s->cand[i].id == draft)
			wd = s->cand[i].v;
	*accepted = wd > 0 && next_double(s->rng) * sum < wd;
	if (*accepted)
		return draft;
	/* The residual max(0, p - q) of a point-mass draft: p without the draft. */
	return draw(s, m, sum - wd, wd > 0 ? draft : -1);
}
