/*
 * sequence.c - another engine on a loaded model (strata_engine_new_sequence
 * in strata.h): its own sequence and what goes with it, the model's parts
 * borrowed from the shared part (engine.h), which the last engine frees.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "engine/engine.h"
#include "util/log.h"

int strata_engine_new_sequence(struct strata_engine *e, struct strata_engine **out)
{
	struct strata_engine *n;
	int rc;

	strata_log_clear_error(); /* strata_last_error() tells of this call alone */
	*out = NULL;
	if (e->dev) {
		/* Placement kept the device room for one sequence's state (n_seq = 1). */
		strata_error("%s: another sequence on this model needs [gpu] plugin = none for now: "
			     "the device holds the state of one", e->dev->name);
		return -ENOTSUP;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	/* Borrowed from e, owned by the shared part: freed with the last engine. */
	n->sh = e->sh;
	atomic_fetch_add(&n->sh->refs, 1);
	n->cfg = e->sh->cfg;
	n->model = e->model;
	n->tok = e->tok;
	n->pool = e->pool;
	n->reg = e->reg;
	n->ctx = e->ctx;
	n->xs = e->xs;
	n->ple = e->ple;
	n->model_name = e->model_name;
	n->arch = e->arch;
	n->chat_template = e->chat_template;
	rc = strata_seq_create(n->ctx, strata_seq_n_ctx(e->seq), &n->seq);
	if (!rc)
		rc = strata_engine_seq_parts(n);
	if (rc) {
		strata_engine_free(n);
		return rc;
	}
	*out = n;
	return 0;
}
