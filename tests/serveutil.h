/*
 * serveutil.h - a strata server on an ephemeral loopback port for the server
 * suites (check_serve*.c): strata.ini, the model, the built plugins, one
 * thread, then the suite's own arguments.  Need "serve/serve.h", "strata.h"
 * and <check.h> before it.
 */
#ifndef STRATA_TEST_SERVEUTIL_H
#define STRATA_TEST_SERVEUTIL_H

#include <stdio.h>

#include "testutil.h"

struct test_server {
	struct strata_engine *eng;
	struct strata_server *srv;
	int port;
};

/* 0, or the engine's or the server's error (nothing left to stop then). */
static inline int test_server_try(struct test_server *t, const char *model,
				  const char *const *extra, int n)
{
	const char *argv[48] = { "strata", "-c", "strata.ini", "-m", model, "--plugin-dir",
				 STRATA_PLUGIN_DIR, "-t", "1", "--port", "0" };
	int argc = 11, rc;

	ck_assert_int_le(n, 48 - argc);
	for (int i = 0; i < n; i++)
		argv[argc++] = extra[i];
	t->srv = NULL;
	t->port = 0;
	if ((rc = strata_engine_create_args(argc, (char **)argv, &t->eng)))
		return rc;
	if ((rc = strata_serve_start(t->eng, &t->srv))) {
		strata_engine_free(t->eng);
		t->eng = NULL;
		return rc;
	}
	t->port = strata_serve_port(t->srv);
	return 0;
}

/* The same, failing the case when the server does not start. */
static inline void test_server_start(struct test_server *t, const char *model,
				     const char *const *extra, int n)
{
	ck_assert_int_eq(test_server_try(t, model, extra, n), 0);
	ck_assert_int_gt(t->port, 0);
}

static inline void test_server_stop(struct test_server *t)
{
	strata_serve_stop(t->srv);
	strata_engine_free(t->eng);
	t->srv = NULL;
	t->eng = NULL;
}

/* ../shared's stories260K, copied out of tu_shared's buffer; NULL after a SKIP line. */
static inline const char *test_server_model(void)
{
	static char path[4096];
	const char *p = tu_shared("models/stories260K.gguf");

	if (!p) {
		printf("SKIP: test data ../shared/models/stories260K.gguf is absent (the server "
		       "tests need it)\n");
		return NULL;
	}
	snprintf(path, sizeof(path), "%s", p);
	return path;
}

#endif
