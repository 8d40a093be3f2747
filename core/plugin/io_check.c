/*
 * io_check.c - the io plugin conformance suite (see io_check.h).
 *
 * Cases fail with a sentence naming the read (length, offset, what came
 * back and what should have), never with an abort: the command prints it
 * and goes on to the next case, the tests assert on it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/io_check.h"
#include "plat/plat.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/mem.h"

#define PAGE STRATA_IOCHECK_PAGE
#define FILE_SIZE STRATA_IOCHECK_FILE_SIZE

/* Set k->err and give the case's failure value. */
#define FAIL(k, ...) (snprintf((k)->err, sizeof((k)->err), __VA_ARGS__), -1)
/* In a case with an `out:` label and an `rc`: fail unless cond. */
#define CHECK(k, cond, ...)                        \
	do {                                       \
		if (!(cond)) {                     \
			rc = FAIL(k, __VA_ARGS__); \
			goto out;                  \
		}                                  \
	} while (0)

static const char *const g_names[STRATA_IOCHECK_N_CASES] = {
	"random reads", "random reads, direct", "end of file", "end of file, direct",
	"misaligned direct reads", "reap timeouts", "close with reads in flight", "open errors",
	"a handle per thread",
};

const char *strata_iocheck_case_name(int c)
{
	return c >= 0 && c < STRATA_IOCHECK_N_CASES ? g_names[c] : "?";
}

static double now_ms(void)
{
	return (double)strata_now_ns() / 1e6;
}

/* ---- the pattern file ------------------------------------------------------------ */

uint8_t strata_iocheck_byte(uint64_t off)
{
	uint64_t word = off & ~(uint64_t)7;

	return (uint8_t)(word >> (8 * (off & 7)));
}

int32_t strata_iocheck_expect(uint64_t off, uint32_t len)
{
	if (off >= FILE_SIZE)
		return 0;
	return (int32_t)(FILE_SIZE - off < len ? FILE_SIZE - off : len);
}

long strata_iocheck_first_bad(const struct strata_io_req *r)
{
	const uint8_t *b = r->buf;

	for (int32_t i = 0; i < r->result; i++)
		if (b[i] != strata_iocheck_byte(r->offset + (uint64_t)i))
			return i;
	return -1;
}

static int make_file(const char *path)
{
	uint64_t *w = malloc(FILE_SIZE);
	FILE *f = fopen(path, "wb");
	int ok;

	if (!w || !f) {
		free(w);
		if (f)
			fclose(f);
		return -1;
	}
	for (uint64_t i = 0; i < FILE_SIZE / 8; i++)
		w[i] = i * 8; /* little-endian hosts only, which is what strata builds for */
	ok = fwrite(w, 1, FILE_SIZE, f) == FILE_SIZE;
	free(w);
	return fclose(f) || !ok ? -1 : 0;
}

void strata_iocheck_cleanup(struct strata_iocheck *k)
{
	if (k->file[0])
		unlink(k->file);
	if (k->dir[0])
		rmdir(k->dir);
	k->file[0] = k->dir[0] = 0;
}

int strata_iocheck_prepare(struct strata_iocheck *k, const char *dir)
{
	const char *cands[] = { dir, getenv("TMPDIR"), "/var/tmp", "/tmp" };

	memset(k, 0, sizeof(*k));
	k->plugin_direct = -1;
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		char d[4096], file[4200];

		if (!cands[i] || !cands[i][0])
			continue;
		snprintf(d, sizeof(d), "%s/strata-io-check-XXXXXX", cands[i]);
		if (!mkdtemp(d))
			continue;
		snprintf(file, sizeof(file), "%s/pattern.bin", d);
		if (make_file(file)) {
			unlink(file);
			rmdir(d);
			continue;
		}
		/* The first that works, replaced by a later one that takes direct I/O. */
		if (!k->dir[0] || strata_direct_read_works(file, PAGE)) {
			strata_iocheck_cleanup(k);
			snprintf(k->dir, sizeof(k->dir), "%s", d);
			snprintf(k->file, sizeof(k->file), "%s", file);
			k->direct_ok = strata_direct_read_works(file, PAGE);
			if (k->direct_ok)
				return 0;
		} else {
			unlink(file);
			rmdir(d);
		}
	}
	if (!k->dir[0]) {
		strata_error("io-check: cannot write an %u-byte test file in %s, $TMPDIR, /var/tmp "
			     "or /tmp", FILE_SIZE, dir ? dir : "(no --dir)");
		return -EIO;
	}
	return 0;
}

/* ---- a random-read workload ------------------------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A random read: pages (some past EOF, the short last one) when aligned, else anything. */
static void pick_read(struct strata_io_req *r, uint64_t *s, uint32_t align)
{
	uint64_t pages = FILE_SIZE / PAGE + 4;

	if (align > 1) {
		r->offset = (rnd(s) % pages) * PAGE;
		r->len = (rnd(s) & 3) ? PAGE : 2 * PAGE;
	} else {
		r->offset = rnd(s) % (FILE_SIZE + 3 * PAGE);
		r->len = 1 + (uint32_t)(rnd(s) % (2 * PAGE));
	}
}

/* Check the reads reap() handed back; the number of errors. */
static int check_reaped(struct strata_io_req **done, int n, const struct strata_iocheck_load *w,
			uint8_t *seen, char *err, size_t cap)
{
	int errors = 0;

	for (int i = 0; i < n; i++) {
		struct strata_io_req *r = done[i];
		int32_t want = strata_iocheck_expect(r->offset, r->len);

		if (r->user >= w->n_reads || seen[r->user]++) {
			if (!errors++)
				snprintf(err, cap, "cookie %llu reaped twice or invented",
					 (unsigned long long)r->user);
		} else if (r->result != want || strata_iocheck_first_bad(r) >= 0) {
			if (!errors++)
				snprintf(err, cap, "read %u at %llu: result %d (want %d)%s",
					 (unsigned)r->len, (unsigned long long)r->offset,
					 (int)r->result, (int)want,
					 r->result == want ? ", wrong bytes" : "");
		}
	}
	return errors;
}

int strata_iocheck_reads(const struct strata_io_ops *ops, void *h,
			 const struct strata_iocheck_load *w, char *err, size_t cap)
{
	struct strata_io_caps caps = { 0 };
	uint32_t n_req, i, n_free, submitted = 0, reaped = 0, outstanding = 0;
	struct strata_io_req *reqs, **free_l, **done;
	uint8_t *pool, *seen;
	uint64_t s = w->seed | 1;
	int errors = 0, first = 1;

	if (ops->caps(h, &caps) || !caps.depth)
		return snprintf(err, cap, "caps() failed or says depth 0"), 1;
	n_req = 2 * caps.depth;
	reqs = calloc(n_req, sizeof(*reqs));
	free_l = calloc(n_req, sizeof(*free_l));
	done = calloc(n_req, sizeof(*done));
	seen = calloc(w->n_reads, 1);
	pool = strata_aligned_alloc(PAGE, (size_t)n_req * 3 * PAGE);
	if (!pool || !reqs || !free_l || !done || !seen) {
		errors = 1;
		snprintf(err, cap, "out of memory");
		goto out;
	}
	for (i = 0; i < n_req; i++) {
		/* An odd byte offset in buffered mode: the handle must not assume alignment. */
		reqs[i].buf = pool + (size_t)i * 3 * PAGE + (caps.buf_align > 1 ? 0 : i % 7);
		free_l[i] = &reqs[n_req - 1 - i];
	}
	n_free = n_req;
	if (w->register_half && ops->register_buffers &&
	    (caps.flags & STRATA_IO_CAP_FIXED_BUFFERS)) {
		void *b = pool;
		size_t len = (size_t)(n_req / 2) * 3 * PAGE;
		int rc = ops->register_buffers(h, &b, &len, 1);

		if (rc)
			errors++, snprintf(err, cap, "register_buffers: %s", strerror(-rc));
	}
	while (reaped < w->n_reads && !errors) {
		struct strata_io_req *batch[1024];
		uint32_t nb = 0;
		int rc;

		while (n_free && submitted + nb < w->n_reads && nb < 1024) {
			struct strata_io_req *r = free_l[--n_free];

			pick_read(r, &s, caps.offset_align);
			r->result = INT32_MIN;
			r->user = submitted + nb;
			batch[nb++] = r;
		}
		rc = nb ? ops->submit(h, batch, nb) : 0;
		if (rc < 0 || (uint32_t)rc > nb || outstanding + (uint32_t)rc > caps.depth) {
			errors++, snprintf(err, cap, "submit(%u) = %d with %u outstanding, depth %u",
					   nb, rc, outstanding, caps.depth);
			break;
		}
		if (first && rc == (int)caps.depth && nb > (uint32_t)rc &&
		    ops->submit(h, batch + rc, nb - (uint32_t)rc) != 0) {
			errors++, snprintf(err, cap, "submit() to a full handle accepted more");
			break;
		}
		first = 0;
		for (i = nb; i > (uint32_t)rc; i--) /* not taken: back to the free list */
			free_l[n_free++] = batch[i - 1];
		submitted += (uint32_t)rc;
		outstanding += (uint32_t)rc;
		if (!outstanding) {
			errors++, snprintf(err, cap, "submit accepted nothing with nothing in flight");
			break;
		}
		rc = ops->reap(h, done, 1, n_req, -1);
		if (rc < 1 || (uint32_t)rc > outstanding) {
			errors++, snprintf(err, cap, "reap(1, -1) = %d with %u outstanding", rc,
					   outstanding);
			break;
		}
		errors += check_reaped(done, rc, w, seen, err, cap);
		for (i = 0; i < (uint32_t)rc; i++)
			free_l[n_free++] = done[i];
		reaped += (uint32_t)rc;
		outstanding -= (uint32_t)rc;
	}
	while (outstanding) { /* after an error: leave nothing in flight behind */
		int rc = ops->reap(h, done, outstanding, n_req, -1);

		if (rc <= 0)
			break;
		outstanding -= (uint32_t)rc;
	}
out:
	strata_aligned_free(pool);
	free(reqs);
	free(free_l);
	free(done);
	free(seen);
	return errors;
}

/* ---- the cases ---------------------------------------------------------------------- */

/*
 * Does the plugin open the file direct?  A plugin need not do direct I/O:
 * one that says -EINVAL (what the ABI has it say where it cannot) on a file
 * system that takes it runs the buffered cases only.
 */
static int plugin_direct(struct strata_iocheck *k)
{
	void *h = NULL;
	int rc;

	if (!k->direct_ok)
		return 0;
	if (k->plugin_direct < 0) { /* once: the plugin may warn each time it refuses */
		rc = k->ops->open(k->host, k->file, STRATA_IO_DIRECT, 4, &h);
		if (!rc && h)
			k->ops->close(h);
		k->plugin_direct = rc != -EINVAL;
	}
	return k->plugin_direct;
}

static int open_h(struct strata_iocheck *k, uint32_t flags, uint32_t depth, void **h)
{
	int rc = k->ops->open(k->host, k->file, flags, depth, h);

	if (rc || !*h)
		return FAIL(k, "open(%.300s, %s, depth %u) = %d (%s)%s", k->file,
			    flags & STRATA_IO_DIRECT ? "direct" : "buffered", depth, rc,
			    strerror(rc < 0 ? -rc : EINVAL), rc ? "" : " with a NULL handle");
	return 0;
}

/* Wait for n reads of a handle (5 s a call); 0 or -1 with k->err set. */
static int reap_all(struct strata_iocheck *k, void *h, struct strata_io_req **done, int n)
{
	for (int got = 0; got < n;) {
		int r = k->ops->reap(h, done + got, (uint32_t)(n - got), (uint32_t)(n - got), 5000);

		if (r <= 0)
			return FAIL(k, "reap() = %d with %d reads outstanding (5 s)", r, n - got);
		got += r;
	}
	return 0;
}

static int check_read(struct strata_iocheck *k, const struct strata_io_req *r)
{
	int32_t want = strata_iocheck_expect(r->offset, r->len);
	long bad;

	if (r->result != want)
		return FAIL(k, "read %u at %llu gave %d, want %d", (unsigned)r->len,
			    (unsigned long long)r->offset, (int)r->result, (int)want);
	bad = strata_iocheck_first_bad(r);
	if (bad >= 0)
		return FAIL(k, "read %u at %llu: byte %ld wrong", (unsigned)r->len,
			    (unsigned long long)r->offset, bad);
	return 0;
}

static int random_reads(struct strata_iocheck *k, int direct)
{
	static const uint32_t depths[] = { 1, 8, 32, 128 };
	int rc = 0;

	for (int d = 0; d < 4; d++) {
		struct strata_iocheck_load w = { depths[d], direct, 4000,
						 0x9e3779b97f4a7c15ull + (uint64_t)d, 1 };
		struct strata_io_caps caps = { 0 };
		int64_t size;
		char err[256] = "";
		void *h = NULL;
		int n;

		if (open_h(k, direct ? STRATA_IO_DIRECT : 0, depths[d], &h))
			return -1;
		CHECK(k, !k->ops->caps(h, &caps), "caps() failed");
		CHECK(k, caps.depth >= 1 && caps.depth <= 65536, "caps() says depth %u", caps.depth);
		CHECK(k, !direct || (caps.flags & STRATA_IO_CAP_DIRECT),
		      "opened direct, but caps() lacks STRATA_IO_CAP_DIRECT");
		CHECK(k, caps.buf_align && !(caps.buf_align & (caps.buf_align - 1)) &&
				 caps.offset_align && !(caps.offset_align & (caps.offset_align - 1)) &&
				 caps.buf_align <= PAGE && caps.offset_align <= PAGE,
		      "caps() alignments %u (buf) and %u (offset): want powers of two up to %u",
		      caps.buf_align, caps.offset_align, PAGE);
		size = k->ops->size(h);
		CHECK(k, size == FILE_SIZE, "size() = %lld, the file has %u bytes", (long long)size,
		      FILE_SIZE);
		n = strata_iocheck_reads(k->ops, h, &w, err, sizeof(err));
		CHECK(k, n == 0, "depth %u: %d errors, first: %s", depths[d], n, err);
out:
		k->ops->close(h);
		if (rc)
			return rc;
	}
	return 0;
}

/* Reads at and past the end, and one across it. */
static int eof_reads(struct strata_iocheck *k, int direct)
{
	uint64_t last = FILE_SIZE / PAGE * PAGE;
	uint64_t offs[] = { direct ? last + 3 * PAGE : FILE_SIZE, last, last + PAGE,
			    (uint64_t)1 << 40, direct ? last - PAGE : FILE_SIZE - 100 };
	int32_t want[] = { 0, 2048, 0, 0, direct ? PAGE + 2048 : 100 };
	struct strata_io_req r[5], *p[5], *done[5];
	uint8_t *buf = strata_aligned_alloc(PAGE, 5 * 2 * PAGE);
	void *h = NULL;
	int i, n, rc = 0;

	CHECK(k, buf, "out of memory");
	if ((rc = open_h(k, direct ? STRATA_IO_DIRECT : 0, 8, &h)))
		goto out;
	for (i = 0; i < 5; i++) {
		r[i] = (struct strata_io_req){ .offset = offs[i], .len = 2 * PAGE,
					       .buf = buf + i * 2 * PAGE, .user = (uint64_t)i };
		r[i].result = INT32_MIN;
		p[i] = &r[i];
	}
	n = k->ops->submit(h, p, 5);
	CHECK(k, n == 5, "submit() of 5 reads to a handle of depth 8 = %d", n);
	if ((rc = reap_all(k, h, done, 5)))
		goto out;
	for (i = 0; i < 5; i++) {
		if ((rc = check_read(k, &r[i])))
			goto out;
		CHECK(k, r[i].result == want[i], "read at %llu gave %d, want %d",
		      (unsigned long long)r[i].offset, (int)r[i].result, (int)want[i]);
	}
out:
	if (h)
		k->ops->close(h);
	strata_aligned_free(buf);
	return rc;
}

/* A read that breaks a direct handle's alignment completes with -EINVAL; its neighbours work. */
static int misaligned(struct strata_iocheck *k)
{
	struct strata_io_req r[5], *p[5], *done[5];
	struct strata_io_caps caps = { 0 };
	uint8_t *buf = strata_aligned_alloc(PAGE, 5 * 2 * PAGE);
	void *h = NULL;
	int i, n, rc = 0;

	CHECK(k, buf, "out of memory");
	if ((rc = open_h(k, STRATA_IO_DIRECT, 4, &h)))
		goto out;
	CHECK(k, !k->ops->caps(h, &caps), "caps() failed");
	if (caps.offset_align < 512 || caps.buf_align < 512 || caps.depth != 4) {
		rc = 1; /* nothing to break, or another depth than asked: the counts below differ */
		snprintf(k->err, sizeof(k->err), "the direct handle asks no alignment of 512 or "
			 "more, or runs at depth %u instead of 4", caps.depth);
		goto out;
	}
	r[0] = (struct strata_io_req){ .offset = 256, .len = PAGE, .buf = buf };
	r[1] = (struct strata_io_req){ .offset = PAGE, .len = 100, .buf = buf + 2 * PAGE };
	r[2] = (struct strata_io_req){ .offset = PAGE, .len = PAGE, .buf = buf + 4 * PAGE + 256 };
	r[3] = (struct strata_io_req){ .offset = 3 * PAGE, .len = PAGE, .buf = buf + 6 * PAGE };
	r[4] = (struct strata_io_req){ .offset = 5 * PAGE, .len = PAGE, .buf = buf + 8 * PAGE };
	for (i = 0; i < 5; i++) {
		r[i].result = INT32_MIN;
		p[i] = &r[i];
	}
	/* Depth 4: the fifth waits for a slot. */
	n = k->ops->submit(h, p, 5);
	CHECK(k, n == 4, "submit() of 5 to a handle of depth 4 = %d, want 4", n);
	n = k->ops->submit(h, p + 4, 1);
	CHECK(k, n == 0, "submit() to a full handle = %d, want 0", n);
	if ((rc = reap_all(k, h, done, 4)))
		goto out;
	n = k->ops->submit(h, p + 4, 1);
	CHECK(k, n == 1, "submit() after reaping = %d, want 1", n);
	if ((rc = reap_all(k, h, done, 1)))
		goto out;
	CHECK(k, done[0] == &r[4], "reap() handed back another request than the one left");
	for (i = 0; i < 3; i++)
		CHECK(k, r[i].result == -EINVAL, "misaligned read %d gave %d, want -EINVAL (%d)", i,
		      (int)r[i].result, -EINVAL);
	if (!(rc = check_read(k, &r[3])))
		rc = check_read(k, &r[4]);
out:
	if (h)
		k->ops->close(h);
	strata_aligned_free(buf);
	return rc;
}

/* reap() honours its timeout and never waits for reads that were not submitted. */
static int reap_timeout(struct strata_iocheck *k)
{
	struct strata_io_req r[16], *p[16], *done[32];
	uint8_t *buf = strata_aligned_alloc(PAGE, 16 * PAGE);
	double t0;
	void *h = NULL;
	int i, n, got = 0, rc = 0;
	long polls = 0;

	CHECK(k, buf, "out of memory");
	if ((rc = open_h(k, plugin_direct(k) ? STRATA_IO_DIRECT : 0, 16, &h)))
		goto out;
	t0 = now_ms();
	n = k->ops->reap(h, done, 1, 32, 200);
	CHECK(k, n == 0, "reap(1, timeout 200) with nothing submitted = %d", n);
	n = k->ops->reap(h, done, 1, 32, -1);
	CHECK(k, n == 0, "reap(1, no timeout) with nothing submitted = %d", n);
	CHECK(k, now_ms() - t0 < 1000, "reap with nothing in flight waited %.0f ms", now_ms() - t0);
	for (i = 0; i < 16; i++) {
		r[i] = (struct strata_io_req){ .offset = (uint64_t)(i * 37 % 2048) * PAGE,
					       .len = PAGE, .buf = buf + i * PAGE };
		p[i] = &r[i];
	}
	n = k->ops->submit(h, p, 16);
	CHECK(k, n == 16, "submit() of 16 to a handle of depth 16 = %d", n);
	while (got < 16) { /* poll: each call returns at once */
		t0 = now_ms();
		n = k->ops->reap(h, done, 0, 2, 0);
		CHECK(k, n >= 0 && n <= 2, "reap(0, 2, timeout 0) = %d", n);
		CHECK(k, now_ms() - t0 < 1000, "reap with timeout 0 took %.0f ms", now_ms() - t0);
		got += n;
		CHECK(k, ++polls < 10000000, "reads never completed while polled");
	}
	for (i = 0; i < 16; i++)
		if ((rc = check_read(k, &r[i])))
			goto out;
	/* min_done above what is outstanding is lowered to it; a wait for ever returns. */
	n = k->ops->submit(h, p, 16);
	CHECK(k, n == 16, "submit() of 16 again = %d", n);
	n = k->ops->reap(h, done, 100, 32, -1);
	CHECK(k, n == 16, "reap(min 100, max 32, no timeout) with 16 outstanding = %d", n);
	n = k->ops->reap(h, done, 1, 32, 100);
	CHECK(k, n == 0, "reap() after all were reaped = %d", n);
out:
	if (h)
		k->ops->close(h);
	strata_aligned_free(buf);
	return rc;
}

/* close() with reads in flight returns, and leaves the buffers alone once it has. */
static int close_in_flight(struct strata_iocheck *k)
{
	struct strata_io_req r[64], *p[64], *done[64];
	uint8_t *buf = strata_aligned_alloc(PAGE, 64 * PAGE);
	int round, i, rc = 0;

	CHECK(k, buf, "out of memory");
	for (round = 0; round < 30; round++) {
		int direct = plugin_direct(k) && (round & 1), n;
		void *h = NULL;

		if ((rc = open_h(k, direct ? STRATA_IO_DIRECT : 0, 64, &h)))
			goto out;
		for (i = 0; i < 64; i++) {
			r[i] = (struct strata_io_req){
				.offset = (uint64_t)((round * 64 + i) * 131 % 2048) * PAGE,
				.len = PAGE, .buf = buf + i * PAGE };
			p[i] = &r[i];
		}
		n = k->ops->submit(h, p, (uint32_t)(round % 3 ? 64 : 8));
		if (n <= 0)
			k->ops->close(h);
		CHECK(k, n > 0, "submit() to a fresh handle = %d", n);
		if (round % 4 == 3 && k->ops->reap(h, done, 1, 64, -1) < 1) {
			k->ops->close(h);
			CHECK(k, 0, "reap(1, no timeout) with reads in flight returned none");
		}
		k->ops->close(h);
		/* Whatever the plugin did with the reads, nothing writes here any more. */
		memset(buf, 0xa5, 64 * PAGE);
	}
	usleep(20000);
	for (i = 0; i < 64 * (int)PAGE; i++)
		CHECK(k, buf[i] == 0xa5, "byte %d of a buffer written after close()", i);
	k->ops->close(NULL);
out:
	strata_aligned_free(buf);
	return rc;
}

static int open_errors(struct strata_iocheck *k)
{
	char missing[4200];
	void *h = (void *)1;
	int n, rc = 0;

	snprintf(missing, sizeof(missing), "%s/no-such-file", k->dir);
	n = k->ops->open(k->host, missing, 0, 8, &h);
	CHECK(k, n == -ENOENT && !h, "open() of a missing file = %d, handle %s; want -ENOENT (%d), NULL",
	      n, h ? "set" : "NULL", -ENOENT);
	h = (void *)1;
	n = k->ops->open(k->host, missing, STRATA_IO_DIRECT, 8, &h);
	CHECK(k, n == -ENOENT && !h, "open(direct) of a missing file = %d; want -ENOENT (%d)", n,
	      -ENOENT);
	h = (void *)1;
	n = k->ops->open(k->host, k->dir, 0, 8, &h);
	CHECK(k, n == -EISDIR && !h, "open() of a directory = %d; want -EISDIR (%d)", n, -EISDIR);
out:
	return rc;
}

/* One handle per thread, as the core's readers use them. */
struct thread_job {
	struct strata_iocheck *k;
	int direct, errors;
	uint64_t seed;
	char err[256];
};

static void *thread_reads(void *arg)
{
	struct thread_job *j = arg;
	struct strata_iocheck_load w = { 32, j->direct, 2000, j->seed, 1 };
	void *h = NULL;
	int rc = j->k->ops->open(j->k->host, j->k->file, j->direct ? STRATA_IO_DIRECT : 0, 32, &h);

	if (rc || !h) {
		j->errors = 1;
		snprintf(j->err, sizeof(j->err), "open: %s", strerror(rc ? -rc : EINVAL));
		return NULL;
	}
	j->errors = strata_iocheck_reads(j->k->ops, h, &w, j->err, sizeof(j->err));
	j->k->ops->close(h);
	return NULL;
}

static int threads(struct strata_iocheck *k)
{
	struct thread_job jobs[4];
	pthread_t t[4];
	int i, n = 0;

	for (i = 0; i < 4; i++) {
		jobs[i] = (struct thread_job){ k, plugin_direct(k) && (i & 1), 0,
					       0x1234567ull * (uint64_t)(i + 1), "" };
		if (pthread_create(&t[i], NULL, thread_reads, &jobs[i]))
			break;
	}
	n = i;
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	if (n < 4)
		return FAIL(k, "could not start 4 threads");
	for (i = 0; i < 4; i++)
		if (jobs[i].errors)
			return FAIL(k, "thread %d: %s", i, jobs[i].err);
	return 0;
}

static int run_case(struct strata_iocheck *k, int c)
{
	switch (c) {
	case STRATA_IOCHECK_RANDOM: return random_reads(k, 0);
	case STRATA_IOCHECK_RANDOM_DIRECT: return random_reads(k, 1);
	case STRATA_IOCHECK_EOF: return eof_reads(k, 0);
	case STRATA_IOCHECK_EOF_DIRECT: return eof_reads(k, 1);
	case STRATA_IOCHECK_MISALIGNED: return misaligned(k);
	case STRATA_IOCHECK_REAP_TIMEOUT: return reap_timeout(k);
	case STRATA_IOCHECK_CLOSE_IN_FLIGHT: return close_in_flight(k);
	case STRATA_IOCHECK_OPEN_ERRORS: return open_errors(k);
	case STRATA_IOCHECK_THREADS: return threads(k);
	}
	return FAIL(k, "no case %d", c);
}


int strata_iocheck_run(struct strata_iocheck *k, int c)
{
	int direct = c == STRATA_IOCHECK_RANDOM_DIRECT || c == STRATA_IOCHECK_EOF_DIRECT ||
		     c == STRATA_IOCHECK_MISALIGNED;

	k->err[0] = 0;
	if (direct && !k->direct_ok) {
		snprintf(k->err, sizeof(k->err), "%.300s's file system refuses direct I/O (set --dir or TMPDIR)",
			 k->dir);
		return 1;
	}
	if (direct && !plugin_direct(k)) {
		snprintf(k->err, sizeof(k->err), "the plugin does no direct I/O (open says -EINVAL)");
		return 1;
	}
	return run_case(k, c);
}
