/*
 * check_io.c - the io plugins (io-pread, io-uring, io-direct) through the
 * io ops of include/strata/plugin.h, loaded from STRATA_PLUGIN_DIR like the
 * core loads them.
 *
 * Every test runs once per variant (a plugin plus its INI section).  A
 * variant whose plugin is not built here or probes unusable is a skipped
 * case (TU_SKIP, counted), and so is a direct-mode case where no directory
 * here takes O_DIRECT.  The io-uring cases (tag io_uring) and the other
 * plugins' direct-mode cases (tag o_direct) are ctest tests of their own,
 * check_io.io_uring and check_io.o_direct, so that where the machine lacks
 * them ctest lists them as skipped.  The test file and the random-read
 * workload are in io_pattern.h.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "io_pattern.h"
#include "plugin/registry.h"
#include "testutil.h"
#include "util/log.h"

#define N_READS 4000u

struct variant {
	const char *plugin;
	const char *keys; /* body of its INI section */
	const char *label;
};

static const struct variant variants[] = {
	{ "io-pread", "", "io-pread" },
	{ "io-pread", "threads = 3\n", "io-pread threads=3" },
	{ "io-direct", "", "io-direct aio" },
	{ "io-direct", "inline_submit = true\n", "io-direct inline" },
	/* io-uring last: variants [N_PLAIN, N_VARIANTS) are the io_uring part's */
	{ "io-uring", "", "io-uring" },
	{ "io-uring", "fixed_buffers = false\n", "io-uring fixed_buffers=false" },
	{ "io-uring", "sqpoll = true\n", "io-uring sqpoll" },
};
#define N_VARIANTS ((int)(sizeof(variants) / sizeof(variants[0])))
#define N_PLAIN 4

static char g_file[4200]; /* the pattern file */
static char g_dir[4096];
static int g_direct_ok;   /* g_dir takes O_DIRECT */

/* ---- fixture ------------------------------------------------------------- */

struct fx {
	struct strata_config cfg;
	struct strata_registry *reg;
	struct strata_plugin *plugin;
	const struct strata_io_ops *ops;
	const struct strata_host *host;
};

/* Load variant v with its INI section; 0 when it is unusable here (a skipped case: return). */
static int fx_load(struct fx *f, int v, const char *extra_keys)
{
	char ini[4096 + 64], text[1024];
	int rc;

	memset(f, 0, sizeof(*f));
	snprintf(ini, sizeof(ini), "%s/v%d.ini", g_dir, v);
	snprintf(text, sizeof(text), "[%s]\n%s%s", variants[v].plugin, variants[v].keys,
		 extra_keys ? extra_keys : "");
	ck_assert_int_eq(tu_write_file(ini, text, strlen(text)), 0);
	ck_assert_int_eq(strata_config_init(&f->cfg), 0);
	ck_assert_int_eq(strata_config_load_file(&f->cfg, ini), 0);
	ck_assert_int_eq(strata_registry_create(&f->cfg, NULL, &f->reg), 0);
	snprintf(ini, sizeof(ini), "%s/strata-%s.so", STRATA_PLUGIN_DIR, variants[v].plugin);
	/* Not built here (io-uring without liburing): say so, without the loader's error line. */
	rc = access(ini, F_OK) ? -ENOENT
			       : strata_registry_load_file(f->reg, ini, STRATA_PLUGIN_IO, &f->plugin);
	if (rc == -ENOENT || rc == -ENODEV) {
		tu_skip("%s: %s (%s)", variants[v].label,
			rc == -ENOENT ? "not built" : "probe says unusable here", strerror(-rc));
		strata_registry_free(f->reg);
		strata_config_free(&f->cfg);
		return 0;
	}
	ck_assert_msg(rc == 0, "%s: load failed: %s", ini, strerror(-rc));
	ck_assert_int_gt(f->plugin->score, 0);
	f->ops = f->plugin->desc->ops;
	f->host = &f->plugin->host;
	return 1;
}

static void fx_free(struct fx *f)
{
	strata_registry_free(f->reg);
	strata_config_free(&f->cfg);
}


static void check_done(const struct strata_io_req *r, const char *what)
{
	int32_t want = expect_len(r->offset, r->len);
	long bad;

	ck_assert_msg(r->result == want, "%s: read %u at %llu gave %d, want %d", what,
		      (unsigned)r->len, (unsigned long long)r->offset, (int)r->result, (int)want);
	bad = first_bad_byte(r);
	ck_assert_msg(bad < 0, "%s: read at %llu: byte %ld wrong", what,
		      (unsigned long long)r->offset, bad);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- tests ---------------------------------------------------------------------- */

static void open_ok(struct fx *f, uint32_t flags, uint32_t depth, void **h)
{
	int rc = f->ops->open(f->host, g_file, flags, depth, h);

	ck_assert_msg(rc == 0, "open(%s, flags %u, depth %u): %s", g_file, flags, depth,
		      strerror(-rc));
	ck_assert_ptr_nonnull(*h);
}

/* A direct-mode case's start: 0 (skipped) where no directory here takes O_DIRECT. */
static int direct_or_skip(int v)
{
	if (!g_direct_ok)
		tu_skip("%s direct: no directory here takes O_DIRECT (set TMPDIR)", variants[v].label);
	return g_direct_ok;
}

static void random_reads(int v, int direct)
{
	static const uint32_t depths[] = { 1, 8, 32, 128 };
	struct fx f;
	int d;

	if ((direct && !direct_or_skip(v)) || !fx_load(&f, v, NULL))
		return;
	{
		for (d = 0; d < 4; d++) {
			struct workload w = { depths[d], direct, N_READS, 0x9e3779b97f4a7c15ull + (uint64_t)d, 1 };
			struct strata_io_caps caps;
			char err[256] = "";
			void *h;
			int n;

			open_ok(&f, direct ? STRATA_IO_DIRECT : 0, depths[d], &h);
			ck_assert_int_eq(f.ops->caps(h, &caps), 0);
			ck_assert_int_eq(caps.depth, depths[d]);
			ck_assert_int_eq(!!(caps.flags & STRATA_IO_CAP_DIRECT), direct);
			ck_assert_int_eq(caps.buf_align, direct ? PAGE : 1);
			ck_assert_int_eq(caps.offset_align, direct ? PAGE : 1);
			ck_assert_int_eq(f.ops->size(h), FILE_SIZE);
			n = run_reads(f.ops, h, &w, err, sizeof(err));
			ck_assert_msg(n == 0, "%s %s depth %u: %d errors, first: %s",
				      variants[v].label, direct ? "direct" : "buffered", depths[d], n,
				      err);
			f.ops->close(h);
		}
	}
	fx_free(&f);
}

START_TEST(test_random_reads) { random_reads(_i, 0); }
END_TEST
START_TEST(test_random_reads_direct) { random_reads(_i, 1); }
END_TEST

/* Reads at and past the end, and one across it. */
static void eof_reads(int v, int direct)
{
	struct fx f;

	if ((direct && !direct_or_skip(v)) || !fx_load(&f, v, NULL))
		return;
	{
		uint64_t last = FILE_SIZE / PAGE * PAGE;
		uint64_t offs[] = { direct ? last + 3 * PAGE : FILE_SIZE, last, last + PAGE, (uint64_t)1 << 40,
				    direct ? last - PAGE : FILE_SIZE - 100 };
		struct strata_io_req r[5], *p[5], *done[5];
		uint8_t *buf;
		void *h;
		int i, n, got = 0;

		ck_assert_int_eq(posix_memalign((void **)&buf, PAGE, 5 * 2 * PAGE), 0);
		open_ok(&f, direct ? STRATA_IO_DIRECT : 0, 8, &h);
		for (i = 0; i < 5; i++) {
			r[i] = (struct strata_io_req){ .offset = offs[i], .len = 2 * PAGE,
						       .buf = buf + i * 2 * PAGE, .user = (uint64_t)i };
			r[i].result = INT32_MIN;
			p[i] = &r[i];
		}
		ck_assert_int_eq(f.ops->submit(h, p, 5), 5);
		while (got < 5) {
			n = f.ops->reap(h, done + got, 5 - got, 5 - got, 5000);
			ck_assert_int_gt(n, 0);
			got += n;
		}
		for (i = 0; i < 5; i++)
			check_done(&r[i], variants[v].label);
		ck_assert_int_eq(r[0].result, 0);
		ck_assert_int_eq(r[1].result, 2048);
		ck_assert_int_eq(r[4].result, direct ? PAGE + 2048 : 100);
		f.ops->close(h);
		free(buf);
	}
	fx_free(&f);
}

START_TEST(test_eof) { eof_reads(_i, 0); }
END_TEST
START_TEST(test_eof_direct) { eof_reads(_i, 1); }
END_TEST

/* A read that breaks a direct handle's alignment completes with -EINVAL; its neighbours work. */
START_TEST(test_misaligned_direct)
{
	struct strata_io_req r[5], *p[5], *done[5];
	struct fx f;
	uint8_t *buf;
	void *h;
	int i, got = 0;

	if (!direct_or_skip(_i) || !fx_load(&f, _i, NULL))
		return;
	ck_assert_int_eq(posix_memalign((void **)&buf, PAGE, 5 * 2 * PAGE), 0);
	open_ok(&f, STRATA_IO_DIRECT, 4, &h);
	r[0] = (struct strata_io_req){ .offset = 512, .len = PAGE, .buf = buf };
	r[1] = (struct strata_io_req){ .offset = PAGE, .len = 100, .buf = buf + 2 * PAGE };
	r[2] = (struct strata_io_req){ .offset = PAGE, .len = PAGE, .buf = buf + 4 * PAGE + 512 };
	r[3] = (struct strata_io_req){ .offset = 3 * PAGE, .len = PAGE, .buf = buf + 6 * PAGE };
	r[4] = (struct strata_io_req){ .offset = 5 * PAGE, .len = PAGE, .buf = buf + 8 * PAGE };
	for (i = 0; i < 5; i++) {
		r[i].result = INT32_MIN;
		p[i] = &r[i];
	}
	/* Depth 4: the fifth waits for a slot. */
	ck_assert_int_eq(f.ops->submit(h, p, 5), 4);
	ck_assert_int_eq(f.ops->submit(h, p + 4, 1), 0);
	while (got < 4) {
		int n = f.ops->reap(h, done, 1, 5, 5000);

		ck_assert_int_gt(n, 0);
		got += n;
	}
	ck_assert_int_eq(f.ops->submit(h, p + 4, 1), 1);
	ck_assert_int_eq(f.ops->reap(h, done, 1, 5, 5000), 1);
	ck_assert_ptr_eq(done[0], &r[4]);
	for (i = 0; i < 3; i++)
		ck_assert_msg(r[i].result == -EINVAL, "misaligned read %d gave %d, want -EINVAL", i,
			      (int)r[i].result);
	check_done(&r[3], variants[_i].label);
	check_done(&r[4], variants[_i].label);
	f.ops->close(h);
	free(buf);
	fx_free(&f);
}
END_TEST

/* reap() honours its timeout and never waits for reads that were not submitted. */
START_TEST(test_reap_timeout)
{
	struct strata_io_req r[16], *p[16], *done[32];
	struct fx f;
	uint8_t *buf;
	double t0;
	void *h;
	int i, n, got = 0, polls = 0;

	if (!fx_load(&f, _i, NULL))
		return;
	ck_assert_int_eq(posix_memalign((void **)&buf, PAGE, 16 * PAGE), 0);
	open_ok(&f, g_direct_ok ? STRATA_IO_DIRECT : 0, 16, &h);

	t0 = now_ms();
	ck_assert_int_eq(f.ops->reap(h, done, 1, 32, 200), 0);
	ck_assert_int_eq(f.ops->reap(h, done, 1, 32, -1), 0); /* nothing outstanding: no wait */
	ck_assert_msg(now_ms() - t0 < 1000, "reap with nothing in flight waited %.0f ms",
		      now_ms() - t0);

	for (i = 0; i < 16; i++) {
		r[i] = (struct strata_io_req){ .offset = (uint64_t)(i * 37 % 2048) * PAGE,
					       .len = PAGE, .buf = buf + i * PAGE };
		p[i] = &r[i];
	}
	ck_assert_int_eq(f.ops->submit(h, p, 16), 16);
	while (got < 16) { /* poll: each call returns at once */
		t0 = now_ms();
		n = f.ops->reap(h, done, 0, 2, 0);
		ck_assert_msg(n >= 0 && n <= 2, "reap(0, 2, 0) = %d", n);
		ck_assert_msg(now_ms() - t0 < 1000, "reap with timeout 0 took %.0f ms",
			      now_ms() - t0);
		got += n;
		ck_assert_msg(++polls < 10000000, "reads never completed");
	}
	for (i = 0; i < 16; i++)
		check_done(&r[i], variants[_i].label);

	/* min_done above what is outstanding is lowered to it; a wait for ever returns. */
	ck_assert_int_eq(f.ops->submit(h, p, 16), 16);
	ck_assert_int_eq(f.ops->reap(h, done, 100, 32, -1), 16);
	ck_assert_int_eq(f.ops->reap(h, done, 1, 32, 100), 0);
	f.ops->close(h);
	free(buf);
	fx_free(&f);
}
END_TEST

/* close() with reads in flight returns, and leaves the buffers alone once it has. */
START_TEST(test_close_in_flight)
{
	struct strata_io_req r[64], *p[64], *done[64];
	struct fx f;
	uint8_t *buf;
	int round, i;

	if (!fx_load(&f, _i, NULL))
		return;
	ck_assert_int_eq(posix_memalign((void **)&buf, PAGE, 64 * PAGE), 0);
	for (round = 0; round < 30; round++) {
		int direct = g_direct_ok && (round & 1);
		void *h;
		int n;

		open_ok(&f, direct ? STRATA_IO_DIRECT : 0, 64, &h);
		for (i = 0; i < 64; i++) {
			r[i] = (struct strata_io_req){
				.offset = (uint64_t)((round * 64 + i) * 131 % 2048) * PAGE,
				.len = PAGE, .buf = buf + i * PAGE };
			p[i] = &r[i];
		}
		n = f.ops->submit(h, p, (uint32_t)(round % 3 ? 64 : 8));
		ck_assert_int_gt(n, 0);
		if (round % 4 == 3)
			ck_assert_int_ge(f.ops->reap(h, done, 1, 64, -1), 1);
		f.ops->close(h);
		/* Whatever the plugin did with the reads, nothing writes here any more. */
		memset(buf, 0xa5, 64 * PAGE);
	}
	usleep(20000);
	for (i = 0; i < 64 * (int)PAGE; i++)
		ck_assert_msg(buf[i] == 0xa5, "byte %d written after close()", i);
	f.ops->close(NULL);
	free(buf);
	fx_free(&f);
}
END_TEST

static const char *g_log_hit;
static char g_log_lines[8192];

static void log_capture(void *user, int level, const char *line)
{
	(void)user;
	(void)level;
	strncat(g_log_lines, line, sizeof(g_log_lines) - strlen(g_log_lines) - 2);
	strcat(g_log_lines, "\n");
	g_log_hit = g_log_lines;
}

START_TEST(test_open_errors)
{
	struct fx f;
	void *h = (void *)1;
	char missing[4200];

	if (!fx_load(&f, _i, NULL))
		return;
	snprintf(missing, sizeof(missing), "%s/no-such-file", g_dir);
	ck_assert_int_eq(f.ops->open(f.host, missing, 0, 8, &h), -ENOENT);
	ck_assert_ptr_null(h);
	ck_assert_int_eq(f.ops->open(f.host, missing, STRATA_IO_DIRECT, 8, &h), -ENOENT);
	ck_assert_int_eq(f.ops->open(f.host, g_dir, 0, 8, &h), -EISDIR);
	ck_assert_ptr_null(h);
	fx_free(&f);
}
END_TEST

/* procfs refuses O_DIRECT: a clear -EINVAL the core can fall back from. */
START_TEST(test_open_direct_refused)
{
	struct fx f;
	void *h = (void *)1;
	int fd = open("/proc/version", O_RDONLY | O_DIRECT);

	if (fd >= 0 || errno != EINVAL) {
		if (fd >= 0)
			close(fd);
		TU_SKIP("%s: /proc/version does not refuse O_DIRECT here", variants[_i].label);
	}
	if (!fx_load(&f, _i, NULL))
		return;
	g_log_lines[0] = 0;
	strata_log_set_sink(log_capture, NULL);
	ck_assert_int_eq(f.ops->open(f.host, "/proc/version", STRATA_IO_DIRECT, 8, &h), -EINVAL);
	strata_log_set_sink(NULL, NULL);
	ck_assert_ptr_null(h);
	ck_assert_msg(strstr(g_log_lines, "/proc/version") && strstr(g_log_lines, "O_DIRECT"),
		      "no clear message for a refused O_DIRECT: '%s'", g_log_lines);
	fx_free(&f);
}
END_TEST

/* One handle per thread, as the core's readers use them. */
struct thread_job {
	const struct strata_io_ops *ops;
	const struct strata_host *host;
	int direct, errors;
	uint64_t seed;
	char err[256];
};

static void *thread_reads(void *arg)
{
	struct thread_job *j = arg;
	struct workload w = { 32, j->direct, 2000, j->seed, 1 };
	void *h;
	int rc = j->ops->open(j->host, g_file, j->direct ? STRATA_IO_DIRECT : 0, 32, &h);

	if (rc) {
		j->errors = 1;
		snprintf(j->err, sizeof(j->err), "open: %s", strerror(-rc));
		return NULL;
	}
	j->errors = run_reads(j->ops, h, &w, j->err, sizeof(j->err));
	j->ops->close(h);
	return NULL;
}

START_TEST(test_threads)
{
	struct thread_job jobs[4];
	pthread_t t[4];
	struct fx f;
	int i;

	if (!fx_load(&f, _i, NULL))
		return;
	for (i = 0; i < 4; i++) {
		jobs[i] = (struct thread_job){ f.ops, f.host, g_direct_ok && (i & 1), 0,
					       0x1234567ull * (uint64_t)(i + 1), "" };
		ck_assert_int_eq(pthread_create(&t[i], NULL, thread_reads, &jobs[i]), 0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 4; i++)
		ck_assert_msg(jobs[i].errors == 0, "%s thread %d: %s", variants[_i].label, i,
			      jobs[i].err);
	fx_free(&f);
}
END_TEST

/* ---- per-plugin keys ---------------------------------------------------------------- */

/* Variant index of a plugin's plain entry. */
static int plain(const char *plugin)
{
	int v;

	for (v = 0; v < N_VARIANTS; v++)
		if (!strcmp(variants[v].plugin, plugin) && !variants[v].keys[0])
			return v;
	return -1;
}

/* A bad value of `key` makes open() fail with -EINVAL and a message naming the key. */
static void bad_key(const char *plugin, const char *keyline, const char *key)
{
	struct fx f;
	void *h = NULL;

	if (!fx_load(&f, plain(plugin), keyline))
		return;
	g_log_lines[0] = 0;
	strata_log_set_sink(log_capture, NULL);
	ck_assert_int_eq(f.ops->open(f.host, g_file, 0, 8, &h), -EINVAL);
	strata_log_set_sink(NULL, NULL);
	ck_assert_ptr_null(h);
	ck_assert_msg(strstr(g_log_lines, key), "%s: message does not name %s: '%s'", plugin, key,
		      g_log_lines);
	fx_free(&f);
}

START_TEST(test_bad_keys)
{
	bad_key("io-pread", "threads = many\n", "threads");
	bad_key("io-pread", "threads = 0\n", "threads");
	bad_key("io-direct", "inline_submit = 2\n", "inline_submit");
}
END_TEST

START_TEST(test_bad_keys_uring)
{
	struct fx f;

	if (!fx_load(&f, plain("io-uring"), NULL))
		return;
	fx_free(&f);
	bad_key("io-uring", "depth = -3\n", "depth");
	bad_key("io-uring", "fixed_buffers = maybe\n", "fixed_buffers");
}
END_TEST

START_TEST(test_uring_keys)
{
	struct strata_io_caps caps;
	struct fx f;
	void *h, *b;
	size_t len = PAGE;

	if (!fx_load(&f, plain("io-uring"), "depth = 16\n"))
		return;
	open_ok(&f, 0, 64, &h); /* [io-uring] depth wins over the core's */
	f.ops->caps(h, &caps);
	ck_assert_int_eq(caps.depth, 16);
	ck_assert(caps.flags & STRATA_IO_CAP_ASYNC);
	ck_assert(caps.flags & STRATA_IO_CAP_FIXED_BUFFERS);
	f.ops->close(h);
	fx_free(&f);

	if (!fx_load(&f, plain("io-uring"), "fixed_buffers = false\n"))
		return;
	open_ok(&f, 0, 8, &h);
	f.ops->caps(h, &caps);
	ck_assert(!(caps.flags & STRATA_IO_CAP_FIXED_BUFFERS));
	ck_assert_int_eq(posix_memalign(&b, PAGE, PAGE), 0);
	ck_assert_int_eq(f.ops->register_buffers(h, &b, &len, 1), -ENOTSUP);
	f.ops->close(h);
	free(b);
	fx_free(&f);
}
END_TEST

/* io-direct: the inline mode says so; a buffered open serves inline too (AIO would block). */
START_TEST(test_direct_modes)
{
	struct strata_io_caps caps;
	struct fx f;
	void *h;

	if (!fx_load(&f, plain("io-direct"), "inline_submit = true\n"))
		return;
	open_ok(&f, 0, 8, &h);
	f.ops->caps(h, &caps);
	ck_assert(caps.flags & STRATA_IO_CAP_INLINE);
	ck_assert(!(caps.flags & STRATA_IO_CAP_ASYNC));
	f.ops->close(h);
	fx_free(&f);

	if (!fx_load(&f, plain("io-direct"), NULL))
		return;
	open_ok(&f, 0, 8, &h);
	f.ops->caps(h, &caps);
	ck_assert(caps.flags & STRATA_IO_CAP_INLINE);
	f.ops->close(h);
	fx_free(&f);
}
END_TEST

/* io-direct's default mode on an O_DIRECT handle: native AIO. */
START_TEST(test_direct_modes_direct)
{
	struct strata_io_caps caps;
	struct fx f;
	void *h;

	if (!direct_or_skip(plain("io-direct")) || !fx_load(&f, plain("io-direct"), NULL))
		return;
	open_ok(&f, STRATA_IO_DIRECT, 8, &h);
	f.ops->caps(h, &caps);
	ck_assert_int_eq(caps.flags & (STRATA_IO_CAP_DIRECT | STRATA_IO_CAP_ASYNC),
			 STRATA_IO_CAP_DIRECT | STRATA_IO_CAP_ASYNC);
	f.ops->close(h);
	fx_free(&f);
}
END_TEST

/* Probe scores rank the backends: io-uring > io-direct > io-pread. */
static int score_of(const char *name)
{
	struct fx f;
	int score;

	if (!fx_load(&f, plain(name), NULL))
		return 0;
	score = f.plugin->score;
	fx_free(&f);
	return score;
}

START_TEST(test_scores)
{
	int pread = score_of("io-pread"), direct;

	ck_assert_msg(pread > 0, "io-pread must always be usable");
	if ((direct = score_of("io-direct")) > 0)
		ck_assert_int_gt(direct, pread);
}
END_TEST

START_TEST(test_scores_uring)
{
	int uring = score_of("io-uring"), direct;

	if (!uring)
		return; /* skipped: fx_load said why */
	direct = score_of("io-direct");
	if (!direct)
		return;
	ck_assert_int_gt(uring, direct);
}
END_TEST

/* ---- setup ------------------------------------------------------------------------ */

/* A directory for the test file, preferring one that takes O_DIRECT. */
static int pick_dir(void)
{
	const char *env = getenv("TMPDIR");
	const char *cands[] = { env, STRATA_PLUGIN_DIR "/..", "/var/tmp", "/tmp" };
	size_t i;

	g_dir[0] = 0;
	for (i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		char dir[4096], file[4200];

		if (!cands[i] || !cands[i][0])
			continue;
		snprintf(dir, sizeof(dir), "%s/strata-check-io-XXXXXX", cands[i]);
		if (!mkdtemp(dir))
			continue;
		snprintf(file, sizeof(file), "%s/pattern.bin", dir);
		if (make_file(file)) {
			rmdir(dir);
			continue;
		}
		if (direct_works(file) || !g_dir[0]) {
			if (g_dir[0]) {
				unlink(g_file);
				rmdir(g_dir);
			}
			snprintf(g_dir, sizeof(g_dir), "%s", dir);
			snprintf(g_file, sizeof(g_file), "%s", file);
			g_direct_ok = direct_works(file);
			if (g_direct_ok)
				return 0;
		} else {
			unlink(file);
			rmdir(dir);
		}
	}
	return g_dir[0] ? 0 : -1;
}

static void remove_dir(void)
{
	char p[4200];
	int v;

	unlink(g_file);
	for (v = 0; v < N_VARIANTS; v++) {
		snprintf(p, sizeof(p), "%s/v%d.ini", g_dir, v);
		unlink(p);
	}
	rmdir(g_dir);
}

int main(void)
{
	Suite *s = suite_create("io");
	TCase *tc = tcase_create("plugins");
	TCase *direct = tcase_create("direct");
	TCase *uring = tcase_create("uring");
	int rc;

	if (pick_dir()) {
		printf("SKIP: cannot write an %u-byte test file in any temporary directory\n",
		       FILE_SIZE);
		return STRATA_TEST_SKIP;
	}
	printf("io test file: %s (O_DIRECT %s)\n", g_file, g_direct_ok ? "works" : "refused");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_random_reads, 0, N_PLAIN);
	tcase_add_loop_test(tc, test_eof, 0, N_PLAIN);
	tcase_add_loop_test(tc, test_reap_timeout, 0, N_PLAIN);
	tcase_add_loop_test(tc, test_close_in_flight, 0, N_PLAIN);
	tcase_add_loop_test(tc, test_open_errors, 0, N_PLAIN);
	tcase_add_loop_test(tc, test_open_direct_refused, 0, N_PLAIN);
	tcase_add_loop_test(tc, test_threads, 0, N_PLAIN);
	tcase_add_test(tc, test_bad_keys);
	tcase_add_test(tc, test_direct_modes);
	tcase_add_test(tc, test_scores);
	suite_add_tcase(s, tc);

	tcase_set_tags(direct, "o_direct");
	tcase_set_timeout(direct, 300);
	tcase_add_loop_test(direct, test_random_reads_direct, 0, N_PLAIN);
	tcase_add_loop_test(direct, test_eof_direct, 0, N_PLAIN);
	tcase_add_loop_test(direct, test_misaligned_direct, 0, N_PLAIN);
	tcase_add_test(direct, test_direct_modes_direct);
	suite_add_tcase(s, direct);

	/* Every io-uring case, direct ones included (they skip without O_DIRECT). */
	tcase_set_tags(uring, "io_uring");
	tcase_set_timeout(uring, 300);
	tcase_add_loop_test(uring, test_random_reads, N_PLAIN, N_VARIANTS);
	tcase_add_loop_test(uring, test_random_reads_direct, N_PLAIN, N_VARIANTS);
	tcase_add_loop_test(uring, test_eof, N_PLAIN, N_VARIANTS);
	tcase_add_loop_test(uring, test_eof_direct, N_PLAIN, N_VARIANTS);
	tcase_add_loop_test(uring, test_misaligned_direct, N_PLAIN, N_VARIANTS);
	tcase_add_loop_test(uring, test_reap_timeout, N_PLAIN, N_VARIANTS);
	tcase_add_loop_test(uring, test_close_in_flight, N_PLAIN, N_VARIANTS);
	tcase_add_loop_test(uring, test_open_errors, N_PLAIN, N_VARIANTS);
	tcase_add_loop_test(uring, test_open_direct_refused, N_PLAIN, N_VARIANTS);
	tcase_add_loop_test(uring, test_threads, N_PLAIN, N_VARIANTS);
	tcase_add_test(uring, test_bad_keys_uring);
	tcase_add_test(uring, test_uring_keys);
	tcase_add_test(uring, test_scores_uring);
	suite_add_tcase(s, uring);
	rc = tu_srunner_run(srunner_create(s));
	remove_dir();
	return rc;
}
