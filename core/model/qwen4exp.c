/*
 * qwen4exp.c - the qwen4exp (Qwen3.8-Flash-Next) parts of the loader: its
 * hyperparameters (hyper-connections, the sparse-attention indexer, the PLE
 * n-gram table, rope sections) and tensors, checked against each other as
 * llama.cpp's qwen4exp graph of 2026-09-28 reads them, before any compute.
 *
 * The rest of a qwen4exp model (embeddings, the DeltaNet sizes, the MoE with
 * its gated shared expert) goes through the common loader in model.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gguf/gguf.h"
#include "model/load_int.h"
#include "ple/ple.h"
#include "util/log.h"

/*
 * An array of n (or, when scalar_ok, a single value for all) unsigned
 * integers.  -ENOENT unlogged when absent; -EINVAL logged when malformed.
 */
static int get_u32s(struct loader *l, const char *suffix, uint32_t *out, uint64_t n,
		    int scalar_ok)
{
	const char *key = strata_ld_key(l, suffix);
	enum strata_gguf_vtype et;
	const void *data;
	uint64_t len;
	uint32_t v;
	int rc = strata_gguf_get_arr(l->m->gguf, key, &et, &len, &data);

	if (rc == -ENOENT)
		return -ENOENT;
	if (rc == -EINVAL && scalar_ok && strata_gguf_get_u32(l->m->gguf, key, &v) == 0) {
		for (uint64_t i = 0; i < n; i++)
			out[i] = v;
		return 0;
	}
	if (rc || len < n || (et != STRATA_GGUF_U32 && et != STRATA_GGUF_I32)) {
		strata_error("%s: metadata key '%s' must be an array of at least %llu 32-bit "
			     "integers", l->path, key, (unsigned long long)n);
		return -EINVAL;
	}
	for (uint64_t i = 0; i < n; i++) {
		memcpy(&v, (const char *)data + i * 4, 4);
		if (et == STRATA_GGUF_I32 && (int32_t)v < 0) {
			strata_error("%s: metadata key '%s' holds a negative value", l->path, key);
			return -EINVAL;
		}
		out[i] = v;
	}
	return 0;
}

/*
 * Whether layer i is linear attention: attention.recurrent_layers when
 * given, else all but every full_attention_interval-th; nextn layers attend.
 */
static int layer_kind(struct loader *l, uint32_t i, int *recurrent)
{
	const struct strata_hparams *hp = &l->m->hp;
	uint32_t kinds[512];
	int rc;

	if (hp->n_layer > 512) {
		strata_error("%s: block_count %u is more than strata's 512 layers", l->path,
			     hp->n_layer);
		return -EINVAL;
	}
	rc = get_u32s(l, "attention.recurrent_layers", kinds, hp->n_layer, 0);
	if (rc && rc != -ENOENT)
		return rc;
	*recurrent = i < hp->n_layer - hp->n_nextn &&
		     (rc == -ENOENT ? (i + 1) % hp->full_attn_interval != 0 : kinds[i] != 0);
	return 0;
}

/* The n-gram table's keys; the table itself is checked in strata_q4x_load_globals. */
static int load_ple_hparams(struct loader *l)
{
	struct strata_q4x_hparams *q = &l->m->hp.q4x;
	uint32_t layers[2], per = 0;
	int rc = get_u32s(l, "ple.layers", layers, 1, 0);
	enum strata_gguf_vtype et;
	uint64_t n = 0;

	q->ple_layer = UINT32_MAX;
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	strata_gguf_get_arr(l->m->gguf, strata_ld_key(l, "ple.layers"), &et, &n, NULL);
	if (n != 1) {
		strata_error("%s: %s lists %llu layers; qwen4exp has exactly one PLE layer",
			     l->path, strata_ld_key(l, "ple.layers"), (unsigned long long)n);
		return -EINVAL;
	}
	if (layers[0] >= l->m->hp.n_layer) {
		strata_error("%s: %s: PLE layer %u is out of range (%u layers)", l->path,
			     strata_ld_key(l, "ple.layers"), layers[0], l->m->hp.n_layer);
		return -EINVAL;
	}
	q->ple_layer = layers[0];
	if ((rc = strata_ld_u32(l, "ple.ngram_size", &q->ple_ngram)) ||
	    (rc = strata_ld_u32(l, "ple.heads_per_ngram", &per)) ||
	    (rc = strata_ld_u32(l, "ple.conv_kernel", &q->ple_conv_k)) ||
	    (rc = strata_ld_u32(l, "embedding_length_per_layer_input", &q->ple_head_dim)))
		return rc;
	if (strata_gguf_get_u32(l->m->gguf, strata_ld_key(l, "ple.eos_token_id"), &q->ple_eos)) {
		strata_error("%s: missing metadata key '%s'", l->path,
			     strata_ld_key(l, "ple.eos_token_id"));
		return -EINVAL;
	}
	q->ple_heads = (q->ple_ngram - 1) * per;
	/* strata's reader and row ids are the published model's: bigram + trigram, 8 heads each */
	if (q->ple_ngram != 3 || q->ple_heads != STRATA_PLE_HEADS) {
		strata_error("%s: PLE n-gram size %u with %u heads per n-gram is not qwen4exp's "
			     "(3 and %d)", l->path, q->ple_ngram, per, STRATA_PLE_HEADS / 2);
		return -ENOTSUP;
	}
	if (q->ple_heads * q->ple_head_dim != l->m->hp.n_embd) {
		strata_error("%s: %u PLE heads of %u values do not make embedding_length %u",
			     l->path, q->ple_heads, q->ple_head_dim, l->m->hp.n_embd);
		return -EINVAL;
	}
	return 0;
}

int strata_q4x_load_hparams(struct loader *l)
{
	struct strata_hparams *hp = &l->m->hp;
	struct strata_q4x_hparams *q = &hp->q4x;
	int rc;

	if ((rc = strata_ld_u32(l, "hyper_connection.count", &q->hc)) ||
	    (rc = strata_ld_u32(l, "hyper_connection.low_rank", &q->hc_lr)) ||
	    (rc = strata_ld_u32(l, "attention.indexer.head_count", &q->idx_heads)) ||
	    (rc = strata_ld_u32(l, "attention.indexer.key_length", &q->idx_dim)) ||
	    (rc = strata_ld_u32(l, "attention.indexer.top_k", &q->idx_top_k)))
		return rc;
	if (q->hc < 2 || q->hc > 16) {
		strata_error("%s: %s is %u; qwen4exp mixes 2 to 16 streams", l->path,
			     strata_ld_key(l, "hyper_connection.count"), q->hc);
		return -EINVAL;
	}
	if (q->idx_dim < hp->n_rot) {
		strata_error("%s: indexer key_length %u is shorter than the %u rotated values",
			     l->path, q->idx_dim, hp->n_rot);
		return -EINVAL;
	}
	if (hp->ssm_d_inner != hp->ssm_dt_rank * hp->ssm_d_state) {
		strata_error("%s: ssm.inner_size %u must be time_step_rank %u x state_size %u "
			     "(qwen4exp's value heads are state_size wide)", l->path,
			     hp->ssm_d_inner, hp->ssm_dt_rank, hp->ssm_d_state);
		return -EINVAL;
	}
	/*
	 * IMRoPE: every section of a text token is its position (llama.cpp's
	 * batch broadcasts it), so the rotation is NEOX's over n_rot values
	 * whatever the sections; they matter for picture rows only.
	 */
	rc = get_u32s(l, "rope.dimension_sections", q->rope_sections, 4, 0);
	if (rc == -ENOENT)
		strata_error("%s: missing metadata key '%s'", l->path,
			     strata_ld_key(l, "rope.dimension_sections"));
	if (rc)
		return rc == -ENOENT ? -EINVAL : rc;
	return load_ple_hparams(l);
}

#define T(suffix) (snprintf(name, sizeof(name), "blk.%u." suffix, i), name)

/* A hyper-connection module: norm [n_embd*hc], down, up and (unless NULL) inject. */
static int load_hc(struct loader *l, const char *prefix, struct strata_hc *hc, int inject)
{
	const struct strata_hparams *hp = &l->m->hp;
	const int64_t wide = (int64_t)hp->n_embd * hp->q4x.hc;
	char name[128];
	int rc;

	snprintf(name, sizeof(name), "%s_norm.weight", prefix);
	if ((rc = strata_ld_f32(l, name, wide, 1, 1, &hc->norm)))
		return rc;
	snprintf(name, sizeof(name), "%s_down.weight", prefix);
	if ((rc = strata_ld_mat(l, name, wide, hp->q4x.hc_lr, &hc->down)))
		return rc;
	snprintf(name, sizeof(name), "%s_up.weight", prefix);
	if ((rc = strata_ld_mat(l, name, hp->q4x.hc_lr, wide, &hc->up)) || !inject)
		return rc;
	snprintf(name, sizeof(name), "%s_inject.weight", prefix);
	return strata_ld_mat(l, name, wide, hp->q4x.hc, &hc->inject);
}

int strata_q4x_load_globals(struct loader *l)
{
	struct strata_model *m = l->m;
	const struct strata_q4x_hparams *q = &m->hp.q4x;
	const struct strata_gguf_tensor *t;
	struct strata_ple_hash h;
	uint64_t need = 0;
	int rc;

	if ((rc = load_hc(l, "output_hc", &m->hc_head, 0)))
		return rc;
	if (q->ple_layer == UINT32_MAX)
		return 0;
	if ((rc = strata_ple_hash_from_gguf(m->gguf, &h)))
		return rc;
	if (!(t = strata_ld_find(l, STRATA_PLE_TENSOR, 1)))
		return -EINVAL;
	for (int i = 0; i < STRATA_PLE_HEADS; i++)
		need = h.offset[i] + h.size[i] > need ? h.offset[i] + h.size[i] : need;
	if (t->n_dims != 2 || t->ne[0] != q->ple_head_dim || (uint64_t)t->ne[1] < need ||
	    need > INT32_MAX) {
		strata_error("%s: tensor '%s' has shape [%lld, %lld]; the PLE heads need rows of %u "
			     "values and at least %llu rows (at most 2^31)", l->path,
			     STRATA_PLE_TENSOR, (long long)t->ne[0], (long long)t->ne[1],
			     q->ple_head_dim, (unsigned long long)need);
		return -EINVAL;
	}
	if (!strata_ple_type_ok(t->type)) {
		strata_error("%s: tensor '%s' has row type %s, which strata cannot decode", l->path,
			     STRATA_PLE_TENSOR, strata_type_name(t->type));
		return -ENOTSUP;
	}
	return strata_ld_mat(l, STRATA_PLE_TENSOR, t->ne[0], t->ne[1], &m->ple_table);
}

/* The gated full-attention mixer with its sparse-attention indexer. */
static int load_attention(struct loader *l, uint32_t i)
{
	const struct strata_hparams *hp = &l->m->hp;
	struct strata_layer *L = &l->m->layers[i];
	struct strata_q4x_layer *x = &L->q4x;
	const int64_t e = hp->n_embd, q = (int64_t)hp->n_head * hp->head_dim;
	const int64_t kv = (int64_t)hp->n_head_kv * hp->head_dim, d = hp->q4x.idx_dim;
	char name[96];
	int rc;

	L->attn_gated = 1;
	if ((rc = strata_ld_mat(l, T("attn_q.weight"), e, 2 * q, &L->wq)) ||
	    (rc = strata_ld_mat(l, T("attn_k.weight"), e, kv, &L->wk)) ||
	    (rc = strata_ld_mat(l, T("attn_v.weight"), e, kv, &L->wv)) ||
	    (rc = strata_ld_mat(l, T("attn_output.weight"), q, e, &L->wo)) ||
	    (rc = strata_ld_vec(l, T("attn_q_norm.weight"), hp->head_dim, 1, &L->q_norm)) ||
	    (rc = strata_ld_vec(l, T("attn_k_norm.weight"), hp->head_dim, 1, &L->k_norm)) ||
	    (rc = strata_ld_mat(l, T("indexer.q_proj.weight"), e, hp->q4x.idx_heads * d,
				&x->idx_q)) ||
	    (rc = strata_ld_mat(l, T("indexer.k_proj.weight"), e, d, &x->idx_k)) ||
	    (rc = strata_ld_vec(l, T("indexer.q_norm.weight"), d, 1, &x->idx_q_norm)) ||
	    (rc = strata_ld_vec(l, T("indexer.k_norm.weight"), d, 1, &x->idx_k_norm)))
		return rc;
	return 0;
}

/* The PLE fusion's weights on its layer. */
static int load_ple(struct loader *l, uint32_t i)
{
	const struct strata_hparams *hp = &l->m->hp;
	struct strata_q4x_layer *x = &l->m->layers[i].q4x;
	const int64_t e = hp->n_embd, wide = e * hp->q4x.hc;
	char name[96];
	int rc;

	x->ple = 1;
	if ((rc = strata_ld_mat(l, T("ple_key.weight"), e, wide, &x->ple_key)) ||
	    (rc = strata_ld_mat(l, T("ple_value.weight"), e, e, &x->ple_value)) ||
	    (rc = strata_ld_f32(l, T("ple_norm_key.weight"), wide, 1, 1, &x->ple_norm_key)) ||
	    (rc = strata_ld_f32(l, T("ple_norm_query.weight"), wide, 1, 1, &x->ple_norm_query)) ||
	    (rc = strata_ld_f32(l, T("ple_norm_conv.weight"), wide, 1, 1, &x->ple_norm_conv)) ||
	    (rc = strata_ld_f32(l, T("ple_conv1d.weight"), hp->q4x.ple_conv_k, wide, 1,
				&x->ple_conv)))
		return rc;
	return 0;
}

/* The MTP block's own tensors (issue: speculative decoding runs it). */
static int load_nextn(struct loader *l, uint32_t i)
{
	const struct strata_hparams *hp = &l->m->hp;
	struct strata_nextn *n = &l->m->layers[i].nextn;
	const int64_t e = hp->n_embd;
	char name[96], prefix[64];
	int rc;

	if ((rc = strata_ld_vec(l, T("nextn.enorm.weight"), e, 1, &n->enorm)) ||
	    (rc = strata_ld_f32(l, T("nextn.hnorm.weight"), e * hp->q4x.hc, 1, 1, &n->hnorm)) ||
	    (rc = strata_ld_mat(l, T("nextn.eh_proj.weight"), 2 * e, e, &n->eh_proj)))
		return rc;
	snprintf(prefix, sizeof(prefix), "blk.%u.nextn.hc_head", i);
	return load_hc(l, prefix, &n->hc_head, 0);
}

int strata_q4x_load_layer(struct loader *l, uint32_t i)
{
	const struct strata_hparams *hp = &l->m->hp;
	struct strata_layer *L = &l->m->layers[i];
	uint32_t ratios[512] = { 0 };
	char prefix[48];
	int rc;

	if ((rc = layer_kind(l, i, &L->recurrent)))
		return rc;
	if (i == hp->q4x.ple_layer && !L->recurrent) {
		strata_error("%s: PLE layer %u is not a linear-attention (DeltaNet) layer", l->path,
			     i);
		return -EINVAL;
	}
	snprintf(prefix, sizeof(prefix), "blk.%u.hc_attn", i);
	if ((rc = load_hc(l, prefix, &L->q4x.hc_attn, 1)))
		return rc;
	snprintf(prefix, sizeof(prefix), "blk.%u.hc_ffn", i);
	if ((rc = load_hc(l, prefix, &L->q4x.hc_ffn, 1)))
		return rc;
	/* ratios per layer (a scalar: every layer); a nextn layer past the array has none */
	rc = get_u32s(l, "attention.compress_ratios", ratios, hp->n_layer - hp->n_nextn, 1);
	if (rc && rc != -ENOENT)
		return rc;
	L->q4x.compress_ratio = i < hp->n_layer - hp->n_nextn ? ratios[i] : 0;
	if (L->q4x.compress_ratio > 64) {
		strata_error("%s: compress ratio %u of layer %u is more than 64", l->path,
			     L->q4x.compress_ratio, i);
		return -EINVAL;
	}
	if ((rc = L->recurrent ? strata_ld_deltanet(l, i) : load_attention(l, i)))
		return rc;
	if (i == hp->q4x.ple_layer && (rc = load_ple(l, i)))
		return rc;
	if ((rc = strata_ld_moe(l, i)))
		return rc;
	return i < hp->n_layer - hp->n_nextn ? 0 : load_nextn(l, i);
}
#undef T
