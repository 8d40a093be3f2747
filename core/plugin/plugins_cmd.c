/*
 * plugins_cmd.c - `strata plugins`: what the plugin search path holds.
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
#include "plugin/registry.h"
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

static int parse_args(int argc, char **argv, const char **ini, const char **dir)
{
	for (int i = 1; i < argc; i++) {
		int missing = 0;
		const char *v;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 1;
		}
		if ((v = opt_value(argc, argv, &i, "-c", "--config", &missing)) != NULL) {
			*ini = v;
		} else if ((v = opt_value(argc, argv, &i, NULL, "--plugin-dir", &missing)) != NULL) {
			*dir = v;
		} else {
			strata_error("plugins: %s '%s'", missing ? "missing value after" : "unknown option",
				     argv[i]);
			usage(stderr);
			return -EINVAL;
		}
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

	rc = parse_args(argc, argv, &ini, &dir);
	if (rc)
		return rc > 0 ? 0 : 1;
	if (strata_config_init(&cfg))
		return 1;
	if ((ini && strata_config_load_file(&cfg, ini)) || strata_config_apply_env(&cfg)) {
		strata_config_free(&cfg);
		return 1;
	}
	if (dir) {
		char *d = strdup(dir);

		if (!d) {
			strata_config_free(&cfg);
			return 1;
		}
		free(cfg.plugin_dir);
		cfg.plugin_dir = d;
	}
	/* argv[0] is "plugins": the registry finds the executable by itself. */
	rc = strata_registry_create(&cfg, argc > 0 ? argv[0] : "strata", &reg);
	if (!rc)
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
