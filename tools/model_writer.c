/*
 * model_writer.c - strata-writer: synthetic GGUF models with seeded random
 * weights, in the tensor names, shapes and metadata keys llama.cpp uses for
 * llama, qwen3moe, glm4moe, qwen3next and qwen4exp, quantised to any type
 * strata_quantize() has; in one file or in shards as llama.cpp's gguf-split
 * writes them (the first shard has the metadata, every shard the split.*
 * keys; files PREFIX-%05d-of-%05d.gguf).
 *
 * The file is streamed: every tensor is generated, quantised and written a
 * batch of rows at a time (in parallel over a thread pool), so a 1.7 GB
 * benchmark model needs a few megabytes of memory.  Weights are a pure
 * function of (seed, tensor name, row): the output does not depend on the
 * thread count, and the same seed on the same build gives the same bytes.
 * (They go through libm's logf/sincosf, so another libm may differ in the
 * last bit.)
 *
 * Exit status: 0 written, 1 failed while writing (logged), 2 bad usage (a
 * bad flag value, a bad vocab file, an output path that cannot be written).
 */
#define _GNU_SOURCE /* sincosf */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "writer_plan.h"

#include "cpu/kernels.h"
#include "gguf/gguf_write.h"
#include "util/clock.h"
#include "util/log.h"


/* ---- command line ---- */

enum {
	O_ARCH = 256, O_OUT, O_TYPE, O_SEED, O_VOCAB, O_PRESET, O_THREADS, O_NAME, O_HELP, O_DRY,
	O_ROPE_BASE, O_EPS, O_EXP_SCALE, O_SPLIT_PLE, O_SPLIT_TENSORS, O_SPLIT_SIZE, O_PLE_TYPE,
	O_INT0 /* integer options from here, in W_* order */
};

static const struct option g_long[] = {
	{ "arch", required_argument, NULL, O_ARCH },
	{ "out", required_argument, NULL, O_OUT },
	{ "type", required_argument, NULL, O_TYPE },
	{ "seed", required_argument, NULL, O_SEED },
	{ "vocab", required_argument, NULL, O_VOCAB },
	{ "preset", required_argument, NULL, O_PRESET },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "name", required_argument, NULL, O_NAME },
	{ "help", no_argument, NULL, O_HELP },
	{ "dry-run", no_argument, NULL, O_DRY },
	{ "rope-base", required_argument, NULL, O_ROPE_BASE },
	{ "rms-eps", required_argument, NULL, O_EPS },
	{ "exp-scale", required_argument, NULL, O_EXP_SCALE },
	{ "split-ple", no_argument, NULL, O_SPLIT_PLE },
	{ "split-max-tensors", required_argument, NULL, O_SPLIT_TENSORS },
	{ "split-max-size", required_argument, NULL, O_SPLIT_SIZE },
	{ "ple-type", required_argument, NULL, O_PLE_TYPE },
	{ "n-vocab", required_argument, NULL, O_INT0 + W_VOCAB },
	{ "n-embd", required_argument, NULL, O_INT0 + W_EMBD },
	{ "n-layer", required_argument, NULL, O_INT0 + W_LAYER },
	{ "n-head", required_argument, NULL, O_INT0 + W_HEAD },
	{ "n-head-kv", required_argument, NULL, O_INT0 + W_HEAD_KV },
	{ "head-dim", required_argument, NULL, O_INT0 + W_HEAD_DIM },
	{ "n-rot", required_argument, NULL, O_INT0 + W_ROT },
	{ "n-ff", required_argument, NULL, O_INT0 + W_FF },
	{ "ctx", required_argument, NULL, O_INT0 + W_CTX },
	{ "n-expert", required_argument, NULL, O_INT0 + W_EXPERT },
	{ "n-expert-used", required_argument, NULL, O_INT0 + W_EXPERT_USED },
	{ "n-ff-exp", required_argument, NULL, O_INT0 + W_FF_EXP },
	{ "n-shared-exp", required_argument, NULL, O_INT0 + W_SHARED },
	{ "n-dense-lead", required_argument, NULL, O_INT0 + W_DENSE },
	{ "nextn", required_argument, NULL, O_INT0 + W_NEXTN },
	{ "n-ff-shexp", required_argument, NULL, O_INT0 + W_FF_SHEXP },
	{ "ssm-conv", required_argument, NULL, O_INT0 + W_SSM_CONV },
	{ "ssm-state", required_argument, NULL, O_INT0 + W_SSM_STATE },
	{ "ssm-groups", required_argument, NULL, O_INT0 + W_SSM_GROUPS },
	{ "ssm-dt-rank", required_argument, NULL, O_INT0 + W_SSM_DT_RANK },
	{ "ssm-inner", required_argument, NULL, O_INT0 + W_SSM_INNER },
	{ "attn-interval", required_argument, NULL, O_INT0 + W_ATTN_INTERVAL },
	{ "hc", required_argument, NULL, O_INT0 + W_HC },
	{ "hc-rank", required_argument, NULL, O_INT0 + W_HC_RANK },
	{ "indexer-heads", required_argument, NULL, O_INT0 + W_IDX_HEADS },
	{ "indexer-dim", required_argument, NULL, O_INT0 + W_IDX_DIM },
	{ "indexer-top-k", required_argument, NULL, O_INT0 + W_IDX_TOP_K },
	{ "compress-ratio", required_argument, NULL, O_INT0 + W_COMPRESS },
	{ "ple-head-rows", required_argument, NULL, O_INT0 + W_PLE_ROWS },
	{ NULL, 0, NULL, 0 },
};

static void usage(void)
{
	printf(
"usage: strata-writer --arch llama|qwen3moe|glm4moe|qwen3next|qwen4exp --out FILE [options]\n"
"       strata-writer --preset NAME --out FILE [options]\n"
"\n"
"Writes a GGUF v3 model with seeded random weights (N(0, 1/fan_in) matrices,\n"
"norms near 1) in llama.cpp's layout for the architecture.\n"
"\n"
"  --type T          F32 (default), F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL,\n"
"                    Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,\n"
"                    IQ1_M: every matrix in T (like llama-quantize --pure; the\n"
"                    i-quants without an importance matrix, see README.md);\n"
"                    Q4_K_M: llama.cpp's Q4_K_M mix of Q4_K and Q6_K.  Norms,\n"
"                    biases, the expert router and ssm_conv1d stay F32.  Rows\n"
"                    that are not whole 256-blocks use llama.cpp's fallback type.\n"
"  --seed N          weights seed (default 1)\n"
"  --vocab FILE      copy the tokenizer.* keys of this GGUF (n_vocab = its size);\n"
"                    default: a synthetic SentencePiece byte vocab of --n-vocab\n"
"  --preset NAME     bench-qwen3moe: the benchmark shape of perf/PEERS.md;\n"
"                    bench-qwen3next: qwen3next at the same size;\n"
"                    syn-qwen4exp: the tiny qwen4exp of ../shared's syn-qwen4exp-f32;\n"
"                    bench-qwen4exp: qwen4exp at bench-qwen3moe's size with a\n"
"                    4.2 GiB PLE table (Q8_0), alone in a second shard\n"
"  --split-ple       write shards: the PLE table alone in the last (qwen4exp)\n"
"  --split-max-tensors N  write shards of at most N tensors (gguf-split's rule);\n"
"  --split-max-size N[K|M|G]  ... of at most N bytes of tensor data (1000-based\n"
"                    units, as gguf-split's; a larger tensor gets a shard alone)\n"
"                    with shards, --out is the prefix: a trailing .gguf is dropped\n"
"                    and the files are PREFIX-00001-of-0000N.gguf, ...\n"
"  --name S          general.name (default synthetic-ARCH-sSEED)\n"
"  --threads N       threads for generation and quantisation (default: all CPUs)\n"
"  --dry-run         print the tensor table (names, types, shapes, bytes) and\n"
"                    the total size, and write nothing (--out not needed)\n"
"shape (defaults: a 64-wide test model as in ../shared/models/syn-*):\n"
"  --n-vocab N --n-embd N --n-layer N --n-head N --n-head-kv N --head-dim N\n"
"  --n-rot N --n-ff N --ctx N --rope-base F --rms-eps F\n"
"mixture of experts (qwen3moe, glm4moe, qwen3next):\n"
"  --n-expert N --n-expert-used N --n-ff-exp N\n"
"multi-token prediction layers (glm4moe, qwen3next; default 1):\n"
"  --nextn N         (--n-layer counts them, as GGUF's block_count does)\n"
"glm4moe only:\n"
"  --n-shared-exp N --n-dense-lead N --exp-scale F\n"
"qwen3next only (Gated DeltaNet on the layers that are not full attention; its\n"
"attention heads default to 2 x n-embd/n-head wide, a quarter of them rotated):\n"
"  --n-ff-shexp N    shared expert width (default --n-ff-exp)\n"
"  --attn-interval N every N-th layer is full attention (default 4)\n"
"  --ssm-conv N      causal conv kernel (default 4)\n"
"  --ssm-state N     k head size (default head-dim/2)\n"
"  --ssm-groups N    k heads (default n-head/2)\n"
"  --ssm-dt-rank N   v heads, a multiple of the k heads (default 2 x ssm-groups)\n"
"  --ssm-inner N     v width = ssm-dt-rank x ssm-state (the default)\n"
"qwen4exp (qwen3next's flags but --nextn, and; defaults: the syn file's):\n"
"  --hc N --hc-rank N           hyper-connection streams (4) and rank (n-embd/8)\n"
"  --indexer-heads N --indexer-dim N --indexer-top-k N --compress-ratio N\n"
"                               the sparse attention indexer (8, head-dim/2, 8, 1)\n"
"  --ple-head-rows N            PLE head sizes: 16 primes from N (31)\n"
"  --ple-type T                 the PLE table's type (default: --type when the PLE\n"
"                               reader decodes it, else Q8_0; F32 for short rows)\n");
}

/* A decimal integer in [lo, hi]; -EINVAL (logged) otherwise. */
static int parse_int(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *s == '-' || *s == '+' || *end || errno || v < lo || v > hi) {
		strata_error("--%s: '%s' is not an integer in [%" PRIu64 ", %" PRIu64 "]", flag,
			     s, lo, hi);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* A byte count N with an optional K, M or G (1000-based, as gguf-split's --split-max-size). */
static int parse_size(const char *flag, const char *s, uint64_t *out)
{
	char num[32];
	size_t n = strlen(s);
	uint64_t unit = 1, v;

	if (n && strchr("KMG", s[n - 1])) {
		unit = s[n - 1] == 'K' ? 1000 : s[n - 1] == 'M' ? 1000000 : 1000000000;
		n--;
	}
	if (n == 0 || n >= sizeof(num)) {
		strata_error("--%s: '%s' is not a size (N, NK, NM or NG)", flag, s);
		return -EINVAL;
	}
	memcpy(num, s, n);
	num[n] = 0;
	if (parse_int(flag, num, 1, UINT64_MAX / unit, &v))
		return -EINVAL;
	*out = v * unit;
	return 0;
}

static int parse_pos_float(const char *flag, const char *s, float *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !(v > 0.0) || !isfinite((float)v)) {
		strata_error("--%s: '%s' is not a positive number", flag, s);
		return -EINVAL;
	}
	*out = (float)v;
	return 0;
}

static const char *flag_name(int id)
{
	for (const struct option *o = g_long; o->name; o++)
		if (o->val == id)
			return o->name;
	return "?";
}

/* Upper bounds that keep every size far from overflow and catch typos. */
static uint64_t int_max(int w)
{
	switch (w) {
	case W_VOCAB: case W_EMBD: case W_FF: case W_FF_EXP: case W_CTX: case W_FF_SHEXP:
	case W_SSM_INNER:
		return 1u << 24;
	case W_PLE_ROWS:
		return 1u << 26; /* 16 heads of them: row ids stay below 2^31, as llama.cpp's */
	default:
		return 1u << 16;
	}
}

struct args {
	struct wcfg cfg;
	const char *out, *vocab, *preset, *type_name;
	int threads, dry_run;
	int split_ple;           /* the PLE table alone in the last shard */
	uint64_t split_tensors;  /* at most this many tensors a shard; 0 = no limit */
	uint64_t split_bytes;    /* at most this many bytes of tensor data a shard; 0 = no limit */
};

/* Returns 0, 1 for --help, or -EINVAL after logging. */
static int parse_args(int argc, char **argv, struct args *a)
{
	uint64_t v;
	int c, rc = 0;

	memset(a, 0, sizeof(*a));
	for (int i = 0; i < W_N_INT; i++)
		a->cfg.iv[i] = -1;
	a->cfg.seed = 1;
	a->type_name = "F32";
	opterr = 0;
	while (!rc && (c = getopt_long(argc, argv, "", g_long, NULL)) != -1) {
		switch (c) {
		case O_ARCH: a->cfg.arch_name = optarg; break;
		case O_OUT: a->out = optarg; break;
		case O_TYPE: a->type_name = optarg; break;
		case O_VOCAB: a->vocab = optarg; break;
		case O_PRESET: a->preset = optarg; break;
		case O_NAME: a->cfg.name = optarg; break;
		case O_HELP: return 1;
		case O_DRY: a->dry_run = 1; break;
		case O_SEED:
			rc = parse_int("seed", optarg, 0, UINT64_MAX, &a->cfg.seed);
			break;
		case O_THREADS:
			rc = parse_int("threads", optarg, 1, 1024, &v);
			a->threads = (int)v;
			break;
		case O_ROPE_BASE: rc = parse_pos_float("rope-base", optarg, &a->cfg.rope_base); break;
		case O_EPS: rc = parse_pos_float("rms-eps", optarg, &a->cfg.rms_eps); break;
		case O_EXP_SCALE: rc = parse_pos_float("exp-scale", optarg, &a->cfg.exp_scale); break;
		case O_SPLIT_PLE: a->split_ple = 1; break;
		case O_SPLIT_TENSORS:
			rc = parse_int("split-max-tensors", optarg, 1, 1u << 20, &a->split_tensors);
			break;
		case O_SPLIT_SIZE:
			rc = parse_size("split-max-size", optarg, &a->split_bytes);
			break;
		case O_PLE_TYPE: a->cfg.ple_type_name = optarg; break;
		case '?':
			strata_error("unknown option or missing value: %s (see --help)",
				     argv[optind - 1]);
			return -EINVAL;
		default:
			if (c >= O_INT0 && c < O_INT0 + W_N_INT) {
				int w = c - O_INT0;
				int zero_ok = w == W_DENSE || w == W_NEXTN;

				rc = parse_int(flag_name(c), optarg, zero_ok ? 0 : 1, int_max(w), &v);
				a->cfg.iv[w] = (int64_t)v;
			}
		}
	}
	if (rc)
		return rc;
	if (optind < argc) {
		strata_error("unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
	if (!a->out && !a->dry_run) {
		strata_error("--out FILE is required (see --help)");
		return -EINVAL;
	}
	return 0;
}

static int apply_preset(struct args *a)
{
	return a->preset ? strata_writer_preset(a->preset, &a->cfg, &a->vocab, &a->split_ple) : 0;
}

/* ---- random weights ---- */

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

/*
 * Row r of a tensor: n standard normals (Box-Muller, two per 64-bit draw,
 * 24 bits each) scaled and shifted for the tensor's kind.
 */
static void gen_row(float *x, int64_t n, uint64_t tseed, int64_t r, float mean, float sd)
{
	uint64_t st = tseed ^ ((uint64_t)r * 0xd1342543de82ef95ull);

	splitmix64(&st); /* decorrelate neighbouring rows' states */
	for (int64_t i = 0; i < n; i += 2) {
		uint64_t z = splitmix64(&st);
		float u1 = (float)((z >> 40) + 1) * (1.0f / 16777216.0f); /* (0, 1] */
		float u2 = (float)((z >> 8) & 0xffffff) * (1.0f / 16777216.0f);
		float rad = sqrtf(-2.0f * logf(u1)), s, c;

		sincosf(6.28318530718f * u2, &s, &c);
		x[i] = mean + sd * rad * c;
		if (i + 1 < n)
			x[i + 1] = mean + sd * rad * s;
	}
}

/*
 * Matrices, conv taps and weight vectors N(0, 1/fan_in), so activations keep
 * their scale; norms near 1; biases (ssm_dt too) small.  ssm_a is -A, the
 * DeltaNet's decay rate: the decay exp(ssm_a * softplus(alpha + ssm_dt)) is
 * in (0, 1) only for ssm_a < 0, and -0.6 + 0.1 N stays below -0.02 since the
 * normals are at most 5.8 sd (24-bit Box-Muller); about 0.6 a token.
 */
static void kind_dist(const struct wtensor *t, float *mean, float *sd)
{
	switch (t->kind) {
	case K_NORM: *mean = 1.0f; *sd = 0.1f; break;
	case K_BIAS: *mean = 0.0f; *sd = 0.05f; break;
	case K_PROBS_B: *mean = 0.0f; *sd = 0.1f; break;
	case K_SSM_A: *mean = -0.6f; *sd = 0.1f; break;
	default: *mean = 0.0f; *sd = 1.0f / sqrtf((float)t->ne[0]); break;
	}
}

/* Encode one row of n floats as `type`; bytes written or a negative errno. */
static int64_t encode_row(uint32_t type, const float *x, void *dst, int64_t n)
{
	uint16_t *h = dst;

	switch (type) {
	case STRATA_TYPE_F32:
		memcpy(dst, x, (size_t)n * sizeof(float)); /* GGUF is little-endian, as is x86 */
		return n * 4;
	case STRATA_TYPE_F16:
		for (int64_t i = 0; i < n; i++)
			h[i] = strata_f32_to_fp16(x[i]);
		return n * 2;
	case STRATA_TYPE_BF16:
		for (int64_t i = 0; i < n; i++)
			h[i] = strata_f32_to_bf16(x[i]);
		return n * 2;
	default:
		return strata_quantize(type, x, dst, n);
	}
}

struct batch {
	const struct wtensor *t;
	uint64_t tseed;
	int64_t row0, n_rows;
	size_t row_bytes;
	uint8_t *dst;
	float **scratch; /* one row of floats per thread */
	int64_t *rc;     /* per thread: 0 or the first error */
};

static void batch_task(void *arg, int ith, int nth)
{
	struct batch *b = arg;
	int64_t n = b->t->ne[0];
	float mean, sd;
	long begin, end;

	kind_dist(b->t, &mean, &sd);
	strata_split((long)b->n_rows, ith, nth, &begin, &end);
	b->rc[ith] = 0;
	for (long i = begin; i < end; i++) {
		int64_t r = b->row0 + i;
		int64_t got;

		gen_row(b->scratch[ith], n, b->tseed, r, mean, sd);
		got = encode_row(b->t->type, b->scratch[ith], b->dst + (size_t)i * b->row_bytes, n);
		if (got != (int64_t)b->row_bytes) {
			b->rc[ith] = got < 0 ? got : -EPROTO;
			return;
		}
	}
}

/* ---- progress ---- */

static double now_s(void)
{
	return (double)strata_now_ns() / 1e9;
}

struct progress {
	int tty;
	double t0, last;
};

static void progress_show(struct progress *p, const struct strata_gguf_writer *w,
			  const char *name)
{
	double now = now_s(), rate;
	uint64_t done = strata_gguf_writer_data_done(w);
	uint64_t total = strata_gguf_writer_data_total(w);

	if (!p->tty || now - p->last < 0.1)
		return;
	p->last = now;
	rate = done / 1e6 / (now - p->t0 > 1e-3 ? now - p->t0 : 1e-3);
	fprintf(stderr, "\r\033[Kstrata-writer: %3.0f%% %7.1f / %.1f MB  %5.0f MB/s  %-36s",
		total ? 100.0 * done / total : 100.0, done / 1e6, total / 1e6, rate, name);
}

/* ---- writing ---- */

/* The temporary files, removed by the signal handler. */
static const char *volatile *g_tmp_paths;
static volatile uint32_t g_n_tmp;

static void on_signal(int sig)
{
	for (uint32_t k = 0; k < g_n_tmp; k++)
		if (g_tmp_paths[k])
			unlink(g_tmp_paths[k]);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Generate, encode and write tensor t, a batch of rows at a time. */
static int write_tensor(struct strata_gguf_writer *w, struct strata_pool *pool,
			const struct wtensor *t, uint64_t seed, struct batch *b,
			struct progress *pg)
{
	int64_t rows = t->ne[1] * t->ne[2];
	int nth = strata_pool_size(pool);
	int64_t per = (int64_t)(4u << 20) / t->ne[0];

	b->t = t;
	b->tseed = fnv1a(t->name) ^ seed;
	splitmix64(&b->tseed);
	b->row_bytes = strata_type_row_bytes(t->type, t->ne[0]);
	if (per < 1)
		per = 1;
	for (int64_t r = 0; r < rows; r += per) {
		int rc;

		b->row0 = r;
		b->n_rows = rows - r < per ? rows - r : per;
		strata_pool_run_n(pool, batch_task, b, b->n_rows < nth ? (int)b->n_rows : nth);
		for (int i = 0; i < nth && i < b->n_rows; i++) {
			int e = (int)-b->rc[i];

			if (!e)
				continue;
			strata_error("cannot write %s: quantising tensor '%s' (rows of %" PRId64
				     ") to %s failed: %s", strata_gguf_writer_path(w), t->name,
				     t->ne[0], strata_type_name(t->type),
				     e == EPROTO ? "strata_quantize() returned a wrong byte count"
				     : e == ENOTSUP ? "no quantiser for the type yet" : strerror(e));
			return -e;
		}
		rc = strata_gguf_writer_write(w, b->dst, (size_t)b->n_rows * b->row_bytes);
		if (rc)
			return rc;
		progress_show(pg, w, t->name);
	}
	return 0;
}

/* Scratch for write_tensor sized for the widest rows of the plan. */
static int batch_alloc(struct batch *b, const struct wplan *p, int nth)
{
	size_t max_out = 0;
	int64_t max_cols = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct wtensor *t = &p->t[i];
		int64_t per = (int64_t)(4u << 20) / t->ne[0];
		int64_t rows = t->ne[1] * t->ne[2];
		size_t rb = strata_type_row_bytes(t->type, t->ne[0]);

		per = per < 1 ? 1 : per < rows ? per : rows;
		if ((size_t)per * rb > max_out)
			max_out = (size_t)per * rb;
		if (t->ne[0] > max_cols)
			max_cols = t->ne[0];
	}
	b->dst = malloc(max_out ? max_out : 1);
	b->scratch = calloc((size_t)nth, sizeof(*b->scratch));
	b->rc = calloc((size_t)nth, sizeof(*b->rc));
	if (!b->dst || !b->scratch || !b->rc)
		return -ENOMEM;
	for (int i = 0; i < nth; i++)
		if (!(b->scratch[i] = malloc((size_t)max_cols * sizeof(float))))
			return -ENOMEM;
	return 0;
}

static void batch_free(struct batch *b, int nth)
{
	for (int i = 0; b->scratch && i < nth; i++)
		free(b->scratch[i]);
	free(b->scratch);
	free(b->rc);
	free(b->dst);
}

/* Every tensor of the plan, in plan order, into ws[shard[i]] (ws[0] when shard is NULL). */
static int write_data(struct strata_gguf_writer **ws, const uint32_t *shard,
		      const struct wplan *p, uint64_t seed, int threads)
{
	struct strata_pool *pool = NULL;
	struct progress pg = { .tty = isatty(2), .t0 = now_s() };
	struct batch b = { 0 };
	int rc, nth;

	rc = strata_pool_create(threads, &pool);
	if (rc) {
		strata_error("cannot start %d threads: %s", threads, strerror(-rc));
		return rc;
	}
	nth = strata_pool_size(pool);
	rc = batch_alloc(&b, p, nth);
	if (rc)
		strata_error("out of memory for the generation buffers");
	for (size_t i = 0; !rc && i < p->n; i++)
		rc = write_tensor(ws[shard ? shard[i] : 0], pool, &p->t[i], seed, &b, &pg);
	if (pg.tty)
		fprintf(stderr, "\r\033[K");
	batch_free(&b, nth);
	strata_pool_free(pool);
	return rc;
}

/* Every type the plan uses must have a quantiser: find out before writing,
 * and name the types there are. */
static int check_quantisers(const struct wplan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const uint32_t ty = p->t[i].type;
		char have[512] = "";
		size_t at = 0;

		if (strata_quantize(ty, NULL, NULL, 0) != -ENOTSUP)
			continue;
		for (uint32_t t = 0; t < STRATA_TYPE_COUNT && at < sizeof(have); t++)
			if (strata_quantize(t, NULL, NULL, 0) == 0)
				at += (size_t)snprintf(have + at, sizeof(have) - at, "%s, ",
						       strata_type_name(t));
		strata_error("cannot write %s weights (tensor '%s'): strata_quantize() has no %s "
			     "quantiser yet; it has %sand the Q4_K_M mix", strata_type_name(ty),
			     p->t[i].name, strata_type_name(ty), have);
		return -ENOTSUP;
	}
	return 0;
}

static void print_plan(const struct wcfg *c, const struct wplan *p)
{
	uint64_t bytes = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct wtensor *t = &p->t[i];
		uint64_t sz = strata_type_row_bytes(t->type, t->ne[0]) * (uint64_t)(t->ne[1] * t->ne[2]);
		char dims[64];

		if (t->n_dims == 3)
			snprintf(dims, sizeof(dims), "%" PRId64 " x %" PRId64 " x %" PRId64,
				 t->ne[0], t->ne[1], t->ne[2]);
		else if (t->n_dims == 2)
			snprintf(dims, sizeof(dims), "%" PRId64 " x %" PRId64, t->ne[0], t->ne[1]);
		else
			snprintf(dims, sizeof(dims), "%" PRId64, t->ne[0]);
		printf("%-40s %-7s %-22s %12" PRIu64 "\n", t->name, strata_type_name(t->type),
		       dims, sz);
		bytes += sz;
	}
	printf("total: %s %s, %zu tensors, %" PRIu64 " parameters, %" PRIu64 " bytes of weights "
	       "(%.1f MiB)\n", c->arch_name, c->type_label, p->n, p->n_params, bytes,
	       bytes / 1048576.0);
}

/*
 * Open the n output files (the shards' temporary files) and declare their
 * headers; ws[] and paths[] are the caller's to release.  Exit status 2 on
 * a path that cannot be written, 1 on a failure while declaring.
 */
static int open_outputs(struct args *a, const struct strata_gguf *vocab, const struct wplan *p,
			const uint32_t *shard, uint32_t n, struct strata_gguf_writer **ws,
			char **paths)
{
	for (uint32_t k = 0; k < n; k++) {
		paths[k] = shard ? strata_writer_shard_path(a->out, k, n) : strdup(a->out);
		if (!paths[k]) {
			strata_error("out of memory");
			return 1;
		}
		if (strata_gguf_writer_open(paths[k], &ws[k]))
			return 2;
		g_tmp_paths[k] = strata_gguf_writer_tmp_path(ws[k]);
		g_n_tmp = k + 1;
	}
	for (uint32_t k = 0; k < n; k++)
		if (strata_writer_shard_header(ws[k], &a->cfg, vocab, p, shard, k, n))
			return 1;
	return 0;
}

static int run(struct args *a)
{
	struct strata_gguf *vocab = NULL;
	struct strata_gguf_writer **ws = NULL;
	struct wplan plan = { 0 };
	uint32_t *shard = NULL, n = 1;
	char **paths = NULL;
	double t0 = now_s();
	uint64_t bytes = 0;
	int rc;

	if (apply_preset(a) ||
	    (a->vocab && strata_writer_vocab_open(a->vocab, &a->cfg, &vocab)) ||
	    strata_writer_resolve(&a->cfg, a->type_name) ||
	    strata_writer_plan(&a->cfg, &plan)) {
		rc = 2;
		goto out;
	}
	if (a->split_ple || a->split_tensors || a->split_bytes) {
		if (!(shard = calloc(plan.n, sizeof(*shard)))) {
			rc = 1;
			goto out;
		}
		if (strata_writer_shards(&a->cfg, &plan, a->split_ple, a->split_tensors,
					 a->split_bytes, shard, &n)) {
			rc = 2;
			goto out;
		}
	}
	if (plan.n_fallback) {
		const struct wtensor *t = &plan.t[plan.first_fallback];

		strata_warn("%zu matrices have rows that are not whole blocks of their %s type "
			    "and use llama.cpp's fallback types (first: '%s', rows of %" PRId64
			    ", as %s)", plan.n_fallback, a->cfg.type_label, t->name, t->ne[0],
			    strata_type_name(t->type));
	}
	if (a->dry_run) {
		print_plan(&a->cfg, &plan);
		if (shard)
			printf("shards: %u%s\n", n,
			       a->split_ple ? " (the PLE table alone in the last)" : "");
		rc = 0;
		goto out;
	}
	if ((rc = check_quantisers(&plan))) {
		rc = 1;
		goto out;
	}
	ws = calloc(n, sizeof(*ws));
	paths = calloc(n, sizeof(*paths));
	g_tmp_paths = calloc(n, sizeof(*g_tmp_paths));
	if (!ws || !paths || !g_tmp_paths) {
		strata_error("out of memory");
		rc = 1;
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
#ifdef SIGHUP /* (not on Windows) */
	signal(SIGHUP, on_signal);
#endif
	if ((rc = open_outputs(a, vocab, &plan, shard, n, ws, paths)))
		goto out;
	rc = write_data(ws, shard, &plan, a->cfg.seed, a->threads);
	/* every shard written before any is renamed into place */
	for (uint32_t k = 0; !rc && k < n; k++)
		rc = strata_gguf_writer_commit(ws[k]);
	for (uint32_t k = 0; !rc && k < n; k++)
		bytes += strata_gguf_writer_data_total(ws[k]);
	if (!rc) {
		double dt = now_s() - t0;

		printf("strata-writer: wrote %s%s: %s %s, %zu tensors, %" PRIu64 " parameters, "
		       "%.1f MiB of weights in %.1f s (%.0f MB/s)\n", paths[0],
		       n > 1 ? " and its shards" : "", a->cfg.arch_name, a->cfg.type_label, plan.n,
		       plan.n_params, bytes / 1048576.0, dt, bytes / 1e6 / (dt > 1e-3 ? dt : 1e-3));
		for (uint32_t k = 1; k < n; k++)
			printf("strata-writer: shard %u of %u: %s\n", k + 1, n, paths[k]);
	}
	rc = rc ? 1 : 0;
out:
	g_n_tmp = 0;
	for (uint32_t k = 0; ws && k < n; k++)
		strata_gguf_writer_close(ws[k]);
	for (uint32_t k = 0; paths && k < n; k++)
		free(paths[k]);
	free(ws);
	free(paths);
	free((void *)g_tmp_paths);
	g_tmp_paths = NULL;
	free(shard);
	strata_gguf_close(vocab);
	strata_writer_plan_free(&plan);
	return rc;
}

int main(int argc, char **argv)
{
	struct args a;
	int rc = parse_args(argc, argv, &a);

	if (rc == 1) {
		usage();
		return 0;
	}
	if (rc)
		return 2;
	return run(&a);
}
