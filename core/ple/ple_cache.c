/*
 * ple_cache.c - the row cache: raw row bytes in a set-associative table.
 *
 * Raw bytes, not decoded floats: a 90-byte IQ4_NL row costs 90 bytes here
 * instead of 640, so the same memory holds seven times the rows, and a hit
 * costs one decode, which is far cheaper than the SSD read it saves.
 * Eight ways per set, least recently used out, with "recently" counted in
 * chunks.  Sets are spread by a multiplicative hash so the 16 heads' rows,
 * which sit in separate slices of the table, do not pile into a few sets.
 * Striped locks: reader threads insert while others look up.
 */
#include "ple/ple_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WAYS 8

int strata_ple_cache_init(struct ple_cache *c, uint32_t rows, uint32_t rb)
{
	memset(c, 0, sizeof(*c));
	c->rb = rb;
	for (int i = 0; i < PLE_CACHE_LOCKS; i++)
		pthread_mutex_init(&c->lock[i], NULL);
	if (rows == 0)
		return 0;
	c->ways = rows < WAYS ? rows : WAYS;
	c->sets = 1;
	while (c->sets * 2 * c->ways <= rows)
		c->sets *= 2;
	c->mask = c->sets - 1;
	c->key = calloc(c->sets * c->ways, sizeof(*c->key));
	c->stamp = calloc(c->sets * c->ways, sizeof(*c->stamp));
	c->data = malloc(c->sets * c->ways * rb);
	if (!c->key || !c->stamp || !c->data) {
		strata_ple_cache_free(c);
		return -ENOMEM;
	}
	return 0;
}

void strata_ple_cache_free(struct ple_cache *c)
{
	if (!c->rb)
		return; /* never initialised */
	free(c->key);
	free(c->stamp);
	free(c->data);
	for (int i = 0; i < PLE_CACHE_LOCKS; i++)
		pthread_mutex_destroy(&c->lock[i]);
	c->key = NULL;
	c->stamp = NULL;
	c->data = NULL;
	c->sets = 0;
	c->ways = 0;
	c->rb = 0;
}

uint64_t strata_ple_cache_capacity(const struct ple_cache *c)
{
	return c->sets * c->ways;
}

int strata_ple_cache_get(struct ple_cache *c, uint32_t row, void *dst, uint32_t stamp, int locked)
{
	uint64_t s, base;
	int hit = 0;

	if (!c->ways)
		return 0;
	s = ple_cache_set(c, row);
	base = s * c->ways;
	if (locked)
		pthread_mutex_lock(&c->lock[s % PLE_CACHE_LOCKS]);
	for (uint32_t w = 0; w < c->ways; w++)
		if (c->key[base + w] == row + 1) {
			memcpy(dst, c->data + (base + w) * c->rb, c->rb);
			c->stamp[base + w] = stamp;
			hit = 1;
			break;
		}
	if (locked)
		pthread_mutex_unlock(&c->lock[s % PLE_CACHE_LOCKS]);
	return hit;
}

void strata_ple_cache_put(struct ple_cache *c, uint32_t row, const void *src, uint32_t stamp)
{
	uint64_t s, base, victim;

	if (!c->ways)
		return;
	s = ple_cache_set(c, row);
	base = s * c->ways;
	victim = base;
	pthread_mutex_lock(&c->lock[s % PLE_CACHE_LOCKS]);
	for (uint32_t w = 0; w < c->ways; w++) {
		uint64_t i = base + w;

		if (c->key[i] == row + 1 || c->key[i] == 0) {
			victim = i;
			break;
		}
		/* Wrapping age: the chunk counter may roll over in a long server life. */
		if ((uint32_t)(stamp - c->stamp[i]) > (uint32_t)(stamp - c->stamp[victim]))
			victim = i;
	}
	c->key[victim] = row + 1;
	c->stamp[victim] = stamp;
	memcpy(c->data + victim * c->rb, src, c->rb);
	pthread_mutex_unlock(&c->lock[s % PLE_CACHE_LOCKS]);
}
