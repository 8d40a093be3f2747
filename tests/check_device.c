/*
 * check_device.c - the compute-backend seam with a device: the test device
 * plugin gpu-sim (plugins/gpu-sim) holding everything, only the dense weights
 * and state (every routed expert on the CPU) and something in between, its
 * placement and link traffic, a device lacking ops or weight types, budgets
 * too small, failures midway (the request fails with one message, the engine
 * goes on on the CPU and answers the next request exactly), and the [gpu]
 * settings and plugins the engine must refuse.
 *
 * The golden suites themselves also run on gpu-sim: ctest's *_gpu_* tests
 * (check_model, check_qwen3next, check_quant_golden, check_window, check_xstore).
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "config/config.h"
#include "cpu/kernels.h"
#include "cpu/pool.h"
#include "model/ctx_int.h"
#include "engine/engine.h"
#include "model/model.h"
#include "plugin/registry.h"
#include "slog.h"
#include "strata.h"
#include "testutil.h"

#define SIM_DIR STRATA_PLUGIN_DIR "/test"
#define BAD_DIR STRATA_PLUGIN_DIR "/test/bad"

static const char *model_path(const char *name)
{
	static char path[4096];
	char rel[256];

	snprintf(rel, sizeof(rel), "models/%s.gguf", name);
	snprintf(path, sizeof(path), "%s", tu_shared_or_skip(rel));
	return path;
}

/* Teacher-forced logits of the golden tokens in chunks; the largest |diff| to the golden. */
static double run_golden(struct strata_ctx *c, const char *model, const char *prompt,
			 uint32_t chunk)
{
	char rel[256];
	struct slog g;
	struct strata_seq *s;
	float *out;
	uint32_t n;
	double worst = 0;

	snprintf(rel, sizeof(rel), "golden/%s.%s.slog", model, prompt);
	ck_assert_int_eq(slog_read(tu_shared_or_skip(rel), &g), 0);
	n = g.n_prompt + g.n_gen;
	ck_assert_int_eq(strata_seq_create(c, 0, &s), 0);
	out = malloc((size_t)n * g.n_vocab * sizeof(float));
	for (uint32_t i = 0; i < n; i += chunk) {
		uint32_t k = n - i < chunk ? n - i : chunk;

		ck_assert_int_eq(strata_forward(s, g.tokens + i, k, out + (size_t)i * g.n_vocab, 1), 0);
	}
	for (size_t i = 0; i < (size_t)n * g.n_vocab; i++) {
		double d = fabs((double)out[i] - g.logits[i]);

		if (!(d <= worst))
			worst = isnan(d) ? INFINITY : d;
	}
	free(out);
	strata_seq_free(s);
	slog_free(&g);
	return worst;
}

/* ---- three budgets ------------------------------------------------------------------ */

static const char *const g_moe_models[] = { "syn-qwen3moe-f32", "syn-glm4moe-f32",
					    "syn-qwen3next-f32" };

START_TEST(three_budgets)
{
	static const char *const modes[] = { "all", "dense", "mid" };
	const char *name = g_moe_models[_i];
	struct strata_model *m;
	struct strata_pool *pool;

	ck_assert_int_eq(strata_model_load(model_path(name), &m), 0);
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	for (int k = 0; k < 3; k++) {
		struct strata_ctx *c = tu_ctx(m, pool, 4096, 64, modes[k]);
		struct strata_backend *dev = strata_ctx_device(c);
		const uint32_t layers = m->hp.n_layer - m->hp.n_nextn;
		struct strata_placement_stats st;
		uint64_t in0, out0;
		double batch, step;
		char line[1024];

		ck_assert_ptr_nonnull(dev);
		strata_ctx_placement(c, &st);
		ck_assert_uint_eq(st.dev_layers, layers);
		ck_assert_int_eq(st.dev_output, 1);
		if (k == 0)
			ck_assert_uint_eq(st.dev_experts, st.experts);
		else if (k == 1)
			ck_assert_uint_eq(st.dev_experts, 0);
		else
			ck_assert(st.dev_experts > 0 && st.dev_experts < st.experts);
		in0 = dev->link.in_bytes;
		out0 = dev->link.out_bytes;
		batch = run_golden(c, name, "mixed", 64);
		step = run_golden(c, name, "once", 1);
		strata_ctx_describe(c, line, sizeof(line));
		printf("%s, %s on gpu-sim: max |diff| batch %.2e, token by token %.2e; %u of %u "
		       "experts on the device; link while running: %.1f KiB in, %.1f KiB out\n  %s\n",
		       name, modes[k], batch, step, st.dev_experts, st.experts,
		       (dev->link.in_bytes - in0) / 1024.0, (dev->link.out_bytes - out0) / 1024.0,
		       line);
		ck_assert_msg(batch <= 1e-3 && step <= 1e-3, "%s %s: exceeds 1e-3", name, modes[k]);
		/* logits come back every step; CPU experts send activations both ways */
		ck_assert_uint_gt(dev->link.out_bytes, out0);
		if (k > 0)
			ck_assert_uint_gt(dev->link.in_bytes, in0);
		ck_assert_ptr_nonnull(strstr(line, "link so far"));
		tu_ctx_free(c);
	}
	strata_pool_free(pool);
	strata_model_free(m);
}
END_TEST

/* ---- the reference a device is held to ------------------------------------------------ */

/*
 * For every quantised type of ../shared's d256 models: the host table's
 * reference dequantisation is the core's (bit for bit, and the core's is
 * ggml's: check_kernels), and a MATMUL of that weight on gpu-sim - uploaded,
 * queued, copied back - gives the CPU backend's bytes.
 */
START_TEST(matmul_against_cpu)
{
	static const char *const types[] = { "q8_0", "q4_0", "q4_k_m", "q6_k", "q2_k", "iq4_nl",
					     "iq2_xs", "iq3_xxs", "iq3_s", "iq1_m", "f32" };
	struct strata_config cfg;
	struct strata_registry *reg;
	struct strata_plugin *p;
	struct strata_backend *dev, *cpu;
	int compared = 0;

	ck_assert_int_eq(strata_config_init(&cfg), 0);
	free(cfg.gpu_plugin);
	cfg.gpu_plugin = strdup("gpu-sim");
	ck_assert_int_eq(strata_registry_create(&cfg, NULL, &reg), 0);
	ck_assert_int_eq(strata_registry_load_file(reg, SIM_DIR "/strata-gpu-sim.so",
						   STRATA_PLUGIN_GPU, &p), 0);
	ck_assert_uint_ge(p->host.version, 3);
	ck_assert_int_eq(strata_backend_device_create(p, &dev), 0);
	ck_assert_int_eq(strata_backend_cpu_create(NULL, &cpu), 0);
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
		char rel[128];
		const char *path;
		struct strata_model *m;
		const struct strata_mat *w;
		const int64_t n_tok = 7;
		struct strata_buf hb, db;
		struct strata_tensor W, X, Y, dW, dX, dY;
		struct strata_matmul_item it;
		struct strata_op op = { .code = STRATA_OP_MATMUL, .p.mm = { &it, 1 } };
		float *ref, *x, *y_cpu, *y_dev;
		size_t wb;

		snprintf(rel, sizeof(rel), "models/syn-qwen3moe-d256-%s.gguf", types[k]);
		if (!(path = tu_shared(rel)))
			continue;
		ck_assert_int_eq(strata_model_load(path, &m), 0);
		w = &m->layers[0].gate_exps.m; /* expert 0 */
		wb = w->row_bytes * (size_t)w->rows;
		/* the reference dequantisation, as a plugin sees it */
		ref = malloc((size_t)w->rows * w->cols * sizeof(float));
		x = malloc((size_t)w->cols * n_tok * sizeof(float));
		y_cpu = malloc((size_t)w->rows * n_tok * sizeof(float));
		y_dev = malloc((size_t)w->rows * n_tok * sizeof(float));
		ck_assert_int_eq(p->host.dequantize(w->type, w->data, ref, w->rows * w->cols), 0);
		{
			float *mine = malloc((size_t)w->rows * w->cols * sizeof(float));

			strata_dequant(w->type, w->data, mine, w->rows * w->cols);
			ck_assert_int_eq(memcmp(mine, ref, (size_t)w->rows * w->cols * 4), 0);
			free(mine);
		}
		ck_assert_int_eq(p->host.dequantize(w->type, w->data, ref, 3), w->type ==
				 STRATA_TYPE_F32 ? 0 : -EINVAL);
		for (int64_t i = 0; i < w->cols * n_tok; i++)
			x[i] = (float)((i * 7919 % 1000) - 500) / 500.0f;
		/* the CPU backend on host memory */
		hb = (struct strata_buf){ .base = (void *)w->data, .size = wb, .flags = STRATA_BUF_HOST };
		W = (struct strata_tensor){ .type = w->type, .n_dims = 2, .ne = { w->cols, w->rows, 1, 1 },
					    .nb = { strata_type_block_bytes(w->type), w->row_bytes, wb, wb },
					    .buf = &hb };
		{
			struct strata_buf xb = { .base = x, .size = 0, .flags = STRATA_BUF_HOST };
			struct strata_buf yb = { .base = y_cpu, .size = 0, .flags = STRATA_BUF_HOST };

			X = strata_t_f32(&xb, 0, w->cols, n_tok);
			Y = strata_t_f32(&yb, 0, w->rows, n_tok);
			it = (struct strata_matmul_item){ &W, &X, NULL, &Y };
			ck_assert_int_eq(strata_backend_run(cpu, &op), 0);
		}
		/* the same on the device: W, x up; y back */
		ck_assert_int_eq(strata_backend_buf_alloc(dev, wb + 4096 * (size_t)(w->cols + w->rows) * 8,
							  STRATA_BUF_USE_WORK, &db), 0);
		dW = W;
		dW.buf = &db;
		dX = strata_t_f32(&db, wb, w->cols, n_tok);
		dY = strata_t_f32(&db, wb + (size_t)w->cols * n_tok * 4, w->rows, n_tok);
		ck_assert_int_eq(strata_backend_copy_in(dev, &db, 0, w->data, wb, NULL), 0);
		ck_assert_int_eq(strata_backend_copy_in(dev, &db, dX.offset, x,
							(size_t)w->cols * n_tok * 4, NULL), 0);
		it = (struct strata_matmul_item){ &dW, &dX, NULL, &dY };
		ck_assert_int_eq(strata_backend_run(dev, &op), 0);
		ck_assert_int_eq(strata_backend_copy_out(dev, &db, dY.offset, y_dev,
							 (size_t)w->rows * n_tok * 4, NULL), 0);
		ck_assert_int_eq(strata_backend_sync(dev), 0);
		ck_assert_msg(memcmp(y_cpu, y_dev, (size_t)w->rows * n_tok * 4) == 0,
			      "%s: gpu-sim's MATMUL differs from the CPU backend's", types[k]);
		strata_backend_buf_free(dev, &db);
		compared++;
		free(ref);
		free(x);
		free(y_cpu);
		free(y_dev);
		strata_model_free(m);
	}
	ck_assert_int_ge(compared, 1);
	printf("gpu-sim MATMUL = the CPU backend's, and the host's dequantisation = the core's, "
	       "on %d weight types\n", compared);
	strata_backend_free(cpu);
	strata_backend_free(dev);
	strata_registry_free(reg);
	strata_config_free(&cfg);
}
END_TEST

/* ---- engines with a [gpu] section ------------------------------------------------------- */

static char g_dir[4096];

/*
 * An engine from `ini` (plus [plugins] dir = `dir`, gpu-sim's by default; the
 * shipped plugins come through STRATA_PLUGIN_PATH); NULL and the log
 * captured when it refuses.
 */
static struct strata_engine *engine_dir(const char *ini, const char *dir, int *rc)
{
	char path[4200], *text;
	const char *argv[] = { "strata", "-c", path, "-t", "2" };
	struct strata_engine *e = NULL;

	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	snprintf(path, sizeof(path), "%s/strata.ini", g_dir);
	ck_assert_int_ge(asprintf(&text, "[plugins]\ndir = %s\n%s", dir, ini), 0);
	ck_assert_int_eq(tu_write_file(path, text, strlen(text)), 0);
	free(text);
	tu_log_capture();
	*rc = strata_engine_create_args(5, (char **)argv, &e);
	tu_log_release();
	tu_rmtree(g_dir);
	return e;
}

static struct strata_engine *engine_ini(const char *ini, int *rc)
{
	return engine_dir(ini, SIM_DIR, rc);
}

struct answer {
	int32_t ids[64];
	int n;
};

static int collect(void *user, int32_t id, const char *piece, size_t len)
{
	struct answer *a = user;

	(void)piece;
	(void)len;
	if (a->n < 64)
		a->ids[a->n++] = id;
	return 0;
}

static int answer(struct strata_engine *e, const char *prompt, struct answer *a)
{
	int32_t *ids;
	int n = strata_engine_tokenize(e, prompt, strlen(prompt), STRATA_TOKENIZE_ADD_BOS, &ids);
	int rc;

	ck_assert_int_gt(n, 0);
	a->n = 0;
	tu_log_capture();
	rc = strata_generate(e, ids, (uint32_t)n, 12, collect, a, NULL);
	tu_log_release();
	free(ids);
	return rc;
}

static char *model_ini(const char *model, const char *extra)
{
	char *s;

	ck_assert_int_ge(asprintf(&s, "[model]\npath = %s\nctx_size = 256\n[run]\ntemp = 0\n%s",
				  model_path(model), extra), 0);
	return s;
}

/* A device that lacks DeltaNet keeps those layers; one that lacks Q4_K keeps its experts. */
START_TEST(missing_ops_and_types)
{
	static const struct { const char *model, *sim; } cases[] = {
		{ "syn-qwen3next-f32", "missing_ops = DELTANET" },
		{ "syn-qwen3moe-d256-q4_k_m", "missing_types = Q6_K" },
	};
	struct answer cpu, dev;
	struct strata_placement_stats st;
	struct strata_engine *e, *ref;
	char *ini, *ini_cpu, extra[256];
	int rc;

	snprintf(extra, sizeof(extra), "[gpu]\nplugin = gpu-sim\n[gpu-sim]\n%s\n", cases[_i].sim);
	ini = model_ini(cases[_i].model, extra);
	ini_cpu = model_ini(cases[_i].model, "[gpu]\nplugin = none\n");
	ck_assert_ptr_nonnull(e = engine_ini(ini, &rc));
	ck_assert_ptr_nonnull(ref = engine_ini(ini_cpu, &rc));
	strata_ctx_placement(e->ctx, &st);
	printf("%s with gpu-sim %s: %u layers on it, %u kept on the CPU, %u of %u experts\n",
	       cases[_i].model, cases[_i].sim, st.dev_layers, st.dev_skipped, st.dev_experts,
	       st.experts);
	if (_i == 0) { /* its three DeltaNet layers stay, the attention layer goes */
		ck_assert_uint_eq(st.dev_skipped, 3);
		ck_assert_uint_eq(st.dev_layers, 1);
	} else { /* the Q6_K output head and layer 1's Q6_K down experts stay */
		ck_assert_uint_eq(st.dev_layers, 2);
		ck_assert_int_eq(st.dev_output, 0);
		ck_assert_uint_eq(st.dev_experts, e->model->hp.n_expert);
	}
	ck_assert_int_eq(answer(e, "Once upon a time", &dev), 12);
	ck_assert_int_eq(answer(ref, "Once upon a time", &cpu), 12);
	ck_assert_int_eq(memcmp(dev.ids, cpu.ids, sizeof(int32_t) * 12), 0);
	strata_engine_free(e);
	strata_engine_free(ref);
	free(ini);
	free(ini_cpu);
}
END_TEST

/*
 * A copy or an op that fails midway: the request fails with one error naming
 * gpu-sim, the engine drops the device, and the next request is answered as
 * the CPU answers it.  An allocation that fails while placing leaves the rest
 * on the CPU, with a warning, and the answers are right.
 */
START_TEST(failures_midway)
{
	static const char *const faults[] = { "fail_copy_after = 40", "fail_run_after = 300",
					      "fail_alloc_after = 6" };
	struct answer cpu, got;
	struct strata_engine *e, *ref;
	char *ini, *ini_cpu, extra[256];
	int rc;

	snprintf(extra, sizeof(extra), "[gpu]\nplugin = gpu-sim\n[gpu-sim]\n%s\n", faults[_i]);
	ini = model_ini("syn-qwen3moe-f32", extra);
	ini_cpu = model_ini("syn-qwen3moe-f32", "[gpu]\nplugin = none\n");
	ck_assert_ptr_nonnull(ref = engine_ini(ini_cpu, &rc));
	ck_assert_int_eq(answer(ref, "Once upon a time", &cpu), 12);
	e = engine_ini(ini, &rc);
	ck_assert_msg(e, "engine refused: %s", tu_log);
	if (_i == 2) {
		/* placing stopped at the refusal (a warning); the sequence's state was refused
		 * too, so the engine started on the CPU alone (another warning), no error */
		ck_assert_msg(tu_log_lines == 0, "%s", tu_log);
		ck_assert_ptr_null(e->dev);
		ck_assert_int_eq(answer(e, "Once upon a time", &got), 12);
	} else {
		rc = answer(e, "Once upon a time", &got);
		ck_assert_msg(rc < 0, "the request did not fail (%d)", rc);
		ck_assert_ptr_nonnull(strstr(strata_last_error(), "gpu-sim"));
		ck_assert_msg(tu_log_lines == 1, "%d error lines: %s", tu_log_lines, tu_log);
		ck_assert_ptr_null(e->dev); /* dropped: the CPU from now on */
		ck_assert_int_eq(answer(e, "Once upon a time", &got), 12);
	}
	ck_assert_int_eq(memcmp(got.ids, cpu.ids, sizeof(int32_t) * 12), 0);
	strata_engine_free(e);
	strata_engine_free(ref);
	free(ini);
	free(ini_cpu);
}
END_TEST

/* ---- what the engine refuses ------------------------------------------------------------ */

START_TEST(refused)
{
	static const struct { const char *gpu, *want; } cases[] = {
		{ "plugin = gpu-nope", "strata-gpu-nope.so not found" },
		{ "plugin = gpu-sim-probe0", "probe says unusable" },
		{ "plugin = gpu-sim-ops0", "ops table version 0" },
		{ "plugin = gpu-sim-norun", "required method run NULL" },
		{ "plugin = gpu-sim\nbudget_mib = 0", "budget_mib" },
		{ "plugin = gpu-sim\nbudget_mib = 4096", "is more than gpu-sim" },
		{ "plugin = gpu-sim\nbudget_mib = lots", "expected a positive number of MiB or auto" },
		{ "plugin = gpu-sim\nbudget_mib = 1", "cannot hold the workspace and one layer" },
		{ "plugin = gpu-sim\n[gpu-sim]\nmissing_ops = ATTN", "supports none of the model's layers" },
		{ "plugin = io-faulty", "kind gpu expected, got io" },
	};
	char extra[512], *ini;
	int rc;

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct strata_engine *e;

		snprintf(extra, sizeof(extra), "[gpu]\n%s\n", cases[k].gpu);
		ini = model_ini("stories260K", extra);
		e = engine_dir(ini, k >= 1 && k <= 3 ? BAD_DIR : SIM_DIR, &rc);
		free(ini);
		ck_assert_msg(!e && rc < 0, "'%s': the engine started", cases[k].gpu);
		ck_assert_msg(tu_log_lines == 1 && strstr(tu_log, cases[k].want),
			      "'%s': want one line with '%s', got %d: %s", cases[k].gpu,
			      cases[k].want, tu_log_lines, tu_log);
		if (k >= 1 && k <= 5)
			ck_assert_ptr_nonnull(strstr(tu_log, "gpu-sim"));
	}
}
END_TEST

/* With plugin = auto a device that cannot hold a layer is a logged fallback, not an error. */
START_TEST(auto_falls_back)
{
	struct answer a;
	struct strata_engine *e;
	char *ini = model_ini("stories260K", "[gpu]\nplugin = auto\nbudget_mib = 1\n"
					      "[gpu-sim]\nauto = true\n");
	int rc;

	e = engine_ini(ini, &rc);
	free(ini);
	ck_assert_msg(e, "refused: %s", tu_log);
	ck_assert_ptr_null(e->dev);
	ck_assert_int_eq(tu_log_lines, 0);
	ck_assert_int_eq(answer(e, "Once upon a time", &a), 12);
	strata_engine_free(e);
	/* found by auto and roomy enough: it is used */
	ini = model_ini("stories260K", "[gpu]\nplugin = auto\n[gpu-sim]\nauto = true\n");
	e = engine_ini(ini, &rc);
	free(ini);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(e->dev);
	strata_engine_free(e);
	/* not asked to: never picked */
	ini = model_ini("stories260K", "[gpu]\nplugin = auto\n");
	e = engine_ini(ini, &rc);
	free(ini);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_null(e->dev);
	strata_engine_free(e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("device");
	TCase *tc = tcase_create("device");

	if (!tu_shared("models/syn-qwen3moe-f32.gguf")) {
		printf("SKIP: ../shared/models is absent\n");
		return STRATA_TEST_SKIP;
	}
	/* (not loaded here: each test runs in a child, which must start its device's threads) */
	if (access(SIM_DIR "/strata-gpu-sim.so", R_OK)) {
		printf("gpu-sim (%s/strata-gpu-sim.so) was not built\n", SIM_DIR);
		return 1;
	}
	setenv("STRATA_PLUGIN_PATH", STRATA_PLUGIN_DIR, 1); /* path-batched, io-faulty's inner */
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, matmul_against_cpu);
	tcase_add_loop_test(tc, three_budgets, 0, 3);
	tcase_add_loop_test(tc, missing_ops_and_types, 0, 2);
	tcase_add_loop_test(tc, failures_midway, 0, 3);
	tcase_add_test(tc, refused);
	tcase_add_test(tc, auto_falls_back);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
