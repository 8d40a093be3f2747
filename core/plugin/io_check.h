/*
 * io_check.h - the io plugin conformance suite: what `strata io-check NAME`
 * runs on any io plugin (an installed one, a third party's) and what
 * tests/check_io.c asserts for the in-tree ones.
 *
 * Every case reads a pattern file through the plugin's ops exactly as the
 * core's readers do and checks what the ABI of include/strata/plugin.h
 * promises: every byte of every read, short reads only at the end of the
 * file, a full handle accepting nothing more, requests that break the caps
 * completing with -EINVAL instead of failing submit(), reap()'s timeouts and
 * its lowering of min_done, close() with reads in flight, open()'s errors,
 * and one handle per thread.  Direct-mode cases run where the file's file
 * system takes direct I/O; elsewhere they are skipped, and say so.
 */
#ifndef STRATA_IO_CHECK_H
#define STRATA_IO_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "strata/plugin.h"

#define STRATA_IOCHECK_PAGE 4096u
/* Not a multiple of the page: the last page reads short. */
#define STRATA_IOCHECK_FILE_SIZE ((8u << 20) + 2048u)

enum strata_iocheck_case {
	STRATA_IOCHECK_RANDOM = 0,      /* random reads at depths 1..128, buffered */
	STRATA_IOCHECK_RANDOM_DIRECT,   /* the same with STRATA_IO_DIRECT */
	STRATA_IOCHECK_EOF,             /* reads at, across and past the end */
	STRATA_IOCHECK_EOF_DIRECT,
	STRATA_IOCHECK_MISALIGNED,      /* requests breaking a direct handle's alignment */
	STRATA_IOCHECK_REAP_TIMEOUT,    /* reap()'s timeouts, polling, min_done lowered */
	STRATA_IOCHECK_CLOSE_IN_FLIGHT, /* close() with reads queued, nothing written after */
	STRATA_IOCHECK_OPEN_ERRORS,     /* -ENOENT, -EISDIR, *handle NULL */
	STRATA_IOCHECK_THREADS,         /* four threads, a handle each */
	STRATA_IOCHECK_N_CASES
};

/* A plugin under test and where its cases read. */
struct strata_iocheck {
	const struct strata_io_ops *ops;
	const struct strata_host *host;
	char dir[4096];  /* a directory of our own: open() of it must say -EISDIR */
	char file[4200]; /* the pattern file inside it */
	int direct_ok;   /* the file's file system takes O_DIRECT */
	int plugin_direct; /* the plugin opens it direct; -1 until a case asks (set ops first) */
	char err[512];   /* why the last case failed or was skipped */
};

/*
 * Make k's directory and pattern file, in $TMPDIR or /var/tmp or /tmp
 * (preferring one that takes direct I/O; `dir` first when not NULL), and
 * zero the rest of *k.  0 or -errno (logged).  Undo with strata_iocheck_cleanup.
 */
int strata_iocheck_prepare(struct strata_iocheck *k, const char *dir);
void strata_iocheck_cleanup(struct strata_iocheck *k);

const char *strata_iocheck_case_name(int c);

/*
 * Run case c on k->ops / k->host: 0 passed, 1 skipped, -1 failed (k->err
 * says why in both of the last).
 */
int strata_iocheck_run(struct strata_iocheck *k, int c);

/* ---- the pieces, for tests that check more than the ABI promises ---------- */

/* Every 8-byte little-endian word of the file holds its own offset. */
uint8_t strata_iocheck_byte(uint64_t off);
/* The result a read of len bytes at off must have. */
int32_t strata_iocheck_expect(uint64_t off, uint32_t len);
/* First byte of r's result that differs from the file, or -1. */
long strata_iocheck_first_bad(const struct strata_io_req *r);

/* A random-read workload. */
struct strata_iocheck_load {
	uint32_t depth;    /* asked of open() */
	int direct;
	uint32_t n_reads;
	uint64_t seed;
	int register_half; /* register the first half of the buffers when the handle takes it */
};

/*
 * Run load w on an open handle: twice its depth in request structs (so
 * submit() is always offered more than it has room for), every read
 * checked, every cookie reaped exactly once.  Returns the number of errors,
 * the first described in err.
 */
int strata_iocheck_reads(const struct strata_io_ops *ops, void *h,
			 const struct strata_iocheck_load *w, char *err, size_t cap);

/* `strata io-check NAME`: the suite on one plugin of the search path. */
int strata_cmd_io_check(int argc, char **argv);

#endif
