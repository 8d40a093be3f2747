/*
 * check_qwen4exp.c - the qwen4exp forward pass (hyper-connections, Gated
 * DeltaNet in its tiled form, gated attention with the QSA indexer, MoE
 * with a gated shared expert, the PLE n-gram fusion) against llama.cpp's
 * logits, in one batch, in chunks and token by token; turns through a
 * snapshot; and the load-time refusals of a malformed model.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/pool.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "config/config.h"
#include "model/model.h"
#include "plugin/registry.h"
#include "ple/ple.h"
#include "slog.h"
#include "testutil.h"

static const char *const g_models[] = { "syn-qwen4exp-f32", "syn-qwen4exp-r4k16-f32",
					 "syn-qwen4exp-mtp-f32" };
static const char *const g_prompts[] = { "once", "story", "mixed" };

struct rig {
	struct strata_model *m;
	struct strata_seq *s;
	struct strata_pool *pool;
};

static void rig_open(struct rig *r, const char *model, uint32_t max_batch, int threads)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "models/%s.gguf", model);
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

static void read_golden(const char *model, const char *prompt, struct slog *g)
{
	char rel[160];

	snprintf(rel, sizeof(rel), "golden/%s.%s.slog", model, prompt);
	ck_assert_int_eq(slog_read(tu_shared_or_skip(rel), g), 0);
}

/* ---- (1) golden logits ----------------------------------------------------------- */

/*
 * The largest logit difference from the golden of model.prompt, read in
 * pieces of `chunk` tokens; with qsa or ple 0 the model runs without its
 * indexer's choice (dense attention) or without the PLE fusion.
 */
static double golden_diff_as(const char *model, const char *prompt, uint32_t chunk,
			     int threads, int qsa, int ple)
{
	struct slog g;
	struct rig r;
	char rel[128];
	uint32_t n;
	float *out;
	double d;

	read_golden(model, prompt, &g);
	snprintf(rel, sizeof(rel), "models/%s.gguf", model);
	ck_assert_int_eq(strata_model_load(tu_shared_or_skip(rel), &r.m), 0);
	for (uint32_t l = 0; l < r.m->hp.n_layer; l++) {
		if (!qsa)
			r.m->layers[l].q4x.compress_ratio = 0;
		if (!ple)
			r.m->layers[l].q4x.ple = 0;
	}
	ck_assert_int_eq(strata_pool_create(threads, &r.pool), 0);
	r.s = tu_seq(r.m, r.pool, 0, chunk);
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

static double golden_diff(const char *model, const char *prompt, uint32_t chunk, int threads)
{
	return golden_diff_as(model, prompt, chunk, threads, 1, 1);
}

/* At the SIMD level of this ctest run (check_qwen4exp, .avx2, .avx512: testutil.h). */
START_TEST(golden)
{
	int l = tu_simd_level();
	enum strata_simd level = (enum strata_simd)l;

	if (l < 0)
		return;
	for (size_t mi = 0; mi < sizeof(g_models) / sizeof(*g_models); mi++)
		for (size_t pi = 0; pi < 3; pi++) {
			double batch = golden_diff(g_models[mi], g_prompts[pi], 512, 2);
			double step = golden_diff(g_models[mi], g_prompts[pi], 1, 1);
			double odd = golden_diff(g_models[mi], g_prompts[pi], 7, 2);

			printf("%s %s.%s: max |diff| batch %.2e, token-by-token %.2e, chunks of 7 "
			       "%.2e\n", strata_simd_name(level), g_models[mi], g_prompts[pi], batch,
			       step, odd);
			ck_assert_msg(batch <= 1e-3 && step <= 1e-3 && odd <= 1e-3,
				      "%s %s.%s exceeds 1e-3", strata_simd_name(level), g_models[mi],
				      g_prompts[pi]);
		}
	strata_simd_set(strata_simd_detect());
}
END_TEST

START_TEST(loads_layout)
{
	struct strata_model *m;
	const struct strata_hparams *hp;

	ck_assert_int_eq(strata_model_load(tu_shared_or_skip("models/syn-qwen4exp-mtp-f32.gguf"),
					   &m), 0);
	hp = &m->hp;
	ck_assert_int_eq(hp->arch, STRATA_ARCH_QWEN4EXP);
	ck_assert_uint_eq(hp->q4x.hc, 4);
	ck_assert_uint_eq(hp->q4x.hc_lr, 8);
	ck_assert_uint_eq(hp->n_nextn, 1);
	ck_assert_uint_eq(hp->q4x.ple_layer, 1);
	ck_assert_uint_eq(hp->q4x.ple_heads, 16);
	ck_assert_uint_eq(hp->q4x.ple_head_dim, 4);
	/* layers 0-2 DeltaNet, 3 gated sparse attention, 4 the MTP block (attention) */
	for (uint32_t i = 0; i < 5; i++)
		ck_assert_int_eq(m->layers[i].recurrent, i < 3);
	ck_assert_int_eq(m->layers[3].attn_gated, 1);
	ck_assert_uint_eq(m->layers[3].q4x.compress_ratio, 1);
	ck_assert_int_eq(m->layers[1].q4x.ple, 1);
	ck_assert_int_eq(m->layers[2].q4x.ple, 0);
	ck_assert_ptr_nonnull(m->layers[4].nextn.hc_head.norm);
	ck_assert_ptr_nonnull(m->layers[4].nextn.eh_proj.data);
	ck_assert_int_eq(m->layers[0].has_shexp_gate, 1);
	ck_assert_ptr_nonnull(m->ple_table.data);
	strata_model_free(m);
}
END_TEST

/*
 * The goldens can tell: with the indexer's choice ignored (dense attention)
 * or the PLE fusion left out, the logits leave the tolerance.
 */
START_TEST(goldens_see_qsa_and_ple)
{
	double dense = golden_diff_as("syn-qwen4exp-r4k16-f32", "story", 512, 2, 0, 1);
	double no_ple = golden_diff_as("syn-qwen4exp-r4k16-f32", "story", 512, 2, 1, 0);
	double both = golden_diff_as("syn-qwen4exp-r4k16-f32", "story", 512, 2, 1, 1);

	printf("r4k16.story: max |diff| dense attention %.2e, without PLE %.2e, as built %.2e\n",
	       dense, no_ple, both);
	ck_assert(dense > 1e-2 && no_ple > 1e-2 && both <= 1e-3);
}
END_TEST

/*
 * The MTP block against golden/syn-qwen4exp-mtp-f32.PROMPT.mtp.slog: the
 * trunk reads the prompt, then row t of the block is fed token t + 1 with
 * the trunk's residual of row t, attending over its own rows.
 */
static double mtp_diff(const char *prompt, uint32_t chunk, uint32_t pos0)
{
	struct slog g, mg;
	struct rig r;
	char rel[160];
	uint32_t n, rows;
	size_t nv;
	float *trunk, *mtp;
	double d;

	read_golden("syn-qwen4exp-mtp-f32", prompt, &g);
	snprintf(rel, sizeof(rel), "golden/syn-qwen4exp-mtp-f32.%s.mtp.slog", prompt);
	ck_assert_int_eq(slog_read(tu_shared_or_skip(rel), &mg), 0);
	rig_open(&r, "syn-qwen4exp-mtp-f32", 512, 2);
	nv = r.m->hp.n_vocab;
	n = g.n_prompt + g.n_gen;
	rows = mg.n_prompt + mg.n_gen;
	ck_assert_uint_eq(mg.n_vocab, nv);
	ck_assert_uint_le(rows, n - 1);
	ck_assert_mem_eq(mg.tokens, g.tokens + 1, rows * sizeof(int32_t));
	trunk = malloc((size_t)n * nv * sizeof(float));
	mtp = malloc((size_t)rows * nv * sizeof(float));
	/* the trunk in pieces, the block right after each, on the same rows */
	for (uint32_t i = 0; i < rows; i += chunk) {
		uint32_t k = rows - i < chunk ? rows - i : chunk;

		ck_assert_int_eq(strata_forward(r.s, g.tokens + i, k, trunk + (size_t)i * nv, 1), 0);
		ck_assert_int_eq(strata_mtp(r.s, g.tokens + i + 1, NULL, k, pos0 + i, k,
						mtp + (size_t)i * nv), 0);
	}
	d = tu_max_abs_diff(mtp, mg.logits, (size_t)rows * nv);
	free(trunk);
	free(mtp);
	rig_close(&r);
	slog_free(&g);
	slog_free(&mg);
	return d;
}

/* In one batch, row by row, and (the goldens can tell) not at positions one later. */
START_TEST(mtp_block)
{
	for (size_t pi = 0; pi < 3; pi++) {
		double batch = mtp_diff(g_prompts[pi], 512, 0), step = mtp_diff(g_prompts[pi], 1, 0);
		double odd = mtp_diff(g_prompts[pi], 7, 0), late = mtp_diff(g_prompts[pi], 512, 1);

		printf("syn-qwen4exp-mtp-f32.%s.mtp: max |diff| batch %.2e, row by row %.2e, chunks "
		       "of 7 %.2e; at positions one later %.2e\n", g_prompts[pi], batch, step, odd,
		       late);
		ck_assert_msg(batch <= 1e-3 && step <= 1e-3 && odd <= 1e-3 && late > 1e-2,
			      "syn-qwen4exp-mtp-f32.%s.mtp", g_prompts[pi]);
	}
}
END_TEST

/*
 * The block fed saved hidden rows (strata_mtp_hidden) one at a time with
 * only the last row's logits, as the MTP drafter runs it: the trunk reads
 * the whole prompt first, so every row's input comes from the copy, none
 * from the workspace.
 */
START_TEST(mtp_block_from_saved_rows)
{
	struct slog g, mg;
	struct rig r;
	uint32_t rows;
	size_t nv, wd;
	float *trunk, *hid, *mtp;

	read_golden("syn-qwen4exp-mtp-f32", "story", &g);
	ck_assert_int_eq(slog_read(tu_shared_or_skip("golden/syn-qwen4exp-mtp-f32.story.mtp.slog"),
				   &mg), 0);
	rig_open(&r, "syn-qwen4exp-mtp-f32", 512, 2);
	nv = r.m->hp.n_vocab;
	wd = strata_mtp_width(r.m);
	rows = mg.n_prompt + mg.n_gen;
	ck_assert_uint_eq(wd, (size_t)r.m->hp.n_embd * r.m->hp.q4x.hc);
	trunk = malloc((size_t)rows * nv * sizeof(float));
	hid = malloc((size_t)rows * wd * sizeof(float));
	mtp = malloc((size_t)rows * nv * sizeof(float));
	ck_assert_int_eq(strata_forward(r.s, g.tokens, rows, trunk, 1), 0);
	for (uint32_t i = 0; i < rows; i++)
		ck_assert_int_eq(strata_mtp_hidden(r.s, i, hid + (size_t)i * wd), 0);
	ck_assert_int_eq(strata_mtp_hidden(r.s, rows, hid), -EINVAL); /* past the pass's rows */
	for (uint32_t i = 0; i < rows; i++)
		ck_assert_int_eq(strata_mtp(r.s, g.tokens + i + 1, hid + (size_t)i * wd, 1, i, 1,
						mtp + (size_t)i * nv), 0);
	ck_assert_double_le(tu_max_abs_diff(mtp, mg.logits, (size_t)rows * nv), 1e-3);
	/* no head: the rows still land in the block's keys (the next row reads them) */
	ck_assert_int_eq(strata_mtp(r.s, g.tokens + 1, hid, 1, 0, 0, NULL), 0);
	ck_assert_int_eq(strata_mtp(r.s, g.tokens + 1, hid, 2, 0, 3, mtp), -EINVAL);
	free(trunk);
	free(hid);
	free(mtp);
	rig_close(&r);
	slog_free(&g);
	slog_free(&mg);
}
END_TEST

/* ---- (2) turns, snapshots ---------------------------------------------------------- */

static void assert_same(const float *a, const float *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(a[i] == b[i], "logit %zu differs: %g vs %g", i, a[i], b[i]);
}

/*
 * A prompt read in two turns (the second after a restore of the first
 * turn's checkpoint) equals the prompt read at once, and a restored
 * checkpoint equals reading the first turn again: KV, the indexer's keys,
 * the DeltaNet states, the PLE conv and n-gram history all come back.
 */
START_TEST(turns_through_a_checkpoint)
{
	struct slog g;
	struct rig r;
	struct strata_seq_snapshot *snap;
	uint32_t n, p;
	size_t nv;
	float *once, *a, *b;

	read_golden("syn-qwen4exp-r4k16-f32", "story", &g);
	n = g.n_prompt + g.n_gen;
	p = n / 2 + 3; /* not on a block boundary */
	rig_open(&r, "syn-qwen4exp-r4k16-f32", 512, 2);
	nv = r.m->hp.n_vocab;
	once = malloc((size_t)n * nv * sizeof(float));
	a = malloc((size_t)n * nv * sizeof(float));
	b = malloc((size_t)n * nv * sizeof(float));
	feed(&r, g.tokens, n, 512, once);
	ck_assert_int_eq(strata_seq_truncate(r.s, 0), 0);
	ck_assert_int_eq(strata_seq_snapshot_create(r.s, &snap), 0);
	feed(&r, g.tokens, p, 512, a);
	ck_assert_int_eq(strata_seq_save(r.s, snap), 0);
	feed(&r, g.tokens + p, n - p, 512, a + p * nv);
	ck_assert(tu_max_abs_diff(once, a, (size_t)n * nv) <= 1e-4);
	ck_assert(tu_max_abs_diff(g.logits, a, (size_t)n * nv) <= 1e-3);
	/* the second turn again from the checkpoint: the same logits, bit for bit */
	ck_assert_int_eq(strata_seq_restore(r.s, snap), 0);
	feed(&r, g.tokens + p, n - p, 512, b + p * nv);
	assert_same(a + p * nv, b + p * nv, (size_t)(n - p) * nv);
	/* and from a re-read of the first turn instead of the checkpoint */
	ck_assert_int_eq(strata_seq_truncate(r.s, 0), 0);
	feed(&r, g.tokens, p, 512, b);
	feed(&r, g.tokens + p, n - p, 512, b + p * nv);
	assert_same(a, b, (size_t)n * nv);
	strata_seq_snapshot_free(snap);
	free(once);
	free(a);
	free(b);
	rig_close(&r);
	slog_free(&g);
}
END_TEST

/* ---- (3) the PLE rows through a reader ---------------------------------------------- */

/* A registry that finds the build's io plugins. */
static struct strata_registry *plugin_registry(struct strata_config *cfg, const char *dir)
{
	struct strata_registry *reg;
	char path[512], text[512];

	snprintf(path, sizeof(path), "%s/strata.ini", dir);
	snprintf(text, sizeof(text), "[plugins]\ndir = %s\n", STRATA_PLUGIN_DIR);
	ck_assert_int_eq(tu_write_file(path, text, strlen(text)), 0);
	ck_assert_int_eq(strata_config_init(cfg), 0);
	ck_assert_int_eq(strata_config_load_file(cfg, path), 0);
	ck_assert_int_eq(strata_registry_create(cfg, NULL, &reg), 0);
	return reg;
}

/*
 * The logits never depend on how the rows arrive: gathered from the
 * mapping, or read by every io plugin with 0, 1 and 8 reader threads
 * (batched: chunks of 7 tokens are 112 rows, over batch_rows 16), or copied
 * out of a mapping by the reader: bit for bit the same.
 */
START_TEST(ple_reader_paths_agree)
{
	static const struct { const char *plugin; int io; uint32_t readers; } runs[] = {
		{ "io-pread", STRATA_PLE_IO_DIRECT, 0 }, { "io-pread", STRATA_PLE_IO_DIRECT, 8 },
		{ "io-direct", STRATA_PLE_IO_DIRECT, 1 }, { "io-direct", STRATA_PLE_IO_DIRECT, 8 },
		{ "io-uring", STRATA_PLE_IO_DIRECT, 8 }, { NULL, STRATA_PLE_IO_MMAP, 0 },
		{ NULL, STRATA_PLE_IO_MMAP, 8 },
	};
	const char *dir = tu_tmpdir();
	struct strata_config cfg;
	struct strata_registry *reg;
	struct strata_ple_table t;
	struct slog g;
	struct rig r;
	uint32_t n;
	size_t nv;
	float *ref, *out;
	int ran = 0;

	ck_assert_ptr_nonnull(dir);
	read_golden("syn-qwen4exp-f32", "mixed", &g);
	rig_open(&r, "syn-qwen4exp-f32", 7, 2);
	n = g.n_prompt + g.n_gen;
	nv = r.m->hp.n_vocab;
	ref = malloc((size_t)n * nv * sizeof(float));
	out = malloc((size_t)n * nv * sizeof(float));
	feed(&r, g.tokens, n, 7, ref);
	ck_assert(tu_max_abs_diff(g.logits, ref, (size_t)n * nv) <= 1e-3);
	reg = plugin_registry(&cfg, dir);
	ck_assert_int_eq(strata_ple_table_from_gguf(r.m->gguf, &t), 0);
	for (size_t i = 0; i < sizeof(runs) / sizeof(*runs); i++) {
		struct strata_ple_reader *rd;
		struct strata_ple_opts o;
		double ms0, ms;
		uint64_t chunks0, chunks;

		strata_ple_opts_default(&o);
		o.readers = runs[i].readers;
		o.io = runs[i].io;
		o.plugin = runs[i].plugin;
		o.batch_rows = 16;
		if (strata_ple_reader_open(reg, &t, &o, &rd)) {
			ck_assert_msg(runs[i].plugin && strcmp(runs[i].plugin, "io-uring") == 0,
				      "the reader did not open with %s", runs[i].plugin);
			printf("io-uring does not open here (kernel or seccomp): not compared\n");
			continue;
		}
		ck_assert_int_eq(strata_seq_truncate(r.s, 0), 0);
		ck_assert_int_eq(strata_ctx_set_ple(strata_seq_ctx(r.s), rd), 0);
		strata_ctx_ple_waited(strata_seq_ctx(r.s), &ms0, &chunks0);
		feed(&r, g.tokens, n, 7, out);
		strata_ctx_ple_waited(strata_seq_ctx(r.s), &ms, &chunks);
		printf("%s: same logits; %llu chunks waited %.2f ms in all\n",
		       strata_ple_reader_describe(rd), (unsigned long long)(chunks - chunks0),
		       ms - ms0);
		ck_assert_uint_eq(chunks - chunks0, (n + 6) / 7);
		assert_same(ref, out, (size_t)n * nv);
		ck_assert_int_eq(strata_ctx_set_ple(strata_seq_ctx(r.s), NULL), 0);
		strata_ple_reader_close(rd);
		ran++;
	}
	ck_assert_int_ge(ran, 6);
	strata_registry_free(reg);
	strata_config_free(&cfg);
	free(ref);
	free(out);
	rig_close(&r);
	slog_free(&g);
	ck_assert_int_eq(tu_rmtree(dir), 0);
}
END_TEST

/*
 * A read that keeps failing fails the pass that needed it (one error, with
 * the file and the offset), leaves the position where it was, and the
 * sequence, reset, reads correctly again through a working reader.
 */
START_TEST(ple_read_error_fails_the_pass)
{
	const char *dir = tu_tmpdir();
	struct strata_config cfg;
	struct strata_registry *reg;
	struct strata_ple_reader *bad, *good;
	struct strata_ple_table t;
	struct strata_ple_opts o;
	struct slog g;
	struct rig r;
	char path[512], text[600];
	uint32_t n;
	size_t nv;
	float *ref, *out;

	ck_assert_ptr_nonnull(dir);
	read_golden("syn-qwen4exp-f32", "once", &g);
	rig_open(&r, "syn-qwen4exp-f32", 512, 2);
	n = g.n_prompt + g.n_gen;
	nv = r.m->hp.n_vocab;
	ref = malloc((size_t)n * nv * sizeof(float));
	out = malloc((size_t)n * nv * sizeof(float));
	feed(&r, g.tokens, n, 512, ref);
	setenv("STRATA_PLUGIN_PATH", STRATA_PLUGIN_DIR, 1); /* io-faulty's inner io-pread */
	snprintf(path, sizeof(path), "%s/strata.ini", dir);
	snprintf(text, sizeof(text), "[plugins]\ndir = %s/test\n[io-faulty]\neio_rate = 1\n",
		 STRATA_PLUGIN_DIR);
	ck_assert_int_eq(tu_write_file(path, text, strlen(text)), 0);
	ck_assert_int_eq(strata_config_init(&cfg), 0);
	ck_assert_int_eq(strata_config_load_file(&cfg, path), 0);
	ck_assert_int_eq(strata_registry_create(&cfg, NULL, &reg), 0);
	ck_assert_int_eq(strata_ple_table_from_gguf(r.m->gguf, &t), 0);
	strata_ple_opts_default(&o);
	o.readers = 2;
	o.batch_rows = 16;
	o.plugin = "io-faulty";
	ck_assert_int_eq(strata_ple_reader_open(reg, &t, &o, &bad), 0);
	o.plugin = "io-pread";
	ck_assert_int_eq(strata_ple_reader_open(reg, &t, &o, &good), 0);
	ck_assert_int_eq(strata_seq_truncate(r.s, 0), 0);
	ck_assert_int_eq(strata_ctx_set_ple(strata_seq_ctx(r.s), bad), 0);
	tu_log_capture();
	ck_assert_int_eq(strata_forward(r.s, g.tokens, n, out, 1), -EIO);
	tu_log_release();
	printf("failed as expected: %s", tu_log);
	ck_assert_int_eq(tu_log_lines, 1);
	ck_assert(strstr(tu_log, "syn-qwen4exp-f32.gguf") && strstr(tu_log, "at offset "));
	ck_assert_uint_eq(strata_seq_pos(r.s), 0);
	ck_assert_int_eq(strata_ctx_set_ple(strata_seq_ctx(r.s), good), 0);
	ck_assert_int_eq(strata_seq_truncate(r.s, 0), 0);
	feed(&r, g.tokens, n, 512, out);
	assert_same(ref, out, (size_t)n * nv);
	ck_assert_int_eq(strata_ctx_set_ple(strata_seq_ctx(r.s), NULL), 0);
	strata_ple_reader_close(bad);
	strata_ple_reader_close(good);
	strata_registry_free(reg);
	strata_config_free(&cfg);
	free(ref);
	free(out);
	rig_close(&r);
	slog_free(&g);
	ck_assert_int_eq(tu_rmtree(dir), 0);
}
END_TEST

/* ---- (4) refusals -------------------------------------------------------------------- */

#define SYN_PATH "models/syn-qwen4exp-r4k16-f32.gguf"

/*
 * Copy the r4k16 model to dst without key `drop_key` and tensor
 * `drop_tensor` (either may be NULL), then with the u32 array `arr` of
 * n_arr values at key `arr_key` (replacing it) when given.
 */
static void write_variant(const char *dst, const char *drop_key, const char *drop_tensor,
			  const char *arr_key, enum strata_gguf_vtype et, const void *arr,
			  uint64_t n_arr)
{
	struct strata_gguf *g;
	struct strata_gguf_writer *w;

	ck_assert_int_eq(strata_gguf_open(tu_shared_or_skip(SYN_PATH), &g), 0);
	ck_assert_int_eq(strata_gguf_writer_open(dst, &w), 0);
	for (int64_t i = 0; i < strata_gguf_n_kv(g); i++) {
		struct strata_str k = strata_gguf_key(g, i);

		if ((drop_key && strata_str_eq(k, drop_key)) || (arr_key && strata_str_eq(k, arr_key)))
			continue;
		ck_assert_int_eq(strata_gguf_writer_copy_kv(w, g, i), 0);
	}
	if (arr_key)
		ck_assert_int_eq(strata_gguf_writer_set_arr(w, arr_key, et, n_arr, arr), 0);
	for (int64_t pass = 0; pass < 2; pass++)
		for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++) {
			const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
			char name[80];

			snprintf(name, sizeof(name), "%.*s", (int)t->name.len, t->name.s);
			if (drop_tensor && strcmp(name, drop_tensor) == 0)
				continue;
			if (pass == 0)
				ck_assert_int_ge(strata_gguf_writer_add_tensor(w, name, t->type,
									       t->n_dims, t->ne), 0);
			else
				ck_assert_int_eq(strata_gguf_writer_write(w, t->data, t->size), 0);
		}
	ck_assert_int_eq(strata_gguf_writer_commit(w), 0);
	strata_gguf_writer_close(w);
	strata_gguf_close(g);
}

START_TEST(malformed_models_refused)
{
	const char *dir = tu_tmpdir();
	const uint32_t attn_layer[1] = { 3 };
	uint64_t offsets[16];
	char path[512];
	struct strata_model *m;
	struct strata_gguf *g;
	const void *data;

	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof(path), "%s/same.gguf", dir);
	write_variant(path, NULL, NULL, NULL, 0, NULL, 0);
	ck_assert_int_eq(strata_model_load(path, &m), 0); /* the copy itself loads */
	strata_model_free(m);
	snprintf(path, sizeof(path), "%s/hc.gguf", dir);
	write_variant(path, NULL, "blk.2.hc_ffn_up.weight", NULL, 0, NULL, 0);
	tu_expect_model_refused(path, -EINVAL, "blk.2.hc_ffn_up.weight");
	snprintf(path, sizeof(path), "%s/indexer.gguf", dir);
	write_variant(path, NULL, "blk.3.indexer.k_norm.weight", NULL, 0, NULL, 0);
	tu_expect_model_refused(path, -EINVAL, "blk.3.indexer.k_norm.weight");
	snprintf(path, sizeof(path), "%s/table.gguf", dir);
	write_variant(path, NULL, "per_layer_token_embd.weight", NULL, 0, NULL, 0);
	tu_expect_model_refused(path, -EINVAL, "per_layer_token_embd.weight");
	snprintf(path, sizeof(path), "%s/hckey.gguf", dir);
	write_variant(path, "qwen4exp.hyper_connection.count", NULL, NULL, 0, NULL, 0);
	tu_expect_model_refused(path, -EINVAL, "qwen4exp.hyper_connection.count");
	snprintf(path, sizeof(path), "%s/plelayer.gguf", dir);
	write_variant(path, NULL, NULL, "qwen4exp.ple.layers", STRATA_GGUF_U32, attn_layer, 1);
	tu_expect_model_refused(path, -EINVAL, "PLE layer 3 is not a linear-attention");
	snprintf(path, sizeof(path), "%s/sections.gguf", dir);
	write_variant(path, "qwen4exp.rope.dimension_sections", NULL, NULL, 0, NULL, 0);
	tu_expect_model_refused(path, -EINVAL, "qwen4exp.rope.dimension_sections");
	/* head 15's rows run past the table's end */
	ck_assert_int_eq(strata_gguf_open(tu_shared_or_skip(SYN_PATH), &g), 0);
	ck_assert_int_eq(strata_gguf_get_arr(g, "qwen4exp.ple.head_offsets", NULL, NULL, &data), 0);
	memcpy(offsets, data, sizeof(offsets));
	strata_gguf_close(g);
	offsets[15] += 4096;
	snprintf(path, sizeof(path), "%s/offsets.gguf", dir);
	write_variant(path, NULL, NULL, "qwen4exp.ple.head_offsets", STRATA_GGUF_U64, offsets, 16);
	tu_expect_model_refused(path, -EINVAL, "per_layer_token_embd.weight");
	ck_assert_int_eq(tu_rmtree(dir), 0);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("qwen4exp");
	TCase *tc = tcase_create("qwen4exp"), *simd = tcase_create("golden");

	tcase_set_tags(simd, "simd");
	tcase_set_timeout(simd, 600);
	tcase_add_test(simd, golden);
	suite_add_tcase(su, simd);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, loads_layout);
	tcase_add_test(tc, mtp_block);
	tcase_add_test(tc, mtp_block_from_saved_rows);
	tcase_add_test(tc, goldens_see_qsa_and_ple);
	tcase_add_test(tc, turns_through_a_checkpoint);
	tcase_add_test(tc, ple_reader_paths_agree);
	tcase_add_test(tc, ple_read_error_fails_the_pass);
	tcase_add_test(tc, malformed_models_refused);
	suite_add_tcase(su, tc);
	return tu_srunner_run(srunner_create(su));
}
