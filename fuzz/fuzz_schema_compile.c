/*
 * fuzz_schema_compile.c -- the JSON Schema compiler on any document.
 *
 * The input is parsed and, when it is JSON, compiled in closed-world mode
 * (formats asserted) and in standard mode.  Invariants: compilation
 * succeeds or fails with a schema code (or NOMEM) and never leaks; a
 * compiled schema then validates its own text as an instance (any schema
 * is also a JSON value) and returns OK or a limit code, never anything else.
 */
#include "fuzz.h"

static int compile_code(int rc)
{
    return rc == TG_E_SCHEMA_KEYWORD || rc == TG_E_SCHEMA || rc == TG_E_SCHEMA_REF ||
           rc == TG_E_PATTERN || rc == TG_E_PATTERN_TOO_LONG || rc == TG_E_UNSUPPORTED_FORMAT ||
           rc == TG_E_NOMEM;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_engine_t *e = fuzz_engine();
    tg_doc_t *doc = NULL;
    tg_error_t err;

    if (tg_parse(e, (const char *)data, size, &doc, &err) != TG_OK)
        return 0;
    for (int mode = 0; mode < 2; mode++) {
        tg_schema_options_t opt;
        tg_schema_t *s = (tg_schema_t *)1;
        tg_finding_t f[4];
        size_t count = 99;
        int rc;

        tg_schema_options_default(&opt);
        opt.closed = mode == 0;
        opt.assert_formats = mode == 0;
        rc = tg_schema_compile(e, tg_doc_root(doc), &opt, &s, &err);
        if (rc != TG_OK) {
            fuzz_check_error(&err, rc);
            FUZZ_CHECK(compile_code(rc));
            continue;
        }
        FUZZ_CHECK(s != NULL && s != (tg_schema_t *)1);
        rc = tg_validate(e, s, tg_doc_root(doc), f, 4, &count, &err);
        FUZZ_CHECK(fuzz_validate_code(rc));
        if (rc == TG_OK)
            FUZZ_CHECK(count <= 4);
        tg_schema_free(s);
    }
    tg_doc_free(doc);
    return 0;
}
