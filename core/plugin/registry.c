/*
 * registry.c - finding, loading and checking plugins (see registry.h).
 *
 * Refusals and their errno values, so callers and tests can tell them apart:
 *   -ENOENT   file missing / no strata-NAME.so on the search path
 *   -ENOEXEC  the system cannot load the file
 *   -ENOSYS   no strata_plugin_entry symbol
 *   -ENODATA  strata_plugin_entry returned NULL
 *   -EPROTO   ABI major differs from the core's, or it needs a newer minor
 *   -ENOTSUP  kind differs from the one asked for (or is unknown)
 *   -EBADMSG  a required descriptor field or method is NULL, or the name is bad
 *   -ENODEV   probe() says the plugin is unusable on this machine
 *   -EEXIST   another file already provides a plugin of that name
 *   -EINVAL   the plugin's INI section has a key it does not declare
 */
#include "plugin/registry.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/config.h"
#include "cpu/kernels.h"
#include "plugin/dl.h"
#include "strata/backend.h"
#include "util/log.h"
#include "util/mem.h"

#define NAME_MAX_LEN 64
#define REASON_CAP 1024

struct plugin_rec {
	struct strata_plugin pub;
	struct strata_registry *reg;
	void *dl;
	char *real; /* canonical path: the same file reached twice is one plugin */
};

struct strata_registry {
	const struct strata_config *cfg;
	int probing; /* inside a plugin's probe(): loading from there is refused */
	char **dirs; /* NULL-terminated search path */
	size_t n_dirs;
	struct plugin_rec **recs;
	size_t n_recs, cap_recs;
};

/* Why a load failed; `logged` when someone (the config check) already said so. */
struct refusal {
	char reason[REASON_CAP];
	int logged;
};

static int refuse(struct refusal *why, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int refuse(struct refusal *why, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why->reason, sizeof(why->reason), fmt, ap);
	va_end(ap);
	return err;
}

const char *strata_plugin_kind_name(uint32_t kind)
{
	switch (kind) {
	case STRATA_PLUGIN_IO:
		return "io";
	case STRATA_PLUGIN_GPU:
		return "gpu";
	case STRATA_PLUGIN_PATH:
		return "path";
	default:
		return "unknown";
	}
}

/* ---- host table -------------------------------------------------------- */

static void host_log(const struct strata_host *host, int level, const char *fmt, ...)
{
	const struct plugin_rec *rec = host->core;
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	strata_log(level, "%s: %s", rec->pub.desc->name, line);
}

static const char *host_config_get(const struct strata_host *host, const char *section,
				   const char *key)
{
	const struct plugin_rec *rec = host->core;

	if (!rec->reg->cfg || !key)
		return NULL;
	return strata_config_get(rec->reg->cfg, section ? section : rec->pub.desc->name, key);
}

/* Host version 2: a wrapper plugin loads the plugin it wraps through the registry. */
static int host_load_plugin(const struct strata_host *host, uint32_t kind, const char *name,
			    const struct strata_plugin_desc **desc,
			    const struct strata_host **plugin_host)
{
	const struct plugin_rec *rec = host ? host->core : NULL;
	struct strata_plugin *p;
	int rc;

	if (desc)
		*desc = NULL;
	if (plugin_host)
		*plugin_host = NULL;
	if (!rec || !desc || !plugin_host)
		return -EINVAL;
	if (rec->reg->probing) {
		strata_error("plugin %s: load_plugin('%s') called from probe()", rec->pub.path,
			     name ? name : "");
		return -EDEADLK;
	}
	if (name && !strcmp(name, rec->pub.desc->name)) {
		strata_error("plugin %s: '%s' cannot load itself", rec->pub.path, name);
		return -ELOOP;
	}
	rc = strata_registry_load(rec->reg, kind, name, &p);
	if (rc)
		return rc; /* logged with the file and the reason */
	*desc = p->desc;
	*plugin_host = &p->host;
	return 0;
}

/* Host version 3: the reference dequantisation a backend is tested against. */
static int host_dequantize(uint32_t type, const void *src, float *dst, int64_t n)
{
	uint32_t blk = strata_type_block(type);

	if (!strata_type_supported(type) || !blk || n < 0 || n % blk)
		return -EINVAL;
	strata_dequant(type, src, dst, n);
	return 0;
}

/* ---- search path ------------------------------------------------------- */

/* Portable strndup / "dir/name" (asprintf is not everywhere plugins must load). */
static char *dup_len(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (d) {
		memcpy(d, s, len);
		d[len] = 0;
	}
	return d;
}

static char *join_path(const char *dir, const char *name)
{
	size_t ld = strlen(dir), ln = strlen(name);
	char *d = malloc(ld + 1 + ln + 1);

	if (d) {
		memcpy(d, dir, ld);
		d[ld] = STRATA_DL_DIR_SEP;
		memcpy(d + ld + 1, name, ln + 1);
	}
	return d;
}

static int add_dir(struct strata_registry *reg, const char *dir, size_t len)
{
	char *d, *real;
	size_t i;

	while (len > 1 && (dir[len - 1] == '/' || dir[len - 1] == STRATA_DL_DIR_SEP))
		len--;
	if (!len)
		return 0;
	d = dup_len(dir, len);
	if (!d)
		return -ENOMEM;
	/* The same directory twice (./plugins and an absolute path) is searched once. */
	real = strata_dl_realpath(d);
	for (i = 0; i < reg->n_dirs; i++) {
		char *other = strata_dl_realpath(reg->dirs[i]);
		int same = !strcmp(reg->dirs[i], d) || (real && other && !strcmp(real, other));

		free(other);
		if (same) {
			free(real);
			free(d);
			return 0;
		}
	}
	free(real);
	{
		char **nd = realloc(reg->dirs, (reg->n_dirs + 2) * sizeof(*nd));

		if (!nd) {
			free(d);
			return -ENOMEM;
		}
		reg->dirs = nd;
	}
	reg->dirs[reg->n_dirs++] = d;
	reg->dirs[reg->n_dirs] = NULL;
	return 0;
}

static int add_path_list(struct strata_registry *reg, const char *list)
{
	const char *p = list;

	while (p && *p) {
		const char *end = strchr(p, STRATA_DL_PATH_SEP);
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int rc = add_dir(reg, p, len);

		if (rc)
			return rc;
		p = end ? end + 1 : NULL;
	}
	return 0;
}

#ifndef STRATA_BIN_TO_PLUGINS
#define STRATA_BIN_TO_PLUGINS "../lib/strata"
#endif

/*
 * The executable's directory, its plugins/ subdirectory (a build tree) and,
 * where it exists, the installed plugin directory relative to it
 * (STRATA_BIN_TO_PLUGINS, from the build's install layout: ../lib/strata).
 */
static int add_exe_dirs(struct strata_registry *reg, const char *argv0)
{
	char *exe = strata_dl_self_exe();
	char *slash, *sub = NULL;
	int rc;

	if (!exe && (strchr(argv0, '/') || strchr(argv0, STRATA_DL_DIR_SEP)))
		exe = strata_dl_realpath(argv0);
	if (!exe)
		return 0; /* a bare name found through $PATH: nothing to add */
	slash = strrchr(exe, STRATA_DL_DIR_SEP);
	if (!slash)
		slash = strrchr(exe, '/');
	if (!slash) {
		free(exe);
		return 0;
	}
	slash[slash == exe ? 1 : 0] = 0;
	rc = add_dir(reg, exe, strlen(exe));
	if (!rc) {
		sub = join_path(exe, "plugins");
		rc = sub ? add_dir(reg, sub, strlen(sub)) : -ENOMEM;
	}
	free(sub);
	if (!rc) {
		char *inst = join_path(exe, STRATA_BIN_TO_PLUGINS), *real = NULL;

		rc = inst ? 0 : -ENOMEM;
		if (inst)
			real = strata_dl_realpath(inst); /* NULL: not installed, nothing to add */
		if (real)
			rc = add_dir(reg, real, strlen(real));
		free(real);
		free(inst);
	}
	free(exe);
	return rc;
}

/*
 * strata/ beside libstrata, where an application embeds it: an installed
 * libdir/libstrata.so finds libdir/strata/ (the plugins' install folder).
 * Nothing when the core is linked into the executable itself.
 */
static int add_lib_dir(struct strata_registry *reg)
{
	char *lib = strata_dl_self_lib(), *exe = strata_dl_self_exe(), *slash, *dir, *real = NULL;
	int rc = 0;

	if (lib && (!exe || strcmp(lib, exe))) {
		slash = strrchr(lib, STRATA_DL_DIR_SEP);
		if (!slash)
			slash = strrchr(lib, '/');
		if (slash) {
			slash[slash == lib ? 1 : 0] = 0;
			dir = join_path(lib, "strata");
			rc = dir ? 0 : -ENOMEM;
			real = dir ? strata_dl_realpath(dir) : NULL;
			if (real && !strata_dl_check_file(real))
				*real = 0; /* a file called strata, not the folder */
			if (real && *real)
				rc = add_dir(reg, real, strlen(real));
			free(dir);
		}
	}
	free(real);
	free(lib);
	free(exe);
	return rc;
}

int strata_registry_create(const struct strata_config *cfg, const char *argv0,
			   struct strata_registry **out)
{
	struct strata_registry *reg = calloc(1, sizeof(*reg));
	int rc = 0;

	*out = NULL;
	if (!reg)
		return -ENOMEM;
	reg->cfg = cfg;
	reg->dirs = calloc(1, sizeof(*reg->dirs));
	if (!reg->dirs)
		rc = -ENOMEM;
	if (!rc && cfg && cfg->plugin_dir && *cfg->plugin_dir)
		rc = add_dir(reg, cfg->plugin_dir, strlen(cfg->plugin_dir));
	if (!rc)
		rc = add_path_list(reg, getenv("STRATA_PLUGIN_PATH"));
	if (!rc && argv0)
		rc = add_exe_dirs(reg, argv0);
	if (!rc)
		rc = add_lib_dir(reg);
	if (rc) {
		strata_error("plugin registry: out of memory");
		strata_registry_free(reg);
		return rc;
	}
	*out = reg;
	return 0;
}

void strata_registry_free(struct strata_registry *reg)
{
	size_t i;

	if (!reg)
		return;
	/* Reverse order: a later plugin may have been handed state of an earlier one. */
	for (i = reg->n_recs; i-- > 0;) {
		struct plugin_rec *rec = reg->recs[i];

		strata_dl_close(rec->dl);
		free(rec->pub.path);
		free(rec->real);
		free(rec);
	}
	free(reg->recs);
	for (i = 0; i < reg->n_dirs; i++)
		free(reg->dirs[i]);
	free(reg->dirs);
	free(reg);
}

const char *const *strata_registry_search_path(const struct strata_registry *reg)
{
	return (const char *const *)reg->dirs;
}

/* ---- loading ----------------------------------------------------------- */

static int valid_name(const char *name)
{
	size_t i;

	if (!name || !name[0] || strlen(name) > NAME_MAX_LEN || name[0] == '.' || name[0] == '-')
		return 0;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return 0;
	}
	return 1;
}

static int check_kind(uint32_t want, const struct strata_plugin_desc *d, struct refusal *why)
{
	if (d->kind < STRATA_PLUGIN_IO || d->kind > STRATA_PLUGIN_PATH)
		return refuse(why, -ENOTSUP, "kind %u is unknown to this core", d->kind);
	if (want && d->kind != want)
		return refuse(why, -ENOTSUP, "kind %s expected, got %s",
			      strata_plugin_kind_name(want), strata_plugin_kind_name(d->kind));
	return 0;
}

/*
 * The descriptor after the ABI check.  Only version-1 fields of the ops
 * table are looked at: every table has at least those once version >= 1.
 */
static int check_desc(const struct strata_plugin_desc *d, struct refusal *why)
{
	if (!valid_name(d->name))
		return refuse(why, -EBADMSG, "descriptor has %s name%s%s%s",
			      d->name ? "an invalid" : "no", d->name ? " '" : "",
			      d->name ? d->name : "", d->name ? "'" : "");
	if (!d->probe)
		return refuse(why, -EBADMSG, "required method probe NULL");
	if (!d->ops)
		return refuse(why, -EBADMSG, "required ops table NULL");
	if (*(const uint32_t *)d->ops < 1)
		return refuse(why, -EBADMSG, "ops table version 0 (must be >= 1)");
	if (d->kind == STRATA_PLUGIN_PATH) {
		const struct strata_path_ops *o = d->ops;
		const char *missing = !o->create ? "create"
				      : !o->destroy ? "destroy"
				      : !o->accepts ? "accepts"
				      : !o->run ? "run"
				      : NULL;

		if (missing)
			return refuse(why, -EBADMSG, "required method %s NULL", missing);
	}
	if (d->kind == STRATA_PLUGIN_GPU) {
		const struct strata_backend_ops *o = d->ops;
		const char *missing = !o->open ? "open"
				      : !o->close ? "close"
				      : !o->info ? "info"
				      : !o->supports ? "supports"
				      : !o->buf_alloc ? "buf_alloc"
				      : !o->buf_free ? "buf_free"
				      : !o->copy_in ? "copy_in"
				      : !o->copy_out ? "copy_out"
				      : !o->run ? "run"
				      : !o->event_create ? "event_create"
				      : !o->event_free ? "event_free"
				      : !o->record_event ? "record_event"
				      : !o->wait_event ? "wait_event"
				      : !o->sync_event ? "sync_event"
				      : !o->synchronize ? "synchronize"
				      : NULL;

		if (missing)
			return refuse(why, -EBADMSG, "required method %s NULL", missing);
	}
	if (d->kind == STRATA_PLUGIN_IO) {
		const struct strata_io_ops *o = d->ops;
		const char *missing = !o->open ? "open"
				      : !o->close ? "close"
				      : !o->caps ? "caps"
				      : !o->size ? "size"
				      : !o->submit ? "submit"
				      : !o->reap ? "reap"
				      : NULL;

		if (missing)
			return refuse(why, -EBADMSG, "required method %s NULL", missing);
	}
	return 0;
}

static struct plugin_rec *find_by_real(struct strata_registry *reg, const char *real)
{
	size_t i;

	for (i = 0; real && i < reg->n_recs; i++)
		if (!strcmp(reg->recs[i]->real, real))
			return reg->recs[i];
	return NULL;
}

static struct plugin_rec *find_by_name(struct strata_registry *reg, const char *name)
{
	size_t i;

	for (i = 0; i < reg->n_recs; i++)
		if (!strcmp(reg->recs[i]->pub.desc->name, name))
			return reg->recs[i];
	return NULL;
}

static int append_rec(struct strata_registry *reg, struct plugin_rec *rec)
{
	if (reg->n_recs == reg->cap_recs) {
		size_t cap = reg->cap_recs ? 2 * reg->cap_recs : 8;
		struct plugin_rec **r = realloc(reg->recs, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		reg->recs = r;
		reg->cap_recs = cap;
	}
	reg->recs[reg->n_recs++] = rec;
	return 0;
}

/* Steps after the descriptor passed its checks: name clash, probe, INI keys. */
static int admit(struct strata_registry *reg, struct plugin_rec *rec, struct refusal *why)
{
	const struct strata_plugin_desc *d = rec->pub.desc;
	const struct plugin_rec *clash = find_by_name(reg, d->name);
	int rc;

	if (clash)
		return refuse(why, -EEXIST, "plugin '%s' is already loaded from %s", d->name,
			      clash->pub.path);
	rec->pub.host = (struct strata_host){
		.version = 3,
		.log = host_log,
		.config_get = host_config_get,
		.aligned_alloc = strata_aligned_alloc,
		.aligned_free = strata_aligned_free,
		.core = rec,
		.load_plugin = host_load_plugin,
		.dequantize = host_dequantize,
	};
	reg->probing = 1;
	rec->pub.score = d->probe(&rec->pub.host);
	reg->probing = 0;
	if (rec->pub.score == 0)
		return refuse(why, -ENODEV, "probe says unusable on this machine");
	if (rec->pub.score < 0)
		return refuse(why, -ENODEV, "probe failed: %s", strerror(-rec->pub.score));
	if (reg->cfg) {
		rc = strata_config_check_plugin_keys(reg->cfg, d->name, d->config_keys);
		if (rc) {
			why->logged = 1; /* the config check named FILE:LINE */
			return refuse(why, rc, "its [%s] section has a key it does not declare",
				      d->name);
		}
	}
	return append_rec(reg, rec) ? refuse(why, -ENOMEM, "out of memory") : 0;
}

/* Open, check, probe and register one file; `expect` is the name its file name implies. */
static int load_one(struct strata_registry *reg, const char *path, uint32_t kind,
		    const char *expect, struct strata_plugin **out, struct refusal *why)
{
	char err[REASON_CAP];
	struct plugin_rec *rec, *same;
	strata_plugin_entry_fn entry;
	const struct strata_plugin_desc *d;
	char *real;
	void *sym;
	int rc;

	rc = strata_dl_check_file(path);
	if (rc)
		return refuse(why, rc == -EISDIR ? -ENOENT : rc, "%s",
			      rc == -EISDIR ? "not a regular file" : strerror(-rc));
	errno = 0;
	real = strata_dl_realpath(path);
	if (!real)
		return refuse(why, errno ? -errno : -ENOMEM, "%s", strerror(errno ? errno : ENOMEM));
	same = find_by_real(reg, real);
	if (same) {
		free(real);
		rc = check_kind(kind, same->pub.desc, why);
		if (!rc)
			*out = &same->pub;
		return rc;
	}
	rec = calloc(1, sizeof(*rec));
	if (!rec) {
		free(real);
		return refuse(why, -ENOMEM, "out of memory");
	}
	rec->reg = reg;
	rec->real = real;
	rec->pub.path = strdup(path);
	if (!rec->pub.path) {
		rc = refuse(why, -ENOMEM, "out of memory");
		goto fail;
	}
	rec->dl = strata_dl_open(path, err, sizeof(err));
	if (!rec->dl) {
		rc = refuse(why, -ENOEXEC, "not loadable: %s", err);
		goto fail;
	}
	sym = strata_dl_sym(rec->dl, STRATA_PLUGIN_ENTRY_SYMBOL);
	if (!sym) {
		rc = refuse(why, -ENOSYS, "no entry symbol %s (not a strata plugin)",
			    STRATA_PLUGIN_ENTRY_SYMBOL);
		goto fail;
	}
	*(void **)&entry = sym;
	d = entry();
	if (!d) {
		rc = refuse(why, -ENODATA, "entry %s returned NULL", STRATA_PLUGIN_ENTRY_SYMBOL);
		goto fail;
	}
	/* Only `abi` may be read before this check: another major may lay out the rest differently. */
	if ((d->abi >> 16) != STRATA_PLUGIN_ABI_MAJOR) {
		rc = refuse(why, -EPROTO, "ABI major %u, core expects %u", (unsigned)(d->abi >> 16),
			    (unsigned)STRATA_PLUGIN_ABI_MAJOR);
		goto fail;
	}
	/* abi names the lowest minor the plugin needs (plugin.h's version rule): one
	 * newer than this core's may use host fields or kinds this core lacks, so it
	 * is refused with a reason rather than left to find out.  Older minors are
	 * served exactly (the core never reads past the versions they declare). */
	if ((d->abi & 0xffffu) > STRATA_PLUGIN_ABI_MINOR) {
		rc = refuse(why, -EPROTO, "needs ABI %u.%u, newer than this core's %u.%u",
			    (unsigned)(d->abi >> 16), (unsigned)(d->abi & 0xffffu),
			    (unsigned)STRATA_PLUGIN_ABI_MAJOR, (unsigned)STRATA_PLUGIN_ABI_MINOR);
		goto fail;
	}
	rc = check_kind(kind, d, why);
	if (!rc)
		rc = check_desc(d, why);
	if (!rc && expect && strcmp(d->name, expect))
		rc = refuse(why, -EBADMSG, "declares plugin name '%s', its file name says '%s'",
			    d->name, expect);
	if (rc)
		goto fail;
	rec->pub.desc = d;
	rc = admit(reg, rec, why);
	if (rc)
		goto fail;
	*out = &rec->pub;
	return 0;
fail:
	strata_dl_close(rec->dl);
	free(rec->pub.path);
	free(rec->real);
	free(rec);
	return rc;
}

int strata_registry_load_file(struct strata_registry *reg, const char *path, uint32_t kind,
			      struct strata_plugin **out)
{
	struct refusal why = { .logged = 0 };
	int rc;

	*out = NULL;
	rc = load_one(reg, path, kind, NULL, out, &why);
	if (rc && !why.logged)
		strata_error("plugin %s: %s", path, why.reason);
	return rc;
}

static int not_found(struct strata_registry *reg, const char *name)
{
	char dirs[REASON_CAP] = "";
	size_t i, n = 0;

	for (i = 0; i < reg->n_dirs && n < sizeof(dirs); i++)
		n += (size_t)snprintf(dirs + n, sizeof(dirs) - n, "%s%s", i ? ", " : "",
				      reg->dirs[i]);
	if (!reg->n_dirs)
		strata_error("plugin '%s': strata-%s%s not found: the search path is empty "
			     "(set [plugins] dir or STRATA_PLUGIN_PATH)",
			     name, name, STRATA_DL_SUFFIX);
	else
		strata_error("plugin '%s': strata-%s%s not found; searched: %s", name, name,
			     STRATA_DL_SUFFIX, dirs);
	return -ENOENT;
}

int strata_registry_load(struct strata_registry *reg, uint32_t kind, const char *name,
			 struct strata_plugin **out)
{
	struct plugin_rec *rec;
	struct refusal why = { .logged = 0 };
	size_t i;
	int rc;

	*out = NULL;
	if (!valid_name(name)) {
		strata_error("plugin name '%s' is invalid (letters, digits, '-', '_', '.')",
			     name ? name : "");
		return -EINVAL;
	}
	rec = find_by_name(reg, name);
	if (rec) {
		rc = check_kind(kind, rec->pub.desc, &why);
		if (rc) {
			strata_error("plugin %s: %s", rec->pub.path, why.reason);
			return rc;
		}
		*out = &rec->pub;
		return 0;
	}
	for (i = 0; i < reg->n_dirs; i++) {
		char file[NAME_MAX_LEN + 32], *path;

		snprintf(file, sizeof(file), "strata-%s%s", name, STRATA_DL_SUFFIX);
		path = join_path(reg->dirs[i], file);
		if (!path)
			return -ENOMEM;
		if (strata_dl_check_file(path)) {
			free(path);
			continue;
		}
		/* The first directory that has the file decides, even when it is refused. */
		rc = load_one(reg, path, kind, name, out, &why);
		if (rc && !why.logged)
			strata_error("plugin %s: %s", path, why.reason);
		free(path);
		return rc;
	}
	return not_found(reg, name);
}

/* ---- scanning ---------------------------------------------------------- */

struct name_list {
	char **v;
	size_t n, cap;
};

static int collect_plugin_file(void *user, const char *name)
{
	struct name_list *l = user;
	size_t n = strlen(name), pre = strlen("strata-"), suf = strlen(STRATA_DL_SUFFIX);

	if (n <= pre + suf || strncmp(name, "strata-", pre) ||
	    strcmp(name + n - suf, STRATA_DL_SUFFIX))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = strdup(name);
	return l->v[l->n++] ? 0 : -ENOMEM;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Scan one directory in name order; returns plugins loaded or -ENOMEM. */
static int scan_dir(struct strata_registry *reg, const char *dir, strata_scan_fn fn,
		    void *user)
{
	struct name_list l = { 0 };
	size_t i, pre = strlen("strata-"), suf = strlen(STRATA_DL_SUFFIX);
	int rc, loaded = 0;

	rc = strata_dl_list_dir(dir, collect_plugin_file, &l);
	if (rc == -ENOMEM)
		goto out;
	rc = 0; /* a missing search directory is not an error */
	if (l.n) /* l.v is NULL then, which qsort must not see */
		qsort(l.v, l.n, sizeof(*l.v), cmp_str);
	for (i = 0; i < l.n && rc == 0; i++) {
		struct refusal why = { .logged = 0 };
		struct strata_plugin *p = NULL;
		char *path, *expect;
		int err;

		expect = dup_len(l.v[i] + pre, strlen(l.v[i]) - pre - suf);
		path = join_path(dir, l.v[i]);
		if (!expect || !path) {
			free(expect);
			free(path);
			rc = -ENOMEM;
			break;
		}
		err = load_one(reg, path, 0, expect, &p, &why);
		if (err == -EEXIST)
			snprintf(why.reason, sizeof(why.reason), "shadowed by %s (same plugin name)",
				 find_by_name(reg, expect)->pub.path);
		fn(user, path, err ? NULL : p, err, err ? why.reason : NULL);
		loaded += !err;
		if (err == -ENOMEM)
			rc = err;
		free(path);
		free(expect);
	}
out:
	for (i = 0; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
	return rc ? rc : loaded;
}

int strata_registry_scan(struct strata_registry *reg, strata_scan_fn fn, void *user)
{
	size_t i;
	int total = 0;

	for (i = 0; i < reg->n_dirs; i++) {
		int rc = scan_dir(reg, reg->dirs[i], fn, user);

		if (rc < 0) {
			strata_error("plugin scan of %s: %s", reg->dirs[i], strerror(-rc));
			return rc;
		}
		total += rc;
	}
	return total;
}

struct best_io {
	const struct strata_plugin *p;
	uint32_t kind;
};

static void pick_best(void *user, const char *path, const struct strata_plugin *p, int err,
		      const char *reason)
{
	struct best_io *b = user;

	(void)path;
	(void)err;
	(void)reason;
	if (p && p->desc->kind == b->kind && (!b->p || p->score > b->p->score))
		b->p = p;
}

int strata_registry_best(struct strata_registry *reg, uint32_t kind, struct strata_plugin **out)
{
	struct best_io b = { NULL, kind };
	int rc;

	*out = NULL;
	rc = strata_registry_scan(reg, pick_best, &b);
	if (rc < 0)
		return rc;
	if (!b.p)
		return -ENOENT;
	*out = (struct strata_plugin *)b.p; /* the registry's own: it hands out mutable ones */
	return 0;
}

int strata_registry_pick_io(struct strata_registry *reg, const char *name, const char *what,
			    struct strata_plugin **out)
{
	int rc;

	*out = NULL;
	if (name && *name && strcmp(name, "auto") != 0)
		return strata_registry_load(reg, STRATA_PLUGIN_IO, name, out);
	rc = strata_registry_best(reg, STRATA_PLUGIN_IO, out);
	if (rc == -ENOENT) {
		strata_error("no io plugin (strata-io-*.so) usable on this machine for %s on the "
			     "plugin search path (see `strata plugins`; --plugin-dir adds a "
			     "directory)", what);
		return -ENOENT;
	}
	return rc;
}
