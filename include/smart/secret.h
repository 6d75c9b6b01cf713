/*
 * Shared secrets: what a blade and its clients both hold, so that a blade
 * serves only clients that know it (docs/protocol.md).
 *
 * Thread safety: both functions are thread safe.
 */
#ifndef SMART_SECRET_H
#define SMART_SECRET_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Read a secret file: its bytes with one trailing newline removed; between
 * 1 and 4096 bytes.  *out is malloc'ed.  SMART_ENOENT, SMART_EINVAL. */
int smart_secret_load(const char *path, char **out, size_t *len);

/* Fill buf with len random hexadecimal characters (getrandom), e.g. for an
 * embedded blade and its own ctx (smart_ctx_set_secret).  1..4096 bytes;
 * SMART_EINVAL, or SMART_ESYS when the kernel gives no randomness. */
int smart_secret_generate(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
