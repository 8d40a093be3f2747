/*
 * gguf_write.h - a streaming GGUF v3 writer.
 *
 * The header (metadata and tensor infos) is collected in memory; the tensor
 * data is streamed: after the last metadata/tensor declaration the caller
 * appends the bytes of every tensor, in declaration order, in pieces of any
 * size, so a model of many gigabytes never has to be held in memory.  Each
 * tensor starts at a multiple of the alignment (general.alignment, 32 unless
 * the caller sets that key) and is zero-padded to the next one, the layout
 * ggml's reader insists on.
 *
 * Everything goes to a temporary file beside the destination (`PATH.tmp-PID`)
 * that strata_gguf_writer_commit() syncs and renames over PATH, so a reader
 * never sees a half-written model and a failed write leaves no debris.
 *
 * Errors: every function returns 0 (or a count) or a negative errno, after
 * logging one error that names the file.  After an I/O error the writer is
 * failed: later calls return the same error without logging again, and
 * close discards the temporary file.
 *
 * Ownership: strata_gguf_writer_open() returns a writer that the caller
 * releases with strata_gguf_writer_close().  Keys, names, strings and arrays
 * are copied when set; the caller's buffers may be reused at once.
 */
#ifndef STRATA_GGUF_WRITE_H
#define STRATA_GGUF_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

struct strata_gguf_writer;

/* Longest tensor name ggml accepts (GGML_MAX_NAME - 1). */
#define STRATA_GGUF_MAX_NAME 63

/*
 * Create the temporary file for `path` and return a writer in *out.  Fails
 * early (-ENOENT, -EACCES, -EISDIR, ...) when PATH cannot be written, so a
 * caller learns about a bad output path before doing any work.
 */
int strata_gguf_writer_open(const char *path, struct strata_gguf_writer **out);

/*
 * Release the writer.  Without a successful commit the temporary file is
 * removed and PATH is left as it was.  NULL is a no-op.
 */
void strata_gguf_writer_close(struct strata_gguf_writer *w);

/*
 * Finish the file: writes the header if no data was written yet, checks that
 * every declared tensor got all its bytes (-EINVAL otherwise), flushes,
 * fsyncs and renames the temporary file over PATH.  The writer must still be
 * closed.
 */
int strata_gguf_writer_commit(struct strata_gguf_writer *w);

/* ---- metadata (before the first data byte) ---- */

/*
 * Set `key` to a scalar of type t (any type but STRING and ARRAY); `value`
 * points at a host value of the matching C type (uint8_t ... double; BOOL
 * is one byte, 0 or 1).  Setting a key that exists replaces its value in
 * place, keeping the key order.  -EINVAL for an empty key, a bad type, or a
 * call after data was written.
 */
int strata_gguf_writer_set(struct strata_gguf_writer *w, const char *key,
			   enum strata_gguf_vtype t, const void *value);
int strata_gguf_writer_set_u32(struct strata_gguf_writer *w, const char *key, uint32_t v);
int strata_gguf_writer_set_i32(struct strata_gguf_writer *w, const char *key, int32_t v);
int strata_gguf_writer_set_u64(struct strata_gguf_writer *w, const char *key, uint64_t v);
int strata_gguf_writer_set_f32(struct strata_gguf_writer *w, const char *key, float v);
int strata_gguf_writer_set_bool(struct strata_gguf_writer *w, const char *key, int v);
/* A NUL-terminated string value. */
int strata_gguf_writer_set_str(struct strata_gguf_writer *w, const char *key, const char *s);
/* A string value of len bytes (may contain NULs). */
int strata_gguf_writer_set_strn(struct strata_gguf_writer *w, const char *key, const char *s,
				uint64_t len);
/*
 * An array of n scalars of elem_type (not STRING or ARRAY), packed host
 * values of the matching C type.
 */
int strata_gguf_writer_set_arr(struct strata_gguf_writer *w, const char *key,
			       enum strata_gguf_vtype elem_type, uint64_t n, const void *elems);
/* An array of n strings; lens may be NULL for NUL-terminated strings. */
int strata_gguf_writer_set_arr_str(struct strata_gguf_writer *w, const char *key, uint64_t n,
				   const char *const *strs, const uint64_t *lens);
/* Copy metadata entry i of an open file (any type, arrays included). */
int strata_gguf_writer_copy_kv(struct strata_gguf_writer *w, const struct strata_gguf *src,
			       int64_t i);

/* ---- tensors ---- */

/*
 * Declare the next tensor: n_dims (1..4) dimensions ne[0..n_dims), ne[0]
 * the row length.  Checks what ggml's reader checks: a unique name of at
 * most STRATA_GGUF_MAX_NAME bytes, a known type, dimensions >= 1, and a row
 * length that is a multiple of the type's block (-EINVAL otherwise).
 * Returns the tensor's index.
 */
int64_t strata_gguf_writer_add_tensor(struct strata_gguf_writer *w, const char *name,
				      uint32_t type, uint32_t n_dims, const int64_t *ne);
/*
 * Declare a tensor of `nbytes` data bytes with no check of the type, the
 * shape or their agreement with nbytes: for tests that need a malformed
 * file.  The name and n_dims are still checked, as the file could not be
 * written otherwise.
 */
int64_t strata_gguf_writer_add_tensor_raw(struct strata_gguf_writer *w, const char *name,
					  uint32_t type, uint32_t n_dims, const int64_t *ne,
					  uint64_t nbytes);

/* ---- data ---- */

/*
 * Append n bytes of tensor data.  The first call writes the header; data
 * fills the declared tensors in order and may span tensor boundaries.
 * -EINVAL (logged) when it exceeds the declared total.
 */
int strata_gguf_writer_write(struct strata_gguf_writer *w, const void *data, size_t n);

/* Bytes of tensor data declared in all (padding excluded), and written so far. */
uint64_t strata_gguf_writer_data_total(const struct strata_gguf_writer *w);
uint64_t strata_gguf_writer_data_done(const struct strata_gguf_writer *w);
/* Index of the tensor the next data byte belongs to (n_tensors when all are done). */
int64_t strata_gguf_writer_current(const struct strata_gguf_writer *w);
const char *strata_gguf_writer_path(const struct strata_gguf_writer *w);
/*
 * The temporary file's path (valid until close): for a signal handler that
 * must unlink it when the process is interrupted.
 */
const char *strata_gguf_writer_tmp_path(const struct strata_gguf_writer *w);

#endif
