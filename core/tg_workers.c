/*
 * tg_workers.c -- deciding the lines of a chunk on several threads.
 *
 * A policy, its registry and a context are read-only once built, so any
 * number of threads may decide calls against them at once, each with an
 * engine and a decider of its own (the engine holds what a check writes
 * to: its arena spare, PCRE2 match data and JIT stack).  The workers are
 * made once and wait for work; a chunk is cut at line ends into one piece
 * per thread (the caller's thread takes the first), each piece decided
 * with its own line numbers, and the outputs joined in input order, so the
 * bytes are those of one thread deciding the chunk alone.
 */
#include "tg_decide.h"

#include <pthread.h>
#include <unistd.h>

typedef struct piece {
    const char *text;
    size_t len;
    size_t start;    /* the number of the line before the piece's first */
    size_t line;     /* from start, the line being decided */
    size_t newlines; /* the piece's lines, counted by the next piece's thread */
    int counted;
    tg_buf_t out;
    size_t verdicts[3];
    int rc;
    int needs_host;
} piece;

typedef struct worker {
    struct tg_workers_t *pool;
    pthread_t thread;
    int started;
    tg_engine_t *e;
    tg_decider_t *d;
    piece *job; /* set by the caller, cleared by the worker when done */
} worker;

struct tg_workers_t {
    tg_engine_t *e;
    size_t n; /* threads besides the caller's */
    worker *w;
    pthread_mutex_t lock;
    pthread_cond_t work, done, counted;
    size_t busy;
    int quit;
    /* what the current job shares */
    const tg_policy_t *p;
    const tg_context_t *ctx;
    int format, flags;
    int classify;      /* plans (tg_classify_lines), not calls */
    tg_store_t *store; /* classify: read only while the pieces run */
    int64_t now;
    piece *pcs; /* the pieces running */
    /* read ahead by the first thread done with its piece: the reader
     * whose lines are decided (tg_workers_read_ahead), and how much */
    tg_reader_t *ahead;
    size_t ahead_want;
};

size_t tg_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (size_t)n : 1;
}

/* Where a piece after the first starts: its thread counts the lines of
 * the piece before it and adds those of the pieces before that, as their
 * threads count them -- each piece counted once, on the threads, at once,
 * rather than all on the caller's thread while the others wait. */
static void number_piece(tg_workers_t *pool, piece *pc)
{
    piece *pcs = pool->pcs, *prev = pc - 1;
    size_t n = 0, i = (size_t)(pc - pcs), j, line;
    for (const char *p = prev->text, *end = p + prev->len;
         (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
        n++;
    pthread_mutex_lock(&pool->lock);
    prev->newlines = n;
    prev->counted = 1;
    pthread_cond_broadcast(&pool->counted);
    for (;;) {
        for (j = 0; j < i && pcs[j].counted; j++)
            ;
        if (j == i)
            break;
        pthread_cond_wait(&pool->counted, &pool->lock);
    }
    line = pcs[0].start;
    for (j = 0; j < i; j++)
        line += pcs[j].newlines;
    pthread_mutex_unlock(&pool->lock);
    pc->start = pc->line = line;
}

static void decide_piece(tg_decider_t *d, tg_workers_t *pool, piece *pc)
{
    size_t used = 0;
    tg_outcome_t o;
    if (pc != pool->pcs)
        number_piece(pool, pc);
    if (pool->classify) {
        /* against the store as the chunk found it; the piece's own
         * quarantines kept aside, in order, for the merge */
        pc->rc = tg_plan_track(d, pool->p->n_tools);
        if (pc->rc != TG_OK)
            return;
        pc->rc = tg_classify_lines_mode(d, pool->p, pool->ctx, pool->store, TG_STORE_OVERLAY,
                                        pc->text, pc->len, pool->flags, pool->now, &pc->line, &used,
                                        &pc->out, pc->verdicts, &o, NULL);
        pc->needs_host = pc->rc == TG_OK && o.status != TG_NO_MORE_CALLS;
        return;
    }
    pc->rc = tg_check_lines(d, pool->p, pool->ctx, pc->text, pc->len, pool->format, pool->flags,
                            &pc->line, &used, &pc->out, pc->verdicts, &o, NULL);
    pc->needs_host = pc->rc == TG_OK && o.status == TG_NEEDS_STAGE;
}

/* Reads ahead if that is still to do (w->lock held; it is released
 * while the reading runs): called by each thread done with its piece, so
 * the first done reads while the others finish theirs. */
static void read_ahead(tg_workers_t *w)
{
    tg_reader_t *r = w->ahead;
    if (!r)
        return;
    w->ahead = NULL;
    pthread_mutex_unlock(&w->lock);
    tg_reader_read_ahead(r, w->ahead_want);
    pthread_mutex_lock(&w->lock);
}

static void *run(void *arg)
{
    worker *me = arg;
    tg_workers_t *pool = me->pool;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        piece *pc;
        while (!me->job && !pool->quit)
            pthread_cond_wait(&pool->work, &pool->lock);
        if (pool->quit)
            break;
        pc = me->job;
        pthread_mutex_unlock(&pool->lock);
        decide_piece(me->d, pool, pc);
        pthread_mutex_lock(&pool->lock);
        read_ahead(pool);
        me->job = NULL;
        if (--pool->busy == 0)
            pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

void tg_workers_free(tg_workers_t *w)
{
    tg_engine_t *e;
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->quit = 1;
    pthread_cond_broadcast(&w->work);
    pthread_mutex_unlock(&w->lock);
    for (size_t i = 0; i < w->n; i++) {
        if (w->w[i].started)
            pthread_join(w->w[i].thread, NULL);
        tg_decider_free(w->w[i].d);
        tg_engine_free(w->w[i].e);
    }
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->counted);
    pthread_mutex_destroy(&w->lock);
    e = w->e;
    tg_mem_free(e, w->w, w->n * sizeof *w->w);
    tg_mem_free(e, w, sizeof *w);
    tg_engine_release(e);
}

tg_workers_t *tg_workers_new(tg_engine_t *e, size_t threads, tg_error_t *err)
{
    tg_workers_t *w;
    size_t n;

    tg_error_clear(err);
    if (!e || threads < 1 || threads > TG_MAX_THREADS) {
        tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "threads must be 1..%d", TG_MAX_THREADS);
        return NULL;
    }
    n = threads - 1;
    if (!(w = tg_mem_realloc(e, NULL, 0, sizeof *w))) {
        tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        return NULL;
    }
    memset(w, 0, sizeof *w);
    w->e = e;
    tg_engine_retain(e);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->done, NULL);
    pthread_cond_init(&w->counted, NULL);
    if (n && !(w->w = tg_mem_realloc(e, NULL, 0, n * sizeof *w->w))) {
        tg_workers_free(w);
        tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        return NULL;
    }
    if (n)
        memset(w->w, 0, n * sizeof *w->w);
    for (size_t i = 0; i < n; i++) {
        worker *k = &w->w[i];
        k->pool = w;
        w->n++; /* freed with the pool from here on, whatever fails */
        if (!(k->e = tg_engine_new(&e->limits, e->alloc, e->alloc_ud, err)) ||
            !(k->d = tg_decider_new(k->e, err)))
            break;
        if (pthread_create(&k->thread, NULL, run, k) != 0) {
            tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "cannot start a worker thread");
            break;
        }
        k->started = 1;
    }
    if (w->n && !w->w[w->n - 1].started) {
        tg_workers_free(w);
        return NULL;
    }
    return w;
}

void tg_workers_read_ahead(tg_workers_t *w, tg_reader_t *r, size_t want)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->ahead = w->n ? r : NULL;
    w->ahead_want = want;
    pthread_mutex_unlock(&w->lock);
}

size_t tg_workers_count(const tg_workers_t *w)
{
    return w ? w->n + 1 : 0;
}

/* Cuts text[0..len) (complete lines only) into k pieces of about equal
 * size, at line ends; the first starts after line (the others are
 * numbered by their threads: number_piece). */
static size_t cut(const char *text, size_t len, size_t line, piece *pcs, size_t k)
{
    size_t at = 0, made = 0;
    for (size_t i = 0; i < k && at < len; i++) {
        size_t end = i + 1 == k ? len : at + (len - at) / (k - i);
        const char *nl;
        if (end < at + 1)
            end = at + 1;
        nl = memchr(text + end - 1, '\n', len - (end - 1));
        end = nl ? (size_t)(nl - text) + 1 : len;
        pcs[made].text = text + at;
        pcs[made].len = end - at;
        pcs[made].start = pcs[made].line = line;
        pcs[made].counted = 0;
        made++;
        at = end;
    }
    return made;
}

/* Runs the pieces: the caller's thread takes the first, the workers the
 * others; returns when all are done. */
static void run_pieces(tg_workers_t *w, tg_decider_t *d, piece *pcs, size_t k)
{
    pthread_mutex_lock(&w->lock);
    w->pcs = pcs;
    w->busy = k - 1;
    for (size_t i = 1; i < k; i++)
        w->w[i - 1].job = &pcs[i];
    pthread_cond_broadcast(&w->work);
    pthread_mutex_unlock(&w->lock);
    decide_piece(d, w, &pcs[0]);
    pthread_mutex_lock(&w->lock);
    if (w->busy) /* not when all are done: the reader's next read comes at once */
        read_ahead(w);
    while (w->busy)
        pthread_cond_wait(&w->done, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

/* The bytes of text's complete lines when a chunk can be shared among the
 * threads, 0 when it is decided on one: a policy whose stages the host
 * runs, or a host that traces every stage, answers line by line, and a
 * small chunk is not worth the hand-over. */
static size_t shareable(const tg_workers_t *w, const tg_policy_t *p, const char *text, size_t len,
                        int flags)
{
    const char *last = len ? memrchr(text, '\n', len) : NULL;
    size_t complete = last ? (size_t)(last - text) + 1 : 0;
    for (size_t i = 0; i < p->n_stages; i++)
        if (p->stages[i].in_host)
            return 0;
    return (flags & TG_CHECK_PAUSE) || w->n == 0 || complete < 4096 ? 0 : complete;
}

/* Cuts the complete lines into one piece a thread; ds[i] is the decider
 * of piece i (d for the first), whose engine its output comes from. */
static size_t pieces(tg_workers_t *w, tg_decider_t *d, const char *text, size_t complete,
                     size_t line, piece *pcs, tg_decider_t **ds)
{
    size_t k = cut(text, complete, line, pcs, w->n + 1);
    for (size_t i = 0; i < k; i++) {
        ds[i] = i == 0 ? d : w->w[i - 1].d;
        tg_buf_init(&pcs[i].out, ds[i]->e);
        memset(pcs[i].verdicts, 0, sizeof pcs[i].verdicts);
        pcs[i].rc = TG_OK;
        pcs[i].needs_host = 0;
    }
    return k;
}

int tg_check_lines_parallel(tg_workers_t *w, tg_decider_t *d, const tg_policy_t *p,
                            const tg_context_t *ctx, const char *text, size_t len, int format,
                            int flags, size_t *line, size_t *used, tg_buf_t *out,
                            size_t verdicts[3], tg_outcome_t *o, tg_error_t *err)
{
    piece pcs[TG_MAX_THREADS];
    tg_decider_t *ds[TG_MAX_THREADS];
    size_t complete, k, i, out_len;
    int rc = TG_OK;

    tg_error_clear(err);
    if (!w || !d || !p || !text || !line || !used || !out || !verdicts || !o)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "every argument but ctx is required");
    out_len = out->len;
    if (!(complete = shareable(w, p, text, len, flags)))
        return tg_check_lines(d, p, ctx, text, len, format, flags, line, used, out, verdicts, o,
                              err);

    k = pieces(w, d, text, complete, *line, pcs, ds);
    w->p = p;
    w->ctx = ctx;
    w->format = format;
    w->flags = flags;
    w->classify = 0;
    run_pieces(w, d, pcs, k);

    for (i = 0; i < k && rc == TG_OK; i++)
        if (pcs[i].rc != TG_OK || pcs[i].needs_host)
            rc = TG_E_NOMEM; /* decided again below, on one thread, line by line */
    for (i = 0; i < k && rc == TG_OK; i++)
        rc = tg_buf_append(out, pcs[i].out.data, pcs[i].out.len, err);
    for (i = 0; i < k && rc == TG_OK; i++) /* counted once all are joined */
        for (int v = 0; v < 3; v++)
            verdicts[v] += pcs[i].verdicts[v];
    for (i = 0; i < k; i++)
        tg_buf_free(&pcs[i].out);
    if (rc != TG_OK) {
        /* a piece failed, or its decisions could not be joined: the chunk
         * is decided again on one thread, which stops at the failing line
         * as tg_check_lines does -- from the output as it came, without
         * the pieces joined before the failure */
        out->len = out_len;
        return tg_check_lines(d, p, ctx, text, len, format, flags, line, used, out, verdicts, o,
                              err);
    }
    *line = pcs[k - 1].line;
    *used = complete;
    o->status = TG_NO_MORE_CALLS;
    return TG_OK;
}

/* ---- plans ------------------------------------------------------------------------- */

/* Where a piece's first plan (its first line not blank) ends and its number. */
static void first_plan(const piece *pc, const char *text, size_t before, size_t *line, size_t *used)
{
    size_t at = 0, n;
    const char *s;
    *line = before;
    while ((s = tg_line_next(pc->text, pc->len, &at, &n)) != NULL) {
        ++*line;
        if (!tg_line_blank(s, n))
            break;
    }
    *used = (size_t)(pc->text - text) + at;
}

/* Writes the first n_log quarantines a piece's plans made (pl: its decider's) to the store,
 * in order; fresh[tool] set for each that changed the store. */
static int write_quarantines(const tg_workers_t *w, const tg_plan *pl, size_t n_log,
                             unsigned char *fresh, tg_error_t *err)
{
    int rc = TG_OK;
    for (size_t q = 0; q < n_log && rc == TG_OK; q++) {
        const tg_plog *lg = &pl->log[q];
        size_t slen, nlen;
        const char *server = tg_registry_server(w->p->r, (size_t)lg->tool, &slen);
        const char *name = tg_registry_name(w->p->r, (size_t)lg->tool, &nlen);
        int changed = 0;
        rc = tg_store_quarantine(w->store, server, slen, name, nlen,
                                 pl->log_texts.data + lg->reason, lg->reason_len, w->now,
                                 lg->has_epoch ? pl->log_texts.data + lg->epoch : NULL,
                                 lg->epoch_len, &changed, err);
        if (changed)
            fresh[lg->tool] = 1;
    }
    return rc;
}

/* Where a piece (not the first; pl: its decider's) must be classified
 * again: its first plan that read the record of a tool an earlier piece
 * quarantined, or NULL. */
static const tg_pcheck *cut_of(const tg_workers_t *w, const tg_plan *pl, const unsigned char *fresh)
{
    const tg_pcheck *cut = NULL;
    for (size_t t = 0; t < w->p->n_tools; t++)
        if (pl->track[t].read && fresh[t] && (!cut || pl->track[t].first.at < cut->at))
            cut = &pl->track[t].first;
    return cut;
}

int tg_classify_lines_parallel(tg_workers_t *w, tg_decider_t *d, const tg_policy_t *p,
                               const tg_context_t *ctx, tg_store_t *store, const char *text,
                               size_t len, int flags, int64_t now, size_t *line, size_t *used,
                               tg_buf_t *out, size_t verdicts[3], tg_outcome_t *o, tg_error_t *err)
{
    piece pcs[TG_MAX_THREADS];
    tg_decider_t *ds[TG_MAX_THREADS];
    unsigned char *fresh = NULL; /* per tool: quarantined by an earlier piece of the round */
    size_t n_fresh = p && p->n_tools ? p->n_tools : 1;
    size_t complete, k = 0, i, from = 0;
    int rc = TG_OK;

    tg_error_clear(err);
    if (!w || !d || !p || !text || !line || !used || !out || !verdicts || !o)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "every argument but ctx and store is required");
    if (ctx && ctx->p != p)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "the context was compiled for another policy");
    /* IDs and records the host gives are asked line by line, on one thread */
    complete = p->has_resolve || !store ? 0 : shareable(w, p, text, len, flags);
    if (!complete || !(fresh = tg_mem_realloc(d->e, NULL, 0, n_fresh)))
        return tg_classify_lines(d, p, ctx, store, text, len, flags, now, line, used, out, verdicts,
                                 o, err);
    w->p = p;
    w->ctx = ctx;
    w->flags = flags;
    w->classify = 1;
    w->store = store;
    w->now = now;
    /* Two rounds at most.  In the first, a piece that read the record of a
     * tool an earlier piece quarantined ends the round there: what comes
     * before it stands, the rest of the chunk goes round again on every
     * thread, against the store with those quarantines.  In the second,
     * such a piece is classified again on this thread from that plan on,
     * so that the work stays bounded whatever the plans do. */
    for (int round = 0; round < 2 && rc == TG_OK; round++) {
        size_t again = 0; /* the second round starts at from + again */
        memset(fresh, 0, n_fresh);
        k = pieces(w, d, text + from, complete - from, *line, pcs, ds);
        run_pieces(w, d, pcs, k);
        for (i = 0; i < k && rc == TG_OK; i++)
            if (pcs[i].rc != TG_OK || pcs[i].needs_host)
                rc = TG_E_NOMEM;
        if (rc != TG_OK) {
            /* nothing of this round is written yet: the rest of the chunk
             * is classified again on one thread, which stops at the
             * failing line */
            size_t rest = 0;
            for (i = 0; i < k; i++)
                tg_buf_free(&pcs[i].out);
            tg_mem_free(d->e, fresh, n_fresh);
            rc = tg_classify_lines(d, p, ctx, store, text + from, len - from, flags, now, line,
                                   &rest, out, verdicts, o, err);
            *used = from + rest;
            return rc;
        }
        /* the merge, in input order: a piece's plans stand up to the first
         * that read the record of a tool an earlier piece quarantined.  The
         * quarantines of the plans that stand are written as they made
         * them. */
        for (i = 0; i < k && rc == TG_OK; i++) {
            const tg_plan *pl = ds[i]->plan;
            const tg_pcheck *cut = i > 0 ? cut_of(w, pl, fresh) : NULL;
            rc = write_quarantines(w, pl, cut ? cut->log : pl->n_log, fresh, err);
            if (rc == TG_OK)
                rc = tg_buf_append(out, pcs[i].out.data, cut ? cut->out_len : pcs[i].out.len, err);
            if (rc != TG_OK) {
                /* out of memory: the pieces before this one stand; the host
                 * refuses this piece's first plan and goes on from there,
                 * on one thread (a quarantine written already only makes a
                 * tool unverified: never an accept) */
                first_plan(&pcs[i], text, pcs[i].start, line, used);
                break;
            }
            for (int v = 0; v < 3; v++)
                verdicts[v] += cut ? cut->verdicts[v] : pcs[i].verdicts[v];
            if (cut && round == 0) {
                again = (size_t)(pcs[i].text - text) + cut->at;
                *line = cut->line;
                break;
            }
            if (cut) {
                size_t again_line = cut->line, again_used = 0, counts[3] = {0, 0, 0};
                const char *rest = pcs[i].text + cut->at;
                if ((rc = tg_plan_track(d, p->n_tools)) == TG_OK)
                    rc = tg_classify_lines_mode(d, p, ctx, store, TG_STORE_DIRECT, rest,
                                                pcs[i].len - cut->at, flags, now, &again_line,
                                                &again_used, out, counts, o, err);
                if (rc == TG_OK && o->status != TG_NO_MORE_CALLS)
                    rc = tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "a plan asked the host");
                for (int v = 0; v < 3; v++)
                    verdicts[v] += counts[v];
                if (rc != TG_OK) {
                    /* stop at the failing line, as one thread would: what
                     * came before it is in out */
                    *line = again_line;
                    *used = (size_t)(rest - text) + again_used;
                    break;
                }
                for (size_t t = 0; t < p->n_tools; t++)
                    fresh[t] |= d->plan->track[t].fresh;
            }
        }
        for (i = 0; i < k; i++)
            tg_buf_free(&pcs[i].out);
        if (!again)
            break;
        from = again;
    }
    tg_mem_free(d->e, fresh, n_fresh);
    if (rc != TG_OK)
        return rc;
    *line = pcs[k - 1].line;
    *used = complete;
    o->status = TG_NO_MORE_CALLS;
    return TG_OK;
}
