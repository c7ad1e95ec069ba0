/*
 * tg_record.c -- the decision-log record of a decision (docs/audit.md),
 * written from the decision's parts in one call.  toolgate.audit is the
 * one writer of records for every front end; it calls this for a
 * decision's record, so the members, their order (sorted by key) and the
 * escaping are the ones its Lua wrote before, byte for byte.
 */
#include "toolgate.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    char *out;
    size_t cap, len; /* len: the whole length, also past cap */
} writer_t;

static void put(writer_t *w, const char *s, size_t n)
{
    if (w->len < w->cap) {
        size_t room = w->cap - w->len;
        memcpy(w->out + w->len, s, n < room ? n : room);
    }
    w->len += n;
}

static void put_lit(writer_t *w, const char *s)
{
    put(w, s, strlen(s));
}

/* s as a JSON string, escaped as toolgate.value's quote escapes it */
static void put_string(writer_t *w, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t from = 0;
    put(w, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[6];
        size_t k = 2;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(w, s + from, i - from);
        from = i + 1;
        esc[0] = '\\';
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
            k = 6;
        }
        put(w, esc, k);
    }
    put(w, s + from, n - from);
    put(w, "\"", 1);
}

/* ,"key": (the first member without its comma) */
static void key(writer_t *w, const char *k)
{
    put(w, w->len == 1 ? "\"" : ",\"", w->len == 1 ? 1 : 2);
    put_lit(w, k);
    put(w, "\":", 2);
}

static void member_string(writer_t *w, const char *k, tg_text_t t)
{
    key(w, k);
    put_string(w, t.p, t.n);
}

static void member_string_or_null(writer_t *w, const char *k, tg_text_t t)
{
    key(w, k);
    if (t.p)
        put_string(w, t.p, t.n);
    else
        put(w, "null", 4);
}

static void member_bool(writer_t *w, const char *k, int b)
{
    key(w, k);
    put_lit(w, b ? "true" : "false");
}

static void member_integer(writer_t *w, const char *k, long long v)
{
    char buf[32];
    key(w, k);
    put(w, buf, (size_t)snprintf(buf, sizeof buf, "%lld", v));
}

size_t tg_decision_record(const tg_decision_record_t *r, char *out, size_t cap)
{
    writer_t w = {out, cap, 0};
    char time[64];
    put(&w, "{", 1);
    /* the members in sorted order (byte order of their keys) */
    member_string_or_null(&w, "approval_id", r->approval_id);
    member_bool(&w, "approved", r->approved);
    if (r->arguments.p)
        member_string(&w, "arguments", r->arguments);
    if (r->arguments_bytes >= 0)
        member_integer(&w, "arguments_bytes", r->arguments_bytes);
    if (r->arguments_digest.p)
        member_string(&w, "arguments_digest", r->arguments_digest);
    if (r->arguments_redacted.p) {
        key(&w, "arguments_redacted");
        put(&w, r->arguments_redacted.p, r->arguments_redacted.n);
    }
    if (r->arguments_truncated >= 0)
        member_bool(&w, "arguments_truncated", r->arguments_truncated);
    key(&w, "decision");
    put(&w, r->decision.p ? r->decision.p : "null", r->decision.p ? r->decision.n : 4);
    member_bool(&w, "enforced", r->enforced);
    member_string(&w, "kind", (tg_text_t){"decision", 8});
    member_string(&w, "mode", r->mode);
    member_string(&w, "outcome", r->outcome);
    member_string_or_null(&w, "phase", r->phase);
    member_string_or_null(&w, "principal", r->principal);
    member_string(&w, "route", r->route.p ? r->route : (tg_text_t){"", 0});
    member_string(&w, "source", r->source);
    if (r->span_id.p)
        member_string(&w, "span_id", r->span_id);
    key(&w, "time");
    put(&w, time, (size_t)snprintf(time, sizeof time, "%.3f", r->time));
    if (r->trace_id.p)
        member_string(&w, "trace_id", r->trace_id);
    if (r->worker >= 0)
        member_integer(&w, "worker", r->worker);
    put(&w, "}", 1);
    return w.len;
}
