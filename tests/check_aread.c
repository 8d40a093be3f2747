/*
 * check_aread.c - the shared read path (core/io/aread.h) against a scripted
 * io plugin.
 *
 * The fake ops table below serves a file of FILE_PAGES pages whose every
 * byte is a function of its offset, and does to the reads at chosen pages
 * what a failing disk does: EIO the first k times or always, short counts,
 * a stall until the test opens a gate (or for ever), a slow completion; its
 * reap() can fail as a handle, its submit() can refuse or take only a few.
 * It counts what the read path did to it (reads in flight at most, reads
 * never reaped when a handle was closed, opens and closes), so the tests
 * check the policy itself: retries up to STRATA_AREAD_TRIES, short reads
 * never taken for data, a stall ending in -ETIMEDOUT after the timeout on a
 * handle closed and then reopened, a handle failure, the drain after a
 * failure (nothing in flight once run() returns, nothing handed back after
 * the failure), one message naming the file, the offset, the length and
 * the caller's description, the direct-I/O fallback, and the background
 * start()/wait() letting the caller run while a read is stalled.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/aread.h"
#include "testutil.h"
#include "util/log.h"

#define PAGE 4096u
#define FILE_PAGES 256u
#define PATH "/fake/widgets.bin"

/* ---- time and the log ------------------------------------------------------------ */

static double ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_log[8192];
static int g_log_errors, g_log_warns;

static void sink(void *user, int level, const char *line)
{
	size_t n;

	(void)user;
	pthread_mutex_lock(&g_log_mu);
	n = strlen(g_log);
	snprintf(g_log + n, sizeof(g_log) - n, "%c %s\n", "EWID"[level & 3], line);
	g_log_errors += level == STRATA_LOG_LVL_ERROR;
	g_log_warns += level == STRATA_LOG_LVL_WARN;
	pthread_mutex_unlock(&g_log_mu);
}

/* ---- the scripted plugin -------------------------------------------------------------- */

enum { P_OK, P_EIO_ALWAYS, P_SHORT_ALWAYS, P_STALL };

struct page_rule {
	uint8_t kind;
	uint8_t eio_first;   /* the first k reads of the page fail with EIO */
	uint8_t short_first; /* then the next k come back short */
	uint32_t slow_ms;    /* no sooner than this after submit */
};

static struct {
	struct page_rule page[FILE_PAGES];
	uint32_t caps_depth, offset_align, caps_flags;
	int open_err, open_direct_err, reap_fail_at, submit_err_at, submit_zero;
	uint32_t accept_max; /* > 0: submit() takes no more outstanding than this */
	/* what happened */
	int opens, closes, registers, reap_calls, submit_calls;
	uint32_t max_out, unreaped_at_close, reads_of[FILE_PAGES];
	uint64_t seq, fail_seq; /* completions returned; the one that failed a page for good */
} S;

static atomic_int g_gate;         /* 1: stalled reads may land */
static atomic_int g_stall_landed; /* stalled reads that landed */

struct fake {
	uint32_t depth, n;
	struct { struct strata_io_req *r; double t_sub; uint64_t seq; } q[256];
};

static uint8_t byte_at(uint64_t off)
{
	return (uint8_t)(off * 131u + 7u + (off >> 12));
}

static void script_reset(void)
{
	memset(&S, 0, sizeof(S));
	S.offset_align = 1;
	atomic_store(&g_gate, 0);
	atomic_store(&g_stall_landed, 0);
}

static int f_open(const struct strata_host *host, const char *path, uint32_t flags,
		  uint32_t depth, void **out)
{
	struct fake *f;

	(void)host;
	(void)path;
	if (S.open_err)
		return S.open_err;
	if ((flags & STRATA_IO_DIRECT) && S.open_direct_err)
		return S.open_direct_err;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->depth = depth;
	S.opens++;
	*out = f;
	return 0;
}

static void f_close(void *h)
{
	struct fake *f = h;

	S.closes++;
	S.unreaped_at_close += f->n;
	free(f);
}

static int f_caps(void *h, struct strata_io_caps *c)
{
	struct fake *f = h;

	c->flags = STRATA_IO_CAP_ASYNC | S.caps_flags;
	c->depth = S.caps_depth ? S.caps_depth : f->depth;
	c->buf_align = 1;
	c->offset_align = S.offset_align;
	return 0;
}

static int64_t f_size(void *h)
{
	(void)h;
	return (int64_t)FILE_PAGES * PAGE;
}

static int f_submit(void *h, struct strata_io_req *const *reqs, uint32_t n)
{
	struct fake *f = h;
	uint32_t k = 0;

	S.submit_calls++;
	if (S.submit_err_at && S.submit_calls == S.submit_err_at)
		return S.submit_err_at > 0 ? -ENOSPC : 0;
	if (S.submit_zero)
		return 0;
	while (k < n && f->n < 256) {
		if (S.accept_max && f->n >= S.accept_max)
			return k ? (int)k : -EAGAIN;
		f->q[f->n].r = reqs[k];
		f->q[f->n].t_sub = ms_now();
		f->n++;
		k++;
		if (f->n > S.max_out)
			S.max_out = f->n;
	}
	return (int)k;
}

/* Complete r by the script: the bytes, an EIO, or a short count with the rest poisoned. */
static void complete(struct strata_io_req *r)
{
	uint32_t pg = (uint32_t)(r->offset / PAGE);
	const struct page_rule *pr = &S.page[pg];
	uint32_t nth = S.reads_of[pg]++;
	uint8_t *b = r->buf;

	for (uint32_t i = 0; i < r->len; i++)
		b[i] = byte_at(r->offset + i);
	r->result = (int32_t)r->len;
	if (pr->kind == P_EIO_ALWAYS || nth < pr->eio_first) {
		r->result = -EIO;
		memset(b, 0xA5, r->len);
	} else if (pr->kind == P_SHORT_ALWAYS || nth < (uint32_t)pr->eio_first + pr->short_first) {
		r->result = 100;
		memset(b + 100, 0xA5, r->len - 100);
	}
}

static int ready(const struct fake *f, uint32_t i, double now)
{
	const struct page_rule *pr = &S.page[f->q[i].r->offset / PAGE];

	if (pr->kind == P_STALL) {
		if (!atomic_load(&g_gate))
			return 0;
		atomic_fetch_add(&g_stall_landed, 1);
		return 1;
	}
	return now - f->q[i].t_sub >= pr->slow_ms;
}

static int f_reap(void *h, struct strata_io_req **done, uint32_t min_done, uint32_t max_done,
		  int timeout_ms)
{
	struct fake *f = h;
	double end = ms_now() + (timeout_ms < 0 ? 1e9 : timeout_ms);
	uint32_t k = 0;

	(void)min_done;
	S.reap_calls++;
	if (S.reap_fail_at && S.reap_calls == S.reap_fail_at)
		return -EBADF;
	for (;;) {
		double now = ms_now();

		for (uint32_t i = 0; i < f->n && k < max_done;) {
			if (!ready(f, i, now)) {
				i++;
				continue;
			}
			complete(f->q[i].r);
			f->q[i].r->user = ++S.seq; /* the completion's number, for the test */
			if (f->q[i].r->result < 0 || (uint32_t)f->q[i].r->result < f->q[i].r->len)
				S.fail_seq = S.seq;
			done[k++] = f->q[i].r;
			memmove(&f->q[i], &f->q[i + 1], (f->n - i - 1) * sizeof(f->q[0]));
			f->n--;
		}
		if (k || now >= end || !f->n)
			return (int)k;
		usleep(1000);
	}
}

static int f_register(void *h, void *const *bufs, const size_t *lens, uint32_t n)
{
	(void)h;
	(void)bufs;
	(void)lens;
	(void)n;
	S.registers++;
	return 0;
}

static const struct strata_io_ops g_fake = {
	1, f_open, f_close, f_caps, f_size, f_submit, f_reap, f_register,
};

static void h_log(const struct strata_host *h, int level, const char *fmt, ...)
{
	(void)h;
	(void)level;
	(void)fmt;
}

static const struct strata_host g_host = { .version = 1, .log = h_log };

/* ---- the caller's side: a job of n page reads -------------------------------------------- */

struct tjob {
	struct strata_aread_req *req;
	uint8_t *buf;
	uint32_t n, next, pages_from;
	uint32_t landed, landed_twice, cancel_after;
	int said_cancel, next_after_cancel;
	uint64_t last_landed_seq;
	struct strata_aread_job job;
};

static uint32_t t_next(void *user, struct strata_aread_req **reqs, uint32_t n)
{
	struct tjob *t = user;
	uint32_t k = 0;

	t->next_after_cancel += t->said_cancel;
	while (k < n && t->next < t->n)
		reqs[k++] = &t->req[t->next++];
	return k;
}

static void t_landed(void *user, struct strata_aread_req *r)
{
	struct tjob *t = user;

	t->landed_twice += r->io.result == -12345;
	r->io.result = -12345; /* marks it: a second landed() of the same read shows */
	t->landed++;
	if (r->io.user > t->last_landed_seq)
		t->last_landed_seq = r->io.user;
}

static void t_describe(void *user, const struct strata_aread_req *r, char *buf, size_t n)
{
	(void)user;
	snprintf(buf, n, "widget %u of the test", (unsigned)(r->io.offset / PAGE));
}

static int t_cancelled(void *user)
{
	struct tjob *t = user;

	if (t->cancel_after && t->landed >= t->cancel_after)
		t->said_cancel = 1;
	return t->said_cancel;
}

/* n reads of one page each, from page `from`. */
static void tjob_init(struct tjob *t, uint32_t from, uint32_t n)
{
	memset(t, 0, sizeof(*t));
	t->req = calloc(n, sizeof(*t->req));
	t->buf = malloc((size_t)n * PAGE);
	ck_assert(t->req && t->buf);
	t->n = n;
	t->pages_from = from;
	for (uint32_t i = 0; i < n; i++) {
		t->req[i].io.offset = (uint64_t)(from + i) * PAGE;
		t->req[i].io.len = PAGE;
		t->req[i].io.buf = t->buf + (size_t)i * PAGE;
		t->req[i].need = PAGE;
	}
	t->job = (struct strata_aread_job){ .user = t, .next = t_next, .landed = t_landed,
					    .describe = t_describe, .cancelled = t_cancelled };
}

static void tjob_free(struct tjob *t)
{
	free(t->req);
	free(t->buf);
}

/* Read i landed once and holds its page's bytes. */
static int tjob_good(const struct tjob *t, uint32_t i)
{
	for (uint32_t b = 0; b < PAGE; b++)
		if (t->buf[(size_t)i * PAGE + b] != byte_at(t->req[i].io.offset + b))
			return 0;
	return t->req[i].io.result == -12345;
}

static struct strata_aread *open_fake(uint32_t depth, uint32_t timeout_ms, int direct)
{
	struct strata_aread_opts o = {
		.ops = &g_fake, .host = &g_host, .io_name = "fake-io", .path = PATH,
		.what = "widgets", .depth = depth, .align = PAGE, .timeout_ms = timeout_ms,
		.timeout_key = "test timeout", .direct = direct,
	};
	struct strata_aread *a = NULL;

	ck_assert_int_eq(strata_aread_open(&o, &a), 0);
	return a;
}

#define ck_err_has(a, s)                                                                 \
	ck_assert_msg(strstr(strata_aread_error(a), (s)) != NULL, "'%s' lacks '%s'",      \
		      strata_aread_error(a), (s))

static void setup(void)
{
	script_reset();
	g_log[0] = 0;
	g_log_errors = g_log_warns = 0;
	strata_log_set_sink(sink, NULL);
}

static void teardown(void)
{
	strata_log_set_sink(NULL, NULL);
}

/* ---- the tests ------------------------------------------------------------------------ */

/* 200 reads, depth 8: all land once, with their bytes, never more than 8 in flight. */
START_TEST(lands_everything)
{
	struct strata_aread *a = open_fake(8, 5000, 1);
	struct tjob t;

	tjob_init(&t, 10, 200);
	S.page[50].slow_ms = 20; /* the others overtake it */
	ck_assert_int_eq(strata_aread_depth(a), 8);
	ck_assert_int_eq(strata_aread_direct(a), 1);
	ck_assert_uint_eq(strata_aread_size(a), (uint64_t)FILE_PAGES * PAGE);
	ck_assert_int_eq(strata_aread_run(a, &t.job), 0);
	ck_assert_str_eq(strata_aread_error(a), "");
	ck_assert_uint_eq(t.landed, 200);
	ck_assert_uint_eq(t.landed_twice, 0);
	for (uint32_t i = 0; i < 200; i++)
		ck_assert_msg(tjob_good(&t, i), "read %u", i);
	ck_assert_uint_eq(t.job.reads, 200);
	ck_assert_uint_eq(t.job.bytes, 200u * PAGE);
	ck_assert_uint_eq(t.job.retries, 0);
	ck_assert_uint_le(S.max_out, 8);
	ck_assert_uint_ge(S.max_out, 2);
	ck_assert_int_eq(S.closes, 0);
	strata_aread_close(a);
	ck_assert_int_eq(S.closes, 1);
	ck_assert_uint_eq(S.unreaped_at_close, 0);
	ck_assert_int_eq(g_log_errors + g_log_warns, 0);
	tjob_free(&t);
}
END_TEST

/* Failures and short counts that heal within the tries: retried, then right. */
START_TEST(retries_heal)
{
	struct strata_aread *a = open_fake(4, 5000, 1);
	struct tjob t;

	tjob_init(&t, 0, 30);
	S.page[3].eio_first = STRATA_AREAD_TRIES - 1; /* the last try lands */
	S.page[5].short_first = 1;
	S.page[6].eio_first = 1;
	S.page[6].short_first = 1;
	ck_assert_int_eq(strata_aread_run(a, &t.job), 0);
	ck_assert_uint_eq(t.job.retries, STRATA_AREAD_TRIES - 1 + 1 + 2);
	ck_assert_uint_eq(S.reads_of[3], STRATA_AREAD_TRIES);
	ck_assert_uint_eq(t.landed, 30);
	for (uint32_t i = 0; i < 30; i++)
		ck_assert_msg(tjob_good(&t, i), "read %u", i);
	ck_assert_int_eq(g_log_errors, 0);
	strata_aread_close(a);
	tjob_free(&t);
}
END_TEST

/*
 * A read that fails on every try fails the job with one message; the reads
 * in flight are drained (none left when run() returns, none handed back after
 * the failure), the handle stays open and the next run reads.
 */
START_TEST(fails_after_tries_and_drains)
{
	static const uint8_t kinds[2] = { P_EIO_ALWAYS, P_SHORT_ALWAYS };
	struct strata_aread *a = open_fake(8, 5000, 1);
	struct tjob t, t2;

	tjob_init(&t, 0, 60);
	S.page[10].kind = kinds[_i];
	for (uint32_t p = 11; p < 60; p++)
		S.page[p].slow_ms = 30; /* in flight when page 10 fails for good */
	ck_assert_int_eq(strata_aread_run(a, &t.job), -EIO);
	ck_assert_uint_eq(S.reads_of[10], STRATA_AREAD_TRIES);
	ck_err_has(a, PATH ": reading widget 10 of the test: 4096 bytes at offset 40960 through "
		   "fake-io failed 3 times: ");
	ck_err_has(a, _i ? "short read (100 of the 4096 bytes needed" : "Input/output error");
	/* Drained: the plugin holds nothing, nothing landed after the failure. */
	ck_assert_int_eq(S.closes, 0);
	ck_assert_uint_lt(t.landed, 60);
	ck_assert_uint_lt(t.last_landed_seq, S.fail_seq);
	ck_assert_uint_eq(t.landed_twice, 0);
	/* The message is the caller's to log: run() logged nothing. */
	ck_assert_int_eq(g_log_errors, 0);
	/* The same aread reads on. */
	memset(S.page, 0, sizeof(S.page));
	tjob_init(&t2, 100, 20);
	ck_assert_int_eq(strata_aread_run(a, &t2.job), 0);
	ck_assert_str_eq(strata_aread_error(a), "");
	for (uint32_t i = 0; i < 20; i++)
		ck_assert(tjob_good(&t2, i));
	strata_aread_close(a);
	ck_assert_uint_eq(S.unreaped_at_close, 0);
	ck_assert_int_eq(S.opens, 1);
	tjob_free(&t);
	tjob_free(&t2);
}
END_TEST

/*
 * A read that never comes back: -ETIMEDOUT once no read landed for the
 * timeout (counted from the last one that did), the stuck handle closed,
 * the next run on a fresh one.
 */
START_TEST(stall_times_out)
{
	struct strata_aread *a = open_fake(8, 200, 0);
	struct tjob t, t2;
	double t0;

	tjob_init(&t, 0, 40);
	S.page[7].kind = P_STALL;
	S.caps_flags = STRATA_IO_CAP_FIXED_BUFFERS;
	ck_assert_int_eq(strata_aread_register(a, (void *const *)&t.buf, (const size_t[]){ 1 }, 1),
			 0);
	t0 = ms_now();
	ck_assert_int_eq(strata_aread_run(a, &t.job), -ETIMEDOUT);
	ck_assert_msg(ms_now() - t0 >= 190 && ms_now() - t0 < 5000, "%.0f ms", ms_now() - t0);
	ck_err_has(a, PATH ": no read landed for 200 ms through fake-io (1 in flight; the oldest: "
		   "widget 7 of the test, 4096 bytes at offset 28672): the disk stopped answering "
		   "(test timeout)");
	ck_assert_uint_eq(t.landed, 39); /* the others landed before it timed out */
	ck_assert_int_eq(S.closes, 1);
	ck_assert_uint_eq(S.unreaped_at_close, 1); /* the plugin got the stuck read back */
	/* A fresh handle, its buffers registered again. */
	memset(S.page, 0, sizeof(S.page));
	tjob_init(&t2, 0, 16);
	ck_assert_int_eq(strata_aread_run(a, &t2.job), 0);
	ck_assert_int_eq(S.opens, 2);
	ck_assert_int_eq(S.registers, 2);
	for (uint32_t i = 0; i < 16; i++)
		ck_assert(tjob_good(&t2, i));
	strata_aread_close(a);
	tjob_free(&t);
	tjob_free(&t2);
}
END_TEST

/* The handle itself fails (reap() < 0): the job fails, the handle is closed, the next reopens. */
START_TEST(handle_failure)
{
	struct strata_aread *a = open_fake(4, 5000, 1);
	struct tjob t, t2;

	tjob_init(&t, 0, 30);
	S.reap_fail_at = 3;
	ck_assert_int_eq(strata_aread_run(a, &t.job), -EBADF);
	ck_err_has(a, PATH ": io plugin fake-io failed while reading widget ");
	ck_err_has(a, " reads in flight): Bad file descriptor");
	ck_assert_int_eq(S.closes, 1);
	S.reap_fail_at = 0;
	tjob_init(&t2, 30, 30);
	ck_assert_int_eq(strata_aread_run(a, &t2.job), 0);
	ck_assert_int_eq(S.opens, 2);
	for (uint32_t i = 0; i < 30; i++)
		ck_assert(tjob_good(&t2, i));
	strata_aread_close(a);
	tjob_free(&t);
	tjob_free(&t2);
}
END_TEST

/* submit(): an error, nothing taken with nothing in flight, and -EAGAIN while full. */
START_TEST(submit_refusals)
{
	struct strata_aread *a = open_fake(8, 5000, 1);
	struct tjob t;

	tjob_init(&t, 0, 20);
	S.submit_err_at = 1;
	ck_assert_int_eq(strata_aread_run(a, &t.job), -ENOSPC);
	ck_err_has(a, PATH ": io plugin fake-io refused to queue reads (the first: widget 0 of "
		   "the test, 4096 bytes at offset 0): No space left on device");
	tjob_free(&t);

	tjob_init(&t, 0, 20);
	S.submit_err_at = 0;
	S.submit_zero = 1;
	ck_assert_int_eq(strata_aread_run(a, &t.job), -EIO);
	ck_err_has(a, "it took none with none in flight");
	tjob_free(&t);

	/* A plugin that takes 3 at a time and says -EAGAIN when full: slower, right. */
	tjob_init(&t, 0, 50);
	S.submit_zero = 0;
	S.accept_max = 3;
	S.max_out = 0;
	ck_assert_int_eq(strata_aread_run(a, &t.job), 0);
	ck_assert_uint_eq(S.max_out, 3);
	for (uint32_t i = 0; i < 50; i++)
		ck_assert(tjob_good(&t, i));
	strata_aread_close(a);
	tjob_free(&t);
}
END_TEST

/* cancelled(): nothing new is asked for, what is in flight drains, -ECANCELED without a message. */
START_TEST(cancel_drains)
{
	struct strata_aread *a = open_fake(8, 5000, 1);
	struct tjob t;

	tjob_init(&t, 0, 100);
	for (uint32_t p = 0; p < 100; p++)
		S.page[p].slow_ms = 2;
	t.cancel_after = 5;
	ck_assert_int_eq(strata_aread_run(a, &t.job), -ECANCELED);
	ck_assert_str_eq(strata_aread_error(a), "");
	ck_assert_int_eq(t.next_after_cancel, 0);
	ck_assert_uint_lt(t.landed, 100);
	ck_assert_int_eq(S.closes, 0);
	strata_aread_close(a);
	ck_assert_uint_eq(S.unreaped_at_close, 0);
	tjob_free(&t);
}
END_TEST

/* The plugin's depth lowers ours; a file system without O_DIRECT falls back with one warning. */
START_TEST(open_fallbacks)
{
	struct strata_aread *a;
	struct tjob t;

	S.caps_depth = 3;
	S.open_direct_err = -EINVAL;
	a = open_fake(16, 5000, 1);
	ck_assert_int_eq(strata_aread_depth(a), 3);
	ck_assert_int_eq(strata_aread_direct(a), 0);
	ck_assert_int_eq(g_log_warns, 1);
	ck_assert_msg(strstr(g_log, "W " PATH ": the file system (or io plugin fake-io) refuses "
			     "direct I/O: widgets are read through the page cache"), "%s", g_log);
	tjob_init(&t, 0, 40);
	ck_assert_int_eq(strata_aread_run(a, &t.job), 0);
	ck_assert_uint_le(S.max_out, 3);
	strata_aread_close(a);
	tjob_free(&t);
}
END_TEST

/* What cannot work is refused at open, logged once with the file and the reason. */
START_TEST(open_errors)
{
	struct strata_aread_opts o = {
		.ops = &g_fake, .host = &g_host, .io_name = "fake-io", .path = PATH,
		.what = "widgets", .depth = 8, .align = PAGE, .timeout_ms = 100,
	};
	struct strata_aread *a = (void *)1;

	S.open_err = -EACCES;
	ck_assert_int_eq(strata_aread_open(&o, &a), -EACCES);
	ck_assert_ptr_null(a);
	ck_assert_msg(strstr(g_log, "E io plugin fake-io cannot open " PATH " for widgets: "
			     "Permission denied"), "%s", g_log);
	S.open_err = 0;
	S.offset_align = 8192;
	ck_assert_int_eq(strata_aread_open(&o, &a), -EINVAL);
	ck_assert_msg(strstr(g_log, "wants 8192-byte aligned reads"), "%s", g_log);
	ck_assert_int_eq(S.closes, S.opens); /* nothing left open */
	ck_assert_int_eq(g_log_errors, 2);
	o.depth = 0;
	ck_assert_int_eq(strata_aread_open(&o, &a), -EINVAL);
	o.depth = 8;
	o.ops = NULL;
	ck_assert_int_eq(strata_aread_open(&o, &a), -EINVAL);
	strata_aread_close(NULL);
}
END_TEST

struct opener {
	atomic_int go;
};

static void *open_gate_later(void *arg)
{
	struct opener *op = arg;

	while (!atomic_load(&op->go))
		usleep(1000);
	usleep(20000);
	atomic_store(&g_gate, 1);
	return NULL;
}

/*
 * start() returns while a read is stalled and the caller runs meanwhile;
 * wait() returns once it landed.  wait() without start() is -EINVAL, a
 * second start() while one runs -EBUSY, and close() waits for a started job.
 */
START_TEST(start_wait)
{
	struct strata_aread *a = open_fake(8, 10000, 1);
	struct tjob t, t2;
	struct opener op = { 0 };
	pthread_t th;
	double t0;

	ck_assert_int_eq(strata_aread_wait(a), -EINVAL);
	tjob_init(&t, 0, 24);
	tjob_init(&t2, 0, 4);
	S.page[20].kind = P_STALL;
	t0 = ms_now();
	ck_assert_int_eq(strata_aread_start(a, &t.job), 0);
	ck_assert_int_eq(strata_aread_start(a, &t2.job), -EBUSY);
	ck_assert_msg(ms_now() - t0 < 1000, "start blocked %.0f ms", ms_now() - t0);
	/* The caller computes: the stalled read cannot have landed, so the job is not done. */
	usleep(50000);
	ck_assert_int_eq(atomic_load(&g_stall_landed), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, open_gate_later, &op), 0);
	atomic_store(&op.go, 1);
	ck_assert_int_eq(strata_aread_wait(a), 0);
	pthread_join(th, NULL);
	ck_assert_uint_eq(t.landed, 24);
	for (uint32_t i = 0; i < 24; i++)
		ck_assert(tjob_good(&t, i));
	ck_assert_int_eq(strata_aread_wait(a), -EINVAL);
	/* A failing job through start/wait: its error after wait, the message with it. */
	S.page[2].kind = P_EIO_ALWAYS;
	ck_assert_int_eq(strata_aread_start(a, &t2.job), 0);
	ck_assert_int_eq(strata_aread_wait(a), -EIO);
	ck_err_has(a, "reading widget 2 of the test: 4096 bytes at offset 8192");
	/* Closing with a started job waits for it. */
	memset(S.page, 0, sizeof(S.page));
	tjob_free(&t2);
	tjob_init(&t2, 40, 64);
	ck_assert_int_eq(strata_aread_start(a, &t2.job), 0);
	strata_aread_close(a);
	ck_assert_uint_eq(t2.landed, 64);
	ck_assert_uint_eq(S.unreaped_at_close, 0);
	tjob_free(&t);
	tjob_free(&t2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("aread");
	TCase *tc = tcase_create("aread");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, lands_everything);
	tcase_add_test(tc, retries_heal);
	tcase_add_loop_test(tc, fails_after_tries_and_drains, 0, 2);
	tcase_add_test(tc, stall_times_out);
	tcase_add_test(tc, handle_failure);
	tcase_add_test(tc, submit_refusals);
	tcase_add_test(tc, cancel_drains);
	tcase_add_test(tc, open_fallbacks);
	tcase_add_test(tc, open_errors);
	tcase_add_test(tc, start_wait);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
