/*
 * What the messaging tests share: an endpoint of their own (a ctx, its
 * worker, an endpoint with the test's settings), the secret file their
 * ctxs read, and a child role that listens and tells its address.  Header only; the ctx is the test's (fixture_ctx with its own
 * options), handed over to the endpoint, which destroys it on close.
 */
#ifndef SMART_TEST_RPC_FIXTURE_H
#define SMART_TEST_RPC_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/test.h"
#include "smart/rpc.h"
#include "smart/smart.h"

struct rpc_ep {
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
};

/* A fresh secret file (mode 0600) holding s: its name, from template tmpl
 * ("/tmp/...-XXXXXX"), into path (len bytes); removed at exit. */
static inline void rpc_secret_file(char *path, size_t len, const char *tmpl,
				   const char *s)
{
	test_secret_file(path, len, tmpl, s);
}

/* An endpoint with cfg (NULL: the defaults) on a worker of ctx, which e
 * owns from now on. */
static inline void rpc_ep_open(struct rpc_ep *e, smart_ctx_t *ctx,
			       const struct smart_rpc_config *cfg)
{
	e->ctx = ctx;
	CHECK_OK(smart_worker_create(e->ctx, &e->w));
	CHECK_OK(smart_rpc_create(e->w, cfg, &e->rpc));
}

/* Start child role with its pipe's write end and mode (NULL: none) as
 * arguments, and read the address it writes there first (up to 63 bytes)
 * into addr; the pipe's read end goes to *rfd (NULL: closed). */
static inline pid_t rpc_child_start(const char *role, const char *mode,
				    char *addr, int *rfd)
{
	char fdtxt[16];
	int p[2];
	pid_t pid;
	ssize_t n;

	CHECK_OK(pipe(p));
	snprintf(fdtxt, sizeof(fdtxt), "%d", p[1]);
	pid = test_spawn(role, (const char *[]){ fdtxt, mode, NULL });
	close(p[1]);
	n = read(p[0], addr, 63);
	CHECK_MSG(n > 0, "the %s did not start", role);
	addr[n] = 0;
	if (rfd)
		*rfd = p[0];
	else
		close(p[0]);
	return pid;
}

static inline void rpc_ep_close(struct rpc_ep *e)
{
	CHECK_OK(smart_rpc_destroy(e->rpc));
	CHECK_OK(smart_worker_destroy(e->w));
	CHECK_OK(smart_ctx_destroy(e->ctx));
}

#endif
