/*
 * tg_reader.c -- JSON Lines read from a file descriptor into one buffer of
 * the core's, and output written to one, for the chunk entry points.
 *
 * A host that read its input into strings of its own paid for each piece
 * twice more (the string, then the join with the line cut by the piece
 * before), and under LuaJIT a large piece is a fresh large string each
 * time: so pieces had to stay small (64 KiB), and a piece that small is
 * gone before a second thread has woken up to take half of it.  Here the
 * buffer is made once and kept: the host asks for the complete lines held
 * (at least `want` bytes of them when the input has that many), hands them
 * to tg_check_lines or its kin, says how many bytes were read, and writes
 * the decisions with tg_write_all, straight from the core's buffer.
 *
 * A regular file is also read ahead: while the lines held are decided on
 * the workers' threads, the first thread done with its piece reads the
 * next bytes into a spare buffer (tg_reader_read_ahead), so that the copy
 * out of the page cache is made while the others finish, not after.
 * A pipe or a terminal is never read ahead: a read there may wait for
 * input, and the decisions of the lines held would wait with it.
 */
#define _GNU_SOURCE
#include "tg_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The room kept before the bytes read ahead, for the start of a line the
 * buffer held when they were read: a longer one is joined by a copy. */
#define AHEAD_ROOM 65536

struct tg_reader_t {
    tg_engine_t *e;
    int fd, own;    /* own: opened by tg_reader_open, closed by tg_reader_free */
    char name[256]; /* for messages: the path, or which descriptor */
    char *buf;
    size_t cap;
    size_t at, held; /* buf[at, held) is read and not yet taken */
    size_t lines;    /* bytes from at through the last '\n' held */
    int eof;
    /* read-ahead (a regular file only): spare[AHEAD_ROOM, AHEAD_ROOM +
     * ahead) are the bytes that follow held; ahead_eof that read(2) said
     * the input ended after them, ahead_errno why it failed (0: it did
     * not) -- each said by tg_reader_lines where its own read would. */
    int regular;
    char *spare;
    size_t spare_cap, ahead;
    int ahead_eof, ahead_errno;
};

static void set_name(tg_reader_t *r, const char *path)
{
    if (path)
        snprintf(r->name, sizeof r->name, "%s", path);
    else if (r->fd == 0)
        snprintf(r->name, sizeof r->name, "<stdin>");
    else
        snprintf(r->name, sizeof r->name, "file descriptor %d", r->fd);
}

tg_reader_t *tg_reader_new(tg_engine_t *e, int fd, tg_error_t *err)
{
    tg_reader_t *r;
    struct stat st;
    tg_error_clear(err);
    if (!e || fd < 0) {
        tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "an engine and a file descriptor are required");
        return NULL;
    }
    if (!(r = tg_mem_realloc(e, NULL, 0, sizeof *r))) {
        tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        return NULL;
    }
    memset(r, 0, sizeof *r);
    r->e = e;
    r->fd = fd;
    r->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    set_name(r, NULL);
    tg_engine_retain(e);
    return r;
}

tg_reader_t *tg_reader_open(tg_engine_t *e, const char *path, tg_error_t *err)
{
    tg_reader_t *r;
    int fd;
    tg_error_clear(err);
    if (!e || !path) {
        tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "an engine and a path are required");
        return NULL;
    }
    do
        fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        tg_fail(err, TG_E_IO, TG_NO_OFFSET, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    if (!(r = tg_reader_new(e, fd, err))) {
        close(fd);
        return NULL;
    }
    r->own = 1;
    set_name(r, path);
    return r;
}

void tg_reader_free(tg_reader_t *r)
{
    tg_engine_t *e;
    if (!r)
        return;
    e = r->e;
    if (r->own)
        close(r->fd);
    tg_mem_free(e, r->buf, r->cap);
    tg_mem_free(e, r->spare, r->spare_cap);
    tg_mem_free(e, r, sizeof *r);
    tg_engine_release(e);
}

/* Room for at least n more bytes after held: the bytes not yet taken move
 * to the front first, and the buffer grows only when they fill it. */
static int make_room(tg_reader_t *r, size_t n, tg_error_t *err)
{
    size_t keep = r->held - r->at, cap;
    char *b;
    if (r->at && r->cap - r->held < n) {
        memmove(r->buf, r->buf + r->at, keep);
        r->at = 0;
        r->held = keep;
    }
    if (r->cap - r->held >= n)
        return TG_OK;
    cap = r->cap ? r->cap : 65536;
    while (cap - keep < n) {
        if (cap > SIZE_MAX / 2)
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        cap *= 2;
    }
    if (!(b = tg_mem_realloc(r->e, r->buf, r->cap, cap)))
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    r->buf = b;
    r->cap = cap;
    return TG_OK;
}

void tg_reader_read_ahead(tg_reader_t *r, size_t want)
{
    if (!r || !r->regular || r->eof || r->ahead || r->ahead_eof || r->ahead_errno)
        return;
    if (r->spare_cap < AHEAD_ROOM + want) {
        char *b = tg_mem_realloc(r->e, r->spare, r->spare_cap, AHEAD_ROOM + want);
        if (!b)
            return; /* the next tg_reader_lines reads, as without read-ahead */
        r->spare = b;
        r->spare_cap = AHEAD_ROOM + want;
    }
    while (r->ahead < want) {
        ssize_t n =
            read(r->fd, r->spare + AHEAD_ROOM + r->ahead, r->spare_cap - AHEAD_ROOM - r->ahead);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                r->ahead_errno = errno;
            else
                r->ahead_eof = 1;
            break;
        }
        r->ahead += (size_t)n;
    }
}

/* The bytes read ahead made those held next: the spare buffer becomes the
 * buffer, with the start of a line held copied in before them, or (a
 * longer one) they are copied after it. */
static int take_ahead(tg_reader_t *r, tg_error_t *err)
{
    size_t keep = r->held - r->at;
    int rc;
    if (keep <= AHEAD_ROOM) {
        char *b = r->buf;
        size_t cap = r->cap;
        memcpy(r->spare + AHEAD_ROOM - keep, r->buf + r->at, keep);
        r->buf = r->spare;
        r->cap = r->spare_cap;
        r->at = AHEAD_ROOM - keep;
        r->held = AHEAD_ROOM + r->ahead;
        r->spare = b;
        r->spare_cap = cap;
    } else {
        if ((rc = make_room(r, r->ahead, err)) != TG_OK)
            return rc;
        memcpy(r->buf + r->held, r->spare + AHEAD_ROOM, r->ahead);
        r->held += r->ahead;
    }
    r->ahead = 0;
    return TG_OK;
}

/* Where the complete lines held end: through the last '\n'. */
static void find_lines(tg_reader_t *r)
{
    const char *nl = r->held > r->at ? memrchr(r->buf + r->at, '\n', r->held - r->at) : NULL;
    r->lines = nl ? (size_t)(nl - (r->buf + r->at)) + 1 : 0;
}

int tg_reader_lines(tg_reader_t *r, size_t want, const char **text, size_t *len, tg_error_t *err)
{
    int rc;
    tg_error_clear(err);
    if (!r || !text || !len)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "reader, text and len are required");
    if (want < 1)
        want = 1;
    if (r->ahead) {
        if ((rc = take_ahead(r, err)) != TG_OK)
            return rc;
        find_lines(r);
    }
    /* read until want bytes of complete lines are held, or the end */
    while (!r->eof && (r->lines == 0 || r->held - r->at < want)) {
        size_t room = want > r->held - r->at ? want - (r->held - r->at) : 1;
        ssize_t n;
        if (room < 65536)
            room = 65536;
        if ((rc = make_room(r, room, err)) != TG_OK)
            return rc;
        if (r->ahead_errno) { /* what reading ahead met, here in its turn */
            errno = r->ahead_errno;
            r->ahead_errno = 0;
            n = -1;
        } else if (r->ahead_eof) {
            r->ahead_eof = 0;
            n = 0;
        } else {
            n = read(r->fd, r->buf + r->held, r->cap - r->held);
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return tg_fail(err, TG_E_IO, TG_NO_OFFSET, "cannot read %s: %s", r->name,
                           strerror(errno));
        }
        if (n == 0) {
            r->eof = 1;
            /* a last line without its '\n' gets one */
            if (r->held > r->at && r->buf[r->held - 1] != '\n') {
                if ((rc = make_room(r, 1, err)) != TG_OK) {
                    r->eof = 0;
                    return rc;
                }
                r->buf[r->held++] = '\n';
            }
        }
        r->held += (size_t)n;
        find_lines(r);
    }
    *text = r->buf ? r->buf + r->at : "";
    *len = r->lines;
    return TG_OK;
}

void tg_reader_take(tg_reader_t *r, size_t used)
{
    if (!r)
        return;
    if (used > r->lines)
        used = r->lines;
    r->at += used;
    if (r->at == r->held)
        r->at = r->held = 0;
    find_lines(r);
}

int tg_write_all(int fd, const char *data, size_t len, tg_error_t *err)
{
    tg_error_clear(err);
    if (fd < 0 || (!data && len))
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "a file descriptor and data are required");
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return tg_fail(err, TG_E_IO, TG_NO_OFFSET, "cannot write the output: %s",
                           strerror(errno));
        }
        data += n;
        len -= (size_t)n;
    }
    return TG_OK;
}

/* ---- the chunk entry points on a reader --------------------------------- */

/* What a step runs on the lines: tg_check_lines or tg_classify_lines (on
 * the workers' threads when there are some), tg_canon_lines or
 * tg_validate_lines. */
enum {
    CHECK,
    CLASSIFY,
    CANON,
    VALIDATE
};
typedef struct {
    int kind;
    tg_workers_t *w;
    const tg_policy_t *p;
    const tg_context_t *ctx;
    tg_store_t *store; /* classify */
    int format, flags;
    int64_t now;
    tg_engine_t *e; /* canon, validate */
    const tg_schema_t *schema;
    int hash;
} job;

static int decide(tg_decider_t *d, const job *j, const char *text, size_t len, size_t *line,
                  size_t *used, tg_buf_t *out, size_t verdicts[3], tg_outcome_t *o, tg_error_t *err)
{
    if (j->kind == CANON)
        return tg_canon_lines(j->e, text, len, j->hash, line, used, out, err);
    if (j->kind == VALIDATE)
        return tg_validate_lines(j->e, j->schema, text, len, line, used, out, err);
    if (j->kind == CLASSIFY)
        return j->w
                   ? tg_classify_lines_parallel(j->w, d, j->p, j->ctx, j->store, text, len,
                                                j->flags, j->now, line, used, out, verdicts, o, err)
                   : tg_classify_lines(d, j->p, j->ctx, j->store, text, len, j->flags, j->now, line,
                                       used, out, verdicts, o, err);
    return j->w ? tg_check_lines_parallel(j->w, d, j->p, j->ctx, text, len, j->format, j->flags,
                                          line, used, out, verdicts, o, err)
                : tg_check_lines(d, j->p, j->ctx, text, len, j->format, j->flags, line, used, out,
                                 verdicts, o, err);
}

/* The lines held decided, what was read taken, the decisions written --
 * those of the lines before a line that failed too, so none is lost. */
static int step(tg_decider_t *d, const job *j, tg_reader_t *r, size_t want, int fd, size_t *line,
                tg_buf_t *out, size_t verdicts[3], tg_outcome_t *o, int *end, tg_error_t *err)
{
    const char *text;
    size_t len, used = 0;
    int rc, wrc;
    tg_error_t werr;
    *end = -1;
    if ((rc = tg_reader_lines(r, want, &text, &len, err)) != TG_OK)
        return rc;
    /* at the end too: a line paused in the host may have calls left */
    tg_workers_read_ahead(j->w, r, want);
    rc = decide(d, j, text, len, line, &used, out, verdicts, o, err);
    tg_workers_read_ahead(j->w, NULL, 0);
    tg_reader_take(r, used);
    if ((wrc = tg_write_all(fd, out->data, out->len, &werr)) != TG_OK) {
        if (err)
            *err = werr;
        return wrc;
    }
    *end = !len && rc == TG_OK && (!o || o->status == TG_NO_MORE_CALLS) && !out->len;
    return rc;
}

int tg_check_reader(tg_workers_t *w, tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx,
                    tg_reader_t *r, size_t want, int fd, int format, int flags, size_t *line,
                    tg_buf_t *out, size_t verdicts[3], tg_outcome_t *o, int *end, tg_error_t *err)
{
    job j = {.kind = CHECK, .w = w, .p = p, .ctx = ctx, .format = format, .flags = flags};
    tg_error_clear(err);
    if (!d || !p || !r || !line || !out || !verdicts || !o || !end)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "every argument but w and ctx is required");
    return step(d, &j, r, want, fd, line, out, verdicts, o, end, err);
}

int tg_classify_reader(tg_workers_t *w, tg_decider_t *d, const tg_policy_t *p,
                       const tg_context_t *ctx, tg_store_t *store, tg_reader_t *r, size_t want,
                       int fd, int flags, int64_t now, size_t *line, tg_buf_t *out,
                       size_t verdicts[3], tg_outcome_t *o, int *end, tg_error_t *err)
{
    job j = {
        .kind = CLASSIFY, .w = w, .p = p, .ctx = ctx, .store = store, .flags = flags, .now = now};
    tg_error_clear(err);
    if (!d || !p || !r || !line || !out || !verdicts || !o || !end)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "every argument but w, ctx and store is required");
    return step(d, &j, r, want, fd, line, out, verdicts, o, end, err);
}

int tg_canon_reader(tg_engine_t *e, tg_reader_t *r, size_t want, int fd, int hash, size_t *line,
                    tg_buf_t *out, int *end, tg_error_t *err)
{
    job j = {.kind = CANON, .e = e, .hash = hash};
    tg_error_clear(err);
    if (!e || !r || !line || !out || !end)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "engine, reader, line, out and end are required");
    return step(NULL, &j, r, want, fd, line, out, NULL, NULL, end, err);
}

int tg_validate_reader(tg_engine_t *e, const tg_schema_t *schema, tg_reader_t *r, size_t want,
                       int fd, size_t *line, tg_buf_t *out, int *end, tg_error_t *err)
{
    job j = {.kind = VALIDATE, .e = e, .schema = schema};
    tg_error_clear(err);
    if (!e || !schema || !r || !line || !out || !end)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "engine, schema, reader, line, out and end are required");
    return step(NULL, &j, r, want, fd, line, out, NULL, NULL, end, err);
}
