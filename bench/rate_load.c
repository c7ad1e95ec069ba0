/*
 * rate_load.c -- an open-loop HTTP/1.1 load generator for bench/nginx.sh:
 * POSTs one body at a fixed rate over keep-alive connections and prints the
 * latency percentiles.  wrk's closed loop sends the next request only when
 * an answer came, so a stall delays the requests that would have waited
 * through it and they are never measured (coordinated omission); here
 * request i is due at start + i / RATE whatever happened before, and its
 * latency runs from that due time to the answer's last byte.
 *
 *   rate_load HOST PORT PATH BODY_FILE RATE SECONDS CONNECTIONS
 *
 * One thread, epoll, woken at each due time by a timerfd (no spinning: the
 * generator shares the machine with what it measures); a request goes out on an idle connection as
 * soon as it is due (one in flight per connection: no pipelining); a due request that finds none
 * idle waits in line, its clock running.  The first second is a warm-up, not counted.  Prints one
 * line: RATE_RESULT sent=<n> done=<n> rate=<achieved/s> p50=<us> p90=<us> p99=<us> p999=<us>
 * max=<us> non2xx=<n> errors=<n> late=<n> (late: requests still unanswered when the run ended,
 * counted as errors.)
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define READ_BYTES 65536

typedef struct {
    int fd;
    int busy;   /* a request in flight */
    double due; /* its due time */
    char *in;   /* the answer read so far */
    size_t in_len, in_cap;
} conn_t;

static struct sockaddr_in addr;
static char *request;
static size_t request_len;
static double *lat;
static long lat_n, lat_cap, non2xx, errors;

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        perror("rate_load: connect");
        exit(1);
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

/* The length of a whole answer at the start of buf: 0 while incomplete,
 * -1 when it cannot be read (no Content-Length, no chunks). */
static long answer_length(const char *buf, size_t len, int *status)
{
    const char *end = NULL;
    for (size_t i = 3; i < len; i++)
        if (memcmp(buf + i - 3, "\r\n\r\n", 4) == 0) {
            end = buf + i + 1;
            break;
        }
    if (!end)
        return 0;
    *status = atoi(buf + 9);
    size_t head = (size_t)(end - buf);
    for (const char *p = buf; p < end; p = strchr(p, '\n') + 1) {
        if (strncasecmp(p, "content-length:", 15) == 0) {
            size_t n = (size_t)strtoul(p + 15, NULL, 10);
            return head + n <= len ? (long)(head + n) : 0;
        }
        if (strncasecmp(p, "transfer-encoding:", 18) == 0) {
            size_t at = head;
            for (;;) { /* chunk-size CRLF data CRLF ... 0 CRLF CRLF */
                char *stop;
                const char *crlf = memchr(buf + at, '\n', len - at);
                if (!crlf)
                    return 0;
                size_t n = (size_t)strtoul(buf + at, &stop, 16);
                at = (size_t)(crlf - buf) + 1 + n + 2;
                if (at > len)
                    return 0;
                if (n == 0)
                    return (long)at;
            }
        }
    }
    return -1;
}

static void send_request(conn_t *c, double due)
{
    size_t off = 0;
    while (off < request_len) {
        ssize_t n = write(c->fd, request + off, request_len - off);
        if (n < 0 && errno == EAGAIN)
            continue; /* (a small request: the socket buffer has room) */
        if (n <= 0) {
            errors++;
            return;
        }
        off += (size_t)n;
    }
    c->busy = 1, c->due = due, c->in_len = 0;
}

static void record(double latency)
{
    if (lat_n == lat_cap) {
        lat_cap = lat_cap ? lat_cap * 2 : 65536;
        lat = realloc(lat, (size_t)lat_cap * sizeof *lat);
        if (!lat) {
            perror("rate_load");
            exit(1);
        }
    }
    lat[lat_n++] = latency;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double p)
{
    return lat_n ? lat[(long)(p * (double)(lat_n - 1))] * 1e6 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: rate_load HOST PORT PATH BODY_FILE RATE SECONDS CONNECTIONS\n");
        return 2;
    }
    size_t body_len;
    char *body = bench_read_all("rate_load", argv[4], &body_len);
    double rate = atof(argv[5]), seconds = atof(argv[6]);
    int nconn = atoi(argv[7]);
    if (rate <= 0 || seconds <= 1 || nconn < 1 || nconn > MAX_CONNS) {
        fprintf(stderr, "rate_load: RATE > 0, SECONDS > 1, 1 <= CONNECTIONS <= %d\n", MAX_CONNS);
        return 2;
    }
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)atoi(argv[2]));
    if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
        fprintf(stderr, "rate_load: HOST: an IPv4 address\n");
        return 2;
    }
    request = malloc(body_len + 512);
    request_len = (size_t)sprintf(
        request,
        "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Length: %zu\r\n\r\n",
        argv[3], argv[1], argv[2], body_len);
    memcpy(request + request_len, body, body_len);
    request_len += body_len;

    static conn_t conns[MAX_CONNS];
    int ep = epoll_create1(0);
    for (int i = 0; i < nconn; i++) {
        conns[i].fd = dial();
        conns[i].in = malloc(READ_BYTES), conns[i].in_cap = READ_BYTES;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conns[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
    }
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct epoll_event tev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &tev);
    double start = bench_now(), warm = start + 1.0, stop = start + seconds, interval = 1.0 / rate;
    long next = 0, counted_sent = 0; /* requests next..: not yet sent */
    int idle_hint = 0;
    for (;;) {
        double now = bench_now();
        if (now >= stop + 1.0)
            break; /* a second's grace for the last answers */
        /* every due request goes out on an idle connection while there is one */
        while (now < stop && start + (double)next * interval <= now) {
            int found = -1;
            for (int k = 0; k < nconn; k++) {
                int i = (idle_hint + k) % nconn;
                if (!conns[i].busy) {
                    found = i;
                    break;
                }
            }
            if (found < 0)
                break; /* it waits in line; its due time stands */
            idle_hint = found + 1;
            double due = start + (double)next * interval;
            send_request(&conns[found], due);
            next++;
            if (due >= warm)
                counted_sent++;
        }
        int busy = 0;
        for (int i = 0; i < nconn; i++)
            busy += conns[i].busy;
        if (now >= stop && busy == 0)
            break;
        /* woken at the next due time (or by an answer; at the latest in 10 ms) */
        double wake = start + (double)next * interval;
        if (wake <= now)
            wake = now + 10e-3; /* (none idle: an answer wakes it) */
        struct itimerspec at = {
            .it_value = {.tv_sec = (time_t)wake,
                         .tv_nsec = (long)((wake - (double)(time_t)wake) * 1e9)}};
        timerfd_settime(tfd, TFD_TIMER_ABSTIME, &at, NULL);
        struct epoll_event evs[64];
        int n = epoll_wait(ep, evs, 64, 20);
        double got = bench_now();
        for (int e = 0; e < n; e++) {
            conn_t *c = evs[e].data.ptr;
            if (!c) { /* the timer */
                uint64_t ticks;
                if (read(tfd, &ticks, sizeof ticks) <
                    0) { /* (EAGAIN: re-armed before it was read) */
                }
                continue;
            }
            for (;;) {
                if (c->in_cap - c->in_len < 4096)
                    c->in = realloc(c->in, c->in_cap *= 2);
                ssize_t r = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
                if (r < 0 && errno == EAGAIN)
                    break;
                if (r <= 0) { /* the server closed: count it, dial again */
                    if (c->busy)
                        errors++;
                    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                    close(c->fd);
                    c->fd = dial(), c->busy = 0, c->in_len = 0;
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
                    break;
                }
                c->in_len += (size_t)r;
            }
            int status = 0;
            long whole = c->busy ? answer_length(c->in, c->in_len, &status) : 0;
            if (whole < 0) {
                errors++, c->busy = 0;
                continue;
            }
            if (whole == 0)
                continue;
            if (c->due >= warm) {
                record(got - c->due);
                if (status < 200 || status > 299)
                    non2xx++;
            }
            c->busy = 0, c->in_len = 0;
        }
    }
    long late = 0;
    for (int i = 0; i < nconn; i++)
        late += conns[i].busy && conns[i].due >= warm;
    qsort(lat, (size_t)lat_n, sizeof *lat, by_value);
    printf(
        "RATE_RESULT sent=%ld done=%ld rate=%.0f p50=%.0f p90=%.0f p99=%.0f p999=%.0f max=%.0f non2xx=%ld "
        "errors=%ld late=%ld\n",
        counted_sent, lat_n, (double)lat_n / (seconds - 1.0), pct(0.5), pct(0.9), pct(0.99),
        pct(0.999), lat_n ? lat[lat_n - 1] * 1e6 : 0, non2xx, errors + late, late);
    return 0;
}
