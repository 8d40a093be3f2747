/*
 * mem.c - aligned allocation and available memory (mem.h).
 */
#include "util/mem.h"

#include "plat/plat.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <malloc.h> /* _aligned_malloc: Windows has no posix_memalign */
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

unsigned long long strata_mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	unsigned long long kb = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb ? kb * 1024 : strata_phys_mem_free();
}
