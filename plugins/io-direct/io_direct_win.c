/*
 * io_direct_win.c - io-direct on Windows: unbuffered overlapped ReadFile
 * and one I/O completion port per handle; synchronous positioned ReadFile
 * for the inline mode.  See io_direct.h for the contract of each function.
 */
#ifdef _WIN32
#include "io_direct.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int strata_dio_open_(struct dio *d, const char *path, int direct)
{
	int64_t size;
	int rc;

	rc = strata_ioh_win_open(d->host, path, direct, !d->inline_mode, &d->file);
	if (rc)
		return rc;
	size = strata_ioh_win_size(d->file);
	if (size < 0)
		return (int)size;
	d->size = size;
	return 0;
}

int strata_dio_async_init_(struct dio *d)
{
	d->ws = calloc(d->s.depth, sizeof(*d->ws));
	if (!d->ws)
		return -ENOMEM;
	d->port = CreateIoCompletionPort(d->file, NULL, 0, 1);
	if (!d->port)
		return strata_ioh_win_errno(GetLastError());
	/* Completions are only ever taken from the port: spare the kernel the event. */
	SetFileCompletionNotificationModes(d->file, FILE_SKIP_SET_EVENT_ON_HANDLE);
	return 0;
}

int64_t strata_dio_size_(struct dio *d)
{
	LARGE_INTEGER sz;

	return GetFileSizeEx(d->file, &sz) ? (int64_t)sz.QuadPart : strata_ioh_win_errno(GetLastError());
}

int32_t strata_dio_read_sync_(struct dio *d, uint32_t ix)
{
	struct strata_io_req *r = d->s.req[ix];
	uint32_t got = 0;

	while (got < r->len) {
		int32_t n = strata_ioh_win_read_at(d->file, (char *)r->buf + got, r->len - got,
					  r->offset + got, NULL);

		if (n < 0)
			return got ? (int32_t)got : n;
		if (!n)
			break;
		got += (uint32_t)n;
	}
	return (int32_t)got;
}

/*
 * Issue (the rest of) the read in slot ix: 1 when the port will get its
 * packet (ReadFile done or pending: both post one), 0 with *err set when
 * ReadFile refused it.
 */
static int win_issue(struct dio *d, uint32_t ix, DWORD *err)
{
	struct strata_io_req *r = d->s.req[ix];
	struct wslot *w = &d->ws[ix];
	uint32_t got = d->s.got[ix];
	uint64_t off = r->offset + got;

	memset(&w->ov, 0, sizeof(w->ov));
	w->ix = ix;
	w->ov.Offset = (DWORD)off;
	w->ov.OffsetHigh = (DWORD)(off >> 32);
	if (ReadFile(d->file, (char *)r->buf + got, r->len - got, NULL, &w->ov) ||
	    (*err = GetLastError()) == ERROR_IO_PENDING) {
		d->inflight++;
		return 1;
	}
	return 0;
}

/* Too many reads outstanding for the system right now: try again after a reap. */
static int win_no_room(DWORD e)
{
	return e == ERROR_INVALID_USER_BUFFER || e == ERROR_NOT_ENOUGH_MEMORY ||
	       e == ERROR_NOT_ENOUGH_QUOTA;
}

/* ReadFile one by one: no batch call exists. */
uint32_t strata_dio_start_(struct dio *d, const uint32_t *ix, uint32_t n)
{
	uint32_t i;
	DWORD e = 0;

	for (i = 0; i < n; i++) {
		if (win_issue(d, ix[i], &e))
			continue;
		if (win_no_room(e))
			break;
		strata_ioh_finish(&d->s, ix[i], e == ERROR_HANDLE_EOF ? 0 : strata_ioh_win_errno(e));
	}
	return i;
}

int strata_dio_restart_(struct dio *d, uint32_t ix)
{
	DWORD e = 0;

	if (win_issue(d, ix, &e))
		return 0;
	return e == ERROR_HANDLE_EOF ? 1 : strata_ioh_win_errno(e);
}

/* GetQueuedCompletionStatusEx returns once one packet is there: the caller loops for more. */
int strata_dio_wait_(struct dio *d, uint32_t need, uint64_t left)
{
	ULONG got = 0, i;
	DWORD ms = !need ? 0 : left == UINT64_MAX ? INFINITE
			      : left > 0xfffffff0u ? 0xfffffff0u : (DWORD)left;
	ULONG max = d->inflight < EV_BATCH ? d->inflight : EV_BATCH;

	if (!GetQueuedCompletionStatusEx(d->port, d->ents, max, &got, ms, FALSE)) {
		DWORD e = GetLastError();

		return e == WAIT_TIMEOUT ? 0 : strata_ioh_win_errno(e);
	}
	for (i = 0; i < got; i++) {
		struct wslot *w = (struct wslot *)d->ents[i].lpOverlapped;
		DWORD n = 0;
		int32_t res;

		d->inflight--;
		if (GetOverlappedResult(d->file, &w->ov, &n, FALSE))
			res = (int32_t)n;
		else
			res = GetLastError() == ERROR_HANDLE_EOF ? 0 : strata_ioh_win_errno(GetLastError());
		strata_dio_finish_or_resume_(d, w->ix, res);
	}
	return (int)got;
}

void strata_dio_drain_(struct dio *d)
{
	if (d->inflight)
		CancelIoEx(d->file, NULL); /* queued reads end with ERROR_OPERATION_ABORTED */
	while (d->inflight) {
		ULONG got = 0, i;

		if (!GetQueuedCompletionStatusEx(d->port, d->ents, EV_BATCH, &got, INFINITE, FALSE))
			break;
		for (i = 0; i < got; i++) {
			struct wslot *w = (struct wslot *)d->ents[i].lpOverlapped;

			d->inflight--;
			strata_ioh_finish(&d->s, w->ix, -ECANCELED);
		}
	}
}

void strata_dio_close_files_(struct dio *d)
{
	if (d->port)
		CloseHandle(d->port);
	if (d->file && d->file != INVALID_HANDLE_VALUE)
		CloseHandle(d->file);
	free(d->ws);
}

int strata_dio_probe_(const struct strata_host *host)
{
	(void)host;
	return DIRECT_SCORE; /* completion ports exist on every supported Windows */
}
#endif /* _WIN32 */
