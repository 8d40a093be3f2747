/*
 * version.c - libstrata's own source (the rest of it is the core, linked whole):
 * the version an application runs against, which may be newer than the
 * strata.h it was built with.
 */
#include "strata.h"

#ifndef STRATA_VERSION_STRING
#error "STRATA_VERSION_STRING comes from CMakeLists.txt"
#endif

const char *strata_version(void)
{
	return STRATA_VERSION_STRING;
}
