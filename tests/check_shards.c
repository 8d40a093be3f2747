#define _GNU_SOURCE /* asprintf */
/*
 * check_shards.c - models split in GGUF shards, llama.cpp's way
 * (split.no / split.count / split.tensors.count, PREFIX-%05d-of-%05d.gguf).
 *
 * A golden model is split here (split_model(): its metadata and the split
 * keys in the first shard, only the split keys in the others, tensor bytes
 * copied) and must compute exactly what the one file computes: logits bit
 * for bit, mapped and with streamed experts read from the shard that holds
 * them; the qwen4exp PLE table found in its own shard, read row for row as
 * from the one file.  Then every bad set of shards is refused before any
 * compute, with one error naming the file and the reason.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "cpu/pool.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "model/model.h"
#include "model/xstore.h"
#include "ple/ple.h"
#include "plugin/registry.h"
#include "strata.h"
#include "testutil.h"

static char g_dir[4096];

/* var = the path of ../shared/rel, or the case is skipped (counted) when it is absent. */
#define SHARED_OR_SKIP(var, rel)                                                   \
	const char *var = tu_shared(rel);                                          \
	if (!var)                                                                  \
		TU_SKIP("test data ../shared/%s is absent", rel)

static void setup(void)
{
	const char *d = tu_tmpdir();

	ck_assert_ptr_nonnull(d);
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	setenv("STRATA_PLUGIN_PATH", STRATA_PLUGIN_DIR, 1);
}

static void teardown(void)
{
	tu_rmtree(g_dir);
}

/* How split_model() breaks the shards it writes. */
struct breakage {
	int bad_no;          /* shard index + 1 whose split.no is the shard before's; 0 none */
	int bad_count;       /* shard index + 1 whose split.count is one more; 0 none */
	int tensors_delta;   /* added to split.tensors.count */
	int dup_first;       /* the last shard holds the first tensor again */
	int no_keys;         /* shard index + 1 written without any split key; 0 none */
};

static char *shard_path(const char *prefix, uint32_t i, uint32_t n)
{
	char *p;

	ck_assert_int_ge(asprintf(&p, "%s-%05u-of-%05u.gguf", prefix, i + 1, n), 0);
	return p;
}

/*
 * Write src's model as n shards PREFIX-*-of-n.gguf, tensor i in shard
 * shard_of(i, arg) (in file order within each shard).
 */
static void write_shards(const char *src, const char *prefix, uint32_t n,
			 uint32_t (*shard_of)(int64_t i, const void *arg), const void *arg,
			 const struct breakage *b)
{
	static const struct breakage none;
	struct strata_gguf *g;
	int64_t nt;

	b = b ? b : &none;
	ck_assert_int_eq(strata_gguf_open_one(src, &g), 0);
	nt = strata_gguf_n_tensors(g);
	for (uint32_t k = 0; k < n; k++) {
		struct strata_gguf_writer *w;
		char *path = shard_path(prefix, k, n);
		int dup = b->dup_first && k == n - 1;

		ck_assert_int_eq(strata_gguf_writer_open(path, &w), 0);
		for (int64_t i = 0; k == 0 && i < strata_gguf_n_kv(g); i++)
			ck_assert_int_eq(strata_gguf_writer_copy_kv(w, g, i), 0);
		if (b->no_keys != (int)k + 1) {
			ck_assert_int_eq(strata_gguf_writer_set(w, "split.no", STRATA_GGUF_U16,
				&(uint16_t){ (uint16_t)(b->bad_no == (int)k + 1 ? (k + n - 1) % n : k) }), 0);
			ck_assert_int_eq(strata_gguf_writer_set(w, "split.count", STRATA_GGUF_U16,
				&(uint16_t){ (uint16_t)(n + (b->bad_count == (int)k + 1)) }), 0);
			ck_assert_int_eq(strata_gguf_writer_set_i32(w, "split.tensors.count",
				(int32_t)nt + b->tensors_delta), 0);
		}
		for (int64_t i = dup ? -1 : 0; i < nt; i++) {
			const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i < 0 ? 0 : i);
			char name[STRATA_GGUF_MAX_NAME + 1];

			if (i >= 0 && shard_of(i, arg) != k)
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)t->name.len, t->name.s);
			ck_assert_int_ge(strata_gguf_writer_add_tensor(w, name, t->type, t->n_dims,
								       t->ne), 0);
		}
		for (int64_t i = dup ? -1 : 0; i < nt; i++) {
			const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i < 0 ? 0 : i);

			if (i >= 0 && shard_of(i, arg) != k)
				continue;
			ck_assert_int_eq(strata_gguf_writer_write(w, t->data, (size_t)t->size), 0);
		}
		ck_assert_int_eq(strata_gguf_writer_commit(w), 0);
		strata_gguf_writer_close(w);
		free(path);
	}
	strata_gguf_close(g);
}

struct ranges {
	uint32_t n;
	const int64_t *first;
};

static uint32_t by_range(int64_t i, const void *arg)
{
	const struct ranges *r = arg;
	uint32_t k = 0;

	while (k + 1 < r->n && i >= r->first[k + 1])
		k++;
	return k;
}

/* Shard k holds tensors [first[k], first[k + 1]) (the last to the end). */
static void split_model(const char *src, const char *prefix, uint32_t n, const int64_t *first,
			const struct breakage *b)
{
	struct ranges r = { n, first };

	write_shards(src, prefix, n, by_range, &r, b);
}

static uint32_t alone_last(int64_t i, const void *arg)
{
	return i == *(const int64_t *)arg;
}

/* The index of the first tensor whose name holds `part`, or -1. */
static int64_t tensor_index(const char *src, const char *part)
{
	struct strata_gguf *g;
	int64_t at = -1;

	ck_assert_int_eq(strata_gguf_open_one(src, &g), 0);
	for (int64_t i = 0; at < 0 && i < strata_gguf_n_tensors(g); i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);

		if (memmem(t->name.s, t->name.len, part, strlen(part)))
			at = i;
	}
	strata_gguf_close(g);
	return at;
}

/* ---- the gguf handle -------------------------------------------------------------- */

#define MOE "models/syn-qwen3moe-f32.gguf"

START_TEST(open_any_shard)
{
	SHARED_OR_SKIP(src, MOE);
	struct strata_gguf *one, *g;
	char prefix[4200];
	int64_t first[3] = { 0, 5, 0 };

	snprintf(prefix, sizeof(prefix), "%s/moe", g_dir);
	ck_assert_int_eq(strata_gguf_open_one(src, &one), 0);
	first[2] = strata_gguf_n_tensors(one) - 3;
	split_model(src, prefix, 3, first, NULL);
	for (uint32_t k = 0; k < 3; k++) {
		char *path = shard_path(prefix, k, 3), *p0 = shard_path(prefix, 0, 3);

		ck_assert_int_eq(strata_gguf_open(path, &g), 0);
		ck_assert_uint_eq(strata_gguf_n_files(g), 3);
		ck_assert_str_eq(strata_gguf_path(g), p0);
		for (uint32_t f = 0; f < 3; f++) {
			char *pf = shard_path(prefix, f, 3);

			ck_assert_str_eq(strata_gguf_file_path(g, f), pf);
			free(pf);
		}
		ck_assert_ptr_null(strata_gguf_file_path(g, 3));
		ck_assert_int_eq(strata_gguf_n_tensors(g), strata_gguf_n_tensors(one));
		ck_assert_int_eq(strata_gguf_n_kv(g), strata_gguf_n_kv(one) + 3);
		for (int64_t i = 0; i < strata_gguf_n_tensors(one); i++) {
			const struct strata_gguf_tensor *a = strata_gguf_tensor(one, i), *b;
			const void *base;
			uint64_t span;
			char name[80];

			snprintf(name, sizeof(name), "%.*s", (int)a->name.len, a->name.s);
			b = strata_gguf_find_tensor(g, name);
			ck_assert_ptr_nonnull(b);
			ck_assert_uint_eq(b->file, i < 5 ? 0 : i < first[2] ? 1 : 2);
			ck_assert_uint_eq(b->size, a->size);
			ck_assert_mem_eq(b->data, a->data, a->size);
			strata_gguf_data_span(g, &base, &span);
			ck_assert((const char *)b->data >= (const char *)base &&
				  (const char *)b->data + b->size <= (const char *)base + span);
			{ /* file_off is where the bytes are in that file */
				FILE *f = fopen(strata_gguf_file_path(g, b->file), "rb");
				unsigned char buf[64];
				size_t n = b->size < sizeof(buf) ? b->size : sizeof(buf);

				ck_assert_ptr_nonnull(f);
				ck_assert_int_eq(fseek(f, (long)b->file_off, SEEK_SET), 0);
				ck_assert_uint_eq(fread(buf, 1, n, f), n);
				ck_assert_mem_eq(buf, a->data, n);
				fclose(f);
			}
		}
		strata_gguf_close(g);
		free(path);
		free(p0);
	}
	strata_gguf_close(one);
}
END_TEST

/* Each bad set of shards: refused by open with `want` in the one error, naming `file`. */
static void refused(const char *prefix, uint32_t n, uint32_t open_k, int want_rc,
		    const char *want, uint32_t file_k)
{
	char *path = shard_path(prefix, open_k, n), *file = shard_path(prefix, file_k, n);
	struct strata_gguf *g = NULL;
	struct strata_model *m = NULL;

	tu_log_capture();
	ck_assert_int_eq(strata_gguf_open(path, &g), want_rc);
	ck_assert_ptr_null(g);
	ck_assert_int_eq(strata_model_load(path, &m), want_rc);
	ck_assert_ptr_null(m);
	tu_log_release();
	ck_assert_msg(strstr(tu_log, want) && strstr(tu_log, file),
		      "wanted '%s' naming %s, got: %s", want, file, tu_log);
	free(path);
	free(file);
}

START_TEST(bad_shards)
{
	SHARED_OR_SKIP(src, MOE);
	char prefix[4200];
	int64_t first[2] = { 0, 7 };
	char *p;
	FILE *f;

	/* a missing shard */
	snprintf(prefix, sizeof(prefix), "%s/missing", g_dir);
	split_model(src, prefix, 2, first, NULL);
	p = shard_path(prefix, 1, 2);
	ck_assert_int_eq(unlink(p), 0);
	free(p);
	refused(prefix, 2, 0, -ENOENT, "missing shard 2 of 2", 1);

	/* a shard that is not GGUF */
	snprintf(prefix, sizeof(prefix), "%s/notgguf", g_dir);
	split_model(src, prefix, 2, first, NULL);
	p = shard_path(prefix, 1, 2);
	f = fopen(p, "wb");
	ck_assert_ptr_nonnull(f);
	fputs("this is not a model\n", f);
	fclose(f);
	free(p);
	refused(prefix, 2, 0, -EINVAL, "not a GGUF file", 1);

	/* split.no disagrees with the name */
	snprintf(prefix, sizeof(prefix), "%s/badno", g_dir);
	split_model(src, prefix, 2, first, &(struct breakage){ .bad_no = 2 });
	refused(prefix, 2, 0, -EINVAL, "split.no 0 and split.count 2 disagree", 1);

	/* split.count disagrees in the second shard */
	snprintf(prefix, sizeof(prefix), "%s/badcount", g_dir);
	split_model(src, prefix, 2, first, &(struct breakage){ .bad_count = 2 });
	refused(prefix, 2, 0, -EINVAL, "split.count 3 disagree", 1);

	/* a shard without split keys */
	snprintf(prefix, sizeof(prefix), "%s/nokeys", g_dir);
	split_model(src, prefix, 2, first, &(struct breakage){ .no_keys = 2 });
	refused(prefix, 2, 0, -EINVAL, "not a shard (no metadata split.count)", 1);

	/* a tensor in two shards */
	snprintf(prefix, sizeof(prefix), "%s/dup", g_dir);
	split_model(src, prefix, 2, first, &(struct breakage){ .dup_first = 1, .tensors_delta = 1 });
	refused(prefix, 2, 1, -EINVAL, "is in two shards", 1);
	refused(prefix, 2, 0, -EINVAL, "is in two shards", 0);

	/* a total that is not split.tensors.count */
	snprintf(prefix, sizeof(prefix), "%s/count", g_dir);
	split_model(src, prefix, 2, first, &(struct breakage){ .tensors_delta = -1 });
	refused(prefix, 2, 1, -EINVAL, "split.tensors.count is", 0);

	/* a shard renamed so its name does not carry its number */
	snprintf(prefix, sizeof(prefix), "%s/renamed", g_dir);
	split_model(src, prefix, 2, first, NULL);
	{
		char *from = shard_path(prefix, 0, 2), *to;

		ck_assert_int_ge(asprintf(&to, "%s/renamed.gguf", g_dir), 0);
		ck_assert_int_eq(rename(from, to), 0);
		tu_log_capture();
		ck_assert_int_eq(strata_gguf_open(to, &(struct strata_gguf *){ NULL }), -EINVAL);
		tu_log_release();
		ck_assert_ptr_nonnull(strstr(tu_log, "its name does not end in '-00001-of-00002.gguf'"));
		ck_assert_ptr_nonnull(strstr(tu_log, to));
		free(from);
		free(to);
	}
}
END_TEST

/* ---- the model computes what the one file computes ------------------------------- */

static void tokens(int32_t *t, uint32_t n, uint32_t n_vocab)
{
	for (uint32_t i = 0; i < n; i++)
		t[i] = (int32_t)((i * 7919u + 13u) % n_vocab);
}

/* Logits of 24 tokens (chunks of 8, then one at a time) through a and b: equal bit for bit. */
static void same_run(struct strata_model *a, struct strata_model *b, struct strata_xstore *xs,
		     struct strata_pool *pool, const char *what)
{
	const uint32_t nv = a->hp.n_vocab, n = 24;
	struct strata_seq *sa = tu_seq(a, pool, 64, 8), *sb = tu_seq(b, pool, 64, 8);
	float *la = malloc((size_t)8 * nv * sizeof(float)), *lb = malloc((size_t)8 * nv * sizeof(float));
	int32_t t[24];

	ck_assert_ptr_nonnull(la);
	ck_assert_ptr_nonnull(lb);
	ck_assert_uint_eq(b->hp.n_vocab, nv);
	tokens(t, n, nv);
	if (xs)
		strata_ctx_set_xstore(strata_seq_ctx(sb), xs);
	for (uint32_t at = 0; at < n;) {
		uint32_t k = at < 16 ? 8 : 1;

		ck_assert_int_eq(strata_forward(sa, t + at, k, la, 1), 0);
		ck_assert_int_eq(strata_forward(sb, t + at, k, lb, 1), 0);
		ck_assert_msg(memcmp(la, lb, (size_t)k * nv * sizeof(float)) == 0,
			      "%s: logits differ at positions %u..%u", what, at, at + k - 1);
		at += k;
	}
	tu_seq_free(sa);
	tu_seq_free(sb);
	free(la);
	free(lb);
}

/*
 * The split point of each golden model: the first expert tensor (the trunk
 * before it in shard 1, the experts and the rest in shard 2), so streamed
 * experts come from the second file.
 */
static const char *const g_split_models[] = {
	"models/syn-qwen3moe-f32.gguf", "models/syn-qwen3moe-d256-q4_k_m.gguf",
	"models/stories260K.gguf",
};

START_TEST(same_logits)
{
	SHARED_OR_SKIP(src, g_split_models[_i]);
	struct strata_model *one, *split;
	struct strata_pool *pool;
	char prefix[4200], *p1;
	int64_t first[2] = { 0, tensor_index(src, "_exps.") };

	if (first[1] < 0)
		first[1] = tensor_index(src, "blk.1.");
	ck_assert_int_gt(first[1], 0);
	snprintf(prefix, sizeof(prefix), "%s/m", g_dir);
	split_model(src, prefix, 2, first, NULL);
	p1 = shard_path(prefix, 1, 2);
	ck_assert_int_eq(strata_model_load(src, &one), 0);
	ck_assert_int_eq(strata_model_load(p1, &split), 0);
	ck_assert_int_eq(strata_gguf_n_files(split->gguf), 2);
	ck_assert_uint_eq(split->n_params, one->n_params);
	ck_assert_uint_eq(split->weight_bytes, one->weight_bytes);
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	same_run(one, split, NULL, pool, g_split_models[_i]);
	strata_pool_free(pool);
	strata_model_free(split);
	strata_model_free(one);
	free(p1);
}
END_TEST

/* Streamed experts of a model whose experts are split over both shards. */
START_TEST(streamed_experts)
{
	SHARED_OR_SKIP(src, "models/syn-qwen3moe-f32.gguf");
	struct strata_model *one, *split;
	struct strata_pool *pool;
	struct strata_config c;
	struct strata_registry *reg;
	struct strata_plugin *p;
	struct strata_xstore_opts o = { .depth = 4, .timeout_ms = 10000, .direct = 0 };
	struct strata_xstore_stats st;
	struct strata_xstore *xs;
	char prefix[4200], *p0;
	/* shard 2 from layer 1's expert tensors: layer 0's experts in shard 1 */
	int64_t first[2] = { 0, tensor_index(src, "blk.1.ffn_down_exps") };

	ck_assert_int_gt(first[1], 0);
	snprintf(prefix, sizeof(prefix), "%s/x", g_dir);
	split_model(src, prefix, 2, first, NULL);
	p0 = shard_path(prefix, 0, 2);
	ck_assert_int_eq(strata_model_load(src, &one), 0);
	ck_assert_int_eq(strata_model_load_ex(p0, STRATA_MODEL_STREAM_EXPERTS, &split), 0);
	ck_assert_uint_eq(split->layers[0].down_exps.file, 0);
	ck_assert_uint_eq(split->layers[1].down_exps.file, 1);
	ck_assert_uint_eq(split->layers[1].gate_exps.file, tensor_index(src, "blk.1.ffn_gate_exps") >= first[1]);
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(strata_registry_create(&c, NULL, &reg), 0);
	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_IO, "io-pread", &p), 0);
	o.ops = p->desc->ops;
	o.host = &p->host;
	o.io_name = p->desc->name;
	for (int pass = 0; pass < 2; pass++) {
		/* all experts, then one layer's: every layer reads again */
		o.cache_bytes = pass ? 1 : 1u << 30;
		tu_log_capture();
		if (pass) { /* the smallest cache: found by growing it */
			while (strata_xstore_open(split, p0, &o, &xs) != 0)
				o.cache_bytes += 4096;
		} else {
			ck_assert_int_eq(strata_xstore_open(split, p0, &o, &xs), 0);
		}
		tu_log_release();
		same_run(one, split, xs, pool, pass ? "streamed, one-layer cache" : "streamed");
		strata_xstore_stats(xs, &st);
		ck_assert_uint_eq(st.failures, 0);
		ck_assert_uint_gt(st.reads, 0);
		if (pass)
			ck_assert_uint_gt(st.misses, st.slots);
		strata_xstore_close(xs);
	}
	strata_registry_free(reg);
	strata_config_free(&c);
	strata_pool_free(pool);
	strata_model_free(split);
	strata_model_free(one);
	free(p0);
}
END_TEST

/* ---- the PLE table in its own shard ------------------------------------------------ */

START_TEST(ple_table_in_second_shard)
{
	SHARED_OR_SKIP(src, "models/syn-qwen4exp-f32.gguf");
	struct strata_gguf *one, *split;
	struct strata_ple_table t1, t2;
	char prefix[4200], *p0, *p1;
	int64_t ple = tensor_index(src, STRATA_PLE_TENSOR), n;

	ck_assert_int_ge(ple, 0);
	ck_assert_int_eq(strata_gguf_open_one(src, &one), 0);
	n = strata_gguf_n_tensors(one);
	ck_assert_int_lt(ple, n - 1); /* not the last tensor: the shards reorder */
	snprintf(prefix, sizeof(prefix), "%s/q4", g_dir);
	write_shards(src, prefix, 2, alone_last, &ple, NULL); /* the table alone in shard 2 */
	p0 = shard_path(prefix, 0, 2);
	p1 = shard_path(prefix, 1, 2);
	ck_assert_int_eq(strata_gguf_open(p0, &split), 0);
	ck_assert_int_eq(strata_ple_table_from_gguf(one, &t1), 0);
	ck_assert_int_eq(strata_ple_table_from_gguf(split, &t2), 0);
	ck_assert_str_eq(t2.path, p1);
	ck_assert_uint_ne(t2.base, t1.base);
	ck_assert_uint_eq(t2.n_rows, t1.n_rows);
	ck_assert_uint_eq(t2.type, t1.type);
	ck_assert_uint_eq(t2.row_len, t1.row_len);
	{
		struct strata_ple_hash h1, h2;

		ck_assert_int_eq(strata_ple_hash_from_gguf(one, &h1), 0);
		ck_assert_int_eq(strata_ple_hash_from_gguf(split, &h2), 0);
		ck_assert_mem_eq(&h1, &h2, sizeof(h1));
	}
	struct strata_config cfg;
	struct strata_registry *reg;

	ck_assert_int_eq(strata_config_init(&cfg), 0);
	ck_assert_int_eq(strata_registry_create(&cfg, NULL, &reg), 0);
	for (int mode = 0; mode < 2; mode++) {
		struct strata_ple_opts o;
		struct strata_ple_reader *r1, *r2;
		struct strata_ple_chunk *c1, *c2;
		enum { N = 64 };
		uint64_t rows[N];
		float *a = malloc(sizeof(float) * N * t1.row_len);
		float *b = malloc(sizeof(float) * N * t1.row_len);

		ck_assert_ptr_nonnull(a);
		ck_assert_ptr_nonnull(b);
		for (uint32_t i = 0; i < N; i++) /* spread, the last row, one out of range */
			rows[i] = i == N - 1 ? t1.n_rows : i == N - 2 ? t1.n_rows - 1
				  : (i * 104729ull) % t1.n_rows;
		strata_ple_opts_default(&o);
		o.readers = 0;
		o.io = mode ? STRATA_PLE_IO_MMAP : STRATA_PLE_IO_DIRECT;
		o.plugin = "io-pread";
		ck_assert_int_eq(strata_ple_reader_open(reg, &t1, &o, &r1), 0);
		ck_assert_int_eq(strata_ple_reader_open(reg, &t2, &o, &r2), 0);
		ck_assert_int_eq(strata_ple_chunk_create(r1, &c1), 0);
		ck_assert_int_eq(strata_ple_chunk_create(r2, &c2), 0);
		ck_assert_int_eq(strata_ple_start(c1, rows, N, a), 0);
		ck_assert_int_eq(strata_ple_wait(c1), 0);
		ck_assert_int_eq(strata_ple_start(c2, rows, N, b), 0);
		ck_assert_int_eq(strata_ple_wait(c2), 0);
		ck_assert_mem_eq(a, b, sizeof(float) * N * t1.row_len);
		{ /* not all zeros: the rows were read */
			float s = 0;

			for (uint32_t i = 0; i < t1.row_len; i++)
				s += a[i] * a[i];
			ck_assert(s > 0);
		}
		strata_ple_chunk_free(c1);
		strata_ple_chunk_free(c2);
		strata_ple_reader_close(r1);
		strata_ple_reader_close(r2);
		free(a);
		free(b);
	}
	strata_registry_free(reg);
	strata_config_free(&cfg);
	strata_gguf_close(split);
	strata_gguf_close(one);
	{ /* and the model runs from its shards as from the one file, bit for bit */
		struct strata_model *m1, *m2;
		struct strata_pool *pool;

		ck_assert_int_eq(strata_model_load(src, &m1), 0);
		ck_assert_int_eq(strata_model_load(p0, &m2), 0);
		ck_assert_int_eq(strata_pool_create(2, &pool), 0);
		same_run(m1, m2, NULL, pool, "syn-qwen4exp-f32, the PLE table in shard 2");
		strata_pool_free(pool);
		strata_model_free(m2);
		strata_model_free(m1);
	}
	free(p0);
	free(p1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shards");
	TCase *tc = tcase_create("shards");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, open_any_shard);
	tcase_add_test(tc, bad_shards);
	tcase_add_loop_test(tc, same_logits, 0,
			    (int)(sizeof(g_split_models) / sizeof(g_split_models[0])));
	tcase_add_test(tc, streamed_experts);
	tcase_add_test(tc, ple_table_in_second_shard);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
