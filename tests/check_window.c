#define _GNU_SOURCE /* setenv, strcasestr */
/*
 * check_window.c - path-window, prompt parts and turn checkpoints.
 *
 *  - path-window against a fake engine: which parts it takes (--short-read,
 *    picture rows, 0 = off), S tokens per forward_window call, errors;
 *  - identity: greedy answers read through the decode windows (S = 1, 3, 4)
 *    and through path-batched are the same tokens on every golden model and
 *    prompt, except at a near tie (top-two logits within 1e-3), which is
 *    printed;
 *  - turn checkpoints on stories260K (attention) and syn-qwen3next-f32
 *    (recurrent): a two-turn conversation answers the same with checkpoints,
 *    with STRATA_CKPT_REREAD=1 and from a fresh engine; the parts each run
 *    read and the path each took; a shorter checkpoint when the longer one
 *    does not match; the LRU bound;
 *  - bad input: --short-read -1, [spec] window = 0, unknown path names.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "engine/ckpt.h"
#include "engine/engine.h"
#include "plugin/path.h"
#include "plugin/registry.h"
#include "slog.h"
#include "strata.h"
#include "testutil.h"
#include "util/log.h"

#define MAX_GEN 64
#define TOPK 8
/*
 * Batched and windowed prompts sum in other orders (attention, and the
 * kernels whose tiles differ with the token count), so the same context's
 * logits may differ by rounding, which the next layer's activation
 * quantisation can turn into a whole step of its int8 grid: up to 0.026 on
 * the i-quant models (measured 2026-12-02, before and after the Q8_0
 * kernels became batch-invariant), under 1e-3 elsewhere.  MAX_DEV bounds it
 * over the top TOPK logits both runs share; two runs may part only where
 * the top two logits are closer than twice that step's measured difference.
 */
#define MAX_DEV 5e-2f

/* ---- captured log: prompt parts and errors ------------------------------------ */

static char g_log[1 << 16];
static size_t g_log_len;

static void sink(void *user, int level, const char *line)
{
	size_t n = strlen(line);

	(void)user;
	if (level == STRATA_LOG_LVL_DEBUG && !strstr(line, "part of ") &&
	    !strstr(line, "resumed"))
		return;
	if (level == STRATA_LOG_LVL_INFO)
		return;
	if (g_log_len + n + 2 < sizeof(g_log)) {
		memcpy(g_log + g_log_len, line, n);
		g_log_len += n;
		g_log[g_log_len++] = '\n';
		g_log[g_log_len] = 0;
	}
}

static void log_start(void)
{
	g_log_len = 0;
	g_log[0] = 0;
	strata_log_set_level(STRATA_LOG_LVL_DEBUG);
	strata_log_set_sink(sink, NULL);
}

static void log_stop(void)
{
	strata_log_set_sink(NULL, NULL);
	strata_log_set_level(STRATA_LOG_LVL_INFO);
}

/* ---- engines and greedy runs ------------------------------------------------------ */

static struct strata_engine *engine(const char *model, const char *const *extra, int n_extra)
{
	const char *argv[32] = { "strata", "-m", model, "--plugin-dir", STRATA_PLUGIN_DIR,
				 "-t", "1" };
	struct strata_engine *e = NULL;
	int argc = 7;

	for (int i = 0; i < n_extra; i++)
		argv[argc++] = extra[i];
	ck_assert_int_eq(strata_engine_create_args(argc, (char **)argv, &e), 0);
	return e;
}

struct run {
	struct strata_engine *e;
	int32_t tok[MAX_GEN];
	float gap[MAX_GEN]; /* top-two gap of the logits that chose tok[i] */
	int32_t top_id[MAX_GEN][TOPK]; /* the TOPK largest logits at step i */
	float top_v[MAX_GEN][TOPK];
	int n;
	struct strata_stats st;
};

static void top_k(const float *l, int32_t n, int32_t id[TOPK], float v[TOPK])
{
	for (int j = 0; j < TOPK; j++)
		id[j] = -1, v[j] = -INFINITY;
	for (int32_t i = 0; i < n; i++) {
		int j = TOPK - 1;

		if (!(l[i] > v[j]))
			continue;
		for (; j > 0 && l[i] > v[j - 1]; j--)
			id[j] = id[j - 1], v[j] = v[j - 1];
		id[j] = i, v[j] = l[i];
	}
}

/* The largest difference of the logits step i of a and b both rank in
 * their top TOPK. */
static float step_dev(const struct run *a, const struct run *b, int i)
{
	float d = 0;

	for (int j = 0; j < TOPK; j++)
		for (int k = 0; k < TOPK; k++)
			if (a->top_id[i][j] >= 0 && a->top_id[i][j] == b->top_id[i][k])
				d = fmaxf(d, fabsf(a->top_v[i][j] - b->top_v[i][k]));
	return d;
}

static int on_token(void *user, int32_t id, const char *piece, size_t len)
{
	struct run *r = user;

	(void)piece, (void)len;
	ck_assert_int_lt(r->n, MAX_GEN);
	r->tok[r->n] = id;
	r->gap[r->n] = slog_top2_gap(r->e->logits, r->e->model->hp.n_vocab);
	top_k(r->e->logits, (int32_t)r->e->model->hp.n_vocab, r->top_id[r->n], r->top_v[r->n]);
	r->n++;
	return 0;
}

static void greedy(struct strata_engine *e, const int32_t *prompt, uint32_t n, int n_gen,
		   struct run *r)
{
	struct strata_gen_params p;

	memset(r, 0, sizeof(*r));
	r->e = e;
	strata_engine_gen_defaults(e, &p);
	p.temp = 0;
	p.n_predict = n_gen;
	ck_assert_int_ge(strata_generate_ex(e, prompt, n, &p, on_token, r, &r->st), 0);
	ck_assert_int_eq(r->st.n_gen, r->n);
}

/*
 * a and b are the same tokens, with logits within MAX_DEV of each other at
 * every step, or they part at a step whose top-two gap (in either run) is
 * under twice the difference measured there: that is printed, and the rest
 * not compared.  Returns 1 when they agree throughout.
 */
static int same_answer(const char *what, const struct run *a, const struct run *b)
{
	int n = a->n < b->n ? a->n : b->n;

	for (int i = 0; i < n; i++) {
		float g = fminf(a->gap[i], b->gap[i]), d = step_dev(a, b, i);

		ck_assert_msg(d <= MAX_DEV, "%s: step %d: the same context's logits differ by %.3g",
			      what, i, (double)d);
		if (a->tok[i] == b->tok[i])
			continue;
		ck_assert_msg(g <= 2 * d, "%s: token %d differs (%d vs %d) though the top two "
			      "logits are %.3g apart and the logits differ by %.3g", what, i,
			      a->tok[i], b->tok[i], (double)g, (double)d);
		printf("NEAR TIE: %s: token %d: top-two logits %.2g apart, the logits differ by "
		       "%.2g; the answers part here (%d vs %d)\n", what, i, (double)g, (double)d,
		       a->tok[i], b->tok[i]);
		return 0;
	}
	ck_assert_msg(a->n == b->n, "%s: %d vs %d tokens", what, a->n, b->n);
	return 1;
}

/* ---- path-window against a fake engine ------------------------------------------ */

struct fake {
	int n_window, n_batch;
	uint32_t sizes[64];
	uint32_t consumed;
	const int32_t *next;
	int ok; /* tokens came in order, each call within the window */
	uint32_t window;
};

static int fake_feed(struct fake *f, const int32_t *t, uint32_t n)
{
	if (t != f->next)
		f->ok = 0;
	f->next = t + n;
	f->consumed += n;
	return 0;
}

static int fake_window(void *engine, const int32_t *t, uint32_t n)
{
	struct fake *f = engine;

	if (n == 0 || n > f->window)
		f->ok = 0;
	if (f->n_window < 64)
		f->sizes[f->n_window] = n;
	f->n_window++;
	return fake_feed(f, t, n);
}

static int fake_batch(void *engine, const int32_t *t, uint32_t n)
{
	struct fake *f = engine;

	f->n_batch++;
	return fake_feed(f, t, n);
}

static uint32_t fake_s(void *engine)
{
	return ((struct fake *)engine)->window;
}

static uint32_t fake_max(void *engine)
{
	(void)engine;
	return 1u << 20;
}

/* A path list over the built plugins, configured by flags. */
static struct strata_path_list *fake_list(struct strata_config *c, struct strata_registry **reg,
					  const char *names, const char *const *flags, int n)
{
	const char *argv[16] = { "strata", "--plugin-dir", STRATA_PLUGIN_DIR };
	struct strata_path_list *list = NULL;
	int argc = 3;

	for (int i = 0; i < n; i++)
		argv[argc++] = flags[i];
	ck_assert_int_eq(strata_config_init(c), 0);
	ck_assert_int_eq(strata_config_from_args(c, argc, (char **)argv), 0);
	ck_assert_int_eq(strata_registry_create(c, NULL, reg), 0);
	ck_assert_int_eq(strata_path_list_create(*reg, names, &list), 0);
	return list;
}

START_TEST(window_plugin)
{
	static const char *const flags[] = { "--short-read", "10" };
	static const uint32_t sizes[] = { 1, 3, 4, 5, 9, 10, 11, 40 };
	struct strata_config c;
	struct strata_registry *reg;
	struct strata_path_list *list = fake_list(&c, &reg, "path-window, path-batched", flags, 2);
	int32_t t[64];

	for (int i = 0; i < 64; i++)
		t[i] = i;
	ck_assert_str_eq(strata_path_list_plugin(list, 0)->desc->name, "path-window");
	for (uint32_t w = 1; w <= 4; w++) {
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			struct fake f = { .ok = 1, .next = t, .window = w };
			struct strata_engine_iface eng = {
				.version = 1, .engine = &f, .forward_batch = fake_batch,
				.forward_window = fake_window, .window = fake_s, .max_batch = fake_max,
			};
			struct strata_part part = { .tokens = t, .n_tokens = sizes[s], .is_last = 1 };
			int windowed = sizes[s] <= 10;

			ck_assert_int_eq(strata_path_list_pick(list, &part), windowed ? 0 : 1);
			ck_assert_int_eq(strata_path_list_run(list, &part, &eng), 0);
			ck_assert(f.ok);
			ck_assert_uint_eq(f.consumed, sizes[s]);
			ck_assert_int_eq(f.n_batch, windowed ? 0 : 1);
			ck_assert_int_eq(f.n_window, windowed ? (int)((sizes[s] + w - 1) / w) : 0);
			for (int i = 0; windowed && i < f.n_window; i++)
				ck_assert_uint_eq(f.sizes[i], sizes[s] - i * w < w ? sizes[s] - i * w : w);
			/* A part with picture rows is never read through the windows. */
			part.n_pictures = 1;
			ck_assert_int_eq(strata_path_list_pick(list, &part), 1);
		}
	}
	{
		/* An engine without a window path: path-window refuses to run. */
		struct fake f = { .ok = 1, .next = t, .window = 4 };
		struct strata_engine_iface eng = {
			.version = 1, .engine = &f, .forward_batch = fake_batch, .window = fake_s,
			.max_batch = fake_max,
		};
		struct strata_part part = { .tokens = t, .n_tokens = 5, .is_last = 1 };

		tu_log_capture();
		ck_assert_int_eq(strata_path_list_run(list, &part, &eng), -EINVAL);
		tu_log_release();
		ck_assert_ptr_nonnull(strstr(tu_log, "no decode-window forward pass"));
		ck_assert_int_eq(f.consumed, 0);
	}
	strata_path_list_free(list);
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

START_TEST(window_plugin_off)
{
	static const char *const flags[] = { "--short-read", "0" };
	struct strata_config c;
	struct strata_registry *reg;
	struct strata_path_list *list = fake_list(&c, &reg, "path-window,path-batched", flags, 2);
	int32_t t[2] = { 1, 2 };
	struct strata_part part = { .tokens = t, .n_tokens = 1, .is_last = 1 };

	/* short_read 0: every part, even one token, goes to the next path. */
	ck_assert_int_eq(strata_path_list_pick(list, &part), 1);
	strata_path_list_free(list);
	strata_registry_free(reg);
	strata_config_free(&c);
	/* ... and with path-window alone nothing accepts it. */
	list = fake_list(&c, &reg, "path-window", flags, 2);
	tu_log_capture();
	ck_assert_int_eq(strata_path_list_pick(list, &part), -EINVAL);
	tu_log_release();
	ck_assert_ptr_nonnull(strstr(tu_log, "no prompt path accepts a part of 1 tokens"));
	strata_path_list_free(list);
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

/* ---- identity: windows and batches give the same greedy answer ------------------- */

static const char *const id_models[] = {
	"stories260K", "syn-llama-f32", "syn-qwen3moe-f32", "syn-glm4moe-f32",
	"syn-qwen3next-f32", "syn-qwen3moe-d256-f32", "syn-qwen3moe-d256-q8_0",
	"syn-qwen3moe-d256-q6_k", "syn-qwen3moe-d256-q4_0", "syn-qwen3moe-d256-q4_k_m",
	"syn-qwen3moe-d256-iq4_nl", "syn-qwen3moe-d256-q2_k", "syn-qwen3moe-d256-iq3_s",
	"syn-qwen3moe-d256-iq3_xxs", "syn-qwen3moe-d256-iq2_xs", "syn-qwen3moe-d256-iq1_m",
};
#define N_ID_MODELS (int)(sizeof(id_models) / sizeof(id_models[0]))

static const char *const id_prompts[] = { "once", "mixed", "story" };

static int g_ran; /* identity cases that found their model */

/* Prompt parts of the last run went to `path` only, one per line of the log. */
static void assert_parts(const char *path, int n_parts)
{
	int n = 0;

	for (const char *p = g_log; (p = strstr(p, "part of ")); p++) {
		const char *eol = strchr(p, '\n');

		ck_assert_msg(eol && (size_t)(eol - p) > strlen(path) &&
			      !strncmp(eol - strlen(path), path, strlen(path)),
			      "a part did not go to %s:\n%s", path, g_log);
		n++;
	}
	ck_assert_msg(n == n_parts, "%d parts, want %d:\n%s", n, n_parts, g_log);
}

START_TEST(identity)
{
	static const char *const win[3][8] = {
		{ "--paths", "path-window", "--short-read", "100000", "--spec-window", "1",
		  "--checkpoints", "0" },
		{ "--paths", "path-window", "--short-read", "100000", "--spec-window", "3",
		  "--checkpoints", "0" },
		{ "--paths", "path-window", "--short-read", "100000", "--spec-window", "4",
		  "--checkpoints", "0" },
	};
	static const char *const bat[] = { "--paths", "path-batched", "--checkpoints", "0" };
	const char *name = id_models[_i];
	char rel[256], model[4096], what[256];
	struct strata_engine *eb, *ew[3];
	const char *p;

	snprintf(rel, sizeof(rel), "models/%s.gguf", name);
	if (!(p = tu_shared(rel)))
		TU_SKIP("identity on %s: ../shared/%s is absent", name, rel);
	snprintf(model, sizeof(model), "%s", p);
	eb = engine(model, bat, 4);
	for (int w = 0; w < 3; w++)
		ew[w] = engine(model, win[w], 8);
	for (size_t q = 0; q < sizeof(id_prompts) / sizeof(id_prompts[0]); q++) {
		struct slog s;
		struct run rb, rw;

		if (!tu_tsan_pick((size_t)_i, 3, q))
			continue; /* TSan: one prompt per model (testutil.h) */
		snprintf(rel, sizeof(rel), "golden/%s.%s.slog", name, id_prompts[q]);
		ck_assert_msg((p = tu_shared(rel)) && slog_read(p, &s) == 0, "cannot read %s", rel);
		log_start();
		greedy(eb, (const int32_t *)s.tokens, s.n_prompt, 24, &rb);
		assert_parts("path-batched", 1);
		for (int w = 0; w < 3; w++) {
			g_log_len = 0;
			g_log[0] = 0;
			greedy(ew[w], (const int32_t *)s.tokens, s.n_prompt, 24, &rw);
			assert_parts("path-window", 1);
			snprintf(what, sizeof(what), "%s %s, windows of %d vs batched", name,
				 id_prompts[q], w == 0 ? 1 : w == 1 ? 3 : 4);
			same_answer(what, &rw, &rb);
		}
		log_stop();
		slog_free(&s);
	}
	for (int w = 0; w < 3; w++)
		strata_engine_free(ew[w]);
	strata_engine_free(eb);
	g_ran++;
}
END_TEST

/* ---- turn checkpoints ------------------------------------------------------------- */

static const char *const ck_models[] = { "stories260K", "syn-qwen3next-f32" };

struct convo {
	int32_t *p1, *p2; /* turn 1's prompt; turn 2's: p1, the answer, the new message */
	uint32_t n1, n2;
	int32_t *other;   /* p1, then a different message: shares only p1 with turn 1 */
	uint32_t n_other;
};

static int32_t *tok(struct strata_engine *e, const char *text, unsigned flags, int *n)
{
	int32_t *ids = NULL;

	*n = strata_engine_tokenize(e, text, strlen(text), flags, &ids);
	ck_assert_int_gt(*n, 0);
	return ids;
}

static int32_t *concat(const int32_t *a, uint32_t na, const int32_t *b, uint32_t nb,
		       const int32_t *c, uint32_t nc)
{
	int32_t *t = malloc((size_t)(na + nb + nc) * sizeof(*t));

	ck_assert_ptr_nonnull(t);
	if (na)
		memcpy(t, a, na * sizeof(*t));
	if (nb)
		memcpy(t + na, b, nb * sizeof(*t));
	if (nc)
		memcpy(t + na + nb, c, nc * sizeof(*t));
	return t;
}

/* Turn 1's prompt and answer (16 greedy tokens) make turn 2's prompt. */
static void convo_make(struct strata_engine *e, const struct run *a1, struct convo *cv)
{
	int n1, nq, no;
	int32_t *q, *o;

	cv->p1 = tok(e, "User: Tell me a story about a little dog and a red ball.\nAssistant:",
		     STRATA_TOKENIZE_ADD_BOS | STRATA_TOKENIZE_PARSE_SPECIAL, &n1);
	cv->n1 = (uint32_t)n1;
	if (!a1)
		return;
	q = tok(e, "\nUser: What was the dog's name?\nAssistant:", STRATA_TOKENIZE_PARSE_SPECIAL, &nq);
	o = tok(e, " The cat sat on the mat all day.", STRATA_TOKENIZE_PARSE_SPECIAL, &no);
	cv->p2 = concat(cv->p1, cv->n1, a1->tok, (uint32_t)a1->n, q, (uint32_t)nq);
	cv->n2 = cv->n1 + (uint32_t)a1->n + (uint32_t)nq;
	cv->other = concat(cv->p1, cv->n1, o, (uint32_t)no, NULL, 0);
	cv->n_other = cv->n1 + (uint32_t)no;
	free(q);
	free(o);
}

static void convo_free(struct convo *cv)
{
	free(cv->p1);
	free(cv->p2);
	free(cv->other);
}

START_TEST(checkpoints)
{
	/* Parts of up to 32 tokens through the windows: turn 2's new text is one, the
	 * whole conversation is not. */
	static const char *const fl[] = { "--paths", "path-window,path-batched",
					  "--short-read", "32" };
	static const char *const fresh[] = { "--paths", "path-window,path-batched",
					     "--short-read", "32", "--checkpoints", "0" };
	const char *name = ck_models[_i];
	char rel[256], model[4096], want[128];
	struct strata_engine *ea, *eb, *ec;
	struct run a1, a2, b1, b2, c2;
	struct convo cv = { 0 };
	uint32_t resume, branch;
	const char *p;

	snprintf(rel, sizeof(rel), "models/%s.gguf", name);
	snprintf(model, sizeof(model), "%s", tu_shared_or_skip(rel));
	unsetenv("STRATA_CKPT_REREAD");
	ea = engine(model, fl, 4);
	convo_make(ea, NULL, &cv);
	log_start();
	greedy(ea, cv.p1, cv.n1, 16, &a1);
	ck_assert_int_eq(a1.n, 16);
	convo_free(&cv);
	convo_make(ea, &a1, &cv);
	ck_assert_uint_gt(cv.n2 - cv.n1 - 15, 4); /* turn 2 adds a few tokens */
	ck_assert_uint_gt(cv.n1 + 15, 32);        /* ... to a conversation that is long */

	/* (a) checkpoints: turn 2 resumes after the fed part of the answer (its last
	 * token was never fed) and reads the rest through the windows. */
	resume = cv.n1 + 15;
	g_log_len = 0;
	greedy(ea, cv.p2, cv.n2, 16, &a2);
	ck_assert_uint_eq(a2.st.n_reused, resume);
	snprintf(want, sizeof(want), "part of %u tokens at position %u -> path-window",
		 cv.n2 - resume, resume);
	ck_assert_msg(strstr(g_log, want), "want '%s' in:\n%s", want, g_log);
	ck_assert_ptr_null(strstr(g_log, "path-batched"));

	/* (b) STRATA_CKPT_REREAD=1: the same answers, every prompt read from 0, in two
	 * parts: the conversation up to the checkpoint (batched), then the new text. */
	setenv("STRATA_CKPT_REREAD", "1", 1);
	eb = engine(model, fl, 4);
	unsetenv("STRATA_CKPT_REREAD");
	greedy(eb, cv.p1, cv.n1, 16, &b1);
	ck_assert_uint_eq(b1.st.n_reused, 0);
	same_answer("turn 1, re-read engine vs checkpoint engine", &b1, &a1);
	g_log_len = 0;
	greedy(eb, cv.p2, cv.n2, 16, &b2);
	ck_assert_uint_eq(b2.st.n_reused, 0);
	snprintf(want, sizeof(want), "part of %u tokens at position 0 -> path-batched\n", resume);
	ck_assert_msg(strstr(g_log, want), "want '%s' in:\n%s", want, g_log);
	snprintf(want, sizeof(want), "part of %u tokens at position %u -> path-window",
		 cv.n2 - resume, resume);
	ck_assert_msg(strstr(g_log, want), "want '%s' in:\n%s", want, g_log);

	/* (c) an engine without checkpoints reading the whole conversation. */
	ec = engine(model, fresh, 6);
	g_log_len = 0;
	greedy(ec, cv.p2, cv.n2, 16, &c2);
	ck_assert_uint_eq(c2.st.n_reused, 0);
	snprintf(want, sizeof(want), "part of %u tokens at position 0 -> path-batched\n", cv.n2);
	ck_assert_msg(strstr(g_log, want), "want '%s' in:\n%s", want, g_log);
	same_answer("turn 2, checkpoint vs re-read", &a2, &b2);
	same_answer("turn 2, checkpoint vs fresh engine", &a2, &c2);
	same_answer("turn 2, re-read vs fresh engine", &b2, &c2);
	printf("%s: turn 2 of %u tokens resumed %u (%u read); the three answers agree\n", name,
	       cv.n2, a2.st.n_reused, cv.n2 - a2.st.n_reused);

	/*
	 * A prompt that keeps turn 1's prompt but not its answer.  Recurrent: the longer
	 * checkpoints do not match, the shorter one (end of turn 1's prompt) does;
	 * attention-only: the sequence is cut where the two part.  Reading it rewrites
	 * the rows of turn 1's answer: those checkpoints are stale afterwards, and turn 2
	 * falls back to the same point.
	 */
	branch = 0;
	while (branch < cv.n_other && cv.other[branch] == cv.p2[branch])
		branch++;
	if (strata_seq_recurrent(ea->seq))
		branch = cv.n1;
	ck_assert_uint_ge(branch, cv.n1);
	ck_assert_uint_lt(branch, resume);
	{
		struct run x, y, z;

		greedy(ea, cv.other, cv.n_other, 8, &x);
		ck_assert_uint_eq(x.st.n_reused, branch);
		greedy(ec, cv.other, cv.n_other, 8, &z);
		same_answer("a branch after turn 1's prompt, checkpoint vs fresh", &x, &z);
		greedy(ea, cv.p2, cv.n2, 16, &y);
		ck_assert_uint_eq(y.st.n_reused, branch);
		same_answer("turn 2 after the branch vs fresh engine", &y, &c2);
	}
	p = strstr(g_log, "error");
	ck_assert_msg(!p, "unexpected error:\n%s", g_log);
	log_stop();
	strata_engine_free(ea);
	strata_engine_free(eb);
	strata_engine_free(ec);
	convo_free(&cv);
}
END_TEST

/* At most [serve] checkpoints are kept; the least recently used goes first. */
START_TEST(checkpoint_lru)
{
	static const char *const three[] = { "--checkpoints", "3" };
	static const char *const eight[] = { "--checkpoints", "8" };
	char model[4096];
	struct strata_engine *e3, *e8;
	struct convo cv = { 0 };
	struct run r1, r, r3, r8;
	int32_t *conv;
	uint32_t n;

	snprintf(model, sizeof(model), "%s", tu_shared_or_skip("models/syn-qwen3next-f32.gguf"));
	e3 = engine(model, three, 2);
	e8 = engine(model, eight, 2);
	convo_make(e3, NULL, &cv);
	greedy(e3, cv.p1, cv.n1, 8, &r1);
	greedy(e8, cv.p1, cv.n1, 8, &r);
	convo_free(&cv);
	convo_make(e3, &r1, &cv);
	/* Two more turns: each keeps the end of its prompt and of its answer. */
	conv = concat(cv.p2, cv.n2, NULL, 0, NULL, 0);
	n = cv.n2;
	for (int turn = 0; turn < 2; turn++) {
		int32_t *next;

		greedy(e3, conv, n, 8, &r);
		greedy(e8, conv, n, 8, &r8);
		ck_assert_uint_gt(r.st.n_reused, 0);
		next = concat(conv, n, r.tok, (uint32_t)r.n, cv.p2 + cv.n1 + r1.n,
			      cv.n2 - cv.n1 - (uint32_t)r1.n);
		n += (uint32_t)r.n + cv.n2 - cv.n1 - (uint32_t)r1.n;
		free(conv);
		conv = next;
	}
	ck_assert_uint_eq(strata_ckpts_count(e3->ckpts), 3);
	ck_assert_uint_eq(strata_ckpts_count(e8->ckpts), 6);
	/* Back to the end of turn 1's prompt with a different answer: only the engine
	 * that still holds that checkpoint resumes from it (a recurrent state cannot be
	 * cut back). */
	greedy(e3, cv.other, cv.n_other, 8, &r3);
	greedy(e8, cv.other, cv.n_other, 8, &r8);
	ck_assert_uint_eq(r3.st.n_reused, 0);
	ck_assert_uint_eq(r8.st.n_reused, cv.n1);
	same_answer("branch, 3 vs 8 checkpoints", &r3, &r8);
	free(conv);
	convo_free(&cv);
	strata_engine_free(e3);
	strata_engine_free(e8);
}
END_TEST

/* ---- bad input ---------------------------------------------------------------------- */

static void expect_create_error(const char *const *argv, int argc, const char *msg)
{
	struct strata_engine *e = NULL;

	tu_log_capture();
	ck_assert_int_lt(strata_engine_create_args(argc, (char **)argv, &e), 0);
	tu_log_release();
	ck_assert_ptr_null(e);
	ck_assert_msg(strstr(tu_log, msg), "want '%s' in:\n%s", msg, tu_log);
	ck_assert_int_eq(tu_log_lines, 1);
}

START_TEST(bad_input)
{
	const char *model = tu_shared_or_skip("models/stories260K.gguf");
	const char *dir = tu_tmpdir();
	char ini[512], text[4096], want[640];
	const char *argv[8] = { "strata", "-c", ini, "--plugin-dir", STRATA_PLUGIN_DIR };

	{
		const char *a[] = { "strata", "-m", model, "--short-read", "-1" };

		expect_create_error(a, 5, "command line: bad value '-1' for --short-read: expected "
				    "an integer >= 0");
	}
	{
		const char *a[] = { "strata", "-m", model, "--spec-window", "0" };

		expect_create_error(a, 5, "bad value '0' for --spec-window: expected an integer "
				    "in [1, 8]");
	}
	snprintf(ini, sizeof(ini), "%s/w.ini", dir);
	snprintf(text, sizeof(text), "[model]\npath = %s\n[spec]\nwindow = 0\n", model);
	ck_assert_int_eq(tu_write_file(ini, text, strlen(text)), 0);
	snprintf(want, sizeof(want), "%s:4: bad value '0' for spec.window", ini);
	expect_create_error(argv, 5, want);

	snprintf(text, sizeof(text), "[model]\npath = %s\n\n[prompt]\npaths = path-window, "
		 "path-bached\n", model);
	ck_assert_int_eq(tu_write_file(ini, text, strlen(text)), 0);
	snprintf(want, sizeof(want), "%s:5: unknown prompt path 'path-bached' in [prompt] paths",
		 ini);
	expect_create_error(argv, 5, want);
	{
		const char *a[] = { "strata", "-c", ini, "--plugin-dir", STRATA_PLUGIN_DIR,
				    "--paths", "path-window,io-pread" };

		expect_create_error(a, 7, "--paths: 'io-pread' in [prompt] paths is not a prompt "
				    "path");
	}
	setenv("STRATA_PROMPT_PATHS", "nope", 1);
	expect_create_error(argv, 5, "STRATA_PROMPT_PATHS: unknown prompt path 'nope'");
	unsetenv("STRATA_PROMPT_PATHS");
	tu_rmtree(dir);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("window");
	TCase *unit = tcase_create("plugin"), *id = tcase_create("identity"),
	      *ck = tcase_create("checkpoints");
	SRunner *sr;
	int rc;

	tcase_add_test(unit, window_plugin);
	tcase_add_test(unit, window_plugin_off);
	tcase_add_test(unit, bad_input);
	suite_add_tcase(su, unit);
	tcase_set_timeout(id, 600);
	tcase_add_loop_test(id, identity, 0, N_ID_MODELS);
	suite_add_tcase(su, id);
	tcase_set_timeout(ck, 600);
	tcase_add_loop_test(ck, checkpoints, 0, 2);
	tcase_add_test(ck, checkpoint_lru);
	suite_add_tcase(su, ck);
	sr = srunner_create(su);
	/* One process: the identity count below is read after the run. */
	srunner_set_fork_status(sr, CK_NOFORK);
	rc = tu_srunner_run(sr);
	if (rc)
		return rc;
	if (!g_ran) {
		printf("SKIP: no golden model in ../shared/models: the identity tests did not run\n");
		return STRATA_TEST_SKIP;
	}
	return 0;
}
