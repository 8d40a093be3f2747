/*
 * writer_meta.c - strata-writer's metadata: general.*, each architecture's
 * hyperparameter keys as llama.cpp reads them, and the tokenizer (a
 * vocab file's tokenizer.* keys, or a synthetic SentencePiece byte vocab).
 */
#include "writer_plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* ---- metadata ---- */

/*
 * The k-th ordinary piece of the synthetic vocab: "▁", then letter strings
 * by length, each bare and with the word-start mark, so every piece's prefix
 * is a piece too and SentencePiece merges can reach them all.
 */
static int synth_piece(uint64_t k, char *out)
{
	static const char alpha[] = "etaoinshrdlcumwfgypbvkjxqz";
	uint64_t span = 26;
	int len = 1, n = 0;

	if (k == 0)
		return sprintf(out, "\xe2\x96\x81");
	for (k--; k >= 2 * span; k -= 2 * span, span *= 26)
		len++;
	if (k >= span) {
		n = sprintf(out, "\xe2\x96\x81");
		k -= span;
	}
	for (int i = len - 1; i >= 0; i--, k /= 26)
		out[n + i] = alpha[k % 26];
	out[n + len] = 0;
	return n + len;
}

static int synth_vocab(struct strata_gguf_writer *w, uint32_t n)
{
	char (*text)[16] = malloc((size_t)n * sizeof(*text));
	const char **tok = malloc((size_t)n * sizeof(*tok));
	float *score = malloc((size_t)n * sizeof(*score));
	int32_t *type = malloc((size_t)n * sizeof(*type));
	int rc = -ENOMEM;

	if (!text || !tok || !score || !type) {
		strata_error("out of memory for a vocab of %u tokens", n);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		tok[i] = text[i];
		score[i] = 0.0f;
		if (i < 3) {
			strcpy(text[i], i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
			type[i] = i == 0 ? 2 : 3; /* UNKNOWN, CONTROL */
		} else if (i < 259) {
			snprintf(text[i], sizeof(text[i]), "<0x%02X>", i - 3);
			type[i] = 6; /* BYTE */
		} else {
			synth_piece(i - 259, text[i]);
			score[i] = -(float)(i - 259);
			type[i] = 1; /* NORMAL */
		}
	}
	if ((rc = strata_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama")) ||
	    (rc = strata_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", n, tok, NULL)) ||
	    (rc = strata_gguf_writer_set_arr(w, "tokenizer.ggml.scores", STRATA_GGUF_F32, n,
					     score)) ||
	    (rc = strata_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", STRATA_GGUF_I32, n,
					     type)) ||
	    (rc = strata_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1)) ||
	    (rc = strata_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2)))
		goto out;
	rc = strata_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
out:
	free(text);
	free(tok);
	free(score);
	free(type);
	return rc;
}

static int copy_vocab(struct strata_gguf_writer *w, const struct strata_gguf *vocab)
{
	int rc = 0;

	for (int64_t i = 0; !rc && i < strata_gguf_n_kv(vocab); i++) {
		struct strata_str key = strata_gguf_key(vocab, i);

		if (key.len > 10 && memcmp(key.s, "tokenizer.", 10) == 0)
			rc = strata_gguf_writer_copy_kv(w, vocab, i);
	}
	return rc;
}

/* The architecture's key `s` in the caller's buffer key[cap]. */
#define K(s) (snprintf(key, cap, "%s." s, c->arch_name), key)

static int meta_qwen3next(struct strata_gguf_writer *w, const struct wcfg *c, char *key,
			  size_t cap)
{
	static const struct { const char *suffix; int w; } u32s[] = {
		{ "expert_shared_feed_forward_length", W_FF_SHEXP },
		{ "ssm.conv_kernel", W_SSM_CONV }, { "ssm.state_size", W_SSM_STATE },
		{ "ssm.group_count", W_SSM_GROUPS }, { "ssm.time_step_rank", W_SSM_DT_RANK },
		{ "ssm.inner_size", W_SSM_INNER }, { "full_attention_interval", W_ATTN_INTERVAL },
		{ "nextn_predict_layers", W_NEXTN },
	};
	int rc;

	for (size_t i = 0; i < sizeof(u32s) / sizeof(u32s[0]); i++) {
		snprintf(key, cap, "%s.%s", c->arch_name, u32s[i].suffix);
		if ((rc = strata_gguf_writer_set_u32(w, key, (uint32_t)c->iv[u32s[i].w])))
			return rc;
	}
	return 0;
}

static int meta_moe(struct strata_gguf_writer *w, const struct wcfg *c, char *key, size_t cap)
{
	const int64_t *v = c->iv;
	int rc;

	if ((rc = strata_gguf_writer_set_u32(w, K("expert_count"), (uint32_t)v[W_EXPERT])) ||
	    (rc = strata_gguf_writer_set_u32(w, K("expert_used_count"),
					     (uint32_t)v[W_EXPERT_USED])) ||
	    (rc = strata_gguf_writer_set_u32(w, K("expert_feed_forward_length"),
					     (uint32_t)v[W_FF_EXP])))
		return rc;
	if (c->arch == WA_QWEN3NEXT || c->arch == WA_QWEN4EXP)
		return meta_qwen3next(w, c, key, cap);
	if (c->arch != WA_GLM4MOE)
		return 0;
	if ((rc = strata_gguf_writer_set_u32(w, K("expert_shared_count"),
					     (uint32_t)v[W_SHARED])) ||
	    (rc = strata_gguf_writer_set_u32(w, K("leading_dense_block_count"),
					     (uint32_t)v[W_DENSE])) ||
	    (rc = strata_gguf_writer_set_f32(w, K("expert_weights_scale"), c->exp_scale)) ||
	    (rc = strata_gguf_writer_set_bool(w, K("expert_weights_norm"), 1)) ||
	    (rc = strata_gguf_writer_set_u32(w, K("expert_gating_func"), 2 /* sigmoid */)))
		return rc;
	return strata_gguf_writer_set_u32(w, K("nextn_predict_layers"), (uint32_t)v[W_NEXTN]);
}

/* qwen4exp's own keys: M-RoPE sections, hyper-connections, the indexer, the PLE. */
static int meta_qwen4exp(struct strata_gguf_writer *w, const struct wcfg *c,
			 const struct strata_gguf *vocab)
{
	const int64_t *v = c->iv;
	uint32_t rot = (uint32_t)v[W_ROT], sections[4] = { rot / 4, rot / 8, rot / 2 - rot / 4 - rot / 8, 0 };
	uint32_t *ratios = calloc((size_t)v[W_LAYER], sizeof(*ratios)), ple_layer = 1, eos = 2;
	int rc;

	if (!ratios) {
		strata_error("out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < v[W_LAYER]; i++) /* QSA's block on the attention layers */
		ratios[i] = strata_writer_full_attn(c, i) ? (uint32_t)v[W_COMPRESS] : 0;
	if (vocab)
		strata_gguf_get_u32(vocab, "tokenizer.ggml.eos_token_id", &eos);
	if ((rc = strata_gguf_writer_set_arr(w, "qwen4exp.rope.dimension_sections",
					     STRATA_GGUF_U32, 4, sections)) ||
	    (rc = strata_gguf_writer_set_u32(w, "qwen4exp.hyper_connection.count", (uint32_t)v[W_HC])) ||
	    (rc = strata_gguf_writer_set_u32(w, "qwen4exp.hyper_connection.low_rank",
					     (uint32_t)v[W_HC_RANK])) ||
	    (rc = strata_gguf_writer_set_u32(w, "qwen4exp.attention.indexer.head_count",
					     (uint32_t)v[W_IDX_HEADS])) ||
	    (rc = strata_gguf_writer_set_u32(w, "qwen4exp.attention.indexer.key_length",
					     (uint32_t)v[W_IDX_DIM])) ||
	    (rc = strata_gguf_writer_set_u32(w, "qwen4exp.attention.indexer.top_k",
					     (uint32_t)v[W_IDX_TOP_K])) ||
	    (rc = strata_gguf_writer_set_arr(w, "qwen4exp.attention.compress_ratios",
					     STRATA_GGUF_U32, (uint64_t)v[W_LAYER], ratios)) ||
	    (rc = strata_gguf_writer_set_arr(w, "qwen4exp.ple.layers", STRATA_GGUF_U32, 1,
					     &ple_layer)) ||
	    (rc = strata_gguf_writer_set_u32(w, "qwen4exp.ple.ngram_size", 3)) ||
	    (rc = strata_gguf_writer_set_u32(w, "qwen4exp.ple.heads_per_ngram", W_PLE_HEADS / 2)) ||
	    (rc = strata_gguf_writer_set_u32(w, "qwen4exp.ple.conv_kernel", 4)) ||
	    (rc = strata_gguf_writer_set_u32(w, "qwen4exp.ple.eos_token_id", eos)) ||
	    (rc = strata_gguf_writer_set_u32(w, "qwen4exp.embedding_length_per_layer_input",
					     (uint32_t)(v[W_EMBD] / W_PLE_HEADS))) ||
	    (rc = strata_gguf_writer_set_arr(w, "qwen4exp.ple.layer_multipliers", STRATA_GGUF_U64,
					     3, c->ple_mult)) ||
	    (rc = strata_gguf_writer_set_arr(w, "qwen4exp.ple.head_offsets", STRATA_GGUF_U64,
					     W_PLE_HEADS, c->ple_off)))
		goto out;
	rc = strata_gguf_writer_set_arr(w, "qwen4exp.ple.head_vocab_sizes", STRATA_GGUF_U64,
					W_PLE_HEADS, c->ple_size);
out:
	free(ratios);
	return rc;
}

int strata_writer_meta(struct strata_gguf_writer *w, const struct wcfg *c,
		       const struct strata_gguf *vocab)
{
	static const struct { const char *suffix; int w; } u32s[] = {
		{ "context_length", W_CTX }, { "embedding_length", W_EMBD },
		{ "block_count", W_LAYER }, { "feed_forward_length", W_FF },
		{ "attention.head_count", W_HEAD }, { "attention.head_count_kv", W_HEAD_KV },
		{ "attention.key_length", W_HEAD_DIM }, { "attention.value_length", W_HEAD_DIM },
		{ "rope.dimension_count", W_ROT }, { "vocab_size", W_VOCAB },
	};
	char key[128];
	const size_t cap = sizeof(key);
	int rc;

	if ((rc = strata_gguf_writer_set_str(w, "general.architecture", c->arch_name)) ||
	    (rc = strata_gguf_writer_set_str(w, "general.name", c->name)) ||
	    (rc = strata_gguf_writer_set_u32(w, "general.alignment", 32)))
		return rc;
	for (size_t i = 0; i < sizeof(u32s) / sizeof(u32s[0]); i++) {
		snprintf(key, sizeof(key), "%s.%s", c->arch_name, u32s[i].suffix);
		if ((rc = strata_gguf_writer_set_u32(w, key, (uint32_t)c->iv[u32s[i].w])))
			return rc;
	}
	if ((rc = strata_gguf_writer_set_f32(w, K("rope.freq_base"), c->rope_base)) ||
	    (rc = strata_gguf_writer_set_f32(w, K("attention.layer_norm_rms_epsilon"),
					     c->rms_eps)))
		return rc;
#undef K
	if (c->arch != WA_LLAMA && (rc = meta_moe(w, c, key, sizeof(key))))
		return rc;
	if (c->arch == WA_QWEN4EXP && (rc = meta_qwen4exp(w, c, vocab)))
		return rc;
	if ((rc = strata_gguf_writer_set_u32(w, "general.file_type", c->file_type)) ||
	    (rc = strata_gguf_writer_set_u32(w, "general.quantization_version", 2)))
		return rc;
	return vocab ? copy_vocab(w, vocab) : synth_vocab(w, (uint32_t)c->iv[W_VOCAB]);
}
