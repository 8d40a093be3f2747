/*
 * loadtest.c - strata-loadtest: concurrent clients against a running
 * `strata --serve` on loopback for a bounded time, and what must hold under
 * that load.  tools/loadtest.sh starts the server and runs this.
 *
 * Each client sends, in a fixed rotation: streamed completions and chats
 * (most requests), whole answers, streams it drops mid-answer (a FIN right
 * after the headers, or a RST after the first token), and malformed bodies
 * (not JSON, truncated JSON, wrong types).  Checked:
 *   - every well-formed request got a complete, well-formed answer: 200 with
 *     valid events, the last with finish_reason and usage, then [DONE] (or
 *     a whole JSON answer), or 503 when the queue was full;
 *   - every malformed one got 400 with an OpenAI-style error;
 *   - the server's /metrics counts the same statuses: nothing was answered
 *     twice or lost;
 *   - the server's RSS (VmRSS of /proc/PID/status) at the end is within an
 *     allowance of the RSS after warm-up: a leak per request would grow it;
 *   - no request waited for its first token longer than (queue + 1) jobs of
 *     the longest service seen, plus slack for the scheduler.
 * It prints clients, requests, errors, 503s and p50/p99 latency; exit status
 * 0 when everything held, 1 when something did not, 2 for bad usage.
 *
 * The HTTP client is written by hand over a socket (as tests/httpc.h does),
 * so malformed requests and abrupt closes can be sent; cJSON checks events.
 */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/strbuf.h"

#define REQ_DEADLINE_MS 60000.0 /* one request: a hang detector, not a latency bound */
#define SHOWN_ERRORS 10
#define RSS_SLACK_KB (4 * 1024) /* allowed growth after warm-up, besides RSS_SLACK_PCT */
#define RSS_SLACK_PCT 10

struct opts {
	int port;
	long pid;
	int clients;
	double seconds;
	unsigned queue;
	int max_tokens;
	int rss_check; /* 0 under sanitizers: their allocators keep freed memory on purpose */
};

enum kind { K_STREAM, K_CHAT, K_WHOLE, K_DROP_HEAD, K_DROP_TOKEN, K_BAD, K_N };

/* ---- time, buffers ------------------------------------------------------------ */

static double now_ms(void)
{
	return (double)strata_now_ns() / 1e6;
}

static void sleep_ms(double ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1e3),
			       .tv_nsec = (long)((ms - (time_t)(ms / 1e3) * 1e3) * 1e6) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Append n bytes; exits on out of memory (a tool, not a library). */
static void buf_add(struct strata_buf *b, const void *p, size_t n)
{
	strata_buf_add(b, p, n);
	if (b->oom) {
		fprintf(stderr, "strata-loadtest: out of memory\n");
		exit(2);
	}
}

static void dbl_add(double **v, size_t *n, size_t *cap, double x)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 1024;
		*v = realloc(*v, *cap * sizeof(**v));
		if (!*v) {
			fprintf(stderr, "strata-loadtest: out of memory\n");
			exit(2);
		}
	}
	(*v)[(*n)++] = x;
}

/* ---- shared results -------------------------------------------------------------- */

struct stats {
	pthread_mutex_t mu;
	unsigned long sent[K_N];
	unsigned long ok, busy, refused, dropped, errors;
	unsigned long st200, st400, st503;
	double *lat, *ttft;
	size_t n_lat, c_lat, n_ttft, c_ttft;
	double max_service; /* ms from the first token to the end, the longest */
	double min_ttft;
	char shown[SHOWN_ERRORS][320];
	int n_shown;
};

static struct stats g_st = { .mu = PTHREAD_MUTEX_INITIALIZER, .min_ttft = 1e300 };

/* ---- one HTTP exchange --------------------------------------------------------------- */

enum { CS_SIZE, CS_DATA, CS_CRLF };

struct resp {
	struct strata_buf raw, body;
	int status, head_done, chunked, complete, cst;
	long content_length;
	size_t raw_pos, chunk_left, ev_pos;
	/* events of a stream */
	double t_sent, t_first, t_end;
	int done_seen, finish_seen;
	char bad[240]; /* first thing wrong, "" when none */
};

static void bad(struct resp *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void bad(struct resp *r, const char *fmt, ...)
{
	va_list ap;

	if (r->bad[0])
		return;
	va_start(ap, fmt);
	vsnprintf(r->bad, sizeof(r->bad), fmt, ap);
	va_end(ap);
}

static void parse_head(struct resp *r)
{
	char *end = memmem(r->raw.p, r->raw.len, "\r\n\r\n", 4), *cl;

	if (!end)
		return;
	*end = 0; /* the head as a string for the searches below; raw_pos skips it */
	if (sscanf(r->raw.p, "HTTP/1.%*d %d", &r->status) != 1)
		bad(r, "no status line");
	r->chunked = strcasestr(r->raw.p, "\r\nTransfer-Encoding: chunked") != NULL;
	cl = strcasestr(r->raw.p, "\r\nContent-Length:");
	r->content_length = cl ? strtol(cl + 17, NULL, 10) : -1;
	r->head_done = 1;
	r->raw_pos = (size_t)(end - r->raw.p) + 4;
}

/* Move what arrived of the body from raw to body, undoing the chunked coding. */
static void take_body(struct resp *r)
{
	while (!r->complete && r->raw_pos < r->raw.len) {
		char *p = r->raw.p + r->raw_pos, *eol, *end;
		size_t avail = r->raw.len - r->raw_pos, n;
		unsigned long size;

		if (!r->chunked) {
			buf_add(&r->body, p, avail);
			r->raw_pos += avail;
			break;
		}
		switch (r->cst) {
		case CS_SIZE:
			if (!(eol = memmem(p, avail, "\r\n", 2)))
				return;
			size = strtoul(p, &end, 16);
			if (end == p) {
				bad(r, "bad chunk size line");
				r->complete = 1;
				return;
			}
			r->raw_pos += (size_t)(eol - p) + 2;
			if (!size)
				r->complete = 1;
			r->chunk_left = size;
			r->cst = CS_DATA;
			break;
		case CS_DATA:
			n = avail < r->chunk_left ? avail : r->chunk_left;
			buf_add(&r->body, p, n);
			r->raw_pos += n;
			r->chunk_left -= n;
			if (!r->chunk_left)
				r->cst = CS_CRLF;
			break;
		default:
			if (avail < 2)
				return;
			if (memcmp(p, "\r\n", 2))
				bad(r, "chunk not followed by CRLF");
			r->raw_pos += 2;
			r->cst = CS_SIZE;
		}
	}
	if (!r->chunked && r->content_length >= 0 && r->body.len >= (size_t)r->content_length)
		r->complete = 1;
}

/* One "data: ..." event of a stream. */
static void on_event(struct resp *r, const char *s, size_t len, int chat, double t)
{
	const cJSON *c, *fr, *piece;
	cJSON *j;

	if (len < 6 || strncmp(s, "data: ", 6)) {
		bad(r, "an event without 'data: '");
		return;
	}
	s += 6;
	len -= 6;
	if (r->done_seen)
		bad(r, "an event after [DONE]");
	if (len == 6 && !strncmp(s, "[DONE]", 6)) {
		r->done_seen = 1;
		if (!r->finish_seen)
			bad(r, "[DONE] without an event carrying finish_reason");
		return;
	}
	if (!(j = cJSON_ParseWithLength(s, len))) {
		bad(r, "an event that is not JSON: %.60s", s);
		return;
	}
	if (cJSON_GetObjectItemCaseSensitive(j, "error"))
		bad(r, "an error event: %.120s", s);
	c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
	fr = cJSON_GetObjectItemCaseSensitive(c, "finish_reason");
	piece = chat ? cJSON_GetObjectItemCaseSensitive(
			       cJSON_GetObjectItemCaseSensitive(c, "delta"), "content")
		     : cJSON_GetObjectItemCaseSensitive(c, "text");
	if (!c || !fr)
		bad(r, "an event without choices[0].finish_reason: %.120s", s);
	if (cJSON_IsString(piece) && piece->valuestring[0] && !r->t_first)
		r->t_first = t;
	if (cJSON_IsString(fr)) {
		if (r->finish_seen)
			bad(r, "two events with a finish_reason");
		if (strcmp(fr->valuestring, "stop") && strcmp(fr->valuestring, "length"))
			bad(r, "finish_reason '%s'", fr->valuestring);
		if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "usage")))
			bad(r, "the last event has no usage");
		r->finish_seen = 1;
		if (!r->t_first)
			r->t_first = t; /* nothing visible was generated: the end is the first */
	}
	cJSON_Delete(j);
}

static void take_events(struct resp *r, int chat, double t)
{
	for (;;) {
		char *s = r->body.p ? r->body.p + r->ev_pos : NULL;
		char *end = s ? strstr(s, "\n\n") : NULL;

		if (!end)
			return;
		on_event(r, s, (size_t)(end - s), chat, t);
		r->ev_pos += (size_t)(end - s) + 2;
	}
}

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

static int send_all(int fd, const char *p, size_t n)
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

/* Close so that the server sees a reset, not an orderly end. */
static void close_rst(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

/*
 * Send method path with body (NULL: none) and read the answer into r until
 * the server closes, the deadline passes, or the drop point of `k` comes.
 */
static void exchange(int port, const char *method, const char *path, const char *body,
		     enum kind k, struct resp *r)
{
	char head[512], buf[16384];
	int fd, chat = k == K_CHAT || !strcmp(path, "/v1/chat/completions");

	memset(r, 0, sizeof(*r));
	if ((fd = connect_to(port)) < 0) {
		bad(r, "connect: %s", strerror(errno));
		return;
	}
	snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
		 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", method, path,
		 body ? strlen(body) : 0);
	r->t_sent = now_ms();
	if (send_all(fd, head, strlen(head)) || (body && send_all(fd, body, strlen(body)))) {
		bad(r, "send: %s", strerror(errno));
		close(fd);
		return;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double t = now_ms();
		ssize_t n;

		if (t - r->t_sent > REQ_DEADLINE_MS) {
			bad(r, "no complete answer after %.0f ms", REQ_DEADLINE_MS);
			break;
		}
		if (poll(&p, 1, 200) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break; /* the server closed: the answer is whatever came */
		buf_add(&r->raw, buf, (size_t)n);
		if (!r->head_done)
			parse_head(r);
		if (r->head_done)
			take_body(r);
		if (r->head_done && r->status == 200 && r->chunked)
			take_events(r, chat, now_ms());
		if (k == K_DROP_HEAD && r->head_done && r->status == 200) {
			close(fd); /* FIN before a token: the job may still wait in the queue */
			return;
		}
		if (k == K_DROP_TOKEN && r->t_first && !r->done_seen) {
			close_rst(fd);
			return;
		}
	}
	r->t_end = now_ms();
	close(fd);
}

/* ---- what each kind of request sends and expects ---------------------------------------- */

static const char *const g_malformed[] = {
	"{\"prompt\": \"Once upon", /* truncated */
	"{\"prompt\": 42}",
	"not json at all",
	"{\"prompt\": \"x\", \"max_tokens\": -5}",
	"{\"prompt\": \"x\", \"stream\": \"yes\"}",
	"[1, 2, 3]",
};

static enum kind kind_of(unsigned long i)
{
	static const enum kind rot[10] = { K_STREAM, K_CHAT, K_STREAM, K_DROP_HEAD, K_CHAT,
					   K_WHOLE, K_STREAM, K_BAD, K_CHAT, K_DROP_TOKEN };

	return rot[i % 10];
}

static void note_error(struct stats *st, const char *what, const struct resp *r)
{
	st->errors++;
	if (st->n_shown < SHOWN_ERRORS)
		snprintf(st->shown[st->n_shown++], sizeof(st->shown[0]), "%s: status %d: %s%s%.80s",
			 what, r->status, r->bad[0] ? r->bad : "unexpected answer",
			 r->body.p ? " | " : "", r->body.p ? r->body.p : "");
}

/* A whole JSON answer (200) or an error object (400, 503). */
static int json_ok(const struct resp *r, int chat, int want_error)
{
	cJSON *j = r->body.p ? cJSON_ParseWithLength(r->body.p, r->body.len) : NULL;
	const cJSON *c, *e;
	int ok = 0;

	if (!j)
		return 0;
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
	if (want_error)
		ok = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message"));
	else
		ok = c && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "finish_reason")) &&
		     cJSON_IsString(chat ? cJSON_GetObjectItemCaseSensitive(
					       cJSON_GetObjectItemCaseSensitive(c, "message"),
					       "content")
					 : cJSON_GetObjectItemCaseSensitive(c, "text"));
	cJSON_Delete(j);
	return ok;
}

/* Judge one answer; returns 1 when it was a 503 (the caller backs off). */
static int judge(enum kind k, int chat, const struct resp *r)
{
	struct stats *st = &g_st;
	int complete_200 = r->status == 200 && !r->bad[0], busy = 0;

	pthread_mutex_lock(&st->mu);
	st->sent[k]++;
	st->st200 += r->status == 200;
	st->st400 += r->status == 400;
	st->st503 += r->status == 503;
	if (k == K_BAD) {
		if (r->status == 400 && json_ok(r, chat, 1))
			st->refused++;
		else
			note_error(st, "malformed body", r);
	} else if (r->status == 503 && !r->bad[0] && json_ok(r, chat, 1)) {
		st->busy++;
		busy = 1;
	} else if (k == K_DROP_HEAD || k == K_DROP_TOKEN) {
		if (complete_200)
			st->dropped++;
		else
			note_error(st, "dropped stream", r);
	} else if (k == K_WHOLE) {
		if (complete_200 && r->complete && json_ok(r, chat, 0)) {
			st->ok++;
			dbl_add(&st->lat, &st->n_lat, &st->c_lat, r->t_end - r->t_sent);
		} else {
			note_error(st, "whole answer", r);
		}
	} else if (complete_200 && r->complete && r->done_seen) {
		double ttft = r->t_first - r->t_sent, service = r->t_end - r->t_first;

		st->ok++;
		dbl_add(&st->lat, &st->n_lat, &st->c_lat, r->t_end - r->t_sent);
		dbl_add(&st->ttft, &st->n_ttft, &st->c_ttft, ttft);
		if (service > st->max_service)
			st->max_service = service;
		if (ttft < st->min_ttft)
			st->min_ttft = ttft;
	} else {
		note_error(st, "stream", r);
	}
	pthread_mutex_unlock(&st->mu);
	return busy;
}

struct client {
	const struct opts *o;
	int id;
	double deadline;
	pthread_t th;
};

static void *client_main(void *arg)
{
	struct client *cl = arg;
	const struct opts *o = cl->o;
	unsigned long i = (unsigned long)cl->id * 3; /* clients start at different points */

	for (; now_ms() < cl->deadline; i++) {
		enum kind k = kind_of(i);
		int chat = k == K_CHAT || (k != K_BAD && i % 4 == 1);
		int n = 4 + (int)(i * 7 % (unsigned long)o->max_tokens);
		char body[512];
		struct resp r;

		if (k == K_BAD)
			snprintf(body, sizeof(body), "%s",
				 g_malformed[i / 10 % (sizeof(g_malformed) / sizeof(g_malformed[0]))]);
		else if (chat)
			snprintf(body, sizeof(body), "{\"messages\":[{\"role\":\"user\",\"content\":"
				 "\"Tell me a story about a cat.\"}],\"max_tokens\":%d,\"seed\":%lu,"
				 "\"stream\":%s}", k == K_WHOLE ? n : o->max_tokens, i,
				 k == K_WHOLE ? "false" : "true");
		else
			snprintf(body, sizeof(body), "{\"prompt\":\"Once upon a time\",\"max_tokens\""
				 ":%d,\"seed\":%lu,\"stream\":%s}",
				 k == K_DROP_HEAD || k == K_DROP_TOKEN ? o->max_tokens : n, i,
				 k == K_WHOLE ? "false" : "true");
		exchange(o->port, "POST", chat ? "/v1/chat/completions" : "/v1/completions", body,
			 k, &r);
		if (judge(k, chat, &r))
			sleep_ms(5 + (double)(i % 10)); /* a client told "busy" waits a little */
		free(r.raw.p);
		free(r.body.p);
	}
	return NULL;
}

/* ---- the server's side ----------------------------------------------------------------- */

/* VmRSS of pid in kB, or -1. */
static long rss_kb(long pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

struct sampler {
	long pid;
	double t0, warm_at, stop_at;
	long warm, max, last;
	pthread_t th;
};

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;

	while (now_ms() < s->stop_at) {
		long kb = rss_kb(s->pid);

		if (kb > s->max)
			s->max = kb;
		if (kb > 0)
			s->last = kb;
		if (s->warm < 0 && now_ms() >= s->warm_at)
			s->warm = kb;
		sleep_ms(200);
	}
	return NULL;
}

/* A GET on the server; the body (malloc'd) or NULL. */
static char *get(int port, const char *path, int *status)
{
	struct resp r;

	exchange(port, "GET", path, NULL, K_WHOLE, &r);
	*status = r.status;
	free(r.raw.p);
	if (r.bad[0] || !r.complete) {
		free(r.body.p);
		return NULL;
	}
	return r.body.p;
}

static unsigned long metric(const char *text, const char *name)
{
	const char *p = text ? strstr(text, name) : NULL;

	return p ? strtoul(p + strlen(name), NULL, 10) : 0;
}

/* Wait until the server is idle; returns the 200s it answered meanwhile, -1 on failure. */
static long wait_idle(int port)
{
	double t0 = now_ms();
	long polls = 0;

	while (now_ms() - t0 < 20000) {
		int status;
		char *h = get(port, "/health", &status);
		int idle = h && strstr(h, "\"busy\":false") && strstr(h, "\"queued\":0");

		polls += status == 200;
		free(h);
		if (status != 200)
			return -1;
		if (idle)
			return polls;
		sleep_ms(50);
	}
	return -1;
}

/* ---- main -------------------------------------------------------------------------------- */

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double quantile(double *v, size_t n, double q)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_dbl);
	return v[(size_t)(q * (double)(n - 1) + 0.5)];
}

static int usage(void)
{
	fprintf(stderr, "usage: strata-loadtest --port N --pid PID [--clients N] [--seconds S] "
		"[--queue Q] [--max-tokens M] [--no-rss-check]\n"
		"  Q must be the server's [serve] queue: it bounds how long a request may wait.\n");
	return 2;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){ .port = 0, .pid = 0, .clients = 8, .seconds = 15, .queue = 16,
			    .max_tokens = 48, .rss_check = 1 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end = NULL;
		double d;

		if (!strcmp(a, "--no-rss-check")) {
			o->rss_check = 0;
			continue;
		}
		if (!v)
			return -1;
		d = strtod(v, &end);
		if (end == v || *end || d < 0)
			return -1;
		if (!strcmp(a, "--port"))
			o->port = (int)d;
		else if (!strcmp(a, "--pid"))
			o->pid = (long)d;
		else if (!strcmp(a, "--clients"))
			o->clients = (int)d;
		else if (!strcmp(a, "--seconds"))
			o->seconds = d;
		else if (!strcmp(a, "--queue"))
			o->queue = (unsigned)d;
		else if (!strcmp(a, "--max-tokens"))
			o->max_tokens = (int)d;
		else
			return -1;
		i++;
	}
	return o->port > 0 && o->port < 65536 && o->pid > 0 && o->clients > 0 &&
			       o->clients <= 1024 && o->seconds > 0 && o->max_tokens > 0 ? 0 : -1;
}

/* The checks after the load; prints each and returns the number that failed. */
static int report(const struct opts *o, const struct sampler *s, const char *metrics,
		  long health_200)
{
	struct stats *st = &g_st;
	unsigned long total = 0, m200 = metric(metrics, "strata_requests_total{status=\"200\"} ");
	unsigned long m400 = metric(metrics, "strata_requests_total{status=\"400\"} ");
	unsigned long m503 = metric(metrics, "strata_requests_total{status=\"503\"} ");
	double p50 = quantile(st->lat, st->n_lat, 0.50), p99 = quantile(st->lat, st->n_lat, 0.99);
	double t50 = quantile(st->ttft, st->n_ttft, 0.50), t99 = quantile(st->ttft, st->n_ttft, 0.99);
	double tmax = st->n_ttft ? st->ttft[st->n_ttft - 1] : 0; /* sorted by quantile() */
	double job = st->max_service + (st->n_ttft ? st->min_ttft : 0);
	double bound = 1.5 * (o->queue + 1) * job + 1000;
	long allow = s->warm * RSS_SLACK_PCT / 100 + RSS_SLACK_KB;
	int failed = 0;

	for (int k = 0; k < K_N; k++)
		total += st->sent[k];
	printf("loadtest: %d clients, %.0f s, queue %u: %lu requests (%lu streamed, %lu whole, "
	       "%lu dropped mid-stream, %lu malformed)\n", o->clients, o->seconds, o->queue, total,
	       st->sent[K_STREAM] + st->sent[K_CHAT], st->sent[K_WHOLE],
	       st->sent[K_DROP_HEAD] + st->sent[K_DROP_TOKEN], st->sent[K_BAD]);
	printf("loadtest: %lu complete answers (200), %lu busy (503), %lu malformed refused (400), "
	       "%lu dropped by the client, %lu errors\n", st->ok, st->busy, st->refused,
	       st->dropped, st->errors);
	for (int i = 0; i < st->n_shown; i++)
		printf("loadtest: error: %s\n", st->shown[i]);
	failed += st->errors > 0;
	printf("loadtest: latency p50 %.1f ms, p99 %.1f ms; first token p50 %.1f ms, p99 %.1f ms, "
	       "max %.1f ms (bound %.0f ms: queue %u + 1 jobs of at most %.1f ms, +50%% +1 s)\n",
	       p50, p99, t50, t99, tmax, bound, o->queue, job);
	if (tmax > bound) {
		printf("loadtest: FAIL: a request waited %.1f ms for its first token, over %.0f ms\n",
		       tmax, bound);
		failed++;
	}
	printf("loadtest: server RSS after warm-up %.1f MB, at the end %.1f MB, max %.1f MB "
	       "(allowed growth %.1f MB)\n", s->warm / 1024.0, s->last / 1024.0, s->max / 1024.0,
	       allow / 1024.0);
	if (!o->rss_check) {
		printf("loadtest: RSS growth not checked (--no-rss-check)\n");
	} else if (s->warm <= 0 || s->last <= 0 || s->last > s->warm + allow) {
		printf("loadtest: FAIL: the server's RSS grew from %ld kB to %ld kB\n", s->warm,
		       s->last);
		failed++;
	}
	printf("loadtest: the server counted 200: %lu, 400: %lu, 503: %lu; the clients saw "
	       "%lu, %lu, %lu (+%ld health checks)\n", m200, m400, m503, st->st200, st->st400,
	       st->st503, health_200);
	if (!metrics || m200 != st->st200 + (unsigned long)health_200 || m400 != st->st400 ||
	    m503 != st->st503) {
		printf("loadtest: FAIL: the server's status counts differ from the answers seen\n");
		failed++;
	}
	if (!st->ok) {
		printf("loadtest: FAIL: no request was answered completely\n");
		failed++;
	}
	return failed;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct client *cl;
	struct sampler s = { .warm = -1 };
	double t0;
	long health;
	char *metrics;
	int status, failed;

	if (parse_args(argc, argv, &o))
		return usage();
	if (rss_kb(o.pid) < 0) {
		fprintf(stderr, "strata-loadtest: no process %ld to watch\n", o.pid);
		return 2;
	}
	cl = calloc((size_t)o.clients, sizeof(*cl));
	if (!cl)
		return 2;
	t0 = now_ms();
	s.pid = o.pid;
	s.t0 = t0;
	s.warm_at = t0 + 1e3 * (o.seconds / 4 > 2 ? o.seconds / 4 : 2);
	s.stop_at = t0 + 1e3 * o.seconds;
	if (pthread_create(&s.th, NULL, sampler_main, &s))
		return 2;
	for (int i = 0; i < o.clients; i++) {
		cl[i] = (struct client){ .o = &o, .id = i, .deadline = t0 + 1e3 * o.seconds };
		if (pthread_create(&cl[i].th, NULL, client_main, &cl[i]))
			return 2;
	}
	for (int i = 0; i < o.clients; i++)
		pthread_join(cl[i].th, NULL);
	pthread_join(s.th, NULL);
	health = wait_idle(o.port);
	if (health < 0) {
		printf("loadtest: FAIL: the server did not come back to idle (/health)\n");
		return 1;
	}
	s.last = rss_kb(o.pid) > 0 ? rss_kb(o.pid) : s.last; /* idle, after the load */
	metrics = get(o.port, "/metrics", &status);
	failed = report(&o, &s, status == 200 ? metrics : NULL, health);
	printf("loadtest: %s\n", failed ? "FAIL" : "PASS");
	free(metrics);
	free(cl);
	return failed ? 1 : 0;
}
