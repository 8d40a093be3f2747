/*
 * registry.h - finding, loading and checking plugins.
 *
 * Search path, in order: the INI's [plugins] dir, every directory in
 * STRATA_PLUGIN_PATH (':'-separated; ';' on Windows), then the directory of
 * the running executable and its plugins/ subdirectory.  A plugin named NAME
 * is the file "strata-NAME.so" (".dll" on Windows) in the first directory
 * that has it.
 *
 * Loading checks, each refused with one line naming the file and the reason:
 * the file is missing or not loadable; it has no strata_plugin_entry symbol;
 * the entry returns NULL; the ABI major differs; the kind is not the one
 * asked for; a required field or method is NULL; probe() says 0 (unusable).
 */
#ifndef STRATA_REGISTRY_H
#define STRATA_REGISTRY_H

#include <stdint.h>

#include "strata/plugin.h"

struct strata_config;
struct strata_registry;

/* A loaded plugin.  Owned by its registry; valid until strata_registry_free(). */
struct strata_plugin {
	const struct strata_plugin_desc *desc;
	char *path;              /* the file it came from */
	int score;               /* probe() result */
	struct strata_host host; /* the host table this plugin was given */
};

/*
 * Make a registry.  cfg supplies [plugins] dir and the plugins' INI sections;
 * it must outlive the registry (NULL: neither, plugins see no configuration).
 * argv0 non-NULL adds the executable's directory, its plugins/ and (where it
 * exists) the installed plugin directory beside it, ../lib/strata, to the
 * search path (found through the system, /proc/self/exe or GetModuleFileName,
 * else from argv0 when it holds a directory); NULL leaves them out.  Returns 0 or -errno; *out released with strata_registry_free().
 */
int strata_registry_create(const struct strata_config *cfg, const char *argv0,
			   struct strata_registry **out);
/* Unloads every plugin; pointers from this registry become invalid. */
void strata_registry_free(struct strata_registry *reg);

/*
 * The directories searched, in order, NULL-terminated (duplicates removed).
 * Owned by reg.
 */
const char *const *strata_registry_search_path(const struct strata_registry *reg);

/*
 * Load the plugin of `kind` named `name` from the search path (already
 * loaded: the same pointer again).  Returns 0 or -errno after logging the
 * reason with the file's path.
 */
int strata_registry_load(struct strata_registry *reg, uint32_t kind, const char *name,
			 struct strata_plugin **out);

/*
 * Load the file at `path` (any name) expecting `kind` (0 = any kind).  Same
 * checks and errors as strata_registry_load().
 */
int strata_registry_load_file(struct strata_registry *reg, const char *path, uint32_t kind,
			      struct strata_plugin **out);

/* Callback for strata_registry_scan(): p is NULL and err set when a file was refused. */
typedef void (*strata_scan_fn)(void *user, const char *path, const struct strata_plugin *p,
			       int err, const char *reason);
/*
 * Visit every strata-*.so on the search path (for `strata plugins`); files
 * that fail to load are reported to fn with the reason, not logged.
 * Returns the number of plugins loaded, or -errno.
 */
int strata_registry_scan(struct strata_registry *reg, strata_scan_fn fn, void *user);

/*
 * The io plugin called `name`, or with name NULL, "" or "auto" the one whose
 * probe scores best on this machine.  `what` says what it is for, in the
 * error when none is usable ("direct PLE reads").  0 or -errno (logged).
 */
int strata_registry_pick_io(struct strata_registry *reg, const char *name, const char *what,
			    struct strata_plugin **out);

/*
 * The plugin of `kind` on the search path whose probe scores best here:
 * 0, -ENOENT when there is none (not logged: the caller decides what that
 * means), or -errno of the scan (logged).
 */
int strata_registry_best(struct strata_registry *reg, uint32_t kind, struct strata_plugin **out);

const char *strata_plugin_kind_name(uint32_t kind);

/* `strata plugins [-c FILE] [--plugin-dir DIR]`: list what the search path holds. */
int strata_cmd_plugins(int argc, char **argv);

#endif
