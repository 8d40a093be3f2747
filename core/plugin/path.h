/*
 * path.h - the engine's list of prompt paths.
 *
 * A prompt is fed to the model part by part; for each part the list asks its
 * path plugins in order and the first whose accepts() says yes runs it
 * (for example "path-window,path-batched": short parts through the decode
 * windows, everything else batched).  The list owns one instance of each
 * plugin, made with the plugin's create() and the host table the registry
 * gave it.
 */
#ifndef STRATA_PATH_H
#define STRATA_PATH_H

#include <stddef.h>

#include "strata/plugin.h"

struct strata_registry;
struct strata_plugin;
struct strata_path_list;

/* Used when the configuration names no path ([prompt] paths unset or empty). */
#define STRATA_PATH_LIST_DEFAULT "path-batched"

/*
 * Build the list from `names`, comma-separated path plugin names tried in
 * that order (spaces around names ignored; NULL or blank = the default).
 * Each plugin is loaded through reg (kind path) and one instance created.
 * An empty element, a name given twice, a plugin that does not load or whose
 * create() fails is logged once and returns that -errno.  reg must outlive
 * the list.  On success *out is released with strata_path_list_free().
 */
int strata_path_list_create(struct strata_registry *reg, const char *names,
			    struct strata_path_list **out);

/*
 * strata_path_list_create() for a list that came from the configuration:
 * `where` says where it was set ("strata.ini:12", "--paths",
 * "STRATA_PROMPT_PATHS"; NULL for the built-in default).  A name with no
 * plugin file on the search path is then logged as "WHERE: unknown prompt
 * path 'NAME' ..." (-ENOENT), before anything is loaded; other refusals are
 * the registry's, naming the file.
 */
int strata_path_list_create_at(struct strata_registry *reg, const char *names,
			       const char *where, struct strata_path_list **out);

/* Destroy every instance (in reverse order) and the list; NULL is a no-op. */
void strata_path_list_free(struct strata_path_list *list);

/* Number of paths in the list, and the plugin at position i (< count). */
size_t strata_path_list_count(const struct strata_path_list *list);
const struct strata_plugin *strata_path_list_plugin(const struct strata_path_list *list,
						    size_t i);

/*
 * Index of the first path whose accepts() takes `part`; -EINVAL after
 * logging "no prompt path accepts a part of N tokens" when none does, or
 * the negative errno an accepts() returned.
 */
int strata_path_list_pick(const struct strata_path_list *list, const struct strata_part *part);

/*
 * Feed `part` through the engine with the first path that accepts it.
 * Returns 0; -EINVAL when no path accepts it or the arguments are invalid
 * (logged); otherwise the path's run() result as is, unlogged here: the
 * engine's forward functions and the plugin (through host->log) report their
 * own failures where they happen.
 */
int strata_path_list_run(const struct strata_path_list *list, const struct strata_part *part,
			 const struct strata_engine_iface *eng);

#endif
