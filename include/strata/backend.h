/*
 * strata/backend.h - the compute-backend ABI: buffers, tensor descriptors,
 * events, the fixed op set, and the ops table a plugin of kind
 * STRATA_PLUGIN_GPU returns (struct strata_backend_ops).
 *
 * The model's layer loop is written once against these ops; the core's CPU
 * backend implements the same table with its own kernels and thread pool, a
 * device plugin implements it on its device.  A device that lacks an op or a
 * weight type says so through supports(), and the core runs that op (or
 * keeps that weight) on the CPU.
 *
 * strata's op set is small and known (every architecture strata runs:
 * llama, qwen3moe, glm4moe, qwen3next, qwen4exp), so this is not a graph library: the
 * core issues ops one at a time, in order, on the backend that holds their
 * operands, and moves activations between backends with copies.
 *
 * Execution model (the CUDA stream model, which a CPU satisfies trivially):
 *   - A backend instance has one in-order compute queue.  run() queues an op
 *     and may return before it executes; ops run in the order queued.
 *   - copy_in()/copy_out() move bytes between host memory and a buffer of
 *     the backend over its link.  copy_out() is ordered after every op
 *     queued before it (it reads their results); copy_in() is not ordered
 *     against compute: an op that reads what it wrote must follow a
 *     wait_event() on the event the copy recorded, or the copy must have
 *     been made blocking (ev == NULL).
 *   - Events: record_event() marks the compute queue's current end;
 *     sync_event() blocks the host until an event is reached;
 *     wait_event() makes later compute wait for it (for an event recorded by
 *     a copy or by the compute queue alike).
 *   - Errors of queued work are sticky: the next sync_event() or
 *     synchronize() returns the first one (and the backend may refuse more
 *     work until synchronize() has reported it).
 *
 * Memory: buffers are allocated by the backend.  A buffer whose flags carry
 * STRATA_BUF_HOST has a base the core may read and write directly (the CPU
 * backend's, or a device's host-visible memory); any other base is a device
 * address the core never dereferences: it only forms tensors from it (base +
 * offset arithmetic) and passes them back to the same backend.
 *
 * Ownership: the core owns every struct it passes in (ops, tensors, item
 * lists, buffer records); a backend copies what it needs before run() or a
 * copy call returns, except the buffer records (struct strata_buf), which
 * stay put from buf_alloc()/buf_wrap() until buf_free().  Host memory given
 * to an asynchronous copy must stay valid until its event is reached.
 *
 * Versioning follows plugin.h: the ops table starts with `version`, is only
 * ever appended to, and the core never reads past the version a plugin
 * declares.  Op codes and parameter layouts are append-only too: a new op
 * gets a new code, and a backend that does not know a code says 0 in
 * supports().
 */
#ifndef STRATA_BACKEND_H
#define STRATA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "strata/plugin.h"
#include "strata/quants.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_BACKEND_OPS_VERSION 1

/* ---- buffers -------------------------------------------------------------- */

/* strata_buf.flags */
#define STRATA_BUF_HOST 1u /* base is a host pointer the core may use directly */

/* buf_alloc() usage hints */
#define STRATA_BUF_USE_WEIGHTS 1u /* written once (uploads), read by every step */
#define STRATA_BUF_USE_STATE 2u   /* KV cache and recurrent states of sequences */
#define STRATA_BUF_USE_WORK 3u    /* activations of one forward pass */

/*
 * A buffer record.  The core allocates the struct, the backend fills it in
 * buf_alloc()/buf_wrap() and may keep its own data in `priv`.
 */
struct strata_buf {
	void *base;     /* address of byte 0 on the backend */
	size_t size;    /* bytes */
	uint32_t flags; /* STRATA_BUF_* */
	uint32_t usage; /* STRATA_BUF_USE_* given to buf_alloc(); 0 for wrapped memory */
	void *priv;     /* the backend's */
};

/* ---- tensors -------------------------------------------------------------- */

/*
 * A tensor descriptor: `type` (enum strata_type), up to four dimensions
 * with ne[0] the row length in values, and byte strides nb[] (nb[0] is the
 * size of one block of the type, nb[1] the row stride, ...).  Unused
 * dimensions have ne = 1.  Quantised rows are whole blocks and contiguous
 * within a row; rows may be strided.  The data starts at buf->base + offset.
 */
struct strata_tensor {
	uint32_t type;
	uint32_t n_dims;
	int64_t ne[4];
	size_t nb[4];
	struct strata_buf *buf;
	size_t offset;
};

/* ---- the op set ----------------------------------------------------------- */

/*
 * Op codes.  Shapes are written [ne0, ne1, ne2]; "rows" are ne1 (x ne2 ...)
 * rows of ne0 values.  Unless an op says otherwise its tensors are F32 and
 * dst may be the same tensor as src[0] (in place).
 */
enum strata_op_code {
	/*
	 * dst[:, i] = row src[1][i] of src[0], as F32.  src[0]: [cols, rows] of
	 * any weight type; src[1]: I32 [n]; dst: [cols, n].  Ids are in range
	 * (the core checks them).
	 */
	STRATA_OP_GET_ROWS = 1,
	/*
	 * Several independent products in one op (p.mm): for each item,
	 * y[:, t] = W x[:, r(t)] for t < y->ne[1], with r(t) = rows[t] (I32)
	 * when the item has rows, else t.  W: [cols, out] of any weight type;
	 * x: F32 [cols, n_x]; y: F32 [out, n_tok].  One op may carry a MoE
	 * layer's experts (the "many-experts gather form": each expert
	 * gathers its tokens' rows of the shared x) plus the shared expert;
	 * items never write each other's inputs; no item's y aliases its x.
	 */
	STRATA_OP_MATMUL = 2,
	/*
	 * RMSNorm of every row: dst = src[0] / sqrt(mean(src[0]^2) + p.norm.eps)
	 * * src[1], with src[1] F32 [ne0] (NULL: no weight).  The mean is taken
	 * over ne0 values, so a view [head_dim, heads * n] normalises heads.
	 */
	STRATA_OP_RMS_NORM = 3,
	/*
	 * Rotary embedding in place: src[0] == dst, [head_dim, heads, n] (token
	 * t at position p.rope.pos + t); src[1]: F32 [n_rot / 2], the inverse
	 * frequencies (theta_i = pos * src[1][i]).  The first p.rope.n_rot
	 * values of each head rotate: mode STRATA_ROPE_MODE_NORM pairs adjacent
	 * values, STRATA_ROPE_MODE_NEOX pairs the two halves.
	 */
	STRATA_OP_ROPE = 4,
	/* dst = src[0] + src[1]; src[1] has src[0]'s shape or one row [ne0, 1] (a bias). */
	STRATA_OP_ADD = 5,
	/* dst = silu(src[0]) * src[1] (SwiGLU), same shapes. */
	STRATA_OP_SWIGLU = 6,
	/*
	 * dst = src[0] * sigmoid(src[1]); src[1] has src[0]'s shape or one
	 * value per row [1, rows] (broadcast over ne0).
	 */
	STRATA_OP_SIGMOID_MUL = 7,
	/* dst = src[0] element-wise, same shape, any strides (views). */
	STRATA_OP_COPY = 8,
	/* dst = p.fill.value everywhere. */
	STRATA_OP_FILL = 9,
	/*
	 * Causal attention against the backend's own KV cache.  src[0] q
	 * [head_dim, n_head, n]; src[1] k [head_dim, n_kv, n]; src[2] v
	 * [head_dim_v, n_kv, n]; src[3], src[4]: this layer's K and V cache,
	 * F32 tensors of at least n_kv * head_dim * ctx and n_kv * head_dim_v
	 * * ctx values (ctx = src[3]->ne[1]) in a layout private to the
	 * backend (only this op and its snapshots touch them); ctx is a
	 * multiple of STRATA_ATTN_CTX_ALIGN, so a backend may keep its cache
	 * in tiles of that many positions and read whole tiles.  The n new
	 * keys and values are stored at positions p.attn.pos .. pos + n - 1,
	 * then query t (query head h reading KV head h / (n_head / n_kv))
	 * attends to positions 0 .. pos + t with scores scaled by p.attn.scale.
	 * dst: [head_dim_v, n_head, n].
	 */
	STRATA_OP_ATTN = 10,
	/*
	 * The Gated DeltaNet mixer (qwen3next) after its input projections, for
	 * n tokens continuing from and updating the layer's states; see p.dn.
	 * src[0] qkv: [conv_ch, n] (the conv's input: all q heads, all k
	 * heads, all v heads); src[1] z: [nv*dv, n] (output gate); src[2] ba:
	 * [2*nv, n] (per key head, the b of its value heads then their a);
	 * src[3] conv state [conv_ch, d_conv - 1] (the last inputs, oldest
	 * first; updated); src[4] recurrent state [dk, dv, nv] (per value head
	 * S as dv rows of dk; updated); src[5] conv kernel [d_conv, conv_ch];
	 * src[6] dt_bias [nv]; src[7] a [nv] (the decay rate, -exp(A_log)).
	 * p.dn.norm: the gated RMSNorm weight [dv].  dst: [nv*dv, n] =
	 * RMSNorm(o) * norm * silu(z) per head.  n == 1 may run the
	 * recurrence, longer batches a chunked form: both within float error
	 * of the recurrence.
	 */
	STRATA_OP_DELTANET = 11,
	/*
	 * Route tokens to experts.  src[0]: router logits [n_expert, n]
	 * (overwritten with the probabilities); src[1]: selection bias
	 * [n_expert] or NULL (it chooses, never weighs); dst: weights F32 [k,
	 * n]; aux: ids I32 [k, n].  p.route: softmax or sigmoid gating, top k,
	 * optional renormalisation (the sum clamped below at 2^-14), and a
	 * final scale.  Ties go to the lower expert id.
	 */
	STRATA_OP_MOE_ROUTE = 12,
	/*
	 * Scatter-add expert outputs: for i < m, dst[:, src[1][i]] += src[2][i]
	 * * src[0][:, i].  src[0] d: [n_embd, m]; src[1] token ids I32 [m];
	 * src[2] weights F32 [m]; dst: [n_embd, n], accumulated into (in the
	 * order of i).
	 */
	STRATA_OP_MOE_COMBINE = 13,
	/*
	 * ---- qwen4exp (Qwen3.8-Flash-Next) ----
	 *
	 * Hyper-connections keep hc residual streams per token, [n_embd * hc,
	 * n] with stream c at values c*n_embd.. of each row (p.hc.n = hc).
	 *
	 * HC_PRE collapses them: dst [n_embd, n] = (1/hc) sum_c src[0]_c *
	 * sigmoid(src[1]_c), with src[0] the normed streams and src[1] the
	 * gates, both [n_embd * hc, n].
	 */
	STRATA_OP_HC_PRE = 14,
	/*
	 * HC_POST adds a block's output to every stream, scaled by the stream's
	 * own weight: dst (== src[0], the streams [n_embd * hc, n]) +=
	 * 2 * sigmoid(src[2][c, t] / hc) * src[1][:, t], with src[1] the block
	 * output [n_embd, n] and src[2] the injection logits [hc, n].
	 */
	STRATA_OP_HC_POST = 15,
	/* dst = silu(p.scale.s * src[0]), same shapes. */
	STRATA_OP_SCALE_SILU = 16,
	/*
	 * The PLE gate: src[0] key and src[1] query, both [n_embd * hc, n]
	 * (already normed), src[2] value [n_embd, n]; per stream c, with s =
	 * <key_c, query_c> / sqrt(n_embd), dst_c = sigmoid(sign(s) *
	 * sqrt(max(|s|, 1e-6))) * value.  dst: [n_embd * hc, n].
	 */
	STRATA_OP_PLE_GATE = 17,
	/*
	 * Depthwise causal dilated convolution with SiLU, continuing a history:
	 * src[0] x [C, n]; src[1] history [C, (K - 1) * d] (the inputs before
	 * x, oldest first; updated to the last ones); src[2] kernel [K, C]
	 * (F32); dst [C, n]: dst[c, t] = silu(sum_k w[k, c] * x[c, t - (K - 1
	 * - k) * d]), reading the history before t = 0.  d = p.conv.dilation.
	 */
	STRATA_OP_CONV_SILU = 18,
	/*
	 * The Gated DeltaNet in qwen4exp's form: as STRATA_OP_DELTANET, except
	 * that value head h reads key head h mod nk (the key heads tiled, not
	 * repeated), src[2] holds per token the b of every value head, then the
	 * a of every value head ([2 * nv, n]), and the output gate is
	 * sigmoid(z), not silu(z).
	 */
	STRATA_OP_DELTANET_TILED = 19,
	/*
	 * The sparse-attention (QSA) indexer's choice of cells, after the
	 * batch's raw indexer keys were stored: src[0] queries [d, heads, n]
	 * (normed and rotated, token t at position p.qsa.pos + t); src[1] the
	 * layer's raw key cache, F32 [d, ctx], positions 0 .. pos + n - 1
	 * written; src[2] the key norm weight [d]; src[3] the inverse rope
	 * frequencies [p.qsa.n_rot / 2].  Every complete block of r =
	 * p.qsa.ratio positions is pooled (the mean of its raw keys, RMSNorm
	 * with p.qsa.eps, NEOX rope at the block's first position) and scored
	 * per query as sum over heads of relu(q_h . k_block); a query keeps its
	 * own incomplete tail block, then the best blocks, top_k + r - 1 cells
	 * in all, ties split as llama.cpp's CPU top-k does (libstdc++'s
	 * partial_sort).  dst: I32 [top_k + r - 1, n], the kept cells (each at
	 * most the query's position), -1 after the last.
	 */
	STRATA_OP_QSA_SELECT = 20,
	/*
	 * STRATA_OP_ATTN restricted to chosen cells: the same operands and
	 * parameters, plus src[5] I32 [w, n], the cells query t may attend to
	 * (ascending or not; -1 entries and cells past its position are
	 * skipped).  The batch's keys and values are stored first, as ATTN.
	 */
	STRATA_OP_ATTN_SPARSE = 21,
	STRATA_OP_COUNT = 22, /* codes below this exist in this header's version */
};

#define STRATA_OP_MAX_SRC 8

/* The KV caches' position counts (ATTN's ctx) are multiples of this. */
#define STRATA_ATTN_CTX_ALIGN 16u

#define STRATA_ROPE_MODE_NORM 0
#define STRATA_ROPE_MODE_NEOX 2

#define STRATA_GATING_MODE_SOFTMAX 1
#define STRATA_GATING_MODE_SIGMOID 2

/* One product of STRATA_OP_MATMUL. */
struct strata_matmul_item {
	const struct strata_tensor *w;
	const struct strata_tensor *x;
	const struct strata_tensor *rows; /* I32 [n_tok], or NULL */
	struct strata_tensor *y;
};

/* Per-op parameters; the union keeps its size (128 bytes) across versions. */
union strata_op_params {
	struct {
		float eps;
	} norm;
	struct {
		uint32_t pos, n_rot, mode;
	} rope;
	struct {
		const struct strata_matmul_item *items;
		uint32_t n_items;
	} mm;
	struct {
		float value;
	} fill;
	struct {
		uint32_t pos;
		float scale;
	} attn;
	struct {
		const struct strata_tensor *norm; /* F32 [dv] */
		uint32_t n_group;  /* nk: key heads */
		uint32_t d_state;  /* dk: key head size */
		uint32_t n_head_v; /* nv: value heads, a multiple of nk */
		uint32_t d_head_v; /* dv */
		uint32_t d_conv;   /* conv kernel length */
		float eps;         /* the gated norm's and the q/k L2 norms' epsilon */
	} dn;
	struct {
		uint32_t n; /* hc: residual streams */
	} hc;
	struct {
		float s;
	} scale;
	struct {
		uint32_t dilation;
	} conv;
	struct {
		uint32_t pos;   /* position of the batch's first token */
		uint32_t ratio; /* positions per block */
		uint32_t top_k; /* blocks' worth of cells kept, besides the tail */
		uint32_t n_rot; /* rotated values of each pooled key */
		float eps;      /* the pooled keys' RMSNorm epsilon */
	} qsa;
	struct {
		uint32_t gating; /* STRATA_GATING_MODE_* */
		uint32_t k;      /* experts per token */
		uint32_t norm;   /* 1: renormalise the k weights to sum 1 */
		float scale;     /* weights *= scale last */
	} route;
	uint8_t reserved[128];
};

struct strata_op {
	uint32_t code;  /* enum strata_op_code */
	uint32_t flags; /* 0 */
	struct strata_tensor *dst;
	struct strata_tensor *aux; /* a second output (MOE_ROUTE's ids), else NULL */
	const struct strata_tensor *src[STRATA_OP_MAX_SRC];
	union strata_op_params p;
};

/* ---- the device ----------------------------------------------------------- */

struct strata_device_info {
	char name[64];        /* "gpu-sim: simulated device", "NVIDIA GeForce RTX 4090" */
	uint64_t mem_total;   /* bytes of device memory */
	uint64_t mem_free;    /* bytes free now */
	uint32_t host_buffers; /* 1: its buffers are host memory (STRATA_BUF_HOST) */
	uint32_t reserved[15];
};

/*
 * The ops table of a backend: a plugin of kind STRATA_PLUGIN_GPU points
 * its descriptor's `ops` at one.  Every method marked required must be
 * non-NULL (the core refuses the plugin otherwise); int methods return 0
 * or a negative errno.
 */
struct strata_backend_ops {
	uint32_t version; /* STRATA_BACKEND_OPS_VERSION the plugin implements */
	/*
	 * Required.  Make a device instance (configuration from
	 * host->config_get(), the plugin's [NAME] section).  *dev is released
	 * with close().
	 */
	int (*open)(const struct strata_host *host, void **dev);
	/* Required.  Wait for queued work, free what remains; NULL is a no-op. */
	void (*close)(void *dev);
	/* Required.  What the device is and how much memory it has now. */
	int (*info)(void *dev, struct strata_device_info *info);
	/*
	 * Required.  1 when run() takes op `code` with weights (MATMUL's w,
	 * GET_ROWS' src[0]) of `type`; ops without weights are asked with
	 * STRATA_TYPE_F32.  0 otherwise (the core runs it on the CPU).
	 */
	int (*supports)(void *dev, uint32_t code, uint32_t type);
	/* Required.  A buffer of `size` bytes; -ENOMEM when the device is full. */
	int (*buf_alloc)(void *dev, size_t size, uint32_t usage, struct strata_buf *buf);
	/*
	 * Optional.  Make host memory (e.g. the model's mapping) usable by the
	 * device in place, without a copy; -ENOTSUP when it cannot.
	 */
	int (*buf_wrap)(void *dev, void *host, size_t size, struct strata_buf *buf);
	/* Required.  Release a buffer after the work that uses it; NULL base: no-op. */
	void (*buf_free)(void *dev, struct strata_buf *buf);
	/*
	 * Required.  Copy n host bytes from src to buf at off.  With ev NULL it
	 * returns when the bytes have landed; else it may return at once and
	 * records ev when they land (src must stay valid until then).
	 */
	int (*copy_in)(void *dev, struct strata_buf *buf, size_t off, const void *src, size_t n,
		       void *ev);
	/*
	 * Required.  Copy n bytes of buf at off to host memory dst, after
	 * every op queued before this call.  ev as in copy_in (dst must not be
	 * read before the event is reached).
	 */
	int (*copy_out)(void *dev, const struct strata_buf *buf, size_t off, void *dst, size_t n,
			void *ev);
	/* Required.  Queue op (see the execution model above). */
	int (*run)(void *dev, const struct strata_op *op);
	/* Required.  Events: create, free (after it is reached or never used). */
	int (*event_create)(void *dev, void **ev);
	void (*event_free)(void *dev, void *ev);
	/* Required.  Record ev at the end of the compute queue. */
	int (*record_event)(void *dev, void *ev);
	/* Required.  Later compute waits until ev is reached. */
	int (*wait_event)(void *dev, void *ev);
	/* Required.  Block the host until ev is reached; the first error of work before it. */
	int (*sync_event)(void *dev, void *ev);
	/* Required.  Block until all queued work and copies are done; the first error since the last call. */
	int (*synchronize)(void *dev);
};

#ifdef __cplusplus
}
#endif

#endif /* STRATA_BACKEND_H */
