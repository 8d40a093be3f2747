/*
 * no_serve.c - strata_serve() in a build without the HTTP server
 * (-DSTRATA_SERVE=OFF, the Windows build's default: libmicrohttpd is not
 * built for it).  Everything else of strata.h works there.
 */
#include <errno.h>

#include "strata.h"
#include "util/log.h"

int strata_serve(struct strata_engine *e)
{
	(void)e;
	strata_error("this strata was built without its HTTP server (-DSTRATA_SERVE=OFF; the "
		     "Windows build has no libmicrohttpd): [serve] and --serve are not available");
	return -ENOTSUP;
}
