/*
 * check_gguf.c - the GGUF reader: real models, hand-built files for every
 * malformed case, truncations and byte flips of a real file, and `info`.
 */
#include "gguf/gguf.h"

#include "cpu/types.h"
#include "testutil.h"
#include "util/log.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STORIES "models/stories260K.gguf"

/* ---- a tiny GGUF writer ---- */

struct gw {
	uint8_t *p;
	size_t len, cap;
};

static void gw_bytes(struct gw *w, const void *d, size_t n)
{
	if (w->len + n > w->cap) {
		w->cap = (w->len + n) * 2 + 64;
		w->p = realloc(w->p, w->cap);
		ck_assert_ptr_nonnull(w->p);
	}
	memcpy(w->p + w->len, d, n);
	w->len += n;
}

/* The low n bytes of v, little-endian. */
static void gw_le(struct gw *w, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t b = (uint8_t)(v >> (8 * i));

		gw_bytes(w, &b, 1);
	}
}

#define gw_u32(w, v) gw_le(w, (uint32_t)(v), 4)
#define gw_u64(w, v) gw_le(w, v, 8)

static void gw_str(struct gw *w, const char *s)
{
	gw_u64(w, strlen(s));
	gw_bytes(w, s, strlen(s));
}

static void gw_header(struct gw *w, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
	gw_bytes(w, "GGUF", 4);
	gw_u32(w, version);
	gw_u64(w, n_tensors);
	gw_u64(w, n_kv);
}

/* key, type, then the caller writes the value */
static void gw_key(struct gw *w, const char *key, uint32_t type)
{
	gw_str(w, key);
	gw_u32(w, type);
}

static void gw_raw_kv(struct gw *w, const char *key, uint32_t type, uint64_t v, size_t n)
{
	gw_key(w, key, type);
	gw_le(w, v, n);
}

#define gw_kv_u32(w, key, v) gw_raw_kv(w, key, STRATA_GGUF_U32, (uint32_t)(v), 4)

/* An array's header; the caller writes the n elements. */
static void gw_arr(struct gw *w, const char *key, uint32_t elem_type, uint64_t n)
{
	gw_key(w, key, STRATA_GGUF_ARRAY);
	gw_u32(w, elem_type);
	gw_u64(w, n);
}

static void gw_kv_str(struct gw *w, const char *key, const char *v)
{
	gw_key(w, key, STRATA_GGUF_STRING);
	gw_str(w, v);
}

static void gw_tensor(struct gw *w, const char *name, uint32_t n_dims, const uint64_t *ne,
		      uint32_t type, uint64_t offset)
{
	gw_str(w, name);
	gw_u32(w, n_dims);
	for (uint32_t k = 0; k < n_dims; k++)
		gw_u64(w, ne[k]);
	gw_u32(w, type);
	gw_u64(w, offset);
}

static void gw_pad(struct gw *w, size_t align)
{
	static const uint8_t zero[256];

	gw_bytes(w, zero, (align - w->len % align) % align);
}

static void gw_fill(struct gw *w, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t b = (uint8_t)(seed + i * 7);

		gw_bytes(w, &b, 1);
	}
}

static void gw_free(struct gw *w)
{
	free(w->p);
	memset(w, 0, sizeof(*w));
}

/* ---- a per-test scratch directory and captured output ---- */

static char g_dir[4096];
static char g_msg[16384];
static const char *const g_scratch[] = { "bad.gguf", "ok.gguf", "cut.gguf", "flip.gguf",
					 "empty.gguf", "out.txt" };

static void setup(void)
{
	const char *d = tu_tmpdir();

	ck_assert_ptr_nonnull(d);
	snprintf(g_dir, sizeof(g_dir), "%s", d);
}

static void teardown(void)
{
	char p[4200];

	for (size_t i = 0; i < sizeof(g_scratch) / sizeof(g_scratch[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", g_dir, g_scratch[i]);
		unlink(p);
	}
	rmdir(g_dir);
}

/* A path in the scratch directory; valid until the 8th next call. */
static const char *tmp_path(const char *name)
{
	static char buf[8][4200];
	static unsigned k;

	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", g_dir, name);
	return buf[k];
}

/* Run fn with stdout and stderr (fd 1 and 2) captured into g_msg. */
static int captured(int (*fn)(void *), void *arg, int fds)
{
	int saved[3], fd, rc;
	char out[4200];
	ssize_t n;

	snprintf(out, sizeof(out), "%s/out.txt", g_dir);
	fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	fflush(stdout);
	fflush(stderr);
	for (int k = 1; k <= 2; k++) {
		if (fds & k) {
			saved[k] = dup(k);
			dup2(fd, k);
		}
	}
	rc = fn(arg);
	fflush(stdout);
	fflush(stderr);
	for (int k = 1; k <= 2; k++) {
		if (fds & k) {
			dup2(saved[k], k);
			close(saved[k]);
		}
	}
	n = pread(fd, g_msg, sizeof(g_msg) - 1, 0);
	g_msg[n > 0 ? n : 0] = 0;
	close(fd);
	return rc;
}

struct open_args {
	const char *path;
	struct strata_gguf **g;
};

static int do_open(void *a)
{
	struct open_args *o = a;

	return strata_gguf_open(o->path, o->g);
}

/* Open `path` with stderr captured into g_msg. */
static int open_captured(const char *path, struct strata_gguf **g)
{
	struct open_args o = { path, g };

	return captured(do_open, &o, 2);
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* A failed open: the errno, NULL handle, exactly one error line naming path and problem. */
static void check_fail(const char *path, int rc, struct strata_gguf *g, int err,
		       const char *what)
{
	ck_assert_msg(rc == err, "expected %d (%s), got %d; log: %s", err, what, rc, g_msg);
	ck_assert_ptr_null(g);
	ck_assert_msg(strstr(g_msg, what), "message lacks '%s': %s", what, g_msg);
	ck_assert_msg(strstr(g_msg, path), "message lacks the path: %s", g_msg);
	ck_assert_msg(strncmp(g_msg, "strata: error: ", 15) == 0, "not an error: %s", g_msg);
	ck_assert_msg(count_lines(g_msg) == 1, "expected one error line: %s", g_msg);
}

/* Write w to a file, open it and expect failure `err` with a message containing `what`. */
static void expect_fail(struct gw *w, int err, const char *what)
{
	const char *path = tmp_path("bad.gguf");
	struct strata_gguf *g = (struct strata_gguf *)&g; /* must be reset to NULL */
	int rc;

	ck_assert_int_eq(tu_write_file(path, w->p, w->len), 0);
	rc = open_captured(path, &g);
	check_fail(path, rc, g, err, what);
	gw_free(w);
}

static struct strata_gguf *open_ok(struct gw *w)
{
	const char *path = tmp_path("ok.gguf");
	struct strata_gguf *g = NULL;
	int rc;

	ck_assert_int_eq(tu_write_file(path, w->p, w->len), 0);
	rc = open_captured(path, &g);
	ck_assert_msg(rc == 0, "open failed %d: %s", rc, g_msg);
	ck_assert_str_eq(g_msg, "");
	gw_free(w);
	return g;
}

/* ---- the real model ---- */

START_TEST(test_stories_facts)
{
	const char *path = tu_shared_or_skip(STORIES);
	const struct strata_gguf_tensor *t, *last;
	enum strata_gguf_vtype et;
	struct strata_gguf *g;
	struct strata_str s;
	const void *data;
	uint32_t u;
	int64_t i64, kv;
	uint64_t n;
	float f;
	int32_t tt;
	int b;

	ck_assert_int_eq(strata_gguf_open(path, &g), 0);
	ck_assert_uint_eq(strata_gguf_version(g), 3);
	ck_assert_uint_eq(strata_gguf_alignment(g), 32);
	ck_assert_uint_eq(strata_gguf_file_size(g), 1185376);
	ck_assert_str_eq(strata_gguf_path(g), path);
	ck_assert_int_eq(strata_gguf_n_kv(g), 19);

	ck_assert_int_eq(strata_gguf_get_str(g, "general.architecture", &s), 0);
	ck_assert(strata_str_eq(s, "llama"));
	ck_assert_int_eq(strata_gguf_get_u32(g, "llama.embedding_length", &u), 0);
	ck_assert_uint_eq(u, 64);
	ck_assert_int_eq(strata_gguf_get_i64(g, "llama.block_count", &i64), 0);
	ck_assert_int_eq(i64, 5);
	ck_assert_int_eq(strata_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &f), 0);
	ck_assert_float_eq(f, 1e-5f);
	ck_assert_int_eq(strata_gguf_get_i64(g, "tokenizer.ggml.seperator_token_id", &i64), 0);
	ck_assert_int_eq(i64, 4294967295LL);
	/* wrong types and absent keys */
	ck_assert_int_eq(strata_gguf_get_u32(g, "general.architecture", &u), -EINVAL);
	ck_assert_int_eq(strata_gguf_get_str(g, "llama.embedding_length", &s), -EINVAL);
	ck_assert_int_eq(strata_gguf_get_bool(g, "llama.embedding_length", &b), -EINVAL);
	ck_assert_int_eq(strata_gguf_get_u32(g, "no.such.key", &u), -ENOENT);
	ck_assert_int_eq(strata_gguf_get_arr(g, "no.such.key", &et, &n, &data), -ENOENT);
	ck_assert_int_eq(strata_gguf_get_arr(g, "general.name", &et, &n, &data), -EINVAL);
	ck_assert_int_eq(strata_gguf_find_key(g, "no.such.key"), -1);
	ck_assert_int_eq(strata_gguf_find_key(g, "general.architectur"), -1);
	ck_assert_int_eq(strata_gguf_find_key(g, NULL), -1);

	/* the vocabulary */
	kv = strata_gguf_find_key(g, "tokenizer.ggml.tokens");
	ck_assert_int_ge(kv, 0);
	ck_assert(strata_str_eq(strata_gguf_key(g, kv), "tokenizer.ggml.tokens"));
	ck_assert_int_eq(strata_gguf_kv_type(g, kv), STRATA_GGUF_ARRAY);
	ck_assert_int_eq(strata_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, &data), 0);
	ck_assert_int_eq(et, STRATA_GGUF_STRING);
	ck_assert_uint_eq(n, 512);
	ck_assert_ptr_null(data);
	ck_assert(strata_str_eq(strata_gguf_arr_str(g, kv, 0), "<unk>"));
	ck_assert(strata_str_eq(strata_gguf_arr_str(g, kv, 1), "<s>"));
	ck_assert(strata_str_eq(strata_gguf_arr_str(g, kv, 2), "</s>"));
	ck_assert(strata_str_eq(strata_gguf_arr_str(g, kv, 3), "<0x00>"));
	ck_assert(strata_str_eq(strata_gguf_arr_str(g, kv, 258), "<0xFF>"));
	ck_assert_ptr_null(strata_gguf_arr_str(g, kv, 512).s);
	ck_assert_ptr_null(strata_gguf_arr_str(g, -1, 0).s);
	ck_assert_ptr_null(strata_gguf_arr_str(g, strata_gguf_find_key(g, "general.name"), 0).s);
	ck_assert_int_eq(strata_gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &n, &data), 0);
	ck_assert_int_eq(et, STRATA_GGUF_I32);
	ck_assert_uint_eq(n, 512);
	memcpy(&tt, (const char *)data + 1 * 4, 4);
	ck_assert_int_eq(tt, 3); /* <s> is a control token */
	memcpy(&tt, (const char *)data + 3 * 4, 4);
	ck_assert_int_eq(tt, 6); /* <0x00> is a byte token */

	/* tensors */
	ck_assert_int_eq(strata_gguf_n_tensors(g), 48);
	t = strata_gguf_find_tensor(g, "token_embd.weight");
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_eq(t, strata_gguf_tensor(g, 0));
	ck_assert_uint_eq(t->type, STRATA_TYPE_F32);
	ck_assert_uint_eq(t->n_dims, 2);
	ck_assert_int_eq(t->ne[0], 64);
	ck_assert_int_eq(t->ne[1], 512);
	ck_assert_int_eq(t->ne[2], 1);
	ck_assert_int_eq(t->ne[3], 1);
	ck_assert_uint_eq(t->size, 64 * 512 * 4);
	ck_assert_ptr_nonnull(strata_gguf_find_tensor(g, "blk.4.ffn_norm.weight"));
	ck_assert_ptr_null(strata_gguf_find_tensor(g, "blk.5.ffn_norm.weight"));
	ck_assert_ptr_null(strata_gguf_find_tensor(g, "token_embd.weigh"));
	ck_assert_ptr_null(strata_gguf_find_tensor(g, NULL));
	ck_assert_ptr_null(strata_gguf_tensor(g, 48));
	ck_assert_ptr_null(strata_gguf_tensor(g, -1));
	/* the data section is aligned and the tensors end exactly at the end of file */
	ck_assert_uint_eq(strata_gguf_data_offset(g) % 32, 0);
	last = strata_gguf_tensor(g, 47);
	ck_assert_uint_eq(strata_gguf_data_offset(g) + last->offset + last->size, 1185376);
	{
		size_t len;
		uint8_t *file = tu_read_file(path, &len);

		ck_assert_ptr_nonnull(file);
		ck_assert_mem_eq(t->data, file + strata_gguf_data_offset(g) + t->offset, t->size);
		ck_assert_mem_eq(last->data, file + len - last->size, last->size);
		free(file);
	}
	strata_gguf_close(g);
}
END_TEST

START_TEST(test_format_value)
{
	const char *path = tu_shared_or_skip(STORIES);
	struct strata_gguf *g;
	char buf[512], small[12];

	ck_assert_int_eq(strata_gguf_open(path, &g), 0);
	strata_gguf_format_value(g, strata_gguf_find_key(g, "general.architecture"), buf,
				 sizeof(buf));
	ck_assert_str_eq(buf, "\"llama\"");
	strata_gguf_format_value(g, strata_gguf_find_key(g, "llama.embedding_length"), buf,
				 sizeof(buf));
	ck_assert_str_eq(buf, "64");
	strata_gguf_format_value(g, strata_gguf_find_key(g,
				 "llama.attention.layer_norm_rms_epsilon"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "1e-05");
	strata_gguf_format_value(g, strata_gguf_find_key(g, "tokenizer.ggml.tokens"), buf,
				 sizeof(buf));
	ck_assert_str_eq(buf, "[\"<unk>\", \"<s>\", \"</s>\", \"<0x00>\", \"<0x01>\", "
			      "\"<0x02>\", ... +506 more]");
	strata_gguf_format_value(g, strata_gguf_find_key(g, "tokenizer.ggml.token_type"), buf,
				 sizeof(buf));
	ck_assert_str_eq(buf, "[2, 3, 3, 6, 6, 6, ... +506 more]");
	/* a small buffer: cut, marked, terminated */
	strata_gguf_format_value(g, strata_gguf_find_key(g, "tokenizer.ggml.tokens"), small,
				 sizeof(small));
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
	ck_assert_str_eq(small + strlen(small) - 3, "...");
	strata_gguf_format_value(g, -1, buf, sizeof(buf));
	ck_assert_str_eq(buf, "");
	buf[0] = 'x';
	strata_gguf_format_value(g, 0, buf, 0); /* must not write */
	ck_assert_int_eq(buf[0], 'x');
	ck_assert_int_eq((int)strata_gguf_kv_type(g, 1000), -1);
	ck_assert_ptr_null(strata_gguf_key(g, 1000).s);
	ck_assert_str_eq(strata_gguf_vtype_name(STRATA_GGUF_STRING), "str");
	ck_assert_str_eq(strata_gguf_vtype_name((enum strata_gguf_vtype)77), "?");
	strata_gguf_close(g);
}
END_TEST

static void check_whole_file(const char *path)
{
	struct strata_gguf *g;
	int rc = open_captured(path, &g);
	char name[512];

	ck_assert_msg(rc == 0, "%s: %d: %s", path, rc, g_msg);
	ck_assert_int_gt(strata_gguf_n_kv(g), 0);
	for (int64_t i = 0; i < strata_gguf_n_kv(g); i++) {
		struct strata_str k = strata_gguf_key(g, i);

		ck_assert_uint_lt(k.len, sizeof(name));
		memcpy(name, k.s, k.len);
		name[k.len] = 0;
		ck_assert_int_eq(strata_gguf_find_key(g, name), i);
	}
	for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);

		ck_assert_uint_lt(t->name.len, sizeof(name));
		memcpy(name, t->name.s, t->name.len);
		name[t->name.len] = 0;
		ck_assert_ptr_eq(strata_gguf_find_tensor(g, name), t);
		ck_assert_uint_eq(t->size, strata_type_row_bytes(t->type, t->ne[0]) *
				  (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]));
		ck_assert_uint_eq((strata_gguf_data_offset(g) + t->offset) %
				  strata_gguf_alignment(g), 0);
		ck_assert_uint_le(strata_gguf_data_offset(g) + t->offset + t->size,
				  strata_gguf_file_size(g));
	}
	strata_gguf_close(g);
}

START_TEST(test_all_models_open)
{
	const char *pats[] = { "models/*.gguf", "vocab/*.gguf" };
	char pat[4200];
	int opened = 0;

	tu_shared_or_skip(STORIES);
	for (size_t k = 0; k < 2; k++) {
		glob_t gl;

		snprintf(pat, sizeof(pat), "%s/%s", tu_shared("."), pats[k]);
		if (glob(pat, 0, NULL, &gl) != 0)
			continue;
		for (size_t i = 0; i < gl.gl_pathc; i++, opened++)
			check_whole_file(gl.gl_pathv[i]);
		globfree(&gl);
	}
	ck_assert_int_ge(opened, 2);
}
END_TEST

/* ---- hand-built files ---- */

static void gw_kv_f(struct gw *w, const char *key, double v, int is_f32)
{
	float f = (float)v;
	uint64_t bits = 0;

	if (is_f32)
		memcpy(&bits, &f, 4);
	else
		memcpy(&bits, &v, 8);
	gw_raw_kv(w, key, is_f32 ? STRATA_GGUF_F32 : STRATA_GGUF_F64, bits, is_f32 ? 4 : 8);
}

/* Every value type, two tensors (F32 and Q8_0), optional general.alignment. */
static void build_valid(struct gw *w, uint32_t version, uint32_t align)
{
	uint64_t ne_a[2] = { 4, 2 }, ne_b[2] = { 32, 3 };
	uint32_t al = align ? align : 32;
	char lng[201];

	gw_header(w, version, 2, 17 + (align != 0));
	gw_kv_str(w, "general.architecture", "test");
	gw_raw_kv(w, "v.u8", STRATA_GGUF_U8, 200, 1);
	gw_raw_kv(w, "v.i8", STRATA_GGUF_I8, (uint64_t)-5, 1);
	gw_raw_kv(w, "v.u16", STRATA_GGUF_U16, 65535, 2);
	gw_raw_kv(w, "v.i16", STRATA_GGUF_I16, (uint64_t)-300, 2);
	gw_kv_u32(w, "v.u32", 4000000000u);
	gw_raw_kv(w, "v.i32", STRATA_GGUF_I32, (uint64_t)-7, 4);
	gw_kv_f(w, "v.f32", 1.5, 1);
	gw_raw_kv(w, "v.bool", STRATA_GGUF_BOOL, 1, 1);
	gw_raw_kv(w, "v.u64", STRATA_GGUF_U64, 1ull << 63, 8);
	gw_raw_kv(w, "v.i64", STRATA_GGUF_I64, (uint64_t)INT64_MIN, 8);
	gw_kv_f(w, "v.f64", 0.25, 0);
	gw_kv_f(w, "v.f64big", 1e300, 0);
	gw_arr(w, "v.arr_u16", STRATA_GGUF_U16, 3);
	gw_bytes(w, "\x01\x00\x02\x00\x03\x01", 6);
	gw_arr(w, "v.arr_str", STRATA_GGUF_STRING, 3);
	gw_str(w, "a");
	gw_str(w, "");
	gw_str(w, "c\"\n");
	gw_arr(w, "v.arr_empty", STRATA_GGUF_F32, 0);
	memset(lng, 'x', 200);
	lng[200] = 0;
	gw_kv_str(w, "v.long", lng);
	if (align)
		gw_kv_u32(w, "general.alignment", align);
	gw_tensor(w, "a.weight", 2, ne_a, STRATA_TYPE_F32, 0);
	gw_tensor(w, "b.weight", 2, ne_b, STRATA_TYPE_Q8_0, al > 32 ? al : 32);
	gw_pad(w, al);
	gw_fill(w, 32, 1);
	gw_pad(w, al);
	gw_fill(w, 3 * 34, 9);
}

/* Typed getters: what each key gives through each getter (rc, then value). */
static void check_getters(const struct strata_gguf *g)
{
	static const struct {
		const char *key;
		char getter; /* u = u32, i = i64, f = f32, b = bool */
		int rc;
		double want;
	} cases[] = {
		{ "v.u8", 'u', 0, 200 }, { "v.i8", 'u', -EINVAL, 0 }, { "v.i8", 'i', 0, -5 },
		{ "v.u16", 'u', 0, 65535 }, { "v.i16", 'i', 0, -300 },
		{ "v.u32", 'u', 0, 4000000000.0 }, { "v.i32", 'i', 0, -7 },
		{ "v.u64", 'u', -EINVAL, 0 }, { "v.u64", 'i', -EINVAL, 0 },
		{ "v.i64", 'i', 0, -9223372036854775808.0 }, { "v.f32", 'f', 0, 1.5 },
		{ "v.f64", 'f', 0, 0.25 }, { "v.i32", 'f', 0, -7 }, { "v.u64", 'f', 0, 0x1p63 },
		{ "v.f64big", 'f', -EINVAL, 0 }, { "general.architecture", 'f', -EINVAL, 0 },
		{ "v.f32", 'u', -EINVAL, 0 }, { "v.bool", 'u', -EINVAL, 0 },
		{ "v.bool", 'b', 0, 1 }, { "v.u8", 'b', -EINVAL, 0 }, { "v.none", 'b', -ENOENT, 0 },
		{ "v.none", 'i', -ENOENT, 0 }, { "v.arr_u16", 'i', -EINVAL, 0 },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		uint32_t u = 0;
		int64_t i = 0;
		float f = 0;
		int b = 0, rc;
		double got;

		switch (cases[k].getter) {
		case 'u': rc = strata_gguf_get_u32(g, cases[k].key, &u); got = u; break;
		case 'i': rc = strata_gguf_get_i64(g, cases[k].key, &i); got = (double)i; break;
		case 'f': rc = strata_gguf_get_f32(g, cases[k].key, &f); got = f; break;
		default: rc = strata_gguf_get_bool(g, cases[k].key, &b); got = b; break;
		}
		ck_assert_msg(rc == cases[k].rc && (rc || got == cases[k].want),
			      "get_%c(%s): rc %d value %g", cases[k].getter, cases[k].key, rc, got);
	}
	{
		int64_t i;

		/* exact, which the double comparison above cannot show */
		ck_assert_int_eq(strata_gguf_get_i64(g, "v.i64", &i), 0);
		ck_assert(i == INT64_MIN);
	}
}

static void check_arrays_and_format(const struct strata_gguf *g)
{
	enum strata_gguf_vtype et;
	const void *data;
	uint16_t v16[3];
	int64_t kv;
	uint64_t n;
	char buf[512];

	ck_assert_int_eq(strata_gguf_get_arr(g, "v.arr_u16", &et, &n, &data), 0);
	ck_assert_int_eq(et, STRATA_GGUF_U16);
	ck_assert_uint_eq(n, 3);
	memcpy(v16, data, 6);
	ck_assert_uint_eq(v16[0], 1);
	ck_assert_uint_eq(v16[2], 0x103);
	ck_assert_int_eq(strata_gguf_get_arr(g, "v.arr_empty", NULL, &n, NULL), 0);
	ck_assert_uint_eq(n, 0);
	kv = strata_gguf_find_key(g, "v.arr_str");
	ck_assert(strata_str_eq(strata_gguf_arr_str(g, kv, 0), "a"));
	ck_assert(strata_str_eq(strata_gguf_arr_str(g, kv, 1), ""));
	ck_assert(strata_str_eq(strata_gguf_arr_str(g, kv, 2), "c\"\n"));
	ck_assert_ptr_null(strata_gguf_arr_str(g, kv, 3).s);

#define FMT(key, want) do { \
	strata_gguf_format_value(g, strata_gguf_find_key(g, key), buf, sizeof(buf)); \
	ck_assert_str_eq(buf, want); \
} while (0)
	FMT("v.u8", "200");
	FMT("v.i8", "-5");
	FMT("v.i64", "-9223372036854775808");
	FMT("v.u64", "9223372036854775808");
	FMT("v.bool", "true");
	FMT("v.f32", "1.5");
	FMT("v.f64", "0.25");
	FMT("v.f64big", "1e+300");
	FMT("v.arr_u16", "[1, 2, 259]");
	FMT("v.arr_str", "[\"a\", \"\", \"c\\\"\\n\"]");
	FMT("v.arr_empty", "[]");
#undef FMT
	strata_gguf_format_value(g, strata_gguf_find_key(g, "v.long"), buf, sizeof(buf));
	ck_assert_msg(strncmp(buf, "\"xxxxxxxx", 9) == 0 && strstr(buf, "...\" (200 bytes)"),
		      "long string: %s", buf);
	ck_assert_uint_lt(strlen(buf), 130);
}

START_TEST(test_valid_versions)
{
	uint32_t version = _i & 1 ? 3 : 2, align = _i & 2 ? 64 : 0;
	const struct strata_gguf_tensor *a, *b;
	struct strata_gguf *g;
	struct gw w = { 0 };
	struct strata_str s;

	build_valid(&w, version, align);
	g = open_ok(&w);
	ck_assert_uint_eq(strata_gguf_version(g), version);
	ck_assert_uint_eq(strata_gguf_alignment(g), align ? align : 32);
	ck_assert_int_eq(strata_gguf_n_kv(g), 17 + (align != 0));
	ck_assert_int_eq(strata_gguf_get_str(g, "general.architecture", &s), 0);
	ck_assert(strata_str_eq(s, "test"));
	check_getters(g);
	check_arrays_and_format(g);

	ck_assert_int_eq(strata_gguf_n_tensors(g), 2);
	a = strata_gguf_find_tensor(g, "a.weight");
	b = strata_gguf_find_tensor(g, "b.weight");
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(a->size, 32);
	ck_assert_uint_eq(b->size, 102);
	ck_assert_uint_eq(b->type, STRATA_TYPE_Q8_0);
	ck_assert_uint_eq(strata_gguf_data_offset(g) % (align ? align : 32), 0);
	ck_assert_uint_eq(((const uint8_t *)a->data)[1], (uint8_t)(1 + 7));
	ck_assert_uint_eq(((const uint8_t *)b->data)[101], (uint8_t)(9 + 101 * 7));
	ck_assert_uint_eq(strata_gguf_data_offset(g) + b->offset + b->size,
			  strata_gguf_file_size(g));
	strata_gguf_close(g);
}
END_TEST

START_TEST(test_empty_model)
{
	struct gw w = { 0 };
	struct strata_gguf *g;

	gw_header(&w, 3, 0, 0);
	g = open_ok(&w);
	ck_assert_int_eq(strata_gguf_n_kv(g), 0);
	ck_assert_int_eq(strata_gguf_n_tensors(g), 0);
	ck_assert_ptr_null(strata_gguf_find_tensor(g, "x"));
	ck_assert_int_eq(strata_gguf_find_key(g, "x"), -1);
	strata_gguf_close(g);
	strata_gguf_close(NULL);
}
END_TEST

START_TEST(test_bad_header)
{
	struct gw w = { 0 };

	gw_bytes(&w, "GGUX", 4);
	gw_u32(&w, 3);
	gw_u64(&w, 0);
	gw_u64(&w, 0);
	expect_fail(&w, -EINVAL, "not a GGUF file");
	gw_header(&w, 1, 0, 0);
	expect_fail(&w, -ENOTSUP, "GGUF version 1 is not supported");
	gw_header(&w, 4, 0, 0);
	expect_fail(&w, -ENOTSUP, "unsupported GGUF version 4");
	gw_header(&w, 0x03000000u, 0, 0);
	expect_fail(&w, -ENOTSUP, "big-endian");
	gw_bytes(&w, "GGU", 3);
	expect_fail(&w, -EINVAL, "truncated: magic at offset 0");
	gw_bytes(&w, "GGUF\x03\x00", 6);
	expect_fail(&w, -EINVAL, "truncated: version at offset 4");
	gw_bytes(&w, "GGUF", 4);
	gw_u32(&w, 3);
	gw_u64(&w, 0);
	expect_fail(&w, -EINVAL, "truncated: metadata count at offset 16");
	/* absurd counts fail before any allocation */
	gw_header(&w, 3, 1000000000000000ull, 0);
	gw_fill(&w, 1000, 0);
	expect_fail(&w, -EINVAL, "1000000000000000 tensors cannot fit");
	gw_header(&w, 3, 0, UINT64_MAX);
	gw_fill(&w, 1000, 0);
	expect_fail(&w, -EINVAL, "18446744073709551615 metadata entries cannot fit");
	gw_header(&w, 3, 2, 1);
	gw_kv_u32(&w, "a", 1);
	gw_fill(&w, 40, 0); /* room for one tensor record, not two */
	expect_fail(&w, -EINVAL, "2 tensors cannot fit");
}
END_TEST

START_TEST(test_bad_strings)
{
	struct gw w = { 0 };

	gw_header(&w, 3, 0, 1);
	gw_u64(&w, 1000);
	gw_fill(&w, 20, 'a');
	expect_fail(&w, -EINVAL, "truncated: metadata entry 0: key string of 1000 bytes "
				 "at offset 24 runs past end of file (size 52)");
	gw_header(&w, 3, 0, 1);
	gw_u64(&w, UINT64_MAX);
	gw_fill(&w, 20, 0);
	expect_fail(&w, -EINVAL, "string of 18446744073709551615 bytes at offset 24 runs past");
	gw_header(&w, 3, 0, 1);
	gw_key(&w, "k", STRATA_GGUF_STRING);
	gw_u64(&w, 50);
	gw_bytes(&w, "hi", 2);
	expect_fail(&w, -EINVAL, "metadata 'k': value string of 50 bytes at offset 37");
	gw_header(&w, 3, 0, 1);
	gw_key(&w, "k", STRATA_GGUF_U64);
	gw_bytes(&w, "abc", 3);
	expect_fail(&w, -EINVAL, "metadata 'k': value at offset 37 runs past");
	gw_header(&w, 3, 1, 0);
	gw_u64(&w, 100);
	gw_fill(&w, 40, 'a');
	expect_fail(&w, -EINVAL, "tensor 0: name string of 100 bytes at offset 24");
}
END_TEST

START_TEST(test_bad_values)
{
	struct gw w = { 0 };

	gw_header(&w, 3, 0, 1);
	gw_raw_kv(&w, "k", 13, 0, 8);
	expect_fail(&w, -EINVAL, "metadata 'k' at offset 24 has unknown value type 13");
	gw_header(&w, 3, 0, 1);
	gw_arr(&w, "k", 99, 1);
	gw_fill(&w, 8, 0);
	expect_fail(&w, -EINVAL, "array of unknown value type 99");
	gw_header(&w, 3, 0, 1);
	gw_arr(&w, "k", STRATA_GGUF_ARRAY, 1);
	gw_u32(&w, STRATA_GGUF_U8);
	gw_u64(&w, 1);
	gw_fill(&w, 1, 0);
	expect_fail(&w, -ENOTSUP, "array of arrays");
	/* element count * size overflows 64 bits */
	gw_header(&w, 3, 0, 1);
	gw_arr(&w, "k", STRATA_GGUF_U32, 1ull << 62);
	gw_fill(&w, 64, 0);
	expect_fail(&w, -EINVAL, "array of 4611686018427387904 u32 values");
	gw_header(&w, 3, 0, 1);
	gw_arr(&w, "k", STRATA_GGUF_F64, 9);
	gw_fill(&w, 64, 0);
	expect_fail(&w, -EINVAL, "array of 9 f64 values at offset 49 runs past");
	/* a huge string array is refused before its index is allocated */
	gw_header(&w, 3, 0, 1);
	gw_arr(&w, "k", STRATA_GGUF_STRING, 1ull << 60);
	gw_fill(&w, 64, 0);
	expect_fail(&w, -EINVAL, "array of 1152921504606846976 strings");
	gw_header(&w, 3, 0, 1);
	gw_arr(&w, "k", STRATA_GGUF_STRING, 3);
	gw_str(&w, "one");
	gw_u64(&w, 9);
	gw_fill(&w, 8, 'z');
	expect_fail(&w, -EINVAL, "array element string of 9 bytes");
	gw_header(&w, 3, 0, 2);
	gw_kv_u32(&w, "a.b", 1);
	gw_kv_str(&w, "a.b", "again");
	expect_fail(&w, -EINVAL, "duplicate metadata 'a.b'");
}
END_TEST

static void gw_one_tensor(struct gw *w, uint32_t n_dims, const uint64_t *ne, uint32_t type,
			  uint64_t offset, size_t data)
{
	gw_header(w, 3, 1, 0);
	gw_tensor(w, "t", n_dims, ne, type, offset);
	gw_pad(w, 32);
	gw_fill(w, data, 3);
}

START_TEST(test_bad_tensors)
{
	uint64_t ne8[1] = { 8 }, ne33[1] = { 33 }, ne5[5] = { 1, 1, 1, 1, 1 };
	uint64_t zero[2] = { 4, 0 }, big[1] = { 1ull << 63 };
	uint64_t ovf[2] = { 1ull << 32, 1ull << 32 }, bovf[2] = { 1ull << 31, 1ull << 31 };
	struct gw w = { 0 };

	gw_one_tensor(&w, 1, ne8, 4, 0, 64);
	expect_fail(&w, -ENOTSUP, "tensor 't' at offset 24 has unsupported type id 4");
	gw_one_tensor(&w, 1, ne8, 99, 0, 64);
	expect_fail(&w, -ENOTSUP, "has unsupported type id 99");
	gw_one_tensor(&w, 1, ne33, STRATA_TYPE_Q4_0, 0, 64);
	expect_fail(&w, -EINVAL, "row length 33, not a multiple of the Q4_0 block size 32");
	gw_one_tensor(&w, 0, ne5, STRATA_TYPE_F32, 0, 64);
	expect_fail(&w, -EINVAL, "tensor 't' at offset 24 has 0 dimensions");
	gw_one_tensor(&w, 5, ne5, STRATA_TYPE_F32, 0, 64);
	expect_fail(&w, -EINVAL, "has 5 dimensions");
	gw_one_tensor(&w, 2, zero, STRATA_TYPE_F32, 0, 64);
	expect_fail(&w, -EINVAL, "dimension 1 = 0");
	gw_one_tensor(&w, 1, big, STRATA_TYPE_F32, 0, 64);
	expect_fail(&w, -EINVAL, "dimension 0 = 9223372036854775808");
	gw_one_tensor(&w, 2, ovf, STRATA_TYPE_F32, 0, 64);
	expect_fail(&w, -EINVAL, "element count that overflows int64");
	gw_one_tensor(&w, 2, bovf, STRATA_TYPE_F32, 0, 64);
	expect_fail(&w, -EINVAL, "byte size that overflows");
	gw_one_tensor(&w, 1, ne8, STRATA_TYPE_F32, 16, 64);
	expect_fail(&w, -EINVAL, "tensor 't' has data offset 16 (file offset 80), not a "
				 "multiple of the alignment 32");
	gw_one_tensor(&w, 1, ne8, STRATA_TYPE_F32, 0, 31);
	expect_fail(&w, -EINVAL, "truncated: data of tensor 't' (32 bytes at offset 64 + 0) "
				 "runs past end of file (size 95)");
	gw_one_tensor(&w, 1, ne8, STRATA_TYPE_F32, UINT64_MAX - 31, 64);
	expect_fail(&w, -EINVAL, "runs past end of file");
	/* the data section itself is cut: the infos end at 57, data starts at 64 */
	gw_one_tensor(&w, 1, ne8, STRATA_TYPE_F32, 0, 0);
	w.len -= 2;
	expect_fail(&w, -EINVAL, "truncated: data of tensor 't'");
	gw_header(&w, 3, 2, 0);
	gw_tensor(&w, "t", 1, ne8, STRATA_TYPE_F32, 0);
	gw_tensor(&w, "t", 1, ne8, STRATA_TYPE_F32, 32);
	gw_pad(&w, 32);
	gw_fill(&w, 64, 0);
	expect_fail(&w, -EINVAL, "duplicate tensor 't'");
	gw_header(&w, 3, 1, 0);
	gw_tensor(&w, "t", 1, ne8, STRATA_TYPE_F32, 0);
	gw_bytes(&w, "\x00", 1);
	expect_fail(&w, -EINVAL, "runs past end of file");
}
END_TEST

START_TEST(test_bad_alignment)
{
	uint64_t ne8[1] = { 8 };
	struct gw w = { 0 };

	gw_header(&w, 3, 0, 1);
	gw_kv_u32(&w, "general.alignment", 48);
	expect_fail(&w, -EINVAL, "general.alignment (u32 48, offset");
	gw_header(&w, 3, 0, 1);
	gw_kv_u32(&w, "general.alignment", 0);
	expect_fail(&w, -EINVAL, "must be a power of two");
	gw_header(&w, 3, 0, 1);
	gw_kv_str(&w, "general.alignment", "32");
	expect_fail(&w, -EINVAL, "general.alignment (str \"32\"");
	/* offset 32 is aligned to the default, not to a declared 64 */
	gw_header(&w, 3, 2, 1);
	gw_kv_u32(&w, "general.alignment", 64);
	gw_tensor(&w, "a", 1, ne8, STRATA_TYPE_F32, 0);
	gw_tensor(&w, "b", 1, ne8, STRATA_TYPE_F32, 32);
	gw_pad(&w, 64);
	gw_fill(&w, 128, 0);
	expect_fail(&w, -EINVAL, "tensor 'b' has data offset 32");
}
END_TEST

/* ---- paths ---- */

START_TEST(test_paths)
{
	struct strata_gguf *g = (struct strata_gguf *)&g;
	const char *p;
	int rc;

	p = tmp_path("no-such-model.gguf");
	rc = open_captured(p, &g);
	check_fail(p, rc, g, -ENOENT, "cannot open");
	ck_assert_ptr_nonnull(strstr(g_msg, "No such file or directory"));
	rc = open_captured(g_dir, &g);
	check_fail(g_dir, rc, g, -EISDIR, "Is a directory");
	p = tmp_path("empty.gguf");
	ck_assert_int_eq(tu_write_file(p, "", 0), 0);
	rc = open_captured(p, &g);
	check_fail(p, rc, g, -EINVAL, "empty file");
}
END_TEST

/* ---- a real file, cut short and corrupted ---- */

static uint8_t *copy_stories(const char *dst, size_t *len)
{
	uint8_t *file = tu_read_file(tu_shared_or_skip(STORIES), len);

	ck_assert_ptr_nonnull(file);
	ck_assert_int_eq(tu_write_file(dst, file, *len), 0);
	return file;
}

/*
 * Every prefix of the header region and a sample of the data section must
 * be refused with -EINVAL and one "truncated" line: the tensors end exactly
 * at the end of the file, so no proper prefix is a valid model.
 */
START_TEST(test_truncations)
{
	const char *path = tmp_path("cut.gguf");
	struct strata_gguf *g;
	uint64_t data_off, tested = 0;
	size_t len;
	uint8_t *file = copy_stories(path, &len);
	int fd, rc;

	ck_assert_int_eq(strata_gguf_open(path, &g), 0);
	data_off = strata_gguf_data_offset(g);
	strata_gguf_close(g);
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	/* descending, so each cut is one ftruncate of the same file */
	for (uint64_t n = len - 1; n >= 1; n--) {
		if (n > data_off + 256 && n % 4093 != 0 && n != len - 1)
			continue;
		ck_assert_int_eq(ftruncate(fd, (off_t)n), 0);
		g = (struct strata_gguf *)&g;
		rc = open_captured(path, &g);
		ck_assert_msg(rc == -EINVAL, "prefix %" PRIu64 ": rc %d: %s", n, rc, g_msg);
		ck_assert_ptr_null(g);
		ck_assert_msg(strstr(g_msg, "truncated") && count_lines(g_msg) == 1,
			      "prefix %" PRIu64 ": %s", n, g_msg);
		tested++;
	}
	close(fd);
	ck_assert_uint_gt(tested, data_off);
	free(file);
}
END_TEST

/*
 * Random byte changes in the header region: whatever the result, no crash,
 * an errno from the contract, one error line on failure, and on success every
 * tensor lies inside the file.
 */
START_TEST(test_corruptions)
{
	const char *path = tmp_path("flip.gguf");
	uint64_t x = 0x9e3779b97f4a7c15ull, data_off;
	struct strata_gguf *g;
	int fd, rc, ok = 0, bad = 0;
	size_t len;
	uint8_t *file = copy_stories(path, &len);

	ck_assert_int_eq(strata_gguf_open(path, &g), 0);
	data_off = strata_gguf_data_offset(g);
	strata_gguf_close(g);
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	for (int it = 0; it < 3000; it++) {
		uint64_t pos;
		uint8_t b;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		pos = (x >> 8) % data_off;
		/* mostly small changes to counts/lengths, sometimes any byte */
		b = (uint8_t)(it % 3 ? file[pos] ^ (1u << (x % 8)) : x >> 56);
		ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)pos), 1);
		rc = open_captured(path, &g);
		if (rc == 0) {
			for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++) {
				const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
				volatile uint8_t sink;

				ck_assert_uint_le(strata_gguf_data_offset(g) + t->offset + t->size,
						  len);
				sink = ((const uint8_t *)t->data)[t->size - 1];
				(void)sink;
			}
			strata_gguf_close(g);
			ok++;
		} else {
			ck_assert_msg(rc == -EINVAL || rc == -ENOTSUP, "rc %d: %s", rc, g_msg);
			ck_assert_msg(count_lines(g_msg) == 1, "%s", g_msg);
			bad++;
		}
		ck_assert_int_eq(pwrite(fd, &file[pos], 1, (off_t)pos), 1);
	}
	close(fd);
	/* both outcomes happen, or the test is not testing anything */
	ck_assert_int_gt(ok, 0);
	ck_assert_int_gt(bad, 0);
	free(file);
}
END_TEST

/* ---- strata info ---- */

struct info_args {
	int argc;
	char **argv;
};

static int do_info(void *a)
{
	struct info_args *ia = a;

	return strata_cmd_info(ia->argc, ia->argv);
}

static int info_captured(int argc, char **argv)
{
	struct info_args ia = { argc, argv };

	return captured(do_info, &ia, 3);
}

START_TEST(test_info_cmd)
{
	char *path = (char *)tu_shared_or_skip(STORIES);
	char *argv_ok[] = { "info", path, NULL };
	char *argv_help[] = { "info", "--help", NULL };
	char *argv_none[] = { "info", NULL };
	char *argv_opt[] = { "info", "--bogus", path, NULL };
	char *argv_two[] = { "info", path, path, NULL };
	char *argv_missing[] = { "info", (char *)tmp_path("absent.gguf"), NULL };
	struct strata_gguf *g;
	uint64_t params = 0, bytes = 0;
	char want[256];

	ck_assert_int_eq(info_captured(2, argv_ok), 0);
	ck_assert_ptr_nonnull(strstr(g_msg, "version:   GGUF v3\n"));
	ck_assert_ptr_nonnull(strstr(g_msg, "alignment: 32\n"));
	ck_assert_ptr_nonnull(strstr(g_msg, "metadata:  19 entries\n"));
	ck_assert_ptr_nonnull(strstr(g_msg, "general.architecture"));
	ck_assert_ptr_nonnull(strstr(g_msg, "\"llama\""));
	ck_assert_ptr_nonnull(strstr(g_msg, "arr[str,512]     [\"<unk>\", \"<s>\""));
	ck_assert_ptr_nonnull(strstr(g_msg, "1e-05"));
	ck_assert_ptr_nonnull(strstr(g_msg, "tensors:   48\n"));
	ck_assert_ptr_nonnull(strstr(g_msg, "token_embd.weight"));
	ck_assert_ptr_nonnull(strstr(g_msg, "64 x 512"));
	ck_assert_ptr_nonnull(strstr(g_msg, "blk.4.ffn_norm.weight"));
	ck_assert_ptr_null(strstr(g_msg, "error"));
	/* the totals agree with the API */
	ck_assert_int_eq(strata_gguf_open(path, &g), 0);
	for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);

		params += (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
		bytes += t->size;
	}
	strata_gguf_close(g);
	snprintf(want, sizeof(want), "totals:    48 tensors, %" PRIu64 " parameters, %" PRIu64
		 " bytes", params, bytes);
	ck_assert_msg(strstr(g_msg, want), "want '%s' in:\n%s", want, g_msg);
	ck_assert_uint_eq(params, 292800);

	ck_assert_int_eq(info_captured(2, argv_help), 0);
	ck_assert_ptr_nonnull(strstr(g_msg, "usage: strata info"));
	ck_assert_int_eq(info_captured(1, argv_none), 2);
	ck_assert_ptr_nonnull(strstr(g_msg, "missing MODEL"));
	ck_assert_int_eq(info_captured(3, argv_opt), 2);
	ck_assert_ptr_nonnull(strstr(g_msg, "unknown option '--bogus'"));
	ck_assert_int_eq(info_captured(3, argv_two), 2);
	ck_assert_int_eq(info_captured(2, argv_missing), 1);
	ck_assert_ptr_nonnull(strstr(g_msg, "No such file or directory"));
}
END_TEST

/* `strata info`, the shipped binary. */
START_TEST(test_info_binary)
{
	const char *path = tu_shared_or_skip(STORIES);
	static char out[1 << 16];
	char cmd[8600];
	int rc;

	snprintf(cmd, sizeof(cmd), "'%s' info '%s'", STRATA_BIN, path);
	rc = tu_run(cmd, out, sizeof(out));
	ck_assert_msg(rc == 0, "rc %d: %s", rc, out);
	ck_assert_ptr_nonnull(strstr(out, "general.architecture"));
	ck_assert_ptr_nonnull(strstr(out, "token_embd.weight"));
	ck_assert_ptr_nonnull(strstr(out, "totals:    48 tensors"));
	snprintf(cmd, sizeof(cmd), "'%s' info '%s/absent.gguf'", STRATA_BIN, g_dir);
	rc = tu_run(cmd, out, sizeof(out));
	ck_assert_msg(rc == 1, "rc %d: %s", rc, out);
	ck_assert_ptr_nonnull(strstr(out, "No such file or directory"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gguf");
	TCase *tc = tcase_create("gguf");

	/* the synthetic cases need no data, but half the suite is about the real model */
	tu_shared_or_skip(STORIES);
	/* thousands of small writes and truncations: keep them off the disk */
	if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0)
		setenv("TMPDIR", "/dev/shm", 1);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_stories_facts);
	tcase_add_test(tc, test_format_value);
	tcase_add_test(tc, test_all_models_open);
	tcase_add_loop_test(tc, test_valid_versions, 0, 4);
	tcase_add_test(tc, test_empty_model);
	tcase_add_test(tc, test_bad_header);
	tcase_add_test(tc, test_bad_strings);
	tcase_add_test(tc, test_bad_values);
	tcase_add_test(tc, test_bad_tensors);
	tcase_add_test(tc, test_bad_alignment);
	tcase_add_test(tc, test_paths);
	tcase_add_test(tc, test_truncations);
	tcase_add_test(tc, test_corruptions);
	tcase_add_test(tc, test_info_cmd);
	tcase_add_test(tc, test_info_binary);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
