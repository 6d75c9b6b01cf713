/** @file
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

/** Lengths of any secret, from a file or in memory (smart_blade_config,
 * smart_ctx_set_secret): shorter ones are refused as guessable. */
#define SMART_SECRET_MIN 16
#define SMART_SECRET_MAX 4096

/**
 * Read a secret file: its bytes with one trailing newline removed, between
 * SMART_SECRET_MIN and SMART_SECRET_MAX.  The path may be a symlink; what
 * it names must be a regular file (a FIFO, device or directory is refused
 * at once, never waited on) that neither group nor others may access, as
 * ssh asks of a private key.  Each refusal is logged with the file's name
 * and the fix.  *out is malloc'ed.  SMART_ENOENT, SMART_EINVAL.
 * Thread: any.
 */
int smart_secret_load(const char *path, char **out, size_t *len);

/** Fill buf with len random hexadecimal characters (getrandom), e.g. for an
 * embedded blade and its own ctx (smart_ctx_set_secret): use at least
 * SMART_SECRET_MIN (32 gives 128 bits).  1..4096 bytes; SMART_EINVAL, or
 * SMART_ESYS when the kernel gives no randomness.  Thread: any. */
int smart_secret_generate(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
