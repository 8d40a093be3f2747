/*
 * check_abi.c - the plugin ABI's safety rules, with real .so files built
 * wrong on purpose (tests/plugins/abi_plugin.c, in STRATA_TEST_PLUGIN_DIR/abi):
 *
 *   - a NULL required method, a NULL ops table, ops version 0, no probe(),
 *     an entry point that returns NULL: each refused with one line naming the
 *     file and the reason, by file and by name;
 *   - a plugin from a newer minor (ABI 1.9, ops version 3) is refused: it
 *     may rely on host fields this core lacks;
 *   - a plugin whose version-1 tables end where a PROT_NONE page begins is
 *     used without a fault: the core never reads past the declared version;
 *   - the other direction: io-faulty, handed a version-1 host table that
 *     ends at a guard page, refuses instead of reading the version-2 field;
 *   - host version 2's load_plugin() loads as the core does, and refuses a
 *     plugin loading itself;
 *   - the version rule: a plugin built against strata 1.0's header, and one
 *     built against the next minor's header needing nothing new, load and
 *     read; one needing the next minor is refused, saying so.
 *
 * Check runs each test in a child process: a fault or an abort() in the core
 * is a failed test, not a crashed suite.
 */
#define _GNU_SOURCE /* asprintf */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config/config.h"
#include "cpu/types.h"
#include "ple/ple.h"
#include "plugin/path.h"
#include "plugin/registry.h"
#include "testutil.h"
#include "util/log.h"

#define ADIR STRATA_TEST_PLUGIN_DIR "/abi"
#define FDIR STRATA_PLUGIN_DIR "/test"
#define HDIR STRATA_TEST_PLUGIN_DIR "/abi-hdr"
#define NROWS 3001u
#define RB 110u
#define ROW 160u

/* ---- captured log -------------------------------------------------------------------- */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_log[16384];
static int g_lines;

static void capture(void *user, int level, const char *line)
{
	size_t n;

	(void)user;
	if (level > STRATA_LOG_LVL_ERROR)
		return; /* warnings (a file system without O_DIRECT) are not refusals */
	pthread_mutex_lock(&g_mu);
	n = strlen(g_log);
	snprintf(g_log + n, sizeof(g_log) - n, "%s\n", line);
	g_lines++;
	pthread_mutex_unlock(&g_mu);
}

static void log_reset(void)
{
	g_log[0] = 0;
	g_lines = 0;
}

#define ck_log_has(s) ck_assert_msg(strstr(g_log, (s)) != NULL, "log lacks '%s':\n%s", (s), g_log)

static char g_dir[4096], g_table[4200];

static void setup(void)
{
	const char *d = tu_tmpdir();

	ck_assert_ptr_nonnull(d);
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	g_table[0] = 0;
	unsetenv("STRATA_PLUGIN_PATH");
	strata_log_set_sink(capture, NULL);
	log_reset();
}

static void teardown(void)
{
	strata_log_set_sink(NULL, NULL);
	tu_rmtree(g_dir);
}

/* A registry searching `dir` only. */
static struct strata_registry *reg_on(struct strata_config *c, const char *dir)
{
	struct strata_registry *reg;

	ck_assert_int_eq(strata_config_init(c), 0);
	free(c->plugin_dir);
	c->plugin_dir = strdup(dir);
	ck_assert_ptr_nonnull(c->plugin_dir);
	ck_assert_int_eq(strata_registry_create(c, NULL, &reg), 0);
	return reg;
}

/* ---- refusals ---------------------------------------------------------------------------- */

static const struct {
	const char *variant;
	int err;
	const char *reason;
} refusals[] = {
	{ "newer", -EPROTO, "needs ABI 1.9, newer than this core's 1.2" },
	{ "null_open", -EBADMSG, "required method open NULL" },
	{ "null_close", -EBADMSG, "required method close NULL" },
	{ "null_caps", -EBADMSG, "required method caps NULL" },
	{ "null_size", -EBADMSG, "required method size NULL" },
	{ "null_submit", -EBADMSG, "required method submit NULL" },
	{ "null_reap", -EBADMSG, "required method reap NULL" },
	{ "nullentry", -ENODATA, "entry strata_plugin_entry returned NULL" },
	{ "ops0", -EBADMSG, "ops table version 0 (must be >= 1)" },
	{ "noops", -EBADMSG, "required ops table NULL" },
	{ "noprobe", -EBADMSG, "required method probe NULL" },
};
#define N_REFUSALS (int)(sizeof(refusals) / sizeof(refusals[0]))

/* By file and by name through the search path: one line, "plugin FILE: REASON". */
START_TEST(refused)
{
	struct strata_config c;
	struct strata_registry *reg = reg_on(&c, ADIR);
	struct strata_plugin *p = (void *)1;
	char name[64], *path, line[1024];

	snprintf(name, sizeof(name), "abi-%s", refusals[_i].variant);
	ck_assert_int_ge(asprintf(&path, "%s/strata-%s.so", ADIR, name), 0);
	snprintf(line, sizeof(line), "plugin %s: %s\n", path, refusals[_i].reason);

	ck_assert_int_eq(strata_registry_load_file(reg, path, STRATA_PLUGIN_IO, &p),
			 refusals[_i].err);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(g_lines, 1);
	ck_assert_str_eq(g_log, line);

	log_reset();
	p = (void *)1;
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_IO, name, &p), refusals[_i].err);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(g_lines, 1);
	ck_assert_str_eq(g_log, line);
	free(path);
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

struct scan_log {
	char text[16384];
	int loaded, refused;
};

static void on_scan(void *user, const char *path, const struct strata_plugin *p, int err,
		    const char *reason)
{
	struct scan_log *s = user;
	size_t n = strlen(s->text);

	snprintf(s->text + n, sizeof(s->text) - n, "%s %d %s\n", path, err, p ? "ok" : reason);
	s->loaded += p != NULL;
	s->refused += p == NULL;
}

/* A scan (what `strata plugins` and "auto" do) reads every descriptor, guarded ones too. */
START_TEST(scan_and_command)
{
	struct strata_config c;
	struct strata_registry *reg = reg_on(&c, ADIR);
	struct scan_log s = { .text = "" };
	char want[1024], cmd[4096], out[16384];

	ck_assert_int_eq(strata_registry_scan(reg, on_scan, &s), 2);
	ck_assert_int_eq(s.refused, N_REFUSALS);
	ck_assert_msg(strstr(s.text, ADIR "/strata-abi-guard.so 0 ok\n"), "%s", s.text);
	ck_assert_msg(strstr(s.text, ADIR "/strata-abi-guardpath.so 0 ok\n"), "%s", s.text);
	for (int i = 0; i < N_REFUSALS; i++) {
		snprintf(want, sizeof(want), ADIR "/strata-abi-%s.so %d %s\n", refusals[i].variant,
			 refusals[i].err, refusals[i].reason);
		ck_assert_msg(strstr(s.text, want), "lacks '%s' in:\n%s", want, s.text);
	}
	ck_assert_int_eq(g_lines, 0);
	strata_registry_free(reg);
	strata_config_free(&c);

	/* The command, in its own process, lists them from the same descriptors. */
	snprintf(cmd, sizeof(cmd), "%s plugins --plugin-dir %s", STRATA_BIN, ADIR);
	ck_assert_int_eq(tu_run(cmd, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "io    abi-guard "), "%s", out);
	ck_assert_msg(strstr(out, "path  abi-guardpath "), "%s", out);
	ck_assert_msg(strstr(out, "strata-abi-newer.so: needs ABI 1.9, newer than this core's 1.2"),
		      "%s", out);
	ck_assert_msg(strstr(out, "strata-abi-null_reap.so: required method reap NULL"), "%s", out);
}
END_TEST

/* ---- reading through the plugins ------------------------------------------------------------ */

static void make_table(void)
{
	size_t n = (size_t)NROWS * RB;
	uint8_t *buf = malloc(n);

	ck_assert_ptr_nonnull(buf);
	snprintf(g_table, sizeof(g_table), "%s/ple.bin", g_dir);
	for (uint32_t r = 0; r < NROWS; r++)
		strata_ple_synth_row(STRATA_TYPE_Q5_0, ROW, r, buf + (size_t)r * RB);
	ck_assert_int_eq(tu_write_file(g_table, buf, n), 0);
	free(buf);
}

/*
 * Read every row of the table through io plugin `name` with `readers`
 * threads (the core calls open, caps, size, submit, reap, close) and check
 * them against the synthetic rows.
 */
static void read_through(struct strata_registry *reg, const char *name, uint32_t readers)
{
	struct strata_ple_table t = { g_table, 0, NROWS, STRATA_TYPE_Q5_0, ROW };
	struct strata_ple_opts o;
	struct strata_ple_reader *r;
	struct strata_ple_chunk *c;
	uint64_t *rows = malloc((NROWS + 5) * sizeof(*rows));
	float *out = malloc((size_t)(NROWS + 5) * ROW * sizeof(float)), ref[ROW];
	uint8_t raw[RB];

	ck_assert(rows && out);
	for (uint32_t i = 0; i < NROWS + 5; i++)
		rows[i] = (i * 7u) % (NROWS + 5);
	strata_ple_opts_default(&o);
	o.readers = readers;
	o.depth = 4;
	o.row_cache = 0;
	o.batch_rows = 64;
	o.plugin = name;
	ck_assert_int_eq(strata_ple_reader_open(reg, &t, &o, &r), 0);
	ck_assert_str_eq(strata_ple_reader_io_name(r), name);
	ck_assert_int_eq(strata_ple_chunk_create(r, &c), 0);
	ck_assert_int_eq(strata_ple_start(c, rows, NROWS + 5, out), 0);
	ck_assert_int_eq(strata_ple_wait(c), 0);
	for (uint32_t i = 0; i < NROWS + 5; i++) {
		if (rows[i] >= NROWS)
			continue;
		strata_ple_synth_row(STRATA_TYPE_Q5_0, ROW, rows[i], raw);
		strata_ple_decode_row(STRATA_TYPE_Q5_0, raw, ref, ROW);
		ck_assert_msg(!memcmp(out + (size_t)i * ROW, ref, sizeof(ref)), "row %llu",
			      (unsigned long long)rows[i]);
	}
	strata_ple_chunk_free(c);
	strata_ple_reader_close(r);
	free(rows);
	free(out);
}

/* Version-1 io ops and a 1.0 descriptor ending at a guard page: loads and reads. */
START_TEST(guarded_io_tables)
{
	struct strata_config c;
	struct strata_registry *reg = reg_on(&c, ADIR);
	struct strata_plugin *p;
	long pg = sysconf(_SC_PAGESIZE);

	make_table();
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_IO, "abi-guard", &p), 0);
	/* The tables do end at a page boundary (so the next byte would fault). */
	ck_assert_uint_eq(((uintptr_t)p->desc->ops +
			   offsetof(struct strata_io_ops, register_buffers) + sizeof(void *)) % pg, 0);
	ck_assert_uint_eq(((uintptr_t)p->desc +
			   offsetof(struct strata_plugin_desc, config_keys) + sizeof(void *)) % pg,
			  0);
	read_through(reg, "abi-guard", 0);
	read_through(reg, "abi-guard", 3);
	ck_assert_int_eq(g_lines, 0);
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

/*
 * The version rule (plugin.h): the same io plugin built against strata
 * 1.0's header loads and reads; built against the next minor's header
 * needing minor 0 it loads and reads in this core; built against that
 * header with STRATA_PLUGIN_ABI (needing the next minor) it is refused
 * with the minor it needs and the core's.
 */
START_TEST(older_and_newer_headers)
{
	struct strata_config c;
	struct strata_registry *reg = reg_on(&c, HDIR);
	struct strata_plugin *p;
	char want[256];

	make_table();
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_IO, "abi-hdr10", &p), 0);
	ck_assert_uint_eq(p->desc->abi, (uint32_t)STRATA_PLUGIN_ABI_MAJOR << 16);
	read_through(reg, "abi-hdr10", 2);
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_IO, "abi-next0", &p), 0);
	ck_assert_uint_eq(p->desc->abi, STRATA_PLUGIN_ABI_NEEDS(0));
	read_through(reg, "abi-next0", 2);
	ck_assert_int_eq(g_lines, 0);
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_IO, "abi-next", &p), -EPROTO);
	snprintf(want, sizeof(want), "strata-abi-next.so: needs ABI %d.%d, newer than this core's %d.%d",
		 STRATA_PLUGIN_ABI_MAJOR, STRATA_PLUGIN_ABI_MINOR + 1, STRATA_PLUGIN_ABI_MAJOR,
		 STRATA_PLUGIN_ABI_MINOR);
	ck_log_has(want);
	ck_assert_int_eq(g_lines, 1);
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

static int g_batched;

static int count_batch(void *engine, const int32_t *tokens, uint32_t n)
{
	(void)engine;
	(void)tokens;
	g_batched += (int)n;
	return 0;
}

/* The same for a path plugin: the path list creates, asks, runs and destroys it. */
START_TEST(guarded_path_tables)
{
	struct strata_config c;
	struct strata_registry *reg = reg_on(&c, ADIR);
	struct strata_path_list *list;
	int32_t toks[5] = { 1, 2, 3, 4, 5 };
	struct strata_part part = { .tokens = toks, .n_tokens = 5, .is_last = 1 };
	struct strata_engine_iface eng = { .version = 1, .forward_batch = count_batch };

	ck_assert_int_eq(strata_path_list_create(reg, "abi-guardpath", &list), 0);
	g_batched = 0;
	ck_assert_int_eq(strata_path_list_run(list, &part, &eng), 0);
	ck_assert_int_eq(g_batched, 5);
	strata_path_list_free(list);
	ck_assert_int_eq(g_lines, 0);
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

/* ---- the host table, seen from a plugin --------------------------------------------------- */

static char g_plugin_log[1024];

static void v1_log(const struct strata_host *h, int level, const char *fmt, ...)
{
	va_list ap;

	(void)h;
	(void)level;
	va_start(ap, fmt);
	vsnprintf(g_plugin_log, sizeof(g_plugin_log), fmt, ap);
	va_end(ap);
}

static const char *v1_config(const struct strata_host *h, const char *sec, const char *key)
{
	(void)h;
	(void)sec;
	(void)key;
	return NULL;
}

static void *v1_alloc(size_t align, size_t size)
{
	void *p = NULL;

	return posix_memalign(&p, align, size) ? NULL : p;
}

/* A version-1 host table (up to `core`) whose last byte is followed by a PROT_NONE page. */
static const struct strata_host *host_v1_guarded(void)
{
	const struct strata_host full = { .version = 1, .log = v1_log, .config_get = v1_config,
					  .aligned_alloc = v1_alloc, .aligned_free = free };
	size_t len = offsetof(struct strata_host, core) + sizeof(void *);
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert(m != MAP_FAILED);
	memcpy(m + pg - len, &full, len);
	ck_assert_int_eq(mprotect(m + pg, (size_t)pg, PROT_NONE), 0);
	return (const struct strata_host *)(void *)(m + pg - len);
}

/* io-faulty needs load_plugin (version 2): from a version-1 core it refuses, cleanly. */
START_TEST(plugin_checks_host_version)
{
	struct strata_config c;
	struct strata_registry *reg = reg_on(&c, FDIR);
	struct strata_plugin *p;
	const struct strata_io_ops *ops;
	const struct strata_host *old = host_v1_guarded();
	void *h = (void *)1;

	make_table();
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_IO, "io-faulty", &p), 0);
	ck_assert_uint_ge(p->host.version, 2);
	ops = p->desc->ops;
	ck_assert_int_eq(p->desc->probe(old), 0);
	g_plugin_log[0] = 0;
	ck_assert_int_eq(ops->open(old, g_table, 0, 8, &h), -ENOTSUP);
	ck_assert_ptr_null(h);
	ck_assert_msg(strstr(g_plugin_log, "needs host table version 2 (load_plugin)"), "%s",
		      g_plugin_log);
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

/* load_plugin: the core's own loading, lent to a wrapper plugin. */
START_TEST(host_load_plugin)
{
	struct strata_config c;
	struct strata_registry *reg = reg_on(&c, ADIR);
	struct strata_plugin *p, *q;
	const struct strata_plugin_desc *d = (void *)1;
	const struct strata_host *h = (void *)1;

	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_PATH, "abi-guardpath", &p), 0);
	ck_assert_uint_eq(p->host.version, 3);
	ck_assert_int_eq(p->host.load_plugin(&p->host, STRATA_PLUGIN_IO, "abi-guard", &d, &h), 0);
	ck_assert_str_eq(d->name, "abi-guard");
	ck_assert_uint_eq(h->version, 3);
	/* The same record the core gets. */
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_IO, "abi-guard", &q), 0);
	ck_assert_ptr_eq(q->desc, d);
	ck_assert_ptr_eq(&q->host, h);
	ck_assert_int_eq(g_lines, 0);
	/* Refusals come with the core's message; the outputs are cleared. */
	ck_assert_int_eq(p->host.load_plugin(&p->host, STRATA_PLUGIN_PATH, "abi-guardpath", &d,
					     &h), -ELOOP);
	ck_assert_ptr_null(d);
	ck_assert_ptr_null(h);
	ck_log_has("strata-abi-guardpath.so: 'abi-guardpath' cannot load itself");
	log_reset();
	ck_assert_int_eq(p->host.load_plugin(&p->host, STRATA_PLUGIN_IO, "abi-null_reap", &d, &h),
			 -EBADMSG);
	ck_log_has("strata-abi-null_reap.so: required method reap NULL");
	log_reset();
	ck_assert_int_eq(p->host.load_plugin(&p->host, STRATA_PLUGIN_IO, "abi-newer", &d, &h),
			 -EPROTO);
	ck_log_has("strata-abi-newer.so: needs ABI 1.9, newer than this core's 1.2");
	log_reset();
	ck_assert_int_eq(p->host.load_plugin(&p->host, STRATA_PLUGIN_PATH, "abi-guard", &d, &h),
			 -ENOTSUP);
	ck_log_has("kind path expected, got io");
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("abi");
	TCase *tc = tcase_create("abi");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, refused, 0, N_REFUSALS);
	tcase_add_test(tc, scan_and_command);
	tcase_add_test(tc, guarded_io_tables);
	tcase_add_test(tc, guarded_path_tables);
	tcase_add_test(tc, older_and_newer_headers);
	tcase_add_test(tc, plugin_checks_host_version);
	tcase_add_test(tc, host_load_plugin);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
