/*
 * test_reader.c -- tg_reader and tg_write_all: what the chunk entry points
 * are given is exactly the input's complete lines, in order, whatever
 * sizes read(2) returns (a pipe fed in random pieces by a child), with a
 * '\n' added to an unended last line; a line longer than the buffer is
 * held whole; what is not taken comes back; reading and writing errors
 * say what failed; an allocation that fails is an error, never lost or
 * invented bytes, and every byte is given back.  Reading ahead (a regular
 * file, while its lines are decided) changes none of that, and never
 * waits on a pipe.
 */
#define _XOPEN_SOURCE 700
#include "acct.h"
#include "tap.h"
#include "tg_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t rng = 0x2545f4914f6cdd1du;
static size_t pick(size_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (size_t)(rng % n);
}

/* Random JSON-Lines-like text: lines of 0 .. max bytes (blank ones too),
 * the last one ended or not. */
static char *gen_text(size_t lines, size_t max, size_t *len)
{
    size_t cap = lines * (max + 1) + 1, n = 0;
    char *t = malloc(cap);
    for (size_t i = 0; i < lines; i++) {
        size_t k = pick(max + 1);
        for (size_t j = 0; j < k; j++)
            t[n++] = (char)('a' + pick(26));
        if (i + 1 < lines || pick(2))
            t[n++] = '\n';
    }
    *len = n;
    return t;
}

/* A pipe whose other end a child fills with text in random pieces (1 byte
 * to 100 KB), then closes. */
static int feed(const char *text, size_t len, pid_t *pid)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    if ((*pid = fork()) == 0) {
        size_t at = 0;
        close(fds[0]);
        while (at < len) {
            size_t n = 1 + pick(pick(2) ? 16 : 100000);
            ssize_t w;
            if (n > len - at)
                n = len - at;
            if ((w = write(fds[1], text + at, n)) < 0)
                _exit(1);
            at += (size_t)w;
        }
        _exit(0);
    }
    close(fds[1]);
    return fds[0];
}

/* Reads all of fd through a reader, taking a random part of what each
 * call holds (and, with ahead, reading ahead a random amount now and
 * then, as a worker does while the lines held are decided); returns what
 * was handed over, joined. */
static char *drain(tg_engine_t *e, int fd, size_t want, int ahead, size_t *len, int *rc)
{
    tg_reader_t *r = tg_reader_new(e, fd, NULL);
    size_t cap = 1 << 16, n = 0;
    char *got = malloc(cap);
    *rc = TG_OK;
    for (;;) {
        const char *text;
        size_t held, take;
        if ((*rc = tg_reader_lines(r, want, &text, &held, NULL)) != TG_OK || held == 0)
            break;
        if (text[held - 1] != '\n')
            *rc = -1; /* only complete lines are ever handed over */
        /* take whole lines, as tg_check_lines does: up to a random one */
        take = held;
        if (pick(3) == 0) {
            const char *nl = memchr(text, '\n', pick(held) + 1);
            take = nl ? (size_t)(nl - text) + 1 : held;
        }
        while (n + take > cap)
            got = realloc(got, cap *= 2);
        memcpy(got + n, text, take);
        n += take;
        if (ahead && pick(2))
            tg_reader_read_ahead(r, 1 + pick(pick(2) ? 300 : 300000));
        tg_reader_take(r, take);
    }
    tg_reader_free(r);
    *len = n;
    return got;
}

/* Whether a reader handed over text (len bytes) whole: its complete lines,
 * in order, an unended last line ended. */
static int handed_over(const char *text, size_t len, const char *got, size_t got_len, int rc,
                       int round)
{
    size_t expect = len + (len && text[len - 1] != '\n');
    if (rc == TG_OK && got_len == expect && memcmp(got, text, len) == 0 &&
        (expect == len || got[len] == '\n'))
        return 1;
    printf("# round %d: rc %d, %zu bytes for %zu\n", round, rc, got_len, expect);
    return 0;
}

static void test_pieces(void)
{
    tg_engine_t *e = tg_engine_new(NULL, NULL, NULL, NULL);
    int bad = 0;
    for (int round = 0; round < 60; round++) {
        size_t len, got_len, want = round % 3 == 0 ? 1 : round % 3 == 1 ? 4096 : 1 << 20;
        size_t max = round % 4 == 0 ? 200000 : 300; /* some lines longer than the buffer */
        char *text = gen_text(1 + pick(round % 4 == 0 ? 12 : 2000), max, &len);
        pid_t pid = -1;
        int fd = feed(text, len, &pid), rc, status;
        char *got = drain(e, fd, want, 0, &got_len, &rc);
        close(fd);
        waitpid(pid, &status, 0);
        bad += !handed_over(text, len, got, got_len, rc, round);
        free(text);
        free(got);
    }
    tap_ok(bad == 0, "a pipe fed in random pieces: the complete lines, in order, an unended last "
                     "line ended, whatever was taken at a time");
    tg_engine_free(e);
}

/* A regular file read ahead at random moments: the same complete lines,
 * in order, lines longer than the room kept for them included; the file
 * is read further by it (so reading ahead did happen). */
static void test_read_ahead(void)
{
    tg_engine_t *e = tg_engine_new(NULL, NULL, NULL, NULL);
    int bad = 0;
    for (int round = 0; round < 40; round++) {
        char path[] = "/tmp/tg_reader_XXXXXX";
        int fd = mkstemp(path), rc;
        size_t len, got_len, want = round % 2 ? 4096 : 1 << 20;
        char *text =
            gen_text(1 + pick(round % 4 == 0 ? 12 : 3000), round % 4 == 0 ? 200000 : 600, &len);
        char *got;
        if (write(fd, text, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0)
            bad++;
        got = drain(e, fd, want, 1, &got_len, &rc);
        bad += !handed_over(text, len, got, got_len, rc, round);
        free(text);
        free(got);
        close(fd);
        unlink(path);
    }
    tap_ok(bad == 0, "a regular file read ahead at random moments: its complete lines, in order");
    {
        char path[] = "/tmp/tg_reader_XXXXXX";
        int fd = mkstemp(path);
        size_t len, held;
        char *text = gen_text(4000, 300, &len);
        const char *lines;
        tg_reader_t *r = tg_reader_new(e, fd, NULL);
        off_t before, after;
        if (write(fd, text, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0)
            bad++;
        tg_reader_lines(r, 1, &lines, &held, NULL);
        before = lseek(fd, 0, SEEK_CUR);
        tg_reader_read_ahead(r, 4096);
        after = lseek(fd, 0, SEEK_CUR);
        printf("# read to %lld of %zu bytes, then ahead to %lld\n", (long long)before, len,
               (long long)after);
        tap_ok(before > 0 && before < (off_t)len && after > before,
               "a regular file is read further ahead");
        tg_reader_free(r);
        free(text);
        close(fd);
        unlink(path);
    }
    tg_engine_free(e);
}

/* Reading ahead never waits for a pipe (the lines held would wait with
 * it), and a read that fails when reading ahead is said by the next
 * tg_reader_lines as its own read would have said it. */
static void test_read_ahead_edges(void)
{
    tg_engine_t *e = tg_engine_new(NULL, NULL, NULL, NULL);
    tg_error_t err, err2;
    const char *text;
    size_t len;
    int fds[2];
    if (pipe(fds) == 0) {
        tg_reader_t *r = tg_reader_new(e, fds[0], NULL);
        alarm(10); /* a read-ahead that waited would hang here */
        tg_reader_read_ahead(r, 4096);
        alarm(0);
        if (write(fds[1], "a\nb", 3) != 3)
            tap_ok(0, "write to the pipe");
        close(fds[1]);
        tap_ok(tg_reader_lines(r, 1 << 20, &text, &len, &err) == TG_OK &&
                   tap_is_mem(text, len, "a\nb\n", "the pipe's lines"),
               "a pipe is not read ahead, and is then read as it comes");
        tg_reader_free(r);
        close(fds[0]);
    }
    {
        /* /proc/self/mem is a regular file whose first page cannot be read */
        tg_reader_t *plain = tg_reader_open(e, "/proc/self/mem", NULL);
        tg_reader_t *ahead = tg_reader_open(e, "/proc/self/mem", NULL);
        int rc1 = plain ? tg_reader_lines(plain, 4096, &text, &len, &err) : -1, rc2 = -1;
        if (ahead) {
            tg_reader_read_ahead(ahead, 4096);
            rc2 = tg_reader_lines(ahead, 4096, &text, &len, &err2);
        }
        printf("# %s\n", rc2 == TG_E_IO ? err2.message : "no error");
        tap_ok(rc1 == TG_E_IO && rc2 == TG_E_IO && strstr(err.message, "/proc/self/mem") &&
                   strcmp(err.message, err2.message) == 0,
               "a read that fails when reading ahead: the error the read would give, in its "
               "turn");
        tg_reader_free(plain);
        tg_reader_free(ahead);
    }
    tg_engine_free(e);
}

static void test_edges(void)
{
    tg_engine_t *e = tg_engine_new(NULL, NULL, NULL, NULL);
    char path[] = "/tmp/tg_reader_XXXXXX";
    int fd = mkstemp(path);
    tg_reader_t *r;
    tg_error_t err;
    const char *text;
    size_t len;

    /* empty input: the end at once */
    r = tg_reader_open(e, path, &err);
    tap_ok(r && tg_reader_lines(r, 100, &text, &len, &err) == TG_OK && len == 0,
           "an empty file holds no lines");
    tg_reader_free(r);

    /* what is not taken comes back, with what follows */
    if (write(fd, "a\nbb\ncc", 7) != 7)
        tap_ok(0, "write the test file");
    r = tg_reader_open(e, path, &err);
    tap_ok(tg_reader_lines(r, 1 << 20, &text, &len, &err) == TG_OK &&
               tap_is_mem(text, len, "a\nbb\ncc\n", "the last line gets its newline"),
           "a file read to its end");
    tg_reader_take(r, 2);
    tap_ok(tg_reader_lines(r, 1 << 20, &text, &len, &err) == TG_OK &&
               tap_is_mem(text, len, "bb\ncc\n", "the lines not taken"),
           "lines not taken are held");
    tg_reader_take(r, len);
    tap_ok(tg_reader_lines(r, 1, &text, &len, &err) == TG_OK && len == 0, "then the end");
    tg_reader_free(r);
    close(fd);
    unlink(path);

    /* errors say what failed */
    tap_ok(!tg_reader_open(e, path, &err) && err.code == TG_E_IO && strstr(err.message, path) &&
               strstr(err.message, strerror(ENOENT)),
           "a missing file: TG_E_IO naming it and why");
    r = tg_reader_open(e, "/", &err);
    tap_ok(r && tg_reader_lines(r, 1, &text, &len, &err) == TG_E_IO &&
               strstr(err.message, "cannot read /") && strstr(err.message, strerror(EISDIR)),
           "a directory: opened, then TG_E_IO on reading, naming it");
    tg_reader_free(r);
    {
        int dev_full = open("/dev/full", O_WRONLY);
        tap_ok(tg_write_all(dev_full, "x\n", 2, &err) == TG_E_IO &&
                   strstr(err.message, strerror(ENOSPC)),
               "a full device: TG_E_IO saying why");
        close(dev_full);
    }
    {
        int fds[2];
        if (pipe(fds) == 0) {
            signal(SIGPIPE, SIG_IGN);
            close(fds[0]);
            tap_ok(tg_write_all(fds[1], "x\n", 2, &err) == TG_E_IO &&
                       strstr(err.message, strerror(EPIPE)),
                   "a pipe nobody reads: TG_E_IO (EPIPE), not a silent loss");
            close(fds[1]);
        }
    }
    tg_engine_free(e);
}

/* A pipe's reader gets every byte of a write larger than the pipe's
 * buffer (tg_write_all loops over short writes). */
static void test_write_all(void)
{
    size_t len = 3 << 20, n = 0;
    char *text = malloc(len), *got = malloc(len);
    int fds[2];
    pid_t pid;
    for (size_t i = 0; i < len; i++)
        text[i] = (char)('a' + i % 26);
    if (pipe(fds) != 0)
        return;
    if ((pid = fork()) == 0) {
        close(fds[0]);
        _exit(tg_write_all(fds[1], text, len, NULL) == TG_OK ? 0 : 1);
    }
    close(fds[1]);
    for (ssize_t k; (k = read(fds[0], got + n, len - n)) > 0;)
        n += (size_t)k;
    close(fds[0]);
    {
        int status;
        waitpid(pid, &status, 0);
        tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 && n == len &&
                   memcmp(got, text, len) == 0,
               "3 MiB through a pipe: every byte, in order");
    }
    free(text);
    free(got);
}

/* Each allocation of reading a file of long lines, read ahead too, fails
 * in turn: the reader says NOMEM (or, when the buffer it reads ahead into
 * is refused, reads on without it), hands over only lines the file holds,
 * and gives back every byte. */
static void test_alloc_faults(void)
{
    char path[] = "/tmp/tg_reader_XXXXXX";
    int fd = mkstemp(path), bad = 0, fired = 0;
    size_t len;
    char *text = gen_text(40, 150000, &len);
    if (write(fd, text, len) != (ssize_t)len)
        bad++;
    close(fd);
    for (long f = 1; f < 64; f++) {
        acct a = {0};
        tg_engine_t *e = tg_engine_new(NULL, acct_alloc, &a, NULL);
        tg_reader_t *r;
        size_t at = 0;
        int rc = TG_OK;
        a.calls = 0;
        a.fail_at = f;
        if ((r = tg_reader_open(e, path, NULL)) != NULL) {
            const char *held;
            size_t n;
            while ((rc = tg_reader_lines(r, 4096, &held, &n, NULL)) == TG_OK && n) {
                if (at + n > len + 1 || memcmp(held, text + at, n - (at + n > len)) != 0)
                    bad++;
                at += n;
                tg_reader_read_ahead(r, 100000); /* its buffer's allocation fails too */
                tg_reader_take(r, n);
            }
            tg_reader_free(r);
        }
        if (a.fired) {
            /* NOMEM, or (the read-ahead's spare buffer refused) read on
             * without reading ahead: every line, as without the fault */
            fired++;
            if (r && rc != TG_E_NOMEM && !(rc == TG_OK && at == len + (text[len - 1] != '\n')))
                bad++;
        }
        tg_engine_free(e);
        if (a.live != 0)
            bad++;
        if (!a.fired)
            break;
    }
    unlink(path);
    free(text);
    printf("# %d allocation faults fired\n", fired);
    tap_ok(fired > 3 && bad == 0, "an allocation that fails: NOMEM, only the file's own lines "
                                  "handed over, every byte given back");
}

static void grow_append(char **all, size_t *n, size_t *cap, const char *s, size_t k)
{
    if (!k)
        return;
    while (*n + k > *cap)
        *all = realloc(*all, *cap *= 2);
    memcpy(*all + *n, s, k);
    *n += k;
}

/* The whole of text through tg_canon_lines (each failing line noted as
 * "E<line>\n" and gone past), as one call per failure. */
static char *canon_all(tg_engine_t *e, const char *text, size_t len, size_t *out_len)
{
    tg_buf_t out;
    size_t at = 0, line = 0, n = 0, cap = 1 << 16;
    char *all = malloc(cap);
    tg_buf_init(&out, e);
    for (;;) {
        size_t used = 0;
        int rc;
        tg_buf_reset(&out);
        rc = tg_canon_lines(e, text + at, len - at, 1, &line, &used, &out, NULL);
        grow_append(&all, &n, &cap, out.data, out.len);
        at += used;
        if (rc == TG_OK)
            break;
        {
            char note[32];
            int k = snprintf(note, sizeof note, "E%zu\n", line);
            grow_append(&all, &n, &cap, note, (size_t)k);
        }
    }
    *out_len = n;
    tg_buf_free(&out);
    return all;
}

/* tg_canon_reader over a pipe fed in random pieces gives, line for line,
 * what tg_canon_lines gives over the whole text, failures included. */
static void test_canon_reader(void)
{
    tg_engine_t *e = tg_engine_new(NULL, NULL, NULL, NULL);
    static const char *const docs[] = {
        "{\"b\":1,\"a\":[1.50,2e3]}", "[1,]", "",      "\"x\"",
        "{\"a\":1,\"a\":2}",          "  ",   "1e400", "{\"k\":\"\\u00e9\"}"};
    int bad = 0;
    for (int round = 0; round < 10; round++) {
        size_t cap = 1 << 18, len = 0, want_len, got_len = 0;
        char *text = malloc(cap), *want, path[] = "/tmp/tg_reader_out_XXXXXX";
        int out = mkstemp(path), in, end = 0;
        pid_t pid = -1;
        tg_reader_t *r;
        size_t line = 0;
        tg_buf_t buf;
        while (len < cap - 64) {
            const char *d = docs[pick(sizeof docs / sizeof *docs)];
            len += (size_t)snprintf(text + len, cap - len, "%s\n", d);
        }
        want = canon_all(e, text, len, &want_len);
        in = feed(text, len, &pid);
        r = tg_reader_new(e, in, NULL);
        tg_buf_init(&buf, e);
        while (end == 0) {
            int rc;
            tg_buf_reset(&buf);
            rc = tg_canon_reader(e, r, round % 2 ? 1 : 65536, out, 1, &line, &buf, &end, NULL);
            if (end == -1)
                break;
            if (rc != TG_OK) {
                char note[32];
                int n = snprintf(note, sizeof note, "E%zu\n", line);
                if (write(out, note, (size_t)n) != n)
                    end = -1;
            }
        }
        tg_buf_free(&buf);
        tg_reader_free(r);
        close(in);
        {
            int status;
            waitpid(pid, &status, 0);
        }
        {
            off_t n = lseek(out, 0, SEEK_END);
            char *got = malloc((size_t)n + 1);
            got_len = pread(out, got, (size_t)n, 0) == n ? (size_t)n : 0;
            if (end != 1 || got_len != want_len || memcmp(got, want, want_len) != 0) {
                bad++;
                printf("# round %d: end %d, %zu bytes for %zu\n", round, end, got_len, want_len);
            }
            free(got);
        }
        close(out);
        unlink(path);
        free(want);
        free(text);
    }
    tap_ok(bad == 0, "tg_canon_reader over a pipe: what tg_canon_lines gives over the whole text, "
                     "failing lines at the same numbers");
    tg_engine_free(e);
}

int main(void)
{
    test_pieces();
    test_read_ahead();
    test_read_ahead_edges();
    test_edges();
    test_write_all();
    test_alloc_faults();
    test_canon_reader();
    return tap_done();
}
