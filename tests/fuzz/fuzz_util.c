/*
 * fuzz_util.c - helpers of the fuzz targets (fuzz.h), linked into both the
 * libFuzzer binaries and the regression replayers.
 */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz.h"

#include <sys/mman.h>
#include <unistd.h>

#include "util/log.h"

int fuzz_memfile(const uint8_t *data, size_t size, size_t extend, char *path, size_t cap)
{
	int fd = memfd_create("strata-fuzz", MFD_CLOEXEC);
	size_t done = 0;

	if (fd < 0)
		return -1;
	while (done < size) {
		ssize_t w = write(fd, data + done, size - done);

		if (w <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	if (extend > size && ftruncate(fd, (off_t)extend) != 0) {
		close(fd);
		return -1;
	}
	snprintf(path, cap, "/proc/self/fd/%d", fd);
	return fd;
}

/* 1 when s[0..n) is valid UTF-8 (no overlongs, surrogates or > U+10FFFF). */
int fuzz_utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i], len, cp, min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC0 && c < 0xE0)
			len = 2, cp = c & 0x1F, min = 0x80;
		else if (c >= 0xE0 && c < 0xF0)
			len = 3, cp = c & 0x0F, min = 0x800;
		else if (c >= 0xF0 && c < 0xF8)
			len = 4, cp = c & 0x07, min = 0x10000;
		else
			return 0;
		if (n - i < len)
			return 0;
		for (unsigned k = 1; k < len; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return 0;
		i += len;
	}
	return 1;
}

static void drop_line(void *user, int level, const char *line)
{
	(void)user;
	(void)level;
	(void)line;
}

void fuzz_quiet(void)
{
	/* Lines are still formatted (the sink sees them): only the output goes. */
	strata_log_set_sink(drop_line, NULL);
}
