#define _GNU_SOURCE /* asprintf */
#include "testutil.h"

#include <ftw.h>
#include <math.h>

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "config/config.h"
#include "model/model.h"
#include "plugin/registry.h"
#include "strata/plugin.h"
#include "cpu/kernels.h"
#include "util/log.h"

const char *tu_shared(const char *rel)
{
	static char buf[4096];
	const char *base = getenv("STRATA_SHARED_DIR");
	struct stat st;

	if (!base)
		base = STRATA_SHARED;
	snprintf(buf, sizeof(buf), "%s/%s", base, rel);
	return stat(buf, &st) == 0 ? buf : NULL;
}

const char *tu_shared_or_skip(const char *rel)
{
	const char *p = tu_shared(rel);

	if (!p) {
		printf("SKIP: test data ../shared/%s is absent\n", rel);
		exit(STRATA_TEST_SKIP);
	}
	return p;
}

/* ---- skipped cases ------------------------------------------------------------ */

/* Mapped shared by tu_srunner_run() before the cases fork; a private
 * counter until then (a skip in main() is an exit 77, not a count). */
static atomic_int g_skip_private;
static atomic_int *g_skips = &g_skip_private;

void tu_skips_share(void)
{
	void *p = mmap(NULL, sizeof(atomic_int), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("testutil: mmap of the skip counter");
		exit(1);
	}
	g_skips = p;
	atomic_store(g_skips, 0);
}

void tu_skip(const char *fmt, ...)
{
	va_list ap;

	fputs("SKIP: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	atomic_fetch_add(g_skips, 1);
}

int tu_skipped(void)
{
	return atomic_load(g_skips);
}

uint32_t tu_rand(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return (uint32_t)(*state >> 16);
}

float tu_frand(uint64_t *state)
{
	return (float)(tu_rand(state) & 0xffffff) / 8388608.0f - 1.0f;
}

int tu_simd_level(void)
{
	const char *want = getenv("STRATA_TEST_SIMD");
	int level = STRATA_SIMD_SCALAR;

	if (want && *want) {
		for (level = STRATA_SIMD_AVX512; level > STRATA_SIMD_SCALAR; level--)
			if (!strcmp(want, strata_simd_name((enum strata_simd)level)))
				break;
		if (strcmp(want, strata_simd_name((enum strata_simd)level))) {
			printf("STRATA_TEST_SIMD=%s: expected scalar, avx2 or avx512\n", want);
			exit(1);
		}
	}
	if (strata_simd_set((enum strata_simd)level) != 0) {
		tu_skip("this CPU lacks %s", strata_simd_name((enum strata_simd)level));
		return -1;
	}
	return level;
}

int tu_run(const char *cmd, char *out, size_t cap)
{
	char *full;
	FILE *f;
	size_t n = 0;
	int st;

	if (asprintf(&full, "timeout 120 %s 2>&1", cmd) < 0)
		return -1;
	f = popen(full, "r");
	free(full);
	if (!f)
		return -1;
	if (out && cap) {
		size_t r;

		while (n + 1 < cap && (r = fread(out + n, 1, cap - 1 - n, f)) > 0)
			n += r;
		out[n] = 0;
	}
	{
		char sink[4096];

		while (fread(sink, 1, sizeof(sink), f) > 0)
			;
	}
	st = pclose(f);
	if (st == -1)
		return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return -1;
}

void tu_exec_self(void)
{
	const char *emu = getenv("STRATA_TEST_EMULATOR");
	char *self;

	if (!emu || !*emu) {
		execl("/proc/self/exe", "self", (char *)NULL);
		return;
	}
	/* The emulator answers /proc/self/exe with the emulated program's
	 * path; the shell splits its command line into words. */
	self = realpath("/proc/self/exe", NULL);
	if (self)
		execl("/bin/sh", "sh", "-c", "exec $STRATA_TEST_EMULATOR \"$0\"", self,
		      (char *)NULL);
	free(self);
}

void *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = 0;
		*len = (size_t)n;
	}
	return buf;
}

int tu_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(data, 1, len, f) == len;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

const char *tu_tmpdir(void)
{
	static char buf[4096];
	const char *base = getenv("TMPDIR");

	snprintf(buf, sizeof(buf), "%s/strata-test-XXXXXX", base ? base : "/tmp");
	return mkdtemp(buf);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* ---- contexts on the CPU or the test device -------------------------------- */

static struct strata_config g_gpu_cfg;
static struct strata_registry *g_gpu_reg;
static struct strata_backend *g_gpu;

static void gpu_release(void)
{
	strata_backend_free(g_gpu);
	strata_registry_free(g_gpu_reg);
	strata_config_free(&g_gpu_cfg);
	g_gpu = NULL;
	g_gpu_reg = NULL;
}

struct strata_backend *tu_gpu(void)
{
	const char *name = getenv("STRATA_GPU_PLUGIN");
	struct strata_plugin *p;

	if (g_gpu)
		return g_gpu;
	/* the test device gpu-sim unless STRATA_GPU_PLUGIN names another (device-check.sh) */
	if (!name || !*name)
		name = "gpu-sim";
	if (strata_config_init(&g_gpu_cfg))
		return NULL;
	free(g_gpu_cfg.gpu_plugin);
	g_gpu_cfg.gpu_plugin = strdup(name); /* gpu-sim is usable only where [gpu] plugin names it */
	/* gpu-sim from build/plugins/test; any plugin from STRATA_PLUGIN_PATH */
	if (strcmp(name, "gpu-sim") == 0)
		g_gpu_cfg.plugin_dir = strdup(STRATA_PLUGIN_DIR "/test");
	if (strata_registry_create(&g_gpu_cfg, NULL, &g_gpu_reg) ||
	    strata_registry_load(g_gpu_reg, STRATA_PLUGIN_GPU, name, &p) ||
	    strata_backend_device_create(p, &g_gpu)) {
		strata_registry_free(g_gpu_reg);
		strata_config_free(&g_gpu_cfg);
		g_gpu_reg = NULL;
		return NULL;
	}
	atexit(gpu_release);
	return g_gpu;
}

const char *tu_gpu_mode(void)
{
	const char *m = getenv("STRATA_TEST_GPU");

	return m && *m ? m : NULL;
}

static void must(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "testutil: %s\n", what);
		abort();
	}
}

struct strata_ctx *tu_ctx(const struct strata_model *m, struct strata_pool *pool,
			  uint32_t n_ctx, uint32_t max_batch, const char *mode)
{
	struct strata_ctx_opts o = { .pool = pool, .max_batch = max_batch, .n_ctx = n_ctx };
	struct strata_placement_stats st;
	struct strata_ctx *c;
	uint64_t dense;

	if (mode) {
		must(strcmp(mode, "all") == 0 || strcmp(mode, "dense") == 0 ||
		     strcmp(mode, "mid") == 0, "STRATA_TEST_GPU is all, dense or mid");
		must((o.device = tu_gpu()) != NULL,
		     "cannot open the gpu plugin (STRATA_GPU_PLUGIN, else gpu-sim)");
		/* Ask for all it has free once, to learn the sizes of the parts. */
		o.device_budget = o.device->info.mem_free;
		must(strata_ctx_create(m, &o, &c) == 0, "cannot make a context on the gpu plugin");
		strata_ctx_placement(c, &st);
		strata_ctx_free(c);
		dense = st.dev_work_bytes + st.dev_state_bytes + st.dev_weight_bytes -
			st.dev_expert_bytes;
		if (strcmp(mode, "dense") == 0)
			o.device_budget = dense;
		else if (strcmp(mode, "mid") == 0)
			o.device_budget = dense + st.dev_expert_bytes / 2;
	}
	must(strata_ctx_create(m, &o, &c) == 0, "cannot make a context");
	return c;
}

void tu_ctx_free(struct strata_ctx *c)
{
	strata_ctx_free(c);
}

struct strata_seq *tu_seq(const struct strata_model *m, struct strata_pool *pool,
			  uint32_t n_ctx, uint32_t max_batch)
{
	struct strata_ctx *c = tu_ctx(m, pool, n_ctx ? n_ctx : 4096, max_batch, tu_gpu_mode());
	struct strata_seq *s;

	must(strata_seq_create(c, n_ctx, &s) == 0, "cannot make a sequence");
	return s;
}

void tu_seq_free(struct strata_seq *s)
{
	struct strata_ctx *c = s ? strata_seq_ctx(s) : NULL;

	strata_seq_free(s);
	strata_ctx_free(c);
}

int tu_tsan(void)
{
#if defined(__SANITIZE_THREAD__)
	return 1;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
	return 1;
#else
	return 0;
#endif
#else
	return 0;
#endif
}

int tu_tsan_pick(size_t i, size_t n, size_t j)
{
	return !tu_tsan() || j == i % n;
}

int tu_rmtree(const char *dir)
{
	return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

char tu_log[16384];
int tu_log_lines;

static void log_sink(void *user, int level, const char *line)
{
	size_t n = strlen(tu_log);

	(void)user;
	if (level != STRATA_LOG_LVL_ERROR)
		return;
	tu_log_lines++;
	snprintf(tu_log + n, sizeof(tu_log) - n, "%s\n", line);
}

void tu_log_capture(void)
{
	tu_log[0] = 0;
	tu_log_lines = 0;
	strata_log_set_sink(log_sink, NULL);
}

void tu_log_release(void)
{
	strata_log_set_sink(NULL, NULL);
}

/* ---- llama.cpp vocab test vectors ------------------------------------------- */

static const char VOCAB_SEP[] = "\n__ggml_vocab_test__\n";

/* Parse the ids of each .out line into t->ids; returns the line count or -1. */
static int vocab_read_out(char *out, struct tu_vocab_tests *t, int n_tests)
{
	size_t n_ids = 0, k = 0;
	int line = 0;

	for (char *p = out; *p; p++)
		n_ids += *p == ' ' || *p == '\n'; /* ids are separated by either */
	t->ids = malloc((n_ids + 1) * sizeof(*t->ids));
	if (!t->ids)
		return -1;
	for (char *p = out; *p && line < n_tests; line++) {
		char *eol = strchr(p, '\n'), *e;

		if (!eol)
			eol = p + strlen(p);
		t->v[line].ids = t->ids + k;
		t->v[line].no_ref = *p == '#';
		for (long v = strtol(p, &e, 10); e != p && e <= eol; v = strtol(p, &e, 10)) {
			t->ids[k++] = (int32_t)v;
			t->v[line].n_ids++;
			p = e;
		}
		p = *eol ? eol + 1 : eol;
		if (line + 1 == n_tests && *p) {
			printf("vocab tests: the .out file has more lines than the .inp has tests\n");
			return -1;
		}
	}
	return line;
}

int tu_vocab_tests_read_files(const char *inp_path, const char *out_path,
			      struct tu_vocab_tests *t)
{
	size_t ilen = 0, olen = 0, pos = 0;
	const size_t sl = strlen(VOCAB_SEP);
	char *out;
	int n = 0, lines;

	memset(t, 0, sizeof(*t));
	t->inp = inp_path ? tu_read_file(inp_path, &ilen) : NULL;
	out = out_path ? tu_read_file(out_path, &olen) : NULL;
	if (!t->inp || !out) {
		printf("vocab tests: cannot read %s or %s\n", inp_path ? inp_path : "(absent)",
		       out_path ? out_path : "(absent)");
		free(out);
		return -1;
	}
	/* Texts may hold NUL bytes: search by length. */
	for (const char *m = t->inp; (m = memmem(m, ilen - (size_t)(m - t->inp), VOCAB_SEP, sl));
	     m += sl)
		n++;
	t->v = calloc((size_t)n + 1, sizeof(*t->v));
	if (!t->v) {
		free(out);
		return -1;
	}
	/* The text after the last separator is a test too. */
	for (t->n = 0; pos < ilen; t->n++) {
		char *m = memmem(t->inp + pos, ilen - pos, VOCAB_SEP, sl);
		size_t tl = m ? (size_t)(m - t->inp) - pos : ilen - pos;

		t->v[t->n].text = t->inp + pos;
		t->v[t->n].len = tl;
		pos += tl + (m ? sl : 0);
	}
	lines = vocab_read_out(out, t, t->n);
	free(out);
	if (lines != t->n) {
		if (lines >= 0)
			printf("vocab tests: %s: %d lines for the %d tests of %s\n", out_path, lines,
			       t->n, inp_path);
		return -1;
	}
	return t->n;
}

int tu_vocab_tests_read(const char *name, struct tu_vocab_tests *t)
{
	char rel[512], inp[4096];
	const char *p;

	snprintf(rel, sizeof(rel), "vocab/ggml-vocab-%s.gguf.inp", name);
	p = tu_shared(rel);
	snprintf(inp, sizeof(inp), "%s", p ? p : "");
	snprintf(rel, sizeof(rel), "vocab/ggml-vocab-%s.gguf.out", name);
	p = tu_shared(rel);
	return tu_vocab_tests_read_files(inp[0] ? inp : NULL, p, t);
}

void tu_vocab_tests_free(struct tu_vocab_tests *t)
{
	free(t->v);
	free(t->inp);
	free(t->ids);
	memset(t, 0, sizeof(*t));
}

double tu_max_abs_diff(const float *a, const float *b, size_t n)
{
	double worst = 0.0;

	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]);

		if (!(d <= worst)) /* also catches NaN */
			worst = isnan(d) ? INFINITY : d;
	}
	return worst;
}
