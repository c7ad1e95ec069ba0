/* tg_proc.c -- child processes on pipes and signals on a descriptor, for the
 * stdio MCP proxy (see tg_proc.h for why this is the project's own). */
#define _GNU_SOURCE
#include "tg_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int fail(void)
{
    return errno ? -errno : -EIO;
}

static void close_pair(int fds[2])
{
    if (fds[0] >= 0) {
        close(fds[0]);
    }
    if (fds[1] >= 0) {
        close(fds[1]);
    }
}

int tg_proc_spawn(const char *const *argv, tg_proc_t *p)
{
    int pipes[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, all;
    pid_t pid;
    int rc, i;

    if (!argv || !argv[0] || !p) {
        return -EINVAL;
    }
    for (i = 0; i < 3; i++) {
        if (pipe2(pipes[i], O_CLOEXEC) != 0) {
            rc = fail();
            for (i = 0; i < 3; i++) {
                close_pair(pipes[i]);
            }
            return rc;
        }
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    /* the child's ends become 0, 1 and 2 (dup2 clears O_CLOEXEC on them) */
    posix_spawn_file_actions_adddup2(&fa, pipes[0][0], 0);
    posix_spawn_file_actions_adddup2(&fa, pipes[1][1], 1);
    posix_spawn_file_actions_adddup2(&fa, pipes[2][1], 2);
    /* the proxy blocks the signals it relays: the server must not inherit that */
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    rc = posix_spawnp(&pid, argv[0], &fa, &attr, (char *const *)(uintptr_t)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(pipes[0][0]);
    close(pipes[1][1]);
    close(pipes[2][1]);
    if (rc != 0) {
        close(pipes[0][1]);
        close(pipes[1][0]);
        close(pipes[2][0]);
        return -rc;
    }
    p->pid = (int)pid;
    p->in = pipes[0][1];
    p->out = pipes[1][0];
    p->err = pipes[2][0];
    tg_proc_nonblock(p->in, 1);
    tg_proc_nonblock(p->out, 1);
    tg_proc_nonblock(p->err, 1);
    return 0;
}

int tg_proc_signals(const int *sigs, int n)
{
    sigset_t set, block;
    int i, fd;

    sigemptyset(&set);
    for (i = 0; i < n; i++) {
        if (sigaddset(&set, sigs[i]) != 0) {
            return -EINVAL;
        }
    }
    block = set;
    sigaddset(&block, SIGPIPE);
    if (sigprocmask(SIG_BLOCK, &block, NULL) != 0) {
        return fail();
    }
    fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return fd < 0 ? fail() : fd;
}

int tg_proc_next_signal(int fd)
{
    struct signalfd_siginfo si;
    ssize_t n = read(fd, &si, sizeof si);

    if (n == (ssize_t)sizeof si) {
        return (int)si.ssi_signo;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return 0;
    }
    return n < 0 ? fail() : -EIO;
}

int tg_proc_poll(const int *fds, const short *events, short *revents, int n, int timeout_ms)
{
    struct pollfd set[16];
    int i, rc;

    if (n < 0 || n > 16) {
        return -EINVAL;
    }
    for (i = 0; i < n; i++) {
        set[i].fd = fds[i];
        set[i].events = events[i];
        set[i].revents = 0;
    }
    rc = poll(set, (nfds_t)n, timeout_ms);
    if (rc < 0) {
        return errno == EINTR ? 0 : fail();
    }
    for (i = 0; i < n; i++) {
        revents[i] = set[i].revents;
    }
    return rc;
}

long tg_proc_read(int fd, char *buf, size_t cap)
{
    ssize_t n;

    do {
        n = read(fd, buf, cap);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? fail() : (long)n;
}

long tg_proc_write(int fd, const char *buf, size_t len)
{
    ssize_t n;

    do {
        n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK) {
            n = write(fd, buf, len);
        }
    } while (n < 0 && errno == EINTR);
    return n < 0 ? fail() : (long)n;
}

/* One address: the connected socket, or a negative errno. */
static int connect_one(const struct addrinfo *a, double deadline)
{
    struct pollfd pfd;
    socklen_t len = sizeof(int);
    int fd, err = 0, rc, left;

    fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return fail();
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        return fd;
    }
    if (errno != EINPROGRESS) {
        rc = fail();
        close(fd);
        return rc;
    }
    pfd.fd = fd;
    pfd.events = POLLOUT;
    for (;;) {
        left = (int)((deadline - tg_proc_now()) * 1000.0);
        if (left <= 0) {
            close(fd);
            return -ETIMEDOUT;
        }
        rc = poll(&pfd, 1, left);
        if (rc > 0) {
            break;
        }
        if (rc < 0 && errno != EINTR) {
            rc = fail();
            close(fd);
            return rc;
        }
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        err = errno;
    }
    if (err != 0) {
        close(fd);
        return -err;
    }
    return fd;
}

int tg_proc_connect(const char *host, int port, int timeout_ms)
{
    static const char *const LOCALHOST[] = {"127.0.0.1", "::1"};
    struct addrinfo hints, *res;
    double deadline = tg_proc_now() + (double)timeout_ms / 1000.0;
    char service[16];
    int i, n = 1, rc = -EINVAL;
    const char *const *names = &host;

    if (!host || port < 1 || port > 65535 || timeout_ms < 0) {
        return -EINVAL;
    }
    if (strcmp(host, "localhost") == 0) {
        names = LOCALHOST;
        n = 2;
    }
    snprintf(service, sizeof service, "%d", port);
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    for (i = 0; i < n; i++) {
        if (getaddrinfo(names[i], service, &hints, &res) != 0) {
            continue;
        }
        rc = connect_one(res, deadline);
        freeaddrinfo(res);
        if (rc >= 0 || rc == -ETIMEDOUT) {
            return rc;
        }
    }
    return rc;
}

int tg_proc_nonblock(int fd, int on)
{
    int flags = fcntl(fd, F_GETFL);

    if (flags < 0) {
        return fail();
    }
    if (fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK)) != 0) {
        return fail();
    }
    return (flags & O_NONBLOCK) ? 1 : 0;
}

int tg_proc_wait(int pid, int nohang, int *code, int *signo)
{
    int status = 0;
    pid_t r;

    do {
        r = waitpid((pid_t)pid, &status, nohang ? WNOHANG : 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        return fail();
    }
    if (r == 0) {
        return 0;
    }
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    *signo = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return 1;
}

int tg_proc_kill(int pid, int signo)
{
    return kill((pid_t)pid, signo) == 0 ? 0 : fail();
}

int tg_proc_close(int fd)
{
    return close(fd) == 0 ? 0 : fail();
}

int tg_proc_stat(const char *path, int *perm, int *uid, int *is_dir)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        return fail();
    }
    *perm = (int)(st.st_mode & 07777);
    *uid = (int)st.st_uid;
    *is_dir = S_ISDIR(st.st_mode) ? 1 : 0;
    return 0;
}

int tg_proc_euid(void)
{
    return (int)geteuid();
}

int tg_proc_mkdir(const char *path, int mode)
{
    return mkdir(path, (mode_t)mode) == 0 ? 0 : fail();
}

int tg_proc_datagram(const char *path, const char *data, size_t len)
{
    struct sockaddr_un addr;
    const struct sockaddr *to = (const struct sockaddr *)&addr;
    size_t n = strlen(path);
    int fd, rc = 0;

    if (n >= sizeof addr.sun_path) {
        return -ENAMETOOLONG;
    }
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, path, n + 1);
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return fail();
    }
    if (sendto(fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL, to, sizeof addr) < 0) {
        rc = fail();
    }
    close(fd);
    return rc;
}

int tg_proc_chmod(const char *path, int mode)
{
    return chmod(path, (mode_t)mode) == 0 ? 0 : fail();
}

int tg_proc_umask(int mask)
{
    return (int)umask((mode_t)mask);
}

/* clang-format off */
static const struct { const char *name; int signo; } SIGNALS[] = {
    {"HUP", SIGHUP}, {"INT", SIGINT}, {"QUIT", SIGQUIT}, {"KILL", SIGKILL}, {"USR1", SIGUSR1},
    {"USR2", SIGUSR2}, {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"CHLD", SIGCHLD},
    {"CONT", SIGCONT}, {"STOP", SIGSTOP}, {"TSTP", SIGTSTP}, {"WINCH", SIGWINCH},
};
/* clang-format on */

int tg_proc_signum(const char *name)
{
    size_t i;

    for (i = 0; name && i < sizeof SIGNALS / sizeof SIGNALS[0]; i++) {
        if (strcmp(SIGNALS[i].name, name) == 0) {
            return SIGNALS[i].signo;
        }
    }
    return 0;
}

int tg_proc_poll_bits(int which)
{
    static const int bits[] = {POLLIN, POLLOUT, POLLERR, POLLHUP, POLLNVAL};

    return which >= 0 && which < 5 ? bits[which] : 0;
}

double tg_proc_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double tg_proc_time(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *tg_proc_strerror(int errnum)
{
    return strerror(errnum);
}
