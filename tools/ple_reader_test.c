/*
 * ple_reader_test --selftest: the PLE reader on this machine's disk, with
 * every io backend it has, must give byte-identical rows.
 *
 * Synthetic tables whose rows encode their own index (90-byte IQ4_NL rows
 * from offset 0, 110-byte Q5_0 rows from an unaligned offset, so rows cross
 * 4 KiB pages) are written to a directory that takes O_DIRECT (not tmpfs).
 * A list of row ids with the table's first and last rows, rows across
 * pages, duplicates and out-of-range ids is read batched and through one
 * ticket, with readers 0, 1, 3 and 8, through every io plugin on the search
 * path, the page cache (mmap) and an in-test pread backend; each result is
 * compared with rows decoded straight from strata_ple_synth_row().  A repeat
 * of the batched chunk must come entirely from the row cache.
 *
 * Exit: 0 all passed, 1 a mismatch or error, 77 nothing could run here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef __linux__
#include <sys/vfs.h> /* statfs: tmpfs takes O_DIRECT but caches all the same */
#endif
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "plat/plat.h"
#include "cpu/types.h"
#include "ple/ple.h"
#include "plugin/registry.h"
#include "util/log.h"

#ifndef STRATA_PLUGIN_DIR
#define STRATA_PLUGIN_DIR "plugins"
#endif
#define TMPFS_MAGIC_ 0x01021994
/* Windows has no O_DIRECT: the in-test backend's direct handles read through
 * the cache there, keeping the direct alignment rules all the same. */
#ifndef O_DIRECT
#define O_DIRECT 0
#endif

struct table_case {
	const char *name;
	uint32_t type;
	uint64_t base, n_rows;
	char path[4096];
	uint32_t rb;
};

static int g_fail;

/* ---- an in-test io backend: pread inside reap() ---------------------------------------- */

struct tio {
	int fd, direct;
	uint32_t depth, n;
	struct strata_io_req **q;
};

static int tio_open(const struct strata_host *host, const char *path, uint32_t flags,
		    uint32_t depth, void **out)
{
	struct tio *t = calloc(1, sizeof(*t));

	(void)host;
	if (!t)
		return -ENOMEM;
	t->direct = !!(flags & STRATA_IO_DIRECT);
	t->fd = open(path, O_RDONLY | (t->direct ? O_DIRECT : 0));
	t->depth = depth;
	t->q = calloc(depth, sizeof(*t->q));
	if (t->fd < 0 || !t->q) {
		int e = t->fd < 0 ? errno : ENOMEM;

		if (t->fd >= 0)
			close(t->fd);
		free(t->q);
		free(t);
		return -e;
	}
	*out = t;
	return 0;
}

static void tio_close(void *h)
{
	struct tio *t = h;

	if (!t)
		return;
	close(t->fd);
	free(t->q);
	free(t);
}

static int tio_caps(void *h, struct strata_io_caps *c)
{
	struct tio *t = h;

	c->flags = STRATA_IO_CAP_INLINE | (t->direct ? STRATA_IO_CAP_DIRECT : 0);
	c->depth = t->depth;
	c->buf_align = t->direct ? 4096 : 1;
	c->offset_align = t->direct ? 4096 : 1;
	return 0;
}

static int64_t tio_size(void *h)
{
	struct stat sb;

	return fstat(((struct tio *)h)->fd, &sb) ? -errno : (int64_t)sb.st_size;
}

static int tio_submit(void *h, struct strata_io_req *const *reqs, uint32_t n)
{
	struct tio *t = h;
	uint32_t k = 0;

	while (k < n && t->n < t->depth)
		t->q[t->n++] = reqs[k++];
	return (int)k;
}

static int tio_reap(void *h, struct strata_io_req **done, uint32_t min_done, uint32_t max_done,
		    int timeout_ms)
{
	struct tio *t = h;
	uint32_t k = 0;

	(void)min_done;
	(void)timeout_ms;
	while (k < max_done && t->n) {
		struct strata_io_req *r = t->q[--t->n];
		ssize_t got = pread(t->fd, r->buf, r->len, (off_t)r->offset);

		r->result = got < 0 ? -errno : (int32_t)got;
		done[k++] = r;
	}
	return (int)k;
}

static const struct strata_io_ops g_tio = {
	1, tio_open, tio_close, tio_caps, tio_size, tio_submit, tio_reap, NULL,
};

/* ---- where to write ------------------------------------------------------------------------ */

/* 1 when dir is not tmpfs and direct reads (O_DIRECT, or unbuffered ones on
 * Windows) work there. */
static int direct_ok(const char *dir, char *why, size_t n)
{
	char path[4096], buf[4096];
	int fd, ok = 0;
#ifdef __linux__
	struct statfs sf;

	if (statfs(dir, &sf) == 0 && (unsigned long)sf.f_type == TMPFS_MAGIC_) {
		snprintf(why, n, "%s is tmpfs", dir);
		return 0;
	}
#endif
	snprintf(path, sizeof(path), "%s/ple-direct-probe-%d", dir, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		snprintf(why, n, "cannot write in %s: %s", dir, strerror(errno));
		return 0;
	}
	memset(buf, 0x5a, sizeof(buf));
	ok = write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf);
	close(fd);
	ok = ok && strata_direct_read_works(path, 4096);
	if (!ok)
		snprintf(why, n, "%s does not take direct reads", dir);
	unlink(path);
	return ok;
}

static const char *pick_dir(const char *forced)
{
	static char cwd[4096];
	const char *cands[3] = { forced, getenv("TMPDIR"), getcwd(cwd, sizeof(cwd)) };
	char why[512];

	for (int i = 0; i < 3; i++) {
		if (!cands[i] || !*cands[i])
			continue;
		if (direct_ok(cands[i], why, sizeof(why)))
			return cands[i];
		printf("note: %s\n", why);
	}
	return NULL;
}

/* ---- tables and row lists --------------------------------------------------------------------- */

static int write_table(struct table_case *t, const char *dir)
{
	size_t total = (size_t)(t->base + t->n_rows * t->rb) + 777; /* a tail after the table */
	uint8_t *buf = calloc(1, total);
	FILE *f;
	int ok;

	snprintf(t->path, sizeof(t->path), "%s/ple-selftest-%s-%d.bin", dir, t->name,
		 (int)getpid());
	if (!buf)
		return -1;
	memset(buf, 0xee, (size_t)t->base); /* a "header" before row 0 */
	for (uint64_t r = 0; r < t->n_rows; r++)
		strata_ple_synth_row(t->type, 160, r, buf + t->base + r * t->rb);
	f = fopen(t->path, "wb");
	ok = f && fwrite(buf, 1, total, f) == total;
	if (f)
		ok = !fclose(f) && ok;
	free(buf);
	if (!ok)
		printf("FAIL: cannot write %s\n", t->path);
	return ok ? 0 : -1;
}

/* First/last rows, rows that cross pages, duplicates, out-of-range ids, random ids. */
static size_t make_rows(const struct table_case *t, uint64_t *rows, size_t cap)
{
	uint64_t s = 12345;
	size_t n = 0, crossing = 0;

	rows[n++] = 0;
	rows[n++] = t->n_rows - 1;
	rows[n++] = t->n_rows;
	rows[n++] = UINT64_MAX;
	for (uint64_t r = 0; r < t->n_rows && crossing < 300; r += 7) {
		uint64_t off = t->base + r * t->rb;

		if (off / 4096 != (off + t->rb - 1) / 4096) {
			rows[n++] = r;
			crossing++;
		}
	}
	while (n < cap) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		switch ((s >> 60) & 7) {
		case 0: /* a duplicate of an earlier id */
			rows[n] = rows[(s >> 20) % n];
			break;
		case 1:
			rows[n] = t->n_rows + ((s >> 33) & 1023); /* out of range */
			break;
		default:
			rows[n] = (s >> 24) % t->n_rows;
		}
		n++;
	}
	rows[cap - 1] = t->n_rows - 1;
	return n;
}

static float *reference(const struct table_case *t, const uint64_t *rows, size_t n)
{
	float *ref = calloc(n * 160, sizeof(float));
	uint8_t raw[512];

	for (size_t i = 0; ref && i < n; i++)
		if (rows[i] < t->n_rows) {
			strata_ple_synth_row(t->type, 160, rows[i], raw);
			strata_ple_decode_row(t->type, raw, ref + i * 160, 160);
		}
	return ref;
}

/* ---- one backend, one reader count ------------------------------------------------------------ */

struct backend {
	const char *name;
	int mmap;
	const struct strata_io_ops *ops;
};

static int read_check(struct strata_ple_chunk *c, const uint64_t *rows, size_t n,
		      const float *ref, float *out, struct strata_ple_stats *st, const char *what)
{
	int rc;

	memset(out, 0xff, n * 160 * sizeof(float)); /* NaNs: a row left unwritten shows */
	if ((rc = strata_ple_start(c, rows, n, out)) || (rc = strata_ple_wait(c))) {
		printf("  FAIL %s: %s\n", what, strerror(-rc));
		return -1;
	}
	strata_ple_chunk_stats(c, st);
	for (size_t i = 0; i < n; i++)
		if (memcmp(out + i * 160, ref + i * 160, 160 * sizeof(float))) {
			printf("  FAIL %s: row %zu (id %llu) differs from the reference\n", what, i,
			       (unsigned long long)rows[i]);
			return -1;
		}
	return 0;
}

static void run_case(struct strata_registry *reg, const struct table_case *t,
		     const struct backend *b, uint32_t readers, const uint64_t *rows,
		     size_t n_big, size_t n_small, const float *ref, float *out)
{
	struct strata_ple_table tab = { t->path, t->base, t->n_rows, t->type, 160 };
	struct strata_ple_opts o;
	struct strata_ple_reader *r;
	struct strata_ple_chunk *c = NULL;
	struct strata_ple_stats s1, s2, s3;
	uint64_t in_range = 0;
	int bad;

	strata_ple_opts_default(&o);
	o.readers = readers;
	o.row_cache = 1u << 16;
	o.io = b->mmap ? STRATA_PLE_IO_MMAP : STRATA_PLE_IO_DIRECT;
	o.plugin = b->name;
	o.io_ops = b->ops;
	o.io_name = b->name;
	if (strata_ple_reader_open(reg, &tab, &o, &r)) {
		printf("  FAIL %s readers %u: the reader did not open\n", b->name, readers);
		g_fail++;
		return;
	}
	/* The short chunk first, while the row cache is cold, so it really reads. */
	bad = strata_ple_chunk_create(r, &c) ||
	      read_check(c, rows + n_big - n_small, n_small, ref + (n_big - n_small) * 160, out,
			 &s3, "one-ticket chunk") ||
	      read_check(c, rows, n_big, ref, out, &s1, "batched chunk") ||
	      read_check(c, rows, n_big, ref, out, &s2, "repeat");
	for (size_t i = 0; i < n_big; i++)
		in_range += rows[i] < t->n_rows;
	if (!bad && (s2.hits != in_range || s2.reads != 0)) {
		printf("  FAIL repeat: %llu of %llu rows from the row cache, %llu page reads\n",
		       (unsigned long long)s2.hits, (unsigned long long)in_range,
		       (unsigned long long)s2.reads);
		bad = 1;
	}
	if (!bad && (s3.batched || s3.reads == 0)) {
		printf("  FAIL: the short chunk was %s\n", s3.batched ? "batched" : "not read");
		bad = 1;
	}
	if (!bad && s1.batched != (readers > 0)) {
		printf("  FAIL: %zu rows with %u readers went %s\n", n_big, readers,
		       s1.batched ? "batched" : "through one ticket");
		bad = 1;
	}
	printf("  %-9s readers %u: %s  (%llu page reads, %llu distinct rows, repeat %llu%% "
	       "cached)\n", b->name, readers, bad ? "FAIL" : "ok", (unsigned long long)s1.reads,
	       (unsigned long long)s1.unique_misses,
	       in_range ? (unsigned long long)(100 * s2.hits / in_range) : 0ull);
	g_fail += bad;
	strata_ple_chunk_free(c);
	strata_ple_reader_close(r);
}

/* ---- backends on this machine --------------------------------------------------------------------- */

struct found {
	char names[16][64];
	int n;
};

static void on_plugin(void *user, const char *path, const struct strata_plugin *p, int err,
		      const char *reason)
{
	struct found *f = user;

	if (p && p->desc->kind == STRATA_PLUGIN_IO && f->n < 16)
		snprintf(f->names[f->n++], 64, "%s", p->desc->name);
	else if (!p && strstr(path, "strata-io-"))
		printf("note: skipping %s: %s\n", path, reason ? reason : strerror(-err));
}

static int selftest(const char *dir_opt, const char *plugin_dir, const char *ini)
{
	struct table_case tabs[2] = {
		{ "iq4nl", STRATA_TYPE_IQ4_NL, 0, 50021, "", 90 },
		{ "q5_0", STRATA_TYPE_Q5_0, 1234, 40009, "", 110 },
	};
	static const uint32_t readers[] = { 0, 1, 3, 8 };
	const size_t n_big = 6000, n_small = 100;
	struct strata_config cfg;
	struct strata_registry *reg = NULL;
	struct found fnd = { .n = 0 };
	struct backend be[20];
	const char *dir = pick_dir(dir_opt);
	uint64_t *rows = malloc(n_big * sizeof(*rows));
	float *out = malloc(n_big * 160 * sizeof(float));
	int nb = 0;
	time_t t0 = time(NULL);

	if (!dir) {
		printf("SKIP: no directory here takes O_DIRECT (try TMPDIR=/path/on/disk)\n");
		free(rows);
		free(out);
		return 77;
	}
	printf("ple selftest in %s\n", dir);
	if (!rows || !out || strata_config_init(&cfg))
		return 1;
	/* -c FILE: the io plugins' sections, e.g. [io-direct] inline_submit = true */
	if (ini && strata_config_load_file(&cfg, ini))
		return 1;
	cfg.plugin_dir = strdup(plugin_dir);
	if (strata_registry_create(&cfg, "ple_reader_test", &reg) ||
	    strata_registry_scan(reg, on_plugin, &fnd) < 0)
		return 1;
	for (int i = 0; i < fnd.n; i++)
		be[nb++] = (struct backend){ fnd.names[i], 0, NULL };
	if (!fnd.n)
		printf("note: no io plugin on the search path (%s): only mmap and the in-test "
		       "backend run\n", plugin_dir);
	be[nb++] = (struct backend){ "mmap", 1, NULL };
	be[nb++] = (struct backend){ "test-pread", 0, &g_tio };
	for (int ti = 0; ti < 2; ti++) {
		struct table_case *t = &tabs[ti];
		float *ref;

		if (write_table(t, dir)) {
			g_fail++;
			continue;
		}
		make_rows(t, rows, n_big);
		ref = reference(t, rows, n_big);
		printf("table %s: %llu rows of %u bytes from offset %llu\n", t->name,
		       (unsigned long long)t->n_rows, t->rb, (unsigned long long)t->base);
		for (int bi = 0; ref && bi < nb; bi++)
			for (size_t k = 0; k < sizeof(readers) / sizeof(readers[0]); k++)
				run_case(reg, t, &be[bi], readers[k], rows, n_big, n_small, ref, out);
		free(ref);
		unlink(t->path);
	}
	strata_registry_free(reg);
	strata_config_free(&cfg);
	free(rows);
	free(out);
	printf("%s (%ld s)\n", g_fail ? "FAILED" : "all rows identical", (long)(time(NULL) - t0));
	return g_fail ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *pdir = STRATA_PLUGIN_DIR, *ini = NULL;
	int run = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--selftest"))
			run = 1;
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--plugin-dir") && i + 1 < argc)
			pdir = argv[++i];
		else if (!strcmp(argv[i], "-c") && i + 1 < argc)
			ini = argv[++i];
		else
			run = 0, i = argc;
	}
	if (!run) {
		fprintf(stderr, "usage: %s --selftest [--dir DIR] [--plugin-dir DIR] [-c FILE]\n",
			argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	return selftest(dir, pdir, ini);
}
