/*
 * check_io.c - the io plugins (io-pread, io-uring, io-direct) through the
 * io ops of include/strata/plugin.h, loaded from STRATA_PLUGIN_DIR like the
 * core loads them: each case of the conformance suite (core/plugin/
 * io_check.c, what `strata io-check` runs) per variant, what the in-tree
 * plugins promise beyond the ABI (their caps, keys, modes and scores), and
 * the command itself, which must fail a plugin that breaks the ABI.
 *
 * Every test runs once per variant (a plugin plus its INI section).  A
 * variant whose plugin is not built here or probes unusable is a skipped
 * case (TU_SKIP, counted), and so is a direct-mode case where no directory
 * here takes O_DIRECT.  The io-uring cases (tag io_uring) and the other
 * plugins' direct-mode cases (tag o_direct) are ctest tests of their own,
 * check_io.io_uring and check_io.o_direct, so that where the machine lacks
 * them ctest lists them as skipped.
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "plugin/io_check.h"
#include "plugin/registry.h"
#include "testutil.h"
#include "util/log.h"

#define PAGE STRATA_IOCHECK_PAGE
#define FILE_SIZE STRATA_IOCHECK_FILE_SIZE

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

static struct strata_iocheck g_k; /* the pattern file, its directory, whether O_DIRECT works */

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
	snprintf(ini, sizeof(ini), "%s/v%d.ini", g_k.dir, v);
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


/* ---- tests ---------------------------------------------------------------------- */

static void open_ok(struct fx *f, uint32_t flags, uint32_t depth, void **h)
{
	int rc = f->ops->open(f->host, g_k.file, flags, depth, h);

	ck_assert_msg(rc == 0, "open(%s, flags %u, depth %u): %s", g_k.file, flags, depth,
		      strerror(-rc));
	ck_assert_ptr_nonnull(*h);
}

/* A direct-mode case's start: 0 (skipped) where no directory here takes O_DIRECT. */
static int direct_or_skip(int v)
{
	if (!g_k.direct_ok)
		tu_skip("%s direct: no directory here takes O_DIRECT (set TMPDIR)", variants[v].label);
	return g_k.direct_ok;
}

/* Conformance case c (io_check.h) on variant v: passes, or fails with the suite's reason. */
static void run_case(int v, int c)
{
	struct strata_iocheck k = g_k;
	struct fx f;
	int rc;

	if (!fx_load(&f, v, NULL))
		return;
	k.ops = f.ops;
	k.host = f.host;
	rc = strata_iocheck_run(&k, c);
	if (rc > 0)
		tu_skip("%s, %s: %s", variants[v].label, strata_iocheck_case_name(c), k.err);
	ck_assert_msg(rc >= 0, "%s, %s: %s", variants[v].label, strata_iocheck_case_name(c), k.err);
	fx_free(&f);
}

START_TEST(test_random_reads) { run_case(_i, STRATA_IOCHECK_RANDOM); }
END_TEST
START_TEST(test_random_reads_direct) { run_case(_i, STRATA_IOCHECK_RANDOM_DIRECT); }
END_TEST
START_TEST(test_eof) { run_case(_i, STRATA_IOCHECK_EOF); }
END_TEST
START_TEST(test_eof_direct) { run_case(_i, STRATA_IOCHECK_EOF_DIRECT); }
END_TEST
START_TEST(test_misaligned_direct) { run_case(_i, STRATA_IOCHECK_MISALIGNED); }
END_TEST
START_TEST(test_reap_timeout) { run_case(_i, STRATA_IOCHECK_REAP_TIMEOUT); }
END_TEST
START_TEST(test_close_in_flight) { run_case(_i, STRATA_IOCHECK_CLOSE_IN_FLIGHT); }
END_TEST
START_TEST(test_open_errors) { run_case(_i, STRATA_IOCHECK_OPEN_ERRORS); }
END_TEST
START_TEST(test_threads) { run_case(_i, STRATA_IOCHECK_THREADS); }
END_TEST

/* What the in-tree plugins promise beyond the ABI: the depth asked, page alignment direct, none buffered. */
static void exact_caps(int v, int direct)
{
	static const uint32_t depths[] = { 1, 8, 32, 128 };
	struct fx f;

	if ((direct && !direct_or_skip(v)) || !fx_load(&f, v, NULL))
		return;
	for (int d = 0; d < 4; d++) {
		struct strata_io_caps caps;
		void *h;

		open_ok(&f, direct ? STRATA_IO_DIRECT : 0, depths[d], &h);
		ck_assert_int_eq(f.ops->caps(h, &caps), 0);
		ck_assert_int_eq(caps.depth, depths[d]);
		ck_assert_int_eq(!!(caps.flags & STRATA_IO_CAP_DIRECT), direct);
		ck_assert_int_eq(caps.buf_align, direct ? PAGE : 1);
		ck_assert_int_eq(caps.offset_align, direct ? PAGE : 1);
		f.ops->close(h);
	}
	fx_free(&f);
}

START_TEST(test_caps) { exact_caps(_i, 0); }
END_TEST
START_TEST(test_caps_direct) { exact_caps(_i, 1); }
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

/*
 * `strata io-check`: passes the in-tree plugins, and fails io-faulty when it
 * cuts reads short (one FAIL line naming the read, exit 1), which it passes
 * when it injects nothing.
 */
START_TEST(test_command)
{
	char cmd[16384], out[65536], ini[4200];
	const char *faulty = "[io-faulty]\ninner = io-pread\nshort_rate = 0.02\n";

	snprintf(cmd, sizeof(cmd), "%s io-check io-pread --dir %s 2>&1", STRATA_BIN, g_k.dir);
	ck_assert_msg(tu_run(cmd, out, sizeof(out)) == 0, "%s", out);
	ck_assert_msg(strstr(out, "io-check: io-pread: 9 passed, 0 skipped, 0 failed") ||
			      (!g_k.direct_ok && strstr(out, "io-check: io-pread: 6 passed, 3 skipped, 0 failed")),
		      "%s", out);
	snprintf(cmd, sizeof(cmd), "%s io-check io-faulty --plugin-dir %s/test --dir %s 2>&1",
		 STRATA_BIN, STRATA_PLUGIN_DIR, g_k.dir);
	ck_assert_msg(tu_run(cmd, out, sizeof(out)) == 0, "%s", out);
	snprintf(ini, sizeof(ini), "%s/faulty.ini", g_k.dir);
	ck_assert_int_eq(tu_write_file(ini, faulty, strlen(faulty)), 0);
	snprintf(cmd, sizeof(cmd), "%s io-check io-faulty -c %s --plugin-dir %s/test --dir %s 2>&1",
		 STRATA_BIN, ini, STRATA_PLUGIN_DIR, g_k.dir);
	ck_assert_int_eq(tu_run(cmd, out, sizeof(out)), 1);
	unlink(ini);
	ck_assert_msg(strstr(out, "  FAIL  random reads ") && strstr(out, "(want "), "%s", out);
	ck_assert_msg(strstr(out, "strata: error: io-check: io-faulty ("), "%s", out);
	/* Not an io plugin, and no plugin at all: one error line each. */
	snprintf(cmd, sizeof(cmd), "%s io-check path-batched 2>&1", STRATA_BIN);
	ck_assert_int_eq(tu_run(cmd, out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, "path-batched") && !strstr(out, "io-check: path-batched"), "%s", out);
	snprintf(cmd, sizeof(cmd), "%s io-check io-nonesuch 2>&1", STRATA_BIN);
	ck_assert_int_eq(tu_run(cmd, out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, "strata-io-nonesuch.so not found"), "%s", out);
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
	ck_assert_int_eq(f.ops->open(f.host, g_k.file, 0, 8, &h), -EINVAL);
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

/* Whether this process may use Linux native AIO, io-direct's async mode:
 * seccomp may refuse io_setup, qemu-user does not emulate it (tools/test.sh's
 * aarch64 stage), other systems have none.  io-direct runs inline then. */
static int aio_usable(void)
{
#ifdef SYS_io_setup
	unsigned long ctx = 0;

	if (syscall(SYS_io_setup, 1, &ctx) != 0)
		return 0;
	syscall(SYS_io_destroy, ctx);
	return 1;
#else
	return 0;
#endif
}

/* io-direct's default mode on an O_DIRECT handle: native AIO. */
START_TEST(test_direct_modes_direct)
{
	struct strata_io_caps caps;
	struct fx f;
	void *h;

	if (!direct_or_skip(plain("io-direct")))
		return;
	if (!aio_usable()) {
		tu_skip("io-direct aio: no Linux AIO here (io_setup refused)");
		return;
	}
	if (!fx_load(&f, plain("io-direct"), NULL))
		return;
	open_ok(&f, STRATA_IO_DIRECT, 8, &h);
	f.ops->caps(h, &caps);
	ck_assert_int_eq(caps.flags & (STRATA_IO_CAP_DIRECT | STRATA_IO_CAP_ASYNC),
			 STRATA_IO_CAP_DIRECT | STRATA_IO_CAP_ASYNC);
	f.ops->close(h);
	fx_free(&f);
}
END_TEST

/* Probe scores rank the backends: io-uring > io-direct > io-pread, but
 * io-direct below io-pread where it can only run inline (no AIO: io-pread's
 * threads overlap reads then). */
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
	if ((direct = score_of("io-direct")) > 0 && aio_usable())
		ck_assert_int_gt(direct, pread);
	else if (direct > 0)
		ck_assert_int_lt(direct, pread);
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

static void remove_dir(void)
{
	char p[4200];
	int v;

	for (v = 0; v < N_VARIANTS; v++) {
		snprintf(p, sizeof(p), "%s/v%d.ini", g_k.dir, v);
		unlink(p);
	}
	strata_iocheck_cleanup(&g_k);
}

int main(void)
{
	Suite *s = suite_create("io");
	TCase *tc = tcase_create("plugins");
	TCase *direct = tcase_create("direct");
	TCase *uring = tcase_create("uring");
	int rc;

	if (strata_iocheck_prepare(&g_k, STRATA_PLUGIN_DIR "/..")) {
		printf("SKIP: cannot write an %u-byte test file in any temporary directory\n",
		       FILE_SIZE);
		return STRATA_TEST_SKIP;
	}
	printf("io test file: %s (O_DIRECT %s)\n", g_k.file, g_k.direct_ok ? "works" : "refused");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_random_reads, 0, N_PLAIN);
	tcase_add_loop_test(tc, test_caps, 0, N_PLAIN);
	tcase_add_loop_test(tc, test_eof, 0, N_PLAIN);
	tcase_add_loop_test(tc, test_reap_timeout, 0, N_PLAIN);
	tcase_add_loop_test(tc, test_close_in_flight, 0, N_PLAIN);
	tcase_add_loop_test(tc, test_open_errors, 0, N_PLAIN);
	tcase_add_loop_test(tc, test_open_direct_refused, 0, N_PLAIN);
	tcase_add_loop_test(tc, test_threads, 0, N_PLAIN);
	tcase_add_test(tc, test_bad_keys);
	tcase_add_test(tc, test_direct_modes);
	tcase_add_test(tc, test_scores);
	tcase_add_test(tc, test_command);
	suite_add_tcase(s, tc);

	tcase_set_tags(direct, "o_direct");
	tcase_set_timeout(direct, 300);
	tcase_add_loop_test(direct, test_random_reads_direct, 0, N_PLAIN);
	tcase_add_loop_test(direct, test_caps_direct, 0, N_PLAIN);
	tcase_add_loop_test(direct, test_eof_direct, 0, N_PLAIN);
	tcase_add_loop_test(direct, test_misaligned_direct, 0, N_PLAIN);
	tcase_add_test(direct, test_direct_modes_direct);
	suite_add_tcase(s, direct);

	/* Every io-uring case, direct ones included (they skip without O_DIRECT). */
	tcase_set_tags(uring, "io_uring");
	tcase_set_timeout(uring, 300);
	tcase_add_loop_test(uring, test_random_reads, N_PLAIN, N_VARIANTS);
	tcase_add_loop_test(uring, test_caps, N_PLAIN, N_VARIANTS);
	tcase_add_loop_test(uring, test_caps_direct, N_PLAIN, N_VARIANTS);
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
