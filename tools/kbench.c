/*
 * kbench.c - strata-kbench: the CPU kernels' speed per weight type, SIMD
 * level and token count, against this machine's memory read rate.
 *
 *   strata-kbench [-t THREADS] [-T TYPES] [-n TOKENS] [-l LEVELS] [-r REPS]
 *                 [-R ROWS] [-K COLS] [-M MIB] [-D POSITIONS] [-H DIM] [-o CSV]
 *
 * A product is y = W x for n tokens, W of ROWS x COLS (default 1024 x 4096,
 * a large MoE expert's shape) through strata_matmul on a pool of THREADS.
 * Copies of W fill at least MIB MiB (default 512) and the runs cycle through
 * them, so every product reads its weights from memory as a model's layers
 * do, not from a cache. GMAC/s = ROWS x COLS x n / time; "GB/s" is the weight
 * bytes over the time, which for one token (decode) is compared with "read",
 * a plain vector read loop over the same bytes with the same threads: its
 * share is the roofline share of that kernel. The median of REPS passes
 * (default 5) over all copies is reported.
 *
 * TYPES default to the types of the shipped packs and the bench models:
 * Q8_0,Q8_0_R16,Q4_K,Q4_K_R16,Q5_K,Q6_K,Q6_K_R16,IQ4_NL,IQ4_NL_R16,IQ2_XS,
 * IQ3_XXS,IQ3_S,IQ1_M,BF16
 * (the _R16 ones: interleaved sixteen rows at a time, as a model's CPU
 * weights are at load, kernels.h: strata_mat_repack); TOKENS to 1,8,64; LEVELS to the
 * vector levels this CPU has (scalar only without any).
 *
 * -T ATTN measures decode's attention instead: strata_attn_heads, one query
 * token's -R heads (default 4) against one KV head's cache of -D positions
 * (default 4096) and -H dimensions (default 64), each thread going through
 * its own caches (copies filling -M MiB, so they come from memory as they do
 * behind a model's weights). GMAC/s counts the scores' and the values'
 * multiply-adds, GB/s the keys and values read; its share of the read loop
 * is the kernel's roofline share.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cpu/attn.h"
#include "cpu/kernels.h"
#include "cpu/pool.h"
#include "cpu/types.h"
#include "plat/plat.h"
#include "util/clock.h"
#include "util/mem.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define MAX_LIST 32

struct list {
	int n;
	long v[MAX_LIST];
};

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s [-t THREADS] [-T TYPES] [-n TOKENS] [-l LEVELS] [-r REPS]\n"
		"          [-R ROWS] [-K COLS] [-M MIB] [-o CSV]\n"
		"  -t  threads (default: online CPUs)\n"
		"  -T  weight types, comma-separated (default Q8_0,Q8_0_R16,Q4_K,Q4_K_R16,Q5_K,Q6_K,\n"
		"      Q6_K_R16,IQ4_NL,IQ4_NL_R16,IQ2_XS,IQ3_XXS,IQ3_S,IQ1_M,BF16); none: the read\n"
		"      loop alone\n"
		"  -n  token counts, comma-separated (default 1,8,64)\n"
		"  -l  SIMD levels, comma-separated: scalar,avx2,avx512 (default: the vector\n"
		"      levels this CPU has, scalar only without any)\n"
		"  -r  passes per measurement; the median is reported (default 5)\n"
		"  -R, -K  rows and columns of W (default 1024 x 4096)\n"
		"  -M  MiB of weight copies cycled through (default 512)\n"
		"  -D, -H  -T ATTN: positions and head size of a KV head's cache (default\n"
		"      4096 x 64); -R: query heads sharing it (default 4); one token, no -n\n"
		"  -o  append CSV rows to this file\n",
		argv0);
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "a,b,c" through fn (name -> value, -1 when unknown) into l. */
static int parse_list(const char *s, struct list *l, long (*fn)(const char *))
{
	char buf[512], *save = NULL, *tok;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	l->n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long v = fn(tok);

		if (v < 0 || l->n == MAX_LIST) {
			fprintf(stderr, "strata-kbench: error: '%s' in '%s' is not valid here\n", tok, s);
			return -EINVAL;
		}
		l->v[l->n++] = v;
	}
	return l->n ? 0 : -EINVAL;
}

/* Q8_0, Q4_K, Q6_K and IQ4_NL interleaved at load, and attention, in -T: not
 * GGUF types. */
#define T_Q8_0_R16 1000
#define T_Q4_K_R16 1001
#define T_Q6_K_R16 1002
#define T_IQ4_NL_R16 1003
#define T_ATTN 1004

static long type_of(const char *s)
{
	int t = strata_type_from_name(s);

	if (!strcasecmp(s, "Q8_0_R16"))
		return T_Q8_0_R16;
	if (!strcasecmp(s, "Q4_K_R16"))
		return T_Q4_K_R16;
	if (!strcasecmp(s, "Q6_K_R16"))
		return T_Q6_K_R16;
	if (!strcasecmp(s, "IQ4_NL_R16"))
		return T_IQ4_NL_R16;
	if (!strcasecmp(s, "ATTN"))
		return T_ATTN;
	return t >= 0 && strata_type_supported((uint32_t)t) ? t : -1;
}

static long level_of(const char *s)
{
	for (int l = STRATA_SIMD_SCALAR; l <= STRATA_SIMD_AVX512; l++)
		if (!strcmp(s, strata_simd_name((enum strata_simd)l)))
			return l;
	return -1;
}

static long tokens_of(const char *s)
{
	long v;

	return parse_long(s, 1, 4096, &v) ? -1 : v;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

/* Roughly normal values (sum of uniforms), as trained weights are. */
static float rnd(void)
{
	float s = 0;

	for (int i = 0; i < 4; i++) {
		g_rng ^= g_rng << 13;
		g_rng ^= g_rng >> 7;
		g_rng ^= g_rng << 17;
		s += (float)(g_rng >> 40) / (float)(1 << 24) - 0.5f;
	}
	return s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the read loop ----------------------------------------------------------- */

struct readjob {
	const uint8_t *p;
	size_t n;
	uint64_t sink[64];
};

#if defined(__x86_64__)
__attribute__((target("avx2"))) static uint64_t read_avx2(const uint8_t *p, size_t n)
{
	__m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
	uint64_t r[4];

	for (size_t i = 0; i + 128 <= n; i += 128) {
		a0 = _mm256_xor_si256(a0, _mm256_load_si256((const __m256i *)(p + i)));
		a1 = _mm256_xor_si256(a1, _mm256_load_si256((const __m256i *)(p + i + 32)));
		a2 = _mm256_xor_si256(a2, _mm256_load_si256((const __m256i *)(p + i + 64)));
		a3 = _mm256_xor_si256(a3, _mm256_load_si256((const __m256i *)(p + i + 96)));
	}
	a0 = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
	_mm256_storeu_si256((__m256i *)r, a0);
	return r[0] ^ r[1] ^ r[2] ^ r[3];
}
#endif

static uint64_t read_plain(const uint8_t *p, size_t n)
{
	uint64_t s = 0, v;

	for (size_t i = 0; i + 8 <= n; i += 8) {
		memcpy(&v, p + i, 8);
		s ^= v;
	}
	return s;
}

static void read_task(void *arg, int ith, int nth)
{
	struct readjob *j = arg;
	long b, e, blocks = (long)(j->n / 4096);
	uint64_t s;

	strata_split(blocks, ith, nth, &b, &e);
#if defined(__x86_64__)
	if (strata_simd_detect() >= STRATA_SIMD_AVX2)
		s = read_avx2(j->p + (size_t)b * 4096, (size_t)(e - b) * 4096);
	else
#endif
		s = read_plain(j->p + (size_t)b * 4096, (size_t)(e - b) * 4096);
	j->sink[ith % 64] ^= s;
}

/* GB/s of the read loop over n bytes at p: median of reps passes. */
static double read_rate(struct strata_pool *pool, const uint8_t *p, size_t n, int reps)
{
	struct readjob j = { .p = p, .n = n };
	double t[64];

	strata_pool_run(pool, read_task, &j); /* fault in, warm the TLB */
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = strata_now_ns();

		strata_pool_run(pool, read_task, &j);
		t[r] = (double)(strata_now_ns() - t0) / 1e9;
	}
	return (double)n / median(t, reps) / 1e9;
}

/* ---- one type -------------------------------------------------------------- */

struct bench {
	struct strata_pool *pool;
	int threads, reps;
	long rows, cols;
	long depth, head_dim; /* -T ATTN */
	size_t copies_bytes;
	float *x, *y;
	FILE *csv;
	const char *cpu;
	double read_gbs;
};

/* One table row (and CSV row): rows x cols of the product, nt tokens. */
static void report(const struct bench *b, const char *name, enum strata_simd level, long rows,
		   long cols, long nt, double gmac, double gbs)
{
	char share[16] = "";

	if (nt == 1) /* decode: the share of the read loop's rate */
		snprintf(share, sizeof(share), "%5.0f%%", 100 * gbs / b->read_gbs);
	printf("| %-8s | %-6s | %6ld | %9.1f | %7.1f | %6s |\n", name, strata_simd_name(level), nt,
	       gmac, gbs, share);
	fflush(stdout);
	if (b->csv)
		fprintf(b->csv, "%s,%s,%d,%ld,%ld,%ld,%.2f,%.2f,%.2f,\"%s\"\n", name,
			strata_simd_name(level), b->threads, rows, cols, nt, gmac, gbs, b->read_gbs,
			b->cpu);
}

/* ---- attention ---------------------------------------------------------------- */

struct attnjob {
	const float *q;
	const float *kv; /* ncache caches, cache floats apart: key tiles, then values */
	float *o, *sc;      /* per thread: G x hd outputs, the kernel's scratch */
	size_t ncache, cache, sc_floats;
	int G, hd;
	uint32_t len;
};

/* Thread ith's caches, one decode step's attention each. */
static void attn_task(void *arg, int ith, int nth)
{
	const struct attnjob *j = arg;
	const size_t kfl = strata_kt_round(j->len) * (size_t)j->hd;
	float *o = j->o + (size_t)ith * (size_t)j->G * (size_t)j->hd;

	for (size_t c = (size_t)ith; c < j->ncache; c += (size_t)nth)
		strata_attn_heads(j->q, (size_t)j->hd, j->G, j->kv + c * j->cache, j->hd,
				  j->kv + c * j->cache + kfl, (size_t)j->hd, j->hd, j->len,
				  1.0f / sqrtf((float)j->hd), o, (size_t)j->hd,
				  j->sc + (size_t)ith * j->sc_floats);
}

/*
 * -T ATTN: G query heads against caches of b->depth positions and
 * b->head_dim dimensions (keys in tiles, then values), cycled through at
 * least b->copies_bytes.  One query token: -n does not apply.
 */
static int bench_attn(struct bench *b, int G, const struct list *levels)
{
	const int hd = (int)b->head_dim;
	const uint32_t len = (uint32_t)b->depth;
	const size_t kfl = strata_kt_round(len) * (size_t)hd, cache = kfl + (size_t)len * (size_t)hd;
	const size_t bytes = cache * sizeof(float);
	struct attnjob j = { .G = G, .hd = hd, .len = len, .cache = cache,
			     .sc_floats = 4 * strata_kt_round(len) };
	float *kv, *q, *o, *sc;

	j.ncache = b->copies_bytes / bytes + 1;
	if (j.ncache < (size_t)b->threads)
		j.ncache = (size_t)b->threads;
	kv = strata_aligned_alloc(64, j.ncache * bytes);
	q = malloc((size_t)G * (size_t)hd * sizeof(float));
	o = malloc((size_t)b->threads * (size_t)G * (size_t)hd * sizeof(float));
	sc = strata_aligned_alloc(64, (size_t)b->threads * j.sc_floats * sizeof(float));
	if (!kv || !q || !o || !sc) {
		strata_aligned_free(kv), free(q), free(o), strata_aligned_free(sc);
		return -ENOMEM;
	}
	fprintf(stderr, "strata-kbench: filling %zu caches of %u positions x %d (%.0f MiB)...\n",
		j.ncache, len, hd, (double)(j.ncache * bytes) / 1048576);
	for (size_t i = 0; i < cache; i++)
		kv[i] = rnd();
	for (size_t c = 1; c < j.ncache; c++)
		memcpy(kv + c * cache, kv, bytes);
	for (int i = 0; i < G * hd; i++)
		q[i] = rnd();
	j.q = q, j.kv = kv, j.o = o, j.sc = sc;
	for (int li = 0; li < levels->n; li++) {
		double t[64], s;

		if (strata_simd_set((enum strata_simd)levels->v[li]))
			continue;
		strata_pool_run(b->pool, attn_task, &j); /* warm-up */
		for (int r = 0; r < b->reps; r++) {
			uint64_t t0 = strata_now_ns();

			strata_pool_run(b->pool, attn_task, &j);
			t[r] = (double)(strata_now_ns() - t0) / 1e9;
		}
		s = median(t, b->reps);
		/* len x hd multiply-adds for the scores and as many for the values, per head */
		report(b, "ATTN", (enum strata_simd)levels->v[li], G, (long)len, 1,
		       2.0 * G * (double)hd * len * (double)j.ncache / s / 1e9,
		       (double)(j.ncache * (2 * (size_t)len * (size_t)hd * sizeof(float))) / s / 1e9);
		fprintf(stderr, "strata-kbench: ATTN %s: %.1f us a call on each of %d threads\n",
			strata_simd_name((enum strata_simd)levels->v[li]),
			s * 1e6 * b->threads / (double)j.ncache, b->threads);
	}
	strata_aligned_free(kv), free(q), free(o), strata_aligned_free(sc);
	return 0;
}

static int bench_type(struct bench *b, uint32_t type, const struct list *levels,
		      const struct list *tokens)
{
	const int r16 = type == T_Q8_0_R16 || type == T_Q4_K_R16 || type == T_Q6_K_R16 ||
			type == T_IQ4_NL_R16;
	const char *name = type == T_Q8_0_R16	? "Q8_0_R16"
			   : type == T_Q4_K_R16 ? "Q4_K_R16"
			   : type == T_Q6_K_R16 ? "Q6_K_R16"
			   : type == T_IQ4_NL_R16 ? "IQ4_NL_R16"
						: strata_type_name(type);
	size_t rb, wb, ncopy;
	uint8_t *w;
	float *src;
	struct strata_mat *m;

	if (r16)
		type = type == T_Q8_0_R16   ? STRATA_TYPE_Q8_0
		       : type == T_Q4_K_R16 ? STRATA_TYPE_Q4_K
		       : type == T_IQ4_NL_R16 ? STRATA_TYPE_IQ4_NL
					    : STRATA_TYPE_Q6_K;
	rb = strata_type_row_bytes(type, b->cols);
	wb = rb * (size_t)b->rows;
	ncopy = b->copies_bytes / wb + 1 + r16; /* r16: a spare one to repack from */
	if (!rb || ((type == STRATA_TYPE_Q8_0 || type == STRATA_TYPE_IQ4_NL) && r16 &&
		    b->cols % 64)) {
		fprintf(stderr, "strata-kbench: %s: %ld columns are not a multiple of its block\n",
			name, b->cols);
		return -EINVAL;
	}
	if (r16 && b->rows % 16) {
		fprintf(stderr, "strata-kbench: %s needs rows in groups of 16, not %ld\n",
			name, b->rows);
		return -EINVAL;
	}
	w = strata_aligned_alloc(64, (wb * ncopy + 63) & ~(size_t)63);
	src = malloc((size_t)b->rows * (size_t)b->cols * sizeof(float));
	m = calloc(ncopy, sizeof(*m));
	if (!w || !src || !m) {
		strata_aligned_free(w), free(src), free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < (size_t)b->rows * (size_t)b->cols; i++)
		src[i] = rnd() * 0.05f;
	fprintf(stderr, "strata-kbench: quantising %s (%ld x %ld, %zu copies, %.0f MiB)...\n",
		name, b->rows, b->cols, ncopy, (double)(wb * ncopy) / 1048576);
	if (strata_quantize(type, src, w, b->rows * b->cols) < 0) {
		fprintf(stderr, "strata-kbench: %s has no quantiser here\n", strata_type_name(type));
		strata_aligned_free(w), free(src), free(m);
		return -ENOTSUP;
	}
	if (r16) { /* the first copy interleaved through a spare one */
		strata_mat_init(&m[0], type, b->rows, b->cols, w + wb);
		memcpy(w + wb, w, wb);
		strata_mat_repack(&m[0], 0, b->rows / 16, w);
	}
	for (size_t c = 0; c < ncopy; c++) {
		if (c)
			memcpy(w + c * wb, w, wb);
		strata_mat_init(&m[c], type, b->rows, b->cols, w + c * wb);
		if (r16)
			strata_mat_repacked(&m[c], w + c * wb, &m[c]);
	}
	for (int li = 0; li < levels->n; li++) {
		if (strata_simd_set((enum strata_simd)levels->v[li]))
			continue;
		for (int ti = 0; ti < tokens->n; ti++) {
			long nt = tokens->v[ti];
			double t[64], s, gmac, gbs;

			for (size_t c = 0; c < ncopy; c++) /* warm-up */
				strata_matmul(b->pool, &m[c], b->x, b->cols, nt, b->y, b->rows);
			for (int r = 0; r < b->reps; r++) {
				uint64_t t0 = strata_now_ns();

				for (size_t c = 0; c < ncopy; c++)
					strata_matmul(b->pool, &m[c], b->x, b->cols, nt, b->y, b->rows);
				t[r] = (double)(strata_now_ns() - t0) / 1e9 / (double)ncopy;
			}
			s = median(t, b->reps);
			gmac = (double)b->rows * (double)b->cols * (double)nt / s / 1e9;
			gbs = (double)wb / s / 1e9;
			report(b, name, (enum strata_simd)levels->v[li], b->rows, b->cols, nt, gmac,
			       gbs);
		}
	}
	strata_aligned_free(w), free(src), free(m);
	return 0;
}

static const char *cpu_name(char *buf, size_t n)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(buf, n, "unknown CPU");
	if (!f)
		return buf;
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && c) {
			c += 2;
			c[strcspn(c, "\n")] = 0;
			snprintf(buf, n, "%s", c);
			break;
		}
	}
	fclose(f);
	return buf;
}

int main(int argc, char **argv)
{
	struct list types, levels, tokens;
	struct bench b = { .reps = 5, .rows = 1024, .cols = 4096, .depth = 4096, .head_dim = 64 };
	const char *csv_path = NULL;
	char cpu[160];
	long v, mib = 512;
	int opt, rc = 0, rows_set = 0;
	uint8_t *buf;

	b.threads = strata_cpu_count();
	parse_list("Q8_0,Q8_0_R16,Q4_K,Q4_K_R16,Q5_K,Q6_K,Q6_K_R16,IQ4_NL,IQ4_NL_R16,IQ2_XS,"
		   "IQ3_XXS,IQ3_S,IQ1_M,BF16", &types, type_of);
	parse_list("1,8,64", &tokens, tokens_of);
	/* The vector levels this CPU has; the scalar reference only without
	 * any (it is 10-50 times slower, and a reference, not a product). */
	levels.n = 0;
	for (int l = STRATA_SIMD_AVX2; l <= (int)strata_simd_detect(); l++)
		levels.v[levels.n++] = l;
	if (!levels.n)
		levels.v[levels.n++] = STRATA_SIMD_SCALAR;
	while ((opt = getopt(argc, argv, "t:T:n:l:r:R:K:M:D:H:o:h")) != -1) {
		switch (opt) {
		case 't':
			if (parse_long(optarg, 1, 1024, &v))
				goto bad;
			b.threads = (int)v;
			break;
		case 'T':
			if (!strcmp(optarg, "none"))
				types.n = 0; /* the read loop alone */
			else if (parse_list(optarg, &types, type_of))
				goto bad;
			break;
		case 'n':
			if (parse_list(optarg, &tokens, tokens_of))
				goto bad;
			break;
		case 'l':
			if (parse_list(optarg, &levels, level_of))
				goto bad;
			break;
		case 'r':
			if (parse_long(optarg, 1, 64, &v))
				goto bad;
			b.reps = (int)v;
			break;
		case 'R':
			if (parse_long(optarg, 1, 1 << 20, &b.rows))
				goto bad;
			rows_set = 1;
			break;
		case 'K':
			if (parse_long(optarg, 256, 1 << 20, &b.cols) || b.cols % 256)
				goto bad;
			break;
		case 'M':
			if (parse_long(optarg, 1, 1 << 16, &mib))
				goto bad;
			break;
		case 'D':
			if (parse_long(optarg, 1, 1 << 20, &b.depth))
				goto bad;
			break;
		case 'H':
			if (parse_long(optarg, 16, 1024, &b.head_dim) || b.head_dim % 16)
				goto bad;
			break;
		case 'o':
			csv_path = optarg;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
		continue;
bad:
		fprintf(stderr,
			"strata-kbench: error: bad value '%s' for -%c (-K: a multiple of 256, -H of 16)\n",
			optarg, opt);
		return 2;
	}
	if (optind != argc) {
		usage(stderr, argv[0]);
		return 2;
	}
	for (int i = 0; i < types.n; i++)
		if (types.v[i] == T_ATTN && rows_set && b.rows > 64) {
			fprintf(stderr, "strata-kbench: error: -T ATTN takes up to 64 query heads (-R)\n");
			return 2;
		}
	for (int i = 0; i < levels.n; i++)
		if (levels.v[i] > (long)strata_simd_detect()) {
			fprintf(stderr, "strata-kbench: error: this CPU has no %s\n",
				strata_simd_name((enum strata_simd)levels.v[i]));
			return 2;
		}
	b.cpu = cpu_name(cpu, sizeof(cpu));
	b.copies_bytes = (size_t)mib << 20;
	if (strata_pool_create(b.threads, &b.pool)) {
		fprintf(stderr, "strata-kbench: error: cannot start %d threads\n", b.threads);
		return 1;
	}
	b.x = malloc((size_t)b.cols * 4096 * sizeof(float));
	b.y = malloc((size_t)b.rows * 4096 * sizeof(float));
	buf = strata_aligned_alloc(4096, b.copies_bytes);
	if (!b.x || !b.y || !buf) {
		fprintf(stderr, "strata-kbench: error: out of memory\n");
		return 1;
	}
	for (long i = 0; i < b.cols * 4096; i++)
		b.x[i] = rnd();
	memset(buf, 1, b.copies_bytes);
	b.read_gbs = read_rate(b.pool, buf, b.copies_bytes, b.reps);
	strata_aligned_free(buf);
	if (csv_path) {
		long at;

		b.csv = fopen(csv_path, "a");
		if (!b.csv) {
			fprintf(stderr, "strata-kbench: error: cannot open %s: %s\n", csv_path, strerror(errno));
			return 1;
		}
		fseek(b.csv, 0, SEEK_END);
		at = ftell(b.csv);
		if (at == 0)
			fprintf(b.csv, "type,level,threads,rows,cols,tokens,gmac_s,weight_gb_s,read_gb_s,cpu\n");
	}
	printf("cpu: %s, %d threads; W %ld x %ld, %ld MiB of copies; read loop %.1f GB/s\n",
	       b.cpu, b.threads, b.rows, b.cols, mib, b.read_gbs);
	if (!types.n) {
		fflush(stdout);
		goto out;
	}
	printf("| type     | level  | tokens |   GMAC/s |    GB/s | %% read |\n");
	printf("|----------|--------|-------:|---------:|--------:|-------:|\n");
	fflush(stdout);
	for (int i = 0; i < types.n && !rc; i++)
		/* -R: query heads for ATTN, 4 unless given (1024 is W's default) */
		rc = types.v[i] == T_ATTN ? bench_attn(&b, rows_set ? (int)b.rows : 4, &levels)
					  : bench_type(&b, (uint32_t)types.v[i], &levels, &tokens);
	if (rc == -ENOMEM) /* the other errors have said what they were */
		fprintf(stderr, "strata-kbench: error: out of memory (-M, -R x -K, -D x -H)\n");
out:
	if (b.csv)
		fclose(b.csv);
	strata_pool_free(b.pool);
	free(b.x), free(b.y);
	return rc ? 1 : 0;
}
