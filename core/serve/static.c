/*
 * static.c - the web app: GET / (the chat page), /monitor and /static/NAME,
 * files of [serve] web_dir (default: web/ beside the strata executable, where
 * the build puts them).  They are served without the API key (a browser
 * cannot send one for a page; the page asks for it and sends it itself),
 * under a Content-Security-Policy that lets them reach this server only.
 */
#define _GNU_SOURCE /* asprintf */
#include "serve/serve_int.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/dl.h"
#include "serve/dialect.h"
#include "serve/routes.h"
#include "util/log.h"

#define CSP "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; " \
	"frame-ancestors 'none'"

static const struct {
	const char *ext, *type;
} g_types[] = {
	{ ".html", "text/html; charset=utf-8" }, { ".js", "text/javascript; charset=utf-8" },
	{ ".css", "text/css; charset=utf-8" }, { ".svg", "image/svg+xml" },
	{ ".png", "image/png" }, { ".ico", "image/x-icon" }, { ".json", "application/json" },
};

#ifndef STRATA_BIN_TO_WEB
#define STRATA_BIN_TO_WEB "../share/strata/web"
#endif

char *strata_static_dir(const char *setting)
{
	char *exe, *slash, *dir = NULL;

	if (setting && *setting)
		return strdup(setting);
	exe = strata_dl_self_exe();
	slash = exe ? strrchr(exe, '/') : NULL;
	if (slash) {
		struct stat st;

		*slash = 0;
		/* Beside the binary in a build tree; where `cmake --install` put it otherwise. */
		if (asprintf(&dir, "%s/web", exe) < 0)
			dir = NULL;
		if (dir && stat(dir, &st)) {
			char *inst = NULL;

			if (asprintf(&inst, "%s/%s", exe, STRATA_BIN_TO_WEB) >= 0 && !stat(inst, &st)) {
				free(dir);
				dir = inst;
			} else {
				free(inst);
			}
		}
	}
	free(exe);
	return dir;
}

/* The file a URL names, or NULL: "/" and "/monitor" are pages, /static/ holds the rest. */
static const char *file_of(const char *url)
{
	const char *name;

	if (!strcmp(url, "/"))
		return "index.html";
	if (!strcmp(url, "/monitor"))
		return "monitor.html";
	if (strncmp(url, "/static/", 8))
		return NULL;
	name = url + 8;
	/* one plain name: no directories, no dot files, nothing to climb out with */
	if (!*name || *name == '.' || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					    "0123456789._-") != strlen(name))
		return "";
	return name;
}

void strata_static_check(const struct strata_server *s)
{
	char *page = NULL;

	if (s->web_dir && asprintf(&page, "%s/index.html", s->web_dir) >= 0 &&
	    access(page, R_OK) == 0) {
		free(page);
		return;
	}
	free(page);
	strata_warn("serve: no web app in %s (no index.html): / will answer 404; [serve] web_dir "
		    "names the folder (the build's web/)", s->web_dir ? s->web_dir : "(unknown)");
}

int strata_static_route(const char *url)
{
	return file_of(url) != NULL;
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && len < (16L << 20) &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1))) {
		*n = fread(buf, 1, (size_t)len, f);
		if (*n != (size_t)len) {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}

enum MHD_Result strata_static_reply(struct strata_server *s, struct MHD_Connection *conn,
				    const char *url, const char *method)
{
	const char *name = file_of(url), *type = "application/octet-stream";
	struct MHD_Response *r;
	enum MHD_Result rc;
	char *path = NULL, *body;
	size_t n = 0, nl;

	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return strata_reply_error(s, conn, 405, "the web app's files take GET", "GET");
	if (!*name || !s->web_dir || asprintf(&path, "%s/%s", s->web_dir, name) < 0)
		path = NULL;
	body = path ? slurp(path, &n) : NULL;
	free(path);
	if (!body) {
		char msg[512];

		snprintf(msg, sizeof(msg), "no file %.100s in the web app's folder (%s: [serve] "
			 "web_dir)", url, s->web_dir ? s->web_dir : "unknown");
		return strata_reply_error(s, conn, 404, msg, NULL);
	}
	nl = strlen(name);
	for (size_t i = 0; i < sizeof(g_types) / sizeof(g_types[0]); i++) {
		size_t el = strlen(g_types[i].ext);

		if (nl > el && !strcmp(name + nl - el, g_types[i].ext))
			type = g_types[i].type;
	}
	r = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, "Content-Security-Policy", CSP);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	strata_serve_headers(s, conn, r, 200);
	rc = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r);
	strata_metrics_status(&s->metrics, 200);
	return rc;
}
