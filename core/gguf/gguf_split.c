/*
 * gguf_split.c - a model split in GGUF shards, as llama.cpp's gguf-split
 * writes them, opened as one handle.
 *
 * The rules (llama.cpp's src/llama.cpp llama_split_path/llama_split_prefix
 * and src/llama-model-loader.cpp): shard i (0-based) of n is named
 * PREFIX-%05d-of-%05d.gguf with i + 1 and n; every shard carries split.no =
 * i and split.count = n (u16), split.tensors.count (i32) is the number of
 * tensors of all shards; the metadata is the first shard's (gguf-split
 * writes it there only); no tensor is in two shards.  strata also accepts
 * the path of any shard (llama.cpp wants the first) and checks split.count
 * in every shard.
 *
 * The shards are mapped one after the other in one reserved range, each on
 * a 2 MiB boundary (see shard_stride), so every tensor's data lies in one
 * span from the first shard's data section on: the model's weights are
 * views of one host buffer whichever file they came from.  Each shard is then parsed in place like a lone file
 * (so a shard that is not GGUF is refused with its own name and offset),
 * and their tensor tables are merged into the first shard's handle.
 */
#include "gguf/gguf_impl.h"

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

#define SPLIT_NO "split.no"
#define SPLIT_COUNT "split.count"
#define SPLIT_TENSORS "split.tensors.count"
/* llama.cpp's counts are u16 */
#define SPLIT_MAX 65535u

void strata_gguf_shards_free_(struct gguf_shards *s)
{
	if (!s)
		return;
	strata_vm_region_free(s->region);
	if (s->path)
		for (uint32_t i = 0; i < s->n; i++)
			free(s->path[i]);
	free(s->path);
	free(s->size);
	free(s);
}

/*
 * split.no and split.count of g: 0 with *count = 1 when the file has no
 * split.count (a model in one file), else both checked; logged errors.
 */
static int split_keys(const struct strata_gguf *g, uint32_t *no, uint32_t *count)
{
	const char *path = strata_gguf_path(g);
	int rc;

	*no = 0;
	*count = 1;
	rc = strata_gguf_get_u32(g, SPLIT_COUNT, count);
	if (rc == -ENOENT) {
		*count = 1;
		return 0;
	}
	if (rc || *count == 0 || *count > SPLIT_MAX) {
		strata_error("%s: metadata %s must be a shard count from 1 to %u", path,
			     SPLIT_COUNT, SPLIT_MAX);
		return -EINVAL;
	}
	rc = strata_gguf_get_u32(g, SPLIT_NO, no);
	if (rc == -ENOENT && *count == 1)
		return 0;
	if (rc) {
		strata_error("%s: %s is %u but metadata %s is %s", path, SPLIT_COUNT, *count,
			     SPLIT_NO, rc == -ENOENT ? "missing" : "not a shard number");
		return -EINVAL;
	}
	if (*no >= *count) {
		strata_error("%s: %s is %u, not below %s %u", path, SPLIT_NO, *no,
			     SPLIT_COUNT, *count);
		return -EINVAL;
	}
	return 0;
}

/* The PREFIX of shard `no` of `count` named `path`; NULL (logged) when the name does not fit. */
static char *split_prefix(const char *path, uint32_t no, uint32_t count)
{
	char tail[40];
	size_t n = strlen(path), k;
	char *p;

	k = (size_t)snprintf(tail, sizeof(tail), "-%05u-of-%05u.gguf", no + 1, count);
	if (n <= k || strcmp(path + n - k, tail) != 0) {
		strata_error("%s: shard %u of %u (split.no %u), but its name does not end in "
			     "'%s', so its other shards cannot be found", path, no + 1, count,
			     no, tail);
		return NULL;
	}
	p = strndup(path, n - k);
	if (!p)
		strata_error("%s: out of memory", path);
	return p;
}

/*
 * Where a shard's successor starts: on a 2 MiB boundary, so that every file
 * is mapped as a lone mmap of it would be, where the kernel can map the page
 * cache's large folios with huge-page entries (a weight stream read through
 * 4 KiB entries alone decodes several times slower on a VM).
 */
#define SHARD_ALIGN ((uint64_t)2 << 20)

static uint64_t shard_stride(uint64_t size)
{
	return (size + SHARD_ALIGN - 1) & ~(SHARD_ALIGN - 1);
}

/* Stat and map every shard into one range; -errno after one logged error. */
static int map_shards(struct gguf_shards *s)
{
	uint64_t at = 0;
	int rc;

	for (uint32_t i = 0; i < s->n; i++) {
		struct stat st;

		if (stat(s->path[i], &st) != 0) {
			int e = errno;

			strata_error("%s: missing shard %u of %u: %s", s->path[i], i + 1, s->n,
				     strerror(e));
			return -e;
		}
		if (!S_ISREG(st.st_mode) || st.st_size == 0) {
			strata_error("%s: shard %u of %u is %s", s->path[i], i + 1, s->n,
				     st.st_size ? "not a regular file" : "empty");
			return -EINVAL;
		}
		s->size[i] = (uint64_t)st.st_size;
		s->region_size += shard_stride(s->size[i]);
	}
	if (s->region_size > SIZE_MAX) {
		strata_error("%s: %u shards too large to map", s->path[0], s->n);
		return -EFBIG;
	}
	rc = strata_vm_region_reserve((size_t)s->region_size, SHARD_ALIGN, &s->region, &s->base);
	if (rc) {
		s->region = NULL;
		strata_error("%s: cannot reserve %" PRIu64 " bytes to map %u shards: %s",
			     s->path[0], s->region_size, s->n, strerror(-rc));
		return rc;
	}
	for (uint32_t i = 0; i < s->n; i++) {
		int fd = open(s->path[i], O_RDONLY | O_CLOEXEC);
		struct stat st;

		if (fd < 0)
			rc = -errno;
		else if (fstat(fd, &st) != 0)
			rc = -errno;
		else if ((uint64_t)st.st_size != s->size[i])
			rc = -ESTALE; /* the file changed between stat and open */
		else
			rc = strata_vm_region_map(s->region, at, fd, s->size[i]);
		if (fd >= 0)
			close(fd);
		if (rc) {
			strata_error("cannot map %s (shard %u of %u): %s", s->path[i], i + 1, s->n,
				     strerror(-rc));
			return rc;
		}
		s->span = at + s->size[i];
		at += shard_stride(s->size[i]);
	}
	return 0;
}

/* Parse shard i in place and check its split keys; *out owns nothing but its tables. */
static int parse_shard(struct gguf_shards *s, uint32_t i, uint64_t at, struct strata_gguf **out)
{
	struct strata_gguf *g = strata_gguf_alloc_(s->path[i]);
	uint32_t no, count;
	int rc;

	*out = g;
	if (!g) {
		strata_error("%s: out of memory", s->path[i]);
		return -ENOMEM;
	}
	g->map = s->base + at;
	g->size = s->size[i];
	g->map_borrowed = 1;
	if ((rc = strata_gguf_parse_(g)) || (rc = split_keys(g, &no, &count)))
		return rc;
	if (strata_gguf_find_key(g, SPLIT_COUNT) < 0) {
		strata_error("%s: not a shard (no metadata %s), but its name makes it shard "
			     "%u of %u", s->path[i], SPLIT_COUNT, i + 1, s->n);
		return -EINVAL;
	}
	if (count != s->n || no != i) {
		strata_error("%s: %s %u and %s %u disagree with its name, shard %u of %u "
			     "(split.no %u, split.count %u)", s->path[i], SPLIT_NO, no,
			     SPLIT_COUNT, count, i + 1, s->n, i, s->n);
		return -EINVAL;
	}
	for (int64_t t = 0; t < g->n_tensors; t++) {
		g->tensors[t].file = i;
		g->tensors[t].file_off = g->data_off + g->tensors[t].offset;
	}
	return 0;
}

/* Append every shard's tensors to the first's table; check duplicates and the total. */
static int merge(struct strata_gguf *g0, struct strata_gguf **sh, uint32_t n)
{
	struct strata_gguf_tensor *all;
	int64_t total = 0, want, k = 0, a, b;
	int rc;

	for (uint32_t i = 0; i < n; i++)
		total += sh[i]->n_tensors;
	all = calloc(total ? (size_t)total : 1, sizeof(*all));
	if (!all) {
		strata_error("%s: out of memory", g0->path);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		for (int64_t t = 0; t < sh[i]->n_tensors; t++)
			all[k++] = sh[i]->tensors[t];
	free(g0->tensors);
	g0->tensors = all;
	g0->n_tensors = total;
	rc = strata_gguf_rehash_tensors_(g0, &a, &b);
	if (rc == -EINVAL) {
		struct strata_str nm = all[b].name;

		strata_error("%s: tensor '%.*s' is in two shards: %s and %s", g0->path,
			     (int)(nm.len > 96 ? 96 : nm.len), nm.s, g0->shards->path[all[a].file],
			     g0->shards->path[all[b].file]);
		return rc;
	}
	if (rc)
		return rc;
	if (strata_gguf_get_i64(g0, SPLIT_TENSORS, &want) != 0) {
		strata_error("%s: metadata %s is missing or not a count", g0->path, SPLIT_TENSORS);
		return -EINVAL;
	}
	if (want != total) {
		strata_error("%s: %s is %" PRId64 " but its %u shards hold %" PRId64 " tensors",
			     g0->path, SPLIT_TENSORS, want, n, total);
		return -EINVAL;
	}
	return 0;
}

/* Open the `count` shards named PREFIX-*-of-COUNT.gguf into *out. */
static int open_shards(const char *prefix, uint32_t count, struct strata_gguf **out)
{
	struct gguf_shards *s = calloc(1, sizeof(*s));
	struct strata_gguf **sh = calloc(count, sizeof(*sh));
	uint64_t at = 0;
	int rc = -ENOMEM;

	if (!s || !sh || !(s->path = calloc(count, sizeof(*s->path))) ||
	    !(s->size = calloc(count, sizeof(*s->size))))
		goto oom;
	s->n = count;
	for (uint32_t i = 0; i < count; i++) {
		size_t len = strlen(prefix) + 32;

		if (!(s->path[i] = malloc(len)))
			goto oom;
		snprintf(s->path[i], len, "%s-%05u-of-%05u.gguf", prefix, i + 1, count);
	}
	if ((rc = map_shards(s)))
		goto fail;
	for (uint32_t i = 0; i < count; i++) {
		if ((rc = parse_shard(s, i, at, &sh[i])))
			goto fail;
		at += shard_stride(s->size[i]);
	}
	sh[0]->shards = s;
	s = NULL;
	if ((rc = merge(sh[0], sh, count)))
		goto fail;
	for (uint32_t i = 1; i < count; i++)
		strata_gguf_close(sh[i]);
	*out = sh[0];
	free(sh);
	return 0;
oom:
	strata_error("%s: out of memory opening %u shards", prefix, count);
fail:
	if (sh)
		for (uint32_t i = count; i-- > 0;)
			strata_gguf_close(sh[i]); /* sh[0] frees s once it owns it */
	free(sh);
	strata_gguf_shards_free_(s);
	return rc;
}

int strata_gguf_open(const char *path, struct strata_gguf **out)
{
	struct strata_gguf *g;
	uint32_t no, count;
	char *prefix;
	int rc;

	*out = NULL;
	if ((rc = strata_gguf_open_one(path, &g)))
		return rc;
	if ((rc = split_keys(g, &no, &count)) || count == 1) {
		if (rc)
			strata_gguf_close(g);
		else
			*out = g;
		return rc;
	}
	strata_gguf_close(g);
	if (!(prefix = split_prefix(path, no, count)))
		return -EINVAL;
	rc = open_shards(prefix, count, out);
	free(prefix);
	return rc;
}
