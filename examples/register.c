/*
 * register: the tutorial's structure (docs/tutorial.md), a small shared
 * object of one's own on the public API.  A register holds one value of up
 * to REG_VALUE_MAX bytes in a blade's memory, shared by every process that
 * opens it by name.
 *
 * Remote layout (both blocks from smart_alloc, found from a root entry):
 *   descriptor (128 B): magic, lock word, head {block, seq, crc}, name;
 *   value block (128 B): seq, len, crc, data; one per value, never written
 *   again once the head points to it.
 * Invariants:
 *   - the lock word is 0 or names its holder: (ticket << 16) | lease id;
 *     a holder whose lease is dead (smart_lease_alive) is taken over;
 *   - only the lock holder writes the head; the head's block word is the
 *     truth (8-byte words are atomic), seq and crc a copy of the block's
 *     (a head whose crc fails is torn: being written, or left half written
 *     by a holder that died; the next holder rebuilds it from its block);
 *   - a block the head no longer points to is retired (epochs), never freed
 *     at once: readers read under smart_epoch_enter/exit.
 *
 *   build:  cc register.c $(pkg-config --cflags --libs smart)
 *   run:    SMART_SECRET_FILE=~/.smart-secret ./a.out 127.0.0.1:7470
 *
 * The run: create a register, put and get a value; start a child process
 * (this program, role --child) that takes the lock, writes a new block and
 * only the first word of the head (a writer killed inside its WRITE), and
 * SIGKILL it; get (torn head seen, the dead holder's lock taken over, the
 * head repaired); 8 tasks put and get 100 values each; drop it.  Prints
 * "register: seq 802, ..." and exits 0 when every check held; 1 on an
 * error (the call and smart_strerror() printed); 2 for bad usage.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <smart/smart.h>

#define REG_MAGIC     UINT64_C(0x5245474953543031) /* "REGIST01" */
#define REG_VALUE_MAX 112
#define REG_WAIT_NS   (10 * UINT64_C(1000000000)) /* lock and get give up */
#define TASKS	      8
#define ROUNDS	      100

struct reg_head { /* written in place by the lock holder, one WRITE */
	uint64_t block;
	uint64_t seq;
	uint64_t crc; /* CRC-32C of block and seq */
};

struct reg_desc { /* the descriptor; the root entry holds its address */
	uint64_t magic;
	uint64_t lock;
	struct reg_head head;
	char name[SMART_ROOT_NAME_MAX + 1];
	uint8_t pad[40];
};

struct reg_block { /* one value, immutable once published */
	uint64_t seq;
	uint32_t len;
	uint32_t crc; /* CRC-32C of seq, len and data */
	char data[REG_VALUE_MAX];
};

_Static_assert(sizeof(struct reg_desc) == 128, "descriptor layout");
_Static_assert(offsetof(struct reg_desc, lock) == 8, "lock word");
_Static_assert(offsetof(struct reg_desc, head) == 16, "head");
_Static_assert(offsetof(struct reg_desc, name) == 40, "name");
_Static_assert(sizeof(struct reg_block) == 128, "block layout");

#define REG_LOCK offsetof(struct reg_desc, lock)
#define REG_HEAD offsetof(struct reg_desc, head)

struct reg { /* a process's handle; its tasks never run in parallel */
	uint16_t blade;
	uint16_t lease; /* our lease id on the blade */
	unsigned root;	/* the root entry naming it */
	smart_gaddr_t desc;
	uint64_t ticket;    /* tells our own tasks' lock words apart */
	uint64_t torn;	    /* heads read torn */
	uint64_t takeovers; /* dead holders' locks taken */
	uint64_t retired;   /* blocks handed to the epochs */
};

static int check(const char *what, int rc)
{
	if (rc)
		fprintf(stderr, "register: %s: %s\n", what, smart_strerror(rc));
	return rc;
}

static uint64_t head_crc(const struct reg_head *h)
{
	return smart_crc32c(0, h, offsetof(struct reg_head, crc));
}

static uint32_t block_crc(const struct reg_block *b)
{
	uint32_t c = smart_crc32c(0, b, offsetof(struct reg_block, crc));

	return smart_crc32c(c, b->data, b->len);
}

static smart_gaddr_t field(const struct reg *r, size_t off)
{
	return r->desc + off; /* a gaddr's offset is its low bits */
}

/*
 * Scratch: registered memory of the calling task for one operation's
 * buffers (a READ or WRITE over 64 bytes needs registered memory; scratch
 * costs no heap call).  Every function below takes a mark and releases it.
 */
static int scratch(smart_worker_t *w, size_t len, void *out)
{
	return smart_scratch_alloc(w, len, (void **)out);
}

/* The head as it is now: 0, SMART_EAGAIN when torn, or an op's error. */
static int head_read(smart_worker_t *w, struct reg *r, struct reg_head *out)
{
	size_t m = smart_scratch_mark(w);
	struct reg_head *h;
	int rc = scratch(w, sizeof(*h), &h);

	if (!rc)
		rc = smart_read_sync(w, field(r, REG_HEAD), sizeof(*h), h);
	if (!rc) {
		*out = *h;
		rc = h->crc == head_crc(h) ? 0 : SMART_EAGAIN;
	}
	smart_scratch_release(w, m);
	return rc;
}

static int head_write(smart_worker_t *w, struct reg *r, smart_gaddr_t block,
		      uint64_t seq)
{
	size_t m = smart_scratch_mark(w);
	struct reg_head *h;
	int rc = scratch(w, sizeof(*h), &h);

	if (!rc) {
		h->block = block;
		h->seq = seq;
		h->crc = head_crc(h);
		rc = smart_write_sync(w, field(r, REG_HEAD), h, sizeof(*h));
	}
	smart_scratch_release(w, m);
	return rc;
}

/* Read a block and check it whole: SMART_EPROTO when its CRC fails. */
static int block_read(smart_worker_t *w, smart_gaddr_t a, struct reg_block *out)
{
	size_t m = smart_scratch_mark(w);
	struct reg_block *b;
	int rc = scratch(w, sizeof(*b), &b);

	if (!rc)
		rc = smart_read_sync(w, a, sizeof(*b), b);
	if (!rc && (b->len > REG_VALUE_MAX || b->crc != block_crc(b)))
		rc = SMART_EPROTO;
	if (!rc)
		*out = *b;
	smart_scratch_release(w, m);
	return rc;
}

/* A new block holding the value: allocated, written, synced. */
static int block_new(smart_worker_t *w, struct reg *r, uint64_t seq,
		     const void *val, uint32_t len, smart_gaddr_t *out)
{
	size_t m = smart_scratch_mark(w);
	struct reg_block *b;
	int rc = smart_alloc(w, r->blade, sizeof(*b), out);

	if (!rc)
		rc = scratch(w, sizeof(*b), &b);
	if (!rc) {
		memset(b, 0, sizeof(*b));
		b->seq = seq;
		b->len = len;
		memcpy(b->data, val, len);
		b->crc = block_crc(b);
		rc = smart_write_sync(w, *out, b, sizeof(*b));
	}
	if (rc && *out != SMART_GADDR_NULL)
		smart_free(w, *out, sizeof(*b));
	smart_scratch_release(w, m);
	return rc;
}

/*
 * Whoever holds the lock repairs a torn head before using it (a holder that
 * died inside its WRITE, or whose WRITE failed, left it so): it is rebuilt
 * from the block its first word names (old or new, both whole: a block is written before
 * the head names it).  What the dead holder allocated and never linked, or
 * unlinked and never retired, stays allocated (as smart_alloc's contract
 * says of a killed client's blocks).
 */
static int repair(smart_worker_t *w, struct reg *r)
{
	struct reg_head h;
	struct reg_block b;
	int rc = head_read(w, r, &h);

	if (rc != SMART_EAGAIN)
		return rc;
	rc = block_read(w, h.block, &b);
	return rc ? rc : head_write(w, r, h.block, b.seq);
}

/* One try at the lock: 0 taken, SMART_EBUSY held by a live holder. */
static int lock_try(smart_worker_t *w, struct reg *r, uint64_t mine)
{
	uint64_t old;
	int rc = smart_cas(w, field(r, REG_LOCK), 0, mine, &old);

	if (!rc)
		rc = smart_sync(w);
	if (rc || old == 0)
		return rc;
	rc = smart_lease_alive(w, r->blade, (uint16_t)(old & 0xffff));
	if (rc != 0)
		return rc < 0 ? rc : SMART_EBUSY;
	/* The holder is dead (fenced: it can write no more): take over. */
	uint64_t dead = old;
	rc = smart_cas(w, field(r, REG_LOCK), dead, mine, &old);
	if (!rc)
		rc = smart_sync(w);
	if (rc)
		return rc;
	if (old != dead)
		return SMART_EBUSY; /* another taker, or a release, came first */
	r->takeovers++;
	return 0;
}

/* The lock, retried under the backoff guard (Smart's ConflictAvoid). */
static int lock(smart_worker_t *w, struct reg *r, uint64_t *mine)
{
	uint64_t end = smart_now_ns() + REG_WAIT_NS;
	int rc;

	*mine = (++r->ticket << 16) | r->lease;
	smart_backoff_begin(w);
	while ((rc = lock_try(w, r, *mine)) == SMART_EBUSY &&
	       smart_now_ns() < end)
		smart_backoff_retry(w);
	smart_backoff_end(w);
	return rc == SMART_EBUSY ? SMART_ETIMEDOUT : rc;
}

static int unlock(smart_worker_t *w, struct reg *r, uint64_t mine)
{
	uint64_t old;
	int rc = smart_cas(w, field(r, REG_LOCK), mine, 0, &old);

	if (!rc)
		rc = smart_sync(w);
	return rc ? rc : (old == mine ? 0 : SMART_EFENCED); /* taken from us */
}

/* Under the lock: a new block, the head moved to it, the old one retired. */
static int put_locked(smart_worker_t *w, struct reg *r, const void *val,
		      uint32_t len)
{
	struct reg_head h;
	smart_gaddr_t nb = SMART_GADDR_NULL;
	int rc = head_read(w, r, &h);

	if (rc == SMART_EAGAIN) { /* torn: repaired, then read again */
		rc = repair(w, r);
		if (!rc)
			rc = head_read(w, r, &h);
	}
	if (!rc)
		rc = block_new(w, r, h.seq + 1, val, len, &nb);
	if (!rc)
		rc = head_write(w, r, nb, h.seq + 1);
	if (!rc)
		rc = smart_epoch_retire(w, r->blade, h.block,
					sizeof(struct reg_block));
	r->retired += !rc;
	return rc;
}

static int reg_put(smart_worker_t *w, struct reg *r, const void *val,
		   uint32_t len)
{
	uint64_t mine;
	int rc;

	if (len > REG_VALUE_MAX)
		return SMART_EINVAL;
	rc = lock(w, r, &mine);
	if (rc)
		return rc;
	rc = put_locked(w, r, val, len);
	int urc = unlock(w, r, mine);
	return rc ? rc : urc;
}

/* One try at a read, inside an epoch section: SMART_EAGAIN when torn. */
static int get_try(smart_worker_t *w, struct reg *r, struct reg_block *out)
{
	struct reg_head h;
	int rc = smart_epoch_enter(w, r->blade);

	if (rc)
		return rc;
	rc = head_read(w, r, &h);
	if (!rc)
		rc = block_read(w, h.block, out);
	if (!rc && out->seq != h.seq)
		rc = SMART_EAGAIN; /* a torn head whose CRC matched by chance */
	smart_epoch_exit(w);
	return rc;
}

/* A head that stays torn may be a dead writer's: take the lock (over, if
 * its holder is dead), repair the head, give the lock back. */
static int settle_dead_writer(smart_worker_t *w, struct reg *r)
{
	uint64_t mine;
	int rc = lock(w, r, &mine);

	if (rc)
		return rc;
	rc = repair(w, r);
	int urc = unlock(w, r, mine);
	return rc ? rc : urc;
}

/* Up to 4 tries under the backoff guard (guards do not nest: the lock
 * that settle_dead_writer takes has its own). */
static int get_guarded(smart_worker_t *w, struct reg *r, struct reg_block *out)
{
	int rc, tries = 0;

	smart_backoff_begin(w);
	while ((rc = get_try(w, r, out)) == SMART_EAGAIN) {
		r->torn++;
		if (++tries == 4)
			break;
		smart_backoff_retry(w);
	}
	smart_backoff_end(w);
	return rc;
}

static int reg_get(smart_worker_t *w, struct reg *r, struct reg_block *out)
{
	uint64_t end = smart_now_ns() + REG_WAIT_NS;
	int rc;

	while ((rc = get_guarded(w, r, out)) == SMART_EAGAIN) {
		rc = settle_dead_writer(w, r);
		if (rc)
			return rc;
		if (smart_now_ns() > end)
			return SMART_ETIMEDOUT;
	}
	return rc;
}

/* The root-entry naming service's question: the name of the register whose
 * descriptor `entry` points to, or SMART_ENOENT if it is none. */
static int name_of(smart_worker_t *w, uint16_t blade, uint64_t entry,
		   char *name, void *arg)
{
	size_t m = smart_scratch_mark(w);
	struct reg_desc *d;
	int rc = scratch(w, sizeof(*d), &d);

	(void)blade;
	(void)arg;
	if (!rc)
		rc = smart_read_sync(w, entry, sizeof(*d), d);
	if (rc == SMART_EREMOTE || rc == SMART_EINVAL)
		rc = SMART_ENOENT; /* not an address of this blade: not ours */
	if (!rc && d->magic != REG_MAGIC)
		rc = SMART_ENOENT;
	if (!rc)
		memcpy(name, d->name, SMART_ROOT_NAME_MAX);
	smart_scratch_release(w, m);
	return rc;
}

static int reg_handle(smart_worker_t *w, uint16_t blade, struct reg *r)
{
	memset(r, 0, sizeof(*r));
	r->blade = blade;
	return smart_lease_id(smart_worker_ctx(w), blade, &r->lease);
}

static int reg_open(smart_worker_t *w, uint16_t blade, const char *name,
		    struct reg *r)
{
	int rc = reg_handle(w, blade, r);

	return rc ? rc :
		    smart_root_find(w, blade, name, name_of, NULL, &r->root,
				    &r->desc);
}

/* A descriptor naming a first, empty block; written, not yet published. */
static int desc_new(smart_worker_t *w, struct reg *r, const char *name)
{
	size_t m = smart_scratch_mark(w);
	smart_gaddr_t b0 = SMART_GADDR_NULL;
	struct reg_desc *d;
	int rc = block_new(w, r, 0, "", 0, &b0);

	if (!rc)
		rc = smart_alloc(w, r->blade, sizeof(*d), &r->desc);
	if (!rc)
		rc = scratch(w, sizeof(*d), &d);
	if (!rc) {
		memset(d, 0, sizeof(*d));
		d->magic = REG_MAGIC;
		d->head.block = b0;
		d->head.crc = head_crc(&d->head);
		memcpy(d->name, name, strlen(name)); /* checked: <= 47 */
		rc = smart_write_sync(w, r->desc, d, sizeof(*d));
	}
	smart_scratch_release(w, m);
	return rc;
}

/* Free a descriptor never published and its first block. */
static int reg_discard(smart_worker_t *w, struct reg *r)
{
	struct reg_head h;
	int rc = head_read(w, r, &h);

	if (!rc)
		rc = smart_free(w, h.block, sizeof(struct reg_block));
	return rc ? rc : smart_free(w, r->desc, sizeof(struct reg_desc));
}

/* Create the register `name`, or open it when another process was first. */
static int reg_create(smart_worker_t *w, uint16_t blade, const char *name,
		      struct reg *r)
{
	int rc = reg_handle(w, blade, r);

	if (!rc && !smart_root_name_ok(name))
		rc = SMART_EINVAL;
	if (!rc)
		rc = desc_new(w, r, name);
	if (!rc)
		rc = smart_root_publish(w, blade, name, name_of, NULL, r->desc,
					&r->root);
	if (rc == SMART_EEXIST) /* another process was first: use its */
		return reg_discard(w, r) ? SMART_EEXIST :
					   reg_open(w, blade, name, r);
	return rc;
}

/* Unpublish and free (no other user may be left): the last block is
 * retired, the descriptor freed after the epochs let it go. */
static int reg_drop(smart_worker_t *w, struct reg *r)
{
	struct reg_head h;
	int rc = head_read(w, r, &h);

	if (!rc)
		rc = smart_root_release(w, r->blade, r->root, r->desc);
	if (!rc)
		rc = smart_epoch_retire(w, r->blade, h.block,
					sizeof(struct reg_block));
	if (!rc)
		rc = smart_epoch_retire(w, r->blade, r->desc,
					sizeof(struct reg_desc));
	return rc ? rc : smart_epoch_drain(w, r->blade, 5000);
}

/* ---- the program: a dying writer, then tasks sharing the register ---- */

struct run {
	struct reg *r;
	int err;
};

static void worker_task(smart_worker_t *w, void *arg)
{
	struct run *run = arg;
	struct reg_block b;
	char val[32];
	int rc = 0;

	for (int i = 0; i < ROUNDS && !rc; i++) {
		int n = snprintf(val, sizeof(val), "round %d", i);
		rc = reg_put(w, run->r, val, (uint32_t)n);
		if (!rc)
			rc = reg_get(w, run->r, &b);
	}
	if (rc && !run->err)
		run->err = rc;
}

/* Role --child: take the lock, write a new block and only the head's first
 * word, tell the parent (fd), and wait to be killed. */
static int child(smart_worker_t *w, uint16_t blade, const char *name, int fd)
{
	static const char val[] = "from a writer killed in its WRITE";
	struct reg r;
	struct reg_head h;
	smart_gaddr_t nb = SMART_GADDR_NULL;
	uint64_t mine;
	int rc = reg_open(w, blade, name, &r);

	if (!rc)
		rc = lock(w, &r, &mine);
	if (!rc)
		rc = head_read(w, &r, &h);
	if (!rc)
		rc = block_new(w, &r, h.seq + 1, val, sizeof(val), &nb);
	if (!rc) /* 8 of the head's 24 bytes: the WRITE cut short */
		rc = smart_write_sync(w, field(&r, REG_HEAD), &nb, sizeof(nb));
	if (check("child", rc) || write(fd, "k", 1) != 1)
		return 1;
	alarm(60); /* dies anyway should the parent not kill it */
	for (;;)
		pause();
}

static int spawn_dying_writer(const char *addr, const char *name)
{
	char fdarg[16];
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	snprintf(fdarg, sizeof(fdarg), "%d", p[1]);
	pid = fork();
	if (pid == 0) { /* only exec: the parent has threads */
		execl("/proc/self/exe", "register", "--child", addr, name,
		      fdarg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	struct pollfd pf = { .fd = p[0], .events = POLLIN };
	char c = 0;
	int ok = pid > 0 && poll(&pf, 1, 30000) == 1 && read(p[0], &c, 1) == 1;
	close(p[0]);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return ok && c == 'k' ? 0 : -1;
}

static int phases(smart_worker_t *w, struct reg *r, const char *addr,
		  const char *name)
{
	struct run run = { .r = r, .err = 0 };
	struct reg_block b;

	if (check("reg_put", reg_put(w, r, "hello", 5)) ||
	    check("reg_get", reg_get(w, r, &b)))
		return 1;
	if (spawn_dying_writer(addr, name)) {
		fprintf(stderr,
			"register: the child did not get to its WRITE\n");
		return 1;
	}
	if (check("reg_get after the kill", reg_get(w, r, &b)))
		return 1;
	if (b.seq != 2 || r->torn == 0 || r->takeovers != 1) {
		fprintf(stderr, "register: expected the dead writer's value\n");
		return 1;
	}
	for (int i = 0; i < TASKS; i++)
		if (check("smart_task_spawn",
			  smart_task_spawn(w, worker_task, &run)))
			return 1;
	if (check("smart_worker_run", smart_worker_run(w)) ||
	    check("a task's put or get", run.err) ||
	    check("reg_get", reg_get(w, r, &b)))
		return 1;
	printf("register: seq %" PRIu64 ", torn reads %" PRIu64
	       ", takeovers %" PRIu64 ", retired %" PRIu64 "\n",
	       b.seq, r->torn, r->takeovers, r->retired);
	return b.seq == 2 + TASKS * ROUNDS ? 0 : 1;
}

static int run_main(smart_worker_t *w, uint16_t blade, const char *addr)
{
	char name[SMART_ROOT_NAME_MAX + 1];
	struct reg r;
	int status;

	snprintf(name, sizeof(name), "tutorial-register-%ld", (long)getpid());
	if (check("reg_create", reg_create(w, blade, name, &r)))
		return 1;
	status = phases(w, &r, addr, name);
	if (check("reg_drop", reg_drop(w, &r)))
		status = 1;
	return status;
}

int main(int argc, char **argv)
{
	int is_child = argc == 5 && !strcmp(argv[1], "--child");
	const char *addr = is_child ? argv[2] : argv[1];
	smart_worker_t *w = NULL;
	smart_ctx_t *ctx;
	uint16_t blade;
	int status = 1;

	if (argc != 2 && !is_child) {
		fprintf(stderr,
			"usage: %s HOST:PORT  (the blade's secret file "
			"in SMART_SECRET_FILE)\n",
			argv[0]);
		return 2;
	}
	if (check("smart_ctx_create", smart_ctx_create(NULL, &ctx)))
		return 1;
	if (!check("smart_ctx_connect", smart_ctx_connect(ctx, addr, &blade)) &&
	    !check("smart_worker_create", smart_worker_create(ctx, &w)))
		status = is_child ? child(w, blade, argv[3], atoi(argv[4])) :
				    run_main(w, blade, addr);
	if (check("smart_worker_destroy", smart_worker_destroy(w)))
		status = 1;
	if (check("smart_ctx_destroy", smart_ctx_destroy(ctx)))
		status = 1;
	return status;
}
