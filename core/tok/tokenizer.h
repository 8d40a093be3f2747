/*
 * tokenizer.h - text <-> token ids, from the vocabulary stored in a GGUF file.
 *
 * Supported models (GGUF key tokenizer.ggml.model): "llama" (SentencePiece
 * BPE with scores, byte fallback, "▁" for spaces) and "gpt2" (byte-level BPE
 * with merge ranks, its pre-tokenizer chosen by tokenizer.ggml.pre: gpt-2,
 * llama3/llama-bpe, qwen2, deepseek-llm, deepseek-coder, falcon, starcoder,
 * refact, mpt, default and llama.cpp's aliases of those) and "bert"
 * (WordPiece with llama.cpp's version of BERT's normaliser: lowercase,
 * accents stripped).
 *
 * Behaviour follows llama.cpp's vocabulary code, so ids agree with a model
 * converted for llama.cpp: the same special-token partition, the same
 * per-model attribute fix-ups (EOG detection by text, phi-3 RSTRIP), the
 * same reading of invalid UTF-8 and the same piece rules (checked against
 * llama.cpp on tests/vocab/corpus.inp).  A loaded tokenizer is immutable: every function below may
 * be called from several threads at once.
 */
#ifndef STRATA_TOKENIZER_H
#define STRATA_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

struct strata_gguf;
struct strata_tokenizer;

/*
 * Flags for strata_tokenize().
 *
 * STRATA_TOK_ADD_BOS is llama.cpp's add_special: BOS is prepended when the
 * vocab asks for it (tokenizer.ggml.add_bos_token, default true for "llama"
 * and "bert", false for "gpt2" but for the llama3 pre-tokenizer), EOS
 * appended when it asks for that (add_eos_token, default false) and SEP
 * after it likewise (add_sep_token, default true for "bert" only).
 *
 * STRATA_TOK_PARSE_SPECIAL matches control (and unknown-type) tokens written
 * in the text, e.g. "<s>" or "<|user|>".  User-defined tokens are matched
 * with or without the flag, as llama.cpp and HF tokenizers do.
 */
#define STRATA_TOK_ADD_BOS 1u       /* prepend BOS when the vocab uses one */
#define STRATA_TOK_PARSE_SPECIAL 2u /* match control/user tokens in the text */

/* Token attributes (llama.cpp's llama_token_attr bit values). */
#define STRATA_TOKEN_ATTR_UNDEFINED 0u
#define STRATA_TOKEN_ATTR_UNKNOWN (1u << 0)
#define STRATA_TOKEN_ATTR_UNUSED (1u << 1)
#define STRATA_TOKEN_ATTR_NORMAL (1u << 2)
#define STRATA_TOKEN_ATTR_CONTROL (1u << 3)
#define STRATA_TOKEN_ATTR_USER_DEFINED (1u << 4)
#define STRATA_TOKEN_ATTR_BYTE (1u << 5)
#define STRATA_TOKEN_ATTR_NORMALIZED (1u << 6)
#define STRATA_TOKEN_ATTR_LSTRIP (1u << 7)
#define STRATA_TOKEN_ATTR_RSTRIP (1u << 8)
#define STRATA_TOKEN_ATTR_SINGLE_WORD (1u << 9)

/*
 * Build a tokenizer from the tokenizer.* keys of g.  The tokenizer copies what
 * it needs: g may be closed afterwards.  Returns 0 or -errno (-ENOTSUP for an
 * unknown tokenizer model or tokenizer.ggml.pre, -EINVAL for an inconsistent
 * vocab: array lengths or element types that differ, duplicate tokens, special
 * ids out of range, a missing or malformed tokenizer.ggml.merges or a merge
 * naming a token the vocab lacks; -ENOENT when the file has no
 * tokenizer.ggml.model), logging one error that names the file.  A special id
 * stored as 0xFFFFFFFF (or -1) means "unset".  Byte-level BPE vocabs get
 * llama.cpp's defaults: no BOS/EOS added unless add_bos_token/add_eos_token
 * say so (llama3 pre-tokenizers: BOS), BOS = EOS = 11 unless given.
 * *out released with strata_tokenizer_free().
 */
int strata_tokenizer_load(const struct strata_gguf *g, struct strata_tokenizer **out);
void strata_tokenizer_free(struct strata_tokenizer *t);

int32_t strata_tokenizer_n_vocab(const struct strata_tokenizer *t);
int32_t strata_tokenizer_bos(const struct strata_tokenizer *t); /* -1 if none */
int32_t strata_tokenizer_eos(const struct strata_tokenizer *t); /* -1 if none */
/* End-of-turn token (tokenizer.ggml.eot_token_id or found by text); -1 if none. */
int32_t strata_tokenizer_eot(const struct strata_tokenizer *t);
/* 1 when id ends generation (EOS, EOT, ...). */
int strata_tokenizer_is_eog(const struct strata_tokenizer *t, int32_t id);
/* The tokenizer.ggml.model string ("llama", "gpt2", "bert"). */
const char *strata_tokenizer_model(const struct strata_tokenizer *t);

/* STRATA_TOKEN_ATTR_* bits of id after the load-time fix-ups; 0 if out of range. */
unsigned strata_token_attr(const struct strata_tokenizer *t, int32_t id);
/* The id whose vocabulary text is exactly text[0..len), or -1. */
int32_t strata_tokenizer_find(const struct strata_tokenizer *t, const char *text, size_t len);

/*
 * Tokenize len bytes of text.  On success returns the number of ids and
 * *ids is a malloc'd array the caller frees (NULL when the count is 0).
 * Negative errno on failure: -ENOMEM, -EOVERFLOW for a text over 256 MiB
 * between special tokens or with more than INT_MAX ids, -EILSEQ when a byte
 * can be represented neither by a byte token nor by the unknown token (logged;
 * SentencePiece).  A byte-level BPE vocab has no such error: a byte whose
 * character it lacks becomes the unknown token, or is dropped when there is
 * none, as llama.cpp and Hugging Face do.  -E2BIG when the pre-tokenizer's
 * regex hits PCRE2's match limit (logged).
 */
int strata_tokenize(const struct strata_tokenizer *t, const char *text, size_t len,
		    unsigned flags, int32_t **ids);

/*
 * The bytes token `id` stands for when detokenising (spaces restored, byte
 * tokens as their byte, control tokens as empty).  Writes at most cap bytes
 * into buf and returns the full length (like snprintf, no NUL is added), or
 * -EINVAL for an id out of range.  Unknown and user-defined tokens render as
 * their text, unused tokens as empty (llama.cpp's token_to_piece, special=false).
 */
int strata_token_to_piece(const struct strata_tokenizer *t, int32_t id, char *buf, size_t cap);
/* The vocabulary text of id as stored (for display); NULL if out of range. */
const char *strata_token_text(const struct strata_tokenizer *t, int32_t id);

/* Flags for strata_detokenize(). */
#define STRATA_DETOK_REMOVE_SPECIAL 1u  /* drop the BOS/EOS the vocab adds */
#define STRATA_DETOK_UNPARSE_SPECIAL 2u /* render control tokens as their text */

/*
 * Concatenate the pieces of n ids into buf (at most cap bytes, no NUL) and
 * return the full length, like snprintf; -EINVAL for an id out of range,
 * -EOVERFLOW past INT_MAX bytes.  As llama.cpp's llama_detokenize: when the
 * vocab adds a space prefix, the leading space of the first piece is dropped,
 * unless REMOVE_SPECIAL dropped a leading BOS (then the text after a BOS keeps
 * its space), so detokenize(tokenize(s)) == s for text tokenized without BOS
 * (byte-level BPE: for valid UTF-8; invalid bytes were read as U+FFFD).
 * Unlike llama.cpp, byte-level BPE vocabs get no clean_up_tokenization_spaces
 * pass (" ," -> ","): that would break the round trip.
 */
int strata_detokenize(const struct strata_tokenizer *t, const int32_t *ids, size_t n,
		      unsigned flags, char *buf, size_t cap);

/*
 * `strata tokenize`: argv[0] is "tokenize".  Prints ids of a text, a file or
 * a llama.cpp vocab test file (--inp); see --help.  Returns the process exit
 * code: 0 ok, 1 error (one line on stderr), 2 usage error.
 */
int strata_cmd_tokenize(int argc, char **argv);

#endif
