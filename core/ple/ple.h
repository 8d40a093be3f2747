/*
 * ple.h - the qwen4exp PLE n-gram table: row ids, row decode, and the reader
 * that fetches a prompt chunk's rows from the SSD while the model computes.
 *
 * The table (GGUF tensor per_layer_token_embd.weight, ~320M rows of 160
 * values) is far larger than RAM, so it is read row by row: every token
 * needs 16 rows.  A chunk's row ids go to strata_ple_start(), which returns
 * at once; the rows are read in the background (cache hits first, then one
 * 4 KiB read per distinct page, spread over the reader threads of an io
 * plugin) and decoded to f32 as their pages land; strata_ple_wait() blocks
 * until the whole chunk is decoded.  The engine starts the read before layer
 * 0 and waits at layer 1, so the reads hide behind layer 0's compute.
 *
 * Whatever the reader count, io plugin or io mode, the decoded rows are the
 * same bytes: the tests compare them.
 */
#ifndef STRATA_PLE_H
#define STRATA_PLE_H

#include <stddef.h>
#include <stdint.h>

#include "strata/plugin.h"

struct strata_gguf;
struct strata_config;
struct strata_registry;

#define STRATA_PLE_HEADS 16       /* rows per token: 8 bigram heads, 8 trigram heads */
#define STRATA_PLE_EOS 248044     /* the qwen4exp EOS id that cuts the n-gram context */
#define STRATA_PLE_PAGE 4096u     /* one SSD read */
#define STRATA_PLE_TENSOR "per_layer_token_embd.weight"

/* ---- row ids ------------------------------------------------------------- */

/*
 * Parameters of the row-id function.  Head h < 8 hashes the bigram
 * (token, predecessor), head h >= 8 the trigram; its row is
 * mixed % size[h] + offset[h], in wrapping uint64 arithmetic.
 */
struct strata_ple_hash {
	uint64_t mult[3];                  /* m0, m1, m2 */
	uint64_t size[STRATA_PLE_HEADS];   /* rows of each head's slice (primes) */
	uint64_t offset[STRATA_PLE_HEADS]; /* first row of each head's slice */
	uint64_t eos;                      /* context cut token */
};

/* The published qwen4exp parameters (DESIGN.md). */
void strata_ple_hash_default(struct strata_ple_hash *h);

/*
 * Parameters from a qwen4exp GGUF file: the keys <arch>.ple.layer_multipliers,
 * .head_vocab_sizes and .head_offsets (arch = general.architecture), each
 * falling back to the default when absent (offsets: the running sum of the
 * sizes).  The context-cut id stays STRATA_PLE_EOS: it is <|endoftext|>, not
 * the tokenizer's end-of-turn EOS.  A key
 * that is present with the wrong type or length, or a zero size, is refused
 * with -EINVAL, logged with the file and key.
 */
int strata_ple_hash_from_gguf(const struct strata_gguf *g, struct strata_ple_hash *h);

/*
 * The two tokens before the next one, carried across chunks and turns.
 * A fresh history (before the sequence) is EOS, EOS.
 */
struct strata_ple_hist {
	uint64_t prev1; /* the token just before */
	uint64_t prev2; /* the one before that */
};

void strata_ple_hist_init(const struct strata_ple_hash *h, struct strata_ple_hist *st);

/*
 * Row ids of n tokens (ids >= 0): rows[i * 16 + head].  The context of each
 * token comes from st and the tokens before it in the array; st is advanced
 * past the n tokens, so the next call continues the sequence.
 */
void strata_ple_row_ids(const struct strata_ple_hash *h, struct strata_ple_hist *st,
			const int32_t *tokens, size_t n, uint64_t *rows);

/* ---- rows ------------------------------------------------------------------ */

/*
 * 1 when rows of this GGUF type can be decoded: one of the PLE row types
 * (IQ4_NL, Q4_0, Q5_0, Q5_1, Q8_0, BF16, or F16/F32) that the CPU kernels
 * dequantise.
 */
int strata_ple_type_ok(uint32_t type);

/*
 * Decode one row of n values (a multiple of the type's block) of `type` at
 * src into dst.  -EINVAL for a type strata_ple_type_ok() refuses.
 */
int strata_ple_decode_row(uint32_t type, const void *src, float *dst, uint32_t n);

/*
 * Deterministic bytes of row `idx` for synthetic tables (tests, benchmarks):
 * the quants come from a hash of idx, the first four bytes after block 0's
 * scales hold idx itself (little-endian), and every scale is a finite,
 * normal half derived from idx, so no two rows are alike and every row
 * decodes to finite values.  buf has strata_type_row_bytes(type, row_len)
 * bytes; type is one strata_ple_type_ok() takes.
 */
void strata_ple_synth_row(uint32_t type, uint32_t row_len, uint64_t idx, void *buf);

/*
 * Where the table lives in a file: rows back to back from `base`, each
 * strata_type_row_bytes(type, row_len) bytes.
 */
struct strata_ple_table {
	const char *path;  /* borrowed; the reader copies it */
	uint64_t base;     /* file offset of row 0 */
	uint64_t n_rows;
	uint32_t type;     /* enum strata_type */
	uint32_t row_len;  /* values per row (160 for qwen4exp) */
};

/*
 * The table of a GGUF model: tensor per_layer_token_embd.weight, shape
 * [row_len, n_rows], in the file that holds it (of a model split in shards,
 * usually the last) at its file offset.  t->path points into g.  -ENOENT (logged) when the file has no such tensor, -EINVAL
 * when it is not 2-D or its type cannot be decoded.
 */
int strata_ple_table_from_gguf(const struct strata_gguf *g, struct strata_ple_table *t);

/* ---- the reader --------------------------------------------------------------- */

enum strata_ple_io_mode {
	STRATA_PLE_IO_DIRECT = 0, /* reads through the io plugin, page cache bypassed */
	STRATA_PLE_IO_MMAP = 1,   /* copies out of a mapping: the page cache reads */
};

struct strata_ple_opts {
	uint32_t readers;    /* reader threads for batched chunks; 0 = single-thread path */
	uint32_t depth;      /* reads in flight per reader (and for the single path) */
	uint32_t row_cache;  /* rows the row cache holds at most; 0 = no cache */
	uint32_t batch_rows; /* chunks of at least this many rows are batched */
	int io;              /* enum strata_ple_io_mode */
	const char *plugin;  /* io plugin name, or "auto"/NULL: the best probe */
	int stats;           /* log one stats line per chunk */
	int trace;           /* log when each chunk started, was asked for, waited */
	uint32_t timeout_ms; /* no read completing for this long fails the chunk; 0 = 30 s */
	/*
	 * Rows of the largest chunk expected (e.g. the prefill chunk x 16): the
	 * reader's working memory for it is allocated and touched at open, so
	 * the first chunk does not pay for page faults.  0 = as chunks come.
	 */
	uint32_t chunk_rows_hint;
	/*
	 * Tests: read through these ops instead of a plugin (host may be NULL,
	 * then the reader lends its own).
	 */
	const struct strata_io_ops *io_ops;
	const struct strata_host *io_host;
	const char *io_name; /* name to report for io_ops */
};

/* Built-in defaults: 8 readers, depth 32, 262144 rows, 4096 rows (256 tokens). */
void strata_ple_opts_default(struct strata_ple_opts *o);

/*
 * The [ple] settings of a configuration (readers, depth, row_cache, io,
 * plugin, stats, trace: INI, STRATA_PLE_* environment and --ple-* flags).
 * The plugin string points into c.
 */
void strata_ple_opts_from_config(const struct strata_config *c, struct strata_ple_opts *o);

struct strata_ple_reader;
struct strata_ple_chunk;

/*
 * Open the reader of table t.  Everything that can be wrong with the input
 * is refused here, before any compute, with one logged error: a type it
 * cannot decode, a file that is missing or unreadable, shorter than its
 * declared rows, an io plugin that does not load or fails to open the file.
 * With io = direct the plugin `o->plugin` is loaded through reg ("auto": the
 * io plugin with the best probe score on the search path); when the file
 * system refuses direct I/O the file is opened buffered, with a warning.
 * reg must outlive the reader (it may be NULL with o->io_ops or io = mmap).
 * Starts 1 + o->readers threads.  *out is released with
 * strata_ple_reader_close().
 */
int strata_ple_reader_open(struct strata_registry *reg, const struct strata_ple_table *t,
			   const struct strata_ple_opts *o, struct strata_ple_reader **out);

/*
 * Stop the threads and free the reader.  Every started chunk must have been
 * waited for (a chunk still queued is dropped; the one being read is
 * finished first); chunks may be freed before or after.  NULL is a no-op.
 */
void strata_ple_reader_close(struct strata_ple_reader *r);

/* "io-uring, direct, 8 readers x 32" and the like; owned by r. */
const char *strata_ple_reader_describe(const struct strata_ple_reader *r);

/* The io plugin in use ("io-uring", ...), or "mmap"; owned by r. */
const char *strata_ple_reader_io_name(const struct strata_ple_reader *r);

/* Values per row and bytes per stored row of r's table. */
uint32_t strata_ple_reader_row_len(const struct strata_ple_reader *r);
uint32_t strata_ple_reader_row_bytes(const struct strata_ple_reader *r);

/* A request slot.  Released with strata_ple_chunk_free(). */
int strata_ple_chunk_create(struct strata_ple_reader *r, struct strata_ple_chunk **out);
/* Free a chunk that is not in flight (never started, or waited for); NULL is a no-op. */
void strata_ple_chunk_free(struct strata_ple_chunk *c);

/*
 * Start reading n_rows rows (rows[i], any uint64; ids at or past the table's
 * end read as zeros) into out[i * row_len ...], and return at once.  rows
 * and out are borrowed until strata_ple_wait() returns.  n_rows >=
 * batch_rows goes through the batched reader, fewer rows through one
 * ticket.  Chunks run in the order they were started.  -EBUSY when c is
 * already in flight.
 */
int strata_ple_start(struct strata_ple_chunk *c, const uint64_t *rows, size_t n_rows,
		     float *out);

/*
 * Row ids of n tokens (strata_ple_row_ids(), st advanced) kept in the
 * chunk, then strata_ple_start() with them: out has n * 16 * row_len floats.
 */
int strata_ple_start_tokens(struct strata_ple_chunk *c, const struct strata_ple_hash *h,
			    struct strata_ple_hist *st, const int32_t *tokens, size_t n,
			    float *out);

/*
 * Block until c's rows are decoded into out.  Returns 0, or the chunk's
 * error after it was logged once: the read path's (io/aread.h: -EIO or the
 * read's own error, with the file, the offset and the rows, for a read that
 * failed STRATA_AREAD_TRIES times; -ETIMEDOUT when no read landed for
 * o->timeout_ms, after which that reader reads on a fresh io handle), or
 * -ENOMEM when the chunk's plan did not fit in memory.  On error out holds
 * no half-read rows: every row is either decoded or zeros.  -EINVAL when c
 * was not started.  Logs the stats line (o->stats) and the trace (o->trace).
 */
int strata_ple_wait(struct strata_ple_chunk *c);

/* What the last waited-for chunk did. */
struct strata_ple_stats {
	uint64_t rows;          /* row ids asked for */
	uint64_t hits;          /* of them served by the row cache */
	uint64_t zeros;         /* out of range */
	uint64_t unique_misses; /* distinct rows read from the file */
	uint64_t reads;         /* page reads (each STRATA_PLE_PAGE bytes) */
	uint64_t retries;       /* reads repeated after an error or short read */
	int batched;            /* 1 when read by the reader threads */
	double read_p50_us, read_p99_us; /* latency of one page read */
	double submit_ms;       /* start() until the first read was queued (planning) */
	double read_ms;         /* start() until every row was decoded */
	double ask_ms;          /* start() until wait() was called */
	double blocked_ms;      /* how long wait() blocked */
};

void strata_ple_chunk_stats(const struct strata_ple_chunk *c, struct strata_ple_stats *s);

/* The stats line "ple io: R rows, H% row-cache hits, ..." into buf. */
void strata_ple_stats_line(const struct strata_ple_stats *s, char *buf, size_t n);

/* ---- commands ------------------------------------------------------------------ */

/* `strata ple-ids [--history A B] [-m GGUF] [TOKENS...]`: 0, 1 on error, 2 usage. */
int strata_cmd_ple_ids(int argc, char **argv);
/* `strata ple-bench ...` (see --help): 0, 1 on error, 2 usage. */
int strata_cmd_ple_bench(int argc, char **argv);

#endif
