/*
 * mem.c - aligned allocation (mem.h).
 */
#include "util/mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <malloc.h>
#endif

void *strata_aligned_alloc(size_t align, size_t size)
{
	void *p;

	if (align < sizeof(void *) || (align & (align - 1)))
		return NULL;
#ifdef _WIN32
	p = _aligned_malloc(size ? size : 1, align);
	return p;
#else
	return posix_memalign(&p, align, size ? size : 1) ? NULL : p;
#endif
}

void strata_aligned_free(void *p)
{
#ifdef _WIN32
	_aligned_free(p);
#else
	free(p);
#endif
}

void *strata_zalloc_aligned(size_t n, size_t size)
{
	size_t bytes;
	void *p;

	if (n && size > SIZE_MAX / n)
		return NULL;
	bytes = n * size;
	p = strata_aligned_alloc(STRATA_ALIGN, bytes ? bytes : STRATA_ALIGN);
	if (p)
		memset(p, 0, bytes ? bytes : STRATA_ALIGN);
	return p;
}
