/*
 * device.c - the engine's model context: the [gpu] device, if any, and the
 * placement of the model on it and the CPU.
 *
 * [gpu] plugin = NAME must work or the engine refuses to start, with one
 * error naming the plugin and the reason; plugin = auto uses the best
 * usable gpu plugin and falls back to the CPU, with a line saying why, when
 * there is none or it cannot hold anything; none keeps to the CPU.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/ckpt.h"
#include "engine/engine.h"
#include "plugin/registry.h"
#include "util/log.h"

/* "[gpu] budget_mib (FILE:LINE)" for messages. */
static const char *budget_where(const struct strata_engine *e, char *buf, size_t n)
{
	const char *w = strata_config_where(&e->cfg, "gpu", "budget_mib");

	snprintf(buf, n, "[gpu] budget_mib%s%s%s", w ? " (" : "", w ? w : "", w ? ")" : "");
	return buf;
}

/* The bytes of the device strata may use: auto = what it reports free. */
static int device_budget(struct strata_engine *e, uint64_t *out)
{
	const char *v = e->cfg.gpu_budget;
	const struct strata_device_info *info = &e->dev->info;
	char where[256], *end;
	unsigned long long mib;

	if (!v || !*v || !strcmp(v, "auto")) {
		const uint64_t reserve = (uint64_t)e->cfg.gpu_reserve << 20;

		/* the driver and the device's libraries take memory of their own */
		*out = info->mem_free > reserve ? info->mem_free - reserve : 0;
		return 0;
	}
	errno = 0;
	mib = strtoull(v, &end, 10);
	if (errno || *end || v[0] == '-' || mib == 0) {
		strata_error("%s: %s = '%s': expected a positive number of MiB or auto",
			     e->dev->name, budget_where(e, where, sizeof(where)), v);
		return -EINVAL;
	}
	if (mib > info->mem_total >> 20) {
		strata_error("%s: %s = %llu MiB is more than %s has (%" PRIu64 " MiB)",
			     e->dev->name, budget_where(e, where, sizeof(where)), mib, info->name,
			     info->mem_total >> 20);
		return -EINVAL;
	}
	*out = (uint64_t)mib << 20;
	return 0;
}

/* [gpu]'s expert cache keys into o (expert_cache = N|auto). */
static int cache_opts(struct strata_engine *e, struct strata_vcache_opts *o)
{
	const struct strata_config *c = &e->cfg;
	const char *v = c->gpu_expert_cache;
	char *end;
	unsigned long long n = 0;

	if (v && *v && strcmp(v, "auto")) {
		errno = 0;
		n = strtoull(v, &end, 10);
		if (errno || *end || v[0] == '-' || n == 0 || n > UINT32_MAX) {
			const char *w = strata_config_where(c, "gpu", "expert_cache");

			strata_error("[gpu] expert_cache%s%s%s = '%s': expected a positive number of "
				     "experts or auto", w ? " (" : "", w ? w : "", w ? ")" : "", v);
			return -EINVAL;
		}
	}
	*o = (struct strata_vcache_opts){
		.slots = (uint32_t)n, .pcie_frac = c->gpu_pcie_frac,
		.adapt_every = c->gpu_adapt_every, .adapt_swaps = c->gpu_adapt_swaps,
		.lend_min = c->gpu_lend_min, .lend_frac = c->gpu_lend_frac,
		.lend_keep = c->gpu_lend_keep, .profile = c->gpu_profile,
		.profile_save = c->gpu_profile_save,
	};
	/* the reserve is what an automatic budget left free: kept after the cache is in */
	if (!c->gpu_budget || !*c->gpu_budget || !strcmp(c->gpu_budget, "auto"))
		o->reserve = (uint64_t)c->gpu_reserve << 20;
	return 0;
}

/* Load and open the gpu plugin named in [gpu]; *dev NULL when there is none to use. */
static int open_device(struct strata_engine *e, int automatic)
{
	const char *name = e->cfg.gpu_plugin;
	struct strata_plugin *p;
	int rc;

	if (automatic) {
		rc = strata_registry_best(e->reg, STRATA_PLUGIN_GPU, &p);
		if (rc == -ENOENT) {
			strata_debug("[gpu] plugin = auto: no gpu plugin usable on this machine");
			return 0;
		}
	} else {
		rc = strata_registry_load(e->reg, STRATA_PLUGIN_GPU, name, &p);
	}
	if (rc)
		return rc; /* logged with the file and the reason */
	return strata_backend_device_create(p, &e->dev);
}

int strata_engine_make_ctx(struct strata_engine *e, uint32_t max_batch, uint32_t n_ctx)
{
	const char *name = e->cfg.gpu_plugin;
	const int automatic = !name || !*name || !strcmp(name, "auto");
	struct strata_ctx_opts o = { .pool = e->pool, .max_batch = max_batch, .n_ctx = n_ctx,
				     .n_seq = 1, .no_repack = e->cfg.model_repack };
	struct strata_placement_stats st;
	char where[256];
	int rc;

	if (!(name && !strcmp(name, "none")) && (rc = open_device(e, automatic))) {
		if (!automatic)
			return rc;
		strata_warn("[gpu] plugin = auto: the gpu plugin failed (above): running on the CPU");
	}
	if (e->dev && ((rc = device_budget(e, &o.device_budget)) || (rc = cache_opts(e, &o.vc))))
		return rc;
	o.device = e->dev;
	if ((rc = strata_ctx_create(e->model, &o, &e->ctx)))
		return rc;
	strata_ctx_placement(e->ctx, &st);
	if (e->dev && !st.dev_layers) {
		const uint64_t need = st.dev_need_bytes;

		if (!automatic && st.dev_skipped == e->model->hp.n_layer - e->model->hp.n_nextn) {
			strata_error("%s supports none of the model's layers (it lacks an op or a "
				     "weight type they need); use [gpu] plugin = none", e->dev->name);
			return -ENOTSUP;
		}
		if (!automatic) {
			strata_error("%s: %s of %" PRIu64 " MiB cannot hold the workspace and one "
				     "layer with its state (%" PRIu64 " MiB); raise it or use "
				     "[gpu] plugin = none", e->dev->name,
				     budget_where(e, where, sizeof(where)), o.device_budget >> 20,
				     (need + (1u << 20) - 1) >> 20);
			return -ENOSPC;
		}
		strata_info("%s: %" PRIu64 " MiB hold no layer (one needs %" PRIu64 " MiB) or it "
			    "lacks their ops: running on the CPU", e->dev->name,
			    o.device_budget >> 20, need >> 20);
		strata_ctx_free(e->ctx);
		e->ctx = NULL;
		strata_backend_free(e->dev);
		e->dev = NULL;
		o.device = NULL;
		return strata_ctx_create(e->model, &o, &e->ctx);
	}
	return 0;
}

int strata_engine_make_seq(struct strata_engine *e, uint32_t n_ctx)
{
	struct strata_ctx_opts o = { .pool = e->pool, .no_repack = e->cfg.model_repack };
	int rc = strata_seq_create(e->ctx, n_ctx, &e->seq);

	if (!rc || !e->dev)
		return rc;
	/* Placement reserved the state's room: a device that refuses it is failing. */
	strata_warn("%s cannot hold the sequence's state (above): running on the CPU",
		    e->dev->name);
	o.max_batch = e->ctx ? strata_ctx_max_batch(e->ctx) : 0;
	o.n_ctx = n_ctx;
	strata_ctx_free(e->ctx);
	e->ctx = NULL;
	strata_backend_free(e->dev);
	e->dev = NULL;
	if ((rc = strata_ctx_create(e->model, &o, &e->ctx)))
		return rc;
	return strata_seq_create(e->ctx, n_ctx, &e->seq);
}

int strata_engine_fall_back(struct strata_engine *e)
{
	struct strata_ctx_opts o = { .pool = e->pool, .no_repack = e->cfg.model_repack };
	uint32_t n_ctx = strata_seq_n_ctx(e->seq);
	int rc;

	if (!e->dev)
		return 0;
	strata_warn("%s failed (above): the engine runs on the CPU from now on", e->dev->name);
	o.max_batch = strata_seq_max_batch(e->seq);
	o.n_ctx = n_ctx;
	strata_ckpts_free(e->ckpts);
	e->ckpts = NULL;
	strata_seq_free(e->seq);
	e->seq = NULL;
	strata_ctx_free(e->ctx);
	e->ctx = NULL;
	strata_backend_free(e->dev);
	e->dev = NULL;
	e->n_hist = 0;
	if ((rc = strata_ctx_create(e->model, &o, &e->ctx)) ||
	    (rc = strata_seq_create(e->ctx, n_ctx, &e->seq)))
		return rc;
	if (e->xs)
		strata_ctx_set_xstore(e->ctx, e->xs);
	return e->cfg.serve_checkpoints ? strata_ckpts_create(e->seq, e->cfg.serve_checkpoints,
							      e->ckpt_reread, &e->ckpts)
					: 0;
}
