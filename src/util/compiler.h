/*
 * Compiler helpers shared by every layer: branch hints, container_of,
 * cache-line alignment and the narrow barrier helpers.  Header only.
 */
#ifndef SMART_UTIL_COMPILER_H
#define SMART_UTIL_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#define smart_likely(x)	  __builtin_expect(!!(x), 1)
#define smart_unlikely(x) __builtin_expect(!!(x), 0)

#define SMART_CACHELINE	 64
#define smart_aligned_cl __attribute__((aligned(SMART_CACHELINE)))

#define smart_container_of(ptr, type, member)                                  \
	((type *)((char *)(ptr)-offsetof(type, member)))

#define SMART_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define smart_min(a, b) ((a) < (b) ? (a) : (b))
#define smart_max(a, b) ((a) > (b) ? (a) : (b))

/* Keep the compiler from moving memory accesses across this point. */
#define smart_compiler_barrier() __asm__ __volatile__("" ::: "memory")

static inline void smart_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Add v to a counter that one thread writes while others may read it with
 * relaxed atomic loads (a worker's stats, read by snapshots).  On x86-64
 * one add to memory: its aligned 8-byte store never tears, which is all
 * the readers need.  C11 has no such operation; the relaxed atomic store
 * of a load plus v that stands in for it elsewhere is three instructions
 * (load, add, store), and an 8-byte READ moves five such counters. */
static inline void smart_counter_add(uint64_t *c, uint64_t v)
{
#if defined(__x86_64__)
	__asm__ __volatile__("addq %1, %0" : "+m"(*c) : "er"(v));
#else
	__atomic_store_n(c, *c + v, __ATOMIC_RELAXED);
#endif
}

/* Add v to an int that only the calling thread reads and writes (a task's
 * batches in flight in a group of one worker: _Atomic for the shared
 * groups' sake); 1 when it is then 0.  One add to memory and its flag on
 * x86-64 (a relaxed load, the add and a store, then a test, elsewhere). */
static inline int smart_own_add_is_zero(_Atomic int *c, int v)
{
#if defined(__x86_64__)
	int zero;

	__asm__ __volatile__("addl %2, %0"
			     : "+m"(*(int *)c), "=@ccz"(zero)
			     : "er"(v));
	return zero;
#else
	int n = __atomic_load_n(c, __ATOMIC_RELAXED) + v;

	__atomic_store_n(c, n, __ATOMIC_RELAXED);
	return n == 0;
#endif
}

static inline int smart_is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

static inline uint64_t smart_roundup_pow2(uint64_t x)
{
	return x <= 1 ? 1 : UINT64_C(1) << (64 - __builtin_clzll(x - 1));
}

#endif
