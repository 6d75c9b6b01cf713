/** @file
 * Status codes returned by every public smart_* function.
 *
 * Convention (errno style): 0 is success, a negative SMART_E* value is an
 * error.  A function that returns an error has had no side effect and has
 * scheduled no callback, unless its declaration states the exception and
 * why (docs/api.md §2 lists them, with the functions whose return is a
 * value, a predicate or a count).  smart_strerror() never returns NULL.
 *
 * Thread safety: all functions here are pure and thread safe.
 */
#ifndef SMART_STATUS_H
#define SMART_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

enum smart_status {
	SMART_OK = 0,
	SMART_EINVAL = -1, /**< bad argument (NULL, size, alignment, range) */
	SMART_ENOMEM = -2, /**< local memory or registered pool exhausted */
	SMART_ENOSPC = -3, /**< remote memory of a blade exhausted */
	SMART_ENOENT = -4, /**< no such blade, key, root entry or file */
	SMART_EEXIST = -5, /**< already exists (blade id in use, key present) */
	SMART_EBUSY = -6,  /**< resource in use (tasks still running) */
	SMART_EAGAIN = -7, /**< transient: queue full, try again */
	SMART_ETIMEDOUT = -8, /**< a peer did not answer in time */
	SMART_EPROTO = -9,    /**< malformed or unexpected protocol message */
	SMART_EVERSION = -10, /**< peer speaks another protocol version */
	SMART_EACCES = -11,   /**< authentication failed (shared secret) */
	SMART_ECONN = -12,    /**< connection refused, reset or lost */
	SMART_EREMOTE = -13,  /**< remote access error (bounds or key) */
	SMART_EQP = -14,      /**< queue pair in error state (op flushed) */
	SMART_ENOTSUP = -15,  /**< not supported by this transport or build */
	SMART_ESYS = -16,     /**< a system call failed; see the log */
	SMART_ERANGE = -17,   /**< value out of the representable range */
	SMART_ERETRY = -18,   /**< gave up after too many retries */
	SMART_EFENCED = -19,  /**< this client was fenced (its lease expired
				 * or a peer declared it dead): it must stop,
				 * others may be undoing its work */
	SMART_EABORT = -20,   /**< a transaction was aborted (a conflict);
				 * its effects are gone: begin it again */
	SMART_E_LAST = -21
};

/** A short English message for a status code; unknown codes get "unknown".
 * Thread: any. */
const char *smart_strerror(int status);

/** The symbolic name, e.g. "SMART_EINVAL"; unknown codes get "SMART_E?".
 * Thread: any. */
const char *smart_status_name(int status);

#ifdef __cplusplus
}
#endif
#endif
