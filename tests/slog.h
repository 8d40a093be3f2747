/*
 * slog.h - reader for the ../shared/golden .slog reference logits (test helper).
 */
#ifndef STRATA_TEST_SLOG_H
#define STRATA_TEST_SLOG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slog {
	uint32_t n_prompt, n_vocab, n_gen;
	int32_t *tokens;  /* n_prompt + n_gen */
	float *logits;    /* (n_prompt + n_gen) x n_vocab */
	void *buf;
};

static inline int slog_read(const char *path, struct slog *s)
{
	FILE *f = fopen(path, "rb");
	uint32_t h[5];
	long size;

	memset(s, 0, sizeof(*s));
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, 0, SEEK_SET);
	s->buf = malloc((size_t)size);
	if (!s->buf || fread(s->buf, 1, (size_t)size, f) != (size_t)size || size < 20) {
		fclose(f);
		return -1;
	}
	fclose(f);
	memcpy(h, s->buf, sizeof(h));
	if (h[0] != 0x474F4C53u || h[1] != 2)
		return -1;
	s->n_prompt = h[2];
	s->n_vocab = h[3];
	s->n_gen = h[4];
	if ((uint64_t)size != 20 + 4ull * (h[2] + h[4]) * (1 + (uint64_t)h[3]))
		return -1;
	s->tokens = (int32_t *)((char *)s->buf + 20);
	s->logits = (float *)(s->tokens + s->n_prompt + s->n_gen);
	return 0;
}

static inline void slog_free(struct slog *s)
{
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

/* Gap between the largest and second largest value of a row. */
static inline float slog_top2_gap(const float *row, uint32_t n)
{
	float a = -1e30f, b = -1e30f;

	for (uint32_t i = 0; i < n; i++) {
		if (row[i] > a) {
			b = a;
			a = row[i];
		} else if (row[i] > b) {
			b = row[i];
		}
	}
	return a - b;
}

#endif
