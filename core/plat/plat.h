/*
 * plat.h - what the core needs from the operating system and POSIX does
 * not say the same way everywhere: file mappings, address space, the
 * machine's size, random bytes.
 *
 * One implementation per platform: posix.c (Linux and the BSDs) and
 * win32/plat.c (Windows, where mappings are CreateFileMapping views and
 * anonymous memory is VirtualAlloc's).  The rest of the core calls these
 * and includes no <sys/mman.h> of its own.  What plain libc lacks on Windows
 * (strndup, pread, ...) is win32/compat.h's, force-included in that build.
 *
 * Errors are negative errno values; nothing here logs: callers know the
 * file and say what failed.
 */
#ifndef STRATA_PLAT_H
#define STRATA_PLAT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Map the first `size` bytes of the open file fd read-only; *out the view.
 * shared = 0: a private mapping (the model file: never written through);
 * shared = 1: shared with other readers (the PLE table).  The caller may
 * close fd afterwards.  Released with strata_unmap_file(*out, size).
 */
int strata_map_file(int fd, uint64_t size, int shared, void **out);
void strata_unmap_file(void *p, uint64_t size);

/*
 * `bytes` of zeroed read-write memory at a page boundary, or NULL (errno
 * set).  Released with strata_vm_free(p, bytes).
 */
void *strata_vm_alloc(size_t bytes);
void strata_vm_free(void *p, size_t bytes);

/* Hints; a platform without one ignores it. */
enum strata_vm_advice {
	STRATA_VM_WILLNEED,  /* will be read soon: read ahead */
	STRATA_VM_DONTNEED,  /* a clean file view's pages may be dropped */
	STRATA_VM_HUGEPAGE,  /* an anonymous range worth huge pages */
	STRATA_VM_RANDOM,    /* read at random: no read-ahead */
};
void strata_vm_advise(const void *p, size_t bytes, enum strata_vm_advice a);

/*
 * Files mapped one after the other at chosen offsets of one range of
 * address space (a model's shards, see gguf_split.c).  _reserve takes
 * `bytes` of address space and sets *base to its start, aligned to `align`
 * (a power of two, at most 2 MiB); _map maps the first `size` bytes of fd
 * read-only at base + off (off a multiple of 64 KiB, ranges not
 * overlapping); _free unmaps everything and releases the range.
 */
struct strata_vm_region;
int strata_vm_region_reserve(size_t bytes, size_t align, struct strata_vm_region **out,
			     uint8_t **base);
int strata_vm_region_map(struct strata_vm_region *r, uint64_t off, int fd, uint64_t size);
void strata_vm_region_free(struct strata_vm_region *r);

/*
 * Does an unbuffered read (O_DIRECT; FILE_FLAG_NO_BUFFERING on Windows) of
 * the first `align` bytes of path work, i.e. does its file system take
 * direct I/O?  1 or 0; align a power of two of at least 512.
 */
int strata_direct_read_works(const char *path, size_t align);

/* The page size the mappings above work in (4096 on most machines). */
size_t strata_page_size(void);

/* Logical CPUs online now; at least 1. */
int strata_cpu_count(void);

/* Physical memory in all, and what is free now (0 where unknown). */
uint64_t strata_phys_mem(void);
uint64_t strata_phys_mem_free(void);

/* n bytes from the system's random source; 0 or -errno. */
int strata_random_bytes(void *buf, size_t n);

/* The SHA-256 of n bytes (OpenSSL's libcrypto; Windows' CNG); 0 or -EIO.
 * In crypto.c, beside the core rather than the kernels' library. */
int strata_sha256(const void *data, size_t n, uint8_t md[32]);

/*
 * Block every signal in threads started after this, until
 * strata_threads_signals_restore(): pool workers must never take a signal
 * meant for the program (a server's SIGINT).  A no-op where there are none.
 */
struct strata_sigmask {
	long long opaque[20]; /* a sigset_t (128 bytes in glibc), aligned */
};
void strata_threads_signals_block(struct strata_sigmask *saved);
void strata_threads_signals_restore(const struct strata_sigmask *saved);

#endif
