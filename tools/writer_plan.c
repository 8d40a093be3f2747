/*
 * writer_plan.c - strata-writer's configuration and tensor plan (see
 * writer_plan.h; the metadata is writer_meta.c's).  Names and shapes are
 * llama.cpp's for each architecture (for qwen3next and qwen4exp, in the
 * layout of ../shared's syn-qwen3next-f32.gguf and syn-qwen4exp-f32.gguf,
 * which llama.cpp loads); the Q4_K_M mix follows llama.cpp's
 * llama_tensor_get_type().
 */
#include "writer_plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cpu/types.h"
#include "ple/ple.h"
#include "util/log.h"

/* ---- configuration ---- */

static const char *const g_int_flag[W_N_INT] = {
	[W_VOCAB] = "n-vocab", [W_EMBD] = "n-embd", [W_LAYER] = "n-layer",
	[W_HEAD] = "n-head", [W_HEAD_KV] = "n-head-kv", [W_HEAD_DIM] = "head-dim",
	[W_ROT] = "n-rot", [W_FF] = "n-ff", [W_CTX] = "ctx", [W_EXPERT] = "n-expert",
	[W_EXPERT_USED] = "n-expert-used", [W_FF_EXP] = "n-ff-exp",
	[W_SHARED] = "n-shared-exp", [W_DENSE] = "n-dense-lead", [W_NEXTN] = "nextn",
	[W_FF_SHEXP] = "n-ff-shexp", [W_SSM_CONV] = "ssm-conv", [W_SSM_STATE] = "ssm-state",
	[W_SSM_GROUPS] = "ssm-groups", [W_SSM_DT_RANK] = "ssm-dt-rank",
	[W_SSM_INNER] = "ssm-inner", [W_ATTN_INTERVAL] = "attn-interval", [W_HC] = "hc",
	[W_HC_RANK] = "hc-rank", [W_IDX_HEADS] = "indexer-heads", [W_IDX_DIM] = "indexer-dim",
	[W_IDX_TOP_K] = "indexer-top-k", [W_COMPRESS] = "compress-ratio",
	[W_PLE_ROWS] = "ple-head-rows",
};

static const char *const g_arch_name[] = {
	[WA_LLAMA] = "llama", [WA_QWEN3MOE] = "qwen3moe", [WA_GLM4MOE] = "glm4moe",
	[WA_QWEN3NEXT] = "qwen3next", [WA_QWEN4EXP] = "qwen4exp",
};

#define N_ARCH ((int)(sizeof(g_arch_name) / sizeof(g_arch_name[0])))
#define ARCH(a) (1u << (a))
#define ALL_MOE (ARCH(WA_QWEN3MOE) | ARCH(WA_GLM4MOE) | ARCH(WA_QWEN3NEXT) | ARCH(WA_QWEN4EXP))
/* The hybrids: Gated DeltaNet layers, gated attention, a sigmoid-gated shared expert. */
#define HYBRID (ARCH(WA_QWEN3NEXT) | ARCH(WA_QWEN4EXP))

/* llama.cpp's llama_ftype for a file of mostly `type`. */
static const struct {
	uint32_t type;
	uint32_t ftype;
} g_ftypes[] = {
	{ STRATA_TYPE_F32, 0 }, { STRATA_TYPE_F16, 1 }, { STRATA_TYPE_Q4_0, 2 },
	{ STRATA_TYPE_Q4_1, 3 }, { STRATA_TYPE_Q8_0, 7 }, { STRATA_TYPE_Q5_0, 8 },
	{ STRATA_TYPE_Q5_1, 9 }, { STRATA_TYPE_Q2_K, 10 }, { STRATA_TYPE_Q3_K, 11 },
	{ STRATA_TYPE_Q4_K, 14 }, { STRATA_TYPE_Q5_K, 16 }, { STRATA_TYPE_Q6_K, 18 },
	{ STRATA_TYPE_IQ2_XXS, 19 }, { STRATA_TYPE_IQ2_XS, 20 }, { STRATA_TYPE_IQ3_XXS, 23 },
	{ STRATA_TYPE_IQ1_S, 24 }, { STRATA_TYPE_IQ4_NL, 25 }, { STRATA_TYPE_IQ3_S, 26 },
	{ STRATA_TYPE_IQ2_S, 28 }, { STRATA_TYPE_IQ4_XS, 30 }, { STRATA_TYPE_IQ1_M, 31 },
	{ STRATA_TYPE_BF16, 32 },
};

#define LLAMA_FTYPE_MOSTLY_Q4_K_M 15

static int parse_type(struct wcfg *c, const char *s)
{
	int t;

	c->type_label = s;
	if (strcasecmp(s, "Q4_K_M") == 0) {
		c->type = STRATA_TYPE_Q4_K;
		c->mix_q4_k_m = 1;
		c->type_label = "Q4_K_M";
		c->file_type = LLAMA_FTYPE_MOSTLY_Q4_K_M;
		return 0;
	}
	t = strata_type_from_name(s);
	for (size_t i = 0; t >= 0 && i < sizeof(g_ftypes) / sizeof(g_ftypes[0]); i++)
		if (g_ftypes[i].type == (uint32_t)t) {
			c->type = (uint32_t)t;
			c->type_label = strata_type_name((uint32_t)t);
			c->file_type = g_ftypes[i].ftype;
			return 0;
		}
	strata_error("--type: '%s' is not a weight type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, "
		     "Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ2_XXS, IQ2_XS, IQ2_S, "
		     "IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, IQ4_XS, Q4_K_M)", s);
	return -EINVAL;
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strata_logv(STRATA_LOG_LVL_ERROR, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The architectures (ARCH bits) that integer flag w applies to. */
static unsigned flag_archs(int w)
{
	switch (w) {
	case W_EXPERT: case W_EXPERT_USED: case W_FF_EXP:
		return ALL_MOE;
	case W_SHARED: case W_DENSE:
		return ARCH(WA_GLM4MOE);
	case W_NEXTN:
		return ARCH(WA_GLM4MOE) | ARCH(WA_QWEN3NEXT);
	case W_FF_SHEXP: case W_SSM_CONV: case W_SSM_STATE: case W_SSM_GROUPS:
	case W_SSM_DT_RANK: case W_SSM_INNER: case W_ATTN_INTERVAL:
		return HYBRID;
	case W_HC: case W_HC_RANK: case W_IDX_HEADS: case W_IDX_DIM: case W_IDX_TOP_K:
	case W_COMPRESS: case W_PLE_ROWS:
		return ARCH(WA_QWEN4EXP);
	default:
		return ~0u;
	}
}

/* "--FLAG applies to a, b and c, not ARCH". */
static int refuse_flag(const struct wcfg *c, const char *flag, unsigned archs)
{
	char list[96] = "";
	int n = 0, k = 0;

	for (int a = 1; a < N_ARCH; a++)
		n += !!(archs & ARCH(a));
	for (int a = 1; a < N_ARCH; a++)
		if (archs & ARCH(a)) {
			size_t len = strlen(list);

			snprintf(list + len, sizeof(list) - len, "%s%s",
				 k == 0 ? "" : k == n - 1 ? " and " : ", ", g_arch_name[a]);
			k++;
		}
	return bad("--%s applies to %s, not %s", flag, list, c->arch_name);
}

/* Flags that do not apply to the architecture are refused, not ignored. */
static int check_arch_flags(const struct wcfg *c)
{
	for (int w = 0; w < W_N_INT; w++)
		if (c->iv[w] >= 0 && !(flag_archs(w) & ARCH(c->arch)))
			return refuse_flag(c, g_int_flag[w], flag_archs(w));
	if (c->arch != WA_GLM4MOE && c->exp_scale != 0.0f)
		return refuse_flag(c, "exp-scale", ARCH(WA_GLM4MOE));
	return 0;
}

static void def(struct wcfg *c, int w, int64_t v)
{
	if (c->iv[w] < 0)
		c->iv[w] = v;
}

/*
 * The Gated DeltaNet's heads: each of the group_count k heads serves
 * time_step_rank / group_count v heads, and llama.cpp's qwen3next loader
 * sizes the v heads (ssm_norm, the recurrent state) as state_size wide, so
 * inner_size must be time_step_rank x state_size.
 */
static int check_deltanet(const struct wcfg *c)
{
	const int64_t *v = c->iv;

	if (v[W_SSM_DT_RANK] % v[W_SSM_GROUPS])
		return bad("--ssm-dt-rank %" PRId64 " (v heads) is not a multiple of --ssm-groups %"
			   PRId64 " (k heads)", v[W_SSM_DT_RANK], v[W_SSM_GROUPS]);
	if (v[W_SSM_INNER] % v[W_SSM_DT_RANK])
		return bad("--ssm-inner %" PRId64 " is not a multiple of --ssm-dt-rank %" PRId64,
			   v[W_SSM_INNER], v[W_SSM_DT_RANK]);
	if (v[W_SSM_INNER] != v[W_SSM_DT_RANK] * v[W_SSM_STATE])
		return bad("--ssm-inner %" PRId64 " gives v heads of %" PRId64 " values; llama.cpp's "
			   "qwen3next makes them --ssm-state %" PRId64 " wide: use --ssm-inner %"
			   PRId64, v[W_SSM_INNER], v[W_SSM_INNER] / v[W_SSM_DT_RANK], v[W_SSM_STATE],
			   v[W_SSM_DT_RANK] * v[W_SSM_STATE]);
	return 0;
}

/*
 * qwen4exp as llama.cpp of 2026-09-28 loads it: more than one
 * hyper-connection stream; the PLE on layer 1, which must be a DeltaNet
 * layer (its conv history is a recurrent-state row); the 16 decoded PLE
 * rows side by side are one n_embd-wide vector, so rows of n_embd/16; no
 * nextn block (that llama.cpp fails a file holding one on its tensor count).
 */
static int check_qwen4exp(const struct wcfg *c)
{
	const int64_t *v = c->iv;

	if (v[W_HC] < 2)
		return bad("--hc %" PRId64 ": qwen4exp needs at least 2 hyper-connection streams",
			   v[W_HC]);
	if (v[W_LAYER] < 2 || (1 + 1) % v[W_ATTN_INTERVAL] == 0)
		return bad("the PLE sits on layer 1, which must be a Gated DeltaNet layer: use "
			   "--n-layer 2 or more and an --attn-interval other than 1 and 2");
	if (v[W_EMBD] % W_PLE_HEADS)
		return bad("--n-embd %" PRId64 " is not a multiple of the %d PLE heads (each "
			   "decodes n_embd/16 values)", v[W_EMBD], W_PLE_HEADS);
	if (v[W_NEXTN])
		return bad("--nextn %" PRId64 ": strata-writer writes qwen4exp without its MTP "
			   "block (llama.cpp refuses a file that has it)", v[W_NEXTN]);
	return 0;
}

static int check_shape(const struct wcfg *c)
{
	const int64_t *v = c->iv;
	int rc;

	if (v[W_HEAD_KV] > v[W_HEAD] || v[W_HEAD] % v[W_HEAD_KV])
		return bad("--n-head %" PRId64 " is not a multiple of --n-head-kv %" PRId64,
			   v[W_HEAD], v[W_HEAD_KV]);
	if (v[W_ROT] % 2 || v[W_ROT] > v[W_HEAD_DIM])
		return bad("--n-rot %" PRId64 " must be even and at most the head size %" PRId64,
			   v[W_ROT], v[W_HEAD_DIM]);
	if (!c->vocab_file && c->iv[W_VOCAB] < 259)
		return bad("--n-vocab %" PRId64 " is too small for the synthetic vocab (3 "
			   "special and 256 byte tokens)", v[W_VOCAB]);
	if (c->arch == WA_LLAMA)
		return 0;
	if (v[W_EXPERT_USED] > v[W_EXPERT])
		return bad("--n-expert-used %" PRId64 " exceeds --n-expert %" PRId64,
			   v[W_EXPERT_USED], v[W_EXPERT]);
	if (v[W_NEXTN] >= v[W_LAYER])
		return bad("--nextn %" PRId64 " leaves no main layer of --n-layer %" PRId64
			   " (the nextn layers are counted in n_layer)", v[W_NEXTN], v[W_LAYER]);
	if (c->arch == WA_GLM4MOE && v[W_DENSE] > v[W_LAYER])
		return bad("--n-dense-lead %" PRId64 " exceeds --n-layer %" PRId64, v[W_DENSE],
			   v[W_LAYER]);
	if (c->arch == WA_QWEN4EXP && (rc = check_qwen4exp(c)))
		return rc;
	return ARCH(c->arch) & HYBRID ? check_deltanet(c) : 0;
}

/*
 * qwen3next's defaults, in Qwen3-Next-80B's proportions (hidden 2048, 16
 * heads of 256 with 2 KV heads; DeltaNet k heads of 128, 16 of them, and
 * twice as many v heads): heads twice n_embd/n_head wide, a quarter of each
 * rotated; DeltaNet k heads half a head wide, half as many as the heads, two
 * v heads per k head; every 4th layer full attention; one nextn layer.
 */
static void def_qwen3next(struct wcfg *c)
{
	int64_t *v = c->iv;

	def(c, W_FF_SHEXP, v[W_FF_EXP]);
	def(c, W_NEXTN, 1);
	def(c, W_SSM_CONV, 4);
	def(c, W_SSM_STATE, v[W_HEAD_DIM] / 2 ? v[W_HEAD_DIM] / 2 : 1);
	def(c, W_SSM_GROUPS, v[W_HEAD] % 2 ? v[W_HEAD] : v[W_HEAD] / 2);
	def(c, W_SSM_DT_RANK, 2 * v[W_SSM_GROUPS]);
	def(c, W_SSM_INNER, v[W_SSM_DT_RANK] * v[W_SSM_STATE]);
	def(c, W_ATTN_INTERVAL, 4);
}

static int is_prime(uint64_t n)
{
	if (n < 2)
		return 0;
	for (uint64_t d = 2; d * d <= n; d++)
		if (n % d == 0)
			return 0;
	return 1;
}

/*
 * qwen4exp's defaults: qwen3next's without the nextn layer, 4 layers
 * (DeltaNet 0-2, attention on 3), 4 hyper-connection streams of rank
 * n_embd/8, an indexer of 8 heads of half a head with top_k 8 over blocks of
 * one token, and PLE heads of 16 consecutive primes from 31: the shape of
 * ../shared's syn-qwen4exp-f32.gguf.  Then the PLE head ranges.
 */
static void def_qwen4exp(struct wcfg *c)
{
	static const uint64_t syn_mult[3] = { 4295158889763781ull, 17440218147737327ull,
					      1270917961434445ull };
	int64_t *v = c->iv;
	uint64_t p, at = 0;

	def(c, W_NEXTN, 0);
	def_qwen3next(c);
	def(c, W_HC, 4);
	def(c, W_HC_RANK, v[W_EMBD] / 8 ? v[W_EMBD] / 8 : 1);
	def(c, W_IDX_HEADS, 8);
	def(c, W_IDX_DIM, v[W_HEAD_DIM] / 2 ? v[W_HEAD_DIM] / 2 : 1);
	def(c, W_IDX_TOP_K, 8);
	def(c, W_COMPRESS, 1);
	def(c, W_PLE_ROWS, 31);
	if (!c->ple_mult[0] && !c->ple_mult[1] && !c->ple_mult[2])
		memcpy(c->ple_mult, syn_mult, sizeof(syn_mult));
	p = (uint64_t)v[W_PLE_ROWS];
	for (int h = 0; h < W_PLE_HEADS; h++, p++) {
		while (!is_prime(p))
			p++;
		c->ple_size[h] = p;
		c->ple_off[h] = at;
		at += p;
	}
	c->ple_rows = (at + 127) / 128 * 128;
}

static int find_arch(struct wcfg *c)
{
	if (!c->arch_name)
		return bad("--arch llama|qwen3moe|glm4moe|qwen3next|qwen4exp (or --preset) is "
			   "required");
	for (int a = 1; a < N_ARCH; a++)
		if (strcmp(c->arch_name, g_arch_name[a]) == 0)
			c->arch = (enum warch)a;
	if (!c->arch)
		return bad("--arch: unknown architecture '%s' (llama, qwen3moe, glm4moe, "
			   "qwen3next, qwen4exp)", c->arch_name);
	return 0;
}

int strata_writer_resolve(struct wcfg *c, const char *type_name)
{
	int64_t *v = c->iv;
	int q3n, rc;

	if ((rc = find_arch(c)) || (rc = check_arch_flags(c)) || (rc = parse_type(c, type_name)))
		return rc;
	if (c->ple_type_name) {
		int t = strata_type_from_name(c->ple_type_name);

		if (c->arch != WA_QWEN4EXP)
			return bad("--ple-type applies to qwen4exp, not %s", c->arch_name);
		if (t < 0 || !strata_ple_type_ok((uint32_t)t))
			return bad("--ple-type: '%s' is not a type the PLE reader decodes (IQ4_NL, "
				   "Q4_0, Q5_0, Q5_1, Q8_0, BF16, F16, F32)", c->ple_type_name);
		c->ple_type = (uint32_t)t;
		c->ple_type_set = 1;
	}
	q3n = !!(ARCH(c->arch) & HYBRID);
	def(c, W_VOCAB, 512);
	def(c, W_EMBD, 64);
	def(c, W_LAYER, c->arch == WA_GLM4MOE || c->arch == WA_QWEN4EXP ? 4 : q3n ? 5 : 3);
	def(c, W_HEAD, 4);
	def(c, W_HEAD_KV, v[W_HEAD] % 2 ? v[W_HEAD] : v[W_HEAD] / 2);
	if (v[W_HEAD_DIM] < 0 && v[W_EMBD] % v[W_HEAD])
		return bad("--n-embd %" PRId64 " is not a multiple of --n-head %" PRId64
			   ": give --head-dim", v[W_EMBD], v[W_HEAD]);
	def(c, W_HEAD_DIM, (q3n ? 2 : 1) * v[W_EMBD] / v[W_HEAD]);
	/* GLM-4.5 rotates half of each head, Qwen3-Next a quarter (partial_rotary_factor). */
	def(c, W_ROT, c->arch == WA_GLM4MOE ? v[W_HEAD_DIM] / 2 / 2 * 2
		      : q3n ? v[W_HEAD_DIM] / 4 / 2 * 2 : v[W_HEAD_DIM]);
	def(c, W_FF, 2 * v[W_EMBD]);
	def(c, W_CTX, 4096);
	if (c->arch != WA_LLAMA) {
		def(c, W_EXPERT, 8);
		def(c, W_EXPERT_USED, v[W_EXPERT] < 2 ? v[W_EXPERT] : 2);
		def(c, W_FF_EXP, v[W_EMBD] / 2 ? v[W_EMBD] / 2 : 1);
	}
	if (c->arch == WA_GLM4MOE) {
		def(c, W_SHARED, 1);
		def(c, W_DENSE, 1);
		def(c, W_NEXTN, 1);
	}
	if (c->arch == WA_QWEN4EXP)
		def_qwen4exp(c);
	else if (q3n)
		def_qwen3next(c);
	for (int w = 0; w < W_N_INT; w++)
		def(c, w, 0);
	if (c->rope_base == 0.0f)
		c->rope_base = 10000.0f;
	if (c->rms_eps == 0.0f)
		c->rms_eps = 1e-5f;
	if (c->exp_scale == 0.0f)
		c->exp_scale = 1.0f;
	if (!c->name) {
		snprintf(c->name_buf, sizeof(c->name_buf), "synthetic-%s-s%" PRIu64, c->arch_name,
			 c->seed);
		c->name = c->name_buf;
	}
	return check_shape(c);
}

int strata_writer_vocab_open(const char *path, struct wcfg *c, struct strata_gguf **out)
{
	struct strata_gguf *g;
	enum strata_gguf_vtype et;
	uint64_t n = 0;
	int64_t i;
	int rc;

	*out = NULL;
	if ((rc = strata_gguf_open(path, &g)))
		return rc;
	i = strata_gguf_find_key(g, "tokenizer.ggml.tokens");
	if (i < 0 || strata_gguf_kv_arr(g, i, &et, &n, NULL) || et != STRATA_GGUF_STRING ||
	    n == 0 || n > (1u << 24)) {
		strata_error("--vocab %s: no usable tokenizer.ggml.tokens string array; not a "
			     "vocab file", path);
		strata_gguf_close(g);
		return -EINVAL;
	}
	if (c->iv[W_VOCAB] >= 0 && (uint64_t)c->iv[W_VOCAB] != n) {
		strata_error("--n-vocab %" PRId64 " disagrees with the %" PRIu64 " tokens of %s",
			     c->iv[W_VOCAB], n, path);
		strata_gguf_close(g);
		return -EINVAL;
	}
	c->iv[W_VOCAB] = (int64_t)n;
	c->vocab_file = 1;
	*out = g;
	return 0;
}

/* ---- the tensor plan ---- */

static int use_more_bits(int64_t i, int64_t n)
{
	return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* llama.cpp's Q4_K_M choice for a matrix (before the block-size fallback). */
static uint32_t q4_k_m_type(const struct wcfg *c, const struct wtensor *t)
{
	int64_t n_layer = c->iv[W_LAYER];
	int eight = c->iv[W_EXPERT] == 8; /* llama.cpp's Mixtral-era rule */

	if (strcmp(t->name, "output.weight") == 0)
		return t->ne[0] % 256 ? STRATA_TYPE_Q8_0 : STRATA_TYPE_Q6_K;
	/* llama.cpp counts the DeltaNet's attn_qkv as an attn_v (one of them per layer). */
	if (strstr(t->name, "attn_v.weight") || strstr(t->name, "attn_qkv.weight"))
		return eight ? STRATA_TYPE_Q8_0
			     : use_more_bits(t->layer, n_layer) ? STRATA_TYPE_Q6_K : STRATA_TYPE_Q4_K;
	if (strstr(t->name, "attn_k.weight") && eight)
		return STRATA_TYPE_Q8_0;
	if (strstr(t->name, "ffn_down"))
		return use_more_bits(t->layer, n_layer) ? STRATA_TYPE_Q6_K : STRATA_TYPE_Q4_K;
	if (strstr(t->name, "attn_output.weight") && eight)
		return STRATA_TYPE_Q5_K;
	return STRATA_TYPE_Q4_K;
}

/* llama.cpp's substitute when a row is not a whole number of 256-blocks. */
static uint32_t fallback_type(uint32_t t)
{
	switch (t) {
	case STRATA_TYPE_Q4_K: return STRATA_TYPE_Q5_0;
	case STRATA_TYPE_Q5_K: return STRATA_TYPE_Q5_1;
	case STRATA_TYPE_Q6_K: return STRATA_TYPE_Q8_0;
	case STRATA_TYPE_Q2_K: case STRATA_TYPE_Q3_K: case STRATA_TYPE_IQ2_XXS:
	case STRATA_TYPE_IQ2_XS: case STRATA_TYPE_IQ2_S: case STRATA_TYPE_IQ3_XXS:
	case STRATA_TYPE_IQ3_S: case STRATA_TYPE_IQ1_S: case STRATA_TYPE_IQ1_M:
	case STRATA_TYPE_IQ4_XS:
		return STRATA_TYPE_IQ4_NL;
	default: return t;
	}
}

static int choose_type(const struct wcfg *c, struct wplan *p, struct wtensor *t)
{
	uint32_t ty;

	if (t->kind == K_PLE) {
		/*
		 * The PLE table: the weights' type when the PLE reader decodes it,
		 * else Q8_0, or F32 for rows that are not whole blocks.
		 */
		ty = c->ple_type_set ? c->ple_type
		     : strata_ple_type_ok(c->type) ? c->type : STRATA_TYPE_Q8_0;
		if (c->ple_type_set && t->ne[0] % strata_type_block(ty))
			return bad("--ple-type %s: PLE rows of %" PRId64 " values are not whole "
				   "blocks of %u", strata_type_name(ty), t->ne[0],
				   strata_type_block(ty));
		t->type = t->ne[0] % strata_type_block(ty) ? STRATA_TYPE_F32 : ty;
		return 0;
	}
	/* Like llama.cpp's quantiser: vectors and the router stay F32. */
	if (t->n_dims == 1 || t->kind != K_WEIGHT) {
		t->type = STRATA_TYPE_F32;
		return 0;
	}
	ty = c->mix_q4_k_m ? q4_k_m_type(c, t) : c->type;
	if (t->ne[0] % strata_type_block(ty) && fallback_type(ty) != ty) {
		ty = fallback_type(ty);
		if (p->n_fallback++ == 0)
			p->first_fallback = (size_t)(t - p->t);
	}
	if (t->ne[0] % strata_type_block(ty))
		return bad("tensor '%s': rows of %" PRId64 " values cannot be stored as %s "
			   "(blocks of %u): choose sizes that are multiples of it", t->name,
			   t->ne[0], strata_type_name(ty), strata_type_block(ty));
	t->type = ty;
	return 0;
}

static int add(const struct wcfg *c, struct wplan *p, enum wkind kind, int layer,
	       int64_t ne0, int64_t ne1, int64_t ne2, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));
static int add(const struct wcfg *c, struct wplan *p, enum wkind kind, int layer,
	       int64_t ne0, int64_t ne1, int64_t ne2, const char *fmt, ...)
{
	struct wtensor *t;
	char name[sizeof(t->name)];
	int64_t count;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	/* The flags' bounds keep each factor small, but not their product. */
	if (__builtin_mul_overflow(ne0, ne1, &count) ||
	    __builtin_mul_overflow(count, ne2, &count) || count > (INT64_C(1) << 46))
		return bad("tensor '%s' would have %" PRId64 " x %" PRId64 " x %" PRId64
			   " values: too large", name, ne0, ne1, ne2);
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		struct wtensor *q = realloc(p->t, cap * sizeof(*q));

		if (!q) {
			strata_error("out of memory for the tensor plan");
			return -ENOMEM;
		}
		p->t = q;
		p->cap = cap;
	}
	t = &p->t[p->n++];
	memset(t, 0, sizeof(*t));
	memcpy(t->name, name, sizeof(name));
	t->kind = kind;
	t->layer = layer;
	t->ne[0] = ne0;
	t->ne[1] = ne1;
	t->ne[2] = ne2;
	t->ne[3] = 1;
	/* Expert stacks stay 3-D and matrices 2-D even when a dimension is 1. */
	t->n_dims = ne2 > 1 || strstr(name, "_exps.") ? 3
		  : ne1 > 1 || kind == K_WEIGHT || kind == K_ROUTER || kind == K_HC ||
		    kind == K_PLE ? 2 : 1;
	p->n_params += (uint64_t)(ne0 * ne1 * ne2);
	return choose_type(c, p, t);
}

#define W(i, ne0, ne1, s) add(c, p, K_WEIGHT, i, ne0, ne1, 1, "blk.%d." s, i)
#define V(k, i, ne0, s) add(c, p, k, i, ne0, 1, 1, "blk.%d." s, i)

int strata_writer_full_attn(const struct wcfg *c, int i)
{
	return i >= c->iv[W_LAYER] - c->iv[W_NEXTN] || (i + 1) % c->iv[W_ATTN_INTERVAL] == 0;
}

/* qwen3next's gated attention: attn_q holds each head's query then its output gate. */
static int plan_gated_attn(const struct wcfg *c, struct wplan *p, int i)
{
	const int64_t *v = c->iv;
	int64_t e = v[W_EMBD], hd = v[W_HEAD_DIM], q = v[W_HEAD] * hd, kv = v[W_HEAD_KV] * hd;
	int rc;

	return (rc = W(i, e, 2 * q, "attn_q.weight")) || (rc = W(i, e, kv, "attn_k.weight")) ||
	       (rc = W(i, e, kv, "attn_v.weight")) || (rc = W(i, q, e, "attn_output.weight")) ||
	       (rc = V(K_NORM, i, hd, "attn_q_norm.weight")) ||
	       (rc = V(K_NORM, i, hd, "attn_k_norm.weight")) ? rc : 0;
}

/*
 * qwen3next's Gated DeltaNet: q, k (group_count heads of state_size) and v
 * (inner_size) in one projection that the causal conv runs over, the output
 * gate z, the per-v-head decay (ssm_a, ssm_dt) and beta/alpha projections,
 * the gated norm of each v head and the output projection.
 */
static int plan_deltanet(const struct wcfg *c, struct wplan *p, int i)
{
	const int64_t *v = c->iv;
	int64_t e = v[W_EMBD], vd = v[W_SSM_INNER], r = v[W_SSM_DT_RANK];
	int64_t conv = 2 * v[W_SSM_STATE] * v[W_SSM_GROUPS] + vd;
	int rc;

	return (rc = W(i, e, conv, "attn_qkv.weight")) || (rc = W(i, e, vd, "attn_gate.weight")) ||
	       (rc = add(c, p, K_CONV, i, v[W_SSM_CONV], conv, 1, "blk.%d.ssm_conv1d.weight", i)) ||
	       (rc = V(K_BIAS, i, r, "ssm_dt.bias")) || (rc = V(K_SSM_A, i, r, "ssm_a")) ||
	       (rc = W(i, e, 2 * r, "ssm_ba.weight")) ||
	       (rc = V(K_NORM, i, vd / r, "ssm_norm.weight")) ||
	       (rc = W(i, vd, e, "ssm_out.weight")) ? rc : 0;
}

static int plan_attention(const struct wcfg *c, struct wplan *p, int i)
{
	const int64_t *v = c->iv;
	int64_t e = v[W_EMBD], q = v[W_HEAD] * v[W_HEAD_DIM], kv = v[W_HEAD_KV] * v[W_HEAD_DIM];
	int rc;

	if (c->arch == WA_QWEN3NEXT)
		return (rc = V(K_NORM, i, e, "attn_norm.weight")) ||
		       (rc = strata_writer_full_attn(c, i) ? plan_gated_attn(c, p, i) : plan_deltanet(c, p, i)) ||
		       (rc = V(K_NORM, i, e, "post_attention_norm.weight")) ? rc : 0;
	if ((rc = V(K_NORM, i, e, "attn_norm.weight")) || (rc = W(i, e, q, "attn_q.weight")) ||
	    (rc = W(i, e, kv, "attn_k.weight")) || (rc = W(i, e, kv, "attn_v.weight")) ||
	    (rc = W(i, q, e, "attn_output.weight")))
		return rc;
	if (c->arch == WA_GLM4MOE &&
	    ((rc = V(K_BIAS, i, q, "attn_q.bias")) || (rc = V(K_BIAS, i, kv, "attn_k.bias")) ||
	     (rc = V(K_BIAS, i, kv, "attn_v.bias"))))
		return rc;
	if (c->arch == WA_QWEN3MOE &&
	    ((rc = V(K_NORM, i, v[W_HEAD_DIM], "attn_q_norm.weight")) ||
	     (rc = V(K_NORM, i, v[W_HEAD_DIM], "attn_k_norm.weight"))))
		return rc;
	return add(c, p, K_NORM, i, e, 1, 1, "blk.%d.%s", i,
		   c->arch == WA_GLM4MOE ? "post_attention_norm.weight" : "ffn_norm.weight");
}

static int plan_ffn(const struct wcfg *c, struct wplan *p, int i)
{
	const int64_t *v = c->iv;
	int64_t e = v[W_EMBD], f = v[W_FF], fe = v[W_FF_EXP], x = v[W_EXPERT];
	int64_t fs = ARCH(c->arch) & HYBRID ? v[W_FF_SHEXP] : v[W_FF_EXP] * v[W_SHARED];
	int rc;

	if (c->arch == WA_LLAMA || (c->arch == WA_GLM4MOE && i < v[W_DENSE]))
		return (rc = W(i, e, f, "ffn_gate.weight")) || (rc = W(i, e, f, "ffn_up.weight")) ||
		       (rc = W(i, f, e, "ffn_down.weight")) ? rc : 0;
	if ((rc = add(c, p, K_ROUTER, i, e, x, 1, "blk.%d.ffn_gate_inp.weight", i)) ||
	    (rc = add(c, p, K_WEIGHT, i, e, fe, x, "blk.%d.ffn_gate_exps.weight", i)) ||
	    (rc = add(c, p, K_WEIGHT, i, e, fe, x, "blk.%d.ffn_up_exps.weight", i)) ||
	    (rc = add(c, p, K_WEIGHT, i, fe, e, x, "blk.%d.ffn_down_exps.weight", i)))
		return rc;
	if (c->arch == WA_QWEN3MOE)
		return 0;
	/* glm4moe's routing bias; qwen3next's sigmoid gate of the shared expert */
	if ((rc = c->arch == WA_GLM4MOE ? V(K_PROBS_B, i, x, "exp_probs_b.bias")
					: V(K_VEC, i, e, "ffn_gate_inp_shexp.weight")))
		return rc;
	return (rc = W(i, e, fs, "ffn_gate_shexp.weight")) ||
	       (rc = W(i, e, fs, "ffn_up_shexp.weight")) ||
	       (rc = W(i, fs, e, "ffn_down_shexp.weight")) ? rc : 0;
}

/* qwen4exp's two hyper-connection mixers of layer i ("attn", "ffn"), or the output's (i < 0). */
static int plan_hc(const struct wcfg *c, struct wplan *p, int i, const char *part)
{
	const int64_t hd = c->iv[W_HC] * c->iv[W_EMBD], lr = c->iv[W_HC_RANK];
	char pre[32];
	int rc;

	if (i < 0)
		snprintf(pre, sizeof(pre), "output_hc");
	else
		snprintf(pre, sizeof(pre), "blk.%d.hc_%s", i, part);
	return (rc = add(c, p, K_NORM, i, hd, 1, 1, "%s_norm.weight", pre)) ||
	       (rc = add(c, p, K_HC, i, hd, lr, 1, "%s_down.weight", pre)) ||
	       (rc = add(c, p, K_HC, i, lr, hd, 1, "%s_up.weight", pre)) ||
	       (rc = i < 0 ? 0 : add(c, p, K_HC, i, hd, c->iv[W_HC], 1, "%s_inject.weight", pre))
	       ? rc : 0;
}

/*
 * A qwen4exp layer (llama.cpp's load_arch_tensors, in the order of
 * ../shared's syn-qwen4exp-f32.gguf): two hyper-connection mixers instead of
 * the norms; gated attention with the sparse-attention indexer, or a Gated
 * DeltaNet with separate beta and alpha projections; layer 1's PLE fusion;
 * qwen3next's MoE with its gated shared expert.
 */
static int plan_qwen4exp_layer(const struct wcfg *c, struct wplan *p, int i)
{
	const int64_t *v = c->iv;
	int64_t e = v[W_EMBD], hd = v[W_HC] * e, r = v[W_SSM_DT_RANK], id = v[W_IDX_DIM];
	int rc;

	if ((rc = plan_hc(c, p, i, "attn")) || (rc = plan_hc(c, p, i, "ffn")))
		return rc;
	if (strata_writer_full_attn(c, i)) {
		if ((rc = plan_gated_attn(c, p, i)) ||
		    (rc = W(i, e, v[W_IDX_HEADS] * id, "indexer.q_proj.weight")) ||
		    (rc = W(i, e, id, "indexer.k_proj.weight")) ||
		    (rc = V(K_NORM, i, id, "indexer.q_norm.weight")) ||
		    (rc = V(K_NORM, i, id, "indexer.k_norm.weight")))
			return rc;
	} else {
		int64_t vd = v[W_SSM_INNER], conv = 2 * v[W_SSM_STATE] * v[W_SSM_GROUPS] + vd;

		if ((rc = W(i, e, conv, "attn_qkv.weight")) || (rc = W(i, e, vd, "attn_gate.weight")) ||
		    (rc = add(c, p, K_CONV, i, v[W_SSM_CONV], conv, 1, "blk.%d.ssm_conv1d.weight", i)) ||
		    (rc = V(K_BIAS, i, r, "ssm_dt.bias")) || (rc = V(K_SSM_A, i, r, "ssm_a")) ||
		    (rc = W(i, e, r, "ssm_beta.weight")) || (rc = W(i, e, r, "ssm_alpha.weight")) ||
		    (rc = V(K_NORM, i, vd / r, "ssm_norm.weight")) ||
		    (rc = W(i, vd, e, "ssm_out.weight")))
			return rc;
	}
	if (i == 1 &&
	    ((rc = W(i, e, hd, "ple_key.weight")) || (rc = W(i, e, e, "ple_value.weight")) ||
	     (rc = V(K_NORM, i, hd, "ple_norm_key.weight")) ||
	     (rc = V(K_NORM, i, hd, "ple_norm_query.weight")) ||
	     (rc = V(K_NORM, i, hd, "ple_norm_conv.weight")) ||
	     (rc = add(c, p, K_CONV, i, 4, hd, 1, "blk.%d.ple_conv1d.weight", i))))
		return rc;
	return plan_ffn(c, p, i);
}

static int plan_qwen4exp(const struct wcfg *c, struct wplan *p)
{
	int64_t e = c->iv[W_EMBD], n_vocab = c->iv[W_VOCAB];
	int rc;

	/* no output_norm: the output's hyper-connection mixer carries it */
	if ((rc = add(c, p, K_WEIGHT, -1, e, n_vocab, 1, "token_embd.weight")) ||
	    (rc = plan_hc(c, p, -1, NULL)) ||
	    (rc = add(c, p, K_WEIGHT, -1, e, n_vocab, 1, "output.weight")) ||
	    (rc = add(c, p, K_PLE, -1, e / W_PLE_HEADS, (int64_t)c->ple_rows, 1, W_PLE_TENSOR)))
		return rc;
	for (int i = 0; i < c->iv[W_LAYER]; i++)
		if ((rc = plan_qwen4exp_layer(c, p, i)))
			return rc;
	return 0;
}

int strata_writer_plan(const struct wcfg *c, struct wplan *p)
{
	int64_t e = c->iv[W_EMBD], n_vocab = c->iv[W_VOCAB], n_layer = c->iv[W_LAYER];
	int rc;

	p->n = 0;
	p->n_params = 0;
	p->n_fallback = 0;
	if (c->arch == WA_QWEN4EXP)
		return plan_qwen4exp(c, p);
	if ((rc = add(c, p, K_WEIGHT, -1, e, n_vocab, 1, "token_embd.weight")) ||
	    (rc = add(c, p, K_NORM, -1, e, 1, 1, "output_norm.weight")) ||
	    (rc = add(c, p, K_WEIGHT, -1, e, n_vocab, 1, "output.weight")))
		return rc;
	for (int i = 0; i < n_layer; i++) {
		if ((rc = plan_attention(c, p, i)) || (rc = plan_ffn(c, p, i)))
			return rc;
		if (i < n_layer - c->iv[W_NEXTN])
			continue;
		/* glm4moe's and qwen3next's multi-token-prediction layers, kept for MTP. */
		if ((rc = W(i, 2 * e, e, "nextn.eh_proj.weight")) ||
		    (rc = V(K_NORM, i, e, "nextn.enorm.weight")) ||
		    (rc = V(K_NORM, i, e, "nextn.hnorm.weight")) ||
		    (rc = V(K_NORM, i, e, "nextn.shared_head_norm.weight")))
			return rc;
	}
	return 0;
}
#undef W
#undef V

void strata_writer_plan_free(struct wplan *p)
{
	free(p->t);
	memset(p, 0, sizeof(*p));
}
