/*
 * Blocking-with-a-deadline socket I/O for control paths (the bootstrap
 * client, the messaging layer's dialer): every wait is a poll() bounded by
 * an absolute CLOCK_MONOTONIC deadline in milliseconds, so a silent peer
 * costs at most the caller's timeout.  Sockets are non-blocking; nothing
 * here is for a data path.
 *
 * Errors: 0, SMART_ETIMEDOUT (deadline passed), SMART_ECONN (reset,
 * closed, refused), SMART_ESYS (no socket could be made).
 *
 * Thread safety: every function touches only its arguments.
 */
#ifndef SMART_UTIL_SOCKIO_H
#define SMART_UTIL_SOCKIO_H

#include <stddef.h>
#include <stdint.h>

/* Monotonic milliseconds. */
int64_t smart__now_ms(void);

/* What a wait does instead of blocking, when given one (the _w calls):
 * fn(arg) between looks at the socket (a messaging endpoint that must go
 * on being polled while it dials).  fn returns 0 when it found nothing
 * to do: past the first SMART_SOCK_SPIN_NS of the wait, the next look
 * then waits on the socket for up to SMART_SOCK_NAP_NS, woken at once by
 * its input; else it does not wait. */
struct smart__sock_idle {
	int (*fn)(void *arg);
	void *arg;
};
#define SMART_SOCK_NAP_NS  20000
#define SMART_SOCK_SPIN_NS 200000 /* before napping at all */

/* Descriptors that may travel with one message (SCM_RIGHTS). */
#define SMART_SOCK_FDS 3

/* One non-blocking send (MSG_DONTWAIT, MSG_NOSIGNAL) of up to len bytes;
 * the nfds (0..SMART_SOCK_FDS) descriptors of fds go with them
 * (SCM_RIGHTS).  Returns what send(2) returns, errno set. */
long smart__sock_send_some(int fd, const void *buf, size_t len, const int *fds,
			   int nfds);

/* Write all len bytes; the nfds descriptors of fds travel with the first
 * byte (SCM_RIGHTS, unix sockets only; the caller keeps its copies). */
int smart__sock_send_all(int fd, const void *buf, size_t len, const int *fds,
			 int nfds, int64_t deadline);
int smart__sock_send_all_w(int fd, const void *buf, size_t len, const int *fds,
			   int nfds, int64_t deadline,
			   const struct smart__sock_idle *idle);

/* Read exactly len bytes.  Descriptors that arrive with them (SCM_RIGHTS)
 * fill the free (-1) slots of fds[0..nfds) in order (close-on-exec; the
 * caller owns them); one more than fits is closed and reported as
 * SMART_EPROTO.  nfds 0: none is taken (any that comes is closed,
 * smart__sock_fd_drop, and reported so). */
int smart__sock_recv_exact(int fd, void *buf, size_t len, int *fds, int nfds,
			   int64_t deadline);
int smart__sock_recv_exact_w(int fd, void *buf, size_t len, int *fds, int nfds,
			     int64_t deadline,
			     const struct smart__sock_idle *idle);

/* Connect a non-blocking stream socket to the address (a struct sockaddr
 * of addr_len bytes: TCP gets TCP_NODELAY), waiting until the deadline. */
int smart__sock_connect(const void *addr, uint32_t addr_len, int64_t deadline,
			int *fd_out);
int smart__sock_connect_w(const void *addr, uint32_t addr_len, int64_t deadline,
			  const struct smart__sock_idle *idle, int *fd_out);

/* Close a descriptor a peer passed us.  Its last reference is then
 * ours, and close(2) of a socket with SO_LINGER set waits up to the
 * linger time the peer chose (a TCP socket whose FIN cannot leave: ~3 s
 * measured for a 3-s linger, and it may be hours) in our thread; with
 * the linger turned off first it returns at once.  Not a socket: a plain
 * close.  A unix socket may carry more such descriptors queued in it,
 * which the kernel would drop at our close: smart__sock_fd_drop shuts it
 * for reading and drops what it holds first, nested to the kernel's
 * depth, at most 4096 messages and descriptors in all (beyond them, the
 * rest is the kernel's, as is what a full descriptor table truncates). */
void smart__sock_unlinger(int fd);
void smart__sock_fd_drop(int fd);

/* One non-blocking recvmsg of up to len bytes (MSG_CMSG_CLOEXEC),
 * descriptors kept as smart__sock_recv_exact does; *extra set when one
 * came that did not fit (closed) or some were cut off.  Returns what
 * recvmsg(2) returns, errno set. */
long smart__sock_recv_some(int fd, void *buf, size_t len, int *fds, int nfds,
			   int *extra);

/* A bound (listen: also listening) non-blocking socket at the address
 * (struct sockaddr of addr_len bytes; TCP gets SO_REUSEADDR); backlog 0
 * binds only (the port is held).  *bound (a struct sockaddr_storage, or
 * NULL) gets the address bound, with the real port.  SMART_EEXIST when
 * the address is in use, else SMART_ESYS (errno kept for the message). */
int smart__sock_listen(const void *addr, uint32_t addr_len, int backlog,
		       int *fd_out, void *bound);

/* Fill *sun (a struct sockaddr_un) with the abstract unix address `name`
 * (no leading NUL); returns its length, 0 when name does not fit. */
uint32_t smart__sock_abstract(const char *name, void *sun);

/* "a.b.c.d:port" or "[v6]:port" of an IPv4/IPv6 struct sockaddr_storage. */
void smart__sock_addr_text(const void *ss, char *buf, size_t len);
#endif
