/*
 * gguf_meta.c - accessors for an opened GGUF file: metadata getters, the
 * name indices and value formatting.  Everything here trusts what
 * strata_gguf_open() validated and checks only the caller's arguments.
 */
#include "gguf/gguf_impl.h"
#include "util/strbuf.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t strata_gguf_scalar_size_(uint32_t t)
{
	switch (t) {
	case STRATA_GGUF_U8: case STRATA_GGUF_I8: case STRATA_GGUF_BOOL:
		return 1;
	case STRATA_GGUF_U16: case STRATA_GGUF_I16:
		return 2;
	case STRATA_GGUF_U32: case STRATA_GGUF_I32: case STRATA_GGUF_F32:
		return 4;
	case STRATA_GGUF_U64: case STRATA_GGUF_I64: case STRATA_GGUF_F64:
		return 8;
	default:
		return 0;
	}
}

const char *strata_gguf_vtype_name(enum strata_gguf_vtype t)
{
	static const char *const names[] = {
		"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool",
		"str", "arr", "u64", "i64", "f64",
	};

	return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

uint64_t strata_gguf_hash_bytes_(const char *s, uint64_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint64_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

int64_t strata_gguf_hash_find_(const struct gguf_hash *h, const char *s, uint64_t len,
			       struct strata_str (*name_of)(const struct strata_gguf *, uint64_t),
			       const struct strata_gguf *g)
{
	uint64_t k = strata_gguf_hash_bytes_(s, len) & h->mask;

	for (; h->slot[k]; k = (k + 1) & h->mask) {
		struct strata_str o = name_of(g, h->slot[k] - 1);

		if (o.len == len && memcmp(o.s, s, len) == 0)
			return (int64_t)(h->slot[k] - 1);
	}
	return -1;
}

struct strata_str strata_gguf_kv_name_(const struct strata_gguf *g, uint64_t i)
{
	return g->kv[i].key;
}

struct strata_str strata_gguf_tensor_name_(const struct strata_gguf *g, uint64_t i)
{
	return g->tensors[i].name;
}

int strata_str_eq(struct strata_str a, const char *b)
{
	return b && a.len == strlen(b) && (a.len == 0 || memcmp(a.s, b, a.len) == 0);
}

const char *strata_gguf_path(const struct strata_gguf *g) { return g->path; }
uint32_t strata_gguf_version(const struct strata_gguf *g) { return g->version; }
uint64_t strata_gguf_file_size(const struct strata_gguf *g) { return g->size; }
uint32_t strata_gguf_alignment(const struct strata_gguf *g) { return g->alignment; }
uint64_t strata_gguf_data_offset(const struct strata_gguf *g) { return g->data_off; }
int64_t strata_gguf_n_kv(const struct strata_gguf *g) { return g->n_kv; }

uint32_t strata_gguf_n_files(const struct strata_gguf *g)
{
	return g->shards ? g->shards->n : 1;
}

const char *strata_gguf_file_path(const struct strata_gguf *g, uint32_t i)
{
	if (g->shards)
		return i < g->shards->n ? g->shards->path[i] : NULL;
	return i == 0 ? g->path : NULL;
}

void strata_gguf_data_span(const struct strata_gguf *g, const void **base, uint64_t *size)
{
	*base = g->map + g->data_off;
	if (g->shards)
		*size = g->shards->span - g->data_off;
	else
		*size = g->size - g->data_off;
}
int64_t strata_gguf_n_tensors(const struct strata_gguf *g) { return g->n_tensors; }

int64_t strata_gguf_find_key(const struct strata_gguf *g, const char *key)
{
	if (!key)
		return -1;
	return strata_gguf_hash_find_(&g->kv_hash, key, strlen(key), strata_gguf_kv_name_, g);
}

static const struct gguf_kv *kv_at(const struct strata_gguf *g, int64_t i)
{
	return i >= 0 && i < g->n_kv ? &g->kv[i] : NULL;
}

struct strata_str strata_gguf_key(const struct strata_gguf *g, int64_t i)
{
	const struct gguf_kv *kv = kv_at(g, i);

	return kv ? kv->key : (struct strata_str){ NULL, 0 };
}

enum strata_gguf_vtype strata_gguf_kv_type(const struct strata_gguf *g, int64_t i)
{
	const struct gguf_kv *kv = kv_at(g, i);

	return kv ? (enum strata_gguf_vtype)kv->type : (enum strata_gguf_vtype)-1;
}

/*
 * An integer value as sign and magnitude, so every getter can range-check
 * without caring which of the eight integer encodings the file used.
 */
static int kv_int(const struct strata_gguf *g, const struct gguf_kv *kv, int *neg,
		  uint64_t *mag)
{
	const uint8_t *p = g->map + kv->voff;
	int64_t s;

	*neg = 0;
	switch (kv->type) {
	case STRATA_GGUF_U8: *mag = p[0]; return 0;
	case STRATA_GGUF_U16: *mag = gguf_rd_u16(p); return 0;
	case STRATA_GGUF_U32: *mag = gguf_rd_u32(p); return 0;
	case STRATA_GGUF_U64: *mag = gguf_rd_u64(p); return 0;
	case STRATA_GGUF_I8: s = (int8_t)p[0]; break;
	case STRATA_GGUF_I16: s = (int16_t)gguf_rd_u16(p); break;
	case STRATA_GGUF_I32: s = (int32_t)gguf_rd_u32(p); break;
	case STRATA_GGUF_I64: s = (int64_t)gguf_rd_u64(p); break;
	default: return -EINVAL;
	}
	*neg = s < 0;
	/* -(s + 1) + 1 avoids negating INT64_MIN */
	*mag = s < 0 ? (uint64_t)(-(s + 1)) + 1 : (uint64_t)s;
	return 0;
}

static const struct gguf_kv *kv_named(const struct strata_gguf *g, const char *key)
{
	return kv_at(g, strata_gguf_find_key(g, key));
}

int strata_gguf_get_u32(const struct strata_gguf *g, const char *key, uint32_t *out)
{
	const struct gguf_kv *kv = kv_named(g, key);
	uint64_t mag;
	int neg;

	if (!kv)
		return -ENOENT;
	if (kv_int(g, kv, &neg, &mag) || neg || mag > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)mag;
	return 0;
}

int strata_gguf_get_i64(const struct strata_gguf *g, const char *key, int64_t *out)
{
	const struct gguf_kv *kv = kv_named(g, key);
	uint64_t mag;
	int neg;

	if (!kv)
		return -ENOENT;
	if (kv_int(g, kv, &neg, &mag) || mag > (uint64_t)INT64_MAX + neg)
		return -EINVAL;
	*out = neg ? -(int64_t)(mag - 1) - 1 : (int64_t)mag;
	return 0;
}

static double rd_f64(const uint8_t *p)
{
	uint64_t b = gguf_rd_u64(p);
	double d;

	memcpy(&d, &b, 8);
	return d;
}

static float rd_f32(const uint8_t *p)
{
	uint32_t b = gguf_rd_u32(p);
	float f;

	memcpy(&f, &b, 4);
	return f;
}

int strata_gguf_get_f32(const struct strata_gguf *g, const char *key, float *out)
{
	const struct gguf_kv *kv = kv_named(g, key);
	uint64_t mag;
	double d;
	int neg;

	if (!kv)
		return -ENOENT;
	if (kv->type == STRATA_GGUF_F32) {
		*out = rd_f32(g->map + kv->voff);
		return 0;
	}
	if (kv->type == STRATA_GGUF_F64) {
		d = rd_f64(g->map + kv->voff);
		if (isfinite(d) && fabs(d) > FLT_MAX)
			return -EINVAL;
		*out = (float)d;
		return 0;
	}
	if (kv_int(g, kv, &neg, &mag))
		return -EINVAL;
	*out = neg ? -(float)mag : (float)mag;
	return 0;
}

int strata_gguf_get_bool(const struct strata_gguf *g, const char *key, int *out)
{
	const struct gguf_kv *kv = kv_named(g, key);

	if (!kv)
		return -ENOENT;
	if (kv->type != STRATA_GGUF_BOOL)
		return -EINVAL;
	*out = g->map[kv->voff] != 0;
	return 0;
}

static struct strata_str str_at(const struct strata_gguf *g, uint64_t off)
{
	return (struct strata_str){ (const char *)g->map + off + 8, gguf_rd_u64(g->map + off) };
}

int strata_gguf_get_str(const struct strata_gguf *g, const char *key, struct strata_str *out)
{
	const struct gguf_kv *kv = kv_named(g, key);

	if (!kv)
		return -ENOENT;
	if (kv->type != STRATA_GGUF_STRING)
		return -EINVAL;
	*out = str_at(g, kv->voff);
	return 0;
}

int strata_gguf_kv_arr(const struct strata_gguf *g, int64_t i,
		       enum strata_gguf_vtype *elem_type, uint64_t *n, const void **data)
{
	const struct gguf_kv *kv = kv_at(g, i);

	if (!kv)
		return -ENOENT;
	if (kv->type != STRATA_GGUF_ARRAY)
		return -EINVAL;
	if (elem_type)
		*elem_type = (enum strata_gguf_vtype)kv->arr_type;
	if (n)
		*n = kv->arr_n;
	if (data)
		*data = kv->arr_type == STRATA_GGUF_STRING ? NULL : g->map + kv->voff;
	return 0;
}

int strata_gguf_get_arr(const struct strata_gguf *g, const char *key,
			enum strata_gguf_vtype *elem_type, uint64_t *n,
			const void **data)
{
	return strata_gguf_kv_arr(g, strata_gguf_find_key(g, key), elem_type, n, data);
}

struct strata_str strata_gguf_arr_str(const struct strata_gguf *g, int64_t kv_i, uint64_t i)
{
	const struct gguf_kv *kv = kv_at(g, kv_i);

	if (!kv || !kv->str_off || i >= kv->arr_n)
		return (struct strata_str){ NULL, 0 };
	return str_at(g, kv->str_off[i]);
}

const struct strata_gguf_tensor *strata_gguf_tensor(const struct strata_gguf *g, int64_t i)
{
	return i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

const struct strata_gguf_tensor *strata_gguf_find_tensor(const struct strata_gguf *g,
							 const char *name)
{
	if (!name)
		return NULL;
	return strata_gguf_tensor(g, strata_gguf_hash_find_(&g->tensor_hash, name, strlen(name),
							    strata_gguf_tensor_name_, g));
}

/* ---- formatting ---- */

/* Quoted and escaped, at most `max` source bytes (cut on a UTF-8 boundary). */
static void fmt_str(struct strata_buf *b, struct strata_str s, uint64_t max, int show_len)
{
	uint64_t n = s.len;

	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s.s[n] & 0xc0) == 0x80)
			n--;
	}
	strata_buf_add(b, "\"", 1);
	for (uint64_t i = 0; i < n && !b->cut; i++) {
		unsigned char c = (unsigned char)s.s[i];

		switch (c) {
		case '"': strata_buf_add(b, "\\\"", 2); break;
		case '\\': strata_buf_add(b, "\\\\", 2); break;
		case '\n': strata_buf_add(b, "\\n", 2); break;
		case '\t': strata_buf_add(b, "\\t", 2); break;
		case '\r': strata_buf_add(b, "\\r", 2); break;
		default:
			if (c < 0x20 || c == 0x7f)
				strata_buf_printf(b, "\\x%02x", c);
			else
				strata_buf_add(b, (const char *)&c, 1);
		}
	}
	strata_buf_add(b, n < s.len ? "...\"" : "\"", n < s.len ? 4 : 1);
	if (n < s.len && show_len)
		strata_buf_printf(b, " (%" PRIu64 " bytes)", s.len);
}

/* Shortest text that reads back as the same float/double. */
static void fmt_real(struct strata_buf *b, double v, int is_f32)
{
	char tmp[40];

	for (int prec = is_f32 ? 6 : 15; prec <= (is_f32 ? 9 : 17); prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
		if (is_f32 ? strtof(tmp, NULL) == (float)v : strtod(tmp, NULL) == v)
			break;
	}
	strata_buf_add(b, tmp, strlen(tmp));
}

static void fmt_scalar(struct strata_buf *b, const struct strata_gguf *g, uint32_t type,
		       uint64_t off)
{
	const uint8_t *p = g->map + off;
	struct gguf_kv tmp = { .type = type, .voff = off };
	uint64_t mag;
	int neg;

	if (type == STRATA_GGUF_STRING)
		fmt_str(b, str_at(g, off), 24, 0);
	else if (type == STRATA_GGUF_BOOL)
		strata_buf_add(b, p[0] ? "true" : "false", p[0] ? 4 : 5);
	else if (type == STRATA_GGUF_F32)
		fmt_real(b, rd_f32(p), 1);
	else if (type == STRATA_GGUF_F64)
		fmt_real(b, rd_f64(p), 0);
	else if (kv_int(g, &tmp, &neg, &mag) == 0)
		strata_buf_printf(b, "%s%" PRIu64, neg ? "-" : "", mag);
}

#define GGUF_FMT_ARRAY_ITEMS 6
#define GGUF_FMT_STR_BYTES 96

void strata_gguf_format_value(const struct strata_gguf *g, int64_t i, char *buf, size_t n)
{
	const struct gguf_kv *kv = kv_at(g, i);
	struct strata_buf b;
	uint64_t shown;

	if (n == 0)
		return;
	strata_buf_fixed(&b, buf, n);
	if (!kv)
		return;
	if (kv->type == STRATA_GGUF_STRING) {
		fmt_str(&b, str_at(g, kv->voff), GGUF_FMT_STR_BYTES, 1);
	} else if (kv->type != STRATA_GGUF_ARRAY) {
		fmt_scalar(&b, g, kv->type, kv->voff);
	} else {
		uint32_t esz = strata_gguf_scalar_size_(kv->arr_type);

		shown = kv->arr_n < GGUF_FMT_ARRAY_ITEMS ? kv->arr_n : GGUF_FMT_ARRAY_ITEMS;
		strata_buf_add(&b, "[", 1);
		for (uint64_t j = 0; j < shown && !b.cut; j++) {
			if (j)
				strata_buf_add(&b, ", ", 2);
			fmt_scalar(&b, g, kv->arr_type,
				  kv->str_off ? kv->str_off[j] : kv->voff + j * esz);
		}
		if (shown < kv->arr_n)
			strata_buf_printf(&b, ", ... +%" PRIu64 " more", kv->arr_n - shown);
		strata_buf_add(&b, "]", 1);
	}
	if (b.cut && n >= 4) {
		/* Mark the cut, without leaving half a UTF-8 sequence before it. */
		size_t k = n - 4;

		while (k > 0 && ((unsigned char)buf[k] & 0xc0) == 0x80)
			k--;
		memcpy(buf + k, "...", 4);
	}
}
