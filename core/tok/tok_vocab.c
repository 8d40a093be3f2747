/*
 * tok_vocab.c - load a tokenizer vocabulary from GGUF metadata.
 *
 * Reads tokenizer.ggml.{tokens,scores,token_type} and the special-token keys,
 * builds the text -> id hash, then applies llama.cpp's load-time fix-ups so a
 * vocabulary behaves here as it does there: special tokens found by their
 * text (EOT, EOM, FIM, end-of-generation) become control tokens, and a few
 * models get strip attributes keyed on their name.
 */
#include "tok/tok_impl.h"

#include "gguf/gguf.h"
#include "util/log.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GGUF token types (tokenizer.ggml.token_type values). */
enum {
	TT_UNDEFINED = 0,
	TT_NORMAL = 1,
	TT_UNKNOWN = 2,
	TT_CONTROL = 3,
	TT_USER_DEFINED = 4,
	TT_UNUSED = 5,
	TT_BYTE = 6,
};

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h ^ (h >> 29);
}

int32_t strata_tok_lookup(const struct strata_tokenizer *t, const char *s, size_t n)
{
	uint64_t i = hash_bytes(s, n) & t->mask;

	for (;; i = (i + 1) & t->mask) {
		int32_t id = t->slot[i];

		if (id < 0)
			return -1;
		if (t->len[id] == n && memcmp(t->pool + t->off[id], s, n) == 0)
			return id;
	}
}

/* Insert id; returns the id already holding the same text, or -1. */
static int32_t hash_insert(struct strata_tokenizer *t, int32_t id)
{
	const char *s = strata_tok_text(t, id);
	uint64_t i = hash_bytes(s, t->len[id]) & t->mask;

	for (;; i = (i + 1) & t->mask) {
		int32_t o = t->slot[i];

		if (o < 0) {
			t->slot[i] = id;
			return -1;
		}
		if (t->len[o] == t->len[id] && memcmp(strata_tok_text(t, o), s, t->len[id]) == 0)
			return o;
	}
}

static unsigned attr_of_type(int32_t type)
{
	switch (type) {
	case TT_NORMAL: return STRATA_TOKEN_ATTR_NORMAL;
	case TT_UNKNOWN: return STRATA_TOKEN_ATTR_UNKNOWN;
	case TT_CONTROL: return STRATA_TOKEN_ATTR_CONTROL;
	case TT_USER_DEFINED: return STRATA_TOKEN_ATTR_USER_DEFINED;
	case TT_UNUSED: return STRATA_TOKEN_ATTR_UNUSED;
	case TT_BYTE: return STRATA_TOKEN_ATTR_BYTE;
	default: return STRATA_TOKEN_ATTR_UNDEFINED;
	}
}

/*
 * An optional numeric array parallel to the tokens: absent is fine (NULL),
 * present it must have the expected element type and exactly n elements.
 */
static int parallel_array(const struct strata_tokenizer *t, const struct strata_gguf *g,
			  const char *key, enum strata_gguf_vtype want, uint64_t n,
			  const void **data)
{
	enum strata_gguf_vtype et;
	uint64_t cnt;
	int rc = strata_gguf_get_arr(g, key, &et, &cnt, data);

	if (rc == -ENOENT) {
		*data = NULL;
		return 0;
	}
	if (rc < 0 || et != want) {
		strata_error("%s: %s is not an array of %s", t->path, key,
			     want == STRATA_GGUF_F32 ? "f32" : "i32");
		return -EINVAL;
	}
	if (cnt != n) {
		strata_error("%s: inconsistent vocab: %s has %" PRIu64
			     " entries but tokenizer.ggml.tokens has %" PRIu64,
			     t->path, key, cnt, n);
		return -EINVAL;
	}
	return 0;
}

/* Copy every token's text into one pool (llama.cpp renames empty tokens). */
static int load_texts(struct strata_tokenizer *t, const struct strata_gguf *g, int64_t kv,
		      uint64_t n)
{
	uint64_t total = 0;
	char tmp[32];

	for (uint64_t i = 0; i < n; i++) {
		struct strata_str s = strata_gguf_arr_str(g, kv, i);

		total += (s.len ? s.len : (uint64_t)snprintf(tmp, sizeof(tmp), "[EMPTY_%" PRIu64 "]", i)) + 1;
		if (total > UINT32_MAX) {
			strata_error("%s: tokenizer.ggml.tokens holds over 4 GiB of text", t->path);
			return -EINVAL;
		}
	}
	t->pool = malloc(total ? total : 1);
	t->off = malloc(n * sizeof(*t->off));
	t->len = malloc(n * sizeof(*t->len));
	if (!t->pool || !t->off || !t->len)
		return -ENOMEM;
	total = 0;
	for (uint64_t i = 0; i < n; i++) {
		struct strata_str s = strata_gguf_arr_str(g, kv, i);
		char *dst = t->pool + total;

		if (s.len) {
			memcpy(dst, s.s, s.len);
		} else {
			strata_debug("%s: empty token at index %" PRIu64, t->path, i);
			s.len = (uint64_t)snprintf(dst, sizeof(tmp), "[EMPTY_%" PRIu64 "]", i);
		}
		dst[s.len] = 0;
		t->off[i] = (uint32_t)total;
		t->len[i] = (uint32_t)s.len;
		total += s.len + 1;
	}
	return 0;
}

static int build_hash(struct strata_tokenizer *t)
{
	uint64_t cap = 16;

	while (cap < (uint64_t)t->n_vocab * 2)
		cap *= 2;
	t->slot = malloc(cap * sizeof(*t->slot));
	if (!t->slot)
		return -ENOMEM;
	memset(t->slot, 0xff, cap * sizeof(*t->slot));
	t->mask = cap - 1;
	for (int32_t i = 0; i < t->n_vocab; i++) {
		int32_t dup = hash_insert(t, i);

		if (dup >= 0) {
			strata_error("%s: inconsistent vocab: token %d duplicates token %d ('%s')",
				     t->path, i, dup, strata_tok_text(t, i));
			return -EINVAL;
		}
	}
	return 0;
}

static int load_tokens(struct strata_tokenizer *t, const struct strata_gguf *g)
{
	const char *key = "tokenizer.ggml.tokens";
	int64_t kv = strata_gguf_find_key(g, key);
	enum strata_gguf_vtype et;
	uint64_t n;
	const void *data, *scores, *types;
	int rc;

	if (kv < 0 || strata_gguf_get_arr(g, key, &et, &n, &data) < 0 || et != STRATA_GGUF_STRING) {
		strata_error("%s: %s", t->path, kv < 0 ? "tokenizer.ggml.tokens is missing"
						       : "tokenizer.ggml.tokens is not a string array");
		return -EINVAL;
	}
	if (n == 0 || n > INT32_MAX / 2) {
		strata_error("%s: tokenizer.ggml.tokens has %" PRIu64 " entries", t->path, n);
		return -EINVAL;
	}
	rc = parallel_array(t, g, "tokenizer.ggml.scores", STRATA_GGUF_F32, n, &scores);
	if (rc == 0)
		rc = parallel_array(t, g, "tokenizer.ggml.token_type", STRATA_GGUF_I32, n, &types);
	if (rc < 0)
		return rc;
	t->n_vocab = (int32_t)n;
	t->score = calloc(n, sizeof(*t->score));
	t->attr = calloc(n, sizeof(*t->attr));
	t->eog = calloc(n, 1);
	if (!t->score || !t->attr || !t->eog)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		int32_t type = TT_NORMAL;

		if (scores)
			memcpy(&t->score[i], (const char *)scores + 4 * i, 4);
		if (types)
			memcpy(&type, (const char *)types + 4 * i, 4);
		if (type < TT_UNDEFINED || type > TT_BYTE) {
			strata_error("%s: inconsistent vocab: token %" PRIu64 " has type %d (valid: 0-6)",
				     t->path, i, type);
			return -EINVAL;
		}
		t->attr[i] = attr_of_type(type);
	}
	rc = load_texts(t, g, kv, n);
	return rc < 0 ? rc : build_hash(t);
}

/* ---- special ids and flags ---------------------------------------------- */

static int read_id(struct strata_tokenizer *t, const struct strata_gguf *g, const char *key,
		   int32_t *id)
{
	int64_t v;
	int rc = strata_gguf_get_i64(g, key, &v);

	if (rc == -ENOENT)
		return 0;
	if (rc < 0) {
		strata_error("%s: %s is not an integer", t->path, key);
		return -EINVAL;
	}
	/* The converters write 0xFFFFFFFF (u32 -1) for "no such token". */
	if (v == -1 || v == 0xFFFFFFFFll)
		return 0;
	if (v < 0 || v >= t->n_vocab) {
		strata_error("%s: inconsistent vocab: %s = %" PRId64 " is out of range (%d tokens)",
			     t->path, key, v, t->n_vocab);
		return -EINVAL;
	}
	*id = (int32_t)v;
	return 0;
}

static int read_flag(struct strata_tokenizer *t, const struct strata_gguf *g, const char *key,
		     int *flag)
{
	int v;
	int rc = strata_gguf_get_bool(g, key, &v);

	if (rc == -ENOENT)
		return 0;
	if (rc < 0) {
		strata_error("%s: %s is not a boolean", t->path, key);
		return -EINVAL;
	}
	*flag = v != 0;
	return 0;
}

static int read_specials(struct strata_tokenizer *t, const struct strata_gguf *g)
{
	const struct { const char *key; int32_t *id; } ids[] = {
		{ "tokenizer.ggml.bos_token_id", &t->bos },
		{ "tokenizer.ggml.eos_token_id", &t->eos },
		{ "tokenizer.ggml.eot_token_id", &t->eot },
		{ "tokenizer.ggml.eom_token_id", &t->eom },
		{ "tokenizer.ggml.unknown_token_id", &t->unk },
		{ "tokenizer.ggml.seperator_token_id", &t->sep }, /* sic: the GGUF key */
		{ "tokenizer.ggml.padding_token_id", &t->pad },
		{ "tokenizer.ggml.mask_token_id", &t->mask_id },
		{ "tokenizer.ggml.fim_pre_token_id", &t->fim_pre },
		{ "tokenizer.ggml.fim_suf_token_id", &t->fim_suf },
		{ "tokenizer.ggml.fim_mid_token_id", &t->fim_mid },
		{ "tokenizer.ggml.fim_pad_token_id", &t->fim_pad },
		{ "tokenizer.ggml.fim_rep_token_id", &t->fim_rep },
		{ "tokenizer.ggml.fim_sep_token_id", &t->fim_sep },
		{ "tokenizer.ggml.prefix_token_id", &t->fim_pre }, /* deprecated names */
		{ "tokenizer.ggml.suffix_token_id", &t->fim_suf },
		{ "tokenizer.ggml.middle_token_id", &t->fim_mid },
	};
	int rc = 0;

	/* Model defaults may not fit a tiny vocab: those are simply unset. */
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (*ids[i].id >= t->n_vocab)
			*ids[i].id = -1;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]) && rc == 0; i++)
		rc = read_id(t, g, ids[i].key, ids[i].id);
	if (rc == 0)
		rc = read_flag(t, g, "tokenizer.ggml.add_bos_token", &t->add_bos);
	if (rc == 0)
		rc = read_flag(t, g, "tokenizer.ggml.add_eos_token", &t->add_eos);
	if (rc == 0)
		rc = read_flag(t, g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix);
	if (rc == 0)
		rc = read_flag(t, g, "tokenizer.ggml.add_sep_token", &t->add_sep);
	return rc;
}

/* ---- llama.cpp's text-based fix-ups -------------------------------------- */

static void force_control(struct strata_tokenizer *t, int32_t id)
{
	if (!(t->attr[id] & STRATA_TOKEN_ATTR_CONTROL)) {
		strata_debug("%s: control-looking token %d '%s' was not control-type; made control",
			     t->path, id, strata_tok_text(t, id));
		t->attr[id] |= STRATA_TOKEN_ATTR_CONTROL;
	}
}

static const char *const eot_texts[] = {
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
	"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
	"<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence" "\xEF\xBD\x9C>", /* DeepSeek */
	"<end_of_utterance>", NULL
};
static const char *const eom_texts[] = { "<|eom_id|>", NULL };
static const char *const fim_pre_texts[] = {
	"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>", "<|code_prefix|>",
	"<|prefix|>", NULL
};
static const char *const fim_suf_texts[] = {
	"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>", "<|code_suffix|>",
	"<|suffix|>", NULL
};
static const char *const fim_mid_texts[] = {
	"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>", "<|code_middle|>",
	"<|middle|>", NULL
};
static const char *const fim_pad_texts[] = {
	"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL
};
static const char *const fim_rep_texts[] = {
	"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL
};
static const char *const fim_sep_texts[] = { "<|file_sep|>", NULL };
/*
 * llama.cpp's end-of-generation texts (llama-vocab.cpp of de3ff815), made
 * control tokens.  "</s>" is one: in phi-3's SentencePiece vocab the
 * user-defined "</s>" so becomes control, and text that spells it is not
 * read as the token unless special tokens are parsed (as in llama.cpp).
 */
static const char *const eog_texts[] = {
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
	"<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>",
	"_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>",
	"<turn|>", "<|tool_response>",
	"<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence" "\xEF\xBD\x9C>", /* deepseek-ocr */
	"[e~[", NULL
};
/* gpt-oss: tokens llama.cpp always renders, as user-defined. */
static const char *const harmony_user_texts[] = {
	"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL
};

/*
 * Ids not given by the file are found by their text.  llama.cpp takes the
 * first match in hash order; here the first text of the list that the vocab
 * has wins, so end-of-turn markers (<|end|>, <|im_end|>) beat <|endoftext|>.
 */
static void detect_by_text(struct strata_tokenizer *t)
{
	const struct { const char *const *texts; int32_t *id; } roles[] = {
		{ eot_texts, &t->eot }, { eom_texts, &t->eom },
		{ fim_pre_texts, &t->fim_pre }, { fim_suf_texts, &t->fim_suf },
		{ fim_mid_texts, &t->fim_mid }, { fim_pad_texts, &t->fim_pad },
		{ fim_rep_texts, &t->fim_rep }, { fim_sep_texts, &t->fim_sep },
	};

	for (size_t r = 0; r < sizeof(roles) / sizeof(roles[0]); r++) {
		if (*roles[r].id >= 0)
			continue;
		for (const char *const *s = roles[r].texts; *s && *roles[r].id < 0; s++)
			*roles[r].id = strata_tok_lookup(t, *s, strlen(*s));
		if (*roles[r].id >= 0)
			force_control(t, *roles[r].id);
	}
}

static void mark_eog(struct strata_tokenizer *t)
{
	const int32_t by_id[] = { t->fim_pad, t->fim_rep, t->fim_sep, t->eos, t->eot, t->eom };
	int32_t end = -1, eos_s = -1;
	int has_return = 0, has_call = 0, has_flush = 0, has_tool_response = 0;

	for (const char *const *s = eog_texts; *s; s++) {
		int32_t id = strata_tok_lookup(t, *s, strlen(*s));

		if (id >= 0) {
			t->eog[id] = 1;
			force_control(t, id);
		}
	}
	for (const char *const *s = harmony_user_texts; *s; s++) {
		int32_t id = strata_tok_lookup(t, *s, strlen(*s));

		if (id >= 0)
			t->attr[id] = STRATA_TOKEN_ATTR_USER_DEFINED;
	}
	for (size_t i = 0; i < sizeof(by_id) / sizeof(by_id[0]); i++)
		if (by_id[i] >= 0)
			t->eog[by_id[i]] = 1;
	for (int32_t id = 0; id < t->n_vocab; id++) {
		const char *s = strata_tok_text(t, id);

		if (!t->eog[id])
			continue;
		has_return |= strcmp(s, "<|return|>") == 0;
		has_call |= strcmp(s, "<|call|>") == 0 || strcmp(s, "<|calls|>") == 0;
		has_flush |= strcmp(s, "<|flush|>") == 0;
		has_tool_response |= strcmp(s, "<|tool_response>") == 0;
		if (strcmp(s, "<|end|>") == 0)
			end = id;
		if (strcmp(s, "</s>") == 0)
			eos_s = id;
	}
	/* gpt-oss and solar-open end a message, not the turn, with <|end|>. */
	if (end >= 0 && has_call && (has_return || has_flush)) {
		t->eog[end] = 0;
		t->attr[end] = STRATA_TOKEN_ATTR_USER_DEFINED;
	}
	/* gemma4 and paddleocr: "</s>" is an ordinary token there. */
	if (eos_s >= 0 && has_tool_response) {
		t->eog[eos_s] = 0;
		t->attr[eos_s] = STRATA_TOKEN_ATTR_NORMAL;
	}
}

struct len_id {
	uint32_t len;
	int32_t id;
};

static int by_len_desc(const void *a, const void *b)
{
	const struct len_id *x = a, *y = b;

	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int build_special_cache(struct strata_tokenizer *t)
{
	const unsigned want = STRATA_TOKEN_ATTR_CONTROL | STRATA_TOKEN_ATTR_USER_DEFINED |
			      STRATA_TOKEN_ATTR_UNKNOWN;
	struct len_id *v;
	int32_t n = 0;

	for (int32_t id = 0; id < t->n_vocab; id++)
		n += (t->attr[id] & want) != 0;
	v = malloc((size_t)(n ? n : 1) * sizeof(*v));
	t->special = malloc((size_t)(n ? n : 1) * sizeof(*t->special));
	if (!v || !t->special) {
		free(v);
		return -ENOMEM;
	}
	for (int32_t id = 0; id < t->n_vocab; id++)
		if (t->attr[id] & want)
			v[t->n_special++] = (struct len_id){ t->len[id], id };
	/* Stable where llama.cpp's std::sort is not: equal lengths by id. */
	qsort(v, (size_t)n, sizeof(*v), by_len_desc);
	for (int32_t i = 0; i < n; i++)
		t->special[i] = v[i].id;
	free(v);
	return 0;
}

static void set_attr(struct strata_tokenizer *t, const char *text, unsigned bit, int on)
{
	int32_t id = strata_tok_lookup(t, text, strlen(text));

	if (id >= 0)
		t->attr[id] = on ? t->attr[id] | bit : t->attr[id] & ~bit;
}

static void lower_str(char *dst, size_t cap, struct strata_str s)
{
	size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;

	for (size_t i = 0; i < n; i++)
		dst[i] = (char)tolower((unsigned char)s.s[i]);
	dst[n] = 0;
}

/* Attributes GGUF does not store; llama.cpp keys them on the model's name. */
static void name_attrs(struct strata_tokenizer *t, const struct strata_gguf *g)
{
	struct strata_str s = { "", 0 };
	char name[256], pre[256], arch[256];

	strata_gguf_get_str(g, "general.name", &s);
	lower_str(name, sizeof(name), s);
	s = (struct strata_str){ "", 0 };
	strata_gguf_get_str(g, "tokenizer.ggml.pre", &s);
	lower_str(pre, sizeof(pre), s);
	s = (struct strata_str){ "", 0 };
	strata_gguf_get_str(g, "general.architecture", &s);
	lower_str(arch, sizeof(arch), s);

	if (strstr(pre, "jina-v2-de") || strstr(pre, "jina-v2-es") || strstr(pre, "jina-v2-code") ||
	    strstr(arch, "nomic-bert-moe") || strstr(arch, "jina-bert-v3")) {
		set_attr(t, "<mask>", STRATA_TOKEN_ATTR_LSTRIP, 1);
	} else if (strstr(name, "phi-3") || strstr(name, "phi3")) {
		/* phi-3 drops the whitespace after its chat tokens. */
		for (int32_t i = 0; i < t->n_special; i++)
			t->attr[t->special[i]] |= STRATA_TOKEN_ATTR_RSTRIP;
		set_attr(t, "</s>", STRATA_TOKEN_ATTR_RSTRIP, 1);
		set_attr(t, "<unk>", STRATA_TOKEN_ATTR_RSTRIP, 0);
		set_attr(t, "<s>", STRATA_TOKEN_ATTR_RSTRIP, 0);
		set_attr(t, "<|endoftext|>", STRATA_TOKEN_ATTR_RSTRIP, 0);
	} else if (strstr(name, "modern-bert")) {
		set_attr(t, "[MASK]", STRATA_TOKEN_ATTR_LSTRIP, 1);
	}
}

int strata_tok_vocab_load(struct strata_tokenizer *t, const struct strata_gguf *g)
{
	int rc;

	t->bos = t->eos = t->eot = t->eom = t->unk = t->sep = t->pad = t->mask_id = -1;
	t->fim_pre = t->fim_suf = t->fim_mid = t->fim_pad = t->fim_rep = t->fim_sep = -1;
	rc = load_tokens(t, g);
	if (rc < 0)
		return rc;
	rc = t->model->defaults(t, g);
	if (rc == 0)
		rc = read_specials(t, g);
	if (rc < 0)
		return rc;
	detect_by_text(t);
	mark_eog(t);
	rc = build_special_cache(t);
	if (rc < 0)
		return rc;
	name_attrs(t, g);
	return 0;
}
