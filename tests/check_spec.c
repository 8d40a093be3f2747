/*
 * check_spec.c - speculative decoding through verify windows.
 *
 *  - greedy output with lookup drafts in windows of 2, 4 and 8 equals
 *    one-token decoding token for token, and each committed token's logits
 *    equal one-token decoding's (F32 tolerance), on every golden
 *    architecture (attention and recurrent: llama, qwen3moe, glm4moe,
 *    qwen3next, qwen4exp);
 *  - rollback: a window whose drafts are right up to offset o and wrong
 *    there keeps exactly o drafts, proposes the model's own token, and leaves
 *    the sequence as one-token decoding would (the logits of the tokens fed
 *    after it match), for every offset, on attention and recurrent models;
 *    qwen3next's and qwen4exp's replay of the logged DeltaNet (and PLE conv)
 *    inputs, with no re-feed, equals feeding the kept prefix again bit for
 *    bit;
 *  - sampling: at temperature 1 the tokens' frequencies over many seeds match
 *    one-token decoding's (chi-square homogeneity), and the same test tells
 *    a different temperature apart;
 *  - [spec] adapt: no drafts while windows cost more than they save;
 *  - bad input: a window out of [1, 8], an unknown drafter, ngram_min >
 *    ngram_max.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "sample/sampler.h"
#include "testutil.h"

#define MAXGEN 256

static const char *const g_models[] = {
	"models/stories260K.gguf",  "models/syn-llama-f32.gguf",
	"models/syn-qwen3moe-f32.gguf", "models/syn-glm4moe-f32.gguf",
	"models/syn-qwen3next-f32.gguf", "models/syn-qwen4exp-f32.gguf",
};

/* An engine on model (NULL: skipped, with the reason printed) with extra args. */
static struct strata_engine *engine(const char *model, const char *window, const char *drafter)
{
	const char *argv[] = { "strata", "-m", model, "-t", "1", "--temp", "0", "--ctx-size", "512",
			       "--spec-window", window, "--spec-drafter", drafter,
			       "--spec-ngram-min", "1", "--no-spec-adapt", "--plugin-dir",
			       STRATA_PLUGIN_DIR };
	struct strata_engine *e = NULL;

	ck_assert_int_eq(strata_engine_create_args(18, (char **)argv, &e), 0);
	return e;
}

struct ids {
	int32_t id[MAXGEN];
	uint32_t n;
	float *rows;      /* [MAXGEN + 1][n_vocab]: each row a token was chosen from, or NULL */
	uint32_t n_rows;
};

/* The logits hook: a copy of each row decode chooses a token from (kept or verified). */
static int keep_row(void *user, float *logits, int32_t n_vocab)
{
	struct ids *v = user;

	if (v->rows && v->n_rows <= MAXGEN)
		memcpy(v->rows + (size_t)v->n_rows++ * n_vocab, logits, n_vocab * sizeof(float));
	return 0;
}

static int collect(void *user, int32_t id, const char *piece, size_t len)
{
	struct ids *v = user;

	(void)piece, (void)len;
	if (v->n < MAXGEN)
		v->id[v->n++] = id;
	return 0;
}

static int32_t *tokens(struct strata_engine *e, const char *text, int *n)
{
	int32_t *ids = NULL;

	*n = strata_engine_tokenize(e, text, strlen(text), STRATA_TOKENIZE_ADD_BOS, &ids);
	ck_assert_int_gt(*n, 0);
	return ids;
}

/* Text that repeats, so that prompt lookup drafts often, and right and wrong. */
static const char g_prompt[] = "Once upon a time, there was a little girl named Lily. She liked to "
			       "play. Once upon a time, there was a little";

static void generate(struct strata_engine *e, const int32_t *p, int n, const struct strata_gen_params *gp,
		     struct ids *out, struct strata_stats *st)
{
	out->n = 0;
	out->n_rows = 0;
	ck_assert_int_ge(strata_generate_ex(e, p, (uint32_t)n, gp, collect, out, st), 0);
}

START_TEST(greedy_identical)
{
	const char *model = tu_shared(g_models[_i]);
	struct strata_engine *one, *win;
	struct strata_gen_params gp;
	struct strata_stats st;
	struct ids ref = { 0 }, got = { 0 };
	int32_t *p;
	size_t nv;
	int n;

	if (!model)
		TU_SKIP("../shared/%s is absent", g_models[_i]);
	one = engine(model, "1", "lookup");
	nv = (size_t)one->model->hp.n_vocab;
	ref.rows = malloc((MAXGEN + 1) * nv * sizeof(float));
	got.rows = malloc((MAXGEN + 1) * nv * sizeof(float));
	p = tokens(one, g_prompt, &n);
	strata_engine_gen_defaults(one, &gp);
	gp.n_predict = 120, gp.temp = 0.0f;
	gp.logits = keep_row;
	generate(one, p, n, &gp, &ref, &st);
	ck_assert_uint_eq(st.n_windows, 0);
	for (int w = 2; w <= 8; w *= 2) {
		char ws[4];
		double worst = 0;

		snprintf(ws, sizeof(ws), "%d", w);
		win = engine(model, ws, "lookup");
		generate(win, p, n, &gp, &got, &st);
		ck_assert_msg(st.n_windows > 0 && st.n_drafted > 0, "%s: no window was drafted",
			      g_models[_i]);
		ck_assert_uint_eq(got.n, ref.n);
		for (uint32_t i = 0; i < ref.n; i++)
			ck_assert_msg(got.id[i] == ref.id[i], "%s window %d: token %u is %d, not %d",
				      g_models[_i], w, i, got.id[i], ref.id[i]);
		/* each committed token's row, window row or not, is one-token decoding's */
		ck_assert_uint_eq(got.n_rows, ref.n_rows);
		for (uint32_t i = 0; i < ref.n_rows; i++) {
			double d = tu_max_abs_diff(got.rows + i * nv, ref.rows + i * nv, nv);

			worst = d > worst ? d : worst;
		}
		/* bit for bit: batch-invariant matmuls, and DeltaNet windows take the
		 * one-token rule (backend/deltanet.h) */
		ck_assert_msg(worst == 0, "%s window %d: a committed row differs by %g",
			      g_models[_i], w, worst);
		printf("%s window %d: %u of %u drafts kept in %u windows; committed rows within "
		       "%.1e\n", g_models[_i], w, st.n_accepted, st.n_drafted, st.n_windows, worst);
		/* again on the same engine: the prompt resumes from the sequence */
		generate(win, p, n, &gp, &got, &st);
		ck_assert(got.n == ref.n && !memcmp(got.id, ref.id, ref.n * sizeof(int32_t)));
		strata_engine_free(win);
	}
	free(p);
	free(ref.rows);
	free(got.rows);
	strata_engine_free(one);
}
END_TEST

static int keep_all(void *user, int32_t t)
{
	(void)user, (void)t;
	return 0;
}

/* Feed the prompt from scratch; the first greedy token (from e->logits) is returned. */
static int32_t restart(struct strata_engine *e, const int32_t *p, int n)
{
	const int32_t nv = (int32_t)e->model->hp.n_vocab;
	int32_t best = 0;

	ck_assert_int_eq(strata_seq_truncate(e->seq, 0), 0);
	e->n_hist = 0;
	ck_assert_int_eq(strata_engine_feed(e, p, (uint32_t)n, NULL), 0);
	for (int32_t i = 1; i < nv; i++)
		if (e->logits[i] > e->logits[best])
			best = i;
	return best;
}

/*
 * Drafts right up to offset o, then wrong: o kept, the model's token next,
 * and the sequence continues as the one-token reference does.
 */
START_TEST(rollback_every_offset)
{
	static const int pick[] = { 1, 4, 5 }; /* llama, qwen3next, qwen4exp */
	const char *model = tu_shared(g_models[pick[_i]]);
	struct strata_engine *ref, *e, *fed;
	struct strata_gen_params gp;
	struct strata_stats st;
	struct ids t;
	const int K = 7, AFTER = 3;
	int32_t *p, nv;
	float *want;
	int n;

	if (!model)
		TU_SKIP("../shared/%s is absent", g_models[pick[_i]]);
	ref = engine(model, "1", "none");
	e = engine(model, "8", "lookup");
	fed = engine(model, "8", "lookup");
	fed->spec_refeed = 1; /* recurrent: the kept prefix fed again, to hold the log's replay to */
	nv = (int32_t)e->model->hp.n_vocab;
	p = tokens(ref, g_prompt, &n);
	strata_engine_gen_defaults(ref, &gp);
	gp.n_predict = K + AFTER + 2, gp.temp = 0.0f;
	generate(ref, p, n, &gp, &t, &st);
	ck_assert_uint_eq(t.n, (uint32_t)gp.n_predict);
	want = malloc((size_t)AFTER * nv * sizeof(float));
	ck_assert_ptr_nonnull(want);
	for (int o = 0; o <= K; o++) {
		struct strata_spec_run sr = { .smp = e->sampler }, sf = { .smp = fed->sampler };
		const struct strata_spec_hooks hooks = { NULL, keep_all, NULL };
		int32_t d[8];

		/* the reference, one token at a time: the logits after t[o+1 .. o+AFTER] */
		ck_assert_int_eq(restart(ref, p, n), t.id[0]);
		for (int i = 0; i <= o + AFTER; i++) {
			ck_assert_int_eq(strata_engine_feed(ref, &t.id[i], 1, NULL), 0);
			if (i > o)
				memcpy(want + (size_t)(i - o - 1) * nv, ref->logits, nv * sizeof(float));
		}
		ck_assert_int_eq(restart(e, p, n), t.id[0]);
		ck_assert_int_eq(restart(fed, p, n), t.id[0]);
		for (int i = 0; i < K; i++)
			d[i] = i == o ? (t.id[i + 1] + 1) % nv : t.id[i + 1];
		if (strata_seq_recurrent(e->seq)) {
			ck_assert_int_eq(strata_seq_snapshot_create(e->seq, &sr.snap), 0);
			ck_assert_int_eq(strata_seq_snapshot_create(fed->seq, &sf.snap), 0);
		}
		ck_assert_int_eq(strata_spec_window(e, &sr, t.id[0], d, (uint32_t)K, &hooks), 0);
		ck_assert_int_eq(strata_spec_window(fed, &sf, t.id[0], d, (uint32_t)K, &hooks), 0);
		strata_seq_snapshot_free(sr.snap);
		strata_seq_snapshot_free(sf.snap);
		/* the recurrent models replay their log; the reference feeds again */
		ck_assert_uint_eq(sr.refed, 0);
		ck_assert_uint_eq(sf.refed, _i > 0 && o < K);
		ck_assert_uint_eq(sr.accepted, (uint32_t)(o < K ? o : K));
		ck_assert_int_eq(sr.has_next, o < K);
		if (o < K)
			ck_assert_int_eq(sr.next, t.id[o + 1]);
		ck_assert_uint_eq(strata_seq_pos(e->seq), (uint32_t)n + 1 + (o < K ? o : K));
		ck_assert_uint_eq(e->n_hist, strata_seq_pos(e->seq));
		ck_assert(!memcmp(e->hist + n, t.id, (size_t)(1 + (o < K ? o : K)) * sizeof(int32_t)));
		if (o == K) /* every draft kept: the window's last row is the next logits */
			continue;
		/* what follows the window: the same logits as the reference's */
		for (int i = o + 1; i <= o + AFTER; i++) {
			double dl;

			ck_assert_int_eq(strata_engine_feed(e, &t.id[i], 1, NULL), 0);
			ck_assert_int_eq(strata_engine_feed(fed, &t.id[i], 1, NULL), 0);
			/* the window's rows are a feed's of the same tokens, bit for bit */
			ck_assert_msg(!memcmp(e->logits, fed->logits, (size_t)nv * sizeof(float)),
				      "%s offset %d, token %d: replay and re-feed differ",
				      g_models[pick[_i]], o, i);
			dl = tu_max_abs_diff(e->logits, want + (size_t)(i - o - 1) * nv, (size_t)nv);
			/* bit for bit: the kernels sum a token's products in the same order
			 * at any batch size, and windows take DeltaNet's one-token rule */
			ck_assert_msg(dl == 0,
				      "%s offset %d, token %d: logits differ by %g",
				      g_models[pick[_i]], o, i, dl);
		}
	}
	free(want);
	free(p);
	strata_engine_free(fed);
	strata_engine_free(e);
	strata_engine_free(ref);
}
END_TEST

/*
 * Pearson's chi-square for two samples over categories: the ids either
 * side drew 10 or more times, the rest pooled.  Returns the statistic and
 * *df its degrees of freedom.
 */
static double chi2_two(const int *a, const int *b, int nv, int *df)
{
	double stat = 0, ta = 0, tb = 0, ra = 0, rb = 0;
	int cats = 0;

	for (int i = 0; i < nv; i++)
		ta += a[i], tb += b[i];
	for (int i = 0; i <= nv; i++) {
		double x, y;

		if (i < nv && a[i] + b[i] < 10) {
			ra += a[i], rb += b[i];
			continue;
		}
		x = i < nv ? a[i] : ra;
		y = i < nv ? b[i] : rb;
		if (x + y == 0)
			continue;
		{
			double ea = (x + y) * ta / (ta + tb), eb = (x + y) * tb / (ta + tb);

			stat += (x - ea) * (x - ea) / ea + (y - eb) * (y - eb) / eb;
		}
		cats++;
	}
	*df = cats - 1;
	return stat;
}

/* The 0.1% critical value of chi-square with df degrees (Wilson-Hilferty). */
static double chi2_crit(int df)
{
	const double z = 3.090, h = 2.0 / (9.0 * df);

	return df * pow(1 - h + z * sqrt(h), 3);
}

START_TEST(sampling_distribution)
{
	const char *model = tu_shared("models/stories260K.gguf");
	enum { SEEDS = 600, STEP = 4 };
	struct strata_engine *one, *win;
	struct strata_gen_params gp;
	struct strata_stats st;
	int *c1, *c4, *chot, df;
	uint32_t drafted = 0, kept = 0;
	struct ids t;
	int32_t *p, nv;
	double x;
	int n;

	if (!model)
		TU_SKIP("../shared/models/stories260K.gguf is absent");
	one = engine(model, "1", "none");
	win = engine(model, "4", "lookup");
	nv = (int32_t)one->model->hp.n_vocab;
	c1 = calloc(nv, sizeof(int)), c4 = calloc(nv, sizeof(int)), chot = calloc(nv, sizeof(int));
	ck_assert(c1 && c4 && chot);
	p = tokens(one, g_prompt, &n);
	strata_engine_gen_defaults(one, &gp);
	gp.n_predict = STEP + 1, gp.temp = 1.0f, gp.top_k = 0, gp.top_p = 1.0f, gp.min_p = 0.0f;
	gp.repeat_penalty = 1.0f;
	for (int s = 0; s < SEEDS; s++) {
		gp.seed = 1000 + (uint64_t)s, gp.temp = 1.0f;
		generate(one, p, n, &gp, &t, &st);
		if (t.n > STEP)
			c1[t.id[STEP]]++;
		gp.seed = 50000 + (uint64_t)s;
		generate(win, p, n, &gp, &t, &st);
		drafted += st.n_drafted, kept += st.n_accepted;
		if (t.n > STEP)
			c4[t.id[STEP]]++;
		gp.seed = 90000 + (uint64_t)s, gp.temp = 1.6f;
		generate(win, p, n, &gp, &t, &st);
		if (t.n > STEP)
			chot[t.id[STEP]]++;
	}
	x = chi2_two(c1, c4, nv, &df);
	printf("token %d of %d seeds: window 4 against 1: chi-square %.1f, df %d (0.1%%: %.1f); "
	       "%u of %u drafts kept\n", STEP, SEEDS, x, df, chi2_crit(df), kept, drafted);
	ck_assert_int_ge(df, 3);
	ck_assert_msg(drafted > SEEDS && kept > 0, "too few drafts to test the rule");
	ck_assert_msg(x < chi2_crit(df), "window 4 changes the distribution: %.1f >= %.1f", x,
		      chi2_crit(df));
	/* the test can tell: temperature 1.6 is another distribution */
	x = chi2_two(c1, chot, nv, &df);
	printf("temperature 1.6 against 1: chi-square %.1f, df %d (0.1%%: %.1f)\n", x, df,
	       chi2_crit(df));
	ck_assert(x > chi2_crit(df));
	free(c1), free(c4), free(chot), free(p);
	strata_engine_free(win);
	strata_engine_free(one);
}
END_TEST

/*
 * [spec] adapt: with windows measured dearer per kept token than one-token
 * passes the engine stops drafting, but for one chance in 16; cheaper, it
 * drafts every time.  (The figures are fed in, not timed.)
 */
START_TEST(adapt_skips_costly_windows)
{
	const char *model = tu_shared("models/stories260K.gguf");
	const char *argv[] = { "strata", "-m", model, "-t", "1", "--spec-window", "4",
			       "--spec-drafter", "lookup", "--spec-ngram-min", "1", "--plugin-dir",
			       STRATA_PLUGIN_DIR };
	struct strata_engine *e = NULL;
	int32_t *p, d[8];
	int n, drafted = 0;

	if (!model)
		TU_SKIP("../shared/models/stories260K.gguf is absent");
	ck_assert_int_eq(strata_engine_create_args(13, (char **)argv, &e), 0);
	p = tokens(e, g_prompt, &n);
	(void)restart(e, p, n);
	/* the prompt's last token came earlier in it: what followed there is drafted */
	ck_assert_uint_gt(strata_spec_draft(e, p[n - 1], d, 3), 0);
	strata_spec_note(e, 4.0, 2, 1); /* a window: 2 ms per token */
	ck_assert_uint_eq(strata_spec_draft(e, p[n - 1], d, 3), 0); /* no one-token figure yet */
	strata_spec_note(e, 1.0, 1, 0);
	/* windows cost twice as much: a probe in 50 (r - 1) = 50 chances */
	for (int i = 0; i < 100; i++)
		drafted += strata_spec_draft(e, p[n - 1], d, 3) > 0;
	ck_assert_int_eq(drafted, 2);
	for (int i = 0; i < 20; i++) /* windows turn cheap: 0.5 ms per token */
		strata_spec_note(e, 1.0, 2, 1);
	for (int i = 0; i < 8; i++)
		ck_assert_uint_gt(strata_spec_draft(e, p[n - 1], d, 3), 0);
	free(p);
	strata_engine_free(e);
}
END_TEST

static void expect_refused(const char **argv, int argc, const char *want)
{
	struct strata_engine *e = NULL;

	ck_assert_int_lt(strata_engine_create_args(argc, (char **)argv, &e), 0);
	ck_assert_ptr_null(e);
	ck_assert_msg(strstr(strata_last_error(), want), "error '%s' lacks '%s'",
		      strata_last_error(), want);
}

START_TEST(bad_input)
{
	const char *model = tu_shared("models/stories260K.gguf");

	if (!model)
		TU_SKIP("../shared/models/stories260K.gguf is absent");
	{
		const char *a[] = { "strata", "-m", model, "--spec-window", "9" };

		expect_refused(a, 5, "bad value '9' for --spec-window: expected an integer in [1, 8]");
	}
	{
		const char *a[] = { "strata", "-m", model, "--spec-window", "0" };

		expect_refused(a, 5, "bad value '0' for --spec-window");
	}
	{
		const char *a[] = { "strata", "-m", model, "--spec", "9" };

		expect_refused(a, 5, "bad value '9' for --spec: expected an integer in [1, 8]");
	}
	{
		const char *a[] = { "strata", "-m", model, "--spec-drafter", "frob" };

		expect_refused(a, 5, "--spec-drafter");
	}
	{
		const char *a[] = { "strata", "-m", model, "--spec-ngram-min", "5",
				    "--spec-ngram-max", "3" };

		expect_refused(a, 7, "--spec-ngram-max: [spec] ngram_min (5) is larger than "
				     "ngram_max (3)");
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("spec");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, greedy_identical, 0, (int)(sizeof(g_models) / sizeof(*g_models)));
	tcase_add_loop_test(tc, rollback_every_offset, 0, 3);
	tcase_add_test(tc, sampling_distribution);
	tcase_add_test(tc, adapt_skips_costly_windows);
	tcase_add_test(tc, bad_input);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
