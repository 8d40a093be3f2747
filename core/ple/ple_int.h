/*
 * ple_int.h - what the PLE reader's source files share (not public).
 *
 * One chunk is read at a time.  The dispatcher thread plans it (ple_plan.c):
 * every distinct row id gets one entry; rows the row cache holds are copied
 * out of it, the rest become "miss rows" numbered in first-use order, and
 * each page a miss row touches becomes one page job (deduplicated, numbered
 * in first-use order) with a list of "uses": which bytes of the page go to
 * which miss row.  Miss rows form groups of PLE_GROUP; a group's counter
 * holds the uses not yet copied, and the thread whose copy brings it to zero
 * decodes the group and puts its rows in the cache (ple_io.c).  Page jobs go
 * to the reader threads (batched chunks) or are read by the dispatcher on
 * its own handle (one ticket).
 */
#ifndef STRATA_PLE_INT_H
#define STRATA_PLE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "io/aread.h"
#include "ple/ple.h"
#include "util/clock.h"

#define PLE_GROUP 32             /* miss rows decoded together */
#define PLE_NONE UINT32_MAX
#define PLE_HIT_BIT 0x80000000u  /* row map value: a cache hit (else a miss row) */
#define PLE_TIMEOUT_MS 30000     /* no completion for this long: the disk is stuck */

/* ---- latency histogram (microseconds, ~6% resolution) ------------------------ */

#define PLE_HIST_BUCKETS 512

struct ple_hist {
	uint32_t n[PLE_HIST_BUCKETS];
	uint64_t count;
};

void strata_ple_hist_add(struct ple_hist *h, uint64_t ns);
void strata_ple_hist_merge(struct ple_hist *into, const struct ple_hist *h);
/* The q-quantile (0..1) in microseconds; 0 when empty. */
double strata_ple_hist_quantile(const struct ple_hist *h, double q);

/* ---- row cache: set-associative, bounded, safe for concurrent use ------------- */

#define PLE_CACHE_LOCKS 64

struct ple_cache {
	uint32_t ways, rb;
	uint64_t sets, mask;  /* sets is a power of two */
	uint32_t *key;        /* row + 1; 0 = empty */
	uint32_t *stamp;      /* chunk number of the last use */
	uint8_t *data;        /* sets * ways rows of rb bytes */
	pthread_mutex_t lock[PLE_CACHE_LOCKS];
};

/* The set a row lives in: a multiplicative hash spreads neighbouring rows. */
static inline uint64_t ple_cache_set(const struct ple_cache *c, uint32_t row)
{
	return (((uint64_t)row * 0x9E3779B97F4A7C15ull) >> 32) & c->mask;
}

/* Ask for row's set early: planning is bound by memory latency, not work. */
static inline void ple_cache_prefetch(const struct ple_cache *c, uint32_t row)
{
	if (c->ways)
		__builtin_prefetch(c->key + ple_cache_set(c, row) * c->ways);
}

/* At most `rows` rows of rb bytes (0 = disabled).  0 or -ENOMEM. */
int strata_ple_cache_init(struct ple_cache *c, uint32_t rows, uint32_t rb);
void strata_ple_cache_free(struct ple_cache *c);
uint64_t strata_ple_cache_capacity(const struct ple_cache *c);
/*
 * Copy row's bytes to dst: 1 on a hit, 0 on a miss.  locked = 0 skips the
 * set's lock: only while no other thread can insert (between chunks, when
 * the reader threads are idle).
 */
int strata_ple_cache_get(struct ple_cache *c, uint32_t row, void *dst, uint32_t stamp, int locked);
/* Insert (or refresh) row, evicting the set's least recently used row. */
void strata_ple_cache_put(struct ple_cache *c, uint32_t row, const void *src, uint32_t stamp);

/* ---- the plan of the chunk being read ------------------------------------------ */

struct ple_use {
	uint32_t u;        /* miss row */
	uint32_t next;     /* next use of the same page job, PLE_NONE at the end */
	uint32_t row_off;  /* where in the row the bytes go */
	uint16_t page_off; /* where in the page they start */
	uint16_t len;
};

/* Open addressing, linear probing, 8-byte slots; cleared per chunk. */
struct ple_map {
	uint32_t *slot; /* pairs: key + 1 (0 = empty), value */
	uint64_t cap;   /* slots in use for this chunk: a power of two */
	uint64_t alloc; /* slots allocated */
	int bits;       /* log2(cap) */
};

struct ple_plan {
	struct ple_map rowmap, pagemap;
	/* miss rows */
	uint32_t n_miss;
	uint32_t *miss_row;    /* row id */
	uint32_t *miss_pos;    /* first position asking for it */
	uint8_t *miss_bytes;   /* n_miss * rb, filled as pages land */
	/* cache hits, copied out at plan time, decoded while the pages are read */
	uint32_t n_hit;
	uint32_t *hit_pos;
	uint8_t *hit_bytes;
	uint32_t *pos_next;    /* next position with the same row, PLE_NONE at the end */
	/* page jobs */
	uint32_t n_jobs;
	uint32_t *job_page;    /* file page number */
	uint32_t *job_head;    /* first use */
	uint32_t *job_need;    /* bytes of the page the uses need */
	uint32_t n_uses;
	struct ple_use *use;
	/* groups */
	uint32_t n_groups;
	_Atomic uint32_t *grp_left; /* uses not yet copied */
	/* capacities of the arrays above, in elements */
	uint64_t c_pos_next, c_miss_row, c_miss_pos, c_miss_bytes, c_hit_pos, c_hit_bytes;
	uint64_t c_job_page, c_job_head, c_job_need, c_use, c_grp;
	/* counts for the stats */
	uint64_t zeros, hits;
};

/* ---- the reader ------------------------------------------------------------------ */

/* One page read: a page buffer, and the job it reads for while in flight. */
struct ple_io_slot {
	struct strata_aread_req req; /* first: the read path hands it back */
	uint32_t job;
};

/*
 * A thread that reads page jobs through its own read path (io/aread.h: one
 * io handle; the dispatcher has one too), or copies them out of the mapping.
 */
struct ple_worker {
	struct strata_ple_reader *r;
	pthread_t th;
	int started;
	struct strata_aread *ar;     /* NULL with the mapping */
	uint32_t depth;              /* slots in use: the read path's depth */
	uint8_t *bufs;               /* depth pages, aligned */
	struct ple_io_slot *slots;   /* depth */
	struct ple_io_slot **freel;  /* free slots, a stack */
	uint32_t n_free;
	int exhausted;               /* no page job left for this worker */
	struct ple_hist lat;
	uint64_t retries, reads;
};

enum { CHUNK_IDLE, CHUNK_QUEUED, CHUNK_RUNNING, CHUNK_DONE };

struct strata_ple_chunk {
	struct strata_ple_reader *r;
	struct strata_ple_chunk *next; /* queue link */
	const uint64_t *rows;
	size_t n;
	float *out;
	uint64_t *own_rows;            /* strata_ple_start_tokens() */
	size_t own_cap;
	int state;                     /* under r->mu */
	int result;
	uint32_t seq;
	uint64_t t_start, t_sub, t_done, t_ask;
	struct strata_ple_stats st;
	struct ple_hist lat; /* the last chunk's page-read latencies */
};

struct strata_ple_reader {
	/* the table */
	char *path;
	uint64_t base, n_rows, file_size;
	uint32_t type, row_len, rb;
	struct strata_ple_opts o;
	char desc[160];
	char io_name[64];           /* the io plugin's name, or "mmap" */
	/* io: a plugin's ops, or a mapping */
	const struct strata_io_ops *ops;
	const struct strata_host *host;
	struct strata_host own_host;
	const uint8_t *map;
	size_t map_len;
	struct ple_cache cache;
	struct ple_plan plan;
	struct ple_worker main;     /* the dispatcher's own handle */
	struct ple_worker *workers; /* o.readers of them */
	/* threads and the queue */
	pthread_t main_th;
	int main_started;
	pthread_mutex_t mu;
	pthread_cond_t cv_queue;  /* dispatcher: a chunk was queued, or stop */
	pthread_cond_t cv_work;   /* readers: new work, or stop */
	pthread_cond_t cv_idle;   /* dispatcher: the readers finished */
	pthread_cond_t cv_done;   /* waiters: a chunk finished */
	struct strata_ple_chunk *q_head, *q_tail;
	int stop;
	uint64_t work_gen;
	uint32_t busy;
	/* the chunk being read */
	struct strata_ple_chunk *cur;
	_Atomic uint32_t next_job;
	_Atomic uint64_t t_first_sub;
	_Atomic int failed;
	pthread_mutex_t err_mu;
	int err;
	uint64_t t0;
	uint32_t seq;
};

/*
 * Allocate and touch the plan's memory for chunks of up to n_rows rows now,
 * so the first chunk does not pay for page faults.  0 or -ENOMEM.
 */
int strata_ple_plan_reserve(struct strata_ple_reader *r, size_t n_rows);
/* Plan chunk c (rows, n, out): serve zeros, copy hits, build jobs.  0 or -ENOMEM. */
int strata_ple_plan_chunk(struct strata_ple_reader *r, struct strata_ple_chunk *c);
/* Decode the planned cache hits into c->out. */
void strata_ple_plan_decode_hits(struct strata_ple_reader *r, struct strata_ple_chunk *c);
/* Decode miss-row group g (all its pages have landed) and put its rows in the cache. */
void strata_ple_plan_decode_group(struct strata_ple_reader *r, struct strata_ple_chunk *c, uint32_t g);
/* After a failure: zero the rows of every group that was not decoded. */
void strata_ple_plan_zero_unfinished(struct strata_ple_reader *r, struct strata_ple_chunk *c);
void strata_ple_plan_free(struct ple_plan *p);

/* Worker resources for up to `depth` reads in flight; w->ar is opened by the caller. */
int strata_ple_worker_init(struct strata_ple_reader *r, struct ple_worker *w, uint32_t depth);
void strata_ple_worker_free(struct strata_ple_reader *r, struct ple_worker *w);
/* Read page jobs of r->cur until none is left or the chunk failed. */
void strata_ple_worker_run(struct ple_worker *w);
/* The same through the mapping. */
void strata_ple_worker_run_mmap(struct ple_worker *w);

/* The readers of r for table t (ple_open.c), and their release. */
int strata_ple_reader_setup(struct strata_ple_reader *r, struct strata_registry *reg,
			    const struct strata_ple_table *t);
void strata_ple_reader_teardown(struct strata_ple_reader *r);


#endif
