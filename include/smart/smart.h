/** @file
 * Smart in C: one-sided disaggregated-memory framework.  The umbrella
 * header; each part is documented in its own header.
 */
#ifndef SMART_SMART_H
#define SMART_SMART_H

#include "smart/status.h"
#include "smart/options.h"
#include "smart/gaddr.h"
#include "smart/ctx.h"
#include "smart/task.h"
#include "smart/ops.h"
#include "smart/alloc.h"
#include "smart/stats.h"
#include "smart/blade.h"
#include "smart/util.h"
#include "smart/backoff.h"
#include "smart/secret.h"
#include "smart/lease.h"
#include "smart/epoch.h"
#include "smart/hook.h"
#include "smart/sim.h"

/** The version of these headers.  The major is the shared library's soname
 * (libsmart.so.1): within it nothing is removed or changed incompatibly; a
 * minor adds functions, each under its own symbol version node SMART_1.<minor>
 * (docs/design.md §12).  The build checks the four agree. */
#define SMART_VERSION_MAJOR  1
#define SMART_VERSION_MINOR  0
#define SMART_VERSION_PATCH  0
#define SMART_VERSION_STRING "1.0.0"

/** The version of the library loaded at run time, which may be a later 1.x
 * than the headers an application was compiled with: an application that
 * needs a function of 1.<n> checks *minor >= n (the loader already refused
 * a library lacking the version node of a function it links).  Stores the
 * numbers in those of major, minor and patch that are not NULL and returns
 * the version string ("1.0.0"); cannot fail.  Thread safe. */
const char *smart_version(unsigned *major, unsigned *minor, unsigned *patch);

#endif
