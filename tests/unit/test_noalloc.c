/*
 * Proof that the op fast path allocates no heap memory.
 *
 * This binary interposes malloc/calloc/realloc/free (glibc exports the
 * real ones as __libc_*) and counts calls.  After a warm-up that creates
 * the worker, its tasks and its QP, it runs many READ/WRITE/CAS/FAA ops,
 * in place and through bounce slots, in chains longer than chain_max and
 * with more results than bounce slots, from tasks and from the main
 * context, and requires the count to stay at zero.  Under ASan the
 * allocator cannot be interposed, so the test skips there (it runs in the
 * normal build).
 */
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/smart.h"

#if defined(__SANITIZE_ADDRESS__)
#define NOALLOC_SKIP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NOALLOC_SKIP 1
#endif
#endif

#ifndef NOALLOC_SKIP
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

/* The one mutable global of the project: a test-only counter that the
 * interposed allocator must reach without any context. */
static atomic_long heap_calls;

void *malloc(size_t n)
{
	atomic_fetch_add(&heap_calls, 1);
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	atomic_fetch_add(&heap_calls, 1);
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	atomic_fetch_add(&heap_calls, 1);
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (p)
		atomic_fetch_add(&heap_calls, 1);
	__libc_free(p);
}
#endif

#ifndef NOALLOC_SKIP
#define OPS 20000

struct job {
	uint16_t blade;
	uint64_t off;
	void *buf;	/* registered */
};

static void mixed_ops(smart_worker_t *w, struct job *j, int rounds)
{
	smart_gaddr_t g = smart_gaddr(j->blade, j->off);
	uint64_t local8 = 0, old;
	uint8_t small[48];
	int i, k;

	memset(small, 7, sizeof(small));
	for (i = 0; i < rounds; i++) {
		/* registered, in place */
		CHECK_OK(smart_write(w, g, j->buf, 256));
		CHECK_OK(smart_read(w, g, 256, j->buf));
		/* unregistered, bounced; inline write */
		CHECK_OK(smart_write(w, smart_gaddr_add(g, 512), small, 48));
		CHECK_OK(smart_read(w, smart_gaddr_add(g, 512), 48, small));
		CHECK_OK(smart_cas(w, smart_gaddr_add(g, 1024), 0, 1, &old));
		CHECK_OK(smart_faa(w, smart_gaddr_add(g, 1032), 1, &local8));
		CHECK_OK(smart_sync(w));
		/* a chain longer than chain_max and more results than slots */
		for (k = 0; k < 80; k++)
			CHECK_OK(smart_faa(w, smart_gaddr_add(g, 1040), 1,
					   NULL));
		CHECK_OK(smart_sync(w));
	}
}

static void job_task(smart_worker_t *w, void *arg)
{
	mixed_ops(w, arg, OPS / 100);
}
#endif

static void test_fast_path_no_heap(void)
{
#ifdef NOALLOC_SKIP
	test_skip("the allocator cannot be interposed under AddressSanitizer");
#else
	struct fixture f;
	struct job jobs[8];
	smart_worker_t *w;
	long before;
	int i;

	fixture_start(&f, 8 << 20, 0, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	for (i = 0; i < 8; i++) {
		jobs[i] = (struct job){ f.id, (uint64_t)(1 << 20) + i * 4096,
					NULL };
		CHECK_OK(smart_buf_alloc(w, 256, &jobs[i].buf));
	}
	/* Warm-up: task slots, stacks, the QP and its responder exist. */
	for (i = 0; i < 8; i++)
		CHECK_OK(smart_task_spawn(w, job_task, &jobs[i]));
	CHECK_OK(smart_worker_run(w));
	mixed_ops(w, &jobs[0], 1);

	before = atomic_load(&heap_calls);
	for (i = 0; i < 8; i++)
		CHECK_OK(smart_task_spawn(w, job_task, &jobs[i]));
	CHECK_OK(smart_worker_run(w));
	mixed_ops(w, &jobs[0], 100);
	CHECK_EQ(atomic_load(&heap_calls) - before, 0);
	printf("heap calls during %d ops: %ld\n", 8 * OPS / 100 * 86 + 8600,
	       atomic_load(&heap_calls) - before);

	for (i = 0; i < 8; i++)
		smart_buf_free(w, jobs[i].buf);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
#endif
}

/* The counter must be able to fail: an allocation is seen. */
static void test_counter_sees_malloc(void)
{
#ifdef NOALLOC_SKIP
	test_skip("the allocator cannot be interposed under AddressSanitizer");
#else
	long before = atomic_load(&heap_calls);
	void *volatile p = malloc(16);

	free(p);
	CHECK_EQ(atomic_load(&heap_calls) - before, 2);
#endif
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "counter_sees_malloc", test_counter_sees_malloc },
		{ "fast_path_no_heap", test_fast_path_no_heap },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
