/*
 * tg_sweep.c -- threshold sweeps: the features of labeled plans kept once,
 * from classify's own pass (tg_classify_lines_sweep), then the plans
 * decided again under any settings by the engine's table
 * (tg_consistency_decide), the quarantines replayed in input order.
 *
 * Nothing of the decision is repeated here: the determinism features are
 * tg_plan_determinism's, the quarantine rule tg_plan_quarantines', the
 * table tg_consistency_decide's, and which later-stage objection decides
 * tg_plan_deciding's (both of its answers are kept, one for a table that
 * accepts, one for a table that does not).  What this file adds is the
 * keeping and the counting.
 */
#include "tg_decide.h"

/* The outcome of the later stages, for one kind of table verdict. */
typedef struct sw_outcome {
    signed char verdict; /* -1: the table decides */
    uint32_t code;       /* in codes */
} sw_outcome;

typedef struct sw_plan {
    size_t n, arg_modal, result_modal;
    size_t first, count;   /* its calls' determinism: dets[first .. first + count) */
    uint32_t code;         /* fixed: its code */
    unsigned char fixed;   /* decided before the table: the same at every setting */
    unsigned char verdict; /* fixed: its verdict */
    unsigned char label;   /* enum tg_label */
    unsigned char epoch_fixed;
    sw_outcome on_accept, on_other;
} sw_plan;

/* What the quarantine rule reads of a call, beside its tg_pdet. */
typedef struct sw_call {
    signed char contract_det;
    size_t result_modal;
} sw_call;

struct tg_sweep_t {
    tg_engine_t *e;
    const tg_policy_t *p;
    sw_plan *plans;
    size_t n_plans, cap_plans;
    tg_pdet *dets;
    sw_call *calls;
    size_t n_dets, cap_dets, cap_calls, max_count;
    tg_buf_t codes;  /* the codes kept, each NUL-terminated */
    size_t *code_at; /* where each starts in codes */
    size_t n_codes, cap_codes;
    signed char *tool_labels; /* one per registry tool */
    size_t n_labels;          /* so the sweep frees them without its policy */
};

static int nomem(tg_error_t *err)
{
    return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
}

tg_sweep_t *tg_sweep_new(const tg_policy_t *p, tg_error_t *err)
{
    tg_sweep_t *s;
    size_t nt;
    tg_error_clear(err);
    if (!p) {
        tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "a policy is required");
        return NULL;
    }
    nt = p->n_tools ? p->n_tools : 1;
    if (!(s = tg_mem_realloc(p->e, NULL, 0, sizeof *s))) {
        nomem(err);
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->e = p->e;
    s->p = p;
    tg_buf_init(&s->codes, p->e);
    if (!(s->tool_labels = tg_mem_realloc(p->e, NULL, 0, nt))) {
        tg_mem_free(p->e, s, sizeof *s);
        nomem(err);
        return NULL;
    }
    memset(s->tool_labels, -1, nt);
    s->n_labels = nt;
    /* held to the sweep's free, which a garbage collector may call last */
    tg_engine_retain(s->e);
    return s;
}

void tg_sweep_free(tg_sweep_t *s)
{
    tg_engine_t *e;
    if (!s)
        return;
    e = s->e;
    tg_mem_free(e, s->plans, s->cap_plans * sizeof *s->plans);
    tg_mem_free(e, s->dets, s->cap_dets * sizeof *s->dets);
    tg_mem_free(e, s->calls, s->cap_calls * sizeof *s->calls);
    tg_mem_free(e, s->code_at, s->cap_codes * sizeof *s->code_at);
    tg_mem_free(e, s->tool_labels, s->n_labels);
    tg_buf_free(&s->codes);
    tg_mem_free(e, s, sizeof *s);
    tg_engine_release(e);
}

size_t tg_sweep_count(const tg_sweep_t *s)
{
    return s ? s->n_plans : 0;
}

size_t tg_sweep_tools(const tg_sweep_t *s)
{
    return s ? s->p->n_tools : 0;
}

int tg_sweep_tool_label(const tg_sweep_t *s, size_t tool)
{
    return s && tool < s->p->n_tools ? s->tool_labels[tool] : -1;
}

int tg_sweep_lines(tg_sweep_t *s, tg_decider_t *d, const tg_context_t *ctx, tg_store_t *store,
                   const char *text, size_t len, int flags, size_t *line, size_t *used,
                   tg_outcome_t *o, tg_error_t *err)
{
    tg_error_clear(err);
    if (!s || !d || !text || !line || !used || !o)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "every argument but ctx and store is required");
    if (ctx && ctx->p != s->p)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "the context was compiled for another policy");
    return tg_classify_lines_sweep(d, s, s->p, ctx, store, text, len, flags, line, used, o, err);
}

/* ---- keeping a plan ----------------------------------------------------------------- */

/* The index of code in the sweep's codes, added when new (codes are few:
 * the table's rows, the rung's and the stages'). */
static int code_index(tg_sweep_t *s, const char *code, uint32_t *out)
{
    size_t len = strlen(code);
    for (size_t i = 0; i < s->n_codes; i++) {
        const char *c = s->codes.data + s->code_at[i];
        if (strlen(c) == len && memcmp(c, code, len) == 0) {
            *out = (uint32_t)i;
            return TG_OK;
        }
    }
    if (s->n_codes >= UINT32_MAX ||
        tg_grow(s->e, &s->code_at, &s->cap_codes, s->n_codes + 1, sizeof *s->code_at) != TG_OK)
        return TG_E_NOMEM;
    s->code_at[s->n_codes] = s->codes.len;
    if (tg_buf_append(&s->codes, code, len + 1, NULL) != TG_OK)
        return TG_E_NOMEM;
    *out = (uint32_t)s->n_codes++;
    return TG_OK;
}

static const tg_value_t *member(const tg_value_t *v, const char *key)
{
    return tg_get(v, key, strlen(key));
}

static int label_of(const tg_value_t *root)
{
    const tg_value_t *v = member(root, "label");
    size_t len;
    const char *s = tg_str(v, &len);
    if (!v)
        return TG_LABEL_NONE;
    if (s && len == 7 && memcmp(s, "correct", 7) == 0)
        return TG_LABEL_CORRECT;
    if (s && len == 10 && memcmp(s, "fabricated", 10) == 0)
        return TG_LABEL_FABRICATED;
    return TG_LABEL_OTHER;
}

/* A plan's "tool_labels": each entry naming a registry tool (as the rung
 * resolves a name) with a boolean "deterministic"; others say nothing. */
static void take_tool_labels(tg_sweep_t *s, const tg_value_t *root)
{
    const tg_value_t *list = member(root, "tool_labels");
    const tg_registry_t *r = s->p->r;
    if (tg_type_of(list) != TG_ARRAY)
        return;
    for (size_t i = 0; i < tg_len(list); i++) {
        const tg_value_t *e = tg_at(list, i), *det = member(e, "deterministic");
        size_t slen = 0, nlen, found[2];
        const char *server = tg_str(member(e, "server"), &slen);
        const char *name = tg_str(member(e, "name"), &nlen);
        long t = -1;
        signed char *l;
        int v;
        if (!name || (tg_type_of(det) != TG_TRUE && tg_type_of(det) != TG_FALSE))
            continue;
        if (server)
            t = tg_registry_find(r, server, slen, name, nlen);
        else if (tg_registry_find_name(r, name, nlen, found, 2) == 1)
            t = (long)found[0];
        if (t < 0)
            continue;
        v = tg_type_of(det) == TG_TRUE;
        l = &s->tool_labels[t];
        *l = (signed char)(*l < 0 || *l == v ? v : 2);
    }
}

static int outcome(tg_sweep_t *s, const tg_plan *pl, int table_verdict, sw_outcome *o)
{
    long at = tg_plan_deciding(pl->objections, pl->n_objections, table_verdict);
    const tg_pobjection *by;
    o->verdict = -1;
    o->code = 0;
    if (at < 0)
        return TG_OK;
    by = &pl->objections[at];
    o->verdict = (signed char)by->verdict;
    return code_index(s, pl->texts.data + by->code, &o->code);
}

int tg_sweep_take(tg_sweep_t *s, const tg_decider_t *d, tg_error_t *err)
{
    const tg_plan *pl = d->plan;
    sw_plan *sp;
    if (tg_grow(s->e, &s->plans, &s->cap_plans, s->n_plans + 1, sizeof *s->plans) != TG_OK)
        return nomem(err);
    sp = &s->plans[s->n_plans];
    memset(sp, 0, sizeof *sp);
    sp->label =
        (unsigned char)(tg_type_of(pl->root) == TG_OBJECT ? label_of(pl->root) : TG_LABEL_NONE);
    if (tg_type_of(pl->root) == TG_OBJECT)
        take_tool_labels(s, pl->root);
    if (!pl->has_features) {
        sp->fixed = 1;
        sp->verdict = (unsigned char)pl->verdict_out;
        if (code_index(s, pl->code_out, &sp->code) != TG_OK)
            return nomem(err);
        s->n_plans++;
        return TG_OK;
    }
    sp->n = pl->features.n;
    sp->arg_modal = pl->features.arg_modal;
    sp->result_modal = pl->features.result_modal;
    sp->epoch_fixed = (unsigned char)pl->features.epoch_fixed;
    if (outcome(s, pl, TG_ACCEPT, &sp->on_accept) != TG_OK ||
        outcome(s, pl, TG_DEFER, &sp->on_other) != TG_OK)
        return nomem(err);
    if (tg_grow(s->e, &s->dets, &s->cap_dets, s->n_dets + pl->n_dets, sizeof *s->dets) != TG_OK ||
        tg_grow(s->e, &s->calls, &s->cap_calls, s->n_dets + pl->n_dets, sizeof *s->calls) != TG_OK)
        return nomem(err);
    sp->first = s->n_dets;
    sp->count = pl->n_dets;
    for (size_t k = 0; k < pl->n_dets; k++) {
        s->dets[s->n_dets + k] = pl->dets[k];
        s->calls[s->n_dets + k].contract_det =
            (signed char)pl->p->tools[pl->dets[k].tool].deterministic;
        s->calls[s->n_dets + k].result_modal =
            pl->single ? pl->results.modal_count : pl->stats[k].result_modal;
    }
    s->n_dets += pl->n_dets;
    if (pl->n_dets > s->max_count)
        s->max_count = pl->n_dets;
    s->n_plans++;
    return TG_OK;
}

/* ---- a run ---------------------------------------------------------------------------- */

static int check_settings(const tg_consistency_t *cs, tg_error_t *err)
{
    static const char *const names[] = {"arg_accept", "arg_reject", "result_accept",
                                        "result_quarantine"};
    const double v[] = {cs->arg_accept, cs->arg_reject, cs->result_accept, cs->result_quarantine};
    for (int i = 0; i < 4; i++)
        if (!(v[i] >= 0 && v[i] <= 1))
            return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "%s must be a number from 0 to 1",
                           names[i]);
    if (cs->arg_reject > cs->arg_accept)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "arg_reject must not be above arg_accept");
    if (cs->min_samples < 1 || cs->min_samples > TG_LIMIT_MAX_SAMPLES)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "min_samples must be a whole number from 1 to 2^31-1");
    if (cs->on_invalid != TG_DEFER && cs->on_invalid != TG_REJECT)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "on_invalid must be TG_DEFER or TG_REJECT");
    return TG_OK;
}

/* A plan's verdict and code once its table has spoken: the later stages'
 * word for that kind of table verdict, else the table's. */
static void conclude(const tg_sweep_t *s, const sw_plan *sp, int table, const char *table_code,
                     int *verdict, const char **code)
{
    const sw_outcome *o = table == TG_ACCEPT ? &sp->on_accept : &sp->on_other;
    *verdict = o->verdict >= 0 ? o->verdict : table;
    *code = o->verdict >= 0 ? s->codes.data + s->code_at[o->code] : table_code;
}

static void fixed_of(const tg_sweep_t *s, const sw_plan *sp, int *verdict, const char **code)
{
    *verdict = sp->verdict;
    *code = s->codes.data + s->code_at[sp->code];
}

static void features_of(const sw_plan *sp, tg_plan_features_t *f)
{
    f->n = sp->n;
    f->arg_modal = sp->arg_modal;
    f->result_modal = sp->result_modal;
    f->epoch_fixed = sp->epoch_fixed;
}

int tg_sweep_plan(const tg_sweep_t *s, size_t i, tg_sweep_plan_t *out, tg_error_t *err)
{
    const sw_plan *sp;
    tg_error_clear(err);
    if (!s || !out || i >= s->n_plans)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "no such plan in the sweep");
    sp = &s->plans[i];
    memset(out, 0, sizeof *out);
    out->label = sp->label;
    out->fixed = sp->fixed;
    if (sp->fixed) {
        fixed_of(s, sp, &out->verdict, &out->code);
        return TG_OK;
    }
    out->code = "";
    features_of(sp, &out->features);
    tg_plan_determinism(&out->features, s->dets + sp->first, sp->count);
    return TG_OK;
}

int tg_sweep_run_with(const tg_sweep_t *s, const unsigned char *table, tg_sweep_counts_t *out,
                      unsigned char *verdicts, const char **codes, tg_error_t *err)
{
    tg_error_clear(err);
    if (!s || !table || !out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "sweep, table and out are required");
    for (size_t i = 0; i < s->n_plans; i++)
        if (!s->plans[i].fixed && table[i] > TG_DEFER)
            return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "plan %zu: %u is not a verdict", i,
                           (unsigned)table[i]);
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < s->n_plans; i++) {
        const sw_plan *sp = &s->plans[i];
        int verdict;
        const char *code;
        if (sp->fixed)
            fixed_of(s, sp, &verdict, &code);
        else
            conclude(s, sp, table[i], "", &verdict, &code);
        out->plans[verdict][sp->label]++;
        if (verdicts)
            verdicts[i] = (unsigned char)verdict;
        if (codes)
            codes[i] = code;
    }
    return TG_OK;
}

int tg_sweep_run(const tg_sweep_t *s, const tg_consistency_t *cs, tg_sweep_counts_t *out,
                 unsigned char *quarantined, unsigned char *verdicts, const char **codes,
                 tg_error_t *err)
{
    unsigned char *held; /* per tool: quarantined by this run */
    tg_pdet *now;        /* a plan's calls as the run finds them */
    size_t nt, nd;
    int rc = TG_OK;
    tg_error_clear(err);
    if (!s || !cs || !out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "sweep, settings and out are required");
    if ((rc = check_settings(cs, err)) != TG_OK)
        return rc;
    nt = s->p->n_tools ? s->p->n_tools : 1;
    nd = s->max_count ? s->max_count : 1;
    held = tg_mem_realloc(s->e, NULL, 0, nt);
    now = tg_mem_realloc(s->e, NULL, 0, nd * sizeof *now);
    if (!held || !now) {
        tg_mem_free(s->e, held, nt);
        tg_mem_free(s->e, now, nd * sizeof *now);
        return nomem(err);
    }
    memset(held, 0, nt);
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < s->n_plans; i++) {
        const sw_plan *sp = &s->plans[i];
        tg_plan_features_t f;
        tg_consistency_verdict_t cv;
        int verdict;
        const char *code;
        if (sp->fixed) {
            fixed_of(s, sp, &verdict, &code);
        } else {
            features_of(sp, &f);
            for (size_t k = 0; k < sp->count; k++) {
                now[k] = s->dets[sp->first + k];
                now[k].quarantined = (unsigned char)(now[k].quarantined || held[now[k].tool]);
            }
            tg_plan_determinism(&f, now, sp->count);
            if ((rc = tg_consistency_decide(cs, &f, &cv, err)) != TG_OK)
                break;
            if (cv.quarantine)
                for (size_t k = 0; k < sp->count; k++) {
                    const sw_call *c = &s->calls[sp->first + k];
                    if (!now[k].quarantined && !held[now[k].tool] &&
                        tg_plan_quarantines(c->contract_det, c->result_modal, sp->n, cs)) {
                        held[now[k].tool] = 1;
                        out->quarantined++;
                    }
                }
            conclude(s, sp, cv.verdict, cv.code, &verdict, &code);
        }
        out->plans[verdict][sp->label]++;
        if (verdicts)
            verdicts[i] = (unsigned char)verdict;
        if (codes)
            codes[i] = code;
    }
    if (rc == TG_OK && quarantined)
        memcpy(quarantined, held, s->p->n_tools);
    tg_mem_free(s->e, held, nt);
    tg_mem_free(s->e, now, nd * sizeof *now);
    return rc;
}
