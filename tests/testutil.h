/*
 * testutil.h - helpers shared by the Check suites.
 */
#ifndef STRATA_TESTUTIL_H
#define STRATA_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#define STRATA_TEST_SKIP 77

/*
 * Assertions for loops over millions of values: Check records every passing
 * ck_assert (a pipe write in fork mode), so only a failure goes through it.
 * The condition (and EXPECT_EQ's operands) are evaluated exactly once; the
 * message's arguments only on failure.  Need <check.h>.
 */
#define EXPECT(c, fmt, ...)                                                    \
	do {                                                                   \
		if (!(c))                                                      \
			ck_abort_msg("'%s' failed: " fmt, #c, ##__VA_ARGS__);  \
	} while (0)
#define EXPECT_TRUE(c) EXPECT(c, "")
#define EXPECT_EQ(a, b)                                                        \
	do {                                                                   \
		long long tu_a_ = (long long)(a), tu_b_ = (long long)(b);      \
		if (tu_a_ != tu_b_)                                            \
			ck_abort_msg("%s = %lld, want %lld (%s)", #a, tu_a_,   \
				     tu_b_, #b);                               \
	} while (0)

/*
 * Skipped cases.  A case that cannot run here calls TU_SKIP("why", ...),
 * which prints "SKIP: why" and returns from the case; tu_srunner_run()
 * counts them (in shared memory: Check runs each case in a child process)
 * so that a skipped case never counts as a pass: the suite exits 77 when
 * every case that ran was skipped, and prints how many were otherwise.
 * Cases that depend on the machine live in tagged TCases that ctest runs as
 * their own tests (tests/CMakeLists.txt), so a part skipped here shows as a
 * skipped ctest test of its own.
 */
void tu_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define TU_SKIP(...)                      \
	do {                              \
		tu_skip(__VA_ARGS__);     \
		return;                   \
	} while (0)
/* Cases skipped so far in this run (0 before tu_srunner_run). */
int tu_skipped(void);

/*
 * Run every case of sr (srunner_run_all, CK_NORMAL), free it and return the
 * suite's exit status: 1 when a case failed (or none ran), 77 when every
 * case was skipped, else 0.  Defined in testsuite.c (suites only: the fuzz
 * replayers share testutil.c without Check).
 */
struct SRunner;
int tu_srunner_run(struct SRunner *sr);
/* tu_srunner_run's: share the skip counter with the cases' child processes. */
void tu_skips_share(void);

/*
 * The SIMD level the simd-tagged cases of this run test: ctest runs each
 * suite of tests/CMakeLists.txt's STRATA_SIMD_SUITES once per level, the
 * plain test at scalar and NAME.avx2 / NAME.avx512 with STRATA_TEST_SIMD set
 * (those only the cases tagged "simd").  tu_simd_level() selects it for the
 * kernels and returns it, or TU_SKIPs the case (returning -1) when this CPU
 * lacks it: use as `if ((l = tu_simd_level()) < 0) return;`.
 */
int tu_simd_level(void);

/* xorshift64 from *state (not 0): the same numbers for the same seed on
 * every machine.  tu_frand is uniform in [-1, 1). */
uint32_t tu_rand(uint64_t *state);
float tu_frand(uint64_t *state);

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
 * Replace this process with a fresh run of its own executable, without
 * arguments (argv[0] may differ); returns only on failure.  In a cross build
 * ctest runs the suites under an emulator (STRATA_TEST_EMULATOR, set by
 * ../CMakeLists.txt), and the host cannot exec the image itself: then the
 * emulator runs it.
 */
void tu_exec_self(void);

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
 * A context for m as tu_seq makes one, on tu_gpu()'s device with the budget of `mode`
 * (all, dense, mid; NULL: the CPU), for n_ctx positions.  Aborts on failure.
 */
struct strata_ctx *tu_ctx(const struct strata_model *m, struct strata_pool *pool,
			  uint32_t n_ctx, uint32_t max_batch, const char *mode);
/* Free a context from tu_ctx (and its device). */
void tu_ctx_free(struct strata_ctx *c);
/*
 * The gpu plugin STRATA_GPU_PLUGIN names (from STRATA_PLUGIN_PATH; gpu-sim, the
 * default, from build/plugins/test) as the core's backend: the process keeps
 * one; NULL when it cannot load.
 */
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
 * Load the model at path expecting a refusal: rc `want`, no model, and one
 * error line naming the file and `needle` (printed as "refused as
 * expected: ...").  Fails the running check case otherwise.
 */
void tu_expect_model_refused(const char *path, int want, const char *needle);

/*
 * llama.cpp's tokenizer test vectors vocab/ggml-vocab-NAME.gguf.inp/.out:
 * the .inp texts are separated by "\n__ggml_vocab_test__\n", and line i of
 * the .out file holds the ids of text i.  tu_vocab_tests_read() fills *t
 * (texts point into t->inp, ids into t->ids) and returns the number of
 * tests, or -1 when a file is missing or the two disagree in count (the
 * reason printed).  Release with tu_vocab_tests_free().
 * tu_vocab_tests_read_files() reads any such pair (tests/vocab/corpus.*),
 * where a .out line starting with '#' says llama.cpp had no answer (no_ref).
 */
struct tu_vocab_test {
	const char *text;
	size_t len;
	const int32_t *ids;
	int n_ids;
	int no_ref;
};
struct tu_vocab_tests {
	struct tu_vocab_test *v;
	int n;
	char *inp;
	int32_t *ids;
};
int tu_vocab_tests_read(const char *name, struct tu_vocab_tests *t);
int tu_vocab_tests_read_files(const char *inp_path, const char *out_path,
			      struct tu_vocab_tests *t);
void tu_vocab_tests_free(struct tu_vocab_tests *t);

/* Largest |a[i] - b[i]| over n values; INFINITY when either holds a NaN there. */
double tu_max_abs_diff(const float *a, const float *b, size_t n);

#endif
