/*
 * io_pattern.h - the test file and the random-read workload of check_io.c
 * (a test helper, static functions only).
 *
 * The file is FILE_SIZE bytes in which every 8-byte little-endian word
 * holds its own offset, so any byte of any read can be checked; its size is
 * not a multiple of the page, so the last page reads short.  Define
 * _GNU_SOURCE (O_DIRECT) before the first system header.
 */
#ifndef STRATA_TEST_IO_PATTERN_H
#define STRATA_TEST_IO_PATTERN_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strata/plugin.h"
#include "testutil.h"

#define PAGE 4096u
#define FILE_SIZE ((8u << 20) + 2048u)

/* ---- the pattern ------------------------------------------------------------ */

static uint8_t pattern_byte(uint64_t off)
{
	uint64_t word = off & ~(uint64_t)7;

	return (uint8_t)(word >> (8 * (off & 7)));
}

static int make_file(const char *path)
{
	uint64_t *w = malloc(FILE_SIZE);
	uint64_t i;
	int rc;

	if (!w)
		return -1;
	for (i = 0; i < FILE_SIZE / 8; i++)
		w[i] = i * 8; /* little-endian hosts only, which is what we build for */
	rc = tu_write_file(path, w, FILE_SIZE);
	free(w);
	return rc;
}

/* Does an O_DIRECT read of `path` work (the file system takes direct I/O)? */
static int direct_works(const char *path)
{
	void *buf;
	int fd = open(path, O_RDONLY | O_DIRECT), ok;

	if (fd < 0)
		return 0;
	if (posix_memalign(&buf, PAGE, PAGE)) {
		close(fd);
		return 0;
	}
	ok = pread(fd, buf, PAGE, 0) == (ssize_t)PAGE;
	free(buf);
	close(fd);
	return ok;
}

/* Expected result of a read of len bytes at off. */
static int32_t expect_len(uint64_t off, uint32_t len)
{
	if (off >= FILE_SIZE)
		return 0;
	return (int32_t)(FILE_SIZE - off < len ? FILE_SIZE - off : len);
}

/* First byte of the request that differs from the file, or -1. */
static long first_bad_byte(const struct strata_io_req *r)
{
	const uint8_t *b = r->buf;
	int32_t i;

	for (i = 0; i < r->result; i++)
		if (b[i] != pattern_byte(r->offset + (uint64_t)i))
			return i;
	return -1;
}

/* ---- a random-read workload --------------------------------------------------- */

struct workload {
	uint32_t depth;    /* asked of open() */
	int direct;
	uint32_t n_reads;
	uint64_t seed;
	int register_half; /* register the first half of the buffers when the handle takes it */
};

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

/*
 * Run one workload on an open handle: 2*depth request structs (so submit()
 * is always offered more than it has room for), every read checked, every
 * cookie reaped exactly once.  Returns the number of errors, with the first
 * described in err.
 */
static int run_reads(const struct strata_io_ops *ops, void *h, const struct workload *w,
		     char *err, size_t cap)
{
	struct strata_io_caps caps;
	uint32_t n_req, i, n_free, submitted = 0, reaped = 0, outstanding = 0;
	struct strata_io_req *reqs, **free_l, **done;
	uint8_t *pool, *seen;
	uint64_t s = w->seed | 1;
	int errors = 0, first = 1;

	ops->caps(h, &caps);
	n_req = 2 * caps.depth;
	reqs = calloc(n_req, sizeof(*reqs));
	free_l = calloc(n_req, sizeof(*free_l));
	done = calloc(n_req, sizeof(*done));
	seen = calloc(w->n_reads, 1);
	if (posix_memalign((void **)&pool, PAGE, (size_t)n_req * 3 * PAGE) || !reqs || !free_l ||
	    !done || !seen)
		return snprintf(err, cap, "out of memory"), 1;
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
		for (i = 0; i < (uint32_t)rc; i++) {
			struct strata_io_req *r = done[i];
			int32_t want = expect_len(r->offset, r->len);

			if (r->user >= w->n_reads || seen[r->user]++) {
				errors++, snprintf(err, cap, "cookie %llu reaped twice or invented",
						   (unsigned long long)r->user);
			} else if (r->result != want || first_bad_byte(r) >= 0) {
				errors++, snprintf(err, cap, "read %u at %llu: result %d (want %d)%s",
						   (unsigned)r->len, (unsigned long long)r->offset,
						   (int)r->result, (int)want,
						   r->result == want ? ", wrong bytes" : "");
			}
			free_l[n_free++] = r;
		}
		reaped += (uint32_t)rc;
		outstanding -= (uint32_t)rc;
	}
	while (outstanding) { /* after an error: leave nothing in flight behind */
		int rc = ops->reap(h, done, outstanding, n_req, -1);

		if (rc <= 0)
			break;
		outstanding -= (uint32_t)rc;
	}
	free(pool);
	free(reqs);
	free(free_l);
	free(done);
	free(seen);
	return errors;
}

#endif
