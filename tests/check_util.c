/*
 * check_util.c - core/util: the string builder (growable and fixed), the
 * aligned allocators, the monotonic clock and progress lines through the log
 * sink.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/strbuf.h"

START_TEST(buf_grows)
{
	struct strata_buf b = { 0 };
	char big[1000];

	strata_buf_puts(&b, "abc");
	ck_assert_str_eq(b.p, "abc");
	ck_assert_uint_eq(b.len, 3);
	strata_buf_add(&b, "\0z", 2); /* bytes, NUL included */
	ck_assert_uint_eq(b.len, 5);
	ck_assert(memcmp(b.p, "abc\0z", 6) == 0);
	memset(big, 'x', sizeof(big));
	for (int i = 0; i < 100; i++)
		strata_buf_add(&b, big, sizeof(big));
	ck_assert_uint_eq(b.len, 5 + 100 * sizeof(big));
	ck_assert(b.cap > b.len && b.p[b.len] == 0 && !b.oom && !b.cut);
	strata_buf_consume(&b, 5);
	ck_assert_uint_eq(b.len, 100 * sizeof(big));
	ck_assert(b.p[0] == 'x' && b.p[b.len] == 0);
	strata_buf_free(&b);
	ck_assert_ptr_null(b.p);
	ck_assert_uint_eq(b.len, 0);
}
END_TEST

/* printf: short texts, and one longer than any internal scratch. */
START_TEST(buf_printf)
{
	struct strata_buf b = { 0 };
	char want[2100];

	strata_buf_printf(&b, "%d-%s-%.2f", 42, "x", 0.5);
	ck_assert_str_eq(b.p, "42-x-0.50");
	memset(want, 'y', 2000);
	want[2000] = 0;
	strata_buf_printf(&b, "[%s]", want);
	ck_assert_uint_eq(b.len, 9 + 2002);
	ck_assert(b.p[9] == '[' && b.p[10] == 'y' && b.p[b.len - 1] == ']');
	strata_buf_free(&b);
}
END_TEST

/* A fixed buffer keeps what fits, says it was cut, and then takes nothing more. */
START_TEST(buf_fixed)
{
	char mem[8];
	struct strata_buf b;

	memset(mem, '#', sizeof(mem));
	strata_buf_fixed(&b, mem, sizeof(mem));
	ck_assert_str_eq(mem, "");
	strata_buf_puts(&b, "abc");
	ck_assert(!b.cut && b.len == 3);
	strata_buf_printf(&b, "%d", 12345);
	ck_assert(b.cut);
	ck_assert_str_eq(mem, "abc1234"); /* 7 bytes and the NUL */
	strata_buf_puts(&b, "z");
	ck_assert_str_eq(mem, "abc1234");
	ck_assert_int_eq(strata_buf_reserve(&b, 1), -ENOSPC);
	strata_buf_free(&b); /* empties it, frees nothing */
	ck_assert(b.p == mem && b.len == 0 && !b.cut && mem[0] == 0);
	strata_buf_puts(&b, "1234567");
	ck_assert(!b.cut);
	strata_buf_puts(&b, "");
	ck_assert(!b.cut);
	strata_buf_puts(&b, "8");
	ck_assert(b.cut);
	ck_assert_str_eq(mem, "1234567");
}
END_TEST

/* reserve: room the caller fills itself. */
START_TEST(buf_reserve)
{
	struct strata_buf b = { 0 };

	ck_assert_int_eq(strata_buf_reserve(&b, 10), 0);
	ck_assert(b.cap >= 11);
	memcpy(b.p, "0123456789", 10);
	b.len = 10;
	ck_assert_int_eq(strata_buf_reserve(&b, SIZE_MAX - 4), -ENOMEM);
	ck_assert(b.oom);
	strata_buf_puts(&b, "more"); /* ignored once oom */
	ck_assert_uint_eq(b.len, 10);
	strata_buf_free(&b);
	ck_assert(!b.oom);
}
END_TEST

START_TEST(aligned)
{
	static const size_t aligns[] = { sizeof(void *), 16, 64, 4096 };

	for (size_t i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
		void *p = strata_aligned_alloc(aligns[i], 100);
		void *z = strata_aligned_alloc(aligns[i], 0);

		ck_assert(p && ((uintptr_t)p & (aligns[i] - 1)) == 0);
		ck_assert(z && ((uintptr_t)z & (aligns[i] - 1)) == 0);
		memset(p, 1, 100);
		strata_aligned_free(p);
		strata_aligned_free(z);
	}
	ck_assert_ptr_null(strata_aligned_alloc(48, 10)); /* not a power of two */
	ck_assert_ptr_null(strata_aligned_alloc(2, 10));  /* below a pointer */
}
END_TEST

START_TEST(zalloc)
{
	unsigned char *p = strata_zalloc_aligned(1000, 3);
	unsigned char *e = strata_zalloc_aligned(0, 8);

	ck_assert(p && ((uintptr_t)p & (STRATA_ALIGN - 1)) == 0);
	for (int i = 0; i < 3000; i++)
		ck_assert_int_eq(p[i], 0);
	ck_assert(e && ((uintptr_t)e & (STRATA_ALIGN - 1)) == 0);
	for (int i = 0; i < STRATA_ALIGN; i++) /* at least STRATA_ALIGN bytes, zeroed */
		ck_assert_int_eq(e[i], 0);
	ck_assert_ptr_null(strata_zalloc_aligned(SIZE_MAX / 2, 3)); /* overflows */
	strata_aligned_free(p);
	strata_aligned_free(e);
}
END_TEST

START_TEST(clock_monotonic)
{
	uint64_t a = strata_now_ns(), b;
	struct timespec ts = { 0, 2000000 };

	nanosleep(&ts, NULL);
	b = strata_now_ns();
	ck_assert(b >= a + 2000000);
	ck_assert(b - a < 10000000000ull);
}
END_TEST

static char g_line[256];
static int g_level = -1, g_lines;

static void sink(void *user, int level, const char *line)
{
	(void)user;
	g_level = level;
	g_lines++;
	snprintf(g_line, sizeof(g_line), "%s", line);
}

/* Progress lines reach the sink, marked as such, and obey the level filter as INFO. */
START_TEST(log_progress)
{
	strata_log_set_sink(sink, NULL);
	strata_log_progress(0, "loading %s: %3.0f%%", "m.gguf", 42.0);
	ck_assert_int_eq(g_level, STRATA_LOG_LVL_PROGRESS);
	ck_assert_str_eq(g_line, "loading m.gguf:  42%");
	strata_log_set_level(STRATA_LOG_LVL_WARN);
	strata_log_progress(1, "loading %s: done", "m.gguf");
	ck_assert_int_eq(g_lines, 1);
	strata_log_set_level(STRATA_LOG_LVL_INFO);
	strata_log_progress(1, "loading %s: done", "m.gguf");
	ck_assert_int_eq(g_lines, 2);
	ck_assert_str_eq(g_line, "loading m.gguf: done");
	strata_log_set_sink(NULL, NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("util");

	tcase_add_test(tc, buf_grows);
	tcase_add_test(tc, buf_printf);
	tcase_add_test(tc, buf_fixed);
	tcase_add_test(tc, buf_reserve);
	tcase_add_test(tc, aligned);
	tcase_add_test(tc, zalloc);
	tcase_add_test(tc, clock_monotonic);
	tcase_add_test(tc, log_progress);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
