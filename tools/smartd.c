/*
 * smartd: a memory blade daemon.  Parses options, loads the shared secret,
 * creates a blade (include/smart/blade.h) and serves until SIGINT or
 * SIGTERM, then shuts down cleanly and exits 0.  SIGUSR1 prints where the
 * region's memory is (as any client sees it with smart_alloc_usage).
 *
 * Security rule: a blade without a secret accepts any local process.  That
 * is allowed only with --insecure AND a loopback listen address; otherwise
 * smartd refuses to start (exit 2).  Uses only the public headers and the
 * kit (its flags).
 *
 * Exit codes: 0 clean shutdown, 1 the blade could not start, 2 bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

#define TOOL "smartd"

struct args {
	struct smart_blade_config cfg;
	uint64_t size, chunk;
	int id, hugepages, insecure, ib_port, gid_index, lease_ms;
	int traffic_class, service_level, gid_type; /* -1 unset */
	int max_clients, max_unauth, auth_timeout;
	int transport, log_level; /* indexes in the names; -1 unset */
	const char *listen, *secret_file, *device, *dm_size;
};

static const char *const transports[] = { "shm", "verbs", NULL };
static const char *const gid_types[] = { "auto", "roce-v2", "roce-v1", "ib",
					 NULL };
static const char *const levels[] = { "error", "warn", "info", "debug", NULL };

#define A struct args
static const struct kit_flag smartd_flags[] = {
	KIT_SIZE("size", A, size, 1 << 20, (double)(1ull << 47), "SIZE",
		 "region size (e.g. 1G), 1M..128T, and without\n"
		 "--hugepages at most the memory free (MemAvailable):\n"
		 "verbs pins every page at start; shm gives a page\n"
		 "when a client first touches it, and one the system\n"
		 "could not give would kill that client (SIGBUS)"),
	KIT_ADDR("listen", A, listen, 0,
		 "listen address, port 0: any [127.0.0.1:7470]"),
	KIT_INT("id", A, id, 0, SMART_BLADE_ID_MAX, "N",
		"blade id, 0..1023 [0]"),
	KIT_FLAG("hugepages", A, hugepages,
		 "require huge pages for the region"),
	KIT_STR("secret-file", A, secret_file, "FILE",
		"shared secret for clients (env SMART_SECRET_FILE): 16..4096 "
		"bytes, a regular file of mode 0600"),
	KIT_FLAG("insecure", A, insecure,
		 "run without a secret (loopback addresses only)"),
	KIT_INT("max-clients", A, max_clients, 1, 65536, "N",
		"authenticated clients at once [256]"),
	KIT_INT("max-unauth", A, max_unauth, 1, 65536, "N",
		"connections not yet authenticated; a new one evicts the "
		"oldest [128]"),
	KIT_INT("auth-timeout", A, auth_timeout, 1, 3600000, "MS",
		"time a connection has to present the secret (or an fd "
		"token) [1000]"),
	KIT_SIZE("chunk-size", A, chunk, 4096, 1 << 30, "SIZE",
		 "allocator chunk, a power of two, 4K..1G [1M]"),
	KIT_CHOICE("transport", A, transport, transports, "shm|verbs",
		   "transport [SMART_TRANSPORT, else shm]"),
	KIT_STR("device", A, device, "NAME",
		"verbs: RDMA device [first with an active port]"),
	KIT_INT("ib-port", A, ib_port, 1, 255, "N",
		"verbs: port [first active]"),
	KIT_INT("gid-index", A, gid_index, 0, 1023, "N",
		"verbs: GID index [a RoCE v2 GID on Ethernet]"),
	KIT_CHOICE("gid-type", A, gid_type, gid_types,
		   "auto|roce-v2|roce-v1|ib",
		   "verbs: kind of GID, which "
		   "clients must share (option gid_type) [auto: RoCE v2 on "
		   "Ethernet, LID routing on InfiniBand]"),
	KIT_INT("traffic-class", A, traffic_class, 0, 255, "N",
		"verbs: GRH traffic class of the blade's QPs, 0..255; on RoCE "
		"v2 DSCP << 2, e.g. 104 for DSCP 26 [0]"),
	KIT_INT("service-level", A, service_level, 0, 15, "N",
		"verbs: service level of the blade's QPs, 0..15 (IB SL; RoCE "
		"priority with a VLAN) [0]"),
	KIT_STR("dm-size", A, dm_size, "auto|0|SIZE",
		"device memory served next to the region (NIC memory for "
		"lock tables): auto = the NIC's, up to 256K, none on shm; "
		"or 4K..256K in 4K steps, emulated on shm [auto]"),
	KIT_INT("lease-ms", A, lease_ms, SMART_LEASE_MS_MIN, SMART_LEASE_MS_MAX,
		"MS",
		"client lease, 10..600000 ms [2000]: a client silent "
		"this long is fenced (docs/leases.md)"),
	KIT_CHOICE("log-level", A, log_level, levels, "error|warn|info|debug",
		   "log level [warn]"),
	KIT_END,
};
#undef A

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

/* --dm-size: auto, or a size in whole 4 KiB units up to 256 KiB. */
static void parse_dm(struct args *a)
{
	uint64_t v;

	a->cfg.dm_size = -1;
	if (!a->dm_size || !strcmp(a->dm_size, "auto"))
		return;
	if (kit_parse_u64(a->dm_size, 1, &v) || v > SMART_DM_MAX ||
	    v % SMART_DM_UNIT)
		kit_bad(TOOL, "dm-size", a->dm_size,
			"want auto, 0, or 4K..256K "
			"in 4K steps");
	a->cfg.dm_size = (int64_t)v;
}

/* The flags, then what they say together; refusals exit 2. */
static void parse_args(struct args *a, int argc, char **argv)
{
	struct kit_cli cli = {
		.tool = TOOL,
		.synopsis = TOOL " --size SIZE [flags]",
		.about =
			"  A memory blade: serves a region to compute "
			"processes until SIGINT/SIGTERM;\n  SIGUSR1 prints where its memory is.\n",
		.group = { { smartd_flags, a, NULL } },
	};

	a->transport = a->log_level = a->gid_index = -1;
	a->gid_type = a->traffic_class = a->service_level = -1;
	kit_parse(&cli, argc, argv);
	if (!a->size)
		kit_bad(TOOL, "size", NULL, "is required (e.g. --size 1G)");
	if (!a->hugepages && kit_mem_available() &&
	    a->size > kit_mem_available())
		kit_bad(TOOL, "size", NULL,
			"%" PRIu64 " bytes is more than the memory free "
			"(MemAvailable %" PRIu64 " MiB)",
			a->size, kit_mem_available() >> 20);
	if (a->chunk & (a->chunk - 1))
		kit_bad(TOOL, "chunk-size", NULL,
			"want a power of two, not %" PRIu64, a->chunk);
	parse_dm(a);
}

/* The blade's configuration from the flags (and SMART_TRANSPORT). */
static void blade_config(struct args *a)
{
	struct smart_blade_config *c = &a->cfg;
	int64_t dm = c->dm_size; /* parse_dm's */

	smart_blade_config_init(c);
	c->dm_size = dm;
	c->size = a->size;
	c->hugepages = a->hugepages; /* off unless asked: the start line */
	c->id = (uint16_t)a->id;
	if (a->listen)
		c->listen = a->listen;
	if (a->chunk)
		c->chunk_size = (uint32_t)a->chunk;
	c->transport = a->transport >= 0 ? transports[a->transport] :
					   getenv("SMART_TRANSPORT");
	c->device = a->device;
	if (a->ib_port)
		c->ib_port = a->ib_port;
	if (a->gid_index >= 0)
		c->gid_index = a->gid_index;
	if (a->gid_type >= 0)
		c->gid_type = gid_types[a->gid_type];
	if (a->traffic_class >= 0)
		c->traffic_class = a->traffic_class;
	if (a->service_level >= 0)
		c->service_level = a->service_level;
	if (a->lease_ms)
		c->lease_ms = (uint32_t)a->lease_ms;
	if (a->max_clients)
		c->max_clients = a->max_clients;
	if (a->max_unauth)
		c->max_unauth = a->max_unauth;
	if (a->auth_timeout)
		c->auth_timeout_ms = a->auth_timeout;
}

/* Secret from --secret-file or SMART_SECRET_FILE; the insecure rule.
 * Every refusal is bad input: exit 2. */
static void load_secret(struct args *a, char **secret)
{
	const char *f = a->secret_file ? a->secret_file :
					 getenv("SMART_SECRET_FILE");
	size_t len;

	if (f && *f) {
		/* the loader has said why, and how to fix it */
		if (smart_secret_load(f, secret, &len))
			kit_bad(TOOL, a->secret_file ? "secret-file" : NULL, f,
				"%scannot use the secret file",
				a->secret_file ? "" : "SMART_SECRET_FILE: ");
		a->cfg.secret = *secret;
		a->cfg.secret_len = len;
		return;
	}
	if (!a->insecure)
		kit_bad(TOOL, NULL, NULL,
			"no shared secret: give --secret-file "
			"or SMART_SECRET_FILE (or --insecure on a loopback "
			"address)");
	if (!is_loopback(a->cfg.listen))
		kit_bad(TOOL, "insecure", a->cfg.listen,
			"allowed only on a "
			"loopback address");
	fprintf(stderr, TOOL ": warning: running without a secret "
			     "(--insecure): any local process may connect\n");
}

/* SIGUSR1, and at shutdown: where the region's memory is. */
static void print_usage(const smart_blade_t *b)
{
	struct smart_alloc_usage u;

	kit_usage_print("smartd: memory", smart_blade_usage(b, &u), &u);
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
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rc = smart_blade_create(&a->cfg, &b);
	if (rc) {
		fprintf(stderr, "smartd: cannot start the blade: %s\n",
			smart_strerror(rc));
		return rc == SMART_EINVAL ? 2 : 1;
	}
	printf("smartd: blade %u serving %" PRIu64 " bytes on %s (transport "
	       "%s, hugepages %s)\n",
	       smart_blade_id(b), a->cfg.size, smart_blade_address(b),
	       a->cfg.transport ? a->cfg.transport : "shm",
	       a->cfg.hugepages == 1 ? "yes" : "no");
	fflush(stdout);
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig != SIGUSR1)
			break;
		print_usage(b);
	}
	print_usage(b);
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
	parse_args(&a, argc, argv);
	blade_config(&a);
	/* the blade's log reads its level from the environment */
	if (a.log_level >= 0 &&
	    setenv("SMART_LOG_LEVEL", levels[a.log_level], 1)) {
		perror(TOOL ": setenv");
		return 1;
	}
	load_secret(&a, &secret);
	rc = serve(&a);
	free(secret);
	return rc;
}
