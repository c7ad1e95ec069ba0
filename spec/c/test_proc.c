/*
 * test_proc.c -- tg_proc (core/tg_proc.h), the stdio proxy's processes:
 *
 *  1. a child's three pipes: what it reads comes back on stdout and stderr,
 *     in order, and its exit status is seen;
 *  2. a command that does not exist is -ENOENT, with nothing left open;
 *  3. a signal the parent blocks reaches it through the signalfd, and the
 *     child starts with that signal unblocked and at its default (it
 *     ends the child: tg_proc_wait says which signal);
 *  4. a write to a child that closed its input is -EPIPE, not a SIGPIPE;
 *  5. poll's timeout and the event bits;
 *  6. the local state's directory: mkdir, stat, chmod and umask;
 *  7. a TCP connection (registry record --url): to an IPv4 literal,
 *     localhost and an IPv6 literal; a closed port is -ECONNREFUSED, a name
 *     is -EINVAL (no lookup); a write to a peer that closed is -EPIPE
 *     with SIGPIPE not blocked;
 *  8. the audit log's syslog: a datagram each to a unix datagram socket
 *     (none there: -ENOENT), and the time since the epoch.
 */
#define _GNU_SOURCE
#include "tap.h"
#include "tg_proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Reads fd until its end (bounded by ~5 s of polls), into buf. */
static size_t read_all(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    int i;

    for (i = 0; i < 500 && n < cap; i++) {
        short ev = (short)tg_proc_poll_bits(0), rev = 0;
        long r;

        if (tg_proc_poll(&fd, &ev, &rev, 1, 10) <= 0) {
            continue;
        }
        r = tg_proc_read(fd, buf + n, cap - n);
        if (r == 0) {
            break;
        }
        if (r > 0) {
            n += (size_t)r;
        }
    }
    return n;
}

static int wait_exit(int pid, int *code, int *signo)
{
    int i, rc = 0;

    for (i = 0; i < 500 && rc == 0; i++) {
        rc = tg_proc_wait(pid, 1, code, signo);
        if (rc == 0) {
            usleep(10000);
        }
    }
    return rc;
}

/* A listening socket on an ephemeral port of the loopback address of
 * family af: its descriptor (-1 when the family is not there), *port. */
static int listener(int af, int *port)
{
    struct sockaddr_in6 a6;
    struct sockaddr_in a4;
    struct sockaddr *a = af == AF_INET ? (struct sockaddr *)&a4 : (struct sockaddr *)&a6;
    socklen_t len = af == AF_INET ? sizeof a4 : sizeof a6;
    int fd = socket(af, SOCK_STREAM, 0);

    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    a4.sin_family = AF_INET;
    a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a6.sin6_family = AF_INET6;
    a6.sin6_addr = in6addr_loopback;
    if (fd < 0 || bind(fd, a, len) != 0 || listen(fd, 4) != 0 || getsockname(fd, a, &len) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    *port = ntohs(af == AF_INET ? a4.sin_port : a6.sin6_port);
    return fd;
}

/* Connects to host at the listener's port and passes bytes both ways. */
static void talk(const char *host, int lfd, int port)
{
    char buf[16], name[96];
    int fd = tg_proc_connect(host, port, 2000), peer;
    size_t n;

    snprintf(name, sizeof name, "connect to %s", host);
    tap_ok(fd >= 0, name);
    if (fd < 0) {
        return;
    }
    peer = accept(lfd, NULL, NULL);
    tap_ok(tg_proc_nonblock(fd, 1) == 1, "the socket is non-blocking");
    tap_ok(tg_proc_write(fd, "ping", 4) == 4 && read(peer, buf, sizeof buf) == 4,
           "it writes to the peer");
    tap_ok(write(peer, "pong", 4) == 4, "the peer answers");
    n = read_all(fd, buf, 4);
    tap_is_mem(buf, n, "pong", "it reads the answer");
    close(peer);
    n = read_all(fd, buf, sizeof buf);
    tap_ok(n == 0, "the peer's close is the end of its input");
    tg_proc_close(fd);
}

int main(void)
{
    const char *cat_argv[] = {"sh", "-c", "cat; echo to-stderr >&2; exit 3", NULL};
    const char *none_argv[] = {"/nonexistent/toolgate-proc-test", NULL};
    const char *sleep_argv[] = {"sh", "-c", "echo up; exec sleep 30", NULL};
    const char *closer_argv[] = {"sh", "-c", "exec 0<&-; echo closed; exec sleep 30", NULL};
    tg_proc_t p;
    char buf[256];
    size_t n;
    int code = -1, signo = -1, sigs[1] = {SIGUSR1}, sfd, fd;
    short ev, rev;

    /* 1 */
    tap_ok(tg_proc_spawn(cat_argv, &p) == 0, "spawn sh -c cat");
    tap_ok(tg_proc_write(p.in, "hello\nworld\n", 12) == 12, "write to the child's input");
    tap_ok(tg_proc_close(p.in) == 0, "close its input");
    n = read_all(p.out, buf, sizeof buf);
    tap_is_mem(buf, n, "hello\nworld\n", "its output is its input, in order");
    n = read_all(p.err, buf, sizeof buf);
    tap_is_mem(buf, n, "to-stderr\n", "its standard error on its own pipe");
    tap_ok(wait_exit(p.pid, &code, &signo) == 1 && code == 3 && signo == 0, "its exit status 3");
    tg_proc_close(p.out);
    tg_proc_close(p.err);

    /* 2 */
    tap_ok(tg_proc_spawn(none_argv, &p) == -ENOENT, "a missing command is -ENOENT");
    tap_ok(tg_proc_spawn(NULL, &p) == -EINVAL, "no argv is -EINVAL");

    /* 3 */
    sfd = tg_proc_signals(sigs, 1);
    tap_ok(sfd >= 0, "signalfd for SIGUSR1");
    tap_ok(tg_proc_next_signal(sfd) == 0, "no signal waits yet");
    kill(getpid(), SIGUSR1);
    tap_ok(tg_proc_next_signal(sfd) == SIGUSR1, "SIGUSR1 read from the descriptor, not a handler");
    tap_ok(tg_proc_signum("TERM") == SIGTERM && tg_proc_signum("NOPE") == 0, "signal names");
    tap_ok(tg_proc_spawn(sleep_argv, &p) == 0, "spawn a sleeper");
    n = read_all(p.out, buf, 3);
    tap_is_mem(buf, n, "up\n", "it runs");
    tap_ok(tg_proc_wait(p.pid, 1, &code, &signo) == 0, "it still runs (nohang)");
    /* the parent blocks SIGUSR1; the child must not have inherited that */
    tap_ok(tg_proc_kill(p.pid, SIGUSR1) == 0, "SIGUSR1 it");
    tap_ok(wait_exit(p.pid, &code, &signo) == 1 && signo == SIGUSR1,
           "it ended by SIGUSR1 (not blocked in the child)");
    tg_proc_close(p.in);
    tg_proc_close(p.out);
    tg_proc_close(p.err);
    tg_proc_close(sfd);

    /* 4 */
    tap_ok(tg_proc_spawn(closer_argv, &p) == 0, "spawn a child that closes its input");
    n = read_all(p.out, buf, 7);
    tap_is_mem(buf, n, "closed\n", "it closed it");
    tap_ok(tg_proc_write(p.in, "x\n", 2) == -EPIPE, "writing to it is -EPIPE (SIGPIPE blocked)");
    tg_proc_kill(p.pid, SIGKILL);
    tap_ok(wait_exit(p.pid, &code, &signo) == 1 && signo == SIGKILL, "SIGKILL ends it");
    tg_proc_close(p.in);
    tg_proc_close(p.out);
    tg_proc_close(p.err);

    /* 5 */
    tap_ok(tg_proc_spawn(sleep_argv, &p) == 0, "spawn a quiet child");
    fd = p.err;
    ev = (short)tg_proc_poll_bits(0);
    rev = 1;
    tap_ok(tg_proc_poll(&fd, &ev, &rev, 1, 20) == 0, "poll times out on a quiet pipe");
    tap_ok(tg_proc_poll(&fd, &ev, &rev, 17, 0) == -EINVAL, "more than 16 descriptors is -EINVAL");
    tap_ok(tg_proc_nonblock(p.out, 1) == 1, "the parent's ends are non-blocking");
    tap_ok(tg_proc_read(p.err, buf, sizeof buf) == -EAGAIN, "an empty pipe reads -EAGAIN");
    tg_proc_kill(p.pid, SIGKILL);
    wait_exit(p.pid, &code, &signo);
    tg_proc_close(p.in);
    tg_proc_close(p.out);
    tg_proc_close(p.err);
    tap_ok(tg_proc_now() > 0, "a monotonic clock");

    /* 6 */
    {
        char dir[] = "/tmp/toolgate-test-proc.XXXXXX", sub[64];
        int perm = -1, uid = -1, is_dir = -1, old;

        tap_ok(mkdtemp(dir) != NULL, "a temporary directory");
        snprintf(sub, sizeof sub, "%s/d", dir);
        old = tg_proc_umask(022);
        tap_ok(tg_proc_mkdir(sub, 0777) == 0, "mkdir");
        tap_ok(tg_proc_mkdir(sub, 0700) == -EEXIST, "mkdir of a directory that exists is -EEXIST");
        tap_ok(tg_proc_stat(sub, &perm, &uid, &is_dir) == 0 && perm == 0755 && is_dir == 1 &&
                   uid == tg_proc_euid(),
               "stat: mode 0755 under umask 022, a directory, ours");
        tap_ok(tg_proc_umask(old) == 022, "umask returns the mask before");
        tap_ok(tg_proc_chmod(sub, 01777) == 0 && tg_proc_stat(sub, &perm, &uid, &is_dir) == 0 &&
                   perm == 01777,
               "chmod, and stat's bits include the sticky bit");
        tap_ok(tg_proc_stat("/nonexistent/toolgate", &perm, &uid, &is_dir) == -ENOENT,
               "stat of nothing: -ENOENT");
        rmdir(sub);
        rmdir(dir);
    }

    /* 7 */
    {
        sigset_t pipe_set;
        char big[65536];
        int port = 0, lfd = listener(AF_INET, &port), i, peer;
        long w = 0;

        tap_ok(lfd >= 0, "listen on 127.0.0.1");
        talk("127.0.0.1", lfd, port);
        talk("localhost", lfd, port);
        close(lfd);
        tap_ok(tg_proc_connect("127.0.0.1", port, 2000) == -ECONNREFUSED,
               "a closed port is -ECONNREFUSED");
        tap_ok(tg_proc_connect("example.invalid", port, 2000) == -EINVAL,
               "a name is -EINVAL: no lookup");
        tap_ok(tg_proc_connect("127.0.0.1", 0, 2000) == -EINVAL &&
                   tg_proc_connect("127.0.0.1", 65536, 2000) == -EINVAL,
               "a port out of 1..65535 is -EINVAL");
        lfd = listener(AF_INET6, &port);
        if (lfd >= 0) {
            talk("::1", lfd, port);
            close(lfd);
        } else {
            tap_ok(1, "# skip: no IPv6 loopback here");
        }
        /* section 3 blocked SIGPIPE (and section 4 left one pending: take
         * it): unblock it, so a SIGPIPE would end this test */
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        {
            struct timespec now = {0, 0};

            while (sigtimedwait(&pipe_set, NULL, &now) == SIGPIPE) {
            }
        }
        sigprocmask(SIG_UNBLOCK, &pipe_set, NULL);
        lfd = listener(AF_INET, &port);
        fd = tg_proc_connect("127.0.0.1", port, 2000);
        peer = accept(lfd, NULL, NULL);
        close(peer);
        close(lfd);
        memset(big, 'x', sizeof big);
        for (i = 0; i < 100 && w >= 0; i++) {
            w = tg_proc_write(fd, big, sizeof big);
            usleep(1000);
        }
        tap_ok(w == -EPIPE || w == -ECONNRESET,
               "a write to a peer that closed fails, without a SIGPIPE");
        tg_proc_close(fd);
    }

    /* 8 */
    {
        char dir[] = "/tmp/toolgate-test-proc.XXXXXX", path[64], got[64], longer[200];
        struct sockaddr_un addr;
        time_t before = time(NULL);
        ssize_t got_n;
        int rfd;

        tap_ok(mkdtemp(dir) != NULL, "a temporary directory");
        snprintf(path, sizeof path, "%s/log", dir);
        tap_ok(tg_proc_datagram(path, "x", 1) == -ENOENT, "a datagram to no socket is -ENOENT");
        rfd = socket(AF_UNIX, SOCK_DGRAM, 0);
        memset(&addr, 0, sizeof addr);
        addr.sun_family = AF_UNIX;
        memcpy(addr.sun_path, path, strlen(path) + 1);
        tap_ok(rfd >= 0 && bind(rfd, (struct sockaddr *)&addr, sizeof addr) == 0,
               "a datagram socket bound");
        tap_ok(tg_proc_datagram(path, "<110>one", 8) == 0 && tg_proc_datagram(path, "two", 3) == 0,
               "two datagrams sent");
        got_n = recv(rfd, got, sizeof got, 0);
        tap_is_mem(got, got_n < 0 ? 0 : (size_t)got_n, "<110>one", "the first, whole");
        got_n = recv(rfd, got, sizeof got, 0);
        tap_is_mem(got, got_n < 0 ? 0 : (size_t)got_n, "two", "then the second: a datagram each");
        memset(longer, 'a', sizeof longer - 1);
        longer[sizeof longer - 1] = '\0';
        tap_ok(tg_proc_datagram(longer, "x", 1) == -ENAMETOOLONG,
               "a path too long is -ENAMETOOLONG");
        close(rfd);
        unlink(path);
        rmdir(dir);
        tap_ok(tg_proc_time() >= (double)before && tg_proc_time() < (double)before + 60,
               "seconds since the epoch");
    }
    return tap_done();
}
