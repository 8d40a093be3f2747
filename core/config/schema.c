/*
 * schema.c - the table of configuration keys and how their values parse.
 *
 * Everything else (INI, environment, command line, --help, get) walks this
 * table, so a new key is one K() line here plus its struct field.
 */
#include "config/config_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/log.h"

#define K(sec, key, type, field, lo, hi, fl, def, s, l, mv, neg, help) \
	{ sec, key, STRATA_CFG_##type, offsetof(struct strata_config, field), \
	  lo, hi, fl, def, s, l, mv, neg, help }

#define IMAX 2147483647.0
#define UMAX 4294967295.0

const struct strata_cfg_key strata_cfg_keys[] = {
	K("model", "path", PATH, model_path, 0, 0, 0, NULL, "-m", "--model", "FILE",
	  NULL, "model file (GGUF); required"),
	K("model", "ctx_size", UINT32, ctx_size, 0, UMAX, 0, "0", NULL, "--ctx-size", "N",
	  NULL, "context size in tokens; 0 = the model's training context, at most 4096"),
	K("model", "experts", CHOICE, model_experts, 0, 0, 0, "mmap", NULL, "--experts", "mmap|stream",
	  NULL, "MoE experts mapped from the file, or read on use through [io] into a RAM cache"),
	K("model", "repack", CHOICE, model_repack, 0, 0, 0, "auto", NULL, "--repack", "auto|off",
	  NULL, "weights the CPU computes: copied into huge pages at load (Q8_0, Q4_K, Q6_K and "
	  "IQ4_NL interleaved) when RAM allows, or read from the file's mapping"),
	K("model", "expert_cache", UINT32, expert_cache, 0, UMAX, 0, "0", NULL, "--expert-cache",
	  "MiB", NULL, "RAM for streamed experts; 0 = half the free memory, at most all experts"),

	K("run", "prompt", STR, prompt, 0, 0, 0, NULL, "-p", "--prompt", "TEXT",
	  NULL, "prompt to start generating from"),
	K("run", "prompt_file", PATH, prompt_file, 0, 0, 0, NULL, "-f", "--file", "FILE",
	  NULL, "read the prompt from FILE (wins over --prompt)"),
	K("run", "n_predict", INT, n_predict, -1, IMAX, 0, "128", "-n", "--n-predict", "N",
	  NULL, "tokens to generate; -1 = until end of text or a full context"),
	K("run", "threads", INT, threads, 0, IMAX, 0, "0", "-t", "--threads", "N",
	  NULL, "CPU threads; 0 = all online CPUs"),
	K("run", "temp", FLOAT, temp, 0, INFINITY, 0, "0.8", NULL, "--temp", "F",
	  NULL, "sampling temperature; 0 = greedy"),
	K("run", "top_k", INT, top_k, 0, IMAX, 0, "40", NULL, "--top-k", "N",
	  NULL, "sample from the N most likely tokens only; 0 = off"),
	K("run", "top_p", FLOAT, top_p, 0, 1, STRATA_CFG_LO_OPEN, "0.95", NULL, "--top-p", "F",
	  NULL, "keep the fewest tokens whose probabilities add up to F; 1 = off"),
	K("run", "min_p", FLOAT, min_p, 0, 1, 0, "0.05", NULL, "--min-p", "F",
	  NULL, "drop tokens less likely than F times the most likely; 0 = off"),
	K("run", "repeat_penalty", FLOAT, repeat_penalty, 0, INFINITY, STRATA_CFG_LO_OPEN,
	  "1.0", NULL, "--repeat-penalty", "F",
	  NULL, "penalise tokens seen in the last --repeat-last-n; 1 = off"),
	K("run", "repeat_last_n", INT, repeat_last_n, 0, IMAX, 0, "64", NULL, "--repeat-last-n",
	  "N", NULL, "how many recent tokens the repeat penalty looks at; 0 = off"),
	K("run", "seed", SEED, seed, 0, 0, 0, "random", NULL, "--seed", "N",
	  NULL, "sampling seed; random (or -1) = a fresh one each run"),
	K("run", "bos", TRISTATE, add_bos, 0, 0, 0, "auto", NULL, "--bos", NULL, "--no-bos",
	  "add a BOS token before the prompt, or not; auto = as the model says"),
	K("run", "dump_logits", PATH, dump_logits, 0, 0, STRATA_CFG_CLI_ONLY, NULL, NULL,
	  "--dump-logits", "FILE", NULL,
	  "write the logits of every evaluated position to FILE"),
	K("run", "verbose", COUNT, verbose, 0, IMAX, STRATA_CFG_CLI_ONLY, "0", "-v",
	  "--verbose", NULL, NULL, "log more; twice for debug output"),

	K("prefill", "chunk", PREFILL, prefill, 0, 0, 0, "auto", NULL, "--prefill", "SPEC",
	  NULL, "prompt chunk: auto (= 8192 tokens), auto:N or N tokens"),

	K("plugins", "dir", PATH, plugin_dir, 0, 0, 0, NULL, NULL, "--plugin-dir", "DIR",
	  NULL, "look for plugins in DIR before the default places"),

	K("prompt", "paths", LIST, paths, 0, 0, 0, "path-batched", NULL, "--paths", "LIST",
	  NULL, "prompt path plugins to try in order, comma-separated"),
	K("prompt", "short_read", UINT32, short_read, 0, UMAX, 0, "64", NULL, "--short-read", "N",
	  NULL, "path-window reads prompt parts of at most N tokens; 0 = off (all batched)"),

	K("spec", "window", UINT32, spec_window, 1, 8, 0, "4", "--spec", "--spec-window", "S",
	  NULL, "tokens per decode window: a drafter's S-1 drafts verified in one pass; "
	  "path-window reads S prompt tokens per step"),
	K("spec", "drafter", CHOICE, spec_drafter, 0, 0, 0, "none", NULL, "--spec-drafter",
	  "none|lookup|mtp|auto", NULL, "who drafts decode windows: none (one token per pass), "
	  "lookup (the sequence's own earlier n-grams), mtp (the model's nextn block) or auto "
	  "(mtp where the model has a usable block, else lookup)"),
	K("spec", "min_p", FLOAT, spec_min_p, 0, 1, 0, "0", NULL, "--spec-min-p", "F", NULL,
	  "mtp: a draft whose probability under the block is below F ends the window"),
	K("spec", "adapt", BOOL, spec_adapt, 0, 0, 0, "true", NULL, "--spec-adapt", NULL,
	  "--no-spec-adapt", "draft less while verify windows cost more per kept token than "
	  "one-token passes (measured as decode runs)"),
	K("spec", "ngram_min", UINT32, spec_ngram_min, 1, 16, 0, "2", NULL, "--spec-ngram-min", "N",
	  NULL, "lookup: the shortest n-gram that may propose a draft"),
	K("spec", "ngram_max", UINT32, spec_ngram_max, 1, 16, 0, "4", NULL, "--spec-ngram-max", "N",
	  NULL, "lookup: the longest n-gram looked for (longer matches win)"),

	K("io", "plugin", STR, io_plugin, 0, 0, 0, "auto", NULL, "--io-plugin", "NAME",
	  NULL, "io plugin that streams experts; auto = the best one this machine supports"),
	K("io", "depth", UINT32, io_depth, 1, 4096, 0, "32", NULL, "--io-depth", "N",
	  NULL, "expert reads kept in flight"),
	K("io", "timeout_ms", UINT32, io_timeout_ms, 1, UMAX, 0, "30000", NULL, "--io-timeout", "MS",
	  NULL, "a request fails when no expert read lands for this long"),
	K("io", "direct", BOOL, io_direct, 0, 0, 0, "true", NULL, "--io-direct", NULL,
	  "--no-io-direct", "stream experts with direct I/O (bypassing the page cache)"),

	K("gpu", "plugin", STR, gpu_plugin, 0, 0, 0, "auto", NULL, "--gpu", "NAME|auto|none",
	  NULL, "compute device plugin; auto = the best one usable here, else the CPU; none = CPU"),
	K("gpu", "budget_mib", STR, gpu_budget, 0, 0, 0, "auto", NULL, "--gpu-budget", "MiB|auto",
	  NULL, "device memory strata may use; auto = what the device reports free, less "
	  "vram_reserve_mib"),
	K("gpu", "vram_reserve_mib", UINT32, gpu_reserve, 0, UMAX, 0, "512", NULL, NULL, NULL,
	  NULL, "device MiB left free (the driver's and libraries' own) when budget_mib = auto"),
	K("gpu", "expert_cache", STR, gpu_expert_cache, 0, 0, 0, "auto", NULL, "--expert-slots",
	  "N|auto", NULL, "routed experts the device caches (its slots); auto = what the budget "
	  "leaves after the layers, the state and the output head"),
	K("gpu", "pcie_frac", FLOAT, gpu_pcie_frac, 0, 1, 0, "0", NULL, "--pcie-frac", "F",
	  NULL, "share of each step's cache misses copied over the link and run on the device "
	  "instead of the CPU"),
	K("gpu", "adapt_every", UINT32, gpu_adapt_every, 0, UMAX, 0, "32", NULL, NULL, NULL,
	  NULL, "tokens between adaptive rounds, in which experts routed more often replace the "
	  "least-routed cached ones; 0 = never"),
	K("gpu", "adapt_swaps", UINT32, gpu_adapt_swaps, 0, UMAX, 0, "4", NULL, NULL, NULL,
	  NULL, "experts an adaptive round replaces at most"),
	K("gpu", "lend_min", UINT32, gpu_lend_min, 0, UMAX, 0, "32", NULL, NULL, NULL,
	  NULL, "prompt chunks of at least N tokens borrow cache slots for the experts they "
	  "route to (refilled before the next decode step); 0 = never"),
	K("gpu", "lend_frac", FLOAT, gpu_lend_frac, 0, 1, 0, "0.9", NULL, NULL, NULL,
	  NULL, "share of the cache slots a prompt chunk may borrow"),
	K("gpu", "lend_keep", UINT32, gpu_lend_keep, 0, UMAX, 0, "128", NULL, NULL, NULL,
	  NULL, "cache slots a prompt chunk never borrows"),
	K("gpu", "profile", PATH, gpu_profile, 0, 0, 0, NULL, NULL, "--routing-profile", "FILE",
	  NULL, "routing profile ('layer expert routes' lines) to fill the cache from, hottest "
	  "first; without one the cache fills by first use"),
	K("gpu", "profile_save", PATH, gpu_profile_save, 0, 0, 0, NULL, NULL, NULL, NULL,
	  NULL, "write the routes the run counted to FILE at exit (a profile for [gpu] profile)"),

	K("ple", "readers", UINT32, ple_readers, 0, 1024, 0, "8", NULL, "--ple-readers", "N",
	  NULL, "PLE reader threads for batched chunks; 0 = the single-thread path"),
	K("ple", "depth", UINT32, ple_depth, 1, 4096, 0, "32", NULL, "--ple-depth", "N",
	  NULL, "PLE reads each reader keeps in flight"),
	K("ple", "row_cache", UINT32, ple_row_cache, 0, UMAX, 0, "262144", NULL,
	  "--ple-row-cache", "N", NULL, "PLE rows kept in RAM for later chunks; 0 = none"),
	K("ple", "io", CHOICE, ple_io, 0, 0, 0, "direct", NULL, "--ple-io", "direct|mmap",
	  NULL, "read PLE rows with direct I/O through the io plugin, or via the page cache"),
	K("ple", "plugin", STR, ple_plugin, 0, 0, 0, "auto", NULL, "--ple-plugin", "NAME",
	  NULL, "io plugin for PLE reads; auto = the best one this machine supports"),
	K("ple", "stats", BOOL, ple_stats, 0, 0, 0, "false", NULL, "--ple-stats", NULL,
	  "--no-ple-stats", "log one PLE io stats line per prompt chunk"),
	K("ple", "trace", BOOL, ple_trace, 0, 0, 0, "false", NULL, "--ple-trace", NULL, NULL,
	  "log when each chunk's PLE read started, was asked for, and the wait"),

	K("serve", "enabled", BOOL, serve_enabled, 0, 0, 0, "false", NULL, "--serve", NULL, NULL,
	  "run the OpenAI-compatible HTTP server instead of one generation"),
	K("serve", "host", STR, serve_host, 0, 0, 0, "127.0.0.1", NULL, "--host", "ADDR",
	  NULL, "address to listen on (0.0.0.0 or :: = every interface)"),
	K("serve", "port", UINT32, serve_port, 0, 65535, 0, "8080", NULL, "--port", "N",
	  NULL, "TCP port; 0 = any free port (the bound one is logged)"),
	/* No flag: a key on the command line would show in ps.  STRATA_API_KEY works too. */
	K("serve", "api_key", STR, serve_api_key, 0, 0, 0, NULL, NULL, NULL, "KEY",
	  NULL, "require 'Authorization: Bearer KEY'; unset = no auth (or env STRATA_API_KEY)"),
	K("serve", "queue", UINT32, serve_queue, 0, 65536, 0, "16", NULL, "--queue", "N",
	  NULL, "requests that may wait while one generates; more get 503"),
	K("serve", "max_body", UINT32, serve_max_body, 1, UMAX, 0, "1048576", NULL, "--max-body",
	  "BYTES", NULL, "largest request body; a larger one gets 413"),
	K("serve", "chat_template", STR, serve_chat_template, 0, 0, 0, "auto", NULL,
	  "--chat-template", "auto|chatml|glm4|llama3|plain|qwen|JINJA",
	  NULL, "chat template; auto = the model's tokenizer.chat_template (else qwen for qwen4exp, "
	  "plain otherwise), a "
	  "built-in by name, or Jinja text"),
	K("serve", "chat_template_file", PATH, serve_chat_template_file, 0, 0, 0, NULL, NULL,
	  "--chat-template-file", "FILE", NULL, "read the chat template (Jinja) from FILE; wins "
	  "over chat_template"),
	K("serve", "cors_origins", STR, serve_cors_origins, 0, 0, 0, NULL, NULL, "--cors-origins",
	  "LIST", NULL, "origins whose web pages may call the server (CORS), comma-separated, "
	  "or *; unset = none"),
	K("serve", "allowed_hosts", STR, serve_allowed_hosts, 0, 0, 0, NULL, NULL,
	  "--allowed-hosts", "LIST", NULL, "Host names answered besides loopback ones when "
	  "there is no API key, comma-separated, or *"),
	K("serve", "web_dir", PATH, serve_web_dir, 0, 0, 0, NULL, NULL, "--web-dir", "DIR", NULL,
	  "the web app's files (served at /); unset = web/ beside the strata executable"),
	K("serve", "checkpoints", UINT32, serve_checkpoints, 0, 1024, 0, "8", NULL,
	  "--checkpoints", "N", NULL,
	  "turn checkpoints kept to resume follow-up prompts (LRU); 0 = read every prompt whole"),
};

const size_t strata_cfg_nkeys = sizeof(strata_cfg_keys) / sizeof(strata_cfg_keys[0]);

/* The core's sections. */
static const char *const core_sections[] = {
	"model", "run", "prefill", "plugins", "prompt", "spec", "io", "gpu", "ple", "serve",
};

int strata_cfg_core_section(const char *section)
{
	for (size_t i = 0; i < sizeof(core_sections) / sizeof(core_sections[0]); i++)
		if (strcmp(core_sections[i], section) == 0)
			return 1;
	return 0;
}

const struct strata_cfg_key *strata_cfg_find(const char *section, const char *key)
{
	for (size_t i = 0; i < strata_cfg_nkeys; i++)
		if (strcmp(strata_cfg_keys[i].section, section) == 0 &&
		    strcmp(strata_cfg_keys[i].key, key) == 0)
			return &strata_cfg_keys[i];
	return NULL;
}

size_t strata_cfg_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[65];

	if (la > 64 || lb > 64)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (tolower((unsigned char)a[i - 1]) !=
					      tolower((unsigned char)b[j - 1]));

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

const char *strata_cfg_suggest_key(const char *section, const char *key)
{
	const char *best = NULL;
	size_t bd = 3; /* only near misses: a typo, not a different word */

	for (size_t i = 0; i < strata_cfg_nkeys; i++) {
		const struct strata_cfg_key *k = &strata_cfg_keys[i];
		size_t d;

		if ((k->flags & STRATA_CFG_CLI_ONLY) || strcmp(k->section, section) != 0)
			continue;
		d = strata_cfg_distance(key, k->key);
		if (d < bd) {
			bd = d;
			best = k->key;
		}
	}
	return best;
}

void strata_cfg_env_name(const char *section, const char *key, char *buf, size_t n)
{
	size_t o = 0;

	o = (size_t)snprintf(buf, n, "STRATA_%s_%s", section, key);
	if (o >= n)
		o = n - 1;
	for (size_t i = 0; i < o; i++)
		buf[i] = buf[i] == '-' ? '_' : (char)toupper((unsigned char)buf[i]);
}

static int parse_int(const struct strata_cfg_key *k, const char *t, union strata_cfg_val *v,
		     char *why, size_t n)
{
	int numeric = t[0] == '-' || t[0] == '+' || isdigit((unsigned char)t[0]);
	int huge = 0;
	char *end;
	long long x;

	if (numeric) {
		errno = 0;
		x = strtoll(t, &end, 10);
		if (!*end) {
			huge = errno == ERANGE || x > k->hi;
			if (!huge && x >= k->lo) {
				v->i = x;
				return 0;
			}
		}
	}
	/* "an integer >= 0" reads better than spelling out INT32_MAX, unless it was hit. */
	if ((k->hi == IMAX || k->hi == UMAX) && !huge)
		snprintf(why, n, "an integer >= %.0f", k->lo);
	else
		snprintf(why, n, "an integer in [%.0f, %.0f]", k->lo, k->hi);
	return -EINVAL;
}

static int parse_float(const struct strata_cfg_key *k, const char *t, union strata_cfg_val *v,
		       char *why, size_t n)
{
	int lo_open = !!(k->flags & STRATA_CFG_LO_OPEN), hi_open = !!(k->flags & STRATA_CFG_HI_OPEN);
	char *end;
	double x;
	int ok;

	errno = 0;
	x = strtod(t, &end);
	ok = t[0] && !isspace((unsigned char)t[0]) && !*end && isfinite(x) &&
	     isfinite((float)x) && (lo_open ? x > k->lo : x >= k->lo) &&
	     (hi_open ? x < k->hi : x <= k->hi);
	if (!ok) {
		if (isinf(k->hi))
			snprintf(why, n, "a number %s %g", lo_open ? ">" : ">=", k->lo);
		else
			snprintf(why, n, "a number in %c%g, %g%c", lo_open ? '(' : '[', k->lo,
				 k->hi, hi_open ? ')' : ']');
		return -EINVAL;
	}
	v->f = x;
	return 0;
}

static int parse_seed(const char *t, union strata_cfg_val *v, char *why, size_t n)
{
	char *end;
	unsigned long long x;

	if (strcasecmp(t, "random") == 0 || strcmp(t, "-1") == 0) {
		v->u = STRATA_SEED_RANDOM;
		return 0;
	}
	errno = 0;
	x = isdigit((unsigned char)t[0]) ? strtoull(t, &end, 10) : 0;
	if (!isdigit((unsigned char)t[0]) || *end || errno == ERANGE || x == STRATA_SEED_RANDOM) {
		snprintf(why, n, "an integer in [0, %llu] or 'random'",
			 (unsigned long long)STRATA_SEED_RANDOM - 1);
		return -EINVAL;
	}
	v->u = x;
	return 0;
}

static int parse_tristate(const char *t, union strata_cfg_val *v, char *why, size_t n)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	if (strcasecmp(t, "auto") == 0) {
		v->i = -1;
		return 0;
	}
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(t, yes[i]) == 0) {
			v->i = 1;
			return 0;
		}
		if (strcasecmp(t, no[i]) == 0) {
			v->i = 0;
			return 0;
		}
	}
	snprintf(why, n, "auto, true or false");
	return -EINVAL;
}

static int name_char(int ch)
{
	return isalnum(ch) || ch == '-' || ch == '_' || ch == '.';
}

/* "a, b ,c" -> "a,b,c"; every name non-empty, well-formed and listed once. */
static int parse_list(const char *t, union strata_cfg_val *v, char *why, size_t n)
{
	size_t len = strlen(t);
	char *out = malloc(len + 1), *o = out;
	const char *p = t;

	if (!out)
		return -ENOMEM;
	for (;;) {
		const char *s, *e;
		char *prev;

		while (*p == ' ' || *p == '\t')
			p++;
		s = p;
		while (name_char((unsigned char)*p))
			p++;
		e = p;
		while (*p == ' ' || *p == '\t')
			p++;
		if (s == e || (*p && *p != ','))
			goto bad;
		for (prev = out; prev < o;) { /* earlier names in out */
			size_t pl = strcspn(prev, ",");

			if (pl == (size_t)(e - s) && memcmp(prev, s, pl) == 0)
				goto bad;
			prev += pl + 1;
		}
		memcpy(o, s, (size_t)(e - s));
		o += e - s;
		*o = 0;
		if (!*p)
			break;
		*o++ = ',';
		*o = 0;
		p++;
	}
	v->s = out;
	return 0;
bad:
	free(out);
	snprintf(why, n, "a comma-separated list of plugin names, each listed once");
	return -EINVAL;
}

static int parse_bool(const char *t, union strata_cfg_val *v, char *why, size_t n)
{
	if (parse_tristate(t, v, why, n) || v->i < 0) {
		snprintf(why, n, "true or false");
		return -EINVAL;
	}
	return 0;
}

/* The value's index among the '|'-separated choices in the key's metavar. */
static int parse_choice(const struct strata_cfg_key *k, const char *t, union strata_cfg_val *v,
			char *why, size_t n)
{
	const char *p = k->metavar;

	for (int64_t i = 0; p && *p; i++) {
		size_t len = strcspn(p, "|");

		if (len == strlen(t) && strncasecmp(p, t, len) == 0) {
			v->i = i;
			return 0;
		}
		p += len + (p[len] == '|');
	}
	snprintf(why, n, "one of %s", k->metavar ? k->metavar : "(none)");
	return -EINVAL;
}

int strata_cfg_parse(const struct strata_cfg_key *k, const char *text,
		     union strata_cfg_val *v, char *why, size_t whylen)
{
	uint32_t chunk;

	memset(v, 0, sizeof(*v));
	switch (k->type) {
	case STRATA_CFG_STR:
	case STRATA_CFG_PATH:
		if (!*text)
			return 0; /* empty = unset */
		v->s = strdup(text);
		return v->s ? 0 : -ENOMEM;
	case STRATA_CFG_INT:
	case STRATA_CFG_UINT32:
	case STRATA_CFG_COUNT:
		return parse_int(k, text, v, why, whylen);
	case STRATA_CFG_FLOAT:
		return parse_float(k, text, v, why, whylen);
	case STRATA_CFG_SEED:
		return parse_seed(text, v, why, whylen);
	case STRATA_CFG_TRISTATE:
		return parse_tristate(text, v, why, whylen);
	case STRATA_CFG_BOOL:
		return parse_bool(text, v, why, whylen);
	case STRATA_CFG_CHOICE:
		return parse_choice(k, text, v, why, whylen);
	case STRATA_CFG_PREFILL:
		if (strata_config_prefill_chunk(text, &chunk)) {
			snprintf(why, whylen, "auto, auto:N or N, with N a token count >= 1");
			return -EINVAL;
		}
		v->s = strdup(text);
		return v->s ? 0 : -ENOMEM;
	case STRATA_CFG_LIST:
		return parse_list(text, v, why, whylen);
	}
	return -EINVAL;
}

void strata_cfg_store(struct strata_config *c, const struct strata_cfg_key *k,
		      union strata_cfg_val *v)
{
	char *field = (char *)c + k->off;

	switch (k->type) {
	case STRATA_CFG_STR:
	case STRATA_CFG_PATH:
	case STRATA_CFG_PREFILL:
	case STRATA_CFG_LIST:
		free(*(char **)field);
		*(char **)field = v->s;
		v->s = NULL;
		break;
	case STRATA_CFG_INT:
		*(int32_t *)field = (int32_t)v->i;
		break;
	case STRATA_CFG_UINT32:
		*(uint32_t *)field = (uint32_t)v->i;
		break;
	case STRATA_CFG_TRISTATE:
	case STRATA_CFG_COUNT:
	case STRATA_CFG_BOOL:
	case STRATA_CFG_CHOICE:
		*(int *)field = (int)v->i;
		break;
	case STRATA_CFG_FLOAT:
		*(float *)field = (float)v->f;
		break;
	case STRATA_CFG_SEED:
		*(uint64_t *)field = v->u;
		break;
	}
}

int strata_cfg_set(struct strata_config *c, const struct strata_cfg_key *k,
		   const char *text, const char *where, const char *what)
{
	union strata_cfg_val v;
	char why[160];
	int rc = strata_cfg_parse(k, text, &v, why, sizeof(why));

	if (rc == -EINVAL)
		strata_error("%s: bad value '%s' for %s: expected %s", where, text, what, why);
	else if (rc)
		strata_error("%s: out of memory", where);
	else
		strata_cfg_store(c, k, &v);
	return rc;
}

char *strata_cfg_format(const struct strata_config *c, const struct strata_cfg_key *k)
{
	const char *field = (const char *)c + k->off;
	char buf[64];

	switch (k->type) {
	case STRATA_CFG_STR:
	case STRATA_CFG_PATH:
	case STRATA_CFG_PREFILL:
	case STRATA_CFG_LIST:
		return *(char *const *)field ? strdup(*(char *const *)field) : NULL;
	case STRATA_CFG_INT:
		snprintf(buf, sizeof(buf), "%d", (int)*(const int32_t *)field);
		break;
	case STRATA_CFG_UINT32:
		snprintf(buf, sizeof(buf), "%u", (unsigned)*(const uint32_t *)field);
		break;
	case STRATA_CFG_COUNT:
		snprintf(buf, sizeof(buf), "%d", *(const int *)field);
		break;
	case STRATA_CFG_TRISTATE: {
		int t = *(const int *)field;

		snprintf(buf, sizeof(buf), "%s", t < 0 ? "auto" : t ? "true" : "false");
		break;
	}
	case STRATA_CFG_BOOL:
		snprintf(buf, sizeof(buf), "%s", *(const int *)field ? "true" : "false");
		break;
	case STRATA_CFG_CHOICE: {
		const char *p = k->metavar ? k->metavar : "";

		for (int i = *(const int *)field; i > 0 && *p; i--)
			p += strcspn(p, "|") + (p[strcspn(p, "|")] == '|');
		snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(p, "|"), p);
		break;
	}
	case STRATA_CFG_SEED: {
		uint64_t s = *(const uint64_t *)field;

		if (s == STRATA_SEED_RANDOM)
			snprintf(buf, sizeof(buf), "random");
		else
			snprintf(buf, sizeof(buf), "%llu", (unsigned long long)s);
		break;
	}
	case STRATA_CFG_FLOAT: {
		float f = *(const float *)field;

		/* The shortest text that reads back as the same float: 0.95, not 0.949999988. */
		for (int prec = 1; prec <= 9; prec++) {
			snprintf(buf, sizeof(buf), "%.*g", prec, (double)f);
			if (strtof(buf, NULL) == f)
				break;
		}
		break;
	}
	default:
		return NULL;
	}
	return strdup(buf);
}

int strata_config_prefill_chunk(const char *spec, uint32_t *chunk)
{
	const char *num = spec;
	unsigned long long n;
	char *end;

	if (!spec)
		return -EINVAL;
	if (strncmp(spec, "auto", 4) == 0) {
		if (spec[4] == 0) {
			*chunk = 8192;
			return 0;
		}
		if (spec[4] != ':')
			return -EINVAL;
		num = spec + 5;
	}
	if (!isdigit((unsigned char)num[0]))
		return -EINVAL;
	errno = 0;
	n = strtoull(num, &end, 10);
	if (*end || errno == ERANGE || n < 1 || n > UINT32_MAX)
		return -EINVAL;
	*chunk = (uint32_t)n;
	return 0;
}
