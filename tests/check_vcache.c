/*
 * check_vcache.c - the device's expert cache (core/model/vcache.h) on the
 * test device gpu-sim: caches of 0, 1, a quarter and all of the experts give
 * the golden logits; the hit, miss, fill and swap counts are those a simple
 * model of the cache predicts for the routing the run recorded; a batched
 * pass that borrows slots leaves the cache as it was once refilled; pcie_frac
 * 0 and 1 agree; an allocation refused half way, and a reserve the device
 * cannot keep, shrink the cache with a warning; a routing profile round trip.
 * (Its counters in /metrics: check_serve's gpu_cache_metrics.)
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "config/config.h"
#include "cpu/pool.h"
#include "model/ctx_int.h"
#include "model/model.h"
#include "model/vcache.h"
#include "plugin/registry.h"
#include "slog.h"
#include "testutil.h"
#include "util/log.h"

#define MODEL "syn-qwen3moe-f32" /* 3 MoE layers of 8 experts, 2 routed a token */
#define TOL 1e-3                 /* the goldens' tolerance, as check_device's */

/* ---- a gpu-sim of our own (its fault counters start at 0) --------------------------- */

struct sim {
	struct strata_config cfg;
	struct strata_registry *reg;
	struct strata_backend *dev;
};

static void sim_open(struct sim *s, const char *section)
{
	char path[4200], *text;
	const char *dir = tu_tmpdir();
	struct strata_plugin *p;

	snprintf(path, sizeof(path), "%s/sim.ini", dir);
	ck_assert_int_ge(asprintf(&text, "[gpu]\nplugin = gpu-sim\n[gpu-sim]\n%s\n", section), 0);
	ck_assert_int_eq(tu_write_file(path, text, strlen(text)), 0);
	free(text);
	ck_assert_int_eq(strata_config_init(&s->cfg), 0);
	ck_assert_int_eq(strata_config_load_file(&s->cfg, path), 0);
	tu_rmtree(dir);
	ck_assert_int_eq(strata_registry_create(&s->cfg, NULL, &s->reg), 0);
	ck_assert_int_eq(strata_registry_load_file(s->reg, STRATA_PLUGIN_DIR
						   "/test/strata-gpu-sim.so", STRATA_PLUGIN_GPU, &p), 0);
	ck_assert_int_eq(strata_backend_device_create(p, &s->dev), 0);
}

static void sim_close(struct sim *s)
{
	strata_backend_free(s->dev);
	strata_registry_free(s->reg);
	strata_config_free(&s->cfg);
}

static struct strata_model *g_m;
static struct strata_pool *g_pool;
static struct slog g_gold;

static void setup(void)
{
	ck_assert_int_eq(strata_model_load(tu_shared_or_skip("models/" MODEL ".gguf"), &g_m), 0);
	ck_assert_int_eq(slog_read(tu_shared_or_skip("golden/" MODEL ".mixed.slog"), &g_gold), 0);
	ck_assert_int_eq(strata_pool_create(2, &g_pool), 0);
}

static void teardown(void)
{
	strata_pool_free(g_pool);
	slog_free(&g_gold);
	strata_model_free(g_m);
}

/* A context on dev: the whole device as the budget, the cache as o says. */
static struct strata_ctx *make_ctx(struct strata_backend *dev, const struct strata_vcache_opts *o)
{
	struct strata_ctx_opts co = { .pool = g_pool, .max_batch = 64, .n_ctx = 512,
				      .device = dev, .device_budget = dev->info.mem_free };
	struct strata_ctx *c;

	co.vc = *o;
	ck_assert_int_eq(strata_ctx_create(g_m, &co, &c), 0);
	return c;
}

/* The golden tokens in passes of `chunk` (the first `lead` one at a time); the worst |diff|. */
static double golden(struct strata_ctx *c, uint32_t chunk)
{
	const uint32_t n = g_gold.n_prompt + g_gold.n_gen, nv = g_gold.n_vocab;
	float *out = malloc((size_t)n * nv * sizeof(float));
	struct strata_seq *s;
	double worst = 0;

	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(strata_seq_create(c, 0, &s), 0);
	for (uint32_t i = 0; i < n; i += chunk) {
		const uint32_t k = n - i < chunk ? n - i : chunk;

		ck_assert_int_eq(strata_forward(s, g_gold.tokens + i, k, out + (size_t)i * nv, 1), 0);
	}
	for (size_t i = 0; i < (size_t)n * nv; i++) {
		const double d = fabs((double)out[i] - g_gold.logits[i]);

		if (!(d <= worst))
			worst = isnan(d) ? INFINITY : d;
	}
	strata_seq_free(s);
	free(out);
	return worst;
}

/* ---- caches of 0, 1, a quarter and all of the experts ------------------------------ */

START_TEST(budgets)
{
	static const uint32_t slots[] = { 1, 6, 24 };
	struct sim sim;

	sim_open(&sim, "");
	for (size_t i = 0; i < 4; i++) {
		struct strata_vcache_opts o = { .adapt_every = 4, .adapt_swaps = 2 };
		struct strata_vcache_stats st;
		struct strata_ctx *c;
		double batch, step;

		if (i < 3) {
			o.slots = slots[i];
			c = make_ctx(sim.dev, &o);
		} else { /* no slot fits: every routed expert on the CPU */
			struct strata_placement_stats ps;
			struct strata_ctx_opts co = { .pool = g_pool, .max_batch = 64, .n_ctx = 512,
						      .device = sim.dev,
						      .device_budget = sim.dev->info.mem_free };

			c = make_ctx(sim.dev, &o);
			strata_ctx_placement(c, &ps);
			strata_ctx_free(c);
			co.device_budget = ps.dev_work_bytes + ps.dev_state_bytes + ps.dev_weight_bytes -
					   ps.dev_expert_bytes;
			ck_assert_int_eq(strata_ctx_create(g_m, &co, &c), 0);
		}
		batch = golden(c, 64);
		step = golden(c, 1);
		strata_ctx_expert_cache(c, &st);
		printf("%u slots: max |diff| batch %.2e, token by token %.2e; %" PRIu64 " hits, %" PRIu64
		       " misses, %" PRIu64 " fills, %" PRIu64 " swaps\n", st.slots, batch, step,
		       st.hits, st.misses, st.fills, st.swaps);
		ck_assert_msg(batch <= TOL && step <= TOL, "%u slots: exceeds %g", st.slots, TOL);
		ck_assert_uint_eq(st.slots, i < 3 ? slots[i] : 0);
		if (i < 3) /* first use filled the slots, each with the expert it met */
			ck_assert_uint_eq(st.fills, st.used);
		if (i == 0 || i == 1) /* and the misses beyond them ran on the CPU */
			ck_assert_uint_eq(st.used, slots[i]);
		if (i == 2) /* every expert met was resident from then on: nothing to swap */
			ck_assert_uint_eq(st.swaps, 0);
		if (i == 3)
			ck_assert_uint_eq(st.hits + st.misses, 0);
		strata_ctx_free(c);
	}
	sim_close(&sim);
}
END_TEST

/* ---- the counts against a model of the cache ----------------------------------------- */

#define NK 24 /* keys: layer * 8 + expert */
#define NONE UINT32_MAX

struct trace {
	uint32_t n, pass[4096], layer[4096], count[4096][8];
};

static uint32_t g_pass;

static void record(void *user, uint32_t l, const uint32_t *count, uint32_t n_expert)
{
	struct trace *t = user;

	ck_assert_uint_eq(n_expert, 8);
	ck_assert_uint_lt(t->n, 4096);
	t->pass[t->n] = g_pass;
	t->layer[t->n] = l;
	memcpy(t->count[t->n], count, sizeof(t->count[0]));
	t->n++;
}

/* The cache as vcache.h describes it: first use fills in order, adaptive rounds swap. */
struct cmodel {
	uint32_t n_slots, used, key[NK], slot_of[NK], cnt[NK];
	uint64_t hits, misses, fills, swaps;
};

static void model_plan(struct cmodel *m, uint32_t l, const uint32_t *count)
{
	uint32_t miss[8], nm = 0;

	for (uint32_t x = 0; x < 8; x++) {
		const uint32_t k = l * 8 + x;

		if (!count[x])
			continue;
		m->cnt[k] += count[x];
		if (m->slot_of[k] != NONE)
			m->hits += count[x];
		else
			m->misses += count[x], miss[nm++] = x;
	}
	for (uint32_t i = 0; i < nm; i++) /* most tokens first, then the lower id */
		for (uint32_t j = i + 1; j < nm; j++)
			if (count[miss[j]] > count[miss[i]] ||
			    (count[miss[j]] == count[miss[i]] && miss[j] < miss[i])) {
				uint32_t v = miss[i];

				miss[i] = miss[j];
				miss[j] = v;
			}
	for (uint32_t i = 0; i < nm && m->used < m->n_slots; i++) {
		const uint32_t k = l * 8 + miss[i];

		m->key[m->used] = k;
		m->slot_of[k] = m->used++;
		m->fills++;
	}
}

static void model_adapt(struct cmodel *m, uint32_t swaps)
{
	for (uint32_t i = 0; i < swaps; i++) {
		uint32_t best = NONE, worst = 0, low = NONE;

		for (uint32_t k = 0; k < NK; k++)
			if (m->slot_of[k] == NONE && m->cnt[k] && (best == NONE || m->cnt[k] > m->cnt[best]))
				best = k;
		if (best == NONE)
			break;
		for (uint32_t s = 0; s < m->used; s++)
			if (m->cnt[m->key[s]] < low)
				low = m->cnt[m->key[s]], worst = s;
		if (low == NONE || m->cnt[best] <= low)
			break;
		m->slot_of[m->key[worst]] = NONE;
		m->key[worst] = best;
		m->slot_of[best] = worst;
		m->swaps++;
	}
	for (uint32_t k = 0; k < NK; k++)
		m->cnt[k] >>= 1;
}

START_TEST(counts_match_a_model)
{
	const uint32_t every = 3, swaps = 2, n = g_gold.n_prompt + g_gold.n_gen;
	struct strata_vcache_opts o = { .slots = 5, .adapt_every = every, .adapt_swaps = swaps };
	struct trace *t = calloc(1, sizeof(*t));
	struct cmodel m = { .n_slots = 5 };
	struct strata_vcache_stats st;
	uint32_t keys[5], pass_n[512] = { 0 }, since = 0, e = 0;
	struct strata_seq *s;
	struct strata_ctx *c;
	struct sim sim;

	sim_open(&sim, "");
	c = make_ctx(sim.dev, &o);
	strata_vcache_set_trace(c, record, t);
	ck_assert_int_eq(strata_seq_create(c, 0, &s), 0);
	/* a batch of 8, then one token at a time */
	for (uint32_t i = 0, k; i < n; i += k) {
		k = i ? 1 : 8;
		pass_n[g_pass] = k;
		ck_assert_int_eq(strata_forward(s, g_gold.tokens + i, k, NULL, 0), 0);
		g_pass++;
	}
	for (uint32_t k = 0; k < NK; k++)
		m.slot_of[k] = NONE;
	for (uint32_t p = 0; p < g_pass; p++) {
		if (since >= every) {
			since = 0;
			model_adapt(&m, swaps);
		}
		for (; e < t->n && t->pass[e] == p; e++)
			model_plan(&m, t->layer[e], t->count[e]);
		since += pass_n[p];
	}
	strata_ctx_expert_cache(c, &st);
	printf("%u passes, %u layer plans: hits %" PRIu64 " (model %" PRIu64 "), misses %" PRIu64
	       " (%" PRIu64 "), fills %" PRIu64 " (%" PRIu64 "), swaps %" PRIu64 " (%" PRIu64 ")\n",
	       g_pass, t->n, st.hits, m.hits, st.misses, m.misses, st.fills, m.fills, st.swaps,
	       m.swaps);
	ck_assert_uint_eq(t->n, 3 * g_pass);
	ck_assert_uint_eq(st.hits, m.hits);
	ck_assert_uint_eq(st.misses, m.misses);
	ck_assert_uint_eq(st.fills, m.fills);
	ck_assert_uint_eq(st.swaps, m.swaps);
	ck_assert_uint_gt(st.swaps, 0); /* the trace exercised the adaptive rounds */
	ck_assert_uint_eq(strata_vcache_keys(c, keys, 5), 5);
	for (uint32_t i = 0; i < 5; i++)
		ck_assert_uint_eq(keys[i], m.key[i]);
	strata_seq_free(s);
	strata_ctx_free(c);
	sim_close(&sim);
	free(t);
	g_pass = 0;
}
END_TEST

/* ---- lending and refilling ----------------------------------------------------------- */

START_TEST(lend_and_refill)
{
	const uint32_t n = g_gold.n_prompt + g_gold.n_gen, nv = g_gold.n_vocab;
	struct strata_vcache_opts o = { .slots = 20, .lend_min = 8, .lend_frac = 0.9,
					.lend_keep = 2 };
	float *out = malloc((size_t)n * nv * sizeof(float));
	uint32_t before[20], lent[20], after[20], i = 0;
	struct strata_vcache_stats st;
	struct strata_seq *s;
	struct strata_ctx *c;
	struct sim sim;
	double worst = 0;

	sim_open(&sim, "");
	c = make_ctx(sim.dev, &o);
	ck_assert_int_eq(strata_seq_create(c, 0, &s), 0);
	/* a few tokens one at a time fill some slots by first use */
	for (; i < 6; i++)
		ck_assert_int_eq(strata_forward(s, g_gold.tokens + i, 1, out + (size_t)i * nv, 1), 0);
	strata_vcache_keys(c, before, 20);
	/* a batch of 16 borrows 18 of the 20 slots (90%, 2 kept), free ones first (a cache
	 * of all 24 experts would lend nothing: it has no miss to stream) */
	ck_assert_int_eq(strata_forward(s, g_gold.tokens + i, 16, out + (size_t)i * nv, 1), 0);
	i += 16;
	strata_ctx_expert_cache(c, &st);
	ck_assert_uint_eq(st.lent_now, 18);
	ck_assert_uint_eq(st.lends, 1);
	ck_assert_uint_gt(st.lent, 0);
	strata_vcache_keys(c, lent, 20);
	ck_assert_int_ne(memcmp(before, lent, sizeof(lent)), 0);
	/* the next token refills them first: what the cache held is back */
	for (; i < n; i++)
		ck_assert_int_eq(strata_forward(s, g_gold.tokens + i, 1, out + (size_t)i * nv, 1), 0);
	strata_ctx_expert_cache(c, &st);
	strata_vcache_keys(c, after, 20);
	printf("lending: %" PRIu64 " experts streamed into borrowed slots, %" PRIu64
	       " refilled (%.1f KiB, %.2f ms)\n", st.lent, st.refills, st.refill_bytes / 1024.0,
	       st.refill_ms);
	ck_assert_uint_eq(st.lent_now, 0);
	ck_assert_uint_gt(st.refills, 0);
	for (uint32_t k = 0; k < 20; k++)
		if (before[k] != NONE) /* later tokens may fill free slots, never move these */
			ck_assert_uint_eq(after[k], before[k]);
	for (size_t j = 0; j < (size_t)n * nv; j++) {
		const double d = fabs((double)out[j] - g_gold.logits[j]);

		if (!(d <= worst))
			worst = isnan(d) ? INFINITY : d;
	}
	ck_assert_msg(worst <= TOL, "lending: max |diff| %.2e", worst);
	strata_seq_free(s);
	strata_ctx_free(c);
	sim_close(&sim);
	free(out);
}
END_TEST

/* ---- pcie_frac 0 and 1 ------------------------------------------------------------------ */

START_TEST(pcie_frac_same_outputs)
{
	const uint32_t n = g_gold.n_prompt + g_gold.n_gen, nv = g_gold.n_vocab;
	float *out[2];
	struct sim sim;

	sim_open(&sim, "");
	for (int f = 0; f < 2; f++) {
		struct strata_vcache_opts o = { .slots = 2, .pcie_frac = f };
		struct strata_vcache_stats st;
		struct strata_seq *s;
		struct strata_ctx *c = make_ctx(sim.dev, &o);

		out[f] = malloc((size_t)n * nv * sizeof(float));
		ck_assert_int_eq(strata_seq_create(c, 0, &s), 0);
		for (uint32_t i = 0; i < n; i++)
			ck_assert_int_eq(strata_forward(s, g_gold.tokens + i, 1, out[f] + (size_t)i * nv,
							1), 0);
		strata_ctx_expert_cache(c, &st);
		printf("pcie_frac %d: %" PRIu64 " misses, %" PRIu64 " run on the device over the link, "
		       "%u transfer slots\n", f, st.misses, st.pcie, st.transfer);
		if (f) {
			ck_assert_uint_eq(st.transfer, 2);
			ck_assert_uint_eq(st.pcie, st.misses - st.fills); /* no miss left for the CPU */
		} else {
			ck_assert_uint_eq(st.pcie, 0);
		}
		strata_seq_free(s);
		strata_ctx_free(c);
	}
	ck_assert_double_le(tu_max_abs_diff(out[0], out[1], (size_t)n * nv), 1e-5);
	free(out[0]);
	free(out[1]);
	sim_close(&sim);
}
END_TEST

/* ---- shrinking ---------------------------------------------------------------------- */

static char g_warn[4096];

static void warn_sink(void *user, int level, const char *line)
{
	(void)user;
	if (level == STRATA_LOG_LVL_WARN)
		snprintf(g_warn + strlen(g_warn), sizeof(g_warn) - strlen(g_warn), "%s\n", line);
}

START_TEST(shrinks_when_refused)
{
	/* gpu-sim's allocations: the workspace, 3 layers, the output head, then the
	 * cache in buffers of 4 slots: the 8th call is its third buffer */
	struct strata_vcache_opts o = { .slots = 24, .chunk_slots = 4 };
	struct strata_vcache_stats st;
	struct strata_ctx *c;
	struct sim sim;

	sim_open(&sim, "fail_alloc_nth = 8");
	g_warn[0] = 0;
	strata_log_set_sink(warn_sink, NULL);
	c = make_ctx(sim.dev, &o);
	strata_log_set_sink(NULL, NULL);
	strata_ctx_expert_cache(c, &st);
	printf("refused half way: %u slots; said: %s", st.slots, g_warn);
	ck_assert_uint_eq(st.slots, 8);
	ck_assert_ptr_nonnull(strstr(g_warn, "refused memory after 8 of 24 expert slots"));
	ck_assert_double_le(golden(c, 64), TOL);
	strata_ctx_free(c);
	sim_close(&sim);

	/* a reserve the device cannot keep once the cache is in: no slot left */
	sim_open(&sim, "");
	o = (struct strata_vcache_opts){ .slots = 24, .reserve = sim.dev->info.mem_total };
	g_warn[0] = 0;
	strata_log_set_sink(warn_sink, NULL);
	c = make_ctx(sim.dev, &o);
	strata_log_set_sink(NULL, NULL);
	strata_ctx_expert_cache(c, &st);
	ck_assert_uint_eq(st.slots, 0);
	ck_assert_ptr_nonnull(strstr(g_warn, "the cache shrank to 0 slots"));
	ck_assert_double_le(golden(c, 64), TOL);
	strata_ctx_free(c);
	sim_close(&sim);
}
END_TEST


/* ---- a routing profile: saved at free, read back hottest-first, refused when bad ---------- */

START_TEST(profile_round_trip)
{
	char path[4200], bad[4200];
	const char *dir = tu_tmpdir();
	struct strata_vcache_opts o = { .slots = 24 };
	struct strata_vcache_stats st;
	struct strata_ctx_opts co;
	uint32_t keys[6];
	struct strata_ctx *c;
	struct sim sim;
	char *text;
	size_t len;
	unsigned hot_l = 0, hot_x = 0;

	snprintf(path, sizeof(path), "%s/routes.txt", dir);
	snprintf(bad, sizeof(bad), "%s/bad.txt", dir);
	sim_open(&sim, "");
	o.profile_save = path;
	c = make_ctx(sim.dev, &o);
	ck_assert_double_le(golden(c, 1), TOL);
	strata_ctx_free(c); /* writes the profile */
	ck_assert_ptr_nonnull(text = tu_read_file(path, &len));
	ck_assert_ptr_nonnull(strstr(text, "# strata routing profile"));
	free(text);

	/* six slots from it: filled at load, the hottest; no first-use fill needed for them */
	o = (struct strata_vcache_opts){ .slots = 6, .profile = path };
	c = make_ctx(sim.dev, &o);
	strata_ctx_expert_cache(c, &st);
	ck_assert_uint_eq(st.used, 6);
	ck_assert_uint_eq(st.bytes_in, 0); /* load-time uploads are not the run's */
	ck_assert_uint_eq(strata_vcache_keys(c, keys, 6), 6);
	{ /* slot 0 holds the profile's most routed expert */
		FILE *f = fopen(path, "r");
		char line[128];
		unsigned long long n, most = 0;
		unsigned l, x;

		ck_assert_ptr_nonnull(f);
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "%u %u %llu", &l, &x, &n) == 3 && n > most)
				most = n, hot_l = l, hot_x = x;
		fclose(f);
	}
	ck_assert_uint_eq(keys[0], hot_l * 8 + hot_x);
	ck_assert_double_le(golden(c, 1), TOL);
	strata_ctx_free(c);

	/* a line that is no 'layer expert routes' of this model: one error, FILE:LINE */
	ck_assert_int_eq(tu_write_file(bad, "# ok\n0 1 5\n3 0 7\n", 17), 0);
	co = (struct strata_ctx_opts){ .pool = g_pool, .max_batch = 64, .n_ctx = 512,
				       .device = sim.dev, .device_budget = sim.dev->info.mem_free };
	co.vc = (struct strata_vcache_opts){ .slots = 6, .profile = bad };
	tu_log_capture();
	ck_assert_int_eq(strata_ctx_create(g_m, &co, &c), -EINVAL);
	tu_log_release();
	ck_assert_int_eq(tu_log_lines, 1);
	ck_assert_ptr_nonnull(strstr(tu_log, "bad.txt:3: expected 'layer expert routes'"));
	co.vc.profile = "/nonexistent/routes.txt";
	tu_log_capture();
	ck_assert_int_eq(strata_ctx_create(g_m, &co, &c), -ENOENT);
	tu_log_release();
	ck_assert_ptr_nonnull(strstr(tu_log, "/nonexistent/routes.txt"));
	sim_close(&sim);
	tu_rmtree(dir);
}
END_TEST


static Suite *suite(void)
{
	Suite *s = suite_create("vcache");
	TCase *tc = tcase_create("gpu-sim");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, budgets);
	tcase_add_test(tc, counts_match_a_model);
	tcase_add_test(tc, lend_and_refill);
	tcase_add_test(tc, pcie_frac_same_outputs);
	tcase_add_test(tc, shrinks_when_refused);
	tcase_add_test(tc, profile_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());

	return tu_srunner_run(sr);
}
