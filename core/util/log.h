/*
 * log.h - the core's one logging path.
 *
 * Library code logs an error once, where it is handled, with the context a
 * user needs (file, offset, line), and returns a negative errno.  Messages go
 * to stderr as "strata: error: ..." so they never mix with generated text on
 * stdout.
 */
#ifndef STRATA_LOG_H
#define STRATA_LOG_H

#include <stdarg.h>

enum {
	STRATA_LOG_LVL_ERROR = 0,
	STRATA_LOG_LVL_WARN = 1,
	STRATA_LOG_LVL_INFO = 2,
	STRATA_LOG_LVL_DEBUG = 3,
	STRATA_LOG_LVL_PROGRESS = 4, /* what a sink is handed for strata_log_progress() lines */
};

/* Messages above this level are dropped (default: INFO). */
void strata_log_set_level(int level);
int strata_log_get_level(void);

/*
 * Test hook: hand every line that passes the level filter to fn (the text
 * after "strata: <level>: ") instead of writing it to stderr; fn = NULL
 * restores stderr.  Set it before other threads log.
 */
typedef void (*strata_log_sink_fn)(void *user, int level, const char *line);
void strata_log_set_sink(strata_log_sink_fn fn, void *user);

/*
 * The last error logged on the calling thread (whatever the level filter
 * and sink), "" when none since strata_log_clear_error(): what a server
 * tells the client whose request failed.  Valid until this thread logs again.
 */
const char *strata_log_last_error(void);
void strata_log_clear_error(void);

void strata_logv(int level, const char *fmt, va_list ap);
void strata_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * A progress line of a long task ("loading FILE: 42% (...)"), each one
 * replacing the one before; the caller limits how often it reports.  Passes
 * the level filter as INFO.  With a sink the sink gets it (level
 * STRATA_LOG_LVL_PROGRESS); otherwise it is drawn on stderr when that is a
 * terminal ("\r", and a newline after the line with last set) and dropped
 * when it is not.
 */
void strata_log_progress(int last, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define strata_error(...) strata_log(STRATA_LOG_LVL_ERROR, __VA_ARGS__)
#define strata_warn(...) strata_log(STRATA_LOG_LVL_WARN, __VA_ARGS__)
#define strata_info(...) strata_log(STRATA_LOG_LVL_INFO, __VA_ARGS__)
#define strata_debug(...) strata_log(STRATA_LOG_LVL_DEBUG, __VA_ARGS__)

#endif
