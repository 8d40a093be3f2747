/*
 * compat.c - compat.h's POSIX functions on Windows.
 */
#include <direct.h>
#include <errno.h>
#include <io.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <windows.h>

/* Binary files everywhere, as on POSIX: open() and fopen() without
 * O_BINARY or "b" would turn CR LF into LF on read. */
__attribute__((constructor)) static void binary_mode(void)
{
	_fmode = _O_BINARY;
}

char *strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d = malloc(len + 1);

	if (!d)
		return NULL;
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

void *memmem(const void *hay, size_t n_hay, const void *needle, size_t n_needle)
{
	const unsigned char *h = hay, *end;

	if (!n_needle)
		return (void *)hay;
	if (n_hay < n_needle)
		return NULL;
	end = h + (n_hay - n_needle);
	for (; h <= end; h++) {
		h = memchr(h, *(const unsigned char *)needle, (size_t)(end - h) + 1);
		if (!h)
			return NULL;
		if (!memcmp(h, needle, n_needle))
			return (void *)h;
	}
	return NULL;
}

ssize_t getline(char **line, size_t *cap, FILE *f)
{
	size_t n = 0;
	int c;

	if (!line || !cap) {
		errno = EINVAL;
		return -1;
	}
	while ((c = getc(f)) != EOF) {
		if (n + 2 > *cap) {
			size_t want = *cap ? *cap * 2 : 128;
			char *p = realloc(*line, want);

			if (!p) {
				errno = ENOMEM;
				return -1;
			}
			*line = p;
			*cap = want;
		}
		(*line)[n++] = (char)c;
		if (c == '\n')
			break;
	}
	if (!n)
		return -1;
	(*line)[n] = '\0';
	return n > SSIZE_MAX ? -1 : (ssize_t)n;
}

/* One ReadFile or WriteFile at an offset; the byte count or -1 (errno). */
static ssize_t at_offset(int fd, void *buf, size_t n, off_t off, int write)
{
	HANDLE h = (HANDLE)_get_osfhandle(fd);
	OVERLAPPED ov = { 0 };
	DWORD done = 0, want = n > 0x7ffff000u ? 0x7ffff000u : (DWORD)n;
	BOOL ok;

	if (h == INVALID_HANDLE_VALUE) {
		errno = EBADF;
		return -1;
	}
	ov.Offset = (DWORD)((uint64_t)off & 0xffffffffu);
	ov.OffsetHigh = (DWORD)((uint64_t)off >> 32);
	ok = write ? WriteFile(h, buf, want, &done, &ov) : ReadFile(h, buf, want, &done, &ov);
	if (!ok) {
		DWORD err = GetLastError();

		if (err == ERROR_HANDLE_EOF)
			return 0;
		errno = err == ERROR_ACCESS_DENIED ? EACCES : err == ERROR_DISK_FULL ? ENOSPC : EIO;
		return -1;
	}
	return (ssize_t)done;
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	return at_offset(fd, buf, n, off, 0);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return at_offset(fd, (void *)buf, n, off, 1);
}

int fsync(int fd)
{
	return _commit(fd);
}

int fdatasync(int fd)
{
	return _commit(fd);
}

int posix_fadvise(int fd, off_t off, off_t len, int advice)
{
	(void)fd;
	(void)off;
	(void)len;
	(void)advice;
	return 0;
}

char *mkdtemp(char *tmpl)
{
	size_t len = strlen(tmpl);

	for (int tries = 0; tries < 100; tries++) {
		unsigned int r = (unsigned int)GetTickCount() ^ (unsigned int)GetCurrentProcessId() ^
				 (unsigned int)tries * 2654435761u;
		static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";

		if (len < 6 || strcmp(tmpl + len - 6, "XXXXXX") != 0) {
			errno = EINVAL;
			return NULL;
		}
		for (int i = 0; i < 6; i++, r /= 36)
			tmpl[len - 6 + i] = digits[r % 36];
		if (_mkdir(tmpl) == 0)
			return tmpl;
		if (errno != EEXIST)
			return NULL;
		memcpy(tmpl + len - 6, "XXXXXX", 6);
		Sleep(1);
	}
	errno = EEXIST;
	return NULL;
}

int strata_win_rename(const char *from, const char *to)
{
	if (MoveFileExA(from, to, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
		return 0;
	switch (GetLastError()) {
	case ERROR_FILE_NOT_FOUND:
	case ERROR_PATH_NOT_FOUND:
		errno = ENOENT;
		break;
	case ERROR_ACCESS_DENIED:
	case ERROR_SHARING_VIOLATION:
		errno = EACCES;
		break;
	case ERROR_NOT_SAME_DEVICE:
		errno = EXDEV;
		break;
	default:
		errno = EIO;
	}
	return -1;
}

char *realpath(const char *path, char *resolved)
{
	struct _stat64 st;
	char *full;

	if (resolved) { /* the core never passes a buffer: PATH_MAX means nothing here */
		errno = EINVAL;
		return NULL;
	}
	if (_stat64(path, &st) != 0)
		return NULL; /* errno from _stat64 */
	full = _fullpath(NULL, path, 0);
	if (!full)
		errno = ENOMEM;
	return full;
}
