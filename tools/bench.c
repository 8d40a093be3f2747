/*
 * bench.c - strata-bench: prompt (pp) and decode (tg) speed of a model, the
 * way llama-bench measures them, so the figures compare with llama.cpp's:
 *   pp N: one batched forward of N tokens into an empty context;
 *   tg N: N single-token forwards, each sampling nothing (greedy not needed);
 *   with -d D both start at depth D instead (llama-bench's -d, "tg64 @ d4096"):
 *   each repetition first reads D tokens into the emptied context, untimed,
 *   so decode's attention reads a cache D positions long.
 * Each test runs after one warm-up (-w 0: none) and is repeated -r times; the median and
 * the spread are printed, one line per test, plus a CSV with -o.  With -x
 * the experts are streamed ([model] experts = stream) through the io plugin
 * -i into a cache of -x MiB, and the store's totals are printed at the end.
 * With -g the model runs on a device plugin (gpu-sim, with -P its directory)
 * within a budget -b: all (everything on it), dense (its dense weights and
 * state: every routed expert on the CPU), mid (and half the experts' bytes),
 * quarter (a quarter of them) or a number of MiB; the expert cache runs with
 * strata.ini's defaults; the bytes that crossed its link per token, and
 * after the runs the backends line (the cache's hit rate), are printed.
 * A qwen4exp model's PLE rows are read through the PLE reader as the engine
 * reads them (-R readers, io plugin -i; the row cache -C rows, 0 by default
 * so that every repetition reads its rows from the SSD, as a cold table),
 * and each pp test says how long layer 1 waited for them; -c reads the
 * prompt in chunks of that many tokens.
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "config/config.h"
#include "cpu/kernels.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/xstore.h"
#include "ple/ple.h"
#include "plugin/registry.h"
#include "util/clock.h"
#include "util/log.h"

static double now_s(void)
{
	return (double)strata_now_ns() / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct bench {
	struct strata_config cfg;
	struct strata_registry *reg;
	struct strata_xstore *xs;
	struct strata_model *m;
	struct strata_ctx *ctx;
	struct strata_seq *seq;
	struct strata_pool *pool;
	struct strata_backend *dev;
	struct strata_ple_reader *ple;
	uint32_t chunk; /* prompt tokens per forward */
	uint32_t depth; /* context positions filled, untimed, before each run */
	uint32_t fill;  /* tokens per forward of that fill */
	int warmup;     /* run each test once before timing it */
	int32_t *tokens;
	float *logits;
};

/* Seconds for one pp (n_tg == 0) or tg run. */
static int run_once(struct bench *b, uint32_t n_pp, uint32_t n_tg, double *secs)
{
	double t0;
	int rc;

	const int32_t *tok = b->tokens + b->depth;

	strata_seq_truncate(b->seq, 0);
	for (uint32_t i = 0; i < b->depth; i += b->fill) {
		const uint32_t k = b->depth - i < b->fill ? b->depth - i : b->fill;

		if ((rc = strata_forward(b->seq, b->tokens + i, k, b->logits, 0)))
			return rc;
	}
	t0 = now_s();
	for (uint32_t i = 0; i < n_pp; i += b->chunk) {
		const uint32_t k = n_pp - i < b->chunk ? n_pp - i : b->chunk;

		rc = strata_forward(b->seq, tok + i, k, b->logits, 0);
		if (rc)
			return rc;
	}
	for (uint32_t i = 0; i < n_tg; i++) {
		rc = strata_forward(b->seq, tok + i, 1, b->logits, 0);
		if (rc)
			return rc;
	}
	*secs = now_s() - t0;
	return 0;
}

static int bench_test(struct bench *b, const char *name, uint32_t n_pp, uint32_t n_tg, int reps,
		      int threads, FILE *csv, const char *model)
{
	double *ts = calloc((size_t)reps, sizeof(double)), secs;
	uint32_t n = n_pp ? n_pp : n_tg;
	int rc = b->warmup ? run_once(b, n_pp, n_tg, &secs) : 0; /* page in the weights */
	const uint64_t in0 = b->dev ? b->dev->link.in_bytes : 0;
	const uint64_t out0 = b->dev ? b->dev->link.out_bytes : 0;
	double ple0, ple1;
	uint64_t chunks0, chunks1;

	if (!ts)
		return -ENOMEM;
	strata_ctx_ple_waited(b->ctx, &ple0, &chunks0);
	for (int r = 0; !rc && r < reps; r++) {
		rc = run_once(b, n_pp, n_tg, &secs);
		ts[r] = n / secs;
		if (isatty(2))
			fprintf(stderr, "\r%s: run %d/%d: %.1f tok/s   ", name, r + 1, reps, ts[r]);
	}
	if (isatty(2))
		fprintf(stderr, "\r%60s\r", "");
	strata_ctx_ple_waited(b->ctx, &ple1, &chunks1);
	if (!rc && b->ple && n_pp && chunks1 > chunks0)
		printf("ple: %s: layer 1 waited %.2f ms per chunk of %u tokens (%llu chunks; %s)\n",
		       name, (ple1 - ple0) / (double)(chunks1 - chunks0), b->chunk,
		       (unsigned long long)(chunks1 - chunks0), strata_ple_reader_describe(b->ple));
	if (!rc && b->dev) {
		printf("link: %s: %.1f KiB in, %.1f KiB out per token\n", name,
		       (b->dev->link.in_bytes - in0) / 1024.0 / ((double)reps * n),
		       (b->dev->link.out_bytes - out0) / 1024.0 / ((double)reps * n));
	}
	if (!rc) {
		qsort(ts, (size_t)reps, sizeof(double), cmp_double);
		printf("| %-8s | %7d | %12.1f | %10.1f | %10.1f |\n", name, threads,
		       ts[reps / 2], ts[0], ts[reps - 1]);
		if (csv)
			fprintf(csv, "%s,%s,%d,%.3f,%.3f,%.3f\n", model, name, threads, ts[reps / 2],
				ts[0], ts[reps - 1]);
	}
	free(ts);
	return rc;
}

/*
 * Weight bytes one decoded token reads: every tensor once, except that a
 * routed expert tensor counts n_expert_used of its n_expert slices, the
 * token embedding one row (unless it is also the output head), and
 * qwen4exp's PLE table (read from the SSD, not memory) nothing.  Decode's
 * memory roofline is the machine's read rate over this.
 */
static double active_bytes(const struct strata_model *m)
{
	const struct strata_gguf *g = m->gguf;
	const int64_t n = strata_gguf_n_tensors(g);
	int tied = 1;
	double sum = 0;

	for (int64_t i = 0; i < n; i++)
		if (strata_str_eq(strata_gguf_tensor(g, i)->name, "output.weight"))
			tied = 0;
	for (int64_t i = 0; i < n; i++) {
		const struct strata_gguf_tensor *t = strata_gguf_tensor(g, i);
		double sz = (double)t->size;

		if (strata_str_eq(t->name, STRATA_PLE_TENSOR))
			continue;
		if (strata_str_eq(t->name, "token_embd.weight") && !tied)
			sz /= (double)(t->ne[1] > 0 ? t->ne[1] : 1);
		else if (t->name.len > 5 && memmem(t->name.s, t->name.len, "_exps.", 6) &&
			 m->hp.n_expert > 0)
			sz = sz * m->hp.n_expert_used / m->hp.n_expert;
		sum += sz;
	}
	return sum;
}

static void usage(const char *prog)
{
	printf("usage: %s -m MODEL [-t THREADS] [-p N_PROMPT] [-n N_GEN] [-r REPS] [-o CSV]\n"
	       "  -m MODEL    GGUF model\n"
	       "  -t N        threads (default: all online CPUs)\n"
	       "  -p N        prompt test: one batch of N tokens (default 512; 0 = skip)\n"
	       "  -n N        decode test: N single-token steps (default 128; 0 = skip)\n"
	       "  -r N        repetitions after one warm-up (default 5); the median is reported\n"
	       "  -d N        run both tests at depth N: N tokens read, untimed, before each run\n"
	       "  -o FILE     append CSV rows: model,test,threads,median,min,max (tok/s)\n"
	       "  -x MIB      stream the experts into a cache of MIB MiB (0 = half the free memory)\n"
	       "  -i PLUGIN   io plugin that streams them (default auto)\n"
	       "  -g PLUGIN   run on this gpu plugin (e.g. gpu-sim)\n"
	       "  -b BUDGET   its budget: all (default), dense, mid (half the experts), quarter or MiB\n"
	       "  -P DIR      look for plugins in DIR first\n"
	       "  -c N        read the prompt in chunks of N tokens (default: one batch)\n"
	       "  -R N        qwen4exp: PLE reader threads (default 8; 0 = the single-thread path)\n"
	       "  -C ROWS     qwen4exp: PLE row cache (default 0: every run reads cold from the SSD)\n"
	       "  -S          qwen4exp: a 'ple io' stats line per chunk\n"
	       "  -w 0|1      run each test once untimed first (default 1)\n"
	       "  -L 0|1      copy the weights into huge pages at load, Q8_0, Q4_K, Q6_K and IQ4_NL\n"
	       "              interleaved (default 1; 0: compute on the file's mapping)\n",
	       prog);
}

/* The plugin registry (once), with DIR first and [gpu] plugin = gpu. */
static int registry(struct bench *b, const char *dir, const char *gpu, const char *argv0)
{
	int rc;

	if (b->reg)
		return 0;
	if ((rc = strata_config_init(&b->cfg)))
		return rc;
	if (dir && !(b->cfg.plugin_dir = strdup(dir)))
		return -ENOMEM;
	if (gpu) {
		free(b->cfg.gpu_plugin);
		if (!(b->cfg.gpu_plugin = strdup(gpu)))
			return -ENOMEM;
	}
	return strata_registry_create(&b->cfg, argv0, &b->reg);
}

/*
 * -g/-b: the context on the device, its budget from the spec (all, dense,
 * mid as tests/testutil.h tu_ctx, or MiB).  0 or -errno (logged).
 */
static int open_device_ctx(struct bench *b, const char *gpu, const char *spec,
			   struct strata_ctx_opts *o)
{
	struct strata_placement_stats st;
	struct strata_plugin *p;
	uint64_t dense;
	int rc;

	if ((rc = strata_registry_load(b->reg, STRATA_PLUGIN_GPU, gpu, &p)) ||
	    (rc = strata_backend_device_create(p, &b->dev)))
		return rc;
	o->device = b->dev;
	o->device_budget = b->dev->info.mem_total;
	/* the expert cache as the engine runs it: strata.ini's defaults */
	o->vc = (struct strata_vcache_opts){
		.pcie_frac = b->cfg.gpu_pcie_frac, .adapt_every = b->cfg.gpu_adapt_every,
		.adapt_swaps = b->cfg.gpu_adapt_swaps, .lend_min = b->cfg.gpu_lend_min,
		.lend_frac = b->cfg.gpu_lend_frac, .lend_keep = b->cfg.gpu_lend_keep,
	};
	if (!strcmp(spec, "dense") || !strcmp(spec, "mid") || !strcmp(spec, "quarter")) {
		if ((rc = strata_ctx_create(b->m, o, &b->ctx)))
			return rc;
		strata_ctx_placement(b->ctx, &st);
		strata_ctx_free(b->ctx);
		b->ctx = NULL;
		dense = st.dev_work_bytes + st.dev_state_bytes + st.dev_weight_bytes -
			st.dev_expert_bytes;
		o->device_budget = dense + (!strcmp(spec, "mid")     ? st.dev_expert_bytes / 2
					    : !strcmp(spec, "quarter") ? st.dev_expert_bytes / 4
								       : 0);
	} else if (strcmp(spec, "all")) {
		char *end;
		unsigned long long mib = strtoull(spec, &end, 10);

		if (*end || !mib) {
			fprintf(stderr, "strata-bench: error: -b: '%s' is not all, dense, mid, quarter "
				"or MiB\n", spec);
			return -EINVAL;
		}
		o->device_budget = (uint64_t)mib << 20;
	}
	return strata_ctx_create(b->m, o, &b->ctx);
}

/* -x: the experts through io plugin `io` into a cache of `bytes`, as the engine does. */
static int open_store(struct bench *b, const char *model, const char *io, uint64_t bytes,
		      const char *argv0)
{
	struct strata_xstore_opts o = { .cache_bytes = bytes, .depth = 32, .timeout_ms = 30000,
					 .direct = 1 };
	struct strata_plugin *p;
	int rc;

	if ((rc = registry(b, NULL, NULL, argv0)) ||
	    (rc = strata_registry_pick_io(b->reg, io, "strata-bench -x", &p)))
		return rc;
	o.ops = p->desc->ops;
	o.host = &p->host;
	o.io_name = p->desc->name;
	if ((rc = strata_xstore_open(b->m, model, &o, &b->xs)))
		return rc;
	strata_ctx_set_xstore(b->ctx, b->xs);
	return 0;
}

/* qwen4exp: the PLE rows through a reader, as the engine reads them. */
static int open_ple(struct bench *b, const char *io, uint32_t readers, uint32_t cache, int stats,
		    const char *argv0)
{
	struct strata_ple_table t;
	struct strata_ple_opts o;
	int rc;

	if (b->m->hp.arch != STRATA_ARCH_QWEN4EXP || b->m->hp.q4x.ple_layer == UINT32_MAX)
		return 0;
	strata_ple_opts_default(&o);
	o.readers = readers;
	o.row_cache = cache;
	o.plugin = io;
	o.stats = stats;
	o.chunk_rows_hint = STRATA_PLE_HEADS * b->chunk;
	if ((rc = registry(b, NULL, NULL, argv0)) ||
	    (rc = strata_ple_table_from_gguf(b->m->gguf, &t)) ||
	    (rc = strata_ple_reader_open(b->reg, &t, &o, &b->ple)))
		return rc;
	return strata_ctx_set_ple(b->ctx, b->ple);
}

int main(int argc, char **argv)
{
	const char *model = NULL, *csv_path = NULL, *io = "auto", *gpu = NULL, *budget = "all";
	const char *plugin_dir = NULL;
	long stream_mib = -1, chunk = 0, ple_readers = 8, ple_cache = 0;
	int threads = 0, reps = 5, opt, rc = 0, ple_stats = 0, repack = 1;
	long n_pp = 512, n_tg = 128, depth = 0;
	struct bench b = { .warmup = 1 };
	FILE *csv = NULL;
	char name[64];

	while ((opt = getopt(argc, argv, "m:t:p:n:r:o:x:i:g:b:P:c:R:C:Sw:L:d:h")) != -1) {
		char *end;
		long v = optarg ? strtol(optarg, &end, 10) : 0;

		if (optarg && !strchr("moigbP", opt) && (*end || v < 0)) {
			fprintf(stderr, "strata-bench: error: -%c needs a number >= 0, got '%s'\n",
				opt, optarg);
			return 2;
		}
		switch (opt) {
		case 'm': model = optarg; break;
		case 'o': csv_path = optarg; break;
		case 'i': io = optarg; break;
		case 'g': gpu = optarg; break;
		case 'b': budget = optarg; break;
		case 'P': plugin_dir = optarg; break;
		case 'x': stream_mib = v; break;
		case 't': threads = (int)v; break;
		case 'p': n_pp = v; break;
		case 'n': n_tg = v; break;
		case 'd': depth = v; break;
		case 'r': reps = v > 0 ? (int)v : 1; break;
		case 'c': chunk = v; break;
		case 'R': ple_readers = v; break;
		case 'C': ple_cache = v; break;
		case 'S': ple_stats = 1; break;
		case 'w': b.warmup = v != 0; break;
		case 'L': repack = v != 0; break;
		case 'h': usage(argv[0]); return 0;
		default: usage(argv[0]); return 2;
		}
	}
	if (!model || optind != argc) {
		usage(argv[0]);
		return 2;
	}
	if (depth > (1L << 24) || n_pp > (1L << 24) || n_tg > (1L << 24)) {
		fprintf(stderr, "strata-bench: error: -d, -p and -n go up to %ld tokens\n",
			1L << 24);
		return 2;
	}
	if (strata_model_load_ex(model, stream_mib >= 0 ? STRATA_MODEL_STREAM_EXPERTS : 0, &b.m) ||
	    strata_pool_create(threads, &b.pool))
		return 1;
	threads = strata_pool_size(b.pool);
	{
		uint32_t ctx = (uint32_t)(depth + (n_pp > n_tg ? n_pp : n_tg));
		struct strata_ctx_opts o = { .pool = b.pool, .n_ctx = ctx ? ctx : 1,
					     .no_repack = !repack };

		b.chunk = chunk > 0 && chunk < n_pp ? (uint32_t)chunk : (uint32_t)(n_pp ? n_pp : 1);
		b.depth = (uint32_t)depth;
		/* the fill reads the depth in batches of up to 512 (or the prompt's) */
		b.fill = depth < 512 ? (uint32_t)(depth ? depth : 1) : 512;
		if (b.fill < b.chunk)
			b.fill = b.chunk;
		o.max_batch = b.fill;

		if ((gpu || plugin_dir) && registry(&b, plugin_dir, gpu, argv[0]))
			return 1;
		if (gpu ? open_device_ctx(&b, gpu, budget, &o) : strata_ctx_create(b.m, &o, &b.ctx))
			return 1;
		if (strata_seq_create(b.ctx, ctx ? ctx : 1, &b.seq))
			return 1;
		b.tokens = malloc((ctx + 1) * sizeof(int32_t));
		b.logits = malloc(b.m->hp.n_vocab * sizeof(float));
		if (!b.tokens || !b.logits)
			return 1;
		if (stream_mib >= 0 && open_store(&b, model, io, (uint64_t)stream_mib << 20, argv[0]))
			return 1;
		if (open_ple(&b, io, (uint32_t)ple_readers, (uint32_t)ple_cache, ple_stats, argv[0]))
			return 1;
		srand(1234);
		for (uint32_t i = 0; i <= ctx; i++)
			b.tokens[i] = rand() % (int)b.m->hp.n_vocab;
	}
	if (csv_path && !(csv = fopen(csv_path, "a"))) {
		fprintf(stderr, "strata-bench: error: cannot open %s\n", csv_path);
		return 1;
	}
	printf("model %s: %s, %.2f M parameters, %.1f MiB of weights; kernels %s\n", model,
	       b.m->hp.arch_name, b.m->n_params / 1e6, b.m->weight_bytes / 1048576.0,
	       strata_simd_name(strata_simd_get()));
	printf("active: %.1f MB of weights read per decoded token\n", active_bytes(b.m) / 1e6);
	{
		struct strata_placement_stats st;

		strata_ctx_placement(b.ctx, &st);
		if (st.host_copied_bytes)
			printf("load: %.1f MiB of weights copied for the CPU in %.2f s (%.1f MiB of "
			       "Q8_0, Q4_K, Q6_K and IQ4_NL interleaved)\n", st.host_copied_bytes / 1048576.0,
			       st.host_copy_s, st.host_repacked_bytes / 1048576.0);
	}
	if (b.dev) {
		char line[1024];

		strata_ctx_describe(b.ctx, line, sizeof(line));
		printf("%s\n", line);
	}
	printf("| %-8s | %7s | %12s | %10s | %10s |\n", "test", "threads", "tok/s median",
	       "min", "max");
	printf("|----------|---------|--------------|------------|------------|\n");
	if (n_pp > 0) {
		snprintf(name, sizeof(name), depth ? "pp%ld @ d%ld" : "pp%ld", n_pp, depth);
		rc = bench_test(&b, name, (uint32_t)n_pp, 0, reps, threads, csv, model);
	}
	if (!rc && n_tg > 0) {
		snprintf(name, sizeof(name), depth ? "tg%ld @ d%ld" : "tg%ld", n_tg, depth);
		rc = bench_test(&b, name, 0, (uint32_t)n_tg, reps, threads, csv, model);
	}
	if (rc)
		fprintf(stderr, "strata-bench: error: forward failed: %s\n", strerror(-rc));
	if (b.dev) { /* the expert cache's hit rate and the bytes over the link, after the runs */
		char line[1024];

		strata_ctx_describe(b.ctx, line, sizeof(line));
		printf("after the runs: %s\n", line);
	}
	if (csv)
		fclose(csv);
	free(b.tokens);
	free(b.logits);
	strata_seq_free(b.seq);
	strata_ctx_free(b.ctx);
	strata_ple_reader_close(b.ple);
	strata_backend_free(b.dev);
	strata_xstore_close(b.xs);
	strata_registry_free(b.reg);
	strata_config_free(&b.cfg);
	strata_pool_free(b.pool);
	strata_model_free(b.m);
	return rc ? 1 : 0;
}
