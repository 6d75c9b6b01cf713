/*
 * The flags every benchmark shares, and the environment they describe:
 * the library options, the blades (an embedded one, or the --connect'ed
 * smartds) and the ctx joined to them.
 *
 * Invariants: an embedded blade runs on the transport and device the
 * run's options name, wherever they came from (flag, --opt or SMART_*),
 * so the blade and the ctx never disagree; its secret is random and goes
 * to the ctx directly, never through a file; it listens on loopback only.
 */
#include <stdio.h>
#include <string.h>

#include "tool.h"

#define C struct kit_common
const struct kit_flag kit_common_flags[] = {
	KIT_LIBOPT("transport", C, transport, "transport", "shm|verbs",
		   "transport [shm, or SMART_TRANSPORT]"),
	KIT_LIBOPT("qp-mode", C, qp_mode, "qp_mode",
		   "shared|mux:K|per-thread|per-thread-db|auto",
		   "QP allocation [auto]"),
	KIT_LIBOPT("techniques", C, techniques, "techniques", "LIST",
		   "Smart's techniques: ThrdAwareAlloc,WorkReqThrot,\n"
		   "ConflictAvoid,SpecLookup, or None [all]"),
	KIT_LIBOPT("credit", C, credit, "credit", "0..4096",
		   "fixed cap on WRs in flight per thread;\n"
		   "0 = the tuner [0]"),
	KIT_LIBOPT("nic-model", C, nic_model, "nic_model", "SPEC",
		   "shm RNIC model: default or key=value,... [off]"),
	KIT_LIBOPT("device", C, device, "device", "NAME",
		   "verbs: RDMA device [first with an active port]"),
	KIT_LIBKV("opt", C, opts, "KEY=VALUE",
		  "any library option (repeatable)"),
	KIT_LISTOPTS("list-options", "print the library options and exit"),
	KIT_STRS("connect", C, connect, KIT_BLADES_MAX, "HOST:PORT",
		 "a running smartd instead of an embedded blade"),
	KIT_LIBOPT("secret-file", C, secret_file, "secret_file", "FILE",
		   "secret for --connect [SMART_SECRET_FILE]"),
	KIT_SIZE("blade-size", C, blade_size, 4 << 20, (double)(1ull << 40),
		 "SIZE", "embedded blade region (K/M/G/T)"),
	KIT_INT("threads", C, threads, 1, 1024, "T", "worker threads [1]"),
	KIT_TIME("seconds", C, seconds, 1e-3, 86400, "S",
		 "measured time, e.g. 3 or 500ms [3]"),
	KIT_U64("seed", C, seed, 0, 1.8e19, "N", "RNG seed [1]"),
	KIT_SIM("sim", C, sim, "SPEC",
		"run in virtual time on one core (docs/sim.md):\n"
		"default or seed=N,sync_ns=N,jitter_ns=N [off]"),
	KIT_FLAG("json", C, json, "one JSON object instead of the table"),
	KIT_OUTFILE("csv", C, csv, "FILE",
		    "append one CSV line (a header when new); refused\n"
		    "before the run when it cannot be written"),
	KIT_END,
};
#undef C

void kit_common_init(struct kit_common *c, const char *tool)
{
	memset(c, 0, sizeof(*c));
	c->tool = tool;
	c->threads = 1;
	c->seconds = 3;
	c->seed = 1;
}

void kit_common_command(struct kit_common *c, int argc, char **argv, int first)
{
	size_t n = (size_t)snprintf(c->command, sizeof(c->command), "%s",
				    c->tool);
	int i;

	for (i = first; i < argc && n < sizeof(c->command); i++)
		n += (size_t)snprintf(c->command + n, sizeof(c->command) - n,
				      " %s", argv[i]);
	if (n >= sizeof(c->command))
		memcpy(c->command + sizeof(c->command) - 4, "...", 4);
}

/* SMART_* < the common flags < the tool's kv < --opt.  The library flags
 * are those of kit_common_flags that name an option: the table says which
 * field goes to which key, once. */
int kit_opts_build(const struct kit_common *c, const char *const *kv,
		   smart_opts_t **out)
{
	const struct kit_flag *f;
	const char *v;
	smart_opts_t *o;
	int i, rc = smart_opts_create(&o);

	if (rc)
		return rc;
	for (f = kit_common_flags; !rc && f->name; f++) {
		if (f->type != KIT_T_LIBOPT)
			continue;
		v = *(const char *const *)((const char *)c + f->off);
		if (v)
			rc = smart_opts_set(o, f->key, v);
	}
	for (i = 0; !rc && kv && kv[i]; i++)
		rc = smart_opts_set_kv(o, kv[i]);
	for (i = 0; !rc && i < c->opts.n; i++)
		rc = smart_opts_set_kv(o, c->opts.v[i]);
	if (rc)
		smart_opts_destroy(o);
	else
		*out = o;
	return rc;
}

static int embed(struct kit_env *e, const struct kit_common *c,
		 const smart_opts_t *o)
{
	struct smart_blade_config bc;
	char tp[16], dev[64];
	int rc = smart_secret_generate(e->secret, sizeof(e->secret));

	if (!rc)
		rc = smart_opts_get(o, "transport", tp, sizeof(tp));
	if (!rc)
		rc = smart_opts_get(o, "device", dev, sizeof(dev));
	if (rc)
		return rc;
	smart_blade_config_init(&bc);
	if (c->blade_size)
		bc.size = c->blade_size;
	bc.listen = "127.0.0.1:0";
	bc.secret = e->secret;
	bc.secret_len = sizeof(e->secret);
	bc.transport = tp;
	bc.device = dev[0] ? dev : NULL;
	return smart_blade_create(&bc, &e->embedded);
}

/* A failed step in one line: what, the error, and the library's first
 * message when it says more (the cause of a refused secret file), so that
 * the held messages are not said again at close (kit_env_cause). */
static int say_into(struct kit_env *e, const struct kit_common *c,
		    const char *what, int rc, char *buf, size_t len)
{
	const char *cause, *err;

	if (!rc)
		return 0;
	cause = kit_env_cause(e);
	err = smart_strerror(rc);
	if (SMART_M_TOOL_CAUSE_TWICE)
		e->log.failed = 0, cause = "";
	if (*cause && !strstr(cause, err))
		snprintf(buf, len, "%s: %s: %s (%s)\n", c->tool, what, err,
			 cause);
	else
		snprintf(buf, len, "%s: %s: %s\n", c->tool, what, err);
	return rc;
}

static int say(struct kit_env *e, const struct kit_common *c, const char *what,
	       int rc)
{
	char line[640];

	if (say_into(e, c, what, rc, line, sizeof(line)))
		fputs(line, stderr);
	return rc;
}

static int join(struct kit_env *e, const struct kit_common *c, const char *addr)
{
	uint16_t *id = &e->blade[e->nblades];
	char what[300];
	int rc = smart_ctx_connect(e->ctx, addr, id);

	if (!rc)
		rc = smart_ctx_blade_info(e->ctx, *id, &e->info[e->nblades]);
	snprintf(what, sizeof(what), "connect %s", addr);
	if (rc && c->hold_connect)
		return say_into(e, c, what, rc, e->connect_line,
				sizeof(e->connect_line));
	if (say(e, c, what, rc))
		return rc;
	e->nblades++;
	return 0;
}

static const char *const level_names[] = { "error", "warn", "info", "debug" };

/* The library's messages, from any thread of the ctx (struct kit_log). */
static void log_fn(void *arg, int level, const char *prefix, const char *msg)
{
	struct kit_log *l = arg;

	if (l->verbose) {
		fprintf(stderr, "%s: %s %s: %s\n", l->tool, prefix,
			level_names[level < 0 ? 0 :
				    level > 3 ? 3 :
						level],
			msg);
		return;
	}
	if (level > SMART_LOG_LEVEL_WARN)
		return;
	pthread_mutex_lock(&l->lock);
	if (!l->held++)
		snprintf(l->first, sizeof(l->first), "%s", msg);
	snprintf(l->last, sizeof(l->last), "%s", msg);
	pthread_mutex_unlock(&l->lock);
}

static void log_open(struct kit_log *l, const struct kit_common *c,
		     smart_opts_t *o)
{
	char lv[16];

	l->tool = c->tool;
	pthread_mutex_init(&l->lock, NULL);
	l->verbose = !smart_opts_get(o, "log_level", lv, sizeof(lv)) &&
		     (!strcmp(lv, "info") || !strcmp(lv, "debug"));
	smart_log_set_handler(o, log_fn, l);
}

int kit_env_opts(struct kit_env *e, const struct kit_common *c,
		 const char *const *kv, smart_opts_t **out)
{
	int rc = kit_opts_build(c, kv, out);

	memset(e, 0, sizeof(*e));
	if (!rc)
		log_open(&e->log, c, *out);
	return rc;
}

const char *kit_env_cause(struct kit_env *e)
{
	e->log.failed = 1;
	return e->log.first;
}

int kit_env_open(struct kit_env *e, const struct kit_common *c,
		 const char *const *kv)
{
	smart_opts_t *o;
	int i, rc;

	memset(e, 0, sizeof(*e));
	rc = say(e, c, "library options", kit_opts_build(c, kv, &o));
	if (rc)
		return rc;
	log_open(&e->log, c, o);
	if (!c->connect.n)
		rc = say(e, c, "embedded blade", embed(e, c, o));
	if (!rc)
		rc = say(e, c, "creating the ctx",
			 smart_ctx_create(o, &e->ctx));
	if (!rc && (smart_opts_get(o, "nic_model", e->nic_model,
				   sizeof(e->nic_model)) ||
		    !strcmp(e->nic_model, "off")))
		e->nic_model[0] = 0;
	if (!rc && (smart_opts_get(o, "shm_adversarial", e->adversarial,
				   sizeof(e->adversarial)) ||
		    !strcmp(e->adversarial, "off")))
		e->adversarial[0] = 0;
	smart_opts_destroy(o);
	if (!rc && e->embedded)
		rc = smart_ctx_set_secret(e->ctx, e->secret, sizeof(e->secret));
	if (!rc && e->embedded)
		rc = join(e, c, smart_blade_address(e->embedded));
	for (i = 0; !rc && i < c->connect.n; i++)
		rc = join(e, c, c->connect.v[i]);
	return rc;
}

void kit_env_close(struct kit_env *e)
{
	smart_ctx_destroy(e->ctx);
	smart_blade_destroy(e->embedded);
	e->ctx = NULL;
	e->embedded = NULL;
	if (e->log.held && !e->log.failed)
		fprintf(stderr,
			"%s: the library logged %u warning%s, the last: %s "
			"(--opt log_level=info prints them all)\n",
			e->log.tool, e->log.held, e->log.held > 1 ? "s" : "",
			e->log.last);
	if (e->log.tool)
		pthread_mutex_destroy(&e->log.lock);
	e->log.held = 0;
	e->log.tool = NULL;
}

const char *kit_env_kind(const struct kit_env *e)
{
	return e->embedded ? "embedded" : "connected";
}
