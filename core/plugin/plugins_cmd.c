/*
 * plugins_cmd.c - `strata plugins`: what the plugin search path holds;
 * `strata io-check NAME`: the io conformance suite (io_check.h) on one.
 *
 * Loads every strata-*.so the search path offers, exactly as a run would
 * (same checks, same probe, same INI key validation), and prints one row
 * per usable plugin and one line per refused file with the reason, so a user
 * can see why a backend named in strata.ini is not picked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "plugin/dl.h"
#include "plugin/io_check.h"
#include "plugin/registry.h"
#include "util/clock.h"
#include "util/log.h"

struct row {
	const struct strata_plugin *p; /* NULL when refused */
	char *path;
	char *reason;
};

struct listing {
	struct row *v;
	size_t n, cap;
	int config_error; /* an INI section key the plugin does not declare */
	int oom;
};

static void on_file(void *user, const char *path, const struct strata_plugin *p, int err,
		    const char *reason)
{
	struct listing *l = user;
	struct row *r;

	if (err == -EINVAL)
		l->config_error = 1;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct row *v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			l->oom = 1;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	r = &l->v[l->n];
	r->p = p;
	r->path = strdup(path);
	r->reason = reason ? strdup(reason) : NULL;
	if (!r->path || (reason && !r->reason)) {
		free(r->path);
		free(r->reason);
		l->oom = 1;
		return;
	}
	l->n++;
}

static void print_listing(const struct listing *l, const char *const *dirs)
{
	int wn = 4, wv = 7, refused = 0;
	size_t i;

	printf("search path:\n");
	if (!dirs[0])
		printf("  (empty: set [plugins] dir, --plugin-dir or STRATA_PLUGIN_PATH)\n");
	for (i = 0; dirs[i]; i++)
		printf("  %zu. %s\n", i + 1, dirs[i]);
	for (i = 0; i < l->n; i++) {
		const struct strata_plugin *p = l->v[i].p;

		if (!p) {
			refused++;
			continue;
		}
		if ((int)strlen(p->desc->name) > wn)
			wn = (int)strlen(p->desc->name);
		if (p->desc->version && (int)strlen(p->desc->version) > wv)
			wv = (int)strlen(p->desc->version);
	}
	printf("\n");
	if (l->n == (size_t)refused) {
		printf("no usable plugins found\n");
	} else {
		printf("%-5s %-*s %-*s %5s  %s\n", "KIND", wn, "NAME", wv, "VERSION", "SCORE",
		       "FILE");
		for (i = 0; i < l->n; i++) {
			const struct strata_plugin *p = l->v[i].p;

			if (p)
				printf("%-5s %-*s %-*s %5d  %s\n",
				       strata_plugin_kind_name(p->desc->kind), wn, p->desc->name,
				       wv, p->desc->version ? p->desc->version : "-", p->score,
				       l->v[i].path);
		}
	}
	if (refused) {
		printf("\nrefused:\n");
		for (i = 0; i < l->n; i++)
			if (!l->v[i].p)
				printf("  %s: %s\n", l->v[i].path, l->v[i].reason);
	}
}

/* Does `path` end in strata-<name><suffix>? */
static int file_is_named(const char *path, const char *name)
{
	size_t lp = strlen(path), ln = strlen(name), ls = strlen(STRATA_DL_SUFFIX);
	size_t base = strlen("strata-") + ln + ls;

	return lp >= base && !strncmp(path + lp - base, "strata-", 7) &&
	       !strncmp(path + lp - ln - ls, name, ln) && !strcmp(path + lp - ls, STRATA_DL_SUFFIX) &&
	       (lp == base || path[lp - base - 1] == '/' || path[lp - base - 1] == STRATA_DL_DIR_SEP);
}

/* A [section] that no plugin file answers to is most likely a typo for one. */
static void warn_orphan_sections(const struct strata_config *cfg, const struct listing *l)
{
	const char *const *sec = strata_config_plugin_sections(cfg);

	for (; sec && *sec; sec++) {
		size_t i;

		for (i = 0; i < l->n; i++)
			if ((l->v[i].p && !strcmp(l->v[i].p->desc->name, *sec)) ||
			    file_is_named(l->v[i].path, *sec))
				break;
		if (i == l->n)
			strata_warn("%s: section [%s] names no plugin found on the search path",
				    strata_config_section_where(cfg, *sec), *sec);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: strata plugins [-c FILE] [--plugin-dir DIR]\n"
		   "List every plugin on the search path ([plugins] dir or --plugin-dir,\n"
		   "STRATA_PLUGIN_PATH, the executable's directory and its plugins/) with\n"
		   "its kind, version and probe score, and every refused file with why.\n");
}

static void io_check_usage(FILE *f)
{
	fprintf(f, "usage: strata io-check NAME|FILE [-c FILE] [--plugin-dir DIR] [--dir DIR]\n"
		   "Run the io plugin conformance suite on plugin NAME (found like `strata\n"
		   "plugins` finds it) or on the .so FILE: random reads at depths 1 to 128,\n"
		   "the end of the file, misaligned direct reads, reap() timeouts, close()\n"
		   "with reads in flight, open() errors and a handle per thread, buffered and\n"
		   "direct, every byte checked.  --dir: where to write its %u-byte test\n"
		   "file (a local disk, for the direct cases; default $TMPDIR, /var/tmp,\n"
		   "/tmp).  Exits 1 when a case fails.\n", STRATA_IOCHECK_FILE_SIZE);
}

/* Value of "--opt VALUE" or "--opt=VALUE" at argv[*i]; NULL when absent. */
static const char *opt_value(int argc, char **argv, int *i, const char *shrt, const char *lng,
			     int *missing)
{
	const char *a = argv[*i];
	size_t n = strlen(lng);

	if ((shrt && !strcmp(a, shrt)) || !strcmp(a, lng)) {
		if (*i + 1 >= argc) {
			*missing = 1;
			return NULL;
		}
		return argv[++*i];
	}
	if (!strncmp(a, lng, n) && a[n] == '=')
		return a + n + 1;
	return NULL;
}

/* plugins (name NULL) or io-check's arguments; 1 after --help, -EINVAL after an error. */
static int parse_args(int argc, char **argv, const char **ini, const char **dir, const char **name,
		      const char **test_dir)
{
	for (int i = 1; i < argc; i++) {
		int missing = 0;
		const char *v;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			name ? io_check_usage(stdout) : usage(stdout);
			return 1;
		}
		if ((v = opt_value(argc, argv, &i, "-c", "--config", &missing)) != NULL) {
			*ini = v;
		} else if ((v = opt_value(argc, argv, &i, NULL, "--plugin-dir", &missing)) != NULL) {
			*dir = v;
		} else if (name && !missing &&
			   (v = opt_value(argc, argv, &i, NULL, "--dir", &missing)) != NULL) {
			*test_dir = v;
		} else if (name && !missing && argv[i][0] != '-' && !**name) {
			*name = argv[i];
		} else {
			strata_error("%s: %s '%s'", name ? "io-check" : "plugins",
				     missing ? "missing value after" : "unknown argument", argv[i]);
			name ? io_check_usage(stderr) : usage(stderr);
			return -EINVAL;
		}
	}
	return 0;
}

/* The configuration (-c, environment, --plugin-dir) and a registry on it; 0 or 1. */
static int setup(const char *ini, const char *dir, const char *argv0, struct strata_config *cfg,
		 struct strata_registry **reg)
{
	*reg = NULL;
	if (strata_config_init(cfg))
		return 1;
	if ((ini && strata_config_load_file(cfg, ini)) || strata_config_apply_env(cfg)) {
		strata_config_free(cfg);
		return 1;
	}
	if (dir) {
		char *d = strdup(dir);

		if (!d) {
			strata_config_free(cfg);
			return 1;
		}
		free(cfg->plugin_dir);
		cfg->plugin_dir = d;
	}
	/* argv0 is the subcommand: the registry finds the executable by itself. */
	if (strata_registry_create(cfg, argv0, reg)) {
		strata_config_free(cfg);
		return 1;
	}
	return 0;
}

int strata_cmd_plugins(int argc, char **argv)
{
	struct strata_config cfg;
	struct strata_registry *reg = NULL;
	struct listing l = { 0 };
	const char *ini = NULL, *dir = NULL;
	int rc, status = 0;

	rc = parse_args(argc, argv, &ini, &dir, NULL, NULL);
	if (rc)
		return rc > 0 ? 0 : 1;
	if (setup(ini, dir, argc > 0 ? argv[0] : "strata", &cfg, &reg))
		return 1;
	rc = strata_registry_scan(reg, on_file, &l);
	if (rc >= 0 && l.oom) {
		strata_error("plugins: out of memory");
		rc = -ENOMEM;
	}
	if (rc >= 0) {
		print_listing(&l, strata_registry_search_path(reg));
		fflush(stdout);
		warn_orphan_sections(&cfg, &l);
	}
	status = rc < 0 || l.config_error;
	for (size_t i = 0; i < l.n; i++) {
		free(l.v[i].path);
		free(l.v[i].reason);
	}
	free(l.v);
	strata_registry_free(reg);
	strata_config_free(&cfg);
	return status;
}

/* Each case of the conformance suite on one loaded io plugin, a line each as it ends. */
static int run_io_cases(const struct strata_plugin *p, const char *test_dir)
{
	struct strata_iocheck k;
	int n[3] = { 0 }; /* passed, skipped, failed */

	if (strata_iocheck_prepare(&k, test_dir))
		return 1;
	k.ops = p->desc->ops;
	k.host = &p->host;
	printf("io-check: %s %s (%s), probe score %d\n"
	       "io-check: test file %s, %u bytes (direct I/O %s)\n",
	       p->desc->name, p->desc->version, p->path, p->score, k.file,
	       STRATA_IOCHECK_FILE_SIZE, k.direct_ok ? "works" : "refused: direct cases skip");
	fflush(stdout);
	for (int c = 0; c < STRATA_IOCHECK_N_CASES; c++) {
		uint64_t t0 = strata_now_ns();
		int rc = strata_iocheck_run(&k, c);
		double s = (double)(strata_now_ns() - t0) / 1e9;

		n[rc == 0 ? 0 : rc > 0 ? 1 : 2]++;
		if (rc == 0)
			printf("  ok    %-28s %6.2f s\n", strata_iocheck_case_name(c), s);
		else
			printf("  %-5s %-28s %6.2f s: %s\n", rc > 0 ? "skip" : "FAIL",
			       strata_iocheck_case_name(c), s, k.err);
		fflush(stdout);
	}
	strata_iocheck_cleanup(&k);
	printf("io-check: %s: %d passed, %d skipped, %d failed\n", p->desc->name, n[0], n[1], n[2]);
	if (n[2])
		strata_error("io-check: %s (%s) fails %d of the io ABI's cases (listed above)",
			     p->desc->name, p->path, n[2]);
	return n[2] ? 1 : 0;
}

int strata_cmd_io_check(int argc, char **argv)
{
	struct strata_config cfg;
	struct strata_registry *reg = NULL;
	struct strata_plugin *p = NULL;
	const char *ini = NULL, *dir = NULL, *name = "", *test_dir = NULL;
	int rc, status;

	rc = parse_args(argc, argv, &ini, &dir, &name, &test_dir);
	if (rc)
		return rc > 0 ? 0 : 1;
	if (!*name) {
		strata_error("io-check: which plugin? (strata io-check NAME, e.g. io-pread)");
		io_check_usage(stderr);
		return 1;
	}
	if (setup(ini, dir, argc > 0 ? argv[0] : "strata", &cfg, &reg))
		return 1;
	/* A name with a directory separator is a file: an out-of-tree build to try as it is. */
	if (strchr(name, '/') || strchr(name, STRATA_DL_DIR_SEP))
		rc = strata_registry_load_file(reg, name, STRATA_PLUGIN_IO, &p);
	else
		rc = strata_registry_load(reg, STRATA_PLUGIN_IO, name, &p);
	status = rc ? 1 : run_io_cases(p, test_dir);
	strata_registry_free(reg);
	strata_config_free(&cfg);
	return status;
}
