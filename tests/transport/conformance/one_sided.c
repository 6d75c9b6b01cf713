/*
 * Conformance case on one-sidedness (rule 6): a blade in a child process is
 * stopped with SIGSTOP and READ, WRITE, CAS and FAA against it still
 * complete, because the data path needs no blade CPU.
 *
 * Invariants: the child dies with the parent (PR_SET_PDEATHSIG), so a
 * failed check of the parent leaves no stopped process behind.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suite.h"

/* ------------------------------------------------------------------ */
/* Case: one_sided_sigstop — rule 6: the data path needs no blade CPU.
 * A forked child is the blade (responder domain, region, accept); it
 * stops itself with SIGSTOP and the parent's READ/WRITE/CAS/FAA still
 * complete.  After SIGCONT the child checks its region.               */

#define STOP_IMG 2048 /* region prefix the child verifies */
#define STOP_CAS 1024 /* CAS counter word */
#define STOP_FAA 1032 /* FAA counter word */

static void blade_child(const struct smart_conf_env *env, int s)
{
	const struct smart_tp_ops *ops = env->ops;
	struct smart_tp_domain *d;
	struct smart_tp_mr *r;
	struct smart_tp_responder *resp;
	uint8_t b[SMART_TP_BLOB_MAX], cb[SMART_TP_BLOB_MAX], img[STOP_IMG];
	size_t bl = sizeof(b), cl;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	CHECK_OK(dom_open(env, 1, &d));
	CHECK_OK(ops->mr_alloc(d, CONF_REGION_LEN, -1, 1, &r));
	CHECK_OK(ops->region_blob(d, r, b, &bl));
	msg_send(s, b, bl, r->fd);
	cl = msg_recv(s, cb, sizeof(cb), NULL);
	bl = sizeof(b);
	CHECK_OK(ops->accept(d, r, cb, cl, b, &bl, &resp));
	msg_send(s, b, bl, -1);
	raise(SIGSTOP);
	CHECK_EQ(msg_recv(s, img, sizeof(img), NULL), sizeof(img));
	CHECK_MEM_EQ(r->addr, img, sizeof(img),
		     "blade region after the client's ops");
	ops->responder_destroy(resp);
	ops->mr_free(d, r);
	ops->domain_close(d);
	fflush(stdout);
	_exit(0);
}

/* The client side of the handshake with the blade child: a domain
 * attached to the child's region and one connected QP. */
static void stop_client_open(const struct smart_conf_env *env, int s,
			     struct fx *f, struct conn *c)
{
	const struct smart_tp_ops *ops = env->ops;
	struct smart_tp_qp_attr attr = { .max_send_wr = 16 };
	uint8_t b[SMART_TP_BLOB_MAX];
	size_t bl;
	int fd;

	memset(f, 0, sizeof(*f));
	f->env = env;
	f->ops = ops;
	f->blob_len = msg_recv(s, f->blob, sizeof(f->blob), &fd);
	CHECK_OK(dom_open(env, 0, &f->idom));
	CHECK_OK(ops->remote_attach(f->idom, f->blob, f->blob_len, fd,
				    &f->remote));
	CHECK_OK(ops->mr_alloc(f->idom, CONF_LOCAL_LEN, -1, 0, &f->lmr));
	f->t = (struct conf_target){ ops->remote_base(f->remote),
				     ops->remote_rkey(f->remote), f->lmr->lkey,
				     CONF_REGION_LEN };
	f->laddr = f->lmr->addr;
	*c = (struct conn){ .ops = ops, .own_cq = 1 };
	CHECK_OK(ops->cq_create(f->idom, 32, 0, &c->cq));
	CHECK_OK(ops->qp_create(f->idom, c->cq, &attr, &c->qp));
	bl = sizeof(b);
	CHECK_OK(ops->qp_blob(c->qp, b, &bl));
	msg_send(s, b, bl, -1);
	bl = msg_recv(s, b, sizeof(b), NULL);
	CHECK_OK(ops->qp_connect(c->qp, f->remote, b, bl));
}

static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	size_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fp = fopen(path, "r");
	CHECK_MSG(fp != NULL, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = 0;
	p = strrchr(buf, ')');
	CHECK(p && p[1] == ' ');
	return p[2];
}

/* Ops against the stopped blade; img gets what its region must hold. */
static void stop_ops(struct fx *f, struct conn *c, uint8_t *img)
{
	uint8_t *src = f->laddr, *dst = f->laddr + 8192;
	uint64_t *old = (uint64_t *)(f->laddr + 16384), rng = 7;
	uint64_t i, rounds = 500;

	memset(img, 0, STOP_IMG);
	for (i = 0; i < rounds; i++) {
		rng_fill(&rng, src, STOP_CAS);
		run1(c, wr_make(&f->t, SMART_TP_WRITE, 1, 0, src, STOP_CAS, 0));
		run1(c, wr_make(&f->t, SMART_TP_READ, 2, 0, dst, STOP_CAS, 0));
		CHECK_MEM_EQ(dst, src, STOP_CAS, "READ from a stopped blade");
		run1(c, wr_atomic(&f->t, SMART_TP_CAS, 3, STOP_CAS, old, i,
				  i + 1, 0));
		CHECK_U64_EQ(*old, i);
		run1(c,
		     wr_atomic(&f->t, SMART_TP_FAA, 4, STOP_FAA, old, 3, 0, 0));
		CHECK_U64_EQ(*old, 3 * i);
	}
	memcpy(img, src, STOP_CAS);
	memcpy(img + STOP_CAS, &rounds, 8);
	i = 3 * rounds;
	memcpy(img + STOP_FAA, &i, 8);
}

void case_one_sided_sigstop(const struct smart_conf_env *env)
{
	uint8_t img[STOP_IMG];
	struct fx f;
	struct conn c;
	int s, st;
	pid_t pid;

	pid = fork_peer(&s);
	if (!pid)
		blade_child(env, s);
	stop_client_open(env, s, &f, &c);
	CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
	CHECK_MSG(WIFSTOPPED(st), "blade child did not stop (status 0x%x)", st);
	CHECK_EQ(proc_state(pid), 'T');
	stop_ops(&f, &c, img);
	CHECK_EQ(proc_state(pid), 'T');
	printf("   blade pid %d stopped throughout 500 rounds of "
	       "WRITE/READ/CAS/FAA\n",
	       (int)pid);
	CHECK_EQ(kill(pid, SIGCONT), 0);
	msg_send(s, img, sizeof(img), -1);
	check_child_ok(pid, "blade child");
	close(s);
	conn_close(&c);
	f.ops->mr_free(f.idom, f.lmr);
	f.ops->remote_detach(f.remote);
	f.ops->domain_close(f.idom);
}
