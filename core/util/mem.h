/*
 * mem.h - aligned allocation for the core and its plugins' host table.
 */
#ifndef STRATA_UTIL_MEM_H
#define STRATA_UTIL_MEM_H

#include <stddef.h>

/* Kernels and rows like cache-line (and AVX-512 register) alignment. */
#define STRATA_ALIGN 64

/*
 * size bytes aligned to align (a power of two, at least sizeof(void *));
 * size 0 gives a valid pointer too.  NULL on a bad alignment or no memory.
 * Release with strata_aligned_free.
 */
void *strata_aligned_alloc(size_t align, size_t size);
void strata_aligned_free(void *p);

/*
 * n * size bytes, STRATA_ALIGN-aligned and zeroed (at least STRATA_ALIGN
 * bytes when n * size is 0); NULL when n * size overflows or on no memory.
 * Release with strata_aligned_free.
 */
void *strata_zalloc_aligned(size_t n, size_t size);

/* Bytes the kernel would hand out now (MemAvailable: free memory plus the
 * page cache it can drop), or the free memory where /proc/meminfo is absent. */
unsigned long long strata_mem_available(void);

#endif
