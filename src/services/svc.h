/*
 * The services' functions that one service file calls in another, and the
 * hook table that hands them to the runtime (svc.c; the contract is
 * runtime/service.h).  Internal to src/services: the runtime reaches them
 * only through the table.
 */
#ifndef SMART_SERVICES_SVC_H
#define SMART_SERVICES_SVC_H

#include "runtime/core.h"

/* epoch.c */
void smart__ebr_prepend(struct smart_worker *w, struct smart__chain *c);
void smart__ebr_qp_new(struct smart_worker *w, uint16_t blade);
void smart__ebr_destroy(struct smart_worker *w);
size_t smart__ebr_orphans(struct smart_ctx *ctx, struct smart_worker *kw);

/* alloc.c */
void smart__ralloc_destroy(struct smart_worker *w);
/* bytes the worker holds for reuse on a blade (the keeper reports them) */
uint64_t smart__ralloc_cached(struct smart_worker *w, uint16_t blade);

#endif
