/*
 * textout.h - the generated text a client sees: stop strings and UTF-8.
 *
 * Token pieces arrive one by one; text is released only when no stop string
 * can still begin in it, so a stop string (or part of one) never reaches a
 * client, streamed or not.  A multi-byte character split across pieces is
 * held until it is whole, and bytes that are not UTF-8 are released as
 * U+FFFD, so every released text is valid JSON string material.
 */
#ifndef STRATA_SERVE_TEXTOUT_H
#define STRATA_SERVE_TEXTOUT_H

#include <stddef.h>

#include "util/strbuf.h"

struct strata_textout {
	char *const *stop;        /* borrowed: n_stop non-empty strings */
	size_t n_stop;
	struct strata_buf pending; /* generated, not yet released */
	int matched;              /* the stop string that ended the text, plus 1; 0: none */
};

/*
 * Add a piece.  Releasable text is appended to out.  Returns 1 when a stop
 * string is complete: the text before it is released and the rest of the
 * generation is dropped; 0 otherwise.
 */
int strata_textout_feed(struct strata_textout *t, const char *piece, size_t len,
			struct strata_buf *out);

/* End of generation: release everything held (a partial stop string is text). */
void strata_textout_flush(struct strata_textout *t, struct strata_buf *out);

void strata_textout_free(struct strata_textout *t);

/* Append s[0..n) to out with every byte that is not valid UTF-8 as U+FFFD. */
void strata_utf8_sanitize(struct strata_buf *out, const char *s, size_t n);

#endif
