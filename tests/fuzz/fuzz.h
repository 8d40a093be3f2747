/*
 * fuzz.h - what the libFuzzer targets in tests/fuzz share.
 *
 * Each fuzz_<target>.c defines LLVMFuzzerTestOneInput() and
 * fuzz_target_init().  The same file is linked two ways: with libFuzzer
 * (STRATA_FUZZ=ON, clang; fuzz_init.c supplies LLVMFuzzerInitialize) and,
 * in every build, with regress_main.c into regress_<target>, which feeds the
 * inputs of tests/fuzz/regress-<target> (every crash ever found) and
 * tests/fuzz/corpus-<target> to the same entry function under ctest.
 *
 * A property that must hold is checked with FUZZ_CHECK, which aborts: to
 * libFuzzer that is a crash, to ctest a failed test.
 */
#ifndef STRATA_FUZZ_H
#define STRATA_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                               \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, \
				__LINE__, #cond);                                      \
			abort();                                                       \
		}                                                                      \
	} while (0)

/*
 * Once per process, before the first input: load what the target needs
 * (vocabularies from ../shared) and silence strata's error log (every bad
 * input logs one line).  Returns 0, or 77 when the shared data is absent
 * (the reason printed).
 */
int fuzz_target_init(void);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The bytes as a file the loaders can open by path: a memfd whose path
 * (/proc/self/fd/N) is written to path.  extend > 0 grows the file with
 * zeros to that size (sparse: costs no memory until read).  Returns the fd
 * (close it), or -1.
 */
int fuzz_memfile(const uint8_t *data, size_t size, size_t extend, char *path, size_t cap);

/* 1 when s[0..n) is valid UTF-8 (no overlongs, surrogates or > U+10FFFF). */
int fuzz_utf8_valid(const unsigned char *s, size_t n);

/* A log sink that drops every line: installed by fuzz_target_init(). */
void fuzz_quiet(void);

#endif
