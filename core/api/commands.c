/*
 * commands.c - the strata command's tools behind the application API
 * (strata_command, strata_command_name in include/strata.h), so that the
 * command itself (core/cli/main.c) is a program of strata.h alone.
 */
#include <errno.h>
#include <string.h>

#include "strata.h"
#include "gguf/gguf.h"
#include "plugin/io_check.h"
#include "plugin/registry.h"
#include "ple/ple.h"
#include "tok/tokenizer.h"
#include "util/log.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} g_commands[] = {
	{ "info", strata_cmd_info, "print a GGUF file's metadata and tensors" },
	{ "tokenize", strata_cmd_tokenize, "print the token ids of a text" },
	{ "plugins", strata_cmd_plugins, "list the plugins on the search path" },
	{ "io-check", strata_cmd_io_check, "run the io plugin conformance suite on one" },
	{ "ple-ids", strata_cmd_ple_ids, "print the 16 PLE row ids of each token" },
	{ "ple-bench", strata_cmd_ple_bench, "benchmark the PLE reader on the disk" },
};
#define N_COMMANDS (int)(sizeof(g_commands) / sizeof(g_commands[0]))

int strata_command(int argc, char **argv)
{
	strata_log_clear_error();
	if (argc < 1 || !argv || !argv[0]) {
		strata_error("strata_command: no command name");
		return -EINVAL;
	}
	for (int i = 0; i < N_COMMANDS; i++)
		if (!strcmp(argv[0], g_commands[i].name))
			return g_commands[i].fn(argc, argv);
	strata_error("unknown command '%s' (try --help)", argv[0]);
	return -ENOENT;
}

const char *strata_command_name(int i, const char **help)
{
	if (i < 0 || i >= N_COMMANDS)
		return NULL;
	if (help)
		*help = g_commands[i].help;
	return g_commands[i].name;
}
