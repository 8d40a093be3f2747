/*
 * check_plugin.c - the plugin loader, the prompt path list and path-batched.
 *
 * The loader is exercised with the helper plugins of tests/plugins (one per
 * way a plugin can be refused, in STRATA_TEST_PLUGIN_DIR) and the real
 * path-batched (STRATA_PLUGIN_DIR), run against a fake engine that records
 * the chunks it is fed.
 */
#define _GNU_SOURCE /* asprintf */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "plugin/path.h"
#include "plugin/registry.h"
#include "testutil.h"
#include "util/log.h"

#define TDIR STRATA_TEST_PLUGIN_DIR
#define PDIR STRATA_PLUGIN_DIR

/* ---- captured log lines ------------------------------------------------- */

static char g_log[16384];
static int g_log_lines;

static void capture(void *user, int level, const char *line)
{
	size_t n = strlen(g_log);

	(void)user;
	(void)level;
	snprintf(g_log + n, sizeof(g_log) - n, "%s\n", line);
	g_log_lines++;
}

static void log_reset(void)
{
	g_log[0] = 0;
	g_log_lines = 0;
}

static void setup(void)
{
	unsetenv("STRATA_PLUGIN_PATH");
	strata_log_set_sink(capture, NULL);
	log_reset();
}

static void teardown(void)
{
	strata_log_set_sink(NULL, NULL);
}

#define ck_log_has(s) ck_assert_msg(strstr(g_log, (s)) != NULL, "log lacks '%s':\n%s", (s), g_log)

/* ---- helpers ------------------------------------------------------------ */

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	ck_assert_ptr_nonnull(d);
	return d;
}

static char *tmpdir(void)
{
	const char *d = tu_tmpdir();

	ck_assert_ptr_nonnull(d);
	return xstrdup(d);
}

/* Remove a test directory's files, the directory, and free its name. */
static void rm_dir(char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)) != NULL) {
		char *p;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ck_assert_int_ge(asprintf(&p, "%s/%s", dir, de->d_name), 0);
		unlink(p);
		free(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
	free(dir);
}

static char *path2(const char *dir, const char *name)
{
	char *p;

	ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
	return p;
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	void *data = tu_read_file(from, &len);

	ck_assert_msg(data != NULL, "cannot read %s", from);
	ck_assert_int_eq(tu_write_file(to, data, len), 0);
	free(data);
}

/* Config with defaults, then `ini` (when non-NULL) loaded from a file in dir. */
static void cfg_make(struct strata_config *c, const char *dir, const char *ini)
{
	ck_assert_int_eq(strata_config_init(c), 0);
	if (ini) {
		char *p = path2(dir, "strata.ini");

		ck_assert_int_eq(tu_write_file(p, ini, strlen(ini)), 0);
		ck_assert_int_eq(strata_config_load_file(c, p), 0);
		free(p);
	}
}

static void cfg_set_dir(struct strata_config *c, const char *dir)
{
	free(c->plugin_dir);
	c->plugin_dir = dir ? xstrdup(dir) : NULL;
}

static struct strata_registry *reg_make(const struct strata_config *c)
{
	struct strata_registry *reg;

	ck_assert_int_eq(strata_registry_create(c, NULL, &reg), 0);
	return reg;
}

/* ---- refusals ------------------------------------------------------------ */

static const struct refusal_case {
	const char *variant;
	int err;
	const char *reason;
} refusals[] = {
	{ "abi", -EPROTO, "ABI major 2, core expects 1" },
	{ "newer", -EPROTO, "needs ABI 1.9, newer than this core's 1.2" },
	{ "noentry", -ENOSYS, "no entry symbol strata_plugin_entry (not a strata plugin)" },
	{ "nullentry", -ENODATA, "entry strata_plugin_entry returned NULL" },
	{ "io", -ENOTSUP, "kind path expected, got io" },
	{ "probe0", -ENODEV, "probe says unusable on this machine" },
	{ "nullmethod", -EBADMSG, "required method accepts NULL" },
};
#define N_REFUSALS (int)(sizeof(refusals) / sizeof(refusals[0]))

/*
 * One refusal per loop index, by file path and then by name through the
 * search path: each time exactly one line, naming the file and the reason.
 */
START_TEST(test_refused)
{
	const struct refusal_case *rc = &refusals[_i];
	struct strata_config c;
	struct strata_registry *reg;
	struct strata_plugin *p = (void *)1;
	char name[64], *path, line[1024];

	cfg_make(&c, NULL, NULL);
	cfg_set_dir(&c, TDIR);
	reg = reg_make(&c);
	snprintf(name, sizeof(name), "test-%s", rc->variant);
	ck_assert_int_ge(asprintf(&path, "%s/strata-%s.so", TDIR, name), 0);
	snprintf(line, sizeof(line), "plugin %s: %s\n", path, rc->reason);

	ck_assert_int_eq(strata_registry_load_file(reg, path, STRATA_PLUGIN_PATH, &p), rc->err);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(g_log_lines, 1);
	ck_assert_str_eq(g_log, line);

	log_reset();
	p = (void *)1;
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_PATH, name, &p), rc->err);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(g_log_lines, 1);
	ck_assert_str_eq(g_log, line);
	free(path);
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

START_TEST(test_refused_files)
{
	struct strata_config c;
	struct strata_registry *reg;
	struct strata_plugin *p;
	char *dir = tmpdir();
	char *garbage = path2(dir, "strata-garbage.so");
	char *missing = path2(dir, "strata-missing.so");
	char *misnamed = path2(dir, "strata-other.so");
	char *good = path2(TDIR, "strata-test-good.so");

	cfg_make(&c, NULL, NULL);
	cfg_set_dir(&c, dir);
	reg = reg_make(&c);

	ck_assert_int_eq(tu_write_file(garbage, "not an ELF file\n", 16), 0);
	ck_assert_int_eq(strata_registry_load_file(reg, garbage, 0, &p), -ENOEXEC);
	ck_assert_ptr_null(p);
	ck_log_has(garbage);
	ck_log_has(": not loadable: ");

	log_reset();
	ck_assert_int_eq(strata_registry_load_file(reg, missing, 0, &p), -ENOENT);
	ck_log_has(missing);

	/* A file named after one plugin that declares another. */
	log_reset();
	copy_file(good, misnamed);
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_PATH, "other", &p), -EBADMSG);
	ck_log_has(misnamed);
	ck_log_has("declares plugin name 'test-good', its file name says 'other'");

	/* Names that could leave the search directory are refused outright. */
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_PATH, "../x", &p), -EINVAL);
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_PATH, "", &p), -EINVAL);

	rm_dir(dir);
	free(garbage);
	free(missing);
	free(misnamed);
	free(good);
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

START_TEST(test_not_found_lists_dirs)
{
	struct strata_config c;
	struct strata_registry *reg;
	struct strata_plugin *p;
	char *a = tmpdir(), *b = tmpdir(), *env;

	cfg_make(&c, NULL, NULL);
	cfg_set_dir(&c, a);
	ck_assert_int_ge(asprintf(&env, "%s::%s/", b, TDIR), 0); /* empty entry, trailing '/' */
	setenv("STRATA_PLUGIN_PATH", env, 1);
	reg = reg_make(&c);
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_PATH, "nope", &p), -ENOENT);
	ck_assert_int_eq(g_log_lines, 1);
	ck_log_has("plugin 'nope': strata-nope.so not found; searched: ");
	{
		char want[4096];

		snprintf(want, sizeof(want), "searched: %s, %s, %s\n", a, b, TDIR);
		ck_log_has(want);
	}
	strata_registry_free(reg);

	/* Nothing configured at all: the message says how to configure it. */
	log_reset();
	unsetenv("STRATA_PLUGIN_PATH");
	cfg_set_dir(&c, NULL);
	reg = reg_make(&c);
	ck_assert_ptr_null(strata_registry_search_path(reg)[0]);
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_PATH, "nope", &p), -ENOENT);
	ck_log_has("the search path is empty");
	strata_registry_free(reg);
	rm_dir(a);
	rm_dir(b);
	free(env);
	strata_config_free(&c);
}
END_TEST

/* ---- successful loads ---------------------------------------------------- */

START_TEST(test_good_plugin)
{
	struct strata_config c;
	struct strata_registry *reg;
	struct strata_plugin *p, *q, *io;
	char *path = path2(TDIR, "strata-test-good.so");

	cfg_make(&c, NULL, NULL);
	cfg_set_dir(&c, TDIR);
	reg = reg_make(&c);
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_PATH, "test-good", &p), 0);
	ck_assert_str_eq(p->desc->name, "test-good");
	ck_assert_str_eq(p->path, path);
	ck_assert_int_eq(p->score, 3);
	ck_assert_uint_eq(p->host.version, 3);
	ck_assert_ptr_nonnull(p->host.core);
	/* Loaded once: by name or by file, the same record comes back. */
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_PATH, "test-good", &q), 0);
	ck_assert_ptr_eq(p, q);
	ck_assert_int_eq(strata_registry_load_file(reg, path, 0, &q), 0);
	ck_assert_ptr_eq(p, q);
	/* Kind 0 takes any kind; asking an io plugin for a path is refused. */
	ck_assert_int_eq(strata_registry_load(reg, 0, "test-io", &io), 0);
	ck_assert_uint_eq(io->desc->kind, STRATA_PLUGIN_IO);
	ck_assert_str_eq(strata_plugin_kind_name(io->desc->kind), "io");
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_PATH, "test-io", &q), -ENOTSUP);
	ck_log_has("kind path expected, got io");
	/* The same plugin name from another file is refused. */
	{
		char *dir = tmpdir(), *copy = path2(dir, "strata-test-good.so");

		copy_file(path, copy);
		log_reset();
		ck_assert_int_eq(strata_registry_load_file(reg, copy, 0, &q), -EEXIST);
		ck_log_has("is already loaded from");
		rm_dir(dir);
		free(copy);
	}
	/* Aligned allocation from the host table. */
	{
		void *m = p->host.aligned_alloc(4096, 100);

		ck_assert_ptr_nonnull(m);
		ck_assert_uint_eq((uintptr_t)m % 4096, 0);
		p->host.aligned_free(m);
	}
	free(path);
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

/* [plugins] dir first, then STRATA_PLUGIN_PATH in order, then the executable's. */
START_TEST(test_search_order)
{
	struct strata_config c;
	struct strata_registry *reg;
	struct strata_plugin *p;
	char *a = tmpdir(), *b = tmpdir(), *e = tmpdir(), *ini, *env;
	char *good = path2(TDIR, "strata-test-good.so");
	char *pa = path2(a, "strata-test-good.so"), *pb = path2(b, "strata-test-good.so");

	copy_file(good, pa);
	copy_file(good, pb);
	ck_assert_int_ge(asprintf(&ini, "[plugins]\ndir = %s\n", a), 0);
	ck_assert_int_ge(asprintf(&env, "%s:%s", e, b), 0);
	setenv("STRATA_PLUGIN_PATH", env, 1);

	cfg_make(&c, e, ini);
	ck_assert_str_eq(c.plugin_dir, a);
	reg = reg_make(&c);
	ck_assert_str_eq(strata_registry_search_path(reg)[0], a);
	ck_assert_str_eq(strata_registry_search_path(reg)[1], e);
	ck_assert_str_eq(strata_registry_search_path(reg)[2], b);
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_PATH, "test-good", &p), 0);
	ck_assert_str_eq(p->path, pa);
	strata_registry_free(reg);

	/* Without [plugins] dir: the first environment directory that has it. */
	cfg_set_dir(&c, NULL);
	reg = reg_make(&c);
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_PATH, "test-good", &p), 0);
	ck_assert_str_eq(p->path, pb);
	strata_registry_free(reg);

	/* The executable's directory and its plugins/ come last. */
	unsetenv("STRATA_PLUGIN_PATH");
	ck_assert_int_eq(strata_registry_create(&c, "check_plugin", &reg), 0);
	{
		const char *const *dirs = strata_registry_search_path(reg);
		char *exe = realpath("/proc/self/exe", NULL), *slash, *sub;

		ck_assert_ptr_nonnull(exe);
		slash = strrchr(exe, '/');
		*slash = 0;
		sub = path2(exe, "plugins");
		ck_assert_str_eq(dirs[0], exe);
		ck_assert_str_eq(dirs[1], sub);
		ck_assert_ptr_null(dirs[2]);
		free(exe);
		free(sub);
	}
	strata_registry_free(reg);

	free(pa);
	free(pb);
	rm_dir(a);
	rm_dir(b);
	rm_dir(e);
	free(ini);
	free(env);
	free(good);
	strata_config_free(&c);
}
END_TEST

/* ---- a fake engine ---------------------------------------------------------- */

#define MAX_CALLS 4096

struct fake {
	const int32_t *base;   /* the part's tokens */
	uint32_t consumed;     /* tokens fed so far */
	uint32_t max_batch;
	uint32_t window;
	int fail_at;           /* forward_batch call that returns -EIO; -1 = never */
	int contiguous;        /* every call continued where the last stopped */
	int n_batch, n_window;
	uint32_t sizes[MAX_CALLS];
};

static void fake_feed(struct fake *f, const int32_t *t, uint32_t n)
{
	if (t != f->base + f->consumed)
		f->contiguous = 0;
	f->consumed += n;
}

static int fake_batch(void *e, const int32_t *t, uint32_t n)
{
	struct fake *f = e;

	if (f->n_batch == f->fail_at)
		return -EIO;
	ck_assert_int_lt(f->n_batch, MAX_CALLS);
	f->sizes[f->n_batch++] = n;
	fake_feed(f, t, n);
	return 0;
}

static int fake_window(void *e, const int32_t *t, uint32_t n)
{
	struct fake *f = e;

	ck_assert_uint_le(n, f->window);
	f->n_window++;
	fake_feed(f, t, n);
	return 0;
}

static uint32_t fake_get_window(void *e)
{
	return ((struct fake *)e)->window;
}

static uint32_t fake_max_batch(void *e)
{
	return ((struct fake *)e)->max_batch;
}

static struct strata_engine_iface fake_iface(struct fake *f, uint32_t max_batch)
{
	memset(f, 0, sizeof(*f));
	f->max_batch = max_batch;
	f->window = 4;
	f->fail_at = -1;
	f->contiguous = 1;
	return (struct strata_engine_iface){
		.version = 1,
		.engine = f,
		.forward_batch = fake_batch,
		.forward_window = fake_window,
		.window = fake_get_window,
		.max_batch = fake_max_batch,
	};
}

static int32_t *tokens(uint32_t n)
{
	int32_t *t = malloc((n ? n : 1) * sizeof(*t));

	ck_assert_ptr_nonnull(t);
	for (uint32_t i = 0; i < n; i++)
		t[i] = (int32_t)(i * 7 + 1);
	return t;
}

/* Path list `names` over both plugin directories, configured by `ini`. */
static struct strata_path_list *list_make(struct strata_config *c, struct strata_registry **reg,
					  const char *names, const char *ini, int want)
{
	struct strata_path_list *list = NULL;
	char *dir = tmpdir();

	setenv("STRATA_PLUGIN_PATH", PDIR, 1);
	cfg_make(c, dir, ini);
	cfg_set_dir(c, TDIR);
	*reg = reg_make(c);
	ck_assert_int_eq(strata_path_list_create(*reg, names, &list), want);
	ck_assert(want ? list == NULL : list != NULL);
	rm_dir(dir);
	return list;
}

/* ---- path-batched ------------------------------------------------------- */

static const struct chunk_case {
	const char *ini;
	uint32_t chunk;
} chunk_cases[] = {
	{ NULL, 8192 },
	{ "[prefill]\nchunk = auto\n", 8192 },
	{ "[prefill]\nchunk = auto:100\n", 100 },
	{ "[prefill]\nchunk = 7\n", 7 },
};

START_TEST(test_batched_chunks)
{
	static const uint32_t sizes[] = { 1, 8192, 8193, 20000 };
	const struct chunk_case *cc = &chunk_cases[_i];
	struct strata_config c;
	struct strata_registry *reg;
	struct strata_path_list *list = list_make(&c, &reg, "path-batched", cc->ini, 0);

	ck_assert_uint_eq(strata_path_list_count(list), 1);
	ck_assert_str_eq(strata_path_list_plugin(list, 0)->desc->name, "path-batched");
	ck_assert_str_eq(strata_path_list_plugin(list, 0)->path, PDIR "/strata-path-batched.so");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint32_t n = sizes[s], i;
		int32_t *t = tokens(n);
		struct fake f;
		struct strata_engine_iface eng = fake_iface(&f, 1u << 20);
		struct strata_part part = { .tokens = t, .n_tokens = n, .is_last = 1 };

		f.base = t;
		ck_assert_int_eq(strata_path_list_run(list, &part, &eng), 0);
		ck_assert_int_eq(f.n_window, 0);
		ck_assert_int_eq(f.n_batch, (int)((n + cc->chunk - 1) / cc->chunk));
		for (i = 0; i < (uint32_t)f.n_batch; i++) {
			uint32_t left = n - i * cc->chunk;

			ck_assert_uint_eq(f.sizes[i], left < cc->chunk ? left : cc->chunk);
		}
		ck_assert_uint_eq(f.consumed, n);
		ck_assert(f.contiguous);
		free(t);
	}
	strata_path_list_free(list);
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

START_TEST(test_batched_cap_and_errors)
{
	struct strata_config c;
	struct strata_registry *reg;
	struct strata_path_list *list = list_make(&c, &reg, NULL, NULL, 0);
	int32_t *t = tokens(2500);
	struct strata_part part = { .tokens = t, .n_tokens = 2500 };
	struct fake f;
	struct strata_engine_iface eng = fake_iface(&f, 1000);

	/* The default list is path-batched; the engine's max batch caps "auto". */
	ck_assert_str_eq(strata_path_list_plugin(list, 0)->desc->name, "path-batched");
	f.base = t;
	ck_assert_int_eq(strata_path_list_run(list, &part, &eng), 0);
	ck_assert_int_eq(f.n_batch, 3);
	ck_assert_uint_eq(f.sizes[0], 1000);
	ck_assert_uint_eq(f.sizes[1], 1000);
	ck_assert_uint_eq(f.sizes[2], 500);

	/* An engine error stops the part and comes back unchanged. */
	eng = fake_iface(&f, 1000);
	f.base = t;
	f.fail_at = 1;
	ck_assert_int_eq(strata_path_list_run(list, &part, &eng), -EIO);
	ck_assert_int_eq(f.n_batch, 1);

	/* An empty part feeds nothing. */
	eng = fake_iface(&f, 1000);
	part.n_tokens = 0;
	ck_assert_int_eq(strata_path_list_run(list, &part, &eng), 0);
	ck_assert_int_eq(f.n_batch, 0);

	free(t);
	strata_path_list_free(list);
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

/* create() with a host whose [prefill] chunk is `g_chunk`. */
static const char *g_chunk;
static char g_plugin_log[1024];

static void fake_log(const struct strata_host *h, int level, const char *fmt, ...)
{
	va_list ap;

	(void)h;
	(void)level;
	va_start(ap, fmt);
	vsnprintf(g_plugin_log, sizeof(g_plugin_log), fmt, ap);
	va_end(ap);
}

static const char *fake_config(const struct strata_host *h, const char *sec, const char *key)
{
	(void)h;
	return sec && !strcmp(sec, "prefill") && !strcmp(key, "chunk") ? g_chunk : NULL;
}

static void *fake_alloc(size_t align, size_t size)
{
	void *p = NULL;

	return posix_memalign(&p, align, size) ? NULL : p;
}

START_TEST(test_batched_bad_chunk)
{
	static const char *const bad[] = { "0", "auto:0", "auto:", "abc", "-5", " 7", "7 ",
					   "99999999999", "auto:x", "Auto", "8k" };
	struct strata_config c;
	struct strata_registry *reg;
	struct strata_plugin *p;
	const struct strata_path_ops *ops;
	struct strata_host host = { .version = 1, .log = fake_log, .config_get = fake_config,
				    .aligned_alloc = fake_alloc, .aligned_free = free };
	void *st;

	cfg_make(&c, NULL, NULL);
	cfg_set_dir(&c, PDIR);
	reg = reg_make(&c);
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_PATH, "path-batched", &p), 0);
	ops = p->desc->ops;
	ck_assert_ptr_null(p->desc->config_keys);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[128];

		g_chunk = bad[i];
		g_plugin_log[0] = 0;
		st = (void *)1;
		ck_assert_int_eq(ops->create(&host, &st), -EINVAL);
		ck_assert_ptr_null(st);
		snprintf(want, sizeof(want), "[prefill] chunk = '%s' is invalid", bad[i]);
		ck_assert_msg(strstr(g_plugin_log, want), "log: %s", g_plugin_log);
	}
	g_chunk = "4294967295";
	ck_assert_int_eq(ops->create(&host, &st), 0);
	ops->destroy(st);

	/* Through the registry's host table: the message carries the plugin's name. */
	free(c.prefill);
	c.prefill = xstrdup("auto:x");
	{
		struct strata_path_list *list = (void *)1;

		ck_assert_int_eq(strata_path_list_create(reg, "path-batched", &list), -EINVAL);
		ck_assert_ptr_null(list);
		ck_log_has("path-batched: [prefill] chunk = 'auto:x' is invalid");
		ck_log_has("prompt path 'path-batched' (" PDIR "/strata-path-batched.so) could not start");
	}
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

/* ---- the path list ----------------------------------------------------------- */

START_TEST(test_path_list_order)
{
	struct strata_config c;
	struct strata_registry *reg;
	struct strata_path_list *list =
		list_make(&c, &reg, " test-good , path-batched", "[test-good]\nmax_tokens = 6\n", 0);
	int32_t *t = tokens(50);
	struct strata_part part = { .tokens = t };
	struct fake f;
	struct strata_engine_iface eng;

	ck_assert_uint_eq(strata_path_list_count(list), 2);
	ck_assert_str_eq(strata_path_list_plugin(list, 0)->desc->name, "test-good");
	/* 6 tokens: test-good (windows of 4); 7: it declines, path-batched takes it. */
	for (uint32_t n = 5; n <= 7; n++) {
		eng = fake_iface(&f, 1u << 20);
		f.base = t;
		part.n_tokens = n;
		ck_assert_int_eq(strata_path_list_pick(list, &part), n <= 6 ? 0 : 1);
		ck_assert_int_eq(strata_path_list_run(list, &part, &eng), 0);
		ck_assert_int_eq(f.n_window, n <= 6 ? 2 : 0);
		ck_assert_int_eq(f.n_batch, n <= 6 ? 0 : 1);
		ck_assert_uint_eq(f.consumed, n);
		ck_assert(f.contiguous);
	}
	/* Picture rows: test-good declines them too. */
	part.n_pictures = 1;
	ck_assert_int_eq(strata_path_list_pick(list, &part), 1);
	strata_path_list_free(list);
	strata_registry_free(reg);
	strata_config_free(&c);

	/* Alone, test-good leaves long parts to nobody. */
	log_reset();
	list = list_make(&c, &reg, "test-good", NULL, 0);
	part.n_tokens = 50;
	part.n_pictures = 0;
	eng = fake_iface(&f, 1u << 20);
	ck_assert_int_eq(strata_path_list_run(list, &part, &eng), -EINVAL);
	ck_log_has("no prompt path accepts a part of 50 tokens");
	ck_assert_int_eq(f.n_window + f.n_batch, 0);
	strata_path_list_free(list);
	strata_registry_free(reg);
	strata_config_free(&c);
	free(t);
}
END_TEST

START_TEST(test_path_list_errors)
{
	static const struct {
		const char *names, *ini, *log;
		int err;
	} cases[] = {
		{ "test-good,,path-batched", NULL, "empty name", -EINVAL },
		{ "path-batched,path-batched", NULL, "'path-batched' is listed twice", -EINVAL },
		{ "test-io", NULL, "kind path expected, got io", -ENOTSUP },
		{ "test-nothere", NULL, "strata-test-nothere.so not found", -ENOENT },
		{ "test-good", "[test-good]\nmax_tokens = lots\n",
		  "test-good: max_tokens = 'lots' is not a count", -EINVAL },
		{ "test-good", "[test-good]\nmax_token = 3\n",
		  "unknown key 'max_token' in [test-good] (did you mean 'max_tokens'?)", -EINVAL },
		{ "path-batched", "[path-batched]\nchunk = 3\n",
		  "unknown key 'chunk' in [path-batched] (the plugin takes no keys)", -EINVAL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct strata_config c;
		struct strata_registry *reg;

		log_reset();
		list_make(&c, &reg, cases[i].names, cases[i].ini, cases[i].err);
		ck_log_has(cases[i].log);
		strata_registry_free(reg);
		strata_config_free(&c);
	}
}
END_TEST

/* ---- scan and `strata plugins` ------------------------------------------------ */

struct scan_log {
	char text[8192];
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

START_TEST(test_scan)
{
	struct strata_config c;
	struct strata_registry *reg;
	struct scan_log s = { .text = "" };
	char *dir = tmpdir(), *dup = path2(dir, "strata-test-good.so"), *env, want[4096];

	copy_file(TDIR "/strata-test-good.so", dup);
	cfg_make(&c, NULL, NULL);
	cfg_set_dir(&c, TDIR);
	ck_assert_int_ge(asprintf(&env, "%s", dir), 0);
	setenv("STRATA_PLUGIN_PATH", env, 1);
	reg = reg_make(&c);
	/* good and io load; seven are refused (six variants + the shadowed copy). */
	ck_assert_int_eq(strata_registry_scan(reg, on_scan, &s), 2);
	ck_assert_int_eq(s.refused, 7);
	snprintf(want, sizeof(want), TDIR "/strata-test-abi.so %d ABI major 2, core expects 1\n",
		 -EPROTO);
	ck_assert_msg(strstr(s.text, want), "%s", s.text);
	ck_assert_msg(strstr(s.text, TDIR "/strata-test-good.so 0 ok\n"), "%s", s.text);
	ck_assert_msg(strstr(s.text, TDIR "/strata-test-io.so 0 ok\n"), "%s", s.text);
	snprintf(want, sizeof(want), "%s %d shadowed by " TDIR "/strata-test-good.so (same plugin "
		 "name)\n", dup, -EEXIST);
	ck_assert_msg(strstr(s.text, want), "%s", s.text);
	/* Refused files are reported to the callback, not logged. */
	ck_assert_int_eq(g_log_lines, 0);
	strata_registry_free(reg);
	rm_dir(dir);
	free(dup);
	free(env);
	strata_config_free(&c);
}
END_TEST

/* Run strata_cmd_plugins with stdout in a file; returns its status, output in out. */
static int run_cmd(char **argv, int argc, char *out, size_t cap)
{
	char *dir = tmpdir(), *file = path2(dir, "out.txt");
	int saved = dup(1), rc;
	FILE *f = fopen(file, "w");
	size_t len;
	char *text;

	ck_assert_ptr_nonnull(f);
	fflush(stdout);
	dup2(fileno(f), 1);
	rc = strata_cmd_plugins(argc, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	fclose(f);
	text = tu_read_file(file, &len);
	ck_assert_ptr_nonnull(text);
	snprintf(out, cap, "%s", text);
	free(text);
	rm_dir(dir);
	free(file);
	return rc;
}

START_TEST(test_cmd_plugins)
{
	char out[16384], *dir = tmpdir(), *ini = path2(dir, "bad.ini");
	char *argv[] = { "plugins", "--plugin-dir", PDIR, NULL };
	char *argv_bad[] = { "plugins", "-c", ini, "--plugin-dir=" PDIR, NULL };
	char *argv_opt[] = { "plugins", "--bogus", NULL };

	setenv("STRATA_PLUGIN_PATH", TDIR, 1);
	ck_assert_int_eq(run_cmd(argv, 3, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "search path:\n  1. " PDIR "\n  2. " TDIR "\n"), "%s", out);
	ck_assert_msg(strstr(out, "KIND  NAME"), "%s", out);
	ck_assert_msg(strstr(out, "path  path-batched 1.0.0       1  " PDIR
				  "/strata-path-batched.so\n"), "%s", out);
	ck_assert_msg(strstr(out, "path  test-good    0.0.1       3  " TDIR
				  "/strata-test-good.so\n"), "%s", out);
	ck_assert_msg(strstr(out, "io    test-io"), "%s", out);
	ck_assert_msg(strstr(out, "refused:\n"), "%s", out);
	ck_assert_msg(strstr(out, "  " TDIR "/strata-test-probe0.so: probe says unusable on "
				  "this machine\n"), "%s", out);

	/* A key the plugin does not declare is a configuration error: status 1. */
	ck_assert_int_eq(tu_write_file(ini, "[path-batched]\nchunk = 3\n", 25), 0);
	log_reset();
	ck_assert_int_eq(run_cmd(argv_bad, 4, out, sizeof(out)), 1);
	ck_log_has("bad.ini:2: unknown key 'chunk' in [path-batched]");
	ck_assert_int_eq(run_cmd(argv_opt, 2, out, sizeof(out)), 1);
	ck_log_has("unknown argument '--bogus'");
	rm_dir(dir);
	free(ini);
}
END_TEST

static Suite *plugin_suite(void)
{
	Suite *s = suite_create("plugin");
	TCase *tc = tcase_create("loader");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_refused, 0, N_REFUSALS);
	tcase_add_test(tc, test_refused_files);
	tcase_add_test(tc, test_not_found_lists_dirs);
	tcase_add_test(tc, test_good_plugin);
	tcase_add_test(tc, test_search_order);
	tcase_add_test(tc, test_scan);
	tcase_add_test(tc, test_cmd_plugins);
	suite_add_tcase(s, tc);

	tc = tcase_create("paths");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_batched_chunks, 0,
			    (int)(sizeof(chunk_cases) / sizeof(chunk_cases[0])));
	tcase_add_test(tc, test_batched_cap_and_errors);
	tcase_add_test(tc, test_batched_bad_chunk);
	tcase_add_test(tc, test_path_list_order);
	tcase_add_test(tc, test_path_list_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_srunner_run(srunner_create(plugin_suite()));
}
