/*
 * `smart-bench rpc` inside smart-bench: the state of a run and what its
 * two files share.  rpc_bench.c is the module (flags, checks, setup, the
 * table and the record); rpc_load.c the processes: the server, the client
 * processes with their threads and tasks, and the measured window.
 *
 * Processes: the one started (the coordinator) makes no ctx of its own.
 * It forks the server (without --connect) and then --clients client
 * processes, each with --threads threads; every thread has its own
 * worker, endpoint and connection and runs --outstanding tasks.  The
 * threads' phases and results are in one MAP_SHARED mapping made before
 * any fork: the gate (a struct kit_runner: phase and ready count, nothing
 * else of it used) and one struct rpc_bench_thread per thread.
 *
 * Invariants: no mutable globals (the run lives in struct rpc_bench); a
 * thread's results are written by its own tasks only, which never run in
 * parallel, and read by the coordinator once that client process has
 * exited; the timed loops allocate nothing (histograms of fixed size).
 * Every child dies with the coordinator (PR_SET_PDEATHSIG): clients at
 * once (SIGKILL, as a killed client), the server cleanly (SIGTERM).
 */
#ifndef SMART_BENCH_RPC_H
#define SMART_BENCH_RPC_H

#include <sys/types.h>

#include "bench.h"
#include "smart/rpc.h"

/* The server's handlers. */
/* echo calls go to SMART_RPC_OP_PING, which every endpoint answers */
#define RPC_BENCH_OP_SINK 2 /* one-way: nothing */
#define RPC_BENCH_OP_DONE 3 /* empty reply: what came before is handled */

/* The endpoints' settings: the library's defaults, set here so that the
 * report can say them.  Longer messages go by rendezvous (docs/rpc.md). */
#define RPC_BENCH_WINDOW     64
#define RPC_BENCH_EAGER	     4096
#define RPC_BENCH_SIZE_MAX   (64u << 20) /* rndv_max */
#define RPC_BENCH_SIZE_UNSET UINT64_MAX
#define RPC_BENCH_CONNS_MAX  4096 /* the server's max_conns */

struct rpc_bench;

/* One client thread's results, in the shared mapping; 64-byte aligned so
 * that no two threads' counters share a line. */
struct rpc_bench_thread {
	_Alignas(64) struct rpc_bench *b; /* valid in the client (a fork) */
	int client, idx;
	int rc;			   /* the first error of the thread, or 0 */
	uint64_t msgs;		   /* answered calls, or sends, in the window */
	uint64_t errors;	   /* calls or sends failed in the window */
	smart_hist_t hist;	   /* TSC cycles per call (echo), per sampled
				 * send (--oneway) */
	struct smart_rpc_stats st; /* its connection's, at the end */
	smart_hist_t dial;	   /* --connects: TSC cycles of the connect
				 * alone (hist: connect + call + close) */
	uint64_t cache_hits; /* --connects: its endpoint's qp_cache_hits */
	/* the client process's own, while it runs */
	smart_ctx_t *ctx;
	smart_rpc_conn_t *conn;
	uint8_t *req, *resp; /* --size bytes (+1); resp: one such per
				 * task */
	int slots;	     /* response buffers taken by tasks */
	int warm;	     /* tasks past their first message */
};

struct rpc_bench_shared {
	struct kit_runner gate;	     /* every client thread's phase */
	atomic_int done;	     /* --connects: threads through their N */
	struct rpc_bench_thread t[]; /* clients x threads */
};

/* What a client run measured, summed over its threads. */
struct rpc_bench_result {
	uint64_t msgs, errors;
	int first_err;
	double secs, mrps, gbps, max_us;
	struct kit_lat lat;
	struct kit_lat dial; /* --connects: the connect alone */
	uint64_t cache_hits; /* --connects: the clients' endpoints' */
	/* the clients' connections' counters */
	uint64_t stalls, timeouts, rnr, rndv;
	int stop_sig;
};

struct rpc_bench {
	struct bench_run *run;
	/* flags */
	uint64_t size; /* RPC_BENCH_SIZE_UNSET until check;
				 * a server's 0 */
	int oneway, serve, clients, outstanding;
	int event;	/* the server in event mode */
	int gap_us;	/* echo: a pause after each answer */
	int timeout_ms; /* clients: a call's timeout */
	int connects;	/* N connect + call + close per thread */
	int qp_cache;	/* both sides' cfg.qp_cache: -1 the
				 * library's default, 0 none */
	const char *listen;
	/* setup */
	char transport[16];
	char secret[32];
	int own_secret; /* no secret file in force: a random one */
	char addr[64];	/* the spawned server's */
	pid_t server;	/* the spawned server, or 0 */
	pid_t *kids;	/* the client processes (0: reaped) */
	struct rpc_bench_shared *sh;
	size_t sh_len;
	/* results */
	struct rpc_bench_result res;
	struct smart_rpc_stats srv; /* --serve: the endpoint's counters */
	int srv_conns;
};

/* The endpoint settings of either side. */
void rpc_bench_cfg(const struct rpc_bench *b, int server,
		   struct smart_rpc_config *cfg);

/* The run's library options: SMART_*, the common flags, room for the
 * tasks, --opt.  The caller destroys *out. */
int rpc_bench_opts(const struct rpc_bench *b, smart_opts_t **out);

/* A ctx of those options (and the run's random secret, if any). */
int rpc_bench_ctx(const struct rpc_bench *b, smart_ctx_t **ctx);

/* Serve until SIGINT or SIGTERM: the address on out first (one line,
 * flushed), the counters on stderr at the end (and in b->srv). */
int rpc_bench_serve(struct rpc_bench *b, FILE *out);

/* Fork the server; its address into b->addr.  0, or said on stderr. */
int rpc_bench_spawn_server(struct rpc_bench *b);

/* Stop the spawned server (SIGTERM, or SIGKILL after a failure) and
 * reap it. */
void rpc_bench_stop_server(struct rpc_bench *b, int failed);

/* The client processes and the window; results into b->res. */
int rpc_bench_clients(struct rpc_bench *b);

#endif
