/*
 * tg_decide.c -- a policy's pipeline on one call, in C: decode, the
 * Resolution Rung, the causal gate's default rule, the verifier's
 * contract requirement; custom stages and a policy's own gate rule are
 * handed to the host and their answers taken back.
 *
 * The rules are docs/policies.md's: the first reject ends the
 * run and is the decision whatever deferred before it; a defer lets the
 * later stages run; with no reject the decision is the first defer; every
 * objection is listed when there are several.  Nothing that fails inside
 * the engine becomes an accept: a rung that cannot finish rejects with
 * the failure's code, as does a digest that cannot be made.
 */
#include "tg_decide.h"

#include <stdio.h>

tg_decider_t *tg_decider_new(tg_engine_t *e, tg_error_t *err)
{
    tg_decider_t *d;
    tg_error_clear(err);
    if (!e) {
        tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "engine is NULL");
        return NULL;
    }
    if (!(d = tg_mem_realloc(e, NULL, 0, sizeof *d))) {
        tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        return NULL;
    }
    memset(d, 0, sizeof *d);
    d->e = e;
    tg_buf_init(&d->out, e);
    tg_buf_init(&d->texts, e);
    tg_buf_init(&d->scratch, e);
    tg_buf_init(&d->mcp_texts, e);
    tg_engine_retain(e);
    return d;
}

static void end_call(tg_decider_t *d)
{
    tg_calls_free(d->calls);
    d->calls = NULL;
    d->call = NULL;
    d->lines_pending = 0;
    if (d->merged_live) {
        tg_arena_free(&d->merged.arena);
        d->merged_live = 0;
    }
}

void tg_decider_free(tg_decider_t *d)
{
    tg_engine_t *e;
    if (!d)
        return;
    e = d->e;
    end_call(d);
    tg_plan_free(d->plan);
    tg_buf_free(&d->out);
    tg_buf_free(&d->texts);
    tg_buf_free(&d->scratch);
    tg_doc_free(d->mcp_doc);
    tg_buf_free(&d->mcp_texts);
    tg_mem_free(e, d->obj, d->cap_obj * sizeof *d->obj);
    tg_mem_free(e, d, sizeof *d);
    tg_engine_release(e);
}

/* ---- messages ------------------------------------------------------------------ */

static int put(tg_decider_t *d, const char *s, size_t n, tg_error_t *err)
{
    return tg_buf_append(&d->texts, s, n, err);
}

static int puts_(tg_decider_t *d, const char *s, tg_error_t *err)
{
    return put(d, s, strlen(s), err);
}

/* s quoted as a JSON string would be ("a \"b\""), so a name with odd
 * characters reads unambiguously in a message. */
static int put_quoted(tg_decider_t *d, const char *s, size_t n, tg_error_t *err)
{
    static const char hex[] = "0123456789abcdef";
    int rc = put(d, "\"", 1, err);
    for (size_t i = 0; i < n && rc == TG_OK; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            rc = put(d, esc, 2, err);
        } else if (c < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            rc = put(d, esc, 6, err);
        } else {
            rc = put(d, s + i, 1, err);
        }
    }
    return rc == TG_OK ? put(d, "\"", 1, err) : rc;
}

int tg_append_utf8(tg_buf_t *b, const char *s, size_t n, tg_error_t *err)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;
    int rc = TG_OK;
    while (i < n && rc == TG_OK) {
        size_t k = tg_utf8_sequence(u + i, n - i);
        if (k) {
            i += k;
            continue;
        }
        rc = tg_buf_append(b, s + run, i - run, err);
        run = ++i;
    }
    return rc == TG_OK ? tg_buf_append(b, s + run, n - run, err) : rc;
}

static int put_utf8(tg_decider_t *d, const char *s, size_t n, tg_error_t *err)
{
    return tg_append_utf8(&d->texts, s, n, err);
}

static int put_u64(tg_decider_t *d, uint64_t v, tg_error_t *err)
{
    char digits[20];
    return put(d, digits, (size_t)tg_u64_text(v, digits), err);
}

/* ---- objections ------------------------------------------------------------------ */

/* Starts an objection of stage (code: code_len bytes); its message is
 * what is put into d->texts until close_message. */
static int object_n(tg_decider_t *d, size_t stage, int verdict, const char *code, size_t code_len,
                    tg_error_t *err)
{
    tg_objection *o;
    size_t at = d->texts.len;
    int rc;
    if (d->n_obj == d->cap_obj) {
        size_t cap = d->cap_obj ? 2 * d->cap_obj : 8;
        tg_objection *grown =
            tg_mem_realloc(d->e, d->obj, d->cap_obj * sizeof *grown, cap * sizeof *grown);
        if (!grown)
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        d->obj = grown;
        d->cap_obj = cap;
    }
    if ((rc = put(d, code, code_len, err)) != TG_OK || (rc = put(d, "", 1, err)) != TG_OK)
        return rc;
    o = &d->obj[d->n_obj++];
    o->stage = stage;
    o->verdict = verdict;
    o->code = at;
    o->code_len = code_len;
    o->message = d->texts.len;
    o->message_len = 0;
    return TG_OK;
}

static int object(tg_decider_t *d, size_t stage, int verdict, const char *code, tg_error_t *err)
{
    return object_n(d, stage, verdict, code, strlen(code), err);
}

/* Closes the message of the last objection. */
static void close_message(tg_decider_t *d)
{
    tg_objection *o = &d->obj[d->n_obj - 1];
    o->message_len = d->texts.len - o->message;
}

static int object_with(tg_decider_t *d, size_t stage, int verdict, const char *code,
                       const char *message, tg_error_t *err)
{
    int rc = object(d, stage, verdict, code, err);
    if (rc == TG_OK)
        rc = puts_(d, message, err);
    if (rc == TG_OK)
        close_message(d);
    return rc;
}

/* ---- the stages ------------------------------------------------------------------ */

static int digest_args(tg_decider_t *d, tg_error_t *err)
{
    tg_hash128_t h;
    int rc;
    tg_buf_reset(&d->scratch);
    if ((rc = tg_canon_value_mode(d->args, TG_CANON_EXACT, &d->scratch, err)) != TG_OK)
        return rc;
    tg_hash128(d->scratch.data, d->scratch.len, &h);
    tg_hash128_hex(&h, d->digest);
    d->has_digest = 1;
    return TG_OK;
}

static int run_rung(tg_decider_t *d, size_t stage, tg_error_t *err)
{
    const tg_policy_t *p = d->p;
    tg_rung_result_t *res = &d->rung;
    tg_error_t cerr;
    int rc;
    if (d->rung_known) {
        /* a plan's call: it passed this rung in the plan, with these
         * arguments and this registry; what the rung finds, tg_classify
         * knows */
        tg_classify_known_rung(d);
        res->resolution = TG_RESOLVED;
        res->tool = (size_t)d->tool;
        res->n_candidates = res->n_findings = res->n_also = 0;
        d->rung_ran = 1;
        return TG_OK;
    }
    rc = tg_rung_check(d->e, p->r, d->server, d->server_len, d->name, d->name_len, d->args,
                       p->report_also, res, &cerr);
    d->rung_ran = 1;
    if (rc == TG_E_NOMEM)
        return tg_fail(err, rc, TG_NO_OFFSET, "out of memory");
    if (rc != TG_OK) {
        /* a limit: the check could not finish, so the call is refused */
        if ((rc = object(d, stage, TG_REJECT, tg_code_name(cerr.code), err)) != TG_OK ||
            (rc = puts_(d, "the rung could not finish its check: ", err)) != TG_OK ||
            (rc = puts_(d, cerr.message, err)) != TG_OK)
            return rc;
        close_message(d);
        return TG_OK;
    }
    if (res->resolution == TG_UNKNOWN) {
        if ((rc = object(d, stage, TG_REJECT, "H1", err)) != TG_OK ||
            (rc = puts_(d, d->server ? "no tool " : "no tool named ", err)) != TG_OK ||
            (rc = put_quoted(d, d->name, d->name_len, err)) != TG_OK)
            return rc;
        if (d->server)
            rc = puts_(d, " on server ", err) == TG_OK
                     ? put_quoted(d, d->server, d->server_len, err)
                     : TG_E_NOMEM;
        else
            rc = puts_(d, " on any server", err);
        if (rc == TG_OK)
            close_message(d);
        return rc;
    }
    if (res->resolution == TG_AMBIGUOUS) {
        if ((rc = object(d, stage, TG_REJECT, "H1", err)) != TG_OK ||
            (rc = puts_(d, "tool name ", err)) != TG_OK ||
            (rc = put_quoted(d, d->name, d->name_len, err)) != TG_OK ||
            (rc = puts_(d, " is exposed by ", err)) != TG_OK ||
            (rc = put_u64(d, res->n_candidates, err)) != TG_OK ||
            (rc = puts_(d, " servers; the call must name one", err)) != TG_OK)
            return rc;
        close_message(d);
        return TG_OK;
    }
    d->tool = (long)res->tool;
    d->server = tg_registry_server(p->r, res->tool, &d->server_len);
    d->name = tg_registry_name(p->r, res->tool, &d->name_len);
    if (p->tools[res->tool].refuse_code.s) {
        const tg_ptool *t = &p->tools[res->tool];
        if ((rc = object(d, stage, TG_REJECT, t->refuse_code.s, err)) != TG_OK ||
            (rc = put(d, t->refuse_message.s, t->refuse_message.len, err)) != TG_OK)
            return rc;
        close_message(d);
        return TG_OK;
    }
    /* the digest binds the decision to these arguments: without it, no accept */
    if ((rc = digest_args(d, &cerr)) != TG_OK) {
        if (rc == TG_E_NOMEM) /* the host refuses the call, as for the rung's */
            return tg_fail(err, rc, TG_NO_OFFSET, "out of memory");
        if ((rc = object(d, stage, TG_REJECT, tg_code_name(cerr.code), err)) != TG_OK ||
            (rc = puts_(d, "the arguments could not be hashed: ", err)) != TG_OK ||
            (rc = puts_(d, cerr.message, err)) != TG_OK)
            return rc;
        close_message(d);
        return TG_OK;
    }
    if (res->n_findings) {
        const tg_finding_t *f = &res->findings[0];
        size_t more = res->n_findings - 1;
        if ((rc = object(d, stage, TG_REJECT, f->code == TG_H2 ? "H2" : "H3", err)) != TG_OK ||
            (rc = puts_(d, f->message, err)) != TG_OK)
            return rc;
        if (more &&
            ((rc = puts_(d, " (and ", err)) != TG_OK || (rc = put_u64(d, more, err)) != TG_OK ||
             (rc = puts_(d, more > 1 ? " more findings)" : " more finding)", err)) != TG_OK))
            return rc;
        close_message(d);
    }
    return TG_OK;
}

static int granted(const tg_context_t *c, const tg_text *scope)
{
    for (size_t i = 0; i < c->n_scopes; i++)
        if (c->scopes[i].len == scope->len && memcmp(c->scopes[i].s, scope->s, scope->len) == 0)
            return 1;
    return 0;
}

static int put_levels(tg_decider_t *d, tg_error_t *err)
{
    int rc = TG_OK;
    for (size_t i = 0; i < d->p->n_levels && rc == TG_OK; i++) {
        if (i)
            rc = puts_(d, ", ", err);
        if (rc == TG_OK)
            rc = put(d, d->p->levels[i].s, d->p->levels[i].len, err);
    }
    return rc;
}

/* What a refusal for a missing risk says to do: tool lists in the formats
 * people have (OpenAI, Anthropic, MCP) carry no risk, and the gate counts
 * that as the highest (fail closed). */
static const char no_risk_ways_out[] =
    ": give the tool a risk (a \"risk\" in toolgate's registry format, or the policy's "
    "contract(tool) mapping), or check the schemas alone with the policy \"rung\"";

/* The gate's default rule: every scope the contract requires is granted,
 * and its risk is not above the context's max_risk (a missing risk counts
 * as the highest, a missing max_risk as the lowest; a max_risk outside the
 * order refuses). */
static int run_gate(tg_decider_t *d, size_t stage, tg_error_t *err)
{
    const tg_policy_t *p = d->p;
    const tg_ptool *t = &p->tools[d->tool];
    const tg_context_t *c = d->ctx;
    long risk, max;
    int rc;
    if (c && c->max_risk == -2) {
        if ((rc = object(d, stage, TG_REJECT, "H4", err)) != TG_OK ||
            (rc = puts_(d, "the context's max_risk ", err)) != TG_OK ||
            (rc = put_quoted(d, c->max_risk_text.s, c->max_risk_text.len, err)) != TG_OK ||
            (rc = puts_(d, " is not one of the policy's risk levels (", err)) != TG_OK ||
            (rc = put_levels(d, err)) != TG_OK || (rc = puts_(d, ")", err)) != TG_OK)
            return rc;
        close_message(d);
        return TG_OK;
    }
    for (size_t i = 0; i < t->n_scopes; i++)
        if (!c || !granted(c, &t->scopes[i])) {
            if ((rc = object(d, stage, TG_REJECT, "H4", err)) != TG_OK ||
                (rc = puts_(d, "scope ", err)) != TG_OK ||
                (rc = put_quoted(d, t->scopes[i].s, t->scopes[i].len, err)) != TG_OK ||
                (rc = puts_(d, " is required and not granted", err)) != TG_OK)
                return rc;
            close_message(d);
            return TG_OK;
        }
    risk = t->risk >= 0 ? t->risk : (long)p->n_levels - 1;
    max = c && c->max_risk >= 0 ? c->max_risk : 0;
    if (risk <= max)
        return TG_OK;
    if ((rc = object(d, stage, TG_REJECT, "H4", err)) != TG_OK)
        return rc;
    if (t->risk >= 0)
        rc = puts_(d, "risk ", err) == TG_OK
                 ? put_quoted(d, p->levels[risk].s, p->levels[risk].len, err)
                 : TG_E_NOMEM;
    else
        rc = puts_(d, "no declared risk (counted as the highest)", err);
    if (rc == TG_OK)
        rc = puts_(d, " is above the allowed ", err);
    if (rc == TG_OK)
        rc = put_quoted(d, p->levels[max].s, p->levels[max].len, err);
    if (rc == TG_OK && !(c && c->max_risk >= 0))
        rc = puts_(d, " (no max_risk given, counted as the lowest)", err);
    if (rc == TG_OK && t->risk < 0)
        rc = puts_(d, no_risk_ways_out, err);
    if (rc == TG_OK)
        close_message(d);
    return rc;
}

static int run_verifier(tg_decider_t *d, size_t stage, tg_error_t *err)
{
    const tg_ptool *t = &d->p->tools[d->tool];
    if (!d->p->require_contract || t->has_output || t->declares_effects)
        return TG_OK;
    return object_with(d, stage, d->p->on_mismatch, "UNVERIFIABLE",
                       "the tool declares neither an output schema nor effects, so its result "
                       "cannot be verified",
                       err);
}

/* ---- the run ---------------------------------------------------------------------- */

static int last_rejects(const tg_decider_t *d)
{
    return d->n_obj && d->obj[d->n_obj - 1].verdict == TG_REJECT;
}

/* The decision is the first reject, else the first defer, else an accept. */
const tg_objection *tg_decide_deciding(const tg_decider_t *d)
{
    for (size_t i = 0; i < d->n_obj; i++)
        if (d->obj[i].verdict == TG_REJECT)
            return &d->obj[i];
    return d->n_obj ? &d->obj[0] : NULL;
}

static int finish(tg_decider_t *d, tg_outcome_t *out, tg_error_t *err)
{
    const tg_objection *o = tg_decide_deciding(d);
    int rc;
    if (d->plan && d->plan->phase == TG_PLAN_STAGES)
        return tg_classify_step_done(d, out, err); /* a plan's call: the plan goes on */
    rc = tg_decision_write(d, err);
    if (rc != TG_OK)
        return rc;
    out->status = TG_DECIDED;
    out->verdict = o ? o->verdict : TG_ACCEPT;
    out->json = d->out.data;
    out->json_len = d->out.len;
    out->code = o ? d->texts.data + o->code : "";
    if (!o)
        out->stage = d->n_ran ? d->p->stages[d->n_ran - 1].name.s : "";
    else
        out->stage = o->stage == TG_DECODE_STAGE ? "decode" : d->p->stages[o->stage].name.s;
    return TG_OK;
}

static const char no_tool_yet[] =
    "the gate and the verifier read the contract of the tool the rung resolved: the rung must come "
    "before them in the policy's stages";

/* Runs the stages from d->next_stage until one is the host's, a reject,
 * or the end. */
int tg_decide_run(tg_decider_t *d, tg_outcome_t *out, tg_error_t *err)
{
    const tg_policy_t *p = d->p;
    while (d->next_stage < p->n_stages && !last_rejects(d)) {
        size_t i = d->next_stage;
        const tg_pstage *st = &p->stages[i];
        int rc = TG_OK;
        if (st->in_host || ((d->flags & TG_CHECK_PAUSE) && d->paused_at != i)) {
            d->paused_at = i;
            out->status = TG_NEEDS_STAGE;
            out->pending = i;
            return TG_OK;
        }
        /* a description (the C API's) with one of them before the rung: no
         * contract to read, rather than p->tools[-1] */
        if ((st->kind == TG_STAGE_GATE || st->kind == TG_STAGE_VERIFIER) && d->tool < 0)
            return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, no_tool_yet);
        d->next_stage++;
        d->n_ran = d->next_stage;
        switch (st->kind) {
        case TG_STAGE_RUNG:
            rc = run_rung(d, i, err);
            break;
        case TG_STAGE_GATE:
            rc = run_gate(d, i, err);
            break;
        case TG_STAGE_VERIFIER:
            rc = run_verifier(d, i, err);
            break;
        default: /* consistency: a single call has no samples (classify) */
            break;
        }
        if (rc != TG_OK)
            return rc;
    }
    return finish(d, out, err);
}

/* A call refused before any stage ran. */
static int refuse_at(tg_decider_t *d, const char *code, const char *message, size_t offset,
                     tg_outcome_t *out, tg_error_t *err)
{
    int rc = object_with(d, TG_DECODE_STAGE, TG_REJECT, code, message, err);
    if (rc != TG_OK)
        return rc;
    d->decode_failed = 1;
    d->decode_offset = offset;
    return finish(d, out, err);
}

/* The whole text refused after it decoded: no call of it is decided. */
static int refuse_at_decode(tg_decider_t *d, const char *code, const char *message,
                            tg_outcome_t *out, tg_error_t *err)
{
    return refuse_at(d, code, message, TG_NO_OFFSET, out, err);
}

static const char context_refused[] =
    "the call carries a \"context\": the context (granted scopes, allowed risk) comes from the "
    "operator, never from the call (a host replaying trusted recorded traffic may allow it: "
    "toolgate.new{trust_call_context = true}, toolgate check --line-context)";

/* A trusted call's own context, merged over the base one. */
static int merge_context(tg_decider_t *d, const tg_value_t *own, tg_error_t *err)
{
    tg_context_t *m = &d->merged;
    if (d->ctx)
        *m = *d->ctx;
    else {
        memset(m, 0, sizeof *m);
        m->e = d->e;
        m->p = d->p;
        m->max_risk = -1;
    }
    tg_arena_init(&m->arena, d->e, 256);
    d->merged_live = 1;
    d->ctx = m;
    return tg_context_read(m, own, err);
}

/* Clears what a call's run leaves behind: its stages, objections and
 * digest, and the tool the rung resolved. */
static void clear_call(tg_decider_t *d)
{
    d->tool = -1;
    d->has_digest = d->rung_ran = d->decode_failed = 0;
    d->next_stage = d->n_ran = d->n_obj = 0;
    d->paused_at = TG_DECODE_STAGE;
    tg_buf_reset(&d->texts);
}

/* Starts call d->call_index of the text and runs its stages; what an
 * earlier call left is cleared already (tg_decide_begin, clear_call). */
static int start_call(tg_decider_t *d, tg_outcome_t *out, tg_error_t *err)
{
    d->call = tg_calls_at(d->calls, d->call_index);
    d->server = tg_call_server(d->call, &d->server_len);
    if (!d->server && d->ctx && d->ctx->server.s) {
        d->server = d->ctx->server.s;
        d->server_len = d->ctx->server.len;
    }
    d->name = tg_call_name(d->call, &d->name_len);
    d->args = tg_call_arguments(d->call);
    return tg_decide_run(d, out, err);
}

void tg_decide_begin(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, int flags,
                     size_t line)
{
    end_call(d);
    d->p = p;
    d->ctx = ctx;
    d->line = line;
    d->server = d->name = NULL;
    d->server_len = d->name_len = 0;
    d->args = NULL;
    d->rung_known = 0;
    d->call_index = 0;
    d->flags = flags;
    clear_call(d);
}

int tg_decide_rung(tg_decider_t *d, size_t stage, tg_error_t *err)
{
    return run_rung(d, stage, err);
}

int tg_check(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, const char *json,
             size_t len, int format, int flags, size_t line, tg_outcome_t *out, tg_error_t *err)
{
    tg_error_t cerr;
    const tg_value_t *own;
    size_t n;
    int rc;

    tg_error_clear(err);
    if (!d || !p || !json || !out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "decider, policy, call and outcome are required");
    if (ctx && ctx->p != p)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "the context was compiled for another policy");
    tg_decide_begin(d, p, ctx, flags, line);
    if (d->plan)
        d->plan->phase = TG_PLAN_IDLE; /* a plan waiting for the host is dropped */

    rc = tg_calls_decode(d->e, json, len, format, &d->calls, &cerr);
    if (rc == TG_E_NOMEM)
        return tg_fail(err, rc, TG_NO_OFFSET, "out of memory");
    if (rc != TG_OK)
        return refuse_at(d, tg_code_name(cerr.code), cerr.message, cerr.offset, out, err);
    n = tg_calls_count(d->calls);
    if ((flags & TG_CHECK_ONE) && n != 1) {
        char message[TG_ERROR_MESSAGE_MAX];
        snprintf(message, sizeof message,
                 "the text (%s) holds %zu calls: one decision is about one call (toolgate check "
                 "and engine:check_all decide each)",
                 tg_call_shape_name(tg_calls_shape(d->calls)), n);
        return refuse_at_decode(d, "BAD_CALL", message, out, err);
    }
    if (n == 0) {
        out->status = TG_NO_MORE_CALLS; /* a text-only message: nothing to decide */
        return TG_OK;
    }
    /* the context is the text's (its root's member): one rule for every call */
    own = tg_call_context(tg_calls_at(d->calls, 0));
    if (own && !(flags & TG_CHECK_TRUST_CONTEXT))
        return refuse_at_decode(d, "CONTEXT_IN_CALL", context_refused, out, err);
    if (own && own->type != TG_OBJECT)
        return refuse_at_decode(d, "BAD_CALL", "a call's \"context\" must be an object", out, err);
    if (own && (rc = merge_context(d, own, err)) != TG_OK)
        return rc;
    return start_call(d, out, err);
}

/* Appends decided outcomes of the text in progress to out and goes on
 * with its next calls, until they are done (TG_NO_MORE_CALLS) or one waits
 * for the host. */
static int drain_calls(tg_decider_t *d, tg_buf_t *out, size_t verdicts[3], tg_outcome_t *o,
                       tg_error_t *err)
{
    int rc = TG_OK;
    while (rc == TG_OK && o->status == TG_DECIDED) {
        verdicts[o->verdict]++;
        if ((rc = tg_buf_append(out, o->json, o->json_len, err)) != TG_OK ||
            (rc = tg_buf_append(out, "\n", 1, err)) != TG_OK)
            break;
        rc = tg_check_next(d, o, err);
    }
    d->lines_pending = rc == TG_OK && o->status == TG_NEEDS_STAGE;
    return rc;
}

int tg_check_lines(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, const char *text,
                   size_t len, int format, int flags, size_t *line, size_t *used, tg_buf_t *out,
                   size_t verdicts[3], tg_outcome_t *o, tg_error_t *err)
{
    size_t at = 0;
    int rc;
    tg_error_clear(err);
    if (!d || !p || !text || !line || !used || !out || !verdicts || !o)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "every argument but ctx is required");
    /* the host answered a stage of a text of several calls: its next calls
     * come before the next line */
    if (d->lines_pending) {
        d->lines_pending = 0;
        if ((rc = tg_check_next(d, o, err)) != TG_OK ||
            (rc = drain_calls(d, out, verdicts, o, err)) != TG_OK)
            return rc;
        if (o->status == TG_NEEDS_STAGE) {
            *used = 0;
            return TG_OK;
        }
    }
    for (;;) {
        size_t n;
        const char *s = tg_line_next(text, len, &at, &n);
        if (!s)
            break;
        *used = at;
        ++*line;
        if (tg_line_blank(s, n))
            continue;
        if ((rc = tg_check(d, p, ctx, s, n, format, flags, *line, o, err)) != TG_OK ||
            (rc = drain_calls(d, out, verdicts, o, err)) != TG_OK)
            return rc;
        if (o->status == TG_NEEDS_STAGE)
            return TG_OK;
    }
    *used = at;
    o->status = TG_NO_MORE_CALLS;
    return TG_OK;
}

int tg_check_next(tg_decider_t *d, tg_outcome_t *out, tg_error_t *err)
{
    tg_error_clear(err);
    if (!d || !out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "decider and outcome are required");
    /* the call in progress must be decided first */
    if (d->call && d->p && d->next_stage < d->p->n_stages && d->paused_at == d->next_stage)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "the call in progress waits for its stage");
    if (!d->call || d->call_index + 1 >= tg_calls_count(d->calls)) {
        d->call = NULL;
        out->status = TG_NO_MORE_CALLS;
        return TG_OK;
    }
    d->call_index++;
    clear_call(d);
    return start_call(d, out, err);
}

int tg_check_answer(tg_decider_t *d, int verdict, const char *code, size_t code_len,
                    const char *message, size_t message_len, tg_outcome_t *out, tg_error_t *err)
{
    size_t stage;
    int rc;
    tg_error_clear(err);
    if (!d || !out || !d->p || d->next_stage >= d->p->n_stages || d->paused_at != d->next_stage)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "no stage is waiting for an answer");
    if (!d->p->stages[d->next_stage].in_host) {
        if (verdict != TG_RUN_IN_CORE)
            return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                           "a built-in stage is answered TG_RUN_IN_CORE");
        return tg_decide_run(d, out, err);
    }
    stage = d->next_stage++;
    d->n_ran = d->next_stage;
    if (verdict != -1) {
        if (verdict != TG_REJECT && verdict != TG_DEFER)
            return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "an answer is -1, TG_REJECT or TG_DEFER");
        /* the host's text keeps only its well-formed UTF-8, so that the
         * decision writer can take every text as the core's own */
        tg_objection *o;
        if ((rc = object_n(d, stage, verdict, "", 0, err)) != TG_OK)
            return rc;
        o = &d->obj[d->n_obj - 1];
        d->texts.len = o->code; /* the code goes where object_n put an empty one */
        if ((rc = put_utf8(d, code ? code : "", code ? code_len : 0, err)) != TG_OK)
            return rc;
        o->code_len = d->texts.len - o->code;
        if ((rc = put(d, "", 1, err)) != TG_OK)
            return rc;
        o->message = d->texts.len;
        if ((rc = put_utf8(d, message ? message : "", message ? message_len : 0, err)) != TG_OK)
            return rc;
        close_message(d);
    }
    return tg_decide_run(d, out, err);
}

const char *tg_check_server(const tg_decider_t *d, size_t *len)
{
    if (len)
        *len = d->server_len;
    return d->server;
}

const char *tg_check_name(const tg_decider_t *d, size_t *len)
{
    if (len)
        *len = d->name_len;
    return d->name;
}

const tg_value_t *tg_check_arguments(const tg_decider_t *d)
{
    return d->args;
}

const char *tg_check_args_digest(const tg_decider_t *d)
{
    return d->has_digest ? d->digest : NULL;
}

long tg_check_tool(const tg_decider_t *d)
{
    return d->tool;
}

int tg_check_verdict_so_far(const tg_decider_t *d)
{
    const tg_objection *o = tg_decide_deciding(d);
    return o ? o->verdict : TG_ACCEPT;
}

const tg_value_t *tg_check_call_context(const tg_decider_t *d)
{
    return d->call ? tg_call_context(d->call) : NULL;
}

void tg_check_view(const tg_decider_t *d, tg_check_view_t *out)
{
    out->server = tg_check_server(d, &out->server_len);
    out->name = tg_check_name(d, &out->name_len);
    out->arguments = tg_check_arguments(d);
    out->args_digest = tg_check_args_digest(d);
    out->tool = tg_check_tool(d);
    out->context = tg_check_call_context(d);
}
