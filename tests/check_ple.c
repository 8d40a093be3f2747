/*
 * check_ple.c - the PLE n-gram table: row ids, row decode, the row cache,
 * the reader (through an in-test io backend that can fail on purpose), its
 * configuration keys, the GGUF table and the ple-ids command.
 *
 * The row ids below were computed with Python's big integers from the
 * formula in DESIGN.md, independently of the C code.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "cpu/types.h"
#include "gguf/gguf.h"
#include "ple/ple.h"
#include "ple/ple_int.h"
#include "ple_fault_io.h"
#include "testutil.h"
#include "util/log.h"

/* ---- captured log --------------------------------------------------------------------- */

static char g_log[16384];

static void capture(void *user, int level, const char *line)
{
	size_t n = strlen(g_log);

	(void)user;
	(void)level;
	snprintf(g_log + n, sizeof(g_log) - n, "%s\n", line);
}

static void setup(void)
{
	g_log[0] = 0;
	strata_log_set_sink(capture, NULL);
}

static void teardown(void)
{
	strata_log_set_sink(NULL, NULL);
}

/* ---- row ids ------------------------------------------------------------------------------- */

/* Fresh sequence 1 2 3 248044 5 (python3, big integers). */
static const uint64_t g_ids_fresh[5][16] = {
	{ 16121432, 28938500, 59087997, 73487090, 81148277, 104500129, 120276032, 149373875,
	  176283436, 184305849, 216528839, 231080079, 257961536, 266068568, 289043455,
	  305959965 },
	{ 15220011, 32170723, 40646129, 76511807, 98682440, 106072663, 127158041, 141938523,
	  170367010, 180520041, 210849650, 234005644, 252857364, 272068622, 291885712,
	  311569748 },
	{ 14605717, 24410875, 49313567, 72177428, 86060820, 104022010, 130963819, 146886202,
	  161523077, 195939126, 219424565, 220811782, 248020141, 275228530, 284297999,
	  309645223 },
	{ 1040936, 20493796, 54629949, 79359381, 85142054, 114677089, 129861487, 151753631,
	  160770146, 187379937, 207108329, 229509886, 243927029, 279402641, 291463027,
	  313528485 },
	{ 15389869, 39778609, 55713969, 62213332, 88817728, 118483999, 133731511, 155458159,
	  179763390, 197956758, 205378969, 220499474, 242466248, 265658744, 293662119,
	  315720898 },
};

/* History 99 151643, then 2147483647 248319: wrapping products of large ids. */
static const uint64_t g_ids_hist[2][16] = {
	{ 11808380, 26158957, 48513737, 65611408, 82796049, 116295964, 137581642, 147896141,
	  169662844, 193994243, 211997807, 235009524, 250225855, 266685104, 299114605,
	  303332352 },
	{ 1914172, 20939376, 54814121, 67124264, 96498151, 113886717, 120841921, 158410805,
	  169172596, 199252281, 215226197, 225873956, 259666843, 274293193, 299354050,
	  306046719 },
};

START_TEST(ids_reference)
{
	const int32_t toks[5] = { 1, 2, 3, STRATA_PLE_EOS, 5 }, big[2] = { 2147483647, 248319 };
	struct strata_ple_hash h;
	struct strata_ple_hist st;
	uint64_t rows[5 * 16];

	strata_ple_hash_default(&h);
	ck_assert_uint_eq(h.offset[15], 320001446ull - 20000171ull);
	strata_ple_hist_init(&h, &st);
	strata_ple_row_ids(&h, &st, toks, 5, rows);
	for (int i = 0; i < 5; i++)
		for (int k = 0; k < 16; k++)
			ck_assert_uint_eq(rows[i * 16 + k], g_ids_fresh[i][k]);
	st.prev2 = 99;
	st.prev1 = 151643;
	strata_ple_row_ids(&h, &st, big, 2, rows);
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 16; k++)
			ck_assert_uint_eq(rows[i * 16 + k], g_ids_hist[i][k]);
	ck_assert_uint_eq(st.prev1, 248319);
	ck_assert_uint_eq(st.prev2, 2147483647);
}
END_TEST

START_TEST(ids_eos_rule)
{
	const int32_t a[4] = { 7, STRATA_PLE_EOS, 9, 11 }, b[2] = { 9, 11 };
	const int32_t c[2] = { 7, STRATA_PLE_EOS }, d[1] = { STRATA_PLE_EOS };
	struct strata_ple_hash h;
	struct strata_ple_hist st;
	uint64_t ra[4 * 16], rb[2 * 16], rc[2 * 16], rd[16];

	strata_ple_hash_default(&h);
	strata_ple_hist_init(&h, &st);
	strata_ple_row_ids(&h, &st, a, 4, ra);
	strata_ple_hist_init(&h, &st);
	strata_ple_row_ids(&h, &st, b, 2, rb);
	/* After an EOS the context is cut: 9 11 read as at the start of a sequence. */
	ck_assert_mem_eq(ra + 2 * 16, rb, sizeof(rb));
	/* EOS's own context is not cut: 7 EOS differs from EOS alone. */
	strata_ple_hist_init(&h, &st);
	strata_ple_row_ids(&h, &st, c, 2, rc);
	strata_ple_hist_init(&h, &st);
	strata_ple_row_ids(&h, &st, d, 1, rd);
	ck_assert_mem_ne(rc + 16, rd, sizeof(rd));
	ck_assert_mem_eq(ra + 16, rc + 16, sizeof(rd));
	/* The trigram of 11 sees 9 and then EOS, not 7: everything before EOS is gone. */
	st.prev2 = 12345;
	st.prev1 = STRATA_PLE_EOS;
	strata_ple_row_ids(&h, &st, b, 2, rc);
	ck_assert_mem_eq(rc, rb, sizeof(rb));
}
END_TEST

START_TEST(ids_across_chunks)
{
	int32_t toks[300];
	struct strata_ple_hash h;
	struct strata_ple_hist st;
	uint64_t whole[300 * 16], parts[300 * 16];
	size_t cuts[4] = { 0, 1, 2, 257 };

	for (int i = 0; i < 300; i++)
		toks[i] = (i * 7919) % 248320;
	toks[100] = STRATA_PLE_EOS;
	strata_ple_hash_default(&h);
	strata_ple_hist_init(&h, &st);
	strata_ple_row_ids(&h, &st, toks, 300, whole);
	strata_ple_hist_init(&h, &st);
	for (int i = 0; i < 4; i++) {
		size_t end = i < 3 ? cuts[i + 1] : 300;

		strata_ple_row_ids(&h, &st, toks + cuts[i], end - cuts[i], parts + cuts[i] * 16);
	}
	ck_assert_mem_eq(whole, parts, sizeof(whole));
}
END_TEST

/* ---- row decode ---------------------------------------------------------------------------- */

static void put_f16(uint8_t *p, float f)
{
	uint16_t h = strata_f32_to_fp16(f);

	memcpy(p, &h, 2);
}

/* A row of 160 values built from known quants, and the values the spec gives for it. */
static void make_row(uint32_t type, uint8_t *row, float *want)
{
	static const int8_t nl[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
				       1, 13, 25, 38, 53, 69, 89, 113 };
	uint32_t bb = strata_type_block_bytes(type);

	for (int b = 0; b < 5; b++) {
		uint8_t *p = row + b * bb;
		float d = 0.25f * (float)(b + 1), m = -1.5f;
		int q[32];

		for (int j = 0; j < 32; j++)
			q[j] = (j * 5 + b * 3) & 31; /* 5-bit values; 4-bit types use q & 15 */
		switch (type) {
		case STRATA_TYPE_Q4_0:
		case STRATA_TYPE_IQ4_NL:
			put_f16(p, d);
			for (int j = 0; j < 16; j++)
				p[2 + j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
			for (int j = 0; j < 32; j++)
				want[b * 32 + j] = type == STRATA_TYPE_Q4_0 ? (float)((q[j] & 15) - 8) * d
									    : (float)nl[q[j] & 15] * d;
			break;
		case STRATA_TYPE_Q5_0:
		case STRATA_TYPE_Q5_1: {
			int o = type == STRATA_TYPE_Q5_0 ? 2 : 4;
			uint32_t qh = 0;

			put_f16(p, d);
			if (type == STRATA_TYPE_Q5_1)
				put_f16(p + 2, m);
			for (int j = 0; j < 32; j++)
				qh |= (uint32_t)(q[j] >> 4) << j;
			memcpy(p + o, &qh, 4);
			for (int j = 0; j < 16; j++)
				p[o + 4 + j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
			for (int j = 0; j < 32; j++)
				want[b * 32 + j] = type == STRATA_TYPE_Q5_0 ? (float)(q[j] - 16) * d
									    : (float)q[j] * d + m;
			break;
		}
		case STRATA_TYPE_Q8_0:
			put_f16(p, d);
			for (int j = 0; j < 32; j++) {
				int8_t v = (int8_t)(q[j] * 8 - 128);

				p[2 + j] = (uint8_t)v;
				want[b * 32 + j] = (float)v * d;
			}
			break;
		case STRATA_TYPE_BF16:
			for (int j = 0; j < 32; j++) {
				float v = (float)(q[j] - 16) / 8.0f;
				uint16_t h = strata_f32_to_bf16(v);

				memcpy(row + 2 * (b * 32 + j), &h, 2);
				want[b * 32 + j] = v;
			}
			break;
		}
	}
}

START_TEST(decode_types)
{
	static const uint32_t types[] = { STRATA_TYPE_IQ4_NL, STRATA_TYPE_Q4_0, STRATA_TYPE_Q5_0,
					  STRATA_TYPE_Q5_1, STRATA_TYPE_Q8_0, STRATA_TYPE_BF16 };
	static const size_t bytes[] = { 90, 90, 110, 120, 170, 320 };
	uint32_t type = types[_i];
	uint8_t row[320];
	float want[160], got[160];

	ck_assert_uint_eq(strata_type_row_bytes(type, 160), bytes[_i]);
	ck_assert(strata_ple_type_ok(type));
	make_row(type, row, want);
	ck_assert_int_eq(strata_ple_decode_row(type, row, got, 160), 0);
	for (int i = 0; i < 160; i++)
		ck_assert_msg(got[i] == want[i], "%s value %d: %g, want %g",
			      strata_type_name(type), i, (double)got[i], (double)want[i]);
}
END_TEST

START_TEST(decode_refuses)
{
	uint8_t row[256] = { 0 };
	float out[256];

	ck_assert(!strata_ple_type_ok(STRATA_TYPE_Q4_K));
	ck_assert(!strata_ple_type_ok(99));
	ck_assert_int_eq(strata_ple_decode_row(STRATA_TYPE_Q4_K, row, out, 256), -EINVAL);
	ck_assert_int_eq(strata_ple_decode_row(STRATA_TYPE_Q4_0, row, out, 33), -EINVAL);
}
END_TEST

START_TEST(synth_rows)
{
	uint8_t a[110], b[110];
	uint32_t idx;
	float f[160];

	strata_ple_synth_row(STRATA_TYPE_Q5_0, 160, 123456, a);
	strata_ple_synth_row(STRATA_TYPE_Q5_0, 160, 123457, b);
	memcpy(&idx, a + 2, 4);
	ck_assert_uint_eq(idx, 123456);
	ck_assert_mem_ne(a, b, 110);
	strata_ple_decode_row(STRATA_TYPE_Q5_0, a, f, 160);
	for (int i = 0; i < 160; i++)
		ck_assert(f[i] == f[i] && f[i] > -1.0f && f[i] < 1.0f);
}
END_TEST

/* ---- the row cache -------------------------------------------------------------------------- */

START_TEST(cache_bounded_lru)
{
	struct ple_cache c;
	uint8_t row[90], got[90];
	int hits = 0, missing = 0;

	ck_assert_int_eq(strata_ple_cache_init(&c, 8, 90), 0);
	ck_assert_uint_eq(strata_ple_cache_capacity(&c), 8);
	for (uint32_t r = 0; r < 8; r++) {
		memset(row, (int)r + 1, sizeof(row));
		strata_ple_cache_put(&c, r, row, 1);
	}
	ck_assert_int_eq(strata_ple_cache_get(&c, 0, got, 2, 1), 1); /* row 0 used again in chunk 2 */
	memset(row, 1, sizeof(row));
	ck_assert_mem_eq(got, row, 90);
	memset(row, 0x77, sizeof(row));
	strata_ple_cache_put(&c, 100, row, 2);
	ck_assert_int_eq(strata_ple_cache_get(&c, 100, got, 2, 1), 1);
	ck_assert_mem_eq(got, row, 90);
	ck_assert_int_eq(strata_ple_cache_get(&c, 0, got, 2, 1), 1); /* recently used: kept */
	for (uint32_t r = 1; r < 8; r++)
		missing += !strata_ple_cache_get(&c, r, got, 2, 1);
	ck_assert_int_eq(missing, 1);
	strata_ple_cache_free(&c);

	ck_assert_int_eq(strata_ple_cache_init(&c, 1000, 90), 0);
	ck_assert_uint_le(strata_ple_cache_capacity(&c), 1000);
	ck_assert_uint_ge(strata_ple_cache_capacity(&c), 500);
	for (uint32_t r = 0; r < 20000; r++)
		strata_ple_cache_put(&c, r, row, 3);
	for (uint32_t r = 0; r < 20000; r++)
		hits += strata_ple_cache_get(&c, r, got, 4, 1);
	ck_assert_uint_eq((uint64_t)hits, strata_ple_cache_capacity(&c));
	strata_ple_cache_free(&c);

	ck_assert_int_eq(strata_ple_cache_init(&c, 0, 90), 0);
	strata_ple_cache_put(&c, 5, row, 1);
	ck_assert_int_eq(strata_ple_cache_get(&c, 5, got, 1, 1), 0);
	strata_ple_cache_free(&c);
}
END_TEST

/* ---- reader fixtures ---------------------------------------------------------------------------- */

#define NROWS 20011u
#define BASE 100u

static char g_table[4096];

/* A Q5_0 table (110-byte rows) after a 100-byte header. */
static void make_table(void)
{
	size_t n = BASE + (size_t)NROWS * 110;
	uint8_t *buf = calloc(1, n);

	snprintf(g_table, sizeof(g_table), "%s/ple.bin", tu_tmpdir());
	for (uint32_t r = 0; r < NROWS; r++)
		strata_ple_synth_row(STRATA_TYPE_Q5_0, 160, r, buf + BASE + (size_t)r * 110);
	ck_assert_int_eq(tu_write_file(g_table, buf, n), 0);
	free(buf);
}

static struct strata_ple_reader *open_reader(uint32_t readers, uint32_t cache, int rc_want)
{
	struct strata_ple_table t = { g_table, BASE, NROWS, STRATA_TYPE_Q5_0, 160 };
	struct strata_ple_opts o;
	struct strata_ple_reader *r = NULL;

	strata_ple_opts_default(&o);
	o.readers = readers;
	o.row_cache = cache;
	o.io_ops = &g_fio;
	o.io_name = "fault-io";
	o.timeout_ms = 300;
	o.chunk_rows_hint = readers == 3 ? 1000 : 0; /* grows past a reservation */
	ck_assert_int_eq(strata_ple_reader_open(NULL, &t, &o, &r), rc_want);
	return r;
}

static void fill_rows(uint64_t *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rows[i] = (i * 2654435761u) % (NROWS + 50); /* some past the end */
	rows[0] = 0;
	rows[1] = NROWS - 1;
	rows[2] = rows[3];
}

/* Every row is the reference or (ok_zero) all zeros. */
static int check_out(const uint64_t *rows, size_t n, const float *out, int ok_zero)
{
	uint8_t raw[110];
	float ref[160], zero[160] = { 0 };

	for (size_t i = 0; i < n; i++) {
		const float *o = out + i * 160;

		if (rows[i] >= NROWS) {
			if (memcmp(o, zero, sizeof(zero)))
				return 0;
			continue;
		}
		strata_ple_synth_row(STRATA_TYPE_Q5_0, 160, rows[i], raw);
		strata_ple_decode_row(STRATA_TYPE_Q5_0, raw, ref, 160);
		if (memcmp(o, ref, sizeof(ref)) && !(ok_zero && !memcmp(o, zero, sizeof(zero))))
			return 0;
	}
	return 1;
}

static void reader_setup(void)
{
	setup();
	g_fault = F_NONE;
	g_fault_off = UINT64_MAX;
	atomic_store(&g_fault_hits, 0);
	make_table();
}

START_TEST(reader_rows_and_cache)
{
	const size_t n = 5000;
	uint64_t *rows = malloc(n * sizeof(*rows));
	float *out = malloc(n * 160 * sizeof(float));
	uint32_t readers = _i == 0 ? 0 : 3;
	struct strata_ple_reader *r = open_reader(readers, 1u << 15, 0);
	struct strata_ple_chunk *c;
	struct strata_ple_stats s;

	fill_rows(rows, n);
	ck_assert_int_eq(strata_ple_chunk_create(r, &c), 0);
	ck_assert_int_eq(strata_ple_start(c, rows, n, out), 0);
	ck_assert_int_eq(strata_ple_start(c, rows, n, out), -EBUSY);
	ck_assert_int_eq(strata_ple_wait(c), 0);
	ck_assert(check_out(rows, n, out, 0));
	strata_ple_chunk_stats(c, &s);
	ck_assert_uint_eq(s.rows, n);
	ck_assert_uint_eq(s.hits, 0);
	ck_assert_uint_gt(s.zeros, 0);
	ck_assert_uint_gt(s.reads, 0);
	ck_assert_int_eq(s.batched, readers > 0);
	/* The same rows again: all from the row cache, no page read. */
	memset(out, 0xff, n * 160 * sizeof(float));
	ck_assert_int_eq(strata_ple_start(c, rows, n, out), 0);
	ck_assert_int_eq(strata_ple_wait(c), 0);
	ck_assert(check_out(rows, n, out, 0));
	strata_ple_chunk_stats(c, &s);
	ck_assert_uint_eq(s.hits, n - s.zeros);
	ck_assert_uint_eq(s.reads, 0);
	ck_assert_int_eq(strata_ple_wait(c), -EINVAL); /* not started */
	strata_ple_chunk_free(c);
	strata_ple_reader_close(r);

	/* Without a row cache the repeat reads again. */
	r = open_reader(readers, 0, 0);
	ck_assert_int_eq(strata_ple_chunk_create(r, &c), 0);
	for (int k = 0; k < 2; k++) {
		ck_assert_int_eq(strata_ple_start(c, rows, n, out), 0);
		ck_assert_int_eq(strata_ple_wait(c), 0);
		strata_ple_chunk_stats(c, &s);
		ck_assert_uint_eq(s.hits, 0);
		ck_assert_uint_gt(s.reads, 0);
	}
	ck_assert(check_out(rows, n, out, 0));
	strata_ple_chunk_free(c);
	strata_ple_reader_close(r);
	free(rows);
	free(out);
}
END_TEST

START_TEST(reader_tokens_and_log)
{
	int32_t toks[300];
	float *out = malloc(300 * 16 * 160 * sizeof(float));
	struct strata_ple_table t = { g_table, BASE, NROWS, STRATA_TYPE_Q5_0, 160 };
	struct strata_ple_opts o;
	struct strata_ple_reader *r;
	struct strata_ple_chunk *c;
	struct strata_ple_hash h;
	struct strata_ple_hist st;

	for (int i = 0; i < 300; i++)
		toks[i] = i * 31;
	strata_ple_opts_default(&o);
	o.io = STRATA_PLE_IO_MMAP;
	o.readers = 2;
	o.stats = 1;
	o.trace = 1;
	ck_assert_int_eq(strata_ple_reader_open(NULL, &t, &o, &r), 0);
	ck_assert_int_eq(strata_ple_chunk_create(r, &c), 0);
	strata_ple_hash_default(&h);
	strata_ple_hist_init(&h, &st);
	/* Row ids of the full table are mostly past this small table's end: zeros. */
	ck_assert_int_eq(strata_ple_start_tokens(c, &h, &st, toks, 300, out), 0);
	ck_assert_int_eq(strata_ple_wait(c), 0);
	ck_assert_uint_eq(st.prev1, 299 * 31);
	ck_assert_msg(strstr(g_log, "ple io: 4800 rows, 0.0% row-cache hits, ") != NULL, "%s",
		      g_log);
	ck_assert_msg(strstr(g_log, "us, blocked ") && strstr(g_log, " ms (submit "), "%s", g_log);
	ck_assert_msg(strstr(g_log, "ple trace: chunk 1 (4800 rows, batched): read started at"),
		      "%s", g_log);
	strata_ple_chunk_free(c);
	strata_ple_reader_close(r);
	free(out);
}
END_TEST

START_TEST(stats_line_format)
{
	struct strata_ple_stats s = { 0 };
	char line[256];

	s.rows = 131072;
	s.hits = 32768;
	s.reads = 50000;
	s.read_p50_us = 310;
	s.read_p99_us = 1800;
	s.blocked_ms = 12.345;
	s.submit_ms = 3.5;
	strata_ple_stats_line(&s, line, sizeof(line));
	ck_assert_str_eq(line, "ple io: 131072 rows, 25.0% row-cache hits, 50000 SSD reads "
			       "(204.8 MB), read p50/p99 310/1800 us, blocked 12.35 ms (submit "
			       "3.50 ms)");
}
END_TEST

/* ---- errors ------------------------------------------------------------------------------------- */

/* The file offset of the page holding row `row`'s first byte. */
static uint64_t page_of(uint32_t row)
{
	return (BASE + (uint64_t)row * 110) / 4096 * 4096;
}

START_TEST(read_retried_once)
{
	uint64_t rows[4096 + 10];
	float *out = malloc(sizeof(rows) / 8 * 160 * sizeof(float));
	struct strata_ple_reader *r;
	struct strata_ple_chunk *c;
	struct strata_ple_stats s;

	fill_rows(rows, 4106);
	rows[5] = 4321;
	g_fault = F_ONCE;
	g_fault_off = page_of((uint32_t)rows[5]);
	r = open_reader(_i ? 4 : 0, 1000, 0);
	ck_assert_int_eq(strata_ple_chunk_create(r, &c), 0);
	ck_assert_int_eq(strata_ple_start(c, rows, 4106, out), 0);
	ck_assert_int_eq(strata_ple_wait(c), 0);
	strata_ple_chunk_stats(c, &s);
	ck_assert_uint_eq(s.retries, 1);
	ck_assert(check_out(rows, 4106, out, 0));
	ck_assert_str_eq(g_log, "");
	strata_ple_chunk_free(c);
	strata_ple_reader_close(r);
	free(out);
}
END_TEST

START_TEST(read_fails_named)
{
	static const enum fault faults[] = { F_ALWAYS, F_SHORT, F_HANG };
	uint64_t rows[5000];
	float *out = malloc(5000 * 160 * sizeof(float));
	struct strata_ple_reader *r;
	struct strata_ple_chunk *c;
	uint32_t victim = 777; /* bytes 3650..3759 of its page: a 100-byte read misses them */
	char want[128];
	int rc;

	fill_rows(rows, 5000);
	rows[4000] = victim;
	g_fault = faults[_i / 2];
	g_fault_off = page_of(victim);
	r = open_reader(_i % 2 ? 3 : 0, 1000, 0);
	ck_assert_int_eq(strata_ple_chunk_create(r, &c), 0);
	memset(out, 0xff, 5000 * 160 * sizeof(float));
	ck_assert_int_eq(strata_ple_start(c, rows, 5000, out), 0);
	rc = strata_ple_wait(c);
	ck_assert_int_eq(rc, g_fault == F_HANG ? -ETIMEDOUT : -EIO);
	/* One message, naming the file and the page's offset. */
	ck_assert_msg(strstr(g_log, g_table) != NULL, "%s", g_log);
	snprintf(want, sizeof(want), "offset %llu", (unsigned long long)g_fault_off);
	ck_assert_msg(strstr(g_log, want) != NULL, "%s", g_log);
	ck_assert_ptr_eq(strchr(g_log, '\n'), g_log + strlen(g_log) - 1);
	/* Never garbage: every row is right or zeros, and the victim's is zeros. */
	ck_assert(check_out(rows, 5000, out, 1));
	{
		float zero[160] = { 0 };

		ck_assert_mem_eq(out + 4000 * 160, zero, sizeof(zero));
	}
	/* What was read: the rows of the page (the victim among them), and how often. */
	snprintf(want, sizeof(want), "PLE rows %u-", (unsigned)((g_fault_off - BASE) / 110));
	ck_assert_msg(strstr(g_log, want) != NULL, "%s", g_log);
	if (g_fault != F_HANG)
		ck_assert_msg(strstr(g_log, "failed 3 times") != NULL, "%s", g_log);
	/*
	 * The reader stays usable: after a read that never came back it reads on
	 * a fresh handle (the read path closed the stuck one), so rows that do
	 * not need the bad page are read.
	 */
	ck_assert_int_eq(strata_ple_start(c, rows, 10, out), 0);
	ck_assert_int_eq(strata_ple_wait(c), 0);
	ck_assert(check_out(rows, 10, out, 0));
	strata_ple_chunk_free(c);
	strata_ple_reader_close(r);
	free(out);
}
END_TEST

START_TEST(open_errors)
{
	struct strata_ple_table t = { g_table, BASE, NROWS, STRATA_TYPE_Q5_0, 160 };
	struct strata_ple_opts o;
	struct strata_ple_reader *r = NULL;
	char missing[4200];

	strata_ple_opts_default(&o);
	o.io_ops = &g_fio;
	o.io_name = "fault-io";
	/* A table longer than its file. */
	t.n_rows = NROWS + 1;
	ck_assert_int_eq(strata_ple_reader_open(NULL, &t, &o, &r), -EINVAL);
	ck_assert_msg(strstr(g_log, g_table) && strstr(g_log, "truncated"), "%s", g_log);
	ck_assert_ptr_null(r);
	/* A missing file. */
	g_log[0] = 0;
	snprintf(missing, sizeof(missing), "%s.nope", g_table);
	t.n_rows = NROWS;
	t.path = missing;
	ck_assert_int_eq(strata_ple_reader_open(NULL, &t, &o, &r), -ENOENT);
	ck_assert_msg(strstr(g_log, missing) != NULL, "%s", g_log);
	/* A row type that cannot be decoded. */
	g_log[0] = 0;
	t.path = g_table;
	t.type = STRATA_TYPE_Q4_K;
	t.row_len = 256;
	ck_assert_int_eq(strata_ple_reader_open(NULL, &t, &o, &r), -EINVAL);
	ck_assert_msg(strstr(g_log, "Q4_K") && strstr(g_log, "cannot be decoded"), "%s", g_log);
	/* An io backend that cannot open the file. */
	g_log[0] = 0;
	t.type = STRATA_TYPE_Q5_0;
	t.row_len = 160;
	g_fault = F_OPEN;
	ck_assert_int_eq(strata_ple_reader_open(NULL, &t, &o, &r), -EACCES);
	ck_assert_msg(strstr(g_log, "fault-io cannot open") && strstr(g_log, g_table), "%s",
		      g_log);
	/* Direct reads without any plugin to read with. */
	g_log[0] = 0;
	g_fault = F_NONE;
	o.io_ops = NULL;
	ck_assert_int_lt(strata_ple_reader_open(NULL, &t, &o, &r), 0);
	ck_assert_msg(strstr(g_log, "io plugin") != NULL, "%s", g_log);
	ck_assert_ptr_null(r);
}
END_TEST

/* ---- the GGUF table ------------------------------------------------------------------------------- */

static void w_str(FILE *f, const char *s)
{
	uint64_t n = strlen(s);

	fwrite(&n, 8, 1, f);
	fwrite(s, 1, n, f);
}

static void w_u32(FILE *f, uint32_t v)
{
	fwrite(&v, 4, 1, f);
}

static void w_u64(FILE *f, uint64_t v)
{
	fwrite(&v, 8, 1, f);
}

START_TEST(gguf_table)
{
	const uint32_t n_rows = 300;
	char path[4200];
	FILE *f;
	long pos;
	struct strata_gguf *g;
	struct strata_ple_table t;
	struct strata_ple_hash h;
	uint8_t row[110];

	snprintf(path, sizeof(path), "%s/ple.gguf", tu_tmpdir());
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fwrite("GGUF", 1, 4, f);
	w_u32(f, 3);
	w_u64(f, 1); /* tensors */
	w_u64(f, 2); /* kv */
	w_str(f, "general.architecture");
	w_u32(f, STRATA_GGUF_STRING);
	w_str(f, "qwen4exp");
	w_str(f, "qwen4exp.ple.head_vocab_sizes");
	w_u32(f, STRATA_GGUF_ARRAY);
	w_u32(f, STRATA_GGUF_U32);
	w_u64(f, 16);
	for (uint32_t k = 0; k < 16; k++)
		w_u32(f, 10 + k);
	w_str(f, STRATA_PLE_TENSOR);
	w_u32(f, 2);
	w_u64(f, 160);
	w_u64(f, n_rows);
	w_u32(f, STRATA_TYPE_Q5_0);
	w_u64(f, 0);
	pos = ftell(f);
	for (; pos % 32; pos++)
		fputc(0, f);
	for (uint32_t r = 0; r < n_rows; r++) {
		strata_ple_synth_row(STRATA_TYPE_Q5_0, 160, r, row);
		fwrite(row, 1, 110, f);
	}
	fclose(f);

	ck_assert_int_eq(strata_gguf_open(path, &g), 0);
	ck_assert_int_eq(strata_ple_table_from_gguf(g, &t), 0);
	ck_assert_uint_eq(t.base, (uint64_t)pos);
	ck_assert_uint_eq(t.n_rows, n_rows);
	ck_assert_uint_eq(t.row_len, 160);
	ck_assert_uint_eq(t.type, STRATA_TYPE_Q5_0);
	ck_assert_int_eq(strata_ple_hash_from_gguf(g, &h), 0);
	ck_assert_uint_eq(h.size[3], 13);
	ck_assert_uint_eq(h.offset[3], 10 + 11 + 12);
	ck_assert_uint_eq(h.mult[0], 23703573157769ull);
	{
		struct strata_ple_opts o;
		struct strata_ple_reader *r;
		struct strata_ple_chunk *c;
		uint64_t rows[3] = { 0, 299, 300 };
		float out[3 * 160], ref[160];

		strata_ple_opts_default(&o);
		o.io_ops = &g_fio;
		ck_assert_int_eq(strata_ple_reader_open(NULL, &t, &o, &r), 0);
		ck_assert_int_eq(strata_ple_chunk_create(r, &c), 0);
		ck_assert_int_eq(strata_ple_start(c, rows, 3, out), 0);
		ck_assert_int_eq(strata_ple_wait(c), 0);
		strata_ple_synth_row(STRATA_TYPE_Q5_0, 160, 299, row);
		strata_ple_decode_row(STRATA_TYPE_Q5_0, row, ref, 160);
		ck_assert_mem_eq(out + 160, ref, sizeof(ref));
		strata_ple_chunk_free(c);
		strata_ple_reader_close(r);
	}
	strata_gguf_close(g);
	unlink(path);
}
END_TEST

/* ---- configuration and the command ------------------------------------------------------------------ */

START_TEST(config_keys)
{
	struct strata_config c;
	struct strata_ple_opts o;
	char *argv[] = { "strata", "--ple-io", "mmap", "--ple-row-cache=1000", "--ple-stats", NULL };
	char *bad[] = { "strata", "--ple-io", "uring", NULL };

	ck_assert_int_eq(strata_config_init(&c), 0);
	strata_ple_opts_from_config(&c, &o);
	ck_assert_uint_eq(o.readers, 8);
	ck_assert_uint_eq(o.depth, 32);
	ck_assert_uint_eq(o.row_cache, 262144);
	ck_assert_int_eq(o.io, STRATA_PLE_IO_DIRECT);
	ck_assert_str_eq(o.plugin, "auto");
	ck_assert_int_eq(o.stats, 0);
	ck_assert_int_eq(o.trace, 0);
	setenv("STRATA_PLE_READERS", "0", 1);
	setenv("STRATA_PLE_TRACE", "1", 1);
	ck_assert_int_eq(strata_config_from_args(&c, 5, argv), 0);
	unsetenv("STRATA_PLE_READERS");
	unsetenv("STRATA_PLE_TRACE");
	strata_ple_opts_from_config(&c, &o);
	ck_assert_uint_eq(o.readers, 0);
	ck_assert_int_eq(o.trace, 1);
	ck_assert_int_eq(o.io, STRATA_PLE_IO_MMAP);
	ck_assert_uint_eq(o.row_cache, 1000);
	ck_assert_int_eq(o.stats, 1);
	ck_assert_str_eq(strata_config_get(&c, "ple", "io"), "mmap");
	strata_config_free(&c);

	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(strata_config_from_args(&c, 3, bad), -EINVAL);
	ck_assert_msg(strstr(g_log, "'uring'") && strstr(g_log, "direct|mmap"), "%s", g_log);
	strata_config_free(&c);
}
END_TEST

START_TEST(cmd_ple_ids)
{
	char out[4096], cmd[512];

	snprintf(cmd, sizeof(cmd), "%s ple-ids --history 99 151643 2147483647", STRATA_BIN);
	ck_assert_int_eq(tu_run(cmd, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "2147483647 11808380 26158957 48513737 65611408 82796049 116295964 "
			      "137581642 147896141 169662844 193994243 211997807 235009524 "
			      "250225855 266685104 299114605 303332352\n");
	snprintf(cmd, sizeof(cmd), "echo '1 2' | %s ple-ids | cut -d' ' -f1-3", STRATA_BIN);
	ck_assert_int_eq(tu_run(cmd, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "1 16121432 28938500\n2 15220011 32170723\n");
	snprintf(cmd, sizeof(cmd), "%s ple-ids 5 -3", STRATA_BIN);
	ck_assert_int_eq(tu_run(cmd, out, sizeof(out)), 2);
	ck_assert_msg(strstr(out, "bad token id '-3'") != NULL, "%s", out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ple");
	TCase *ids = tcase_create("ids"), *dec = tcase_create("decode");
	TCase *rd = tcase_create("reader"), *misc = tcase_create("misc");

	tcase_add_test(ids, ids_reference);
	tcase_add_test(ids, ids_eos_rule);
	tcase_add_test(ids, ids_across_chunks);
	tcase_add_loop_test(dec, decode_types, 0, 6);
	tcase_add_test(dec, decode_refuses);
	tcase_add_test(dec, synth_rows);
	tcase_add_test(dec, cache_bounded_lru);
	tcase_add_checked_fixture(rd, reader_setup, teardown);
	tcase_add_loop_test(rd, reader_rows_and_cache, 0, 2);
	tcase_add_test(rd, reader_tokens_and_log);
	tcase_add_loop_test(rd, read_retried_once, 0, 2);
	tcase_add_loop_test(rd, read_fails_named, 0, 6);
	tcase_add_test(rd, open_errors);
	tcase_add_test(rd, gguf_table);
	tcase_add_checked_fixture(misc, setup, teardown);
	tcase_add_test(misc, stats_line_format);
	tcase_add_test(misc, config_keys);
	tcase_add_test(misc, cmd_ple_ids);
	tcase_set_timeout(rd, 60);
	suite_add_tcase(s, ids);
	suite_add_tcase(s, dec);
	suite_add_tcase(s, rd);
	suite_add_tcase(s, misc);
	return tu_srunner_run(srunner_create(s));
}
