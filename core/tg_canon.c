/*
 * tg_canon.c -- RFC 8785 (JSON Canonicalization Scheme) writer.
 *
 * Three rules make a document canonical: object members sorted by the
 * UTF-16 code units of their keys; strings written as ECMAScript
 * JSON.stringify writes them (escape only '"', '\\' and U+0000..U+001F, the
 * latter as \b \t \n \f \r or \u00xx in lower case; everything else as raw
 * UTF-8); numbers as ECMAScript Number::toString (tg_number.c).  No
 * whitespace.  The parser already sorted every object, so writing is one
 * walk.
 */
#include "tg_internal.h"

#include <string.h>

/* ---- key order ----------------------------------------------------------- */

/* UTF-8 byte order is code point order; UTF-16 order differs only in that
 * U+E000..U+FFFF (lead bytes EE, EF) sort after the supplementary planes
 * (lead bytes F0..F4, surrogate pairs D800..DFFF in UTF-16).  The first
 * differing byte of two valid strings is either inside the same sequence
 * or a lead byte in both, so re-ranking those two lead bytes suffices. */
static unsigned utf16_rank(unsigned char c)
{
    return (c == 0xEE || c == 0xEF) ? c + 0x10u : c;
}

int tg_key_compare(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (x != y) {
            unsigned rx = utf16_rank(x), ry = utf16_rank(y);
            return rx < ry ? -1 : 1;
        }
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

static int member_less(const tg_value_t *a, const tg_value_t *b)
{
    return tg_key_compare(a->key, a->key_len, b->key, b->key_len) < 0;
}

/* Stable merge sort; small runs by insertion (objects are mostly small). */
void tg_sort_members(tg_value_t *items, size_t n, tg_value_t *tmp)
{
    if (n <= 8) {
        for (size_t i = 1; i < n; i++) {
            tg_value_t x = items[i];
            size_t j = i;
            while (j > 0 && member_less(&x, &items[j - 1])) {
                items[j] = items[j - 1];
                j--;
            }
            items[j] = x;
        }
        return;
    }
    {
        size_t half = n / 2, i = 0, j = half, k = 0;
        tg_sort_members(items, half, tmp);
        tg_sort_members(items + half, n - half, tmp);
        while (i < half && j < n)
            tmp[k++] = member_less(&items[j], &items[i]) ? items[j++] : items[i++];
        while (i < half)
            tmp[k++] = items[i++];
        while (j < n)
            tmp[k++] = items[j++];
        memcpy(items, tmp, n * sizeof *items);
    }
}

/* ---- writer -------------------------------------------------------------- */

/* Eight bytes at a time: nonzero when x holds '"', '\\' or a control
 * character (non-ASCII needs no escape in canonical form). */
static uint64_t needs_escape8(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    return (((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b)) & high;
}

int tg_canon_string(tg_buf_t *out, const char *s, size_t len, tg_error_t *err)
{
    static const char hex[] = "0123456789abcdef";
    const char *p = s, *end = s + len;
    int rc;

    if (len > SIZE_MAX - 2)
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "string too large to write");
    /* Room for the common case (nothing to escape) in one go. */
    if (len + 2 > out->cap - out->len && (rc = tg_buf_reserve(out, len + 2, err)) != TG_OK)
        return rc;
    out->data[out->len++] = '"';
    for (;;) {
        const char *run = p;
        unsigned char c = 0;
        int exact = 0; /* p is already on the byte to escape */
        while (end - p >= 8) {
            uint64_t x, m;
            memcpy(&x, p, 8);
            m = needs_escape8(x);
            if (m) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                p += __builtin_ctzll(m) >> 3;
                exact = 1;
#endif
                break;
            }
            p += 8;
        }
        if (!exact)
            while (p < end && (unsigned char)*p >= 0x20 && *p != '"' && *p != '\\')
                p++;
        if (p < end)
            c = (unsigned char)*p;
        if ((rc = tg_buf_put(out, run, (size_t)(p - run), err)) != TG_OK)
            return rc;
        if (p == end)
            break;
        {
            char esc[6];
            size_t n = 2;
            esc[0] = '\\';
            switch (c) {
            case '"': esc[1] = '"'; break;
            case '\\': esc[1] = '\\'; break;
            case '\b': esc[1] = 'b'; break;
            case '\t': esc[1] = 't'; break;
            case '\n': esc[1] = 'n'; break;
            case '\f': esc[1] = 'f'; break;
            case '\r': esc[1] = 'r'; break;
            default:
                esc[1] = 'u';
                esc[2] = '0';
                esc[3] = '0';
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                n = 6;
            }
            if ((rc = tg_buf_put(out, esc, n, err)) != TG_OK)
                return rc;
            p++;
        }
    }
    return tg_buf_put(out, "\"", 1, err);
}

/* The digits of a number literal and its decimal point position (value =
 * 0.digits x 10^n), when it has at most 15 significant digits and n is in
 * [-300, 300].  Such a literal names a normal double, and no other decimal
 * of at most 15 digits names the same double (DBL_DIG), so its own digits
 * are the shortest that round-trip: ECMAScript's choice, without digit
 * generation.  Returns the digit count, 0 for a zero value, -1 otherwise. */
static int literal_digits(const char *t, size_t len, char *digits, int *n)
{
    const char *p = t + (*t == '-'), *end = t + len;
    int nd = 0, sig = 0, point = 0, seen = 0;
    long x = 0;

    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (!seen && *p == '0')
            continue;
        seen = 1;
        point++;
        if (*p != '0' && nd >= 15)
            return -1;
        if (nd < 15)
            digits[nd] = *p;
        nd++;
        if (*p != '0')
            sig = nd;
    }
    if (p < end && *p == '.') {
        for (p++; p < end && *p >= '0' && *p <= '9'; p++) {
            if (!seen && *p == '0') {
                point--;
                continue;
            }
            seen = 1;
            if (*p != '0' && nd >= 15)
                return -1;
            if (nd < 15)
                digits[nd] = *p;
            nd++;
            if (*p != '0')
                sig = nd;
        }
    }
    if (!seen)
        return 0;
    if (p < end) { /* exponent */
        int neg = 0;
        p++;
        if (*p == '+' || *p == '-')
            neg = *p++ == '-';
        for (; p < end; p++) {
            x = x * 10 + (*p - '0');
            if (x > 100000)
                return -1;
        }
        if (neg)
            x = -x;
    }
    x += point;
    if (x < -300 || x > 300)
        return -1;
    *n = (int)x;
    return sig;
}

static int write_number(tg_buf_t *out, const tg_value_t *v, tg_error_t *err)
{
    char buf[TG_NUMBER_BUF], digits[16];
    int n, nd = literal_digits(v->p.text, v->len, digits, &n);
    size_t len;

    if (nd == 0)
        return tg_buf_put(out, "0", 1, err); /* every spelling of zero, -0 included */
    if (nd > 0)
        len = tg_number_layout(buf, v->p.text[0] == '-', digits, nd, n);
    else if ((len = tg_number_format(v->num, buf)) == 0)
        /* the parser never yields these; values from elsewhere might */
        return tg_fail(err, TG_E_NONFINITE, v->offset, "NaN and Infinity have no JSON form");
    return tg_buf_put(out, buf, len, err);
}

static int write_value(const tg_value_t *v, tg_buf_t *out, tg_error_t *err)
{
    int rc;
    switch (v->type) {
    case TG_NULL:
        return tg_buf_put(out, "null", 4, err);
    case TG_FALSE:
        return tg_buf_put(out, "false", 5, err);
    case TG_TRUE:
        return tg_buf_put(out, "true", 4, err);
    case TG_NUMBER:
        return write_number(out, v, err);
    case TG_STRING:
        return tg_canon_string(out, v->p.str, v->len, err);
    case TG_ARRAY:
        if ((rc = tg_buf_put(out, "[", 1, err)) != TG_OK)
            return rc;
        for (uint32_t i = 0; i < v->len; i++) {
            if (i && (rc = tg_buf_put(out, ",", 1, err)) != TG_OK)
                return rc;
            if ((rc = write_value(&v->p.items[i], out, err)) != TG_OK)
                return rc;
        }
        return tg_buf_put(out, "]", 1, err);
    case TG_OBJECT:
        if ((rc = tg_buf_put(out, "{", 1, err)) != TG_OK)
            return rc;
        for (uint32_t i = 0; i < v->len; i++) {
            const tg_value_t *m = &v->p.items[i];
            if (i && (rc = tg_buf_put(out, ",", 1, err)) != TG_OK)
                return rc;
            if ((rc = tg_canon_string(out, m->key, m->key_len, err)) != TG_OK ||
                (rc = tg_buf_put(out, ":", 1, err)) != TG_OK ||
                (rc = write_value(m, out, err)) != TG_OK)
                return rc;
        }
        return tg_buf_put(out, "}", 1, err);
    default:
        return tg_fail(err, TG_E_ARG, v->offset, "corrupt value");
    }
}

int tg_canon_value(const tg_value_t *v, tg_buf_t *out, tg_error_t *err)
{
    tg_error_clear(err);
    if (!v || !out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "NULL value or buffer");
    return write_value(v, out, err);
}

int tg_canon(tg_engine_t *e, const char *json, size_t len, tg_buf_t *out,
             tg_error_t *err)
{
    tg_doc_t *doc;
    int rc = tg_parse(e, json, len, &doc, err);
    if (rc != TG_OK)
        return rc;
    rc = tg_canon_value(tg_doc_root(doc), out, err);
    tg_doc_free(doc);
    return rc;
}
