#define _GNU_SOURCE /* asprintf, strcasestr */
/*
 * check_xstore.c - streamed experts ([model] experts = stream), and the
 * engine and server on a failing disk.
 *
 * The store must compute exactly what the mapping computes: logits of the
 * golden MoE models (qwen3moe f32 and Q4_K_M, glm4moe, qwen3next) are
 * compared bit for bit between a mapped and a streamed sequence, through
 * each shipped io plugin, with a cache of all experts and with the smallest
 * one (one layer's: every fetch evicts).  Then io-faulty (build/plugins/test)
 * breaks the reads: every request either answers exactly what a clean engine
 * answers or fails with one error naming the file, tensor and offset, and
 * the engine (and the HTTP server over it) goes on serving; a disk that stops
 * answering fails the request after [io] timeout_ms instead of hanging it.
 * fetch_start() returns while its reads are held back (a gated in-test io
 * backend), so the layer loop can compute before fetch_wait().
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "cpu/pool.h"
#include "httpc.h"
#include "model/model.h"
#include "model/xstore.h"
#include "plugin/registry.h"
#include "serve/serve.h"
#include "strata.h"
#include "testutil.h"

#define FDIR STRATA_PLUGIN_DIR "/test" /* io-faulty */

static const char *const g_models[] = {
	"syn-qwen3moe-d256-f32", "syn-qwen3moe-d256-q4_k_m", "syn-glm4moe-f32",
	"syn-qwen3next-f32",
};
static const char *const g_ios[] = { "io-pread", "io-uring", "io-direct" };

static char g_dir[4096];

static void setup(void)
{
	const char *d = tu_tmpdir();

	ck_assert_ptr_nonnull(d);
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	setenv("STRATA_PLUGIN_PATH", STRATA_PLUGIN_DIR, 1); /* io-faulty's inner io-pread */
}

static void teardown(void)
{
	tu_rmtree(g_dir);
}

static const char *model_path(const char *name)
{
	static char rel[256];

	snprintf(rel, sizeof(rel), "models/%s.gguf", name);
	return tu_shared_or_skip(rel);
}

/* ---- the store computes what the mapping computes ------------------------------- */

/* A deterministic token list: spread over the vocabulary. */
static void tokens(int32_t *t, uint32_t n, uint32_t n_vocab)
{
	for (uint32_t i = 0; i < n; i++)
		t[i] = (int32_t)((i * 7919u + 13u) % n_vocab);
}

/*
 * Feed the same tokens to a mapped and a streamed sequence (chunks of 9,
 * then one at a time: prefill and decode shapes) and compare all logits.
 */
static void compare_run(struct strata_model *m, struct strata_xstore *xs, struct strata_pool *pool,
			const char *what)
{
	const uint32_t nv = m->hp.n_vocab, n = 40;
	struct strata_seq *a, *b;
	float *la = malloc((size_t)9 * nv * sizeof(float)), *lb = malloc((size_t)9 * nv * sizeof(float));
	int32_t t[40];

	ck_assert_ptr_nonnull(la);
	ck_assert_ptr_nonnull(lb);
	tokens(t, n, nv);
	a = tu_seq(m, pool, 64, 16);
	b = tu_seq(m, pool, 64, 16);
	strata_ctx_set_xstore(strata_seq_ctx(b), xs);
	for (uint32_t at = 0; at < n;) {
		uint32_t k = at < 27 ? 9 : 1;

		ck_assert_int_eq(strata_forward(a, t + at, k, la, 1), 0);
		ck_assert_int_eq(strata_forward(b, t + at, k, lb, 1), 0);
		ck_assert_msg(memcmp(la, lb, (size_t)k * nv * sizeof(float)) == 0,
			      "%s: logits differ at positions %u..%u", what, at, at + k - 1);
		at += k;
	}
	tu_seq_free(a);
	tu_seq_free(b);
	free(la);
	free(lb);
}

/* The store's smallest cache: one layer's experts (probed from the refusal). */
static uint64_t min_cache(struct strata_model *m, const char *path,
			  const struct strata_xstore_opts *base)
{
	struct strata_xstore_opts o = *base;
	struct strata_xstore *xs;
	uint64_t lo = 1, hi = 1u << 30;

	while (lo < hi) { /* the least cache_bytes that opens */
		uint64_t mid = lo + (hi - lo) / 2;

		o.cache_bytes = mid;
		tu_log_capture();
		if (strata_xstore_open(m, path, &o, &xs) == 0) {
			strata_xstore_close(xs);
			hi = mid;
		} else {
			lo = mid + 1;
		}
		tu_log_release();
	}
	return lo;
}

START_TEST(same_logits)
{
	const char *name = g_models[_i], *path = model_path(name);
	struct strata_config c;
	struct strata_registry *reg;
	struct strata_model *m;
	struct strata_pool *pool;

	ck_assert_int_eq(strata_model_load_ex(path, STRATA_MODEL_STREAM_EXPERTS, &m), 0);
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(strata_registry_create(&c, NULL, &reg), 0);
	for (size_t i = 0; i < sizeof(g_ios) / sizeof(g_ios[0]); i++) {
		struct strata_plugin *p;
		struct strata_xstore_opts o = { .depth = 4, .timeout_ms = 10000, .direct = 1 };
		struct strata_xstore_stats st;
		struct strata_xstore *xs;
		uint64_t small;
		char what[256];

		tu_log_capture();
		if (strata_registry_load(reg, STRATA_PLUGIN_IO, g_ios[i], &p)) {
			tu_log_release();
			printf("%s: %s does not load here (%s): skipped\n", name, g_ios[i], tu_log);
			continue;
		}
		tu_log_release();
		o.ops = p->desc->ops;
		o.host = &p->host;
		o.io_name = p->desc->name;
		small = min_cache(m, path, &o);
		for (int pass = 0; pass < 2; pass++) {
			o.cache_bytes = pass ? small : 1u << 30;
			ck_assert_int_eq(strata_xstore_open(m, path, &o, &xs), 0);
			snprintf(what, sizeof(what), "%s through %s, %s cache", name, g_ios[i],
				 pass ? "one-layer" : "whole");
			compare_run(m, xs, pool, what);
			strata_xstore_stats(xs, &st);
			ck_assert_uint_eq(st.failures, 0);
			ck_assert_uint_gt(st.reads, 0);
			if (pass) { /* every layer evicts the one before: it reads again */
				ck_assert_uint_eq(st.slots, m->hp.n_expert);
				ck_assert_uint_gt(st.misses, st.slots);
			} else {
				ck_assert_uint_eq(st.misses, st.slots); /* each expert read once */
			}
			printf("%s: %u slots, %llu hits, %llu misses, %llu reads\n", what, st.slots,
			       (unsigned long long)st.hits, (unsigned long long)st.misses,
			       (unsigned long long)st.reads);
			strata_xstore_close(xs);
		}
		/* One byte less than a layer's experts is refused, with the size it needs. */
		o.cache_bytes = small - 1;
		tu_log_capture();
		ck_assert_int_eq(strata_xstore_open(m, path, &o, &xs), -EINVAL);
		tu_log_release();
		ck_assert_ptr_nonnull(strstr(tu_log, "a layer routes to any of its"));
		ck_assert_ptr_nonnull(strstr(tu_log, path));
	}
	strata_registry_free(reg);
	strata_config_free(&c);
	strata_pool_free(pool);
	strata_model_free(m);
}
END_TEST

/* ---- fetch_start / fetch_wait -------------------------------------------------------- */

/*
 * An in-test io backend: pread() in reap(), but only once the gate is open
 * (reap honours its timeout meanwhile, like a disk that is slow to answer).
 */
static atomic_int g_gate, g_landed;

struct gio {
	int fd;
	uint32_t n;
	struct strata_io_req *q[64];
};

static int gio_open(const struct strata_host *host, const char *path, uint32_t flags,
		    uint32_t depth, void **out)
{
	struct gio *g = calloc(1, sizeof(*g));

	(void)host;
	(void)flags;
	(void)depth;
	if (!g)
		return -ENOMEM;
	if ((g->fd = open(path, O_RDONLY)) < 0) {
		free(g);
		return -errno;
	}
	*out = g;
	return 0;
}

static void gio_close(void *h)
{
	struct gio *g = h;

	close(g->fd);
	free(g);
}

static int gio_caps(void *h, struct strata_io_caps *c)
{
	(void)h;
	*c = (struct strata_io_caps){ STRATA_IO_CAP_ASYNC, 64, 1, 1 };
	return 0;
}

static int64_t gio_size(void *h)
{
	struct stat sb;

	return fstat(((struct gio *)h)->fd, &sb) ? -errno : (int64_t)sb.st_size;
}

static int gio_submit(void *h, struct strata_io_req *const *reqs, uint32_t n)
{
	struct gio *g = h;
	uint32_t k = 0;

	while (k < n && g->n < 64)
		g->q[g->n++] = reqs[k++];
	return (int)k;
}

static int gio_reap(void *h, struct strata_io_req **done, uint32_t min_done, uint32_t max_done,
		    int timeout_ms)
{
	struct gio *g = h;
	uint32_t k = 0;

	(void)min_done;
	for (int waited = 0; !atomic_load(&g_gate); waited++) {
		if (timeout_ms >= 0 && waited >= timeout_ms)
			return 0;
		usleep(1000);
	}
	while (g->n && k < max_done) {
		struct strata_io_req *r = g->q[--g->n];
		ssize_t got = pread(g->fd, r->buf, r->len, (off_t)r->offset);

		r->result = got < 0 ? -errno : (int32_t)got;
		done[k++] = r;
		atomic_fetch_add(&g_landed, 1);
	}
	return (int)k;
}

static const struct strata_io_ops g_gio = {
	1, gio_open, gio_close, gio_caps, gio_size, gio_submit, gio_reap, NULL,
};

static void gio_log(const struct strata_host *h, int level, const char *fmt, ...)
{
	(void)h;
	(void)level;
	(void)fmt;
}

static const struct strata_host g_gio_host = { .version = 1, .log = gio_log };

/* mats[0..3n) hold the bytes of experts ids[] of layer l as the file has them. */
static void check_mats(const struct strata_model *m, const char *path, uint32_t l,
		       const uint32_t *ids, uint32_t n, const struct strata_mat *mats)
{
	const struct strata_layer *L = &m->layers[l];
	const struct strata_experts *part[3] = { &L->gate_exps, &L->up_exps, &L->down_exps };
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	for (uint32_t i = 0; i < n; i++)
		for (int p = 0; p < 3; p++) {
			size_t len = part[p]->stride;
			uint8_t *want = malloc(len);

			ck_assert_ptr_nonnull(want);
			ck_assert_int_eq(pread(fd, want, len, (off_t)(part[p]->file_off +
								       (uint64_t)ids[i] * len)),
					 (ssize_t)len);
			ck_assert_int_eq(mats[3 * i + p].rows, part[p]->m.rows);
			ck_assert_msg(!memcmp(mats[3 * i + p].data, want, len),
				      "expert %u part %d differs from the file", ids[i], p);
			free(want);
		}
	close(fd);
}

START_TEST(fetch_start_wait)
{
	const char *path = model_path("syn-qwen3moe-d256-f32");
	struct strata_xstore_opts o = { .ops = &g_gio, .host = &g_gio_host, .io_name = "gated-io",
					.depth = 8, .timeout_ms = 10000 };
	static const uint32_t ids[3] = { 5, 0, 3 }, bad[1] = { 9999 };
	struct strata_mat mats[9], other[9];
	struct strata_xstore_stats st;
	struct strata_xstore *xs;
	struct strata_model *m;
	uint32_t l = 0;
	double t0;
	void *base;
	size_t size;

	ck_assert_int_eq(strata_model_load_ex(path, STRATA_MODEL_STREAM_EXPERTS, &m), 0);
	while (!m->layers[l].moe)
		l++;
	atomic_store(&g_gate, 0);
	atomic_store(&g_landed, 0);
	ck_assert_int_eq(strata_xstore_open(m, path, &o, &xs), 0);
	strata_xstore_memory(xs, &base, &size);
	ck_assert_uint_eq((uintptr_t)base % 4096, 0);
	ck_assert_uint_ge(size, 16 * 3 * m->layers[l].up_exps.stride);
	/* Nothing started: nothing to wait for; bad arguments are refused at once. */
	ck_assert_int_eq(strata_xstore_fetch_wait(xs), -EINVAL);
	ck_assert_int_eq(strata_xstore_fetch_start(xs, l, bad, 1, mats), -EINVAL);
	ck_assert_int_eq(strata_xstore_fetch_start(xs, m->hp.n_layer, ids, 1, mats), -EINVAL);
	/* The reads are held back: start returns, and the caller runs before they land. */
	t0 = now_ms();
	ck_assert_int_eq(strata_xstore_fetch_start(xs, l, ids, 3, mats), 0);
	ck_assert_msg(now_ms() - t0 < 2000, "fetch_start blocked %.0f ms", now_ms() - t0);
	ck_assert_int_eq(strata_xstore_fetch_start(xs, l, ids, 3, other), -EBUSY);
	usleep(30000); /* "compute" */
	ck_assert_int_eq(atomic_load(&g_landed), 0);
	for (int p = 0; p < 9; p++)
		ck_assert_uint_eq((uintptr_t)mats[p].data - (uintptr_t)base < size, 1);
	atomic_store(&g_gate, 1);
	ck_assert_int_eq(strata_xstore_fetch_wait(xs), 0);
	ck_assert_int_gt(atomic_load(&g_landed), 0);
	check_mats(m, path, l, ids, 3, mats);
	ck_assert_int_eq(strata_xstore_fetch_wait(xs), -EINVAL);
	/* Resident now: a start with nothing to read is done at once, with the same bytes. */
	atomic_store(&g_landed, 0);
	ck_assert_int_eq(strata_xstore_fetch_start(xs, l, ids, 3, other), 0);
	ck_assert_int_eq(strata_xstore_fetch_wait(xs), 0);
	ck_assert_int_eq(atomic_load(&g_landed), 0);
	ck_assert_mem_eq(other, mats, sizeof(mats));
	strata_xstore_stats(xs, &st);
	ck_assert_uint_eq(st.hits, 3);
	ck_assert_uint_eq(st.misses, 3);
	ck_assert_uint_eq(st.failures, 0);
	strata_xstore_close(xs);

	/* A disk that never answers: wait fails with one error naming the expert, after the timeout. */
	atomic_store(&g_gate, 0);
	o.timeout_ms = 150;
	ck_assert_int_eq(strata_xstore_open(m, path, &o, &xs), 0);
	ck_assert_int_eq(strata_xstore_fetch_start(xs, l, ids + 2, 1, mats), 0);
	tu_log_capture();
	ck_assert_int_eq(strata_xstore_fetch_wait(xs), -ETIMEDOUT);
	tu_log_release();
	ck_assert_int_eq(tu_log_lines, 1);
	ck_assert_msg(strstr(tu_log, path) && strstr(tu_log, "expert 3 of layer ") &&
		      strstr(tu_log, "_exps.weight), ") && strstr(tu_log, "stopped answering"),
		      "%s", tu_log);
	/* Then it answers again: the same fetch reads on a fresh handle. */
	atomic_store(&g_gate, 1);
	ck_assert_int_eq(strata_xstore_fetch(xs, l, ids + 2, 1, mats), 0);
	check_mats(m, path, l, ids + 2, 1, mats);
	/* Closing with a fetch started and not waited for waits for it. */
	ck_assert_int_eq(strata_xstore_fetch_start(xs, l, ids, 2, mats), 0);
	strata_xstore_close(xs);
	strata_model_free(m);
}
END_TEST

/* ---- an engine on a failing disk ------------------------------------------------------ */

/* An engine from an INI file holding `ini` (after [plugins] dir = FDIR). */
static struct strata_engine *engine_with(const char *ini)
{
	char path[4200], *text;
	const char *argv[] = { "strata", "-c", path, "-t", "2" };
	struct strata_engine *e;

	snprintf(path, sizeof(path), "%s/strata.ini", g_dir);
	ck_assert_int_ge(asprintf(&text, "[plugins]\ndir = %s\n%s", FDIR, ini), 0);
	ck_assert_int_eq(tu_write_file(path, text, strlen(text)), 0);
	free(text);
	ck_assert_int_eq(strata_engine_create_args(5, (char **)argv, &e), 0);
	return e;
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

static int generate_ids(struct strata_engine *e, const int32_t *ids, int n, struct answer *a)
{
	a->n = 0;
	return strata_generate(e, ids, (uint32_t)n, 12, collect, a, NULL);
}

static int generate(struct strata_engine *e, const char *prompt, struct answer *a)
{
	int32_t *ids;
	int n = strata_engine_tokenize(e, prompt, strlen(prompt), STRATA_TOKENIZE_ADD_BOS, &ids);
	int rc;

	ck_assert_int_gt(n, 0);
	rc = generate_ids(e, ids, n, a);
	free(ids);
	return rc;
}

static const char *const g_prompts[] = {
	"Once upon a time, there was a little girl named Lily.",
	"Once upon a time, there was a big dog.",
	"The sun was bright and the park was full of children playing.",
};

/*
 * Faulty reads under a model whose cache holds one layer (so every request
 * reads): each answer is the clean engine's or a clear error, and requests
 * after a failure are answered.  After a failure part-way through the
 * answer, the next request continues it (the prompt plus the tokens that
 * came): it resumes from the engine's sequence, which for qwen3next holds a
 * recurrent state the failed forward pass had half updated.
 */
START_TEST(engine_keeps_serving)
{
	static const struct { const char *model, *cache; } cases[] = {
		{ "syn-qwen3moe-d256-f32", "7" }, { "syn-qwen3next-f32", "1" },
	};
	const char *path = model_path(cases[_i].model);
	struct answer want, got;
	struct strata_engine *clean, *e;
	int32_t *ids = NULL, prompt[256];
	int n_prompt = 0, failed = 0, served_after = 0, continued = 0, cont = 0;
	char *ini;

	ck_assert_int_ge(asprintf(&ini, "[model]\npath = %s\n[run]\ntemp = 0\n", path), 0);
	clean = engine_with(ini);
	free(ini);
	ck_assert_int_ge(asprintf(&ini, "[model]\npath = %s\nexperts = stream\nexpert_cache = %s\n"
				  "[run]\ntemp = 0\n[io]\nplugin = io-faulty\n"
				  "[io-faulty]\nseed = 5\neio_rate = 0.15\nshort_rate = 0.1\n",
				  path, cases[_i].cache), 0);
	e = engine_with(ini);
	free(ini);
	for (int r = 0; r < 24; r++) {
		int rc;

		if (!cont) { /* a fresh prompt */
			const char *text = g_prompts[r % 3];

			n_prompt = strata_engine_tokenize(e, text, strlen(text),
							  STRATA_TOKENIZE_ADD_BOS, &ids);
			ck_assert_int_gt(n_prompt, 0);
			memcpy(prompt, ids, sizeof(int32_t) * n_prompt);
			free(ids);
		}
		tu_log_capture();
		rc = generate_ids(e, prompt, n_prompt, &got);
		tu_log_release();
		if (rc < 0) {
			ck_assert_int_eq(rc, -EIO);
			ck_assert_ptr_nonnull(strstr(strata_last_error(), "reading expert"));
			ck_assert_ptr_nonnull(strstr(strata_last_error(), path));
			ck_assert_ptr_nonnull(strstr(strata_last_error(), "_exps.weight"));
			ck_assert_ptr_nonnull(strstr(strata_last_error(), "at offset"));
			ck_assert_int_eq(tu_log_lines, 1); /* one error, where it is handled */
			failed++;
			/* Tokens came before it failed: continue the answer next. */
			cont = got.n > 0 && n_prompt + got.n + 12 < 256;
			if (cont) {
				memcpy(prompt + n_prompt, got.ids, sizeof(int32_t) * got.n);
				n_prompt += got.n;
			}
			continue;
		}
		ck_assert_int_eq(rc, 12);
		ck_assert_int_eq(generate_ids(clean, prompt, n_prompt, &want), 12);
		ck_assert_msg(memcmp(got.ids, want.ids, sizeof(int32_t) * 12) == 0,
			      "request %d (%d prompt tokens%s) answered differently from the clean "
			      "engine", r, n_prompt, cont ? ", continuing a failed answer" : "");
		served_after += failed > 0;
		continued += cont;
		cont = 0;
	}
	printf("%s: 24 requests on a failing disk: %d failed with the read's error, %d answered "
	       "exactly after a failure, %d of them continuing a failed answer\n",
	       cases[_i].model, failed, served_after, continued);
	ck_assert_int_gt(failed, 0);
	ck_assert_int_gt(served_after, 0);
	ck_assert_int_gt(continued, 0);
	strata_engine_free(e);
	strata_engine_free(clean);
}
END_TEST

/* A disk that stops answering fails the request after timeout_ms, every time, and closes. */
START_TEST(stalled_disk)
{
	const char *path = model_path("syn-qwen3moe-d256-f32");
	struct answer got;
	struct strata_engine *e;
	char *ini;

	ck_assert_int_ge(asprintf(&ini, "[model]\npath = %s\nexperts = stream\n[run]\ntemp = 0\n"
				  "[io]\nplugin = io-faulty\ntimeout_ms = 200\n"
				  "[io-faulty]\nstall_rate = 1\nstall_ms = 3600000\n", path), 0);
	e = engine_with(ini);
	free(ini);
	for (int r = 0; r < 2; r++) {
		double t0 = now_ms();

		tu_log_capture();
		ck_assert_int_eq(generate(e, g_prompts[0], &got), -ETIMEDOUT);
		tu_log_release();
		ck_assert_ptr_nonnull(strstr(strata_last_error(), "stopped answering"));
		ck_assert_ptr_nonnull(strstr(strata_last_error(), path));
		ck_assert_msg(now_ms() - t0 < 10000, "a stalled read held the request %.0f ms",
			      now_ms() - t0);
	}
	strata_engine_free(e);
}
END_TEST

/* ---- the server over it --------------------------------------------------------------- */

static void post(int port, const char *body, struct resp *r)
{
	http_call(port, "POST", "/v1/completions", "Content-Type: application/json\r\n", body, r);
}

/* The text of a 200 completion, malloc'd. */
static char *completion_text(const struct resp *r)
{
	static const char *const path[] = { "choices", "0", "text" };
	cJSON *j = json_of(r);
	char *t = strdup(str_at(j, at(j, path, 3), "choices[0].text"));

	cJSON_Delete(j);
	return t;
}

/* /metrics counts the failed requests and the failed fetches behind them. */
static void check_metrics(int port, int failed)
{
	struct resp r;
	char want[128];

	http_call(port, "GET", "/metrics", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	snprintf(want, sizeof(want), "\nstrata_requests_failed_total %d\n", failed);
	ck_assert_msg(strstr(r.body.p, want), "no '%s' in\n%s", want + 1, r.body.p);
	snprintf(want, sizeof(want), "\nstrata_expert_fetch_failures_total %d\n", failed);
	ck_assert_msg(strstr(r.body.p, want), "no '%s' in\n%s", want + 1, r.body.p);
	ck_assert_ptr_nonnull(strstr(r.body.p, "\nstrata_expert_cache_slots 9\n"));
	ck_assert_ptr_null(strstr(r.body.p, "\nstrata_expert_misses_total 0\n"));
	resp_free(&r);
}

START_TEST(server_keeps_serving)
{
	static const char body[] = "{\"prompt\":\"Once upon a time, there was a big dog.\","
				   "\"max_tokens\":10,\"temperature\":0}";
	const char *path = model_path("syn-qwen3moe-d256-f32");
	struct strata_engine *e;
	struct strata_server *srv;
	struct resp r;
	char *ini, *ref;
	int failed = 0, served_after = 0;

	ck_assert_int_ge(asprintf(&ini, "[model]\npath = %s\n[serve]\nport = 0\n", path), 0);
	e = engine_with(ini);
	free(ini);
	ck_assert_int_eq(strata_serve_start(e, &srv), 0);
	post(strata_serve_port(srv), body, &r);
	ck_assert_int_eq(r.status, 200);
	ref = completion_text(&r);
	resp_free(&r);
	strata_serve_stop(srv);
	strata_engine_free(e);

	ck_assert_int_ge(asprintf(&ini, "[model]\npath = %s\nexperts = stream\nexpert_cache = 7\n"
				  "[serve]\nport = 0\n[io]\nplugin = io-faulty\n"
				  "[io-faulty]\nseed = 9\neio_rate = 0.2\n", path), 0);
	e = engine_with(ini);
	free(ini);
	ck_assert_int_eq(strata_serve_start(e, &srv), 0);
	tu_log_capture();
	for (int i = 0; i < 16; i++) {
		post(strata_serve_port(srv), body, &r);
		if (r.status == 500) {
			ck_assert_ptr_nonnull(strstr(r.body.p ? r.body.p : "", "reading expert"));
			ck_assert_ptr_nonnull(strstr(r.body.p ? r.body.p : "", "at offset"));
			ck_assert_ptr_nonnull(strstr(r.body.p ? r.body.p : "", "server_error"));
			failed++;
		} else {
			char *t;

			ck_assert_int_eq(r.status, 200);
			t = completion_text(&r);
			ck_assert_str_eq(t, ref);
			free(t);
			served_after += failed > 0;
		}
		resp_free(&r);
	}
	tu_log_release();
	check_metrics(strata_serve_port(srv), failed);
	printf("server on a failing disk: 16 requests, %d answered 500 with the read's error, "
	       "%d answered exactly after one\n", failed, served_after);
	ck_assert_int_gt(failed, 0);
	ck_assert_int_gt(served_after, 0);
	strata_serve_stop(srv);
	strata_engine_free(e);
	free(ref);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xstore");
	TCase *tc = tcase_create("xstore");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, same_logits, 0, sizeof(g_models) / sizeof(g_models[0]));
	tcase_add_test(tc, fetch_start_wait);
	tcase_add_loop_test(tc, engine_keeps_serving, 0, 2);
	tcase_add_test(tc, stalled_disk);
	tcase_add_test(tc, server_keeps_serving);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
