/*
 * check_mtp.c - the model's MTP (nextn) block as decode's drafter
 * (core/engine/mtp.c), on the golden models that have one: qwen4exp
 * (syn-qwen4exp-mtp-f32), qwen3next and glm4moe (an attention model: its
 * windows are cut, not restored).
 *
 *  - the block's rows follow the engine's passes: whatever way the tokens
 *    came in (prompt chunks of any size, one-token steps, verify windows
 *    kept whole or cut at any offset), the first draft's logits at each
 *    position equal the block's row there: qwen4exp's
 *    golden/syn-qwen4exp-mtp-f32.PROMPT.mtp.slog, the others' all rows in
 *    one call after the trunk read the golden tokens at once;
 *  - the block itself against llama.cpp's (qwen3next, glm4moe): the rows
 *    tools/peer/mtpcmp.sh wrote with peer-mtp, when they are there;
 *  - greedy output with the MTP drafter and windows of 2, 4 and 8 equals
 *    one-token decoding token for token, the drafts verified and rejected;
 *  - [spec] min_p ends the chain: at 1 nothing is drafted;
 *  - bad input: drafter = mtp on a model without a nextn block, or with
 *    streamed experts, is refused; auto falls back to lookup there; a nextn
 *    block missing a tensor is one error naming the file and the tensor.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "slog.h"
#include "testutil.h"

#define MTP_MODEL "models/syn-qwen4exp-mtp-f32.gguf"

/* The golden models with a nextn block; the first has golden block rows. */
static const char *const g_models[] = { "syn-qwen4exp-mtp-f32", "syn-qwen3next-f32",
					"syn-glm4moe-f32" };
static const char *const g_prompts[] = { "once", "story", "mixed" };

/* An engine from args (after the program name), or its error code. */
static int engine_rc(const char *const *args, int n, struct strata_engine **e)
{
	const char *argv[32] = { "strata", "--plugin-dir", STRATA_PLUGIN_DIR, "-t", "1",
				 "--temp", "0", "--ctx-size", "512", "--no-spec-adapt" };
	int argc = 10;

	for (int i = 0; i < n; i++)
		argv[argc++] = args[i];
	return strata_engine_create_args(argc, (char **)argv, e);
}

static struct strata_engine *engine(const char *model, const char *window, const char *drafter)
{
	const char *args[] = { "-m", model, "--spec-window", window, "--spec-drafter", drafter };
	struct strata_engine *e = NULL;

	ck_assert_int_eq(engine_rc(args, 6, &e), 0);
	return e;
}

static int keep_all(void *user, int32_t t)
{
	(void)user, (void)t;
	return 0;
}

/* The first draft after tok: its logits against the golden row of the position before tok. */
static double first_draft_diff(struct strata_engine *e, int32_t tok, const struct slog *mg)
{
	const uint32_t pos = strata_seq_pos(e->seq), nv = mg->n_vocab;
	int32_t d;

	ck_assert_uint_lt(pos - 1, mg->n_prompt + mg->n_gen);
	ck_assert_int_eq(strata_mtp_draft(e, tok, &d, 1), 1);
	return tu_max_abs_diff(e->mtp_logits, mg->logits + (size_t)(pos - 1) * nv, nv);
}

/* The model's file (a copy: the helper's buffer is reused). */
static char *model_path(const char *name)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "models/%s.gguf", name);
	return strdup(tu_shared_or_skip(rel));
}

/*
 * The block's rows on the golden tokens of model.prompt, all in one call
 * after the trunk read them at once (an engine without a drafter, so that
 * nothing ran the block before): into mg, in the .mtp.slog layout.
 */
static void block_rows(const char *name, const struct slog *g, struct slog *mg)
{
	char *model = model_path(name);
	struct strata_engine *e = engine(model, "1", "none");
	const uint32_t n = g->n_prompt + g->n_gen;

	memset(mg, 0, sizeof(*mg));
	mg->n_prompt = n - 1;
	mg->n_vocab = g->n_vocab;
	mg->buf = malloc((size_t)(n - 1) * (4 + 4 * (size_t)g->n_vocab));
	ck_assert_ptr_nonnull(mg->buf);
	mg->tokens = mg->buf;
	mg->logits = (float *)(mg->tokens + n - 1);
	memcpy(mg->tokens, g->tokens + 1, (size_t)(n - 1) * sizeof(int32_t));
	ck_assert_int_eq(strata_engine_feed(e, g->tokens, n, NULL), 0);
	ck_assert_int_eq(strata_mtp(e->seq, g->tokens + 1, NULL, n - 1, 0, n - 1, mg->logits), 0);
	strata_engine_free(e);
	free(model);
}

static void read_slog(const char *name, const char *prompt, const char *kind, struct slog *s)
{
	char rel[160];

	snprintf(rel, sizeof(rel), "golden/%s.%s.%sslog", name, prompt, kind);
	ck_assert_int_eq(slog_read(tu_shared_or_skip(rel), s), 0);
}

/*
 * Steps cycle through: a one-token pass (the pending row runs before it), a
 * window of k golden drafts kept whole, and a window wrong at offset o; each
 * draft's first row is compared with the reference one.
 */
static void follow(const char *name, const char *prompt, uint32_t chunk)
{
	char *model = model_path(name);
	struct strata_engine *e = engine(model, "8", "mtp");
	struct slog g, mg;
	uint32_t n, rows, pos, step = chunk % 3; /* the two chunkings see other cycles */
	double worst = 0;

	read_slog(name, prompt, "", &g);
	if (strcmp(name, g_models[0]) == 0)
		read_slog(name, prompt, "mtp.", &mg);
	else
		block_rows(name, &g, &mg);
	ck_assert_int_eq(e->drafter, STRATA_DRAFT_MTP);
	n = g.n_prompt + g.n_gen;
	rows = mg.n_prompt + mg.n_gen;
	for (pos = 0; pos < g.n_prompt; pos += chunk)
		ck_assert_int_eq(strata_engine_feed(e, g.tokens + pos, g.n_prompt - pos < chunk ?
						    g.n_prompt - pos : chunk, NULL), 0);
	pos = g.n_prompt;
	while (pos + 1 < n && pos < rows) {
		struct strata_spec_run sr = { .smp = e->sampler };
		const struct strata_spec_hooks hooks = { NULL, keep_all, NULL };
		const uint32_t k = 1 + step % 7 < n - pos - 1 ? 1 + step % 7 : n - pos - 1;
		const uint32_t o = step % 5;
		int32_t tok = g.tokens[pos], d[8];
		double dl;

		if (step % 3 == 0) { /* one-token: no draft, the row runs before the pass */
			ck_assert_int_eq(strata_engine_feed(e, &tok, 1, NULL), 0);
			pos++, step++;
			continue;
		}
		dl = first_draft_diff(e, tok, &mg);
		worst = dl > worst ? dl : worst;
		ck_assert_msg(dl <= 1e-3, "%s.%s chunk %u: position %u: first draft differs by %g",
			      name, prompt, chunk, pos, dl);
		for (uint32_t i = 0; i < k; i++)
			d[i] = g.tokens[pos + 1 + i];
		if (step % 3 == 2 && o < k) /* wrong at offset o */
			d[o] = (d[o] + 1) % (int32_t)g.n_vocab;
		if (strata_seq_recurrent(e->seq)) /* else the window is cut */
			ck_assert_int_eq(strata_seq_snapshot_create(e->seq, &sr.snap), 0);
		ck_assert_int_eq(strata_spec_window(e, &sr, tok, d, k, &hooks), 0);
		strata_seq_snapshot_free(sr.snap);
		pos += 1 + sr.accepted;
		ck_assert_uint_eq(strata_seq_pos(e->seq), pos);
		if (sr.has_next) /* the model's own token is the golden one */
			ck_assert_int_eq(sr.next, g.tokens[pos]);
		step++;
	}
	printf("%s.%s, prompt in chunks of %u: %u steps to position %u, first drafts within "
	       "%.2e\n", name, prompt, chunk, step, pos, worst);
	ck_assert_uint_ge(step, 8);
	slog_free(&g);
	slog_free(&mg);
	strata_engine_free(e);
	free(model);
}

START_TEST(rows_follow_the_passes)
{
	follow(g_models[_i / 3], g_prompts[_i % 3], 512);
	follow(g_models[_i / 3], g_prompts[_i % 3], 3);
}
END_TEST

/*
 * The block against llama.cpp's graph on the same inputs: rows that
 * tools/peer/mtpcmp.sh wrote with peer-mtp into build/peer/mtp (or
 * $STRATA_PEER_MTP_DIR).  Skipped where they are not.
 */
START_TEST(peer_rows)
{
	const char *dir = getenv("STRATA_PEER_MTP_DIR");
	const char *name = g_models[1 + _i / 3], *prompt = g_prompts[_i % 3];
	char path[512];
	struct slog g, peer, mine;
	FILE *f;
	double d;

	snprintf(path, sizeof(path), "%s/%s.%s.mtp.slog", dir && *dir ? dir : STRATA_BUILD "/peer/mtp",
		 name, prompt);
	if (!(f = fopen(path, "rb")))
		TU_SKIP("%s is absent: tools/peer/mtpcmp.sh writes it with llama.cpp", path);
	fclose(f);
	ck_assert_int_eq(slog_read(path, &peer), 0);
	read_slog(name, prompt, "", &g);
	block_rows(name, &g, &mine);
	ck_assert_uint_eq(peer.n_prompt + peer.n_gen, mine.n_prompt);
	ck_assert_uint_eq(peer.n_vocab, mine.n_vocab);
	ck_assert_mem_eq(peer.tokens, mine.tokens, mine.n_prompt * sizeof(int32_t));
	d = tu_max_abs_diff(peer.logits, mine.logits, (size_t)mine.n_prompt * mine.n_vocab);
	printf("%s.%s: the MTP block's %u rows against llama.cpp's: max |diff| %.2e\n", name,
	       prompt, mine.n_prompt, d);
	ck_assert_msg(d <= 1e-3, "%s.%s: %g", name, prompt, d);
	slog_free(&g);
	slog_free(&peer);
	slog_free(&mine);
}
END_TEST

struct ids {
	int32_t id[256];
	uint32_t n;
};

static int collect(void *user, int32_t id, const char *piece, size_t len)
{
	struct ids *v = user;

	(void)piece, (void)len;
	if (v->n < 256)
		v->id[v->n++] = id;
	return 0;
}

static void run(struct strata_engine *e, const char *text, int n_predict, struct ids *out,
		struct strata_stats *st)
{
	struct strata_gen_params gp;
	int32_t *p = NULL;
	int n = strata_engine_tokenize(e, text, strlen(text), STRATA_TOKENIZE_ADD_BOS, &p);

	ck_assert_int_gt(n, 0);
	strata_engine_gen_defaults(e, &gp);
	gp.n_predict = n_predict, gp.temp = 0.0f;
	out->n = 0;
	ck_assert_int_ge(strata_generate_ex(e, p, (uint32_t)n, &gp, collect, out, st), 0);
	free(p);
}

static const char g_text[] = "Lily and Tom went to the park. They"; /* 200 tokens before an end */

START_TEST(greedy_identical)
{
	char *model = model_path(g_models[_i]);
	struct strata_engine *one = engine(model, "1", "mtp"), *win;
	struct strata_stats st;
	struct ids ref, got;

	ck_assert_int_eq(one->drafter, STRATA_DRAFT_NONE); /* a window of 1 drafts nothing */
	run(one, g_text, 100, &ref, &st);
	ck_assert_uint_eq(st.n_windows, 0);
	for (int w = 2; w <= 8; w *= 2) {
		char ws[4];

		snprintf(ws, sizeof(ws), "%d", w);
		win = engine(model, ws, "auto");
		ck_assert_int_eq(win->drafter, STRATA_DRAFT_MTP);
		for (int again = 0; again < 2; again++) { /* again: resumed from the sequence */
			run(win, g_text, 100, &got, &st);
			ck_assert_uint_le(st.n_drafted, st.n_windows * (uint32_t)(w - 1));
			ck_assert_msg(st.n_windows > 0 && st.n_drafted >= st.n_windows,
				      "window %d: %u windows, %u drafts", w, st.n_windows,
				      st.n_drafted);
			ck_assert_uint_eq(got.n, ref.n);
			ck_assert_msg(!memcmp(got.id, ref.id, ref.n * sizeof(int32_t)),
				      "window %d: the text differs from one-token decoding", w);
		}
		printf("%s window %d: %u of %u MTP drafts kept in %u windows\n", g_models[_i], w,
		       st.n_accepted, st.n_drafted, st.n_windows);
		strata_engine_free(win);
	}
	{ /* adapt on: drafting stops, the block's rows with it (holes in its keys), then probes */
		const char *args[] = { "-m", model, "--spec-window", "4", "--spec-drafter", "mtp",
				       "--spec-adapt" };

		ck_assert_int_eq(engine_rc(args, 7, &win), 0);
		run(win, g_text, 100, &got, &st);
		ck_assert(got.n == ref.n && !memcmp(got.id, ref.id, ref.n * sizeof(int32_t)));
		/* how often it drafts follows measured times: a figure for benchmarks, not here */
		printf("%s adapt: %u drafts in %u windows\n", g_models[_i], st.n_drafted,
		       st.n_windows);
		strata_engine_free(win);
	}
	strata_engine_free(one);
	free(model);
}
END_TEST

/* min_p: no draft of a random head reaches probability 1; at 0 every window drafts. */
START_TEST(min_p_ends_the_chain)
{
	const char *model = tu_shared_or_skip(MTP_MODEL);
	const char *args[] = { "-m", model, "--spec-window", "4", "--spec-drafter", "mtp",
			       "--spec-min-p", "1" };
	struct strata_engine *e = NULL;
	struct strata_stats st;
	struct ids got;

	ck_assert_int_eq(engine_rc(args, 8, &e), 0);
	run(e, g_text, 40, &got, &st);
	ck_assert_uint_eq(st.n_drafted, 0);
	strata_engine_free(e);
	args[7] = "0";
	ck_assert_int_eq(engine_rc(args, 8, &e), 0);
	run(e, g_text, 40, &got, &st);
	ck_assert_uint_gt(st.n_windows, 3);
	ck_assert_uint_gt(st.n_drafted, 2 * st.n_windows); /* 3 each, but near the budget's end */
	strata_engine_free(e);
}
END_TEST

START_TEST(refusals)
{
	char *stories = strdup(tu_shared_or_skip("models/stories260K.gguf"));
	char *mtp = strdup(tu_shared_or_skip(MTP_MODEL)); /* the helper's buffer is reused */
	const char *no_block[] = { "-m", stories, "--spec-drafter", "mtp" };
	const char *streamed[] = { "-m", mtp, "--spec-drafter", "mtp", "--experts", "stream" };
	const char *min_p[] = { "-m", mtp, "--spec-drafter", "mtp", "--spec-min-p", "1.5" };
	struct strata_engine *e = NULL;

	ck_assert_int_eq(engine_rc(no_block, 4, &e), -EINVAL);
	ck_assert_ptr_null(e);
	ck_assert_msg(strstr(strata_last_error(), "--spec-drafter: [spec] drafter = mtp") &&
		      strstr(strata_last_error(), "has no MTP (nextn) block"), "%s",
		      strata_last_error());
	ck_assert_int_eq(engine_rc(streamed, 6, &e), -EINVAL);
	ck_assert_msg(strstr(strata_last_error(), "streamed experts"), "%s", strata_last_error());
	ck_assert_int_lt(engine_rc(min_p, 6, &e), 0);
	ck_assert_msg(strstr(strata_last_error(), "--spec-min-p"), "%s", strata_last_error());
	e = engine(stories, "4", "auto"); /* logged: lookup instead */
	ck_assert_int_eq(e->drafter, STRATA_DRAFT_LOOKUP);
	ck_assert_ptr_null(e->mtp_logits);
	strata_engine_free(e);
	streamed[3] = "auto";
	ck_assert_int_eq(engine_rc(streamed, 6, &e), 0);
	ck_assert_int_eq(e->drafter, STRATA_DRAFT_LOOKUP);
	strata_engine_free(e);
	free(stories);
	free(mtp);
}
END_TEST

/* Copy a shared model to dst without the tensor `drop`. */
static void copy_without(const char *name, const char *dst, const char *drop)
{
	char *src = model_path(name);
	struct strata_gguf *g;
	struct strata_gguf_writer *w;

	ck_assert_int_eq(strata_gguf_open(src, &g), 0);
	ck_assert_int_eq(strata_gguf_writer_open(dst, &w), 0);
	for (int64_t i = 0; i < strata_gguf_n_kv(g); i++)
		ck_assert_int_eq(strata_gguf_writer_copy_kv(w, g, i), 0);
	for (int pass = 0; pass < 2; pass++)
		for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++) {
			const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
			char tn[96];

			snprintf(tn, sizeof(tn), "%.*s", (int)t->name.len, t->name.s);
			if (strcmp(tn, drop) == 0)
				continue;
			if (pass == 0)
				ck_assert_int_ge(strata_gguf_writer_add_tensor(w, tn, t->type, t->n_dims,
									       t->ne), 0);
			else
				ck_assert_int_eq(strata_gguf_writer_write(w, t->data, t->size), 0);
		}
	ck_assert_int_eq(strata_gguf_writer_commit(w), 0);
	strata_gguf_writer_close(w);
	strata_gguf_close(g);
	free(src);
}

/* A nextn block short of a tensor: the model is refused, once, naming both. */
START_TEST(block_missing_a_tensor)
{
	static const char *const drop[] = { "blk.4.nextn.hnorm.weight", "blk.4.nextn.eh_proj.weight",
					    "blk.3.nextn.enorm.weight" };
	const char *dir = tu_tmpdir();
	char path[512];

	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof(path), "%s/%s-short.gguf", dir, g_models[_i]);
	copy_without(g_models[_i], path, drop[_i]);
	tu_expect_model_refused(path, -EINVAL, drop[_i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mtp");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 600);
	TCase *peer = tcase_create("peer"); /* alone: tools/peer/mtpcmp.sh runs it by name */

	tcase_add_loop_test(tc, rows_follow_the_passes, 0, 9);
	tcase_add_loop_test(tc, greedy_identical, 0, 3);
	tcase_add_test(tc, min_p_ends_the_chain);
	tcase_add_test(tc, refusals);
	tcase_add_loop_test(tc, block_missing_a_tensor, 0, 3);
	suite_add_tcase(s, tc);
	tcase_set_timeout(peer, 600);
	tcase_add_loop_test(peer, peer_rows, 0, 6);
	suite_add_tcase(s, peer);
	return tu_srunner_run(srunner_create(s));
}
