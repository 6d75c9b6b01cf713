/*
 * The stack switches both fiber runners use (the runtime's tasks,
 * runtime/task.c, and the simulator's threads, util/sim.c): Boost.Context's
 * two C entry points, and the calls that tell AddressSanitizer about each
 * switch.  Without those ASan reports false stack overflows; in a build
 * without ASan they are empty inlines.
 */
#ifndef SMART_UTIL_FIBER_H
#define SMART_UTIL_FIBER_H

#include <stddef.h>

typedef void *smart__fctx_t;

typedef struct {
	smart__fctx_t fctx;
	void *data;
} smart__transfer_t;

/* Exported with C linkage by libboost_context. */
extern smart__transfer_t jump_fcontext(smart__fctx_t const to, void *vp);
extern smart__fctx_t make_fcontext(void *sp, size_t size,
				   void (*fn)(smart__transfer_t));

#if defined(__SANITIZE_ADDRESS__)
#define SMART_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SMART_ASAN 1
#endif
#endif

#ifdef SMART_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom,
				    size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save,
				     const void **bottom_old, size_t *size_old);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#endif

/* Before a switch to the stack [bottom, bottom + size); a NULL save slot
 * tells ASan the fiber we leave is finished. */
static inline void smart__fiber_asan_enter(void **save, const void *bottom,
					   size_t size)
{
#ifdef SMART_ASAN
	__sanitizer_start_switch_fiber(save, bottom, size);
#else
	(void)save, (void)bottom, (void)size;
#endif
}

/* First thing on the stack switched to. */
static inline void
smart__fiber_asan_entered(void *save, const void **bottom_old, size_t *size_old)
{
#ifdef SMART_ASAN
	__sanitizer_finish_switch_fiber(save, bottom_old, size_old);
#else
	(void)save, (void)bottom_old, (void)size_old;
#endif
}

/* Forget ASan's marks on a stack about to be unmapped (a fiber's entry
 * frame never returns, so its redzones are never cleared; libasan does not
 * clear them on munmap). */
static inline void smart__fiber_asan_forget(void *stack, size_t len)
{
#ifdef SMART_ASAN
	__asan_unpoison_memory_region(stack, len);
#else
	(void)stack, (void)len;
#endif
}

#endif
