/*
 * check_faults.c - the PLE reader on a failing disk.  The io-faulty plugin
 * (plugins/io-faulty, a real .so in build/plugins/test) wraps io-pread and
 * injects EIO, short reads, delays and stalls by a seeded schedule from its
 * [io-faulty] section; the reader reads a real table file in a temp
 * directory through it, with 0, 1 and 4 reader threads.
 *
 * What must hold: a transient error is retried (the read path's tries,
 * io/aread.h) and the rows are byte for byte those of a clean io-pread run;
 * a persistent one fails the chunk with -EIO and one message naming the file
 * and the offset; a short read is
 * never taken for data; delays and stalls end in rows or, past the reader's
 * timeout, in -ETIMEDOUT, never in a hang; a failed chunk holds right rows or
 * zeros, never garbage (io-faulty overwrites the bytes it did not deliver).
 *
 * The engine calls the PLE reader for no model yet (qwen4exp is not built),
 * so there is no request path to fail here: weights are memory-mapped.
 */
#define _GNU_SOURCE /* asprintf */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "cpu/types.h"
#include "ple/ple.h"
#include "plugin/registry.h"
#include "testutil.h"
#include "util/log.h"

#define PDIR STRATA_PLUGIN_DIR          /* io-pread */
#define FDIR STRATA_PLUGIN_DIR "/test"  /* io-faulty */
#define NROWS 20011u
#define BASE 100u
#define RB 110u       /* a Q5_0 row of 160 values */
#define ROW 160u
#define CHUNK 5000u   /* batched with readers > 0 */
#define SMALL 300u    /* one ticket, on the dispatcher's own handle */
#define MAX_CHUNKS 8

static const uint32_t g_readers[3] = { 0, 1, 4 };

/* ---- the log: every line kept, error lines counted ------------------------------------ */

static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_log[1 << 17];
static int g_errors;

static void capture(void *user, int level, const char *line)
{
	size_t n;

	(void)user;
	pthread_mutex_lock(&g_log_mu);
	n = strlen(g_log);
	snprintf(g_log + n, sizeof(g_log) - n, "%c %s\n", "EWID"[level & 3], line);
	g_errors += level == STRATA_LOG_LVL_ERROR;
	pthread_mutex_unlock(&g_log_mu);
}

static void log_reset(void)
{
	pthread_mutex_lock(&g_log_mu);
	g_log[0] = 0;
	g_errors = 0;
	pthread_mutex_unlock(&g_log_mu);
}

#define ck_log_has(s) ck_assert_msg(strstr(g_log, (s)) != NULL, "log lacks '%s':\n%s", (s), g_log)

/* The last error line of the log (without its "E "), in a static buffer; "" when none. */
static const char *last_error(void)
{
	static char line[2048];
	const char *p = g_log, *last = NULL;

	for (; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (p[0] == 'E' && p[1] == ' ')
			last = p + 2;
	line[0] = 0;
	if (last)
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(last, "\n"), last);
	return line;
}

/* The last error names the table file first, then says `what`. */
#define ck_error_says(what)                                                                  \
	do {                                                                                 \
		const char *e_ = last_error();                                               \
		ck_assert_msg(!strncmp(e_, g_table, strlen(g_table)) && strstr(e_, (what)), \
			      "error line '%s' lacks the file or '%s'", e_, (what));         \
	} while (0)

/* ---- the table --------------------------------------------------------------------------- */

static char g_dir[4096], g_table[4200];

static void setup(void)
{
	size_t n = BASE + (size_t)NROWS * RB;
	uint8_t *buf = calloc(1, n);
	const char *d = tu_tmpdir();

	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(d);
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	snprintf(g_table, sizeof(g_table), "%s/ple.bin", g_dir);
	for (uint32_t r = 0; r < NROWS; r++)
		strata_ple_synth_row(STRATA_TYPE_Q5_0, ROW, r, buf + BASE + (size_t)r * RB);
	ck_assert_int_eq(tu_write_file(g_table, buf, n), 0);
	free(buf);
	setenv("STRATA_PLUGIN_PATH", PDIR, 1); /* io-faulty finds io-pread there */
	strata_log_set_sink(capture, NULL);
	log_reset();
}

static void teardown(void)
{
	strata_log_set_sink(NULL, NULL);
	tu_rmtree(g_dir);
}

/* Rows of chunk k: spread over the table, some past its end (zeros), some repeated. */
static void chunk_rows(uint64_t *rows, size_t n, uint32_t k)
{
	for (size_t i = 0; i < n; i++)
		rows[i] = ((uint64_t)(i + 7919u * k) * 2654435761u) % (NROWS + 50);
	rows[0] = 0;
	rows[1] = NROWS - 1;
}

/* Every row decodes to the synthetic reference, or (ok_zero) is all zeros. */
static int check_out(const uint64_t *rows, size_t n, const float *out, int ok_zero)
{
	static const float zero[ROW];
	uint8_t raw[RB];
	float ref[ROW];

	for (size_t i = 0; i < n; i++) {
		const float *o = out + i * ROW;

		if (rows[i] >= NROWS) {
			if (memcmp(o, zero, sizeof(zero)))
				return 0;
			continue;
		}
		strata_ple_synth_row(STRATA_TYPE_Q5_0, ROW, rows[i], raw);
		strata_ple_decode_row(STRATA_TYPE_Q5_0, raw, ref, ROW);
		if (memcmp(o, ref, sizeof(ref)) && !(ok_zero && !memcmp(o, zero, sizeof(zero))))
			return 0;
	}
	return 1;
}

static int all_zero(const float *out, size_t n)
{
	for (size_t i = 0; i < n * ROW; i++)
		if (out[i] != 0.0f)
			return 0;
	return 1;
}

/* ---- registry, reader, chunks --------------------------------------------------------------- */

/* A registry whose configuration is [plugins] dir = FDIR plus `ini`. */
static struct strata_registry *reg_with(struct strata_config *c, const char *ini)
{
	struct strata_registry *reg;
	char path[4300], *text;

	snprintf(path, sizeof(path), "%s/strata.ini", g_dir);
	ck_assert_int_ge(asprintf(&text, "[plugins]\ndir = %s\n%s", FDIR, ini ? ini : ""), 0);
	ck_assert_int_eq(tu_write_file(path, text, strlen(text)), 0);
	free(text);
	ck_assert_int_eq(strata_config_init(c), 0);
	ck_assert_int_eq(strata_config_load_file(c, path), 0);
	ck_assert_int_eq(strata_registry_create(c, NULL, &reg), 0);
	return reg;
}

static int reader_open(struct strata_registry *reg, const char *plugin, uint32_t readers,
		       uint32_t timeout_ms, struct strata_ple_reader **r)
{
	struct strata_ple_table t = { g_table, BASE, NROWS, STRATA_TYPE_Q5_0, ROW };
	struct strata_ple_opts o;

	strata_ple_opts_default(&o);
	o.readers = readers;
	o.depth = 8;
	o.row_cache = 0; /* every chunk reads every page: more reads, more faults */
	o.io = STRATA_PLE_IO_DIRECT;
	o.plugin = plugin;
	o.timeout_ms = timeout_ms;
	return strata_ple_reader_open(reg, &t, &o, r);
}

/* Start and wait for one chunk; its result, stats in *st. */
static int read_chunk(struct strata_ple_reader *r, const uint64_t *rows, size_t n, float *out,
		      struct strata_ple_stats *st)
{
	struct strata_ple_chunk *c;
	int rc;

	ck_assert_int_eq(strata_ple_chunk_create(r, &c), 0);
	memset(out, 0xff, n * ROW * sizeof(float)); /* NaNs: stale floats would show */
	ck_assert_int_eq(strata_ple_start(c, rows, n, out), 0);
	rc = strata_ple_wait(c);
	strata_ple_chunk_stats(c, st);
	strata_ple_chunk_free(c);
	return rc;
}

/* The rows through a clean io-pread reader: the reference a faulty run must match. */
static void clean_read(const uint64_t *rows, size_t n, float *out, uint32_t readers)
{
	struct strata_config c;
	struct strata_registry *reg = reg_with(&c, NULL);
	struct strata_ple_reader *r;
	struct strata_ple_stats st;

	ck_assert_int_eq(reader_open(reg, "io-pread", readers, 0, &r), 0);
	ck_assert_int_eq(read_chunk(r, rows, n, out, &st), 0);
	ck_assert(check_out(rows, n, out, 0));
	strata_ple_reader_close(r);
	strata_registry_free(reg);
	strata_config_free(&c);
}

/* What io-faulty said it did, summed over its handles' close lines in the log. */
struct inj {
	unsigned long long reads, eio, shorts, stalls, delays;
	unsigned not_reaped;
	int handles;
};

static void parse_injected(struct inj *in)
{
	const char *p = g_log;

	memset(in, 0, sizeof(*in));
	while ((p = strstr(p, "io-faulty: ")) != NULL) {
		const char *q = strstr(p, g_table);
		unsigned long long r, e, s, t, d;
		unsigned ms, us, nr;

		p += 11;
		if (!q || q > strchr(p, '\n') ||
		    sscanf(q + strlen(g_table), ": %llu reads through io-pread; injected %llu EIO, "
			   "%llu short, %llu stalls of %u ms, %llu delays of %u us; %u not reaped",
			   &r, &e, &s, &t, &ms, &d, &us, &nr) != 8)
			continue;
		in->reads += r;
		in->eio += e;
		in->shorts += s;
		in->stalls += t;
		in->delays += d;
		in->not_reaped += nr;
		in->handles++;
	}
}

static void inj_add(struct inj *a, const struct inj *b)
{
	a->reads += b->reads;
	a->eio += b->eio;
	a->shorts += b->shorts;
	a->stalls += b->stalls;
	a->delays += b->delays;
	a->not_reaped += b->not_reaped;
	a->handles += b->handles;
}

struct outcome {
	int n, ok, failed;
	int rc[MAX_CHUNKS];
	uint64_t retries[MAX_CHUNKS];
	struct inj inj[MAX_CHUNKS]; /* fresh readers only: per chunk */
	struct inj total;
};

/* Chunk k of a run: rows, the clean reference, then the faulty read and its checks. */
static void one_chunk(struct strata_ple_reader *r, uint32_t readers, uint32_t k,
		      struct outcome *oc)
{
	size_t n = k % 2 ? SMALL : CHUNK;
	uint64_t *rows = malloc(n * sizeof(*rows));
	float *out = malloc(n * ROW * sizeof(float)), *ref = malloc(n * ROW * sizeof(float));
	struct strata_ple_stats st;
	int errors, rc;

	ck_assert(rows && out && ref);
	chunk_rows(rows, n, k);
	clean_read(rows, n, ref, readers);
	pthread_mutex_lock(&g_log_mu);
	errors = g_errors;
	pthread_mutex_unlock(&g_log_mu);
	rc = read_chunk(r, rows, n, out, &st);
	pthread_mutex_lock(&g_log_mu);
	errors = g_errors - errors;
	pthread_mutex_unlock(&g_log_mu);
	if (rc == 0) {
		ck_assert_int_eq(errors, 0);
		ck_assert_msg(!memcmp(out, ref, n * ROW * sizeof(float)),
			      "chunk %u: rows differ from the clean run", k);
		oc->ok++;
	} else {
		/* One message for the chunk, naming the file and the offset. */
		ck_assert_msg(errors == 1, "chunk %u: %d error lines:\n%s", k, errors, g_log);
		ck_error_says("offset ");
		ck_assert(check_out(rows, n, out, 1));
		oc->failed++;
	}
	oc->rc[k] = rc;
	oc->retries[k] = st.retries;
	oc->n++;
	free(rows);
	free(out);
	free(ref);
}

/*
 * n_chunks chunks through io-faulty configured by `faulty` (an [io-faulty]
 * section) with `readers` threads; fresh = a new reader (new handles, new
 * schedule state) per chunk, else one reader for all of them.
 */
static void run_case(const char *faulty, uint32_t readers, uint32_t timeout_ms, int n_chunks,
		     int fresh, struct outcome *oc)
{
	struct strata_config c;
	struct strata_registry *reg = NULL;
	struct strata_ple_reader *r = NULL;

	memset(oc, 0, sizeof(*oc));
	log_reset();
	for (int k = 0; k < n_chunks; k++) {
		if (!r) {
			reg = reg_with(&c, faulty);
			ck_assert_int_eq(reader_open(reg, "io-faulty", readers, timeout_ms, &r), 0);
		}
		one_chunk(r, readers, (uint32_t)k, oc);
		if (fresh || k == n_chunks - 1) {
			strata_ple_reader_close(r); /* io-faulty's handles log what they did */
			strata_registry_free(reg);
			strata_config_free(&c);
			r = NULL;
			parse_injected(&oc->inj[k]);
			inj_add(&oc->total, &oc->inj[k]);
			log_reset();
		}
	}
}

static void print_outcome(const char *what, uint32_t readers, const struct outcome *oc)
{
	uint64_t retries = 0;

	for (int k = 0; k < oc->n; k++)
		retries += oc->retries[k];
	printf("faults: %-10s readers %u: %d chunks, %d rows-identical, %d failed with one "
	       "message; %llu reads on %d handles, injected %llu EIO, %llu short, %llu stalls, "
	       "%llu delays; %llu retries; %u reads not reaped\n", what, readers, oc->n, oc->ok,
	       oc->failed, oc->total.reads, oc->total.handles, oc->total.eio, oc->total.shorts,
	       oc->total.stalls, oc->total.delays, (unsigned long long)retries,
	       oc->total.not_reaped);
	fflush(stdout);
}

/* ---- transient faults ---------------------------------------------------------------- */

/*
 * The 3rd, 50th and 120th read of each handle fail once; with 8 reads in
 * flight a retry is submitted long before the next scheduled failure, so
 * every fault heals: rows identical to the clean run, one retry per fault.
 * (At 3, 17 and 40 a loaded machine once delayed the retry of the 17th
 * read to be the 40th, which io-faulty then lets pass, as a retry of a
 * scheduled failure: 2 EIO instead of 3.)
 */
START_TEST(transient_schedule)
{
	uint32_t readers = g_readers[_i];
	struct outcome oc;

	run_case("[io-faulty]\nfail_at = 3, 50,120\n", readers, 0, 2, 0, &oc);
	print_outcome("fail_at", readers, &oc);
	ck_assert_int_eq(oc.ok, 2);
	ck_assert_uint_ge(oc.total.eio, 3);
	ck_assert_uint_eq(oc.retries[0] + oc.retries[1], oc.total.eio);
	ck_assert_uint_eq(oc.total.not_reaped, 0);
}
END_TEST

/*
 * Random EIO and short reads, drawn per (seed, offset, attempt): a chunk
 * heals unless a page fails on every one of its STRATA_AREAD_TRIES tries.  Each chunk on a fresh reader, so its
 * fate is the same with 0, 1 or 4 threads; either way no row is wrong.
 */
START_TEST(random_faults)
{
	static const char ini[] = "[io-faulty]\nseed = 11\neio_rate = 0.01\nshort_rate = 0.01\n";
	struct outcome oc[3];
	unsigned long long injected = 0, healed = 0;

	for (int i = 0; i < 3; i++) {
		run_case(ini, g_readers[i], 0, 6, 1, &oc[i]);
		print_outcome("random", g_readers[i], &oc[i]);
		for (int k = 0; k < oc[i].n; k++) {
			const struct inj *in = &oc[i].inj[k];

			ck_assert_int_eq(oc[i].rc[k], oc[0].rc[k]);
			ck_assert_uint_eq(in->not_reaped, 0);
			injected += in->eio + in->shorts;
			if (oc[i].rc[k])
				continue;
			/* Every EIO was retried; a short read only when it cut needed bytes. */
			ck_assert_uint_ge(oc[i].retries[k], in->eio);
			ck_assert_uint_le(oc[i].retries[k], in->eio + in->shorts);
			healed += oc[i].retries[k];
		}
	}
	ck_assert_uint_gt(injected, 0);
	ck_assert_uint_gt(healed, 0);
	ck_assert_int_gt(oc[0].ok, 0);
}
END_TEST

/* ---- persistent faults ----------------------------------------------------------------------- */

START_TEST(persistent_eio)
{
	uint32_t readers = g_readers[_i];
	struct strata_config c;
	struct strata_registry *reg = reg_with(&c, "[io-faulty]\neio_rate = 1\n");
	struct strata_ple_reader *r;
	struct strata_ple_stats st;
	uint64_t *rows = malloc(CHUNK * sizeof(*rows));
	float *out = malloc(CHUNK * ROW * sizeof(float));
	unsigned long long off;
	const char *p;
	struct inj in;

	ck_assert(rows && out);
	ck_assert_int_eq(reader_open(reg, "io-faulty", readers, 0, &r), 0);
	chunk_rows(rows, CHUNK, 0);
	ck_assert_int_eq(read_chunk(r, rows, CHUNK, out, &st), -EIO);
	/* Exactly one error: the file, the page's offset, what happened. */
	ck_assert_msg(g_errors == 1, "%s", g_log);
	ck_error_says("failed 3 times: Input/output error");
	p = strstr(last_error(), "bytes at offset ");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(sscanf(p, "bytes at offset %llu through io-faulty failed 3 times", &off), 1);
	ck_error_says(": reading PLE rows ");
	ck_assert_uint_eq(off % 4096, 0);
	ck_assert_uint_lt(off, BASE + (uint64_t)NROWS * RB);
	/* Every page failed: every row is zeros, none is garbage. */
	ck_assert(all_zero(out, CHUNK));
	/* The reader stays usable: the next chunk fails the same way, on its own. */
	ck_assert_int_eq(read_chunk(r, rows, SMALL, out, &st), -EIO);
	ck_assert_int_eq(g_errors, 2);
	ck_assert(all_zero(out, SMALL));
	strata_ple_reader_close(r);
	parse_injected(&in);
	ck_assert_uint_gt(in.eio, 0);
	ck_assert_uint_eq(in.not_reaped, 0);
	printf("faults: eio=1      readers %u: 2 chunks failed with one message each; injected "
	       "%llu EIO on %d handles\n", readers, in.eio, in.handles);
	strata_registry_free(reg);
	strata_config_free(&c);
	free(rows);
	free(out);
}
END_TEST

/* Every read short: never taken for data, reported as a short read. */
START_TEST(persistent_short)
{
	uint32_t readers = g_readers[_i];
	struct outcome oc;

	run_case("[io-faulty]\nshort_rate = 1\nseed = 5\n", readers, 0, 1, 1, &oc);
	print_outcome("short=1", readers, &oc);
	ck_assert_int_eq(oc.rc[0], -EIO);
	ck_assert_uint_gt(oc.total.shorts, 0);
	ck_assert_uint_eq(oc.total.not_reaped, 0);
}
END_TEST

/* ---- delays and stalls --------------------------------------------------------------- */

START_TEST(delays)
{
	uint32_t readers = g_readers[_i];
	struct outcome oc;

	run_case("[io-faulty]\ndelay_us = 300\n", readers, 0, 2, 0, &oc);
	print_outcome("delay", readers, &oc);
	ck_assert_int_eq(oc.ok, 2);
	ck_assert_uint_gt(oc.total.reads, 0);
	ck_assert_uint_eq(oc.total.delays, oc.total.reads);
	ck_assert_uint_eq(oc.total.not_reaped, 0);
}
END_TEST

/* Stalls shorter than the reader's timeout: slow, then right. */
START_TEST(stalls)
{
	uint32_t readers = g_readers[_i];
	struct outcome oc;

	run_case("[io-faulty]\nseed = 3\nstall_rate = 0.05\nstall_ms = 100\n", readers, 10000, 2,
		 0, &oc);
	print_outcome("stall", readers, &oc);
	ck_assert_int_eq(oc.ok, 2);
	ck_assert_uint_gt(oc.total.stalls, 0);
	ck_assert_uint_eq(oc.total.not_reaped, 0);
}
END_TEST

/*
 * Every read stalls for an hour: the chunk fails after the reader's 300 ms
 * timeout with one message, and so does the next one, on the fresh handle the
 * read path opened after closing the stuck one (without waiting for the
 * stalled reads).
 */
START_TEST(stall_forever)
{
	uint32_t readers = g_readers[_i];
	struct strata_config c;
	struct strata_registry *reg =
		reg_with(&c, "[io-faulty]\nstall_rate = 1\nstall_ms = 3600000\n");
	struct strata_ple_reader *r;
	struct strata_ple_stats st;
	size_t n = readers ? CHUNK : SMALL; /* batched over the reader threads when there are */
	uint64_t *rows = malloc(CHUNK * sizeof(*rows));
	float *out = malloc(CHUNK * ROW * sizeof(float));
	struct inj in;

	ck_assert(rows && out);
	ck_assert_int_eq(reader_open(reg, "io-faulty", readers, 300, &r), 0);
	chunk_rows(rows, n, 0);
	ck_assert_int_eq(read_chunk(r, rows, n, out, &st), -ETIMEDOUT);
	ck_assert_msg(g_errors == 1, "%s", g_log);
	ck_error_says("no read landed for 300 ms through io-faulty (");
	ck_error_says("bytes at offset ");
	ck_assert(check_out(rows, n, out, 1));
	ck_assert_int_eq(read_chunk(r, rows, 10, out, &st), -ETIMEDOUT);
	ck_assert_msg(g_errors == 2, "%s", g_log);
	ck_assert(check_out(rows, 10, out, 1));
	strata_ple_reader_close(r);
	parse_injected(&in);
	ck_assert_uint_gt(in.stalls, 0);
	ck_assert_uint_gt(in.not_reaped, 0); /* the reads the reader gave up on */
	printf("faults: stall=1h    readers %u: -ETIMEDOUT after the 300 ms timeout, twice; "
	       "%u stalled reads abandoned\n", readers, in.not_reaped);
	strata_registry_free(reg);
	strata_config_free(&c);
	free(rows);
	free(out);
}
END_TEST

/* Everything at once, one reader for eight chunks: no row is ever wrong. */
START_TEST(mixed)
{
	uint32_t readers = g_readers[_i];
	struct outcome oc;

	run_case("[io-faulty]\nseed = 42\neio_rate = 0.01\nshort_rate = 0.01\ndelay_us = 50\n"
		 "stall_rate = 0.01\nstall_ms = 30\nfail_at = 5, 50\n", readers, 10000, 8, 0, &oc);
	print_outcome("mixed", readers, &oc);
	ck_assert_int_eq(oc.ok + oc.failed, 8);
	ck_assert_int_gt(oc.ok, 0);
	ck_assert_uint_gt(oc.total.eio + oc.total.shorts + oc.total.stalls, 0);
	ck_assert_uint_eq(oc.total.not_reaped, 0);
}
END_TEST

/* ---- configuration ------------------------------------------------------------------- */

START_TEST(config_errors)
{
	static const struct {
		const char *ini;
		int err;
		const char *log;
	} cases[] = {
		{ "[io-faulty]\neio_rate = 2\n", -EINVAL,
		  "io-faulty: eio_rate = '2' is invalid: expected a chance from 0 to 1" },
		{ "[io-faulty]\nshort_rate = lots\n", -EINVAL, "short_rate = 'lots' is invalid" },
		{ "[io-faulty]\nfail_at = 3,,4\n", -EINVAL, "fail_at = '3,,4' is invalid" },
		{ "[io-faulty]\nfail_at = 0\n", -EINVAL, "fail_at = '0' is invalid" },
		{ "[io-faulty]\nstall_ms = 0\n", -EINVAL, "stall_ms = '0' is invalid" },
		{ "[io-faulty]\nseed = -1\n", -EINVAL, "seed = '-1' is invalid" },
		{ "[io-faulty]\ninner = io-faulty\n", -ELOOP, "'io-faulty' cannot load itself" },
		{ "[io-faulty]\ninner = io-nope\n", -ENOENT, "strata-io-nope.so not found" },
		{ "[io-faulty]\ninner = path-batched\n", -ENOTSUP, "kind io expected, got path" },
		{ "[io-faulty]\neio = 0.5\n", -EINVAL, "unknown key 'eio' in [io-faulty]" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct strata_config c;
		struct strata_registry *reg = reg_with(&c, cases[i].ini);
		struct strata_ple_reader *r = (void *)1;

		log_reset();
		ck_assert_int_eq(reader_open(reg, "io-faulty", 1, 0, &r), cases[i].err);
		ck_assert_ptr_null(r);
		ck_log_has(cases[i].log);
		strata_registry_free(reg);
		strata_config_free(&c);
	}
}
END_TEST

/* The plugin is a plugin like any other: found by name, never by "auto". */
START_TEST(loads_as_plugin)
{
	struct strata_config c;
	struct strata_registry *reg = reg_with(&c, NULL);
	struct strata_plugin *p;
	struct strata_ple_reader *r;

	ck_assert_int_eq(strata_registry_load(reg, STRATA_PLUGIN_IO, "io-faulty", &p), 0);
	ck_assert_str_eq(p->path, FDIR "/strata-io-faulty.so");
	ck_assert_int_eq(p->score, 1);
	strata_registry_free(reg);
	strata_config_free(&c);
	/* "auto" scans the search path: io-faulty has the lowest score there. */
	reg = reg_with(&c, NULL);
	ck_assert_int_eq(reader_open(reg, "auto", 0, 0, &r), 0);
	ck_assert_str_ne(strata_ple_reader_io_name(r), "io-faulty");
	strata_ple_reader_close(r);
	strata_registry_free(reg);
	strata_config_free(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tcase_create("faults");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, transient_schedule, 0, 3);
	tcase_add_test(tc, random_faults);
	tcase_add_loop_test(tc, persistent_eio, 0, 3);
	tcase_add_loop_test(tc, persistent_short, 0, 3);
	tcase_add_loop_test(tc, delays, 0, 3);
	tcase_add_loop_test(tc, stalls, 0, 3);
	tcase_add_loop_test(tc, stall_forever, 0, 3);
	tcase_add_loop_test(tc, mixed, 0, 3);
	tcase_add_test(tc, config_errors);
	tcase_add_test(tc, loads_as_plugin);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
