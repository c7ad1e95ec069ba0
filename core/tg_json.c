/*
 * tg_json.c -- strict RFC 8259 parser into an arena DOM.
 *
 * Strict means: exactly one value with optional surrounding whitespace
 * (space, tab, LF, CR); no BOM, comments, trailing commas, single quotes,
 * NaN/Infinity, leading zeros or bare control characters; strings must be
 * well-formed UTF-8 and \u escapes must pair surrogates correctly; an object
 * must not name a key twice (RFC 8785 requires all of this of its input).
 *
 * The input is copied once into the document's arena; strings are decoded
 * in place in that copy (a decoded string is never longer than its escaped
 * form), so a string costs no allocation of its own.  Children of a
 * container are collected on a scratch stack and moved into one contiguous
 * arena block when the container closes; objects are then sorted into
 * RFC 8785 order, which also puts duplicate keys side by side.
 *
 * Recursion depth is bounded by max_depth (at most TG_LIMIT_MAX_DEPTH).
 */
#include "tg_internal.h"

#include <string.h>

#define LOCAL_STACK 64 /* children held before the scratch stack goes to the heap */
#define SCAN_PAD 8     /* NUL bytes after the input copy */

typedef struct parser {
    tg_engine_t *e;
    const tg_limits_t *lim;
    char *base;      /* arena copy of the input, NUL-terminated */
    char *p;         /* read position */
    char *end;       /* one past the last input byte */
    tg_arena *arena;
    tg_value_t *stack; /* children of the open containers */
    size_t stack_len, stack_cap;
    int stack_heap;    /* stack was allocated with the engine's allocator */
    size_t depth;
    tg_error_t *err;
} parser;

static int fail_at(parser *P, const char *at, int code, const char *msg)
{
    return tg_fail(P->err, code, (size_t)(at - P->base), "%s", msg);
}

static void skip_ws(parser *P)
{
    char *p = P->p;
    while (p < P->end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    P->p = p;
}

/* ---- scratch stack ----------------------------------------------------- */

static int stack_reserve(parser *P, size_t extra)
{
    size_t need, cap;
    tg_value_t *s;
    if (extra <= P->stack_cap - P->stack_len)
        return TG_OK;
    need = P->stack_len + extra;
    cap = P->stack_cap * 2;
    if (cap < need)
        cap = need;
    if (cap > SIZE_MAX / sizeof *s)
        return fail_at(P, P->p, TG_E_NOMEM, "out of memory");
    s = tg_mem_realloc(P->e, P->stack_heap ? P->stack : NULL,
                       P->stack_heap ? P->stack_cap * sizeof *s : 0,
                       cap * sizeof *s);
    if (!s)
        return fail_at(P, P->p, TG_E_NOMEM, "out of memory");
    if (!P->stack_heap && P->stack_len)
        memcpy(s, P->stack, P->stack_len * sizeof *s);
    P->stack = s;
    P->stack_cap = cap;
    P->stack_heap = 1;
    return TG_OK;
}

/* ---- strings ----------------------------------------------------------- */

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return 0;
    }
    *out = v;
    return 1;
}

/* Length of the well-formed UTF-8 sequence at p (lead byte >= 0x80), or 0
 * (Unicode 15, table 3-7: no overlongs, no surrogates, nothing past
 * U+10FFFF). */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if ((size_t)(end - p) < n)
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

/* Eight bytes at a time: a mask with the high bit set in each byte of x
 * that is '"', '\\', a control character or non-ASCII, i.e. where the
 * string scanner must look closer.  (The classic has-zero-byte tricks: a
 * borrow can only flag bytes above a real hit, so the lowest flag is exact.) */
static uint64_t string_special8(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    return (x | ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b)) & high;
}

/* Advances r to the first byte the string scanner must look at, or to
 * somewhere at or past limit, whichever comes first.  The input copy is
 * NUL-padded, so reading 8 bytes at r is always allowed. */
static inline char *skip_plain(char *r, const char *limit)
{
    for (;;) {
        uint64_t x, m;
        memcpy(&x, r, 8);
        m = string_special8(x);
        if (m) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return r + (__builtin_ctzll(m) >> 3);
#else
            while (!(*r == '"' || *r == '\\' || (unsigned char)*r < 0x20 || (unsigned char)*r >= 0x80))
                r++;
            return r;
#endif
        }
        r += 8;
        if (r >= limit)
            return r;
    }
}

/* P->p is just past the opening quote.  Decodes in place; on success *s and
 * *len describe the decoded bytes and P->p is past the closing quote.
 * Until the first escape nothing moves (w == r); after it, bytes are copied
 * down over the space the escapes freed. */
static int parse_string(parser *P, const char **s, uint32_t *len)
{
    char *start = P->p, *r = P->p, *w = P->p, *end = P->end;
    const size_t max = P->lim->max_string_bytes;

    for (;;) {
        unsigned char c;
        /* Scanning never goes more than one byte past the limit: an
         * oversized string is refused without reading the rest of it. */
        size_t budget;
        if ((size_t)(w - start) > max)
            return fail_at(P, start - 1, TG_E_STRING_TOO_LONG,
                           "string longer than max_string_bytes");
        budget = max + 1 - (size_t)(w - start);
        if (budget > (size_t)(end - r))
            budget = (size_t)(end - r) + 1;
        /* Runs of plain ASCII are the common case. */
        if (w == r) {
            r = skip_plain(r, r + budget);
            if ((size_t)(r - w) > budget)
                r = w + budget;
            w = r;
        } else {
            size_t n = (size_t)(skip_plain(r, r + budget) - r);
            if (n > budget)
                n = budget;
            memmove(w, r, n);
            w += n;
            r += n;
        }
        if ((size_t)(w - start) > max)
            return fail_at(P, start - 1, TG_E_STRING_TOO_LONG,
                           "string longer than max_string_bytes");
        if (r >= end)
            return fail_at(P, r, TG_E_EOF, "unterminated string");
        c = (unsigned char)*r;
        if (c == '"') {
            *s = start;
            *len = (uint32_t)(w - start);
            P->p = r + 1;
            return TG_OK;
        }
        if (c < 0x20)
            return fail_at(P, r, TG_E_CONTROL_CHAR,
                           "control character in string must be escaped");
        if (c >= 0x80) {
            size_t n = utf8_seq((const unsigned char *)r, (const unsigned char *)end);
            if (!n)
                return fail_at(P, r, TG_E_UTF8, "invalid UTF-8 in string");
            if (w != r)
                memmove(w, r, n);
            w += n;
            r += n;
            continue;
        }
        /* backslash */
        if (end - r < 2)
            return fail_at(P, r, TG_E_EOF, "unterminated escape");
        switch (r[1]) {
        case '"': *w++ = '"'; r += 2; continue;
        case '\\': *w++ = '\\'; r += 2; continue;
        case '/': *w++ = '/'; r += 2; continue;
        case 'b': *w++ = '\b'; r += 2; continue;
        case 'f': *w++ = '\f'; r += 2; continue;
        case 'n': *w++ = '\n'; r += 2; continue;
        case 'r': *w++ = '\r'; r += 2; continue;
        case 't': *w++ = '\t'; r += 2; continue;
        case 'u': break;
        default:
            return fail_at(P, r, TG_E_ESCAPE, "invalid escape sequence");
        }
        {
            unsigned cp, lo;
            char *esc = r;
            if (end - r < 6 || !hex4(r + 2, &cp))
                return fail_at(P, r, end - r < 6 ? TG_E_EOF : TG_E_ESCAPE,
                               "\\u must be followed by four hex digits");
            r += 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return fail_at(P, esc, TG_E_SURROGATE,
                               "low surrogate escape without a high surrogate before it");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - r < 6 || r[0] != '\\' || r[1] != 'u' || !hex4(r + 2, &lo) ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return fail_at(P, esc, TG_E_SURROGATE,
                                   "high surrogate escape not followed by a low surrogate escape");
                r += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp < 0x80) {
                *w++ = (char)cp;
            } else if (cp < 0x800) {
                *w++ = (char)(0xC0 | (cp >> 6));
                *w++ = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                *w++ = (char)(0xE0 | (cp >> 12));
                *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *w++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *w++ = (char)(0xF0 | (cp >> 18));
                *w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *w++ = (char)(0x80 | (cp & 0x3F));
            }
        }
    }
}

/* ---- numbers ----------------------------------------------------------- */

static int is_digit(const char *p, const char *end)
{
    return p < end && *p >= '0' && *p <= '9';
}

static int parse_number(parser *P, tg_value_t *v)
{
    char *start = P->p, *p = P->p, *end = P->end;
    int rc;

    if (*p == '-') {
        p++;
        if (p < end && *p == 'I')
            return fail_at(P, start, TG_E_NONFINITE, "-Infinity is not a JSON number");
        if (!is_digit(p, end))
            return fail_at(P, start, TG_E_NUMBER, "minus sign must be followed by a digit");
    }
    if (*p == '0') {
        p++;
        if (is_digit(p, end))
            return fail_at(P, start, TG_E_LEADING_ZERO, "leading zeros are not allowed");
    } else {
        while (is_digit(p, end))
            p++;
    }
    if (p < end && *p == '.') {
        p++;
        if (!is_digit(p, end))
            return fail_at(P, start, TG_E_NUMBER, "decimal point must be followed by a digit");
        while (is_digit(p, end))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!is_digit(p, end))
            return fail_at(P, start, TG_E_NUMBER, "exponent must have digits");
        while (is_digit(p, end))
            p++;
    }
    v->type = TG_NUMBER;
    v->p.text = start;
    v->len = (uint32_t)(p - start);
    rc = tg_number_parse(P->e, start, (size_t)(p - start), &v->num);
    if (rc != TG_OK)
        return fail_at(P, start, rc, "number is outside the range of an IEEE 754 double");
    P->p = p;
    return TG_OK;
}

/* ---- values ------------------------------------------------------------ */

static int parse_value(parser *P, tg_value_t *v);

/* Moves the children pushed since `first` into one arena block. */
static int close_container(parser *P, tg_value_t *v, size_t first)
{
    size_t n = P->stack_len - first;
    tg_value_t *items = NULL;
    if (n) {
        items = tg_arena_alloc(P->arena, n * sizeof *items);
        if (!items)
            return fail_at(P, P->p, TG_E_NOMEM, "out of memory");
        if (v->type == TG_OBJECT && n > 1) {
            /* Sort in place on the stack using the free space above it as
             * the merge buffer, then look for equal neighbours. */
            int rc = stack_reserve(P, n);
            if (rc != TG_OK)
                return rc;
            tg_sort_members(P->stack + first, n, P->stack + P->stack_len);
            for (size_t i = 1; i < n; i++) {
                const tg_value_t *a = &P->stack[first + i - 1], *b = &P->stack[first + i];
                if (a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0) {
                    const tg_value_t *later = a->offset > b->offset ? a : b;
                    return tg_fail(P->err, TG_E_DUPLICATE_KEY, later->offset,
                                   "duplicate object key \"%.*s\"",
                                   (int)(a->key_len > 64 ? 64 : a->key_len), a->key);
                }
            }
        }
        memcpy(items, P->stack + first, n * sizeof *items);
    }
    v->p.items = items;
    v->len = (uint32_t)n;
    P->stack_len = first;
    return TG_OK;
}

static int parse_array(parser *P, tg_value_t *v)
{
    size_t first = P->stack_len;
    v->type = TG_ARRAY;
    P->p++; /* [ */
    skip_ws(P);
    if (P->p < P->end && *P->p == ']') {
        P->p++;
        return close_container(P, v, first);
    }
    for (;;) {
        tg_value_t child;
        int rc;
        if (P->stack_len - first >= P->lim->max_items)
            return fail_at(P, P->p, TG_E_TOO_MANY_ITEMS, "array has more than max_items elements");
        child.key = NULL;
        child.key_len = 0;
        rc = parse_value(P, &child);
        if (rc != TG_OK)
            return rc;
        if ((rc = stack_reserve(P, 1)) != TG_OK)
            return rc;
        P->stack[P->stack_len++] = child;
        skip_ws(P);
        if (P->p >= P->end)
            return fail_at(P, P->p, TG_E_EOF, "unterminated array");
        if (*P->p == ',') {
            P->p++;
            skip_ws(P);
            if (P->p < P->end && *P->p == ']')
                return fail_at(P, P->p, TG_E_SYNTAX, "trailing comma in array");
            continue;
        }
        if (*P->p == ']') {
            P->p++;
            return close_container(P, v, first);
        }
        return fail_at(P, P->p, TG_E_SYNTAX, "expected ',' or ']' in array");
    }
}

static int parse_object(parser *P, tg_value_t *v)
{
    size_t first = P->stack_len;
    v->type = TG_OBJECT;
    P->p++; /* { */
    skip_ws(P);
    if (P->p < P->end && *P->p == '}') {
        P->p++;
        return close_container(P, v, first);
    }
    for (;;) {
        tg_value_t child;
        const char *key;
        uint32_t key_len;
        char *key_at;
        int rc;
        if (P->p >= P->end)
            return fail_at(P, P->p, TG_E_EOF, "unterminated object");
        if (*P->p != '"')
            return fail_at(P, P->p, TG_E_SYNTAX,
                           *P->p == '}' ? "trailing comma in object"
                                        : "expected a string key in object");
        if (P->stack_len - first >= P->lim->max_members)
            return fail_at(P, P->p, TG_E_TOO_MANY_MEMBERS,
                           "object has more than max_members members");
        key_at = P->p;
        P->p++;
        if ((rc = parse_string(P, &key, &key_len)) != TG_OK)
            return rc;
        skip_ws(P);
        if (P->p >= P->end)
            return fail_at(P, P->p, TG_E_EOF, "unterminated object");
        if (*P->p != ':')
            return fail_at(P, P->p, TG_E_SYNTAX, "expected ':' after object key");
        P->p++;
        rc = parse_value(P, &child);
        if (rc != TG_OK)
            return rc;
        child.key = key;
        child.key_len = key_len;
        child.offset = (uint32_t)(key_at - P->base);
        if ((rc = stack_reserve(P, 1)) != TG_OK)
            return rc;
        P->stack[P->stack_len++] = child;
        skip_ws(P);
        if (P->p >= P->end)
            return fail_at(P, P->p, TG_E_EOF, "unterminated object");
        if (*P->p == ',') {
            P->p++;
            skip_ws(P);
            continue;
        }
        if (*P->p == '}') {
            P->p++;
            return close_container(P, v, first);
        }
        return fail_at(P, P->p, TG_E_SYNTAX, "expected ',' or '}' in object");
    }
}

static int literal(parser *P, tg_value_t *v, const char *word, size_t n, int type)
{
    if ((size_t)(P->end - P->p) < n || memcmp(P->p, word, n) != 0)
        return fail_at(P, P->p, TG_E_SYNTAX, "invalid literal");
    v->type = (uint8_t)type;
    P->p += n;
    return TG_OK;
}

static int parse_value(parser *P, tg_value_t *v)
{
    int rc;
    skip_ws(P);
    v->key = NULL;
    v->key_len = 0;
    v->len = 0;
    v->num = 0;
    v->p.items = NULL;
    if (P->p >= P->end)
        return fail_at(P, P->p, TG_E_EOF, "expected a value");
    v->offset = (uint32_t)(P->p - P->base);
    switch (*P->p) {
    case '{':
    case '[':
        if (P->depth >= P->lim->max_depth)
            return fail_at(P, P->p, TG_E_TOO_DEEP, "nesting deeper than max_depth");
        P->depth++;
        rc = *P->p == '{' ? parse_object(P, v) : parse_array(P, v);
        P->depth--;
        return rc;
    case '"': {
        const char *s;
        uint32_t len;
        P->p++;
        if ((rc = parse_string(P, &s, &len)) != TG_OK)
            return rc;
        v->type = TG_STRING;
        v->p.str = s;
        v->len = len;
        return TG_OK;
    }
    case 't':
        return literal(P, v, "true", 4, TG_TRUE);
    case 'f':
        return literal(P, v, "false", 5, TG_FALSE);
    case 'n':
        return literal(P, v, "null", 4, TG_NULL);
    case 'N':
    case 'I':
        return fail_at(P, P->p, TG_E_NONFINITE, "NaN and Infinity are not JSON numbers");
    default:
        if (*P->p == '-' || (*P->p >= '0' && *P->p <= '9'))
            return parse_number(P, v);
        if ((unsigned char)*P->p == 0xEF && P->end - P->p >= 3 &&
            (unsigned char)P->p[1] == 0xBB && (unsigned char)P->p[2] == 0xBF)
            return fail_at(P, P->p, TG_E_SYNTAX, "byte order mark is not allowed");
        return fail_at(P, P->p, TG_E_SYNTAX, "unexpected character");
    }
}

int tg_parse(tg_engine_t *e, const char *json, size_t len, tg_doc_t **out,
             tg_error_t *err)
{
    parser P;
    tg_value_t local[LOCAL_STACK];
    tg_doc_t *doc;
    tg_arena arena;
    int rc;

    tg_error_clear(err);
    *out = NULL;
    if (!json && len)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "json is NULL");
    if (len > e->limits.max_input_bytes)
        return tg_fail(err, TG_E_INPUT_TOO_LARGE, 0,
                       "input of %zu bytes is larger than max_input_bytes (%zu)", len,
                       e->limits.max_input_bytes);

    /* Room for the input copy and, for documents up to a few KB, all nodes
     * in the first block; big documents grow the arena geometrically. */
    tg_arena_init(&arena, e, len + 1 + sizeof *doc + (len < 16384 ? 4 * len : 65536) + 256);
    doc = tg_arena_alloc(&arena, sizeof *doc);
    /* The copy is padded with NULs so the 8-byte string scans may read past
     * the last input byte; a NUL stops them like any control character. */
    P.base = doc ? tg_arena_alloc(&arena, len + SCAN_PAD) : NULL;
    if (!doc || !P.base || !(doc->root = tg_arena_alloc(&arena, sizeof *doc->root))) {
        tg_arena_free(&arena);
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    }
    if (len)
        memcpy(P.base, json, len);
    memset(P.base + len, 0, SCAN_PAD);
    P.e = e;
    P.lim = &e->limits;
    P.p = P.base;
    P.end = P.base + len;
    P.arena = &arena;
    P.stack = local;
    P.stack_len = 0;
    P.stack_cap = LOCAL_STACK;
    P.stack_heap = 0;
    P.depth = 0;
    P.err = err;

    skip_ws(&P);
    if (P.p >= P.end)
        rc = fail_at(&P, P.p, TG_E_EMPTY, "no JSON value in input");
    else
        rc = parse_value(&P, doc->root);
    if (rc == TG_OK) {
        skip_ws(&P);
        if (P.p < P.end)
            rc = fail_at(&P, P.p, TG_E_TRAILING, "unexpected data after the JSON value");
    }
    if (P.stack_heap)
        tg_mem_free(e, P.stack, P.stack_cap * sizeof *P.stack);
    if (rc != TG_OK) {
        tg_arena_free(&arena);
        return rc;
    }
    doc->arena = arena;
    tg_engine_retain(e);
    *out = doc;
    return TG_OK;
}

void tg_doc_free(tg_doc_t *doc)
{
    if (doc) {
        /* The doc struct lives in its own arena: copy the handle out first. */
        tg_arena arena = doc->arena;
        tg_arena_free(&arena);
        tg_engine_release(arena.engine);
    }
}
