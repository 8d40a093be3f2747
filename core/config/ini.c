/*
 * ini.c - strata_config_load_file(): an INI file, checked against the schema.
 *
 * inih drives the parse; our reader in front of it counts lines (inih's
 * handler gets none), keeps the whole physical line, and checks what inih
 * would accept silently: section headers with junk, keys outside sections,
 * lines longer than inih's buffer.  Values are taken from the raw line, so a
 * double-quoted value may hold " ; " and a line may be of any length.
 * Syntax: '[section]', 'key = value' or 'key: value', comments starting
 * with ';' or '#' at the start of a line and ';' after whitespace inline
 * (inih's defaults), values optionally in double quotes (with \" \\ \n
 * \t), and indented lines continuing a text value (joined with newlines).
 *
 * Nothing is stored until the whole file is good: a file with an error
 * leaves the config as it was.
 */
#define _GNU_SOURCE /* asprintf */
#include "config/config_int.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "util/log.h"

/* One key of the file, validated, waiting for the whole file to be good. */
struct pending {
	const struct strata_cfg_key *k; /* NULL: a plugin section's key */
	char *section, *key, *value;
	int line;
};

struct ini_state {
	FILE *f;
	const char *path; /* as the user gave it: messages name it so */
	char *dir;        /* directory relative paths resolve against; NULL = cwd */
	char *line;       /* the current physical line, without its end of line */
	size_t cap;
	int lineno;
	int failed;       /* an error was logged; stop feeding inih */
	char section[128];
	int have_key;     /* a key was seen since the header: indented lines continue it */
	int cont;         /* the current line continues the previous key's value */
	char *value;      /* the current line's value, unquoted */
	int read_errno;
	struct pending *pend;
	size_t n_pend, cap_pend;
	struct { char name[128]; int line; } *sect; /* plugin section headers */
	size_t n_sect;
};

static char *lskip(char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	return s;
}

static void rstrip(char *s)
{
	size_t n = strlen(s);

	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
}

static int fail(struct ini_state *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct ini_state *st, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	strata_error("%s:%d: %s", st->path, st->lineno, msg);
	st->failed = 1;
	return 0;
}

/*
 * The value after '=': a double-quoted string (escapes \" \\ \n \t, and
 * nothing but a comment after the closing quote), or the text up to an
 * inline comment (';' after whitespace, as inih does).
 */
static int take_value(struct ini_state *st, char *s)
{
	char *o;

	s = lskip(s);
	if (*s != '"') {
		for (char *p = s; *p; p++)
			if (*p == ';' && p > s && isspace((unsigned char)p[-1])) {
				*p = 0;
				break;
			}
		rstrip(s);
		st->value = strdup(s);
		return st->value ? 0 : (fail(st, "out of memory"), -ENOMEM);
	}
	st->value = o = malloc(strlen(s) + 1);
	if (!o)
		return fail(st, "out of memory"), -ENOMEM;
	for (s++; *s && *s != '"'; s++) {
		if (*s == '\\' && s[1]) {
			s++;
			*o++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
	if (*s != '"')
		return fail(st, "unterminated quoted value"), -EINVAL;
	s = lskip(s + 1);
	if (*s && *s != ';' && *s != '#')
		return fail(st, "text after the closing quote: '%s'", s), -EINVAL;
	return 0;
}

static int valid_name(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
			return 0;
	return 1;
}

/* A section header line; returns what inih is given, or NULL on error. */
static const char *header(struct ini_state *st, char *s, char *subst)
{
	char *end = strchr(s, ']'), *rest;

	if (!end)
		return fail(st, "section header without a closing ']'"), NULL;
	*end = 0;
	rest = lskip(end + 1);
	if (*rest && *rest != ';' && *rest != '#')
		return fail(st, "text after the section header: '%s'", rest), NULL;
	if (!valid_name(s + 1) || strlen(s + 1) >= sizeof(st->section))
		return fail(st, "bad section name '%s' (letters, digits, '-', '_', '.')",
			    s + 1), NULL;
	snprintf(st->section, sizeof(st->section), "%s", s + 1);
	st->have_key = 0;
	if (!strata_cfg_core_section(st->section)) {
		void *p = realloc(st->sect, (st->n_sect + 1) * sizeof(*st->sect));

		if (!p)
			return fail(st, "out of memory"), NULL;
		st->sect = p;
		snprintf(st->sect[st->n_sect].name, sizeof(st->sect->name), "%s", st->section);
		st->sect[st->n_sect++].line = st->lineno;
	}
	snprintf(subst, 16, "[s]\n"); /* we track the section ourselves */
	return subst;
}

/*
 * Our reader: one physical line per call, of any length.  inih is handed a
 * short normal form of it ("key=", "[s]", an indented "x" for a continuation,
 * or an empty line), so its fixed line buffer (200 bytes in Debian's build)
 * never limits what a line may hold; the handler takes the key and value
 * from our copy.
 */
static char *reader(char *buf, int num, void *stream)
{
	struct ini_state *st = stream;
	char subst[16], *s;
	const char *give;
	ssize_t n;

	free(st->value);
	st->value = NULL;
	st->cont = 0;
	if (st->failed)
		return NULL;
	errno = 0;
	n = getline(&st->line, &st->cap, st->f);
	if (n < 0) {
		st->read_errno = errno;
		return NULL;
	}
	st->lineno++;
	if (memchr(st->line, 0, (size_t)n))
		return fail(st, "NUL byte in the line (is this a text file?)"), NULL;
	s = st->line;
	if (st->lineno == 1 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
		s += 3; /* UTF-8 BOM */
	rstrip(s);
	give = "\n";
	if (isspace((unsigned char)s[0]) && st->have_key && *lskip(s) &&
	    !strchr(";#", *lskip(s))) {
		/* inih's multi-line rule: an indented line continues the last value. */
		st->cont = 1;
		if (take_value(st, s))
			return NULL;
		give = " x\n";
	} else if ((s = lskip(s))[0] == 0 || strchr(";#", s[0])) {
		give = "\n";
	} else if (s[0] == '[') {
		if (!(give = header(st, s, subst)))
			return NULL;
	} else {
		size_t sep = strcspn(s, "=:");

		if (!s[sep])
			return fail(st, "expected 'key = value', '[section]' or a comment"), NULL;
		if (take_value(st, s + sep + 1))
			return NULL;
		s[sep] = 0;
		rstrip(s);
		if (!st->section[0])
			return fail(st, "'%s' is outside any [section]", s), NULL;
		if (!valid_name(s))
			return fail(st, "bad key name '%s' (letters, digits, '-', '_', '.')", s), NULL;
		if (snprintf(buf, (size_t)num, "%s=\n", s) >= num)
			return fail(st, "key name too long"), NULL;
		st->have_key = 1;
		return buf;
	}
	snprintf(buf, (size_t)num, "%s", give);
	return buf;
}

static struct pending *find_pending(struct ini_state *st, const char *section, const char *key)
{
	for (size_t i = 0; i < st->n_pend; i++)
		if (strcmp(st->pend[i].section, section) == 0 && strcmp(st->pend[i].key, key) == 0)
			return &st->pend[i];
	return NULL;
}

/* Check a value for its schema key; resolved path into *out (malloc'd). */
static int check_value(struct ini_state *st, const struct strata_cfg_key *k, const char *key,
		       const char *value, char **out)
{
	union strata_cfg_val v;
	char why[160];
	int rc;

	if (k && k->type == STRATA_CFG_PATH && value[0] && value[0] != '/' && st->dir) {
		if (asprintf(out, "%s/%s", st->dir, value) < 0)
			return fail(st, "out of memory"), -ENOMEM;
	} else if (!(*out = strdup(value))) {
		return fail(st, "out of memory"), -ENOMEM;
	}
	if (!k)
		return 0;
	rc = strata_cfg_parse(k, *out, &v, why, sizeof(why));
	if (rc == 0) {
		if (k->type == STRATA_CFG_STR || k->type == STRATA_CFG_PATH ||
		    k->type == STRATA_CFG_PREFILL || k->type == STRATA_CFG_LIST)
			free(v.s); /* stored only once the whole file is good */
		return 0;
	}
	free(*out);
	*out = NULL;
	if (rc != -EINVAL)
		return fail(st, "out of memory"), rc;
	fail(st, "bad value '%s' for %s.%s: expected %s%s", value, st->section, key, why,
	     strchr(value, '#') ? " (inline comments start with ';')" : "");
	return rc;
}

static int on_key(struct ini_state *st, const char *key)
{
	const struct strata_cfg_key *k = NULL;
	struct pending *p;
	char *val;

	if (strata_cfg_core_section(st->section)) {
		k = strata_cfg_find(st->section, key);
		if (!k || (k->flags & STRATA_CFG_CLI_ONLY)) {
			const char *near = strata_cfg_suggest_key(st->section, key);

			if (near)
				return fail(st, "unknown key '%s' in [%s] (did you mean '%s'?)",
					    key, st->section, near);
			return fail(st, "unknown key '%s' in [%s]", key, st->section);
		}
	}
	if ((p = find_pending(st, st->section, key)))
		return fail(st, "duplicate key '%s' in [%s] (first set on line %d)", key,
			    st->section, p->line);
	if (check_value(st, k, key, st->value, &val))
		return 0;
	if (st->n_pend == st->cap_pend) {
		size_t cap = st->cap_pend ? 2 * st->cap_pend : 16;
		struct pending *np = realloc(st->pend, cap * sizeof(*np));

		if (!np) {
			free(val);
			return fail(st, "out of memory");
		}
		st->pend = np;
		st->cap_pend = cap;
	}
	p = &st->pend[st->n_pend];
	p->k = k;
	p->value = val;
	p->line = st->lineno;
	p->section = strdup(st->section);
	p->key = strdup(key);
	st->n_pend++;
	if (!p->section || !p->key)
		return fail(st, "out of memory");
	return 1;
}

/* An indented line: free text (a prompt) goes on with a newline; other values cannot. */
static int on_continuation(struct ini_state *st)
{
	struct pending *p = &st->pend[st->n_pend - 1];
	char *joined;

	if (p->k && p->k->type != STRATA_CFG_STR)
		return fail(st, "indented line continues the value of %s.%s, which cannot "
			    "span lines (do not indent keys)", p->section, p->key);
	if (asprintf(&joined, "%s\n%s", p->value, st->value) < 0)
		return fail(st, "out of memory");
	free(p->value);
	p->value = joined;
	return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct ini_state *st = user;

	(void)section;
	(void)value;
	if (st->failed)
		return 0;
	if (st->cont)
		return on_continuation(st);
	/* name is what our reader handed inih for this line: the key from our copy. */
	return on_key(st, name);
}

static void state_free(struct ini_state *st)
{
	for (size_t i = 0; i < st->n_pend; i++) {
		free(st->pend[i].section);
		free(st->pend[i].key);
		free(st->pend[i].value);
	}
	free(st->pend);
	free(st->sect);
	free(st->line);
	free(st->value);
	free(st->dir);
}

static int apply(struct strata_config *c, struct ini_state *st)
{
	const char *file = strata_cfg_raw_file(c->raw, st->path);
	char *ini = strdup(st->path);
	int rc = file && ini ? 0 : -ENOMEM;

	for (size_t i = 0; !rc && i < st->n_sect; i++)
		rc = strata_cfg_raw_section(c->raw, st->sect[i].name, file, st->sect[i].line);
	for (size_t i = 0; !rc && i < st->n_pend; i++) {
		struct pending *p = &st->pend[i];
		union strata_cfg_val v;
		char why[160];

		if (!p->k) {
			rc = strata_cfg_raw_set(c->raw, p->section, p->key, p->value, file, p->line);
		} else if (!(rc = strata_cfg_parse(p->k, p->value, &v, why, sizeof(why)))) {
			strata_cfg_store(c, p->k, &v); /* checked by the handler: cannot fail */
			rc = strata_cfg_set_origin(c, p->k, "%s:%d", st->path, p->line);
		}
	}
	if (rc) {
		free(ini);
		strata_error("%s: out of memory", st->path);
		return rc;
	}
	free(c->ini_path);
	c->ini_path = ini;
	return 0;
}

int strata_config_load_file(struct strata_config *c, const char *path)
{
	struct ini_state st = { .path = path };
	const char *slash = strrchr(path, '/');
	int rc;

	if (!c->raw)
		return -EINVAL; /* strata_config_init() was not called */
	st.f = fopen(path, "r");
	if (!st.f) {
		rc = -errno;
		strata_error("%s: cannot open the configuration file: %s", path, strerror(errno));
		return rc;
	}
	if (slash && !(st.dir = slash == path ? strdup("") : strndup(path, (size_t)(slash - path)))) {
		fclose(st.f);
		strata_error("%s: out of memory", path);
		return -ENOMEM;
	}
	rc = ini_parse_stream(reader, &st, handler, &st);
	if (st.failed) {
		rc = -EINVAL;
	} else if (ferror(st.f)) {
		rc = -(st.read_errno ? st.read_errno : EIO);
		strata_error("%s: read error: %s", path, strerror(-rc));
	} else if (rc == -2) {
		rc = -ENOMEM;
		strata_error("%s: out of memory", path);
	} else if (rc) {
		strata_error("%s:%d: syntax error", path, rc); /* inih saw what we did not */
		rc = -EINVAL;
	}
	fclose(st.f);
	if (!rc)
		rc = apply(c, &st);
	state_free(&st);
	return rc;
}
