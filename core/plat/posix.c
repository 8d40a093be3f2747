/*
 * posix.c - plat.h on Linux and other POSIX systems.
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MADV_HUGEPAGE, getrandom */
#include "plat/plat.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/random.h>
#endif

_Static_assert(sizeof(sigset_t) <= sizeof(((struct strata_sigmask *)0)->opaque),
	       "struct strata_sigmask holds a sigset_t");

int strata_map_file(int fd, uint64_t size, int shared, void **out)
{
	void *m;

	if (size > SIZE_MAX)
		return -EFBIG;
	m = mmap(NULL, (size_t)size, PROT_READ, shared ? MAP_SHARED : MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	*out = m;
	return 0;
}

void strata_unmap_file(void *p, uint64_t size)
{
	if (p)
		munmap(p, (size_t)size);
}

void *strata_vm_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void strata_vm_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}

void strata_vm_advise(const void *p, size_t bytes, enum strata_vm_advice a)
{
	int adv;

	switch (a) {
	case STRATA_VM_WILLNEED: adv = MADV_WILLNEED; break;
	case STRATA_VM_DONTNEED: adv = MADV_DONTNEED; break;
	case STRATA_VM_RANDOM: adv = MADV_RANDOM; break;
#ifdef MADV_HUGEPAGE
	case STRATA_VM_HUGEPAGE: adv = MADV_HUGEPAGE; break;
#endif
	default: return;
	}
	(void)madvise((void *)p, bytes, adv);
}

/* The range is one mapping: MAP_FIXED maps each file over its part. */
struct strata_vm_region {
	void *start;
	size_t bytes;
	uint8_t *base;
};

int strata_vm_region_reserve(size_t bytes, size_t align, struct strata_vm_region **out,
			     uint8_t **base)
{
	struct strata_vm_region *r = calloc(1, sizeof(*r));
	int e;

	if (!r)
		return -ENOMEM;
	r->bytes = bytes + align;
	r->start = mmap(NULL, r->bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			-1, 0);
	if (r->start == MAP_FAILED) {
		e = errno;
		free(r);
		return -e;
	}
	r->base = (uint8_t *)(((uintptr_t)r->start + align - 1) & ~(uintptr_t)(align - 1));
	*base = r->base;
	*out = r;
	return 0;
}

int strata_vm_region_map(struct strata_vm_region *r, uint64_t off, int fd, uint64_t size)
{
	void *m = mmap(r->base + off, (size_t)size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);

	return m == MAP_FAILED ? -errno : 0;
}

void strata_vm_region_free(struct strata_vm_region *r)
{
	if (!r)
		return;
	munmap(r->start, r->bytes);
	free(r);
}

int strata_direct_read_works(const char *path, size_t align)
{
#ifdef O_DIRECT
	void *buf = NULL;
	int fd, ok;

	if (posix_memalign(&buf, align, align))
		return 0;
	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ok = fd >= 0 && pread(fd, buf, align, 0) == (ssize_t)align;
	if (fd >= 0)
		close(fd);
	free(buf);
	return ok;
#else
	(void)path;
	(void)align;
	return 0;
#endif
}

size_t strata_page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (size_t)p : 4096;
}

int strata_cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

uint64_t strata_phys_mem(void)
{
	long pages = sysconf(_SC_PHYS_PAGES);

	return pages > 0 ? (uint64_t)pages * strata_page_size() : 0;
}

uint64_t strata_phys_mem_free(void)
{
#ifdef _SC_AVPHYS_PAGES
	long pages = sysconf(_SC_AVPHYS_PAGES);

	return pages > 0 ? (uint64_t)pages * strata_page_size() : 0;
#else
	return 0;
#endif
}

int strata_random_bytes(void *buf, size_t n)
{
#if defined(__linux__)
	ssize_t got = getrandom(buf, n, GRND_NONBLOCK);

	if (got < 0)
		return -errno;
	return (size_t)got == n ? 0 : -EAGAIN;
#else
	arc4random_buf(buf, n);
	return 0;
#endif
}

void strata_threads_signals_block(struct strata_sigmask *saved)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, (sigset_t *)(void *)saved->opaque);
}

void strata_threads_signals_restore(const struct strata_sigmask *saved)
{
	pthread_sigmask(SIG_SETMASK, (const sigset_t *)(const void *)saved->opaque, NULL);
}
