/*
 * plat.c - plat.h on Windows.
 *
 * File views are CreateFileMapping + MapViewOfFile; anonymous memory is
 * VirtualAlloc's.  A region of shards (strata_vm_region_*) cannot keep its
 * reservation while files are mapped into it, as mmap's MAP_FIXED does on
 * POSIX: Windows maps a view only into free address space (placeholders,
 * which would allow it, need Windows 10 1803 and Wine does not have them).
 * So _reserve finds a free range and lets it go, and _map places each view
 * at its address; another thread allocating there in between makes _map
 * fail with -EADDRINUSE, and the caller says so.  Models load before the
 * engine starts other threads, so that does not happen in practice.
 */
#include <windows.h>

#include <bcrypt.h>
#include <errno.h>
#include <io.h>
#include <malloc.h>
#include <stdlib.h>

#include "plat/plat.h"

/* The errno closest to a Win32 error, for messages. */
static int win_errno(DWORD err)
{
	switch (err) {
	case ERROR_NOT_ENOUGH_MEMORY:
	case ERROR_OUTOFMEMORY:
	case ERROR_COMMITMENT_LIMIT:
		return ENOMEM;
	case ERROR_ACCESS_DENIED:
		return EACCES;
	case ERROR_INVALID_HANDLE:
		return EBADF;
	case ERROR_INVALID_ADDRESS:
		return EADDRINUSE;
	case ERROR_FILE_INVALID:
	case ERROR_MAPPED_ALIGNMENT:
		return EINVAL;
	default:
		return EIO;
	}
}

/* A read-only view of fd's first size bytes at addr (NULL: anywhere). */
static int map_view(int fd, uint64_t size, void *addr, void **out)
{
	HANDLE fh = (HANDLE)_get_osfhandle(fd), mh;
	void *v;
	DWORD err;

	if (fh == INVALID_HANDLE_VALUE)
		return -EBADF;
	if (size > SIZE_MAX)
		return -EFBIG;
	mh = CreateFileMappingW(fh, NULL, PAGE_READONLY, 0, 0, NULL);
	if (!mh)
		return -win_errno(GetLastError());
	v = MapViewOfFileEx(mh, FILE_MAP_READ, 0, 0, (SIZE_T)size, addr);
	err = GetLastError();
	CloseHandle(mh); /* the view keeps the mapping object alive */
	if (!v)
		return -win_errno(err);
	*out = v;
	return 0;
}

int strata_map_file(int fd, uint64_t size, int shared, void **out)
{
	(void)shared; /* read-only views are shared and private alike */
	return map_view(fd, size, NULL, out);
}

void strata_unmap_file(void *p, uint64_t size)
{
	(void)size;
	if (p)
		UnmapViewOfFile(p);
}

void *strata_vm_alloc(size_t bytes)
{
	void *p = VirtualAlloc(NULL, bytes, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);

	if (!p)
		errno = win_errno(GetLastError());
	return p;
}

void strata_vm_free(void *p, size_t bytes)
{
	(void)bytes;
	if (p)
		VirtualFree(p, 0, MEM_RELEASE);
}

void strata_vm_advise(const void *p, size_t bytes, enum strata_vm_advice a)
{
	switch (a) {
	case STRATA_VM_WILLNEED: {
		WIN32_MEMORY_RANGE_ENTRY r = { (void *)p, bytes };

		(void)PrefetchVirtualMemory(GetCurrentProcess(), 1, &r, 0);
		break;
	}
	case STRATA_VM_DONTNEED:
		/* Unlocking pages that are not locked takes them out of the
		 * working set; a file view's come back from the cache. */
		(void)VirtualUnlock((void *)p, bytes);
		break;
	default: /* large pages need a privilege users do not have */
		break;
	}
}

#define REGION_MAX_VIEWS 65535u /* a model's shards: llama.cpp's u16 count */

struct strata_vm_region {
	uint8_t *base;
	uint32_t n;
	void **views;
};

int strata_vm_region_reserve(size_t bytes, size_t align, struct strata_vm_region **out,
			     uint8_t **base)
{
	struct strata_vm_region *r = calloc(1, sizeof(*r));
	void *p;

	if (!r)
		return -ENOMEM;
	p = VirtualAlloc(NULL, bytes + align, MEM_RESERVE, PAGE_NOACCESS);
	if (!p) {
		free(r);
		return -win_errno(GetLastError());
	}
	VirtualFree(p, 0, MEM_RELEASE); /* see the top of the file */
	r->base = (uint8_t *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	*base = r->base;
	*out = r;
	return 0;
}

int strata_vm_region_map(struct strata_vm_region *r, uint64_t off, int fd, uint64_t size)
{
	void **v;
	void *m;
	int rc;

	if (r->n == REGION_MAX_VIEWS)
		return -E2BIG;
	v = realloc(r->views, (r->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->views = v;
	rc = map_view(fd, size, r->base + off, &m);
	if (rc)
		return rc;
	r->views[r->n++] = m;
	return 0;
}

void strata_vm_region_free(struct strata_vm_region *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; i < r->n; i++)
		UnmapViewOfFile(r->views[i]);
	free(r->views);
	free(r);
}

int strata_direct_read_works(const char *path, size_t align)
{
	HANDLE h = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
			       OPEN_EXISTING, FILE_FLAG_NO_BUFFERING, NULL);
	void *buf = _aligned_malloc(align, align);
	DWORD got = 0;
	int ok;

	ok = h != INVALID_HANDLE_VALUE && buf && ReadFile(h, buf, (DWORD)align, &got, NULL) &&
	     got == align;
	if (h != INVALID_HANDLE_VALUE)
		CloseHandle(h);
	_aligned_free(buf);
	return ok;
}

size_t strata_page_size(void)
{
	SYSTEM_INFO si;

	GetSystemInfo(&si);
	return si.dwPageSize;
}

int strata_cpu_count(void)
{
	DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);

	return n ? (int)n : 1;
}

uint64_t strata_phys_mem(void)
{
	MEMORYSTATUSEX ms = { .dwLength = sizeof(ms) };

	return GlobalMemoryStatusEx(&ms) ? ms.ullTotalPhys : 0;
}

uint64_t strata_phys_mem_free(void)
{
	MEMORYSTATUSEX ms = { .dwLength = sizeof(ms) };

	return GlobalMemoryStatusEx(&ms) ? ms.ullAvailPhys : 0;
}

int strata_random_bytes(void *buf, size_t n)
{
	if (n > ULONG_MAX)
		return -EINVAL;
	return BCryptGenRandom(NULL, buf, (ULONG)n, BCRYPT_USE_SYSTEM_PREFERRED_RNG) == 0
		       ? 0 : -EIO;
}

/* Windows delivers no POSIX signals to threads: nothing to block. */
void strata_threads_signals_block(struct strata_sigmask *saved)
{
	(void)saved;
}

void strata_threads_signals_restore(const struct strata_sigmask *saved)
{
	(void)saved;
}
