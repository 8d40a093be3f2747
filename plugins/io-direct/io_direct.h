/*
 * io_direct.h - what the halves of the io-direct plugin share: the handle
 * and the platform layer that io_direct_posix.c (pread, Linux native AIO)
 * and io_direct_win.c (ReadFile, completion ports) each provide, under the
 * same names, to the platform-free ops in io_direct.c.  Internal to the
 * plugin: hidden by -fvisibility=hidden like everything but the entry.
 */
#ifndef STRATA_IO_DIRECT_H
#define STRATA_IO_DIRECT_H

#include "strata/io_helpers.h" /* first: it sets _GNU_SOURCE */

#include <stdint.h>

#ifdef _WIN32
#include <windows.h>
#elif defined(__linux__)
#define HAVE_KAIO 1
#include <linux/aio_abi.h>
#endif

#include "strata/plugin.h"

#define DIRECT_SCORE 200
#define INLINE_ONLY_SCORE 50
#define EV_BATCH 64u

#ifdef _WIN32
/* One overlapped read; the OVERLAPPED comes first so a completion maps back to its slot. */
struct wslot {
	OVERLAPPED ov;
	uint32_t ix;
};
#endif

struct dio {
	const struct strata_host *host;
	int inline_mode;
	uint32_t align;
	uint32_t flags;     /* strata_io_caps.flags */
	int64_t size;       /* at open: where a short read is the end of the file */
	struct strata_ioh_slots s;
	uint32_t *queue;    /* inline: FIFO of slots to read */
	uint32_t q_head, q_n;
	uint32_t inflight;  /* async: reads the kernel holds */
	int32_t *cls;       /* submit(): strata_ioh_check_req() per taken request */
	uint32_t *ixs;      /* submit(): slot per taken request */
	uint32_t *start;    /* submit(): slots to start */
#ifdef _WIN32
	HANDLE file, port;
	struct wslot *ws;   /* [depth] */
	OVERLAPPED_ENTRY ents[EV_BATCH];
#else
	int fd;
#ifdef HAVE_KAIO
	aio_context_t ctx;
	struct iocb *cbs;     /* [depth] */
	struct iocb **batch;  /* [depth] */
	struct io_event ev[EV_BATCH];
#endif
#endif
};

/* ---- the platform layer ------------------------------------------------------- */

/*
 * Open path (O_DIRECT / FILE_FLAG_NO_BUFFERING when direct) for the mode
 * already in d->inline_mode and set d->size.  0 or -errno; -EINVAL after a
 * warning when the file system refuses direct I/O.
 */
int strata_dio_open_(struct dio *d, const char *path, int direct);
/* Make the async machinery (AIO context, completion port).  0 or -errno. */
int strata_dio_async_init_(struct dio *d);
/* Releases what open and async_init made; safe on a half-made handle. */
void strata_dio_close_files_(struct dio *d);
int64_t strata_dio_size_(struct dio *d);
/* Inline: read the request in slot ix whole (resuming short reads); bytes or -errno. */
int32_t strata_dio_read_sync_(struct dio *d, uint32_t ix);
/*
 * Async: start the reads of slots ix[0..n); returns how many of them (a
 * prefix) were dealt with, either with the kernel now or finished with the
 * error the system gave them.  Stops early, without error, when the system
 * has no room for more.
 */
uint32_t strata_dio_start_(struct dio *d, const uint32_t *ix, uint32_t n);
/* Async: restart the rest of slot ix (after a short or -EAGAIN read): 0, 1 at end of file, or -errno. */
int strata_dio_restart_(struct dio *d, uint32_t ix);
/*
 * Async: take completions (each through strata_dio_finish_or_resume_),
 * waiting up to left ms (UINT64_MAX: no bound) when need > 0; the count
 * taken (0: timed out), or -errno.
 */
int strata_dio_wait_(struct dio *d, uint32_t need, uint64_t left);
/* Async, at close: cancel what can be, wait for the rest. */
void strata_dio_drain_(struct dio *d);
/* The plugin's probe(). */
int strata_dio_probe_(const struct strata_host *host);

/* From io_direct.c: a read the kernel ended with res (bytes or -errno): finish it, or resume. */
void strata_dio_finish_or_resume_(struct dio *d, uint32_t ix, int32_t res);

#endif
