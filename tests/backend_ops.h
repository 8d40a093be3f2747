/*
 * backend_ops.h - what the files of the op conformance suite share (private
 * to its one executable, check_backend_ops): the bounds (below); the rig
 * (the device, the CPU backend, buffers on both), random inputs, checks and
 * running an op on both, all in check_backend_ops.c (the driver); and each
 * area's cases, which its file adds to the suite's one TCase in main's order:
 *   backend_ops_mm.c    MATMUL, GET_ROWS (one case per weight type)
 *   backend_ops_misc.c  norms, rope, element-wise ops, copies, routing,
 *                       combining; qwen4exp's ops
 *   backend_ops_attn.c  ATTN, ATTN_SPARSE, QSA_SELECT
 *   backend_ops_dn.c    DELTANET, DELTANET_TILED
 *
 * Errors are max |dev - cpu| / max(1, max |cpu|) over an output (the floor
 * keeps outputs near zero from turning float noise into big relative
 * errors; inputs are scaled so that outputs are O(1)).  The bounds:
 */
#ifndef STRATA_TESTS_BACKEND_OPS_H
#define STRATA_TESTS_BACKEND_OPS_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/exec.h"
#include "config/config.h"
#include "cpu/kernels.h"
#include "cpu/pool.h"
#include "model/ctx_int.h"
#include "plugin/registry.h"
#include "testutil.h"

/* COPY, FILL, ADD and the conv states: no arithmetic, or one correctly rounded add. */
#define B_EXACT 0.0
/*
 * expf-based element-wise ops (SWIGLU, SIGMOID_MUL, SCALE_SILU, HC_*,
 * PLE_GATE, CONV_SILU) and MOE_COMBINE: the CPU's vector exp is within 3e-7
 * of expf, CUDA's expf within 2 ulp, and sums of a few products in another
 * order move a few ulp: 1e-6 at most.  A fast-math __expf (2^-21) passes.
 */
#define B_ELEM 1e-5
/* RMS_NORM: the CPU sums squares in double, a GPU in float (~1e-6 over 4096 values). */
#define B_NORM 1e-5
/*
 * ROPE: cosf/sinf of the same float angle (the float product pos *
 * inv_freq[i], as the CPU forms it) differ by 1-2 ulp.  Angles reach 3000
 * rad (pos 3000): a fast-math __sinf is off by ~1e-3 there and fails, and
 * so does an angle formed otherwise (in double, or by repeated products as
 * ggml does: up to pos x 6e-8 rad apart).
 */
#define B_ROPE 1e-5
/* GET_ROWS: dequantisation in float; an FMA may move the last bit (6e-8 relative). */
#define B_ROWS 1e-6
/*
 * MATMUL (its errors are relative to sum_k |w_k x_k| of each output: see
 * "MATMUL and GET_ROWS" in backend_ops_mm.c for both passes).  F32, F16
 * and BF16 weights: both sides sum float products of float activations,
 * only the order differs (tiles, split-k): ~sqrt(cols) ulp.  Activations
 * rounded to TF32 or F16 (2^-11 and more) fail: the golden suites' 1e-3 on
 * logits has no room for them.
 */
#define B_MM_FLOAT 1e-5
/*
 * Quantised weights, x uniform: the CPU's int8 activations are off by up
 * to ~8e-3 (backend_ops_mm.c), a device's (if it rounds too) as much again.
 */
#define B_MM_QUANT 2e-2
/*
 * ... and against the exact product (double sums of the dequantised
 * weights), pooled over all products of a type: the device's error must be
 * within twice the CPU's own plus float noise.
 */
#define B_MM_EXACT_SLACK 1e-5
/*
 * ATTN, ATTN_SPARSE: float dot products over head_dim, a softmax over up to
 * 301 positions and a weighted sum, in another order and with another exp:
 * ~1e-6.  An F16 cache (5e-4) fails; a position read off by one (a change of
 * 1/pos of the output, > 3e-3 here) fails.
 */
#define B_ATTN 1e-4
/* MOE_ROUTE's probabilities and weights: softmax over up to 512 values, ~1e-6. */
#define B_ROUTE 1e-5
/*
 * DELTANET, DELTANET_TILED outputs and recurrent states: the CPU runs the
 * recurrence up to 8 tokens and the chunked form (a triangular inverse per
 * 64 tokens) beyond; on these inputs the two agree within 1.2e-6 (outputs)
 * and 6e-7 (states), measured: the CPU's 16 and 70 tokens at once against
 * one at a time, at each shape of backend_ops_dn.c.  A GPU may use either
 * form: 1e-4.
 */
#define B_DN 1e-4

#define MAX_ARENAS 8

/* ---- what every case adds up (check_backend_ops.c; each case runs in a child) ------ */

struct stats {
	int checks[STRATA_OP_COUNT];
	int refused[STRATA_OP_COUNT];           /* ops: refused for F32 */
	int type_checked[2][STRATA_TYPE_COUNT]; /* [0] MATMUL, [1] GET_ROWS */
	int type_refused[2][STRATA_TYPE_COUNT];
	/* checks over their bound */
	int failed;
	char device[64];
};

extern struct stats *bo_st;                  /* in memory the children share */
extern uint32_t bo_types[STRATA_TYPE_COUNT]; /* the weight types the CPU supports */
extern int bo_n_types;

/* ---- the rig: the device, the CPU backend, buffers on both ------------------------------ */

/*
 * An arena: host memory the CPU backend computes on (h) and a device
 * buffer of the same layout (d), allocated when the arena is first
 * uploaded.  Tensors are made on h; the device's op is the same op with
 * every buffer swapped for its device twin.
 */
struct arena {
	struct strata_buf h, d;
	size_t cap, used;
	uint32_t usage;
};

struct rig {
	struct strata_config cfg;
	struct strata_registry *reg;
	struct strata_backend *dev, *cpu;
	struct strata_pool *pool;
	struct arena *ar[MAX_ARENAS];
	int n_ar;
	uint64_t seed;
	double t0;      /* when the case began (its time is printed) */
	char label[64]; /* the case, in its summary lines */
	int fails;
	/* this case's largest error per op, and the bound of that check */
	double worst[STRATA_OP_COUNT], worst_bound[STRATA_OP_COUNT];
	int n[STRATA_OP_COUNT];
};

int bo_rig_open(struct rig *R, uint64_t salt, const char **why);

/* Open a case's rig, labelled by the printf arguments (TU_SKIP: no usable device). */
#define RIG(R, salt, ...)                                                                          \
	do {                                                                                       \
		const char *why_;                                                                  \
		int rc_ = bo_rig_open((R), (salt), &why_);                                         \
		if (rc_ == STRATA_TEST_SKIP)                                                       \
			TU_SKIP("%s", why_);                                                       \
		ck_assert_msg(rc_ == 0, "%s", why_);                                               \
		snprintf((R)->label, sizeof((R)->label), __VA_ARGS__);                             \
	} while (0)

void bo_rig_close(struct rig *R);

/* ---- buffers ---------------------------------------------------------------------------- */

struct arena *bo_ar_new(struct rig *R, size_t cap, uint32_t usage);
void bo_ar_drop(struct rig *R, int keep);
struct strata_tensor bo_ar_t(struct arena *A, uint32_t type, int64_t ne0, int64_t ne1,
			     int64_t ne2);
size_t bo_extent(const struct strata_tensor *t);
void bo_ar_up(struct rig *R, struct arena *A, int copy);
void bo_up(struct rig *R, const struct strata_tensor *t);
void *bo_down(struct rig *R, const struct strata_tensor *t);

static inline struct strata_tensor f32(struct arena *A, int64_t ne0, int64_t ne1)
{
	return bo_ar_t(A, STRATA_TYPE_F32, ne0, ne1, 1);
}

static inline struct strata_tensor i32(struct arena *A, int64_t ne0, int64_t ne1)
{
	return bo_ar_t(A, STRATA_TYPE_I32, ne0, ne1, 1);
}

static inline float *F(const struct strata_tensor *t)
{
	return strata_tensor_data(t);
}

static inline int32_t *I(const struct strata_tensor *t)
{
	return strata_tensor_data(t);
}

/* ---- random inputs ---------------------------------------------------------------------- */

float bo_frand(struct rig *R, float lo, float hi);
void bo_fill(struct rig *R, const struct strata_tensor *t, float lo, float hi);
void bo_fill_const(const struct strata_tensor *t, float v);
void bo_inv_freq(const struct strata_tensor *t, int n_rot, float base);

/* ---- checks ----------------------------------------------------------------------------- */

int bo_check(struct rig *R, uint32_t code, double err, double bound, const char *fmt, ...);
int bo_dev_takes(struct rig *R, uint32_t code, uint32_t type);
double bo_cmp(struct rig *R, uint32_t code, const struct strata_tensor *t, double bound,
	      const char *fmt, ...);

/* ---- running an op on both -------------------------------------------------------------- */

void bo_both(struct rig *R, const struct strata_op *op, const char *what);
struct strata_op bo_op2(uint32_t code, struct strata_tensor *dst, const struct strata_tensor *a,
			const struct strata_tensor *b);
struct strata_tensor bo_t3(struct strata_buf *buf, size_t off, int64_t ne0, int64_t ne1,
			   int64_t ne2);

/* ---- the cases of each area, added to the suite in this order ----------------------------- */

void bo_mm_cases(TCase *tc);       /* backend_ops_mm.c: weights (a loop over bo_types) */
void bo_misc_cases(TCase *tc);     /* backend_ops_misc.c: rms_norm .. moe_combine */
void bo_attn_cases(TCase *tc);     /* backend_ops_attn.c: attn, attn_sparse, qsa_select */
void bo_dn_cases(TCase *tc);       /* backend_ops_dn.c: deltanet */
void bo_qwen4exp_cases(TCase *tc); /* backend_ops_misc.c: hyper, conv_silu */

#endif
