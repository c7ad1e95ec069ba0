/* tg_proc.h -- a child process on pipes, and the process's signals as a
 * file descriptor: what toolgate's stdio MCP proxy (toolgate mcp-proxy)
 * needs to relay a server's stdin, stdout and stderr without blocking one
 * direction on another.  Linux (signalfd).
 *
 * Why a module of the project's own rather than Debian's lua-posix: the
 * proxy must run under Lua 5.4 (the command) and LuaJIT (the specs), and
 * Debian 12's lua-posix 33.4 ships no Lua 5.4 build; and the child is
 * started with posix_spawnp, so no Lua code ever runs between fork and exec
 * (a fork from LuaJIT's FFI would run the collector in the child).  The
 * Lua 5.4 binding is lua/toolgate/proc_c.c, the LuaJIT one
 * lua/toolgate/proc_ffi.lua; both call these functions.
 *
 * Every function returns a negative errno on failure and never prints,
 * exits or keeps state of its own (signals reach the caller through a
 * signalfd, not a handler writing to a global). */
#ifndef TG_PROC_H
#define TG_PROC_H

#include "toolgate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A started child: its pid and the parent's ends of its three pipes (each
 * O_NONBLOCK and O_CLOEXEC). */
typedef struct tg_proc_t {
    int pid;
    int in;  /* write: the child's standard input */
    int out; /* read: the child's standard output */
    int err; /* read: the child's standard error */
} tg_proc_t;

/* Starts argv[0] (looked up in PATH) with argv (NULL-terminated), every
 * signal at its default disposition and none blocked.  Returns 0 and fills
 * *p, or a negative errno (-ENOENT: no such command). */
TG_API int tg_proc_spawn(const char *const *argv, tg_proc_t *p);

/* Blocks the n signals in sigs[] and SIGPIPE (a write to a closed pipe then
 * returns -EPIPE) and returns a non-blocking signalfd that reads the n
 * signals, or a negative errno. */
TG_API int tg_proc_signals(const int *sigs, int n);

/* The next signal waiting on a tg_proc_signals descriptor: its number, 0
 * when none waits, or a negative errno. */
TG_API int tg_proc_next_signal(int fd);

/* poll(2) over n descriptors: revents[i] gets what fds[i] is ready for.
 * Returns how many are ready, 0 on timeout or an interrupted wait, or a
 * negative errno.  timeout_ms < 0 waits without a limit. */
TG_API int tg_proc_poll(const int *fds, const short *events, short *revents, int n, int timeout_ms);

/* read(2): bytes read (0: end of file), or a negative errno (-EAGAIN:
 * nothing to read now). */
TG_API long tg_proc_read(int fd, char *buf, size_t cap);

/* write(2): bytes written, or a negative errno (-EAGAIN: the pipe is full).
 * On a socket it is send(2) with MSG_NOSIGNAL: a peer that closed is -EPIPE,
 * never a SIGPIPE, whether or not the caller blocked that signal. */
TG_API long tg_proc_write(int fd, const char *buf, size_t len);

/* A TCP connection to host:port (toolgate registry record --url), within
 * timeout_ms: a non-blocking, close-on-exec socket, or a negative errno
 * (-ETIMEDOUT, -ECONNREFUSED, ...).  host is an IPv4 or IPv6 literal (no
 * brackets) or "localhost" (127.0.0.1, then ::1); there is no name lookup,
 * so nothing waits on a resolver past the timeout: any other name is
 * -EINVAL.  Read and write it with tg_proc_read and tg_proc_write. */
TG_API int tg_proc_connect(const char *host, int port, int timeout_ms);

/* One datagram to the unix datagram socket at path (the local syslog's
 * /dev/log): sent without waiting, 0 or a negative errno (-EAGAIN: the
 * reader's queue is full; -EMSGSIZE: too long for one datagram). */
TG_API int tg_proc_datagram(const char *path, const char *data, size_t len);

/* Sets or clears O_NONBLOCK; returns whether it was set before (0 or 1),
 * or a negative errno. */
TG_API int tg_proc_nonblock(int fd, int on);

/* waitpid(2): 1 when pid ended (*code its exit status, or *signo the
 * signal that ended it), 0 when it still runs (nohang), a negative errno. */
TG_API int tg_proc_wait(int pid, int nohang, int *code, int *signo);

/* kill(2) and close(2): 0 or a negative errno. */
TG_API int tg_proc_kill(int pid, int signo);
TG_API int tg_proc_close(int fd);

/* What the local state's directory and files need (toolgate's state is
 * refused in a directory others may write, as ssh refuses its files):
 * stat(2) of path, following links: 0, *perm its permission bits (mode &
 * 07777), *uid its owner and *is_dir whether it is a directory; or a
 * negative errno (-ENOENT: no such file). */
TG_API int tg_proc_stat(const char *path, int *perm, int *uid, int *is_dir);

/* The process's effective user id. */
TG_API int tg_proc_euid(void);

/* mkdir(2) and chmod(2): 0 or a negative errno (-EEXIST: it exists). */
TG_API int tg_proc_mkdir(const char *path, int mode);
TG_API int tg_proc_chmod(const char *path, int mode);

/* umask(2): sets the file mode creation mask, returns the one before. */
TG_API int tg_proc_umask(int mask);

/* A signal's number by its name without "SIG" ("TERM"), 0 for an unknown
 * name; the poll event bits (POLLIN, POLLOUT, POLLERR, POLLHUP, POLLNVAL);
 * the monotonic clock in seconds; strerror of a positive errno. */
TG_API int tg_proc_signum(const char *name);
TG_API int tg_proc_poll_bits(int which);
TG_API double tg_proc_now(void);
TG_API const char *tg_proc_strerror(int errnum);

/* Seconds since the epoch (CLOCK_REALTIME), to the nanosecond: when an
 * audit record was written. */
TG_API double tg_proc_time(void);

#ifdef __cplusplus
}
#endif
#endif
