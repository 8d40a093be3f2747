/*
 * access.c - the Host allow-list, the Origin check and CORS.
 *
 * Without an API key any web page the user opens could otherwise drive the
 * server (a fetch() to localhost), or a rebinding DNS name could point at
 * it: a Host that is not loopback (nor allowed) and an Origin that is
 * neither the server itself nor an allowed CORS origin are refused.
 */
#define _GNU_SOURCE /* strndup */
#include "serve/access.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

static char *lower_dup(const char *s, size_t n)
{
	char *d = strndup(s, n);

	for (char *p = d; p && *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return d;
}

/* Split a comma list into trimmed, lower-case, non-empty items. */
static int split(const char *list, char ***out, size_t *n)
{
	const char *p = list;

	*out = NULL;
	*n = 0;
	while (p && *p) {
		const char *e = strchr(p, ','), *s = p;
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char **grown;

		while (len && isspace((unsigned char)*s))
			s++, len--;
		while (len && isspace((unsigned char)s[len - 1]))
			len--;
		if (len) {
			if (!(grown = realloc(*out, (*n + 1) * sizeof(*grown))))
				return -ENOMEM;
			*out = grown;
			if (!((*out)[*n] = lower_dup(s, len)))
				return -ENOMEM;
			(*n)++;
		}
		p = e ? e + 1 : NULL;
	}
	return 0;
}

int strata_access_init(struct strata_access *a, const char *cors, const char *hosts,
		       int have_key)
{
	int rc;

	memset(a, 0, sizeof(*a));
	a->guard = !have_key;
	if ((rc = split(cors, &a->origins, &a->n_origins)) || (rc = split(hosts, &a->hosts,
									  &a->n_hosts)))
		return rc;
	for (size_t i = 0; i < a->n_origins; i++) {
		if (!strcmp(a->origins[i], "*")) {
			a->any_origin = 1;
			continue;
		}
		if (strncmp(a->origins[i], "http://", 7) && strncmp(a->origins[i], "https://", 8)) {
			strata_error("[serve] cors_origins: '%s' is not an origin (http://host[:port], "
				     "https://host[:port] or *)", a->origins[i]);
			return -EINVAL;
		}
	}
	return 0;
}

void strata_access_free(struct strata_access *a)
{
	for (size_t i = 0; i < a->n_origins; i++)
		free(a->origins[i]);
	for (size_t i = 0; i < a->n_hosts; i++)
		free(a->hosts[i]);
	free(a->origins);
	free(a->hosts);
	memset(a, 0, sizeof(*a));
}

/* The host part of "host", "host:port", "[v6]:port", lower case, into out. */
static void host_only(const char *h, char *out, size_t n)
{
	size_t len;

	if (*h == '[') {
		const char *e = strchr(h, ']');

		len = e ? (size_t)(e - h) + 1 : strlen(h);
	} else {
		const char *c = strchr(h, ':');

		len = c ? (size_t)(c - h) : strlen(h);
	}
	if (len >= n)
		len = n - 1;
	for (size_t i = 0; i < len; i++)
		out[i] = (char)tolower((unsigned char)h[i]);
	out[len] = 0;
}

static int loopback(const char *h)
{
	size_t n = strlen(h);

	return !strcmp(h, "localhost") || (n > 10 && !strcmp(h + n - 10, ".localhost")) ||
	       !strncmp(h, "127.", 4) || !strcmp(h, "[::1]") || !strcmp(h, "::1");
}

static int host_allowed(const struct strata_access *a, const char *host)
{
	char h[256];

	host_only(host, h, sizeof(h));
	if (loopback(h))
		return 1;
	for (size_t i = 0; i < a->n_hosts; i++)
		if (!strcmp(a->hosts[i], "*") || !strcmp(a->hosts[i], h))
			return 1;
	return 0;
}

static int cors_allowed(const struct strata_access *a, const char *origin)
{
	char o[512];

	if (a->any_origin)
		return 1;
	snprintf(o, sizeof(o), "%s", origin);
	for (char *p = o; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	for (size_t i = 0; i < a->n_origins; i++)
		if (!strcmp(a->origins[i], o))
			return 1;
	return 0;
}

/* Is origin this server itself: http://HOST where HOST is the request's Host header? */
static int same_origin(const char *origin, const char *host)
{
	const char *rest;

	if (!host)
		return 0;
	if (!strncasecmp(origin, "http://", 7))
		rest = origin + 7;
	else if (!strncasecmp(origin, "https://", 8))
		rest = origin + 8;
	else
		return 0;
	return !strcasecmp(rest, host);
}

int strata_access_check(const struct strata_access *a, const char *host, const char *origin,
			char *msg, size_t n)
{
	if (!a->guard)
		return 0;
	if (!host || !host_allowed(a, host)) {
		snprintf(msg, n, "the Host '%.100s' is not allowed: without [serve] api_key strata "
			 "answers loopback names only (add the name to [serve] allowed_hosts, or set "
			 "an API key)", host ? host : "");
		return -EACCES;
	}
	if (origin && !same_origin(origin, host) && !cors_allowed(a, origin)) {
		snprintf(msg, n, "requests from the page at '%.100s' are not allowed: list it in "
			 "[serve] cors_origins, or set an API key", origin);
		return -EACCES;
	}
	return 0;
}

const char *strata_access_cors(const struct strata_access *a, const char *origin)
{
	if (!origin || (!a->n_origins && !a->any_origin))
		return NULL;
	if (!cors_allowed(a, origin))
		return NULL;
	/* "*" answers any origin with itself, so credentials (Authorization) still work */
	return origin;
}
