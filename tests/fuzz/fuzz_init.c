/*
 * fuzz_init.c - libFuzzer's start hook for the fuzz targets: the target's
 * own setup, which must succeed (a fuzz run without its data is no run).
 */
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (fuzz_target_init() != 0) {
		fprintf(stderr, "fuzz: the target's data is missing (see above)\n");
		exit(1);
	}
	return 0;
}
