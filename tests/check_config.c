/*
 * check_config.c - INI + environment + command line, and their errors.
 *
 * Error tests capture stderr (fd 2 redirected to a file around the call) and
 * compare the whole "FILE:LINE: reason" text.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_int.h"
#include "testutil.h"

static char g_dir[4096];
static char g_err[16384];
static char g_out[65536];

static void setup(void)
{
	const char *d = tu_tmpdir();

	ck_assert_ptr_nonnull(d);
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	/* The suite must not see the developer's own settings. */
	for (;;) {
		char **e, name[256];

		for (e = environ; *e; e++)
			if (strncmp(*e, "STRATA_", 7) == 0 && strncmp(*e, "STRATA_SHARED_DIR=", 18))
				break;
		if (!*e)
			break;
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
		unsetenv(name); /* changes environ: search again from the start */
	}
}

/* Write an INI file under the test's directory; returns its path (static). */
static const char *ini(const char *name, const char *text)
{
	static char path[8][4352];
	static int next;
	char *p = path[next++ % 8];

	snprintf(p, sizeof(path[0]), "%s/%s", g_dir, name);
	ck_assert_int_eq(tu_write_file(p, text, strlen(text)), 0);
	return p;
}

struct capture {
	int saved;
	char path[4400];
};

static void capture_fd(struct capture *c, int fd)
{
	int f;

	fflush(fd == 1 ? stdout : stderr);
	snprintf(c->path, sizeof(c->path), "%s/capture-%d", g_dir, fd);
	f = open(c->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(f, 0);
	c->saved = dup(fd);
	dup2(f, fd);
	close(f);
}

static void release_fd(struct capture *c, int fd, char *buf, size_t cap)
{
	size_t len = 0;
	char *data;

	fflush(fd == 1 ? stdout : stderr);
	dup2(c->saved, fd);
	close(c->saved);
	data = tu_read_file(c->path, &len);
	ck_assert_ptr_nonnull(data);
	snprintf(buf, cap, "%s", data);
	free(data);
}

/* Load an INI file with stderr captured into g_err. */
static int load(struct strata_config *c, const char *path)
{
	struct capture cap;
	int rc;

	capture_fd(&cap, 2);
	rc = strata_config_load_file(c, path);
	release_fd(&cap, 2, g_err, sizeof(g_err));
	return rc;
}

/* strata_config_from_args() on a NULL-terminated list, stderr/stdout captured. */
static int args(struct strata_config *c, const char *const *argv)
{
	struct capture e, o;
	char *v[64];
	int n = 0, rc;

	v[n++] = "strata";
	while (*argv)
		v[n++] = (char *)*argv++;
	v[n] = NULL;
	capture_fd(&e, 2);
	capture_fd(&o, 1);
	rc = strata_config_from_args(c, n, v);
	release_fd(&o, 1, g_out, sizeof(g_out));
	release_fd(&e, 2, g_err, sizeof(g_err));
	return rc;
}

#define ASSERT_ERR(fmt, ...) do { \
	char want_[4600]; \
	snprintf(want_, sizeof(want_), "strata: error: " fmt "\n", __VA_ARGS__); \
	ck_assert_str_eq(g_err, want_); \
} while (0)

START_TEST(defaults)
{
	struct strata_config c;

	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_ptr_null(c.model_path);
	ck_assert_uint_eq(c.ctx_size, 0);
	ck_assert_ptr_null(c.prompt);
	ck_assert_ptr_null(c.prompt_file);
	ck_assert_int_eq(c.n_predict, 128);
	ck_assert_int_eq(c.threads, 0);
	ck_assert_float_eq(c.temp, 0.8f);
	ck_assert_int_eq(c.top_k, 40);
	ck_assert_float_eq(c.top_p, 0.95f);
	ck_assert_float_eq(c.min_p, 0.05f);
	ck_assert_float_eq(c.repeat_penalty, 1.0f);
	ck_assert_int_eq(c.repeat_last_n, 64);
	ck_assert_uint_eq(c.seed, STRATA_SEED_RANDOM);
	ck_assert_int_eq(c.add_bos, -1);
	ck_assert_ptr_null(c.dump_logits);
	ck_assert_int_eq(c.verbose, 0);
	ck_assert_str_eq(c.prefill, "auto");
	ck_assert_ptr_null(c.plugin_dir);
	ck_assert_str_eq(c.paths, "path-batched");
	ck_assert_ptr_null(c.ini_path);
	ck_assert_str_eq(strata_config_get(&c, "prefill", "chunk"), "auto");
	ck_assert_str_eq(strata_config_get(&c, "run", "temp"), "0.8");
	ck_assert_str_eq(strata_config_get(&c, "run", "top_p"), "0.95");
	ck_assert_str_eq(strata_config_get(&c, "run", "seed"), "random");
	ck_assert_str_eq(strata_config_get(&c, "run", "bos"), "auto");
	ck_assert_str_eq(strata_config_get(&c, "run", "n_predict"), "128");
	ck_assert_ptr_null(strata_config_get(&c, "model", "path"));
	ck_assert_ptr_null(strata_config_get(&c, "run", "nope"));
	ck_assert_ptr_null(strata_config_get(&c, "run", "dump_logits")); /* not an INI key */
	ck_assert_ptr_null(strata_config_get(&c, "io-uring", "depth"));
	ck_assert_ptr_null(strata_config_plugin_sections(&c)[0]);
	strata_config_free(&c);
	strata_config_free(&c); /* freed config is zeroed: a second free is harmless */
}
END_TEST

static const char good_ini[] =
	"; strata test configuration\n"              /* 1 */
	"# hash comments too\n"                       /* 2 */
	"[model]\n"                                   /* 3 */
	"path = models/tiny.gguf   ; relative\n"      /* 4 */
	"ctx_size = 2048\n"                           /* 5 */
	"\n"                                          /* 6 */
	"[run]\n"                                     /* 7 */
	"prompt = \"Once ; upon \\\"a\\\" time\"  ; c\n" /* 8 */
	"n_predict = -1\n"                            /* 9 */
	"threads: 3\n"                                /* 10 */
	"temp = 0\n"                                  /* 11 */
	"top_k = 0\n"                                 /* 12 */
	"top_p = 1\n"                                 /* 13 */
	"min_p = 0.1\n"                               /* 14 */
	"repeat_penalty = 1.1\n"                      /* 15 */
	"repeat_last_n = 32\n"                        /* 16 */
	"seed = 42\n"                                 /* 17 */
	"bos = false\n"                               /* 18 */
	"[prefill]\n"                                 /* 19 */
	"chunk = auto:512\n"                          /* 20 */
	"[plugins]\n"                                 /* 21 */
	"dir = /opt/strata/plugins\n"                 /* 22 */
	"[prompt]\n"                                  /* 23 */
	"paths = path-window , path-batched\n"        /* 24 */
	"[io]\n"                                      /* 25 */
	"[path-batched]\n"                            /* 26 */
	"chunk = 256\n"                               /* 27 */
	"[io-uring]\n"                                /* 28 */
	"depth = 64\n"                                /* 29 */
	"name = \"a ; b\"\n";                         /* 30 */

START_TEST(good_ini_file)
{
	struct strata_config c;
	const char *path = ini("strata.ini", good_ini);
	const char *const *sect;
	char want[4600];

	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(load(&c, path), 0);
	ck_assert_str_eq(g_err, "");
	snprintf(want, sizeof(want), "%s/models/tiny.gguf", g_dir);
	ck_assert_str_eq(c.model_path, want);
	ck_assert_uint_eq(c.ctx_size, 2048);
	ck_assert_str_eq(c.prompt, "Once ; upon \"a\" time");
	ck_assert_int_eq(c.n_predict, -1);
	ck_assert_int_eq(c.threads, 3);
	ck_assert_float_eq(c.temp, 0.0f);
	ck_assert_int_eq(c.top_k, 0);
	ck_assert_float_eq(c.top_p, 1.0f);
	ck_assert_float_eq(c.min_p, 0.1f);
	ck_assert_float_eq(c.repeat_penalty, 1.1f);
	ck_assert_int_eq(c.repeat_last_n, 32);
	ck_assert_uint_eq(c.seed, 42);
	ck_assert_int_eq(c.add_bos, 0);
	ck_assert_str_eq(c.prefill, "auto:512");
	ck_assert_str_eq(c.plugin_dir, "/opt/strata/plugins");
	ck_assert_str_eq(c.paths, "path-window,path-batched");
	ck_assert_str_eq(c.ini_path, path);

	ck_assert_str_eq(strata_config_get(&c, "prefill", "chunk"), "auto:512");
	ck_assert_str_eq(strata_config_get(&c, "model", "path"), want);
	ck_assert_str_eq(strata_config_get(&c, "run", "repeat_penalty"), "1.1");
	ck_assert_str_eq(strata_config_get(&c, "run", "seed"), "42");
	ck_assert_str_eq(strata_config_get(&c, "run", "bos"), "false");
	ck_assert_str_eq(strata_config_get(&c, "path-batched", "chunk"), "256");
	ck_assert_str_eq(strata_config_get(&c, "io-uring", "depth"), "64");
	ck_assert_str_eq(strata_config_get(&c, "io-uring", "name"), "a ; b");
	ck_assert_ptr_null(strata_config_get(&c, "io-uring", "chunk"));
	/* same text, same pointer: plugins may keep what they got */
	ck_assert_ptr_eq(strata_config_get(&c, "run", "temp"), strata_config_get(&c, "run", "temp"));

	sect = strata_config_plugin_sections(&c);
	ck_assert_str_eq(sect[0], "path-batched");
	ck_assert_str_eq(sect[1], "io-uring");
	ck_assert_ptr_null(sect[2]);
	snprintf(want, sizeof(want), "%s:26", path);
	ck_assert_str_eq(strata_config_section_where(&c, "path-batched"), want);
	snprintf(want, sizeof(want), "%s:28", path);
	ck_assert_str_eq(strata_config_section_where(&c, "io-uring"), want);
	ck_assert_ptr_null(strata_config_section_where(&c, "io")); /* a core section */
	strata_config_free(&c);
}
END_TEST

/* Each bad file gives exactly one message, FILE:LINE first, and -EINVAL. */
static const struct {
	const char *text;
	int line;
	const char *msg;
} bad[] = {
	{ "[run]\nthreads = 2\n\n\n\n\nthread = 4\n", 7,
	  "unknown key 'thread' in [run] (did you mean 'threads'?)" },
	{ "[run]\nfrobnicate = 1\n", 2, "unknown key 'frobnicate' in [run]" },
	{ "[run]\n\n\n\n\n\n\n\nthreads = abc\n", 9,
	  "bad value 'abc' for run.threads: expected an integer >= 0" },
	{ "[run]\ntemp = 0.5\ntemp = 0.7\n", 3, "duplicate key 'temp' in [run] (first set on line 2)" },
	{ "[x]\na = 1\n[y]\n[x]\na = 2\n", 5, "duplicate key 'a' in [x] (first set on line 2)" },
	{ "threads = 2\n", 1, "'threads' is outside any [section]" },
	{ "[run\nthreads = 2\n", 1, "section header without a closing ']'" },
	{ "[run] extra\n", 1, "text after the section header: 'extra'" },
	{ "[]\n", 1, "bad section name '' (letters, digits, '-', '_', '.')" },
	{ "[run]\njust words\n", 2, "expected 'key = value', '[section]' or a comment" },
	{ "[run]\ntop_p = 0\n", 2, "bad value '0' for run.top_p: expected a number in (0, 1]" },
	{ "[run]\ntop_p = 1.5\n", 2, "bad value '1.5' for run.top_p: expected a number in (0, 1]" },
	{ "[run]\nmin_p = -0.1\n", 2, "bad value '-0.1' for run.min_p: expected a number in [0, 1]" },
	{ "[run]\ntemp = -1\n", 2, "bad value '-1' for run.temp: expected a number >= 0" },
	{ "[run]\ntemp = nan\n", 2, "bad value 'nan' for run.temp: expected a number >= 0" },
	{ "[run]\nrepeat_penalty = 0\n", 2,
	  "bad value '0' for run.repeat_penalty: expected a number > 0" },
	{ "[run]\nn_predict = -2\n", 2, "bad value '-2' for run.n_predict: expected an integer >= -1" },
	{ "[run]\ntop_k = 4.5\n", 2, "bad value '4.5' for run.top_k: expected an integer >= 0" },
	{ "[run]\nthreads = 99999999999\n", 2,
	  "bad value '99999999999' for run.threads: expected an integer in [0, 2147483647]" },
	{ "[model]\nctx_size = -1\n", 2, "bad value '-1' for model.ctx_size: expected an integer >= 0" },
	{ "[run]\nseed = lucky\n", 2,
	  "bad value 'lucky' for run.seed: expected an integer in [0, 18446744073709551614] or "
	  "'random'" },
	{ "[run]\nbos = maybe\n", 2, "bad value 'maybe' for run.bos: expected auto, true or false" },
	{ "[run]\nthreads = 4 # four\n", 2,
	  "bad value '4 # four' for run.threads: expected an integer >= 0 (inline comments "
	  "start with ';')" },
	{ "[prefill]\nchunk = auto:0\n", 2,
	  "bad value 'auto:0' for prefill.chunk: expected auto, auto:N or N, with N a token "
	  "count >= 1" },
	{ "[prefill]\nchunk = fast\n", 2,
	  "bad value 'fast' for prefill.chunk: expected auto, auto:N or N, with N a token "
	  "count >= 1" },
	{ "[prompt]\npaths = path-window,,path-batched\n", 2,
	  "bad value 'path-window,,path-batched' for prompt.paths: expected a comma-separated "
	  "list of plugin names, each listed once" },
	{ "[prompt]\npaths = a,a\n", 2,
	  "bad value 'a,a' for prompt.paths: expected a comma-separated list of plugin names, "
	  "each listed once" },
	{ "[run]\nprompt = \"never closed\n", 2, "unterminated quoted value" },
	{ "[run]\nprompt = \"closed\" and more\n", 2, "text after the closing quote: 'and more'" },
	{ "[io]\nreaders = 4\n", 2, "unknown key 'readers' in [io]" },
	{ "[run]\nthreads = 2\n  temp = 0.5\n", 3,
	  "indented line continues the value of run.threads, which cannot span lines (do not "
	  "indent keys)" },
	{ "[run]\ndump_logits = x\n", 2, "unknown key 'dump_logits' in [run]" },
	{ "[my plugin]\n", 1, "bad section name 'my plugin' (letters, digits, '-', '_', '.')" },
};

START_TEST(ini_errors)
{
	struct strata_config c;
	const char *path = ini("strata.ini", bad[_i].text);
	char want[4600];

	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(load(&c, path), -EINVAL);
	snprintf(want, sizeof(want), "strata: error: %s:%d: %s\n", path, bad[_i].line, bad[_i].msg);
	ck_assert_str_eq(g_err, want);
	/* a bad file changes nothing */
	ck_assert_float_eq(c.temp, 0.8f);
	ck_assert_int_eq(c.threads, 0);
	ck_assert_ptr_null(c.prompt);
	ck_assert_ptr_null(c.ini_path);
	ck_assert_ptr_null(strata_config_plugin_sections(&c)[0]);
	strata_config_free(&c);
}
END_TEST

START_TEST(missing_file)
{
	struct strata_config c;
	char path[4400];

	snprintf(path, sizeof(path), "%s/nope.ini", g_dir);
	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(load(&c, path), -ENOENT);
	ASSERT_ERR("%s: cannot open the configuration file: No such file or directory", path);
	ck_assert_int_eq(args(&c, (const char *[]){ "-c", path, NULL }), -ENOENT);
	ASSERT_ERR("%s: cannot open the configuration file: No such file or directory", path);
	ck_assert_int_eq(load(&c, g_dir), -EISDIR); /* a directory opens but does not read */
	ASSERT_ERR("%s: read error: Is a directory", g_dir);
	strata_config_free(&c);
}
END_TEST

START_TEST(quoting_long_and_multiline)
{
	struct strata_config c;
	char text[4096], want[1024];
	const char *path;

	memset(want, 'x', 600);
	want[600] = 0;
	snprintf(text, sizeof(text),
		 "[run]\n"
		 "prompt = %s ; past inih's 200-byte line\n"
		 "[long-plugin]\n"
		 "key = \"%s\"\n", want, want);
	path = ini("long.ini", text);
	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(load(&c, path), 0);
	ck_assert_str_eq(c.prompt, want);
	ck_assert_str_eq(strata_config_get(&c, "long-plugin", "key"), want);
	strata_config_free(&c);

	path = ini("multi.ini",
		   "\xEF\xBB\xBF[run]\r\n"        /* BOM and CRLF */
		   "prompt = Dear diary,\r\n"
		   "    today I wrote\r\n"
		   "\t\"  a test ; really  \"\r\n"
		   "temp = \"0.25\"\r\n"
		   "[empty]\r\n"
		   "blank =\r\n");
	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(load(&c, path), 0);
	ck_assert_str_eq(g_err, "");
	ck_assert_str_eq(c.prompt, "Dear diary,\ntoday I wrote\n  a test ; really  ");
	ck_assert_float_eq(c.temp, 0.25f);
	ck_assert_str_eq(strata_config_get(&c, "empty", "blank"), "");
	strata_config_free(&c);
}
END_TEST

START_TEST(relative_paths)
{
	struct strata_config c;
	char sub[4400], want[4600];
	const char *path;

	snprintf(sub, sizeof(sub), "%s/conf", g_dir);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	path = ini("conf/strata.ini",
		   "[model]\npath = ../m.gguf\n[run]\nprompt_file = p.txt\n"
		   "[plugins]\ndir = /abs/plugins\n");
	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(load(&c, path), 0);
	snprintf(want, sizeof(want), "%s/../m.gguf", sub);
	ck_assert_str_eq(c.model_path, want);
	snprintf(want, sizeof(want), "%s/p.txt", sub);
	ck_assert_str_eq(c.prompt_file, want);
	ck_assert_str_eq(c.plugin_dir, "/abs/plugins");
	/* on the command line and in the environment: relative to the current directory */
	setenv("STRATA_RUN_PROMPT_FILE", "env.txt", 1);
	ck_assert_int_eq(args(&c, (const char *[]){ "-m", "cli.gguf", "-c", path, NULL }), 0);
	ck_assert_str_eq(c.model_path, "cli.gguf");
	ck_assert_str_eq(c.prompt_file, "env.txt");
	unsetenv("STRATA_RUN_PROMPT_FILE");
	strata_config_free(&c);
}
END_TEST

START_TEST(env_overrides_ini)
{
	struct strata_config c;
	const char *path = ini("strata.ini", "[run]\nthreads = 2\ntemp = 0.3\n[prefill]\nchunk = 64\n");

	setenv("STRATA_RUN_THREADS", "3", 1);
	setenv("STRATA_PREFILL_CHUNK", "auto:128", 1);
	setenv("STRATA_MODEL_PATH", "from-env.gguf", 1);
	setenv("STRATA_RUN_TOP_K", "", 1);        /* empty = unset */
	setenv("STRATA_SIMD", "avx2", 1);         /* read elsewhere: not a key */
	setenv("STRATA_PLUGIN_PATH", "/x", 1);
	setenv("STRATA_SOMETHING_ELSE", "1", 1);  /* unknown: someone else's */
	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(args(&c, (const char *[]){ "-c", path, NULL }), 0);
	ck_assert_str_eq(g_err, "");
	ck_assert_int_eq(c.threads, 3);
	ck_assert_float_eq(c.temp, 0.3f);
	ck_assert_int_eq(c.top_k, 40);
	ck_assert_str_eq(c.prefill, "auto:128");
	ck_assert_str_eq(strata_config_get(&c, "prefill", "chunk"), "auto:128");
	ck_assert_str_eq(c.model_path, "from-env.gguf");
	strata_config_free(&c);

	setenv("STRATA_RUN_THREADS", "many", 1);
	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(args(&c, (const char *[]){ "-c", path, NULL }), -EINVAL);
	ASSERT_ERR("%s", "STRATA_RUN_THREADS: bad value 'many' for run.threads: "
		   "expected an integer >= 0");
	strata_config_free(&c);
}
END_TEST

START_TEST(cli_overrides_env)
{
	struct strata_config c;
	const char *path = ini("strata.ini", "[run]\nthreads = 2\ntemp = 0.3\nseed = 5\n");

	setenv("STRATA_RUN_THREADS", "3", 1);
	setenv("STRATA_RUN_TEMP", "0.4", 1);
	ck_assert_int_eq(strata_config_init(&c), 0);
	/* -c after the flags it must not override: the file is read first anyway */
	ck_assert_int_eq(args(&c, (const char *[]){ "-t", "5", "--seed=-1", "-c", path, NULL }), 0);
	ck_assert_int_eq(c.threads, 5);
	ck_assert_float_eq(c.temp, 0.4f);
	ck_assert_uint_eq(c.seed, STRATA_SEED_RANDOM);
	ck_assert_str_eq(c.ini_path, path);
	strata_config_free(&c);

	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(args(&c, (const char *[]){ "--config=", NULL }), -ENOENT);
	strata_config_free(&c);
}
END_TEST

START_TEST(all_flags)
{
	struct strata_config c;

	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(args(&c, (const char *[]){
		"-m", "m.gguf", "--ctx-size", "4096", "-p", "-c", "-f", "p.txt", "-n", "-1",
		"--threads=7", "--temp", "1.5", "--top-k", "0", "--top-p=0.5", "--min-p", "0",
		"--repeat-penalty", "1.3", "--repeat-last-n", "0", "--seed", "123", "--no-bos",
		"--prefill", "auto:256", "--plugin-dir", "pl", "--paths", "path-window",
		"--dump-logits", "out.bin", "-v", "--verbose", NULL }), 0);
	ck_assert_str_eq(g_err, "");
	ck_assert_str_eq(c.model_path, "m.gguf");
	ck_assert_uint_eq(c.ctx_size, 4096);
	ck_assert_str_eq(c.prompt, "-c"); /* a value, not the config flag */
	ck_assert_ptr_null(c.ini_path);
	ck_assert_str_eq(c.prompt_file, "p.txt");
	ck_assert_int_eq(c.n_predict, -1);
	ck_assert_int_eq(c.threads, 7);
	ck_assert_float_eq(c.temp, 1.5f);
	ck_assert_int_eq(c.top_k, 0);
	ck_assert_float_eq(c.top_p, 0.5f);
	ck_assert_float_eq(c.min_p, 0.0f);
	ck_assert_float_eq(c.repeat_penalty, 1.3f);
	ck_assert_int_eq(c.repeat_last_n, 0);
	ck_assert_uint_eq(c.seed, 123);
	ck_assert_int_eq(c.add_bos, 0);
	ck_assert_str_eq(c.prefill, "auto:256");
	ck_assert_str_eq(c.plugin_dir, "pl");
	ck_assert_str_eq(c.paths, "path-window");
	ck_assert_str_eq(c.dump_logits, "out.bin");
	ck_assert_int_eq(c.verbose, 2);
	ck_assert_int_eq(args(&c, (const char *[]){ "--bos", NULL }), 0);
	ck_assert_int_eq(c.add_bos, 1);
	ck_assert_str_eq(strata_config_get(&c, "run", "bos"), "true");
	strata_config_free(&c);
}
END_TEST

static const struct {
	const char *argv[4];
	const char *msg;
} bad_args[] = {
	{ { "--thread", "4" }, "unknown flag '--thread' (did you mean '--threads'?)" },
	{ { "--frobnicate" }, "unknown flag '--frobnicate' (see --help)" },
	{ { "-x" }, "unknown flag '-x' (see --help)" },
	{ { "-t" }, "flag '-t' needs a value (N)" },
	{ { "--model" }, "flag '--model' needs a value (FILE)" },
	{ { "-c" }, "flag '-c' needs a value (FILE)" },
	{ { "--top-p", "2" }, "command line: bad value '2' for --top-p: expected a number in (0, 1]" },
	{ { "-t", "-3" }, "command line: bad value '-3' for -t: expected an integer >= 0" },
	{ { "--threads=x" }, "command line: bad value 'x' for --threads: expected an integer >= 0" },
	{ { "--prefill", "auto:" }, "command line: bad value 'auto:' for --prefill: expected auto, "
	  "auto:N or N, with N a token count >= 1" },
	{ { "hello" }, "unexpected argument 'hello': the prompt goes after -p, a file after -f "
	  "(see --help)" },
	{ { "-p", "x", "-" }, "unexpected argument '-': the prompt goes after -p, a file after -f "
	  "(see --help)" },
	{ { "--bos=1" }, "flag '--bos' takes no value (got '--bos=1')" },
	{ { "-c", "a.ini", "--config=b.ini" },
	  "-c/--config given twice ('a.ini' and 'b.ini'): put the settings in one file" },
};

START_TEST(cli_errors)
{
	struct strata_config c;
	const char *argv[6] = { 0 };
	char want[1024];

	for (int i = 0; i < 4 && bad_args[_i].argv[i]; i++)
		argv[i] = bad_args[_i].argv[i];
	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(args(&c, argv), -EINVAL);
	snprintf(want, sizeof(want), "strata: error: %s\n", bad_args[_i].msg);
	ck_assert_str_eq(g_err, want);
	strata_config_free(&c);
}
END_TEST

START_TEST(help)
{
	struct strata_config c;
	const char *path = ini("bad.ini", "this is not an ini file\n");

	ck_assert_int_eq(strata_config_init(&c), 0);
	/* --help wins over a broken config: it is handled before the file is read */
	ck_assert_int_eq(args(&c, (const char *[]){ "-c", path, "--help", NULL }), 1);
	ck_assert_str_eq(g_err, "");
	ck_assert_ptr_nonnull(strstr(g_out, "usage: strata"));
	/* every flag with its INI key, environment variable and default */
	ck_assert_ptr_nonnull(strstr(g_out, "-t,  --threads N"));
	ck_assert_ptr_nonnull(strstr(g_out, "[run] threads = N, or STRATA_RUN_THREADS"));
	ck_assert_ptr_nonnull(strstr(g_out, "(default: 0.95)"));
	ck_assert_ptr_nonnull(strstr(g_out, "--bos, --no-bos"));
	ck_assert_ptr_nonnull(strstr(g_out, "[prefill] chunk = SPEC, or STRATA_PREFILL_CHUNK"));
	ck_assert_ptr_nonnull(strstr(g_out, "--dump-logits FILE"));
	ck_assert_ptr_nonnull(strstr(g_out, "-c,  --config FILE"));
	/* every key of the schema is listed: a section without a title would drop its keys */
	for (size_t i = 0; i < strata_cfg_nkeys; i++) {
		const struct strata_cfg_key *k = &strata_cfg_keys[i];
		char line[160];

		if (k->flags & STRATA_CFG_CLI_ONLY)
			continue; /* a flag only: no INI key to show */
		snprintf(line, sizeof(line), "[%s] %s = ", k->section, k->key);
		ck_assert_msg(strstr(g_out, line), "--help does not list %s", line);
	}
	ck_assert_int_eq(args(&c, (const char *[]){ "-h", NULL }), 1);
	strata_config_free(&c);
}
END_TEST

START_TEST(plugin_sections)
{
	struct strata_config c;
	const char *path = ini("strata.ini",
			       "[path-batched]\n"
			       "chunk = 512\n"
			       "\n"
			       "[io-uring]\n"
			       "depth = 8\n"
			       "queue_dpeth = 4\n");
	const char *const batched[] = { "chunk", NULL };
	const char *const uring[] = { "depth", "queue_depth", NULL };
	const char *const none[] = { NULL };
	char want[4600];

	ck_assert_int_eq(strata_config_init(&c), 0);
	ck_assert_int_eq(load(&c, path), 0);
	ck_assert_int_eq(strata_config_check_plugin_keys(&c, "path-batched", batched), 0);
	ck_assert_int_eq(strata_config_check_plugin_keys(&c, "not-there", none), 0);

	{
		struct capture cap;

		capture_fd(&cap, 2);
		ck_assert_int_eq(strata_config_check_plugin_keys(&c, "io-uring", uring), -EINVAL);
		release_fd(&cap, 2, g_err, sizeof(g_err));
	}
	snprintf(want, sizeof(want), "strata: error: %s:6: unknown key 'queue_dpeth' in "
		 "[io-uring] (did you mean 'queue_depth'?)\n", path);
	ck_assert_str_eq(g_err, want);
	{
		struct capture cap;

		capture_fd(&cap, 2);
		ck_assert_int_eq(strata_config_check_plugin_keys(&c, "path-batched", none), -EINVAL);
		ck_assert_int_eq(strata_config_check_plugin_keys(&c, "path-batched", NULL), -EINVAL);
		release_fd(&cap, 2, g_err, sizeof(g_err));
	}
	snprintf(want, sizeof(want),
		 "strata: error: %s:2: unknown key 'chunk' in [path-batched] (the plugin takes "
		 "no keys)\nstrata: error: %s:2: unknown key 'chunk' in [path-batched] (the "
		 "plugin takes no keys)\n", path, path);
	ck_assert_str_eq(g_err, want);

	/* plugin keys take environment overrides too, looked up when asked */
	setenv("STRATA_IO_URING_DEPTH", "32", 1);
	ck_assert_str_eq(strata_config_get(&c, "io-uring", "depth"), "32");
	setenv("STRATA_PATH_BATCHED_WINDOW", "7", 1);
	ck_assert_str_eq(strata_config_get(&c, "path-batched", "window"), "7");
	unsetenv("STRATA_IO_URING_DEPTH");
	ck_assert_str_eq(strata_config_get(&c, "io-uring", "depth"), "8");

	/* a second file replaces keys it sets; the first header's place is kept */
	path = ini("more.ini", "[path-batched]\nchunk = 1024\n");
	ck_assert_int_eq(load(&c, path), 0);
	ck_assert_str_eq(strata_config_get(&c, "path-batched", "chunk"), "1024");
	ck_assert_ptr_nonnull(strstr(strata_config_section_where(&c, "path-batched"), "strata.ini:1"));
	strata_config_free(&c);
}
END_TEST

START_TEST(prefill_chunk)
{
	static const char *const badspec[] = {
		"", "auto:", "auto:0", "0", "-1", "12x", "auto512", "4294967296", "auto:-5",
		" 8", "AUTO",
	};
	uint32_t n = 0;

	ck_assert_int_eq(strata_config_prefill_chunk("auto", &n), 0);
	ck_assert_uint_eq(n, 8192);
	ck_assert_int_eq(strata_config_prefill_chunk("auto:512", &n), 0);
	ck_assert_uint_eq(n, 512);
	ck_assert_int_eq(strata_config_prefill_chunk("64", &n), 0);
	ck_assert_uint_eq(n, 64);
	ck_assert_int_eq(strata_config_prefill_chunk("4294967295", &n), 0);
	ck_assert_uint_eq(n, 4294967295u);
	for (size_t i = 0; i < sizeof(badspec) / sizeof(badspec[0]); i++)
		ck_assert_msg(strata_config_prefill_chunk(badspec[i], &n) == -EINVAL,
			      "'%s' accepted", badspec[i]);
	ck_assert_int_eq(strata_config_prefill_chunk(NULL, &n), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("config");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, good_ini_file);
	tcase_add_loop_test(tc, ini_errors, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, missing_file);
	tcase_add_test(tc, quoting_long_and_multiline);
	tcase_add_test(tc, relative_paths);
	tcase_add_test(tc, env_overrides_ini);
	tcase_add_test(tc, cli_overrides_env);
	tcase_add_test(tc, all_flags);
	tcase_add_loop_test(tc, cli_errors, 0, (int)(sizeof(bad_args) / sizeof(bad_args[0])));
	tcase_add_test(tc, help);
	tcase_add_test(tc, plugin_sections);
	tcase_add_test(tc, prefill_chunk);
	suite_add_tcase(su, tc);
	return tu_srunner_run(srunner_create(su));
}
