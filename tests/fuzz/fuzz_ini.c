/*
 * fuzz_ini.c - the configuration loader: an INI file, then command-line flags.
 *
 * The input up to its first NUL byte is the INI file (a NUL ends inih's
 * line anyway); the NUL-separated strings after it are flags, given after
 * "-c FILE" as a user would.  Whatever the bytes, strata_config_from_args()
 * returns 0, 1 (help) or a negative errno, and a loaded configuration
 * answers every lookup.
 */
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "fuzz.h"

#define FUZZ_MAX_ARGS 24

int fuzz_target_init(void)
{
	fuzz_quiet();
	return 0;
}

/* What a plugin would then ask of its section. */
static void query(const struct strata_config *c)
{
	static const char *const keys[] = { "chunk", "max_tokens", "depth", NULL };
	const char *const *sec = strata_config_plugin_sections(c);
	uint32_t chunk;

	FUZZ_CHECK(sec != NULL);
	for (; *sec; sec++) {
		FUZZ_CHECK(strata_config_section_where(c, *sec) != NULL);
		(void)strata_config_check_plugin_keys(c, *sec, keys);
		for (int k = 0; keys[k]; k++)
			(void)strata_config_get(c, *sec, keys[k]);
	}
	(void)strata_config_get(c, "run", "threads");
	(void)strata_config_get(c, "model", "path");
	(void)strata_config_get(c, "nosuch", "key");
	if (c->prefill)
		(void)strata_config_prefill_chunk(c->prefill, &chunk);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t ini_len = nul ? (size_t)(nul - data) : size;
	char path[64], *copy, *argv[FUZZ_MAX_ARGS + 4];
	struct strata_config c;
	int argc = 0, fd, rc;

	fd = fuzz_memfile(data, ini_len, 0, path, sizeof(path));
	if (fd < 0)
		return 0;
	argv[argc++] = "strata";
	argv[argc++] = "-c";
	argv[argc++] = path;
	/* The flags: a copy, NUL-terminated at the end (the input may not be). */
	copy = malloc(size - ini_len + 1);
	FUZZ_CHECK(copy != NULL);
	if (nul) {
		memcpy(copy, nul + 1, size - ini_len - 1);
		copy[size - ini_len - 1] = 0;
		for (char *p = copy, *end = copy + (size - ini_len - 1);
		     p < end && argc < FUZZ_MAX_ARGS + 3; p += strlen(p) + 1)
			/* --help prints a page: slow, and no parsing. */
			if (strcmp(p, "-h") && strncmp(p, "--help", 6))
				argv[argc++] = p;
	}
	argv[argc] = NULL;
	FUZZ_CHECK(strata_config_init(&c) == 0);
	rc = strata_config_from_args(&c, argc, argv);
	FUZZ_CHECK(rc == 0 || rc == 1 || rc < 0);
	if (rc == 0)
		query(&c);
	strata_config_free(&c);
	free(copy);
	close(fd);
	return 0;
}
