/*
 * engine.c - one engine: load everything a config names, then generate.
 */
#define _GNU_SOURCE /* strndup */
#include "engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "engine/ckpt.h"
#include "gguf/gguf.h"
#include "model/xstore.h"
#include "ple/ple.h"
#include "plugin/path.h"
#include "plugin/registry.h"
#include "sample/sampler.h"
#include "util/clock.h"
#include "util/log.h"

static double now_ms(void)
{
	return strata_now_ns() / 1e6;
}

/* The model's name (file name without ".gguf") and its chat template, kept for servers. */
static int engine_describe(struct strata_engine *e)
{
	const char *path = e->cfg.model_path, *base = strrchr(path, '/');
	struct strata_str tmpl;
	size_t len;

	base = base ? base + 1 : path;
	len = strlen(base);
	if (len > 5 && strcmp(base + len - 5, ".gguf") == 0)
		len -= 5;
	e->model_name = strndup(base, len);
	if (!e->model_name)
		return -ENOMEM;
	if (strata_gguf_get_str(e->model->gguf, "general.architecture", &tmpl) == 0)
		e->arch = strndup(tmpl.s, (size_t)tmpl.len);
	else
		e->arch = strdup("");
	if (!e->arch)
		return -ENOMEM;
	if (strata_gguf_get_str(e->model->gguf, "tokenizer.chat_template", &tmpl) == 0) {
		e->chat_template = strndup(tmpl.s, (size_t)tmpl.len);
		if (!e->chat_template)
			return -ENOMEM;
	}
	return 0;
}

/*
 * Turn checkpoints per [serve] checkpoints; STRATA_CKPT_REREAD=1 keeps them
 * (they still split prompts into parts) but re-reads every prompt, so the
 * two can be compared.
 */
static int engine_checkpoints(struct strata_engine *e)
{
	const char *rr = getenv("STRATA_CKPT_REREAD");
	int reread = rr && *rr && strcmp(rr, "0") != 0;

	e->ckpt_reread = reread;
	if (!e->cfg.serve_checkpoints)
		return 0;
	if (reread)
		strata_info("STRATA_CKPT_REREAD: prompts are read whole, checkpoints only split them");
	return strata_ckpts_create(e->seq, e->cfg.serve_checkpoints, reread, &e->ckpts);
}

/* [model] experts = stream: the experts are read on use through the [io] plugin. */
static int engine_xstore(struct strata_engine *e)
{
	const struct strata_config *c = &e->cfg;
	struct strata_xstore_opts o = {
		.cache_bytes = (uint64_t)c->expert_cache << 20, .depth = c->io_depth,
		.timeout_ms = c->io_timeout_ms, .direct = c->io_direct,
	};
	struct strata_plugin *pl;
	int rc;

	if (!c->model_experts)
		return 0;
	if (!e->model->hp.n_expert) {
		strata_info("%s has no experts: [model] experts = stream changes nothing",
			    c->model_path);
		return 0;
	}
	rc = strata_registry_pick_io(e->reg, c->io_plugin,
				     "streaming experts ([model] experts = stream)", &pl);
	if (rc)
		return rc;
	o.ops = pl->desc->ops;
	o.host = &pl->host;
	o.io_name = pl->desc->name;
	if ((rc = strata_xstore_open(e->model, c->model_path, &o, &e->xs)))
		return rc;
	strata_ctx_set_xstore(e->ctx, e->xs);
	return 0;
}

/*
 * qwen4exp: the PLE table is read through a reader ([ple]: direct I/O by
 * an io plugin, or copies out of a mapping), never paged in whole.
 */
static int engine_ple(struct strata_engine *e)
{
	struct strata_ple_table t;
	struct strata_ple_opts o;
	int rc;

	if (e->model->hp.arch != STRATA_ARCH_QWEN4EXP || e->model->hp.q4x.ple_layer == UINT32_MAX)
		return 0;
	strata_ple_opts_from_config(&e->cfg, &o);
	o.chunk_rows_hint = STRATA_PLE_HEADS * strata_ctx_max_batch(e->ctx);
	if ((rc = strata_ple_table_from_gguf(e->model->gguf, &t)) ||
	    (rc = strata_ple_reader_open(e->reg, &t, &o, &e->ple)))
		return rc;
	strata_info("PLE table: %llu rows of %s, read by %s",
		    (unsigned long long)t.n_rows, strata_type_name(t.type),
		    strata_ple_reader_describe(e->ple));
	return strata_ctx_set_ple(e->ctx, e->ple);
}

/*
 * [spec] drafter with auto resolved: mtp where the model's nextn block runs
 * here, else lookup (said once); mtp asked for on a model whose block does
 * not run is refused.  No drafter with a window of 1 or the logits dump
 * (whose rows are one-token decoding's).
 */
static int engine_drafter(struct strata_engine *e)
{
	const struct strata_config *c = &e->cfg;
	const char *why = NULL;
	int d = c->spec_drafter;

	if (d == STRATA_DRAFT_MTP || d == STRATA_DRAFT_AUTO)
		(void)strata_mtp_check(e->ctx, &why);
	if (d == STRATA_DRAFT_MTP && why) {
		const char *w = strata_config_where(c, "spec", "drafter");

		strata_error("%s: [spec] drafter = mtp: %s: %s (drafter = lookup or auto drafts "
			     "without it)", w ? w : "--spec-drafter", c->model_path, why);
		return -EINVAL;
	}
	if (d == STRATA_DRAFT_AUTO) {
		d = why ? STRATA_DRAFT_LOOKUP : STRATA_DRAFT_MTP;
		if (why && e->window > 1)
			strata_info("[spec] drafter = auto: %s; drafting with lookup", why);
	}
	e->drafter = e->window > 1 && !c->dump_logits ? d : STRATA_DRAFT_NONE;
	if (e->drafter == STRATA_DRAFT_MTP)
		return strata_mtp_setup(e);
	return 0;
}

/* engine.h */
int strata_engine_seq_parts(struct strata_engine *e)
{
	const struct strata_config *c = &e->cfg;
	struct strata_sampler_params sp = {
		.temp = c->temp, .top_k = c->top_k, .top_p = c->top_p, .min_p = c->min_p,
		.repeat_penalty = c->repeat_penalty, .repeat_last_n = c->repeat_last_n,
		.seed = c->seed,
	};
	uint32_t n_vocab = e->model->hp.n_vocab;
	int rc;

	if ((rc = strata_path_list_create_at(e->reg, c->paths,
					     strata_config_where(c, "prompt", "paths"), &e->paths)) ||
	    (rc = engine_checkpoints(e)))
		return rc;
	e->window = c->spec_window < strata_seq_max_batch(e->seq) ? c->spec_window
								  : strata_seq_max_batch(e->seq);
	if (c->dump_logits)
		sp.temp = 0.0f; /* the dump is of greedy tokens, as the golden files are */
	if ((rc = strata_sampler_create(&sp, (int32_t)n_vocab, &e->sampler)))
		return rc;
	e->logits = calloc(n_vocab, sizeof(float));
	e->hist = malloc((size_t)strata_seq_n_ctx(e->seq) * sizeof(int32_t));
	if ((rc = engine_drafter(e)))
		return rc;
	if (e->drafter)
		e->spec_rows = malloc((size_t)e->window * n_vocab * sizeof(float));
	if (!e->logits || !e->hist || (e->drafter && !e->spec_rows)) {
		strata_error("out of memory for the logits");
		return -ENOMEM;
	}
	return 0;
}

static int engine_load(struct strata_engine *e, const char *argv0)
{
	const struct strata_config *c = &e->cfg;
	uint32_t chunk, n_vocab, n_ctx;
	int rc;

	if (!c->model_path || !*c->model_path) {
		strata_error("no model: set [model] path in the INI file or pass -m FILE");
		return -EINVAL;
	}
	if ((rc = strata_config_prefill_chunk(c->prefill, &chunk)))
		return rc;
	if (c->spec_ngram_min > c->spec_ngram_max) {
		const char *w = strata_config_where(c, "spec", "ngram_max");

		if (!w)
			w = strata_config_where(c, "spec", "ngram_min");
		strata_error("%s: [spec] ngram_min (%u) is larger than ngram_max (%u)",
			     w ? w : "config", c->spec_ngram_min, c->spec_ngram_max);
		return -EINVAL;
	}
	if ((rc = strata_model_load_ex(c->model_path,
				       c->model_experts ? STRATA_MODEL_STREAM_EXPERTS : 0,
				       &e->model)) ||
	    (rc = strata_tokenizer_load(e->model->gguf, &e->tok)))
		return rc;
	n_vocab = e->model->hp.n_vocab;
	if (strata_tokenizer_n_vocab(e->tok) > (int32_t)n_vocab) {
		strata_error("%s: the vocabulary has %d tokens but the embedding only %u rows",
			     c->model_path, strata_tokenizer_n_vocab(e->tok), n_vocab);
		return -EINVAL;
	}
	n_ctx = c->ctx_size ? c->ctx_size : e->model->hp.n_ctx_train < 4096
						 ? e->model->hp.n_ctx_train : 4096;
	/* The registry keeps the config: the shared one, which outlives every engine. */
	if ((rc = strata_pool_create(c->threads, &e->pool)) ||
	    (rc = strata_registry_create(&e->sh->cfg, argv0, &e->reg)) ||
	    (rc = strata_engine_make_ctx(e, chunk < n_ctx ? chunk : n_ctx, n_ctx)) ||
	    (rc = strata_engine_make_seq(e, n_ctx)) || (rc = engine_xstore(e)) ||
	    (rc = engine_ple(e)) || (rc = strata_engine_seq_parts(e)))
		return rc;
	return engine_describe(e);
}

int strata_engine_create(struct strata_config *cfg, const char *argv0,
			 struct strata_engine **out)
{
	struct strata_engine *e = calloc(1, sizeof(*e));
	int rc;

	*out = NULL;
	if (e)
		e->sh = calloc(1, sizeof(*e->sh));
	if (!e || !e->sh) {
		free(e);
		strata_config_free(cfg);
		return -ENOMEM;
	}
	/* The shared part owns the config; every engine on the model reads a copy of it. */
	e->sh->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	atomic_init(&e->sh->refs, 1);
	pthread_mutex_init(&e->sh->run, NULL);
	e->cfg = e->sh->cfg;
	/* -v: info and above is the default; -v -v adds the debug lines (prompt parts). */
	if (e->cfg.verbose > 1)
		strata_log_set_level(STRATA_LOG_LVL_DEBUG);
	rc = engine_load(e, argv0);
	if (rc) {
		strata_engine_free(e);
		return rc;
	}
	*out = e;
	return 0;
}

int strata_engine_create_args(int argc, char **argv, struct strata_engine **out)
{
	struct strata_config cfg;
	int rc;

	strata_log_clear_error(); /* strata_last_error() tells of this call alone */
	*out = NULL;
	if ((rc = strata_config_init(&cfg)))
		return rc;
	rc = strata_config_from_args(&cfg, argc, argv);
	if (rc) {
		strata_config_free(&cfg);
		return rc;
	}
	return strata_engine_create(&cfg, argc > 0 ? argv[0] : NULL, out);
}

void strata_engine_free(struct strata_engine *e)
{
	if (!e)
		return;
	/* The engine's own parts; the path plugins' instances before the registry. */
	strata_path_list_free(e->paths);
	strata_ckpts_free(e->ckpts); /* before the sequence its snapshots belong to */
	strata_sampler_free(e->sampler);
	strata_seq_free(e->seq);
	free(e->logits);
	free(e->spec_rows);
	strata_mtp_release(e);
	free(e->dump);
	free(e->prompt_text);
	free(e->hist);
	/* The model's, with the last engine on it. */
	if (atomic_fetch_sub(&e->sh->refs, 1) == 1) {
		strata_xstore_close(e->xs); /* its io plugin lives in the registry */
		strata_ctx_free(e->ctx);
		strata_ple_reader_close(e->ple); /* after the context that read through it */
		strata_backend_free(e->dev);
		strata_registry_free(e->reg); /* after the plugins' objects: the device, the store */
		strata_pool_free(e->pool);
		strata_tokenizer_free(e->tok);
		strata_model_free(e->model);
		free(e->model_name);
		free(e->arch);
		free(e->chat_template);
		pthread_mutex_destroy(&e->sh->run);
		strata_config_free(&e->sh->cfg);
		free(e->sh);
	}
	free(e);
}

int strata_engine_prompt_tokens(struct strata_engine *e, int32_t **ids)
{
	const struct strata_config *c = &e->cfg;
	unsigned flags = STRATA_TOK_PARSE_SPECIAL;
	char *text = NULL;
	size_t len = 0;
	int rc;

	strata_log_clear_error(); /* strata_last_error() tells of this call alone */
	*ids = NULL;
	if (c->prompt_file) {
		FILE *f = fopen(c->prompt_file, "rb");

		if (!f) {
			rc = -errno;
			strata_error("cannot read prompt file %s: %s", c->prompt_file, strerror(-rc));
			return rc;
		}
		{
			size_t cap = 0, r;
			char buf[65536];

			while ((r = fread(buf, 1, sizeof(buf), f)) > 0) {
				char *nt = realloc(text, cap + r + 1);

				if (!nt) {
					free(text);
					fclose(f);
					return -ENOMEM;
				}
				text = nt;
				memcpy(text + cap, buf, r);
				cap += r;
			}
			len = cap;
		}
		fclose(f);
	} else if (c->prompt) {
		len = strlen(c->prompt);
		text = malloc(len + 1);
		if (!text)
			return -ENOMEM;
		memcpy(text, c->prompt, len);
	} else {
		text = malloc(1);
		if (!text)
			return -ENOMEM;
	}
	if (c->add_bos != 0)
		flags |= STRATA_TOK_ADD_BOS; /* auto: the tokenizer follows the vocab */
	rc = strata_tokenize(e->tok, text ? text : "", len, flags, ids);
	/* Kept so the caller can echo the prompt without reading the file again. */
	free(e->prompt_text);
	e->prompt_text = text;
	e->prompt_len = len;
	return rc;
}

/* ---- the engine as path plugins see it ------------------------------------- */

int strata_engine_feed(struct strata_engine *e, const int32_t *tokens, uint32_t n, float *rows)
{
	uint32_t pos = strata_seq_pos(e->seq), nv = e->model->hp.n_vocab;
	int rc;

	/* Checked before each forward, so a cancel lands within one chunk or token. */
	if (e->cancel && e->cancel(e->cancel_user))
		return -ECANCELED;
	if (e->dump && !rows)
		rows = e->dump + (size_t)pos * nv;
	rc = e->mtp_logits && n ? strata_mtp_before(e, tokens[0], pos) : 0;
	if (!rc && rows) {
		rc = strata_forward(e->seq, tokens, n, rows, 1);
		if (!rc)
			memcpy(e->logits, rows + (size_t)(n - 1) * nv, nv * sizeof(float));
	} else if (!rc) {
		rc = strata_forward(e->seq, tokens, n, e->logits, 0);
	}
	/* a window's kept rows are known after its verification: the window's */
	if (!rc && e->mtp_logits && !rows && n)
		rc = strata_mtp_after(e, tokens, n, pos);
	if (rc) {
		e->failed = rc;
		e->mtp_pend = 0;
		/* A device that failed is dropped: this request fails, the next one
		 * runs on the CPU (a fresh sequence: its state was on the device). */
		if (e->dev && e->dev->broken) {
			int frc = strata_engine_fall_back(e);

			return frc ? frc : rc;
		}
		/* A forward that failed part-way (an expert read) leaves a recurrent
		 * state half-updated: start over; checkpoints are copies, still good. */
		if (strata_seq_recurrent(e->seq)) {
			(void)strata_seq_truncate(e->seq, 0);
			e->n_hist = 0;
		}
		return rc;
	}
	memcpy(e->hist + pos, tokens, (size_t)n * sizeof(int32_t));
	e->n_hist = pos + n;
	return 0;
}

static int iface_forward_batch(void *engine, const int32_t *tokens, uint32_t n)
{
	return strata_engine_feed(engine, tokens, n, NULL);
}

/*
 * One decode window of n <= window tokens: what every decode step runs
 * (gen_loop calls it with the sampled token), so path-window reads a prompt
 * part with exactly the code and batch shapes decode uses.
 */
static int iface_forward_window(void *engine, const int32_t *tokens, uint32_t n)
{
	struct strata_engine *e = engine;

	if (n == 0 || n > e->window) {
		strata_error("decode window of %u tokens asked for: the window holds 1 to %u "
			     "([spec] window)", n, e->window);
		return -EINVAL;
	}
	return strata_engine_feed(e, tokens, n, NULL);
}

static uint32_t iface_window(void *engine)
{
	struct strata_engine *e = engine;

	return e->window;
}

static uint32_t iface_max_batch(void *engine)
{
	struct strata_engine *e = engine;

	return strata_seq_max_batch(e->seq);
}

/* Prompt tokens [from, to) as one part, through the first path that takes it. */
static int read_part(struct strata_engine *e, const int32_t *prompt, uint32_t from,
		     uint32_t to, int is_last)
{
	struct strata_engine_iface eng = {
		.version = 1, .engine = e, .forward_batch = iface_forward_batch,
		.forward_window = iface_forward_window, .window = iface_window,
		.max_batch = iface_max_batch,
	};
	struct strata_part part = {
		.tokens = prompt + from, .n_tokens = to - from, .pos = strata_seq_pos(e->seq),
		.is_last = (uint32_t)is_last,
	};

	return strata_path_list_run(e->paths, &part, &eng);
}

static int check_prompt(const struct strata_engine *e, uint32_t n_prompt)
{
	uint32_t n_ctx = strata_seq_n_ctx(e->seq);

	if (n_prompt == 0) {
		strata_error("the prompt is empty: nothing to continue from");
		return -EINVAL;
	}
	if (n_prompt > n_ctx) {
		strata_error("the prompt has %u tokens but the context holds %u "
			     "(raise [model] ctx_size or --ctx-size)", n_prompt, n_ctx);
		return -ENOSPC;
	}
	return 0;
}

/*
 * Bring the sequence to the prompt: positions [0, keep) are resumed from the
 * sequence or a turn checkpoint (never with --dump-logits, whose rows start
 * at 0), the rest is read through the prompt paths in parts: up to the last
 * turn checkpoint inside the prompt, then what follows it (the new turn), so
 * each part picks its own path.
 */
static int prefill(struct strata_engine *e, const struct strata_gen_run *r, uint32_t *reused)
{
	struct strata_resume res = { 0 };
	uint32_t n = r->n_prompt;
	int rc;

	if (e->ckpts && !e->dump)
		rc = strata_ckpts_resume(e->ckpts, e->hist, e->n_hist, r->prompt, n, &res);
	else
		rc = strata_seq_truncate(e->seq, 0);
	if (rc) {
		strata_error("cannot bring the sequence to the prompt: %s", strerror(-rc));
		return rc;
	}
	memcpy(e->hist, r->prompt, (size_t)res.keep * sizeof(int32_t));
	e->n_hist = res.keep;
	/* The MTP row waiting for position keep is this prefix's only when the
	 * sequence went on where it stood (not a checkpoint of another turn). */
	if (res.restored || res.keep != e->mtp_pend)
		e->mtp_pend = 0;
	strata_sampler_reset(r->smp);
	for (uint32_t i = 0; i < n; i++)
		strata_sampler_accept(r->smp, r->prompt[i]);
	e->failed = 0;
	*reused = res.keep;
	if (res.keep || res.split)
		strata_debug("prompt of %u tokens: %u resumed (%s), last checkpoint at %u", n,
			     res.keep, res.restored ? "checkpoint" : "sequence", res.split);
	if (res.split > res.keep && (rc = read_part(e, r->prompt, res.keep, res.split, 0)))
		return rc;
	rc = read_part(e, r->prompt, res.split > res.keep ? res.split : res.keep, n, 1);
	/* A checkpoint that cannot be kept (logged) costs a re-read later, not this answer. */
	if (!rc && e->ckpts)
		(void)strata_ckpts_save(e->ckpts, e->hist, e->n_hist);
	return rc;
}

static int gen_loop(struct strata_engine *e, const struct strata_gen_run *r, struct strata_stats *stats)
{
	struct strata_gen_state g = { e, r, 0, STRATA_FINISH_LENGTH };
	struct strata_spec_run sr = { .smp = r->smp };
	uint32_t reused = 0;
	double t0, t1, ple0, ple1;
	uint64_t f0, f1, ple_chunks;
	int rc;

	strata_ctx_ple_waited(e->ctx, &ple0, &ple_chunks);
	f0 = strata_ctx_forwards(e->ctx);
	t0 = now_ms();
	if ((rc = prefill(e, r, &reused)))
		return rc;
	t1 = now_ms();
	f1 = strata_ctx_forwards(e->ctx);
	strata_ctx_ple_waited(e->ctx, &ple1, &ple_chunks);
	if (e->spec_rows && strata_seq_recurrent(e->seq) &&
	    (rc = strata_seq_snapshot_create(e->seq, &sr.snap)))
		return rc;
	rc = strata_engine_decode(&g, &sr);
	strata_seq_snapshot_free(sr.snap);
	if (rc)
		return rc;
	/* A completed turn: a follow-up prompt resumes here. */
	if (e->ckpts)
		(void)strata_ckpts_save(e->ckpts, e->hist, e->n_hist);
	if (stats) {
		stats->n_prompt = r->n_prompt;
		stats->n_gen = g.n_gen;
		stats->prompt_ms = t1 - t0;
		stats->gen_ms = now_ms() - t1;
		stats->n_reused = reused;
		stats->finish = g.finish;
		stats->n_chunks = (uint32_t)(f1 - f0);
		stats->ple_wait_ms = ple1 - ple0;
		stats->n_windows = sr.windows;
		stats->n_drafted = sr.drafted;
		stats->n_accepted = sr.accepted;
	}
	return (int)g.n_gen;
}

static int generate_locked(struct strata_engine *e, const int32_t *prompt, uint32_t n_prompt,
			    int32_t n_predict, strata_token_fn fn, void *user, struct strata_stats *stats)
{
	struct strata_gen_run r = {
		.prompt = prompt, .n_prompt = n_prompt, .n_predict = n_predict,
		.smp = e->sampler, .fn = fn, .user = user,
	};
	uint32_t n_ctx = strata_seq_n_ctx(e->seq);
	int rc;

	strata_log_clear_error(); /* strata_last_error() tells of this call alone */
	if ((rc = check_prompt(e, n_prompt)))
		return rc;
	if (e->cfg.dump_logits) {
		/* Rows for the prompt, every generated token, and the one after. */
		size_t rows = n_predict < 0 ? n_ctx : n_prompt + (uint64_t)n_predict + 1;

		if (rows > n_ctx)
			rows = n_ctx;
		free(e->dump);
		e->dump = calloc(rows * e->model->hp.n_vocab, sizeof(float));
		if (!e->dump) {
			strata_error("out of memory for %zu logits rows (--dump-logits)", rows);
			return -ENOMEM;
		}
	}
	e->cancel = NULL;
	return gen_loop(e, &r, stats);
}

int strata_generate(struct strata_engine *e, const int32_t *prompt, uint32_t n_prompt,
		    int32_t n_predict, strata_token_fn fn, void *user, struct strata_stats *stats)
{
	int rc;

	/* Engines on one model (strata_engine_new_sequence) share its workspaces. */
	pthread_mutex_lock(&e->sh->run);
	rc = generate_locked(e, prompt, n_prompt, n_predict, fn, user, stats);
	pthread_mutex_unlock(&e->sh->run);
	return rc;
}

const char *strata_last_error(void)
{
	return strata_log_last_error();
}

int strata_engine_expert_stats(const struct strata_engine *e, struct strata_expert_stats *st)
{
	struct strata_xstore_stats x;

	memset(st, 0, sizeof(*st));
	if (!e->xs)
		return -ENOENT;
	strata_xstore_stats(e->xs, &x);
	*st = (struct strata_expert_stats){ .hits = x.hits, .misses = x.misses, .reads = x.reads,
					    .bytes = x.bytes, .retries = x.retries,
					    .failures = x.failures, .slots = x.slots };
	return 0;
}

int strata_engine_gpu_cache_stats(const struct strata_engine *e, struct strata_gpu_cache_stats *st)
{
	struct strata_vcache_stats v;

	memset(st, 0, sizeof(*st));
	strata_ctx_expert_cache(e->ctx, &v);
	if (!v.slots)
		return -ENOENT;
	*st = (struct strata_gpu_cache_stats){
		.hits = v.hits, .misses = v.misses, .fills = v.fills, .swaps = v.swaps,
		.pcie = v.pcie, .lent = v.lent, .refills = v.refills, .bytes_in = v.bytes_in,
		.refill_bytes = v.refill_bytes, .refill_ms = v.refill_ms, .slots = v.slots,
		.used = v.used,
	};
	return 0;
}

size_t strata_engine_backends(const struct strata_engine *e, char *buf, size_t n)
{
	return strata_ctx_describe(e->ctx, buf, n);
}

/* ---- per-call parameters --------------------------------------------------- */

void strata_engine_gen_defaults(const struct strata_engine *e, struct strata_gen_params *p)
{
	const struct strata_config *c = &e->cfg;

	memset(p, 0, sizeof(*p));
	p->n_predict = c->n_predict;
	p->temp = c->temp;
	p->top_k = c->top_k;
	p->top_p = c->top_p;
	p->min_p = c->min_p;
	p->repeat_penalty = c->repeat_penalty;
	p->repeat_last_n = c->repeat_last_n;
	p->seed = c->seed;
}

static int generate_ex_locked(struct strata_engine *e, const int32_t *prompt, uint32_t n_prompt,
				       const struct strata_gen_params *p, strata_token_fn fn, void *user,
				       struct strata_stats *stats)
{
	struct strata_sampler_params sp = {
		.temp = p->temp, .top_k = p->top_k, .top_p = p->top_p, .min_p = p->min_p,
		.repeat_penalty = p->repeat_penalty, .repeat_last_n = p->repeat_last_n,
		.seed = p->seed,
	};
	struct strata_gen_run r = {
		.prompt = prompt, .n_prompt = n_prompt, .n_predict = p->n_predict,
		.fn = fn, .user = user, .logits = p->logits,
	};
	int rc;

	strata_log_clear_error(); /* strata_last_error() tells of this call alone */
	if ((rc = check_prompt(e, n_prompt)))
		return rc;
	if ((rc = strata_sampler_create(&sp, (int32_t)e->model->hp.n_vocab, &r.smp)))
		return rc;
	/* Dump rows are sized by strata_generate(); this call writes none. */
	free(e->dump);
	e->dump = NULL;
	e->cancel = p->cancel;
	e->cancel_user = user;
	rc = gen_loop(e, &r, stats);
	e->cancel = NULL;
	strata_sampler_free(r.smp);
	return rc;
}

int strata_generate_ex(struct strata_engine *e, const int32_t *prompt, uint32_t n_prompt,
		       const struct strata_gen_params *p, strata_token_fn fn, void *user,
		       struct strata_stats *stats)
{
	int rc;

	/* Engines on one model (strata_engine_new_sequence) share its workspaces. */
	pthread_mutex_lock(&e->sh->run);
	rc = generate_ex_locked(e, prompt, n_prompt, p, fn, user, stats);
	pthread_mutex_unlock(&e->sh->run);
	return rc;
}

int strata_engine_tokenize(const struct strata_engine *e, const char *text, size_t len,
			   unsigned flags, int32_t **ids)
{
	unsigned f = 0;

	strata_log_clear_error(); /* strata_last_error() tells of this call alone */
	if (flags & STRATA_TOKENIZE_ADD_BOS)
		f |= STRATA_TOK_ADD_BOS;
	if (flags & STRATA_TOKENIZE_PARSE_SPECIAL)
		f |= STRATA_TOK_PARSE_SPECIAL;
	return strata_tokenize(e->tok, text, len, f, ids);
}

const char *strata_engine_arch(const struct strata_engine *e)
{
	return e->arch;
}

const char *strata_engine_setting(const struct strata_engine *e, const char *section,
				  const char *key)
{
	return strata_config_get_any(&e->cfg, section, key);
}

const char *strata_engine_prompt_text(const struct strata_engine *e, size_t *len)
{
	*len = e->prompt_text ? e->prompt_len : 0;
	return e->prompt_text ? e->prompt_text : "";
}

const char *strata_engine_model_name(const struct strata_engine *e)
{
	return e->model_name;
}

uint32_t strata_engine_n_ctx(const struct strata_engine *e)
{
	return strata_seq_n_ctx(e->seq);
}

const char *strata_engine_chat_template(const struct strata_engine *e)
{
	return e->chat_template;
}

/* ---- the vocabulary, for servers ----------------------------------------------------- */

int32_t strata_engine_n_vocab(const struct strata_engine *e)
{
	return strata_tokenizer_n_vocab(e->tok);
}

int32_t strata_engine_token_bos(const struct strata_engine *e)
{
	return strata_tokenizer_bos(e->tok);
}

int32_t strata_engine_token_eos(const struct strata_engine *e)
{
	return strata_tokenizer_eos(e->tok);
}

int strata_engine_token_is_eog(const struct strata_engine *e, int32_t id)
{
	return strata_tokenizer_is_eog(e->tok, id);
}

const char *strata_engine_token_text(const struct strata_engine *e, int32_t id)
{
	return strata_token_text(e->tok, id);
}

int strata_engine_token_piece(const struct strata_engine *e, int32_t id, char *buf, size_t cap)
{
	return strata_token_to_piece(e->tok, id, buf, cap);
}

int strata_engine_detokenize(const struct strata_engine *e, const int32_t *ids, size_t n,
			     int special, char *buf, size_t cap)
{
	return strata_detokenize(e->tok, ids, n, special ? STRATA_DETOK_UNPARSE_SPECIAL : 0, buf,
				 cap);
}
