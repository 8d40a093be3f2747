/*
 * gpu_cuda.cu - gpu-cuda, a compute device on an NVIDIA GPU through the
 * CUDA runtime and cuBLAS (include/strata/backend.h): the plugin's
 * descriptor, the device instance, buffers, copies, events and run()'s
 * dispatch to the op files (cuda_int.h).
 *
 * Queues: the ABI's one in-order compute queue is a non-blocking CUDA
 * stream (`compute`); uploads (copy_in) run on a second one (`copy`), not
 * ordered against compute, as the ABI says; copy_out runs on compute, after
 * every op queued before it.  Events are CUDA events (without timing).
 *
 * Copies go through a ring of pinned host buffers (cudaMallocHost, RING_N
 * chunks of [gpu-cuda] staging_mib, allocated at open), so that a DMA never
 * reads or writes pageable memory (which CUDA would copy synchronously) and
 * the host's memcpy into one chunk overlaps the DMA of the previous one.  A
 * chunk is reused only after the event recorded after its last use is
 * reached; copies larger than the ring go round it several times.
 *   - copy_in: memcpy src -> chunk, DMA chunk -> device on `copy`, event;
 *     with ev, ev is recorded on `copy` after the last chunk and the call
 *     returns at once (src is not read after it returns).
 *   - copy_out: DMA device -> chunk on `compute`, then a host function on
 *     `compute` (cudaLaunchHostFunc) copies chunk -> dst, then the chunk's
 *     event; with ev, ev is recorded after the last chunk and the call
 *     returns at once, else it waits for the last chunk's event.
 *
 * Errors: cu_check() turns a failed CUDA call into -EIO, logged once (the
 * first error since the last synchronize()) and kept as the sticky d->err;
 * a kernel fault shows up at the next synchronisation as the CUDA error of
 * that call.  run() refuses work while d->err is set; synchronize() reports
 * and clears it.
 *
 * cuBLAS is loaded by the first open(), not linked (see blas_load()).
 *
 * Threads: CUDA's current device is per host thread, so every entry point
 * sets it first; run() holds `run_mu` (the ops share d->scratch and the
 * cuBLAS handle), copies hold `ring_mu` (the staging ring).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"

#define RING_N 4                 /* staging chunks */
#define STAGING_MIB_DEFAULT 16   /* bytes per chunk, [gpu-cuda] staging_mib */
#define SCRATCH_ALIGN (1u << 20) /* scratch grows in whole MiB */

/* One pinned staging chunk and what its pending host function copies out. */
struct cu_chunk {
	void *host;        /* pinned, chunk bytes */
	cudaEvent_t done;  /* recorded after the chunk's last use */
	void *dst;         /* copy_out with an event: the host function's target */
	size_t n;
};

/* The instance: the op files' struct cuda_dev first, then this file's own. */
struct cu_plugin {
	struct cuda_dev d;
	pthread_mutex_t run_mu;  /* run(): the ops' scratch and the cuBLAS handle */
	pthread_mutex_t ring_mu; /* copies: the ring and the counters */
	struct cu_chunk ring[RING_N];
	int n_ring;              /* chunks allocated (at least 1) */
	int next;                /* the chunk acquire() looks at next */
	size_t chunk;            /* bytes per chunk */
	uint64_t bytes_in, bytes_out;
	char name[64];
	int locks;               /* the mutexes were initialised */
};

static struct cu_plugin *plug(void *dev)
{
	return (struct cu_plugin *)dev;
}

/* Keep rc as the sticky error unless one is kept already. */
static void set_err(struct cuda_dev *d, int rc)
{
	int zero = 0;

	if (rc)
		__atomic_compare_exchange_n(&d->err, &zero, rc, 0, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
}

static int get_err(struct cuda_dev *d)
{
	return __atomic_load_n(&d->err, __ATOMIC_SEQ_CST);
}

/* Make the instance's device current on this thread (CUDA's is per thread). */
static int use(struct cu_plugin *p)
{
	return cu_check(&p->d, cudaSetDevice(p->d.device), "cudaSetDevice");
}

int cu_check(struct cuda_dev *d, cudaError_t e, const char *what)
{
	int zero = 0;

	if (e == cudaSuccess)
		return 0;
	/* the first error since the last synchronize() is logged, the rest only kept */
	if (__atomic_compare_exchange_n(&d->err, &zero, -EIO, 0, __ATOMIC_SEQ_CST,
					__ATOMIC_SEQ_CST))
		cu_log(d, STRATA_LOG_ERROR, "%s: %s", what, cudaGetErrorString(e));
	return -EIO;
}

int cu_scratch(struct cuda_dev *d, size_t bytes, void **p)
{
	size_t want;
	void *q = NULL;
	int rc;

	if (bytes <= d->scratch_size && d->scratch) {
		*p = d->scratch;
		return 0;
	}
	*p = NULL;
	want = (bytes + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
	if (want < bytes)
		return -ENOMEM;
	if (!want)
		want = SCRATCH_ALIGN;
	/* queued ops may still use the old one */
	if ((rc = cu_check(d, cudaStreamSynchronize(d->compute), "scratch: synchronize")))
		return rc;
	cudaFree(d->scratch);
	d->scratch = NULL;
	d->scratch_size = 0;
	if (cudaMalloc(&q, want) != cudaSuccess) {
		cudaGetLastError(); /* an allocation failure leaves the context usable */
		cu_log(d, STRATA_LOG_ERROR, "scratch of %zu MiB: out of device memory", want >> 20);
		return -ENOMEM;
	}
	d->scratch = q;
	d->scratch_size = want;
	*p = q;
	return 0;
}

/* ---- cuBLAS, loaded at open ---------------------------------------------------- */

/*
 * cuBLAS is not a link dependency of the plugin: libcublasLt alone takes
 * 0.4 s and 150 MB of resident memory to load, which every process with
 * `[gpu] plugin = auto` (the default) would pay when the core scans the
 * plugins, on machines without a GPU too.  The entry points the op files
 * call are defined here, calling through pointers that the first open()
 * resolves (dlopen of the toolkit's libcublas, found through the plugin's
 * rpath or at CU_BLAS_DIR).  A cuBLAS function not listed here fails the
 * plugin's link (--no-undefined): add its line.
 */
#ifndef CU_BLAS_DIR
#define CU_BLAS_DIR "/usr/local/cuda/lib64"
#endif
#define CU_STR_(x) #x
#define CU_STR(x) CU_STR_(x)
#define CU_BLAS_SONAME "libcublas.so." CU_STR(CUBLAS_VER_MAJOR)

#define CU_BLAS_FNS(X)                                                                        \
	X(cublasCreate_v2, (cublasHandle_t * h), (h))                                         \
	X(cublasDestroy_v2, (cublasHandle_t h), (h))                                          \
	X(cublasSetStream_v2, (cublasHandle_t h, cudaStream_t s), (h, s))                    \
	X(cublasSetMathMode, (cublasHandle_t h, cublasMath_t m), (h, m))                     \
	X(cublasSgemm_v2,                                                                     \
	  (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, \
	   const float *alpha, const float *A, int lda, const float *B, int ldb,             \
	   const float *beta, float *C, int ldc),                                             \
	  (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))

#define CU_BLAS_PTR(name, params, args) static cublasStatus_t(*p_##name) params;
#define CU_BLAS_SHIM(name, params, args)                                                      \
	cublasStatus_t name params                                                            \
	{                                                                                     \
		return p_##name ? p_##name args : CUBLAS_STATUS_NOT_INITIALIZED;              \
	}
CU_BLAS_FNS(CU_BLAS_PTR)
CU_BLAS_FNS(CU_BLAS_SHIM)
static const char *(*p_cublasGetStatusString)(cublasStatus_t);

const char *cublasGetStatusString(cublasStatus_t s)
{
	return p_cublasGetStatusString ? p_cublasGetStatusString(s) : "cuBLAS not loaded";
}

static pthread_mutex_t g_blas_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_blas_ok; /* every pointer resolved (never unloaded: the process keeps it) */

/* Load cuBLAS and resolve its entry points, once per process.  0 or -ENOENT (logged). */
static int blas_load(struct cuda_dev *d)
{
	static const char *const files[] = { CU_BLAS_SONAME, CU_BLAS_DIR "/" CU_BLAS_SONAME };
	void *lib = NULL;
	const char *miss = NULL;

	pthread_mutex_lock(&g_blas_mu);
	for (int i = 0; i < 2 && !g_blas_ok && !lib; i++)
		lib = dlopen(files[i], RTLD_NOW | RTLD_LOCAL);
	if (!g_blas_ok && lib) {
#define CU_BLAS_SYM(name, params, args)                                                       \
	if (!miss && !(p_##name = (cublasStatus_t(*) params)dlsym(lib, #name)))              \
		miss = #name;
		CU_BLAS_FNS(CU_BLAS_SYM)
#undef CU_BLAS_SYM
		if (!miss && !(p_cublasGetStatusString = (const char *(*)(cublasStatus_t))dlsym(
				       lib, "cublasGetStatusString")))
			miss = "cublasGetStatusString";
		g_blas_ok = !miss;
	}
	if (!g_blas_ok)
		cu_log(d, STRATA_LOG_ERROR, "cannot use cuBLAS (%s, or %s): %s", CU_BLAS_SONAME,
		       CU_BLAS_DIR, miss ? miss : dlerror());
	pthread_mutex_unlock(&g_blas_mu);
	return g_blas_ok ? 0 : -ENOENT;
}

/* ---- probe, open, close, info ------------------------------------------------- */

#define CC_MIN 75 /* Turing: the oldest architecture the kernels are built for */

/* Compute capability of device `dev` as 10 * major + minor; -1 when unknown. */
static int dev_cc(int dev)
{
	int major = 0, minor = 0;

	if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) ||
	    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev)) {
		cudaGetLastError();
		return -1;
	}
	return 10 * major + minor;
}

/*
 * A usable device: a working driver and a GPU of compute capability 7.5 or
 * later (device 0; open() checks the configured one).  Never fails loudly:
 * why not is a debug line.
 */
static int cc_probe(const struct strata_host *host)
{
	int n = 0, cc;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess || n <= 0) {
		if (e != cudaSuccess)
			cudaGetLastError();
		if (host && host->log)
			host->log(host, STRATA_LOG_DEBUG, "no CUDA device: %s",
				  e != cudaSuccess ? cudaGetErrorString(e) : "none found");
		return 0;
	}
	if ((cc = dev_cc(0)) < CC_MIN) {
		if (host && host->log)
			host->log(host, STRATA_LOG_DEBUG, "CUDA device 0: compute capability %d.%d "
				  "(unknown if -1), older than 7.5", cc / 10, cc % 10);
		return 0;
	}
	return 10; /* above every test device's 1: `[gpu] plugin = auto` prefers it */
}

/* [gpu-cuda] key as a non-negative integer; def when unset, -1 when malformed. */
static long cfg_long(const struct strata_host *h, const char *key, long def)
{
	const char *v = h->config_get(h, NULL, key);
	char *end;
	long x;

	if (!v || !*v)
		return def;
	x = strtol(v, &end, 10);
	return *end || x < 0 ? -1 : x;
}

static void cc_close(void *dev);

/* The pinned ring: RING_N chunks, or as many as could be had (at least one). */
static int ring_alloc(struct cu_plugin *p)
{
	for (int i = 0; i < RING_N; i++) {
		struct cu_chunk *c = &p->ring[p->n_ring];

		if (cudaMallocHost(&c->host, p->chunk) != cudaSuccess) {
			cudaGetLastError();
			c->host = NULL;
			break;
		}
		if (cudaEventCreateWithFlags(&c->done, cudaEventDisableTiming) != cudaSuccess) {
			cudaGetLastError();
			cudaFreeHost(c->host);
			c->host = NULL;
			break;
		}
		p->n_ring++;
	}
	if (!p->n_ring)
		cu_log(&p->d, STRATA_LOG_ERROR, "no pinned staging memory (%zu MiB)",
		       p->chunk >> 20);
	return p->n_ring ? 0 : -ENOMEM;
}

/* Streams, the cuBLAS handle (no TF32: CUBLAS_DEFAULT_MATH) and the ring. */
static int open_queues(struct cu_plugin *p)
{
	struct cuda_dev *d = &p->d;
	int rc;

	if ((rc = blas_load(d)) ||
	    (rc = cu_check(d, cudaStreamCreateWithFlags(&d->compute, cudaStreamNonBlocking),
			   "open: compute stream")) ||
	    (rc = cu_check(d, cudaStreamCreateWithFlags(&d->copy, cudaStreamNonBlocking),
			   "open: copy stream")))
		return rc;
	if (cublasCreate(&d->blas) != CUBLAS_STATUS_SUCCESS) {
		d->blas = NULL;
		cu_log(d, STRATA_LOG_ERROR, "open: cublasCreate failed");
		return -EIO;
	}
	if (cublasSetStream(d->blas, d->compute) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetMathMode(d->blas, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
		cu_log(d, STRATA_LOG_ERROR, "open: cuBLAS stream or math mode refused");
		return -EIO;
	}
	return ring_alloc(p);
}

static int cc_open(const struct strata_host *host, void **out)
{
	struct cu_plugin *p = (struct cu_plugin *)calloc(1, sizeof(*p));
	long dev = cfg_long(host, "device", 0), mib = cfg_long(host, "staging_mib",
								STAGING_MIB_DEFAULT);
	struct cudaDeviceProp prop;
	cudaError_t e;
	int n = 0, rc;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->d.host = host;
	if (dev < 0 || mib < 1 || mib > 1024) {
		cu_log(&p->d, STRATA_LOG_ERROR, "[gpu-cuda] %s must be %s",
		       dev < 0 ? "device" : "staging_mib",
		       dev < 0 ? "a device ordinal (0, 1, ...)" : "1 .. 1024 (MiB per chunk)");
		free(p);
		return -EINVAL;
	}
	if ((e = cudaGetDeviceCount(&n)) != cudaSuccess || dev >= n) {
		cudaGetLastError();
		if (e != cudaSuccess)
			cu_log(&p->d, STRATA_LOG_ERROR, "no CUDA device: %s",
			       cudaGetErrorString(e));
		else
			cu_log(&p->d, STRATA_LOG_ERROR, "[gpu-cuda] device %ld: out of range, this "
			       "machine has %d (0 .. %d)", dev, n, n - 1);
		free(p);
		return -ENODEV;
	}
	p->d.device = (int)dev;
	if ((rc = dev_cc(p->d.device)) < CC_MIN) {
		cu_log(&p->d, STRATA_LOG_ERROR, "[gpu-cuda] device %ld: compute capability %d.%d "
		       "(unknown if -1); gpu-cuda needs 7.5 (Turing) or later", dev, rc / 10,
		       rc % 10);
		free(p);
		return -ENODEV;
	}
	p->chunk = (size_t)mib << 20;
	pthread_mutex_init(&p->run_mu, NULL);
	pthread_mutex_init(&p->ring_mu, NULL);
	p->locks = 1;
	if ((rc = use(p)) ||
	    (rc = cu_check(&p->d, cudaGetDeviceProperties(&prop, p->d.device),
			   "open: cudaGetDeviceProperties")) ||
	    (rc = open_queues(p))) {
		cc_close(p);
		return rc;
	}
	p->d.cc = 10 * prop.major + prop.minor;
	snprintf(p->name, sizeof(p->name), "%.63s", prop.name);
	cu_log(&p->d, STRATA_LOG_INFO, "device %d: %s, compute capability %d.%d, %zu MiB, "
	       "staging %d x %zu MiB", p->d.device, p->name, prop.major, prop.minor,
	       prop.totalGlobalMem >> 20, p->n_ring, p->chunk >> 20);
	*out = p;
	return 0;
}

static void cc_close(void *dev)
{
	struct cu_plugin *p = plug(dev);
	struct cuda_dev *d;

	if (!p)
		return;
	d = &p->d;
	cudaSetDevice(d->device);
	/* errors of the last work are no longer anyone's: drained, not reported */
	if (d->compute)
		cudaStreamSynchronize(d->compute);
	if (d->copy)
		cudaStreamSynchronize(d->copy);
	cu_log(d, STRATA_LOG_DEBUG, "link: %llu bytes in, %llu bytes out",
	       (unsigned long long)p->bytes_in, (unsigned long long)p->bytes_out);
	for (int i = 0; i < p->n_ring; i++) {
		cudaEventDestroy(p->ring[i].done);
		cudaFreeHost(p->ring[i].host);
	}
	cudaFree(d->scratch);
	if (d->blas)
		cublasDestroy(d->blas);
	if (d->copy)
		cudaStreamDestroy(d->copy);
	if (d->compute)
		cudaStreamDestroy(d->compute);
	cudaGetLastError();
	if (p->locks) {
		pthread_mutex_destroy(&p->run_mu);
		pthread_mutex_destroy(&p->ring_mu);
	}
	free(p);
}

static int cc_info(void *dev, struct strata_device_info *info)
{
	struct cu_plugin *p = plug(dev);
	size_t fr = 0, total = 0;
	int rc;

	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s", p->name);
	if ((rc = use(p)) ||
	    (rc = cu_check(&p->d, cudaMemGetInfo(&fr, &total), "info: cudaMemGetInfo")))
		return rc;
	info->mem_total = total;
	info->mem_free = fr;
	info->host_buffers = 0;
	return 0;
}

static int cc_supports(void *dev, uint32_t code, uint32_t type)
{
	(void)dev;
	switch (code) {
	case STRATA_OP_MATMUL:
	case STRATA_OP_GET_ROWS: /* cu_get_rows dequantises what the products read */
		return cu_mm_supports(type);
	case STRATA_OP_ATTN:
	case STRATA_OP_ATTN_SPARSE:
	case STRATA_OP_QSA_SELECT:
		return type == STRATA_TYPE_F32 && cu_attn_supports(code);
	case STRATA_OP_DELTANET:
	case STRATA_OP_DELTANET_TILED:
		return type == STRATA_TYPE_F32;
	default:
		return code < STRATA_OP_COUNT && type == STRATA_TYPE_F32 &&
		       cu_simple_supports(code);
	}
}

/* ---- buffers -------------------------------------------------------------------- */

static int cc_buf_alloc(void *dev, size_t size, uint32_t usage, struct strata_buf *buf)
{
	struct cu_plugin *p = plug(dev);
	void *q = NULL;
	cudaError_t e;
	int rc;

	memset(buf, 0, sizeof(*buf));
	if ((rc = use(p)))
		return rc;
	e = cudaMalloc(&q, size ? size : 256); /* size 0: still a distinct, non-NULL base */
	if (e == cudaErrorMemoryAllocation) {
		/* not an error of the device: the core shrinks its plan and says so */
		cudaGetLastError();
		cu_log(&p->d, STRATA_LOG_DEBUG, "buf_alloc: %zu bytes: out of memory", size);
		return -ENOMEM;
	}
	if ((rc = cu_check(&p->d, e, "buf_alloc: cudaMalloc")))
		return rc;
	buf->base = q;
	buf->size = size;
	buf->usage = usage;
	return 0;
}

/* Host memory in place (cudaHostRegister) is not offered: the core copies. */
static int cc_buf_wrap(void *, void *, size_t, struct strata_buf *)
{
	return -ENOTSUP;
}

static void cc_buf_free(void *dev, struct strata_buf *buf)
{
	struct cu_plugin *p = plug(dev);

	if (!buf || !buf->base)
		return;
	cudaSetDevice(p->d.device);
	/* after the work that uses it: everything queued on either stream */
	cu_check(&p->d, cudaStreamSynchronize(p->d.compute), "buf_free: synchronize");
	cu_check(&p->d, cudaStreamSynchronize(p->d.copy), "buf_free: synchronize");
	cu_check(&p->d, cudaFree(buf->base), "buf_free: cudaFree");
	memset(buf, 0, sizeof(*buf));
}

/* ---- copies ------------------------------------------------------------------------ */

/*
 * The next staging chunk, free once its last use is done (ring_mu held).
 * Chunks are handed out in turn, so up to n_ring calls in a row return
 * distinct chunks.  NULL on a CUDA error (logged).
 */
static struct cu_chunk *acquire(struct cu_plugin *p)
{
	struct cu_chunk *c = &p->ring[p->next];

	p->next = (p->next + 1) % p->n_ring;
	if (cu_check(&p->d, cudaEventSynchronize(c->done), "copy: staging event"))
		return NULL;
	return c;
}

/* Host function on `compute`: a staged chunk of a copy_out to its destination. */
static void CUDART_CB chunk_out(void *arg)
{
	struct cu_chunk *c = (struct cu_chunk *)arg;

	memcpy(c->dst, c->host, c->n);
}

static int check_range(const struct strata_buf *buf, size_t off, size_t n)
{
	return buf && buf->base && off <= buf->size && n <= buf->size - off ? 0 : -EINVAL;
}

/* copy_in's chunks (ring_mu held); the last chunk used in *last. */
static int stage_in(struct cu_plugin *p, char *dst, const char *src, size_t n,
		    struct cu_chunk **last)
{
	for (size_t o = 0; o < n; o += p->chunk) {
		const size_t len = n - o < p->chunk ? n - o : p->chunk;
		struct cu_chunk *c = acquire(p);
		int rc;

		if (!c)
			return -EIO;
		memcpy(c->host, src + o, len);
		if ((rc = cu_check(&p->d, cudaMemcpyAsync(dst + o, c->host, len,
							  cudaMemcpyHostToDevice, p->d.copy),
				   "copy_in: cudaMemcpyAsync")) ||
		    (rc = cu_check(&p->d, cudaEventRecord(c->done, p->d.copy),
				   "copy_in: cudaEventRecord")))
			return rc;
		*last = c;
	}
	return 0;
}

static int cc_copy_in(void *dev, struct strata_buf *buf, size_t off, const void *src, size_t n,
		      void *ev)
{
	struct cu_plugin *p = plug(dev);
	struct cu_chunk *last = NULL;
	int rc;

	if ((rc = check_range(buf, off, n)) || (n && !src))
		return rc ? rc : -EINVAL;
	if ((rc = use(p)))
		return rc;
	pthread_mutex_lock(&p->ring_mu);
	rc = stage_in(p, (char *)buf->base + off, (const char *)src, n, &last);
	if (!rc && ev)
		rc = cu_check(&p->d, cudaEventRecord((cudaEvent_t)ev, p->d.copy),
			      "copy_in: cudaEventRecord");
	else if (!rc && last) /* blocking: the last chunk landed, so did the others */
		rc = cu_check(&p->d, cudaEventSynchronize(last->done), "copy_in: synchronize");
	if (!rc)
		p->bytes_in += n;
	pthread_mutex_unlock(&p->ring_mu);
	return rc;
}

/*
 * copy_out's chunks (ring_mu held): per chunk a DMA into it, a host function
 * copying it to dst, its event; the last chunk used in *last.
 */
static int stage_out(struct cu_plugin *p, char *dst, const char *src, size_t n,
		     struct cu_chunk **last)
{
	cudaStream_t s = p->d.compute;

	for (size_t o = 0; o < n; o += p->chunk) {
		const size_t len = n - o < p->chunk ? n - o : p->chunk;
		struct cu_chunk *c = acquire(p);
		int rc;

		if (!c)
			return -EIO;
		c->dst = dst + o;
		c->n = len;
		if ((rc = cu_check(&p->d, cudaMemcpyAsync(c->host, src + o, len,
							  cudaMemcpyDeviceToHost, s),
				   "copy_out: cudaMemcpyAsync")) ||
		    (rc = cu_check(&p->d, cudaLaunchHostFunc(s, chunk_out, c),
				   "copy_out: cudaLaunchHostFunc")) ||
		    (rc = cu_check(&p->d, cudaEventRecord(c->done, s),
				   "copy_out: cudaEventRecord")))
			return rc;
		*last = c;
	}
	return 0;
}

static int cc_copy_out(void *dev, const struct strata_buf *buf, size_t off, void *dst, size_t n,
		       void *ev)
{
	struct cu_plugin *p = plug(dev);
	struct cu_chunk *last = NULL;
	const char *src;
	int rc;

	if ((rc = check_range(buf, off, n)) || (n && !dst))
		return rc ? rc : -EINVAL;
	if ((rc = use(p)))
		return rc;
	src = (const char *)buf->base + off;
	pthread_mutex_lock(&p->ring_mu);
	rc = stage_out(p, (char *)dst, src, n, &last);
	if (!rc && ev)
		rc = cu_check(&p->d, cudaEventRecord((cudaEvent_t)ev, p->d.compute),
			      "copy_out: cudaEventRecord");
	else if (!rc && last) /* blocking: the last host function ran, so did the others */
		rc = cu_check(&p->d, cudaEventSynchronize(last->done), "copy_out: synchronize");
	if (!rc)
		p->bytes_out += n;
	pthread_mutex_unlock(&p->ring_mu);
	/* blocking: it also reports the first error of the work it waited for */
	return rc ? rc : ev ? 0 : get_err(&p->d);
}

/* ---- run ------------------------------------------------------------------------------ */

/* The checks the ABI makes cheap: a known code, the outputs the op writes. */
static int op_valid(const struct strata_op *op)
{
	if (!op || op->code == 0 || op->code >= STRATA_OP_COUNT)
		return -EINVAL;
	if (op->code == STRATA_OP_MATMUL)
		return op->p.mm.n_items && !op->p.mm.items ? -EINVAL : 0;
	if (!op->dst || !op->dst->buf || !op->dst->buf->base)
		return -EINVAL;
	if (op->code == STRATA_OP_MOE_ROUTE && (!op->aux || !op->aux->buf))
		return -EINVAL;
	return 0;
}

static int dispatch(struct cuda_dev *d, const struct strata_op *op)
{
	switch (op->code) {
	case STRATA_OP_MATMUL:
		return cu_op_matmul(d, op);
	case STRATA_OP_ATTN:
	case STRATA_OP_ATTN_SPARSE:
	case STRATA_OP_QSA_SELECT:
		return cu_op_attn(d, op);
	case STRATA_OP_DELTANET:
	case STRATA_OP_DELTANET_TILED:
		return cu_op_deltanet(d, op);
	default: /* GET_ROWS and the row and element-wise ops */
		return cu_op_simple(d, op);
	}
}

static int cc_run(void *dev, const struct strata_op *op)
{
	struct cu_plugin *p = plug(dev);
	struct cuda_dev *d = &p->d;
	int rc;

	pthread_mutex_lock(&p->run_mu);
	/* after a failure, nothing more until synchronize() has reported it */
	if (!(rc = get_err(d))) {
		if (!(rc = op_valid(op)) &&
		    !(rc = cu_check(d, cudaSetDevice(d->device), "run: cudaSetDevice")))
			rc = dispatch(d, op);
		if (rc == -EINVAL)
			cu_log(d, STRATA_LOG_ERROR, "run: op %u: operands not taken",
			       op ? op->code : 0u);
		set_err(d, rc);
	}
	pthread_mutex_unlock(&p->run_mu);
	return rc;
}

/* ---- events ---------------------------------------------------------------------------- */

static int cc_event_create(void *dev, void **ev)
{
	struct cu_plugin *p = plug(dev);
	cudaEvent_t e = NULL;
	int rc;

	*ev = NULL;
	if ((rc = use(p)) ||
	    (rc = cu_check(&p->d, cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
			   "event_create")))
		return rc;
	*ev = (void *)e;
	return 0;
}

/* Destroying a recorded event is safe: CUDA releases it once reached. */
static void cc_event_free(void *dev, void *ev)
{
	struct cu_plugin *p = plug(dev);

	if (!ev)
		return;
	cudaSetDevice(p->d.device);
	cudaEventDestroy((cudaEvent_t)ev);
}

static int cc_record_event(void *dev, void *ev)
{
	struct cu_plugin *p = plug(dev);
	int rc;

	if ((rc = use(p)))
		return rc;
	return cu_check(&p->d, cudaEventRecord((cudaEvent_t)ev, p->d.compute), "record_event");
}

static int cc_wait_event(void *dev, void *ev)
{
	struct cu_plugin *p = plug(dev);
	int rc;

	if ((rc = use(p)))
		return rc;
	return cu_check(&p->d, cudaStreamWaitEvent(p->d.compute, (cudaEvent_t)ev, 0),
			"wait_event");
}

static int cc_sync_event(void *dev, void *ev)
{
	struct cu_plugin *p = plug(dev);
	int rc;

	if ((rc = use(p)))
		return rc;
	/* a kernel fault before ev comes back here as the CUDA error (logged once) */
	cu_check(&p->d, cudaEventSynchronize((cudaEvent_t)ev), "sync_event");
	return get_err(&p->d);
}

static int cc_synchronize(void *dev)
{
	struct cu_plugin *p = plug(dev);
	struct cuda_dev *d = &p->d;

	if (!cu_check(d, cudaSetDevice(d->device), "synchronize: cudaSetDevice")) {
		cu_check(d, cudaStreamSynchronize(d->compute), "synchronize");
		cu_check(d, cudaStreamSynchronize(d->copy), "synchronize");
		/* an asynchronous error no call above returned */
		cu_check(d, cudaGetLastError(), "synchronize");
	}
	/* reported, so cleared: run() takes work again */
	return __atomic_exchange_n(&d->err, 0, __ATOMIC_SEQ_CST);
}

/* ---- the descriptor ---------------------------------------------------------------- */

static const struct strata_backend_ops g_ops = {
	STRATA_BACKEND_OPS_VERSION, cc_open, cc_close, cc_info, cc_supports, cc_buf_alloc,
	cc_buf_wrap, cc_buf_free, cc_copy_in, cc_copy_out, cc_run, cc_event_create,
	cc_event_free, cc_record_event, cc_wait_event, cc_sync_event, cc_synchronize,
};

/*
 * [gpu-cuda] keys:
 *   device       CUDA device ordinal (default 0)
 *   staging_mib  MiB per pinned staging chunk of the copies (default 16; 4 chunks)
 */
static const char *const g_keys[] = { "device", "staging_mib", NULL };

static const struct strata_plugin_desc g_desc = {
	STRATA_PLUGIN_ABI_NEEDS(2), /* kind gpu */
	STRATA_PLUGIN_GPU,
	"gpu-cuda",
	"1.0.0",
	"NVIDIA GPU through CUDA and cuBLAS (Turing and later)",
	cc_probe,
	&g_ops,
	g_keys,
};

STRATA_PLUGIN_DEFINE(g_desc)
