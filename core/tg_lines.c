/*
 * tg_lines.c -- the JSON Lines commands in one call per chunk: the
 * canonical form (or its hash) of each line, and a schema's verdict on
 * each line.  A host reads its input in large pieces and hands them over;
 * the per-line work never crosses a binding.  (tg_check_lines, the same
 * for calls, lives with the check pipeline in tg_decide.c.)
 *
 * Each stops at the first line that fails, with that line's error: the
 * host reports it (the line's number and the byte offset) and calls again
 * from where it stopped, so a bad line never hides the ones after it.
 */
#include "tg_internal.h"

int tg_canon_lines(tg_engine_t *e, const char *text, size_t len, int hash, size_t *line,
                   size_t *used, tg_buf_t *out, tg_error_t *err)
{
    tg_buf_t scratch;
    size_t at = 0, n;
    const char *s;
    int rc = TG_OK;

    tg_error_clear(err);
    if (!e || !text || !line || !used || !out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "engine, text, line, used and out are required");
    tg_buf_init(&scratch, e);
    while (rc == TG_OK && (s = tg_line_next(text, len, &at, &n)) != NULL) {
        *used = at;
        ++*line;
        if (tg_line_blank(s, n))
            continue;
        if (!hash) {
            if ((rc = tg_canon(e, s, n, out, err)) == TG_OK)
                rc = tg_buf_put(out, "\n", 1, err);
            continue;
        }
        tg_buf_reset(&scratch);
        if ((rc = tg_canon(e, s, n, &scratch, err)) == TG_OK &&
            (rc = tg_buf_reserve(out, TG_HASH_HEX, err)) == TG_OK) {
            tg_hash128_t h;
            tg_hash128(scratch.data, scratch.len, &h);
            tg_hash128_hex(&h, out->data + out->len);
            out->data[out->len + 32] = '\n';
            out->len += 33;
        }
    }
    tg_buf_free(&scratch);
    if (rc == TG_OK)
        *used = at;
    return rc;
}

/* {"code","keyword","message","path","schema_path"}, in key order. */
static int write_finding(tg_buf_t *out, const tg_finding_t *f, tg_error_t *err)
{
    int rc;
    if ((rc = tg_buf_put(out, "{\"code\":", 8, err)) != TG_OK ||
        (rc = tg_buf_put(out, f->code == TG_H2 ? "\"H2\"" : "\"H3\"", 4, err)) != TG_OK ||
        (rc = tg_buf_put(out, ",\"keyword\":", 11, err)) != TG_OK ||
        (rc = tg_canon_string(out, f->keyword, strlen(f->keyword), err)) != TG_OK ||
        (rc = tg_buf_put(out, ",\"message\":", 11, err)) != TG_OK ||
        (rc = tg_canon_string(out, f->message, strlen(f->message), err)) != TG_OK ||
        (rc = tg_buf_put(out, ",\"path\":", 8, err)) != TG_OK ||
        (rc = tg_canon_string(out, f->pointer, strlen(f->pointer), err)) != TG_OK ||
        (rc = tg_buf_put(out, ",\"schema_path\":", 15, err)) != TG_OK ||
        (rc = tg_canon_string(out, f->schema_pointer, strlen(f->schema_pointer), err)) != TG_OK)
        return rc;
    return tg_buf_put(out, "}", 1, err);
}

int tg_validate_lines(tg_engine_t *e, const tg_schema_t *schema, const char *text, size_t len,
                      size_t *line, size_t *used, tg_buf_t *out, tg_error_t *err)
{
    tg_finding_t findings[TG_RUNG_MAX_FINDINGS];
    size_t at = 0, n;
    const char *s;
    int rc = TG_OK;

    tg_error_clear(err);
    if (!e || !schema || !text || !line || !used || !out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "engine, schema, text, line, used and out are required");
    while (rc == TG_OK && (s = tg_line_next(text, len, &at, &n)) != NULL) {
        tg_doc_t *doc;
        size_t count = 0;
        char digits[20];
        *used = at;
        ++*line;
        if (tg_line_blank(s, n))
            continue;
        if ((rc = tg_parse(e, s, n, &doc, err)) != TG_OK)
            break;
        rc = tg_validate(e, schema, tg_doc_root(doc), findings, TG_RUNG_MAX_FINDINGS, &count, err);
        tg_doc_free(doc);
        if (rc != TG_OK)
            break;
        if ((rc = tg_buf_put(out, "{\"errors\":[", 11, err)) != TG_OK)
            break;
        for (size_t i = 0; i < count && rc == TG_OK; i++)
            if ((!i || (rc = tg_buf_put(out, ",", 1, err)) == TG_OK))
                rc = write_finding(out, &findings[i], err);
        if (rc == TG_OK && (rc = tg_buf_put(out, "],\"line\":", 9, err)) == TG_OK &&
            (rc = tg_buf_put(out, digits, (size_t)tg_u64_text(*line, digits), err)) == TG_OK)
            rc = count ? tg_buf_put(out, ",\"valid\":false}\n", 16, err)
                       : tg_buf_put(out, ",\"valid\":true}\n", 15, err);
    }
    if (rc == TG_OK)
        *used = at;
    return rc;
}
