/*
 * crypto.c - strata_sha256 (plat.h) with OpenSSL's libcrypto.
 */
#include "plat/plat.h"

#include <errno.h>
#include <openssl/evp.h>

int strata_sha256(const void *data, size_t n, uint8_t md[32])
{
	unsigned char out[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (!EVP_Digest(data, n, out, &len, EVP_sha256(), NULL) || len != 32)
		return -EIO;
	for (int i = 0; i < 32; i++)
		md[i] = out[i];
	return 0;
}
