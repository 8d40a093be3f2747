/*
 * check_qwen3next.c - the qwen3next forward pass (Gated DeltaNet + gated
 * attention + MoE with a gated shared expert) against llama.cpp's logits,
 * the chunked and recurrent forms of the delta rule against each other,
 * sequence snapshots and rollback, and load-time refusals.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "backend/deltanet.h"
#include "model/model.h"
#include "slog.h"
#include "testutil.h"

#define SYN "models/syn-qwen3next-f32.gguf"

static const char *const g_prompts[] = { "once", "story", "mixed" };

struct rig {
	struct strata_model *m;
	struct strata_seq *s;
	struct strata_pool *pool;
};

static void rig_open(struct rig *r, const char *rel, uint32_t max_batch, int threads)
{
	ck_assert_int_eq(strata_model_load(tu_shared_or_skip(rel), &r->m), 0);
	ck_assert_int_eq(strata_pool_create(threads, &r->pool), 0);
	r->s = tu_seq(r->m, r->pool, 0, max_batch);
}

static void rig_close(struct rig *r)
{
	tu_seq_free(r->s);
	strata_pool_free(r->pool);
	strata_model_free(r->m);
}

/* Feed n tokens in pieces of `chunk`, every row's logits into out (n x n_vocab). */
static void feed(struct rig *r, const int32_t *tok, uint32_t n, uint32_t chunk, float *out)
{
	for (uint32_t i = 0; i < n; i += chunk) {
		uint32_t k = n - i < chunk ? n - i : chunk;

		ck_assert_int_eq(strata_forward(r->s, tok + i, k,
						out + (size_t)i * r->m->hp.n_vocab, 1), 0);
	}
}

static double max_abs(const float *a, size_t n)
{
	double m = 0.0;

	for (size_t i = 0; i < n; i++)
		m = fabs(a[i]) > m ? fabs(a[i]) : m;
	return m;
}

/* ---- (1) golden logits ----------------------------------------------------------- */

static double golden_diff(const char *prompt, uint32_t chunk, int threads)
{
	char rel[128];
	struct slog g;
	struct rig r;
	uint32_t n;
	float *out;
	double d;

	snprintf(rel, sizeof(rel), "golden/syn-qwen3next-f32.%s.slog", prompt);
	ck_assert_int_eq(slog_read(tu_shared_or_skip(rel), &g), 0);
	rig_open(&r, SYN, chunk, threads);
	ck_assert_uint_eq(r.m->hp.n_vocab, g.n_vocab);
	n = g.n_prompt + g.n_gen;
	out = malloc((size_t)n * g.n_vocab * sizeof(float));
	feed(&r, g.tokens, n, chunk, out);
	ck_assert_uint_eq(strata_seq_pos(r.s), n);
	d = tu_max_abs_diff(out, g.logits, (size_t)n * g.n_vocab);
	free(out);
	rig_close(&r);
	slog_free(&g);
	return d;
}

/* At the SIMD level of this ctest run (check_qwen3next, .avx2, .avx512: testutil.h). */
START_TEST(golden)
{
	int l = tu_simd_level();
	enum strata_simd level = (enum strata_simd)l;

	if (l < 0)
		return;
	for (size_t pi = 0; pi < 3; pi++) {
		double batch = golden_diff(g_prompts[pi], 512, 2);
		double step = golden_diff(g_prompts[pi], 1, 1);
		double odd = golden_diff(g_prompts[pi], 7, 2);

		printf("%s syn-qwen3next-f32.%s: max |diff| batch %.2e, token-by-token %.2e, "
		       "chunks of 7 %.2e\n", strata_simd_name(level), g_prompts[pi], batch, step,
		       odd);
		ck_assert_msg(batch <= 1e-3 && step <= 1e-3 && odd <= 1e-3,
			      "%s syn-qwen3next-f32.%s exceeds 1e-3", strata_simd_name(level),
			      g_prompts[pi]);
	}
	strata_simd_set(strata_simd_detect());
}
END_TEST

START_TEST(loads_hybrid_layout)
{
	struct strata_model *m;
	const struct strata_hparams *hp;

	ck_assert_int_eq(strata_model_load(tu_shared_or_skip(SYN), &m), 0);
	hp = &m->hp;
	ck_assert_int_eq(hp->arch, STRATA_ARCH_QWEN3NEXT);
	ck_assert_uint_eq(hp->n_layer, 5);
	ck_assert_uint_eq(hp->n_nextn, 1);
	ck_assert_uint_eq(hp->ssm_head_v, 16);
	/* layers 0-2 linear, 3 full attention, 4 the MTP layer (full attention) */
	for (uint32_t i = 0; i < 5; i++)
		ck_assert_int_eq(m->layers[i].recurrent, i < 3);
	ck_assert_int_eq(m->layers[3].attn_gated, 1);
	ck_assert_ptr_nonnull(m->layers[4].nextn.enorm);
	ck_assert_int_eq(m->layers[0].has_shexp_gate, 1);
	strata_model_free(m);
}
END_TEST

/* ---- (2) chunked and recurrent forms agree ------------------------------------ */

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static float frand(void) /* uniform in [-1, 1) */
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (float)((g_rng >> 40) / (double)(1u << 24)) * 2.0f - 1.0f;
}

/* The delta rule alone: 200 tokens (3 full chunks and a tail), dk != dv. */
START_TEST(rule_forms_agree)
{
	const uint32_t n = 200, dk = 24, dv = 40;
	float *q = malloc(n * dk * 4), *k = malloc(n * dk * 4), *v = malloc(n * dv * 4);
	float *g = malloc(n * 4), *b = malloc(n * 4), *o1 = malloc(n * dv * 4);
	float *o2 = malloc(n * dv * 4), *S1 = calloc(dk * dv, 4), *S2 = calloc(dk * dv, 4);
	float *scr = malloc(strata_dn_rule_scratch(dk, dv) * 4);
	double dout, dstate;

	for (uint32_t t = 0; t < n; t++) {
		float nq = 0, nk = 0;

		for (uint32_t i = 0; i < dk; i++) {
			q[t * dk + i] = frand();
			k[t * dk + i] = frand();
			nq += q[t * dk + i] * q[t * dk + i];
			nk += k[t * dk + i] * k[t * dk + i];
		}
		for (uint32_t i = 0; i < dk; i++) {
			q[t * dk + i] /= sqrtf(nq) * sqrtf((float)dk);
			k[t * dk + i] /= sqrtf(nk);
		}
		for (uint32_t i = 0; i < dv; i++)
			v[t * dv + i] = frand();
		g[t] = -0.3f * (frand() + 1.0f); /* decays between 1 and e^-0.6 */
		b[t] = 0.5f + 0.5f * frand();
	}
	/* A state to start from that is not zero: run 10 tokens through both. */
	strata_dn_rule_recurrent(q, k, v, dk, dk, dv, g, b, 1, 10, dk, dv, S1, o1, dv, scr);
	memcpy(S2, S1, dk * dv * 4);
	strata_dn_rule_recurrent(q, k, v, dk, dk, dv, g, b, 1, n, dk, dv, S1, o1, dv, scr);
	strata_dn_rule_chunked(q, k, v, dk, dk, dv, g, b, 1, n, dk, dv, S2, o2, dv, scr);
	dout = tu_max_abs_diff(o1, o2, n * dv) / max_abs(o1, n * dv);
	dstate = tu_max_abs_diff(S1, S2, dk * dv) / max_abs(S1, dk * dv);
	printf("delta rule, chunked vs recurrent over %u tokens: outputs %.2e, state %.2e "
	       "(relative)\n", n, dout, dstate);
	ck_assert(dout < 1e-5 && dstate < 1e-5);
	/* and the forms do differ from a rule that ignores the state */
	ck_assert(max_abs(S1, dk * dv) > 0.1);
	free(q); free(k); free(v); free(g); free(b); free(o1); free(o2); free(S1); free(S2);
	free(scr);
}
END_TEST

/* The golden story tokens and more: 300 tokens, several 64-token chunks per batch. */
static int32_t *long_prompt(uint32_t *n_out)
{
	struct slog g;
	uint32_t n = 300;
	int32_t *tok = malloc(n * sizeof(int32_t));

	ck_assert_int_eq(slog_read(tu_shared_or_skip("golden/syn-qwen3next-f32.story.slog"), &g),
			 0);
	for (uint32_t i = 0; i < n; i++)
		tok[i] = i < g.n_prompt + g.n_gen ? g.tokens[i] : (int32_t)((i * 37u + 11u) % 512u);
	slog_free(&g);
	*n_out = n;
	return tok;
}

START_TEST(chunkings_agree)
{
	static const uint32_t chunks[] = { 7, 1, 64, 65, 100 };
	uint32_t n;
	int32_t *tok = long_prompt(&n);
	struct rig r;
	float *ref, *out;
	size_t nv;
	double scale;

	rig_open(&r, SYN, 512, 2);
	nv = r.m->hp.n_vocab;
	ref = malloc(n * nv * sizeof(float));
	out = malloc(n * nv * sizeof(float));
	feed(&r, tok, n, n, ref);
	scale = max_abs(ref, n * nv);
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		double d;

		ck_assert_int_eq(strata_seq_truncate(r.s, 0), 0);
		feed(&r, tok, n, chunks[i], out);
		d = tu_max_abs_diff(ref, out, n * nv);
		printf("%u tokens in one batch vs chunks of %u: max |diff| %.2e (logit scale "
		       "%.2f)\n", n, chunks[i], d, scale);
		ck_assert(d <= 1e-4 * scale);
	}
	free(ref);
	free(out);
	free(tok);
	rig_close(&r);
}
END_TEST

/* ---- (3) snapshots and rollback ------------------------------------------------- */

static void assert_same(const float *a, const float *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(a[i] == b[i], "logit %zu differs: %g vs %g", i, a[i], b[i]);
}

START_TEST(save_restore_replays)
{
	uint32_t n;
	int32_t *tok = long_prompt(&n);
	const uint32_t p = 90, k = 40;
	struct rig r;
	struct strata_seq_snapshot *snap;
	float *a, *b;
	size_t nv;

	rig_open(&r, SYN, 64, 2);
	nv = r.m->hp.n_vocab;
	a = malloc((size_t)n * nv * sizeof(float));
	b = malloc((size_t)n * nv * sizeof(float));
	ck_assert_int_eq(strata_seq_recurrent(r.s), 1);
	ck_assert_int_eq(strata_seq_snapshot_create(r.s, &snap), 0);
	ck_assert_uint_eq(strata_seq_snapshot_pos(snap), UINT32_MAX);
	ck_assert_int_eq(strata_seq_restore(r.s, snap), -EINVAL); /* never saved */
	feed(&r, tok, p, 64, a);
	ck_assert_int_eq(strata_seq_save(r.s, snap), 0);
	ck_assert_uint_eq(strata_seq_snapshot_pos(snap), p);
	feed(&r, tok + p, k, 64, a + p * nv);
	/* a recurrent state cannot be rewound to an arbitrary position */
	ck_assert_int_eq(strata_seq_truncate(r.s, p), -EINVAL);
	ck_assert_int_eq(strata_seq_truncate(r.s, p + k + 1), -EINVAL);
	ck_assert_int_eq(strata_seq_truncate(r.s, p + k), 0);
	ck_assert_uint_eq(strata_seq_pos(r.s), p + k);
	/* back to p: the same continuation gives the same logits, bit for bit */
	ck_assert_int_eq(strata_seq_restore(r.s, snap), 0);
	ck_assert_uint_eq(strata_seq_pos(r.s), p);
	feed(&r, tok + p, k, 64, b + p * nv);
	assert_same(a + p * nv, b + p * nv, (size_t)k * nv);
	/* and again, token by token this time (the recurrence): close, not equal */
	ck_assert_int_eq(strata_seq_restore(r.s, snap), 0);
	feed(&r, tok + p, k, 1, b + p * nv);
	ck_assert(tu_max_abs_diff(a + p * nv, b + p * nv, (size_t)k * nv) <=
		  1e-4 * max_abs(a + p * nv, (size_t)k * nv));
	/* truncate to 0 resets: re-reading gives the first run's logits */
	ck_assert_int_eq(strata_seq_truncate(r.s, 0), 0);
	feed(&r, tok, p, 64, b);
	assert_same(a, b, (size_t)p * nv);
	/* the reread rewrote KV rows below p: the snapshot is stale now */
	ck_assert_uint_eq(strata_seq_snapshot_pos(snap), UINT32_MAX);
	ck_assert_int_eq(strata_seq_restore(r.s, snap), -ESTALE);
	ck_assert_uint_eq(strata_seq_pos(r.s), p);
	strata_seq_snapshot_free(snap);
	free(a);
	free(b);
	free(tok);
	rig_close(&r);
}
END_TEST

/* Going back to an earlier snapshot and on stales later ones; not earlier ones. */
START_TEST(stale_rules)
{
	uint32_t n;
	int32_t *tok = long_prompt(&n);
	struct rig r, r2;
	struct strata_seq_snapshot *s10, *s20, *s0, *other;
	float *l = malloc(512 * sizeof(float));

	rig_open(&r, SYN, 32, 1);
	rig_open(&r2, SYN, 32, 1);
	ck_assert_int_eq(strata_seq_snapshot_create(r.s, &s0), 0);
	ck_assert_int_eq(strata_seq_snapshot_create(r.s, &s10), 0);
	ck_assert_int_eq(strata_seq_snapshot_create(r.s, &s20), 0);
	ck_assert_int_eq(strata_seq_snapshot_create(r2.s, &other), 0);
	ck_assert_int_eq(strata_seq_save(r.s, s0), 0);
	ck_assert_int_eq(strata_forward(r.s, tok, 10, l, 0), 0);
	ck_assert_int_eq(strata_seq_save(r.s, s10), 0);
	ck_assert_int_eq(strata_seq_save(r2.s, s10), -EINVAL); /* bound to r.s */
	ck_assert_int_eq(strata_seq_restore(r2.s, s10), -EINVAL);
	ck_assert_int_eq(strata_forward(r.s, tok + 10, 10, l, 0), 0);
	ck_assert_int_eq(strata_seq_save(r.s, s20), 0);
	/* restoring 10 then 20 is fine: nothing was written in between */
	ck_assert_int_eq(strata_seq_restore(r.s, s10), 0);
	ck_assert_int_eq(strata_seq_restore(r.s, s20), 0);
	ck_assert_uint_eq(strata_seq_pos(r.s), 20);
	/* writing at 10 breaks the snapshot at 20, not the one at 10 */
	ck_assert_int_eq(strata_seq_restore(r.s, s10), 0);
	ck_assert_int_eq(strata_forward(r.s, tok + 10, 3, l, 0), 0);
	ck_assert_int_eq(strata_seq_restore(r.s, s20), -ESTALE);
	ck_assert_uint_eq(strata_seq_pos(r.s), 13);
	ck_assert_int_eq(strata_seq_restore(r.s, s10), 0);
	/* saving again refreshes it */
	ck_assert_int_eq(strata_forward(r.s, tok + 10, 10, l, 0), 0);
	ck_assert_int_eq(strata_seq_save(r.s, s20), 0);
	ck_assert_uint_eq(strata_seq_snapshot_pos(s20), 20);
	/* a snapshot at 0 survives everything */
	ck_assert_int_eq(strata_seq_truncate(r.s, 0), 0);
	ck_assert_int_eq(strata_forward(r.s, tok, 5, l, 0), 0);
	ck_assert_int_eq(strata_seq_restore(r.s, s0), 0);
	ck_assert_uint_eq(strata_seq_pos(r.s), 0);
	/* snapshots outlive their sequence, unbound */
	rig_close(&r);
	ck_assert_uint_eq(strata_seq_snapshot_pos(s10), UINT32_MAX);
	strata_seq_snapshot_free(s10);
	strata_seq_snapshot_free(s20);
	strata_seq_snapshot_free(s0);
	strata_seq_snapshot_free(other);
	strata_seq_snapshot_free(NULL);
	rig_close(&r2);
	free(l);
	free(tok);
}
END_TEST

/* Attention-only models: truncate anywhere stays exact, and snapshots work too. */
START_TEST(attention_only_rollback)
{
	struct rig r;
	struct strata_seq_snapshot *snap;
	int32_t tok[12] = { 1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50 };
	float *a = malloc(12 * 512 * sizeof(float)), *b = malloc(12 * 512 * sizeof(float));

	rig_open(&r, "models/syn-llama-f32.gguf", 16, 1);
	ck_assert_int_eq(strata_seq_recurrent(r.s), 0);
	ck_assert_int_eq(strata_seq_snapshot_create(r.s, &snap), 0);
	feed(&r, tok, 12, 4, a);
	ck_assert_int_eq(strata_seq_truncate(r.s, 6), 0);
	ck_assert_int_eq(strata_seq_save(r.s, snap), 0);
	feed(&r, tok + 6, 6, 6, b + 6 * 512);
	ck_assert(tu_max_abs_diff(a + 6 * 512, b + 6 * 512, 6 * 512) <= 1e-5);
	ck_assert_int_eq(strata_seq_restore(r.s, snap), 0);
	ck_assert_uint_eq(strata_seq_pos(r.s), 6);
	strata_seq_snapshot_free(snap);
	free(a);
	free(b);
	rig_close(&r);
}
END_TEST

/* ---- (4) bad files ---------------------------------------------------------------- */

/*
 * Copy the syn model to `dst`, with key `key` (if not NULL) set to `val` and
 * tensor `bad` (if not NULL) given ne0 `bad_ne0` (its data cut to fit).
 */
static void write_variant(const char *dst, const char *key, uint32_t val, const char *bad,
			  int64_t bad_ne0)
{
	struct strata_gguf *g;
	struct strata_gguf_writer *w;

	ck_assert_int_eq(strata_gguf_open(tu_shared_or_skip(SYN), &g), 0);
	ck_assert_int_eq(strata_gguf_writer_open(dst, &w), 0);
	for (int64_t i = 0; i < strata_gguf_n_kv(g); i++)
		ck_assert_int_eq(strata_gguf_writer_copy_kv(w, g, i), 0);
	if (key)
		ck_assert_int_eq(strata_gguf_writer_set_u32(w, key, val), 0);
	for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
		char name[80];
		int64_t ne[4] = { t->ne[0], t->ne[1], t->ne[2], t->ne[3] };

		snprintf(name, sizeof(name), "%.*s", (int)t->name.len, t->name.s);
		if (bad && strcmp(name, bad) == 0)
			ne[0] = bad_ne0;
		ck_assert_int_ge(strata_gguf_writer_add_tensor(w, name, t->type, t->n_dims, ne), 0);
	}
	for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
		char name[80];
		size_t size = t->size;

		snprintf(name, sizeof(name), "%.*s", (int)t->name.len, t->name.s);
		if (bad && strcmp(name, bad) == 0)
			size = size / t->ne[0] * bad_ne0;
		ck_assert_int_eq(strata_gguf_writer_write(w, t->data, size), 0);
	}
	ck_assert_int_eq(strata_gguf_writer_commit(w), 0);
	strata_gguf_writer_close(w);
	strata_gguf_close(g);
}

START_TEST(bad_ssm_shapes_refused)
{
	const char *dir = tu_tmpdir();
	char path[512];
	struct strata_model *m;

	ck_assert_ptr_nonnull(dir);
	/* the untouched copy loads: the writer round trip is not what fails below */
	snprintf(path, sizeof(path), "%s/same.gguf", dir);
	write_variant(path, NULL, 0, NULL, 0);
	ck_assert_int_eq(strata_model_load(path, &m), 0);
	strata_model_free(m);
	snprintf(path, sizeof(path), "%s/conv.gguf", dir);
	write_variant(path, NULL, 0, "blk.1.ssm_conv1d.weight", 3);
	tu_expect_model_refused(path, -EINVAL, "blk.1.ssm_conv1d.weight");
	/* state_size 32: the fused q/k/v projection no longer fits */
	snprintf(path, sizeof(path), "%s/state.gguf", dir);
	write_variant(path, "qwen3next.ssm.state_size", 32, NULL, 0);
	tu_expect_model_refused(path, -EINVAL, "blk.0.attn_qkv.weight");
	/* inner_size 48: value heads of 12, so the norm and gate disagree */
	snprintf(path, sizeof(path), "%s/inner.gguf", dir);
	write_variant(path, "qwen3next.ssm.inner_size", 48, NULL, 0);
	tu_expect_model_refused(path, -EINVAL, "blk.0.attn_qkv.weight");
	/* time_step_rank 3 does not split into the 2 key groups */
	snprintf(path, sizeof(path), "%s/rank.gguf", dir);
	write_variant(path, "qwen3next.ssm.time_step_rank", 3, NULL, 0);
	tu_expect_model_refused(path, -EINVAL, "ssm.group_count");
	snprintf(path, sizeof(path), "%s/a.gguf", dir);
	write_variant(path, NULL, 0, "blk.2.ssm_a", 2);
	tu_expect_model_refused(path, -EINVAL, "blk.2.ssm_a");
	ck_assert_int_eq(tu_rmtree(dir), 0);
}
END_TEST

/*
 * Rewrite the syn model the way early conversions stored it: attn_qkv and
 * attn_gate of each DeltaNet layer fused into ssm_in, per key head
 * [q, k, v of its value heads, z of them].
 */
static void write_legacy(const char *dst)
{
	const int64_t e = 64, nk = 2, dk = 16, rv = 32, ch = 128, vd = 64;
	struct strata_gguf *g;
	struct strata_gguf_writer *w;
	float *fused = malloc((size_t)(ch + vd) * e * sizeof(float));

	ck_assert_int_eq(strata_gguf_open(tu_shared_or_skip(SYN), &g), 0);
	ck_assert_int_eq(strata_gguf_writer_open(dst, &w), 0);
	for (int64_t i = 0; i < strata_gguf_n_kv(g); i++)
		ck_assert_int_eq(strata_gguf_writer_copy_kv(w, g, i), 0);
	for (int pass = 0; pass < 2; pass++)
		for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++) {
			const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i), *z;
			char name[80], zname[80];
			int64_t ne[4] = { e, ch + vd, 1, 1 };
			unsigned blk;

			snprintf(name, sizeof(name), "%.*s", (int)t->name.len, t->name.s);
			if (strstr(name, ".attn_gate.weight"))
				continue;
			if (!strstr(name, ".attn_qkv.weight")) {
				if (pass == 0)
					ck_assert_int_ge(strata_gguf_writer_add_tensor(
						w, name, t->type, t->n_dims, t->ne), 0);
				else
					ck_assert_int_eq(strata_gguf_writer_write(w, t->data,
										  t->size), 0);
				continue;
			}
			ck_assert_int_eq(sscanf(name, "blk.%u.", &blk), 1);
			snprintf(name, sizeof(name), "blk.%u.ssm_in.weight", blk);
			if (pass == 0) {
				ck_assert_int_ge(strata_gguf_writer_add_tensor(w, name, t->type, 2,
									       ne), 0);
				continue;
			}
			snprintf(zname, sizeof(zname), "blk.%u.attn_gate.weight", blk);
			z = strata_gguf_find_tensor(g, zname);
			ck_assert_ptr_nonnull(z);
			for (int64_t k = 0; k < nk; k++) {
				const float *qkv = t->data, *zz = z->data;
				float *dstk = fused + (size_t)k * (2 * dk + 2 * rv) * e;

				memcpy(dstk, qkv + k * dk * e, dk * e * 4);
				memcpy(dstk + dk * e, qkv + (nk + k) * dk * e, dk * e * 4);
				memcpy(dstk + 2 * dk * e, qkv + (2 * nk * dk + k * rv) * e, rv * e * 4);
				memcpy(dstk + (2 * dk + rv) * e, zz + k * rv * e, rv * e * 4);
			}
			ck_assert_int_eq(strata_gguf_writer_write(w, fused, (ch + vd) * e * 4), 0);
		}
	ck_assert_int_eq(strata_gguf_writer_commit(w), 0);
	strata_gguf_writer_close(w);
	strata_gguf_close(g);
	free(fused);
}

/* The fused ssm_in layout of early conversions gives the same logits. */
START_TEST(legacy_ssm_in_layout)
{
	const char *dir = tu_tmpdir();
	char path[512];
	struct slog g;
	struct rig r;
	float *a, *b;
	uint32_t n;
	double d, dg;

	ck_assert_int_eq(slog_read(tu_shared_or_skip("golden/syn-qwen3next-f32.mixed.slog"), &g),
			 0);
	snprintf(path, sizeof(path), "%s/legacy.gguf", dir);
	write_legacy(path);
	n = g.n_prompt + g.n_gen;
	a = malloc((size_t)n * g.n_vocab * sizeof(float));
	b = malloc((size_t)n * g.n_vocab * sizeof(float));
	rig_open(&r, SYN, 32, 2);
	feed(&r, g.tokens, n, 32, a);
	rig_close(&r);
	ck_assert_int_eq(strata_model_load(path, &r.m), 0);
	ck_assert_int_eq(r.m->layers[0].dn.fused, 1);
	ck_assert_int_eq(strata_pool_create(2, &r.pool), 0);
	r.s = tu_seq(r.m, r.pool, 0, 32);
	feed(&r, g.tokens, n, 32, b);
	rig_close(&r);
	d = tu_max_abs_diff(a, b, (size_t)n * g.n_vocab);
	dg = tu_max_abs_diff(g.logits, b, (size_t)n * g.n_vocab);
	printf("fused ssm_in layout: max |diff| %.2e vs attn_qkv/attn_gate, %.2e vs golden\n", d,
	       dg);
	ck_assert(d <= 1e-5 && dg <= 1e-3);
	free(a);
	free(b);
	slog_free(&g);
	ck_assert_int_eq(tu_rmtree(dir), 0);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("qwen3next");
	TCase *tc = tcase_create("qwen3next"), *simd = tcase_create("golden");

	tcase_set_tags(simd, "simd");
	tcase_set_timeout(simd, 600);
	tcase_add_test(simd, golden);
	suite_add_tcase(su, simd);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, loads_hybrid_layout);
	tcase_add_test(tc, rule_forms_agree);
	tcase_add_test(tc, chunkings_agree);
	tcase_add_test(tc, save_restore_replays);
	tcase_add_test(tc, stale_rules);
	tcase_add_test(tc, attention_only_rollback);
	tcase_add_test(tc, bad_ssm_shapes_refused);
	tcase_add_test(tc, legacy_ssm_in_layout);
	suite_add_tcase(su, tc);
	return tu_srunner_run(srunner_create(su));
}
