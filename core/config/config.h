/*
 * config.h - run configuration: strata.ini + environment + command line.
 *
 * Precedence: command line > environment > INI file > built-in default.
 *
 * The INI file is read with inih.  Every section and key is checked against a
 * schema: an unknown section or key, or a value that does not parse or is out
 * of range, is one error "FILE:LINE: ..." and the load fails.  Sections named
 * after a plugin ([path-batched], [io-uring], ...) are kept as raw key/values
 * with their line numbers; strata_config_check_plugin_keys() validates them
 * once the plugins, which declare their keys, are known.
 *
 * Environment: every schema key can be set as STRATA_<SECTION>_<KEY> in upper
 * case with '-' as '_' (STRATA_RUN_THREADS=2, STRATA_PLE_READERS=8); a bad
 * value names the variable.
 *
 * Relative paths in the INI file (model path, plugin dir, prompt file) are
 * resolved against the INI file's directory; on the command line and in the
 * environment, against the current directory.
 */
#ifndef STRATA_CONFIG_H
#define STRATA_CONFIG_H

#include <stdint.h>

struct strata_config_raw; /* plugin-section key/values, opaque */

struct strata_config {
	/* [model] */
	char *model_path;     /* path = FILE (-m) */
	uint32_t ctx_size;    /* ctx_size = N (--ctx-size; -c is the INI file); 0 = the model's, at most 4096 */
	int model_experts;    /* experts = mmap|stream (--experts): 0 mapped, 1 read through [io] on use */
	uint32_t expert_cache;/* expert_cache = MiB (--expert-cache): RAM for streamed experts; 0 = auto */
	int model_repack;     /* repack = auto|off (--repack): 1 computes on the file's mapping */

	/* [run] */
	char *prompt;         /* prompt = TEXT (-p) */
	char *prompt_file;    /* prompt_file = FILE (-f); wins over prompt when set */
	int32_t n_predict;    /* n_predict = N (-n); -1 = until EOS or context end */
	int32_t threads;      /* threads = N (-t); 0 = all online CPUs */
	float temp;           /* temp = F (--temp); 0 = greedy */
	int32_t top_k;        /* top_k = N (--top-k); 0 = off */
	float top_p;          /* top_p = F (--top-p); 1 = off */
	float min_p;          /* min_p = F (--min-p); 0 = off */
	float repeat_penalty; /* repeat_penalty = F (--repeat-penalty); 1 = off */
	int32_t repeat_last_n;/* repeat_last_n = N (--repeat-last-n) */
	uint64_t seed;        /* seed = N (--seed); STRATA_SEED_RANDOM = from the clock */
	int add_bos;          /* bos = auto|true|false (--bos/--no-bos); -1 = auto */
	char *dump_logits;    /* --dump-logits FILE (command line only) */
	int verbose;          /* --verbose / -v (command line only) */

	/* [prefill] */
	char *prefill;        /* chunk = auto | auto:N | N (--prefill); "auto" = 8192 */

	/* [plugins] */
	char *plugin_dir;     /* dir = DIR (--plugin-dir); searched first */

	/* [prompt] */
	char *paths;          /* paths = comma-separated path plugins, tried in order */
	uint32_t short_read;  /* short_read = N (--short-read): path-window takes parts of <= N tokens; 0 = off */

	/* [spec] */
	uint32_t spec_window; /* window = S (--spec-window): tokens per decode window */
	int spec_drafter;     /* drafter = none|lookup|mtp|auto (--spec-drafter): STRATA_DRAFT_* */
	float spec_min_p;     /* min_p (--spec-min-p): an MTP draft below it ends the window */
	uint32_t spec_ngram_min, spec_ngram_max; /* lookup's n-gram sizes (--spec-ngram-min/max) */
	int spec_adapt;       /* adapt = BOOL (--[no-]spec-adapt): skip drafts that cost more than they save */

	/* [io]: the io plugin that streams experts ([model] experts = stream) */
	char *io_plugin;        /* plugin = NAME|auto (--io-plugin) */
	uint32_t io_depth;      /* depth = N (--io-depth): reads in flight */
	uint32_t io_timeout_ms; /* timeout_ms = N (--io-timeout): no read landing for this long fails the request */
	int io_direct;          /* direct = BOOL (--io-direct/--no-io-direct): bypass the page cache */

	/* [gpu]: the compute device (include/strata/backend.h) */
	char *gpu_plugin;       /* plugin = NAME|auto|none (--gpu) */
	char *gpu_budget;       /* budget_mib = N|auto (--gpu-budget): device MiB strata may use */
	char *gpu_expert_cache; /* expert_cache = N|auto (--expert-slots): experts cached on the device */
	uint32_t gpu_reserve;   /* vram_reserve_mib = N: left free when the budget is auto */
	float gpu_pcie_frac;    /* pcie_frac = F (--pcie-frac): share of misses run on the device */
	uint32_t gpu_adapt_every; /* adapt_every = N tokens between adaptive swap rounds; 0 = never */
	uint32_t gpu_adapt_swaps; /* adapt_swaps = N: experts replaced per round at most */
	uint32_t gpu_lend_min;  /* lend_min = N: prompt chunks of N+ tokens borrow slots; 0 = never */
	float gpu_lend_frac;    /* lend_frac = F: share of the slots a chunk may borrow */
	uint32_t gpu_lend_keep; /* lend_keep = N: slots never lent */
	char *gpu_profile;      /* profile = FILE (--routing-profile): fill the cache hottest-first */
	char *gpu_profile_save; /* profile_save = FILE: write the run's routing counts at exit */

	/* [ple]: the PLE n-gram table reader (core/ple/ple.h) */
	uint32_t ple_readers;   /* readers = N (--ple-readers); 0 = the single-thread path */
	uint32_t ple_depth;     /* depth = N (--ple-depth): reads in flight per reader */
	uint32_t ple_row_cache; /* row_cache = N rows (--ple-row-cache); 0 = no row cache */
	int ple_io;             /* io = direct|mmap (--ple-io): 0 direct, 1 mmap */
	char *ple_plugin;       /* plugin = NAME|auto (--ple-plugin): the io plugin */
	int ple_stats;          /* stats = BOOL (--ple-stats): a stats line per chunk */
	int ple_trace;          /* trace = BOOL (--ple-trace, STRATA_PLE_TRACE=1) */

	/* [serve]: the OpenAI-compatible HTTP server (core/serve/serve.h) */
	int serve_enabled;      /* enabled = BOOL (--serve): serve instead of one generation */
	char *serve_host;       /* host = ADDR (--host) to listen on */
	uint32_t serve_port;    /* port = N (--port); 0 = any free port (it is logged) */
	char *serve_api_key;    /* api_key = KEY (INI/environment only, also STRATA_API_KEY) */
	uint32_t serve_queue;   /* queue = N (--queue): requests that may wait; more get 503 */
	uint32_t serve_max_body;/* max_body = BYTES (--max-body): larger bodies get 413 */
	char *serve_chat_template; /* chat_template = auto|chatml|glm4|llama3|plain|JINJA (--chat-template) */
	char *serve_chat_template_file; /* chat_template_file = FILE (--chat-template-file) */
	char *serve_cors_origins;  /* cors_origins = LIST (--cors-origins): CORS, or "*" */
	char *serve_allowed_hosts; /* allowed_hosts = LIST (--allowed-hosts): with no API key */
	char *serve_web_dir;       /* web_dir = DIR (--web-dir): the web app's files */
	uint32_t serve_checkpoints; /* checkpoints = N (--checkpoints): turn checkpoints kept; 0 = off */

	/* everything from plugin sections, see above */
	struct strata_config_raw *raw;
	char *ini_path;       /* the -c file, NULL when none */
};

#define STRATA_SEED_RANDOM UINT64_MAX

/* Fill with built-in defaults.  Returns 0 or -ENOMEM. */
int strata_config_init(struct strata_config *c);
/* Free everything owned by c (all char * fields are owned). */
void strata_config_free(struct strata_config *c);

/*
 * Load an INI file into c (fields it sets replace current values).
 * Returns 0, or a negative errno after logging "FILE:LINE: reason" (or
 * "FILE: reason" when it cannot be read).
 */
int strata_config_load_file(struct strata_config *c, const char *path);

/* Apply STRATA_<SECTION>_<KEY> variables.  0 or -EINVAL after logging. */
int strata_config_apply_env(struct strata_config *c);

/*
 * The whole run-mode command line: finds -c FILE (or --config), loads it,
 * applies the environment, then the flags, so the precedence above holds.
 * argv[0] is the program.  Returns 0; 1 when --help was printed (the caller
 * exits 0); or -EINVAL after logging the offending flag.
 */
int strata_config_from_args(struct strata_config *c, int argc, char **argv);

/* The run-mode --help text. */
void strata_config_print_help(const char *prog);

/*
 * Value of a key in any section (schema or plugin section) as text, after
 * precedence; NULL when unset.  Owned by c.
 */
const char *strata_config_get(const struct strata_config *c, const char *section,
			      const char *key);
/* strata_config_get, the keys only a flag sets ([run] dump_logits) included. */
const char *strata_config_get_any(const struct strata_config *c, const char *section,
				  const char *key);

/*
 * Check the keys of plugin section `section` against the NULL-terminated list
 * the plugin declares.  An unknown key is logged as "FILE:LINE: unknown key
 * 'k' in [section]" and gives -EINVAL.
 */
int strata_config_check_plugin_keys(const struct strata_config *c, const char *section,
				    const char *const *keys);
/*
 * Where the value of schema key [section] key came from, for messages about
 * a value that parsed but turned out wrong later (a prompt path that does not
 * exist): "FILE:LINE" for the INI file, the flag as written ("--paths") or the
 * environment variable's name.  NULL while the key has its default.  Owned
 * by c.
 */
const char *strata_config_where(const struct strata_config *c, const char *section,
				const char *key);

/* Names of the plugin sections seen (NULL-terminated, owned by c). */
const char *const *strata_config_plugin_sections(const struct strata_config *c);
/* "FILE:LINE" of a plugin section's header, for error messages. */
const char *strata_config_section_where(const struct strata_config *c, const char *section);

/* Prefill chunk size from c->prefill ("auto" = 8192); -EINVAL if malformed. */
int strata_config_prefill_chunk(const char *spec, uint32_t *chunk);

#endif
