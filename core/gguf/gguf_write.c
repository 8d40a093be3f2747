/*
 * gguf_write.c - the streaming GGUF v3 writer (see gguf_write.h).
 *
 * Values are encoded little-endian as they are set, so writing the header is
 * a concatenation; tensor data goes through one output buffer, big pieces
 * straight to the file.
 */
#include "gguf/gguf_write.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu/types.h"
#include "gguf/gguf_impl.h"
#include "util/log.h"
#include "util/strbuf.h"

#define GGUF_VERSION 3
#define DEFAULT_ALIGNMENT 32
#define OUT_BUF (4u << 20)

struct wkv {
	char *key;
	size_t key_len;
	uint32_t type;
	struct strata_buf val; /* the encoded value (for arrays: element type, count, elements) */
};

struct wtensor {
	char *name;
	uint32_t type, n_dims;
	int64_t ne[STRATA_GGUF_MAX_DIMS];
	uint64_t size, offset;
};

struct strata_gguf_writer {
	char *path, *tmp;
	int fd;
	int err;          /* sticky negative errno after an I/O error */
	int header_done, committed;
	uint32_t alignment;
	struct wkv *kv;
	size_t n_kv, cap_kv;
	struct wtensor *t;
	size_t n_t, cap_t;
	uint8_t *buf;     /* output buffer, OUT_BUF bytes */
	size_t buf_len;
	uint64_t data_total, data_done;
	size_t cur;       /* tensor receiving data */
	uint64_t cur_done;
};

/* ---- encoding ---- */

/* The encoders return 0 or -ENOMEM (the builder's oom). */
static int bytes_put(struct strata_buf *b, const void *p, size_t n)
{
	strata_buf_add(b, p, n);
	return b->oom ? -ENOMEM : 0;
}

/* `count` host scalars of `size` bytes each, stored little-endian. */
static int bytes_put_le(struct strata_buf *b, const void *src, size_t size, uint64_t count)
{
	const uint8_t *s = src;
	int rc;

	if (count == 0)
		return 0; /* src may be NULL: memcpy must not see it */
	if (count > SIZE_MAX / (size ? size : 1))
		return -ENOMEM;
	rc = strata_buf_reserve(b, size * count);
	if (rc)
		return rc;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(b->p + b->len, s, size * count);
#else
	for (uint64_t i = 0; i < count; i++)
		for (size_t j = 0; j < size; j++)
			b->p[b->len + i * size + j] = (char)s[i * size + size - 1 - j];
#endif
	b->len += size * count;
	b->p[b->len] = 0;
	return 0;
}

static int bytes_u32(struct strata_buf *b, uint32_t v)
{
	return bytes_put_le(b, &v, 4, 1);
}

static int bytes_u64(struct strata_buf *b, uint64_t v)
{
	return bytes_put_le(b, &v, 8, 1);
}

static int bytes_str(struct strata_buf *b, const char *s, uint64_t len)
{
	int rc = bytes_u64(b, len);

	return rc ? rc : bytes_put(b, s, (size_t)len);
}

/* ---- file output ---- */

static int fail_io(struct strata_gguf_writer *w, int e, const char *what)
{
	strata_error("cannot write %s: %s: %s", w->path, what, strerror(e));
	w->err = -e;
	return w->err;
}

static int write_all(struct strata_gguf_writer *w, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = write(w->fd, p, n > (1u << 30) ? (1u << 30) : n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return fail_io(w, errno, "write failed");
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int flush(struct strata_gguf_writer *w)
{
	int rc = write_all(w, w->buf, w->buf_len);

	w->buf_len = 0;
	return rc;
}

static int out(struct strata_gguf_writer *w, const void *p, size_t n)
{
	int rc;

	if (w->buf_len + n > OUT_BUF && (rc = flush(w)))
		return rc;
	if (n >= OUT_BUF)
		return write_all(w, p, n);
	memcpy(w->buf + w->buf_len, p, n);
	w->buf_len += n;
	return 0;
}

static int out_zeros(struct strata_gguf_writer *w, size_t n)
{
	static const uint8_t zero[256];
	int rc = 0;

	while (n && !rc) {
		size_t k = n < sizeof(zero) ? n : sizeof(zero);

		rc = out(w, zero, k);
		n -= k;
	}
	return rc;
}

static uint64_t pad_to(uint64_t n, uint64_t a)
{
	return (n + a - 1) / a * a;
}

/* ---- open / close ---- */

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);

	if (p)
		memcpy(p, s, n);
	return p;
}

static int create_tmp(struct strata_gguf_writer *w)
{
	size_t n = strlen(w->path) + 48;

	w->tmp = malloc(n);
	if (!w->tmp)
		return -ENOMEM;
	for (int attempt = 0; attempt < 100; attempt++) {
		if (attempt == 0)
			snprintf(w->tmp, n, "%s.tmp-%ld", w->path, (long)getpid());
		else
			snprintf(w->tmp, n, "%s.tmp-%ld-%d", w->path, (long)getpid(), attempt);
		w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (w->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	{
		int e = errno;

		strata_error("cannot write %s: %s", w->path, strerror(e));
		return -e;
	}
}

int strata_gguf_writer_open(const char *path, struct strata_gguf_writer **out_w)
{
	struct strata_gguf_writer *w;
	struct stat st;
	int rc;

	*out_w = NULL;
	if (!path || !*path) {
		strata_error("no output path given for the GGUF file");
		return -EINVAL;
	}
	/* Renaming over a directory or a device (as root: /dev/null) must not happen. */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		int e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;

		strata_error("cannot write %s: %s", path,
			     e == EISDIR ? strerror(e) : "not a regular file");
		return -e;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->alignment = DEFAULT_ALIGNMENT;
	w->path = xstrdup(path);
	w->buf = malloc(OUT_BUF);
	if (!w->path || !w->buf) {
		strata_error("%s: out of memory", path);
		strata_gguf_writer_close(w);
		return -ENOMEM;
	}
	rc = create_tmp(w);
	if (rc) {
		free(w->tmp);
		w->tmp = NULL; /* nothing to unlink */
		strata_gguf_writer_close(w);
		return rc;
	}
	*out_w = w;
	return 0;
}

void strata_gguf_writer_close(struct strata_gguf_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->tmp && !w->committed)
		unlink(w->tmp);
	for (size_t i = 0; i < w->n_kv; i++) {
		free(w->kv[i].key);
		strata_buf_free(&w->kv[i].val);
	}
	for (size_t i = 0; i < w->n_t; i++)
		free(w->t[i].name);
	free(w->kv);
	free(w->t);
	free(w->buf);
	free(w->tmp);
	free(w->path);
	free(w);
}

const char *strata_gguf_writer_path(const struct strata_gguf_writer *w)
{
	return w->path;
}

const char *strata_gguf_writer_tmp_path(const struct strata_gguf_writer *w)
{
	return w->tmp;
}

/* ---- metadata ---- */

/* Common entry checks; -EINVAL logged when metadata can no longer change. */
static int can_declare(struct strata_gguf_writer *w, const char *what)
{
	if (w->err)
		return w->err;
	if (w->header_done || w->committed) {
		strata_error("%s: %s declared after the tensor data started", w->path, what);
		return -EINVAL;
	}
	return 0;
}

/* The entry for key (created empty at the end when new), or NULL. */
static struct wkv *kv_slot(struct strata_gguf_writer *w, const char *key, size_t len, int *rc)
{
	struct wkv *kv;

	*rc = can_declare(w, "metadata");
	if (*rc)
		return NULL;
	if (len == 0) {
		strata_error("%s: empty metadata key", w->path);
		*rc = -EINVAL;
		return NULL;
	}
	for (size_t i = 0; i < w->n_kv; i++)
		if (w->kv[i].key_len == len && memcmp(w->kv[i].key, key, len) == 0) {
			strata_buf_free(&w->kv[i].val);
			return &w->kv[i];
		}
	if (w->n_kv == w->cap_kv) {
		size_t cap = w->cap_kv ? 2 * w->cap_kv : 32;
		struct wkv *p = realloc(w->kv, cap * sizeof(*p));

		if (!p)
			goto oom;
		w->kv = p;
		w->cap_kv = cap;
	}
	kv = &w->kv[w->n_kv];
	memset(kv, 0, sizeof(*kv));
	kv->key = malloc(len + 1);
	if (!kv->key)
		goto oom;
	memcpy(kv->key, key, len);
	kv->key[len] = 0;
	kv->key_len = len;
	w->n_kv++;
	return kv;
oom:
	strata_error("%s: out of memory for metadata", w->path);
	*rc = -ENOMEM;
	return NULL;
}

static int kv_done(struct strata_gguf_writer *w, struct wkv *kv, uint32_t type, int rc)
{
	kv->type = type;
	if (rc) {
		/* The entry is now half-encoded: the file can no longer be written. */
		strata_error("%s: out of memory for metadata '%s'", w->path, kv->key);
		w->err = rc;
	}
	return rc;
}

static int scalar_type_ok(struct strata_gguf_writer *w, const char *key, uint32_t t)
{
	if (strata_gguf_scalar_size_(t) == 0) {
		strata_error("%s: metadata '%s': value type %u is not a scalar type", w->path,
			     key, t);
		return -EINVAL;
	}
	return 0;
}

int strata_gguf_writer_set(struct strata_gguf_writer *w, const char *key,
			   enum strata_gguf_vtype t, const void *value)
{
	struct wkv *kv;
	int rc = scalar_type_ok(w, key, t);

	if (rc || !(kv = kv_slot(w, key, strlen(key), &rc)))
		return rc;
	if (t == STRATA_GGUF_BOOL) {
		uint8_t b = *(const uint8_t *)value != 0;

		return kv_done(w, kv, t, bytes_put(&kv->val, &b, 1));
	}
	return kv_done(w, kv, t, bytes_put_le(&kv->val, value, strata_gguf_scalar_size_(t), 1));
}

int strata_gguf_writer_set_u32(struct strata_gguf_writer *w, const char *key, uint32_t v)
{
	return strata_gguf_writer_set(w, key, STRATA_GGUF_U32, &v);
}

int strata_gguf_writer_set_i32(struct strata_gguf_writer *w, const char *key, int32_t v)
{
	return strata_gguf_writer_set(w, key, STRATA_GGUF_I32, &v);
}

int strata_gguf_writer_set_u64(struct strata_gguf_writer *w, const char *key, uint64_t v)
{
	return strata_gguf_writer_set(w, key, STRATA_GGUF_U64, &v);
}

int strata_gguf_writer_set_f32(struct strata_gguf_writer *w, const char *key, float v)
{
	return strata_gguf_writer_set(w, key, STRATA_GGUF_F32, &v);
}

int strata_gguf_writer_set_bool(struct strata_gguf_writer *w, const char *key, int v)
{
	uint8_t b = v != 0;

	return strata_gguf_writer_set(w, key, STRATA_GGUF_BOOL, &b);
}

int strata_gguf_writer_set_strn(struct strata_gguf_writer *w, const char *key, const char *s,
				uint64_t len)
{
	struct wkv *kv;
	int rc;

	if (!(kv = kv_slot(w, key, strlen(key), &rc)))
		return rc;
	return kv_done(w, kv, STRATA_GGUF_STRING, bytes_str(&kv->val, s, len));
}

int strata_gguf_writer_set_str(struct strata_gguf_writer *w, const char *key, const char *s)
{
	return strata_gguf_writer_set_strn(w, key, s, strlen(s));
}

int strata_gguf_writer_set_arr(struct strata_gguf_writer *w, const char *key,
			       enum strata_gguf_vtype elem_type, uint64_t n, const void *elems)
{
	uint32_t esz = strata_gguf_scalar_size_(elem_type);
	struct wkv *kv;
	int rc = scalar_type_ok(w, key, elem_type);

	if (rc || !(kv = kv_slot(w, key, strlen(key), &rc)))
		return rc;
	rc = bytes_u32(&kv->val, elem_type);
	if (!rc)
		rc = bytes_u64(&kv->val, n);
	if (!rc && elem_type == STRATA_GGUF_BOOL) {
		for (uint64_t i = 0; i < n && !rc; i++) {
			uint8_t b = ((const uint8_t *)elems)[i] != 0;

			rc = bytes_put(&kv->val, &b, 1);
		}
	} else if (!rc) {
		rc = bytes_put_le(&kv->val, elems, esz, n);
	}
	return kv_done(w, kv, STRATA_GGUF_ARRAY, rc);
}

int strata_gguf_writer_set_arr_str(struct strata_gguf_writer *w, const char *key, uint64_t n,
				   const char *const *strs, const uint64_t *lens)
{
	struct wkv *kv;
	int rc;

	if (!(kv = kv_slot(w, key, strlen(key), &rc)))
		return rc;
	rc = bytes_u32(&kv->val, STRATA_GGUF_STRING);
	if (!rc)
		rc = bytes_u64(&kv->val, n);
	for (uint64_t i = 0; i < n && !rc; i++)
		rc = bytes_str(&kv->val, strs[i], lens ? lens[i] : strlen(strs[i]));
	return kv_done(w, kv, STRATA_GGUF_ARRAY, rc);
}

/* The encoded bytes of src's entry i, copied from its mapping. */
static int copy_value(struct strata_buf *b, const struct strata_gguf *src, const struct gguf_kv *kv)
{
	const uint8_t *v = src->map + kv->voff;
	uint64_t last, end;
	int rc;

	switch (kv->type) {
	case STRATA_GGUF_STRING:
		return bytes_put(b, v, 8 + (size_t)gguf_rd_u64(v));
	case STRATA_GGUF_ARRAY:
		if ((rc = bytes_u32(b, kv->arr_type)) || (rc = bytes_u64(b, kv->arr_n)))
			return rc;
		if (kv->arr_type != STRATA_GGUF_STRING)
			return bytes_put(b, v, (size_t)(kv->arr_n *
						strata_gguf_scalar_size_(kv->arr_type)));
		if (kv->arr_n == 0)
			return 0;
		/* The elements are contiguous in the file: copy them in one piece. */
		last = kv->str_off[kv->arr_n - 1];
		end = last + 8 + gguf_rd_u64(src->map + last);
		return bytes_put(b, src->map + kv->str_off[0], (size_t)(end - kv->str_off[0]));
	default:
		return bytes_put(b, v, strata_gguf_scalar_size_(kv->type));
	}
}

int strata_gguf_writer_copy_kv(struct strata_gguf_writer *w, const struct strata_gguf *src,
			       int64_t i)
{
	struct wkv *kv;
	int rc;

	if (i < 0 || i >= src->n_kv) {
		strata_error("%s: metadata entry %" PRId64 " of %s does not exist", w->path, i,
			     src->path);
		return -EINVAL;
	}
	if (!(kv = kv_slot(w, src->kv[i].key.s, (size_t)src->kv[i].key.len, &rc)))
		return rc;
	return kv_done(w, kv, src->kv[i].type, copy_value(&kv->val, src, &src->kv[i]));
}

/* ---- tensors ---- */

static int64_t tensor_slot(struct strata_gguf_writer *w, const char *name, uint32_t n_dims,
			   const int64_t *ne)
{
	size_t len = strlen(name);
	struct wtensor *t;
	int rc = can_declare(w, "tensor");

	if (rc)
		return rc;
	if (len == 0 || len > STRATA_GGUF_MAX_NAME) {
		strata_error("%s: tensor name '%s' must have 1 to %d bytes", w->path, name,
			     STRATA_GGUF_MAX_NAME);
		return -EINVAL;
	}
	if (n_dims < 1 || n_dims > STRATA_GGUF_MAX_DIMS) {
		strata_error("%s: tensor '%s' has %u dimensions (GGUF allows 1 to %d)", w->path,
			     name, n_dims, STRATA_GGUF_MAX_DIMS);
		return -EINVAL;
	}
	for (size_t i = 0; i < w->n_t; i++)
		if (strcmp(w->t[i].name, name) == 0) {
			strata_error("%s: duplicate tensor '%s'", w->path, name);
			return -EINVAL;
		}
	if (w->n_t == w->cap_t) {
		size_t cap = w->cap_t ? 2 * w->cap_t : 64;
		struct wtensor *p = realloc(w->t, cap * sizeof(*p));

		if (!p)
			goto oom;
		w->t = p;
		w->cap_t = cap;
	}
	t = &w->t[w->n_t];
	memset(t, 0, sizeof(*t));
	t->name = xstrdup(name);
	if (!t->name)
		goto oom;
	t->n_dims = n_dims;
	for (int d = 0; d < STRATA_GGUF_MAX_DIMS; d++)
		t->ne[d] = (uint32_t)d < n_dims ? ne[d] : 1;
	return (int64_t)w->n_t++;
oom:
	strata_error("%s: out of memory for tensor '%s'", w->path, name);
	return -ENOMEM;
}

int64_t strata_gguf_writer_add_tensor(struct strata_gguf_writer *w, const char *name,
				      uint32_t type, uint32_t n_dims, const int64_t *ne)
{
	uint32_t blk = strata_type_block(type);
	uint64_t rows = 1, size;
	size_t row_bytes;
	int64_t i;

	if (blk == 0) {
		strata_error("%s: tensor '%s' has unknown type id %u", w->path, name, type);
		return -EINVAL;
	}
	for (uint32_t d = 0; d < n_dims && d < STRATA_GGUF_MAX_DIMS; d++) {
		if (ne[d] < 1) {
			strata_error("%s: tensor '%s' has dimension %u = %" PRId64
				     " (must be >= 1)", w->path, name, d, ne[d]);
			return -EINVAL;
		}
		if (d > 0 && __builtin_mul_overflow(rows, (uint64_t)ne[d], &rows))
			goto too_big;
	}
	row_bytes = strata_type_row_bytes(type, ne[0]);
	if (row_bytes == 0) {
		strata_error("%s: tensor '%s' has row length %" PRId64 ", not a multiple of the "
			     "%s block size %u", w->path, name, ne[0], strata_type_name(type), blk);
		return -EINVAL;
	}
	if (__builtin_mul_overflow(rows, (uint64_t)row_bytes, &size) || size > INT64_MAX / 2)
		goto too_big;
	i = tensor_slot(w, name, n_dims, ne);
	if (i >= 0) {
		w->t[i].type = type;
		w->t[i].size = size;
	}
	return i;
too_big:
	strata_error("%s: tensor '%s' is too large", w->path, name);
	return -EINVAL;
}

int64_t strata_gguf_writer_add_tensor_raw(struct strata_gguf_writer *w, const char *name,
					  uint32_t type, uint32_t n_dims, const int64_t *ne,
					  uint64_t nbytes)
{
	int64_t i = tensor_slot(w, name, n_dims, ne);

	if (i >= 0) {
		w->t[i].type = type;
		w->t[i].size = nbytes;
	}
	return i;
}

/* ---- header and data ---- */

/* general.alignment, if the caller set it, must be a u32 power of two. */
static int resolve_alignment(struct strata_gguf_writer *w)
{
	for (size_t i = 0; i < w->n_kv; i++) {
		struct wkv *kv = &w->kv[i];
		uint32_t a;

		if (strcmp(kv->key, "general.alignment") != 0)
			continue;
		if (kv->type != STRATA_GGUF_U32) {
			strata_error("%s: general.alignment must be a u32", w->path);
			return -EINVAL;
		}
		a = gguf_rd_u32((const uint8_t *)kv->val.p);
		if (a == 0 || (a & (a - 1))) {
			strata_error("%s: general.alignment %u is not a power of two", w->path, a);
			return -EINVAL;
		}
		w->alignment = a;
		return 0;
	}
	return strata_gguf_writer_set_u32(w, "general.alignment", DEFAULT_ALIGNMENT);
}

static int write_header(struct strata_gguf_writer *w)
{
	struct strata_buf h = { 0 };
	uint64_t off = 0;
	int rc;

	if ((rc = resolve_alignment(w)))
		return rc;
	rc = bytes_put(&h, "GGUF", 4);
	rc = rc ? rc : bytes_u32(&h, GGUF_VERSION);
	rc = rc ? rc : bytes_u64(&h, w->n_t);
	rc = rc ? rc : bytes_u64(&h, w->n_kv);
	for (size_t i = 0; i < w->n_kv && !rc; i++) {
		rc = bytes_str(&h, w->kv[i].key, w->kv[i].key_len);
		rc = rc ? rc : bytes_u32(&h, w->kv[i].type);
		rc = rc ? rc : bytes_put(&h, w->kv[i].val.p, w->kv[i].val.len);
	}
	for (size_t i = 0; i < w->n_t && !rc; i++) {
		struct wtensor *t = &w->t[i];

		t->offset = off;
		off += pad_to(t->size, w->alignment);
		w->data_total += t->size;
		rc = bytes_str(&h, t->name, strlen(t->name));
		rc = rc ? rc : bytes_u32(&h, t->n_dims);
		for (uint32_t d = 0; d < t->n_dims && !rc; d++)
			rc = bytes_u64(&h, (uint64_t)t->ne[d]);
		rc = rc ? rc : bytes_u32(&h, t->type);
		rc = rc ? rc : bytes_u64(&h, t->offset);
	}
	if (rc) {
		strata_buf_free(&h);
		strata_error("%s: out of memory for the header", w->path);
		return rc;
	}
	rc = out(w, h.p, h.len);
	if (!rc)
		rc = out_zeros(w, (size_t)(pad_to(h.len, w->alignment) - h.len));
	strata_buf_free(&h);
	w->header_done = 1;
	/* Zero-byte tensors (possible through add_tensor_raw) need no data call. */
	while (w->cur < w->n_t && w->t[w->cur].size == 0)
		w->cur++;
	return rc;
}

int strata_gguf_writer_write(struct strata_gguf_writer *w, const void *data, size_t n)
{
	const uint8_t *p = data;
	int rc;

	if (w->err)
		return w->err;
	if (!w->header_done && (rc = write_header(w)))
		return rc;
	if (n > w->data_total - w->data_done) {
		strata_error("%s: %zu bytes of tensor data where %" PRIu64 " remain of the %" PRIu64
			     " declared", w->path, n, w->data_total - w->data_done, w->data_total);
		return -EINVAL;
	}
	while (n) {
		struct wtensor *t = &w->t[w->cur];
		size_t k;

		k = t->size - w->cur_done < n ? (size_t)(t->size - w->cur_done) : n;
		if ((rc = out(w, p, k)))
			return rc;
		p += k;
		n -= k;
		w->cur_done += k;
		w->data_done += k;
		if (w->cur_done < t->size)
			continue;
		if ((rc = out_zeros(w, (size_t)(pad_to(t->size, w->alignment) - t->size))))
			return rc;
		w->cur_done = 0;
		do
			w->cur++;
		while (w->cur < w->n_t && w->t[w->cur].size == 0);
	}
	return 0;
}

/* Make the rename durable: sync the directory that holds PATH. */
static void sync_dir(const char *path)
{
	char *copy = xstrdup(path);
	int fd;

	if (!copy)
		return;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(copy);
}

int strata_gguf_writer_commit(struct strata_gguf_writer *w)
{
	int rc;

	if (w->err)
		return w->err;
	if (w->committed)
		return 0;
	if (!w->header_done && (rc = write_header(w)))
		return rc;
	if (w->cur < w->n_t) {
		strata_error("%s: tensor '%s' got %" PRIu64 " of its %" PRIu64
			     " bytes; the file is incomplete", w->path, w->t[w->cur].name,
			     w->cur_done, w->t[w->cur].size);
		return -EINVAL;
	}
	if ((rc = flush(w)))
		return rc;
	if (fsync(w->fd) != 0)
		return fail_io(w, errno, "fsync failed");
	if (close(w->fd) != 0) {
		w->fd = -1;
		return fail_io(w, errno, "close failed");
	}
	w->fd = -1;
	if (rename(w->tmp, w->path) != 0)
		return fail_io(w, errno, "rename of the temporary file failed");
	w->committed = 1;
	sync_dir(w->path);
	return 0;
}

uint64_t strata_gguf_writer_data_total(const struct strata_gguf_writer *w)
{
	uint64_t total = 0;

	if (w->header_done)
		return w->data_total;
	for (size_t i = 0; i < w->n_t; i++)
		total += w->t[i].size;
	return total;
}

uint64_t strata_gguf_writer_data_done(const struct strata_gguf_writer *w)
{
	return w->data_done;
}

int64_t strata_gguf_writer_current(const struct strata_gguf_writer *w)
{
	return (int64_t)w->cur;
}
