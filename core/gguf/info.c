/*
 * info.c - `strata info MODEL`: what a GGUF file holds, for humans.
 */
#include "gguf/gguf.h"

#include "cpu/types.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define INFO_MAX_KEY_COL 44
#define INFO_MAX_NAME_COL 48

static void usage(FILE *f)
{
	fprintf(f,
		"usage: strata info MODEL.gguf\n"
		"\n"
		"Print a GGUF file's version, alignment, every metadata entry (arrays\n"
		"abbreviated, long strings cut) and its tensors: name, type, dimensions,\n"
		"bytes and offset in the data section, then the totals.  A shard of a\n"
		"split model is shown alone (its split.* keys say which it is).\n"
		"\n"
		"  -h, --help   show this help\n");
}

/* Names come from the file: print control bytes as '?' so the table stays a table. */
static void put_name(struct strata_str s, int width)
{
	uint64_t i;

	for (i = 0; i < s.len; i++) {
		unsigned char c = (unsigned char)s.s[i];

		putchar(c < 0x20 || c == 0x7f ? '?' : c);
	}
	for (; (int64_t)i < width; i++)
		putchar(' ');
}

static int col_width(uint64_t longest, int cap)
{
	return longest > (uint64_t)cap ? cap : (int)longest;
}

static void type_text(const struct strata_gguf *g, int64_t i, char *buf, size_t n)
{
	enum strata_gguf_vtype t = strata_gguf_kv_type(g, i), et;
	uint64_t cnt;

	if (t == STRATA_GGUF_ARRAY && strata_gguf_kv_arr(g, i, &et, &cnt, NULL) == 0)
		snprintf(buf, n, "arr[%s,%" PRIu64 "]", strata_gguf_vtype_name(et), cnt);
	else
		snprintf(buf, n, "%s", strata_gguf_vtype_name(t));
}

static void print_metadata(const struct strata_gguf *g)
{
	int64_t n = strata_gguf_n_kv(g);
	uint64_t longest = 0;
	char type[48], val[512];
	int w;

	for (int64_t i = 0; i < n; i++)
		if (strata_gguf_key(g, i).len > longest)
			longest = strata_gguf_key(g, i).len;
	w = col_width(longest, INFO_MAX_KEY_COL);
	printf("metadata:  %" PRId64 " entries\n", n);
	for (int64_t i = 0; i < n; i++) {
		type_text(g, i, type, sizeof(type));
		strata_gguf_format_value(g, i, val, sizeof(val));
		printf("  ");
		put_name(strata_gguf_key(g, i), w);
		printf("  %-16s %s\n", type, val);
	}
}

static void dims_text(const struct strata_gguf_tensor *t, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = 0;
	for (uint32_t k = 0; k < t->n_dims && len < n; k++)
		len += (size_t)snprintf(buf + len, n - len, "%s%" PRId64, k ? " x " : "",
					t->ne[k]);
}

static void human_bytes(uint64_t b, char *buf, size_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, u ? "%.2f %s" : "%.0f %s", v, unit[u]);
}

static void print_tensors(const struct strata_gguf *g)
{
	int64_t n = strata_gguf_n_tensors(g);
	uint64_t longest = 4, params = 0, bytes = 0;
	char dims[96], hb[32];
	int w, dw = 4;

	for (int64_t i = 0; i < n; i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);

		if (t->name.len > longest)
			longest = t->name.len;
		dims_text(t, dims, sizeof(dims));
		if ((int)strlen(dims) > dw)
			dw = (int)strlen(dims);
	}
	w = col_width(longest, INFO_MAX_NAME_COL);
	printf("tensors:   %" PRId64 "\n", n);
	if (n > 0) {
		printf("  %6s  %-*s  %-7s  %-*s  %12s  %12s\n", "#", w, "name", "type",
		       dw, "dims", "bytes", "offset");
	}
	for (int64_t i = 0; i < n; i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
		uint64_t count = 1;

		for (uint32_t k = 0; k < t->n_dims; k++)
			count *= (uint64_t)t->ne[k]; /* fits: open() checked the product */
		if (__builtin_add_overflow(params, count, &params))
			params = UINT64_MAX;
		bytes += t->size; /* bounded by the file size */
		dims_text(t, dims, sizeof(dims));
		printf("  %6" PRId64 "  ", i);
		put_name(t->name, w);
		printf("  %-7s  %-*s  %12" PRIu64 "  %12" PRIu64 "\n",
		       strata_type_name(t->type), dw, dims, t->size, t->offset);
	}
	human_bytes(bytes, hb, sizeof(hb));
	printf("totals:    %" PRId64 " tensors, %" PRIu64 " parameters, %" PRIu64
	       " bytes (%s)\n", n, params, bytes, hb);
}

int strata_cmd_info(int argc, char **argv)
{
	const char *path = NULL;
	struct strata_gguf *g;
	char hb[32];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			strata_error("info: unknown option '%s' (try 'strata info --help')",
				     argv[i]);
			return 2;
		}
		if (path) {
			strata_error("info: one MODEL expected, got '%s' and '%s'", path, argv[i]);
			return 2;
		}
		path = argv[i];
	}
	if (!path) {
		strata_error("info: missing MODEL (usage: strata info MODEL.gguf)");
		return 2;
	}
	if (strata_gguf_open_one(path, &g) != 0)
		return 1;
	human_bytes(strata_gguf_file_size(g), hb, sizeof(hb));
	printf("file:      %s\n", path);
	printf("version:   GGUF v%u\n", strata_gguf_version(g));
	printf("size:      %" PRIu64 " bytes (%s)\n", strata_gguf_file_size(g), hb);
	printf("alignment: %u\n", strata_gguf_alignment(g));
	if (strata_gguf_n_tensors(g) > 0)
		printf("data:      starts at offset %" PRIu64 "\n", strata_gguf_data_offset(g));
	print_metadata(g);
	print_tensors(g);
	strata_gguf_close(g);
	return 0;
}
