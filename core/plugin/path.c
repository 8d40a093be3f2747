/*
 * path.c - the engine's list of prompt paths (see path.h).
 *
 * Ops-table versions: this core knows struct strata_path_ops version 1
 * (create, destroy, accepts, run).  A plugin may declare a newer version
 * with more fields appended; they are never read here.  A field added in a
 * later version must be guarded with `ops->version >= N` before use, so a
 * plugin built against an older header is never called past what it
 * declares.
 */
#include "plugin/path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/dl.h"
#include "plugin/registry.h"
#include "util/log.h"

/* The last path-ops version whose fields this file reads. */
#define PATH_OPS_KNOWN 1

struct path_entry {
	struct strata_plugin *plugin;
	const struct strata_path_ops *ops;
	void *state;
};

struct strata_path_list {
	char *names; /* as configured, for messages */
	size_t n;
	struct path_entry e[];
};

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Split "a, b,c" in place into trimmed names; returns the count or -EINVAL. */
static int split_names(char *s, char **names, size_t cap, const char *orig)
{
	size_t n = 0;
	char *p = s;

	for (;;) {
		char *end = strchr(p, ',');
		char *q;

		if (end)
			*end = 0;
		while (is_blank(*p))
			p++;
		q = p + strlen(p);
		while (q > p && is_blank(q[-1]))
			*--q = 0;
		if (!*p) {
			strata_error("prompt path list '%s': empty name", orig);
			return -EINVAL;
		}
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(names[i], p)) {
				strata_error("prompt path list '%s': '%s' is listed twice", orig, p);
				return -EINVAL;
			}
		}
		if (n == cap) {
			strata_error("prompt path list '%s': more than %zu names", orig, cap);
			return -EINVAL;
		}
		names[n++] = p;
		if (!end)
			return (int)n;
		p = end + 1;
	}
}

static int only_blanks(const char *s)
{
	while (is_blank(*s))
		s++;
	return !*s;
}

static int add_path(struct strata_registry *reg, struct path_entry *e, const char *name,
		    const char *where)
{
	/* With a configured list, any kind loads, so a wrong one is reported with its origin. */
	int rc = strata_registry_load(reg, where ? 0 : STRATA_PLUGIN_PATH, name, &e->plugin);

	if (rc)
		return rc; /* the registry named the file and the reason */
	if (e->plugin->desc->kind != STRATA_PLUGIN_PATH) {
		strata_error("%s: '%s' in [prompt] paths is not a prompt path: %s is of kind %s",
			     where, name, e->plugin->path,
			     strata_plugin_kind_name(e->plugin->desc->kind));
		return -ENOTSUP;
	}
	e->ops = e->plugin->desc->ops;
	if (e->ops->version < PATH_OPS_KNOWN) {
		/* The registry refuses version 0; this guards a future minimum. */
		strata_error("prompt path '%s' (%s): ops version %u, core needs >= %d", name,
			     e->plugin->path, e->ops->version, PATH_OPS_KNOWN);
		return -EPROTO;
	}
	rc = e->ops->create(&e->plugin->host, &e->state);
	if (rc < 0) {
		strata_error("prompt path '%s' (%s) could not start: %s", name, e->plugin->path,
			     strerror(-rc));
		e->state = NULL;
		return rc;
	}
	return 0;
}

/* 1 when strata-NAME.so is in a directory of the search path. */
static int on_search_path(const struct strata_registry *reg, const char *name)
{
	const char *const *dirs = strata_registry_search_path(reg);

	for (size_t i = 0; dirs && dirs[i]; i++) {
		char path[4096];
		int n = snprintf(path, sizeof(path), "%s%cstrata-%s%s", dirs[i], STRATA_DL_DIR_SEP,
				 name, STRATA_DL_SUFFIX);

		if (n > 0 && (size_t)n < sizeof(path) && strata_dl_check_file(path) == 0)
			return 1;
	}
	return 0;
}

/*
 * Names the configuration gave that have no plugin file: one message naming
 * where the list was set, so a typo in the INI file points at its line.
 */
static int check_names(const struct strata_registry *reg, char *const *v, int n,
		       const char *where)
{
	for (int i = 0; i < n; i++) {
		char dirs[1024] = "";
		const char *const *d = strata_registry_search_path(reg);
		size_t len = 0;

		if (on_search_path(reg, v[i]))
			continue;
		for (size_t j = 0; d && d[j] && len < sizeof(dirs); j++)
			len += (size_t)snprintf(dirs + len, sizeof(dirs) - len, "%s%s", j ? ", " : "",
						d[j]);
		strata_error("%s: unknown prompt path '%s' in [prompt] paths: no strata-%s%s in "
			     "the plugin search path (%s)", where, v[i], v[i], STRATA_DL_SUFFIX,
			     len ? dirs : "empty: set [plugins] dir or STRATA_PLUGIN_PATH");
		return -ENOENT;
	}
	return 0;
}

int strata_path_list_create(struct strata_registry *reg, const char *names,
			    struct strata_path_list **out)
{
	return strata_path_list_create_at(reg, names, NULL, out);
}

int strata_path_list_create_at(struct strata_registry *reg, const char *names,
			       const char *where, struct strata_path_list **out)
{
	struct strata_path_list *list;
	char *buf, *v[32];
	int n, rc = 0;

	*out = NULL;
	if (!names || only_blanks(names))
		names = STRATA_PATH_LIST_DEFAULT;
	buf = strdup(names);
	if (!buf)
		return -ENOMEM;
	n = split_names(buf, v, sizeof(v) / sizeof(v[0]), names);
	if (n >= 0 && where)
		rc = check_names(reg, v, n, where);
	if (n < 0 || rc) {
		free(buf);
		return n < 0 ? n : rc;
	}
	list = calloc(1, sizeof(*list) + (size_t)n * sizeof(list->e[0]));
	if (!list || !(list->names = strdup(names))) {
		free(list);
		free(buf);
		return -ENOMEM;
	}
	for (int i = 0; i < n && !rc; i++) {
		rc = add_path(reg, &list->e[i], v[i], where);
		list->n = (size_t)i + (rc == 0);
	}
	free(buf);
	if (rc) {
		strata_path_list_free(list);
		return rc;
	}
	*out = list;
	return 0;
}

void strata_path_list_free(struct strata_path_list *list)
{
	if (!list)
		return;
	for (size_t i = list->n; i-- > 0;)
		list->e[i].ops->destroy(list->e[i].state);
	free(list->names);
	free(list);
}

size_t strata_path_list_count(const struct strata_path_list *list)
{
	return list->n;
}

const struct strata_plugin *strata_path_list_plugin(const struct strata_path_list *list,
						    size_t i)
{
	return i < list->n ? list->e[i].plugin : NULL;
}

int strata_path_list_pick(const struct strata_path_list *list, const struct strata_part *part)
{
	for (size_t i = 0; i < list->n; i++) {
		int r = list->e[i].ops->accepts(list->e[i].state, part);

		if (r < 0)
			return r;
		if (r > 0)
			return (int)i;
	}
	strata_error("no prompt path accepts a part of %u tokens (position %u, %u picture rows; "
		     "paths: %s)",
		     part->n_tokens, part->pos, part->n_pictures, list->names);
	return -EINVAL;
}

int strata_path_list_run(const struct strata_path_list *list, const struct strata_part *part,
			 const struct strata_engine_iface *eng)
{
	int i;

	if (!list || !part || !eng || (part->n_tokens && !part->tokens)) {
		strata_error("prompt path: invalid part or engine");
		return -EINVAL;
	}
	i = strata_path_list_pick(list, part);
	if (i < 0)
		return i;
	strata_debug("part of %u tokens at position %u -> %s", part->n_tokens, part->pos,
		     list->e[i].plugin->desc->name);
	return list->e[i].ops->run(list->e[i].state, part, eng);
}
