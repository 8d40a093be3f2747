/*
 * check_writer.c - the model writer (tools/model_writer.c, strata-writer):
 * written models have llama.cpp's tensor names, shapes and metadata and
 * exactly strata_quantize()'s bytes, load and run; the same seed gives the
 * same file; the Q4_K_M mix is llama.cpp's; qwen3next models have the
 * layout of ../shared's syn-qwen3next-f32.gguf; broken MoE models written with
 * the GGUF writer are refused at load with one clear error (issue 4's bad
 * input); bad command lines exit 2 with a one-line message.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "cpu/kernels.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "model/model.h"
#include "ple/ple.h"
#include "util/log.h"

/* ---- helpers ---- */

static char g_dir[2048];

/* A fresh directory for this test (tu_tmpdir's buffer is reused by each call). */
static const char *fresh_dir(void)
{
	const char *d = tu_tmpdir();

	ck_assert_ptr_nonnull(d);
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	return g_dir;
}

static void remove_dir(void)
{
	tu_rmtree(g_dir);
}

/* The type of `name` in strata-writer --dry-run output, "" when absent. */
static const char *plan_type(const char *out, const char *name)
{
	static char ty[16];
	size_t n = strlen(name);

	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, name, n) && p[n] == ' ' && sscanf(p + n, "%15s", ty) == 1)
			return ty;
	return "";
}

static const char *writer_bin(void)
{
	static char path[4096];
	char bin[4096];

	snprintf(bin, sizeof(bin), "%s", STRATA_BIN);
	snprintf(path, sizeof(path), "%s/strata-writer", dirname(bin));
	return path;
}

static char g_out[65536];

/* Run strata-writer with args; exit status, output in g_out. */
static int writer(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int writer(const char *fmt, ...)
{
	char args[2048], cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s %s", writer_bin(), args);
	return tu_run(cmd, g_out, sizeof(g_out));
}

static int quantiser_exists(uint32_t type)
{
	return strata_quantize(type, NULL, NULL, 0) == 0; /* a probe: kernels.h */
}

static int n_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static const char *fmt_value(const struct strata_gguf *g, const char *key)
{
	static char buf[512];
	int64_t i = strata_gguf_find_key(g, key);

	ck_assert_msg(i >= 0, "key %s missing", key);
	strata_gguf_format_value(g, i, buf, sizeof(buf));
	return buf;
}

static uint32_t u32_of(const struct strata_gguf *g, const char *key)
{
	uint32_t v = 0;

	ck_assert_msg(strata_gguf_get_u32(g, key, &v) == 0, "key %s", key);
	return v;
}

/* ---- models written by strata-writer ---- */

static const char *const g_arch[] = { "llama", "qwen3moe", "glm4moe", "qwen3next" };

static void write_model(const char *path, const char *arch, const char *extra)
{
	int rc = writer("--arch %s --out %s %s", arch, path, extra);

	ck_assert_msg(rc == 0, "strata-writer failed (%d): %s", rc, g_out);
	ck_assert_ptr_nonnull(strstr(g_out, "wrote"));
}

/* Metadata of a default-shaped model. */
static void check_meta(const struct strata_gguf *g, const char *arch, const char *seed)
{
	int glm = !strcmp(arch, "glm4moe"), q3n = !strcmp(arch, "qwen3next");
	char key[128], name[64];
	struct strata_str s;

	ck_assert_int_eq(strata_gguf_get_str(g, "general.architecture", &s), 0);
	ck_assert(strata_str_eq(s, arch));
	snprintf(name, sizeof(name), "synthetic-%s-s%s", arch, seed);
	ck_assert_int_eq(strata_gguf_get_str(g, "general.name", &s), 0);
	ck_assert(strata_str_eq(s, name));
	ck_assert_uint_eq(u32_of(g, "general.alignment"), 32);
	ck_assert_uint_eq(u32_of(g, "general.quantization_version"), 2);
#define K(s) (snprintf(key, sizeof(key), "%s." s, arch), key)
	ck_assert_uint_eq(u32_of(g, K("embedding_length")), 64);
	ck_assert_uint_eq(u32_of(g, K("block_count")), glm ? 4 : q3n ? 5 : 3);
	ck_assert_uint_eq(u32_of(g, K("attention.head_count")), 4);
	ck_assert_uint_eq(u32_of(g, K("attention.head_count_kv")), 2);
	ck_assert_uint_eq(u32_of(g, K("attention.key_length")), q3n ? 32 : 16);
	ck_assert_uint_eq(u32_of(g, K("rope.dimension_count")), glm || q3n ? 8 : 16);
	ck_assert_uint_eq(u32_of(g, K("context_length")), 4096);
	ck_assert_str_eq(fmt_value(g, K("rope.freq_base")), "10000");
	ck_assert_str_eq(fmt_value(g, K("attention.layer_norm_rms_epsilon")), "1e-05");
	if (strcmp(arch, "llama")) {
		ck_assert_uint_eq(u32_of(g, K("expert_count")), 8);
		ck_assert_uint_eq(u32_of(g, K("expert_used_count")), 2);
		ck_assert_uint_eq(u32_of(g, K("expert_feed_forward_length")), 32);
	}
	if (q3n) {
		ck_assert_uint_eq(u32_of(g, K("ssm.inner_size")), 64);
		ck_assert_uint_eq(u32_of(g, K("full_attention_interval")), 4);
		ck_assert_uint_eq(u32_of(g, K("nextn_predict_layers")), 1);
	}
	if (glm) {
		ck_assert_uint_eq(u32_of(g, K("leading_dense_block_count")), 1);
		ck_assert_uint_eq(u32_of(g, K("nextn_predict_layers")), 1);
		ck_assert_uint_eq(u32_of(g, K("expert_gating_func")), 2);
		ck_assert_str_eq(fmt_value(g, K("expert_weights_norm")), "true");
	}
#undef K
	ck_assert_int_eq(strata_gguf_get_str(g, "tokenizer.ggml.model", &s), 0);
	ck_assert(strata_str_eq(s, "llama"));
	ck_assert_str_eq(fmt_value(g, "tokenizer.ggml.tokens"),
			 "[\"<unk>\", \"<s>\", \"</s>\", \"<0x00>\", \"<0x01>\", \"<0x02>\", "
			 "... +506 more]");
}

/* Value statistics: weights ~N(0, 1/fan_in), norms near 1. */
static void check_values(const struct strata_gguf *g)
{
	for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
		const float *x = t->data;
		int64_t n = (int64_t)(t->size / 4);
		double sum = 0, sq = 0, mean, sd;
		char name[80];

		snprintf(name, sizeof(name), "%.*s", (int)t->name.len, t->name.s);
		ck_assert_uint_eq(t->type, STRATA_TYPE_F32);
		for (int64_t k = 0; k < n; k++) {
			ck_assert(isfinite(x[k]));
			sum += x[k];
			sq += (double)x[k] * x[k];
		}
		mean = sum / n;
		sd = sqrt(sq / n - mean * mean);
		if (strstr(name, "norm.weight")) {
			ck_assert_msg(fabs(mean - 1) < 0.1 && sd > 0.03 && sd < 0.2, "%s", name);
		} else if (!strstr(name, ".bias") && n >= 2048) {
			double want = 1 / sqrt((double)t->ne[0]);

			ck_assert_msg(fabs(mean) < 0.1 * want && fabs(sd / want - 1) < 0.1,
				      "%s: mean %g sd %g, want sd %g", name, mean, sd, want);
		}
	}
}

/* Same names, types and shapes, in the same order. */
static void same_table(const struct strata_gguf *a, const struct strata_gguf *b)
{
	ck_assert_int_eq(strata_gguf_n_tensors(a), strata_gguf_n_tensors(b));
	for (int64_t i = 0; i < strata_gguf_n_tensors(a); i++) {
		const struct strata_gguf_tensor *x = strata_gguf_tensor(a, i);
		const struct strata_gguf_tensor *y = strata_gguf_tensor(b, i);

		ck_assert(x->name.len == y->name.len && !memcmp(x->name.s, y->name.s, x->name.len));
		ck_assert_uint_eq(x->type, y->type);
		ck_assert_uint_eq(x->n_dims, y->n_dims);
		for (int d = 0; d < 4; d++)
			ck_assert_int_eq(x->ne[d], y->ne[d]);
	}
}

/* strata_model_load + a few tokens of strata_forward: finite logits. */
static void run_model(const char *path)
{
	const int32_t toks[] = { 1, 10, 100, 300, 511 };
	struct strata_model *m;
	struct strata_seq *s;
	struct strata_pool *pool;
	float *logits;
	int rc = strata_model_load(path, &m);

	ck_assert_msg(rc == 0, "load %s: %d", path, rc);
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	s = tu_seq(m, pool, 64, 8);
	logits = malloc(5 * sizeof(float) * m->hp.n_vocab);
	ck_assert_int_eq(strata_forward(s, toks, 5, logits, 1), 0);
	ck_assert_int_eq(strata_forward(s, toks + 2, 1, logits, 0), 0);
	ck_assert_int_eq(strata_forward(s, toks, 5, logits, 1), 0);
	for (size_t i = 0; i < 5 * (size_t)m->hp.n_vocab; i++)
		ck_assert_msg(isfinite(logits[i]), "%s: logit %zu is %g", path, i, logits[i]);
	ck_assert_uint_eq(strata_seq_pos(s), 11);
	free(logits);
	tu_seq_free(s);
	strata_pool_free(pool);
	strata_model_free(m);
}

/* ours has every key of ref with the same type and value (but general.name), plus two. */
static void same_keys(const struct strata_gguf *ours, const struct strata_gguf *ref)
{
	char key[128], want[512];

	for (int64_t i = 0; i < strata_gguf_n_kv(ref); i++) {
		struct strata_str k = strata_gguf_key(ref, i);
		int64_t j;

		snprintf(key, sizeof(key), "%.*s", (int)k.len, k.s);
		j = strata_gguf_find_key(ours, key);
		ck_assert_msg(j >= 0, "key %s missing", key);
		ck_assert_int_eq(strata_gguf_kv_type(ours, j), strata_gguf_kv_type(ref, i));
		strata_gguf_format_value(ref, i, want, sizeof(want));
		ck_assert_msg(!strcmp(key, "general.name") || !strcmp(fmt_value(ours, key), want),
			      "%s: %s, want %s", key, fmt_value(ours, key), want);
	}
	/* the quantiser's general.file_type and general.quantization_version */
	ck_assert_int_eq(strata_gguf_n_kv(ours), strata_gguf_n_kv(ref) + 2);
}

static void expect_tensor(const struct strata_gguf *g, const char *name, uint32_t n_dims,
			  int64_t ne0, int64_t ne1)
{
	const struct strata_gguf_tensor *t = strata_gguf_find_tensor(g, name);

	ck_assert_msg(t && t->n_dims == n_dims && t->ne[0] == ne0 && t->ne[1] == ne1 &&
		      t->type == STRATA_TYPE_F32, "%s: missing or not %u-D F32 [%lld, %lld]",
		      name, n_dims, (long long)ne0, (long long)ne1);
}

/*
 * A default qwen3next (the syn file's shape): DeltaNet layers 0-2, full
 * attention on layer 3 ((il+1) % 4 == 0) and on the nextn layer 4, and a
 * sane DeltaNet: its decay exp(ssm_a * softplus(.)) is in (0, 1) for ssm_a < 0.
 */
static void check_qwen3next(const struct strata_gguf *g)
{
	char name[80];

	for (int i = 0; i < 5; i++) {
		int full = i >= 3;

		snprintf(name, sizeof(name), "blk.%d.attn_q.weight", i);
		ck_assert_int_eq(strata_gguf_find_tensor(g, name) != NULL, full);
		if (full) /* 4 heads of 32: the query and its output gate */
			expect_tensor(g, name, 2, 64, 2 * 4 * 32);
		snprintf(name, sizeof(name), "blk.%d.attn_qkv.weight", i);
		ck_assert_int_eq(strata_gguf_find_tensor(g, name) != NULL, !full);
		if (full)
			continue;
		expect_tensor(g, name, 2, 64, 2 * 2 * 16 + 64); /* q, k: 2 k heads of 16; v */
		snprintf(name, sizeof(name), "blk.%d.ssm_conv1d.weight", i);
		expect_tensor(g, name, 2, 4, 128);
		snprintf(name, sizeof(name), "blk.%d.ssm_ba.weight", i);
		expect_tensor(g, name, 2, 64, 2 * 4);
		snprintf(name, sizeof(name), "blk.%d.ssm_norm.weight", i);
		expect_tensor(g, name, 1, 16, 1);
	}
	expect_tensor(g, "blk.0.ffn_gate_inp_shexp.weight", 1, 64, 1);
	expect_tensor(g, "blk.4.nextn.eh_proj.weight", 2, 128, 64);
	for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
		int a = memmem(t->name.s, t->name.len, "ssm_a", 5) != NULL;
		int dt = memmem(t->name.s, t->name.len, "ssm_dt", 6) != NULL;

		for (int64_t k = 0; (a || dt) && k < t->ne[0]; k++) {
			float x = ((const float *)t->data)[k];

			ck_assert_msg(a ? x < -0.02f && x > -1.2f : fabsf(x) < 0.3f, "%.*s[%lld] = %g",
				      (int)t->name.len, t->name.s, (long long)k, x);
		}
	}
}

START_TEST(test_model_f32)
{
	static const int n_tensors[] = { 30, 39, 70, 93 };
	const char *arch = g_arch[_i];
	char path[4096], ref[128];
	const char *shared;
	struct strata_gguf *g, *r;

	snprintf(path, sizeof(path), "%s/%s.gguf", fresh_dir(), arch);
	write_model(path, arch, "--seed 5");
	ck_assert_int_eq(strata_gguf_open(path, &g), 0);
	check_meta(g, arch, "5");
	ck_assert_uint_eq(u32_of(g, "general.file_type"), 0);
	check_values(g);
	ck_assert_int_eq(strata_gguf_n_tensors(g), n_tensors[_i]);
	if (!strcmp(arch, "qwen3next"))
		check_qwen3next(g);
	/* Our default shape is that of ../shared's llama.cpp-checked syn models. */
	snprintf(ref, sizeof(ref), "models/syn-%s-f32.gguf", arch);
	if ((shared = tu_shared(ref))) {
		ck_assert_int_eq(strata_gguf_open(shared, &r), 0);
		/* (syn-glm4moe rotates whole heads; we rotate half, as GLM-4.5 does) */
		if (strcmp(arch, "glm4moe"))
			same_keys(g, r);
		same_table(g, r);
		strata_gguf_close(r);
	} else {
		printf("note: ../shared/%s absent, tensor table checked by count only\n", ref);
	}
	strata_gguf_close(g);
	run_model(path);
	remove_dir();
}
END_TEST

/* Under TSan type k is written on g_arch[k % 4]: the i-quants are ordered so
 * that the dearest to quantise (IQ1_M) gets the smallest model (llama) and
 * the cheapest (IQ2_XS) the largest (qwen3next). */
static const uint32_t g_qtypes[] = {
	STRATA_TYPE_F16, STRATA_TYPE_BF16, STRATA_TYPE_Q8_0, STRATA_TYPE_Q4_0, STRATA_TYPE_Q4_1,
	STRATA_TYPE_Q5_0, STRATA_TYPE_Q5_1, STRATA_TYPE_IQ4_NL, STRATA_TYPE_Q2_K,
	STRATA_TYPE_Q3_K, STRATA_TYPE_Q4_K, STRATA_TYPE_Q5_K, STRATA_TYPE_Q6_K,
	STRATA_TYPE_IQ3_XXS, STRATA_TYPE_IQ3_S, STRATA_TYPE_IQ2_XS, STRATA_TYPE_IQ1_M,
	STRATA_TYPE_IQ2_S,
};
#define N_QTYPES ((int)(sizeof(g_qtypes) / sizeof(g_qtypes[0])))
/* The rest of the writer's --type names. */
static const uint32_t g_unquantised[] = { STRATA_TYPE_IQ2_XXS, STRATA_TYPE_IQ1_S,
					  STRATA_TYPE_IQ4_XS };

/* Every matrix holds exactly strata_quantize() of the F32 model's rows. */
static void check_quantised(const struct strata_gguf *f, const struct strata_gguf *q,
			    uint32_t type)
{
	uint8_t *row = malloc(1 << 16);

	ck_assert_int_eq(strata_gguf_n_tensors(q), strata_gguf_n_tensors(f));
	for (int64_t i = 0; i < strata_gguf_n_tensors(f); i++) {
		const struct strata_gguf_tensor *a = strata_gguf_tensor(f, i);
		const struct strata_gguf_tensor *b = strata_gguf_tensor(q, i);
		int matrix = a->n_dims > 1 && !memmem(a->name.s, a->name.len, "gate_inp", 8) &&
			     !memmem(a->name.s, a->name.len, "ssm_conv1d", 10);
		size_t rb = strata_type_row_bytes(b->type, a->ne[0]);

		ck_assert(a->name.len == b->name.len && !memcmp(a->name.s, b->name.s, a->name.len));
		ck_assert_uint_eq(a->n_dims, b->n_dims);
		for (int d = 0; d < 4; d++)
			ck_assert_int_eq(a->ne[d], b->ne[d]);

		ck_assert_uint_eq(b->type, matrix ? type : STRATA_TYPE_F32);
		for (int64_t r = 0; r < a->ne[1] * a->ne[2]; r++) {
			const float *x = (const float *)a->data + r * a->ne[0];

			/* This loop runs on one thread: TSan checks 1 row in 8 of it. */
			if (!tu_tsan_pick((size_t)r, 8, 0))
				continue;

			if (type == STRATA_TYPE_F16 && matrix)
				for (int64_t k = 0; k < a->ne[0]; k++)
					((uint16_t *)row)[k] = strata_f32_to_fp16(x[k]);
			else if (type == STRATA_TYPE_BF16 && matrix)
				for (int64_t k = 0; k < a->ne[0]; k++)
					((uint16_t *)row)[k] = strata_f32_to_bf16(x[k]);
			else if (matrix)
				ck_assert_int_eq(strata_quantize(type, x, row, a->ne[0]), (int64_t)rb);
			else
				memcpy(row, x, rb);
			ck_assert_msg(!memcmp(row, (const uint8_t *)b->data + r * rb, rb),
				      "%.*s row %lld", (int)a->name.len, a->name.s, (long long)r);
		}
	}
	free(row);
}

START_TEST(test_model_types)
{
	/* 256-wide, so that every matrix row is whole blocks of every type. */
	const char *extra = _i == 0 ? "--seed 9 --n-embd 256 --n-ff 256"
				    : "--seed 9 --n-embd 256 --n-ff 256 --n-ff-exp 256 --n-expert 4";
	const char *arch = g_arch[_i];
	char f32[4096], path[4096];
	struct strata_gguf *f, *q;
	int tested = 0;

	snprintf(f32, sizeof(f32), "%s/f32.gguf", fresh_dir());
	write_model(f32, arch, extra);
	ck_assert_int_eq(strata_gguf_open(f32, &f), 0);
	for (size_t k = 0; k < (size_t)N_QTYPES; k++) {
		uint32_t t = g_qtypes[k];
		char args[640];

		ck_assert_msg(quantiser_exists(t), "strata_quantize has no %s quantiser",
			      strata_type_name(t));
		/* TSan: each type on one architecture (the writer's threads and the
		 * forward pass's are the same for every type) */
		if (!tu_tsan_pick(k, 4, (size_t)_i))
			continue;
		ck_assert_msg(quantiser_exists(t) && strata_type_supported(t), "%s",
			      strata_type_name(t));
		snprintf(path, sizeof(path), "%s/%s.gguf", g_dir, strata_type_name(t));
		snprintf(args, sizeof(args), "%s --type %s", extra, strata_type_name(t));
		write_model(path, arch, args);
		ck_assert_int_eq(strata_gguf_open(path, &q), 0);
		check_quantised(f, q, t);
		strata_gguf_close(q);
		run_model(path);
		tested++;
	}
	strata_gguf_close(f);
	/* every type, or under TSan those of k % 4 == _i: none skipped */
	ck_assert_int_eq(tested, tu_tsan() ? (N_QTYPES + 3 - _i) / 4 : N_QTYPES);
	remove_dir();
}
END_TEST

static void *read_all(const char *path, size_t *n)
{
	void *p = tu_read_file(path, n);

	ck_assert_ptr_nonnull(p);
	return p;
}

START_TEST(test_deterministic)
{
	const char *dir = fresh_dir();
	char a[4096], b[4096], c[4096];
	size_t na, nb, nc;
	void *pa, *pb, *pc;

	snprintf(a, sizeof(a), "%s/a.gguf", dir);
	snprintf(b, sizeof(b), "%s/b.gguf", dir);
	snprintf(c, sizeof(c), "%s/c.gguf", dir);
	write_model(a, "glm4moe", "--seed 3 --type Q8_0 --threads 1");
	write_model(b, "glm4moe", "--seed 3 --type Q8_0 --threads 2");
	write_model(c, "glm4moe", "--seed 4 --type Q8_0 --name synthetic-glm4moe-s3");
	pa = read_all(a, &na);
	pb = read_all(b, &nb);
	pc = read_all(c, &nc);
	ck_assert(na == nb && memcmp(pa, pb, na) == 0);
	ck_assert_uint_eq(na, nc); /* same name, same shape: only the weights differ */
	ck_assert(memcmp(pa, pc, na) != 0);
	free(pa);
	free(pb);
	free(pc);
	remove_dir();
}
END_TEST

/* The Q4_K_M mix, from --dry-run (it needs no quantiser). */
START_TEST(test_q4_k_m_mix)
{
	const char *ref = tu_shared("models/syn-qwen3moe-d256-q4_k_m.gguf");
	int more[16] = { 0 };
	struct strata_gguf *g;

	/* perf/PEERS.md's bench model: use_more_bits picks layers 0,1,4,7,10,13,14,15. */
	ck_assert_int_eq(writer("--preset bench-qwen3moe --type Q4_K_M --dry-run"), 0);
	for (int i = 0; i < 16; i++) {
		char name[96];
		const char *ty;

		snprintf(name, sizeof(name), "blk.%d.ffn_down_exps.weight", i);
		ty = plan_type(g_out, name);
		ck_assert(!strcmp(ty, "Q6_K") || !strcmp(ty, "Q4_K"));
		more[i] = !strcmp(ty, "Q6_K");
		snprintf(name, sizeof(name), "blk.%d.attn_v.weight", i);
		ck_assert_str_eq(plan_type(g_out, name), more[i] ? "Q6_K" : "Q4_K");
		snprintf(name, sizeof(name), "blk.%d.ffn_up_exps.weight", i);
		ck_assert_str_eq(plan_type(g_out, name), "Q4_K");
		snprintf(name, sizeof(name), "blk.%d.ffn_gate_inp.weight", i);
		ck_assert_str_eq(plan_type(g_out, name), "F32");
	}
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(more[i], i < 2 || i >= 14 || (i - 2) % 3 == 2);
	ck_assert_str_eq(plan_type(g_out, "output.weight"), "Q6_K");
	ck_assert_str_eq(plan_type(g_out, "token_embd.weight"), "Q4_K");
	ck_assert_str_eq(plan_type(g_out, "output_norm.weight"), "F32");
	ck_assert_ptr_nonnull(strstr(g_out, "total: qwen3moe Q4_K_M, 195 tensors, 1719176192 "
					    "parameters"));
	if (!ref) {
		printf("note: ../shared q4_k_m model absent: mix checked on the bench shape only\n");
		return;
	}
	/* llama.cpp's own Q4_K_M of the d256 shape (8 experts: its Q8_0/Q5_K rules). */
	ck_assert_int_eq(writer("--arch qwen3moe --n-embd 256 --n-layer 2 --n-ff 128 "
				"--n-ff-exp 256 --type Q4_K_M --dry-run"), 0);
	ck_assert_int_eq(strata_gguf_open(ref, &g), 0);
	for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
		char name[80];

		snprintf(name, sizeof(name), "%.*s", (int)t->name.len, t->name.s);
		ck_assert_str_eq(plan_type(g_out, name), strata_type_name(t->type));
	}
	strata_gguf_close(g);
}
END_TEST

/*
 * bench-qwen3next's Q4_K_M: llama.cpp's attn_v rule also for the DeltaNet
 * layers' attn_qkv (one of the two per layer), its ffn_down rule also for the
 * shared expert; ssm_conv1d, ssm_a, ssm_dt and the gates' vectors stay F32.
 */
START_TEST(test_q4_k_m_qwen3next)
{
	ck_assert_int_eq(writer("--preset bench-qwen3next --type Q4_K_M --dry-run"), 0);
	for (int i = 0; i < 17; i++) {
		/* 16 layers + nextn: use_more_bits picks 0, 1, 4, 7, 10, 13, 14, 15, 16. */
		int more = i < 2 || i >= 14 || (i - 2) % 3 == 2, full = i == 16 || i % 4 == 3;
		static const char *const q4[] = { "ffn_up_exps", "ffn_gate_shexp", "attn_gate",
						  "ssm_ba", "ssm_out", "attn_q", "attn_k",
						  "attn_output" };
		static const char *const f32[] = { "ffn_gate_inp", "ffn_gate_inp_shexp",
						   "ssm_conv1d", "ssm_norm" };
		char name[96];

		snprintf(name, sizeof(name), "blk.%d.%s.weight", i, full ? "attn_v" : "attn_qkv");
		ck_assert_str_eq(plan_type(g_out, name), more ? "Q6_K" : "Q4_K");
		snprintf(name, sizeof(name), "blk.%d.ffn_down_exps.weight", i);
		ck_assert_str_eq(plan_type(g_out, name), more ? "Q6_K" : "Q4_K");
		snprintf(name, sizeof(name), "blk.%d.ffn_down_shexp.weight", i);
		ck_assert_str_eq(plan_type(g_out, name), more ? "Q6_K" : "Q4_K");
		for (size_t k = 0; k < sizeof(q4) / sizeof(q4[0]); k++) {
			snprintf(name, sizeof(name), "blk.%d.%s.weight", i, q4[k]);
			ck_assert_str_eq(plan_type(g_out, name), k < 2 || full == (k >= 5) ? "Q4_K"
												 : "");
		}
		for (size_t k = 0; k < sizeof(f32) / sizeof(f32[0]); k++) {
			snprintf(name, sizeof(name), "blk.%d.%s.weight", i, f32[k]);
			ck_assert_str_eq(plan_type(g_out, name), k < 2 || !full ? "F32" : "");
		}
		snprintf(name, sizeof(name), "blk.%d.ssm_a", i);
		ck_assert_str_eq(plan_type(g_out, name), full ? "" : "F32");
	}
	ck_assert_str_eq(plan_type(g_out, "output.weight"), "Q6_K");
	ck_assert_str_eq(plan_type(g_out, "token_embd.weight"), "Q4_K");
	ck_assert_str_eq(plan_type(g_out, "blk.16.nextn.eh_proj.weight"), "Q4_K");
	/*
	 * 3 global + 12 DeltaNet layers of 18 + 5 attention layers of 16 + 4 nextn
	 * tensors; parameters: 2 x 32000 x 1024 + 1024, per layer 102304768 for the
	 * norms and experts, 8437920 per DeltaNet, 3670144 per attention, 2100224 nextn.
	 */
	ck_assert_ptr_nonnull(strstr(g_out, "total: qwen3next Q4_K_M, 303 tensors, 1926424064 "
					    "parameters"));
}
END_TEST

/* ---- qwen4exp and shards ---- */

/* The tensors of a and b: the same names, types, shapes and bytes (in any order). */
static void same_tensors(const struct strata_gguf *a, const struct strata_gguf *b)
{
	ck_assert_int_eq(strata_gguf_n_tensors(a), strata_gguf_n_tensors(b));
	for (int64_t i = 0; i < strata_gguf_n_tensors(a); i++) {
		const struct strata_gguf_tensor *x = strata_gguf_tensor(a, i), *y;
		char name[80];

		snprintf(name, sizeof(name), "%.*s", (int)x->name.len, x->name.s);
		y = strata_gguf_find_tensor(b, name);
		ck_assert_msg(y && y->type == x->type && y->n_dims == x->n_dims &&
			      !memcmp(y->ne, x->ne, sizeof(x->ne)) && x->size == y->size &&
			      !memcmp(x->data, y->data, x->size), "%s", name);
	}
}

/*
 * --preset syn-qwen4exp is ../shared's syn-qwen4exp-f32.gguf (whose goldens
 * llama.cpp's qwen4exp graph wrote) but for the seeded values: every key
 * and value, every tensor's name, type, shape and offset.  --split-ple puts
 * the PLE table alone in a second shard with llama.cpp's split keys, the
 * same tensors and bytes as the one file, and the PLE reader's table there.
 */
START_TEST(test_qwen4exp_presets)
{
	char one[4096], split[4096], s1[4096], s2[4096];
	const char *shared = tu_shared("models/syn-qwen4exp-f32.gguf");
	struct strata_gguf *g, *h, *r, *s;
	struct strata_ple_table t;
	uint32_t v;

	fresh_dir();
	snprintf(one, sizeof(one), "%s/q4.gguf", g_dir);
	snprintf(split, sizeof(split), "%s/q4s.gguf", g_dir);
	snprintf(s1, sizeof(s1), "%s/q4s-00001-of-00002.gguf", g_dir);
	snprintf(s2, sizeof(s2), "%s/q4s-00002-of-00002.gguf", g_dir);
	ck_assert_int_eq(writer("--preset syn-qwen4exp --out %s", one), 0);
	ck_assert_int_eq(writer("--arch qwen4exp --split-ple --out %s", split), 0);
	ck_assert_ptr_nonnull(strstr(g_out, "shard 2 of 2"));
	ck_assert_int_eq(strata_gguf_open(one, &g), 0);
	check_values(g);
	ck_assert_int_eq(strata_gguf_n_files(g), 1);
	if (shared) {
		ck_assert_int_eq(strata_gguf_open(shared, &r), 0);
		same_keys(g, r);
		same_table(g, r);
		for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++)
			ck_assert_uint_eq(strata_gguf_tensor(g, i)->offset,
					  strata_gguf_tensor(r, i)->offset);
		strata_gguf_close(r);
	} else {
		printf("note: ../shared/models/syn-qwen4exp-f32.gguf absent, its layout unchecked\n");
		ck_assert_int_eq(strata_gguf_n_tensors(g), 113);
	}
	/* the shards, opened from either */
	ck_assert_int_eq(strata_gguf_open(s2, &h), 0);
	ck_assert_int_eq(strata_gguf_n_files(h), 2);
	same_tensors(g, h);
	ck_assert_int_eq(strata_gguf_n_kv(h), strata_gguf_n_kv(g) + 3);
	ck_assert_int_eq(strata_ple_table_from_gguf(h, &t), 0);
	ck_assert_str_eq(t.path, s2);
	ck_assert_uint_eq(t.n_rows, 1152);
	strata_gguf_close(h);
	/* each shard alone: the keys gguf-split writes, the table alone in the second */
	ck_assert_int_eq(strata_gguf_open_one(s1, &h), 0);
	ck_assert_int_eq(strata_gguf_open_one(s2, &s), 0);
	ck_assert_int_eq(strata_gguf_n_tensors(h), strata_gguf_n_tensors(g) - 1);
	ck_assert_int_eq(strata_gguf_n_tensors(s), 1);
	ck_assert(strata_str_eq(strata_gguf_tensor(s, 0)->name, "per_layer_token_embd.weight"));
	ck_assert_int_eq(strata_gguf_kv_type(s, strata_gguf_find_key(s, "split.no")),
			 STRATA_GGUF_U16);
	ck_assert_int_eq(strata_gguf_kv_type(s, strata_gguf_find_key(s, "split.count")),
			 STRATA_GGUF_U16);
	ck_assert_int_eq(strata_gguf_kv_type(s, strata_gguf_find_key(s, "split.tensors.count")),
			 STRATA_GGUF_I32);
	ck_assert_uint_eq(u32_of(h, "split.no"), 0);
	ck_assert_uint_eq(u32_of(s, "split.no"), 1);
	ck_assert_uint_eq(u32_of(s, "split.count"), 2);
	ck_assert_uint_eq(u32_of(s, "split.tensors.count"), 113);
	ck_assert_int_lt(strata_gguf_find_key(s, "general.architecture"), 0);
	ck_assert_int_eq(strata_gguf_get_u32(h, "qwen4exp.block_count", &v), 0);
	strata_gguf_close(s);
	strata_gguf_close(h);
	strata_gguf_close(g);
	/* bench-qwen4exp's plan: a PLE table over 4 GiB, in Q8_0, alone in shard 2 */
	if (!tu_shared("vocab/ggml-vocab-llama-spm.gguf")) {
		remove_dir();
		TU_SKIP("../shared/vocab/ggml-vocab-llama-spm.gguf is absent: bench-qwen4exp unchecked");
	}
	ck_assert_int_eq(writer("--preset bench-qwen4exp --vocab %s --type Q4_0 --dry-run",
				tu_shared("vocab/ggml-vocab-llama-spm.gguf")), 0);
	ck_assert_str_eq(plan_type(g_out, "per_layer_token_embd.weight"), "Q8_0");
	ck_assert_ptr_nonnull(strstr(g_out, "64 x 67110784"));
	ck_assert_ptr_nonnull(strstr(g_out, "4563533312"));
	ck_assert_ptr_nonnull(strstr(g_out, "shards: 2 (the PLE table alone in the last)"));
	ck_assert_str_eq(plan_type(g_out, "blk.0.hc_attn_down.weight"), "F32");
	ck_assert_str_eq(plan_type(g_out, "blk.3.indexer.q_proj.weight"), "Q4_0");
	remove_dir();
}
END_TEST

/* Sum of tensor bytes (padded to 32) in shard file `path`, and its tensor count. */
static uint64_t shard_bytes(const char *path, int64_t *n)
{
	struct strata_gguf *g;
	uint64_t sum = 0;

	ck_assert_int_eq(strata_gguf_open_one(path, &g), 0);
	*n = strata_gguf_n_tensors(g);
	for (int64_t i = 0; i < *n; i++)
		sum += (strata_gguf_tensor(g, i)->size + 31) / 32 * 32;
	strata_gguf_close(g);
	return sum;
}

/*
 * A model written in shards (--split-max-tensors, --split-max-size)
 * computes exactly what the same model in one file computes (the same seed:
 * the same bytes); the shards keep the limits.
 */
START_TEST(test_split_same_logits)
{
	const int32_t toks[] = { 1, 10, 100, 300, 511, 7 };
	char one[4096], split[4096], first[4096];
	struct strata_model *a, *b;
	struct strata_pool *pool;
	struct strata_seq *sa, *sb;
	float *la, *lb;
	size_t nv;
	int by_size = _i;

	fresh_dir();
	snprintf(one, sizeof(one), "%s/m.gguf", g_dir);
	snprintf(split, sizeof(split), "%s/m-split", g_dir);
	write_model(one, "qwen3moe", "--type Q8_0 --n-embd 64");
	if (by_size) { /* at most 40 kB of tensor data a shard: token_embd is 34 KiB */
		write_model(split, "qwen3moe", "--type Q8_0 --n-embd 64 --split-max-size 40K");
		ck_assert_int_gt(n_entries(g_dir), 3);
		for (int k = 0; k < n_entries(g_dir) - 1; k++) {
			int64_t nt;
			uint64_t sz;

			snprintf(first, sizeof(first), "%s/m-split-%05d-of-%05d.gguf", g_dir, k + 1,
				 n_entries(g_dir) - 1);
			sz = shard_bytes(first, &nt);
			ck_assert_msg(sz <= 40000 || nt == 1, "%s: %llu bytes in %lld tensors", first,
				      (unsigned long long)sz, (long long)nt);
		}
		snprintf(first, sizeof(first), "%s/m-split-00001-of-%05d.gguf", g_dir,
			 n_entries(g_dir) - 1);
	} else {
		write_model(split, "qwen3moe", "--type Q8_0 --n-embd 64 --split-max-tensors 15");
		ck_assert_int_eq(n_entries(g_dir), 4); /* 39 tensors: 15 + 15 + 9 */
		snprintf(first, sizeof(first), "%s/m-split-00001-of-00003.gguf", g_dir);
	}
	ck_assert_int_eq(strata_model_load(one, &a), 0);
	ck_assert_int_eq(strata_model_load(first, &b), 0);
	ck_assert_int_eq(strata_gguf_n_files(b->gguf), by_size ? n_entries(g_dir) - 1 : 3);
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	nv = a->hp.n_vocab;
	la = malloc(6 * nv * sizeof(float));
	lb = malloc(6 * nv * sizeof(float));
	sa = tu_seq(a, pool, 64, 8);
	sb = tu_seq(b, pool, 64, 8);
	ck_assert_int_eq(strata_forward(sa, toks, 6, la, 1), 0);
	ck_assert_int_eq(strata_forward(sb, toks, 6, lb, 1), 0);
	ck_assert_mem_eq(la, lb, 6 * nv * sizeof(float));
	ck_assert_int_eq(strata_forward(sa, toks + 2, 1, la, 0), 0);
	ck_assert_int_eq(strata_forward(sb, toks + 2, 1, lb, 0), 0);
	ck_assert_mem_eq(la, lb, nv * sizeof(float));
	tu_seq_free(sa);
	tu_seq_free(sb);
	free(la);
	free(lb);
	strata_pool_free(pool);
	strata_model_free(a);
	strata_model_free(b);
	remove_dir();
}
END_TEST

/*
 * llama.cpp itself loads and runs what we write: llama-bench of the peer
 * that tools/peer/build.sh builds into build/peer (ctest check_writer.peer,
 * skipped where it is not built).
 */
START_TEST(test_llama_cpp_loads)
{
	static const struct { const char *arch, *args; } cases[] = {
		{ "llama", "--type F16" },
		{ "qwen3moe", "--type Q8_0" },
		{ "glm4moe", "--type Q8_0" },
		{ "qwen3moe", "--n-embd 256 --n-ff-exp 256 --n-expert 4 --type Q4_K_M" },
		{ "qwen3next", "--type Q8_0" },
		{ "qwen3next", "--n-embd 256 --n-ff-exp 256 --n-expert 4 --type Q4_K_M" },
		/* the shipped packs' i-quants, from strata's own quantiser */
		{ "qwen3moe", "--n-embd 256 --n-ff-exp 256 --n-expert 4 --type IQ2_XS" },
		{ "qwen3moe", "--n-embd 256 --n-ff-exp 256 --n-expert 4 --type IQ1_M" },
		/* qwen4exp, the tiny preset's shape: one file, the PLE table in a shard, split by count */
		{ "qwen4exp", "" },
		{ "qwen4exp", "--split-ple" },
		{ "qwen4exp", "--split-max-tensors 40 --split-ple" },
		{ "qwen3moe", "--type Q8_0 --split-max-tensors 16" },
	};
	char peer[4096], path[4096], cmd[8400];

	snprintf(peer, sizeof(peer), "%s/peer/bin/llama-bench", STRATA_BUILD);
	if (access(peer, X_OK) != 0)
		TU_SKIP("%s is not built (tools/peer/build.sh builds it)", peer);
	fresh_dir();
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		snprintf(path, sizeof(path), "%s/m%zu.gguf", g_dir, k);
		write_model(path, cases[k].arch, cases[k].args);
		if (strstr(cases[k].args, "--split")) /* llama.cpp is given the first shard */
			snprintf(path, sizeof(path), "%s/m%zu-00001-of-%05d.gguf", g_dir, k,
				 strstr(cases[k].args, "max-tensors 40") ? 4
				 : strstr(cases[k].args, "max-tensors") ? 3 : 2);
		snprintf(cmd, sizeof(cmd), "'%s' -m '%s' -t 1 -p 4 -n 2 -r 1", peer, path);
		ck_assert_msg(tu_run(cmd, g_out, sizeof(g_out)) == 0 && strstr(g_out, " tg2 "),
			      "llama.cpp refused %s %s: %s", cases[k].arch, cases[k].args, g_out);
	}
	remove_dir();
}
END_TEST

/* ---- bad input at load (issue 4) ---- */

struct mutation {
	const char *key;       /* set this u32 key ... */
	uint32_t value;        /* ... to this */
	const char *tensor;    /* redeclare this tensor ... */
	uint32_t type, n_dims; /* ... as type and shape, with its bytes cut or padded */
	int64_t ne[4];
};

/* Copy model src to dst through the writer, broken as m says. */
static void rewrite(const char *src, const char *dst, const struct mutation *m)
{
	struct strata_gguf_writer *w;
	struct strata_gguf *g;

	ck_assert_int_eq(strata_gguf_open(src, &g), 0);
	ck_assert_int_eq(strata_gguf_writer_open(dst, &w), 0);
	for (int64_t i = 0; i < strata_gguf_n_kv(g); i++)
		ck_assert_int_eq(strata_gguf_writer_copy_kv(w, g, i), 0);
	if (m->key)
		ck_assert_int_eq(strata_gguf_writer_set_u32(w, m->key, m->value), 0);
	for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
		char name[80];

		snprintf(name, sizeof(name), "%.*s", (int)t->name.len, t->name.s);
		if (m->tensor && !strcmp(name, m->tensor))
			ck_assert_int_ge(strata_gguf_writer_add_tensor_raw(w, name, m->type,
						m->n_dims, m->ne, t->size / 2), 0);
		else
			ck_assert_int_ge(strata_gguf_writer_add_tensor(w, name, t->type,
						t->n_dims, t->ne), 0);
	}
	for (int64_t i = 0; i < strata_gguf_n_tensors(g); i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
		int cut = m->tensor && strata_str_eq(t->name, m->tensor);

		ck_assert_int_eq(strata_gguf_writer_write(w, t->data, cut ? t->size / 2 : t->size),
				 0);
	}
	ck_assert_int_eq(strata_gguf_writer_commit(w), 0);
	strata_gguf_writer_close(w);
	strata_gguf_close(g);
}

/* strata_model_load refuses dst with rc and exactly one error containing `what`. */
static void refused(const char *path, int rc, const char *what, const char *what2)
{
	struct strata_model *m = NULL;
	int got;

	tu_log_capture();
	got = strata_model_load(path, &m);
	tu_log_release();
	ck_assert_ptr_null(m);
	ck_assert_msg(got == rc, "load returned %d, expected %d: %s", got, rc, tu_log);
	ck_assert_msg(tu_log_lines == 1, "%d error lines: %s", tu_log_lines, tu_log);
	ck_assert_msg(strstr(tu_log, what) && strstr(tu_log, what2) && strstr(tu_log, path),
		      "message lacks '%s'/'%s': %s", what, what2, tu_log);
}

START_TEST(test_bad_moe)
{
	const char *arch = g_arch[1 + _i]; /* qwen3moe, glm4moe */
	char good[4096], bad[4096], key[96];
	struct mutation m;

	snprintf(good, sizeof(good), "%s/good.gguf", fresh_dir());
	snprintf(bad, sizeof(bad), "%s/bad.gguf", g_dir);
	write_model(good, arch, "");

	/* An expert tensor with 4 experts where the metadata says 8. */
	m = (struct mutation){ .tensor = "blk.1.ffn_up_exps.weight", .type = STRATA_TYPE_F32,
			       .n_dims = 3, .ne = { 64, 32, 4, 1 } };
	rewrite(good, bad, &m);
	refused(bad, -EINVAL, "'blk.1.ffn_up_exps.weight' has shape [64, 32, 4, 1]",
		"expected [64, 32, 8]");

	/* Metadata whose expert width disagrees with every expert tensor. */
	snprintf(key, sizeof(key), "%s.expert_feed_forward_length", arch);
	m = (struct mutation){ .key = key, .value = 48 };
	rewrite(good, bad, &m);
	refused(bad, -EINVAL, "ffn_gate_exps.weight' has shape [64, 32, 8, 1]",
		"expected [64, 48, 8]");

	/* More experts per token than there are experts. */
	snprintf(key, sizeof(key), "%s.expert_used_count", arch);
	m = (struct mutation){ .key = key, .value = 9 };
	rewrite(good, bad, &m);
	refused(bad, -EINVAL, "expert_used_count 9 exceeds expert_count 8", "");

	/* A K-quant on expert rows of 32 values: not whole 256-blocks. */
	m = (struct mutation){ .tensor = "blk.1.ffn_down_exps.weight", .type = STRATA_TYPE_Q4_K,
			       .n_dims = 3, .ne = { 32, 64, 8, 1 } };
	rewrite(good, bad, &m);
	refused(bad, -EINVAL, "tensor 'blk.1.ffn_down_exps.weight'",
		"row length 32, not a multiple of the Q4_K block size 256");

	/* A Q8_0 embedding with rows of 48 values (1.5 blocks). */
	m = (struct mutation){ .tensor = "token_embd.weight", .type = STRATA_TYPE_Q8_0,
			       .n_dims = 2, .ne = { 48, 512, 1, 1 } };
	rewrite(good, bad, &m);
	refused(bad, -EINVAL, "tensor 'token_embd.weight'",
		"row length 48, not a multiple of the Q8_0 block size 32");
	remove_dir();
}
END_TEST

/* ---- command-line errors ---- */

START_TEST(test_cli_errors)
{
	const char *dir = fresh_dir();
	static const struct { const char *args, *msg; } cases[] = {
		{ "--arch qwen3moe --out /nonexistent-strata-dir/m.gguf",
		  "cannot write /nonexistent-strata-dir/m.gguf: No such file" },
		{ "--arch qwen3moe --out @DIR", "Is a directory" },
		{ "--arch qwen3moe --n-embd abc --out @OUT", "--n-embd: 'abc' is not an integer" },
		{ "--arch qwen3moe --n-embd 0 --out @OUT", "--n-embd: '0' is not an integer" },
		{ "--arch qwen3moe --n-layer 12x --out @OUT", "--n-layer: '12x'" },
		{ "--arch qwen3moe --seed -1 --out @OUT", "--seed: '-1'" },
		{ "--arch qwen3moe --rope-base -5 --out @OUT", "--rope-base: '-5'" },
		{ "--arch qwen3moe --n-expert 8 --n-expert-used 9 --out @OUT",
		  "--n-expert-used 9 exceeds --n-expert 8" },
		{ "--arch qwen3moe --type Q9_9 --out @OUT", "--type: 'Q9_9' is not a weight type" },
		{ "--arch qwen3moe --type Q8_K --out @OUT", "--type: 'Q8_K' is not a weight type" },
		{ "--arch gpt5 --out @OUT", "unknown architecture 'gpt5'" },
		{ "--out @OUT",
		  "--arch llama|qwen3moe|glm4moe|qwen3next|qwen4exp (or --preset) is required" },
		{ "--arch llama", "--out FILE is required" },
		{ "--arch llama --bogus --out @OUT", "unknown option" },
		{ "--arch llama --n-expert 4 --out @OUT",
		  "--n-expert applies to qwen3moe, glm4moe, qwen3next and qwen4exp, not llama" },
		{ "--arch qwen3moe --nextn 1 --out @OUT",
		  "--nextn applies to glm4moe and qwen3next, not qwen3moe" },
		{ "--arch glm4moe --n-layer 3 --nextn 3 --out @OUT", "leaves no main layer" },
		{ "--arch qwen3next --n-layer 2 --nextn 2 --out @OUT", "leaves no main layer" },
		{ "--arch qwen3moe --ssm-state 8 --out @OUT",
		  "--ssm-state applies to qwen3next and qwen4exp, not qwen3moe" },
		{ "--arch qwen3next --n-shared-exp 1 --out @OUT",
		  "--n-shared-exp applies to glm4moe, not qwen3next" },
		{ "--arch qwen3next --exp-scale 2 --out @OUT",
		  "--exp-scale applies to glm4moe, not qwen3next" },
		{ "--arch qwen3next --attn-interval 0 --out @OUT", "--attn-interval: '0'" },
		{ "--arch qwen3next --ssm-inner 62 --out @OUT",
		  "--ssm-inner 62 is not a multiple of --ssm-dt-rank 4" },
		{ "--arch qwen3next --ssm-inner 128 --out @OUT",
		  "--ssm-inner 128 gives v heads of 32 values; llama.cpp's qwen3next makes them "
		  "--ssm-state 16 wide: use --ssm-inner 64" },
		{ "--arch qwen3next --ssm-groups 4 --ssm-dt-rank 6 --out @OUT",
		  "--ssm-dt-rank 6 (v heads) is not a multiple of --ssm-groups 4 (k heads)" },
		{ "--arch qwen3moe --n-head 4 --n-head-kv 3 --out @OUT", "not a multiple" },
		{ "--arch qwen3moe --n-rot 15 --out @OUT", "--n-rot 15 must be even" },
		{ "--arch qwen3moe --n-embd 48 --type Q8_0 --out @OUT",
		  "rows of 48 values cannot be stored as Q8_0" },
		{ "--arch qwen3moe --n-vocab 100 --out @OUT", "--n-vocab 100 is too small" },
		{ "--arch qwen3moe --vocab /nonexistent-vocab.gguf --out @OUT",
		  "/nonexistent-vocab.gguf" },
		{ "--preset bench-llama --out @OUT", "unknown preset 'bench-llama'" },
		{ "--preset bench-qwen3moe --arch llama --out @OUT", "is a qwen3moe model" },
		{ "--preset bench-qwen3next --arch qwen3moe --out @OUT",
		  "--preset bench-qwen3next is a qwen3next model, not --arch qwen3moe" },
		{ "--arch qwen3moe --out @OUT extra", "unexpected argument 'extra'" },
		/* qwen4exp and shards */
		{ "--arch qwen4exp --nextn 1 --out @OUT",
		  "--nextn applies to glm4moe and qwen3next, not qwen4exp" },
		{ "--arch qwen3next --hc 4 --out @OUT", "--hc applies to qwen4exp, not qwen3next" },
		{ "--arch qwen4exp --hc 1 --out @OUT", "at least 2 hyper-connection streams" },
		{ "--arch qwen4exp --attn-interval 2 --out @OUT",
		  "layer 1, which must be a Gated DeltaNet layer" },
		{ "--arch qwen4exp --n-embd 72 --head-dim 16 --out @OUT",
		  "--n-embd 72 is not a multiple of the 16 PLE heads" },
		{ "--arch qwen4exp --ple-type Q4_K --out @OUT",
		  "--ple-type: 'Q4_K' is not a type the PLE reader decodes" },
		{ "--arch qwen4exp --ple-type Q8_0 --out @OUT",
		  "--ple-type Q8_0: PLE rows of 4 values are not whole blocks of 32" },
		{ "--arch qwen3moe --ple-type Q8_0 --out @OUT", "--ple-type applies to qwen4exp" },
		{ "--arch qwen3moe --split-ple --out @OUT",
		  "--split-ple: a qwen3moe model has no PLE table" },
		{ "--arch qwen3moe --split-max-tensors 0 --out @OUT", "--split-max-tensors: '0'" },
		{ "--arch qwen3moe --split-max-size 1.5G --out @OUT", "--split-max-size: '1.5'" },
		{ "--arch qwen3moe --split-max-size M --out @OUT", "--split-max-size: 'M' is not a size" },
		{ "--preset syn-qwen4exp --arch qwen3next --out @OUT",
		  "--preset syn-qwen4exp is a qwen4exp model, not --arch qwen3next" },
	};
	char out[4096];

	snprintf(out, sizeof(out), "%s/m.gguf", dir);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char args[1024], *at;
		int rc;

		snprintf(args, sizeof(args), "%s", cases[k].args);
		if ((at = strstr(args, "@OUT")) || (at = strstr(args, "@DIR"))) {
			char rest[1024];

			snprintf(rest, sizeof(rest), "%s", at + 4);
			snprintf(at, sizeof(args) - (size_t)(at - args), "%s%s",
				 at[1] == 'O' ? out : dir, rest);
		}
		rc = writer("%s", args);
		ck_assert_msg(rc == 2, "'%s': exit %d, expected 2: %s", args, rc, g_out);
		ck_assert_msg(strstr(g_out, "error") && strstr(g_out, cases[k].msg),
			      "'%s': message lacks '%s': %s", args, cases[k].msg, g_out);
		ck_assert_msg(strchr(g_out, '\n') == g_out + strlen(g_out) - 1,
			      "'%s': not one line: %s", args, g_out);
		ck_assert_int_eq(n_entries(dir), 0); /* nothing written, no temporary */
	}
	ck_assert_int_eq(writer("--help"), 0);
	ck_assert_ptr_nonnull(strstr(g_out, "usage: strata-writer"));
	/*
	 * GGUF types the writer names but cannot quantise (nor strata run) are an
	 * error at run time, before any file, naming the types it has.
	 */
	for (size_t k = 0; k < sizeof(g_unquantised) / sizeof(g_unquantised[0]); k++) {
		const char *name = strata_type_name(g_unquantised[k]);

		ck_assert_msg(!quantiser_exists(g_unquantised[k]),
			      "%s has a quantiser now: test it with g_qtypes", name);
		ck_assert_int_eq(writer("--arch llama --n-embd 256 --type %s --out %s", name, out),
				 1);
		ck_assert_msg(strstr(g_out, "no ") && strstr(g_out, name) &&
			      strstr(g_out, "quantiser yet; it has F32, F16") &&
			      strstr(g_out, "IQ2_XS, IQ3_XXS, IQ4_NL, IQ3_S, IQ2_S, IQ1_M, BF16, "
				     "and the Q4_K_M mix"), "%s", g_out);
		ck_assert_int_eq(n_entries(dir), 0);
	}
	remove_dir();
}
END_TEST

static Suite *writer_suite(void)
{
	Suite *s = suite_create("writer");
	TCase *tc = tcase_create("models");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_model_f32, 0, 4);
	tcase_add_loop_test(tc, test_model_types, 0, 4);
	tcase_add_test(tc, test_deterministic);
	tcase_add_test(tc, test_q4_k_m_mix);
	tcase_add_test(tc, test_q4_k_m_qwen3next);
	tcase_add_test(tc, test_qwen4exp_presets);
	tcase_add_loop_test(tc, test_split_same_logits, 0, 2);
	suite_add_tcase(s, tc);
	tc = tcase_create("peer");
	tcase_set_tags(tc, "peer");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_llama_cpp_loads);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_input");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_bad_moe, 0, 2);
	tcase_add_test(tc, test_cli_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_srunner_run(srunner_create(writer_suite()));
}
