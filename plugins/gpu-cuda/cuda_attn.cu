/*
 * cuda_attn.cu - STRATA_OP_ATTN, ATTN_SPARSE and QSA_SELECT on the device.
 *
 * The KV cache layout is this backend's own (backend.h: only these ops
 * touch it; the core never copies or reads a layer's K and V caches, it only
 * sizes them [head_dim, ctx, n_kv] and [head_dim_v, ctx, n_kv]).  Both are
 * kept row per position: K as [n_kv][ctx][head_dim], V as
 * [n_kv][ctx][head_dim_v], ctx = src[3]->ne[1] - the same number of floats
 * the core allocates.  A tile of keys is then a run of contiguous rows that
 * a warp reads coalesced into shared memory.  The caches are never cleared
 * (device memory is not zeroed): positions past a query's are never loaded,
 * so whatever they hold (NaN included) cannot reach a result.
 *
 * Attention is flash-attention style: a thread block takes AT_ROWS query
 * rows (token, query head) that share one KV head - all the heads of a
 * group, and for dense attention consecutive tokens too - and streams the
 * keys and values through shared memory AT_TK at a time, keeping a running
 * max and sum per row (online softmax, in float, expf).  A lane scores one
 * key of the tile for the warp's rows (no reduction per score), then the
 * warp adds the tile's values weighted by the probabilities, each lane
 * owning head_dim_v / 32 of the output.  When the (row block, KV head) pairs
 * are too few to fill the device - decoding - the key range is split over
 * blocks as well and a second kernel merges the partial (max, sum, output)
 * triples (flash-decoding).
 */
#include <errno.h>
#include <math.h>

#include "cuda_int.h"

#define AT_TK 32                      /* keys per tile: one per lane */
#define AT_WARPS 4                    /* warps per block */
#define AT_RW 4                       /* query rows per warp */
#define AT_ROWS (AT_WARPS * AT_RW)    /* query rows per block */
#define AT_MAXD 256                   /* largest head_dim / head_dim_v */
#define AT_SPLIT_MIN 128              /* fewest keys worth a split of their own */
#define SMEM_DEFAULT (48 * 1024)      /* dynamic shared memory without opting in */

/* Device pointer to float / int32 element `i` of a tensor's data. */
#define TF(t) ((float *)cu_ptr(t))
#define TI(t) ((int32_t *)cu_ptr(t))

/* The operands of one attention launch (strides in elements). */
struct at_args {
	const float *q;
	float *o;                /* may be q: a block reads its rows before writing them */
	const float *kc, *vc;
	const int32_t *cells;    /* ATTN_SPARSE: src[5] [w, n]; NULL: dense causal */
	float *part;             /* S > 1: accs [S][rows][hdv], then (m, l) [S][rows][2] */
	long long q1, q2, o1, o2, c1;
	int n, n_head, G, hd, hd4, ks, hdv, ctx, pos, w, gchunks, chunk, S;
	float scale;
};

static __device__ __forceinline__ float warp_max(float v)
{
	for (int o = 16; o; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

static __device__ __forceinline__ float warp_sum(float v)
{
	for (int o = 16; o; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/*
 * The query row in slot `slot` of row block rb: its token *t and head of the
 * group *g; 0 when the slot is empty.  Dense blocks take AT_ROWS consecutive
 * (token, head) pairs of the n * G of the KV head; sparse blocks take heads
 * of one token only, since each token has its own list of cells.
 */
static __device__ __forceinline__ int at_row(const struct at_args &a, int rb, int slot, int *t,
					     int *g)
{
	if (a.cells) {
		*t = rb / a.gchunks;
		*g = (rb % a.gchunks) * AT_ROWS + slot;
		return *g < a.G;
	}
	const long long flat = (long long)rb * AT_ROWS + slot;

	*t = (int)(flat / a.G);
	*g = (int)(flat % a.G);
	return flat < (long long)a.n * a.G;
}

/*
 * Attention of one row block (blockIdx.x, reversed so the long causal rows
 * start first) of KV head blockIdx.y over split blockIdx.z of its keys.
 * Shared memory: AT_ROWS query rows of hd4 floats, then one tile buffer
 * that holds the keys (AT_TK rows of ks floats), then the values (AT_TK rows
 * of hdv).  DV = ceil(hdv / 32): the output values each lane owns.
 */
template <int DV>
static __global__ void __launch_bounds__(AT_WARPS * 32) attn_kernel(const struct at_args a)
{
	extern __shared__ float4 sm4[];
	float *qs = (float *)sm4, *kv = qs + AT_ROWS * a.hd4;
	const int lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
	const int rb = gridDim.x - 1 - blockIdx.x, kvh = blockIdx.y, sp = blockIdx.z;
	const size_t kvbase = (size_t)kvh * a.ctx;
	int tr[AT_RW], hr[AT_RW], ok[AT_RW], lim[AT_RW];
	float m[AT_RW], l[AT_RW], acc[AT_RW][DV];
	int klen, tblk = 0;

	/* this warp's rows (slots wp, wp + AT_WARPS, ...) and their queries */
#pragma unroll
	for (int i = 0; i < AT_RW; i++) {
		const int slot = wp + AT_WARPS * i;
		int g;

		ok[i] = at_row(a, rb, slot, &tr[i], &g);
		hr[i] = kvh * a.G + g;
		lim[i] = a.pos + tr[i];
		m[i] = -INFINITY;
		l[i] = 0.0f;
#pragma unroll
		for (int e = 0; e < DV; e++)
			acc[i][e] = 0.0f;
		const float *qr = ok[i] ? a.q + tr[i] * a.q2 + hr[i] * a.q1 : a.q;

		for (int x = lane; x < a.hd4; x += 32)
			qs[slot * a.hd4 + x] = ok[i] && x < a.hd ? qr[x] : 0.0f;
	}
	/* the keys this block reads: a causal prefix, or the token's list */
	if (a.cells) {
		tblk = rb / a.gchunks;
		klen = a.w;
	} else {
		const long long end = (long long)rb * AT_ROWS + AT_ROWS, all = (long long)a.n * a.G;

		klen = a.pos + (int(((end < all ? end : all) - 1) / a.G)) + 1;
	}
	const int k0 = sp * a.chunk, k1 = min(klen, k0 + a.chunk);

	for (int kt = k0; kt < k1; kt += AT_TK) {
		int cell = -1; /* the position of this lane's key, -1: none */
		float s[AT_RW], p[AT_RW];
		int act[AT_RW];

		if (kt + lane < k1) {
			if (!a.cells)
				cell = kt + lane;
			else {
				const int c = a.cells[tblk * a.c1 + kt + lane];

				cell = c >= 0 && c <= a.pos + tblk ? c : -1;
			}
		}
		__syncthreads(); /* the last tile's values are consumed */
		for (int j = wp; j < AT_TK; j += AT_WARPS) {
			const int cj = __shfl_sync(0xffffffffu, cell, j);
			float *row = kv + j * a.ks;

			const float *src = a.kc + (kvbase + (cj >= 0 ? cj : 0)) * a.hd;

			for (int x = lane; x < a.hd4; x += 32)
				row[x] = cj >= 0 && x < a.hd ? src[x] : 0.0f;
		}
		__syncthreads();
		/* lane's key against the warp's rows */
#pragma unroll
		for (int i = 0; i < AT_RW; i++)
			s[i] = 0.0f;
		{
			const float4 *k4 = (const float4 *)(kv + lane * a.ks);

			for (int x = 0; x < a.hd4 / 4; x++) {
				const float4 kx = k4[x];

#pragma unroll
				for (int i = 0; i < AT_RW; i++) {
					const float *qrow = qs + (wp + AT_WARPS * i) * a.hd4;
					const float4 qx = ((const float4 *)qrow)[x];

					s[i] = fmaf(qx.x, kx.x, s[i]);
					s[i] = fmaf(qx.y, kx.y, s[i]);
					s[i] = fmaf(qx.z, kx.z, s[i]);
					s[i] = fmaf(qx.w, kx.w, s[i]);
				}
			}
		}
		/* online softmax: warp-uniform per row */
#pragma unroll
		for (int i = 0; i < AT_RW; i++) {
			const int valid = ok[i] && cell >= 0 && cell <= lim[i];
			const float sc = valid ? s[i] * a.scale : -INFINITY;
			const float mt = warp_max(sc);

			p[i] = 0.0f;
			act[i] = mt != -INFINITY;
			if (!act[i])
				continue;
			const float mn = fmaxf(m[i], mt), alpha = expf(m[i] - mn);

			p[i] = valid ? expf(sc - mn) : 0.0f;
			l[i] = l[i] * alpha + p[i];
#pragma unroll
			for (int e = 0; e < DV; e++)
				acc[i][e] *= alpha;
			m[i] = mn;
		}
		__syncthreads(); /* the keys are consumed */
		for (int j = wp; j < AT_TK; j += AT_WARPS) {
			const int cj = __shfl_sync(0xffffffffu, cell, j);
			const float *src = a.vc + (kvbase + (cj >= 0 ? cj : 0)) * a.hdv;
			float *row = kv + j * a.hdv;

			for (int x = lane; x < a.hdv; x += 32)
				row[x] = cj >= 0 ? src[x] : 0.0f;
		}
		__syncthreads();
		for (int j = 0; j < AT_TK; j++) {
			const float *vrow = kv + j * a.hdv;
			float vj[DV];

#pragma unroll
			for (int e = 0; e < DV; e++)
				vj[e] = lane + 32 * e < a.hdv ? vrow[lane + 32 * e] : 0.0f;
#pragma unroll
			for (int i = 0; i < AT_RW; i++) {
				if (!act[i])
					continue;
				const float pj = __shfl_sync(0xffffffffu, p[i], j);

#pragma unroll
				for (int e = 0; e < DV; e++)
					acc[i][e] = fmaf(pj, vj[e], acc[i][e]);
			}
		}
	}
	/* the rows' results: normalised, or this split's partial triple */
	const size_t nrows = (size_t)a.n * a.n_head;

#pragma unroll
	for (int i = 0; i < AT_RW; i++) {
		const float sum = warp_sum(l[i]);

		if (!ok[i])
			continue;
		if (a.S == 1) {
			float *orow = a.o + tr[i] * a.o2 + hr[i] * a.o1;
			const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;

#pragma unroll
			for (int e = 0; e < DV; e++)
				if (lane + 32 * e < a.hdv)
					orow[lane + 32 * e] = acc[i][e] * inv;
		} else {
			const size_t row = (size_t)sp * nrows + (size_t)tr[i] * a.n_head + hr[i];
			float *pa = a.part + row * a.hdv;
			float *ml = a.part + (size_t)a.S * nrows * a.hdv;

#pragma unroll
			for (int e = 0; e < DV; e++)
				if (lane + 32 * e < a.hdv)
					pa[lane + 32 * e] = acc[i][e];
			if (lane == 0) {
				ml[2 * row] = m[i];
				ml[2 * row + 1] = sum;
			}
		}
	}
}

/*
 * Merge the S partial results of row blockIdx.x (token * n_head + head):
 * out = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M), M the largest m_s.
 * Splits that saw no key (m_s = -inf) weigh nothing; a row with none at all
 * (a sparse list of nothing) is zeros, as on the CPU.  Shared: S weights.
 */
static __global__ void attn_combine(const float *part, int S, int n_head, int hdv, float *o,
				    long long o1, long long o2, int nrows)
{
	extern __shared__ float wt[];
	const int row = blockIdx.x, t = row / n_head, h = row % n_head;
	const float *ml = part + (size_t)S * nrows * hdv;
	float *orow = o + t * o2 + h * o1;
	float mx = -INFINITY, sum = 0.0f, inv;

	for (int s = 0; s < S; s++)
		mx = fmaxf(mx, ml[2 * ((size_t)s * nrows + row)]);
	for (int s = threadIdx.x; s < S; s += blockDim.x) {
		const float ms = ml[2 * ((size_t)s * nrows + row)];

		wt[s] = mx == -INFINITY || ms == -INFINITY ? 0.0f : expf(ms - mx);
	}
	__syncthreads();
	for (int s = 0; s < S; s++)
		if (wt[s] > 0.0f)
			sum += ml[2 * ((size_t)s * nrows + row) + 1] * wt[s];
	inv = sum > 0.0f ? 1.0f / sum : 0.0f;
	for (int x = threadIdx.x; x < hdv; x += blockDim.x) {
		float acc = 0.0f;

		for (int s = 0; s < S; s++)
			if (wt[s] > 0.0f)
				acc = fmaf(part[((size_t)s * nrows + row) * hdv + x], wt[s], acc);
		orow[x] = acc * inv;
	}
}

/* The batch's keys and values of token blockIdx.x, KV head blockIdx.y into the caches. */
static __global__ void kv_store(const float *k, const float *v, float *kc, float *vc,
				long long k1, long long k2, long long v1, long long v2, int hd,
				int hdv, int ctx, int pos)
{
	const int t = blockIdx.x, h = blockIdx.y;
	const size_t cell = (size_t)h * ctx + pos + t;

	for (int x = threadIdx.x; x < hd; x += blockDim.x)
		kc[cell * hd + x] = k[t * k2 + h * k1 + x];
	for (int x = threadIdx.x; x < hdv; x += blockDim.x)
		vc[cell * hdv + x] = v[t * v2 + h * v1 + x];
}

/* ---- host side: attention ------------------------------------------------------- */

/* An F32 tensor whose values are contiguous along ne0 and whose strides are whole floats. */
static int f32_rows(const struct strata_tensor *t)
{
	return t && t->buf && t->type == STRATA_TYPE_F32 && t->nb[0] == sizeof(float) &&
	       t->nb[1] % sizeof(float) == 0 && t->nb[2] % sizeof(float) == 0;
}

/* Elements a tensor spans when contiguous (its ne product). */
static size_t t_elems(const struct strata_tensor *t)
{
	return (size_t)t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

/* Number of multiprocessors of the device (1 when the query fails: no splits). */
static int sm_count(struct cuda_dev *d)
{
	int v = 0;

	if (cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, d->device) != cudaSuccess) {
		(void)cudaGetLastError();
		return 1;
	}
	return v > 0 ? v : 1;
}

/*
 * The operands of ATTN / ATTN_SPARSE as the kernel takes them, after the
 * CPU backend's checks (exec_attn.c) plus what this kernel needs (F32 rows,
 * head sizes up to AT_MAXD).  0 or -EINVAL.
 */
static int attn_args_of(const struct strata_op *op, struct at_args *a)
{
	const struct strata_tensor *q = op->src[0], *k = op->src[1], *v = op->src[2];
	const struct strata_tensor *kc = op->src[3], *vc = op->src[4], *o = op->dst;
	const struct strata_tensor *sel = op->code == STRATA_OP_ATTN_SPARSE ? op->src[5] : NULL;

	if (!f32_rows(q) || !f32_rows(k) || !f32_rows(v) || !f32_rows(kc) || !f32_rows(vc) ||
	    !f32_rows(o))
		return -EINVAL;
	*a = at_args{};
	a->n = (int)q->ne[2];
	a->n_head = (int)q->ne[1];
	a->hd = (int)q->ne[0];
	a->hdv = (int)v->ne[0];
	a->ctx = (int)kc->ne[1];
	a->pos = (int)op->p.attn.pos;
	a->scale = op->p.attn.scale;
	const int n_kv = (int)k->ne[1];

	if (n_kv <= 0 || a->n_head % n_kv || k->ne[0] != q->ne[0] || k->ne[2] != q->ne[2] ||
	    v->ne[1] != k->ne[1] || v->ne[2] != q->ne[2] || o->ne[0] != v->ne[0] ||
	    o->ne[1] != q->ne[1] || o->ne[2] != q->ne[2] || a->hd <= 0 || a->hd > AT_MAXD ||
	    a->hdv <= 0 || a->hdv > AT_MAXD || kc->ne[1] > INT32_MAX ||
	    (uint64_t)op->p.attn.pos + (uint64_t)a->n > (uint64_t)kc->ne[1] ||
	    t_elems(kc) < (size_t)n_kv * a->hd * a->ctx ||
	    t_elems(vc) < (size_t)n_kv * a->hdv * a->ctx)
		return -EINVAL;
	if (op->code == STRATA_OP_ATTN_SPARSE &&
	    (!sel || !sel->buf || sel->type != STRATA_TYPE_I32 || sel->ne[1] != q->ne[2] ||
	     sel->nb[0] != sizeof(int32_t) || sel->nb[1] % sizeof(int32_t) || sel->ne[0] <= 0 ||
	     sel->ne[0] > INT32_MAX / 2))
		return -EINVAL;
	a->G = a->n_head / n_kv;
	a->hd4 = (a->hd + 3) & ~3;
	/* key rows ks floats apart, ks = 4 (mod 8): a quarter warp's float4 loads of 8
	 * rows land in 8 distinct groups of 4 banks */
	a->ks = a->hd4 % 8 ? a->hd4 : a->hd4 + 4;
	a->q = TF(q);
	a->o = TF(o);
	a->kc = TF(kc);
	a->vc = TF(vc);
	a->q1 = (long long)(q->nb[1] / sizeof(float));
	a->q2 = (long long)(q->nb[2] / sizeof(float));
	a->o1 = (long long)(o->nb[1] / sizeof(float));
	a->o2 = (long long)(o->nb[2] / sizeof(float));
	if (sel) {
		a->cells = TI(sel);
		a->c1 = (long long)(sel->nb[1] / sizeof(int32_t));
		a->w = (int)sel->ne[0];
		a->gchunks = (a->G + AT_ROWS - 1) / AT_ROWS;
	}
	return 0;
}

/* Launch attn_kernel<DV> for hdv. */
static cudaError_t attn_launch(const struct at_args *a, dim3 grid, size_t smem,
			       cudaStream_t st)
{
	void (*fn)(const struct at_args);
	cudaError_t e;

	if (a->hdv <= 32)
		fn = attn_kernel<1>;
	else if (a->hdv <= 64)
		fn = attn_kernel<2>;
	else if (a->hdv <= 128)
		fn = attn_kernel<4>;
	else
		fn = attn_kernel<8>;
	/* over 48 KiB only for head_dim > 200: every sm_75+ device opts in to 64 KiB */
	if (smem > SMEM_DEFAULT &&
	    (e = cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
				      (int)smem)) != cudaSuccess)
		return e;
	fn<<<grid, AT_WARPS * 32, smem, st>>>(*a);
	return cudaGetLastError();
}

/*
 * Store the batch's keys and values, then attend (split over the keys when
 * the blocks are too few for the device, merged by attn_combine).
 */
static int op_attn(struct cuda_dev *d, const struct strata_op *op)
{
	const struct strata_tensor *k = op->src[1], *v = op->src[2];
	struct at_args a;
	int rc, n_kv, row_blocks, klen, S = 1;
	size_t smem;

	if ((rc = attn_args_of(op, &a)))
		return rc;
	if (a.n == 0)
		return 0;
	n_kv = a.n_head / a.G;
	kv_store<<<dim3(a.n, n_kv), 128, 0, d->compute>>>(
		TF(k), TF(v), TF(op->src[3]), TF(op->src[4]), (long long)(k->nb[1] / sizeof(float)),
		(long long)(k->nb[2] / sizeof(float)), (long long)(v->nb[1] / sizeof(float)),
		(long long)(v->nb[2] / sizeof(float)), a.hd, a.hdv, a.ctx, a.pos);
	if ((rc = cu_check(d, cudaGetLastError(), "attn: kv store")))
		return rc;
	if (a.cells) {
		row_blocks = a.n * a.gchunks;
		klen = a.w;
	} else {
		row_blocks = (int)(((long long)a.n * a.G + AT_ROWS - 1) / AT_ROWS);
		klen = a.pos + a.n;
	}
	/* flash-decoding: about two blocks per multiprocessor, AT_SPLIT_MIN keys at least */
	{
		const long long base = (long long)row_blocks * n_kv, want = 2LL * sm_count(d);

		if (base < want && klen >= 2 * AT_SPLIT_MIN) {
			long long s = (want + base - 1) / base, cap = klen / AT_SPLIT_MIN;

			S = (int)(s < cap ? s : cap);
		}
	}
	a.chunk = (klen + S - 1) / S;
	a.chunk = (a.chunk + AT_TK - 1) / AT_TK * AT_TK;
	a.S = S = (klen + a.chunk - 1) / a.chunk;
	if (S > 1 && (rc = cu_scratch(d, (size_t)S * a.n * a.n_head * (a.hdv + 2) * sizeof(float),
				      (void **)&a.part)))
		return rc;
	smem = ((size_t)AT_ROWS * a.hd4 + (size_t)AT_TK * (a.ks > a.hdv ? a.ks : a.hdv)) *
	       sizeof(float);
	if ((rc = cu_check(d, attn_launch(&a, dim3(row_blocks, n_kv, S), smem, d->compute),
			   "attn")))
		return rc;
	if (S == 1)
		return 0;
	attn_combine<<<a.n * a.n_head, 64, S * sizeof(float), d->compute>>>(
		a.part, S, a.n_head, a.hdv, a.o, a.o1, a.o2, a.n * a.n_head);
	return cu_check(d, cudaGetLastError(), "attn: combine");
}

/* ---- the sparse-attention indexer (STRATA_OP_QSA_SELECT) ---------------------------- */

/*
 * Exactness.  The selection below is the CPU's (exec_q4x.c) step for step:
 * libstdc++'s heap select over cell indices with "less" = a higher score,
 * the same hole sifting and odd last child, so cells of tied blocks are
 * kept, and listed, in the CPU's order.  The pooled keys are computed as the
 * CPU rounds them (sums in order, the double norm, every product rounded
 * apart: __f*_rn keeps nvcc from fusing what x86-64's baseline code cannot).
 * Two things are not bit-for-bit, and neither can be: the rope's cosf/sinf
 * (glibc's, within 0.56 ulp, here cos/sin in double rounded to float) and
 * the order of the query . key sums (strata_dot_f32 differs between the
 * CPU's own scalar, AVX2 and AVX-512 levels).  So the scores agree to float
 * rounding, and the choice agrees exactly unless two different blocks score
 * within rounding of each other (or a head's dot product is within rounding
 * of 0) - the same cases in which the CPU's levels disagree among
 * themselves.  Set CU_QSA_ON_DEVICE to 0 to leave the indexer (and so its
 * layers) to the CPU.
 */
#define CU_QSA_ON_DEVICE 1
#define QSA_MAXD 256               /* largest indexer head size taken */
#define QSA_TT 8                   /* queries per block of qsa_scores */
#define QSA_SCORES_MAX (1u << 24)  /* scores kept at once: queries are done in chunks */

/* What a query's cell scores are: its block scores sv (complete blocks, then the spare). */
struct qsa_view {
	const float *sv;
	int r, nb, pos;
};

/* A cell's score for the query: its block's, -inf past the query's position. */
static __host__ __device__ __forceinline__ float qsa_val(const struct qsa_view &q, int c)
{
	int b;

	if (c > q.pos)
		return -INFINITY;
	b = c / q.r;
	return q.sv[b < q.nb ? b : q.nb];
}

/* std::__push_heap with comp(a, b) = v[a] > v[b]. */
static __host__ __device__ void qheap_push(int32_t *h, const struct qsa_view &qv, int hole,
					   int top, int32_t val)
{
	const float vv = qsa_val(qv, val);
	int parent = (hole - 1) / 2;

	while (hole > top && qsa_val(qv, h[parent]) > vv) {
		h[hole] = h[parent];
		hole = parent;
		parent = (hole - 1) / 2;
	}
	h[hole] = val;
}

/* std::__adjust_heap, as exec_q4x.c's heap_adjust. */
static __host__ __device__ void qheap_adjust(int32_t *h, const struct qsa_view &qv, int hole,
					     int len, int32_t val)
{
	const int top = hole;
	int child = hole;

	while (child < (len - 1) / 2) {
		child = 2 * (child + 1);
		if (qsa_val(qv, h[child]) > qsa_val(qv, h[child - 1]))
			child--;
		h[hole] = h[child];
		hole = child;
	}
	if ((len & 1) == 0 && child == (len - 2) / 2) {
		child = 2 * (child + 1);
		h[hole] = h[child - 1];
		hole = child - 1;
	}
	qheap_push(h, qv, hole, top, val);
}

/*
 * h[0..w) (holding 0..w-1) = the heap std::partial_sort's __heap_select
 * leaves over cells 0..n-1.  As the CPU's loop, but a cell that does not
 * beat the root skips the rest of its block: its cells share its score and
 * the root's score never drops (a replaced root gives way to cells that
 * scored at least as much), so none of them would beat it either; cells
 * past the query's position (-inf) never do.
 */
static __host__ __device__ void qheap_select(int32_t *h, const struct qsa_view &qv, int w, int n)
{
	const int end = n < qv.pos + 1 ? n : qv.pos + 1;
	float root;

	if (w >= 2)
		for (int parent = (w - 2) / 2;; parent--) {
			qheap_adjust(h, qv, parent, w, h[parent]);
			if (parent == 0)
				break;
		}
	root = qsa_val(qv, h[0]);
	for (int i = w; i < end;) {
		if (!(qsa_val(qv, i) > root)) {
			const int b = i / qv.r;

			i = b < qv.nb && (b + 1) * qv.r < end ? (b + 1) * qv.r : end;
			continue;
		}
		qheap_adjust(h, qv, 0, w, i);
		root = qsa_val(qv, h[0]);
		i++;
	}
}

/*
 * Pool block blockIdx.x's keys (the spare block, blockIdx.x == nb: cell 0
 * alone at position 0) into pooled[blockIdx.x]: the mean of its r raw keys,
 * RMSNorm with eps and the weight nw, NEOX rope of the first 2 * half
 * values at the block's first position.  Rounded as exec_q4x.c's qsa_pool.
 * Shared: d floats.
 */
static __global__ void qsa_pool(const float *keys, long long ld, const float *nw,
				const float *inv, int d, int r, int nb, int half, float eps,
				float *pooled)
{
	extern __shared__ float pv[];
	__shared__ float scl;
	const int b = blockIdx.x, first = b < nb ? b * r : 0, cnt = b < nb ? r : 1;
	float *out = pooled + (size_t)b * d;

	for (int x = threadIdx.x; x < d; x += blockDim.x) {
		float s = keys[first * ld + x];

		for (int i = 1; i < cnt; i++)
			s = __fadd_rn(s, keys[(first + i) * ld + x]);
		pv[x] = __fmul_rn(s, 1.0f / (float)cnt);
	}
	__syncthreads();
	if (threadIdx.x == 0) { /* the CPU's sum of squares: in order, in double */
		double ss = 0.0;

		for (int x = 0; x < d; x++)
			ss = __dadd_rn(ss, __dmul_rn((double)pv[x], (double)pv[x]));
		scl = (float)(1.0 / sqrt(__dadd_rn(ss / (double)d, (double)eps)));
	}
	__syncthreads();
	for (int x = threadIdx.x; x < d; x += blockDim.x)
		pv[x] = __fmul_rn(__fmul_rn(pv[x], scl), nw[x]);
	__syncthreads();
	for (int x = threadIdx.x; x < d; x += blockDim.x) {
		const int i = x < half ? x : x - half;
		double sd, cd;
		float c, s;

		if (x >= 2 * half) {
			out[x] = pv[x];
			continue;
		}
		sincos((double)__fmul_rn((float)first, inv[i]), &sd, &cd);
		c = (float)cd;
		s = (float)sd;
		out[x] = x < half ? __fsub_rn(__fmul_rn(pv[i], c), __fmul_rn(pv[i + half], s))
				  : __fadd_rn(__fmul_rn(pv[i], s), __fmul_rn(pv[i + half], c));
	}
}

/*
 * Block scores sv[t - t0][b] = sum over heads (in order) of relu(q_{t,h} .
 * pooled_b), plus 1e9 for the block holding the query's incomplete tail
 * (b == nb, or a block complete in the cache that starts past the query's
 * last complete one).  Blocks of 32 pooled keys (x) by QSA_TT queries (y),
 * a thread per pair; blocks whose cells all lie past every query's position
 * are left unwritten (never read).  Shared: 32 keys of d + 1 floats (the +1
 * spreads a warp's 32 rows over the banks), QSA_TT queries of d.
 */
static __global__ void qsa_scores(const float *q, long long q1, long long q2, int heads, int d,
				  const float *pooled, int nb, int r, int pos, int t0, int n,
				  float *sv)
{
	extern __shared__ float qk[];
	float *kp = qk, *qq = qk + 32 * (d + 1);
	const int tt = blockDim.x / 32, lane = threadIdx.x & 31, ty = threadIdx.x >> 5;
	const int b0 = blockIdx.x * 32, tb = t0 + blockIdx.y * tt;
	const int tlast = min(tb + tt, n) - 1, t = tb + ty, b = b0 + lane;
	float s = 0.0f;

	if ((long long)b0 * r > (long long)pos + tlast)
		return; /* block-uniform: before any barrier */
	for (int e = threadIdx.x; e < 32 * d; e += blockDim.x) {
		const int j = e / d, x = e % d;

		kp[j * (d + 1) + x] = b0 + j <= nb ? pooled[(size_t)(b0 + j) * d + x] : 0.0f;
	}
	for (int h = 0; h < heads; h++) {
		float dot = 0.0f;

		__syncthreads();
		for (int e = threadIdx.x; e < tt * d; e += blockDim.x) {
			const int i = e / d, x = e % d;

			qq[e] = tb + i < n ? q[(tb + i) * q2 + h * q1 + x] : 0.0f;
		}
		__syncthreads();
		for (int x = 0; x < d; x++)
			dot = fmaf(qq[ty * d + x], kp[lane * (d + 1) + x], dot);
		s += dot > 0.0f ? dot : 0.0f;
	}
	if (t < n && b <= nb) {
		const int tail = (pos + t + 1) / r * r;

		if (b == nb || (long long)b * r >= tail)
			s += 1e9f;
		sv[(size_t)(t - t0) * (nb + 1) + b] = s;
	}
}

/*
 * Query t0 + blockIdx.x's cells: the heap (in shared memory when it fits,
 * else in its own dst column), then its cells at most the query's position
 * in heap order, -1 after the last, as the CPU lists them.
 */
static __global__ void qsa_select(const float *sv, int nb, int r, int pos, int t0, int n_used,
				  int w, int32_t *dst, long long d1, int heap_shared)
{
	extern __shared__ int32_t hs[];
	const int t = t0 + blockIdx.x;
	int32_t *out = dst + t * d1, *h = heap_shared ? hs : out;
	const struct qsa_view qv = { sv + (size_t)blockIdx.x * (nb + 1), r, nb, pos + t };
	int k = 0;

	for (int j = threadIdx.x; j < w; j += blockDim.x)
		h[j] = j;
	__syncthreads();
	if (threadIdx.x)
		return;
	if (n_used > w)
		qheap_select(h, qv, w, n_used);
	for (int i = 0; i < w; i++) { /* in place: k <= i */
		const int32_t c = h[i];

		if (c >= 0 && c <= qv.pos)
			out[k++] = c;
	}
	for (; k < w; k++)
		out[k] = -1;
}

/* The operands of QSA_SELECT, checked as exec_q4x.c does (plus this file's limits). */
static int qsa_check(const struct strata_op *op)
{
	const struct strata_tensor *q = op->src[0], *kc = op->src[1], *nw = op->src[2];
	const struct strata_tensor *inv = op->src[3], *o = op->dst;
	const uint64_t r = op->p.qsa.ratio, n_used = (uint64_t)op->p.qsa.pos + (uint64_t)q->ne[2];

	if (!f32_rows(q) || !f32_rows(kc) || !f32_rows(nw) || !inv || !inv->buf ||
	    inv->type != STRATA_TYPE_F32 || !o || !o->buf || o->type != STRATA_TYPE_I32 ||
	    o->nb[0] != sizeof(int32_t) || o->nb[1] % sizeof(int32_t))
		return -EINVAL;
	if (!r || r > 64 || !op->p.qsa.top_k || kc->ne[0] != q->ne[0] ||
	    n_used > (uint64_t)kc->ne[1] || nw->ne[0] != q->ne[0] ||
	    op->p.qsa.n_rot > (uint64_t)q->ne[0] || op->p.qsa.n_rot % 2 ||
	    o->ne[0] != (int64_t)op->p.qsa.top_k + (int64_t)r - 1 || o->ne[1] != q->ne[2])
		return -EINVAL;
	if (q->ne[0] > QSA_MAXD || q->ne[1] < 1 || n_used > INT32_MAX / 2 ||
	    o->ne[0] > INT32_MAX / 2 || t_elems(inv) < op->p.qsa.n_rot / 2 ||
	    (q->ne[2] + QSA_TT - 1) / QSA_TT > 65535)
		return -EINVAL;
	return 0;
}

/* Pool every complete block once, then score and select a chunk of queries at a time. */
static int op_qsa(struct cuda_dev *d, const struct strata_op *op)
{
	const struct strata_tensor *q = op->src[0], *kc = op->src[1];
	int dim, n, r, pos, n_used, nb, w, tt, heap_shared, chunk, rc;
	float *pooled, *sv;
	size_t sk;

	if ((rc = qsa_check(op)))
		return rc;
	dim = (int)q->ne[0];
	n = (int)q->ne[2];
	r = (int)op->p.qsa.ratio;
	pos = (int)op->p.qsa.pos;
	n_used = pos + n;
	nb = n_used / r;
	w = (int)op->dst->ne[0];
	tt = n < QSA_TT ? n : QSA_TT;
	sk = (32 * (size_t)(dim + 1) + (size_t)tt * dim) * sizeof(float);
	heap_shared = (size_t)w * sizeof(int32_t) <= SMEM_DEFAULT;
	if (n == 0)
		return 0;
	chunk = (int)(QSA_SCORES_MAX / (unsigned)(nb + 1));
	chunk = chunk < 1 ? 1 : chunk > n ? n : chunk;
	if ((rc = cu_scratch(d, ((size_t)(nb + 1) * dim + (size_t)chunk * (nb + 1)) *
				    sizeof(float), (void **)&pooled)))
		return rc;
	sv = pooled + (size_t)(nb + 1) * dim;
	qsa_pool<<<nb + 1, 128, dim * sizeof(float), d->compute>>>(
		TF(kc), (long long)(kc->nb[1] / sizeof(float)), TF(op->src[2]), TF(op->src[3]), dim,
		r, nb, (int)op->p.qsa.n_rot / 2, op->p.qsa.eps, pooled);
	if ((rc = cu_check(d, cudaGetLastError(), "qsa: pool")))
		return rc;
	for (int t0 = 0; t0 < n; t0 += chunk) {
		const int m = n - t0 < chunk ? n - t0 : chunk;

		const dim3 grid((nb + 1 + 31) / 32, (m + tt - 1) / tt);

		qsa_scores<<<grid, 32 * tt, sk, d->compute>>>(
			TF(q), (long long)(q->nb[1] / sizeof(float)),
			(long long)(q->nb[2] / sizeof(float)), (int)q->ne[1], dim, pooled, nb, r,
			pos, t0, t0 + m, sv);
		if ((rc = cu_check(d, cudaGetLastError(), "qsa: scores")))
			return rc;
		qsa_select<<<m, 32, heap_shared ? w * sizeof(int32_t) : 0, d->compute>>>(
			sv, nb, r, pos, t0, n_used, w, TI(op->dst),
			(long long)(op->dst->nb[1] / sizeof(int32_t)), heap_shared);
		if ((rc = cu_check(d, cudaGetLastError(), "qsa: select")))
			return rc;
	}
	return 0;
}

/* ---- entry points ------------------------------------------------------------------ */

int cu_attn_supports(uint32_t code)
{
	switch (code) {
	case STRATA_OP_ATTN:
	case STRATA_OP_ATTN_SPARSE:
		return 1;
	case STRATA_OP_QSA_SELECT:
		return CU_QSA_ON_DEVICE;
	default:
		return 0;
	}
}

int cu_op_attn(struct cuda_dev *d, const struct strata_op *op)
{
	switch (op->code) {
	case STRATA_OP_ATTN:
	case STRATA_OP_ATTN_SPARSE:
		return op_attn(d, op);
	case STRATA_OP_QSA_SELECT:
		return CU_QSA_ON_DEVICE ? op_qsa(d, op) : -EINVAL;
	default:
		return -EINVAL;
	}
}
