/*
 * access.h - who may talk to the server from where: CORS (off unless
 * [serve] cors_origins lists origins, or "*"), and without an API key the
 * guard against DNS rebinding and cross-site requests: the Host must be a
 * loopback name (or one of [serve] allowed_hosts), and a browser's Origin
 * must be the server itself or an allowed CORS origin.  Not public.
 */
#ifndef STRATA_SERVE_ACCESS_H
#define STRATA_SERVE_ACCESS_H

#include <stddef.h>

struct strata_access {
	char **origins;          /* cors_origins, lower case */
	size_t n_origins;
	int any_origin;          /* cors_origins = * */
	char **hosts;            /* allowed_hosts, lower case, without ports */
	size_t n_hosts;
	int guard;               /* no API key: Host and Origin are checked */
};

/*
 * From the comma-separated cors_origins and allowed_hosts (either NULL);
 * have_key: an API key protects the server, so no guard.  Returns 0, or
 * -EINVAL (logged: an origin that is not scheme://host[:port]), -ENOMEM.
 */
int strata_access_init(struct strata_access *a, const char *cors_origins,
		       const char *allowed_hosts, int have_key);
void strata_access_free(struct strata_access *a);

/*
 * May a request with these Host and Origin headers (NULL: absent) come in?
 * 0, or -EACCES with the reason in msg (what the client is told, with 403).
 */
int strata_access_check(const struct strata_access *a, const char *host, const char *origin,
			char *msg, size_t n);

/* The Access-Control-Allow-Origin value for origin, or NULL (no CORS headers). */
const char *strata_access_cors(const struct strata_access *a, const char *origin);

#endif
