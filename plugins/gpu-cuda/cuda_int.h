/*
 * cuda_int.h - private to plugins/gpu-cuda: the device instance and the
 * entry points of the op files (gpu_cuda.cu dispatches run() to them).
 *
 * Every op entry point queues its work on d->compute and returns 0, -EINVAL
 * for operands it does not take (nothing queued), or -ENOMEM / -EIO (logged
 * once with cu_log) when a launch or an allocation failed.  Device pointers
 * are buf->base + offset: gpu-cuda's buffers are cudaMalloc'd, so base is
 * a device address.
 */
#ifndef STRATA_CUDA_INT_H
#define STRATA_CUDA_INT_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/backend.h"
#include "strata/plugin.h"

struct cuda_dev {
	const struct strata_host *host;
	int device;              /* CUDA ordinal ([gpu-cuda] device, 0) */
	int cc;                  /* compute capability, 10 * major + minor */
	cudaStream_t compute;    /* the in-order compute queue */
	cudaStream_t copy;       /* uploads (copy_in) */
	cublasHandle_t blas;     /* bound to `compute`; CUBLAS_DEFAULT_MATH (no TF32) */
	void *scratch;           /* grow-only device scratch of the current op (cu_scratch) */
	size_t scratch_size;
	int err;                 /* sticky: the first error of queued work */
};

/* Log a line through the host (level as strata_host.log). */
#define cu_log(d, level, ...) (d)->host->log((d)->host, (level), __VA_ARGS__)

/* The device address of a tensor's first byte. */
static inline void *cu_ptr(const struct strata_tensor *t)
{
	return (char *)t->buf->base + t->offset;
}

/*
 * At least `bytes` of device scratch for the op being queued, valid until
 * the next op is queued (the stream orders their uses).  0 or -ENOMEM
 * (logged).  Growing it synchronises the compute stream first.
 */
int cu_scratch(struct cuda_dev *d, size_t bytes, void **p);

/*
 * 0 when e is cudaSuccess: pass cudaGetLastError() right after a launch, or
 * a runtime call's result.  Else logs "what: the CUDA error string" (once:
 * only the first error since the last synchronize()), records -EIO as the
 * sticky d->err and returns -EIO.
 */
int cu_check(struct cuda_dev *d, cudaError_t e, const char *what);

/*
 * cuBLAS is not linked: gpu_cuda.cu loads it at open() and defines the
 * entry points the op files call (CU_BLAS_FNS there: cublasCreate/Destroy,
 * SetStream, SetMathMode, GetStatusString, Sgemm).  Calling another
 * one fails the plugin's link (undefined symbol): add its line to CU_BLAS_FNS.
 */

/* ---- the op files ------------------------------------------------------------- */

/* cuda_mm.cu: MATMUL and the dequantisation GET_ROWS uses */
int cu_mm_supports(uint32_t type);
int cu_op_matmul(struct cuda_dev *d, const struct strata_op *op);
/* Rows ids[0..n) (device I32) of a [cols, rows] weight tensor w (any supported type) as
 * F32 into device memory dst (n rows of cols floats, row stride ld floats). */
int cu_get_rows(struct cuda_dev *d, const struct strata_tensor *w, const int32_t *ids,
		int64_t n, float *dst, int64_t ld);

/* cuda_ops.cu: GET_ROWS, RMS_NORM, ROPE, ADD, SWIGLU, SIGMOID_MUL, COPY,
 * FILL, MOE_ROUTE, MOE_COMBINE, SCALE_SILU, HC_PRE, HC_POST, PLE_GATE,
 * CONV_SILU */
int cu_op_simple(struct cuda_dev *d, const struct strata_op *op);
int cu_simple_supports(uint32_t code);

/* cuda_attn.cu: ATTN, ATTN_SPARSE, QSA_SELECT */
int cu_op_attn(struct cuda_dev *d, const struct strata_op *op);
int cu_attn_supports(uint32_t code);

/* cuda_dn.cu: DELTANET, DELTANET_TILED */
int cu_op_deltanet(struct cuda_dev *d, const struct strata_op *op);

#endif
