/*
 * config.c - the configuration object: defaults, lookup by name, and the
 * raw key/values of plugin sections.
 *
 * Loading lives in ini.c (INI file) and args.c (environment, command line);
 * the key table in schema.c.
 */
#define _GNU_SOURCE /* asprintf */
#include "config/config_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

int strata_config_init(struct strata_config *c)
{
	memset(c, 0, sizeof(*c));
	c->raw = calloc(1, sizeof(*c->raw));
	if (!c->raw)
		return -ENOMEM;
	pthread_mutex_init(&c->raw->lock, NULL);
	for (size_t i = 0; i < strata_cfg_nkeys; i++) {
		const struct strata_cfg_key *k = &strata_cfg_keys[i];
		union strata_cfg_val v;
		char why[160];

		if (!k->def)
			continue;
		/* Defaults are text in the table, so --help prints what is really used. */
		if (strata_cfg_parse(k, k->def, &v, why, sizeof(why))) {
			strata_config_free(c);
			return -ENOMEM;
		}
		strata_cfg_store(c, k, &v);
	}
	return 0;
}

static void raw_free(struct strata_config_raw *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_ent; i++) {
		free(r->ent[i].section);
		free(r->ent[i].key);
		free(r->ent[i].value);
	}
	for (size_t i = 0; i < r->n_sect; i++) {
		free(r->sect[i].name);
		free(r->sect[i].where);
	}
	for (size_t i = 0; i < r->n_files; i++)
		free(r->files[i]);
	for (size_t i = 0; i < r->n_kept; i++)
		free(r->kept[i]);
	for (size_t i = 0; r->origin && i < strata_cfg_nkeys; i++)
		free(r->origin[i]);
	free(r->origin);
	free(r->ent);
	free(r->sect);
	free(r->names);
	free(r->files);
	free(r->kept);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void strata_config_free(struct strata_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < strata_cfg_nkeys; i++) {
		const struct strata_cfg_key *k = &strata_cfg_keys[i];

		if (k->type == STRATA_CFG_STR || k->type == STRATA_CFG_PATH ||
		    k->type == STRATA_CFG_PREFILL || k->type == STRATA_CFG_LIST)
			free(*(char **)((char *)c + k->off));
	}
	free(c->ini_path);
	raw_free(c->raw);
	memset(c, 0, sizeof(*c));
}

/* Keep s alive until the config is freed; returns s, or NULL (and frees s) on ENOMEM. */
static char *keep(struct strata_config_raw *r, char *s)
{
	if (!s)
		return NULL;
	if (r->n_kept == r->cap_kept) {
		size_t cap = r->cap_kept ? 2 * r->cap_kept : 16;
		char **p = realloc(r->kept, cap * sizeof(*p));

		if (!p) {
			free(s);
			return NULL;
		}
		r->kept = p;
		r->cap_kept = cap;
	}
	r->kept[r->n_kept++] = s;
	return s;
}

/*
 * A string handed to a caller of get(): the same text gives the same pointer,
 * and nothing handed out is freed before the config, because plugins may
 * hold on to what they were given.
 */
static const char *intern(struct strata_config_raw *r, char *s)
{
	if (!s)
		return NULL;
	for (size_t i = r->n_kept; i-- > 0;)
		if (strcmp(r->kept[i], s) == 0) {
			free(s);
			return r->kept[i];
		}
	return keep(r, s);
}

const char *strata_cfg_raw_file(struct strata_config_raw *r, const char *path)
{
	char **p;

	for (size_t i = 0; i < r->n_files; i++)
		if (strcmp(r->files[i], path) == 0)
			return r->files[i];
	p = realloc(r->files, (r->n_files + 1) * sizeof(*p));
	if (!p)
		return NULL;
	r->files = p;
	p[r->n_files] = strdup(path);
	return p[r->n_files] ? p[r->n_files++] : NULL;
}

static struct strata_cfg_entry *raw_find(const struct strata_config_raw *r,
					 const char *section, const char *key)
{
	for (size_t i = 0; i < r->n_ent; i++)
		if (strcmp(r->ent[i].section, section) == 0 && strcmp(r->ent[i].key, key) == 0)
			return &r->ent[i];
	return NULL;
}

int strata_cfg_raw_set(struct strata_config_raw *r, const char *section, const char *key,
		       const char *value, const char *file, int line)
{
	struct strata_cfg_entry *e = raw_find(r, section, key);
	char *v = strdup(value);

	if (!v)
		return -ENOMEM;
	if (e) {
		/* A later file replaces the value; the old text may be in a plugin's hands. */
		if (!keep(r, e->value)) {
			e->value = NULL;
			free(v);
			return -ENOMEM;
		}
		e->value = v;
		e->file = file;
		e->line = line;
		return 0;
	}
	if (r->n_ent == r->cap_ent) {
		size_t cap = r->cap_ent ? 2 * r->cap_ent : 16;
		struct strata_cfg_entry *p = realloc(r->ent, cap * sizeof(*p));

		if (!p) {
			free(v);
			return -ENOMEM;
		}
		r->ent = p;
		r->cap_ent = cap;
	}
	e = &r->ent[r->n_ent];
	e->section = strdup(section);
	e->key = strdup(key);
	e->value = v;
	e->file = file;
	e->line = line;
	if (!e->section || !e->key) {
		free(e->section);
		free(e->key);
		free(v);
		return -ENOMEM;
	}
	r->n_ent++;
	return 0;
}

int strata_cfg_raw_section(struct strata_config_raw *r, const char *section,
			   const char *file, int line)
{
	struct strata_cfg_section *s;
	const char **names;

	for (size_t i = 0; i < r->n_sect; i++)
		if (strcmp(r->sect[i].name, section) == 0)
			return 0;
	if (r->n_sect == r->cap_sect) {
		size_t cap = r->cap_sect ? 2 * r->cap_sect : 8;
		struct strata_cfg_section *p = realloc(r->sect, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		r->sect = p;
		r->cap_sect = cap;
	}
	names = realloc(r->names, (r->n_sect + 2) * sizeof(*names));
	if (!names)
		return -ENOMEM;
	r->names = names;
	s = &r->sect[r->n_sect];
	s->name = strdup(section);
	if (!s->name || asprintf(&s->where, "%s:%d", file, line) < 0) {
		free(s->name);
		return -ENOMEM;
	}
	names[r->n_sect] = s->name;
	names[++r->n_sect] = NULL;
	return 0;
}

/*
 * Keys of plugin sections are not known until the plugins are, so their
 * environment variables are looked up here, at the time a plugin asks.
 * These names are read elsewhere and never mean a plugin key.
 */
static const char *plugin_env(const char *section, const char *key)
{
	static const char *const reserved[] = {
		"STRATA_PLUGIN_PATH", "STRATA_SIMD", "STRATA_SHARED_DIR",
	};
	char name[256];
	const char *v;

	strata_cfg_env_name(section, key, name, sizeof(name));
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strcmp(name, reserved[i]) == 0)
			return NULL;
	v = getenv(name);
	return v && *v ? v : NULL;
}

static const char *config_get(const struct strata_config *c, const char *section,
			      const char *key, int cli_too)
{
	struct strata_config_raw *r = c->raw;
	const char *out = NULL;

	if (!section || !key || !r)
		return NULL;
	pthread_mutex_lock(&r->lock);
	if (strata_cfg_core_section(section)) {
		const struct strata_cfg_key *k = strata_cfg_find(section, key);

		if (k && (cli_too || !(k->flags & STRATA_CFG_CLI_ONLY)))
			out = intern(r, strata_cfg_format(c, k));
	} else {
		const char *env = plugin_env(section, key);
		const struct strata_cfg_entry *e;

		if (env)
			out = intern(r, strdup(env));
		else if ((e = raw_find(r, section, key)))
			out = e->value;
	}
	pthread_mutex_unlock(&r->lock);
	return out;
}

const char *strata_config_get(const struct strata_config *c, const char *section,
			      const char *key)
{
	return config_get(c, section, key, 0);
}

const char *strata_config_get_any(const struct strata_config *c, const char *section,
				  const char *key)
{
	return config_get(c, section, key, 1);
}

static const char *suggest(const char *key, const char *const *keys)
{
	const char *best = NULL;
	size_t bd = 3;

	for (size_t i = 0; keys && keys[i]; i++) {
		size_t d = strata_cfg_distance(key, keys[i]);

		if (d < bd) {
			bd = d;
			best = keys[i];
		}
	}
	return best;
}

int strata_config_check_plugin_keys(const struct strata_config *c, const char *section,
				    const char *const *keys)
{
	const struct strata_config_raw *r = c->raw;

	for (size_t i = 0; r && i < r->n_ent; i++) {
		const struct strata_cfg_entry *e = &r->ent[i];
		const char *near;
		size_t j;

		if (strcmp(e->section, section) != 0)
			continue;
		for (j = 0; keys && keys[j]; j++)
			if (strcmp(keys[j], e->key) == 0)
				break;
		if (keys && keys[j])
			continue;
		near = suggest(e->key, keys);
		if (near)
			strata_error("%s:%d: unknown key '%s' in [%s] (did you mean '%s'?)",
				     e->file, e->line, e->key, section, near);
		else if (!keys || !keys[0])
			strata_error("%s:%d: unknown key '%s' in [%s] (the plugin takes no keys)",
				     e->file, e->line, e->key, section);
		else
			strata_error("%s:%d: unknown key '%s' in [%s]", e->file, e->line, e->key,
				     section);
		return -EINVAL;
	}
	return 0;
}

const char *const *strata_config_plugin_sections(const struct strata_config *c)
{
	static const char *const none[] = { NULL };

	return c->raw && c->raw->names ? c->raw->names : none;
}

const char *strata_config_section_where(const struct strata_config *c, const char *section)
{
	for (size_t i = 0; c->raw && i < c->raw->n_sect; i++)
		if (strcmp(c->raw->sect[i].name, section) == 0)
			return c->raw->sect[i].where;
	return NULL;
}

int strata_cfg_set_origin(struct strata_config *c, const struct strata_cfg_key *k,
			  const char *fmt, ...)
{
	struct strata_config_raw *r = c->raw;
	size_t i = (size_t)(k - strata_cfg_keys);
	va_list ap;
	char *s;
	int n;

	if (!r || i >= strata_cfg_nkeys)
		return -EINVAL;
	if (!r->origin && !(r->origin = calloc(strata_cfg_nkeys, sizeof(*r->origin))))
		return -ENOMEM;
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	/* Replaced, not freed: a caller may still hold the text of an earlier where(). */
	if (r->origin[i] && !keep(r, r->origin[i])) {
		r->origin[i] = NULL;
		free(s);
		return -ENOMEM;
	}
	r->origin[i] = s;
	return 0;
}

const char *strata_config_where(const struct strata_config *c, const char *section,
				const char *key)
{
	const struct strata_cfg_key *k = strata_cfg_find(section, key);

	if (!k || !c->raw || !c->raw->origin)
		return NULL;
	return c->raw->origin[k - strata_cfg_keys];
}
