/*
 * httpc.h - a small HTTP/1.1 client over plain sockets, and JSON lookups,
 * for the server tests (check_serve*.c, check_xstore.c; serveutil.h starts
 * the server).  No curl: the requests are written by hand, so malformed and
 * oversized ones can be sent too.
 */
#ifndef STRATA_TEST_HTTPC_H
#define STRATA_TEST_HTTPC_H

#include <arpa/inet.h>
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/strbuf.h"

#define DEADLINE_MS 120000 /* a hang detector, not a timing check */

struct resp {
	int status;
	char head[8192];     /* status line and headers */
	struct strata_buf body; /* de-chunked */
};

static inline double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline int connect_port(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_msg(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "connect: %s",
		      strerror(errno));
	return fd;
}

/* Write everything; MSG_NOSIGNAL so a server that closed early is an error, not SIGPIPE. */
static inline int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Send a request; body NULL for none.  hdrs: extra header lines, each ending "\r\n". */
static inline void send_req(int fd, const char *method, const char *path, const char *hdrs,
		     const char *body)
{
	char head[4096];

	if (body)
		snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close"
			 "\r\n%sContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
			 method, path, hdrs ? hdrs : "", strlen(body));
	else
		snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close"
			 "\r\n%s\r\n", method, path, hdrs ? hdrs : "");
	ck_assert_int_eq(send_all(fd, head, strlen(head)), 0);
	if (body)
		ck_assert_int_eq(send_all(fd, body, strlen(body)), 0);
}

/* Read what is there now (non-blocking); 1 at EOF, 0 otherwise. */
static inline int read_some(int fd, struct strata_buf *raw, int wait_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[16384];
	ssize_t r;

	if (poll(&p, 1, wait_ms) <= 0)
		return 0;
	r = read(fd, buf, sizeof(buf)); /* a socket or, for the command's stderr, a pipe */
	if (r <= 0)
		return 1; /* EOF, or a reset after the server's answer */
	strata_buf_add(raw, buf, (size_t)r);
	return 0;
}

static inline void read_to_eof(int fd, struct strata_buf *raw)
{
	double t0 = now_ms();

	while (!read_some(fd, raw, 1000))
		ck_assert_msg(now_ms() - t0 < DEADLINE_MS, "no end of response after %d ms",
			      DEADLINE_MS);
}

/* Parse a whole raw response; 0, or -1 when it is incomplete. */
static inline int parse_resp(const struct strata_buf *raw, struct resp *r)
{
	const char *end = raw->p ? strstr(raw->p, "\r\n\r\n") : NULL, *p;
	size_t hl;

	memset(r, 0, sizeof(*r));
	if (!end || sscanf(raw->p, "HTTP/1.1 %d", &r->status) != 1)
		return -1;
	hl = (size_t)(end - raw->p);
	snprintf(r->head, sizeof(r->head), "%.*s", (int)hl, raw->p);
	p = end + 4;
	if (!strcasestr(r->head, "Transfer-Encoding: chunked")) {
		strata_buf_add(&r->body, p, raw->len - (size_t)(p - raw->p));
		return 0;
	}
	for (;;) {
		char *next;
		unsigned long n = strtoul(p, &next, 16);

		if (next == p || !(next = strstr(next, "\r\n")))
			return -1;
		if (n == 0)
			return 0;
		p = next + 2;
		if ((size_t)(p - raw->p) + n > raw->len)
			return -1;
		strata_buf_add(&r->body, p, n);
		p += n + 2;
	}
}

/* One request on a fresh connection to 127.0.0.1:port, the whole answer parsed into *r. */
static inline void http_call(int port, const char *method, const char *path, const char *hdrs,
			     const char *body, struct resp *r)
{
	struct strata_buf raw = { 0 };
	int fd = connect_port(port);

	send_req(fd, method, path, hdrs, body);
	read_to_eof(fd, &raw);
	close(fd);
	ck_assert_msg(parse_resp(&raw, r) == 0, "malformed response:\n%s", raw.p ? raw.p : "");
	strata_buf_free(&raw);
}

static inline void resp_free(struct resp *r)
{
	strata_buf_free(&r->body);
}

static inline cJSON *json_of(const struct resp *r)
{
	cJSON *j = cJSON_ParseWithLength(r->body.p ? r->body.p : "", r->body.len);

	ck_assert_msg(j, "not JSON (status %d): %s", r->status, r->body.p ? r->body.p : "");
	return j;
}

/* The string at a path of object keys and array indexes ("choices", "0", "text"). */
static inline const cJSON *at(const cJSON *j, const char *const *path, int n)
{
	for (int i = 0; j && i < n; i++)
		j = cJSON_IsArray(j) ? cJSON_GetArrayItem(j, atoi(path[i]))
				     : cJSON_GetObjectItemCaseSensitive(j, path[i]);
	return j;
}

#define AT(j, ...) at((j), (const char *const[]){ __VA_ARGS__ }, \
		      sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(const char *))

static inline const char *str_at(const cJSON *j, const cJSON *node, const char *what)
{
	ck_assert_msg(cJSON_IsString(node), "no string %s in %s", what, cJSON_PrintUnformatted(j));
	return node->valuestring;
}

static inline int int_at(const cJSON *j, const cJSON *node, const char *what)
{
	ck_assert_msg(cJSON_IsNumber(node), "no number %s in %s", what, cJSON_PrintUnformatted(j));
	return node->valueint;
}

#endif
