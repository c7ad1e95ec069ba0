/*
 * fuzz_schema_validate.c -- compile a schema, validate an instance.
 *
 * Input: "schema\0instance" (JSON text never holds a raw NUL, so the first
 * NUL splits); without a NUL the one document is both schema and instance.
 * The schema is compiled in closed-world mode (formats asserted), in
 * standard mode, and in standard mode with formats asserted, and the
 * instance validated against each.
 *
 * Invariants: validation returns OK (then *count findings, at most max, H2
 * before H3, texts NUL-terminated) or a limit code; it is deterministic and
 * the verdict does not depend on how many findings are asked for (the one
 * finding of a walk that stops at its first is among the first MAXF); and,
 * in the standard modes for a schema without $ref, {"not": schema} gives the
 * opposite verdict (the silent walk of `not` and the reporting walk must
 * agree -- a failure that left no finding would read as "valid").
 */
#include "fuzz.h"

#define MAXF 8

static void check_findings(const tg_finding_t *f, size_t count)
{
    int seen_h3 = 0;
    FUZZ_CHECK(count <= MAXF);
    for (size_t i = 0; i < count; i++) {
        FUZZ_CHECK(f[i].code == TG_H2 || f[i].code == TG_H3);
        if (f[i].code == TG_H3)
            seen_h3 = 1;
        else
            FUZZ_CHECK(!seen_h3); /* all H2 first */
        FUZZ_CHECK(f[i].keyword != NULL);
        FUZZ_CHECK(memchr(f[i].pointer, '\0', sizeof f[i].pointer) != NULL);
        FUZZ_CHECK(memchr(f[i].schema_pointer, '\0', sizeof f[i].schema_pointer) != NULL);
        FUZZ_CHECK(memchr(f[i].message, '\0', sizeof f[i].message) != NULL);
    }
}

/* Validates; returns -1 when validation stopped at a limit, else 1 (valid)
 * or 0 (invalid). */
static int verdict(tg_engine_t *e, const tg_schema_t *s, const tg_value_t *v)
{
    tg_finding_t f[MAXF], one;
    tg_error_t err;
    size_t count = 99, count1 = 99;
    int rc = tg_validate(e, s, v, f, MAXF, &count, &err);
    int rc1;
    FUZZ_CHECK(fuzz_validate_code(rc));
    if (rc != TG_OK) {
        fuzz_check_error(&err, rc);
        return -1;
    }
    check_findings(f, count);
    rc1 = tg_validate(e, s, v, &one, 1, &count1, &err);
    FUZZ_CHECK(fuzz_validate_code(rc1));
    if (rc1 == TG_OK) {
        int found = count1 == 0;
        FUZZ_CHECK((count == 0) == (count1 == 0));
        for (size_t i = 0; i < count && !found; i++)
            found = f[i].code == one.code && strcmp(f[i].pointer, one.pointer) == 0 &&
                    strcmp(f[i].schema_pointer, one.schema_pointer) == 0 &&
                    strcmp(f[i].message, one.message) == 0;
        FUZZ_CHECK(found);
    }
    return count == 0;
}

/* {"not": schema} as text, or NULL when the schema names $ref (its
 * pointers would move). */
static char *negated(const char *schema, size_t len, size_t *out_len)
{
    static const char pre[] = "{\"not\":", post[] = "}";
    char *t;
    for (size_t i = 0; i + 4 <= len; i++)
        if (memcmp(schema + i, "$ref", 4) == 0)
            return NULL;
    t = malloc(len + sizeof pre + sizeof post);
    if (!t)
        return NULL;
    memcpy(t, pre, sizeof pre - 1);
    memcpy(t + sizeof pre - 1, schema, len);
    memcpy(t + sizeof pre - 1 + len, post, sizeof post - 1);
    *out_len = len + sizeof pre - 1 + sizeof post - 1;
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_engine_t *e = fuzz_engine();
    const char *part[2];
    size_t len[2];
    tg_doc_t *sdoc = NULL, *idoc = NULL;
    tg_error_t err;
    const tg_value_t *inst;

    if (fuzz_split(data, size, part, len, 2) < 2) {
        part[1] = part[0];
        len[1] = len[0];
    }
    if (tg_parse(e, part[0], len[0], &sdoc, &err) != TG_OK)
        return 0;
    if (tg_parse(e, part[1], len[1], &idoc, &err) != TG_OK) {
        tg_doc_free(sdoc);
        return 0;
    }
    inst = tg_doc_root(idoc);

    for (int mode = 0; mode < 3; mode++) {
        tg_schema_options_t opt;
        tg_schema_t *s = NULL;
        int v1, v2;

        tg_schema_options_default(&opt);
        opt.closed = mode == 0;
        opt.assert_formats = mode != 1;
        if (tg_schema_compile(e, tg_doc_root(sdoc), &opt, &s, &err) != TG_OK)
            continue;
        v1 = verdict(e, s, inst);
        v2 = verdict(e, s, inst);
        FUZZ_CHECK(v1 == v2); /* deterministic (the regex cache, the arena spare) */

        if (mode > 0 && v1 >= 0) {
            size_t nlen = 0;
            char *ntext = negated(part[0], len[0], &nlen);
            tg_doc_t *ndoc = NULL;
            tg_schema_t *ns = NULL;
            if (ntext && tg_parse(e, ntext, nlen, &ndoc, &err) == TG_OK &&
                tg_schema_compile(e, tg_doc_root(ndoc), &opt, &ns, &err) == TG_OK) {
                int nv = verdict(e, ns, inst);
                if (nv >= 0 && nv == v1)
                    fprintf(stderr, "schema and {\"not\": schema} agree: %d\n", v1);
                FUZZ_CHECK(nv < 0 || nv != v1);
            }
            tg_schema_free(ns);
            tg_doc_free(ndoc);
            free(ntext);
        }
        tg_schema_free(s);
    }
    tg_doc_free(idoc);
    tg_doc_free(sdoc);
    return 0;
}
