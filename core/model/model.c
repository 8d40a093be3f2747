/*
 * model.c - hyperparameters and weights of a GGUF model, checked at load.
 */
#define _GNU_SOURCE /* memmem */
#include "model.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "model/load_int.h"
#include "plat/plat.h"
#include "ple/ple.h"
#include "util/clock.h"
#include "util/log.h"

const char *strata_ld_key(struct loader *l, const char *suffix)
{
	snprintf(l->key, sizeof(l->key), "%s.%s", l->m->hp.arch_name, suffix);
	return l->key;
}

/* A required u32 hyperparameter, > 0. */
int strata_ld_u32(struct loader *l, const char *suffix, uint32_t *out)
{
	const char *key = strata_ld_key(l, suffix);
	int rc = strata_gguf_get_u32(l->m->gguf, key, out);

	if (rc == -ENOENT) {
		strata_error("%s: missing metadata key '%s'", l->path, key);
		return -EINVAL;
	}
	if (rc || *out == 0) {
		strata_error("%s: metadata key '%s' must be a positive integer", l->path, key);
		return -EINVAL;
	}
	return 0;
}

/* An optional u32 hyperparameter: *out keeps its default when absent. */
int strata_ld_u32_opt(struct loader *l, const char *suffix, uint32_t *out)
{
	const char *key = strata_ld_key(l, suffix);
	uint32_t v;
	int rc = strata_gguf_get_u32(l->m->gguf, key, &v);

	if (rc == -ENOENT)
		return 0;
	if (rc || v == 0) {
		strata_error("%s: metadata key '%s' must be a positive integer", l->path, key);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int strata_ld_f32_opt(struct loader *l, const char *suffix, float *out)
{
	const char *key = strata_ld_key(l, suffix);
	float v;
	int rc = strata_gguf_get_f32(l->m->gguf, key, &v);

	if (rc == -ENOENT)
		return 0;
	if (rc || !(v > 0.0f)) {
		strata_error("%s: metadata key '%s' must be a positive number", l->path, key);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

const struct strata_gguf_tensor *strata_ld_find(struct loader *l, const char *name,
						 int required)
{
	const struct strata_gguf_tensor *t = strata_gguf_find_tensor(l->m->gguf, name);

	if (!t && required)
		strata_error("%s: missing tensor '%s'", l->path, name);
	return t;
}

static int check_shape(struct loader *l, const struct strata_gguf_tensor *t, const char *name,
		       int64_t ne0, int64_t ne1)
{
	if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != 1 || t->ne[3] != 1) {
		strata_error("%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected "
			     "[%lld, %lld] from the metadata", l->path, name,
			     (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
			     (long long)t->ne[3], (long long)ne0, (long long)ne1);
		return -EINVAL;
	}
	return 0;
}

/* A matrix of `rows` rows of `cols` values (GGUF shape [cols, rows]). */
int strata_ld_mat(struct loader *l, const char *name, int64_t cols, int64_t rows,
		    struct strata_mat *out)
{
	const struct strata_gguf_tensor *t = strata_ld_find(l, name, 1);
	int rc;

	if (!t)
		return -EINVAL;
	rc = check_shape(l, t, name, cols, rows);
	if (rc)
		return rc;
	if (!strata_type_supported(t->type)) {
		strata_error("%s: tensor '%s' has type %s, which strata cannot compute with",
			     l->path, name, strata_type_name(t->type));
		return -ENOTSUP;
	}
	rc = strata_mat_init(out, t->type, rows, cols, t->data);
	if (rc) {
		strata_error("%s: tensor '%s' (%s) rows of %lld values are not whole blocks",
			     l->path, name, strata_type_name(t->type), (long long)cols);
		return rc;
	}
	l->m->n_params += (uint64_t)(rows * cols);
	l->m->weight_bytes += t->size;
	return 0;
}

/* n expert matrices of `rows` x `cols` (GGUF shape [cols, rows, n]). */
static int load_experts(struct loader *l, const char *name, int64_t cols, int64_t rows,
			uint32_t n, struct strata_experts *out)
{
	const struct strata_gguf_tensor *t = strata_ld_find(l, name, 1);
	int rc;

	if (!t)
		return -EINVAL;
	if (t->ne[0] != cols || t->ne[1] != rows || t->ne[2] != n || t->ne[3] != 1) {
		strata_error("%s: expert tensor '%s' has shape [%lld, %lld, %lld, %lld], expected "
			     "[%lld, %lld, %u] from the metadata", l->path, name,
			     (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
			     (long long)t->ne[3], (long long)cols, (long long)rows, n);
		return -EINVAL;
	}
	if (!strata_type_supported(t->type)) {
		strata_error("%s: tensor '%s' has type %s, which strata cannot compute with",
			     l->path, name, strata_type_name(t->type));
		return -ENOTSUP;
	}
	rc = strata_mat_init(&out->m, t->type, rows, cols, t->data);
	if (rc) {
		strata_error("%s: tensor '%s' (%s) rows of %lld values are not whole blocks",
			     l->path, name, strata_type_name(t->type), (long long)cols);
		return rc;
	}
	out->stride = out->m.row_bytes * (size_t)rows;
	out->n = n;
	out->file_off = t->file_off;
	out->file = t->file;
	l->m->n_params += (uint64_t)(rows * cols) * n;
	l->m->weight_bytes += t->size;
	return 0;
}

/* An F32 array of ne0 x ne1 values (norm weights, conv kernels, biases). */
int strata_ld_f32(struct loader *l, const char *name, int64_t ne0, int64_t ne1, int required,
		    const float **out)
{
	const struct strata_gguf_tensor *t = strata_ld_find(l, name, required);
	int rc;

	*out = NULL;
	if (!t)
		return required ? -EINVAL : 0;
	rc = check_shape(l, t, name, ne0, ne1);
	if (rc)
		return rc;
	if (t->type != STRATA_TYPE_F32) {
		strata_error("%s: tensor '%s' has type %s; strata expects F32 here",
			     l->path, name, strata_type_name(t->type));
		return -ENOTSUP;
	}
	/* The GGUF data section is aligned (>= 32 bytes), so this cast is safe. */
	*out = (const float *)t->data;
	l->m->n_params += (uint64_t)(ne0 * ne1);
	l->m->weight_bytes += t->size;
	return 0;
}

/* A vector of n F32 values. */
int strata_ld_vec(struct loader *l, const char *name, int64_t n, int required,
		    const float **out)
{
	return strata_ld_f32(l, name, n, 1, required, out);
}

/* The count of trailing MTP (nextn) layers: may be 0, so not through hp_u32_opt. */
static int load_nextn(struct loader *l)
{
	struct strata_hparams *hp = &l->m->hp;

	strata_gguf_get_u32(l->m->gguf, strata_ld_key(l, "nextn_predict_layers"), &hp->n_nextn);
	if (hp->n_nextn >= hp->n_layer || hp->n_dense_lead > hp->n_layer) {
		strata_error("%s: %u nextn and %u leading dense layers do not fit %u layers",
			     l->path, hp->n_nextn, hp->n_dense_lead, hp->n_layer);
		return -EINVAL;
	}
	return 0;
}

/*
 * qwen3next: softmax routing, always renormalised over the top-k (llama.cpp
 * passes norm_w = true), and a shared expert of its own width gated per token.
 */
static int load_qwen3next_moe_hparams(struct loader *l)
{
	struct strata_hparams *hp = &l->m->hp;
	int rc;

	if ((rc = strata_ld_u32_opt(l, "expert_shared_feed_forward_length", &hp->n_ff_shexp)) ||
	    (rc = strata_ld_f32_opt(l, "expert_weights_scale", &hp->expert_weights_scale)))
		return rc;
	return load_nextn(l);
}

/* The Gated DeltaNet sizes, and which layers attend fully. */
static int load_ssm_hparams(struct loader *l)
{
	struct strata_hparams *hp = &l->m->hp;
	int rc;

	hp->full_attn_interval = 4;
	if ((rc = strata_ld_u32(l, "ssm.conv_kernel", &hp->ssm_d_conv)) ||
	    (rc = strata_ld_u32(l, "ssm.state_size", &hp->ssm_d_state)) ||
	    (rc = strata_ld_u32(l, "ssm.group_count", &hp->ssm_n_group)) ||
	    (rc = strata_ld_u32(l, "ssm.time_step_rank", &hp->ssm_dt_rank)) ||
	    (rc = strata_ld_u32(l, "ssm.inner_size", &hp->ssm_d_inner)) ||
	    (rc = strata_ld_u32_opt(l, "full_attention_interval", &hp->full_attn_interval)))
		return rc;
	if (hp->ssm_dt_rank % hp->ssm_n_group || hp->ssm_d_inner % hp->ssm_dt_rank) {
		strata_error("%s: ssm.time_step_rank %u must be a multiple of ssm.group_count %u "
			     "and divide ssm.inner_size %u", l->path, hp->ssm_dt_rank,
			     hp->ssm_n_group, hp->ssm_d_inner);
		return -EINVAL;
	}
	hp->ssm_head_v = hp->ssm_d_inner / hp->ssm_dt_rank;
	if (hp->head_dim != hp->head_dim_v) {
		strata_error("%s: gated attention needs key_length %u == value_length %u",
			     l->path, hp->head_dim, hp->head_dim_v);
		return -EINVAL;
	}
	return 0;
}

static int load_moe_hparams(struct loader *l)
{
	struct strata_hparams *hp = &l->m->hp;
	uint32_t shared = 1, gating = 0;
	int rc, norm = 1;

	if ((rc = strata_ld_u32(l, "expert_count", &hp->n_expert)) ||
	    (rc = strata_ld_u32(l, "expert_used_count", &hp->n_expert_used)) ||
	    (rc = strata_ld_u32(l, "expert_feed_forward_length", &hp->n_ff_exp)))
		return rc;
	if (hp->n_expert_used > hp->n_expert) {
		strata_error("%s: expert_used_count %u exceeds expert_count %u", l->path,
			     hp->n_expert_used, hp->n_expert);
		return -EINVAL;
	}
	hp->gating = STRATA_GATING_SOFTMAX;
	hp->expert_weights_norm = 1; /* qwen3moe always renormalises its top-k */
	hp->expert_weights_scale = 1.0f;
	if (hp->arch == STRATA_ARCH_QWEN3NEXT)
		return load_qwen3next_moe_hparams(l);
	if (hp->arch == STRATA_ARCH_QWEN4EXP) { /* llama.cpp reads no weights scale for it */
		if ((rc = strata_ld_u32_opt(l, "expert_shared_feed_forward_length", &hp->n_ff_shexp)))
			return rc;
		return load_nextn(l);
	}
	if (hp->arch != STRATA_ARCH_GLM4MOE)
		return 0;
	if ((rc = strata_ld_u32_opt(l, "expert_shared_count", &shared)) ||
	    (rc = strata_ld_u32_opt(l, "expert_gating_func", &gating)) ||
	    (rc = strata_ld_f32_opt(l, "expert_weights_scale", &hp->expert_weights_scale)))
		return rc;
	hp->n_ff_shexp = hp->n_ff_exp * shared;
	if (gating == STRATA_GATING_SOFTMAX || gating == STRATA_GATING_SIGMOID)
		hp->gating = (enum strata_gating)gating;
	else if (gating != 0) {
		strata_error("%s: unknown expert_gating_func %u", l->path, gating);
		return -ENOTSUP;
	}
	if (strata_gguf_get_bool(l->m->gguf, strata_ld_key(l, "expert_weights_norm"), &norm) == 0)
		hp->expert_weights_norm = norm;
	else
		hp->expert_weights_norm = 0;
	/* Counts may be 0 here, so read them directly rather than through hp_u32_opt. */
	strata_gguf_get_u32(l->m->gguf, strata_ld_key(l, "leading_dense_block_count"),
			    &hp->n_dense_lead);
	return load_nextn(l);
}

static int load_hparams(struct loader *l)
{
	struct strata_hparams *hp = &l->m->hp;
	uint32_t v;
	int rc;

	if ((rc = strata_ld_u32(l, "embedding_length", &hp->n_embd)) ||
	    (rc = strata_ld_u32(l, "block_count", &hp->n_layer)) ||
	    (rc = strata_ld_u32(l, "feed_forward_length", &hp->n_ff)) ||
	    (rc = strata_ld_u32(l, "attention.head_count", &hp->n_head)))
		return rc;
	hp->n_head_kv = hp->n_head;
	hp->n_ctx_train = 2048;
	if ((rc = strata_ld_u32_opt(l, "attention.head_count_kv", &hp->n_head_kv)) ||
	    (rc = strata_ld_u32_opt(l, "context_length", &hp->n_ctx_train)))
		return rc;
	if (hp->n_head % hp->n_head_kv) {
		strata_error("%s: head_count %u is not a multiple of head_count_kv %u", l->path,
			     hp->n_head, hp->n_head_kv);
		return -EINVAL;
	}
	if (hp->n_embd % hp->n_head && strata_gguf_find_key(l->m->gguf,
			strata_ld_key(l, "attention.key_length")) < 0) {
		strata_error("%s: embedding_length %u is not a multiple of head_count %u",
			     l->path, hp->n_embd, hp->n_head);
		return -EINVAL;
	}
	hp->head_dim = hp->n_embd / hp->n_head;
	if ((rc = strata_ld_u32_opt(l, "attention.key_length", &hp->head_dim)))
		return rc;
	hp->head_dim_v = hp->head_dim;
	hp->n_rot = hp->head_dim;
	if ((rc = strata_ld_u32_opt(l, "attention.value_length", &hp->head_dim_v)) ||
	    (rc = strata_ld_u32_opt(l, "rope.dimension_count", &hp->n_rot)))
		return rc;
	if (hp->n_rot > hp->head_dim || hp->n_rot % 2) {
		strata_error("%s: rope.dimension_count %u must be even and <= head size %u",
			     l->path, hp->n_rot, hp->head_dim);
		return -EINVAL;
	}
	hp->rope_base = 10000.0f;
	hp->rms_eps = 1e-5f;
	hp->rope_freq_scale = 1.0f;
	if ((rc = strata_ld_f32_opt(l, "rope.freq_base", &hp->rope_base)) ||
	    (rc = strata_ld_f32_opt(l, "attention.layer_norm_rms_epsilon", &hp->rms_eps)))
		return rc;
	{
		struct strata_str type;
		float factor = 0.0f;

		if (strata_gguf_get_str(l->m->gguf, strata_ld_key(l, "rope.scaling.type"), &type) == 0 &&
		    strata_str_eq(type, "linear") &&
		    strata_ld_f32_opt(l, "rope.scaling.factor", &factor) == 0 && factor > 0.0f)
			hp->rope_freq_scale = 1.0f / factor;
	}
	hp->rope_type = hp->arch == STRATA_ARCH_LLAMA ? STRATA_ROPE_NORM : STRATA_ROPE_NEOX;
	(void)v;
	if (hp->arch == STRATA_ARCH_LLAMA)
		return 0;
	if ((rc = load_moe_hparams(l)))
		return rc;
	if (hp->arch == STRATA_ARCH_QWEN4EXP)
		return (rc = load_ssm_hparams(l)) ? rc : strata_q4x_load_hparams(l);
	return hp->arch == STRATA_ARCH_QWEN3NEXT ? load_ssm_hparams(l) : 0;
}

#define T(suffix) (snprintf(name, sizeof(name), "blk.%u." suffix, i), name)

static int load_attention(struct loader *l, uint32_t i)
{
	const struct strata_hparams *hp = &l->m->hp;
	struct strata_layer *L = &l->m->layers[i];
	int64_t e = hp->n_embd, q = (int64_t)hp->n_head * hp->head_dim;
	int64_t qrows = L->attn_gated ? 2 * q : q; /* gated: [q, gate] per head */
	int64_t kv = (int64_t)hp->n_head_kv * hp->head_dim;
	int64_t vv = (int64_t)hp->n_head_kv * hp->head_dim_v;
	int64_t o = (int64_t)hp->n_head * hp->head_dim_v;
	int qk_norm = hp->arch == STRATA_ARCH_QWEN3MOE || hp->arch == STRATA_ARCH_QWEN3NEXT;
	char name[96];
	int rc;

	if ((rc = strata_ld_vec(l, T("attn_norm.weight"), e, 1, &L->attn_norm)) ||
	    (rc = strata_ld_mat(l, T("attn_q.weight"), e, qrows, &L->wq)) ||
	    (rc = strata_ld_mat(l, T("attn_k.weight"), e, kv, &L->wk)) ||
	    (rc = strata_ld_mat(l, T("attn_v.weight"), e, vv, &L->wv)) ||
	    (rc = strata_ld_mat(l, T("attn_output.weight"), o, e, &L->wo)) ||
	    (rc = strata_ld_vec(l, T("attn_q.bias"), q, 0, &L->bq)) ||
	    (rc = strata_ld_vec(l, T("attn_k.bias"), kv, 0, &L->bk)) ||
	    (rc = strata_ld_vec(l, T("attn_v.bias"), vv, 0, &L->bv)) ||
	    (rc = strata_ld_vec(l, T("attn_q_norm.weight"), hp->head_dim, qk_norm, &L->q_norm)) ||
	    (rc = strata_ld_vec(l, T("attn_k_norm.weight"), hp->head_dim, qk_norm, &L->k_norm)))
		return rc;
	return 0;
}

/*
 * A Gated DeltaNet mixer: every size follows from the ssm.* metadata.
 * qwen3next's has its own input norm and b/a in one ssm_ba (or everything
 * fused into ssm_in in early conversions); qwen4exp's has neither norm
 * (its hyper-connections are) nor ssm_ba, but ssm_beta and ssm_alpha.
 */
int strata_ld_deltanet(struct loader *l, uint32_t i)
{
	const struct strata_hparams *hp = &l->m->hp;
	struct strata_layer *L = &l->m->layers[i];
	struct strata_deltanet *dn = &L->dn;
	const int64_t e = hp->n_embd, nv = hp->ssm_dt_rank, vd = hp->ssm_d_inner;
	const int64_t ch = 2 * (int64_t)hp->ssm_n_group * hp->ssm_d_state + vd;
	const int q4x = hp->arch == STRATA_ARCH_QWEN4EXP;
	char name[96];
	int rc;

	if (!q4x && (rc = strata_ld_vec(l, T("attn_norm.weight"), e, 1, &L->attn_norm)))
		return rc;
	if (!q4x && !strata_ld_find(l, T("attn_qkv.weight"), 0) &&
	    strata_ld_find(l, T("ssm_in.weight"), 0)) {
		dn->fused = 1;
		rc = strata_ld_mat(l, T("ssm_in.weight"), e, ch + vd, &dn->wqkvz);
	} else if (!(rc = strata_ld_mat(l, T("attn_qkv.weight"), e, ch, &dn->wqkv))) {
		rc = strata_ld_mat(l, T("attn_gate.weight"), e, vd, &dn->wz);
	}
	if (rc)
		return rc;
	if (q4x ? (rc = strata_ld_mat(l, T("ssm_beta.weight"), e, nv, &L->q4x.beta)) ||
			  (rc = strata_ld_mat(l, T("ssm_alpha.weight"), e, nv, &L->q4x.alpha))
		: (rc = strata_ld_mat(l, T("ssm_ba.weight"), e, 2 * nv, &dn->wba)))
		return rc;
	if ((rc = strata_ld_f32(l, T("ssm_conv1d.weight"), hp->ssm_d_conv, ch, 1, &dn->conv)) ||
	    (rc = strata_ld_vec(l, T("ssm_dt.bias"), nv, 1, &dn->dt_bias)) ||
	    (rc = strata_ld_vec(l, T("ssm_a"), nv, 1, &dn->a)) ||
	    (rc = strata_ld_vec(l, T("ssm_norm.weight"), hp->ssm_head_v, 1, &dn->norm)) ||
	    (rc = strata_ld_mat(l, T("ssm_out.weight"), vd, e, &dn->wout)))
		return rc;
	return 0;
}

int strata_ld_moe(struct loader *l, uint32_t i)
{
	const struct strata_hparams *hp = &l->m->hp;
	struct strata_layer *L = &l->m->layers[i];
	int64_t e = hp->n_embd, f = hp->n_ff_exp;
	char name[96];
	int rc;

	L->moe = 1;
	if ((rc = strata_ld_mat(l, T("ffn_gate_inp.weight"), e, hp->n_expert, &L->gate_inp)) ||
	    (rc = load_experts(l, T("ffn_gate_exps.weight"), e, f, hp->n_expert, &L->gate_exps)) ||
	    (rc = load_experts(l, T("ffn_up_exps.weight"), e, f, hp->n_expert, &L->up_exps)) ||
	    (rc = load_experts(l, T("ffn_down_exps.weight"), f, e, hp->n_expert, &L->down_exps)) ||
	    (rc = strata_ld_vec(l, T("exp_probs_b.bias"), hp->n_expert, 0, &L->exp_probs_b)))
		return rc;
	if (hp->n_ff_shexp == 0)
		return 0;
	L->has_shexp = 1;
	if ((rc = strata_ld_mat(l, T("ffn_gate_shexp.weight"), e, hp->n_ff_shexp, &L->gate_shexp)) ||
	    (rc = strata_ld_mat(l, T("ffn_up_shexp.weight"), e, hp->n_ff_shexp, &L->up_shexp)) ||
	    (rc = strata_ld_mat(l, T("ffn_down_shexp.weight"), hp->n_ff_shexp, e, &L->down_shexp)))
		return rc;
	if (hp->arch != STRATA_ARCH_QWEN3NEXT && hp->arch != STRATA_ARCH_QWEN4EXP)
		return 0;
	L->has_shexp_gate = 1;
	return strata_ld_mat(l, T("ffn_gate_inp_shexp.weight"), e, 1, &L->gate_inp_shexp);
}

static int load_layer(struct loader *l, uint32_t i)
{
	const struct strata_hparams *hp = &l->m->hp;
	struct strata_layer *L = &l->m->layers[i];
	int64_t e = hp->n_embd;
	const int post = hp->arch == STRATA_ARCH_GLM4MOE || hp->arch == STRATA_ARCH_QWEN3NEXT;
	const char *norm = post ? "post_attention_norm.weight" : "ffn_norm.weight";
	char name[96];
	int rc;

	if (hp->arch == STRATA_ARCH_QWEN4EXP)
		return strata_q4x_load_layer(l, i);
	if (hp->arch == STRATA_ARCH_QWEN3NEXT) {
		/* Linear attention but on every interval-th layer; MTP layers attend fully. */
		L->recurrent = i < hp->n_layer - hp->n_nextn &&
			       (i + 1) % hp->full_attn_interval != 0;
		L->attn_gated = !L->recurrent;
	}
	if ((rc = L->recurrent ? strata_ld_deltanet(l, i) : load_attention(l, i)))
		return rc;
	snprintf(name, sizeof(name), "blk.%u.%s", i, norm);
	if ((rc = strata_ld_vec(l, name, e, 1, &L->ffn_norm)))
		return rc;
	if (hp->n_expert && i >= hp->n_dense_lead) {
		rc = strata_ld_moe(l, i);
	} else {
		if ((rc = strata_ld_mat(l, T("ffn_gate.weight"), e, hp->n_ff, &L->w_gate)) ||
		    (rc = strata_ld_mat(l, T("ffn_up.weight"), e, hp->n_ff, &L->w_up)))
			return rc;
		rc = strata_ld_mat(l, T("ffn_down.weight"), hp->n_ff, e, &L->w_down);
	}
	if (rc || i < hp->n_layer - hp->n_nextn)
		return rc;
	/* The MTP head: kept for speculative decoding, skipped by the forward pass. */
	if ((rc = strata_ld_mat(l, T("nextn.eh_proj.weight"), 2 * e, e, &L->nextn.eh_proj)) ||
	    (rc = strata_ld_vec(l, T("nextn.enorm.weight"), e, 1, &L->nextn.enorm)) ||
	    (rc = strata_ld_vec(l, T("nextn.hnorm.weight"), e, 1, &L->nextn.hnorm)) ||
	    (rc = strata_ld_vec(l, T("nextn.shared_head_norm.weight"), e, 0,
			   &L->nextn.shared_head_norm)))
		return rc;
	return 0;
}
#undef T

static int load_weights(struct loader *l)
{
	struct strata_model *m = l->m;
	const struct strata_hparams *hp = &m->hp;
	const struct strata_gguf_tensor *t;
	int rc;

	t = strata_ld_find(l, "token_embd.weight", 1);
	if (!t)
		return -EINVAL;
	if (t->n_dims != 2 || t->ne[1] < 1 || t->ne[1] > INT32_MAX) {
		strata_error("%s: tensor 'token_embd.weight' must be 2-D [n_embd, n_vocab]", l->path);
		return -EINVAL;
	}
	m->hp.n_vocab = (uint32_t)t->ne[1];
	if ((rc = strata_ld_mat(l, "token_embd.weight", hp->n_embd, hp->n_vocab, &m->tok_embd)))
		return rc;
	/* qwen4exp has no output norm: its output mixer (hc_head) is one */
	if (hp->arch == STRATA_ARCH_QWEN4EXP ? (rc = strata_q4x_load_globals(l))
					     : (rc = strata_ld_vec(l, "output_norm.weight", hp->n_embd,
								   1, &m->output_norm)))
		return rc;
	if (strata_ld_find(l, "output.weight", 0)) {
		rc = strata_ld_mat(l, "output.weight", hp->n_embd, hp->n_vocab, &m->output);
		if (rc)
			return rc;
	} else {
		m->output = m->tok_embd; /* tied embeddings */
	}
	if ((rc = strata_ld_vec(l, "rope_freqs.weight", hp->n_rot / 2, 0, &m->rope_freqs)))
		return rc;
	/* Each layer has tensors of its own: a block_count past the tensor count is
	 * corrupt, and must not size an allocation (the fuzzer asked for 140 GB). */
	if ((int64_t)hp->n_layer > strata_gguf_n_tensors(m->gguf)) {
		strata_error("%s: block_count %u is more than the file's %" PRId64 " tensors",
			     l->path, hp->n_layer, strata_gguf_n_tensors(m->gguf));
		return -EINVAL;
	}
	m->layers = calloc(hp->n_layer, sizeof(*m->layers));
	if (!m->layers)
		return -ENOMEM;
	for (uint32_t i = 0; i < hp->n_layer; i++)
		if ((rc = load_layer(l, i)))
			return rc;
	return 0;
}

/*
 * Streamed experts are never paged in: that is what streaming them is for.
 * Nor is qwen4exp's PLE table, far larger than RAM, read row by row.
 */
static int prefault_skip(const struct strata_gguf_tensor *t, unsigned flags)
{
	if (strata_str_eq(t->name, STRATA_PLE_TENSOR))
		return 1;
	return (flags & STRATA_MODEL_STREAM_EXPERTS) && t->name.len > 5 &&
	       memmem(t->name.s, t->name.len, "_exps.", 6) != NULL;
}

static void progress(const char *path, uint64_t done, uint64_t len, uint64_t *t_last)
{
	uint64_t now = strata_now_ns();

	if (now - *t_last > 100000000ull || done >= len) {
		strata_log_progress(done >= len, "loading %s: %3.0f%% (%llu / %llu MiB)", path,
				    100.0 * done / len, (unsigned long long)(done >> 20),
				    (unsigned long long)(len >> 20));
		*t_last = now;
	}
}

/*
 * Page the weights in before the first token, with a progress line when
 * stderr is a terminal: a big model otherwise stalls its first forward pass
 * for seconds without a word.  Small models and pipes just get readahead.
 */
static void prefault(const struct strata_model *m, const char *path, unsigned flags)
{
	const struct strata_gguf *g = m->gguf;
	const uint64_t page = strata_page_size();
	const int64_t n = strata_gguf_n_tensors(g);
	uint64_t len = 0, done = 0;
	volatile uint8_t sink = 0;
	uint64_t t_last = 0;

	for (int64_t i = 0; i < n; i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
		uintptr_t a = (uintptr_t)t->data & ~(uintptr_t)(page - 1);

		if (prefault_skip(t, flags) || !t->size)
			continue;
		strata_vm_advise((void *)a, (uintptr_t)t->data + t->size - a, STRATA_VM_WILLNEED);
		len += t->size;
	}
	if (len < (256u << 20) || !isatty(2))
		return;
	for (int64_t i = 0; i < n; i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
		const uint8_t *p = t->data;

		if (prefault_skip(t, flags))
			continue;
		for (uint64_t off = 0; off < t->size; off += page) {
			sink ^= p[off];
			if ((done + off) % (64u << 20) < page)
				progress(path, done + off, len, &t_last);
		}
		done += t->size;
	}
	progress(path, len, len, &t_last);
	(void)sink;
}

static const struct {
	const char *name;
	enum strata_arch arch;
} g_archs[] = {
	{ "llama", STRATA_ARCH_LLAMA },
	{ "qwen3moe", STRATA_ARCH_QWEN3MOE },
	{ "glm4moe", STRATA_ARCH_GLM4MOE },
	{ "qwen3next", STRATA_ARCH_QWEN3NEXT },
	{ "qwen4exp", STRATA_ARCH_QWEN4EXP },
};

int strata_model_load(const char *path, struct strata_model **out)
{
	return strata_model_load_ex(path, 0, out);
}

int strata_model_load_ex(const char *path, unsigned flags, struct strata_model **out)
{
	struct loader l = { .path = path };
	struct strata_str arch;
	int rc;

	*out = NULL;
	l.m = calloc(1, sizeof(*l.m));
	if (!l.m)
		return -ENOMEM;
	l.m->flags = flags;
	rc = strata_gguf_open(path, &l.m->gguf);
	if (rc)
		goto fail;
	if (strata_gguf_get_str(l.m->gguf, "general.architecture", &arch) != 0) {
		strata_error("%s: missing metadata key 'general.architecture'", path);
		rc = -EINVAL;
		goto fail;
	}
	for (size_t i = 0; i < sizeof(g_archs) / sizeof(g_archs[0]); i++)
		if (strata_str_eq(arch, g_archs[i].name)) {
			l.m->hp.arch = g_archs[i].arch;
			snprintf(l.m->hp.arch_name, sizeof(l.m->hp.arch_name), "%s",
				 g_archs[i].name);
		}
	if (!l.m->hp.arch) {
		strata_error("%s: architecture '%.*s' is not supported (supported: llama, qwen3moe, "
			     "glm4moe, qwen3next, qwen4exp)", path, (int)(arch.len > 64 ? 64 : arch.len), arch.s);
		rc = -ENOTSUP;
		goto fail;
	}
	if ((rc = load_hparams(&l)) || (rc = load_weights(&l)))
		goto fail;
	prefault(l.m, path, flags);
	*out = l.m;
	return 0;
fail:
	strata_model_free(l.m);
	return rc;
}

void strata_model_free(struct strata_model *m)
{
	if (!m)
		return;
	free(m->layers);
	strata_gguf_close(m->gguf);
	free(m);
}
