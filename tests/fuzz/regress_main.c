/*
 * regress_main.c - replays fuzz inputs without libFuzzer: every file named
 * on the command line, or found in a directory named there, goes once
 * through the target's LLVMFuzzerTestOneInput().  ctest runs it on
 * tests/fuzz/regress-<target> (each crash ever found) and
 * tests/fuzz/corpus-<target>, so a fixed crash stays fixed in every build,
 * sanitized or not.  Exits 0 when every input ran (a failed property
 * aborts), 77 when the target's data is absent, 1 when an input could not
 * be read or no input was found at all.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "testutil.h"

static int run_file(const char *path)
{
	size_t len;
	uint8_t *data = tu_read_file(path, &len);

	if (!data) {
		fprintf(stderr, "regress: cannot read %s\n", path);
		return -1;
	}
	LLVMFuzzerTestOneInput(data, len);
	free(data);
	return 0;
}

static int not_hidden(const struct dirent *e)
{
	return e->d_name[0] != '.';
}

/* Every regular file in dir, in name order (so a failure is reproducible). */
static int run_dir(const char *dir, int *n_run)
{
	struct dirent **names;
	int n = scandir(dir, &names, not_hidden, alphasort), rc = 0;

	if (n < 0) {
		fprintf(stderr, "regress: cannot open %s\n", dir);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			if (run_file(path))
				rc = -1;
			else
				(*n_run)++;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = fuzz_target_init(), n_run = 0;

	if (rc)
		return rc;
	for (int i = 1; i < argc; i++) {
		struct stat st;

		/* regress-<target> exists once a crash was found: absent is fine. */
		if (stat(argv[i], &st) != 0) {
			printf("regress: %s: absent, skipped\n", argv[i]);
			continue;
		}
		if (S_ISDIR(st.st_mode) ? run_dir(argv[i], &n_run) : run_file(argv[i]))
			return 1;
		if (!S_ISDIR(st.st_mode))
			n_run++;
	}
	printf("regress: %d inputs replayed, no failure\n", n_run);
	return n_run > 0 ? 0 : 1;
}
