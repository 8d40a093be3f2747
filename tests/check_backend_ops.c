/*
 * check_backend_ops.c - op conformance of a device plugin against the CPU
 * backend: every op of strata/backend.h that the device's supports() takes,
 * run on both with the same random inputs (fixed seeds), the device's
 * results copied back and compared with a bound suited to each op.
 *
 * The plugin is STRATA_GPU_PLUGIN, found on the search path (ctest passes
 * STRATA_PLUGIN_PATH): gpu-sim here (check_backend_ops_gpu_sim, which must
 * pass), gpu-cuda on a machine with a GPU (check_backend_ops_gpu_cuda; tools/
 * device-check.sh).  A plugin that is absent or probes 0 makes the suite
 * print why and exit 77 (skipped, never a pass).  Ops and weight types the
 * device refuses are listed as "not supported", not failed; the last lines
 * say what was checked and what was refused.
 *
 * Shapes and parameters are the ones the layer loops use (core/model/
 * forward.c, forward_q4x.c, moe.c, seq.c): the syn-* models' and the real
 * models' (Qwen3-30B-A3B, Qwen3-Next-80B, GLM-4.5), and awkward ones around
 * them.  What the ABI leaves to the backend is not compared: the KV cache's
 * layout (ATTN and ATTN_SPARSE are judged by their outputs over a sequence
 * of calls, each reading what the earlier ones stored), the order of a
 * QSA_SELECT column's cells (compared as sets, -1 after them).  DeltaNet's
 * conv and recurrent states and CONV_SILU's history have public layouts and
 * are compared.
 *
 * Each device op is checked further for the ABI's ownership rule: the op,
 * its tensors and item list are overwritten as soon as run() returns.  Every
 * output is compared over its whole backing store where the op writes a
 * view, so a write outside the view fails too.
 *
 * This file is the driver: the rig (the plugin loaded, buffers on both,
 * uploads and downloads), the checks, the queue's case and the suite with
 * its coverage summary.  The ops' cases are in backend_ops_mm.c,
 * backend_ops_misc.c, backend_ops_attn.c and backend_ops_dn.c; the bounds
 * and what the files share in backend_ops.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend_ops.h"

/* ---- what every case adds up (shared with the parent: each case runs in a child) --- */

struct stats *bo_st;
uint32_t bo_types[STRATA_TYPE_COUNT]; /* the weight types the CPU supports */
int bo_n_types;
static int g_verbose;
static int g_threads; /* the CPU backend's: the online CPUs, at most 8 */

/* ---- the rig: the device, the CPU backend, buffers on both ------------------------------ */

static const char *plugin_name(void)
{
	const char *n = getenv("STRATA_GPU_PLUGIN");

	return n && *n ? n : NULL;
}

static void rig_free(struct rig *R)
{
	for (int i = 0; i < R->n_ar; i++) {
		struct arena *A = R->ar[i];

		if (A->d.base)
			strata_backend_buf_free(R->dev, &A->d);
		strata_backend_buf_free(R->cpu, &A->h);
		free(A);
	}
	R->n_ar = 0;
	strata_backend_free(R->cpu);
	strata_backend_free(R->dev);
	strata_pool_free(R->pool);
	strata_registry_free(R->reg);
	strata_config_free(&R->cfg);
	R->cpu = R->dev = NULL;
	R->pool = NULL;
	R->reg = NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * Load the plugin and open its device and a CPU backend on g_threads
 * threads; seed the inputs with `salt`.  0; STRATA_TEST_SKIP when the
 * device is not usable here (no plugin named, not found, probe 0); 1 when
 * the plugin or its device fails otherwise.  *why says why.
 */
int bo_rig_open(struct rig *R, uint64_t salt, const char **why)
{
	static char buf[700];
	struct strata_plugin *p;
	const char *name = plugin_name();
	int rc;

	memset(R, 0, sizeof(*R));
	R->seed = 0x9e3779b97f4a7c15ull ^ (salt * 0x100000001b3ull);
	R->t0 = now_s();
	*why = buf;
	if (!name) {
		*why = "STRATA_GPU_PLUGIN is not set: no device plugin to check";
		return STRATA_TEST_SKIP;
	}
	if (strata_config_init(&R->cfg))
		return (*why = "out of memory"), 1;
	free(R->cfg.gpu_plugin);
	R->cfg.gpu_plugin = strdup(name); /* gpu-sim probes 1 only where [gpu] plugin names it */
	if (strata_registry_create(&R->cfg, NULL, &R->reg)) {
		strata_config_free(&R->cfg);
		return (*why = "cannot make a plugin registry"), 1;
	}
	tu_log_capture();
	rc = strata_registry_load(R->reg, STRATA_PLUGIN_GPU, name, &p);
	tu_log_release();
	if (rc) {
		size_t n = strlen(tu_log);

		while (n && tu_log[n - 1] == '\n')
			tu_log[--n] = 0;
		snprintf(buf, sizeof(buf), "gpu plugin %s %s (%s)", name,
			 rc == -ENOENT || rc == -ENODEV ? "is not usable here" : "is refused",
			 tu_log);
		strata_registry_free(R->reg);
		strata_config_free(&R->cfg);
		R->reg = NULL;
		return rc == -ENOENT || rc == -ENODEV ? STRATA_TEST_SKIP : 1;
	}
	if (strata_backend_device_create(p, &R->dev)) {
		snprintf(buf, sizeof(buf),
			 "gpu plugin %s probes usable but its device does not open", name);
		rig_free(R);
		return 1;
	}
	if (strata_pool_create(g_threads, &R->pool) ||
	    strata_backend_cpu_create(R->pool, &R->cpu)) {
		rig_free(R);
		return (*why = "out of memory"), 1;
	}
	snprintf(bo_st->device, sizeof(bo_st->device), "%s", R->dev->info.name);
	return 0;
}

/* This case's summary per op; fails the case when a check failed. */
void bo_rig_close(struct rig *R)
{
	int fails = R->fails;

	for (uint32_t c = 0; c < STRATA_OP_COUNT; c++)
		if (R->n[c])
			printf("  [%s] %-14s %5d checks, largest error %.2e (bound %.0e), %.1f s\n",
			       R->label, strata_op_name(c), R->n[c], R->worst[c], R->worst_bound[c],
			       now_s() - R->t0);
	rig_free(R);
	ck_assert_msg(fails == 0, "%d checks failed (the FAIL lines above)", fails);
}

struct arena *bo_ar_new(struct rig *R, size_t cap, uint32_t usage)
{
	struct arena *A = calloc(1, sizeof(*A));

	ck_assert_ptr_nonnull(A);
	ck_assert_int_lt(R->n_ar, MAX_ARENAS);
	/* pages untouched until a tensor takes them (bo_ar_t zeroes its own) */
	ck_assert_int_eq(strata_backend_buf_alloc(R->cpu, cap, STRATA_BUF_USE_WORK, &A->h), 0);
	A->cap = cap;
	A->usage = usage;
	R->ar[R->n_ar++] = A;
	return A;
}

/* Free the arenas made after the first `keep` (device work on them done first). */
void bo_ar_drop(struct rig *R, int keep)
{
	ck_assert_int_eq(strata_backend_sync(R->dev), 0);
	while (R->n_ar > keep) {
		struct arena *A = R->ar[--R->n_ar];

		if (A->d.base)
			strata_backend_buf_free(R->dev, &A->d);
		strata_backend_buf_free(R->cpu, &A->h);
		free(A);
	}
}

/* A tensor [ne0, ne1, ne2] of `type` on A's host side, contiguous, 256-byte aligned. */
struct strata_tensor bo_ar_t(struct arena *A, uint32_t type, int64_t ne0, int64_t ne1,
			     int64_t ne2)
{
	const size_t rb = strata_type_row_bytes(type, ne0);
	struct strata_tensor t = {
		.type = type,
		.n_dims = ne2 > 1 ? 3 : 2,
		.ne = { ne0, ne1, ne2, 1 },
		.nb = { strata_type_block_bytes(type), rb, rb * (size_t)ne1,
			rb * (size_t)ne1 * (size_t)ne2 },
		.buf = &A->h,
		.offset = A->used,
	};

	ck_assert_msg(rb > 0, "%s: %lld values are not whole blocks", strata_type_name(type),
		      (long long)ne0);
	A->used += (t.nb[3] + 255) & ~(size_t)255;
	ck_assert_msg(A->used <= A->cap, "arena too small (%zu > %zu)", A->used, A->cap);
	memset(strata_tensor_data(&t), 0, A->used - t.offset);
	return t;
}

/* The bytes a tensor spans from its first. */
size_t bo_extent(const struct strata_tensor *t)
{
	size_t e = strata_type_row_bytes(t->type, t->ne[0]);

	for (int d = 1; d < 4; d++)
		e += (size_t)(t->ne[d] - 1) * t->nb[d];
	return e;
}

static struct arena *arena_of(struct rig *R, const struct strata_tensor *t)
{
	for (int i = 0; i < R->n_ar; i++)
		if (t->buf == &R->ar[i]->h || t->buf == &R->ar[i]->d)
			return R->ar[i];
	ck_abort_msg("a tensor outside the test's arenas");
	return NULL;
}

/*
 * Allocate A's device buffer and, with `copy`, upload all of it (inputs and
 * outputs alike, so that both sides start from the same bytes).  State
 * arenas of private layout (KV caches) are never copied.
 */
void bo_ar_up(struct rig *R, struct arena *A, int copy)
{
	if (!A->d.base) {
		size_t n = A->used ? A->used : 256;

		ck_assert_msg(strata_backend_buf_alloc(R->dev, n, A->usage, &A->d) == 0,
			      "the device cannot allocate %zu bytes", n);
	}
	if (copy && A->used) {
		ck_assert_int_eq(strata_backend_sync(R->dev), 0);
		ck_assert_int_eq(strata_backend_copy_in(R->dev, &A->d, 0, A->h.base, A->used, NULL),
				 0);
	}
}

/* Upload one tensor's bytes (after the device's queued work, which may read them). */
void bo_up(struct rig *R, const struct strata_tensor *t)
{
	struct arena *A = arena_of(R, t);

	ck_assert_ptr_nonnull(A->d.base);
	ck_assert_int_eq(strata_backend_sync(R->dev), 0);
	ck_assert_int_eq(strata_backend_copy_in(R->dev, &A->d, t->offset, strata_tensor_data(t),
						bo_extent(t), NULL),
			 0);
}

/* The device's bytes of t (malloc'd, laid out as t's extent). */
void *bo_down(struct rig *R, const struct strata_tensor *t)
{
	struct arena *A = arena_of(R, t);
	void *p = malloc(bo_extent(t) + 16);

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(
		strata_backend_copy_out(R->dev, &A->d, t->offset, p, bo_extent(t), NULL), 0);
	ck_assert_int_eq(strata_backend_sync(R->dev), 0);
	return p;
}

/* ---- random inputs ------------------------------------------------------------------- */

float bo_frand(struct rig *R, float lo, float hi)
{
	return lo + (hi - lo) * 0.5f * (tu_frand(&R->seed) + 1.0f);
}

/* Every float of t's extent (a view's gaps too) uniform in [lo, hi). */
void bo_fill(struct rig *R, const struct strata_tensor *t, float lo, float hi)
{
	float *p = F(t);

	for (size_t i = 0; i < bo_extent(t) / 4; i++)
		p[i] = bo_frand(R, lo, hi);
}

void bo_fill_const(const struct strata_tensor *t, float v)
{
	float *p = F(t);

	for (size_t i = 0; i < bo_extent(t) / 4; i++)
		p[i] = v;
}

/* inv_freq[i] = base^(-2i / n_rot), as the context computes it */
void bo_inv_freq(const struct strata_tensor *t, int n_rot, float base)
{
	for (int i = 0; i < n_rot / 2; i++)
		F(t)[i] = powf(base, -2.0f * (float)i / (float)n_rot);
}

/* ---- checks ------------------------------------------------------------------------ */

/* Record one check of op `code`; a failure prints one line and counts. */
int bo_check(struct rig *R, uint32_t code, double err, double bound, const char *fmt, ...)
{
	const int ok = err <= bound; /* NaN fails */
	char what[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	bo_st->checks[code]++;
	if (R->n[code]++ == 0 || !(err <= R->worst[code])) {
		R->worst[code] = isnan(err) ? INFINITY : err;
		R->worst_bound[code] = bound;
	}
	if (!ok) {
		printf("FAIL %s: %s: error %.3g, bound %.3g\n", strata_op_name(code), what, err,
		       bound);
		R->fails++;
		bo_st->failed++;
	} else if (g_verbose) {
		printf("ok   %s: %s: error %.3g\n", strata_op_name(code), what, err);
	}
	return ok;
}

/*
 * 1 when the device takes op `code` with weights of `type` (F32 for ops
 * without weights); else 0, counted and said once.
 */
int bo_dev_takes(struct rig *R, uint32_t code, uint32_t type)
{
	const int w = code == STRATA_OP_MATMUL ? 0 : code == STRATA_OP_GET_ROWS ? 1 : -1;
	int *seen;

	if (strata_backend_supports(R->dev, code, type))
		return 1;
	seen = w >= 0 ? &bo_st->type_refused[w][type] : &bo_st->refused[code];
	if (!*seen)
		printf("%s%s%s: not supported by %s\n", strata_op_name(code), w >= 0 ? " " : "",
		       w >= 0 ? strata_type_name(type) : "", plugin_name());
	*seen = 1;
	return 0;
}

/* max |a - b| / max(1, max |b|) over t's view; a, b laid out as t's extent. */
static double view_err(const struct strata_tensor *t, const void *a, const void *b)
{
	double md = 0, mb = 0;

	for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
		for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
			for (int64_t i1 = 0; i1 < t->ne[1]; i1++) {
				const size_t o = (size_t)i1 * t->nb[1] + (size_t)i2 * t->nb[2] +
						 (size_t)i3 * t->nb[3];
				const float *x = (const float *)((const char *)a + o);
				const float *y = (const float *)((const char *)b + o);

				for (int64_t i = 0; i < t->ne[0]; i++) {
					double d = fabs((double)x[i] - y[i]);

					if (isnan(d))
						return INFINITY;
					md = d > md ? d : md;
					mb = fabs(y[i]) > mb ? fabs(y[i]) : mb;
				}
			}
	return md / (mb > 1 ? mb : 1);
}

/* The device's t against the CPU's, as one check. */
double bo_cmp(struct rig *R, uint32_t code, const struct strata_tensor *t, double bound,
	      const char *fmt, ...)
{
	void *dev = bo_down(R, t);
	double err = view_err(t, dev, strata_tensor_data(t));
	char what[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	free(dev);
	bo_check(R, code, err, bound, "%s", what);
	return err;
}

/* ---- running an op on both ------------------------------------------------------------- */

/* The op with every tensor's buffer swapped for its device twin, in storage of its own. */
struct devop {
	struct strata_op op;
	struct strata_tensor t[2 + STRATA_OP_MAX_SRC + 1];
	struct strata_matmul_item *items;
	struct strata_tensor *it;
	uint32_t n_items;
};

static const struct strata_tensor *dmap(struct rig *R, const struct strata_tensor *t,
					struct strata_tensor *slot)
{
	struct arena *A;

	if (!t)
		return NULL;
	A = arena_of(R, t);
	ck_assert_msg(A->d.base != NULL, "an arena used before ar_up");
	*slot = *t;
	slot->buf = &A->d;
	return slot;
}

static void devop_make(struct rig *R, const struct strata_op *op, struct devop *D)
{
	memset(D, 0, sizeof(*D));
	D->op = *op;
	D->op.dst = (struct strata_tensor *)dmap(R, op->dst, &D->t[0]);
	D->op.aux = (struct strata_tensor *)dmap(R, op->aux, &D->t[1]);
	for (int i = 0; i < STRATA_OP_MAX_SRC; i++)
		D->op.src[i] = dmap(R, op->src[i], &D->t[2 + i]);
	if (op->code == STRATA_OP_MATMUL) {
		D->n_items = op->p.mm.n_items;
		D->items = calloc(D->n_items, sizeof(*D->items));
		D->it = calloc(4 * (size_t)D->n_items, sizeof(*D->it));
		ck_assert(D->items && D->it);
		for (uint32_t i = 0; i < D->n_items; i++) {
			const struct strata_matmul_item *s = &op->p.mm.items[i];

			D->items[i].w = dmap(R, s->w, &D->it[4 * i]);
			D->items[i].x = dmap(R, s->x, &D->it[4 * i + 1]);
			D->items[i].rows = dmap(R, s->rows, &D->it[4 * i + 2]);
			D->items[i].y = (struct strata_tensor *)dmap(R, s->y, &D->it[4 * i + 3]);
		}
		D->op.p.mm.items = D->items;
	} else if (op->code == STRATA_OP_DELTANET || op->code == STRATA_OP_DELTANET_TILED) {
		D->op.p.dn.norm = dmap(R, op->p.dn.norm, &D->t[2 + STRATA_OP_MAX_SRC]);
	}
}

/*
 * Run op on the device: queued, then the op, its tensors and items are
 * overwritten (the ABI: the backend copies what it needs before run()
 * returns), then the queue drained.  An error fails the case here.
 */
static void dev_run(struct rig *R, const struct strata_op *op, const char *what)
{
	struct devop D;
	int rc;

	devop_make(R, op, &D);
	rc = strata_backend_run(R->dev, &D.op);
	memset(&D.op, 0xa5, sizeof(D.op));
	memset(D.t, 0xa5, sizeof(D.t));
	if (D.n_items) {
		memset(D.items, 0xa5, D.n_items * sizeof(*D.items));
		memset(D.it, 0xa5, 4 * (size_t)D.n_items * sizeof(*D.it));
	}
	if (!rc)
		rc = strata_backend_sync(R->dev);
	free(D.items);
	free(D.it);
	if (rc)
		printf("FAIL %s: %s: the device failed: %s\n", strata_op_name(op->code), what,
		       strerror(-rc));
	bo_st->failed += rc != 0;
	ck_assert_msg(rc == 0, "%s (%s): the device failed: %s", strata_op_name(op->code), what,
		      strerror(-rc));
}

/* The CPU backend (the reference: it must take the op), then the device. */
void bo_both(struct rig *R, const struct strata_op *op, const char *what)
{
	ck_assert_msg(strata_backend_run(R->cpu, op) == 0, "the CPU backend refused %s (%s)",
		      strata_op_name(op->code), what);
	dev_run(R, op, what);
}

struct strata_op bo_op2(uint32_t code, struct strata_tensor *dst, const struct strata_tensor *a,
			const struct strata_tensor *b)
{
	struct strata_op op = { .code = code, .dst = dst, .src = { a, b } };

	return op;
}

/* A 3-D contiguous F32 tensor [ne0, ne1, ne2] at buf + off (seq.c's t3). */
struct strata_tensor bo_t3(struct strata_buf *buf, size_t off, int64_t ne0, int64_t ne1,
			   int64_t ne2)
{
	struct strata_tensor t = strata_t_f32(buf, off, ne0, ne1);

	t.n_dims = 3;
	t.ne[2] = ne2;
	t.nb[3] = t.nb[2] * (size_t)ne2;
	return t;
}

/* ---- the queue: asynchronous copies, events ----------------------------------------------- */

/*
 * An upload with an event the compute queue waits for, an op, a recorded
 * event the host syncs on, and an asynchronous copy back: the op's result
 * as with blocking copies.
 */
START_TEST(queue)
{
	struct rig R;
	void *ev_in = NULL, *ev_op = NULL, *ev_out = NULL;

	RIG(&R, 11, "queue");
	if (bo_dev_takes(&R, STRATA_OP_ADD, STRATA_TYPE_F32)) {
		const int64_t e = 4096, n = 16;
		struct arena *A = bo_ar_new(&R, 1u << 20, STRATA_BUF_USE_WORK);
		struct strata_tensor a = f32(A, e, n), b = f32(A, e, n), o = f32(A, e, n);
		struct strata_op op = bo_op2(STRATA_OP_ADD, &o, &a, &b);
		float *src = malloc(bo_extent(&b)), *got = malloc(bo_extent(&o));

		bo_fill(&R, &a, -1, 1);
		bo_fill_const(&b, 0);
		bo_fill_const(&o, 0);
		bo_ar_up(&R, A, 1);
		for (size_t i = 0; i < bo_extent(&b) / 4; i++)
			src[i] = F(&b)[i] = bo_frand(&R, -1, 1);
		ck_assert_int_eq(strata_backend_event_create(R.dev, &ev_in), 0);
		ck_assert_int_eq(strata_backend_event_create(R.dev, &ev_op), 0);
		ck_assert_int_eq(strata_backend_event_create(R.dev, &ev_out), 0);
		ck_assert_int_eq(strata_backend_copy_in(R.dev, &A->d, b.offset, src, bo_extent(&b),
							ev_in),
				 0);
		ck_assert_int_eq(strata_backend_wait(R.dev, ev_in), 0);
		ck_assert_int_eq(strata_backend_run(R.cpu, &op), 0);
		{
			struct devop D;

			devop_make(&R, &op, &D);
			ck_assert_int_eq(strata_backend_run(R.dev, &D.op), 0);
		}
		ck_assert_int_eq(strata_backend_record(R.dev, ev_op), 0);
		ck_assert_int_eq(strata_backend_sync_event(R.dev, ev_op), 0);
		ck_assert_int_eq(
			strata_backend_copy_out(R.dev, &A->d, o.offset, got, bo_extent(&o), ev_out),
			0);
		ck_assert_int_eq(strata_backend_sync_event(R.dev, ev_out), 0);
		bo_check(&R, STRATA_OP_ADD, view_err(&o, got, F(&o)), B_EXACT,
			 "after an upload with an event, a wait, a recorded event and an "
			 "asynchronous copy back");
		ck_assert_int_eq(strata_backend_sync(R.dev), 0);
		strata_backend_event_free(R.dev, ev_in);
		strata_backend_event_free(R.dev, ev_op);
		strata_backend_event_free(R.dev, ev_out);
		free(src);
		free(got);
	}
	bo_rig_close(&R);
}
END_TEST

/* ---- the suite --------------------------------------------------------------------------- */

/*
 * Whether the plugin is usable here, asked in a child: a device runtime
 * (CUDA) must not start in the parent, whose children run the cases.
 * 0 usable, 77 absent or probing 0 (the child said why), else an error.
 */
static int probe_in_child(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct rig R;
		const char *why;
		int rc;

		bo_st = calloc(1, sizeof(*bo_st));
		if ((rc = bo_rig_open(&R, 0, &why))) {
			printf("%s%s\n", rc == STRATA_TEST_SKIP ? "SKIP: " : "", why);
			fflush(stdout);
			_exit(rc);
		}
		printf("device: %s (%s), %.1f GiB\n", R.dev->info.name, plugin_name(),
		       R.dev->info.mem_total / 1073741824.0);
		fflush(stdout);
		rig_free(&R);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

/* What the cases checked, added up; 1 when nothing was. */
static int summary(void)
{
	int ops = 0, refused = 0, checks = 0, tc[2] = { 0, 0 }, tr[2] = { 0, 0 };
	char rl[1024] = "", tl[1024] = "";

	for (uint32_t c = 1; c < STRATA_OP_COUNT; c++) {
		checks += bo_st->checks[c];
		ops += bo_st->checks[c] > 0;
		if (bo_st->refused[c] && !bo_st->checks[c]) {
			refused++;
			snprintf(rl + strlen(rl), sizeof(rl) - strlen(rl), " %s",
				 strata_op_name(c));
		}
	}
	for (int w = 0; w < 2; w++)
		for (int i = 0; i < bo_n_types; i++) {
			tc[w] += bo_st->type_checked[w][bo_types[i]] > 0;
			if (bo_st->type_refused[w][bo_types[i]]) {
				tr[w]++;
				snprintf(tl + strlen(tl), sizeof(tl) - strlen(tl), " %s/%s",
					 w ? "GET_ROWS" : "MATMUL", strata_type_name(bo_types[i]));
			}
		}
	printf("coverage of %s (%s): %d of %d ops checked (%d checks, %d over their bound), %d "
	       "refused%s%s; weight types of the CPU's %d: MATMUL %d checked, %d refused; GET_ROWS "
	       "%d checked, %d refused%s%s\n",
	       plugin_name(), bo_st->device, ops, STRATA_OP_COUNT - 1, checks, bo_st->failed,
	       refused, refused ? ":" : "", rl, bo_n_types, tc[0], tr[0], tc[1], tr[1],
	       tr[0] + tr[1] ? ":" : "", tl);
	return checks == 0;
}

int main(void)
{
	Suite *s = suite_create("backend_ops");
	TCase *tc = tcase_create("ops");
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	g_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	g_threads = g_threads < 1 ? 1 : g_threads > 8 ? 8 : g_threads;
	g_verbose = getenv("STRATA_OPS_VERBOSE") && *getenv("STRATA_OPS_VERBOSE") == '1';
	if (!plugin_name()) {
		printf("SKIP: STRATA_GPU_PLUGIN is not set: no device plugin to check\n");
		return STRATA_TEST_SKIP;
	}
	if ((rc = probe_in_child()))
		return rc;
	bo_st = mmap(NULL, sizeof(*bo_st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		     0);
	if (bo_st == MAP_FAILED)
		return 1;
	memset(bo_st, 0, sizeof(*bo_st));
	for (uint32_t t = 0; t < STRATA_TYPE_COUNT; t++)
		if (strata_type_supported(t))
			bo_types[bo_n_types++] = t;
	tcase_set_timeout(tc, 600);
	bo_mm_cases(tc);
	bo_misc_cases(tc);
	bo_attn_cases(tc);
	bo_dn_cases(tc);
	bo_qwen4exp_cases(tc);
	tcase_add_test(tc, queue);
	suite_add_tcase(s, tc);
	rc = tu_srunner_run(srunner_create(s));
	if (rc != STRATA_TEST_SKIP && summary() && rc == 0)
		rc = 1;
	return rc;
}
