/*
 * Options: one declarative table of every key (name, kind, default, range,
 * documentation, where the parsed value lives).  Defaults, the SMART_<KEY>
 * environment variables and smart_opts_set() all go through the same parser,
 * so a value is checked the same way wherever it comes from.  A value that
 * fails to parse leaves the previous one in place.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime/core.h"
#include "util/mutant.h"

enum opt_kind {
	OPT_STR,
	OPT_INT,
	OPT_SIZE,
	OPT_TIME,
	OPT_QPMODE,
	OPT_HUGE,
	OPT_LOGLEVEL,
	OPT_TRANSPORT,
	OPT_TECH,
	OPT_GIDTYPE
};

static const struct {
	const char *name;
	int bit;
} tech_names[] = {
	{ "ThrdAwareAlloc", SMART_TECH_THRD_AWARE_ALLOC },
	{ "WorkReqThrot", SMART_TECH_WORK_REQ_THROT },
	{ "ConflictAvoid", SMART_TECH_CONFLICT_AVOID },
	{ "SpecLookup", SMART_TECH_SPEC_LOOKUP },
};

/* Sanitizer builds have frames several times larger (redzones, no
 * optimisation): give coroutines more stack there. */
#if defined(__SANITIZE_ADDRESS__)
#define SMART_TASK_STACK_DEFAULT "512K"
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SMART_TASK_STACK_DEFAULT "512K"
#endif
#endif
#ifndef SMART_TASK_STACK_DEFAULT
#define SMART_TASK_STACK_DEFAULT "64K"
#endif

struct opt_def {
	const char *name;
	enum opt_kind kind;
	const char *def;
	int64_t min, max; /* numeric kinds */
	size_t off;	  /* offset in struct smart__optvals */
	size_t cap;	  /* string capacity */
	const char *doc;
};

#define OFF(f) offsetof(struct smart__optvals, f)
#define CAP(f) sizeof(((struct smart__optvals *)0)->f)

static const struct opt_def opt_table[] = {
	{ "transport", OPT_TRANSPORT, "shm", 0, 0, OFF(transport),
	  CAP(transport),
	  "transport: shm (one host), verbs (RDMA) or sim (shm in "
	  "virtual time, docs/sim.md)" },
	{ "techniques", OPT_TECH,
	  "ThrdAwareAlloc,WorkReqThrot,ConflictAvoid,"
	  "SpecLookup",
	  0, 0, OFF(techniques), 0,
	  "Smart's techniques switched on, comma separated, or None (all off); "
	  "any other name is refused" },
	{ "qp_mode", OPT_QPMODE, "auto", 0, 0, OFF(qp_mode), 0,
	  "QP allocation: shared | mux:K | per-thread | per-thread-db | auto "
	  "(per-thread-db with ThrdAwareAlloc, else per-thread)" },
	{ "credit", OPT_INT, "0", 0, 4096, OFF(credit), 0,
	  "WorkReqThrot: fixed cap on WRs in flight per worker; 0 = tuner" },
	{ "tune_interval", OPT_TIME, "8ms", 100000, INT64_C(10) * 1000000000,
	  OFF(tune_interval_ns), 0, "WorkReqThrot: the tuner's epoch (delta)" },
	{ "stable_epochs", OPT_INT, "60", 1, 100000, OFF(stable_epochs), 0,
	  "WorkReqThrot: epochs a chosen cap is kept before retuning" },
	{ "backoff_window", OPT_TIME, "1ms", 10000, INT64_C(10) * 1000000000,
	  OFF(backoff_window_ns), 0,
	  "ConflictAvoid: window of the retry-rate adaptation" },
	{ "conflict_level", OPT_INT, "3", 1, 3, OFF(conflict_level), 0,
	  "ConflictAvoid's parts (Smart Fig 14): 1 backoff with a fixed cap "
	  "(C_limit), 2 + dynamic limit, 3 + coroutine throttling" },
	{ "max_tasks", OPT_INT, "64", 1, 1024, OFF(max_tasks), 0,
	  "coroutines per worker" },
	{ "spin", OPT_TIME, "20us", 0, INT64_C(3600) * 1000000000, OFF(spin_ns),
	  0,
	  "a waiting worker polls this long finding nothing, "
	  "then yields the CPU at each empty poll (sched_yield: an "
	  "oversubscribed CPU goes to the peer it waits for)" },
	{ "task_stack", OPT_SIZE, SMART_TASK_STACK_DEFAULT, 16 << 10, 64 << 20,
	  OFF(task_stack), 0, "coroutine stack size (plus one guard page)" },
	{ "chain_max", OPT_INT, "16", 1, 64, OFF(chain_max), 0,
	  "WRs per chain before an implicit post" },
	{ "qp_depth", OPT_INT, "512", 16, 65536, OFF(qp_depth), 0,
	  "send-queue entries per QP" },
	{ "cq_depth", OPT_INT, "4096", 64, 1 << 20, OFF(cq_depth), 0,
	  "completion-queue entries per CQ" },
	{ "buf_pool", OPT_SIZE, "64M", 1 << 20, INT64_C(1) << 40, OFF(buf_pool),
	  0, "registered local buffer pool per ctx" },
	{ "hugepages", OPT_HUGE, "auto", 0, 0, OFF(hugepages), 0,
	  "huge pages for registered memory: auto | on | off" },
	{ "secret_file", OPT_STR, "", 0, 0, OFF(secret_file), CAP(secret_file),
	  "file with the blades' shared secret" },
	{ "connect_timeout", OPT_TIME, "5s", 1000000,
	  INT64_C(3600) * 1000000000, OFF(connect_timeout_ns), 0,
	  "bootstrap connect/handshake timeout" },
	{ "log_level", OPT_LOGLEVEL, "warn", 0, 0, OFF(log_level), 0,
	  "error | warn | info | debug" },
	{ "latency_stats", OPT_INT, "1", 0, 1, OFF(latency_stats), 0,
	  "1 = keep a sync latency histogram in the stats" },
	{ "nic_model", OPT_STR, "", 0, 0, OFF(nic_model), CAP(nic_model),
	  "shm: RNIC model, 'default' or key=value,... (docs/nic-model.md); "
	  "empty = off" },
	{ "shm_adversarial", OPT_STR, "", 0, 0, OFF(shm_adversarial),
	  CAP(shm_adversarial),
	  "shm: adversarial mode for tests, 'on' or "
	  "key=value,... (docs/transport.md); empty = off" },
	{ "device", OPT_STR, "", 0, 0, OFF(device), CAP(device),
	  "verbs: RDMA device (empty = first with an active port)" },
	{ "ib_port", OPT_INT, "0", 0, 255, OFF(ib_port), 0,
	  "verbs: port number (0 = first active)" },
	{ "gid_index", OPT_INT, "-1", -1, 1023, OFF(gid_index), 0,
	  "verbs: GID index (-1 = a RoCE v2 GID on Ethernet)" },
	{ "mtu", OPT_INT, "0", 0, 4096, OFF(mtu), 0,
	  "verbs: path MTU in bytes, 256..4096 (0 = the port's)" },
	{ "ib_timeout", OPT_INT, "14", 1, 31, OFF(ib_timeout), 0,
	  "verbs: ACK timeout 4.096us x 2^N (14 = 67 ms); bounds how long "
	  "a sync waits for a dead blade, with ib_retry" },
	{ "ib_retry", OPT_INT, "6", 1, 7, OFF(ib_retry), 0,
	  "verbs: transport retries before an op fails (7: for ever on "
	  "Soft-RoCE, which voids the lease bound)" },
	{ "traffic_class", OPT_INT, "0", 0, 255, OFF(traffic_class), 0,
	  "verbs: GRH traffic class, 0..255 (RoCE v2: DSCP << 2 | ECN)" },
	{ "service_level", OPT_INT, "0", 0, 15, OFF(service_level), 0,
	  "verbs: service level, 0..15 (IB SL; RoCE: priority with a VLAN)" },
	{ "gid_type", OPT_GIDTYPE, "auto", 0, 0, OFF(gid_type), 0,
	  "verbs: auto | roce-v2 | roce-v1 | ib (auto: RoCE v2 on Ethernet, "
	  "LID routing on InfiniBand)" },
};

static const struct opt_def *opt_find(const char *key)
{
	size_t i;

	for (i = 0; i < SMART_ARRAY_SIZE(opt_table); i++)
		if (!strcmp(opt_table[i].name, key))
			return &opt_table[i];
	return NULL;
}

/* "64", "64K", "1G", ... into bytes; binary multiples. */
static int parse_size(const char *s, int64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		shift = 10;
		end++;
		break;
	case 'M':
		shift = 20;
		end++;
		break;
	case 'G':
		shift = 30;
		end++;
		break;
	case 'T':
		shift = 40;
		end++;
		break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > (UINT64_C(1) << 62) >> shift)
		return -1;
	*out = (int64_t)(v << shift);
	return 0;
}

/* "5s", "100ms", "20us", "300ns" (a bare number is seconds) into ns. */
static int parse_time(const char *s, int64_t *out)
{
	static const struct {
		const char *sfx;
		int64_t mul;
	} u[] = {
		{ "ns", 1 },	     { "us", 1000 },	 { "ms", 1000000 },
		{ "s", 1000000000 }, { "", 1000000000 },
	};
	char *end;
	double v;
	size_t i;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || v < 0)
		return -1;
	for (i = 0; i < SMART_ARRAY_SIZE(u); i++) {
		if (strcmp(end, u[i].sfx))
			continue;
		if (v * (double)u[i].mul > 9e18)
			return -1;
		*out = (int64_t)(v * (double)u[i].mul);
		return 0;
	}
	return -1;
}

static int parse_int(const char *s, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -1;
	*out = v;
	return 0;
}

/* Names of the techniques, comma separated ("None", any case, turns
 * nothing on: Smart's convention, SMART_TECHNIQUES=None is all off); -1
 * for any other token.  An unknown name used to be warned about and
 * ignored, so a typo ran with fewer techniques than asked and exit 0
 * (issue 29): it is bad input, refused like any other option value. */
static int parse_tech(const char *s)
{
	char buf[256], *tok, *save = NULL;
	int bits = 0;
	size_t i;

	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ", ", &save); tok;
	     tok = strtok_r(NULL, ", ", &save)) {
		for (i = 0; i < SMART_ARRAY_SIZE(tech_names); i++)
			if (!strcmp(tok, tech_names[i].name))
				break;
		if (i < SMART_ARRAY_SIZE(tech_names))
			bits |= tech_names[i].bit;
		else if (strcasecmp(tok, "none") && !SMART_M_OPTS_TECH_TYPO)
			return -1;
	}
	return bits;
}

void smart__tech_format(int bits, char *buf, size_t len)
{
	size_t i, n = 0;

	buf[0] = 0;
	for (i = 0; i < SMART_ARRAY_SIZE(tech_names); i++)
		if (bits & tech_names[i].bit)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0,
					      "%s%s", n ? "," : "",
					      tech_names[i].name);
	if (!n)
		snprintf(buf, len, "None");
}

static int parse_qpmode(const char *s, int *mode, int *k)
{
	int64_t v;

	if (!strcmp(s, "auto"))
		*mode = SMART_QPM_AUTO, *k = 1;
	else if (!strcmp(s, "shared"))
		*mode = SMART_QPM_SHARED, *k = 0;
	else if (!strcmp(s, "per-thread"))
		*mode = SMART_QPM_PER_THREAD, *k = 1;
	else if (!strcmp(s, "per-thread-db"))
		*mode = SMART_QPM_PER_THREAD_DB, *k = 1;
	else if (!strncmp(s, "mux:", 4) && !parse_int(s + 4, &v) && v >= 1 &&
		 v <= 4096)
		*mode = SMART_QPM_MUX, *k = (int)v;
	else
		return -1;
	return 0;
}

static int opt_parse_num(const struct opt_def *d, const char *val, int64_t *v)
{
	int rc = d->kind == OPT_SIZE ? parse_size(val, v) :
		 d->kind == OPT_TIME ? parse_time(val, v) :
				       parse_int(val, v);

	return rc || *v < d->min || *v > d->max ? -1 : 0;
}

static int opt_apply(struct smart__optvals *o, const struct opt_def *d,
		     const char *val)
{
	char *p = (char *)o + d->off;
	int64_t v;
	int a, b;

	switch (d->kind) {
	case OPT_STR:
	case OPT_TRANSPORT:
		if (strlen(val) >= d->cap ||
		    (d->kind == OPT_TRANSPORT && !smart__tp_known(val)))
			return SMART_EINVAL;
		/* a bad model is bad input when given, not a failed ctx
		 * later (the ctx parses it again, the same way) */
		if (d->off == OFF(nic_model) && !SMART_M_OPTS_NIC_MODEL_LATE &&
		    smart__tp_nic_model_check(val))
			return SMART_EINVAL;
		strcpy(p, val);
		return 0;
	case OPT_QPMODE:
		if (parse_qpmode(val, &a, &b))
			return SMART_EINVAL;
		o->qp_mode = a;
		o->qp_mux = b;
		return 0;
	case OPT_HUGE:
		a = !strcmp(val, "auto") ? -1 :
		    !strcmp(val, "on")	 ? 1 :
		    !strcmp(val, "off")	 ? 0 :
					   -2;
		if (a == -2)
			return SMART_EINVAL;
		*(int *)p = a;
		return 0;
	case OPT_LOGLEVEL:
	case OPT_GIDTYPE: /* a name of a few, parsed by its owner */
		a = d->kind == OPT_LOGLEVEL ? smart__log_parse_level(val) :
					      smart__tp_gid_type_parse(val);
		if (a < 0)
			return SMART_EINVAL;
		*(int *)p = a;
		return 0;
	case OPT_TECH:
		a = strlen(val) > 200 ? -1 : parse_tech(val);
		if (a < 0)
			return SMART_EINVAL;
		*(int *)p = a;
		return 0;
	default:
		if (opt_parse_num(d, val, &v))
			return SMART_EINVAL;
		/* a path MTU is one of 256, 512, 1024, 2048, 4096 (or 0) */
		if (d->off == OFF(mtu) && v && (v < 256 || (v & (v - 1))))
			return SMART_EINVAL;
		if (d->kind == OPT_INT)
			*(int *)p = (int)v;
		else
			*(uint64_t *)p = (uint64_t)v;
		return 0;
	}
}

static void smart__opts_defaults(struct smart__optvals *v)
{
	size_t i;

	memset(v, 0, sizeof(*v));
	for (i = 0; i < SMART_ARRAY_SIZE(opt_table); i++)
		opt_apply(v, &opt_table[i], opt_table[i].def);
}

int smart_opts_create_defaults(smart_opts_t **out)
{
	smart_opts_t *o;

	if (!out)
		return SMART_EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return SMART_ENOMEM;
	smart__opts_defaults(&o->v);
	*out = o;
	return 0;
}

int smart_opts_create(smart_opts_t **out)
{
	char env[64];
	size_t i, j;
	int rc = smart_opts_create_defaults(out);

	for (i = 0; !rc && i < SMART_ARRAY_SIZE(opt_table); i++) {
		const char *name = opt_table[i].name, *val;

		snprintf(env, sizeof(env), "SMART_%s", name);
		for (j = 6; env[j]; j++)
			env[j] = (char)toupper((unsigned char)env[j]);
		val = getenv(env);
		if (!val || smart_opts_set(*out, name, val) == 0)
			continue;
		smart__err(NULL, "bad value '%s' in %s (%s)", val, env,
			   opt_table[i].doc);
		smart_opts_destroy(*out);
		*out = NULL;
		rc = SMART_EINVAL;
	}
	return rc;
}

int smart_opts_destroy(smart_opts_t *o)
{
	free(o);
	return 0;
}

int smart_opts_set(smart_opts_t *o, const char *key, const char *value)
{
	const struct opt_def *d;

	if (!o || !key || !value)
		return SMART_EINVAL;
	d = opt_find(key);
	if (!d)
		return SMART_ENOENT;
	return opt_apply(&o->v, d, value);
}

int smart_opts_set_kv(smart_opts_t *o, const char *kv)
{
	const char *eq = kv ? strchr(kv, '=') : NULL;
	char key[64];

	if (!o || !eq || eq == kv || (size_t)(eq - kv) >= sizeof(key))
		return SMART_EINVAL;
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = '\0';
	return smart_opts_set(o, key, eq + 1);
}

const char *smart__qp_mode_name(int mode)
{
	switch (mode) {
	case SMART_QPM_AUTO:
		return "auto";
	case SMART_QPM_SHARED:
		return "shared";
	case SMART_QPM_MUX:
		return "mux";
	case SMART_QPM_PER_THREAD:
		return "per-thread";
	default:
		return "per-thread-db";
	}
}

static void opt_format(const struct smart__optvals *o, const struct opt_def *d,
		       char *buf, size_t len)
{
	static const char *const levels[] = { "error", "warn", "info",
					      "debug" };
	const char *p = (const char *)o + d->off;

	switch (d->kind) {
	case OPT_STR:
	case OPT_TRANSPORT:
		snprintf(buf, len, "%s", p);
		break;
	case OPT_QPMODE:
		if (o->qp_mode == SMART_QPM_MUX)
			snprintf(buf, len, "mux:%d", o->qp_mux);
		else
			snprintf(buf, len, "%s",
				 smart__qp_mode_name(o->qp_mode));
		break;
	case OPT_TECH:
		smart__tech_format(*(const int *)p, buf, len);
		break;
	case OPT_HUGE:
		snprintf(buf, len, "%s",
			 *(const int *)p < 0 ? "auto" :
			 *(const int *)p     ? "on" :
					       "off");
		break;
	case OPT_LOGLEVEL:
		snprintf(buf, len, "%s", levels[*(const int *)p & 3]);
		break;
	case OPT_GIDTYPE:
		snprintf(buf, len, "%s",
			 smart__tp_gid_type_name(*(const int *)p));
		break;
	case OPT_INT:
		snprintf(buf, len, "%d", *(const int *)p);
		break;
	case OPT_TIME:
		snprintf(buf, len, "%" PRIu64 "ns", *(const uint64_t *)p);
		break;
	case OPT_SIZE:
		snprintf(buf, len, "%" PRIu64, *(const uint64_t *)p);
		break;
	}
}

int smart_opts_get(const smart_opts_t *o, const char *key, char *buf,
		   size_t len)
{
	const struct opt_def *d;
	char tmp[1100];

	if (!o || !key || !buf)
		return SMART_EINVAL;
	d = opt_find(key);
	if (!d)
		return SMART_ENOENT;
	opt_format(&o->v, d, tmp, sizeof(tmp));
	if (strlen(tmp) >= len)
		return SMART_ERANGE;
	strcpy(buf, tmp);
	return 0;
}

void smart_opts_print(const smart_opts_t *o, FILE *f)
{
	char cur[1100];
	size_t i;

	fprintf(f, "%-16s %-14s %-14s %s\n", "key", "value", "default",
		"description (env SMART_<KEY>)");
	for (i = 0; i < SMART_ARRAY_SIZE(opt_table); i++) {
		opt_format(&o->v, &opt_table[i], cur, sizeof(cur));
		fprintf(f, "%-16s %-14s %-14s %s\n", opt_table[i].name, cur,
			opt_table[i].def, opt_table[i].doc);
	}
}

int smart_log_set_handler(smart_opts_t *o, smart_log_fn fn, void *arg)
{
	if (!o)
		return SMART_EINVAL;
	o->v.log_fn = fn;
	o->v.log_arg = fn ? arg : NULL;
	return 0;
}
