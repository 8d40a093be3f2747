/*
 * dl.h - the platform shim under the plugin loader.
 *
 * Everything that differs between POSIX and Windows when finding and
 * loading a plugin lives behind these few functions: opening a shared
 * object and looking up a symbol (dlopen/dlsym, LoadLibrary/GetProcAddress),
 * listing a directory, the running executable's path and canonical paths.
 */
#ifndef STRATA_DL_H
#define STRATA_DL_H

#include <stddef.h>

#ifdef _WIN32
#define STRATA_DL_SUFFIX ".dll"
#define STRATA_DL_PATH_SEP ';' /* between directories in STRATA_PLUGIN_PATH */
#define STRATA_DL_DIR_SEP '\\'
#else
#define STRATA_DL_SUFFIX ".so"
#define STRATA_DL_PATH_SEP ':'
#define STRATA_DL_DIR_SEP '/'
#endif

/*
 * Open the shared object at `path`.  The path is used as a file path, never
 * looked up in the system's library directories (a bare name is taken
 * relative to the current directory).  All its symbols are bound now, so a
 * plugin that needs a missing library or symbol fails here, not mid-run.
 * Returns the handle, or NULL with the system's reason in err (cap bytes,
 * NUL-terminated, without the path when the system repeats it).
 */
void *strata_dl_open(const char *path, char *err, size_t cap);

/* Address of the exported symbol `name` in handle, NULL when absent. */
void *strata_dl_sym(void *handle, const char *name);

/* Close a handle from strata_dl_open(); NULL is a no-op. */
void strata_dl_close(void *handle);

/*
 * Call fn(user, name) for every entry of directory `dir` except "." and
 * "..", in the order the system returns them; stops early when fn returns
 * non-zero and passes that value back.  Returns 0, fn's value or -errno
 * when the directory cannot be read.
 */
typedef int (*strata_dl_dir_fn)(void *user, const char *name);
int strata_dl_list_dir(const char *dir, strata_dl_dir_fn fn, void *user);

/* Absolute path of the running executable (malloc'd), or NULL if unknown. */
char *strata_dl_self_exe(void);

/*
 * Absolute path of the executable or shared library this code is linked
 * into (libstrata when an application embeds it), malloc'd, or NULL.
 */
char *strata_dl_self_lib(void);

/* Canonical absolute path of an existing path (malloc'd), or NULL. */
char *strata_dl_realpath(const char *path);

/* 0 when path is a regular file; -ENOENT, -EISDIR, ... otherwise. */
int strata_dl_check_file(const char *path);

#endif
