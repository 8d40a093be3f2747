/*
 * aread.h - the one asynchronous read path: reads of one file through one io
 * plugin handle, many in flight, for the streamed experts (model/xstore.c)
 * and the PLE table reader (ple/ple_io.c).
 *
 * The caller owns the requests (their struct and their buffers) and feeds
 * them through a job: next() hands over requests while there is room for
 * `depth` in flight, landed() takes each one back once its bytes are in its
 * buffer.  Everything between is the module's, so both readers share one
 * policy and one set of messages:
 *   - a read that fails or comes back short of `need` is tried again, up to
 *     STRATA_AREAD_TRIES times in all, then fails the job;
 *   - no read landing for timeout_ms fails the job with -ETIMEDOUT;
 *   - after a failure (or a cancel) nothing new is queued and the reads in
 *     flight are reaped (drained) before run() returns, so no buffer is
 *     written after it; when even that times out, or the handle itself
 *     fails, the handle is closed (the plugin's close() waits for or cancels
 *     what is left) and the next run opens a fresh one;
 *   - every failure leaves one message naming the file, the offset, the
 *     length and what was read (the job's describe(): "expert 3 of layer 2
 *     (blk.2.ffn_up_exps.weight)", "PLE rows 744-781").  run() does not log
 *     it: the caller does, once, where the failure is handled (the engine
 *     thread, whose last error a server reports; the PLE reader, whose first
 *     failing thread speaks for the chunk).
 *
 * Threading: an aread is used by one thread at a time, like the io handle
 * it owns.  strata_aread_start() runs a job on the aread's own thread
 * (started on first use) so the caller can compute while the disk reads;
 * strata_aread_wait() joins it (or runs it, when the thread has not begun).
 */
#ifndef STRATA_AREAD_H
#define STRATA_AREAD_H

#include <stddef.h>
#include <stdint.h>

#include "strata/plugin.h"

/*
 * Reads tried per request before the job fails.  Three, not two: a failed
 * read fails a whole request (a forward pass of the engine, a PLE chunk),
 * while a retry costs one more read of one piece; io-faulty's transient
 * faults (and a real disk's: a media retry, a path failover) that strike
 * the same read twice in a row are then survived too, and a persistent
 * fault costs only one more read's latency before it is reported.
 */
#define STRATA_AREAD_TRIES 3

struct strata_aread;

struct strata_aread_opts {
	const struct strata_io_ops *ops; /* required: a loaded io plugin's methods */
	const struct strata_host *host;  /* required: the host table that plugin was given */
	const char *io_name;             /* the plugin's name, for messages */
	const char *path;                /* the file; copied */
	const char *what;                /* what is read, for messages: "streamed experts" */
	uint32_t depth;                  /* reads in flight at most, >= 1 (the plugin may lower it) */
	uint32_t align;                  /* the caller's buffers, offsets and lengths are aligned
					  * to this (a power of two); a plugin wanting more is
					  * refused */
	uint32_t timeout_ms;             /* no read landing for this long fails the job, >= 1 */
	const char *timeout_key;         /* the setting of timeout_ms for the message, or NULL */
	int direct;                      /* ask for direct I/O (see strata_aread_open) */
};

/*
 * One read.  The caller sets io.offset, io.len, io.buf and need; io.user is
 * the caller's.  The struct must stay put from next() until landed() hands
 * it back or run() returns.  io is the first member, so a caller may embed
 * the request first in its own struct and cast back.
 */
struct strata_aread_req {
	struct strata_io_req io;
	uint32_t need;  /* bytes that must land: below io.len only at the end of the file */
	/* the module's */
	uint32_t tries; /* times submitted */
	uint32_t fly;   /* index among the reads in flight */
	uint64_t t_sub; /* when last submitted, CLOCK_MONOTONIC ns (read latency) */
};

/*
 * A batch of reads.  Callbacks run on the thread running the job (the
 * caller's in run(), the aread's own after start()).
 */
struct strata_aread_job {
	void *user;
	/*
	 * Required.  Up to n more requests into reqs[]; returns how many, 0
	 * when there are no more.  Not called again after it returned 0, nor
	 * after a failure or a cancel.
	 */
	uint32_t (*next)(void *user, struct strata_aread_req **reqs, uint32_t n);
	/* Optional.  r's need bytes are in its buffer; r is the caller's again. */
	void (*landed)(void *user, struct strata_aread_req *r);
	/*
	 * Optional.  What r reads, for messages, into buf (n bytes): "expert 3
	 * of layer 2 (blk.2.ffn_up_exps.weight)".  Without it: "a read".
	 */
	void (*describe)(void *user, const struct strata_aread_req *r, char *buf, size_t n);
	/*
	 * Optional.  Non-zero: stop (another reader failed the work): nothing
	 * new is queued, what is in flight is drained, run() returns
	 * -ECANCELED.  Asked before every batch of submissions.
	 */
	int (*cancelled)(void *user);
	/* Out: added to by each run. */
	uint64_t reads;   /* requests that landed */
	uint64_t bytes;   /* their need bytes */
	uint64_t retries; /* reads repeated after a failure or a short count */
};

/*
 * Open `o->path` through o->ops for reads of up to o->depth in flight.
 * With o->direct the page cache is bypassed; when the file system refuses
 * O_DIRECT (-EINVAL) the file is opened buffered, with one warning.  Logs
 * one error and returns -errno when the plugin cannot open the file, its
 * caps() or size() fail, or it wants alignments above o->align (-EINVAL);
 * -EINVAL unlogged for missing ops or a zero depth or timeout.  *out is
 * released with strata_aread_close().
 */
int strata_aread_open(const struct strata_aread_opts *o, struct strata_aread **out);

/*
 * Wait for a started job, stop the aread's thread, close the handle, free.
 * NULL is a no-op.
 */
void strata_aread_close(struct strata_aread *a);

/* Reads in flight at most (o->depth, lowered to what the plugin keeps). */
uint32_t strata_aread_depth(const struct strata_aread *a);
/* The file's size in bytes, as the plugin saw it at open. */
uint64_t strata_aread_size(const struct strata_aread *a);
/* 1 when reads bypass the page cache, 0 when the file system refused it. */
int strata_aread_direct(const struct strata_aread *a);

/*
 * Pin the n buffers the requests read into (the plugin's register_buffers,
 * when it has one and says it helps); kept and pinned again on a reopened
 * handle.  Only an optimisation: 0 whether or not the plugin took them,
 * -ENOMEM.  Not while a job runs.  The buffers must outlive the aread.
 */
int strata_aread_register(struct strata_aread *a, void *const *bufs, const size_t *lens,
			  uint32_t n);

/*
 * Run job to the end on the calling thread: 0 when every request landed;
 * -ECANCELED after job->cancelled(); else the failure's -errno (the read's
 * own error, -EIO for a short one, -ETIMEDOUT, the plugin's) with its
 * message in strata_aread_error(), not logged.  Whatever the result, no
 * request is in flight any more when it returns.
 */
int strata_aread_run(struct strata_aread *a, struct strata_aread_job *job);

/*
 * Run job on the aread's own thread and return at once: 0, or -EBUSY while
 * a started job was not waited for.  job (and its requests) are the
 * aread's until strata_aread_wait().  Where no thread can be started (a
 * warning, once) the job runs in wait().
 */
int strata_aread_start(struct strata_aread *a, struct strata_aread_job *job);

/*
 * Block until the started job is done: its run()'s result; -EINVAL when none
 * was started.  A job the thread has not taken yet is run here, on the
 * caller's thread: start() then wait() at once costs no thread handoff.
 */
int strata_aread_wait(struct strata_aread *a);

/* The message of the last failed run ("" after one that did not fail); owned by a. */
const char *strata_aread_error(const struct strata_aread *a);

#endif
