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

static void raw(writer *w, const char *s, size_t n)
{
    if (w->rc == TG_OK)
        w->rc = tg_buf_put(w->b, s, n, NULL);
}

static void lit(writer *w, const char *s)
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

/* "key": -- keys are ASCII constants, written as they are. */
static void key(writer *w, const char *k)
{
    size_t n = strlen(k);
    char *p;
    if (w->rc != TG_OK || (w->rc = tg_buf_reserve(w->b, n + 4, NULL)) != TG_OK)
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

static void u64(writer *w, uint64_t v)
{
    char digits[20];
    raw(w, digits, (size_t)tg_u64_text(v, digits));
}

static void tool_ref(writer *w, const tg_registry_t *r, size_t i)
{
    size_t len;
    const char *s;
    open_(w, "{");
    key(w, "name");
    s = tg_registry_name(r, i, &len);
    text(w, s, len);
    key(w, "server");
    s = tg_registry_server(r, i, &len);
    text(w, s, len);
    close_(w, "}");
}

static void tool_refs(writer *w, const tg_registry_t *r, const size_t *list, size_t n)
{
    raw(w, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            raw(w, ",", 1);
        tool_ref(w, r, list[i]);
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

static const char *const verdict_names[] = {"\"accept\"", "\"reject\"", "\"defer\""};

static const char *stage_name(const tg_decider_t *d, size_t stage)
{
    return stage == TG_DECODE_STAGE ? "decode" : d->p->stages[stage].name.s;
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

static void binding(writer *w, const tg_decider_t *d)
{
    const tg_context_t *c = d->ctx;
    open_(w, "{");
    key(w, "args_digest");
    text_or_null(w, d->has_digest ? d->digest : NULL, 32);
    key(w, "epoch");
    if (c && c->epoch.s)
        raw(w, c->epoch.s, c->epoch.len);
    else
        lit(w, "null");
    key(w, "policy_version");
    text(w, d->p->version.s, d->p->version.len);
    key(w, "registry_hash");
    text(w, d->p->registry_hash.s, d->p->registry_hash.len);
    key(w, "server");
    text_or_null(w, d->server, d->server_len);
    key(w, "tool");
    text_or_null(w, d->name, d->name_len);
    close_(w, "}");
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
        tool_refs(&w, p->r, res->also, res->n_also);
    }
    if (d->has_digest) {
        key(&w, "args_digest");
        text(&w, d->digest, 32);
    }
    if (verdict == TG_DEFER) {
        key(&w, "binding");
        binding(&w, d);
    }
    if (rung_decided && res->resolution == TG_AMBIGUOUS) {
        key(&w, "candidates");
        tool_refs(&w, p->r, res->candidates,
                  res->n_candidates < TG_RUNG_MAX_FINDINGS ? res->n_candidates
                                                           : TG_RUNG_MAX_FINDINGS);
    }
    if (o) {
        key(&w, "code");
        code_of(&w, d, o);
    }
    if (findings) {
        key(&w, "findings");
        raw(&w, "[", 1);
        for (size_t i = 0; i < res->n_findings; i++) {
            if (i)
                raw(&w, ",", 1);
            finding(&w, &res->findings[i]);
        }
        raw(&w, "]", 1);
    }
    if (d->calls) {
        key(&w, "format");
        ctext(&w, tg_call_shape_name(tg_calls_shape(d->calls)));
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
            ctext(&w, stage_name(d, d->obj[i].stage));
            key(&w, "verdict");
            lit(&w, verdict_names[d->obj[i].verdict]);
            close_(&w, "}");
        }
        raw(&w, "]", 1);
    }
    if (findings) {
        key(&w, "path");
        ctext(&w, res->findings[0].pointer);
    }
    key(&w, "policy_version");
    text(&w, p->version.s, p->version.len);
    key(&w, "registry_hash");
    text(&w, p->registry_hash.s, p->registry_hash.len);
    if (verdict == TG_DEFER && p->requires_approval) {
        key(&w, "requires_approval");
        lit(&w, "true");
    }
    if (d->server) {
        key(&w, "server");
        text(&w, d->server, d->server_len);
    }
    key(&w, "stage");
    if (o)
        ctext(&w, stage_name(d, o->stage));
    else
        ctext(&w, d->n_ran ? p->stages[d->n_ran - 1].name.s : "");
    if (!d->decode_failed) {
        key(&w, "stages");
        raw(&w, "[", 1);
        for (size_t i = 0; i < d->n_ran; i++) {
            if (i)
                raw(&w, ",", 1);
            text(&w, p->stages[i].name.s, p->stages[i].name.len);
        }
        raw(&w, "]", 1);
    }
    if (d->name) {
        key(&w, "tool");
        text(&w, d->name, d->name_len);
    }
    key(&w, "verdict");
    lit(&w, verdict_names[verdict]);
    close_(&w, "}");
    /* a NUL after the text, not counted: C hosts may read it as a string */
    if (w.rc == TG_OK && (w.rc = tg_buf_reserve(w.b, 1, NULL)) == TG_OK)
        w.b->data[w.b->len] = '\0';
    if (w.rc != TG_OK)
        return tg_fail(err, w.rc, TG_NO_OFFSET, "out of memory writing a decision");
    return TG_OK;
}
