/*
 * tg_engine.c -- the engine (allocator + limits + C locale), status code
 * names, error filling, and the output buffer.
 */
#include "tg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const code_names[TG_E_CODE_COUNT] = {
    [TG_OK] = "OK",
    [TG_E_NOMEM] = "NOMEM",
    [TG_E_ARG] = "BAD_ARGUMENT",
    [TG_E_INPUT_TOO_LARGE] = "INPUT_TOO_LARGE",
    [TG_E_TOO_DEEP] = "TOO_DEEP",
    [TG_E_STRING_TOO_LONG] = "STRING_TOO_LONG",
    [TG_E_TOO_MANY_MEMBERS] = "TOO_MANY_MEMBERS",
    [TG_E_TOO_MANY_ITEMS] = "TOO_MANY_ITEMS",
    [TG_E_EMPTY] = "EMPTY",
    [TG_E_SYNTAX] = "SYNTAX",
    [TG_E_EOF] = "UNEXPECTED_END",
    [TG_E_TRAILING] = "TRAILING_GARBAGE",
    [TG_E_DUPLICATE_KEY] = "DUPLICATE_KEY",
    [TG_E_UTF8] = "INVALID_UTF8",
    [TG_E_SURROGATE] = "LONE_SURROGATE",
    [TG_E_CONTROL_CHAR] = "CONTROL_CHARACTER",
    [TG_E_ESCAPE] = "INVALID_ESCAPE",
    [TG_E_LEADING_ZERO] = "LEADING_ZERO",
    [TG_E_NUMBER] = "INVALID_NUMBER",
    [TG_E_NONFINITE] = "NONFINITE_NUMBER",
    [TG_E_NUMBER_RANGE] = "NUMBER_OUT_OF_RANGE",
    [TG_E_SCHEMA_KEYWORD] = "UNSUPPORTED_KEYWORD",
    [TG_E_SCHEMA] = "INVALID_SCHEMA",
    [TG_E_SCHEMA_REF] = "UNRESOLVED_REF",
    [TG_E_PATTERN] = "INVALID_PATTERN",
    [TG_E_REGEX_LIMIT] = "REGEX_LIMIT",
    [TG_E_VALIDATION_LIMIT] = "VALIDATION_LIMIT",
    [TG_E_DUPLICATE_TOOL] = "DUPLICATE_TOOL",
    [TG_E_BAD_CALL] = "BAD_CALL",
    [TG_E_BAD_ARGUMENTS] = "BAD_ARGUMENTS",
    [TG_E_PATTERN_TOO_LONG] = "PATTERN_TOO_LONG",
    [TG_E_UNSUPPORTED_FORMAT] = "UNSUPPORTED_FORMAT",
    [TG_E_REGEX_BUDGET] = "REGEX_BUDGET",
    [TG_E_UNSUPPORTED_CALL] = "UNSUPPORTED_CALL",
    [TG_E_IO] = "IO_ERROR",
    [TG_E_REGISTRY_TOO_LARGE] = "REGISTRY_TOO_LARGE",
    [TG_E_IMAGE] = "BAD_REGISTRY_IMAGE",
    [TG_E_IMAGE_STALE] = "STALE_REGISTRY_IMAGE",
};

const char *tg_code_name(int code)
{
    if (code < 0 || code >= TG_E_CODE_COUNT || !code_names[code])
        return "UNKNOWN";
    return code_names[code];
}

void tg_error_clear(tg_error_t *err)
{
    if (!err)
        return;
    err->code = TG_OK;
    err->offset = TG_NO_OFFSET;
    err->pointer[0] = '\0';
    err->message[0] = '\0';
}

/* Drops every byte that does not begin a well-formed sequence: a message
 * quotes decoded input cut to a length (%.*s, or the buffer's end), and a
 * cut inside a character must not make the message itself malformed. */
static void keep_utf8(char *msg)
{
    unsigned char *r = (unsigned char *)msg, *w = r;
    size_t left = strlen(msg);
    while (left) {
        size_t n = tg_utf8_sequence(r, left);
        if (n) {
            memmove(w, r, n);
            w += n;
        } else {
            n = 1; /* dropped */
        }
        r += n;
        left -= n;
    }
    *w = '\0';
}

int tg_fail(tg_error_t *err, int code, size_t offset, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = code;
        err->offset = offset;
        err->pointer[0] = '\0';
        va_start(ap, fmt);
        /* Only %s/%zu/%u/%c of ASCII data are used: locale cannot matter. */
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        keep_utf8(err->message);
    }
    return code;
}

/* ---- allocator --------------------------------------------------------- */

static void *default_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, nsize);
}

void *tg_mem_realloc(tg_engine_t *e, void *p, size_t osize, size_t nsize)
{
    return e->alloc(e->alloc_ud, p, osize, nsize);
}

void tg_mem_free(tg_engine_t *e, void *p, size_t size)
{
    if (p)
        e->alloc(e->alloc_ud, p, size, 0);
}

/* ---- limits ------------------------------------------------------------ */

void tg_limits_default(tg_limits_t *out)
{
    out->max_input_bytes = TG_DEFAULT_MAX_INPUT_BYTES;
    out->max_depth = TG_DEFAULT_MAX_DEPTH;
    out->max_string_bytes = TG_DEFAULT_MAX_STRING_BYTES;
    out->max_members = TG_DEFAULT_MAX_MEMBERS;
    out->max_items = TG_DEFAULT_MAX_ITEMS;
    out->regex_match_limit = TG_DEFAULT_REGEX_MATCH_LIMIT;
    out->max_validation_steps = TG_DEFAULT_MAX_VALIDATION_STEPS;
    out->max_pattern_bytes = TG_DEFAULT_MAX_PATTERN_BYTES;
    out->max_regex_steps = TG_DEFAULT_MAX_REGEX_STEPS;
    out->max_registry_bytes = TG_DEFAULT_MAX_REGISTRY_BYTES;
}

/* Lengths and counts are stored in 32 bits in the DOM; input size bounds
 * them all, so the DOM limits share the input's ceiling.  The budgets are
 * counters of 32 bits (PCRE2's match limit is a uint32_t). */
static int check_limits(const tg_limits_t *l, tg_error_t *err)
{
    struct {
        const char *name;
        size_t value, max;
    } f[] = {
        {"max_input_bytes", l->max_input_bytes, TG_LIMIT_MAX_INPUT_BYTES},
        {"max_depth", l->max_depth, TG_LIMIT_MAX_DEPTH},
        {"max_string_bytes", l->max_string_bytes, TG_LIMIT_MAX_INPUT_BYTES},
        {"max_members", l->max_members, TG_LIMIT_MAX_INPUT_BYTES},
        {"max_items", l->max_items, TG_LIMIT_MAX_INPUT_BYTES},
        {"regex_match_limit", l->regex_match_limit, (size_t)0xffffffff},
        {"max_validation_steps", l->max_validation_steps, (size_t)0xffffffff},
        {"max_pattern_bytes", l->max_pattern_bytes, TG_LIMIT_MAX_INPUT_BYTES},
        {"max_regex_steps", l->max_regex_steps, (size_t)0xffffffff},
        {"max_registry_bytes", l->max_registry_bytes, TG_LIMIT_MAX_INPUT_BYTES},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].value < 1 || f[i].value > f[i].max)
            return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "limit %s = %zu is outside 1..%zu",
                           f[i].name, f[i].value, f[i].max);
    return TG_OK;
}

tg_engine_t *tg_engine_new(const tg_limits_t *limits, tg_alloc_fn alloc, void *alloc_ud,
                           tg_error_t *err)
{
    tg_limits_t lim;
    tg_engine_t *e;

    tg_error_clear(err);
    if (limits)
        lim = *limits;
    else
        tg_limits_default(&lim);
    if (check_limits(&lim, err) != TG_OK)
        return NULL;
    if (!alloc)
        alloc = default_alloc;
    e = alloc(alloc_ud, NULL, 0, sizeof *e);
    if (!e) {
        tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        return NULL;
    }
    e->alloc = alloc;
    e->alloc_ud = alloc_ud;
    e->children = 0;
    e->freed = 0;
    e->regex = NULL;
    e->spare = NULL;
    e->limits = lim;
    e->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (e->c_locale == (locale_t)0) {
        alloc(alloc_ud, e, sizeof *e, 0);
        tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "cannot create the C locale");
        return NULL;
    }
    return e;
}

static void engine_destroy(tg_engine_t *e)
{
    tg_regex_cache_free(e);
    tg_arena_spare_free(e);
    freelocale(e->c_locale);
    e->alloc(e->alloc_ud, e, sizeof *e, 0);
}

void tg_engine_free(tg_engine_t *e)
{
    if (!e)
        return;
    if (e->children) {
        e->freed = 1; /* the last child's release destroys it */
        return;
    }
    engine_destroy(e);
}

void tg_engine_retain(tg_engine_t *e)
{
    e->children++;
}

void tg_engine_release(tg_engine_t *e)
{
    if (--e->children == 0 && e->freed)
        engine_destroy(e);
}

void tg_engine_limits(const tg_engine_t *e, tg_limits_t *out)
{
    *out = e->limits;
}

int tg_engine_set_limits(tg_engine_t *e, const tg_limits_t *limits, tg_error_t *err)
{
    tg_error_clear(err);
    if (!limits)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "limits is NULL");
    int rc = check_limits(limits, err);
    if (rc != TG_OK)
        return rc;
    e->limits = *limits;
    return TG_OK;
}

/* ---- output buffer ----------------------------------------------------- */

void tg_buf_init(tg_buf_t *b, tg_engine_t *e)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->engine = e;
}

void tg_buf_free(tg_buf_t *b)
{
    tg_mem_free(b->engine, b->data, b->cap);
    b->data = NULL;
    b->len = b->cap = 0;
}

void tg_buf_reset(tg_buf_t *b)
{
    b->len = 0;
}

int tg_buf_reserve(tg_buf_t *b, size_t extra, tg_error_t *err)
{
    size_t need, cap;
    char *p;

    if (extra <= b->cap - b->len)
        return TG_OK;
    if (extra > SIZE_MAX - b->len)
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "buffer size overflow");
    need = b->len + extra;
    cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    p = tg_mem_realloc(b->engine, b->data, b->cap, cap);
    if (!p)
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    b->data = p;
    b->cap = cap;
    return TG_OK;
}

int tg_buf_append(tg_buf_t *b, const void *data, size_t n, tg_error_t *err)
{
    int rc = tg_buf_reserve(b, n, err);
    if (rc != TG_OK)
        return rc;
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    return TG_OK;
}
