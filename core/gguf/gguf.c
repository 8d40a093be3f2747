/*
 * gguf.c - map a GGUF file and validate all of it before anyone reads it.
 *
 * Every read goes through need(), which compares against the bytes left in
 * the file, so a truncated or hostile file is refused with the offset of the
 * first thing that does not fit instead of being read past the mapping.
 * Counts are bounded by the smallest encoding of what they count before any
 * allocation, so a header claiming 10^15 tensors fails at once.
 */
#include "gguf/gguf_impl.h"

#include "cpu/types.h"
#include "plat/plat.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Smallest encodings: key length + type + a one-byte value... */
#define GGUF_MIN_KV_BYTES 13u
/* ...and name length + n_dims + one dimension + type + offset. */
#define GGUF_MIN_TENSOR_BYTES 32u
#define GGUF_DEFAULT_ALIGNMENT 32u

struct rd {
	struct strata_gguf *g;
	uint64_t pos;
	char ctx[128]; /* what is being read, for messages: "tensor 'x'" */
};

static void set_ctx(struct rd *r, const char *kind, struct strata_str name)
{
	size_t n = (size_t)snprintf(r->ctx, sizeof(r->ctx), "%s '", kind);
	uint64_t i;

	/* Names come from the file: keep messages printable and short. */
	for (i = 0; i < name.len && n + 5 < sizeof(r->ctx); i++) {
		unsigned char c = (unsigned char)name.s[i];

		r->ctx[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	if (i < name.len) {
		memcpy(r->ctx + n, "...", 3);
		n += 3;
	}
	r->ctx[n++] = '\'';
	r->ctx[n] = 0;
}

static int truncated(const struct rd *r, const char *what)
{
	const struct strata_gguf *g = r->g;

	strata_error("%s: truncated: %s%s%s at offset %" PRIu64
		     " runs past end of file (size %" PRIu64 ")",
		     g->path, r->ctx, r->ctx[0] ? ": " : "", what, r->pos, g->size);
	return -EINVAL;
}

static int need(const struct rd *r, uint64_t n, const char *what)
{
	return n <= r->g->size - r->pos ? 0 : truncated(r, what);
}

static int rd_u32(struct rd *r, const char *what, uint32_t *v)
{
	int rc = need(r, 4, what);

	if (rc)
		return rc;
	*v = gguf_rd_u32(r->g->map + r->pos);
	r->pos += 4;
	return 0;
}

static int rd_u64(struct rd *r, const char *what, uint64_t *v)
{
	int rc = need(r, 8, what);

	if (rc)
		return rc;
	*v = gguf_rd_u64(r->g->map + r->pos);
	r->pos += 8;
	return 0;
}

/*
 * A length-prefixed string; `what` names it in messages ("key", "name").
 * Messages are formatted only on failure: vocabularies hold 10^5 strings.
 */
static int rd_str(struct rd *r, const char *what, struct strata_str *s)
{
	uint64_t left = r->g->size - r->pos, len;
	char desc[96];

	if (left < 8) {
		snprintf(desc, sizeof(desc), "length of %s string", what);
		return truncated(r, desc);
	}
	len = gguf_rd_u64(r->g->map + r->pos);
	if (len > left - 8) {
		snprintf(desc, sizeof(desc), "%s string of %" PRIu64 " bytes", what, len);
		return truncated(r, desc);
	}
	s->s = (const char *)r->g->map + r->pos + 8;
	s->len = len;
	r->pos += 8 + len;
	return 0;
}

static int oom(const struct strata_gguf *g)
{
	strata_error("%s: out of memory while indexing the file", g->path);
	return -ENOMEM;
}

static int hash_init(struct strata_gguf *g, struct gguf_hash *h, uint64_t n)
{
	uint64_t cap = 16;

	while (cap < 2 * n)
		cap <<= 1;
	h->slot = calloc(cap, sizeof(*h->slot));
	if (!h->slot)
		return oom(g);
	h->mask = cap - 1;
	return 0;
}

/* Insert index i under `name`; returns the earlier index on a duplicate, else -1. */
static int64_t hash_insert(struct gguf_hash *h, struct strata_str name, uint64_t i,
			   struct strata_str (*name_of)(const struct strata_gguf *, uint64_t),
			   const struct strata_gguf *g)
{
	int64_t dup = strata_gguf_hash_find_(h, name.s, name.len, name_of, g);
	uint64_t k = strata_gguf_hash_bytes_(name.s, name.len) & h->mask;

	if (dup >= 0)
		return dup;
	while (h->slot[k])
		k = (k + 1) & h->mask;
	h->slot[k] = i + 1;
	return -1;
}

static int parse_header(struct rd *r, uint64_t *n_tensors, uint64_t *n_kv)
{
	struct strata_gguf *g = r->g;
	const uint8_t *m = g->map;
	uint64_t rem;
	uint32_t v;
	int rc;

	if ((rc = need(r, 4, "magic")))
		return rc;
	if (memcmp(m, "GGUF", 4) != 0) {
		strata_error("%s: not a GGUF file (starts with %02x %02x %02x %02x, "
			     "expected \"GGUF\")", g->path, m[0], m[1], m[2], m[3]);
		return -EINVAL;
	}
	r->pos = 4;
	if ((rc = rd_u32(r, "version", &v)))
		return rc;
	if (v == 1) {
		strata_error("%s: GGUF version 1 is not supported (strata reads versions 2 "
			     "and 3; re-convert the model with a current converter)", g->path);
		return -ENOTSUP;
	}
	if ((v & 0xffff) == 0 && (v >> 24) >= 1 && (v >> 24) <= 3) {
		strata_error("%s: big-endian GGUF file (version %u byte-swapped) is not "
			     "supported", g->path, v >> 24);
		return -ENOTSUP;
	}
	if (v != 2 && v != 3) {
		strata_error("%s: unsupported GGUF version %u (strata reads versions 2 and 3)",
			     g->path, v);
		return -ENOTSUP;
	}
	g->version = v;
	if ((rc = rd_u64(r, "tensor count", n_tensors)) ||
	    (rc = rd_u64(r, "metadata count", n_kv)))
		return rc;

	rem = g->size - r->pos;
	if (*n_kv > rem / GGUF_MIN_KV_BYTES) {
		strata_error("%s: truncated or corrupt: %" PRIu64 " metadata entries cannot "
			     "fit in the %" PRIu64 " bytes after the header (offset 16)",
			     g->path, *n_kv, rem);
		return -EINVAL;
	}
	rem -= *n_kv * GGUF_MIN_KV_BYTES;
	if (*n_tensors > rem / GGUF_MIN_TENSOR_BYTES) {
		strata_error("%s: truncated or corrupt: %" PRIu64 " tensors cannot fit in "
			     "the %" PRIu64 " bytes after the header (offset 8)",
			     g->path, *n_tensors, g->size - r->pos);
		return -EINVAL;
	}
	return 0;
}

static const char *vtype_name(uint32_t t)
{
	return strata_gguf_vtype_name((enum strata_gguf_vtype)t);
}

static int parse_array(struct rd *r, struct gguf_kv *kv, uint64_t at)
{
	struct strata_gguf *g = r->g;
	char desc[96];
	uint64_t n, bytes;
	uint32_t et, esz;
	int rc;

	if ((rc = rd_u32(r, "array element type", &et)) ||
	    (rc = rd_u64(r, "array length", &n)))
		return rc;
	kv->arr_type = et;
	kv->arr_n = n;
	kv->voff = r->pos;
	if (et == STRATA_GGUF_ARRAY) {
		strata_error("%s: %s at offset %" PRIu64 " is an array of arrays, which "
			     "strata does not support", g->path, r->ctx, at);
		return -ENOTSUP;
	}
	if (et == STRATA_GGUF_STRING) {
		/* Each element needs at least its 8-byte length. */
		if (n > (g->size - r->pos) / 8) {
			snprintf(desc, sizeof(desc), "array of %" PRIu64 " strings", n);
			return truncated(r, desc);
		}
		kv->str_off = malloc((n ? n : 1) * sizeof(*kv->str_off));
		if (!kv->str_off)
			return oom(g);
		for (uint64_t j = 0; j < n; j++) {
			struct strata_str s;

			kv->str_off[j] = r->pos;
			if ((rc = rd_str(r, "array element", &s))) {
				/* close() frees only completed entries */
				free(kv->str_off);
				kv->str_off = NULL;
				return rc;
			}
		}
		return 0;
	}
	esz = strata_gguf_scalar_size_(et);
	if (esz == 0) {
		strata_error("%s: %s at offset %" PRIu64 " is an array of unknown value type "
			     "%u", g->path, r->ctx, at, et);
		return -EINVAL;
	}
	if (__builtin_mul_overflow(n, (uint64_t)esz, &bytes) || bytes > g->size - r->pos) {
		snprintf(desc, sizeof(desc), "array of %" PRIu64 " %s values", n,
			 vtype_name(et));
		return truncated(r, desc);
	}
	r->pos += bytes;
	return 0;
}

static int parse_kv(struct rd *r, uint64_t i)
{
	struct strata_gguf *g = r->g;
	struct gguf_kv *kv = &g->kv[i];
	uint64_t at = r->pos;
	int64_t dup;
	uint32_t sz;
	int rc;

	snprintf(r->ctx, sizeof(r->ctx), "metadata entry %" PRIu64, i);
	if ((rc = rd_str(r, "key", &kv->key)))
		return rc;
	set_ctx(r, "metadata", kv->key);
	if ((rc = rd_u32(r, "value type", &kv->type)))
		return rc;
	if (kv->type == STRATA_GGUF_ARRAY) {
		rc = parse_array(r, kv, at);
	} else if (kv->type == STRATA_GGUF_STRING) {
		struct strata_str s;

		kv->voff = r->pos;
		rc = rd_str(r, "value", &s);
	} else if ((sz = strata_gguf_scalar_size_(kv->type)) != 0) {
		kv->voff = r->pos;
		rc = need(r, sz, "value");
		r->pos += rc ? 0 : sz;
	} else {
		strata_error("%s: %s at offset %" PRIu64 " has unknown value type %u",
			     g->path, r->ctx, at, kv->type);
		return -EINVAL;
	}
	if (rc)
		return rc;
	g->n_kv = (int64_t)i + 1; /* so hash probes and close() see this entry */
	dup = hash_insert(&g->kv_hash, kv->key, i, strata_gguf_kv_name_, g);
	if (dup >= 0) {
		strata_error("%s: duplicate %s at offset %" PRIu64 " (entries %" PRId64
			     " and %" PRIu64 ")", g->path, r->ctx, at, dup, i);
		return -EINVAL;
	}
	return 0;
}

static int check_dims(struct rd *r, struct strata_gguf_tensor *t, uint64_t at)
{
	const char *path = r->g->path;
	int64_t count = 1;
	uint64_t d;
	int rc;

	if (t->n_dims < 1 || t->n_dims > STRATA_GGUF_MAX_DIMS) {
		strata_error("%s: %s at offset %" PRIu64 " has %u dimensions (strata "
			     "supports 1 to %d)", path, r->ctx, at, t->n_dims,
			     STRATA_GGUF_MAX_DIMS);
		return -EINVAL;
	}
	for (uint32_t k = 0; k < STRATA_GGUF_MAX_DIMS; k++)
		t->ne[k] = 1;
	for (uint32_t k = 0; k < t->n_dims; k++) {
		if ((rc = rd_u64(r, "dimension", &d)))
			return rc;
		if (d == 0 || d > INT64_MAX) {
			strata_error("%s: %s at offset %" PRIu64 " has dimension %u = %" PRIu64
				     " (must be at least 1 and fit int64)", path, r->ctx, at,
				     k, d);
			return -EINVAL;
		}
		t->ne[k] = (int64_t)d;
		if (__builtin_mul_overflow(count, t->ne[k], &count)) {
			strata_error("%s: %s at offset %" PRIu64 " has an element count that "
				     "overflows int64", path, r->ctx, at);
			return -EINVAL;
		}
	}
	return 0;
}

static int check_type(struct rd *r, struct strata_gguf_tensor *t, uint64_t at)
{
	const char *path = r->g->path;
	uint32_t blk = strata_type_block(t->type);
	uint64_t size;

	if (blk == 0) {
		strata_error("%s: %s at offset %" PRIu64 " has unsupported type id %u",
			     path, r->ctx, at, t->type);
		return -ENOTSUP;
	}
	if (t->ne[0] % blk) {
		strata_error("%s: %s at offset %" PRIu64 " has row length %" PRId64
			     ", not a multiple of the %s block size %u", path, r->ctx, at,
			     t->ne[0], strata_type_name(t->type), blk);
		return -EINVAL;
	}
	size = (uint64_t)(t->ne[0] / blk) * strata_type_block_bytes(t->type);
	for (uint32_t k = 1; k < STRATA_GGUF_MAX_DIMS; k++) {
		if (__builtin_mul_overflow(size, (uint64_t)t->ne[k], &size)) {
			strata_error("%s: %s at offset %" PRIu64 " has a byte size that "
				     "overflows 64 bits", path, r->ctx, at);
			return -EINVAL;
		}
	}
	t->size = size;
	return 0;
}

static int parse_tensor(struct rd *r, uint64_t i)
{
	struct strata_gguf *g = r->g;
	struct strata_gguf_tensor *t = &g->tensors[i];
	uint64_t at = r->pos;
	int64_t dup;
	int rc;

	snprintf(r->ctx, sizeof(r->ctx), "tensor %" PRIu64, i);
	if ((rc = rd_str(r, "name", &t->name)))
		return rc;
	set_ctx(r, "tensor", t->name);
	if ((rc = rd_u32(r, "dimension count", &t->n_dims)) ||
	    (rc = check_dims(r, t, at)) ||
	    (rc = rd_u32(r, "type", &t->type)) ||
	    (rc = rd_u64(r, "data offset", &t->offset)) ||
	    (rc = check_type(r, t, at)))
		return rc;
	g->n_tensors = (int64_t)i + 1;
	dup = hash_insert(&g->tensor_hash, t->name, i, strata_gguf_tensor_name_, g);
	if (dup >= 0) {
		strata_error("%s: duplicate %s at offset %" PRIu64 " (tensors %" PRId64
			     " and %" PRIu64 ")", g->path, r->ctx, at, dup, i);
		return -EINVAL;
	}
	return 0;
}

static int read_alignment(struct strata_gguf *g)
{
	int64_t i = strata_gguf_find_key(g, "general.alignment");
	uint32_t a;

	g->alignment = GGUF_DEFAULT_ALIGNMENT;
	if (i < 0)
		return 0;
	if (strata_gguf_get_u32(g, "general.alignment", &a) != 0 || a == 0 || (a & (a - 1))) {
		char v[64];

		strata_gguf_format_value(g, i, v, sizeof(v));
		strata_error("%s: general.alignment (%s %s, offset %" PRIu64 ") must be a "
			     "power of two that fits u32", g->path,
			     vtype_name(g->kv[i].type), v, g->kv[i].voff);
		return -EINVAL;
	}
	g->alignment = a;
	return 0;
}

/* Place every tensor in the data section and check it lies inside the file. */
static int place_tensors(struct strata_gguf *g, uint64_t header_end)
{
	uint64_t a = g->alignment, end;

	if (__builtin_add_overflow(header_end, a - 1, &g->data_off)) {
		strata_error("%s: data section start overflows", g->path);
		return -EINVAL;
	}
	g->data_off -= g->data_off % a;
	for (int64_t i = 0; i < g->n_tensors; i++) {
		struct strata_gguf_tensor *t = &g->tensors[i];
		struct rd r = { .g = g };

		set_ctx(&r, "tensor", t->name);
		if (t->offset % a) {
			strata_error("%s: %s has data offset %" PRIu64 " (file offset %" PRIu64
				     "), not a multiple of the alignment %u", g->path, r.ctx,
				     t->offset, g->data_off + t->offset, g->alignment);
			return -EINVAL;
		}
		if (__builtin_add_overflow(g->data_off, t->offset, &end) ||
		    __builtin_add_overflow(end, t->size, &end) || end > g->size) {
			strata_error("%s: truncated: data of %s (%" PRIu64 " bytes at offset "
				     "%" PRIu64 " + %" PRIu64 ") runs past end of file (size "
				     "%" PRIu64 ")", g->path, r.ctx, t->size, g->data_off,
				     t->offset, g->size);
			return -EINVAL;
		}
		t->data = g->map + g->data_off + t->offset;
		t->file = 0;
		t->file_off = g->data_off + t->offset;
	}
	return 0;
}

int strata_gguf_parse_(struct strata_gguf *g)
{
	struct rd r = { .g = g };
	uint64_t n_tensors, n_kv;
	int rc;

	if ((rc = parse_header(&r, &n_tensors, &n_kv)))
		return rc;
	g->kv = calloc(n_kv ? n_kv : 1, sizeof(*g->kv));
	g->tensors = calloc(n_tensors ? n_tensors : 1, sizeof(*g->tensors));
	if (!g->kv || !g->tensors)
		return oom(g);
	if ((rc = hash_init(g, &g->kv_hash, n_kv)) ||
	    (rc = hash_init(g, &g->tensor_hash, n_tensors)))
		return rc;
	for (uint64_t i = 0; i < n_kv; i++)
		if ((rc = parse_kv(&r, i)))
			return rc;
	for (uint64_t i = 0; i < n_tensors; i++)
		if ((rc = parse_tensor(&r, i)))
			return rc;
	if ((rc = read_alignment(g)))
		return rc;
	return place_tensors(g, r.pos);
}

static int map_file(struct strata_gguf *g, const char *path)
{
	struct stat st;
	void *m;
	int fd, e;

	/* stat first: opening a FIFO for reading would block. */
	e = stat(path, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
	if (e) {
		strata_error("cannot open %s: %s", path, strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		strata_error("cannot open %s: not a regular file", path);
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		e = errno;
		strata_error("cannot open %s: %s", path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	if (st.st_size == 0 || (uint64_t)st.st_size > SIZE_MAX) {
		close(fd);
		strata_error("%s: %s", path, st.st_size ? "file too large to map" : "empty file");
		return st.st_size ? -EFBIG : -EINVAL;
	}
	e = -strata_map_file(fd, (uint64_t)st.st_size, 0, &m);
	close(fd);
	if (e) {
		strata_error("cannot map %s: %s", path, strerror(e));
		return -e;
	}
	g->map = m;
	g->size = (uint64_t)st.st_size;
	return 0;
}

struct strata_gguf *strata_gguf_alloc_(const char *path)
{
	struct strata_gguf *g = calloc(1, sizeof(*g));

	if (!g || !(g->path = strdup(path))) {
		free(g);
		return NULL;
	}
	return g;
}

int strata_gguf_rehash_tensors_(struct strata_gguf *g, int64_t *dup_a, int64_t *dup_b)
{
	int rc;

	free(g->tensor_hash.slot);
	g->tensor_hash.slot = NULL;
	if ((rc = hash_init(g, &g->tensor_hash, (uint64_t)g->n_tensors)))
		return rc;
	for (int64_t i = 0; i < g->n_tensors; i++) {
		int64_t dup = hash_insert(&g->tensor_hash, g->tensors[i].name, (uint64_t)i,
					  strata_gguf_tensor_name_, g);

		if (dup >= 0) {
			*dup_a = dup;
			*dup_b = i;
			return -EINVAL;
		}
	}
	return 0;
}

int strata_gguf_open_one(const char *path, struct strata_gguf **out)
{
	struct strata_gguf *g;
	int rc;

	*out = NULL;
	if (!path) {
		strata_error("no GGUF path given");
		return -EINVAL;
	}
	g = strata_gguf_alloc_(path);
	if (!g) {
		strata_error("%s: out of memory", path);
		return -ENOMEM;
	}
	rc = map_file(g, path);
	if (rc == 0)
		rc = strata_gguf_parse_(g);
	if (rc) {
		strata_gguf_close(g);
		return rc;
	}
	*out = g;
	return 0;
}

void strata_gguf_close(struct strata_gguf *g)
{
	if (!g)
		return;
	if (g->kv)
		for (int64_t i = 0; i < g->n_kv; i++)
			free(g->kv[i].str_off);
	free(g->kv);
	free(g->tensors);
	free(g->kv_hash.slot);
	free(g->tensor_hash.slot);
	if (g->map && !g->map_borrowed)
		strata_unmap_file((void *)g->map, g->size);
	if (g->shards)
		strata_gguf_shards_free_(g->shards);
	free(g->path);
	free(g);
}
