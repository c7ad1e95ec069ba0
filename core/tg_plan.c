/*
 * tg_plan.c -- the byte work of classifying a sampled single-tool plan in
 * one pass: each sample's arguments through the tool's input schema (the
 * rung), their normalized canonical digest, the result's canonical digest,
 * the epoch, then agreement on arguments and, separately, on results.
 * The decision itself (thresholds, determinism, quarantine, the later
 * stages) is tg_classify's (tg_classify.c); this file only counts.
 */
#include "tg_internal.h"

/* Samples held on the C stack before the scratch goes to the heap. */
#define PLAN_LOCAL 32

void tg_plan_stand_in(const char *what, tg_hash128_t *h)
{
    tg_hash128(what, strlen(what) + 1, h); /* the NUL keeps it apart from any JSON text */
}

int tg_plan_digest(const tg_norm_t *norm, int mode, const tg_value_t *v, tg_buf_t *buf,
                   tg_hash128_t *h, tg_error_t *err)
{
    int rc;
    tg_buf_reset(buf);
    rc = tg_canon_normalized(norm, v, mode, buf, err);
    if (rc == TG_OK)
        tg_hash128(buf->data, buf->len, h);
    return rc;
}

/* Arguments and results compared with those met before they are digested
 * (and arguments checked by the rung): samples of a tool mostly repeat
 * them, and a walk that finds two values the same is cheaper than writing
 * the canonical form again; the same value has one canonical form,
 * normalized or not, and one verdict of the rung, so the digest and the
 * verdict are those already made.  Only the first SEEN distinct values
 * are kept to compare with, so the work stays linear in the samples. */
#define SEEN 4

/* Whether a and b are the same JSON value with the same number texts: then
 * each canonical form of one, normalized or not, is the other's.  Numbers
 * are compared by their text, not by value: tg_value_equal takes 1 and 1.0
 * as one (whose forms are one), but also two decimals whose exponents are
 * past what it tells apart (1e-7567845678901234567889), whose exact forms
 * differ. */
static int same_value(const tg_value_t *a, const tg_value_t *b)
{
    if (a->type != b->type || a->len != b->len)
        return 0;
    switch (a->type) {
    case TG_NUMBER:
        return tg_same_bytes(a->p.text, b->p.text, a->len);
    case TG_STRING:
        return tg_same_bytes(a->p.str, b->p.str, a->len);
    case TG_ARRAY:
    case TG_OBJECT:
        if (a->p.items == b->p.items) /* one node's children, shared by a repeat of its text */
            return 1;
        for (uint32_t i = 0; i < a->len; i++) {
            const tg_value_t *x = &a->p.items[i], *y = &b->p.items[i];
            if (a->type == TG_OBJECT &&
                (x->key_len != y->key_len || !tg_same_bytes(x->key, y->key, x->key_len)))
                return 0;
            if (!same_value(x, y))
                return 0;
        }
        return 1;
    default: /* null, true, false */
        return 1;
    }
}

int tg_plan_epoch(const tg_value_t *ep, size_t i, tg_buf_t *buf, tg_plan_epochs *seen, int *equal,
                  tg_error_t *err)
{
    tg_hash128_t h;
    int rc;
    if (!ep) {
        *equal = 0;
        return TG_OK;
    }
    if (i == 0) {
        seen->first = ep;
        seen->digested = 0;
        return TG_OK;
    }
    /* settled already, or the first's value (one text, or a repeat of it) */
    if (!*equal || same_value(ep, seen->first))
        return TG_OK;
    if (!seen->digested) {
        if ((rc = tg_plan_digest(NULL, TG_CANON_RFC8785, seen->first, buf, &seen->digest, err)) !=
            TG_OK)
            return rc;
        seen->digested = 1;
    }
    if ((rc = tg_plan_digest(NULL, TG_CANON_RFC8785, ep, buf, &h, err)) != TG_OK)
        return rc;
    if (h.hi != seen->digest.hi || h.lo != seen->digest.lo)
        *equal = 0;
    return TG_OK;
}

typedef struct seen_values {
    const tg_value_t *v[SEEN];
    size_t at[SEEN]; /* the sample each was first met in */
    int fails[SEEN]; /* arguments: whether they failed the rung */
    size_t n;
} seen_values;

/* The kept value equal to v (its index in s), or SEEN. */
static size_t seen_as(const seen_values *s, const tg_value_t *v)
{
    for (size_t k = 0; k < s->n; k++)
        if (same_value(s->v[k], v))
            return k;
    return SEEN;
}

static void keep_seen(seen_values *s, const tg_value_t *v, size_t i, int fails)
{
    if (s->n < SEEN) {
        s->v[s->n] = v;
        s->at[s->n] = i;
        s->fails[s->n++] = fails;
    }
}

/* Whether arguments a fail the tool's input schema (no schema: the tool
 * did not resolve, and every sample fails the rung). */
static int fails_rung(tg_engine_t *e, const tg_schema_t *schema, const tg_value_t *a, int *fails,
                      tg_error_t *err)
{
    tg_finding_t f;
    size_t count;
    int rc;
    *fails = 1;
    if (!schema)
        return TG_OK;
    if ((rc = tg_validate(e, schema, a, &f, 1, &count, err)) == TG_OK)
        *fails = count != 0;
    return rc;
}

/* A second value among the results: the first, met at s->at[0] and
 * standing in as one_result from there to i, gets its digest. */
static int digest_first_result(const seen_values *s, tg_hash128_t *results, size_t i, tg_buf_t *buf,
                               tg_error_t *err)
{
    tg_hash128_t h, one = results[s->at[0]];
    int rc = tg_plan_digest(NULL, TG_CANON_RFC8785, s->v[0], buf, &h, err);
    for (size_t j = s->at[0]; j < i && rc == TG_OK; j++)
        if (results[j].hi == one.hi && results[j].lo == one.lo)
            results[j] = h;
    return rc;
}

static int summarize(tg_engine_t *e, const tg_schema_t *schema, const tg_norm_t *norm,
                     const tg_value_t *samples, size_t n, tg_hash128_t *args, tg_hash128_t *results,
                     tg_plan_summary_t *out, tg_error_t *err)
{
    tg_buf_t buf;
    tg_hash128_t one_result;
    tg_plan_epochs epochs = {NULL, {0, 0}, 0};
    seen_values seen_args = {.n = 0}, seen_results = {.n = 0};
    int rc = TG_OK;

    tg_buf_init(&buf, e);
    tg_plan_stand_in("one result", &one_result);
    out->epochs_equal = 1;
    for (size_t i = 0; i < n && rc == TG_OK; i++) {
        const tg_value_t *s = tg_at(samples, i), *a, *r, *ep;
        size_t k;
        int fails;
        out->at = i;
        if (tg_type_of(s) != TG_OBJECT) {
            rc = tg_fail(err, TG_E_BAD_CALL, tg_offset(s), "sample %zu is not an object", i + 1);
            break;
        }
        a = tg_get(s, "arguments", 9);
        if (tg_type_of(a) != TG_OBJECT) {
            rc = tg_fail(err, TG_E_BAD_ARGUMENTS, a ? tg_offset(a) : tg_offset(s),
                         "sample %zu has no \"arguments\" object", i + 1);
            break;
        }
        if ((k = seen_as(&seen_args, a)) < SEEN) {
            fails = seen_args.fails[k];
            args[i] = args[seen_args.at[k]];
        } else {
            if ((rc = fails_rung(e, schema, a, &fails, err)) != TG_OK ||
                (rc = tg_plan_digest(norm, TG_CANON_EXACT, a, &buf, &args[i], err)) != TG_OK)
                break;
            keep_seen(&seen_args, a, i, fails);
        }
        if (fails) {
            if (out->n_failed < TG_RUNG_MAX_FINDINGS)
                out->failed[out->n_failed] = i;
            out->n_failed++;
        }
        r = tg_get(s, "result", 6);
        if (!r) {
            tg_plan_stand_in("no result", &results[i]);
        } else if ((k = seen_as(&seen_results, r)) < SEEN) {
            results[i] = results[seen_results.at[k]];
        } else if (seen_results.n == 0) {
            /* Only agreement is read off the results' digests: while the
             * results met are all one value, a stand-in tells them apart
             * from a missing one as well as the digest would. */
            results[i] = one_result;
            keep_seen(&seen_results, r, i, 0);
        } else {
            if (seen_results.n == 1 &&
                (rc = digest_first_result(&seen_results, results, i, &buf, err)) != TG_OK)
                break;
            if ((rc = tg_plan_digest(NULL, TG_CANON_RFC8785, r, &buf, &results[i], err)) != TG_OK)
                break;
            keep_seen(&seen_results, r, i, 0);
        }
        ep = tg_get(s, "epoch", 5);
        rc = tg_plan_epoch(ep, i, &buf, &epochs, &out->epochs_equal, err);
    }
    tg_buf_free(&buf);
    if (rc == TG_OK && (rc = tg_agree(e, args, n, &out->args, err)) == TG_OK)
        rc = tg_agree(e, results, n, &out->results, err);
    if (rc == TG_OK)
        out->rep_args = args[out->args.representative];
    return rc;
}

int tg_plan_summarize(tg_engine_t *e, const tg_registry_t *r, long tool, const tg_norm_t *norm,
                      const tg_value_t *samples, tg_plan_summary_t *out, tg_error_t *err)
{
    tg_hash128_t local[2 * PLAN_LOCAL], *hashes = local;
    const tg_schema_t *schema = NULL;
    size_t n;
    int rc;

    tg_error_clear(err);
    if (!e || !r || !samples || !out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "NULL argument");
    memset(out, 0, sizeof *out);
    if (tg_type_of(samples) != TG_ARRAY)
        return tg_fail(err, TG_E_BAD_CALL, tg_offset(samples), "\"samples\" must be an array");
    n = tg_len(samples);
    out->n = n;
    if (n == 0)
        return TG_OK;
    if (tool >= 0 && !(schema = tg_registry_input_schema(r, (size_t)tool)))
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "no tool %ld in the registry", tool);
    if (n > PLAN_LOCAL) {
        if (n > SIZE_MAX / (2 * sizeof *hashes))
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "too many samples");
        if (!(hashes = tg_mem_realloc(e, NULL, 0, 2 * n * sizeof *hashes)))
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    }
    rc = summarize(e, schema, norm, samples, n, hashes, hashes + n, out, err);
    if (hashes != local)
        tg_mem_free(e, hashes, 2 * n * sizeof *hashes);
    return rc;
}
