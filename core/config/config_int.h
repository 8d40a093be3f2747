/*
 * config_int.h - what the configuration's source files share (not public).
 *
 * The schema is one table (schema.c): each key names its section, type,
 * field of struct strata_config, range, default, command-line flags and help
 * line.  The INI loader, the environment, the command line, --help and
 * strata_config_get() are all driven by it, so adding a key is one entry
 * there plus the struct field.
 */
#ifndef STRATA_CONFIG_INT_H
#define STRATA_CONFIG_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

enum strata_cfg_type {
	STRATA_CFG_STR,     /* free text; may span indented INI lines */
	STRATA_CFG_PATH,    /* file or directory; relative INI paths resolved */
	STRATA_CFG_INT,     /* int32_t field, range [lo, hi] */
	STRATA_CFG_UINT32,  /* uint32_t field, range [lo, hi] */
	STRATA_CFG_FLOAT,   /* float field, range with open/closed ends */
	STRATA_CFG_SEED,    /* uint64_t field, or "random" */
	STRATA_CFG_TRISTATE,/* int field: auto (-1) | false (0) | true (1) */
	STRATA_CFG_PREFILL, /* char * field: auto | auto:N | N */
	STRATA_CFG_LIST,    /* char * field: comma-separated plugin names */
	STRATA_CFG_COUNT,   /* int field: a counting flag (-v -v) */
	STRATA_CFG_BOOL,    /* int field: false (0) | true (1) */
	STRATA_CFG_CHOICE,  /* int field: index of the value in metavar "a|b|c" */
};

enum {
	STRATA_CFG_LO_OPEN = 1u << 0,  /* value must be > lo, not >= lo */
	STRATA_CFG_HI_OPEN = 1u << 1,  /* value must be < hi */
	STRATA_CFG_CLI_ONLY = 1u << 2, /* no INI key, no environment variable */
};

struct strata_cfg_key {
	const char *section;
	const char *key;
	enum strata_cfg_type type;
	size_t off;             /* offsetof(struct strata_config, field) */
	double lo, hi;          /* numeric range */
	unsigned flags;
	const char *def;        /* default as text; NULL = unset */
	const char *shrt, *lng; /* flags; either may be NULL */
	const char *metavar;    /* NULL: the flag takes no value and sets "true" */
	const char *neg;        /* flag that sets "false" (--no-bos), or NULL */
	const char *help;
};

extern const struct strata_cfg_key strata_cfg_keys[];
extern const size_t strata_cfg_nkeys;

/* A parsed value, before it is stored into its field. */
union strata_cfg_val {
	int64_t i;
	uint64_t u;
	double f;
	char *s; /* malloc'd; NULL = unset */
};

/* The schema key [section] key, or NULL (CLI-only keys included). */
const struct strata_cfg_key *strata_cfg_find(const char *section, const char *key);
/* 1 when section is one of the core's sections (even one with no keys yet). */
int strata_cfg_core_section(const char *section);
/* The schema key closest to `key` in `section`, for "did you mean". */
const char *strata_cfg_suggest_key(const char *section, const char *key);

/*
 * Parse text for key k.  0, -ENOMEM, or -EINVAL with a description of what
 * was expected written to why ("an integer >= 0").
 */
int strata_cfg_parse(const struct strata_cfg_key *k, const char *text,
		     union strata_cfg_val *v, char *why, size_t whylen);
/* Store a parsed value into c's field; takes ownership of v->s. */
void strata_cfg_store(struct strata_config *c, const struct strata_cfg_key *k,
		      union strata_cfg_val *v);
/* Parse then store; on error logs "<where>: bad value 'text' for <what>: ...". */
int strata_cfg_set(struct strata_config *c, const struct strata_cfg_key *k,
		   const char *text, const char *where, const char *what);
/* The field's current value as malloc'd text; NULL when unset (or ENOMEM). */
char *strata_cfg_format(const struct strata_config *c, const struct strata_cfg_key *k);

/*
 * Record where key k got its value ("FILE:LINE", "--flag", "STRATA_X_Y"),
 * replacing an earlier origin.  0 or -ENOMEM.
 */
int strata_cfg_set_origin(struct strata_config *c, const struct strata_cfg_key *k,
			  const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* STRATA_<SECTION>_<KEY> for section/key into buf. */
void strata_cfg_env_name(const char *section, const char *key, char *buf, size_t n);

/* Levenshtein distance, capped; for suggestions. */
size_t strata_cfg_distance(const char *a, const char *b);

/* ---- plugin sections: raw key/values with where they came from ---------- */

struct strata_cfg_entry {
	char *section, *key, *value;
	const char *file; /* interned in raw->files */
	int line;
};

struct strata_cfg_section {
	char *name;
	char *where; /* "FILE:LINE" of its first header */
};

struct strata_config_raw {
	pthread_mutex_t lock; /* strata_config_get() may be called from plugin threads */
	struct strata_cfg_entry *ent;
	size_t n_ent, cap_ent;
	struct strata_cfg_section *sect;
	size_t n_sect, cap_sect;
	const char **names; /* NULL-terminated view of sect[].name */
	char **files;       /* INI paths entries point into */
	size_t n_files;
	char **kept;        /* strings handed out by get() or replaced: freed last */
	size_t n_kept, cap_kept;
	char **origin;      /* [strata_cfg_nkeys]: where each schema key was set, or NULL */
};

/* Intern an INI path; NULL on ENOMEM. */
const char *strata_cfg_raw_file(struct strata_config_raw *r, const char *path);
/* Set a plugin key (the value is copied); an earlier value is kept alive. */
int strata_cfg_raw_set(struct strata_config_raw *r, const char *section, const char *key,
		       const char *value, const char *file, int line);
/* Record a plugin section header (first one wins). */
int strata_cfg_raw_section(struct strata_config_raw *r, const char *section,
			   const char *file, int line);

#endif
