#define _GNU_SOURCE /* strcasestr, setenv */
/*
 * check_serve_access.c - who may call the server: without an API key only
 * loopback Host names (and [serve] allowed_hosts) and no foreign page's
 * Origin; CORS off until [serve] cors_origins, then preflights answered
 * before any key and the allowed origin echoed on every answer (errors too);
 * with a key the guard steps aside; a 503 says when to retry; the web app's
 * files are public and nothing outside its folder is.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpc.h"
#include "serve/serve.h"
#include "strata.h"
#include "serveutil.h"
#include "testutil.h"

static const char *g_model;
static struct test_server g_ts;

static void start_server(const char *const *extra, int n)
{
	test_server_start(&g_ts, g_model, extra, n);
}

static void stop_server(void)
{
	test_server_stop(&g_ts);
}

/* A request with our own Host and headers (each line ending \r\n); the answer in *r. */
static void raw(const char *method, const char *path, const char *host, const char *hdrs,
		const char *body, struct resp *r)
{
	struct strata_buf in = { 0 };
	char head[2048];
	int fd = connect_port(g_ts.port);

	snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s"
		 "Content-Length: %zu\r\n\r\n%s", method, path, host, hdrs ? hdrs : "",
		 body ? strlen(body) : 0, body ? body : "");
	ck_assert_int_eq(send_all(fd, head, strlen(head)), 0);
	read_to_eof(fd, &in);
	close(fd);
	ck_assert_int_eq(parse_resp(&in, r), 0);
	strata_buf_free(&in);
}

static int status(const char *method, const char *path, const char *host, const char *hdrs)
{
	struct resp r;
	int s;

	raw(method, path, host, hdrs, NULL, &r);
	s = r.status;
	resp_free(&r);
	return s;
}

#define CMPL "{\"prompt\":\"Once\",\"max_tokens\":2}"

START_TEST(no_key_guard)
{
	char self[64], origin[128];
	struct resp r;

	start_server(NULL, 0);
	snprintf(self, sizeof(self), "127.0.0.1:%d", g_ts.port);
	ck_assert_int_eq(status("GET", "/health", self, NULL), 200);
	ck_assert_int_eq(status("GET", "/health", "localhost", NULL), 200);
	ck_assert_int_eq(status("GET", "/health", "[::1]:8080", NULL), 200);
	/* a rebinding DNS name: refused */
	raw("GET", "/health", "attacker.example:8080", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 403);
	ck_assert_ptr_nonnull(strstr(r.body.p, "allowed_hosts"));
	resp_free(&r);
	/* a foreign page: refused; the server's own page: fine, and no CORS headers */
	ck_assert_int_eq(status("POST", "/v1/completions", self, "Origin: http://evil.example\r\n"),
			 403);
	snprintf(origin, sizeof(origin), "Origin: http://%s\r\n", self);
	raw("POST", "/v1/completions", self, origin, CMPL, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_null(strcasestr(r.head, "Access-Control-Allow-Origin"));
	resp_free(&r);
	ck_assert_int_eq(status("OPTIONS", "/v1/completions", self,
				"Origin: http://evil.example\r\n"), 403);
	stop_server();
	/* allowed_hosts adds names */
	{
		const char *extra[] = { "--allowed-hosts", "myhost, other.lan" };

		start_server(extra, 2);
		ck_assert_int_eq(status("GET", "/health", "myhost:8080", NULL), 200);
		ck_assert_int_eq(status("GET", "/health", "third.lan", NULL), 403);
		stop_server();
	}
}
END_TEST

START_TEST(cors)
{
	const char *extra[] = { "--cors-origins", "http://app.example" };
	struct resp r;

	start_server(extra, 2);
	raw("OPTIONS", "/v1/chat/completions", "127.0.0.1", "Origin: http://app.example\r\n"
	    "Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: "
	    "content-type, authorization\r\n", NULL, &r);
	ck_assert_int_eq(r.status, 204);
	ck_assert_ptr_nonnull(strcasestr(r.head, "Access-Control-Allow-Origin: http://app.example"));
	ck_assert_ptr_nonnull(strcasestr(r.head, "Access-Control-Allow-Headers: content-type, "
					 "authorization"));
	ck_assert_ptr_nonnull(strcasestr(r.head, "Access-Control-Allow-Methods: GET, POST"));
	resp_free(&r);
	raw("POST", "/v1/completions", "127.0.0.1", "Origin: http://app.example\r\n", CMPL, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strcasestr(r.head, "Access-Control-Allow-Origin: http://app.example"));
	ck_assert_ptr_nonnull(strcasestr(r.head, "Vary: Origin"));
	resp_free(&r);
	ck_assert_int_eq(status("POST", "/v1/completions", "127.0.0.1",
				"Origin: http://other.example\r\n"), 403);
	stop_server();
}
END_TEST

/* With a key: any Host, preflights without the key, errors readable by the page. */
START_TEST(with_key)
{
	const char *extra[] = { "--cors-origins", "*" };
	struct resp r;

	setenv("STRATA_API_KEY", "sk-access", 1);
	start_server(extra, 2);
	unsetenv("STRATA_API_KEY");
	ck_assert_int_eq(status("GET", "/v1/models", "api.example.com", "Authorization: Bearer "
				"sk-access\r\n"), 200);
	raw("OPTIONS", "/v1/messages", "api.example.com", "Origin: https://any.example\r\n", NULL,
	    &r);
	ck_assert_int_eq(r.status, 204);
	ck_assert_ptr_nonnull(strcasestr(r.head, "Access-Control-Allow-Origin: https://any.example"));
	resp_free(&r);
	raw("POST", "/v1/completions", "api.example.com", "Origin: https://any.example\r\n", CMPL,
	    &r);
	ck_assert_int_eq(r.status, 401);
	ck_assert_ptr_nonnull(strcasestr(r.head, "Access-Control-Allow-Origin: https://any.example"));
	resp_free(&r);
	stop_server();
}
END_TEST

/* Queue full: 503 with Retry-After. */
START_TEST(retry_after)
{
	const char *extra[] = { "--queue", "0" };
	struct strata_buf got = { 0 };
	struct resp r;
	int fd;

	start_server(extra, 2);
	/* a long stream holds the engine; wait until its first token is out */
	fd = connect_port(g_ts.port);
	send_req(fd, "POST", "/v1/completions", NULL, "{\"prompt\":\"Once\",\"max_tokens\":1500,"
		 "\"stream\":true}");
	while (!got.p || !strstr(got.p, "data: "))
		ck_assert(!read_some(fd, &got, 1000));
	raw("POST", "/v1/completions", "127.0.0.1", NULL, CMPL, &r);
	ck_assert_int_eq(r.status, 503);
	ck_assert_ptr_nonnull(strcasestr(r.head, "Retry-After: "));
	resp_free(&r);
	close(fd);
	strata_buf_free(&got);
	stop_server();
}
END_TEST

/* The web app: its pages and files without the key (the page sends the key
 * itself), under a CSP; only plain names in its folder; the API still asks. */
START_TEST(web_app)
{
	const char *extra[] = { "--web-dir", STRATA_SRC "/web" };
	struct resp r;

	setenv("STRATA_API_KEY", "sk-web", 1);
	start_server(extra, 2);
	unsetenv("STRATA_API_KEY");
	raw("GET", "/", "127.0.0.1", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strcasestr(r.head, "Content-Type: text/html; charset=utf-8"));
	ck_assert_ptr_nonnull(strcasestr(r.head, "Content-Security-Policy: default-src 'self'"));
	ck_assert_ptr_nonnull(strstr(r.body.p, "<title>strata - chat</title>"));
	resp_free(&r);
	raw("GET", "/static/app.js", "127.0.0.1", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strcasestr(r.head, "Content-Type: text/javascript"));
	resp_free(&r);
	ck_assert_int_eq(status("GET", "/monitor", "127.0.0.1", NULL), 200);
	ck_assert_int_eq(status("GET", "/static/style.css", "127.0.0.1", NULL), 200);
	ck_assert_int_eq(status("HEAD", "/", "127.0.0.1", NULL), 200);
	raw("GET", "/static/nothing.js", "127.0.0.1", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 404);
	ck_assert_ptr_nonnull(strstr(r.body.p, "web_dir"));
	resp_free(&r);
	ck_assert_int_eq(status("GET", "/static/..%2fstrata.ini", "127.0.0.1", NULL), 404);
	ck_assert_int_eq(status("GET", "/static/../../strata.ini", "127.0.0.1", NULL), 404);
	ck_assert_int_eq(status("GET", "/static/.hidden", "127.0.0.1", NULL), 404);
	ck_assert_int_eq(status("GET", "/static/", "127.0.0.1", NULL), 404);
	ck_assert_int_eq(status("POST", "/", "127.0.0.1", NULL), 405);
	ck_assert_int_eq(status("POST", "/v1/completions", "127.0.0.1", NULL), 401);
	stop_server();
}
END_TEST

int main(void)
{
	Suite *su = suite_create("serve_access");
	TCase *tc = tcase_create("access");

	if (!(g_model = test_server_model()))
		return STRATA_TEST_SKIP;
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, no_key_guard);
	tcase_add_test(tc, cors);
	tcase_add_test(tc, with_key);
	tcase_add_test(tc, retry_after);
	tcase_add_test(tc, web_app);
	suite_add_tcase(su, tc);
	return tu_srunner_run(srunner_create(su));
}
