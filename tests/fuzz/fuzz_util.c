/*
 * fuzz_util.c - helpers of the fuzz targets (fuzz.h), linked into both the
 * libFuzzer binaries and the regression replayers.
 */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz.h"

#include <sys/mman.h>
#include <unistd.h>
#include <utf8proc.h>

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

/*
 * 1 when s[0..n) is valid UTF-8 (no overlongs, surrogates or > U+10FFFF),
 * by utf8proc: an oracle apart from the core's own decoders.
 */
int fuzz_utf8_valid(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		utf8proc_int32_t c;
		utf8proc_ssize_t k = utf8proc_iterate(s + i, (utf8proc_ssize_t)(n - i), &c);

		if (k <= 0)
			return 0;
		i += (size_t)k;
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
