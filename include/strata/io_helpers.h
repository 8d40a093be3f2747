/*
 * strata/io_helpers.h - what an io plugin needs besides the ABI (part of
 * the plugin SDK; header-only, everything `static inline`, links nothing).
 *
 * The in-tree io plugins (io-pread, io-uring, io-direct, io-faulty) are
 * built on it, and so can a third party's: parsing the plugin's INI keys
 * (strata_ioh_key_u32, strata_ioh_key_bool, strata_ioh_depth), the
 * per-handle request slots with their FIFO of finished reads, the checks a
 * request must pass against the handle's caps (strata_ioh_check_req), the
 * reap() deadline arithmetic, and on POSIX the open (with the direct-I/O
 * probe), size and resuming-read helpers.  Nothing here keeps global state,
 * so handles need no locking between each other.
 *
 * Include it before any system header: on Linux it defines _GNU_SOURCE
 * (for O_DIRECT).
 *
 * The slot model.  A handle has `depth` slots.  submit() takes a free slot
 * per request (strata_ioh_slot_take) and keeps it until reap() hands the
 * request back (strata_ioh_pop_ready), so at most `depth` requests are
 * outstanding: queued, in flight, or finished and not yet reaped.  A
 * finished request goes to the ready FIFO with its result set
 * (strata_ioh_finish); reap() pops from there.  That is how a plugin keeps
 * the ABI's promise never to lose a request: every accepted request ends
 * in the FIFO exactly once.  A minimal inline plugin:
 *
 *     submit: for each req: ix = strata_ioh_slot_take(&s, req); if ix < 0
 *             stop (the handle is full: return how many were taken);
 *             rc = strata_ioh_check_req(req, align); if rc != 0 finish it
 *             now with rc < 0 ? rc : 0, else remember it as queued
 *     reap:   read the queued ones (strata_ioh_pread_full), finish each,
 *             then return strata_ioh_pop_ready(&s, done, max_done)
 *
 * examples/io-mmap in strata's source tree is a whole plugin built this way.
 */
#ifndef STRATA_IO_HELPERS_H
#define STRATA_IO_HELPERS_H

#if !defined(_WIN32) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* O_DIRECT */
#endif

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#endif

#include "strata/plugin.h"

/* Alignment promised for direct handles: a multiple of every logical block size in use. */
#define STRATA_IOH_DIRECT_ALIGN 4096u
/* Reads in flight when neither the core nor the INI says. */
#define STRATA_IOH_DEFAULT_DEPTH 32u
/* More than this per handle only costs memory: the disk queue is ~1K deep. */
#define STRATA_IOH_MAX_DEPTH 4096u
/* A read the kernel keeps answering -EAGAIN / -EINTR to is failed after this many tries. */
#define STRATA_IOH_MAX_TRIES 8u

/* ---- INI values ---------------------------------------------------------- */

/* Decimal digits only, lo..hi. */
static inline int strata_ioh_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > hi)
			return -EINVAL;
	}
	if (v < lo)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static inline int strata_ioh_streq_nocase(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a;
		char y = *b >= 'A' && *b <= 'Z' ? (char)(*b + 32) : *b;

		if (x != y)
			return 0;
	}
	return *a == *b;
}

/* true/false, yes/no, on/off, 1/0 (any case). */
static inline int strata_ioh_parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	size_t i;

	for (i = 0; s && i < 4; i++) {
		if (strata_ioh_streq_nocase(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (strata_ioh_streq_nocase(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * Read count key `key` of the plugin's section into *out (left alone when
 * the key is unset).  Returns 1 when set, 0 when unset, -EINVAL after
 * logging the bad value.
 */
static inline int strata_ioh_key_u32(const struct strata_host *host, const char *key, uint32_t lo,
			      uint32_t hi, uint32_t *out)
{
	const char *v = host->config_get(host, NULL, key);

	if (!v)
		return 0;
	if (strata_ioh_parse_u32(v, lo, hi, out)) {
		host->log(host, STRATA_LOG_ERROR, "%s = '%s' is invalid: expected %u..%u", key, v,
			  (unsigned)lo, (unsigned)hi);
		return -EINVAL;
	}
	return 1;
}

/* Like strata_ioh_key_u32 for a true/false key. */
static inline int strata_ioh_key_bool(const struct strata_host *host, const char *key, int *out)
{
	const char *v = host->config_get(host, NULL, key);

	if (!v)
		return 0;
	if (strata_ioh_parse_bool(v, out)) {
		host->log(host, STRATA_LOG_ERROR,
			  "%s = '%s' is invalid: expected true or false", key, v);
		return -EINVAL;
	}
	return 1;
}

/* The depth a handle runs at: the core's, 0 meaning the default. */
static inline int strata_ioh_depth(const struct strata_host *host, uint32_t asked, uint32_t *depth)
{
	if (asked > STRATA_IOH_MAX_DEPTH) {
		host->log(host, STRATA_LOG_ERROR, "depth %u is too large (at most %u)",
			  (unsigned)asked, STRATA_IOH_MAX_DEPTH);
		return -EINVAL;
	}
	*depth = asked ? asked : STRATA_IOH_DEFAULT_DEPTH;
	return 0;
}

/* ---- slots ----------------------------------------------------------------- */

struct strata_ioh_slots {
	uint32_t depth;
	struct strata_io_req **req; /* [depth] the request a slot holds, NULL when free */
	uint32_t *got;              /* [depth] bytes already read (short reads resume) */
	uint32_t *tries;            /* [depth] transient failures so far */
	uint32_t *free_ix;          /* stack of free slot indices */
	uint32_t n_free;
	uint32_t *ready;            /* FIFO of finished slot indices */
	uint32_t ready_head, n_ready;
};

static inline void strata_ioh_slots_free(struct strata_ioh_slots *s)
{
	free(s->req);
	free(s->got);
	free(s->tries);
	free(s->free_ix);
	free(s->ready);
	memset(s, 0, sizeof(*s));
}

static inline int strata_ioh_slots_init(struct strata_ioh_slots *s, uint32_t depth)
{
	uint32_t i;

	memset(s, 0, sizeof(*s));
	s->depth = depth;
	s->req = calloc(depth, sizeof(*s->req));
	s->got = calloc(depth, sizeof(*s->got));
	s->tries = calloc(depth, sizeof(*s->tries));
	s->free_ix = calloc(depth, sizeof(*s->free_ix));
	s->ready = calloc(depth, sizeof(*s->ready));
	if (!s->req || !s->got || !s->tries || !s->free_ix || !s->ready) {
		strata_ioh_slots_free(s);
		return -ENOMEM;
	}
	/* Popped from the top: slot 0 first, which keeps small runs cache-friendly. */
	for (i = 0; i < depth; i++)
		s->free_ix[i] = depth - 1 - i;
	s->n_free = depth;
	return 0;
}

/* Requests accepted and not yet reaped. */
static inline uint32_t strata_ioh_outstanding(const struct strata_ioh_slots *s)
{
	return s->depth - s->n_free;
}

/* Requests accepted and not yet finished (queued or with the kernel). */
static inline uint32_t strata_ioh_pending(const struct strata_ioh_slots *s)
{
	return s->depth - s->n_free - s->n_ready;
}

/* A free slot holding req, or -1 when all depth slots are taken. */
static inline int strata_ioh_slot_take(struct strata_ioh_slots *s, struct strata_io_req *req)
{
	uint32_t ix;

	if (!s->n_free)
		return -1;
	ix = s->free_ix[--s->n_free];
	s->req[ix] = req;
	s->got[ix] = 0;
	s->tries[ix] = 0;
	return (int)ix;
}

/* Hand slot ix back unreaped (the request was never started). */
static inline void strata_ioh_slot_untake(struct strata_ioh_slots *s, uint32_t ix)
{
	s->req[ix] = NULL;
	s->free_ix[s->n_free++] = ix;
}

/* The request in slot ix finished with `result` (bytes or -errno). */
static inline void strata_ioh_finish(struct strata_ioh_slots *s, uint32_t ix, int32_t result)
{
	s->req[ix]->result = result;
	s->ready[(s->ready_head + s->n_ready) % s->depth] = ix;
	s->n_ready++;
}

/* Pop up to max finished requests into done[], freeing their slots. */
static inline uint32_t strata_ioh_pop_ready(struct strata_ioh_slots *s, struct strata_io_req **done,
				     uint32_t max)
{
	uint32_t n = 0;

	while (n < max && s->n_ready) {
		uint32_t ix = s->ready[s->ready_head];

		s->ready_head = (s->ready_head + 1) % s->depth;
		s->n_ready--;
		done[n++] = s->req[ix];
		strata_ioh_slot_untake(s, ix);
	}
	return n;
}

/*
 * Is req within the caps?  0: read it; 1: finished already (len 0, result
 * 0); -EINVAL: finish it with that (misaligned for a direct handle, or more
 * than the int32 result can report).  A bad request is a completion, not a
 * failed submit(), so the caller sees it beside the reads it batched with.
 */
static inline int strata_ioh_check_req(const struct strata_io_req *req, uint32_t align)
{
	if (req->len > (uint32_t)INT32_MAX || req->offset > (uint64_t)INT64_MAX - req->len)
		return -EINVAL;
	if (!req->buf && req->len)
		return -EFAULT;
	if (align > 1 && ((req->offset | req->len | (uint64_t)(uintptr_t)req->buf) & (align - 1)))
		return -EINVAL;
	return req->len ? 0 : 1;
}

/* ---- time ------------------------------------------------------------------ */

static inline uint64_t strata_ioh_now_ms(void)
{
#ifdef _WIN32
	return (uint64_t)GetTickCount64();
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
#endif
}

/* Milliseconds left before deadline (UINT64_MAX = none); 0 when passed. */
static inline uint64_t strata_ioh_left_ms(uint64_t deadline)
{
	uint64_t now;

	if (deadline == UINT64_MAX)
		return UINT64_MAX;
	now = strata_ioh_now_ms();
	return now >= deadline ? 0 : deadline - now;
}

/* Deadline for a reap() timeout_ms (< 0 = wait for ever). */
static inline uint64_t strata_ioh_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? UINT64_MAX : strata_ioh_now_ms() + (uint64_t)timeout_ms;
}

/* The warning for a file system that refuses direct I/O; returns -EINVAL. */
static inline int strata_ioh_direct_refused(const struct strata_host *host, const char *path)
{
#ifdef _WIN32
	const char *how = "unbuffered I/O (FILE_FLAG_NO_BUFFERING)";
#else
	const char *how = "O_DIRECT";
#endif
	host->log(host, STRATA_LOG_WARN,
		  "%s: the file system refuses %s (tmpfs, procfs, some FUSE and network file "
		  "systems do); read it without direct I/O (e.g. --ple-io mmap) or move it to a "
		  "local disk",
		  path, how);
	return -EINVAL;
}

#ifdef _WIN32
/* ---- Windows files ------------------------------------------------------------ */

/* The -errno closest to a Win32 error code. */
static inline int strata_ioh_win_errno(DWORD e)
{
	switch (e) {
	case ERROR_FILE_NOT_FOUND:
	case ERROR_PATH_NOT_FOUND:
	case ERROR_INVALID_DRIVE:
		return -ENOENT;
	case ERROR_ACCESS_DENIED:
	case ERROR_SHARING_VIOLATION:
		return -EACCES;
	case ERROR_INVALID_PARAMETER:
	case ERROR_INVALID_NAME:
		return -EINVAL;
	case ERROR_NOT_ENOUGH_MEMORY:
	case ERROR_OUTOFMEMORY:
	case ERROR_NO_SYSTEM_RESOURCES:
		return -ENOMEM;
	case ERROR_INVALID_USER_BUFFER:
	case ERROR_NOT_ENOUGH_QUOTA:
		return -EAGAIN;
	case ERROR_OPERATION_ABORTED:
		return -ECANCELED;
	default:
		return -EIO;
	}
}

/* A UTF-8 path as the wide string CreateFileW takes (malloc'd), or NULL. */
static inline wchar_t *strata_ioh_win_path(const char *s)
{
	int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
	wchar_t *w;

	if (n <= 0)
		return NULL;
	w = (wchar_t *)malloc((size_t)n * sizeof(*w));
	if (w && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n) != n) {
		free(w);
		return NULL;
	}
	return w;
}

/*
 * One synchronous positioned read of up to len bytes; bytes read (0 at
 * EOF) or -errno.  ev: an event for a handle opened FILE_FLAG_OVERLAPPED
 * (the read is waited for), NULL for a synchronous handle.
 */
static inline int32_t strata_ioh_win_read_at(HANDLE f, void *buf, uint32_t len, uint64_t off,
					     HANDLE ev)
{
	OVERLAPPED ov;
	DWORD n = 0;

	memset(&ov, 0, sizeof(ov));
	ov.Offset = (DWORD)off;
	ov.OffsetHigh = (DWORD)(off >> 32);
	ov.hEvent = ev;
	if (!ReadFile(f, buf, len, &n, &ov)) {
		DWORD e = GetLastError();

		if (e == ERROR_IO_PENDING && GetOverlappedResult(f, &ov, &n, TRUE))
			return (int32_t)n;
		e = GetLastError();
		return e == ERROR_HANDLE_EOF ? 0 : strata_ioh_win_errno(e);
	}
	return (int32_t)n;
}

/* Read len bytes at off of a synchronous handle, resuming after short reads
 * until EOF; bytes read or -errno (as strata_ioh_pread_full). */
static inline int32_t strata_ioh_win_read_full(HANDLE f, void *buf, uint32_t len, uint64_t off)
{
	uint32_t got = 0;

	while (got < len) {
		int32_t r = strata_ioh_win_read_at(f, (char *)buf + got, len - got, off + got, NULL);

		if (r < 0)
			return got ? (int32_t)got : r;
		if (r == 0)
			break;
		got += (uint32_t)r;
	}
	return (int32_t)got;
}

/*
 * Open path (UTF-8) for positioned reads, unbuffered (FILE_FLAG_NO_BUFFERING)
 * when direct, as strata_ioh_open_fd does on POSIX.  overlapped: for reads
 * through a completion port (FILE_FLAG_OVERLAPPED), else synchronous ones.
 * *out the handle, or -errno: -EISDIR for a directory, -EINVAL (after a
 * warning that names the file) when the file system refuses unbuffered
 * reads, at open or at the first block, which is read here (before any port
 * is attached, so the read posts no completion packet).
 */
static inline int strata_ioh_win_open(const struct strata_host *host, const char *path,
				      int direct, int overlapped, HANDLE *out)
{
	wchar_t *w = path ? strata_ioh_win_path(path) : NULL;
	DWORD attr, fl = FILE_ATTRIBUTE_NORMAL;
	HANDLE f, ev = NULL;
	int32_t r;
	void *blk;

	if (!w)
		return -EINVAL;
	attr = GetFileAttributesW(w);
	if (attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY)) {
		free(w);
		return -EISDIR;
	}
	fl |= direct ? FILE_FLAG_NO_BUFFERING : 0;
	fl |= overlapped ? FILE_FLAG_OVERLAPPED : FILE_FLAG_RANDOM_ACCESS;
	f = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE, NULL, OPEN_EXISTING,
			fl, NULL);
	free(w);
	if (f == INVALID_HANDLE_VALUE) {
		DWORD e = GetLastError();

		return e == ERROR_INVALID_PARAMETER && direct ? strata_ioh_direct_refused(host, path)
							       : strata_ioh_win_errno(e);
	}
	if (direct) {
		blk = host->aligned_alloc(STRATA_IOH_DIRECT_ALIGN, STRATA_IOH_DIRECT_ALIGN);
		if (overlapped) /* an overlapped read is waited for on an event */
			ev = CreateEventW(NULL, TRUE, FALSE, NULL);
		r = blk && (ev || !overlapped)
			    ? strata_ioh_win_read_at(f, blk, STRATA_IOH_DIRECT_ALIGN, 0, ev)
			    : -ENOMEM;
		if (ev)
			CloseHandle(ev);
		host->aligned_free(blk);
		if (r < 0) {
			CloseHandle(f);
			return r == -EINVAL ? strata_ioh_direct_refused(host, path) : r;
		}
	}
	*out = f;
	return 0;
}

/* Size of an open file, or -errno. */
static inline int64_t strata_ioh_win_size(HANDLE f)
{
	LARGE_INTEGER sz;

	return GetFileSizeEx(f, &sz) ? (int64_t)sz.QuadPart : strata_ioh_win_errno(GetLastError());
}

#else /* !_WIN32 */
/* ---- POSIX files -------------------------------------------------------------- */

/* Size of a regular file or block device, or -errno. */
static inline int64_t strata_ioh_fd_size(int fd)
{
	struct stat st;
	off_t end;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISBLK(st.st_mode))
		return (int64_t)st.st_size;
	end = lseek(fd, 0, SEEK_END); /* pread users never look at the file position */
	return end < 0 ? -errno : (int64_t)end;
}

/*
 * Read len bytes at off, resuming after short reads until EOF; bytes read
 * or -errno.  Direct fds resume at block multiples (a short direct read ends
 * on one), so the alignment holds.
 */
static inline int32_t strata_ioh_pread_full(int fd, void *buf, uint32_t len, uint64_t off)
{
	uint32_t got = 0;

	while (got < len) {
		ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return got ? (int32_t)got : -errno;
		}
		if (r == 0)
			break;
		got += (uint32_t)r;
	}
	return (int32_t)got;
}

/*
 * Open path read-only for positioned reads; O_DIRECT when direct.  Returns
 * the fd or -errno: -EISDIR for a directory, -EINVAL (after a warning that
 * names the file) when the file system refuses O_DIRECT, either at open()
 * or, as some do, only at the first read, which is why one block is read
 * here.
 */
static inline int strata_ioh_open_fd(const struct strata_host *host, const char *path, int direct)
{
	struct stat st;
	int fd, rc;

	if (!path)
		return -EINVAL;
#ifdef O_DIRECT
	fd = open(path, O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
#else
	if (direct) /* e.g. macOS: F_NOCACHE is a hint, not a bypass with alignment rules */
		return strata_ioh_direct_refused(host, path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
#endif
	if (fd < 0)
		return errno == EINVAL && direct ? strata_ioh_direct_refused(host, path) : -errno;
	if (fstat(fd, &st)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return -EISDIR;
	}
	if (direct) {
		void *blk = host->aligned_alloc(STRATA_IOH_DIRECT_ALIGN, STRATA_IOH_DIRECT_ALIGN);
		ssize_t r;

		if (!blk) {
			close(fd);
			return -ENOMEM;
		}
		do
			r = pread(fd, blk, STRATA_IOH_DIRECT_ALIGN, 0);
		while (r < 0 && errno == EINTR);
		rc = r < 0 ? -errno : 0;
		host->aligned_free(blk);
		if (rc) {
			close(fd);
			return rc == -EINVAL ? strata_ioh_direct_refused(host, path) : rc;
		}
	}
	return fd;
}
#endif /* _WIN32 */

#endif /* STRATA_IO_HELPERS_H */
