/*
 * params.c - the application API's parameters and log hooks (include/strata.h):
 * an engine made without an argv.
 *
 * A strata_params is the list of what the application said, in order (INI
 * files loaded, keys set), checked as it is said against a configuration of
 * its own, so a bad key or value fails the call that made it with the
 * message the same mistake in strata.ini gets.  strata_engine_open replays
 * the list into a fresh configuration, which the engine takes over: the
 * params stay the caller's, and may make any number of engines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_int.h"
#include "engine/engine.h"
#include "util/log.h"

enum { OP_SET, OP_LOAD };

struct params_op {
	int kind;
	char *section, *key, *value; /* OP_LOAD: value is the file */
};

struct strata_params {
	struct strata_config check; /* every op applied: what get() reads */
	struct params_op *ops;
	size_t n, cap;
};

int strata_params_create(struct strata_params **out)
{
	struct strata_params *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return -ENOMEM;
	if (strata_config_init(&p->check)) {
		free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

void strata_params_free(struct strata_params *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free(p->ops[i].section);
		free(p->ops[i].key);
		free(p->ops[i].value);
	}
	free(p->ops);
	strata_config_free(&p->check);
	free(p);
}

/* [section] key = value into c, as strata.ini would have it (where: for messages). */
static int apply_set(struct strata_config *c, const char *section, const char *key,
		     const char *value, const char *where)
{
	const struct strata_cfg_key *k = strata_cfg_find(section, key);
	char what[160];

	if (k && (k->flags & STRATA_CFG_CLI_ONLY))
		k = NULL; /* a flag with no INI key: not settable here either */
	if (!k && strata_cfg_core_section(section)) {
		const char *near = strata_cfg_suggest_key(section, key);

		strata_error("%s: unknown key '%s' in [%s]%s%s%s", where, key, section,
			     near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
		return -EINVAL;
	}
	if (!k) /* a plugin's section: checked against its keys when it loads */
		return strata_cfg_raw_section(c->raw, section, where, 0) ||
		       strata_cfg_raw_set(c->raw, section, key, value, where, 0) ? -ENOMEM : 0;
	snprintf(what, sizeof(what), "%s.%s", section, key);
	if (strata_cfg_set(c, k, value, where, what))
		return -EINVAL;
	return strata_cfg_set_origin(c, k, "%s", where) ? -ENOMEM : 0;
}

static int apply(struct strata_config *c, const struct params_op *op)
{
	if (op->kind == OP_LOAD)
		return strata_config_load_file(c, op->value);
	return apply_set(c, op->section, op->key, op->value, "strata_params_set");
}

static int push(struct strata_params *p, int kind, const char *section, const char *key,
		const char *value)
{
	struct params_op *op;

	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		struct params_op *v = realloc(p->ops, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->ops = v;
		p->cap = cap;
	}
	op = &p->ops[p->n];
	*op = (struct params_op){ kind, section ? strdup(section) : NULL, key ? strdup(key) : NULL,
				  strdup(value) };
	if (!op->value || (section && !op->section) || (key && !op->key)) {
		free(op->section);
		free(op->key);
		free(op->value);
		return -ENOMEM;
	}
	p->n++;
	return 0;
}

int strata_params_set(struct strata_params *p, const char *section, const char *key,
		      const char *value)
{
	struct params_op op = { OP_SET, (char *)section, (char *)key, (char *)value };
	int rc;

	strata_log_clear_error();
	if (!p || !section || !key || !value) {
		strata_error("strata_params_set: NULL %s", !p ? "params" : !section ? "section"
							   : !key   ? "key"
								    : "value");
		return -EINVAL;
	}
	rc = apply(&p->check, &op);
	if (!rc)
		rc = push(p, OP_SET, section, key, value);
	return rc;
}

int strata_params_load(struct strata_params *p, const char *ini_path)
{
	struct params_op op = { OP_LOAD, NULL, NULL, (char *)ini_path };
	int rc;

	strata_log_clear_error();
	if (!p || !ini_path) {
		strata_error("strata_params_load: NULL %s", p ? "file name" : "params");
		return -EINVAL;
	}
	rc = apply(&p->check, &op);
	if (!rc)
		rc = push(p, OP_LOAD, NULL, NULL, ini_path);
	return rc;
}

const char *strata_params_get(const struct strata_params *p, const char *section,
			      const char *key)
{
	return p && section && key ? strata_config_get(&p->check, section, key) : NULL;
}

int strata_engine_open(const struct strata_params *p, struct strata_engine **out)
{
	struct strata_config cfg;
	int rc;

	*out = NULL;
	strata_log_clear_error();
	if (!p) {
		strata_error("strata_engine_open: NULL params");
		return -EINVAL;
	}
	if ((rc = strata_config_init(&cfg)))
		return rc;
	for (size_t i = 0; i < p->n && !rc; i++)
		rc = apply(&cfg, &p->ops[i]);
	if (rc) { /* a file changed since it was loaded into p */
		strata_config_free(&cfg);
		return rc;
	}
	/* "strata": the plugin search path starts from this process's executable. */
	return strata_engine_create(&cfg, "strata", out);
}

/* ---- logging ------------------------------------------------------------------ */

void strata_set_log(strata_log_fn fn, void *user)
{
	strata_log_set_sink(fn, user);
}

void strata_set_log_level(int level)
{
	strata_log_set_level(level);
}

void strata_free(void *p)
{
	free(p);
}
