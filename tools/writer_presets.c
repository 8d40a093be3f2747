/*
 * writer_presets.c - strata-writer's named shapes (--preset NAME).
 */
#include "writer_plan.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

#ifndef STRATA_DEFAULT_VOCAB
#define STRATA_DEFAULT_VOCAB ""
#endif

/*
 * The benchmark presets; a flag given on the command line wins.
 *
 * bench-qwen3moe: perf/PEERS.md's shape (llama.cpp's figures are for it).
 *
 * bench-qwen3next: qwen3next at bench-qwen3moe's size, so the two compare
 * layer for layer: n_embd 1024, 16 main layers plus the nextn layer
 * (block_count 17); every 4th layer full attention with 16 heads and 4 KV
 * heads of 64, rotating 16 dims (a quarter: Qwen3-Next's
 * partial_rotary_factor, and the syn file's 8 of 32); 64 experts, top-8, of
 * width 512, plus a shared expert of 512.  The Gated DeltaNet is
 * Qwen3-Next-80B's (hidden 2048: 16 k heads and 32 v heads of 128) halved
 * at the same head size: k heads of 128 (ssm.state_size), 8 of them
 * (ssm.group_count, k width 1024 = n_embd as there), 16 v heads
 * (ssm.time_step_rank, two per k head as there), v width (ssm.inner_size)
 * 16 x 128 = 2048 = 2 x n_embd as there, conv kernel 4; so 4096 conv
 * channels and a 128 x 128 state per v head.  RoPE base 1e7 (Qwen3-Next's).
 *
 * syn-qwen4exp: the tiny qwen4exp of ../shared's syn-qwen4exp-f32.gguf
 * (the writer's qwen4exp defaults, its synthetic vocab), which llama.cpp's
 * own qwen4exp graph wrote the goldens of.
 *
 * bench-qwen4exp: qwen4exp in bench-qwen3next's shape without the nextn
 * layer (16 layers: DeltaNet on 3 of 4, attention on every 4th), plus
 * qwen4exp's parts at the syn file's proportions: 4 hyper-connection
 * streams of rank n_embd/8 = 128; an indexer of 8 heads of 64 with top_k 64
 * over blocks of 4 tokens (the r4k16 syn file's pruning); the PLE on layer
 * 1, rows of n_embd/16 = 64 values in Q8_0 (68 bytes), 16 heads of
 * consecutive primes from 2^22: 67.1 M rows, 4.25 GiB, alone in the second
 * shard like the shipped packs', far beyond the row cache (262144 rows), so
 * cold on first read; the published model's hash multipliers.
 */
struct preset {
	const char *name, *arch;
	float rope_base, rms_eps;
	struct { int w; int64_t v; } iv[32]; /* up to the first v == 0 */
	int own_vocab;          /* the synthetic vocab, not llama-spm's */
	const char *ple_type;   /* qwen4exp: the PLE table's type */
	uint64_t ple_mult[3];   /* qwen4exp: the hash multipliers (0: the syn files') */
	int split_ple;          /* write the PLE table alone in a second shard */
};

static const struct preset g_presets[] = {
	{ "bench-qwen3moe", "qwen3moe", 1000000.0f /* Qwen3's */, 1e-6f, {
		{ W_EMBD, 1024 }, { W_LAYER, 16 }, { W_HEAD, 16 }, { W_HEAD_KV, 4 },
		{ W_HEAD_DIM, 64 }, { W_FF, 3072 }, { W_EXPERT, 64 }, { W_EXPERT_USED, 8 },
		{ W_FF_EXP, 512 }, { W_CTX, 4096 } }, .own_vocab = 0 },
	{ "bench-qwen3next", "qwen3next", 10000000.0f, 1e-6f, {
		{ W_EMBD, 1024 }, { W_LAYER, 17 }, { W_NEXTN, 1 }, { W_HEAD, 16 },
		{ W_HEAD_KV, 4 }, { W_HEAD_DIM, 64 }, { W_ROT, 16 }, { W_FF, 3072 },
		{ W_EXPERT, 64 }, { W_EXPERT_USED, 8 }, { W_FF_EXP, 512 }, { W_FF_SHEXP, 512 },
		{ W_CTX, 4096 }, { W_ATTN_INTERVAL, 4 }, { W_SSM_CONV, 4 },
		{ W_SSM_STATE, 128 }, { W_SSM_GROUPS, 8 }, { W_SSM_DT_RANK, 16 },
		{ W_SSM_INNER, 2048 } }, .own_vocab = 0 },
	{ "syn-qwen4exp", "qwen4exp", 0.0f, 0.0f, { { 0, 0 } }, .own_vocab = 1 },
	{ "bench-qwen4exp", "qwen4exp", 10000000.0f, 1e-6f, {
		{ W_EMBD, 1024 }, { W_LAYER, 16 }, { W_HEAD, 16 }, { W_HEAD_KV, 4 },
		{ W_HEAD_DIM, 64 }, { W_ROT, 16 }, { W_FF, 3072 }, { W_EXPERT, 64 },
		{ W_EXPERT_USED, 8 }, { W_FF_EXP, 512 }, { W_FF_SHEXP, 512 }, { W_CTX, 4096 },
		{ W_ATTN_INTERVAL, 4 }, { W_SSM_CONV, 4 }, { W_SSM_STATE, 128 },
		{ W_SSM_GROUPS, 8 }, { W_SSM_DT_RANK, 16 }, { W_SSM_INNER, 2048 },
		{ W_HC, 4 }, { W_HC_RANK, 128 }, { W_IDX_HEADS, 8 }, { W_IDX_DIM, 64 },
		{ W_IDX_TOP_K, 64 }, { W_COMPRESS, 4 }, { W_PLE_ROWS, 1 << 22 } },
	  .ple_type = "Q8_0",
	  .ple_mult = { 23703573157769ull, 20109073645365ull, 8052911324071ull },
	  .split_ple = 1 },
};

int strata_writer_preset(const char *name, struct wcfg *cfg, const char **vocab, int *split_ple)
{
	const struct preset *p = NULL;

	for (size_t i = 0; i < sizeof(g_presets) / sizeof(g_presets[0]); i++)
		if (strcmp(name, g_presets[i].name) == 0)
			p = &g_presets[i];
	if (!p) {
		strata_error("--preset: unknown preset '%s' (known: bench-qwen3moe, "
			     "bench-qwen3next, syn-qwen4exp, bench-qwen4exp)", name);
		return -EINVAL;
	}
	if (cfg->arch_name && strcmp(cfg->arch_name, p->arch) != 0) {
		strata_error("--preset %s is a %s model, not --arch %s", p->name, p->arch,
			     cfg->arch_name);
		return -EINVAL;
	}
	cfg->arch_name = p->arch;
	for (size_t i = 0; i < sizeof(p->iv) / sizeof(p->iv[0]) && p->iv[i].v > 0; i++)
		if (cfg->iv[p->iv[i].w] < 0)
			cfg->iv[p->iv[i].w] = p->iv[i].v;
	if (cfg->rope_base == 0.0f)
		cfg->rope_base = p->rope_base;
	if (cfg->rms_eps == 0.0f)
		cfg->rms_eps = p->rms_eps;
	if (p->ple_type && !cfg->ple_type_name)
		cfg->ple_type_name = p->ple_type;
	if (p->ple_mult[0])
		memcpy(cfg->ple_mult, p->ple_mult, sizeof(p->ple_mult));
	*split_ple |= p->split_ple;
	if (!*vocab && !p->own_vocab) {
		/* The peers' figures are for the llama-spm vocab: use the same one. */
		if (!*STRATA_DEFAULT_VOCAB || access(STRATA_DEFAULT_VOCAB, R_OK) != 0) {
			strata_error("--preset %s uses the llama-spm vocab, which is not at '%s': "
				     "pass --vocab ggml-vocab-llama-spm.gguf", p->name,
				     STRATA_DEFAULT_VOCAB);
			return -EINVAL;
		}
		*vocab = STRATA_DEFAULT_VOCAB;
	}
	return 0;
}

