/*
 * gguf.h - read-only GGUF v2/v3 files, memory-mapped.
 *
 * strata_gguf_open() maps the file and validates everything before returning:
 * every count, string length, array length, tensor dimension, type and data
 * offset is checked against the file size with overflow-safe arithmetic.  After
 * a successful open every accessor below is safe to call with any argument; a
 * malformed or truncated file is refused with one error naming the file and the
 * byte offset of the problem.
 *
 * Ownership: the handle owns the mapping; every pointer returned by an accessor
 * (strings, arrays, tensor data) points into it and is valid until
 * strata_gguf_close().  Strings are NOT NUL-terminated: use the length.
 */
#ifndef STRATA_GGUF_H
#define STRATA_GGUF_H

#include <stddef.h>
#include <stdint.h>

/* GGUF metadata value types (the file format's numbering). */
enum strata_gguf_vtype {
	STRATA_GGUF_U8 = 0,
	STRATA_GGUF_I8 = 1,
	STRATA_GGUF_U16 = 2,
	STRATA_GGUF_I16 = 3,
	STRATA_GGUF_U32 = 4,
	STRATA_GGUF_I32 = 5,
	STRATA_GGUF_F32 = 6,
	STRATA_GGUF_BOOL = 7,
	STRATA_GGUF_STRING = 8,
	STRATA_GGUF_ARRAY = 9,
	STRATA_GGUF_U64 = 10,
	STRATA_GGUF_I64 = 11,
	STRATA_GGUF_F64 = 12,
};

#define STRATA_GGUF_MAX_DIMS 4

struct strata_str {
	const char *s; /* not NUL-terminated */
	uint64_t len;
};

struct strata_gguf_tensor {
	struct strata_str name;
	uint32_t type;                        /* GGUF/ggml type id (enum strata_type) */
	uint32_t n_dims;
	int64_t ne[STRATA_GGUF_MAX_DIMS];     /* ne[0] = row length; unused dims are 1 */
	uint64_t offset;                      /* from the start of its file's data section */
	uint64_t size;                        /* bytes */
	const void *data;                     /* into the mapping */
	uint32_t file;                        /* the shard that holds it: 0 in a one-file model */
	uint64_t file_off;                    /* where its bytes start in that file */
};

struct strata_gguf;

/*
 * Map and validate the file `path`, alone (shard keys are metadata like any
 * other).  On success returns 0 and *out owns the file (release with
 * strata_gguf_close).  On failure logs one error that names the path (and
 * the offset for format errors) and returns a negative errno: -ENOENT
 * missing, -EISDIR a directory, -EINVAL malformed/truncated/empty, -ENOTSUP
 * unsupported version or tensor type id.
 */
int strata_gguf_open_one(const char *path, struct strata_gguf **out);

/*
 * Open a model: strata_gguf_open_one(), and when the file is one shard of a
 * model split the way llama.cpp's gguf-split writes them (metadata keys
 * split.no (0-based), split.count and split.tensors.count; file names
 * PREFIX-%05d-of-%05d.gguf numbered from 1), every shard: `path` may name any
 * of them.  The handle's metadata is the first shard's; its tensors are
 * those of all shards (each knows its file: tensor->file, ->file_off), and
 * all shards are mapped back to back in one range (strata_gguf_data_span).
 *
 * Besides open_one's errors, each logged once naming the file and the
 * reason, -EINVAL for: a shard whose name does not carry its number, a
 * missing shard (-ENOENT), a shard that is not GGUF, one whose split.no or
 * split.count disagrees with its name, a tensor in two shards, a total that
 * is not split.tensors.count.
 */
int strata_gguf_open(const char *path, struct strata_gguf **out);
void strata_gguf_close(struct strata_gguf *g);

/* Files of the model: 1, or its shard count. */
uint32_t strata_gguf_n_files(const struct strata_gguf *g);
/* Path of file i (i < n_files; NULL otherwise), owned by g. */
const char *strata_gguf_file_path(const struct strata_gguf *g, uint32_t i);
/*
 * The tensor data of every file as one range: from the first file's data
 * section to the end of the last file's mapping.  Every tensor's data lies
 * in it, so a weight is addressed by its offset from *base.
 */
void strata_gguf_data_span(const struct strata_gguf *g, const void **base, uint64_t *size);

/* The first file's path, size and data section: of a split model, shard 1's. */
const char *strata_gguf_path(const struct strata_gguf *g);
uint32_t strata_gguf_version(const struct strata_gguf *g);
uint64_t strata_gguf_file_size(const struct strata_gguf *g);
uint32_t strata_gguf_alignment(const struct strata_gguf *g);
/*
 * File offset where the tensor data section starts (tensor i's bytes are at
 * data_offset + tensor->offset): for readers that bypass the mapping, such as
 * direct I/O.
 */
uint64_t strata_gguf_data_offset(const struct strata_gguf *g);

/* ---- metadata ---- */
int64_t strata_gguf_n_kv(const struct strata_gguf *g);
/* Index of `key`, or -1 when absent. */
int64_t strata_gguf_find_key(const struct strata_gguf *g, const char *key);
struct strata_str strata_gguf_key(const struct strata_gguf *g, int64_t i);
/* (enum strata_gguf_vtype)-1 when i is out of range. */
enum strata_gguf_vtype strata_gguf_kv_type(const struct strata_gguf *g, int64_t i);
/* "u32", "str", "arr", ...; "?" for a value that is no type. */
const char *strata_gguf_vtype_name(enum strata_gguf_vtype t);

/*
 * Typed getters by key.  Return 0 on success, -ENOENT when the key is absent,
 * -EINVAL when the stored type cannot be represented (wrong type, negative
 * into unsigned, out of range).  Integer getters accept any integer type whose
 * value fits; get_f32 also accepts F64 and integers.
 */
int strata_gguf_get_u32(const struct strata_gguf *g, const char *key, uint32_t *out);
int strata_gguf_get_i64(const struct strata_gguf *g, const char *key, int64_t *out);
int strata_gguf_get_f32(const struct strata_gguf *g, const char *key, float *out);
int strata_gguf_get_bool(const struct strata_gguf *g, const char *key, int *out);
int strata_gguf_get_str(const struct strata_gguf *g, const char *key, struct strata_str *out);

/*
 * Arrays.  strata_gguf_get_arr() gives the element type and count; for
 * numeric element types *data points at the packed little-endian elements in
 * the mapping (possibly unaligned: read with memcpy).  For STRING arrays
 * *data is NULL; read elements with strata_gguf_arr_str().
 */
int strata_gguf_get_arr(const struct strata_gguf *g, const char *key,
			enum strata_gguf_vtype *elem_type, uint64_t *n,
			const void **data);
/*
 * strata_gguf_get_arr() by key index: -ENOENT out of range, -EINVAL not an
 * array.  Here and in get_arr any of the output pointers may be NULL.
 */
int strata_gguf_kv_arr(const struct strata_gguf *g, int64_t i,
		       enum strata_gguf_vtype *elem_type, uint64_t *n, const void **data);
/* Element i of the string array at key index `kv`; {NULL,0} when out of range. */
struct strata_str strata_gguf_arr_str(const struct strata_gguf *g, int64_t kv, uint64_t i);

/* Render the value at index i as text (arrays abbreviated) into buf. */
void strata_gguf_format_value(const struct strata_gguf *g, int64_t i, char *buf, size_t n);

/* ---- tensors ---- */
int64_t strata_gguf_n_tensors(const struct strata_gguf *g);
const struct strata_gguf_tensor *strata_gguf_tensor(const struct strata_gguf *g, int64_t i);
/* NULL when absent. */
const struct strata_gguf_tensor *strata_gguf_find_tensor(const struct strata_gguf *g,
							 const char *name);

/* Compare a strata_str with a C string. */
int strata_str_eq(struct strata_str a, const char *b);

/* ---- commands ---- */

/*
 * `strata info MODEL` (argv[0] = "info"): print the file's header, metadata
 * and tensor table to stdout.  Returns 0, 1 on error (already logged), 2 on
 * bad usage.
 */
int strata_cmd_info(int argc, char **argv);

#endif
