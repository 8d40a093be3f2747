/*
 * writer_shards.c - strata-writer's shards: which file each tensor of the
 * plan goes to, the files' names, and their headers, the way llama.cpp's
 * gguf-split writes a model (tools/gguf-split/gguf-split.cpp): the first
 * shard carries all the metadata, every shard split.no (u16, 0-based),
 * split.count (u16) and split.tensors.count (i32, the tensors of all
 * shards); shard k of n is PREFIX-%05d-of-%05d.gguf with k + 1 and n.
 */
#include "writer_plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/types.h"
#include "util/log.h"

int strata_writer_shards(const struct wcfg *c, const struct wplan *p, int split_ple,
			 uint64_t max_tensors, uint64_t max_bytes, uint32_t *shard,
			 uint32_t *n_shards)
{
	uint64_t k = 0, bytes = 0; /* tensors and padded bytes in the current shard */
	uint32_t n = 1, cur = 0;
	int found = 0;

	if (split_ple && c->arch != WA_QWEN4EXP) {
		strata_error("--split-ple: a %s model has no PLE table (qwen4exp has)", c->arch_name);
		return -EINVAL;
	}
	for (size_t i = 0; i < p->n; i++) {
		if (split_ple && strcmp(p->t[i].name, W_PLE_TENSOR) == 0) {
			found = 1;
			continue;
		}
		{
			const struct wtensor *t = &p->t[i];
			uint64_t sz = strata_type_row_bytes(t->type, t->ne[0]) *
				      (uint64_t)(t->ne[1] * t->ne[2]);

			sz = (sz + 31) / 32 * 32; /* as gguf-split counts: padded */
			if (k && ((max_tensors && k == max_tensors) ||
				  (max_bytes && bytes + sz > max_bytes))) {
				cur++;
				k = bytes = 0;
			}
			shard[i] = cur;
			k++;
			bytes += sz;
			n = cur + 1;
		}
	}
	if (split_ple) {
		if (!found) { /* the plan always has it: a broken build, not a user's error */
			strata_error("--split-ple: the plan has no %s", W_PLE_TENSOR);
			return -EINVAL;
		}
		for (size_t i = 0; i < p->n; i++)
			if (strcmp(p->t[i].name, W_PLE_TENSOR) == 0)
				shard[i] = n;
		n++;
	}
	if (n > 65535) {
		strata_error("--split-max-tensors/--split-max-size make %u shards; llama.cpp "
			     "counts them in 16 bits", n);
		return -EINVAL;
	}
	*n_shards = n;
	return 0;
}

char *strata_writer_shard_path(const char *out, uint32_t k, uint32_t n)
{
	size_t len = strlen(out);
	char *path;

	if (len > 5 && strcmp(out + len - 5, ".gguf") == 0)
		len -= 5;
	path = malloc(len + 32);
	if (path)
		snprintf(path, len + 32, "%.*s-%05u-of-%05u.gguf", (int)len, out, k + 1, n);
	return path;
}

int strata_writer_shard_header(struct strata_gguf_writer *w, const struct wcfg *c,
			       const struct strata_gguf *vocab, const struct wplan *p,
			       const uint32_t *shard, uint32_t k, uint32_t n)
{
	uint16_t no = (uint16_t)k, count = (uint16_t)n;
	int64_t r;
	int rc;

	if (k == 0 && (rc = strata_writer_meta(w, c, vocab)))
		return rc;
	if (n > 1 || shard) {
		if ((rc = strata_gguf_writer_set(w, "split.no", STRATA_GGUF_U16, &no)) ||
		    (rc = strata_gguf_writer_set(w, "split.count", STRATA_GGUF_U16, &count)) ||
		    (rc = strata_gguf_writer_set_i32(w, "split.tensors.count", (int32_t)p->n)))
			return rc;
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct wtensor *t = &p->t[i];

		if (shard && shard[i] != k)
			continue;
		r = strata_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne);
		if (r < 0)
			return (int)r;
	}
	return 0;
}
