/*
 * tmpl.h - Jinja chat templates: the subset that models' tokenizer.chat_template
 * programs use, rendered as Python's jinja2 renders them.
 *
 * The environment is the one Hugging Face transformers renders chat templates
 * in (a sandboxed jinja2 Environment with trim_blocks, lstrip_blocks and the
 * loop controls): statements if/elif/else, for (with else, an if filter and
 * loop.*), set (names, tuples, namespace attributes, blocks), macro, call,
 * filter, break, continue and generation; the expression grammar of jinja2;
 * its filters and tests; the str/list/dict methods templates call; and the
 * globals range, namespace, dict, raise_exception and strftime_now.  tojson
 * is transformers' (json.dumps with ensure_ascii=False); from_json is
 * llama.cpp's extension (json.loads).  Output is byte for byte what jinja2
 * writes for the same template and variables (tests/check_tmpl.c holds the
 * two side by side over a corpus of real templates).
 *
 * A render runs in an arena with limits on memory, output and steps, so a
 * hostile template ends in an error, never a hang or a crash.
 */
#ifndef STRATA_TMPL_H
#define STRATA_TMPL_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct strata_tmpl;

/* Why a compile or a render failed: what a client or a log is told. */
struct strata_tmpl_err {
	int line;          /* line of the template (1-based), 0 when none applies */
	int raised;        /* the template called raise_exception(message) */
	char msg[400];
};

/*
 * Compile a template of len bytes.  Returns 0 and *out (free with
 * strata_tmpl_free), -EINVAL with *err filled for a syntax error or a
 * construct outside the subset, or -ENOMEM.  Nothing is logged.
 */
int strata_tmpl_compile(const char *src, size_t len, struct strata_tmpl **out,
			struct strata_tmpl_err *err);
/* NULL is a no-op. */
void strata_tmpl_free(struct strata_tmpl *t);

struct strata_tmpl_opts {
	int64_t now;         /* strftime_now's time: Unix seconds, formatted as UTC */
	size_t max_mem;      /* bytes the render may allocate (0: 256 MiB) */
	size_t max_out;      /* bytes of output (0: 64 MiB) */
	uint64_t max_steps;  /* evaluation steps (0: 50 million) */
};

/*
 * Render t with the members of the JSON object vars as its variables (a
 * number with an integral value becomes an int, others floats).  Returns 0
 * and *out (malloc'd, NUL-terminated; *len bytes, which may hold NULs from
 * the variables), -EINVAL with *err filled when the template raised or
 * failed (an undefined value used, a type error, a limit), or -ENOMEM.
 * Safe to call from several threads at once on one template.
 */
int strata_tmpl_render(const struct strata_tmpl *t, const struct cJSON *vars,
		       const struct strata_tmpl_opts *opts, char **out, size_t *len,
		       struct strata_tmpl_err *err);

#endif
