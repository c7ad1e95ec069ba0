/*
 * fuzz_lines.c -- the chunk entry points on several threads against one
 * thread and against the per-line API.  The threads' merge is the
 * intricate part: each piece of a chunk is classified against the store as
 * the chunk found it, the pieces' quarantines are written in input order,
 * and from the first plan that read the record of a tool an earlier piece
 * quarantined the rest is classified again (on every thread once, then on
 * the caller's).  Here the quarantines fall wherever the input puts them.
 *
 * Input: a program.  Its first byte picks calls or plans, the threads (2,
 * 3 or 4) and how the text is cut into chunks; each further byte (cycled,
 * so that even a short input makes a text the threads share) writes one
 * line: a plan on one of four tools whose samples agree, disagree in their
 * results (a deterministic tool is quarantined), disagree in their
 * arguments, fail the rung, carry no verification or differing epochs; a
 * blank line; or a few of the input's own bytes as a line of junk.  Calls
 * are the same tools' calls, with arguments good and bad, and junk.
 *
 * Invariants: tg_classify_lines_parallel, chunk after chunk, gives the
 * bytes, verdict counts, line numbers and store records that
 * tg_classify_lines gives on one thread over the whole text, and those are
 * what tg_classify gives line by line (each decision with its line
 * number) against a store of its own, and what tg_classify_lines gives
 * with the host's store (store NULL: each record asked, each plan's
 * quarantines handed back for the host to write, as the Lua engine does
 * for a store of its own); tg_check_lines_parallel gives tg_check_lines's
 * bytes, counts and line numbers, and those are tg_check and
 * tg_check_next's, line by line.
 */
#define _POSIX_C_SOURCE 200809L /* tg_internal.h names locale_t */
#include "fuzz.h"
#include "tg_internal.h" /* tg_line_next, tg_line_blank: the lines as the core reads them */

#include <stdarg.h>

#define TOOLS 4
#define MIN_LINES 48 /* a text the threads share (their pieces: 4 KiB and more) */
#define MAX_LINES 300
#define NOW 42

static const char *const TOOL_NAMES[TOOLS] = {"t0", "t1", "t2", "t3"};
/* what a line is padded with, up to 63 bytes of it, so that lines differ
 * in length and the threads' pieces end in different places */
static const char PAD[] = "...............................................................";

/* Four tools with one required string argument, closed world; t2 is not
 * deterministic (its disagreeing results quarantine nothing). */
static const tg_policy_t *policy(tg_engine_t *e)
{
    static const char schema[] =
        "{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"string\"}},"
        "\"required\":[\"k\"]}";
    static const char desc[] =
        "{\"version\":\"f@1\",\"registry_hash\":\"h\",\"stages\":[{\"stage\":\"rung\"},"
        "{\"stage\":\"consistency\"}],\"risk_levels\":[\"low\"],"
        "\"consistency\":{\"min_samples\":2},\"tools\":[{\"deterministic\":true},"
        "{\"deterministic\":true},{\"deterministic\":false},{\"deterministic\":true}]}";
    static tg_policy_t *p;
    static tg_registry_t *r; /* the policy reads it as long as it lives */
    tg_doc_t *d = NULL;
    size_t index;
    if (p)
        return p;
    FUZZ_CHECK(tg_parse(e, schema, sizeof schema - 1, &d, NULL) == TG_OK);
    FUZZ_CHECK((r = tg_registry_new(e, NULL)) != NULL);
    for (size_t t = 0; t < TOOLS; t++)
        FUZZ_CHECK(tg_registry_add(r, "sb", 2, TOOL_NAMES[t], strlen(TOOL_NAMES[t]), "", 0,
                                   tg_doc_root(d), NULL, NULL, &index, NULL) == TG_OK);
    tg_doc_free(d);
    FUZZ_CHECK(tg_policy_new(e, r, desc, sizeof desc - 1, &p, NULL) == TG_OK);
    return p;
}

/* The process's pools of 2, 3 and 4 threads, made once. */
static tg_workers_t *workers(tg_engine_t *e, size_t threads)
{
    static tg_workers_t *w[5];
    if (!w[threads])
        FUZZ_CHECK((w[threads] = tg_workers_new(e, threads, NULL)) != NULL);
    return w[threads];
}

static void put(tg_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(tg_buf_t *b, const char *fmt, ...)
{
    char s[512];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(s, sizeof s, fmt, ap);
    va_end(ap);
    FUZZ_CHECK(n >= 0 && (size_t)n < sizeof s && tg_buf_append(b, s, (size_t)n, NULL) == TG_OK);
}

/* A few of the program's bytes as a line of their own ('\n' kept out). */
static void junk(tg_buf_t *b, const uint8_t *data, size_t size, size_t at)
{
    size_t n = data[at % size] % 9;
    for (size_t i = 1; i <= n; i++) {
        char c = (char)data[(at + i) % size];
        FUZZ_CHECK(tg_buf_append(b, c == '\n' ? " " : &c, 1, NULL) == TG_OK);
    }
    put(b, "\n");
}

static void plan_line(tg_buf_t *b, unsigned op, size_t i, size_t pad)
{
    unsigned t = op & 3, kind = (op >> 2) & 7, n = 2 + ((op >> 5) & 3);
    put(b,
        "{\"plan_id\":%zu,\"pad\":\"%.*s\",\"tool\":{\"server\":\"sb\",\"name\":\"%s\"%s},"
        "\"samples\":[",
        i, (int)pad, PAD, TOOL_NAMES[t], kind == 6 ? "" : ",\"verified\":true");
    for (unsigned k = 0; k < n; k++) {
        const char *sep = k ? "," : "";
        switch (kind) {
        case 3: /* results disagree: a deterministic tool is quarantined */
            put(b, "%s{\"arguments\":{\"k\":\"a\"},\"result\":%u,\"epoch\":\"e\"}", sep, k);
            break;
        case 4: /* arguments disagree */
            put(b, "%s{\"arguments\":{\"k\":\"a%u\"},\"result\":1,\"epoch\":\"e\"}", sep, k);
            break;
        case 5: /* the rung refuses the arguments */
            put(b, "%s{\"arguments\":{\"q\":%u},\"result\":1,\"epoch\":\"e\"}", sep, k);
            break;
        case 7: /* the epochs differ */
            put(b, "%s{\"arguments\":{\"k\":\"a\"},\"result\":1,\"epoch\":\"e%u\"}", sep, k);
            break;
        default: /* all agree */
            put(b, "%s{\"arguments\":{\"k\":\"a\"},\"result\":1,\"epoch\":\"e\"}", sep);
        }
    }
    put(b, "]}\n");
}

static void call_line(tg_buf_t *b, unsigned op, size_t pad)
{
    unsigned t = op & 3, kind = (op >> 2) & 3;
    put(b, "{\"server\":\"sb\",\"name\":\"%s\",\"arguments\":", TOOL_NAMES[t]);
    if (kind == 0)
        put(b, "{\"k\":\"%.*s\"}}\n", (int)pad, PAD);
    else if (kind == 1)
        put(b, "{\"k\":%zu}}\n", pad); /* not a string */
    else if (kind == 2)
        put(b, "{\"k\":\"a\",\"extra\":\"%.*s\"}}\n", (int)pad, PAD);
    else
        put(b, "[%zu]}\n", pad); /* not an object */
}

/* The text the program writes. */
static void write_text(tg_buf_t *b, const uint8_t *data, size_t size, int calls)
{
    size_t lines = size - 1 < MIN_LINES ? MIN_LINES : size - 1;
    if (lines > MAX_LINES)
        lines = MAX_LINES;
    for (size_t i = 0; i < lines; i++) {
        /* cycled bytes differ from round to round */
        unsigned op = (unsigned)(data[1 + i % (size - 1)] ^ (uint8_t)(0x5b * (i / (size - 1))));
        size_t pad = (op * 7 + i) % 64;
        if (op % 23 == 0)
            junk(b, data, size, i);
        else if (op % 31 == 1)
            put(b, "%s\n", op & 1 ? "" : " \t");
        else if (calls)
            call_line(b, op, pad);
        else
            plan_line(b, op, i, pad);
    }
}

/* A store's records as text, to compare two stores. */
static void records(const tg_store_t *s, tg_buf_t *out)
{
    for (size_t i = 0; i < tg_store_count(s); i++) {
        const char *server, *name;
        size_t slen, nlen;
        tg_store_record_t r;
        FUZZ_CHECK(tg_store_at(s, i, &server, &slen, &name, &nlen, &r) == TG_OK);
        put(out, "%.*s/%.*s q=%d %.*s since=%lld epoch=%.*s verified=%.*s\n", (int)slen, server,
            (int)nlen, name, r.quarantined, (int)(r.reason_len > 200 ? 200 : r.reason_len),
            r.reason ? r.reason : "", (long long)r.since, (int)(r.epoch ? r.epoch_len : 1),
            r.epoch ? r.epoch : "-", (int)(r.verified_epoch ? r.verified_epoch_len : 1),
            r.verified_epoch ? r.verified_epoch : "-");
    }
}

/* What one run gave: decisions, counts, line numbers, bytes read, store. */
typedef struct run {
    tg_buf_t out, store;
    size_t verdicts[3], line, used;
} run;

static void run_init(run *r, tg_engine_t *e)
{
    memset(r, 0, sizeof *r);
    tg_buf_init(&r->out, e);
    tg_buf_init(&r->store, e);
}

static void run_free(run *r)
{
    tg_buf_free(&r->out);
    tg_buf_free(&r->store);
}

static int same_bytes(const tg_buf_t *a, const tg_buf_t *b)
{
    return a->len == b->len && (!a->len || memcmp(a->data, b->data, a->len) == 0);
}

static int same_run(const run *a, const run *b)
{
    return same_bytes(&a->out, &b->out) && same_bytes(&a->store, &b->store) && a->line == b->line &&
           a->used == b->used && memcmp(a->verdicts, b->verdicts, sizeof a->verdicts) == 0;
}

/* The text through the lines entry point: on one thread in one call
 * (w NULL), or on w's threads in chunks cut at the fractions cuts gives
 * (the rest of each cut to the next line end, as the reader hands over
 * complete lines). */
static void lines(tg_workers_t *w, tg_decider_t *d, const tg_policy_t *p, int calls,
                  const char *text, size_t len, unsigned cuts, run *r)
{
    tg_store_t *store = calls ? NULL : tg_store_new(fuzz_engine(), NULL);
    size_t at = 0;
    int pass = 0;
    FUZZ_CHECK(calls || store);
    while (at < len) {
        size_t end = len, used = 0;
        tg_outcome_t o;
        int rc;
        if (w && pass < 3) {
            /* a cut at 1/4, 1/2 or 3/4 of what is left, by 2 bits of cuts each */
            unsigned q = (cuts >> (2 * pass)) & 3;
            if (q) {
                const char *nl =
                    memchr(text + at + (len - at) * q / 4, '\n', len - at - (len - at) * q / 4);
                end = nl ? (size_t)(nl - text) + 1 : len;
            }
        }
        if (calls)
            rc = w ? tg_check_lines_parallel(w, d, p, NULL, text + at, end - at, TG_FORMAT_AUTO, 0,
                                             &r->line, &used, &r->out, r->verdicts, &o, NULL)
                   : tg_check_lines(d, p, NULL, text + at, end - at, TG_FORMAT_AUTO, 0, &r->line,
                                    &used, &r->out, r->verdicts, &o, NULL);
        else
            rc = w ? tg_classify_lines_parallel(w, d, p, NULL, store, text + at, end - at, 0, NOW,
                                                &r->line, &used, &r->out, r->verdicts, &o, NULL)
                   : tg_classify_lines(d, p, NULL, store, text + at, end - at, 0, NOW, &r->line,
                                       &used, &r->out, r->verdicts, &o, NULL);
        /* the default engine's memory does not run out: every line is decided */
        FUZZ_CHECK(rc == TG_OK && o.status == TG_NO_MORE_CALLS && used == end - at);
        at = end;
        pass++;
    }
    r->used = at;
    if (store) {
        records(store, &r->store);
        tg_store_free(store);
    }
}

/* The text line by line through tg_classify or tg_check (and tg_check_next). */
static void one_by_one(tg_decider_t *d, const tg_policy_t *p, int calls, const char *text,
                       size_t len, run *r)
{
    tg_store_t *store = calls ? NULL : tg_store_new(fuzz_engine(), NULL);
    const char *s;
    size_t at = 0, n;
    while ((s = tg_line_next(text, len, &at, &n)) != NULL) {
        tg_outcome_t o;
        int rc;
        r->line++;
        if (tg_line_blank(s, n))
            continue;
        rc = calls ? tg_check(d, p, NULL, s, n, TG_FORMAT_AUTO, 0, r->line, &o, NULL)
                   : tg_classify(d, p, NULL, store, s, n, 0, r->line, NOW, &o, NULL);
        while (rc == TG_OK && o.status == TG_DECIDED) {
            FUZZ_CHECK(o.verdict >= 0 && o.verdict < 3);
            r->verdicts[o.verdict]++;
            FUZZ_CHECK(tg_buf_append(&r->out, o.json, o.json_len, NULL) == TG_OK &&
                       tg_buf_append(&r->out, "\n", 1, NULL) == TG_OK);
            if (!calls)
                break;
            rc = tg_check_next(d, &o, NULL);
        }
        FUZZ_CHECK(rc == TG_OK && (calls ? o.status == TG_NO_MORE_CALLS : o.status == TG_DECIDED));
    }
    r->used = at;
    if (store) {
        records(store, &r->store);
        tg_store_free(store);
    }
}

/* The text through tg_classify_lines with the host's store: the records
 * it asks for are read from a store the host keeps, the quarantines of
 * each plan it hands back are written there in order. */
static void host_store(tg_decider_t *d, const tg_policy_t *p, const char *text, size_t len, run *r)
{
    tg_store_t *host = tg_store_new(fuzz_engine(), NULL);
    size_t at = 0;
    FUZZ_CHECK(host != NULL);
    while (at < len) {
        size_t used = 0;
        tg_outcome_t o;
        int rc = tg_classify_lines(d, p, NULL, NULL, text + at, len - at, 0, NOW, &r->line, &used,
                                   &r->out, r->verdicts, &o, NULL);
        at += used;
        while (rc == TG_OK && o.status == TG_NEEDS_STORE) {
            const char *name = TOOL_NAMES[tg_classify_store_tool(d)];
            tg_store_record_t rec;
            int found = tg_store_get(host, "sb", 2, name, strlen(name), &rec);
            rc = tg_classify_record(d, found, found && rec.quarantined,
                                    found ? rec.verified_epoch : NULL,
                                    found ? rec.verified_epoch_len : 0, &o, NULL);
        }
        FUZZ_CHECK(rc == TG_OK);
        if (o.status == TG_NO_MORE_CALLS)
            break;
        FUZZ_CHECK(o.status == TG_DECIDED && o.verdict >= 0 && o.verdict < 3);
        r->verdicts[o.verdict]++;
        FUZZ_CHECK(tg_buf_append(&r->out, o.json, o.json_len, NULL) == TG_OK &&
                   tg_buf_append(&r->out, "\n", 1, NULL) == TG_OK);
        for (size_t q = 0; q < tg_classify_quarantines(d); q++) {
            const char *reason, *epoch, *name;
            size_t reason_len, epoch_len;
            long tool = tg_classify_quarantine(d, q, &reason, &reason_len, &epoch, &epoch_len);
            int changed;
            FUZZ_CHECK(tool >= 0 && tool < TOOLS);
            name = TOOL_NAMES[tool];
            FUZZ_CHECK(tg_store_quarantine(host, "sb", 2, name, strlen(name), reason, reason_len,
                                           NOW, epoch, epoch_len, &changed, NULL) == TG_OK);
        }
    }
    r->used = at;
    records(host, &r->store);
    tg_store_free(host);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_engine_t *e = fuzz_engine();
    const tg_policy_t *p = policy(e);
    static tg_decider_t *d;
    int calls;
    size_t threads;
    tg_buf_t text;
    run one, each, many, asked;

    if (size < 2)
        return 0;
    if (!d)
        FUZZ_CHECK((d = tg_decider_new(e, NULL)) != NULL);
    calls = (data[0] & 0xC0) == 0xC0; /* a quarter of the programs: calls */
    threads = 2 + (data[0] & 3) % 3;
    tg_buf_init(&text, e);
    write_text(&text, data, size, calls);

    run_init(&one, e);
    run_init(&each, e);
    run_init(&many, e);
    run_init(&asked, e);
    lines(NULL, d, p, calls, text.data, text.len, 0, &one);
    one_by_one(d, p, calls, text.data, text.len, &each);
    lines(workers(e, threads), d, p, calls, text.data, text.len, (unsigned)data[0] >> 2, &many);
    if (!calls)
        host_store(d, p, text.data, text.len, &asked);
    if (!same_run(&one, &each) || !same_run(&one, &many) || (!calls && !same_run(&one, &asked))) {
        fprintf(stderr,
                "%s, %zu threads: one thread %zu bytes (line %zu), line by line %zu, "
                "threads %zu (line %zu), the host's store %zu\n-- store, one thread:\n%.*s"
                "-- threads:\n%.*s-- the host's:\n%.*s",
                calls ? "calls" : "plans", threads, one.out.len, one.line, each.out.len,
                many.out.len, many.line, asked.out.len, (int)one.store.len, one.store.data,
                (int)many.store.len, many.store.data, (int)asked.store.len, asked.store.data);
        FUZZ_CHECK(!"the runs agree");
    }
    run_free(&one);
    run_free(&each);
    run_free(&many);
    run_free(&asked);
    tg_buf_free(&text);
    return 0;
}
