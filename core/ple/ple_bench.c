/*
 * ple_bench.c - `strata ple-bench`: the PLE reader against the disk.
 *
 * Makes (or reuses) a synthetic table file, turns a token stream (a text
 * tokenized with a model's tokenizer, or seeded random ids) into qwen4exp
 * row ids, and reads it chunk by chunk with every io plugin and reader
 * count asked for, each run with a cold page cache and an empty row cache.
 * The row ids are scaled from the full 320M-row table to the file's rows,
 * so a smaller file sees the same spread over its pages.  Optionally the
 * consumer "computes" for a fixed time after starting each chunk, and the
 * time it then waits for the rows is what the engine would lose.
 */
#define _GNU_SOURCE
#include "ple/ple_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "cpu/types.h"
#include "gguf/gguf.h"
#include "plugin/registry.h"
#include "tok/tokenizer.h"
#include "util/log.h"

#define FULL_ROWS 320001536ull /* the qwen4exp table, padded to 128 rows */

struct bench {
	const char *table, *text, *model, *csv, *plugin_dir;
	uint64_t rows, n_random, seed;
	double size_gib, compute_ms;
	uint32_t type, row_len, vocab, chunk, max_chunks, depth, row_cache;
	char *plugins, *readers;
	int remake, stats, make_only;
	/* derived */
	uint32_t rb;
	int32_t *tokens;
	size_t n_tokens;
};

/* Totals of one run (one plugin, one reader count). */
struct run_total {
	uint64_t rows, hits, reads, chunks;
	double read_ms, submit_ms, wait_ms, wait_max_ms;
	struct ple_hist lat;
};

int strata_cmd_ple_bench(int argc, char **argv);

static void bench_usage(FILE *f)
{
	fprintf(f,
		"usage: strata ple-bench --table FILE [options]\n\n"
		"Reads the PLE rows of a token stream from a synthetic table file, per io\n"
		"plugin and reader count, with a cold cache, and reports rows/s, page\n"
		"reads/s, MB/s, read latency and the consumer's wait.\n\n"
		"table (made when missing or of another size, progress on stderr):\n"
		"  --table FILE        the table file (raw rows back to back)\n"
		"  --rows N            rows in the table (default: 4 GiB worth)\n"
		"  --size GIB          or its size in GiB\n"
		"  --type T            row type: iq4_nl (default), q4_0, q5_0, q5_1, q8_0, bf16\n"
		"  --row-len N         values per row (160)\n"
		"  --remake            write the table even when one of the right size exists\n"
		"  --make-only         make (or check) the table, then stop\n"
		"token stream:\n"
		"  --text FILE -m GGUF the tokens of a text file, tokenized with GGUF's vocab\n"
		"  --random N          N seeded random token ids (default: 4 chunks)\n"
		"  --vocab N           random ids are below N (248320)\n"
		"  --seed N            (1)\n"
		"reads:\n"
		"  --chunk N           tokens per chunk (8192)\n"
		"  --chunks N          at most N chunks per run (all)\n"
		"  --plugin LIST       io plugins to compare, comma-separated; 'mmap' reads\n"
		"                      through the page cache; default auto\n"
		"  --readers LIST      reader counts, comma-separated; 0 = single-thread path (8)\n"
		"  --depth N           reads in flight per reader (32)\n"
		"  --row-cache N       row cache rows (262144)\n"
		"  --compute-ms X      the consumer asks for each chunk X ms after starting it\n"
		"  --csv FILE          append one line per run\n"
		"  --plugin-dir DIR    look for plugins in DIR first\n"
		"  --stats             print the reader's stats line for every chunk\n");
}

/* ---- arguments --------------------------------------------------------------------- */

static int num_arg(const char *flag, const char *v, double lo, double hi, double *out)
{
	char *end;
	double x;

	errno = 0;
	x = v ? strtod(v, &end) : 0;
	if (!v || !*v || *end || errno || x < lo || x > hi) {
		strata_error("ple-bench: %s needs a number in [%g, %g] (got '%s')", flag, lo, hi,
			     v ? v : "");
		return -EINVAL;
	}
	*out = x;
	return 0;
}

static int parse_args(struct bench *b, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		double x = 0;
		int rc = 0;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			bench_usage(stdout);
			return 1;
		}
		if (!strcmp(a, "--remake") || !strcmp(a, "--stats") || !strcmp(a, "--make-only")) {
			*(a[2] == 'r' ? &b->remake : a[2] == 's' ? &b->stats : &b->make_only) = 1;
			continue;
		}
		if (!v) {
			strata_error("ple-bench: %s needs a value (see --help)", a);
			return -EINVAL;
		}
		if (!strcmp(a, "--table"))
			b->table = v;
		else if (!strcmp(a, "--text"))
			b->text = v;
		else if (!strcmp(a, "-m") || !strcmp(a, "--model"))
			b->model = v;
		else if (!strcmp(a, "--csv"))
			b->csv = v;
		else if (!strcmp(a, "--plugin-dir"))
			b->plugin_dir = v;
		else if (!strcmp(a, "--plugin"))
			b->plugins = (char *)v;
		else if (!strcmp(a, "--readers"))
			b->readers = (char *)v;
		else if (!strcmp(a, "--type")) {
			int t = strata_type_from_name(v);

			if (t < 0 || !strata_ple_type_ok((uint32_t)t)) {
				strata_error("ple-bench: unknown row type '%s'", v);
				return -EINVAL;
			}
			b->type = (uint32_t)t;
		} else if (!strcmp(a, "--rows") && !(rc = num_arg(a, v, 1, UINT32_MAX - 1.0, &x)))
			b->rows = (uint64_t)x;
		else if (!strcmp(a, "--size") && !(rc = num_arg(a, v, 1e-6, 1e5, &x)))
			b->size_gib = x;
		else if (!strcmp(a, "--row-len") && !(rc = num_arg(a, v, 1, 65536, &x)))
			b->row_len = (uint32_t)x;
		else if (!strcmp(a, "--random") && !(rc = num_arg(a, v, 1, 1e9, &x)))
			b->n_random = (uint64_t)x;
		else if (!strcmp(a, "--vocab") && !(rc = num_arg(a, v, 1, INT32_MAX, &x)))
			b->vocab = (uint32_t)x;
		else if (!strcmp(a, "--seed") && !(rc = num_arg(a, v, 0, 1e18, &x)))
			b->seed = (uint64_t)x;
		else if (!strcmp(a, "--chunk") && !(rc = num_arg(a, v, 1, 1 << 24, &x)))
			b->chunk = (uint32_t)x;
		else if (!strcmp(a, "--chunks") && !(rc = num_arg(a, v, 1, 1e9, &x)))
			b->max_chunks = (uint32_t)x;
		else if (!strcmp(a, "--depth") && !(rc = num_arg(a, v, 1, 4096, &x)))
			b->depth = (uint32_t)x;
		else if (!strcmp(a, "--row-cache") && !(rc = num_arg(a, v, 0, UINT32_MAX, &x)))
			b->row_cache = (uint32_t)x;
		else if (!strcmp(a, "--compute-ms") && !(rc = num_arg(a, v, 0, 1e7, &x)))
			b->compute_ms = x;
		else if (!rc) {
			strata_error("ple-bench: unknown option '%s' (see --help)", a);
			return -EINVAL;
		}
		if (rc)
			return rc;
		i++;
	}
	if (!b->table) {
		strata_error("ple-bench: --table FILE is required (see --help)");
		return -EINVAL;
	}
	if (!b->text != !b->model) {
		strata_error("ple-bench: --text and -m go together (a text needs a tokenizer)");
		return -EINVAL;
	}
	return 0;
}

/* ---- the table file ------------------------------------------------------------------- */

static double now_s(void)
{
	return (double)strata_now_ns() / 1e9;
}

static void drop_cache(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
}

static int write_table(const struct bench *b)
{
	const size_t per = (8u << 20) / b->rb;
	uint64_t total = b->rows * b->rb, done_rows = 0;
	double t0 = now_s(), last = 0;
	int tty = isatty(2);
	uint8_t *buf = malloc(per * b->rb);
	int fd = open(b->table, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || !buf) {
		strata_error("ple-bench: cannot write %s: %s", b->table,
			     fd < 0 ? strerror(errno) : "out of memory");
		free(buf);
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	while (done_rows < b->rows) {
		size_t n = b->rows - done_rows < per ? (size_t)(b->rows - done_rows) : per;
		ssize_t w;

		for (size_t i = 0; i < n; i++)
			strata_ple_synth_row(b->type, b->row_len, done_rows + i, buf + i * b->rb);
		w = pwrite(fd, buf, n * b->rb, (off_t)(done_rows * b->rb));
		if (w != (ssize_t)(n * b->rb)) {
			strata_error("ple-bench: writing %s at offset %llu: %s", b->table,
				     (unsigned long long)(done_rows * b->rb),
				     w < 0 ? strerror(errno) : "short write (disk full?)");
			free(buf);
			close(fd);
			return -EIO;
		}
		done_rows += n;
		/* A progress line that redraws on a terminal, one line every 10 s in a log. */
		if (now_s() - last > (tty ? 0.5 : 10.0) || done_rows == b->rows) {
			double gb = (double)(done_rows * b->rb) / 1e9;

			last = now_s();
			fprintf(stderr, "%sple-bench: writing %s: %.2f of %.2f GB (%.0f%%), %.0f MB/s%s",
				tty ? "\r" : "", b->table, gb, (double)total / 1e9,
				100.0 * gb * 1e9 / (double)total, gb * 1e3 / (last - t0 + 1e-9),
				tty ? " " : "\n");
		}
	}
	if (tty)
		fprintf(stderr, "\n");
	free(buf);
	if (fdatasync(fd)) {
		strata_error("ple-bench: writing %s: %s", b->table, strerror(errno));
		close(fd);
		return -EIO;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return 0;
}

static int ensure_table(struct bench *b)
{
	struct stat sb;

	b->rb = (uint32_t)strata_type_row_bytes(b->type, b->row_len);
	if (!b->rb) {
		strata_error("ple-bench: %u values are not a whole number of %s blocks",
			     b->row_len, strata_type_name(b->type));
		return -EINVAL;
	}
	if (!b->rows)
		b->rows = (uint64_t)((b->size_gib > 0 ? b->size_gib : 4.0) * 1073741824.0) / b->rb;
	if (b->rows < 1 || b->rows >= UINT32_MAX) {
		strata_error("ple-bench: a table of %llu rows is not supported",
			     (unsigned long long)b->rows);
		return -EINVAL;
	}
	if (!b->remake && stat(b->table, &sb) == 0 && (uint64_t)sb.st_size == b->rows * b->rb) {
		fprintf(stderr, "ple-bench: reusing %s (%llu rows of %s, %.2f GB)\n", b->table,
			(unsigned long long)b->rows, strata_type_name(b->type),
			(double)sb.st_size / 1e9);
		return 0;
	}
	return write_table(b);
}

/* ---- the token stream --------------------------------------------------------------- */

static int load_text(struct bench *b)
{
	struct strata_gguf *g;
	struct strata_tokenizer *tok = NULL;
	FILE *f = fopen(b->text, "rb");
	char *text = NULL;
	long len = -1;
	int n = -EIO;

	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(text = malloc((size_t)len + 1)) || fread(text, 1, (size_t)len, f) != (size_t)len) {
		strata_error("ple-bench: cannot read %s: %s", b->text,
			     errno ? strerror(errno) : "read error");
		goto out;
	}
	if (strata_gguf_open(b->model, &g))
		goto out;
	n = strata_tokenizer_load(g, &tok);
	strata_gguf_close(g);
	if (n)
		goto out;
	n = strata_tokenize(tok, text, (size_t)len, 0, &b->tokens);
	if (n >= 0)
		b->n_tokens = (size_t)n;
out:
	strata_tokenizer_free(tok);
	free(text);
	if (f)
		fclose(f);
	return n < 0 ? n : 0;
}

static int make_tokens(struct bench *b)
{
	uint64_t s = b->seed * 0x9E3779B97F4A7C15ull + 1;

	if (b->text) {
		int rc = load_text(b);

		if (rc)
			return rc;
		if (!b->n_tokens) {
			strata_error("ple-bench: %s has no tokens", b->text);
			return -EINVAL;
		}
		fprintf(stderr, "ple-bench: %zu tokens from %s\n", b->n_tokens, b->text);
		return 0;
	}
	b->n_tokens = b->n_random ? b->n_random : (size_t)b->chunk * 4;
	b->tokens = malloc(b->n_tokens * sizeof(int32_t));
	if (!b->tokens)
		return -ENOMEM;
	for (size_t i = 0; i < b->n_tokens; i++) {
		uint64_t z = (s += 0x9E3779B97F4A7C15ull);

		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		b->tokens[i] = (int32_t)((z ^ (z >> 31)) % b->vocab);
	}
	return 0;
}

/* ---- one run ----------------------------------------------------------------------------- */

static void sleep_ms(double ms)
{
	struct timespec ts = { (time_t)(ms / 1e3), (long)(ms * 1e6) % 1000000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int read_stream(const struct bench *b, struct strata_ple_reader *r, struct run_total *t)
{
	struct strata_ple_hash h;
	struct strata_ple_hist hist;
	struct strata_ple_chunk *c = NULL;
	size_t rows_cap = (size_t)b->chunk * STRATA_PLE_HEADS;
	uint64_t *rows = malloc(rows_cap * sizeof(*rows));
	float *out = malloc(rows_cap * b->row_len * sizeof(float));
	int rc = strata_ple_chunk_create(r, &c);

	if (!rows || !out || rc) {
		rc = -ENOMEM;
		goto out;
	}
	/* An engine reuses its buffers: first-touch page faults are not the reader's cost. */
	memset(out, 0, rows_cap * b->row_len * sizeof(float));
	strata_ple_hash_default(&h);
	strata_ple_hist_init(&h, &hist);
	for (size_t at = 0; at < b->n_tokens; at += b->chunk) {
		size_t n = b->n_tokens - at < b->chunk ? b->n_tokens - at : b->chunk;
		struct strata_ple_stats st;

		if (b->max_chunks && t->chunks >= b->max_chunks)
			break;
		strata_ple_row_ids(&h, &hist, b->tokens + at, n, rows);
		if (b->rows < FULL_ROWS)
			for (size_t i = 0; i < n * STRATA_PLE_HEADS; i++)
				rows[i] = rows[i] * b->rows / FULL_ROWS;
		if ((rc = strata_ple_start(c, rows, n * STRATA_PLE_HEADS, out)))
			goto out;
		if (b->compute_ms > 0)
			sleep_ms(b->compute_ms);
		if ((rc = strata_ple_wait(c)))
			goto out;
		strata_ple_chunk_stats(c, &st);
		strata_ple_hist_merge(&t->lat, &c->lat);
		t->chunks++;
		t->rows += st.rows;
		t->hits += st.hits;
		t->reads += st.reads;
		t->read_ms += st.read_ms;
		t->submit_ms += st.submit_ms;
		t->wait_ms += st.blocked_ms;
		if (st.blocked_ms > t->wait_max_ms)
			t->wait_max_ms = st.blocked_ms;
	}
out:
	strata_ple_chunk_free(c);
	free(rows);
	free(out);
	return rc;
}

static void report(const struct bench *b, const char *plugin, const char *io, uint32_t readers,
		   const struct run_total *t, FILE *csv)
{
	double s = t->read_ms / 1e3, p50 = strata_ple_hist_quantile(&t->lat, 0.5);
	double p99 = strata_ple_hist_quantile(&t->lat, 0.99), n = t->chunks ? (double)t->chunks : 1;
	double rows_s = s > 0 ? (double)t->rows / s : 0, reads_s = s > 0 ? (double)t->reads / s : 0;

	printf("%-10s %-6s %7u %5u %6u %6llu %10.0f %9.0f %7.1f %6.0f %6.0f %5.1f %9.1f %8.2f "
	       "%8.2f %8.2f\n", plugin, io, readers, b->depth, b->chunk,
	       (unsigned long long)t->chunks, rows_s, reads_s, reads_s * STRATA_PLE_PAGE / 1e6,
	       p50, p99, t->rows ? 100.0 * (double)t->hits / (double)t->rows : 0.0,
	       t->read_ms / n, t->submit_ms / n, t->wait_ms / n, t->wait_max_ms);
	fflush(stdout);
	if (csv)
		fprintf(csv, "%s,%s,%u,%u,%u,%g,%llu,%llu,%.2f,%llu,%.3f,%.0f,%.0f,%.2f,%.0f,%.0f,"
			"%.3f,%.3f,%.3f,%.3f\n", plugin, io, readers, b->depth, b->chunk,
			b->compute_ms, (unsigned long long)t->chunks, (unsigned long long)t->rows,
			t->rows ? 100.0 * (double)t->hits / (double)t->rows : 0.0,
			(unsigned long long)t->reads, s, rows_s, reads_s,
			reads_s * STRATA_PLE_PAGE / 1e6, p50, p99, t->read_ms / n, t->submit_ms / n,
			t->wait_ms / n, t->wait_max_ms);
}

static int run_one(const struct bench *b, struct strata_registry *reg, const char *plugin,
		   uint32_t readers, FILE *csv)
{
	struct strata_ple_table tab = { b->table, 0, b->rows, b->type, b->row_len };
	struct strata_ple_opts o;
	struct strata_ple_reader *r;
	struct run_total t;
	int mmap_mode = !strcmp(plugin, "mmap"), rc;

	memset(&t, 0, sizeof(t));
	strata_ple_opts_default(&o);
	o.readers = readers;
	o.depth = b->depth;
	o.row_cache = b->row_cache;
	o.io = mmap_mode ? STRATA_PLE_IO_MMAP : STRATA_PLE_IO_DIRECT;
	o.plugin = plugin;
	o.stats = b->stats;
	o.chunk_rows_hint = b->chunk * STRATA_PLE_HEADS;
	drop_cache(b->table);
	if ((rc = strata_ple_reader_open(reg, &tab, &o, &r)))
		return rc;
	fprintf(stderr, "ple-bench: %s\n", strata_ple_reader_describe(r));
	rc = read_stream(b, r, &t);
	if (!rc)
		report(b, strata_ple_reader_io_name(r), mmap_mode ? "mmap" : "direct", readers, &t,
		       csv);
	strata_ple_reader_close(r);
	return rc;
}

/* Every plugin x reader count; stops at the first error. */
static int run_all(struct bench *b, struct strata_registry *reg)
{
	char *plist = strdup(b->plugins ? b->plugins : "auto"), *sp = NULL, *p;
	FILE *csv = NULL;
	int rc = 0;

	if (!plist)
		return -ENOMEM;
	if (b->csv) {
		struct stat sb;
		int fresh = stat(b->csv, &sb) != 0 || sb.st_size == 0;

		if (!(csv = fopen(b->csv, "a"))) {
			strata_error("ple-bench: cannot write %s: %s", b->csv, strerror(errno));
			free(plist);
			return -EIO;
		}
		if (fresh)
			fprintf(csv, "plugin,io,readers,depth,chunk,compute_ms,chunks,rows,hit_pct,"
				"reads,read_s,rows_per_s,reads_per_s,mb_per_s,p50_us,p99_us,"
				"read_ms_per_chunk,submit_ms_per_chunk,wait_ms_avg,wait_ms_max\n");
	}
	printf("%-10s %-6s %7s %5s %6s %6s %10s %9s %7s %6s %6s %5s %9s %8s %8s %8s\n",
	       "plugin", "io", "readers", "depth", "chunk", "chunks", "rows/s", "reads/s",
	       "MB/s", "p50us", "p99us", "hit%", "read ms", "submit", "wait ms", "max wait");
	for (p = strtok_r(plist, ",", &sp); p && !rc; p = strtok_r(NULL, ",", &sp)) {
		char *rlist = strdup(b->readers ? b->readers : "8"), *sr = NULL, *q;

		if (!rlist) {
			rc = -ENOMEM;
			break;
		}
		for (q = strtok_r(rlist, ",", &sr); q && !rc; q = strtok_r(NULL, ",", &sr)) {
			double x;

			if (!(rc = num_arg("--readers", q, 0, 1024, &x)))
				rc = run_one(b, reg, p, (uint32_t)x, csv);
		}
		free(rlist);
	}
	if (csv)
		fclose(csv);
	free(plist);
	return rc;
}

int strata_cmd_ple_bench(int argc, char **argv)
{
	struct bench b = { 0 };
	struct strata_config cfg;
	struct strata_registry *reg = NULL;
	int rc;

	b.type = STRATA_TYPE_IQ4_NL;
	b.row_len = 160;
	b.vocab = 248320;
	b.seed = 1;
	b.chunk = 8192;
	b.depth = 32;
	b.row_cache = 262144;
	rc = parse_args(&b, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (strata_config_init(&cfg))
		return 1;
	if (b.plugin_dir && !(cfg.plugin_dir = strdup(b.plugin_dir))) {
		strata_config_free(&cfg);
		return 1;
	}
	rc = ensure_table(&b);
	if (!rc && b.make_only)
		goto out;
	if (!rc)
		rc = make_tokens(&b);
	if (!rc)
		rc = strata_registry_create(&cfg, argc > 0 ? argv[0] : "strata", &reg);
	if (!rc)
		rc = run_all(&b, reg);
out:
	strata_registry_free(reg);
	strata_config_free(&cfg);
	free(b.tokens);
	return rc ? 1 : 0;
}
