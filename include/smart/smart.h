/*
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

#define SMART_VERSION_STRING "0.1.0"

#endif
