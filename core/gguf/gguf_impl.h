/*
 * gguf_impl.h - the GGUF handle's layout, shared by gguf.c (open/validate)
 * and gguf_meta.c (accessors).  Not a public header.
 */
#ifndef STRATA_GGUF_IMPL_H
#define STRATA_GGUF_IMPL_H

#include "gguf/gguf.h"

#include <stdint.h>
#include <string.h>

struct gguf_kv {
	struct strata_str key;
	uint32_t type;      /* enum strata_gguf_vtype */
	uint64_t voff;      /* file offset of the value (for arrays: first element) */
	uint32_t arr_type;  /* element type when type == ARRAY */
	uint64_t arr_n;     /* element count when type == ARRAY */
	uint64_t *str_off;  /* STRING arrays: file offset of each element's length */
};

/*
 * Open-addressing hash of names to indices; slots hold index + 1 (0 = empty).
 * Capacity is a power of two at least twice the entry count, so probes stay
 * short and a lookup always meets an empty slot.
 */
struct gguf_hash {
	uint64_t *slot;
	uint64_t mask;
};

/* The other files of a model split in shards (gguf_split.c); shard 0 is the handle. */
struct gguf_shards {
	uint32_t n;          /* files, >= 2 */
	char **path;         /* [n]; path[0] is the handle's own */
	uint64_t *size;      /* [n] file sizes */
	struct strata_vm_region *region; /* the reserved range the shards are mapped in */
	uint64_t region_size;
	uint8_t *base;       /* file 0's map; each file starts on a 2 MiB boundary */
	uint64_t span;       /* bytes from base to the end of the last file */
};

struct strata_gguf {
	char *path;
	const uint8_t *map;
	uint64_t size;
	int map_borrowed;   /* map lies in a region the split handle owns */
	struct gguf_shards *shards; /* NULL for a model in one file */
	uint32_t version;
	uint32_t alignment;
	uint64_t data_off;  /* start of the tensor data section */
	int64_t n_kv;
	int64_t n_tensors;
	struct gguf_kv *kv;
	struct strata_gguf_tensor *tensors;
	struct gguf_hash kv_hash;
	struct gguf_hash tensor_hash;
};

static inline uint64_t gguf_rd_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint32_t gguf_rd_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint16_t gguf_rd_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* Bytes of one scalar of type t; 0 for STRING, ARRAY and unknown types. */
uint32_t strata_gguf_scalar_size_(uint32_t t);

/* FNV-1a of a byte string: the hash both tables use. */
uint64_t strata_gguf_hash_bytes_(const char *s, uint64_t len);

/*
 * Find `name` in a table whose entries are the names given by `name_of`
 * (index -> strata_str).  Returns the index or -1.
 */
int64_t strata_gguf_hash_find_(const struct gguf_hash *h, const char *s, uint64_t len,
			       struct strata_str (*name_of)(const struct strata_gguf *, uint64_t),
			       const struct strata_gguf *g);

/*
 * Parse and validate the file mapped at g->map (g->size bytes); g->path names
 * it in messages.  0 or -errno after one logged error.  Tensors get file = 0
 * and file_off = their offset in that file.
 */
int strata_gguf_parse_(struct strata_gguf *g);

/* A handle for `path` over memory the caller maps (map_borrowed = 1); NULL on ENOMEM. */
struct strata_gguf *strata_gguf_alloc_(const char *path);

/* Rebuild g->tensor_hash over g->tensors[0..n_tensors): -EINVAL on a duplicate (not logged), *dup_a/b its indices. */
int strata_gguf_rehash_tensors_(struct strata_gguf *g, int64_t *dup_a, int64_t *dup_b);

/* Unmap the region, free the paths and s (gguf_split.c). */
void strata_gguf_shards_free_(struct gguf_shards *s);

struct strata_str strata_gguf_kv_name_(const struct strata_gguf *g, uint64_t i);
struct strata_str strata_gguf_tensor_name_(const struct strata_gguf *g, uint64_t i);

#endif
