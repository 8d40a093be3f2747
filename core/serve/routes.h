/*
 * routes.h - the handlers behind each route, and the replies they share.
 */
#ifndef STRATA_SERVE_ROUTES_H
#define STRATA_SERVE_ROUTES_H

#include <microhttpd.h>
#include <stddef.h>

struct strata_server;

/*
 * A route's handler, called once the whole body is in (body is
 * NUL-terminated; empty for GET).  t_arrival is when the request's headers
 * came (ms, CLOCK_MONOTONIC).  Returns what MHD's access handler returns.
 */
typedef enum MHD_Result (*strata_route_fn)(struct strata_server *s, struct MHD_Connection *conn,
					   const char *body, size_t len, double t_arrival);

struct strata_route {
	const char *path;
	const char *method;
	strata_route_fn fn;
	int open; /* answered without the API key (liveness probes, as llama-server) */
};

enum MHD_Result strata_route_chat(struct strata_server *s, struct MHD_Connection *conn,
				  const char *body, size_t len, double t_arrival);
enum MHD_Result strata_route_completion(struct strata_server *s, struct MHD_Connection *conn,
					const char *body, size_t len, double t_arrival);
enum MHD_Result strata_route_apply_template(struct strata_server *s, struct MHD_Connection *conn,
					    const char *body, size_t len, double t_arrival);
enum MHD_Result strata_route_tokenize(struct strata_server *s, struct MHD_Connection *conn,
				      const char *body, size_t len, double t_arrival);
enum MHD_Result strata_route_detokenize(struct strata_server *s, struct MHD_Connection *conn,
					const char *body, size_t len, double t_arrival);
enum MHD_Result strata_route_props(struct strata_server *s, struct MHD_Connection *conn,
				   const char *body, size_t len, double t_arrival);
enum MHD_Result strata_route_messages(struct strata_server *s, struct MHD_Connection *conn,
				      const char *body, size_t len, double t_arrival);
enum MHD_Result strata_route_count_tokens(struct strata_server *s, struct MHD_Connection *conn,
					  const char *body, size_t len, double t_arrival);
enum MHD_Result strata_route_responses(struct strata_server *s, struct MHD_Connection *conn,
				       const char *body, size_t len, double t_arrival);
enum MHD_Result strata_route_models(struct strata_server *s, struct MHD_Connection *conn,
				    const char *body, size_t len, double t_arrival);
enum MHD_Result strata_route_health(struct strata_server *s, struct MHD_Connection *conn,
				    const char *body, size_t len, double t_arrival);
enum MHD_Result strata_route_metrics(struct strata_server *s, struct MHD_Connection *conn,
				     const char *body, size_t len, double t_arrival);

/*
 * Send an OpenAI-style error with HTTP status `status` (param: the field at
 * fault; for 405 the allowed method, sent as Allow).  Counted in /metrics.
 */
enum MHD_Result strata_reply_error(struct strata_server *s, struct MHD_Connection *conn,
				   unsigned status, const char *message, const char *param);

#endif
