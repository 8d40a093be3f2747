/*
 * compat.h - the POSIX functions and constants the core uses that the
 * Windows C runtime (mingw-w64's msvcrt and winpthreads) lacks.
 *
 * Force-included in every core source of the Windows build (CMakeLists.txt:
 * -include), so the core is written against POSIX once and no source
 * carries a Windows branch of its own; what differs in kind rather than in
 * spelling (mappings, address space, the machine's size) is plat.h's.
 * Implemented in compat.c.  Never included by plugins: they see the ABI
 * headers only.
 */
#ifndef STRATA_WIN32_COMPAT_H
#define STRATA_WIN32_COMPAT_H

#ifndef _WIN32
#error "compat.h is the Windows build's"
#endif

/* Feature macros before the first system header, which this file is: a
 * source's own #define _GNU_SOURCE comes too late in this build.
 * _GNU_SOURCE: asprintf and vasprintf from mingw's <stdio.h>. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/* gmtime_r and localtime_r, which <time.h> declares only when asked. */
#ifndef _POSIX_THREAD_SAFE_FUNCTIONS
#define _POSIX_THREAD_SAFE_FUNCTIONS 200112L
#endif

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Handles are not inherited by child processes unless asked. */
#ifndef O_CLOEXEC
#define O_CLOEXEC _O_NOINHERIT
#endif
/* open() of a directory fails on Windows whatever the flags: callers that
 * open one (to fsync a rename) treat that failure as "nothing to sync". */
#ifndef O_DIRECTORY
#define O_DIRECTORY 0
#endif
#ifndef ESTALE
#define ESTALE 116 /* Linux's value: "the file changed under us" */
#endif
#ifndef POSIX_FADV_DONTNEED
#define POSIX_FADV_NORMAL 0
#define POSIX_FADV_RANDOM 1
#define POSIX_FADV_SEQUENTIAL 2
#define POSIX_FADV_WILLNEED 3
#define POSIX_FADV_DONTNEED 4
#endif

char *strndup(const char *s, size_t n);
void *memmem(const void *hay, size_t n_hay, const void *needle, size_t n_needle);
ssize_t getline(char **line, size_t *cap, FILE *f);
/* At an offset, without moving the file position other readers rely on. */
ssize_t pread(int fd, void *buf, size_t n, off_t off);
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off);
int fsync(int fd);
int fdatasync(int fd);
/* Advice only: Windows has no per-range cache hint. */
int posix_fadvise(int fd, off_t off, off_t len, int advice);
char *mkdtemp(char *tmpl);
/* rename() as POSIX has it: an existing target is replaced (the writer's
 * atomic commit), where the C runtime's fails with EEXIST. */
int strata_win_rename(const char *from, const char *to);
#define rename(from, to) strata_win_rename(from, to)
/* resolved NULL only (as the core calls it): a malloc'd absolute path of an
 * existing file, or NULL with errno set. */
char *realpath(const char *path, char *resolved);

#endif
