/*
 * tg_classify.c -- self-consistency of a sampled plan, start to end: the
 * plan parsed once; every call of every sample through the rung; the
 * normalized exact digests of the arguments, the results' digests, the
 * epochs; agreement on the plan, per step and per argument pointer; the
 * determinism of the representative's tools; the decision table
 * (tg_consistency.c); the quarantines; then the policy's stages on each
 * call the plan would run, through the check pipeline (tg_decide.c).
 *
 * What needs the host -- a policy function resolving an ID, the record of
 * a tool in a store the host keeps, a custom stage -- is a question the
 * call returns with; the answer goes on from there.  So the work is a
 * state machine over the phases of enum tg_plan_phase, its state in the
 * decider (d->plan), its arrays grown once and reused plan after plan.
 *
 * Single-tool plans count in one pass (tg_plan_summarize, tg_plan.c);
 * plans of several calls sample by sample here.  Where the two kinds of
 * plan could differ, one rule serves both: epochs are compared by their
 * canonical form, a missing result digests as a stand-in unlike any JSON,
 * a sample whose check cannot finish (a validation limit) refuses the plan
 * with the limit's code.  Whatever fails inside ends in a reject (or the
 * policy's on_error verdict), or in TG_E_NOMEM for the host to refuse the
 * plan: never an accept.
 */
#include "tg_decide.h"
#include "tg_norm.h"

#include <stdarg.h>
#include <stdio.h>

/* ---- small tools ------------------------------------------------------------- */

static int nomem(tg_error_t *err)
{
    return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
}

int tg_grow(tg_engine_t *e, void *pp, size_t *cap, size_t need, size_t elem)
{
    void *p, *q;
    size_t ncap;
    if (need <= *cap)
        return TG_OK;
    ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    if (ncap > SIZE_MAX / elem)
        return TG_E_NOMEM;
    memcpy(&p, pp, sizeof p);
    if (!(q = tg_mem_realloc(e, p, *cap * elem, ncap * elem)))
        return TG_E_NOMEM;
    memcpy(pp, &q, sizeof q);
    *cap = ncap;
    return TG_OK;
}

#define GROW(pl, arr, need)                                                                        \
    tg_grow((pl)->e, &(pl)->arr, &(pl)->cap_##arr, (need), sizeof *(pl)->arr)
#define FREE_ARRAY(pl, arr) tg_mem_free((pl)->e, (pl)->arr, (pl)->cap_##arr * sizeof *(pl)->arr)

/* Appends to the plan's texts; *at (may be NULL) gets where it starts. */
static int tput(tg_plan *pl, const char *s, size_t n, size_t *at)
{
    if (at)
        *at = pl->texts.len;
    return tg_buf_append(&pl->texts, s, n, NULL);
}

static int tputs(tg_plan *pl, const char *s)
{
    return tput(pl, s, strlen(s), NULL);
}

/* Appends a formatted message (integers and strings only: nothing here
 * depends on the locale). */
static int tprintf(tg_plan *pl, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int tprintf(tg_plan *pl, const char *fmt, ...)
{
    char buf[TG_ERROR_MESSAGE_MAX + 160];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof buf)
        n = (int)sizeof buf - 1;
    return tput(pl, buf, (size_t)n, NULL);
}

/* The canonical form of v in mode, normalized by norm, hashed. */
static int digest(tg_plan *pl, const tg_norm_t *norm, int mode, const tg_value_t *v,
                  tg_hash128_t *h, tg_error_t *err)
{
    return tg_plan_digest(norm, mode, v, &pl->scratch, h, err);
}

static const tg_value_t *member(const tg_value_t *v, const char *key)
{
    return tg_get(v, key, strlen(key));
}

/* A plan field Lua reads as a scalar: a string, number or boolean. */
static const tg_value_t *scalar(const tg_value_t *v)
{
    int t = tg_type_of(v);
    return v && t != TG_NULL && t != TG_ARRAY && t != TG_OBJECT ? v : NULL;
}

static const tg_registry_t *reg(const tg_plan *pl)
{
    return pl->p->r;
}

/* The normalization plan a tool's arguments are compared under in this
 * plan: its own, with the IDs a policy function resolved. */
static const tg_norm_t *norm_of(const tg_plan *pl, long tool)
{
    if (tool < 0)
        return NULL;
    for (size_t i = 0; i < pl->n_norms; i++)
        if (pl->norms[i].tool == tool)
            return pl->norms[i].norm;
    return pl->p->tools[tool].norm;
}

/* ---- the plan's state ------------------------------------------------------- */

static tg_plan *plan_of(tg_decider_t *d)
{
    tg_plan *pl = d->plan;
    if (pl)
        return pl;
    if (!(pl = tg_mem_realloc(d->e, NULL, 0, sizeof *pl)))
        return NULL;
    memset(pl, 0, sizeof *pl);
    pl->e = d->e;
    tg_buf_init(&pl->texts, d->e);
    tg_buf_init(&pl->scratch, d->e);
    tg_buf_init(&pl->log_texts, d->e);
    d->plan = pl;
    return pl;
}

static void drop_norms(tg_plan *pl)
{
    for (size_t i = 0; i < pl->n_norms; i++)
        tg_norm_free(pl->norms[i].norm);
    pl->n_norms = 0;
}

/* Forgets the last plan (its document, its per-plan normalizations). */
static void plan_reset(tg_plan *pl)
{
    tg_doc_free(pl->doc);
    pl->doc = NULL;
    drop_norms(pl);
    tg_buf_reset(&pl->texts);
    pl->phase = TG_PLAN_IDLE;
    pl->waiting = 0;
    pl->root = pl->samples = pl->plan_id = pl->epoch_fixed = pl->epoch = NULL;
    pl->inline_det = pl->inline_ver = NULL;
    pl->single = pl->usable = 0;
    pl->n = 0;
    pl->tool = -1;
    pl->n_steps = pl->n_samp = pl->n_stats = pl->n_failures = pl->n_ptrs = 0;
    pl->n_queries = pl->n_records = pl->n_objections = pl->n_quarantines = pl->n_hex = 0;
    pl->n_dets = 0;
    pl->n_seen = 0;
    pl->max_steps = 0;
    pl->epochs_equal = pl->fixed = pl->has_epoch = 0;
    pl->rep = pl->rep_steps = 0;
    pl->has_features = pl->has_message = pl->refused = pl->rung_failed = pl->has_offset = 0;
    pl->args_digest[0] = '\0';
    pl->in_loop = 0;
}

void tg_plan_free(tg_plan *pl)
{
    tg_engine_t *e;
    if (!pl)
        return;
    e = pl->e;
    plan_reset(pl);
    tg_buf_free(&pl->texts);
    tg_buf_free(&pl->scratch);
    tg_buf_free(&pl->log_texts);
    FREE_ARRAY(pl, steps);
    FREE_ARRAY(pl, samp);
    FREE_ARRAY(pl, hashes);
    FREE_ARRAY(pl, stats);
    FREE_ARRAY(pl, failures);
    FREE_ARRAY(pl, ptrs);
    FREE_ARRAY(pl, nodes);
    FREE_ARRAY(pl, queries);
    FREE_ARRAY(pl, norms);
    FREE_ARRAY(pl, records);
    FREE_ARRAY(pl, objections);
    FREE_ARRAY(pl, quarantines);
    FREE_ARRAY(pl, seen);
    FREE_ARRAY(pl, hex);
    FREE_ARRAY(pl, log);
    FREE_ARRAY(pl, dets);
    tg_mem_free(e, pl->track, pl->n_track * sizeof *pl->track);
    tg_mem_free(e, pl, sizeof *pl);
}

/* ---- the end of a plan -------------------------------------------------------- */

static int conclude(tg_decider_t *d, tg_plan *pl, tg_outcome_t *out, tg_error_t *err)
{
    int rc = tg_plan_decision_write(d, err);
    if (rc != TG_OK || (pl->sweep && (rc = tg_sweep_take(pl->sweep, d, err)) != TG_OK))
        return rc;
    pl->phase = TG_PLAN_DONE;
    out->status = TG_DECIDED;
    out->verdict = pl->verdict_out;
    out->json = d->out.data;
    out->json_len = d->out.len;
    out->code = pl->code_out;
    out->stage = pl->stage_out;
    return TG_OK;
}

/* A plan refused before the decision table: its verdict, stage and code;
 * the message is what is put into texts until refused(). */
static int refuse_begin(tg_plan *pl, int verdict, const char *stage, const char *code, int fields)
{
    pl->refused = 1;
    pl->refusal_verdict = verdict;
    pl->refusal_stage = stage;
    pl->refusal_fields = fields;
    /* NUL-terminated: the outcome hands it out as a C string */
    if (tput(pl, code, strlen(code) + 1, &pl->code) != TG_OK)
        return TG_E_NOMEM;
    pl->code_len = strlen(code);
    pl->message = pl->texts.len;
    return TG_OK;
}

static int refused(tg_decider_t *d, tg_plan *pl, int rc, tg_outcome_t *out, tg_error_t *err)
{
    if (rc != TG_OK)
        return nomem(err);
    pl->message_len = pl->texts.len - pl->message;
    pl->has_message = 1;
    return conclude(d, pl, out, err);
}

/* BAD_PLAN with a constant message. */
static int bad_plan(tg_decider_t *d, tg_plan *pl, const char *stage, int fields, const char *msg,
                    tg_outcome_t *out, tg_error_t *err)
{
    int rc = refuse_begin(pl, TG_REJECT, stage, "BAD_PLAN", fields);
    if (rc == TG_OK)
        rc = tputs(pl, msg);
    return refused(d, pl, rc, out, err);
}

/* ---- reading the samples -------------------------------------------------------- */

/* A single-tool plan's tool, resolved as the rung resolves a call (a bare
 * name only when one server has it). */
static void read_single(tg_plan *pl, const tg_value_t *tool)
{
    const tg_value_t *server = member(tool, "server");
    size_t nlen, slen, found[2];
    const char *name = tg_str(member(tool, "name"), &nlen), *s = tg_str(server, &slen);
    pl->single = 1;
    pl->tool = -1;
    if (s)
        pl->tool = tg_registry_find(reg(pl), s, slen, name, nlen);
    else if (tg_registry_find_name(reg(pl), name, nlen, found, 2) == 1)
        pl->tool = (long)found[0];
    pl->usable = pl->tool >= 0 && !pl->p->tools[pl->tool].refuse_code.s;
    pl->inline_det = scalar(member(tool, "deterministic"));
    pl->inline_ver = scalar(member(tool, "verified"));
}

/* The single-tool plan's call as the rung reads it. */
static void single_call(const tg_plan *pl, const char **server, size_t *slen, const char **name,
                        size_t *nlen)
{
    const tg_value_t *tool = member(pl->root, "tool");
    *server = tg_str(member(tool, "server"), slen);
    *name = tg_str(member(tool, "name"), nlen);
}

static const tg_value_t *sample_args(const tg_plan *pl, size_t i)
{
    return member(tg_at(pl->samples, i), "arguments");
}

/* A plan of several calls: every sample read, every call with arguments
 * through the rung.  Returns TG_OK with pl->refused set when the plan is
 * malformed or a check could not finish. */
static int read_multi(tg_decider_t *d, tg_plan *pl, tg_error_t *err)
{
    static const char *const problems[] = {
        "a sample must be an object", "a sample needs \"calls\" (an array)",
        "each call needs a string \"name\"", "call arguments must be objects"};
    const tg_policy_t *p = pl->p;
    if (GROW(pl, samp, pl->n) != TG_OK)
        return nomem(err);
    for (size_t i = 0; i < pl->n; i++) {
        const tg_value_t *s = tg_at(pl->samples, i), *calls = member(s, "calls");
        tg_psample *sm = &pl->samp[i];
        int problem = -1;
        size_t count;
        if (tg_type_of(s) != TG_OBJECT)
            problem = 0;
        else if (tg_type_of(calls) != TG_ARRAY)
            problem = 1;
        count = problem < 0 ? tg_len(calls) : 0;
        if (GROW(pl, steps, pl->n_steps + count) != TG_OK)
            return nomem(err);
        sm->first = pl->n_steps;
        sm->count = 0;
        sm->results = problem < 0 ? member(s, "results") : NULL;
        for (size_t k = 0; k < count && problem < 0; k++) {
            const tg_value_t *c = tg_at(calls, k), *name, *server;
            tg_pstep *st = &pl->steps[pl->n_steps + k];
            name = tg_type_of(c) == TG_OBJECT ? member(c, "name") : NULL;
            if (tg_type_of(name) != TG_STRING) {
                problem = 2;
                break;
            }
            server = member(c, "server");
            st->server = tg_str(server, &st->server_len);
            st->name = tg_str(name, &st->name_len);
            st->args = member(c, "arguments");
            if (st->args && tg_type_of(st->args) != TG_OBJECT)
                problem = 3;
            st->tool = -1;
            st->ok = 0;
        }
        if (problem >= 0) {
            int rc = refuse_begin(pl, TG_REJECT, "decode", "BAD_PLAN", TG_PF_PLAN_ID);
            if (rc == TG_OK)
                rc = tprintf(pl, "sample %zu: %s", i + 1, problems[problem]);
            return rc == TG_OK ? TG_OK : nomem(err);
        }
        sm->count = count;
        pl->n_steps += count;
        if (count > pl->max_steps)
            pl->max_steps = count;
        for (size_t k = 0; k < count; k++) {
            tg_pstep *st = &pl->steps[sm->first + k];
            tg_rung_result_t *res = &d->rung;
            tg_error_t cerr;
            int rc;
            if (!st->args)
                continue;
            rc = tg_rung_check(d->e, p->r, st->server, st->server_len, st->name, st->name_len,
                               st->args, 0, res, &cerr);
            if (rc == TG_E_NOMEM)
                return nomem(err);
            if (rc != TG_OK) {
                /* the check could not finish (a limit): the plan is refused */
                rc = refuse_begin(pl, TG_REJECT, "rung", tg_code_name(cerr.code), TG_PF_PLAN_ID);
                if (rc == TG_OK)
                    rc = tprintf(pl, "sample %zu: the rung could not finish its check: %s", i + 1,
                                 cerr.message);
                return rc == TG_OK ? TG_OK : nomem(err);
            }
            if (res->resolution == TG_RESOLVED) {
                st->tool = (long)res->tool;
                st->ok = res->n_findings == 0 && !p->tools[res->tool].refuse_code.s;
            }
        }
    }
    return TG_OK;
}

/* ---- IDs a policy function resolves ---------------------------------------------- */

static uint64_t query_hash(long tool, const tg_presolve *r, const char *id, size_t len)
{
    uint64_t h[3];
    h[0] = (uint64_t)tool;
    h[1] = tg_hash64(r->resolver.s, r->resolver.len);
    h[2] = tg_hash64(len ? id : "", len);
    return tg_hash64(h, sizeof h);
}

/* Adds (tool, resolver, id) unless the plan asks it already.  The set of
 * queries is an open-addressing table over pl->queries. */
static int add_query(tg_plan *pl, long tool, const tg_presolve *r, const char *id, size_t len)
{
    uint64_t h = query_hash(tool, r, id, len);
    size_t mask, i;
    tg_pquery *q;
    if (2 * (pl->n_queries + 1) > pl->n_seen) {
        size_t slots = pl->n_seen ? 2 * pl->n_seen : 64;
        if (GROW(pl, seen, slots) != TG_OK)
            return TG_E_NOMEM;
        pl->n_seen = slots;
        memset(pl->seen, 0, slots * sizeof *pl->seen);
        for (size_t k = 0; k < pl->n_queries; k++) {
            size_t j = (size_t)pl->queries[k].hash & (slots - 1);
            while (pl->seen[j])
                j = (j + 1) & (slots - 1);
            pl->seen[j] = (uint32_t)k + 1;
        }
    }
    mask = pl->n_seen - 1;
    for (i = (size_t)h & mask; pl->seen[i]; i = (i + 1) & mask) {
        q = &pl->queries[pl->seen[i] - 1];
        if (q->hash == h && q->tool == tool && q->rule->resolver.len == r->resolver.len &&
            memcmp(q->rule->resolver.s, r->resolver.s, r->resolver.len) == 0 && q->id_len == len &&
            (len == 0 || memcmp(pl->texts.data + q->id, id, len) == 0))
            return TG_OK;
    }
    if (pl->n_queries >= UINT32_MAX / 4 || GROW(pl, queries, pl->n_queries + 1) != TG_OK)
        return TG_E_NOMEM;
    q = &pl->queries[pl->n_queries];
    q->tool = tool;
    q->rule = r;
    q->hash = h;
    q->id_len = len;
    if (tput(pl, id, len, &q->id) != TG_OK)
        return TG_E_NOMEM;
    pl->seen[i] = (uint32_t)++pl->n_queries;
    return TG_OK;
}

/* The strings at the places rule r's pattern names in v (from segment k),
 * each as the operations before "id" make it, added as queries. */
static int find_ids(tg_plan *pl, long tool, const tg_presolve *r, const tg_value_t *v, size_t k)
{
    const tg_pseg *sg;
    int t = tg_type_of(v);
    if (!v)
        return TG_OK;
    if (k == r->n_segs) {
        size_t len;
        const char *str = tg_str(v, &len);
        int rc;
        if (!str)
            return TG_OK;
        tg_buf_reset(&pl->scratch);
        if ((rc = tg_norm_string(NULL, r->pre_ops, str, len, &pl->scratch, NULL)) != TG_OK)
            return rc;
        return add_query(pl, tool, r, pl->scratch.len ? pl->scratch.data : "", pl->scratch.len);
    }
    sg = &r->segs[k];
    if (sg->wild && (t == TG_OBJECT || t == TG_ARRAY)) {
        for (size_t i = 0; i < tg_len(v); i++) {
            int rc = find_ids(pl, tool, r, tg_at(v, i), k + 1);
            if (rc != TG_OK)
                return rc;
        }
        return TG_OK;
    }
    if (t == TG_OBJECT)
        return find_ids(pl, tool, r, tg_get(v, sg->key.s, sg->key.len), k + 1);
    if (t == TG_ARRAY && sg->index != (size_t)-1)
        return find_ids(pl, tool, r, tg_at(v, sg->index), k + 1);
    return TG_OK;
}

static int ids_of(tg_plan *pl, long tool, const tg_value_t *args)
{
    const tg_ptool *t = &pl->p->tools[tool];
    for (size_t i = 0; i < t->n_resolve; i++) {
        int rc = find_ids(pl, tool, &t->resolve[i], args, 0);
        if (rc != TG_OK)
            return rc;
    }
    return TG_OK;
}

/* Every ID of the plan a policy function resolves, in sample, call, rule
 * and document order. */
static int collect_ids(tg_plan *pl, tg_error_t *err)
{
    int rc = TG_OK;
    if (!pl->p->has_resolve)
        return TG_OK;
    if (pl->single) {
        if (!pl->usable || !pl->p->tools[pl->tool].n_resolve)
            return TG_OK;
        for (size_t i = 0; i < pl->n && rc == TG_OK; i++) {
            const tg_value_t *a = sample_args(pl, i);
            if (tg_type_of(a) == TG_OBJECT)
                rc = ids_of(pl, pl->tool, a);
        }
    } else {
        for (size_t i = 0; i < pl->n_steps && rc == TG_OK; i++) {
            const tg_pstep *st = &pl->steps[i];
            if (st->tool >= 0 && st->args && pl->p->tools[st->tool].n_resolve)
                rc = ids_of(pl, st->tool, st->args);
        }
    }
    return rc == TG_OK ? TG_OK : nomem(err);
}

static int gathered(tg_decider_t *d, tg_plan *pl, tg_outcome_t *out, tg_error_t *err);

static int ask_resolve(tg_decider_t *d, tg_plan *pl, tg_outcome_t *out, tg_error_t *err)
{
    if (pl->waiting < pl->n_queries) {
        pl->phase = TG_PLAN_RESOLVE;
        out->status = TG_NEEDS_RESOLVE;
        return TG_OK;
    }
    return gathered(d, pl, out, err);
}

long tg_classify_query(const tg_decider_t *d, const char **resolver, size_t *resolver_len,
                       const char **id, size_t *id_len)
{
    const tg_plan *pl = d ? d->plan : NULL;
    const tg_pquery *q;
    if (!pl || pl->phase != TG_PLAN_RESOLVE)
        return -1;
    q = &pl->queries[pl->waiting];
    if (resolver)
        *resolver = q->rule->resolver.s;
    if (resolver_len)
        *resolver_len = q->rule->resolver.len;
    if (id)
        *id = pl->texts.data + q->id;
    if (id_len)
        *id_len = q->id_len;
    return q->tool;
}

/* The tool's plan for this plan, copied from its own on first need. */
static tg_norm_t *plan_norm(tg_plan *pl, long tool, tg_error_t *err)
{
    tg_norm_t *n;
    for (size_t i = 0; i < pl->n_norms; i++)
        if (pl->norms[i].tool == tool)
            return pl->norms[i].norm;
    if (GROW(pl, norms, pl->n_norms + 1) != TG_OK) {
        nomem(err);
        return NULL;
    }
    if (!(n = tg_norm_copy(pl->p->tools[tool].norm, err)))
        return NULL;
    pl->norms[pl->n_norms].tool = tool;
    pl->norms[pl->n_norms++].norm = n;
    return n;
}

int tg_classify_resolve(tg_decider_t *d, int ok, const char *text, size_t len, tg_outcome_t *out,
                        tg_error_t *err)
{
    tg_plan *pl = d ? d->plan : NULL;
    const tg_pquery *q;
    tg_error_t aerr;
    int rc;
    tg_error_clear(err);
    if (!pl || !out || pl->phase != TG_PLAN_RESOLVE || (!text && len))
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "no ID is waiting to be resolved");
    q = &pl->queries[pl->waiting];
    if (!ok) {
        rc = refuse_begin(pl, d->p->on_error, "consistency", "POLICY_ERROR", TG_PF_PLAN_ID);
        if (rc == TG_OK && (rc = tputs(pl, "policy resolver failed: ")) == TG_OK)
            rc = tg_append_utf8(&pl->texts, text ? text : "", len, NULL);
        return refused(d, pl, rc, out, err);
    }
    if (len != q->id_len || (len && memcmp(text, pl->texts.data + q->id, len) != 0)) {
        tg_norm_t *n = plan_norm(pl, q->tool, err);
        if (!n)
            return nomem(err);
        rc = tg_norm_add_alias(n, pl->texts.data + q->id, q->id_len, text, len, &aerr);
        if (rc == TG_E_NOMEM)
            return nomem(err);
        if (rc != TG_OK) {
            rc = refuse_begin(pl, d->p->on_error, "consistency", "POLICY_ERROR", TG_PF_PLAN_ID);
            if (rc == TG_OK && (rc = tputs(pl, "policy resolver failed: ")) == TG_OK)
                rc = tputs(pl, aerr.message);
            return refused(d, pl, rc, out, err);
        }
    }
    pl->waiting++;
    return ask_resolve(d, pl, out, err);
}

/* ---- counting --------------------------------------------------------------------- */

/* The single-tool plan counted in one pass; a refusal for a malformed
 * sample or a check that could not finish. */
static int count_single(tg_plan *pl, tg_error_t *err)
{
    tg_error_t serr;
    int rc =
        tg_plan_summarize(pl->e, reg(pl), pl->usable ? pl->tool : -1,
                          pl->usable ? norm_of(pl, pl->tool) : NULL, pl->samples, &pl->sum, &serr);
    if (rc == TG_OK) {
        pl->args = pl->sum.args;
        pl->results = pl->sum.results;
        pl->epochs_equal = pl->sum.epochs_equal;
        return TG_OK;
    }
    if (rc == TG_E_NOMEM)
        return nomem(err);
    if (rc == TG_E_REGEX_LIMIT || rc == TG_E_VALIDATION_LIMIT) {
        rc = refuse_begin(pl, TG_REJECT, "rung", tg_code_name(rc), TG_PF_PLAN_ID);
        if (rc == TG_OK)
            rc = tprintf(pl, "sample %zu: the rung could not finish its check: %s", pl->sum.at + 1,
                         serr.message);
    } else {
        rc = refuse_begin(pl, TG_REJECT, "decode", "BAD_PLAN", TG_PF_PLAN_ID);
        if (rc == TG_OK)
            rc = tputs(pl, serr.message);
    }
    return rc == TG_OK ? TG_OK : nomem(err);
}

/* A plan of several calls counted: each call's digest and key, each
 * sample's sequence, results and epoch, then agreement on the whole and
 * per step. */
static int count_multi(tg_plan *pl, tg_error_t *err)
{
    tg_hash128_t *ah, *rh, no_args, no_result, no_step;
    tg_plan_epochs epochs = {NULL, {0, 0}, 0};
    tg_buf_t seq;
    int rc = TG_OK;
    tg_plan_stand_in("no arguments", &no_args);
    tg_plan_stand_in("no result", &no_result);
    tg_plan_stand_in("no step", &no_step);
    if (GROW(pl, hashes, 2 * pl->n) != TG_OK || GROW(pl, stats, pl->max_steps) != TG_OK)
        return nomem(err);
    ah = pl->hashes;
    rh = pl->hashes + pl->n;
    pl->epochs_equal = 1;
    tg_buf_init(&seq, pl->e);
    for (size_t i = 0; i < pl->n && rc == TG_OK; i++) {
        const tg_psample *sm = &pl->samp[i];
        const tg_value_t *ep = member(tg_at(pl->samples, i), "epoch");
        tg_buf_reset(&seq);
        for (size_t k = 0; k < sm->count && rc == TG_OK; k++) {
            tg_pstep *st = &pl->steps[sm->first + k];
            unsigned char raw[16];
            st->digest = no_args;
            if (st->args && (rc = digest(pl, norm_of(pl, st->tool), TG_CANON_EXACT, st->args,
                                         &st->digest, err)) != TG_OK)
                break;
            for (int b = 0; b < 8; b++) {
                raw[b] = (unsigned char)(st->digest.hi >> (56 - 8 * b));
                raw[8 + b] = (unsigned char)(st->digest.lo >> (56 - 8 * b));
            }
            /* (server or "") NUL name NUL digest, the sequence joined by \1 */
            if ((k && (rc = tg_buf_append(&seq, "\1", 1, err)) != TG_OK) ||
                (rc = tg_buf_append(&seq, st->server ? st->server : "", st->server_len, err)) !=
                    TG_OK ||
                (rc = tg_buf_append(&seq, "", 1, err)) != TG_OK ||
                (rc = tg_buf_append(&seq, st->name, st->name_len, err)) != TG_OK ||
                (rc = tg_buf_append(&seq, "", 1, err)) != TG_OK ||
                (rc = tg_buf_append(&seq, raw, 16, err)) != TG_OK)
                break;
            tg_hash128(seq.data + seq.len - (st->server_len + st->name_len + 18),
                       st->server_len + st->name_len + 18, &st->key);
        }
        if (rc != TG_OK)
            break;
        tg_hash128(seq.len ? seq.data : "", seq.len, &ah[i]);
        if (sm->results)
            rc = digest(pl, NULL, TG_CANON_RFC8785, sm->results, &rh[i], err);
        else
            rh[i] = no_result;
        if (rc != TG_OK)
            break;
        rc = tg_plan_epoch(ep, i, &pl->scratch, &epochs, &pl->epochs_equal, err);
    }
    tg_buf_free(&seq);
    if (rc != TG_OK)
        return nomem(err);
    if (tg_agree(pl->e, ah, pl->n, &pl->args, err) != TG_OK ||
        tg_agree(pl->e, rh, pl->n, &pl->results, err) != TG_OK)
        return nomem(err);
    /* per step: the calls' keys, the results at that place */
    for (size_t k = 0; k < pl->max_steps; k++) {
        tg_agreement_t a, r;
        for (size_t i = 0; i < pl->n; i++) {
            const tg_psample *sm = &pl->samp[i];
            const tg_value_t *res = tg_type_of(sm->results) == TG_ARRAY ? sm->results : NULL;
            ah[i] = k < sm->count ? pl->steps[sm->first + k].key : no_step;
            rh[i] = no_result;
            if (res && k < tg_len(res) &&
                digest(pl, NULL, TG_CANON_RFC8785, tg_at(res, k), &rh[i], err) != TG_OK)
                return nomem(err);
        }
        if (tg_agree(pl->e, ah, pl->n, &a, err) != TG_OK ||
            tg_agree(pl->e, rh, pl->n, &r, err) != TG_OK)
            return nomem(err);
        pl->stats[k].arg_modal = a.modal_count;
        pl->stats[k].result_modal = r.modal_count;
    }
    pl->n_stats = pl->max_steps;
    return TG_OK;
}

/* ---- the rung's word on a call ------------------------------------------------------ */

/* The rung alone on one call, on d (its objection, rung result and
 * digest are then d's, until d runs anything else). */
static int rung_on(tg_decider_t *d, tg_plan *pl, const char *server, size_t slen, const char *name,
                   size_t nlen, const tg_value_t *args, tg_error_t *err)
{
    tg_decide_begin(d, pl->p, pl->ctx, 0, 0);
    d->server = server;
    d->server_len = server ? slen : 0;
    d->name = name;
    d->name_len = nlen;
    d->args = args;
    return tg_decide_rung(d, pl->p->rung_stage, err);
}

/* A failing sample, listed with the rung's code, message and path. */
static int add_failure(tg_decider_t *d, tg_plan *pl, size_t sample, size_t step, const char *server,
                       size_t slen, const char *name, size_t nlen, const tg_value_t *args,
                       tg_error_t *err)
{
    tg_pfailure *f;
    int rc;
    if (GROW(pl, failures, pl->n_failures + 1) != TG_OK)
        return nomem(err);
    f = &pl->failures[pl->n_failures];
    f->sample = sample;
    f->step = step;
    f->has_path = 0;
    if (!args) {
        static const char none[] = "the call has no arguments object";
        if (tput(pl, "BAD_ARGUMENTS", 13, &f->code) != TG_OK ||
            tput(pl, none, sizeof none - 1, &f->message) != TG_OK)
            return nomem(err);
        f->code_len = 13;
        f->message_len = sizeof none - 1;
    } else {
        const tg_objection *o;
        if ((rc = rung_on(d, pl, server, slen, name, nlen, args, err)) != TG_OK)
            return rc;
        if (!(o = tg_decide_deciding(d)))
            return TG_OK; /* cannot happen: the call failed the rung before */
        if (tput(pl, d->texts.data + o->code, o->code_len, &f->code) != TG_OK ||
            tput(pl, d->texts.data + o->message, o->message_len, &f->message) != TG_OK)
            return nomem(err);
        f->code_len = o->code_len;
        f->message_len = o->message_len;
        if (d->rung.resolution == TG_RESOLVED && d->rung.n_findings &&
            !pl->p->tools[d->rung.tool].refuse_code.s && d->has_digest) {
            const char *ptr = d->rung.findings[0].pointer;
            if (tput(pl, ptr, strlen(ptr), &f->path) != TG_OK)
                return nomem(err);
            f->path_len = strlen(ptr);
            f->has_path = 1;
        }
    }
    pl->n_failures++;
    return TG_OK;
}

/* The representative's calls through the rung (its verdict stands: it is
 * the plan that would run), then the other samples that fail it.  Sets
 * pl->rung_failed when the representative fails. */
static int check_representative(tg_decider_t *d, tg_plan *pl, tg_error_t *err)
{
    int rc;
    if (pl->single) {
        const char *server, *name;
        size_t slen = 0, nlen, shown;
        single_call(pl, &server, &slen, &name, &nlen);
        pl->rep = pl->sum.args.representative;
        pl->rep_steps = 1;
        if (!pl->usable || pl->sum.n_failed > 0) {
            if ((rc = rung_on(d, pl, server, slen, name, nlen, sample_args(pl, pl->rep), err)) !=
                TG_OK)
                return rc;
            if (tg_decide_deciding(d)) {
                pl->rung_failed = 1;
                pl->rung_step = 1;
                return TG_OK;
            }
        }
        shown = pl->sum.n_failed < TG_RUNG_MAX_FINDINGS ? pl->sum.n_failed : TG_RUNG_MAX_FINDINGS;
        for (size_t k = 0; k < shown; k++) {
            size_t i = pl->sum.failed[k];
            if (i != pl->rep && (rc = add_failure(d, pl, i + 1, 0, server, slen, name, nlen,
                                                  sample_args(pl, i), err)) != TG_OK)
                return rc;
        }
        return TG_OK;
    }
    pl->rep = pl->args.representative;
    pl->rep_steps = pl->samp[pl->rep].count;
    for (size_t k = 0; k < pl->rep_steps; k++) {
        const tg_pstep *st = &pl->steps[pl->samp[pl->rep].first + k];
        if (st->ok)
            continue;
        pl->rung_failed = 1;
        pl->rung_step = k + 1;
        pl->rung_no_args = !st->args;
        if (st->args)
            return rung_on(d, pl, st->server, st->server_len, st->name, st->name_len, st->args,
                           err);
        return TG_OK;
    }
    for (size_t i = 0; i < pl->n; i++) {
        const tg_psample *sm = &pl->samp[i];
        if (i == pl->rep)
            continue;
        for (size_t k = 0; k < sm->count; k++) {
            const tg_pstep *st = &pl->steps[sm->first + k];
            if (st->ok)
                continue;
            if ((rc = add_failure(d, pl, i + 1, k + 1, st->server, st->server_len, st->name,
                                  st->name_len, st->args, err)) != TG_OK)
                return rc;
            break;
        }
    }
    return TG_OK;
}

/* ---- which argument was made up ------------------------------------------------------- */

#define MAX_DISAGREEING 16

static int disagreeing(tg_plan *pl, tg_error_t *err)
{
    tg_pointer_agreement_t list[MAX_DISAGREEING];
    if (pl->args.modal_count >= pl->n)
        return TG_OK;
    if (GROW(pl, nodes, pl->n) != TG_OK || GROW(pl, ptrs, MAX_DISAGREEING) != TG_OK)
        return nomem(err);
    for (size_t k = 0; k < pl->rep_steps; k++) {
        size_t cnt = 0, rep = (size_t)-1, total = 0;
        long tool;
        if (pl->single) {
            for (size_t i = 0; i < pl->n; i++)
                pl->nodes[cnt++] = sample_args(pl, i);
            rep = pl->rep;
            tool = pl->tool;
        } else {
            for (size_t i = 0; i < pl->n; i++) {
                const tg_psample *sm = &pl->samp[i];
                const tg_pstep *st = k < sm->count ? &pl->steps[sm->first + k] : NULL;
                if (!st || !st->args)
                    continue;
                if (i == pl->rep)
                    rep = cnt;
                pl->nodes[cnt++] = st->args;
            }
            tool = pl->steps[pl->samp[pl->rep].first + k].tool;
        }
        if (rep == (size_t)-1)
            continue;
        if (tg_pointer_agreement_below(pl->e, pl->nodes, cnt, rep, norm_of(pl, tool), pl->n, list,
                                       MAX_DISAGREEING, &total, err) != TG_OK)
            return nomem(err);
        for (size_t j = 0; j < total && j < MAX_DISAGREEING && pl->n_ptrs < MAX_DISAGREEING; j++) {
            tg_pptr *pp;
            int rc;
            pp = &pl->ptrs[pl->n_ptrs++];
            pp->agree = list[j].agree;
            pp->pointer = pl->texts.len;
            rc = pl->single ? TG_OK : tprintf(pl, "/%zu/arguments", k);
            if (rc == TG_OK)
                rc = tputs(pl, list[j].pointer);
            if (rc != TG_OK)
                return nomem(err);
            pp->pointer_len = pl->texts.len - pp->pointer;
        }
    }
    return TG_OK;
}

/* ---- determinism ---------------------------------------------------------------------- */

static long rep_tool(const tg_plan *pl, size_t k)
{
    return pl->single ? pl->tool : pl->steps[pl->samp[pl->rep].first + k].tool;
}

static tg_precord *record_of(tg_plan *pl, long tool)
{
    for (size_t i = 0; i < pl->n_records; i++)
        if (pl->records[i].tool == tool)
            return &pl->records[i];
    return NULL;
}

/* A record as the store says it, for this plan's epoch. */
static void take_record(tg_plan *pl, tg_precord *r, int found, int quarantined,
                        const char *verified, size_t vlen)
{
    r->known = 1;
    r->quarantined = found && quarantined;
    r->verified = found && !quarantined && verified && pl->has_epoch && vlen == pl->epoch_len &&
                  memcmp(verified, pl->texts.data + pl->epoch_text, vlen) == 0;
}

/* Reads the records the store holds for the representative's tools; those
 * of the host's store stay unknown, to be asked. */
static int read_records(tg_plan *pl, tg_error_t *err)
{
    for (size_t k = 0; k < pl->rep_steps; k++) {
        long t = rep_tool(pl, k);
        tg_precord *r;
        if (record_of(pl, t))
            continue;
        if (GROW(pl, records, pl->n_records + 1) != TG_OK)
            return nomem(err);
        r = &pl->records[pl->n_records++];
        memset(r, 0, sizeof *r);
        r->tool = t;
        if (pl->store_mode == TG_STORE_HOST)
            continue;
        if (pl->store_mode == TG_STORE_OVERLAY && pl->track[t].held) {
            take_record(pl, r, 1, 1, NULL, 0); /* quarantined earlier in this piece */
        } else {
            tg_store_record_t rec;
            size_t slen, nlen;
            const char *s = tg_registry_server(reg(pl), (size_t)t, &slen);
            const char *nm = tg_registry_name(reg(pl), (size_t)t, &nlen);
            int found = tg_store_get(pl->store, s, slen, nm, nlen, &rec);
            take_record(pl, r, found, found && rec.quarantined, found ? rec.verified_epoch : NULL,
                        found ? rec.verified_epoch_len : 0);
            if (pl->store_mode == TG_STORE_OVERLAY && !pl->track[t].read) {
                pl->track[t].read = 1;
                pl->track[t].first = pl->cp;
            }
        }
    }
    return TG_OK;
}

static int decide(tg_decider_t *d, tg_plan *pl, tg_outcome_t *out, tg_error_t *err);

static int ask_store(tg_decider_t *d, tg_plan *pl, tg_outcome_t *out, tg_error_t *err)
{
    for (size_t i = 0; i < pl->n_records; i++)
        if (!pl->records[i].known) {
            pl->phase = TG_PLAN_STORE;
            pl->waiting = i;
            out->status = TG_NEEDS_STORE;
            return TG_OK;
        }
    return decide(d, pl, out, err);
}

long tg_classify_store_tool(const tg_decider_t *d)
{
    const tg_plan *pl = d ? d->plan : NULL;
    if (!pl || pl->phase != TG_PLAN_STORE)
        return -1;
    return pl->records[pl->waiting].tool;
}

int tg_classify_record(tg_decider_t *d, int found, int quarantined, const char *verified_epoch,
                       size_t len, tg_outcome_t *out, tg_error_t *err)
{
    tg_plan *pl = d ? d->plan : NULL;
    tg_error_clear(err);
    if (!pl || !out || pl->phase != TG_PLAN_STORE)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "no record is waiting");
    take_record(pl, &pl->records[pl->waiting], found, quarantined, verified_epoch, len);
    return ask_store(d, pl, out, err);
}

/* The inline declaration of a single-tool plan: 1 true, 0 false, 2 a
 * string or number (neither), -1 none (the contract's holds). */
static int declared(const tg_value_t *v)
{
    switch (tg_type_of(v)) {
    case TG_TRUE:
        return 1;
    case TG_FALSE:
        return 0;
    default:
        return v ? 2 : -1;
    }
}

void tg_plan_determinism(tg_plan_features_t *f, const tg_pdet *steps, size_t n)
{
    f->deterministic = 1;
    f->nondeterministic = 0;
    f->verified = 1;
    for (size_t k = 0; k < n; k++) {
        const tg_pdet *t = &steps[k];
        int ver;
        /* what this engine saw after a recording (a quarantine) wins over a
         * recorded "verified" */
        if (t->quarantined)
            ver = 0;
        else if (t->inline_ver >= 0)
            ver = t->inline_ver != 0; /* Lua's truth: anything but false */
        else
            ver = t->verified;
        ver = ver && t->det == 1;
        if (t->det != 1)
            f->deterministic = 0;
        if (t->det == 0)
            f->nondeterministic = 1;
        if (!ver)
            f->verified = 0;
    }
}

int tg_plan_quarantines(int contract_det, size_t result_modal, size_t n, const tg_consistency_t *s)
{
    return contract_det != 0 && (double)result_modal / (double)n < s->result_quarantine;
}

/* The table's features of the plan, its determinism from pl->dets. */
static int features(tg_plan *pl, tg_error_t *err)
{
    tg_plan_features_t *f = &pl->features;
    int inline_det = pl->single ? declared(pl->inline_det) : -1;
    int inline_ver = pl->single ? declared(pl->inline_ver) : -1;
    f->n = pl->n;
    f->arg_modal = pl->args.modal_count;
    f->result_modal = pl->results.modal_count;
    f->epoch_fixed = pl->fixed;
    if (GROW(pl, dets, pl->rep_steps) != TG_OK)
        return nomem(err);
    for (size_t k = 0; k < pl->rep_steps; k++) {
        long t = rep_tool(pl, k);
        const tg_precord *r = record_of(pl, t);
        tg_pdet *dt = &pl->dets[k];
        dt->tool = t;
        dt->det = (signed char)(inline_det >= 0 ? inline_det : pl->p->tools[t].deterministic);
        dt->inline_ver = (signed char)(inline_ver < 0 ? -1 : inline_ver != 0);
        dt->verified = (unsigned char)r->verified;
        dt->quarantined = (unsigned char)r->quarantined;
    }
    pl->n_dets = pl->rep_steps;
    tg_plan_determinism(f, pl->dets, pl->n_dets);
    return TG_OK;
}

/* The plan's id as a quarantine reason names it. */
static int put_plan_id(tg_plan *pl)
{
    const tg_value_t *v = pl->plan_id;
    char num[TG_NUMBER_BUF];
    size_t len;
    const char *s = tg_str(v, &len);
    if (s)
        return tput(pl, s, len, NULL);
    switch (tg_type_of(v)) {
    case TG_NUMBER:
        return tput(pl, num, tg_number_format(tg_num(v), num), NULL);
    case TG_TRUE:
        return tputs(pl, "true");
    case TG_FALSE:
        return tputs(pl, "false");
    default:
        return tputs(pl, "nil"); /* what Lua's tostring said of no id */
    }
}

/* Quarantines the declaration of each deterministic tool of the
 * representative whose results disagree, in order (a tool twice in the
 * plan, twice: the store keeps the first reason). */
static int quarantine(tg_plan *pl, tg_error_t *err)
{
    for (size_t k = 0; k < pl->rep_steps; k++) {
        long t = rep_tool(pl, k);
        double r = (double)(pl->single ? pl->results.modal_count : pl->stats[k].result_modal) /
                   (double)pl->n;
        char digits[TG_NUMBER_BUF];
        tg_pquarantine *q;
        size_t slen, nlen;
        const char *server, *name;
        if (!tg_plan_quarantines(pl->p->tools[t].deterministic,
                                 pl->single ? pl->results.modal_count : pl->stats[k].result_modal,
                                 pl->n, &pl->p->consistency))
            continue;
        if (GROW(pl, quarantines, pl->n_quarantines + 1) != TG_OK)
            return nomem(err);
        q = &pl->quarantines[pl->n_quarantines++];
        q->tool = t;
        q->reason = pl->texts.len;
        tg_format_fixed2(r, digits);
        if (tputs(pl, "RESULT_DISAGREE in plan ") != TG_OK || put_plan_id(pl) != TG_OK ||
            tputs(pl, ": result agreement ") != TG_OK || tputs(pl, digits) != TG_OK)
            return nomem(err);
        q->reason_len = pl->texts.len - q->reason;
        server = tg_registry_server(reg(pl), (size_t)t, &slen);
        name = tg_registry_name(reg(pl), (size_t)t, &nlen);
        if (pl->store_mode == TG_STORE_DIRECT) {
            int changed;
            int rc = tg_store_quarantine(pl->store, server, slen, name, nlen,
                                         pl->texts.data + q->reason, q->reason_len, pl->now,
                                         pl->has_epoch ? pl->texts.data + pl->epoch_text : NULL,
                                         pl->epoch_len, &changed, err);
            if (rc != TG_OK)
                return rc;
            if (changed && pl->track)
                pl->track[t].fresh = 1;
        } else if (pl->store_mode == TG_STORE_OVERLAY) {
            /* kept for the merge, in order; later plans of the piece see it */
            tg_store_record_t rec;
            tg_plog *lg;
            int before =
                pl->track[t].held ||
                (tg_store_get(pl->store, server, slen, name, nlen, &rec) && rec.quarantined);
            if (GROW(pl, log, pl->n_log + 1) != TG_OK)
                return nomem(err);
            lg = &pl->log[pl->n_log++];
            lg->tool = t;
            lg->has_epoch = pl->has_epoch;
            if (tg_buf_append(&pl->log_texts, pl->texts.data + q->reason, q->reason_len, NULL) !=
                TG_OK)
                return nomem(err);
            lg->reason = pl->log_texts.len - q->reason_len;
            lg->reason_len = q->reason_len;
            lg->epoch = pl->log_texts.len;
            if (pl->has_epoch && tg_buf_append(&pl->log_texts, pl->texts.data + pl->epoch_text,
                                               pl->epoch_len, NULL) != TG_OK)
                return nomem(err);
            lg->epoch_len = pl->has_epoch ? pl->epoch_len : 0;
            if (!before)
                pl->track[t].fresh = 1;
            pl->track[t].held = 1;
        }
    }
    return TG_OK;
}

/* The exact digests of the representative's calls (what would run, not
 * normalized), and the plan's args_digest: one call's digest, or the hash
 * of several joined by "\1". */
static int exact_digests(tg_plan *pl, tg_error_t *err)
{
    if (GROW(pl, hex, pl->rep_steps) != TG_OK)
        return nomem(err);
    for (size_t k = 0; k < pl->rep_steps; k++) {
        const tg_value_t *a =
            pl->single ? sample_args(pl, pl->rep) : pl->steps[pl->samp[pl->rep].first + k].args;
        const tg_norm_t *norm = pl->single ? norm_of(pl, pl->tool) : NULL;
        tg_hash128_t h;
        if (pl->single && pl->sum.n > 0 && (!norm || tg_norm_rule_count(norm) == 0))
            h = pl->sum.rep_args; /* counted in the same form: nothing to normalize */
        else if (digest(pl, NULL, TG_CANON_EXACT, a, &h, err) != TG_OK)
            return nomem(err);
        tg_hash128_hex(&h, pl->hex[k].s);
    }
    pl->n_hex = pl->rep_steps;
    if (pl->rep_steps == 1) {
        memcpy(pl->args_digest, pl->hex[0].s, TG_HASH_HEX);
    } else {
        tg_hash128_t h;
        tg_buf_reset(&pl->scratch);
        for (size_t k = 0; k < pl->rep_steps; k++)
            if ((k && tg_buf_append(&pl->scratch, "\1", 1, err) != TG_OK) ||
                tg_buf_append(&pl->scratch, pl->hex[k].s, 32, err) != TG_OK)
                return nomem(err);
        tg_hash128(pl->scratch.len ? pl->scratch.data : "", pl->scratch.len, &h);
        tg_hash128_hex(&h, pl->args_digest);
    }
    return TG_OK;
}

static int next_step(tg_decider_t *d, tg_plan *pl, tg_outcome_t *out, tg_error_t *err);

/* The table on the plan's features, its message, the quarantines, the
 * args_digest, then the later stages. */
static int decide(tg_decider_t *d, tg_plan *pl, tg_outcome_t *out, tg_error_t *err)
{
    int rc;
    if ((rc = features(pl, err)) != TG_OK)
        return rc;
    if (tg_consistency_decide(&pl->p->consistency, &pl->features, &pl->verdict, err) != TG_OK)
        return TG_E_ARG;
    pl->has_features = 1;
    pl->message = pl->texts.len;
    if (tg_consistency_message(&pl->p->consistency, &pl->features, pl->verdict.row, &pl->texts,
                               err) != TG_OK)
        return nomem(err);
    pl->message_len = pl->texts.len - pl->message;
    pl->has_message = pl->verdict.row != TG_ROW_ACCEPT;
    /* a sweep decides the quarantines per setting, and needs the later
     * stages' word for the settings under which the table does not reject */
    if (pl->verdict.quarantine && !pl->sweep && (rc = quarantine(pl, err)) != TG_OK)
        return rc;
    if ((rc = exact_digests(pl, err)) != TG_OK)
        return rc;
    if ((pl->verdict.verdict == TG_REJECT && !pl->sweep) || pl->rep_steps == 0)
        return conclude(d, pl, out, err);
    pl->phase = TG_PLAN_STAGES;
    pl->waiting = 0;
    return next_step(d, pl, out, err);
}

/* After counting: the rung's word on the representative, the failures,
 * the pointers, the epoch, then the records. */
static int gathered(tg_decider_t *d, tg_plan *pl, tg_outcome_t *out, tg_error_t *err)
{
    const tg_value_t *ef = pl->epoch_fixed;
    int rc;
    pl->phase = TG_PLAN_IDLE;
    rc = pl->single ? count_single(pl, err) : count_multi(pl, err);
    if (rc != TG_OK)
        return rc;
    if (pl->refused)
        return refused(d, pl, TG_OK, out, err);
    if ((rc = check_representative(d, pl, err)) != TG_OK)
        return rc;
    if (pl->rung_failed)
        return conclude(d, pl, out, err);
    if ((rc = disagreeing(pl, err)) != TG_OK)
        return rc;
    /* the epoch: fixed when the plan says so, else when every sample has the same */
    pl->fixed = tg_type_of(ef) == TG_TRUE || tg_type_of(ef) == TG_FALSE ? tg_type_of(ef) == TG_TRUE
                                                                        : pl->epochs_equal;
    pl->epoch = member(tg_at(pl->samples, 0), "epoch");
    if (pl->fixed && pl->epoch) {
        tg_buf_reset(&pl->scratch);
        if (tg_canon_value(pl->epoch, &pl->scratch, err) != TG_OK ||
            tput(pl, pl->scratch.data, pl->scratch.len, &pl->epoch_text) != TG_OK)
            return nomem(err);
        pl->epoch_len = pl->scratch.len;
        pl->has_epoch = 1;
    }
    if ((rc = read_records(pl, err)) != TG_OK)
        return rc;
    return ask_store(d, pl, out, err);
}

/* ---- the later stages on the representative's calls ----------------------------------- */

void tg_classify_known_rung(tg_decider_t *d)
{
    tg_plan *pl = d->plan;
    size_t k = pl->waiting;
    long t = rep_tool(pl, k);
    d->tool = t;
    d->server = tg_registry_server(pl->p->r, (size_t)t, &d->server_len);
    d->name = tg_registry_name(pl->p->r, (size_t)t, &d->name_len);
    memcpy(d->digest, pl->hex[k].s, TG_HASH_HEX);
    d->has_digest = 1;
}

int tg_classify_step_done(tg_decider_t *d, tg_outcome_t *out, tg_error_t *err)
{
    tg_plan *pl = d->plan;
    const tg_objection *o = tg_decide_deciding(d);
    if (o) {
        tg_pobjection *po;
        if (GROW(pl, objections, pl->n_objections + 1) != TG_OK)
            return nomem(err);
        po = &pl->objections[pl->n_objections];
        po->step = pl->waiting + 1;
        po->verdict = o->verdict;
        /* the code NUL-terminated, as it is in d->texts */
        if (tput(pl, d->texts.data + o->code, o->code_len + 1, &po->code) != TG_OK ||
            tput(pl, d->texts.data + o->message, o->message_len, &po->message) != TG_OK)
            return nomem(err);
        po->code_len = o->code_len;
        po->message_len = o->message_len;
        po->stage = o->stage == TG_DECODE_STAGE ? "decode" : pl->p->stages[o->stage].name.s;
        po->n_ran = d->n_ran;
        memcpy(po->digest, d->digest, TG_HASH_HEX);
        po->tool = d->tool;
        pl->n_objections++;
    }
    pl->waiting++;
    if (o && o->verdict == TG_REJECT)
        pl->waiting = pl->rep_steps; /* the first reject ends the run */
    if (pl->in_loop) {
        out->status = TG_DECIDED;
        return TG_OK;
    }
    return next_step(d, pl, out, err);
}

static int next_step(tg_decider_t *d, tg_plan *pl, tg_outcome_t *out, tg_error_t *err)
{
    pl->in_loop = 1;
    while (pl->waiting < pl->rep_steps) {
        long t = rep_tool(pl, pl->waiting);
        int rc;
        tg_decide_begin(d, pl->p, pl->ctx, pl->flags, 0);
        d->server = tg_registry_server(pl->p->r, (size_t)t, &d->server_len);
        d->name = tg_registry_name(pl->p->r, (size_t)t, &d->name_len);
        d->args = pl->single ? sample_args(pl, pl->rep)
                             : pl->steps[pl->samp[pl->rep].first + pl->waiting].args;
        d->rung_known = 1;
        rc = tg_decide_run(d, out, err);
        if (rc != TG_OK || out->status == TG_NEEDS_STAGE) {
            pl->in_loop = 0;
            return rc;
        }
    }
    pl->in_loop = 0;
    pl->phase = TG_PLAN_IDLE;
    return conclude(d, pl, out, err);
}

/* ---- a plan ------------------------------------------------------------------------------ */

/* Classifies the plan in json with pl set up (its caller's arguments). */
static int classify_text(tg_decider_t *d, tg_plan *pl, const char *json, size_t len,
                         tg_outcome_t *out, tg_error_t *err)
{
    const tg_value_t *tool;
    tg_error_t perr;
    const tg_consistency_t *cs = &pl->p->consistency;
    /* a plan's agreeing samples repeat their bytes: parsed once (and their
     * nodes shared, which the digests below notice) */
    int rc = tg_parse_with(d->e, json, len, TG_PARSE_FAST_UTF8 | TG_PARSE_SHARE_REPEATS, &pl->doc,
                           &perr);
    if (rc == TG_E_NOMEM)
        return nomem(err);
    if (rc != TG_OK) {
        pl->has_offset = perr.offset != TG_NO_OFFSET;
        pl->offset = perr.offset;
        rc = refuse_begin(pl, TG_REJECT, "decode", tg_code_name(perr.code), 0);
        if (rc == TG_OK)
            rc = tputs(pl, perr.message);
        return refused(d, pl, rc, out, err);
    }
    pl->root = tg_doc_root(pl->doc);
    if (tg_type_of(pl->root) != TG_OBJECT)
        return bad_plan(d, pl, "decode", 0, "a plan must be a JSON object", out, err);
    pl->plan_id = scalar(member(pl->root, "plan_id"));
    pl->samples = member(pl->root, "samples");
    if (tg_type_of(pl->samples) != TG_ARRAY)
        return bad_plan(d, pl, "decode", TG_PF_PLAN_ID, "a plan needs \"samples\" (an array)", out,
                        err);
    tool = member(pl->root, "tool");
    if (tool && (tg_type_of(tool) != TG_OBJECT || tg_type_of(member(tool, "name")) != TG_STRING))
        return bad_plan(d, pl, "decode", TG_PF_PLAN_ID, "\"tool\" needs a string \"name\"", out,
                        err);
    pl->epoch_fixed = member(pl->root, "epoch_fixed");
    pl->n = tg_len(pl->samples);
    /* a limit (docs/limits.md): the policy's consistency.max_samples */
    if (pl->n > cs->max_samples) {
        rc =
            refuse_begin(pl, TG_REJECT, "consistency", "TOO_MANY_SAMPLES", TG_PF_PLAN_ID | TG_PF_N);
        if (rc == TG_OK)
            rc = tprintf(pl, "%zu samples; a plan may have at most max_samples = %zu", pl->n,
                         cs->max_samples);
        return refused(d, pl, rc, out, err);
    }
    if (pl->n == 0) {
        rc = refuse_begin(pl, cs->on_invalid, "consistency", "INSUFFICIENT_SAMPLES",
                          TG_PF_PLAN_ID | TG_PF_N);
        if (rc == TG_OK)
            rc = tputs(pl, "no samples");
        return refused(d, pl, rc, out, err);
    }
    if (tool)
        read_single(pl, tool);
    else if ((rc = read_multi(d, pl, err)) != TG_OK)
        return rc;
    else if (pl->refused)
        return refused(d, pl, TG_OK, out, err);
    if ((rc = collect_ids(pl, err)) != TG_OK)
        return rc;
    pl->waiting = 0;
    return ask_resolve(d, pl, out, err);
}

/* Sets pl up for a plan of the caller's. */
static void plan_begin(tg_decider_t *d, tg_plan *pl, const tg_policy_t *p, const tg_context_t *ctx,
                       tg_store_t *store, int mode, struct tg_sweep_t *sweep, int flags,
                       size_t line, int64_t now)
{
    tg_decide_begin(d, p, ctx, flags, 0);
    plan_reset(pl);
    pl->p = p;
    pl->ctx = ctx;
    pl->store = store;
    pl->store_mode = mode;
    pl->sweep = sweep;
    pl->flags = flags;
    pl->line = line;
    pl->now = now;
}

int tg_classify(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, tg_store_t *store,
                const char *json, size_t len, int flags, size_t line, int64_t now,
                tg_outcome_t *out, tg_error_t *err)
{
    tg_plan *pl;
    tg_error_clear(err);
    if (!d || !p || !json || !out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "decider, policy, plan and outcome are required");
    if (ctx && ctx->p != p)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "the context was compiled for another policy");
    if (!(pl = plan_of(d)))
        return nomem(err);
    plan_begin(d, pl, p, ctx, store, store ? TG_STORE_DIRECT : TG_STORE_HOST, NULL, flags, line,
               now);
    return classify_text(d, pl, json, len, out, err);
}

size_t tg_classify_quarantines(const tg_decider_t *d)
{
    return d && d->plan && d->plan->phase == TG_PLAN_DONE ? d->plan->n_quarantines : 0;
}

long tg_classify_quarantine(const tg_decider_t *d, size_t i, const char **reason,
                            size_t *reason_len, const char **epoch, size_t *epoch_len)
{
    const tg_plan *pl = d ? d->plan : NULL;
    const tg_pquarantine *q;
    if (!pl || pl->phase != TG_PLAN_DONE || i >= pl->n_quarantines)
        return -1;
    q = &pl->quarantines[i];
    if (reason)
        *reason = pl->texts.data + q->reason;
    if (reason_len)
        *reason_len = q->reason_len;
    if (epoch)
        *epoch = pl->has_epoch ? pl->texts.data + pl->epoch_text : NULL;
    if (epoch_len)
        *epoch_len = pl->has_epoch ? pl->epoch_len : 0;
    return q->tool;
}

/* ---- JSON Lines ----------------------------------------------------------------------------- */

static int lines(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, tg_store_t *store,
                 int mode, struct tg_sweep_t *sweep, const char *text, size_t len, int flags,
                 int64_t now, size_t *line, size_t *used, tg_buf_t *out, size_t verdicts[3],
                 tg_outcome_t *o, tg_error_t *err)
{
    size_t at = 0;
    for (;;) {
        size_t n;
        const char *s = tg_line_next(text, len, &at, &n);
        tg_plan *pl;
        int rc;
        if (!s)
            break;
        *used = at;
        ++*line;
        if (tg_line_blank(s, n))
            continue;
        /* made on first use: a failure is this line's, which the host
         * refuses before it goes on */
        if (!(pl = plan_of(d)))
            return nomem(err);
        plan_begin(d, pl, p, ctx, store, mode, sweep, flags, *line, now);
        pl->cp.at = (size_t)(s - text);
        pl->cp.line = *line - 1;
        pl->cp.out_len = out->len;
        pl->cp.log = pl->n_log;
        memcpy(pl->cp.verdicts, verdicts, sizeof pl->cp.verdicts);
        if ((rc = classify_text(d, pl, s, n, o, err)) != TG_OK)
            return rc;
        if (o->status != TG_DECIDED || (mode == TG_STORE_HOST && pl->n_quarantines))
            return TG_OK; /* the host answers, or writes this plan's quarantines */
        verdicts[o->verdict]++;
        if (sweep)
            continue; /* kept in the sweep: no decision is written */
        if ((rc = tg_buf_append(out, o->json, o->json_len, err)) != TG_OK ||
            (rc = tg_buf_append(out, "\n", 1, err)) != TG_OK)
            return rc;
    }
    *used = at;
    o->status = TG_NO_MORE_CALLS;
    return TG_OK;
}

int tg_classify_lines_mode(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx,
                           tg_store_t *store, int mode, const char *text, size_t len, int flags,
                           int64_t now, size_t *line, size_t *used, tg_buf_t *out,
                           size_t verdicts[3], tg_outcome_t *o, tg_error_t *err)
{
    return lines(d, p, ctx, store, mode, NULL, text, len, flags, now, line, used, out, verdicts, o,
                 err);
}

int tg_classify_lines_sweep(tg_decider_t *d, struct tg_sweep_t *sweep, const tg_policy_t *p,
                            const tg_context_t *ctx, tg_store_t *store, const char *text,
                            size_t len, int flags, size_t *line, size_t *used, tg_outcome_t *o,
                            tg_error_t *err)
{
    size_t verdicts[3] = {0, 0, 0};
    tg_buf_t none; /* no decision is written */
    int rc;
    tg_buf_init(&none, d->e);
    rc = lines(d, p, ctx, store, store ? TG_STORE_READ : TG_STORE_HOST, sweep, text, len, flags, 0,
               line, used, &none, verdicts, o, err);
    tg_buf_free(&none);
    return rc;
}

int tg_classify_lines(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx,
                      tg_store_t *store, const char *text, size_t len, int flags, int64_t now,
                      size_t *line, size_t *used, tg_buf_t *out, size_t verdicts[3],
                      tg_outcome_t *o, tg_error_t *err)
{
    tg_error_clear(err);
    if (!d || !p || !text || !line || !used || !out || !verdicts || !o)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "every argument but ctx and store is required");
    if (ctx && ctx->p != p)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "the context was compiled for another policy");
    return tg_classify_lines_mode(d, p, ctx, store, store ? TG_STORE_DIRECT : TG_STORE_HOST, text,
                                  len, flags, now, line, used, out, verdicts, o, err);
}

int tg_plan_track(tg_decider_t *d, size_t n_tools)
{
    tg_plan *pl = plan_of(d);
    size_t need = n_tools ? n_tools : 1;
    if (!pl)
        return TG_E_NOMEM;
    if (pl->n_track < need) {
        tg_ptrack *t = tg_mem_realloc(pl->e, pl->track, pl->n_track * sizeof *t, need * sizeof *t);
        if (!t)
            return TG_E_NOMEM;
        pl->track = t;
        pl->n_track = need;
    }
    memset(pl->track, 0, pl->n_track * sizeof *pl->track);
    pl->n_log = 0;
    tg_buf_reset(&pl->log_texts);
    return TG_OK;
}
