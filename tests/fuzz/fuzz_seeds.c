/*
 * fuzz_seeds.c - the seed corpora the fuzz targets start from, made from
 * ../shared: `fuzz_seeds OUTDIR` writes OUTDIR/<target>/ for gguf,
 * tokenizer, ini and chat (json's seeds are the request bodies of
 * check_serve.c, kept in tests/fuzz/corpus-json).
 *
 *   gguf       every model's header (up to its data section; the target
 *              grows the file so the tensors fit) and small copies of the
 *              vocabularies: the first tokens, their scores and types, the
 *              merges among them, and the special ids that stay in range
 *   tokenizer  every llama.cpp test text of each vocab the target loads,
 *              behind its selector byte
 *   ini        strata.ini, alone and followed by flags
 *   chat       test texts as messages of each role and built-in template, and
 *              every template of tests/tmpl/templates (starting with '{', an odd
 *              byte: fuzz_chat reads the input as a template)
 *
 * Exits 0, 1 when something could not be read or written (said on stderr).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>

#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "testutil.h"

#define MINI_TOKENS 1200u

static const char *g_out;
static int g_files;

static int put(const char *target, const char *name, const void *data, size_t len)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", g_out, target);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/%s/%s", g_out, target, name);
	if (tu_write_file(path, data, len)) {
		fprintf(stderr, "fuzz_seeds: cannot write %s\n", path);
		return -1;
	}
	g_files++;
	return 0;
}

/* A model's header: everything before its tensor data. */
static int model_header(const char *name)
{
	char rel[256];
	const char *path;
	struct strata_gguf *g;
	uint8_t *data;
	size_t len;
	int rc;

	snprintf(rel, sizeof(rel), "models/%s.gguf", name);
	if (!(path = tu_shared(rel)) || strata_gguf_open(path, &g))
		return -1;
	data = tu_read_file(path, &len);
	rc = data ? put("gguf", name, data, (size_t)strata_gguf_data_offset(g)) : -1;
	free(data);
	strata_gguf_close(g);
	return rc;
}

static int in_mini(const struct strata_gguf *g, int64_t kv, const char *s, size_t n)
{
	for (uint64_t i = 0; i < MINI_TOKENS; i++) {
		struct strata_str t = strata_gguf_arr_str(g, kv, i);

		if (t.len == n && memcmp(t.s, s, n) == 0)
			return 1;
	}
	return 0;
}

/* merges "a b" whose a, b and ab are all among the first MINI_TOKENS tokens. */
static int mini_merges(struct strata_gguf_writer *w, const struct strata_gguf *g, int64_t tok,
		       int64_t mkv)
{
	enum strata_gguf_vtype et;
	uint64_t n;
	const char **keep;
	uint64_t *lens, k = 0;
	int rc;

	if (strata_gguf_kv_arr(g, mkv, &et, &n, NULL) || et != STRATA_GGUF_STRING)
		return -1;
	keep = calloc(n + 1, sizeof(*keep));
	lens = calloc(n + 1, sizeof(*lens));
	for (uint64_t i = 0; keep && lens && i < n; i++) {
		struct strata_str m = strata_gguf_arr_str(g, mkv, i);
		const char *sp = memchr(m.s, ' ', m.len);
		char ab[512];
		size_t a = sp ? (size_t)(sp - m.s) : 0, b = sp ? m.len - a - 1 : 0;

		if (!sp || a + b >= sizeof(ab))
			continue;
		memcpy(ab, m.s, a);
		memcpy(ab + a, sp + 1, b);
		if (in_mini(g, tok, m.s, a) && in_mini(g, tok, sp + 1, b) && in_mini(g, tok, ab, a + b)) {
			keep[k] = m.s;
			lens[k++] = m.len;
		}
	}
	rc = keep && lens ? strata_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", k, keep, lens)
			  : -1;
	free(keep);
	free(lens);
	return rc;
}

/* Copy metadata entry i, cut to MINI_TOKENS where it is per token. */
static int mini_kv(struct strata_gguf_writer *w, const struct strata_gguf *g, int64_t i,
		   int64_t tok)
{
	struct strata_str k = strata_gguf_key(g, i);
	enum strata_gguf_vtype et;
	const void *data;
	char key[256];
	uint64_t n;
	uint32_t id;

	snprintf(key, sizeof(key), "%.*s", (int)k.len, k.s);
	if (strcmp(key, "tokenizer.ggml.merges") == 0)
		return mini_merges(w, g, tok, i);
	if (strcmp(key, "tokenizer.ggml.tokens") == 0) {
		const char *s[MINI_TOKENS];
		uint64_t l[MINI_TOKENS];

		for (uint64_t j = 0; j < MINI_TOKENS; j++) {
			struct strata_str t = strata_gguf_arr_str(g, i, j);

			s[j] = t.s;
			l[j] = t.len;
		}
		return strata_gguf_writer_set_arr_str(w, key, MINI_TOKENS, s, l);
	}
	if ((strcmp(key, "tokenizer.ggml.scores") == 0 ||
	     strcmp(key, "tokenizer.ggml.token_type") == 0) &&
	    strata_gguf_kv_arr(g, i, &et, &n, &data) == 0)
		return strata_gguf_writer_set_arr(w, key, et, MINI_TOKENS, data);
	/* A special id past the cut would make the vocab invalid: leave it out. */
	if (strstr(key, "_token_id") && strata_gguf_get_u32(g, key, &id) == 0 && id >= MINI_TOKENS)
		return 0;
	return strata_gguf_writer_copy_kv(w, g, i);
}

static int mini_vocab(const char *name)
{
	char rel[256], path[4096];
	const char *src;
	struct strata_gguf *g;
	struct strata_gguf_writer *w;
	int64_t tok;
	uint8_t *data;
	size_t len;
	int rc = 0;

	snprintf(rel, sizeof(rel), "vocab/ggml-vocab-%s.gguf", name);
	if (!(src = tu_shared(rel)) || strata_gguf_open(src, &g))
		return -1;
	tok = strata_gguf_find_key(g, "tokenizer.ggml.tokens");
	snprintf(path, sizeof(path), "%s/mini-%s.gguf", g_out, name);
	if (tok < 0 || strata_gguf_writer_open(path, &w)) {
		strata_gguf_close(g);
		return -1;
	}
	for (int64_t i = 0; i < strata_gguf_n_kv(g) && !rc; i++)
		rc = mini_kv(w, g, i, tok);
	rc = rc ? rc : strata_gguf_writer_commit(w);
	strata_gguf_writer_close(w);
	strata_gguf_close(g);
	/* Into the corpus directory (the writer wants a path of its own first). */
	data = rc ? NULL : tu_read_file(path, &len);
	snprintf(rel, sizeof(rel), "mini-%s", name);
	rc = data ? put("gguf", rel, data, len) : -1;
	free(data);
	remove(path);
	return rc;
}

/* Each test text of a vocab behind its selector byte (fuzz_tokenizer.c's order). */
static int vocab_texts(const char *name, int sel)
{
	struct tu_vocab_tests v;
	int n = tu_vocab_tests_read(name, &v), rc = 0;

	if (n < 0)
		return -1;
	for (int i = 0; i < n && !rc; i++) {
		char *buf = malloc(v.v[i].len + 2), fname[128];

		if (!buf) {
			rc = -1;
			break;
		}
		buf[0] = (char)sel;
		buf[1] = (char)(i % 7 == 3 ? 3 : 0); /* some with BOS and special tokens */
		memcpy(buf + 2, v.v[i].text, v.v[i].len);
		snprintf(fname, sizeof(fname), "%s-%03d", name, i);
		rc = put("tokenizer", fname, buf, v.v[i].len + 2);
		/* Every fifth as a chat message: user, then assistant, in some format. */
		if (!rc && i % 5 == 0) {
			buf[0] = (char)((i % 4) << 1); /* even: a built-in template */
			buf[1] = (char)(1 + (i / 5) % 2);
			rc = put("chat", fname, buf, v.v[i].len + 2);
		}
		free(buf);
	}
	tu_vocab_tests_free(&v);
	return rc;
}

/* The chat template corpus, each file as it is (those not starting with an odd byte get one). */
static int template_seeds(void)
{
	char dir[4096];
	struct dirent **ents;
	int n, rc = 0;

	snprintf(dir, sizeof(dir), "%s/tests/tmpl/templates", STRATA_SRC);
	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		char path[8192];
		size_t len;
		char *text, *buf;

		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		if (ents[i]->d_name[0] != '.' && !rc && (text = tu_read_file(path, &len))) {
			buf = malloc(len + 1);
			if (!buf) {
				rc = -1;
			} else {
				size_t off = len && ((unsigned char)text[0] & 1) ? 0 : 1;

				buf[0] = '\t'; /* 0x09: odd */
				memcpy(buf + off, text, len);
				rc = put("chat", ents[i]->d_name, buf, len + off);
				free(buf);
			}
			free(text);
		}
		free(ents[i]);
	}
	free(ents);
	return rc;
}

static int ini_seeds(void)
{
	static const char flags[] = "\0-m\0model.gguf\0--temp\0" "0.5\0-t\0" "2\0--serve\0"
				    "--prefill\0auto:512\0--no-bos";
	char path[4096];
	size_t len;
	char *ini, *with;
	int rc;

	snprintf(path, sizeof(path), "%s/strata.ini", STRATA_SRC);
	if (!(ini = tu_read_file(path, &len)))
		return -1;
	rc = put("ini", "strata.ini", ini, len);
	with = malloc(len + sizeof(flags));
	if (!with) {
		free(ini);
		return -1;
	}
	memcpy(with, ini, len);
	memcpy(with + len, flags, sizeof(flags) - 1);
	rc = rc ? rc : put("ini", "strata.ini+flags", with, len + sizeof(flags) - 1);
	free(with);
	free(ini);
	return rc;
}

int main(int argc, char **argv)
{
	/* Each under the 4 MiB fuzz_gguf grows a file to, so its tensors fit. */
	static const char *const models[] = {
		"stories260K", "syn-llama-f32", "syn-glm4moe-f32", "syn-qwen3moe-f32",
		"syn-qwen3next-f32", "syn-qwen3moe-d256-q4_k_m", "syn-qwen3moe-d256-iq1_m",
		"syn-qwen3moe-d256-q8_0",
	};
	/* fuzz_tokenizer.c's vocabularies, in its order. */
	static const char *const vocabs[] = { "llama-spm", "phi-3", "gpt-2", "deepseek-coder",
					      "bert-bge" };
	int rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_seeds OUTDIR\n");
		return 2;
	}
	g_out = argv[1];
	mkdir(g_out, 0777);
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		if (model_header(models[i])) {
			fprintf(stderr, "fuzz_seeds: cannot read model %s\n", models[i]);
			rc = 1;
		}
	for (size_t i = 0; i < sizeof(vocabs) / sizeof(vocabs[0]); i++)
		if (mini_vocab(vocabs[i]) || vocab_texts(vocabs[i], (int)i)) {
			fprintf(stderr, "fuzz_seeds: cannot make the seeds of vocab %s\n", vocabs[i]);
			rc = 1;
		}
	if (ini_seeds()) {
		fprintf(stderr, "fuzz_seeds: cannot read strata.ini\n");
		rc = 1;
	}
	if (template_seeds()) {
		fprintf(stderr, "fuzz_seeds: cannot read tests/tmpl/templates\n");
		rc = 1;
	}
	printf("fuzz_seeds: %d files in %s\n", g_files, g_out);
	return rc;
}
