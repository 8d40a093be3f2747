/*
 * args.c - environment variables, the command line, and --help.
 *
 * The command line is read twice: the first pass checks every flag and finds
 * -c/--config (wherever it is) and --help; then the INI file and the
 * environment are applied, and the second pass applies the flags, so
 * command line > environment > INI > default holds whatever the order.
 */
#include "config/config_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

int strata_config_apply_env(struct strata_config *c)
{
	for (size_t i = 0; i < strata_cfg_nkeys; i++) {
		const struct strata_cfg_key *k = &strata_cfg_keys[i];
		char name[128], what[128];
		const char *v;

		if (k->flags & STRATA_CFG_CLI_ONLY)
			continue;
		strata_cfg_env_name(k->section, k->key, name, sizeof(name));
		v = getenv(name);
		/* An empty variable counts as unset, as ${VAR:-default} would have it. */
		if (!v || !*v)
			continue;
		snprintf(what, sizeof(what), "%s.%s", k->section, k->key);
		if (strata_cfg_set(c, k, v, name, what))
			return -EINVAL;
		if (strata_cfg_set_origin(c, k, "%s", name))
			return -ENOMEM;
	}
	return 0;
}

/* ---- command-line flags ---------------------------------------------------- */

enum opt_kind { OPT_HELP, OPT_CONFIG, OPT_KEY, OPT_KEY_NEG };

struct opt {
	enum opt_kind kind;
	const struct strata_cfg_key *k; /* OPT_KEY, OPT_KEY_NEG */
	const char *value;              /* the flag's value; NULL when it takes none */
	char name[64];                  /* the flag as written, without "=value" */
};

static int takes_value(const struct strata_cfg_key *k)
{
	return k->metavar != NULL;
}

/* Which flag is `name` ("--temp", "-t")?  0, or -1 when unknown. */
static int lookup(const char *name, struct opt *o)
{
	if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
		o->kind = OPT_HELP;
		return 0;
	}
	if (strcmp(name, "-c") == 0 || strcmp(name, "--config") == 0) {
		o->kind = OPT_CONFIG;
		return 0;
	}
	for (size_t i = 0; i < strata_cfg_nkeys; i++) {
		const struct strata_cfg_key *k = &strata_cfg_keys[i];

		if ((k->shrt && strcmp(k->shrt, name) == 0) || (k->lng && strcmp(k->lng, name) == 0)) {
			o->kind = OPT_KEY;
			o->k = k;
			return 0;
		}
		if (k->neg && strcmp(k->neg, name) == 0) {
			o->kind = OPT_KEY_NEG;
			o->k = k;
			return 0;
		}
	}
	return -1;
}

static const char *suggest_flag(const char *name)
{
	const char *best = NULL;
	size_t bd = 3;

	if (strncmp(name, "--", 2) != 0)
		return NULL;
	for (size_t i = 0; i < strata_cfg_nkeys; i++) {
		const char *cand[2] = { strata_cfg_keys[i].lng, strata_cfg_keys[i].neg };

		for (int j = 0; j < 2; j++) {
			size_t d;

			if (!cand[j])
				continue;
			d = strata_cfg_distance(name, cand[j]);
			if (d < bd) {
				bd = d;
				best = cand[j];
			}
		}
	}
	return best;
}

/*
 * The flag at argv[*i] (and its value), advancing *i past what it used.
 * Logs and returns -EINVAL for an unknown flag, a missing or unexpected value,
 * or an argument that is not a flag.
 */
static int next_opt(int argc, char **argv, int *i, struct opt *o)
{
	const char *arg = argv[*i], *eq = NULL, *near;
	char *name = o->name;
	int needs;

	memset(o, 0, sizeof(*o));
	if (arg[0] != '-' || arg[1] == 0) {
		strata_error("unexpected argument '%s': the prompt goes after -p, a file after "
			     "-f (see --help)", arg);
		return -EINVAL;
	}
	if (arg[1] == '-')
		eq = strchr(arg, '=');
	snprintf(name, sizeof(o->name), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
	if (lookup(name, o)) {
		near = suggest_flag(name);
		if (near)
			strata_error("unknown flag '%s' (did you mean '%s'?)", name, near);
		else
			strata_error("unknown flag '%s' (see --help)", name);
		return -EINVAL;
	}
	needs = o->kind == OPT_CONFIG || (o->kind == OPT_KEY && takes_value(o->k));
	if (!needs && eq) {
		strata_error("flag '%s' takes no value (got '%s')", name, arg);
		return -EINVAL;
	}
	if (needs) {
		if (eq) {
			o->value = eq + 1;
		} else if (*i + 1 < argc) {
			o->value = argv[++*i];
		} else {
			strata_error("flag '%s' needs a value (%s)", name,
				     o->kind == OPT_CONFIG ? "FILE" : o->k->metavar);
			return -EINVAL;
		}
	}
	return 0;
}

/* Apply one flag of the second pass. */
static int apply_opt(struct strata_config *c, const struct opt *o)
{
	const struct strata_cfg_key *k = o->k;
	const char *name = o->name;

	int rc;

	if (o->kind == OPT_KEY_NEG) {
		rc = strata_cfg_set(c, k, "false", "command line", name);
	} else if (k->type == STRATA_CFG_COUNT && !o->value) {
		int *n = (int *)((char *)c + k->off);

		(*n)++;
		rc = 0;
	} else {
		rc = strata_cfg_set(c, k, o->value ? o->value : "true", "command line", name);
	}
	return rc ? rc : strata_cfg_set_origin(c, k, "%s", name);
}

int strata_config_from_args(struct strata_config *c, int argc, char **argv)
{
	const char *ini = NULL;
	struct opt o;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (next_opt(argc, argv, &i, &o))
			return -EINVAL;
		if (o.kind == OPT_HELP) {
			strata_config_print_help(argv[0]);
			return 1;
		}
		if (o.kind == OPT_CONFIG) {
			if (ini) {
				strata_error("-c/--config given twice ('%s' and '%s'): put the "
					     "settings in one file", ini, o.value);
				return -EINVAL;
			}
			ini = o.value;
		}
	}
	if (ini && (rc = strata_config_load_file(c, ini)))
		return rc;
	if ((rc = strata_config_apply_env(c)))
		return rc;
	for (int i = 1; i < argc; i++) {
		next_opt(argc, argv, &i, &o); /* cannot fail: the first pass checked */
		if (o.kind != OPT_CONFIG && apply_opt(c, &o))
			return -EINVAL;
	}
	return 0;
}

/* ---- --help ---------------------------------------------------------------------- */

static const char *const section_titles[][2] = {
	{ "model", "model" },
	{ "run", "generation and sampling" },
	{ "prefill", "prompt processing" },
	{ "plugins", "plugins" },
	{ "prompt", "prompt paths" },
	{ "spec", "decode windows" },
	{ "io", "streamed expert reads" },
	{ "gpu", "compute device" },
	{ "ple", "PLE n-gram table reads" },
	{ "serve", "HTTP server" },
};

static void help_key(const struct strata_cfg_key *k)
{
	char flags[64], env[128], shrt[8];

	if (k->neg)
		snprintf(flags, sizeof(flags), "%s, %s", k->lng, k->neg);
	else
		snprintf(flags, sizeof(flags), "%s%s%s", k->lng ? k->lng : "",
			 k->metavar ? " " : "", k->metavar ? k->metavar : "");
	snprintf(shrt, sizeof(shrt), "%s%s", k->shrt ? k->shrt : "", k->shrt ? "," : "");
	printf("  %-4s %-22s %s", shrt, k->lng ? flags : "(INI only)", k->help);
	if (k->def && k->type != STRATA_CFG_COUNT)
		printf(" (default: %s)", k->def);
	printf("\n");
	if (k->flags & STRATA_CFG_CLI_ONLY)
		return;
	strata_cfg_env_name(k->section, k->key, env, sizeof(env));
	printf("  %-4s %-22s [%s] %s = %s, or %s\n", "", "", k->section, k->key,
	       k->type == STRATA_CFG_TRISTATE ? "auto|true|false" :
	       k->type == STRATA_CFG_BOOL ? "true|false" : k->metavar, env);
}

void strata_config_print_help(const char *prog)
{
	printf("usage: %s [-c FILE] [options]\n\n"
	       "Generates text from a GGUF model.  Each setting below can also be given\n"
	       "in the INI file (-c) as '[section] key = value', or in the environment as\n"
	       "STRATA_<SECTION>_<KEY>.  Precedence: command line > environment > INI file\n"
	       "> default.  Relative paths in the INI file are relative to the file.\n"
	       "Flags take their value as '--flag value' or '--flag=value'.\n\n"
	       "general:\n", prog ? prog : "strata");
	printf("  %-4s %-22s %s\n", "-h,", "--help", "print this help and exit");
	printf("  %-4s %-22s %s\n", "-c,", "--config FILE",
	       "read settings from the INI file FILE");
	for (size_t s = 0; s < sizeof(section_titles) / sizeof(section_titles[0]); s++) {
		int first = 1;

		for (size_t i = 0; i < strata_cfg_nkeys; i++) {
			const struct strata_cfg_key *k = &strata_cfg_keys[i];

			if (strcmp(k->section, section_titles[s][0]) != 0)
				continue;
			if (first)
				printf("\n%s ([%s]):\n", section_titles[s][1], k->section);
			first = 0;
			help_key(k);
		}
	}
	printf("\nOther sections of the INI file configure the plugin of the same name,\n"
	       "e.g. [path-batched]; a plugin key can also be set as\n"
	       "STRATA_<PLUGIN>_<KEY> ('-' written as '_').\n");
}
