/*
 * dump.c - --dump-logits: every logits row of a run in the .slog layout that
 * ../shared/golden uses, so a run can be compared with llama.cpp's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "plat/plat.h"
#include "util/log.h"

#define SLOG_MAGIC 0x474F4C53u /* "SLOG" */
#define SLOG_VERSION 2u

static int sha256_hex(const void *data, size_t len, char hex[65])
{
	uint8_t md[32];

	if (strata_sha256(data, len, md))
		return -EIO;
	for (unsigned i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

int strata_engine_write_dump(struct strata_engine *e, const int32_t *tokens, uint32_t n_prompt,
			     uint32_t n_gen, const char *path)
{
	uint32_t nv = e->model->hp.n_vocab, rows = n_prompt + n_gen;
	uint32_t hdr[5] = { SLOG_MAGIC, SLOG_VERSION, n_prompt, nv, n_gen };
	char hex[65];
	FILE *f;
	int ok;

	if (!e->dump)
		return -EINVAL;
	/* Generation stops on EOS without feeding it: its row does not exist. */
	if (rows > strata_seq_pos(e->seq))
		rows = strata_seq_pos(e->seq);
	hdr[4] = rows - n_prompt;
	f = fopen(path, "wb");
	if (!f) {
		int rc = -errno;

		strata_error("cannot write %s: %s", path, strerror(errno));
		return rc;
	}
	ok = fwrite(hdr, sizeof(hdr), 1, f) == 1 &&
	     fwrite(tokens, sizeof(int32_t), rows, f) == rows &&
	     fwrite(e->dump, sizeof(float) * nv, rows, f) == rows;
	if (fclose(f) != 0 || !ok) {
		strata_error("cannot write %s: %s", path, strerror(errno));
		return -EIO;
	}
	if (n_gen > 0 && sha256_hex(e->dump + (size_t)(n_prompt - 1) * nv, sizeof(float) * nv,
				    hex) == 0)
		printf("logits sha256 (first generated token): %s\n", hex);
	strata_info("wrote %u logits rows (%u prompt + %u generated) to %s", rows, n_prompt,
		    rows - n_prompt, path);
	return 0;
}
