/*
 * serve.h - strata as an OpenAI-compatible HTTP server (`strata --serve`).
 *
 * Routes: POST /v1/chat/completions, POST /v1/completions (both with
 * "stream": true as Server-Sent Events), GET /v1/models, GET /health and
 * GET /metrics (Prometheus text).  The engine has one sequence, so one
 * request generates at a time; up to [serve] queue more wait their turn in
 * arrival order and any beyond get 503.  A client that goes away stops its
 * generation (or leaves the queue) within one forward pass.  Errors are
 * OpenAI-style JSON: {"error": {"message", "type", "param", "code"}}.
 *
 * Built on libmicrohttpd with a thread per connection: a connection's
 * thread parses and tokenizes its request, then waits for the one engine
 * thread to run it.
 */
#ifndef STRATA_SERVE_H
#define STRATA_SERVE_H

#include <stdint.h>

#include "strata.h"

struct strata_server;

/*
 * Listen on [serve] host:port of e's configuration and start answering.
 * The server uses e (which must outlive it) from its own thread from now on:
 * the caller must not generate with e until strata_serve_stop().  Returns 0
 * and *out, or a negative errno after logging (address not usable, port in
 * use, out of memory).
 */
int strata_serve_start(struct strata_engine *e, struct strata_server **out);

/* The bound TCP port (the one the system chose when [serve] port is 0). */
uint16_t strata_serve_port(const struct strata_server *s);

/*
 * Stop: cancel the running and waiting generations, close every connection,
 * join the threads and free the server.  NULL is a no-op.
 */
void strata_serve_stop(struct strata_server *s);

/* strata_serve(e): strata.h. */

#endif
