/*
 * testutil.h - helpers shared by the Check suites.
 */
#ifndef STRATA_TESTUTIL_H
#define STRATA_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#define STRATA_TEST_SKIP 77

/*
 * Path of a file under ../shared (STRATA_SHARED, overridable with env
 * STRATA_SHARED_DIR) in a static buffer; NULL when the file is absent.
 */
const char *tu_shared(const char *rel);
/* Like tu_shared but prints "SKIP: <why>" and exits 77 when absent. */
const char *tu_shared_or_skip(const char *rel);

/*
 * Run a shell command line, capture stdout+stderr (at most cap-1 bytes,
 * NUL-terminated) and return its exit status (or -1 if it could not run;
 * 128+sig when killed).  The command runs under `timeout 120` so a hang fails
 * instead of blocking the suite.
 */
int tu_run(const char *cmd, char *out, size_t cap);

/*
 * 1 in a ThreadSanitizer build.  TSan makes every memory access 5-50x
 * dearer, so the suites it runs take each threaded code path once there
 * (every model, prompt, type and SIMD level still runs, but not every
 * combination of them); the normal and ASan stages run every combination.
 * tu_tsan_pick(i, n, j) says whether combination (i, j) of a sweep over
 * i and j < n runs: always outside TSan, else j == i % n.
 */
int tu_tsan(void);
int tu_tsan_pick(size_t i, size_t n, size_t j);

/*
 * A context for m on pool (may be NULL) taking batches of up to max_batch
 * tokens, and a sequence of n_ctx positions on it (0: the model's default);
 * aborts the test on failure.  tu_seq_free() frees both.  The context is
 * the CPU's, or with env STRATA_TEST_GPU set, the test device gpu-sim's
 * (build/plugins/test) with a budget that holds:
 *   all    everything (the CPU only embeds the tokens),
 *   dense  the dense weights, the output head, the state and the workspace:
 *          every routed expert runs on the CPU,
 *   mid    that and half the experts' bytes: some experts on each side.
 * ctest runs suites a second time with it (their names end in _gpu_MODE).
 */
struct strata_model;
struct strata_pool;
struct strata_seq;
struct strata_ctx;
struct strata_backend;
struct strata_seq *tu_seq(const struct strata_model *m, struct strata_pool *pool,
			  uint32_t n_ctx, uint32_t max_batch);
void tu_seq_free(struct strata_seq *s);
/* STRATA_TEST_GPU, or NULL when the suites run on the CPU. */
const char *tu_gpu_mode(void);
/*
 * A context for m as tu_seq makes one, on gpu-sim with the budget of `mode`
 * (all, dense, mid; NULL: the CPU), for n_ctx positions.  Aborts on failure.
 */
struct strata_ctx *tu_ctx(const struct strata_model *m, struct strata_pool *pool,
			  uint32_t n_ctx, uint32_t max_batch, const char *mode);
/* Free a context from tu_ctx (and its device). */
void tu_ctx_free(struct strata_ctx *c);
/* gpu-sim as the core's backend (the process keeps one; NULL when it cannot load). */
struct strata_backend *tu_gpu(void);

/* Read a whole file; malloc'd, *len set; NULL on failure. */
void *tu_read_file(const char *path, size_t *len);
/* Write bytes to a file; 0 or -1. */
int tu_write_file(const char *path, const void *data, size_t len);
/* A fresh temporary directory (mkdtemp under $TMPDIR or /tmp). */
const char *tu_tmpdir(void);
/* Remove a directory tree (nftw, no symlinks followed); 0 or -1. */
int tu_rmtree(const char *dir);

/*
 * Capture error-level log lines instead of printing them: after
 * tu_log_capture(), tu_log holds each error line followed by '\n' and
 * tu_log_lines counts them, until tu_log_release().
 */
extern char tu_log[16384];
extern int tu_log_lines;
void tu_log_capture(void);
void tu_log_release(void);

/*
 * llama.cpp's tokenizer test vectors vocab/ggml-vocab-NAME.gguf.inp/.out:
 * the .inp texts are separated by "\n__ggml_vocab_test__\n", and line i of
 * the .out file holds the ids of text i.  tu_vocab_tests_read() fills *t
 * (texts point into t->inp, ids into t->ids) and returns the number of
 * tests, or -1 when a file is missing or the two disagree in count (the
 * reason printed).  Release with tu_vocab_tests_free().
 */
struct tu_vocab_test {
	const char *text;
	size_t len;
	const int32_t *ids;
	int n_ids;
};
struct tu_vocab_tests {
	struct tu_vocab_test *v;
	int n;
	char *inp;
	int32_t *ids;
};
int tu_vocab_tests_read(const char *name, struct tu_vocab_tests *t);
void tu_vocab_tests_free(struct tu_vocab_tests *t);

#endif
