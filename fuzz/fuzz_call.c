/*
 * fuzz_call.c -- tool-call decoding in every format and shape, then the
 * Resolution Rung against a small fixed registry (made once per process).
 *
 * Invariants: a decode succeeds with calls that each have a name and an
 * object of arguments, or fails with a named code and no set; what
 * auto-detection reads as family F decodes alike (shape, calls, names,
 * servers, arguments) when F is asked for; a line that two explicit
 * families both decode is refused under auto (never read two ways); every
 * call of a line, its object written canonically and decoded alone in its
 * family, is the same call (each call of an envelope is a strict call of
 * its format); the rung returns OK or a limit code, and when it resolves a
 * tool and reports no finding, the tool's input schema really accepts the
 * arguments (nothing out of schema gets through) -- with and without H5
 * reporting.  Then the whole pipeline in the core (tg_check,
 * tg_check_next), with a custom stage the input answers: it decides
 * exactly the calls the decoder finds, one decision each with its index.
 */
#include "fuzz.h"

/* Two servers, one shared name (ambiguous bare calls), a tool without
 * arguments, and the keywords a real registry uses. */
static const char *const REGISTRY[][3] = {
    {"fs", "read",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"pattern\":\"^/\","
     "\"x-toolgate-canonical\":\"path\"},\"head\":{\"type\":\"integer\",\"minimum\":0},"
     "\"encoding\":{\"enum\":[\"utf-8\",\"latin1\"]}},\"required\":[\"path\"]}"},
    {"fs", "write",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"minLength\":1},"
     "\"content\":{\"type\":\"string\",\"maxLength\":64},\"mode\":{\"const\":\"append\"}},"
     "\"required\":[\"path\",\"content\"],\"dependentRequired\":{\"mode\":[\"content\"]}}"},
    {"web", "read",
     "{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\",\"format\":\"uri\"}},"
     "\"required\":[\"url\"]}"},
    {"web", "fetch",
     "{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\",\"format\":\"uri\"},"
     "\"headers\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
     "\"propertyNames\":{\"pattern\":\"^[A-Za-z-]+$\"},\"maxProperties\":4},"
     "\"retries\":{\"type\":\"number\",\"multipleOf\":0.5,\"exclusiveMaximum\":10}},"
     "\"required\":[\"url\"]}"},
    {"mem", "create",
     "{\"type\":\"object\",\"$defs\":{\"entity\":{\"type\":\"object\",\"properties\":{"
     "\"name\":{\"type\":\"string\"},\"entityType\":{\"type\":\"string\"},\"tags\":{\"type\":"
     "\"array\",\"items\":{\"type\":\"string\"},\"uniqueItems\":true,\"maxItems\":8}},"
     "\"required\":[\"name\",\"entityType\"]}},\"properties\":{\"entities\":{\"type\":\"array\","
     "\"items\":{\"$ref\":\"#/$defs/entity\"},\"minItems\":1},\"when\":{\"anyOf\":[{\"type\":"
     "\"string\",\"format\":\"date-time\"},{\"type\":\"null\"}]},\"id\":{\"oneOf\":[{\"type\":"
     "\"integer\"},{\"type\":\"string\",\"format\":\"uuid\"}]},\"note\":{\"not\":{\"type\":"
     "\"number\"}}},\"patternProperties\":{\"^x-\":{\"type\":\"boolean\"}},"
     "\"required\":[\"entities\"]}"},
    {"", "noargs", NULL},
    {"", "open", "{\"type\":\"object\",\"additionalProperties\":true}"},
};

static tg_registry_t *registry(tg_engine_t *e)
{
    static tg_registry_t *r;
    if (r)
        return r;
    r = tg_registry_new(e, NULL);
    FUZZ_CHECK(r != NULL);
    for (size_t i = 0; i < sizeof REGISTRY / sizeof REGISTRY[0]; i++) {
        tg_doc_t *d = NULL;
        tg_error_t err;
        size_t index;
        const char *s = REGISTRY[i][2];
        if (s && tg_parse(e, s, strlen(s), &d, &err) != TG_OK) {
            fprintf(stderr, "registry schema %zu: %s\n", i, err.message);
            abort();
        }
        if (tg_registry_add(r, REGISTRY[i][0], strlen(REGISTRY[i][0]), REGISTRY[i][1],
                            strlen(REGISTRY[i][1]), "", 0, d ? tg_doc_root(d) : NULL, NULL, NULL,
                            &index, &err) != TG_OK) {
            fprintf(stderr, "registry tool %zu: %s\n", i, err.message);
            abort();
        }
        tg_doc_free(d);
    }
    return r;
}

static int same_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    if (!a || !b)
        return a == b;
    return alen == blen && memcmp(a, b, alen) == 0;
}

static void rung(tg_engine_t *e, const tg_call_t *c)
{
    tg_registry_t *r = registry(e);
    static tg_rung_result_t res, res_also; /* large: keep them off the stack */
    tg_error_t err;
    size_t slen = 0, nlen = 0, rlen = 0;
    const char *server = tg_call_server(c, &slen);
    const char *name = tg_call_name(c, &nlen);
    const tg_value_t *args = tg_call_arguments(c);
    int rc = tg_rung_check(e, r, server, slen, name, nlen, args, 0, &res, &err);
    int rc_also;

    if (rc != TG_OK) {
        fuzz_check_error(&err, rc);
        FUZZ_CHECK(rc == TG_E_VALIDATION_LIMIT || rc == TG_E_REGEX_LIMIT);
        return;
    }
    FUZZ_CHECK(res.resolution == TG_RESOLVED || res.resolution == TG_UNKNOWN ||
               res.resolution == TG_AMBIGUOUS);
    if (res.resolution == TG_AMBIGUOUS)
        FUZZ_CHECK(server == NULL && res.n_candidates > 1);
    if (res.resolution != TG_RESOLVED)
        return;
    FUZZ_CHECK(res.tool < tg_registry_count(r));
    FUZZ_CHECK(same_bytes(tg_registry_name(r, res.tool, &rlen), rlen, name, nlen));
    FUZZ_CHECK(res.n_findings <= TG_RUNG_MAX_FINDINGS);

    /* An accept must be an accept of the schema itself. */
    if (res.n_findings == 0) {
        tg_finding_t f;
        size_t count = 99;
        int vrc = tg_validate(e, tg_registry_input_schema(r, res.tool), args, &f, 1, &count, &err);
        FUZZ_CHECK(vrc == TG_OK && count == 0);
    }
    rc_also = tg_rung_check(e, r, server, slen, name, nlen, args, 1, &res_also, &err);
    FUZZ_CHECK(rc_also == TG_OK);
    FUZZ_CHECK(res_also.resolution == TG_RESOLVED && res_also.tool == res.tool);
    FUZZ_CHECK((res_also.n_findings == 0) == (res.n_findings == 0));
    FUZZ_CHECK(res_also.n_also <= TG_RUNG_MAX_FINDINGS);
    for (size_t i = 0; i < res_also.n_also; i++)
        FUZZ_CHECK(res_also.also[i] != res.tool && res_also.also[i] < tg_registry_count(r));
}

/* The whole pipeline in the core: rung, a custom stage the fuzzer answers
 * from the input's last byte, the gate, the verifier.  Whatever the bytes:
 * a decision per call the decoder finds, in order, each with its index
 * (one reject without index for a line that does not decode or whose
 * context is refused), canonical JSON that says what the outcome says,
 * and an accept only of a call that decodes and that its tool's schema
 * accepts. */
static void pipeline(tg_engine_t *e, const uint8_t *data, size_t size, const tg_calls_t *detected)
{
    static tg_policy_t *p;
    static tg_context_t *ctx;
    static tg_decider_t *d;
    static const char policy[] =
        "{\"version\":\"f@1\",\"registry_hash\":\"r\",\"risk_levels\":[\"low\",\"high\"],"
        "\"stages\":[{\"stage\":\"rung\"},{\"stage\":\"custom\",\"name\":\"ask\",\"code\":\"ASK\"},"
        "{\"stage\":\"gate\"},{\"stage\":\"verifier\"}],\"require_contract\":true,\"tools\":["
        "{\"risk\":\"low\",\"effects\":[]},{\"risk\":\"high\",\"scopes\":[\"fs:write\"]},"
        "{\"risk\":\"low\",\"effects\":[]},{},{\"scopes\":[\"mem:write\"],\"effects\":[]},{},"
        "{\"risk\":\"low\"}]}";
    static const char context[] = "{\"scopes\":[\"fs:read\",\"mem:write\"],\"max_risk\":\"low\"}";
    int flags = size && (data[0] & 1) ? TG_CHECK_TRUST_CONTEXT : 0;
    int answer = size ? data[size - 1] % 3 : 0; /* pass, reject, defer */
    size_t n = 0;
    int line_refused = 0;
    tg_outcome_t o;
    tg_error_t err;
    int rc;

    if (!p) {
        FUZZ_CHECK(tg_policy_new(e, registry(e), policy, sizeof policy - 1, &p, &err) == TG_OK);
        FUZZ_CHECK(tg_context_new(p, context, sizeof context - 1, &ctx, &err) == TG_OK);
        FUZZ_CHECK((d = tg_decider_new(e, &err)) != NULL);
    }
    rc = tg_check(d, p, ctx, (const char *)data, size, TG_FORMAT_AUTO, flags, 1, &o, &err);
    for (;;) {
        tg_doc_t *doc;
        char want[40];
        while (rc == TG_OK && o.status == TG_NEEDS_STAGE)
            rc = tg_check_answer(d,
                                 answer == 0   ? -1
                                 : answer == 1 ? TG_REJECT
                                               : TG_DEFER,
                                 "ASK", 3, (const char *)data, size < 40 ? size : 40, &o, &err);
        FUZZ_CHECK(rc == TG_OK);
        if (o.status == TG_NO_MORE_CALLS)
            break;
        FUZZ_CHECK(o.status == TG_DECIDED);
        FUZZ_CHECK(o.json[o.json_len] == '\0');
        FUZZ_CHECK(tg_parse(e, o.json, o.json_len, &doc, &err) == TG_OK);
        {
            tg_buf_t b;
            const tg_value_t *v = tg_get(tg_doc_root(doc), "verdict", 7), *c;
            static const char *const names[] = {"accept", "reject", "defer"};
            size_t len;
            const char *s = tg_str(v, &len);
            tg_buf_init(&b, e);
            /* canonical already, with exact numbers: an echoed id keeps
             * every digit, which plain RFC 8785 would round */
            FUZZ_CHECK(tg_canon_value_mode(tg_doc_root(doc), TG_CANON_EXACT, &b, &err) == TG_OK);
            FUZZ_CHECK(same_bytes(b.data, b.len, o.json, o.json_len));
            tg_buf_free(&b);
            FUZZ_CHECK(s && same_bytes(s, len, names[o.verdict], strlen(names[o.verdict])));
            c = tg_get(tg_doc_root(doc), "code", 4);
            s = tg_str(c, &len);
            FUZZ_CHECK(o.verdict == TG_ACCEPT ? c == NULL
                                              : (s && same_bytes(s, len, o.code, strlen(o.code))));
            line_refused |= n == 0 && !tg_get(tg_doc_root(doc), "index", 5);
        }
        tg_doc_free(doc);
        snprintf(want, sizeof want, "\"index\":%zu,", n);
        if (line_refused) /* the line did not decode, or its context is refused */
            FUZZ_CHECK(n == 0 && o.verdict == TG_REJECT && strcmp(o.stage, "decode") == 0);
        else
            FUZZ_CHECK(detected && n < tg_calls_count(detected) && strstr(o.json, want));
        if (o.verdict == TG_ACCEPT) {
            static tg_rung_result_t res;
            const tg_call_t *call = tg_calls_at(detected, n);
            size_t slen, nlen;
            const char *server, *name;
            FUZZ_CHECK(call != NULL && answer == 0);
            FUZZ_CHECK(!tg_call_context(call) || (flags & TG_CHECK_TRUST_CONTEXT));
            server = tg_call_server(call, &slen);
            name = tg_call_name(call, &nlen);
            FUZZ_CHECK(tg_rung_check(e, registry(e), server, slen, name, nlen,
                                     tg_call_arguments(call), 0, &res, &err) == TG_OK);
            FUZZ_CHECK(res.resolution == TG_RESOLVED && res.n_findings == 0);
        }
        n++;
        rc = tg_check_next(d, &o, &err);
    }
    FUZZ_CHECK(line_refused ? n == 1 : detected && n == tg_calls_count(detected));
}

/* The family a shape belongs to. */
static int family_of(int shape)
{
    switch (shape) {
    case TG_SHAPE_NATIVE:
        return TG_FORMAT_NATIVE;
    case TG_SHAPE_ANTHROPIC:
    case TG_SHAPE_ANTHROPIC_MESSAGE:
        return TG_FORMAT_ANTHROPIC;
    case TG_SHAPE_MCP:
    case TG_SHAPE_MCP_BATCH:
        return TG_FORMAT_MCP;
    default:
        FUZZ_CHECK(shape >= TG_SHAPE_OPENAI && shape <= TG_SHAPE_OPENAI_RESPONSES);
        return TG_FORMAT_OPENAI;
    }
}

static int same_canon(tg_engine_t *e, const tg_value_t *a, const tg_value_t *b)
{
    tg_buf_t x, y;
    int same;
    tg_buf_init(&x, e);
    tg_buf_init(&y, e);
    FUZZ_CHECK(tg_canon_value(a, &x, NULL) == TG_OK && tg_canon_value(b, &y, NULL) == TG_OK);
    same = same_bytes(x.data, x.len, y.data, y.len);
    tg_buf_free(&x);
    tg_buf_free(&y);
    return same;
}

static int same_call(tg_engine_t *e, const tg_call_t *a, const tg_call_t *b)
{
    size_t al, bl;
    const char *as = tg_call_name(a, &al), *bs = tg_call_name(b, &bl);
    if (!same_bytes(as, al, bs, bl))
        return 0;
    as = tg_call_server(a, &al);
    bs = tg_call_server(b, &bl);
    return same_bytes(as, al, bs, bl) && tg_call_format_of(a) == tg_call_format_of(b) &&
           same_canon(e, tg_call_arguments(a), tg_call_arguments(b));
}

/* Every call of s is well-formed and a strict call of its family alone;
 * the rung runs on the first few. */
static void check_set(tg_engine_t *e, const tg_calls_t *s)
{
    int family = family_of(tg_calls_shape(s));
    tg_buf_t b;
    tg_buf_init(&b, e);
    FUZZ_CHECK(tg_calls_at(s, tg_calls_count(s)) == NULL);
    for (size_t i = 0; i < tg_calls_count(s); i++) {
        const tg_call_t *c = tg_calls_at(s, i);
        tg_call_t *alone = NULL;
        tg_error_t err;
        size_t len;
        FUZZ_CHECK(c != NULL && tg_call_format_of(c) == family);
        FUZZ_CHECK(tg_call_shape(c) == tg_calls_shape(s));
        FUZZ_CHECK(tg_call_name(c, &len) != NULL && len > 0);
        FUZZ_CHECK(tg_type_of(tg_call_arguments(c)) == TG_OBJECT);
        FUZZ_CHECK(tg_type_of(tg_call_object(c)) == TG_OBJECT);
        tg_buf_reset(&b);
        FUZZ_CHECK(tg_canon_value(tg_call_object(c), &b, NULL) == TG_OK);
        if (tg_call_decode(e, b.data, b.len, family, &alone, &err) != TG_OK) {
            fprintf(stderr, "call %zu alone: %s\n", i, err.message);
            FUZZ_CHECK(!"a call of the line does not decode alone");
        }
        FUZZ_CHECK(same_call(e, c, alone));
        tg_call_free(alone);
        if (i < 4)
            rung(e, c);
    }
    tg_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_engine_t *e = fuzz_engine();
    tg_calls_t *detected = NULL;
    tg_error_t err;
    int rc, decoded = 0, auto_family = 0, auto_family_ok = 0;

    rc = tg_calls_decode(e, (const char *)data, size, TG_FORMAT_AUTO, &detected, &err);
    if (rc != TG_OK) {
        fuzz_check_error(&err, rc);
        FUZZ_CHECK(detected == NULL);
    } else {
        auto_family = family_of(tg_calls_shape(detected));
        check_set(e, detected);
    }

    for (int format = TG_FORMAT_NATIVE; format <= TG_FORMAT_MCP; format++) {
        tg_calls_t *s = (tg_calls_t *)1;
        rc = tg_calls_decode(e, (const char *)data, size, format, &s, &err);
        if (rc != TG_OK) {
            fuzz_check_error(&err, rc);
            FUZZ_CHECK(s == NULL);
            continue;
        }
        decoded++;
        FUZZ_CHECK(family_of(tg_calls_shape(s)) == format);
        if (format == auto_family) {
            /* what auto-detection read as this family decodes alike as it */
            auto_family_ok = 1;
            FUZZ_CHECK(tg_calls_shape(s) == tg_calls_shape(detected));
            FUZZ_CHECK(tg_calls_count(s) == tg_calls_count(detected));
            for (size_t i = 0; i < tg_calls_count(s); i++)
                FUZZ_CHECK(same_call(e, tg_calls_at(s, i), tg_calls_at(detected, i)));
        } else {
            check_set(e, s);
        }
        tg_calls_free(s);
    }
    /* a line two families read is never guessed at */
    if (decoded >= 2)
        FUZZ_CHECK(detected == NULL);
    FUZZ_CHECK(!detected || auto_family_ok);
    pipeline(e, data, size, detected);
    tg_calls_free(detected);
    return 0;
}
