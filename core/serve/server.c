/*
 * server.c - libmicrohttpd setup, routing, authentication, request bodies,
 * and the --serve main loop.  The routes' handlers are in routes.c.
 */
#define _GNU_SOURCE /* strndup */
#include "serve/serve_int.h"
#include "serve/routes.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "strata.h"
#include "serve/grammar.h"
#include "util/log.h"

/* One request, from its first call into on_request to the completed notice. */
struct conn_ctx {
	const struct strata_route *route;
	struct strata_buf body;
	int too_big;               /* the body passed max_body: it is read and dropped */
	double t_arrival;
};

static const struct strata_route g_routes[] = {
	{ "/v1/chat/completions", "POST", strata_route_chat, 0 },
	{ "/v1/completions", "POST", strata_route_completion, 0 },
	{ "/v1/messages", "POST", strata_route_messages, 0 },
	{ "/v1/responses", "POST", strata_route_responses, 0 },
	{ "/v1/messages/count_tokens", "POST", strata_route_count_tokens, 0 },
	{ "/apply-template", "POST", strata_route_apply_template, 0 },
	{ "/tokenize", "POST", strata_route_tokenize, 0 },
	{ "/detokenize", "POST", strata_route_detokenize, 0 },
	{ "/props", "GET", strata_route_props, 0 },
	{ "/v1/models", "GET", strata_route_models, 1 },
	{ "/health", "GET", strata_route_health, 1 },
	{ "/v1/health", "GET", strata_route_health, 1 },
	{ "/metrics", "GET", strata_route_metrics, 0 },
};

/* Compare without an early exit, so the time taken says nothing about the key. */
static int same_secret(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la; i++)
		d |= (unsigned char)a[i] ^ (unsigned char)b[i % (lb ? lb : 1)];
	return d == 0;
}

static int authorized(const struct strata_server *s, struct MHD_Connection *conn)
{
	const char *h;

	if (!s->api_key)
		return 1;
	/* Anthropic's clients send the key as x-api-key. */
	h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "x-api-key");
	if (h && same_secret(h, s->api_key))
		return 1;
	h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return 0;
	h += 7;
	while (*h == ' ')
		h++;
	return same_secret(h, s->api_key);
}

/* The route for url, or NULL; *path_known is set when the path exists with another method. */
static const struct strata_route *find_route(const char *url, const char *method,
					     const struct strata_route **path_known)
{
	*path_known = NULL;
	for (size_t i = 0; i < sizeof(g_routes) / sizeof(g_routes[0]); i++) {
		if (strcmp(g_routes[i].path, url) != 0)
			continue;
		if (strcmp(g_routes[i].method, method) == 0)
			return &g_routes[i];
		*path_known = &g_routes[i];
	}
	return NULL;
}

void strata_serve_headers(struct strata_server *s, struct MHD_Connection *conn,
			  struct MHD_Response *r, unsigned status)
{
	const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
	const char *allow = strata_access_cors(&s->access, origin);

	if (allow) {
		MHD_add_response_header(r, "Access-Control-Allow-Origin", allow);
		MHD_add_response_header(r, "Vary", "Origin");
	}
	if (status == 503) {
		char secs[16];
		unsigned waiting;

		pthread_mutex_lock(&s->lock);
		waiting = s->n_waiting;
		pthread_mutex_unlock(&s->lock);
		/* a turn each for those ahead: a guess, but one a client can back off by */
		snprintf(secs, sizeof(secs), "%u", waiting < 1 ? 1 : waiting > 60 ? 60 : waiting);
		MHD_add_response_header(r, "Retry-After", secs);
	}
}

/* A CORS preflight (OPTIONS): answered before any key, which browsers never send with it. */
static enum MHD_Result preflight(struct strata_server *s, struct MHD_Connection *conn)
{
	const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
	const char *want = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						       "Access-Control-Request-Headers");
	struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"",
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result rc;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, POST, OPTIONS");
	if (strata_access_cors(&s->access, origin)) {
		MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
		MHD_add_response_header(r, "Access-Control-Allow-Headers",
					want ? want : "authorization, content-type, x-api-key, "
						      "anthropic-version");
		MHD_add_response_header(r, "Access-Control-Max-Age", "600");
	}
	strata_serve_headers(s, conn, r, 204);
	rc = MHD_queue_response(conn, 204, r);
	MHD_destroy_response(r);
	strata_metrics_status(&s->metrics, 204);
	return rc;
}

/* What the first call of a request decides from its headers alone; MHD_YES to read on. */
static enum MHD_Result first_call(struct strata_server *s, struct MHD_Connection *conn,
				  const char *url, const char *method, struct conn_ctx *c)
{
	const struct strata_route *other;
	const char *cl;
	char msg[320];

	if (strata_access_check(&s->access,
				MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST),
				MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin"), msg,
				sizeof(msg)))
		return strata_reply_error(s, conn, 403, msg, NULL);
	if (!strcmp(method, "OPTIONS"))
		return preflight(s, conn);
	if (strata_static_route(url)) /* the pages themselves need no key: they ask for it */
		return strata_static_reply(s, conn, url, method);
	c->route = find_route(url, method, &other);
	if (!(c->route && c->route->open) && !authorized(s, conn))
		return strata_reply_error(s, conn, 401, "invalid or missing API key: send "
					  "'Authorization: Bearer KEY'", NULL);
	if (!c->route && other) {
		snprintf(msg, sizeof(msg), "%s takes %s, not %s", url, other->method, method);
		return strata_reply_error(s, conn, 405, msg, other->method);
	}
	if (!c->route) {
		snprintf(msg, sizeof(msg), "no route %s %.200s", method, url);
		return strata_reply_error(s, conn, 404, msg, NULL);
	}
	/* A declared length over the limit is refused before a byte of it is read. */
	cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > s->max_body) {
		snprintf(msg, sizeof(msg), "the request body of %s bytes is over the limit of %zu "
			 "([serve] max_body)", cl, s->max_body);
		return strata_reply_error(s, conn, 413, msg, NULL);
	}
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload, size_t *upload_size, void **con_cls)
{
	struct strata_server *s = cls;
	struct conn_ctx *c = *con_cls;
	char msg[160];

	(void)version;
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return MHD_NO;
		c->t_arrival = strata_serve_now_ms();
		*con_cls = c;
		return first_call(s, conn, url, method, c);
	}
	if (*upload_size) {
		/* Past the limit (a chunked body) the rest is read and dropped, never kept. */
		if (!c->too_big && c->body.len + *upload_size > s->max_body) {
			c->too_big = 1;
			strata_buf_free(&c->body);
		}
		if (!c->too_big)
			strata_buf_add(&c->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (c->too_big) {
		snprintf(msg, sizeof(msg), "the request body is over the limit of %zu bytes "
			 "([serve] max_body)", s->max_body);
		return strata_reply_error(s, conn, 413, msg, NULL);
	}
	if (c->body.oom)
		return strata_reply_error(s, conn, 500, "out of memory for the request body", NULL);
	return c->route->fn(s, conn, c->body.p ? c->body.p : "", c->body.len, c->t_arrival);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct conn_ctx *c = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (!c)
		return;
	strata_buf_free(&c->body);
	free(c);
	*con_cls = NULL;
}

/* libmicrohttpd's own messages (a client reset, a malformed request): debug level. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = 0;
	strata_debug("serve: http: %s", line);
}

/* A listening socket on host:port; the fd, or a negative errno after logging. */
static int listen_on(const char *host, uint32_t port, uint16_t *bound)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ps[16];
	int fd = -1, rc, err = 0, one = 1;

	snprintf(ps, sizeof(ps), "%u", port);
	rc = getaddrinfo(host, ps, &hints, &res);
	if (rc) {
		strata_error("serve: cannot use host '%s': %s", host, gai_strerror(rc));
		return -EINVAL;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 256) == 0)
			break;
		err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		strata_error("serve: cannot listen on %s:%u: %s", host, port, strerror(err));
		return -err;
	}
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	*bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						 : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/*
 * [serve] key as the engine was made with it, NULL when unset: the server
 * reads its settings through the application API (strata.h), like any
 * program embedding strata would.
 */
static const char *setting(const struct strata_engine *e, const char *key)
{
	const char *v = strata_engine_setting(e, "serve", key);

	return v && *v ? v : NULL;
}

/* A count setting (the configuration has checked its range already). */
static uint32_t setting_u32(const struct strata_engine *e, const char *key)
{
	const char *v = setting(e, key);

	return v ? (uint32_t)strtoul(v, NULL, 10) : 0;
}

/* [serve] api_key, with STRATA_API_KEY above the INI file but below STRATA_SERVE_API_KEY. */
static const char *api_key(const struct strata_engine *e)
{
	const char *env = getenv("STRATA_SERVE_API_KEY"), *alias = getenv("STRATA_API_KEY");

	if ((!env || !*env) && alias && *alias)
		return alias;
	return setting(e, "api_key");
}

/* The chat template of [serve] chat_template(_file) or the model, with its BOS/EOS text. */
static int open_chat(struct strata_engine *e, struct strata_chat **out)
{
	int32_t bos = strata_engine_token_bos(e), eos = strata_engine_token_eos(e), *ids = NULL;
	struct strata_chat_opts o = {
		.setting = setting(e, "chat_template"), .file = setting(e, "chat_template_file"),
		.model = strata_engine_chat_template(e),
		/* qwen4exp speaks Qwen's ChatML with a thinking block, template or not */
		.fallback = !strcmp(strata_engine_arch(e), "qwen4exp") ? "qwen" : NULL,
		.bos = bos >= 0 && strata_engine_token_text(e, bos) ? strata_engine_token_text(e, bos)
								    : "",
		.eos = eos >= 0 && strata_engine_token_text(e, eos) ? strata_engine_token_text(e, eos)
								    : "",
	};
	/* Does the tokenizer add BOS by itself?  Then a template's own is dropped. */
	int n = strata_engine_tokenize(e, "", 0, STRATA_TOKENIZE_ADD_BOS, &ids);

	o.tokenizer_adds_bos = n > 0 && ids[0] == bos;
	free(ids);
	return strata_chat_create(&o, out);
}

/*
 * The control tokens among the template's markers ("<|python_tag|>",
 * "[TOOL_CALLS]"): their pieces are empty when printed, so the parser is
 * handed their text instead.
 */
static void find_markers(struct strata_server *s)
{
	const char *const *m = strata_toolfmt_markers(s->toolfmt);

	for (; *m && s->n_markers < STRATA_MAX_MARKERS; m++) {
		int32_t *ids = NULL;
		int n = strata_engine_tokenize(s->e, *m, strlen(*m), STRATA_TOKENIZE_PARSE_SPECIAL,
					       &ids);
		char piece[8];

		if (n == 1 && strata_engine_detokenize(s->e, ids, 1, 0, piece, sizeof(piece)) == 0)
			s->markers[s->n_markers++] = (struct strata_marker){ ids[0], *m };
		free(ids);
	}
}

static int server_init(struct strata_engine *e, struct strata_server *s)
{
	const char *key = api_key(e);
	int rc;

	s->e = e;
	s->max_body = setting_u32(e, "max_body");
	s->queue_max = setting_u32(e, "queue");
	s->started = (long long)time(NULL);
	if ((rc = open_chat(e, &s->chat)))
		return rc;
	s->toolfmt = strata_toolfmt_of(strata_chat_source(s->chat));
	s->tool_sub = strata_grammar_subformat(strata_chat_source(s->chat));
	find_markers(s);
	atomic_init(&s->next_id, 1);
	atomic_init(&s->stopping, 0);
	if (key && !(s->api_key = strdup(key)))
		return -ENOMEM;
	if ((rc = strata_access_init(&s->access, setting(e, "cors_origins"),
				     setting(e, "allowed_hosts"), key != NULL)))
		return rc;
	s->web_dir = strata_static_dir(setting(e, "web_dir"));
	if ((rc = strata_metrics_init(&s->metrics)))
		return rc;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->vtrie_lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	return 0;
}

int strata_serve_start(struct strata_engine *e, struct strata_server **out)
{
	const char *host = setting(e, "host");
	struct strata_server *s = calloc(1, sizeof(*s));
	int fd, rc;

	*out = NULL;
	if (!s || (rc = server_init(e, s))) {
		if (!s || rc == -ENOMEM)
			strata_error("serve: out of memory");
		if (s) {
			free(s->api_key);
			strata_chat_free(s->chat);
			strata_access_free(&s->access);
			free(s->web_dir);
		}
		free(s);
		return s ? rc : -ENOMEM;
	}
	fd = listen_on(host ? host : "127.0.0.1", setting_u32(e, "port"), &s->port);
	if (fd < 0) {
		strata_serve_stop(s);
		return fd;
	}
	if ((rc = strata_worker_start(s))) {
		close(fd);
		strata_serve_stop(s);
		return rc;
	}
	/* A thread per connection: a handler may wait for the engine without stalling others. */
	s->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
				  MHD_USE_AUTO | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				  on_request, s,
				  MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
				  MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)512,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600,
				  MHD_OPTION_END);
	if (!s->mhd) {
		strata_error("serve: libmicrohttpd could not start on port %u", s->port);
		close(fd);
		strata_serve_stop(s);
		return -EIO;
	}
	*out = s;
	return 0;
}

uint16_t strata_serve_port(const struct strata_server *s)
{
	return s->port;
}

void strata_serve_stop(struct strata_server *s)
{
	if (!s)
		return;
	/* The engine thread first: waiting handlers then see the server stopping and leave. */
	strata_worker_stop(s);
	if (s->mhd)
		MHD_stop_daemon(s->mhd);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->vtrie_lock);
	strata_vtrie_free(s->vtrie);
	strata_metrics_destroy(&s->metrics);
	strata_chat_free(s->chat);
	strata_access_free(&s->access);
	free(s->web_dir);
	free(s->api_key);
	free(s);
}

static sem_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	sem_post(&g_stop); /* async-signal-safe, and any thread may take the signal */
}

/* Which backend holds what, and the device link's bytes: at start and at stop. */
static void log_backends(const struct strata_engine *e)
{
	char line[1024];

	strata_engine_backends(e, line, sizeof(line));
	strata_info("%s", line);
}

int strata_serve(struct strata_engine *e)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct strata_server *s;
	int rc;

	sem_init(&g_stop, 0, 0);
	signal(SIGPIPE, SIG_IGN); /* a client gone mid-write is an error return, not death */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if ((rc = strata_serve_start(e, &s)))
		return rc;
	strata_info("serving %s on http://%s:%u (chat template: %s, queue %u%s)",
		    strata_engine_model_name(e), setting(e, "host") ? setting(e, "host") : "127.0.0.1",
		    s->port, strata_chat_origin(s->chat), s->queue_max,
		    s->api_key ? ", API key required" : "");
	strata_static_check(s);
	log_backends(e);
	while (sem_wait(&g_stop) != 0 && errno == EINTR)
		;
	strata_info("serve: stopping");
	strata_serve_stop(s);
	log_backends(e);
	return 0;
}
