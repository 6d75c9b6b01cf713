/*
 * smart-stat: netstat for messaging endpoints (include/smart/rpc.h).
 *
 * Every endpoint listens on the abstract unix socket
 * "smart-stat:<pid>:<n>" and, to a client of its own user (or root),
 * writes one text document and closes (the format: docs/rpc.md §8).  This
 * tool finds those sockets in /proc/net/unix (listening ones only), reads
 * each answer within --timeout and prints one row per endpoint (its
 * totals) and one per connection, or --json.
 *
 * Invariants: an answer is parsed strictly (the version line, exactly the
 * keys of version 1 once each, decimal numbers without leading zeros,
 * %XX-escaped strings, at most max_conns connection lines, the "end" line
 * counting them, no NUL, nothing after "end"); anything else is reported
 * as that endpoint's error and never printed as data.  What is printed
 * is safe for a terminal and for a JSON parser whatever the endpoint
 * sent: numbers as we parsed them, strings JSON-escaped in --json, and
 * control bytes and bytes from 0x7f up as '?' in the table and in error
 * messages.  An answer is read up to ANSWER_MAX.  An endpoint is
 * believed only when the socket's owner (SO_PEERCRED) is the pid its name
 * says, since any process may bind any free abstract name.  Exit 0 when
 * every endpoint asked answered, 1 otherwise (or when --pid found none), 2
 * on bad usage.  Public API and the kit only.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "tool.h"
#include "smart/rpc.h"

#define TOOL	   "smart-stat"
#define PREFIX	   "smart-stat:"
/* A real answer is at most ~6.5 MiB: max_conns <= 4096 lines of at most
 * ~1.6 KiB, with every counter at its widest. */
#define ANSWER_MAX (8u << 20)
#define LINE_KEYS  64

struct stat_cfg {
	int pid; /* 0: every process of this user */
	int json;
	double timeout;
};

#define S struct stat_cfg
static const struct kit_flag stat_flags[] = {
	KIT_INT("pid", S, pid, 1, 4194304, "PID",
		"only this process [every process of this user]"),
	KIT_FLAG("json", S, json, "one JSON document instead of the table"),
	KIT_TIME("timeout", S, timeout, 0.001, 3600, "S",
		 "wait this long for each endpoint's answer [2]"),
	KIT_END,
};
#undef S

/* ---- finding the endpoints ---------------------------------------------- */

struct ep {
	long pid;
	unsigned n;
	char name[48]; /* "smart-stat:<pid>:<n>" */
	char *text;    /* the answer */
	size_t len;
	char err[160]; /* why it has none ("" when it has) */
	int gone;      /* closed since it was listed: left out */
};

/* The len bytes at s: digits only, no sign, no leading zero but in "0",
 * no overflow.  kit_parse_u64 refuses a sign, a space and overflow, but
 * takes leading zeros (strtoull) and wants a string that ends there. */
static int parse_u64(const char *s, size_t len, uint64_t *out)
{
	char d[21];

	if (!len || len >= sizeof(d) || (s[0] == '0' && len > 1))
		return -1;
	memcpy(d, s, len);
	d[len] = 0;
	return kit_parse_u64(d, 0, out);
}

/* "@smart-stat:<pid>:<n>" exactly. */
static int parse_name(const char *path, long *pid, unsigned *n)
{
	const char *p = path + 1 + strlen(PREFIX), *colon;
	uint64_t a, b;

	if (path[0] != '@' || strncmp(path + 1, PREFIX, strlen(PREFIX)))
		return -1;
	colon = strchr(p, ':');
	if (!colon || parse_u64(p, (size_t)(colon - p), &a) ||
	    parse_u64(colon + 1, strlen(colon + 1), &b) || !a || a > 4194304 ||
	    b > 1u << 20)
		return -1;
	*pid = (long)a;
	*n = (unsigned)b;
	return 0;
}

/* A process of another user is left out of the listing (its endpoints
 * would only say "denied"), unless we are root. */
static int ours(long pid)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%ld", pid);
	return !stat(path, &st) && (!geteuid() || st.st_uid == geteuid());
}

static int ep_cmp(const void *a, const void *b)
{
	const struct ep *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->n > y->n) - (x->n < y->n);
}

static int ep_add(struct ep **v, int *n, long pid, unsigned num)
{
	struct ep *e;

	for (int i = 0; i < *n; i++)
		if ((*v)[i].pid == pid && (*v)[i].n == num)
			return 0; /* listed twice */
	e = realloc(*v, (size_t)(*n + 1) * sizeof(**v));
	if (!e)
		return -1;
	*v = e;
	e = &e[(*n)++];
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->n = num;
	snprintf(e->name, sizeof(e->name), PREFIX "%ld:%u", pid, num);
	return 0;
}

/* The listening "@smart-stat:" sockets of /proc/net/unix (columns Num
 * RefCount Protocol Flags Type St Inode Path; flag 0x10000 is a listener;
 * accepted sockets carry their listener's name too). */
static int find_endpoints(const struct stat_cfg *c, struct ep **v, int *n)
{
	FILE *f = fopen("/proc/net/unix", "r");
	char line[512], path[256];
	unsigned long flags;
	unsigned num;
	long pid;

	if (!f) {
		fprintf(stderr, TOOL ": /proc/net/unix: %s\n", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %*s %lx %*s %*s %*s %255s", &flags,
			   path) != 2 ||
		    !(flags & 0x10000) || parse_name(path, &pid, &num))
			continue;
		if ((c->pid && pid != c->pid) || (!c->pid && !ours(pid)))
			continue;
		if (ep_add(v, n, pid, num)) {
			fclose(f);
			fprintf(stderr, TOOL ": out of memory\n");
			return -1;
		}
	}
	fclose(f);
	if (*n)
		qsort(*v, (size_t)*n, sizeof(**v), ep_cmp);
	return 0;
}

/* ---- asking one ----------------------------------------------------------- */

/* One non-blocking connect: the descriptor, -1 with errno set. */
static int try_connect(const char *name)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	size_t len = strlen(name);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0),
	    err;

	memcpy(un.sun_path + 1, name, len);
	if (fd >= 0 &&
	    connect(fd, (struct sockaddr *)&un,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				len))) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* Connect before end: a full backlog (EAGAIN: the endpoint takes a few
 * clients every 8 ms) is waited out, anything else is final.  The
 * socket must be owned by the pid its name says. */
static int ep_connect(struct ep *e, uint64_t end)
{
	struct ucred cr = { 0 };
	socklen_t cl = sizeof(cr);
	int fd;

	while ((fd = try_connect(e->name)) < 0 && errno == EAGAIN &&
	       smart_now_ns() < end)
		kit_sleep(0.001);
	if (fd < 0) {
		e->gone = errno == ECONNREFUSED;
		snprintf(e->err, sizeof(e->err), "%s",
			 errno == EAGAIN ?
				 "busy: too many clients are asking it" :
				 strerror(errno));
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) ||
	    cr.pid != e->pid) {
		snprintf(e->err, sizeof(e->err),
			 "the socket is held by pid "
			 "%ld, not %ld: ignored",
			 (long)cr.pid, e->pid);
		close(fd);
		return -1;
	}
	return fd;
}

/* Read until the endpoint closes, the deadline passes or the answer is
 * longer than ANSWER_MAX (the buffer doubles up to ANSWER_MAX + 2: a byte
 * more than the most we take, and the NUL). */
static void ep_read(struct ep *e, int fd, uint64_t end, double timeout)
{
	size_t cap = 0;

	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		uint64_t now = smart_now_ns();
		ssize_t r;

		if (now >= end) {
			snprintf(e->err, sizeof(e->err),
				 "no whole answer in "
				 "%g s (is its worker progressed?)",
				 timeout);
			return;
		}
		if (poll(&p, 1, (int)((end - now) / 1000000) + 1) <= 0)
			continue;
		if (cap - e->len < 2) {
			size_t want = cap ? 2 * cap : 65536;
			char *t;

			if (want > (size_t)ANSWER_MAX + 2)
				want = (size_t)ANSWER_MAX + 2;
			t = realloc(e->text, want);
			if (!t) {
				snprintf(e->err, sizeof(e->err),
					 "out of memory");
				return;
			}
			e->text = t;
			cap = want;
		}
		r = read(fd, e->text + e->len, cap - e->len - 1);
		if (r == 0)
			break;
		if (r < 0 && errno != EINTR && errno != EAGAIN) {
			snprintf(e->err, sizeof(e->err), "%s", strerror(errno));
			return;
		}
		e->len += r > 0 ? (size_t)r : 0;
		if (e->len > ANSWER_MAX) {
			snprintf(e->err, sizeof(e->err),
				 "answer longer than "
				 "%u MiB",
				 ANSWER_MAX >> 20);
			return;
		}
	}
	if (e->text)
		e->text[e->len] = 0;
}

/* Connect and read, both within timeout. */
static void ep_ask(struct ep *e, double timeout)
{
	uint64_t end = smart_now_ns() + (uint64_t)(timeout * 1e9);
	int fd = ep_connect(e, end);

	if (fd < 0)
		return;
	ep_read(e, fd, end, timeout);
	close(fd);
}

/* ---- parsing an answer (docs/rpc.md §8, version 1) -------------------- */

struct kv {
	const char *k;
	char *v;    /* a string unescaped; a number's digits */
	uint64_t u; /* a number's value: what is printed */
	int str;
};

struct line {
	int n;
	struct kv f[LINE_KEYS];
};

struct answer {
	struct line ep;
	struct line *conn;
	int nconn;
};

/* The keys of one kind of line: its strings, its numbers besides the
 * counters, and how many a line has (counted once, not per line). */
struct line_kind {
	const char *const *strs, *const *nums;
	int keys;
};

struct grammar {
	struct line_kind ep, conn;
};

static const char *const ep_strs[] = { "name", "listen", "transport", NULL };
static const char *const ep_nums[] = { "pid",
				       "live",
				       "max_conns",
				       "window",
				       "eager_max",
				       "keepalive_ms",
				       "keepalive_misses",
				       "uptime_ms",
				       "stat_answers",
				       "stat_denied",
				       "stat_evicted",
				       "stat_truncated",
				       NULL };
static const char *const conn_strs[] = { "state", "role", "peer", NULL };
static const char *const conn_nums[] = { "index",  "gen",      "window",
					 "swin",   "inflight", "backlog_bytes",
					 "rtt_ns", "idle_ms",  "age_ms",
					 NULL };

static int in_list(const char *const *l, const char *k)
{
	for (; *l; l++)
		if (!strcmp(*l, k))
			return 1;
	return 0;
}

static int list_len(const char *const *l)
{
	int n = 0;

	while (l[n])
		n++;
	return n;
}

/* 1 a string key, 2 a number, 0 not a key of this line. */
static int key_kind(const struct line_kind *lk, const char *k)
{
	if (in_list(lk->strs, k))
		return 1;
	if (in_list(lk->nums, k))
		return 2;
	for (unsigned i = 0; smart_rpc_stats_field(i); i++)
		if (!strcmp(smart_rpc_stats_field(i), k))
			return 2;
	return 0;
}

static int counters(void)
{
	unsigned i = 0;

	while (smart_rpc_stats_field(i))
		i++;
	return (int)i;
}

static struct line_kind line_kind(const char *const *strs,
				  const char *const *nums)
{
	return (struct line_kind){
		strs, nums, list_len(strs) + list_len(nums) + counters()
	};
}

static int hex(char c)
{
	return c >= '0' && c <= '9' ? c - '0' :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 :
				      -1;
}

/* Undo the %XX escapes in place; a raw byte that should have been
 * escaped, a bad escape or a NUL fails.  Any other byte may come out
 * (a control byte too): what prints a string makes it safe. */
static int unescape(char *v)
{
	char *o = v;

	for (; *v; v++) {
		unsigned char ch = (unsigned char)*v;

		if (ch <= ' ' || ch >= 0x7f || ch == '=')
			return -1;
		if (ch == '%') {
			if (hex(v[1]) < 0 || hex(v[2]) < 0 ||
			    !(hex(v[1]) | hex(v[2])))
				return -1;
			ch = (unsigned char)(hex(v[1]) * 16 + hex(v[2]));
			v += 2;
		}
		*o++ = (char)ch;
	}
	*o = 0;
	return 0;
}

/* One "key=value" of a line, in place. */
static int parse_field(char *tok, const struct line_kind *lk, struct line *l,
		       char *why, size_t wl)
{
	char *eq = strchr(tok, '=');
	struct kv *f;
	int kind;

	if (!eq || l->n == LINE_KEYS)
		return snprintf(why, wl, "malformed field '%.40s'", tok), -1;
	*eq = 0;
	kind = key_kind(lk, tok);
	if (!kind)
		return snprintf(why, wl, "unknown key '%.40s'", tok), -1;
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->f[i].k, tok))
			return snprintf(why, wl, "key '%.40s' twice", tok), -1;
	f = &l->f[l->n++];
	f->k = tok;
	f->v = eq + 1;
	f->u = 0;
	f->str = kind == 1;
	if (f->str ? unescape(f->v) : parse_u64(f->v, strlen(f->v), &f->u))
		return snprintf(why, wl, "bad value of '%.40s'%s", tok,
				f->str ? "" :
					 " (not a decimal number "
					 "without leading zeros)"),
		       -1;
	return 0;
}

/* " k=v k=v..." (after the line's word) into l, in place: one space
 * before each field, every key of the line exactly once. */
static int parse_fields(char *s, const struct line_kind *lk, struct line *l,
			char *why, size_t wl)
{
	l->n = 0;
	if (*s++ != ' ')
		return snprintf(why, wl, "malformed line"), -1;
	for (;;) {
		char *sp = strchr(s, ' ');

		if (sp)
			*sp = 0;
		if (parse_field(s, lk, l, why, wl))
			return -1;
		if (!sp)
			break;
		s = sp + 1;
	}
	if (l->n != lk->keys)
		return snprintf(why, wl,
				"keys missing (another libsmart "
				"version?)"),
		       -1;
	return 0;
}

/* A parsed line has every key of its kind: NULL only for a key of
 * another kind. */
static const struct kv *field(const struct line *l, const char *k)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->f[i].k, k))
			return &l->f[i];
	return NULL;
}

static const char *get(const struct line *l, const char *k)
{
	const struct kv *f = field(l, k);

	return f ? f->v : "";
}

static uint64_t num(const struct line *l, const char *k)
{
	const struct kv *f = field(l, k);

	return f ? f->u : 0;
}

/* The next line of the text (its '\n' cut), or NULL at the end. */
static char *next_line(char **cur)
{
	char *s = *cur, *nl;

	if (!*s)
		return NULL;
	nl = strchr(s, '\n');
	if (!nl)
		return NULL; /* an unfinished line: truncated */
	*nl = 0;
	*cur = nl + 1;
	return s;
}

/* The connection lines, at most max (the endpoint's max_conns, which
 * bounds what it can have), then "end"; the array doubles as it fills. */
static int parse_conns(char **cur, const struct line_kind *lk, uint64_t max,
		       struct answer *a, char *why, size_t wl)
{
	size_t cap = 0;
	char *s;
	uint64_t n;

	while ((s = next_line(cur)) && !strncmp(s, "conn ", 5)) {
		if ((uint64_t)a->nconn == max)
			return snprintf(why, wl,
					"more connection lines than "
					"its max_conns (%" PRIu64 ")",
					max),
			       -1;
		if ((size_t)a->nconn == cap) {
			size_t want = cap ? 2 * cap : 16;
			struct line *t;

			if (want > max)
				want = (size_t)max;
			t = realloc(a->conn, want * sizeof(*t));
			if (!t)
				return snprintf(why, wl, "out of memory"), -1;
			a->conn = t;
			cap = want;
		}
		if (parse_fields(s + 4, lk, &a->conn[a->nconn++], why, wl))
			return -1;
	}
	if (!s)
		return snprintf(why, wl,
				"truncated answer (the endpoint "
				"gave up waiting for us?)"),
		       -1;
	/* the text has no NUL (parse_answer): at its NUL is its end */
	if (strncmp(s, "end conns=", 10) ||
	    parse_u64(s + 10, strlen(s + 10), &n) || n != (uint64_t)a->nconn ||
	    **cur)
		return snprintf(why, wl, "malformed end of answer"), -1;
	return 0;
}

static int parse_answer(struct ep *e, const struct grammar *g, struct answer *a)
{
	char *cur = e->text, *s;

	memset(a, 0, sizeof(*a));
	/* a NUL would end the parse early, and what follows it unread */
	if (cur && memchr(cur, 0, e->len))
		return snprintf(e->err, sizeof(e->err),
				"a NUL byte in the "
				"answer"),
		       -1;
	if (!cur || !(s = next_line(&cur)) || strncmp(s, "smart-stat ", 11))
		return snprintf(e->err, sizeof(e->err),
				"not a smart-stat "
				"answer"),
		       -1;
	if (strcmp(s + 11, "1"))
		return snprintf(e->err, sizeof(e->err),
				"answer version %.16s"
				" (this smart-stat reads 1)",
				s + 11),
		       -1;
	s = next_line(&cur);
	if (s && !strcmp(s, "denied"))
		return snprintf(e->err, sizeof(e->err),
				"permission denied: "
				"it answers only its own user and root"),
		       -1;
	if (!s || strncmp(s, "endpoint ", 9))
		return snprintf(e->err, sizeof(e->err), "no endpoint line"), -1;
	if (parse_fields(s + 8, &g->ep, &a->ep, e->err, sizeof(e->err)) ||
	    parse_conns(&cur, &g->conn, num(&a->ep, "max_conns"), a, e->err,
			sizeof(e->err)))
		return -1;
	if (num(&a->ep, "pid") != (uint64_t)e->pid)
		return snprintf(e->err, sizeof(e->err),
				"answer of pid %" PRIu64 ", not %ld",
				num(&a->ep, "pid"), e->pid),
		       -1;
	return 0;
}

/* ---- output ----------------------------------------------------------- */

/* Bytes a terminal may act on (controls, DEL, and from 0x80 up, which
 * some take as C1 controls) become '?': for what the endpoint sent that
 * goes to the table or to an error message. */
static void safe(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			*s = '?';
}

/* An endpoint's error on stderr (it may quote the endpoint's bytes). */
static void err_print(const struct ep *e)
{
	char why[sizeof(e->err)];

	memcpy(why, e->err, sizeof(why));
	safe(why);
	fprintf(stderr, TOOL ": %s: %s\n", e->name, why);
}

static void json_fields(const struct line *l)
{
	for (int i = 0; i < l->n; i++) {
		printf("%s", i ? "," : "");
		kit_json_str(l->f[i].k, stdout);
		putchar(':');
		if (l->f[i].str)
			kit_json_str(l->f[i].v, stdout);
		else
			printf("%" PRIu64, l->f[i].u);
	}
}

static void json_ep(const struct ep *e, const struct answer *a, int first)
{
	printf("%s\n{", first ? "" : ",");
	if (e->err[0]) {
		printf("\"pid\":%ld,\"name\":", e->pid);
		kit_json_str(e->name, stdout);
		printf(",\"error\":");
		kit_json_str(e->err, stdout);
		putchar('}');
		return;
	}
	json_fields(&a->ep);
	printf(",\"conns\":[");
	for (int i = 0; i < a->nconn; i++) {
		printf("%s{", i ? "," : "");
		json_fields(&a->conn[i]);
		putchar('}');
	}
	printf("]}");
}

/* The table: one row per endpoint (its totals) and per connection. */
enum {
	C_EP,
	C_IDX,
	C_STATE,
	C_ROLE,
	C_PEER,
	C_WIN,
	C_MTX,
	C_MRX,
	C_BTX,
	C_BRX,
	C_CALLS,
	C_ERR,
	C_TMO,
	C_STALL,
	C_BL,
	C_RNR,
	C_KAP,
	C_KAF,
	C_RTT,
	C_AGE,
	NCOL
};
static const char *const heads[NCOL] = {
	"ENDPOINT", "IDX",	 "STATE",    "ROLE",	 "PEER",
	"WIN",	    "MSGS_TX",	 "MSGS_RX",  "BYTES_TX", "BYTES_RX",
	"CALLS",    "ERRS",	 "TMOS",     "STALLS",	 "BACKLOG",
	"RNR",	    "KA_PROBES", "KA_FAILS", "RTT_US",	 "AGE_S"
};
static const char *const keys[NCOL] = { NULL,
					"index",
					"state",
					"role",
					"peer",
					"window",
					"msgs_sent",
					"msgs_recv",
					"bytes_sent",
					"bytes_recv",
					"calls",
					"call_errors",
					"call_timeouts",
					"window_stalls",
					"backlog_bytes",
					"rnr",
					"ka_probes",
					"ka_failures",
					NULL,
					NULL };

struct row {
	char c[NCOL][72];
};

/* A cell: a number as parsed, a string made safe; "-" for no key. */
static void cell(char *c, size_t n, const struct line *l, const char *k)
{
	const struct kv *f = k ? field(l, k) : NULL;

	if (!f)
		snprintf(c, n, "-");
	else if (f->str)
		snprintf(c, n, "%s", f->v);
	else
		snprintf(c, n, "%" PRIu64, f->u);
	safe(c);
}

static void row_fill(struct row *r, const struct ep *e, const struct line *l,
		     int is_ep)
{
	for (int i = 0; i < NCOL; i++)
		cell(r->c[i], sizeof(r->c[i]), l, keys[i]);
	snprintf(r->c[C_EP], sizeof(r->c[C_EP]), "%ld:%u", e->pid, e->n);
	if (is_ep) {
		snprintf(r->c[C_IDX], sizeof(r->c[C_IDX]), "-");
		snprintf(r->c[C_STATE], sizeof(r->c[C_STATE]), "%s",
			 strcmp(get(l, "listen"), "-") ? "listen" : "open");
		snprintf(r->c[C_ROLE], sizeof(r->c[C_ROLE]), "endpoint");
		cell(r->c[C_PEER], sizeof(r->c[C_PEER]), l, "listen");
		snprintf(r->c[C_BL], sizeof(r->c[C_BL]), "-");
		snprintf(r->c[C_AGE], sizeof(r->c[C_AGE]), "%.1f",
			 (double)num(l, "uptime_ms") / 1e3);
		return;
	}
	if (num(l, "rtt_ns"))
		snprintf(r->c[C_RTT], sizeof(r->c[C_RTT]), "%.1f",
			 (double)num(l, "rtt_ns") / 1e3);
	snprintf(r->c[C_AGE], sizeof(r->c[C_AGE]), "%.1f",
		 (double)num(l, "age_ms") / 1e3);
}

static void table_print(const struct row *r, int n)
{
	int w[NCOL];

	for (int i = 0; i < NCOL; i++) {
		w[i] = (int)strlen(heads[i]);
		for (int j = 0; j < n; j++)
			if ((int)strlen(r[j].c[i]) > w[i])
				w[i] = (int)strlen(r[j].c[i]);
	}
	for (int j = -1; j < n; j++) {
		for (int i = 0; i < NCOL; i++) {
			const char *s = j < 0 ? heads[i] : r[j].c[i];

			/* text left, numbers right, as netstat */
			printf(i <= C_PEER ? "%-*s%s" : "%*s%s", w[i], s,
			       i + 1 < NCOL ? "  " : "\n");
		}
	}
}

static int table(const struct ep *v, const struct answer *a, int n)
{
	struct row *r;
	int rows = 0, k = 0;

	for (int i = 0; i < n; i++)
		rows += v[i].err[0] ? 0 : 1 + a[i].nconn;
	r = calloc((size_t)rows + 1, sizeof(*r));
	if (!r)
		return fprintf(stderr, TOOL ": out of memory\n"), -1;
	for (int i = 0; i < n; i++) {
		if (v[i].err[0])
			continue;
		row_fill(&r[k++], &v[i], &a[i].ep, 1);
		for (int j = 0; j < a[i].nconn; j++)
			row_fill(&r[k++], &v[i], &a[i].conn[j], 0);
	}
	table_print(r, rows); /* the header even alone, as netstat */
	free(r);
	return 0;
}

/* ---- main --------------------------------------------------------------- */

static void parse(int argc, char **argv, struct stat_cfg *c)
{
	struct kit_cli cli = {
		.tool = TOOL,
		.synopsis = TOOL " [--pid PID] [--json] [--timeout S]",
		.about = "  The messaging endpoints of this user's processes (or "
			 "of one): each with its\n  totals and one row per "
			 "connection: state, peer, messages, bytes, calls,\n"
			 "  window stalls, backlog, RNR, keepalive, RTT of the "
			 "last keepalive PING.\n",
		.group = { { stat_flags, c, NULL } },
	};

	kit_parse(&cli, argc, argv);
}

/* --pid P that found no endpoint: say why. */
static int none_found(const struct stat_cfg *c)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", c->pid);
	if (stat(path, &st))
		fprintf(stderr, TOOL ": no such process: %d\n", c->pid);
	else
		fprintf(stderr,
			TOOL ": process %d has no messaging endpoint "
			     "(no @" PREFIX "%d:* socket in /proc/net/unix)\n",
			c->pid, c->pid);
	if (c->json)
		printf("{\"version\":1,\"endpoints\":[]}\n");
	return 1;
}

/* Ask every endpoint; those closed since they were listed are left
 * out (their process ended meanwhile).  Returns how many are left. */
static int ask_all(struct ep *v, int n, double timeout)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		ep_ask(&v[i], timeout);
		if (v[i].gone)
			free(v[i].text);
		else
			v[k++] = v[i];
	}
	return k;
}

int main(int argc, char **argv)
{
	struct stat_cfg c = { .timeout = 2 };
	const struct grammar g = { line_kind(ep_strs, ep_nums),
				   line_kind(conn_strs, conn_nums) };
	struct answer *a = NULL;
	struct ep *v = NULL;
	int n = 0, failed = 0;

	parse(argc, argv, &c);
	if (find_endpoints(&c, &v, &n))
		return 1;
	n = ask_all(v, n, c.timeout);
	if (c.pid && !n)
		return none_found(&c);
	a = calloc((size_t)n + 1, sizeof(*a));
	if (!a)
		return fprintf(stderr, TOOL ": out of memory\n"), 1;
	for (int i = 0; i < n; i++) {
		if (!v[i].err[0])
			parse_answer(&v[i], &g, &a[i]);
		if (v[i].err[0] && !c.json)
			err_print(&v[i]);
		failed += v[i].err[0] != 0;
	}
	if (c.json) {
		printf("{\"version\":1,\"endpoints\":[");
		for (int i = 0; i < n; i++)
			json_ep(&v[i], &a[i], !i);
		printf("\n]}\n");
	} else if (table(v, a, n)) {
		failed++;
	}
	/* a bare header said nothing of what was looked at (issue 29: say
	 * what was found); still exit 0, as netstat with no socket */
	if (!n && !c.json && !SMART_M_TOOL_STAT_SILENT_NONE)
		printf("(none: no process of this user has an @" PREFIX
		       "* socket in /proc/net/unix)\n");
	for (int i = 0; i < n; i++) {
		free(a[i].conn);
		free(v[i].text);
	}
	free(a);
	free(v);
	return failed ? 1 : 0;
}
