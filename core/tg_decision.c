/*
 * tg_decision.c -- a decision written as canonical JSON (RFC 8785), by C,
 * straight into the decider's output buffer.
 *
 * The members are written in RFC 8785 key order by hand (every key is
 * ASCII, so that order is byte order), which is why the functions below
 * follow the alphabet.  What the core writes is its own output: no limit
 * of the engine applies to it, strings that are not well-formed UTF-8 lose
 * the bytes that are not, and nothing here can fail but for memory.
 */
#include "tg_decide.h"

typedef struct writer {
    tg_buf_t *b;
    int first; /* no member written yet in the current object */
    int rc;
} writer;

/* Inlined wherever they are used (raw and lit mostly write constants:
 * then the copy is a few moves and lit's strlen is folded away). */
#if defined(__GNUC__)
#define WRITE_INLINE __attribute__((always_inline)) inline
#else
#define WRITE_INLINE inline
#endif

static WRITE_INLINE void raw(writer *w, const char *s, size_t n)
{
    if (w->rc == TG_OK)
        w->rc = tg_buf_put(w->b, s, n, NULL);
}

static WRITE_INLINE void lit(writer *w, const char *s)
{
    raw(w, s, strlen(s));
}

/* A string the core made (names from the registry, messages, digests):
 * well-formed UTF-8 already. */
static void text(writer *w, const char *s, size_t n)
{
    if (w->rc == TG_OK)
        w->rc = tg_canon_string(w->b, s, n, NULL);
}

static void ctext(writer *w, const char *s)
{
    text(w, s, strlen(s));
}

/* A string the policy wrote as JSON once, at load (tg_policy.c, json_of).
 * Inlined: every decision writes several. */
static WRITE_INLINE void json_text(writer *w, const tg_text *json)
{
    raw(w, json->s, json->len);
}

/* A name of the core's own (a call shape's): ASCII letters and '-',
 * nothing to escape. */
static void name_text(writer *w, const char *s)
{
    raw(w, "\"", 1);
    raw(w, s, strlen(s));
    raw(w, "\"", 1);
}

/* A digest: 32 hex digits, nothing to escape. */
static void digest_text(writer *w, const char *digest)
{
    char q[34];
    q[0] = '"';
    memcpy(q + 1, digest, 32);
    q[33] = '"';
    raw(w, q, sizeof q);
}

/* "key": -- keys are ASCII constants, written as they are; key() takes a
 * string literal only (the "" around it say so to the compiler), so its
 * length is known without a strlen on every member of every decision. */
#define key(w, k) key_n((w), "" k "", sizeof(k) - 1)
static WRITE_INLINE void key_n(writer *w, const char *k, size_t n)
{
    char *p;
    /* inlined at each key: n is a constant there, so the copy is a few
     * moves, and the room is nearly always there already (reserved for
     * the whole decision up front) */
    if (w->rc != TG_OK ||
        (n + 4 > w->b->cap - w->b->len && (w->rc = tg_buf_reserve(w->b, n + 4, NULL)) != TG_OK))
        return;
    p = w->b->data + w->b->len;
    if (!w->first)
        *p++ = ',';
    *p++ = '"';
    memcpy(p, k, n);
    p += n;
    *p++ = '"';
    *p++ = ':';
    w->b->len = (size_t)(p - w->b->data);
    w->first = 0;
}

/* Members the policy joined at load ("k":v,...): the comma key() would
 * write, then one copy. */
static void members_json(writer *w, const tg_text *json)
{
    if (!w->first)
        raw(w, ",", 1);
    json_text(w, json);
    w->first = 0;
}

static void open_(writer *w, const char *brace)
{
    lit(w, brace);
    w->first = 1;
}

/* Ends an object or array member of an enclosing object. */
static void close_(writer *w, const char *brace)
{
    lit(w, brace);
    w->first = 0;
}

/* The digits go straight into the buffer, not through a copy; one digit
 * (a call's index, nearly always) is a constant-size write. */
static void u64(writer *w, uint64_t v)
{
    if (v < 10) {
        raw(w, &"0123456789"[v], 1);
        return;
    }
    if (w->rc != TG_OK ||
        (20 > w->b->cap - w->b->len && (w->rc = tg_buf_reserve(w->b, 20, NULL)) != TG_OK))
        return;
    w->b->len += (size_t)tg_u64_text(v, w->b->data + w->b->len);
}

/* A registry tool's server or name, as the policy wrote it at load. */
static void tool_text(writer *w, const tg_policy_t *p, long tool, int server)
{
    json_text(w, server ? &p->tools[tool].server_json : &p->tools[tool].name_json);
}

static void tool_ref(writer *w, const tg_policy_t *p, size_t i)
{
    open_(w, "{");
    key(w, "name");
    tool_text(w, p, (long)i, 0);
    key(w, "server");
    tool_text(w, p, (long)i, 1);
    close_(w, "}");
}

static void tool_refs(writer *w, const tg_policy_t *p, const size_t *list, size_t n)
{
    raw(w, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            raw(w, ",", 1);
        tool_ref(w, p, list[i]);
    }
    raw(w, "]", 1);
}

static void finding(writer *w, const tg_finding_t *f)
{
    open_(w, "{");
    key(w, "code");
    lit(w, f->code == TG_H2 ? "\"H2\"" : "\"H3\"");
    key(w, "keyword");
    ctext(w, f->keyword);
    key(w, "message");
    ctext(w, f->message);
    key(w, "pointer");
    ctext(w, f->pointer);
    key(w, "schema_pointer");
    ctext(w, f->schema_pointer);
    close_(w, "}");
}

/* "findings": [...], the rung's report. */
static void findings_of(writer *w, const tg_rung_result_t *res)
{
    key(w, "findings");
    raw(w, "[", 1);
    for (size_t i = 0; i < res->n_findings; i++) {
        if (i)
            raw(w, ",", 1);
        finding(w, &res->findings[i]);
    }
    raw(w, "]", 1);
}

/* A verdict's name as JSON: each a literal, so its copy is a few moves
 * (lit of a constant), with no strlen and no memcpy call. */
static void verdict_text(writer *w, int verdict)
{
    switch (verdict) {
    case TG_ACCEPT:
        lit(w, "\"accept\"");
        break;
    case TG_REJECT:
        lit(w, "\"reject\"");
        break;
    default:
        lit(w, "\"defer\"");
        break;
    }
}

/* "stages": the names of the first n stages, a prefix of the list the
 * policy joined at load. */
static void stages_ran(writer *w, const tg_policy_t *p, size_t n)
{
    key(w, "stages");
    raw(w, "[", 1);
    if (n)
        raw(w, p->stages_json.s, p->stages[n - 1].ran_json_len);
    raw(w, "]", 1);
}

/* "stage": the decode step's or a policy stage's name. */
static void stage_text(writer *w, const tg_decider_t *d, size_t stage)
{
    if (stage == TG_DECODE_STAGE)
        lit(w, "\"decode\"");
    else
        json_text(w, &d->p->stages[stage].name_json);
}

/* "server" or "tool", when the call has one: once the rung resolved the
 * call, the registry's, as the policy wrote it at load; else the call's own. */
static void call_name(writer *w, const tg_decider_t *d, int server)
{
    const char *s = server ? d->server : d->name;
    if (d->tool < 0 && !s)
        return;
    if (server)
        key(w, "server");
    else
        key(w, "tool");
    if (d->tool >= 0)
        tool_text(w, d->p, d->tool, server);
    else
        text(w, s, server ? d->server_len : d->name_len);
}

static void code_of(writer *w, const tg_decider_t *d, const tg_objection *o)
{
    text(w, d->texts.data + o->code, o->code_len);
}

/* "null" or the string. */
static void text_or_null(writer *w, const char *s, size_t n)
{
    if (s)
        text(w, s, n);
    else
        lit(w, "null");
}

/* A defer's binding: what an approval given for it must match.  epoch is
 * canonical JSON (NULL: null); digest, server and name NULL are null. */
static void binding_of(writer *w, const tg_policy_t *p, const char *digest, const char *epoch,
                       size_t epoch_len, const char *server, size_t server_len, const char *name,
                       size_t name_len)
{
    open_(w, "{");
    key(w, "args_digest");
    if (digest)
        digest_text(w, digest);
    else
        lit(w, "null");
    key(w, "epoch");
    if (epoch)
        raw(w, epoch, epoch_len);
    else
        lit(w, "null");
    members_json(w, &p->stamp_json); /* policy_version, registry_hash */
    key(w, "server");
    text_or_null(w, server, server_len);
    key(w, "tool");
    text_or_null(w, name, name_len);
    close_(w, "}");
}

static void binding(writer *w, const tg_decider_t *d)
{
    const tg_context_t *c = d->ctx;
    binding_of(w, d->p, d->has_digest ? d->digest : NULL, c ? c->epoch.s : NULL,
               c ? c->epoch.len : 0, d->server, d->server_len, d->name, d->name_len);
}

int tg_decision_write(tg_decider_t *d, tg_error_t *err)
{
    const tg_policy_t *p = d->p;
    const tg_objection *o = NULL;
    const tg_rung_result_t *res = &d->rung;
    int verdict, rung_decided, findings;
    writer w;

    for (size_t i = 0; i < d->n_obj && !o; i++)
        if (d->obj[i].verdict == TG_REJECT)
            o = &d->obj[i];
    if (!o && d->n_obj)
        o = &d->obj[0];
    verdict = o ? o->verdict : TG_ACCEPT;
    /* what only the rung's own decision carries */
    rung_decided = o && d->rung_ran && o->stage != TG_DECODE_STAGE &&
                   p->stages[o->stage].kind == TG_STAGE_RUNG;
    findings = rung_decided && res->resolution == TG_RESOLVED && res->n_findings &&
               !p->tools[res->tool].refuse_code.s && d->has_digest;

    tg_buf_reset(&d->out);
    w.b = &d->out;
    /* room for a decision without findings, so most writes are a copy */
    w.rc = tg_buf_reserve(&d->out, 1024 + d->texts.len, NULL);
    open_(&w, "{");
    if (!o && d->rung_ran && p->report_also) {
        key(&w, "also_accepted_by");
        tool_refs(&w, p, res->also, res->n_also);
    }
    if (d->has_digest) {
        key(&w, "args_digest");
        digest_text(&w, d->digest);
    }
    if (verdict == TG_DEFER) {
        key(&w, "binding");
        binding(&w, d);
    }
    if (rung_decided && res->resolution == TG_AMBIGUOUS) {
        key(&w, "candidates");
        tool_refs(&w, p, res->candidates,
                  res->n_candidates < TG_RUNG_MAX_FINDINGS ? res->n_candidates
                                                           : TG_RUNG_MAX_FINDINGS);
    }
    if (o) {
        key(&w, "code");
        code_of(&w, d, o);
    }
    if (findings)
        findings_of(&w, res);
    if (d->calls) {
        key(&w, "format");
        name_text(&w, tg_call_shape_name(tg_calls_shape(d->calls)));
    }
    if (d->call && tg_call_id(d->call)) {
        key(&w, "id");
        if (w.rc == TG_OK)
            /* every digit of the id: the answer to the call must name it */
            w.rc = tg_canon_value_mode(tg_call_id(d->call), TG_CANON_EXACT, w.b, NULL);
    }
    if (d->call) {
        key(&w, "index");
        u64(&w, d->call_index);
    }
    if (findings) {
        key(&w, "keyword");
        ctext(&w, res->findings[0].keyword);
    }
    if (d->line) {
        key(&w, "line");
        u64(&w, d->line);
    }
    if (o) {
        key(&w, "message");
        text(&w, d->texts.data + o->message, o->message_len);
    }
    if (d->decode_failed && d->decode_offset != TG_NO_OFFSET) {
        key(&w, "offset");
        u64(&w, d->decode_offset);
    }
    if (d->n_obj > 1) {
        key(&w, "outcomes");
        raw(&w, "[", 1);
        for (size_t i = 0; i < d->n_obj; i++) {
            if (i)
                raw(&w, ",", 1);
            open_(&w, "{");
            key(&w, "code");
            code_of(&w, d, &d->obj[i]);
            key(&w, "stage");
            stage_text(&w, d, d->obj[i].stage);
            key(&w, "verdict");
            verdict_text(&w, d->obj[i].verdict);
            close_(&w, "}");
        }
        raw(&w, "]", 1);
    }
    if (findings) {
        key(&w, "path");
        ctext(&w, res->findings[0].pointer);
    }
    members_json(&w, &p->stamp_json); /* policy_version, registry_hash */
    if (verdict == TG_DEFER && p->requires_approval) {
        key(&w, "requires_approval");
        lit(&w, "true");
    }
    call_name(&w, d, 1);
    key(&w, "stage");
    if (o)
        stage_text(&w, d, o->stage);
    else if (d->n_ran)
        json_text(&w, &p->stages[d->n_ran - 1].name_json);
    else
        lit(&w, "\"\"");
    if (!d->decode_failed) {
        stages_ran(&w, p, d->n_ran);
    }
    call_name(&w, d, 0);
    key(&w, "verdict");
    verdict_text(&w, verdict);
    close_(&w, "}");
    /* a NUL after the text, not counted: C hosts may read it as a string
     * (the room is nearly always there: the reserve above) */
    if (w.rc == TG_OK && (w.b->len < w.b->cap || (w.rc = tg_buf_reserve(w.b, 1, NULL)) == TG_OK))
        w.b->data[w.b->len] = '\0';
    if (w.rc != TG_OK)
        return tg_fail(err, w.rc, TG_NO_OFFSET, "out of memory writing a decision");
    return TG_OK;
}

/* ---- a sampled plan's decision (tg_classify) ------------------------------------- */

static void num(writer *w, double x)
{
    char digits[TG_NUMBER_BUF];
    raw(w, digits, tg_number_format(x, digits));
}

static void share_of(writer *w, size_t count, size_t n)
{
    if (count == 0 || count == n) /* none or all: the commonest shares */
        lit(w, count && n ? "1" : "0");
    else
        num(w, n ? (double)count / (double)n : 0);
}

static void ptext(writer *w, const tg_plan *pl, size_t at, size_t len)
{
    text(w, pl->texts.data + at, len);
}

/* The plan_id as given (a string, number or boolean), in RFC 8785 form. */
static void plan_id(writer *w, const tg_plan *pl)
{
    if (w->rc == TG_OK)
        w->rc = tg_canon_value(pl->plan_id, w->b, NULL);
}

static void plan_epoch(writer *w, const tg_plan *pl)
{
    if (pl->has_epoch)
        raw(w, pl->texts.data + pl->epoch_text, pl->epoch_len);
    else
        lit(w, "null");
}

/* A plan's defer binding: the plan's epoch when it has one (not null),
 * else the context's. */
static void plan_binding(writer *w, const tg_decider_t *d, const tg_plan *pl, const char *digest,
                         long tool)
{
    const tg_context_t *c = pl->ctx;
    const char *epoch = c ? c->epoch.s : NULL, *server = NULL, *name = NULL;
    size_t epoch_len = c ? c->epoch.len : 0, slen = 0, nlen = 0;
    if (pl->has_epoch && tg_type_of(pl->epoch) != TG_NULL) {
        epoch = pl->texts.data + pl->epoch_text;
        epoch_len = pl->epoch_len;
    }
    if (tool >= 0) {
        server = tg_registry_server(d->p->r, (size_t)tool, &slen);
        name = tg_registry_name(d->p->r, (size_t)tool, &nlen);
    }
    binding_of(w, d->p, digest, epoch, epoch_len, server, slen, name, nlen);
}

static void approval(writer *w, const tg_decider_t *d, int verdict)
{
    if (verdict == TG_DEFER && d->p->requires_approval) {
        key(w, "requires_approval");
        lit(w, "true");
    }
}

static void line_of(writer *w, const tg_plan *pl)
{
    if (pl->line) {
        key(w, "line");
        u64(w, pl->line);
    }
}

/* A plan refused before the table (malformed, too many samples, none, a
 * check that could not finish, a resolver that failed). */
static void write_refusal(writer *w, const tg_decider_t *d, tg_plan *pl)
{
    int v = pl->refusal_verdict;
    open_(w, "{");
    if (v == TG_DEFER) {
        key(w, "binding");
        plan_binding(w, d, pl, NULL, -1);
    }
    key(w, "code");
    ptext(w, pl, pl->code, pl->code_len);
    line_of(w, pl);
    key(w, "message");
    ptext(w, pl, pl->message, pl->message_len);
    if (pl->refusal_fields & TG_PF_N) {
        key(w, "n");
        u64(w, pl->n);
    }
    if (pl->has_offset) {
        key(w, "offset");
        u64(w, pl->offset);
    }
    if ((pl->refusal_fields & TG_PF_PLAN_ID) && pl->plan_id) {
        key(w, "plan_id");
        plan_id(w, pl);
    }
    members_json(w, &d->p->stamp_json); /* policy_version, registry_hash */
    approval(w, d, v);
    key(w, "stage");
    ctext(w, pl->refusal_stage);
    key(w, "verdict");
    verdict_text(w, v);
    close_(w, "}");
    pl->verdict_out = v;
    pl->code_out = pl->texts.data + pl->code;
    pl->stage_out = pl->refusal_stage;
}

/* The representative failed the rung: the rung's decision (d holds its
 * check) with the plan's figures. */
static void write_rung_failed(writer *w, const tg_decider_t *d, tg_plan *pl)
{
    const tg_rung_result_t *res = &d->rung;
    const tg_objection *o = pl->rung_no_args ? NULL : tg_decide_deciding(d);
    int findings = o && res->resolution == TG_RESOLVED && res->n_findings &&
                   !d->p->tools[res->tool].refuse_code.s && d->has_digest;
    open_(w, "{");
    key(w, "arg_agreement");
    share_of(w, pl->args.modal_count, pl->n);
    if (o && d->has_digest) {
        key(w, "args_digest");
        digest_text(w, d->digest);
    }
    if (o && res->resolution == TG_AMBIGUOUS) {
        key(w, "candidates");
        tool_refs(w, d->p, res->candidates,
                  res->n_candidates < TG_RUNG_MAX_FINDINGS ? res->n_candidates
                                                           : TG_RUNG_MAX_FINDINGS);
    }
    key(w, "code");
    if (o)
        code_of(w, d, o);
    else
        lit(w, "\"BAD_ARGUMENTS\"");
    if (findings) {
        findings_of(w, res);
        key(w, "keyword");
        ctext(w, res->findings[0].keyword);
    }
    line_of(w, pl);
    key(w, "message");
    if (o)
        text(w, d->texts.data + o->message, o->message_len);
    else
        lit(w, "\"the call has no arguments object\"");
    key(w, "n");
    u64(w, pl->n);
    if (findings) {
        key(w, "path");
        ctext(w, res->findings[0].pointer);
    }
    if (pl->plan_id) {
        key(w, "plan_id");
        plan_id(w, pl);
    }
    members_json(w, &d->p->stamp_json); /* policy_version, registry_hash */
    key(w, "representative");
    u64(w, pl->rep + 1);
    key(w, "result_agreement");
    share_of(w, pl->results.modal_count, pl->n);
    if (o)
        call_name(w, d, 1);
    key(w, "stage");
    lit(w, "\"rung\"");
    if (!pl->single) {
        key(w, "step");
        u64(w, pl->rung_step);
    }
    if (o)
        call_name(w, d, 0);
    key(w, "verdict");
    verdict_text(w, TG_REJECT);
    close_(w, "}");
    pl->verdict_out = TG_REJECT;
    pl->code_out = o ? d->texts.data + o->code : "BAD_ARGUMENTS";
    pl->stage_out = "rung";
}

static void plan_steps(writer *w, const tg_plan *pl)
{
    key(w, "steps");
    raw(w, "[", 1);
    for (size_t k = 0; k < pl->n_stats; k++) {
        const tg_psample *rep = &pl->samp[pl->rep];
        if (k)
            raw(w, ",", 1);
        open_(w, "{");
        key(w, "arg_agreement");
        share_of(w, pl->stats[k].arg_modal, pl->n);
        key(w, "result_agreement");
        share_of(w, pl->stats[k].result_modal, pl->n);
        key(w, "step");
        u64(w, k + 1);
        key(w, "tool");
        if (k < rep->count)
            text(w, pl->steps[rep->first + k].name, pl->steps[rep->first + k].name_len);
        else
            lit(w, "null");
        close_(w, "}");
    }
    raw(w, "]", 1);
}

static void outcome_of(writer *w, const tg_plan *pl, const char *code, size_t code_len,
                       const char *stage, size_t step, int verdict)
{
    open_(w, "{");
    key(w, "code");
    text(w, code, code_len);
    key(w, "stage");
    ctext(w, stage);
    if (step && pl->rep_steps > 1) {
        key(w, "step");
        u64(w, step);
    }
    key(w, "verdict");
    verdict_text(w, verdict);
    close_(w, "}");
}

long tg_plan_deciding(const tg_pobjection *o, size_t n, int table_verdict)
{
    long by = -1;
    for (size_t i = 0; i < n; i++)
        if (o[i].verdict == TG_REJECT)
            by = (long)i;
    if (by < 0 && table_verdict == TG_ACCEPT && n)
        by = 0;
    return by;
}

/* The plan decided by the table, or by a later stage on one of its calls
 * (the first reject, else the first defer), the objections listed when
 * there are several. */
static void write_judged(writer *w, const tg_decider_t *d, tg_plan *pl)
{
    const tg_consistency_verdict_t *cv = &pl->verdict;
    long at = tg_plan_deciding(pl->objections, pl->n_objections, cv->verdict);
    /* the later stage's objection that decides */
    const tg_pobjection *by = at < 0 ? NULL : &pl->objections[at];
    int cons = cv->verdict != TG_ACCEPT, verdict;
    size_t objections = (size_t)cons + pl->n_objections;
    long tool =
        pl->rep_steps == 1 ? (pl->single ? pl->tool : pl->steps[pl->samp[pl->rep].first].tool) : -1;
    const char *digest = pl->args_digest;

    verdict = by ? by->verdict : cv->verdict;
    if (by) {
        tool = by->tool;
        digest = by->digest;
    }

    open_(w, "{");
    key(w, "arg_agreement");
    share_of(w, pl->args.modal_count, pl->n);
    key(w, "args_digest");
    digest_text(w, digest);
    if (verdict == TG_DEFER) {
        key(w, "binding");
        plan_binding(w, d, pl, digest, tool);
    }
    if (by || cons) {
        key(w, "code");
        if (by)
            ptext(w, pl, by->code, by->code_len);
        else
            ctext(w, cv->code);
    }
    if (!by && cv->row >= TG_ROW_ARG_DISAGREE) {
        key(w, "deterministic");
        lit(w, pl->features.deterministic ? "true" : "false");
    }
    if (!by && pl->args.modal_count < pl->n) {
        key(w, "disagreeing");
        raw(w, "[", 1);
        for (size_t i = 0; i < pl->n_ptrs; i++) {
            if (i)
                raw(w, ",", 1);
            open_(w, "{");
            key(w, "agreement");
            share_of(w, pl->ptrs[i].agree, pl->n);
            key(w, "pointer");
            ptext(w, pl, pl->ptrs[i].pointer, pl->ptrs[i].pointer_len);
            close_(w, "}");
        }
        raw(w, "]", 1);
    }
    key(w, "distinct_args");
    u64(w, pl->args.distinct);
    key(w, "distinct_results");
    u64(w, pl->results.distinct);
    key(w, "epoch");
    plan_epoch(w, pl);
    line_of(w, pl);
    if (by) {
        key(w, "message");
        ptext(w, pl, by->message, by->message_len);
    } else if (pl->has_message) {
        key(w, "message");
        ptext(w, pl, pl->message, pl->message_len);
    }
    key(w, "n");
    u64(w, pl->n);
    if (objections > 1) {
        key(w, "outcomes");
        raw(w, "[", 1);
        if (cons)
            outcome_of(w, pl, cv->code, strlen(cv->code), "consistency", 0, cv->verdict);
        for (size_t i = 0; i < pl->n_objections; i++) {
            const tg_pobjection *o = &pl->objections[i];
            if (i || cons)
                raw(w, ",", 1);
            outcome_of(w, pl, pl->texts.data + o->code, o->code_len, o->stage, o->step, o->verdict);
        }
        raw(w, "]", 1);
    }
    if (pl->plan_id) {
        key(w, "plan_id");
        plan_id(w, pl);
    }
    key(w, "policy_version");
    json_text(w, &d->p->version_json);
    if (!by && cv->quarantine) {
        key(w, "quarantined");
        raw(w, "[", 1);
        for (size_t i = 0; i < pl->n_quarantines; i++) {
            if (i)
                raw(w, ",", 1);
            tool_ref(w, d->p, (size_t)pl->quarantines[i].tool);
        }
        raw(w, "]", 1);
    }
    key(w, "registry_hash");
    json_text(w, &d->p->registry_hash_json);
    key(w, "representative");
    u64(w, pl->rep + 1);
    approval(w, d, verdict);
    key(w, "result_agreement");
    share_of(w, pl->results.modal_count, pl->n);
    if (!by && pl->n_failures) {
        key(w, "rung_failures");
        raw(w, "[", 1);
        for (size_t i = 0; i < pl->n_failures; i++) {
            const tg_pfailure *f = &pl->failures[i];
            if (i)
                raw(w, ",", 1);
            open_(w, "{");
            key(w, "code");
            ptext(w, pl, f->code, f->code_len);
            key(w, "message");
            ptext(w, pl, f->message, f->message_len);
            if (f->has_path) {
                key(w, "path");
                ptext(w, pl, f->path, f->path_len);
            }
            key(w, "sample");
            u64(w, f->sample);
            if (!pl->single) {
                key(w, "step");
                u64(w, f->step);
            }
            close_(w, "}");
        }
        raw(w, "]", 1);
    }
    if (tool >= 0) {
        key(w, "server");
        tool_text(w, d->p, tool, 1);
    }
    key(w, "stage");
    ctext(w, by ? by->stage : "consistency");
    if (by) {
        stages_ran(w, d->p, by->n_ran);
        if (pl->rep_steps > 1) {
            key(w, "step");
            u64(w, by->step);
        }
    }
    if (!pl->single)
        plan_steps(w, pl);
    if (tool >= 0) {
        key(w, "tool");
        tool_text(w, d->p, tool, 0);
    }
    key(w, "verdict");
    verdict_text(w, verdict);
    if (!by && cv->row >= TG_ROW_ARG_DISAGREE) {
        key(w, "verified");
        lit(w, pl->features.verified ? "true" : "false");
    }
    close_(w, "}");
    pl->verdict_out = verdict;
    pl->code_out = by ? pl->texts.data + by->code : cv->code;
    pl->stage_out = by ? by->stage : "consistency";
}

int tg_plan_decision_write(tg_decider_t *d, tg_error_t *err)
{
    tg_plan *pl = d->plan;
    writer w;
    tg_buf_reset(&d->out);
    w.b = &d->out;
    w.rc = tg_buf_reserve(&d->out, 1024 + 64 * (pl->n_failures + pl->n_ptrs + pl->n_stats), NULL);
    if (pl->refused)
        write_refusal(&w, d, pl);
    else if (pl->rung_failed)
        write_rung_failed(&w, d, pl);
    else
        write_judged(&w, d, pl);
    if (w.rc != TG_OK)
        return tg_fail(err, w.rc, TG_NO_OFFSET, "out of memory writing a decision");
    return TG_OK;
}
