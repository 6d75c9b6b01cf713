/*
 * Secret files with a logger (secret.c): smart_secret_load() as a ctx
 * needs it, its refusals said through the ctx's logger (and so through
 * the application's handler, smart_log_set_handler) rather than always on
 * stderr.
 *
 * Invariant: the same checks and results as smart_secret_load(), which is
 * this with a NULL logger.
 */
#ifndef SMART_WIRE_SECRET_H
#define SMART_WIRE_SECRET_H

#include <stddef.h>

#include "util/log.h"

/* smart_secret_load(path, out, len), each refusal logged through lg (NULL:
 * stderr).  Thread: any. */
int smart__secret_load(const struct smart__log *lg, const char *path,
		       char **out, size_t *len);

#endif
