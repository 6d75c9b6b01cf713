/*
 * smartd: a memory blade daemon.  Parses options, loads the shared secret,
 * creates a blade (include/smart/blade.h) and serves until SIGINT or
 * SIGTERM, then shuts down cleanly and exits 0.
 *
 * Security rule: a blade without a secret accepts any local process.  That
 * is allowed only with --insecure AND a loopback listen address; otherwise
 * smartd refuses to start (exit 2).  Uses only the public headers.
 *
 * Exit codes: 0 clean shutdown, 1 the blade could not start, 2 bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smart/smart.h"

struct args {
	struct smart_blade_config cfg;
	const char *secret_file;
	const char *log_level;
	int insecure;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: smartd --size SIZE [options]\n"
"  --size SIZE          region size, K/M/G suffixes (e.g. 1G); >= 1M\n"
"  --listen HOST:PORT   listen address [127.0.0.1:7470]\n"
"  --id N               blade id, 0..1023 [0]\n"
"  --hugepages          require huge pages for the region\n"
"  --secret-file FILE   shared secret for clients (env SMART_SECRET_FILE):\n"
"                       16..4096 bytes, a regular file of mode 0600\n"
"  --insecure           run without a secret (loopback addresses only)\n"
"  --max-clients N      authenticated clients at once [256]\n"
"  --max-unauth N       connections not yet authenticated; a new one evicts\n"
"                       the oldest [128]\n"
"  --auth-timeout MS    time a connection has to present the secret (or an\n"
"                       fd token) [1000]\n"
"  --chunk-size SIZE    allocator chunk, power of two [1M]\n"
"  --transport NAME     shm | verbs [SMART_TRANSPORT, else shm]\n"
"  --device NAME        verbs: RDMA device [first with an active port]\n"
"  --ib-port N          verbs: port [first active]\n"
"  --gid-index N        verbs: GID index [a RoCE v2 GID on Ethernet]\n"
"  --log-level LEVEL    error|warn|info|debug [warn]\n"
"  --help, --version\n");
}

/* Decimal number with an optional K/M/G suffix; 0 on success. */
static int parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0, mul = 1;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	switch (*p) {
	case 'k': case 'K': mul = UINT64_C(1) << 10; p++; break;
	case 'm': case 'M': mul = UINT64_C(1) << 20; p++; break;
	case 'g': case 'G': mul = UINT64_C(1) << 30; p++; break;
	default: break;
	}
	if (*p || (v && mul > UINT64_MAX / v))
		return -1;
	*out = v * mul;
	return 0;
}

/* The options that take a decimal count (no suffix) into an int field of
 * the blade config. */
static const struct count_opt {
	int c;
	const char *name;
	int lo, hi;
	size_t off;
} count_opts[] = {
	{ 'P', "--ib-port", 1, 255,
	  offsetof(struct smart_blade_config, ib_port) },
	{ 'G', "--gid-index", 0, 1023,
	  offsetof(struct smart_blade_config, gid_index) },
	{ 'C', "--max-clients", 1, 65536,
	  offsetof(struct smart_blade_config, max_clients) },
	{ 'U', "--max-unauth", 1, 65536,
	  offsetof(struct smart_blade_config, max_unauth) },
	{ 'A', "--auth-timeout", 1, 3600000,
	  offsetof(struct smart_blade_config, auth_timeout_ms) },
};

/* "host:port" names a loopback address: localhost, 127/8 or [::1]. */
static int is_loopback(const char *hostport)
{
	const char *colon = strrchr(hostport, ':');
	char host[64];
	struct in_addr a4;
	struct in6_addr a6;
	size_t n;

	if (!colon || (size_t)(colon - hostport) >= sizeof(host))
		return 0;
	n = (size_t)(colon - hostport);
	memcpy(host, hostport, n);
	host[n] = '\0';
	if (!strcmp(host, "localhost"))
		return 1;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		host[n - 1] = '\0';
		return inet_pton(AF_INET6, host + 1, &a6) == 1 &&
		       IN6_IS_ADDR_LOOPBACK(&a6);
	}
	return 0;
}

static int bad(const char *opt, const char *val)
{
	fprintf(stderr, "smartd: bad value for %s: '%s' (see --help)\n", opt,
		val);
	return 2;
}

/* Option c when it is one of count_opts; else a usage error (2). */
static int parse_count(struct args *a, int c, const char *v)
{
	const struct count_opt *o = NULL;
	uint64_t x;

	for (size_t i = 0; i < sizeof(count_opts) / sizeof(*o); i++)
		if (count_opts[i].c == c)
			o = &count_opts[i];
	if (!o)
		return 2;
	if (parse_size(v, &x) || strpbrk(v, "kKmMgG") ||
	    x < (uint64_t)o->lo || x > (uint64_t)o->hi)
		return bad(o->name, v);
	*(int *)((char *)&a->cfg + o->off) = (int)x;
	return 0;
}

static int parse_opt(struct args *a, int c, const char *v)
{
	uint64_t x;

	switch (c) {
	case 's':
		return parse_size(v, &a->cfg.size) ? bad("--size", v) : 0;
	case 'l':
		a->cfg.listen = v;
		return 0;
	case 'i':
		if (parse_size(v, &x) || x > 1023 || strpbrk(v, "kKmMgG"))
			return bad("--id", v);
		a->cfg.id = (uint16_t)x;
		return 0;
	case 'H':
		a->cfg.hugepages = 1;
		return 0;
	case 'f':
		a->secret_file = v;
		return 0;
	case 'c':
		if (parse_size(v, &x) || x > UINT32_MAX)
			return bad("--chunk-size", v);
		a->cfg.chunk_size = (uint32_t)x;
		return 0;
	case 't':
		a->cfg.transport = v;
		return 0;
	case 'L':
		if (strcmp(v, "error") && strcmp(v, "warn") &&
		    strcmp(v, "info") && strcmp(v, "debug"))
			return bad("--log-level", v);
		a->log_level = v;
		return 0;
	case 'I':
		a->insecure = 1;
		return 0;
	case 'D':
		a->cfg.device = v;
		return 0;
	default:
		return parse_count(a, c, v);
	}
}

/* Returns -1 to go on, else an exit code. */
static int parse_args(struct args *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "id", required_argument, NULL, 'i' },
		{ "hugepages", no_argument, NULL, 'H' },
		{ "secret-file", required_argument, NULL, 'f' },
		{ "chunk-size", required_argument, NULL, 'c' },
		{ "transport", required_argument, NULL, 't' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "insecure", no_argument, NULL, 'I' },
		{ "device", required_argument, NULL, 'D' },
		{ "ib-port", required_argument, NULL, 'P' },
		{ "gid-index", required_argument, NULL, 'G' },
		{ "max-clients", required_argument, NULL, 'C' },
		{ "max-unauth", required_argument, NULL, 'U' },
		{ "auth-timeout", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc, have_size = 0;

	smart_blade_config_init(&a->cfg);
	a->cfg.hugepages = 0;	/* so that the start line is exact */
	a->cfg.transport = getenv("SMART_TRANSPORT");
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == 'V') {
			printf("smartd %s\n", SMART_VERSION_STRING);
			return 0;
		}
		if (c == '?') {
			usage(stderr);
			return 2;
		}
		have_size |= c == 's';
		rc = parse_opt(a, c, optarg);
		if (rc)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "smartd: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	if (!have_size) {
		fprintf(stderr, "smartd: --size is required (e.g. --size 1G)\n");
		return 2;
	}
	return -1;
}

/* Secret from --secret-file or SMART_SECRET_FILE; the insecure rule. */
static int load_secret(struct args *a, char **secret)
{
	const char *f = a->secret_file ? a->secret_file :
			getenv("SMART_SECRET_FILE");
	size_t len;

	if (f && *f) {
		/* The loader has said why, and how to fix it. */
		if (smart_secret_load(f, secret, &len)) {
			fprintf(stderr, "smartd: cannot use secret file '%s'\n",
				f);
			return 2;
		}
		a->cfg.secret = *secret;
		a->cfg.secret_len = len;
		return 0;
	}
	if (!a->insecure) {
		fprintf(stderr, "smartd: no shared secret: give --secret-file "
			"or SMART_SECRET_FILE (or --insecure on a loopback "
			"address)\n");
		return 2;
	}
	if (!is_loopback(a->cfg.listen)) {
		fprintf(stderr, "smartd: --insecure is allowed only on a "
			"loopback address, not %s\n", a->cfg.listen);
		return 2;
	}
	fprintf(stderr, "smartd: warning: running without a secret "
		"(--insecure): any local process may connect\n");
	return 0;
}

static int serve(const struct args *a)
{
	smart_blade_t *b;
	sigset_t set;
	int rc, sig;

	/* Block first so that the blade's thread never takes the signals. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rc = smart_blade_create(&a->cfg, &b);
	if (rc) {
		fprintf(stderr, "smartd: cannot start the blade: %s\n",
			smart_strerror(rc));
		return rc == SMART_EINVAL ? 2 : 1;
	}
	printf("smartd: blade %u serving %" PRIu64 " bytes on %s (transport "
	       "%s, hugepages %s)\n", smart_blade_id(b), a->cfg.size,
	       smart_blade_address(b),
	       a->cfg.transport ? a->cfg.transport : "shm",
	       a->cfg.hugepages == 1 ? "yes" : "no");
	fflush(stdout);
	while (sigwait(&set, &sig) != 0)
		;
	smart_blade_destroy(b);
	printf("smartd: clean shutdown (signal %d)\n", sig);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a;
	char *secret = NULL;
	int rc;

	memset(&a, 0, sizeof(a));
	rc = parse_args(&a, argc, argv);
	if (rc >= 0)
		return rc;
	if (a.log_level && setenv("SMART_LOG_LEVEL", a.log_level, 1))
		return bad("--log-level", a.log_level);
	rc = load_secret(&a, &secret);
	if (!rc)
		rc = serve(&a);
	free(secret);
	return rc;
}
