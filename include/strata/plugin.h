/*
 * strata/plugin.h - the one stable ABI between the strata core and its plugins.
 *
 * A plugin is a shared object that exports one C symbol, `strata_plugin_entry`,
 * of type strata_plugin_entry_fn.  It returns a pointer to a static, constant
 * descriptor that lives as long as the library is loaded.
 *
 * Versioning rules (SQLite VFS style):
 *   - STRATA_PLUGIN_ABI_MAJOR changes only when an existing struct layout or
 *     meaning changes; the core refuses a plugin whose major differs.
 *   - Every ops table and the host table start with a `version` field and are
 *     only ever appended to.  A newer minor appends fields; the core never
 *     reads past the version a plugin declares, and a plugin must check
 *     host->version before using a host field added after version 1.
 *   - A plugin states the lowest minor it needs, not the header it was built
 *     with: desc.abi = STRATA_PLUGIN_ABI_NEEDS(n), n the newest minor whose
 *     additions it uses (the list below).  So a plugin rebuilt against a
 *     newer header, using nothing new, still loads in an older core; a core
 *     refuses one that needs a minor newer than its own, with the reason.
 *       minor 0: kinds io and path; host version 1
 *       minor 1: host version 2 (load_plugin)
 *       minor 2: kind gpu (strata/backend.h); host version 3 (dequantize)
 *   - Structs the core hands a plugin to fill or read (struct strata_io_caps,
 *     strata_io_req, strata_part) are zeroed by the core before use and may
 *     grow at their end in a later minor: a plugin writes only the fields it
 *     knows, takes them by pointer, and never sizes an array of them.
 *   - Optional methods may be NULL; required methods are marked so below.
 *
 * STRATA_PLUGIN_DEFINE(desc) declares and defines the entry point; with it a
 * plugin's whole tie to the core is one descriptor:
 *
 *     static const struct strata_plugin_desc my_desc = {
 *             .abi = STRATA_PLUGIN_ABI_NEEDS(0), .kind = STRATA_PLUGIN_IO, ...
 *     };
 *     STRATA_PLUGIN_DEFINE(my_desc)
 *
 * Errors: every int-returning method returns 0 (or a non-negative count)
 * on success and a negative errno value on failure.  The core turns it into
 * one message naming the plugin; plugins may add detail through host->log.
 *
 * Plugins never link against the strata binary: everything they need from
 * the core comes through struct strata_host.
 */
#ifndef STRATA_PLUGIN_H
#define STRATA_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_PLUGIN_ABI_MAJOR 1
/* 1: strata_host version 2 (load_plugin); 2: the gpu kind's ops table
 * (strata/backend.h), strata_host version 3 (dequantize) */
#define STRATA_PLUGIN_ABI_MINOR 2
/* A descriptor's abi: this major and the lowest minor the plugin needs. */
#define STRATA_PLUGIN_ABI_NEEDS(minor) \
	((uint32_t)((STRATA_PLUGIN_ABI_MAJOR << 16) | (uint32_t)(minor)))
/* Needs everything this header has: safe, but it will not load in an older core. */
#define STRATA_PLUGIN_ABI STRATA_PLUGIN_ABI_NEEDS(STRATA_PLUGIN_ABI_MINOR)
#define STRATA_PLUGIN_ENTRY_SYMBOL "strata_plugin_entry"

#if defined(_WIN32)
#define STRATA_PLUGIN_EXPORT __declspec(dllexport)
#else
#define STRATA_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif
#ifdef __cplusplus
#define STRATA_PLUGIN_EXTERN_C extern "C"
#else
#define STRATA_PLUGIN_EXTERN_C
#endif

/* Plugin kinds.  Values are part of the ABI and never reused. */
enum strata_plugin_kind {
	STRATA_PLUGIN_IO = 1,   /* reads bytes of a file at offsets   */
	STRATA_PLUGIN_GPU = 2,  /* a compute device (strata/backend.h) */
	STRATA_PLUGIN_PATH = 3, /* how a prompt part is read          */
};

enum strata_log_level {
	STRATA_LOG_ERROR = 0,
	STRATA_LOG_WARN = 1,
	STRATA_LOG_INFO = 2,
	STRATA_LOG_DEBUG = 3,
};

struct strata_plugin_desc;

/*
 * What the core lends a plugin.  Valid from load until unload.
 */
struct strata_host {
	uint32_t version; /* 3; fields after `core` exist from the version named */
	/* printf-style log line, prefixed with the plugin's name by the core. */
	void (*log)(const struct strata_host *host, int level, const char *fmt,
		    ...)
#if defined(__GNUC__)
		__attribute__((format(printf, 3, 4)))
#endif
		;
	/*
	 * Value of `key` in the plugin's configuration (INI section named like
	 * the plugin, after command-line and environment overrides), or in
	 * `section` when section is non-NULL.  NULL when unset.  The string is
	 * owned by the core and valid until the plugin is unloaded.
	 */
	const char *(*config_get)(const struct strata_host *host,
				  const char *section, const char *key);
	/* Aligned allocation; align is a power of two >= sizeof(void *). */
	void *(*aligned_alloc)(size_t align, size_t size);
	void (*aligned_free)(void *p);
	void *core; /* opaque to plugins */

	/* ---- version 2 (ABI 1.1) ---- */
	/*
	 * Load the plugin of `kind` named `name` exactly as the core loads its
	 * own (same search path, same checks, the same record when it is loaded
	 * already; its configuration is its own [name] section), for plugins
	 * that wrap another one.  On success *desc is its descriptor and
	 * *plugin_host the host table to pass to its methods, both valid until
	 * the core unloads its plugins, which it does after closing every
	 * handle and instance.  Returns 0 or -errno after the core logged why
	 * (the file and the reason); -ELOOP when a plugin asks for itself,
	 * -EDEADLK when called from probe().  Call it from open() or create():
	 * like the rest of loading it is not thread-safe.
	 */
	int (*load_plugin)(const struct strata_host *host, uint32_t kind, const char *name,
			   const struct strata_plugin_desc **desc,
			   const struct strata_host **plugin_host);

	/* ---- version 3 (ABI 1.2) ---- */
	/*
	 * The reference dequantisation: n values (a multiple of the type's
	 * block) of GGUF type `type` at src, in the layouts of
	 * strata/quants.h, into dst as floats, bit-identical to ggml's.  What
	 * a backend's kernels are tested against.  0, or -EINVAL for a type
	 * strata does not compute with or an n that is not whole blocks.
	 */
	int (*dequantize)(uint32_t type, const void *src, float *dst, int64_t n);
};

/*
 * The descriptor every plugin returns from strata_plugin_entry().
 */
struct strata_plugin_desc {
	uint32_t abi;            /* STRATA_PLUGIN_ABI_NEEDS(lowest minor it needs) */
	uint32_t kind;           /* enum strata_plugin_kind */
	const char *name;        /* short unique name, e.g. "io-uring" */
	const char *version;     /* the plugin's own version, e.g. "1.0.0" */
	const char *description; /* one line */
	/*
	 * Required.  How well this plugin fits this machine: 0 = unusable here,
	 * higher = better.  Must be cheap and free of side effects.
	 */
	int (*probe)(const struct strata_host *host);
	/*
	 * Required.  The kind's ops table: struct strata_io_ops,
	 * strata_path_ops, or strata_backend_ops (strata/backend.h) for gpu.
	 */
	const void *ops;
	/*
	 * Keys the plugin's INI section ([name]) accepts, NULL-terminated; NULL
	 * when it takes none.  The core refuses other keys with FILE:LINE.
	 */
	const char *const *config_keys;
};

typedef const struct strata_plugin_desc *(*strata_plugin_entry_fn)(void);

/*
 * Declare and define the exported entry point returning &desc (a static
 * const struct strata_plugin_desc).  The prototype comes first, so a
 * definition that does not match strata_plugin_entry_fn fails to compile.
 */
#define STRATA_PLUGIN_DEFINE(desc)                                                           \
	STRATA_PLUGIN_EXTERN_C STRATA_PLUGIN_EXPORT const struct strata_plugin_desc *        \
	strata_plugin_entry(void);                                                           \
	STRATA_PLUGIN_EXTERN_C STRATA_PLUGIN_EXPORT const struct strata_plugin_desc *        \
	strata_plugin_entry(void)                                                            \
	{                                                                                    \
		return &(desc);                                                              \
	}

/* ------------------------------------------------------------------------
 * Kind PATH: how one part of a prompt is fed to the model.
 *
 * The engine splits a prompt into parts and, for each part, asks its list
 * of path plugins in order; the first whose accepts() says yes runs it.
 */

/* One part of a prompt. */
struct strata_part {
	const int32_t *tokens; /* the part's tokens */
	uint32_t n_tokens;
	uint32_t pos;          /* sequence position of tokens[0] */
	uint32_t n_pictures;   /* picture rows inside this part (0 for text) */
	uint32_t is_last;      /* 1 when the prompt's last part */
};

/*
 * The engine as a path plugin sees it.  Valid for the duration of run().
 */
struct strata_engine_iface {
	uint32_t version; /* 1 */
	void *engine;
	/*
	 * Batched forward of n tokens appended at the current sequence
	 * position.  Returns 0 or a negative errno.
	 */
	int (*forward_batch)(void *engine, const int32_t *tokens, uint32_t n);
	/*
	 * One decode window: the same code decode uses, n <= window() tokens.
	 * May be NULL while the engine has no window path.
	 */
	int (*forward_window)(void *engine, const int32_t *tokens, uint32_t n);
	/* Tokens per decode window (S); 1 without speculation. */
	uint32_t (*window)(void *engine);
	/* Largest batch the engine accepts in one forward_batch(). */
	uint32_t (*max_batch)(void *engine);
};

struct strata_path_ops {
	uint32_t version; /* 1 */
	/*
	 * Required.  Make an instance; configuration comes from
	 * host->config_get().  On success *state is owned by the caller and
	 * released with destroy().
	 */
	int (*create)(const struct strata_host *host, void **state);
	/* Required.  Free an instance made by create(); NULL is a no-op. */
	void (*destroy)(void *state);
	/* Required.  1 when this path takes the part, 0 when it does not. */
	int (*accepts)(void *state, const struct strata_part *part);
	/* Required.  Feed the part through the engine. */
	int (*run)(void *state, const struct strata_part *part,
		   const struct strata_engine_iface *engine);
};


/* ------------------------------------------------------------------------
 * Kind IO: reads bytes of a file at offsets, many in flight.
 *
 * The core opens one handle per reader thread; a handle is used by one
 * thread at a time, so a plugin keeps its queue (ring, completion port,
 * worker pool) per handle and needs no locking between handles.
 */

/* open() flags */
#define STRATA_IO_DIRECT 1u /* bypass the page cache (O_DIRECT / unbuffered) */

/* strata_io_caps.flags */
#define STRATA_IO_CAP_DIRECT 1u        /* this handle really bypasses the cache */
#define STRATA_IO_CAP_ASYNC 2u         /* submit() returns before the data lands */
#define STRATA_IO_CAP_FIXED_BUFFERS 4u /* register_buffers() helps */
#define STRATA_IO_CAP_INLINE 8u        /* reads happen inside submit()/reap() */

struct strata_io_caps {
	uint32_t flags;
	uint32_t depth;        /* reads this handle keeps in flight at most */
	uint32_t buf_align;    /* required alignment of buf (1 = any) */
	uint32_t offset_align; /* required alignment of offset and len (1 = any) */
};

/*
 * One read.  The core owns the struct; it must stay put until reaped.
 * A result is short only at the end of the file (0 past it) or when an
 * error cut the read off: plugins resume reads the kernel ends early.
 */
struct strata_io_req {
	uint64_t offset; /* byte offset in the file */
	uint32_t len;    /* bytes to read, at most INT32_MAX */
	int32_t result;  /* set on completion: bytes read (may be short) or -errno */
	void *buf;       /* destination, len bytes, aligned per caps */
	uint64_t user;   /* the core's cookie, untouched by the plugin */
};

struct strata_io_ops {
	uint32_t version; /* 1 */
	/*
	 * Required.  Open `path` for reading with room for `depth` reads in
	 * flight (0 = the plugin's default; its INI section may override the
	 * depth: caps() tells the one in force).  -EINVAL when STRATA_IO_DIRECT
	 * is asked for and the file system refuses it (the core may retry
	 * without); -ENOENT, -EISDIR, -EACCES as the system says.  *handle (NULL
	 * on failure) is released with close().
	 */
	int (*open)(const struct strata_host *host, const char *path, uint32_t flags,
		    uint32_t depth, void **handle);
	/*
	 * Required.  Waits for (or cancels) the reads in flight, then frees;
	 * NULL is a no-op.  Once it returns no buffer of an unreaped request is
	 * written any more; queued reads not yet started may be dropped.
	 */
	void (*close)(void *handle);
	/* Required.  What this handle can do. */
	int (*caps)(void *handle, struct strata_io_caps *caps);
	/* Required.  File size in bytes, or -errno. */
	int64_t (*size)(void *handle);
	/*
	 * Required.  Queue up to n reads; returns how many were accepted, always
	 * the first ones of reqs (0 when the handle is full: reap first), or
	 * -errno (-EINVAL for a NULL reqs[0]; -EAGAIN when the system takes no
	 * read while none is outstanding).  A request that breaks the caps'
	 * alignment is accepted and completes with -EINVAL; len 0 completes
	 * with 0.  Never blocks on the disk unless caps says
	 * STRATA_IO_CAP_INLINE.
	 */
	int (*submit)(void *handle, struct strata_io_req *const *reqs, uint32_t n);
	/*
	 * Required.  Wait until at least min_done reads have completed (0 = do
	 * not wait), store up to max_done of them in done[] and return the count,
	 * or -errno for a failure of the handle itself (a failed read is a
	 * completion with result < 0).  A timeout_ms >= 0 bounds the wait: then
	 * fewer than min_done may be returned; < 0 waits as long as it takes.
	 * min_done is first lowered to max_done and to the number of requests
	 * outstanding, so reap never waits for reads that were not submitted.
	 * With STRATA_IO_CAP_INLINE reap performs the queued reads itself: one
	 * at least when none has completed yet, even for min_done 0.
	 */
	int (*reap)(void *handle, struct strata_io_req **done, uint32_t min_done,
		    uint32_t max_done, int timeout_ms);
	/*
	 * Optional.  Pin n buffers the core will read into; requests whose buf
	 * lies inside one then go faster.  Only with nothing outstanding
	 * (-EBUSY); replaces an earlier set; n = 0 drops it.  -ENOTSUP when the
	 * plugin is configured not to; on any failure the handle keeps working
	 * without.  The buffers must outlive the handle or the next call.
	 */
	int (*register_buffers)(void *handle, void *const *bufs, const size_t *lens, uint32_t n);
};

#ifdef __cplusplus
}
#endif

#endif /* STRATA_PLUGIN_H */
