#include "log.h"

#include <stdio.h>
#include <stdatomic.h>
#include <unistd.h>

static atomic_int g_level = STRATA_LOG_LVL_INFO;

void strata_log_set_level(int level)
{
	atomic_store(&g_level, level);
}

int strata_log_get_level(void)
{
	return atomic_load(&g_level);
}

static strata_log_sink_fn g_sink;
static void *g_sink_user;

void strata_log_set_sink(strata_log_sink_fn fn, void *user)
{
	g_sink = fn;
	g_sink_user = user;
}

static _Thread_local char t_last_error[512];

const char *strata_log_last_error(void)
{
	return t_last_error;
}

void strata_log_clear_error(void)
{
	t_last_error[0] = '\0';
}

void strata_logv(int level, const char *fmt, va_list ap)
{
	static const char *const prefix[] = { "error: ", "warning: ", "", "debug: " };
	char line[4096];

	if (level < 0 || level > STRATA_LOG_LVL_DEBUG)
		level = STRATA_LOG_LVL_ERROR;
	if (level == STRATA_LOG_LVL_ERROR) {
		va_list aq;

		va_copy(aq, ap);
		vsnprintf(t_last_error, sizeof(t_last_error), fmt, aq);
		va_end(aq);
	}
	if (level > atomic_load(&g_level))
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	if (g_sink) {
		g_sink(g_sink_user, level, line);
		return;
	}
	/* One fputs per line so lines from several threads never interleave. */
	fprintf(stderr, "strata: %s%s\n", prefix[level], line);
}

void strata_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strata_logv(level, fmt, ap);
	va_end(ap);
}

void strata_log_progress(int last, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (STRATA_LOG_LVL_INFO > atomic_load(&g_level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (g_sink) {
		g_sink(g_sink_user, STRATA_LOG_LVL_PROGRESS, line);
		return;
	}
	if (isatty(2))
		fprintf(stderr, "\rstrata: %s%s", line, last ? "\n" : "");
}
