/*
 * crypto.c - strata_sha256 (plat.h) with Windows' CNG (bcrypt.dll).
 */
#include <windows.h>

#include <bcrypt.h>
#include <errno.h>

#include "plat/plat.h"

int strata_sha256(const void *data, size_t n, uint8_t md[32])
{
	BCRYPT_ALG_HANDLE alg;
	BCRYPT_HASH_HANDLE h = NULL;
	int rc = -EIO;

	if (BCryptOpenAlgorithmProvider(&alg, BCRYPT_SHA256_ALGORITHM, NULL, 0) != 0)
		return -EIO;
	if (BCryptCreateHash(alg, &h, NULL, 0, NULL, 0, 0) == 0) {
		const uint8_t *p = data;

		rc = 0;
		while (n && !rc) { /* BCryptHashData takes a ULONG length */
			ULONG k = n > 0x40000000u ? 0x40000000u : (ULONG)n;

			rc = BCryptHashData(h, (PUCHAR)p, k, 0) == 0 ? 0 : -EIO;
			p += k;
			n -= k;
		}
		if (!rc && BCryptFinishHash(h, md, 32, 0) != 0)
			rc = -EIO;
		BCryptDestroyHash(h);
	}
	BCryptCloseAlgorithmProvider(alg, 0);
	return rc;
}
