/*
 * grammar.h - constrained sampling: what the reply may be, as a context-free
 * grammar over bytes, and a token mask from it.
 *
 * A grammar comes from a JSON schema (response_format json_schema), "any
 * JSON object" (json_object), or the tool-call format of the chat template
 * with the tools' parameter schemas (a forced tool call).  A run of it
 * follows the reply byte by byte with a set of pushdown stacks (each stack a
 * way the grammar can still go); the mask of a step keeps the tokens whose
 * bytes some stack accepts, found by walking a trie of the vocabulary's
 * pieces once, and the end-of-generation tokens when a stack is complete.
 * Masks are cached by the state they were made for, so a state the reply
 * comes back to (inside a string, between items) costs a lookup.
 */
#ifndef STRATA_SERVE_GRAMMAR_H
#define STRATA_SERVE_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#include "serve/msgparse.h"

struct cJSON;
struct strata_engine;
struct strata_grammar;
struct strata_vtrie;
struct strata_grammar_run;

/*
 * The grammar of a JSON value matching schema (NULL: any JSON object).  The
 * schema may use type (and lists of types), properties, required,
 * additionalProperties, items, prefixItems, minItems, maxItems, minLength,
 * maxLength, enum, const, anyOf, oneOf, allOf (one), $ref into $defs or
 * definitions (recursion allowed), nullable, and format date, time,
 * date-time or uuid.  Returns 0 and *out (strata_grammar_free), -EINVAL
 * with why (naming the schema path) for what it cannot take (pattern,
 * numeric bounds, another format, ...), or -ENOMEM.
 */
int strata_grammar_json(const struct cJSON *schema, struct strata_grammar **out, char *why,
			size_t n);

/*
 * The grammar of a reply that is only tool calls in format f (and `sub`,
 * the template's inner format: 0 JSON, 1 Qwen XML, 2 GLM), of the tool
 * named `name` (NULL: any of tools), one call or, with many, one or more.
 * Errors as strata_grammar_json's, naming the tool.
 */
int strata_grammar_tools(const struct cJSON *tools, const char *name, enum strata_toolfmt f,
			 int sub, int many, struct strata_grammar **out, char *why, size_t n);
void strata_grammar_free(struct strata_grammar *g);

/* The inner format of a template's <tool_call> blocks: 0 JSON, 1 Qwen XML, 2 GLM. */
int strata_grammar_subformat(const char *template_source);

/*
 * The vocabulary as the mask sees it: each token's bytes (a marker control
 * token: its text; another control token: none, never allowed), and the
 * end-of-generation tokens.  markers[] are the control tokens to read as
 * text.  Returns 0 and *out (strata_vtrie_free), or -ENOMEM.
 */
int strata_vtrie_build(const struct strata_engine *e, const int32_t *marker_ids,
		       const char *const *marker_texts, int n_markers, struct strata_vtrie **out);
void strata_vtrie_free(struct strata_vtrie *t);

/* A run of g over the vocabulary t (both must outlive it). */
int strata_grammar_run_new(const struct strata_grammar *g, const struct strata_vtrie *t,
			   struct strata_grammar_run **out);
void strata_grammar_run_free(struct strata_grammar_run *r);
/*
 * Set every logit the grammar does not allow next to -inf.  Returns 0, or
 * -EPROTO when no token is allowed (the grammar is stuck: cannot happen for
 * a reply that only took allowed tokens), -ENOMEM.
 */
int strata_grammar_mask(struct strata_grammar_run *r, float *logits, int32_t n);
/* The reply took these bytes: 0, or -EPROTO when the grammar does not allow them. */
int strata_grammar_accept(struct strata_grammar_run *r, const char *bytes, size_t len);
/* 1 when what was accepted is a whole reply of the grammar. */
int strata_grammar_complete(const struct strata_grammar_run *r);

#endif
