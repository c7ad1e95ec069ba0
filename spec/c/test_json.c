/*
 * test_json.c -- the strict parser: every malformed class has its own code
 * and a byte offset; every limit holds at N and fails at N+1; hostile sizes
 * are refused early; the allocator hook sees every byte come back, and an
 * engine keeps at most one small arena block between documents.  UTF-8 is
 * checked against a reference for every lead byte with every kind of
 * second byte, and string lengths at N and N+1 across the scanner's blocks.
 */
#include "acct.h"
#include "tap.h"
#include "toolgate.h"

#include <stdlib.h>
#include <time.h>

static tg_engine_t *E;

static int parse_code(const char *s, size_t len, size_t *offset)
{
    tg_doc_t *doc;
    tg_error_t err;
    int rc = tg_parse(E, s, len, &doc, &err);
    if (rc == TG_OK)
        tg_doc_free(doc);
    if (offset)
        *offset = err.offset;
    return rc;
}

static void expect(const char *json, int code, long offset, const char *name)
{
    size_t off;
    int rc = parse_code(json, strlen(json), &off);
    int ok = rc == code && (offset < 0 || off == (size_t)offset);
    tap_ok(ok, name);
    if (!ok)
        printf("#   input %s: got %s at %zu, want %s at %ld\n", json, tg_code_name(rc), off,
               tg_code_name(code), offset);
}

static char *repeat(const char *unit, size_t times, const char *prefix, const char *suffix)
{
    size_t ul = strlen(unit), pl = strlen(prefix), sl = strlen(suffix);
    char *s = malloc(pl + ul * times + sl + 1), *p = s;
    memcpy(p, prefix, pl);
    p += pl;
    for (size_t i = 0; i < times; i++, p += ul)
        memcpy(p, unit, ul);
    memcpy(p, suffix, sl);
    p[sl] = '\0';
    return s;
}

static void limits(void)
{
    tg_limits_t lim;
    tg_engine_t *e;
    char *s;
    tg_doc_t *doc;
    tg_error_t err;

    /* depth: 64 nested arrays pass, 65 fail */
    s = repeat("[", 64, "", "");
    {
        char *t = repeat("]", 64, s, "");
        tap_ok(parse_code(t, strlen(t), NULL) == TG_OK, "depth 64 (the default) parses");
        free(t);
    }
    free(s);
    s = repeat("[", 65, "", "");
    {
        char *t = repeat("]", 65, s, "");
        size_t off;
        tap_ok(parse_code(t, strlen(t), &off) == TG_E_TOO_DEEP && off == 64,
               "depth 65 is TOO_DEEP at byte 64");
        free(t);
    }
    free(s);

    /* 100,000 open brackets: refused at the 65th, not after reading them all */
    {
        size_t off;
        clock_t t0 = clock();
        s = repeat("[", 100000, "", "");
        tap_ok(parse_code(s, strlen(s), &off) == TG_E_TOO_DEEP && off == 64,
               "depth 100,000 is refused at byte 64");
        printf("# depth 100,000 refused in %.3f ms\n",
               1000.0 * (double)(clock() - t0) / CLOCKS_PER_SEC);
        free(s);
    }

    /* small limits, each at N and N+1 */
    tg_limits_default(&lim);
    lim.max_input_bytes = 10;
    lim.max_string_bytes = 3;
    lim.max_members = 2;
    lim.max_items = 3;
    lim.max_depth = 2;
    e = tg_engine_new(&lim, NULL, NULL, &err);
    tap_ok(e != NULL, "engine with small limits");
#define LIM(json, code, name)                                                                      \
    do {                                                                                           \
        int rc_ = tg_parse(e, json, strlen(json), &doc, &err);                                     \
        if (rc_ == TG_OK)                                                                          \
            tg_doc_free(doc);                                                                      \
        if (!tap_ok(rc_ == (code), name))                                                          \
            printf("#   got %s: %s\n", tg_code_name(rc_), err.message);                            \
    } while (0)
    LIM("[[1],[22]]", TG_OK, "input of max_input_bytes (10) parses");
    LIM("[[1],[222]]", TG_E_INPUT_TOO_LARGE, "input of 11 bytes is INPUT_TOO_LARGE");
    LIM("[[1]]", TG_OK, "depth 2 of 2 parses");
    LIM("[[[]]]", TG_E_TOO_DEEP, "depth 3 of 2 is TOO_DEEP");
    LIM("\"abc\"", TG_OK, "string of 3 of 3 bytes parses");
    LIM("\"abcd\"", TG_E_STRING_TOO_LONG, "string of 4 bytes is STRING_TOO_LONG");
    LIM("\"\\u00e9a\"", TG_OK, "decoded length counts (\\u00e9 is 2 bytes)");
    LIM("\"\\u00e9ab\"", TG_E_STRING_TOO_LONG, "decoded length counts, over by one");
    LIM("{\"abcd\":1}", TG_E_STRING_TOO_LONG, "keys obey max_string_bytes");
    LIM("[1,2,3]", TG_OK, "3 items of 3 parse");
    LIM("[1,2,3,4]", TG_E_TOO_MANY_ITEMS, "4 items of 3 are TOO_MANY_ITEMS");
    lim.max_input_bytes = 100;
    tap_ok(tg_engine_set_limits(e, &lim, &err) == TG_OK, "set_limits");
    LIM("{\"a\":1,\"b\":2}", TG_OK, "2 members of 2 parse");
    LIM("{\"a\":1,\"b\":2,\"c\":3}", TG_E_TOO_MANY_MEMBERS, "3 members of 2 are TOO_MANY_MEMBERS");
    tg_engine_free(e);

    /* limits out of range are refused and change nothing */
    tg_limits_default(&lim);
    lim.max_depth = 0;
    tap_ok(tg_engine_new(&lim, NULL, NULL, &err) == NULL && err.code == TG_E_ARG,
           "max_depth 0 is refused");
    lim.max_depth = TG_LIMIT_MAX_DEPTH + 1;
    tap_ok(tg_engine_new(&lim, NULL, NULL, &err) == NULL && err.code == TG_E_ARG,
           "max_depth above 1000 is refused");
    lim.max_depth = TG_LIMIT_MAX_DEPTH;
    e = tg_engine_new(&lim, NULL, NULL, &err);
    tap_ok(e != NULL, "max_depth 1000 is accepted");
    {
        tg_limits_t bad = lim, now;
        bad.max_items = 0;
        tap_ok(tg_engine_set_limits(e, &bad, &err) == TG_E_ARG, "set_limits refuses max_items 0");
        tg_engine_limits(e, &now);
        tap_ok(now.max_items == lim.max_items && now.max_depth == 1000,
               "a refused set_limits changes nothing");
    }
    /* depth 1000 really parses (recursion within the fixed stack) */
    s = repeat("[", 1000, "", "");
    {
        char *t = repeat("]", 1000, s, "");
        tap_ok(tg_parse(e, t, strlen(t), &doc, &err) == TG_OK, "depth 1000 parses when allowed");
        tg_doc_free(doc);
        free(t);
    }
    free(s);
    tg_engine_free(e);

    /* a 50 MB string: refused by the input limit by default, and by the
     * string limit when the input limit is raised */
    {
        size_t n = 50u << 20;
        char *big = malloc(n + 3);
        clock_t t0;
        size_t off;
        memset(big + 1, 'x', n);
        big[0] = '"';
        big[n + 1] = '"';
        big[n + 2] = '\0';
        t0 = clock();
        tap_ok(parse_code(big, n + 2, &off) == TG_E_INPUT_TOO_LARGE,
               "50 MB string: INPUT_TOO_LARGE by default");
        printf("# refused in %.3f ms\n", 1000.0 * (double)(clock() - t0) / CLOCKS_PER_SEC);
        tg_limits_default(&lim);
        lim.max_input_bytes = 64u << 20;
        e = tg_engine_new(&lim, NULL, NULL, &err);
        t0 = clock();
        tap_ok(tg_parse(e, big, n + 2, &doc, &err) == TG_E_STRING_TOO_LONG && err.offset == 0,
               "50 MB string with a 64 MiB input limit: STRING_TOO_LONG at byte 0");
        printf("# refused in %.3f ms\n", 1000.0 * (double)(clock() - t0) / CLOCKS_PER_SEC);
        tg_engine_free(e);
        free(big);
    }
}

static void allocator(void)
{
    const char *doc_text =
        "{\"b\":[1,2.5,\"x\",{\"c\":null}],\"a\":\"\\u00e9\",\"z\":[true,false]}";
    acct a = {0};
    tg_error_t err;
    tg_engine_t *e = tg_engine_new(NULL, acct_alloc, &a, &err);
    tg_buf_t b;
    long calls;
    int all_ok = 1;

    tg_buf_init(&b, e);
    tap_ok(tg_canon(e, doc_text, strlen(doc_text), &b, &err) == TG_OK,
           "canon with a counting allocator");
    tg_buf_free(&b);
    tg_engine_free(e);
    tap_ok(a.live == 0, "every allocated byte was given back (osize accounting is exact)");

    /* Fail each allocation in turn: always NOMEM, never a crash or a leak.
     * A big document makes the scratch stack and arena grow several times. */
    {
        char *big = repeat("{\"k\":[1,2,3],\"v\":\"abc\"},", 3000, "[", "0]");
        calls = 0;
        a.live = 0;
        a.calls = 0;
        a.fail_at = 0;
        e = tg_engine_new(NULL, acct_alloc, &a, &err);
        tg_buf_init(&b, e);
        tg_canon(e, big, strlen(big), &b, &err);
        tg_buf_free(&b);
        tg_engine_free(e);
        calls = a.calls;
        for (long k = 1; k <= calls; k++) {
            int rc;
            a.live = 0;
            a.calls = 0;
            a.fail_at = k;
            e = tg_engine_new(NULL, acct_alloc, &a, &err);
            if (!e) {
                all_ok &= err.code == TG_E_NOMEM;
                all_ok &= a.live == 0;
                continue;
            }
            tg_buf_init(&b, e);
            rc = tg_canon(e, big, strlen(big), &b, &err);
            all_ok &= rc == TG_E_NOMEM;
            tg_buf_free(&b);
            tg_engine_free(e);
            all_ok &= a.live == 0;
        }
        printf("# %ld allocation sites failed in turn\n", calls);
        tap_ok(calls > 5 && all_ok, "every allocation failure gives NOMEM and leaks nothing");
        free(big);
    }

    /* Between documents an engine keeps one freed arena block (at most
     * 64 KiB) for the next one, so a stream of small documents allocates
     * nothing; everything goes back with the engine. */
    {
        long engine_only, steady_calls, most = 0;
        int held_ok = 1;
        a.live = 0;
        a.calls = 0;
        a.fail_at = 0;
        e = tg_engine_new(NULL, acct_alloc, &a, &err);
        engine_only = a.live;
        for (size_t n = 1; n <= 200000; n = n * 3 / 2 + 1) {
            char *doc_big = repeat("[1,\"ab\"],", n, "[", "0]");
            tg_doc_t *d;
            if (tg_parse(e, doc_big, strlen(doc_big), &d, &err) == TG_OK)
                tg_doc_free(d);
            held_ok &= a.live - engine_only <= 64 * 1024 + 64;
            if (a.live - engine_only > most)
                most = a.live - engine_only;
            free(doc_big);
        }
        steady_calls = a.calls;
        for (int i = 0; i < 100; i++) {
            tg_doc_t *d;
            if (tg_parse(e, doc_text, strlen(doc_text), &d, &err) == TG_OK)
                tg_doc_free(d);
        }
        printf("# the engine held at most %ld bytes between documents\n", most);
        tap_ok(held_ok, "between documents the engine holds at most one 64 KiB block");
        tap_ok(a.calls == steady_calls, "100 small documents in a row allocate nothing");
        tg_engine_free(e);
        tap_ok(a.live == 0, "the kept block goes back with the engine");
    }
}

/* ---- UTF-8 and string lengths ------------------------------------------ */

/* Reference: the length of the well-formed sequence at p (n bytes), or 0
 * (Unicode 15, table 3-7). */
static int ref_utf8(const unsigned char *p, int n)
{
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    int len = c >= 0xC2 && c <= 0xDF   ? 2
              : c >= 0xE0 && c <= 0xEF ? 3
              : c >= 0xF0 && c <= 0xF4 ? 4
                                       : 0;
    if (c == 0xE0)
        lo = 0xA0;
    if (c == 0xED)
        hi = 0x9F;
    if (c == 0xF0)
        lo = 0x90;
    if (c == 0xF4)
        hi = 0x8F;
    if (!len || n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return len;
}

static void utf8(void)
{
    static const unsigned char cont[] = {0x41, 0x7F, 0x80, 0x8F, 0x90,
                                         0x9F, 0xA0, 0xBF, 0xC0, 0xFF};
    long cases = 0, bad = 0;
    for (unsigned c = 0x80; c < 0x100; c++)
        for (unsigned a = 0; a < 256; a++)
            for (unsigned k = 0; k < sizeof cont * sizeof cont; k++)
                for (int len = 1; len <= 4; len++) {
                    /* the bytes, then a closing quote; strings that hold a
                     * quote, backslash or control character are tested
                     * elsewhere */
                    unsigned char seq[4] = {(unsigned char)c, (unsigned char)a,
                                            cont[k % sizeof cont], cont[k / sizeof cont]};
                    char s[8];
                    size_t off;
                    int rc, i = 0, want = TG_OK, skip = 0;
                    size_t want_off = 0;
                    while (i < len) {
                        int n;
                        if (seq[i] < 0x80) {
                            skip |= seq[i] < 0x20 || seq[i] == '"' || seq[i] == '\\';
                            i++;
                            continue;
                        }
                        if (!(n = ref_utf8(seq + i, len - i))) {
                            want = TG_E_UTF8;
                            want_off = (size_t)i + 1;
                            break;
                        }
                        i += n;
                    }
                    if (skip)
                        continue;
                    s[0] = '"';
                    memcpy(s + 1, seq, (size_t)len);
                    s[len + 1] = '"';
                    rc = parse_code(s, (size_t)len + 2, &off);
                    cases++;
                    if (rc != want || (want != TG_OK && off != want_off)) {
                        if (bad++ < 5)
                            printf(
                                "#   %02x %02x %02x %02x (%d bytes): got %s at %zu, want %s at %zu\n",
                                seq[0], seq[1], seq[2], seq[3], len, tg_code_name(rc), off,
                                tg_code_name(want), want_off);
                    }
                }
    printf("# %ld UTF-8 cases\n", cases);
    tap_ok(bad == 0, "UTF-8: every lead byte, every second byte, as the reference decides");
}

/* A string of decoded length n built from one kind of unit (1 to 4 bytes,
 * raw or escaped), so that units and escapes straddle the scanner's blocks. */
static size_t string_of(char *out, int unit, size_t n)
{
    static const char *const src[] = {
        "a",       "\xc3\xa9",         "\\u00e9",       "\\n", "\xe2\x82\xac",
        "\\u20ac", "\xf0\x9f\x98\x80", "\\ud83d\\ude00"};
    static const size_t dec[] = {1, 2, 2, 1, 3, 3, 4, 4};
    size_t len = 0, have = 0;
    out[len++] = '"';
    while (have + dec[unit] <= n) {
        size_t l = strlen(src[unit]);
        memcpy(out + len, src[unit], l);
        len += l;
        have += dec[unit];
    }
    while (have < n) { /* make up the rest with ASCII */
        out[len++] = 'x';
        have++;
    }
    out[len++] = '"';
    return len;
}

static void string_limits(void)
{
    static const size_t maxes[] = {1, 7, 15, 16, 17, 31, 63, 64, 65, 100, 1000};
    static char s[8192];
    int bad = 0;
    for (size_t m = 0; m < sizeof maxes / sizeof maxes[0]; m++) {
        tg_limits_t lim;
        tg_engine_t *e;
        tg_limits_default(&lim);
        lim.max_string_bytes = maxes[m];
        e = tg_engine_new(&lim, NULL, NULL, NULL);
        for (int unit = 0; unit < 8; unit++)
            for (size_t extra = 0; extra <= 1; extra++) {
                size_t len = string_of(s, unit, maxes[m] + extra);
                tg_doc_t *doc;
                tg_error_t err;
                int rc = tg_parse(e, s, len, &doc, &err);
                if (rc == TG_OK)
                    tg_doc_free(doc);
                if (extra ? rc != TG_E_STRING_TOO_LONG || err.offset != 0 : rc != TG_OK) {
                    if (bad++ < 5)
                        printf("#   max %zu, unit %d, length %zu: %s\n", maxes[m], unit,
                               maxes[m] + extra, tg_code_name(rc));
                }
            }
        tg_engine_free(e);
    }
    tap_ok(bad == 0, "max_string_bytes at N and N+1 for every kind of unit, across block edges");
}

/* Every escape RFC 8785 keeps (what JSON.stringify writes) decodes, in
 * values and keys, alone or before escapes of another kind. */
static void canonical_escapes(void)
{
    static const char json[] =
        "{\"k\\n\\\"\":[\"a\\nb\\\"c\\u001fd\\\\e\\u0000\\b\\f\\r\\t\",\"\\u000b\",\"x\\n\\u00e9\"]}";
    static const char want[] = "a\nb\"c\x1f"
                               "d\\e\0\b\f\r\t";
    tg_doc_t *doc;
    const tg_value_t *arr;
    const char *s, *k;
    size_t n, kn;
    tap_ok(tg_parse(E, json, sizeof json - 1, &doc, NULL) == TG_OK, "canonical escapes parse");
    arr = tg_at(tg_doc_root(doc), 0);
    k = tg_key_at(tg_doc_root(doc), 0, &kn);
    s = tg_str(tg_at(arr, 0), &n);
    tap_ok(n == sizeof want - 1 && memcmp(s, want, n) == 0, "every canonical escape decoded");
    s = tg_str(tg_at(arr, 1), &n);
    tap_ok(n == 1 && s[0] == '\v', "\\u000b decoded");
    s = tg_str(tg_at(arr, 2), &n);
    tap_ok(n == 4 && memcmp(s, "x\n\xc3\xa9", 4) == 0, "a canonical escape, then another kind");
    tap_ok(kn == 3 && memcmp(k, "k\n\"", 3) == 0, "a key with canonical escapes");
    tg_doc_free(doc);
}

static void dom(void)
{
    const char *text = " {\"b\":[1,-2.5e3,\"x\\u0000y\"],\"a\":{\"\":null},\"\\u00e9\":true} ";
    tg_doc_t *doc;
    tg_error_t err;
    const tg_value_t *r, *b;
    size_t len;
    const char *s;

    tap_ok(tg_parse(E, text, strlen(text), &doc, &err) == TG_OK, "dom: parses");
    r = tg_doc_root(doc);
    tap_ok(tg_type_of(r) == TG_OBJECT && tg_len(r) == 3, "dom: root object with 3 members");
    s = tg_key_at(r, 0, &len);
    tap_is_mem(s, len, "a", "dom: members in RFC 8785 order (a first)");
    s = tg_key_at(r, 2, &len);
    tap_is_mem(s, len, "\xc3\xa9", "dom: key decoded to UTF-8");
    b = tg_get(r, "b", 1);
    tap_ok(tg_type_of(b) == TG_ARRAY && tg_len(b) == 3, "dom: get b");
    tap_ok(tg_num(tg_at(b, 1)) == -2500.0, "dom: number value");
    s = tg_num_text(tg_at(b, 1), &len);
    tap_is_mem(s, len, "-2.5e3", "dom: number source text");
    s = tg_str(tg_at(b, 2), &len);
    tap_ok(len == 3 && memcmp(s, "x\0y", 3) == 0, "dom: string with NUL keeps its length");
    tap_ok(tg_get(r, "missing", 7) == NULL && tg_at(b, 3) == NULL && tg_at(r, 99) == NULL,
           "dom: absent members and out-of-range indexes are NULL");
    tap_ok(tg_get(tg_get(r, "a", 1), "", 0) != NULL, "dom: empty key");
    tap_ok(tg_offset(tg_get(r, "b", 1)) == 2, "dom: member offset points at its key");
    tg_doc_free(doc);
}

/* Whether s is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF). */
static int is_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = *p < 0x80   ? 1
                   : *p < 0xC2 ? 0
                   : *p < 0xE0 ? 2
                   : *p < 0xF0 ? 3
                   : *p < 0xF5 ? 4
                               : 0;
        if (!n)
            return 0;
        for (size_t i = 1; i < n; i++)
            if ((p[i] & 0xC0) != 0x80)
                return 0;
        if ((n == 3 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] > 0x9F))) ||
            (n == 4 && ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] > 0x8F))))
            return 0;
        p += n;
    }
    return 1;
}

/* A message quotes input cut to a length: a cut inside a character must
 * not leave the message malformed (the CLI writes it into a decision). */
static void test_messages_stay_utf8(void)
{
    char json[512];
    int ok = 1;
    for (int lead = 0; lead < 4; lead++) {
        char key[200];
        size_t k = 0;
        tg_error_t err;
        tg_doc_t *doc = NULL;
        for (int i = 0; i < lead; i++)
            key[k++] = 'x';
        for (int i = 0; i < 40; i++) /* U+00E9, U+20AC, U+1F600 in turn */
            k += (size_t)snprintf(key + k, sizeof key - k, "%s",
                                  i % 3 == 0   ? "\xc3\xa9"
                                  : i % 3 == 1 ? "\xe2\x82\xac"
                                               : "\xf0\x9f\x98\x80");
        key[k] = '\0';
        snprintf(json, sizeof json, "{\"%s\":1,\"%s\":2}", key, key);
        if (tg_parse(E, json, strlen(json), &doc, &err) != TG_E_DUPLICATE_KEY ||
            !is_utf8(err.message))
            ok = 0;
        tg_doc_free(doc);
    }
    tap_ok(ok, "a duplicate key message quoting a long key cut anywhere stays valid UTF-8");
}

/* Keys of every length to 20 that differ in one byte, wherever it is,
 * are two keys, found each by tg_get; the same key twice is a duplicate
 * (the comparisons load whole words of short keys). */
static void test_keys_one_byte_apart(void)
{
    int ok = 1;
    for (size_t n = 1; n <= 20; n++) {
        for (size_t j = 0; j < n; j++) {
            char a[32], b[32], json[96];
            tg_doc_t *doc = NULL;
            tg_error_t err;
            memset(a, 'k', n);
            memcpy(b, a, n);
            b[j] = 'q';
            a[n] = b[n] = '\0';
            snprintf(json, sizeof json, "{\"%s\":1,\"%s\":2}", a, b);
            if (tg_parse(E, json, strlen(json), &doc, &err) != TG_OK ||
                tg_num(tg_get(tg_doc_root(doc), a, n)) != 1 ||
                tg_num(tg_get(tg_doc_root(doc), b, n)) != 2)
                ok = 0;
            tg_doc_free(doc);
            snprintf(json, sizeof json, "{\"%s\":1,\"%s\":2}", b, b);
            if (tg_parse(E, json, strlen(json), &doc, &err) != TG_E_DUPLICATE_KEY)
                ok = 0;
            tg_doc_free(doc);
        }
    }
    tap_ok(ok, "keys one byte apart, every length to 20 and place: two keys; the same twice: a "
               "duplicate");
}

int main(void)
{
    E = tg_engine_new(NULL, NULL, NULL, NULL);

    test_keys_one_byte_apart();

    test_messages_stay_utf8();

    /* each malformed class, with the byte offset of the problem */
    expect("", TG_E_EMPTY, 0, "empty input");
    expect(" \n\t ", TG_E_EMPTY, 4, "blank input");
    expect("{\"a\":1,\"a\":2}", TG_E_DUPLICATE_KEY, 7, "duplicate key, offset of the second");
    expect("{\"b\":{\"x\":1,\"y\":2,\"x\":3}}", TG_E_DUPLICATE_KEY, 18,
           "duplicate key in a nested object");
    expect("{\"a\":1,\"\\u0061\":2}", TG_E_DUPLICATE_KEY, 7,
           "duplicate key spelled with an escape");
    expect("\"\xff\"", TG_E_UTF8, 1, "invalid UTF-8 byte FF");
    expect("\"\xc0\xaf\"", TG_E_UTF8, 1, "overlong UTF-8");
    expect("\"\xed\xa0\x80\"", TG_E_UTF8, 1, "UTF-8 encoded surrogate");
    expect("\"\xf4\x90\x80\x80\"", TG_E_UTF8, 1, "UTF-8 beyond U+10FFFF");
    expect("\"\xe2\x82\"", TG_E_UTF8, 1, "truncated UTF-8 sequence");
    expect("\"\\ud800\"", TG_E_SURROGATE, 1, "lone high surrogate escape");
    expect("\"\\udc00\"", TG_E_SURROGATE, 1, "lone low surrogate escape");
    expect("\"\\ud800\\u0041\"", TG_E_SURROGATE, 1, "high surrogate followed by a non-surrogate");
    expect("\"\\ud800\\ud800\"", TG_E_SURROGATE, 1, "two high surrogates");
    expect("\"\\ude00\\ud83d\"", TG_E_SURROGATE, 1, "pair in the wrong order");
    expect("\"a\x01\"", TG_E_CONTROL_CHAR, 2, "raw control character in a string");
    expect("\"a\nb\"", TG_E_CONTROL_CHAR, 2, "raw newline in a string");
    expect("\"\\x41\"", TG_E_ESCAPE, 1, "unknown escape");
    /* after an escape, an error is still reported where it stands */
    expect("\"\\n\\x41\"", TG_E_ESCAPE, 3, "unknown escape after a canonical one");
    expect("\"\\n\x01\"", TG_E_CONTROL_CHAR, 3, "raw control character after a canonical escape");
    expect("\"\\t\xff\"", TG_E_UTF8, 3, "invalid UTF-8 after a canonical escape");
    expect("\"\\t\\ud800\"", TG_E_SURROGATE, 3, "lone surrogate after a canonical escape");
    expect("\"\\nabc", TG_E_EOF, 6, "unterminated string after a canonical escape");
    expect("\"\\n\\", TG_E_EOF, 3, "input ending in a backslash after a canonical escape");
    expect("\"\\u12G4\"", TG_E_ESCAPE, 1, "bad hex digit in \\u");
    expect("NaN", TG_E_NONFINITE, 0, "NaN");
    expect("[Infinity]", TG_E_NONFINITE, 1, "Infinity");
    expect("-Infinity", TG_E_NONFINITE, 0, "-Infinity");
    expect("01", TG_E_LEADING_ZERO, 0, "leading zero");
    expect("[-007]", TG_E_LEADING_ZERO, 1, "negative leading zeros");
    expect("1.", TG_E_NUMBER, 0, "no digit after the point");
    expect(".5", TG_E_SYNTAX, 0, "no digit before the point");
    expect("1e", TG_E_NUMBER, 0, "empty exponent");
    expect("1e+", TG_E_NUMBER, 0, "exponent sign without digits");
    expect("-", TG_E_NUMBER, 0, "lone minus");
    expect("+1", TG_E_SYNTAX, 0, "plus sign");
    expect("1e400", TG_E_NUMBER_RANGE, 0, "number beyond double range");
    expect("[1] x", TG_E_TRAILING, 4, "trailing garbage");
    expect("{} {}", TG_E_TRAILING, 3, "two documents");
    expect("[1,]", TG_E_SYNTAX, 3, "trailing comma in array");
    expect("{\"a\":1,}", TG_E_SYNTAX, 7, "trailing comma in object");
    expect("{'a':1}", TG_E_SYNTAX, 1, "single-quoted key");
    expect("{a:1}", TG_E_SYNTAX, 1, "bare key");
    expect("[1 2]", TG_E_SYNTAX, 3, "missing comma");
    expect("tru", TG_E_SYNTAX, 0, "truncated literal");
    expect("nulll", TG_E_TRAILING, 4, "literal with trailing letter");
    expect("\xef\xbb\xbf{}", TG_E_SYNTAX, 0, "byte order mark");
    expect("/* c */ 1", TG_E_SYNTAX, 0, "comment");
    expect("[1", TG_E_EOF, 2, "unterminated array");
    expect("{\"a\":1", TG_E_EOF, 6, "unterminated object");
    expect("\"abc", TG_E_EOF, 4, "unterminated string");
    expect("{\"a\"", TG_E_EOF, 4, "object key without value");
    {
        size_t off;
        tap_ok(parse_code("[1,\0]", 5, &off) == TG_E_SYNTAX && off == 3,
               "NUL byte outside a string");
        tap_ok(parse_code("\"a\0b\"", 5, &off) == TG_E_CONTROL_CHAR && off == 2,
               "raw NUL inside a string");
    }
    expect(" [ 1 , { \"a\" : [ ] } ] ", TG_OK, -1, "all four whitespace characters allowed");
    expect("\"\\ud83d\\ude00 \\u00e9 \\u0000 \\/\"", TG_OK, -1, "valid escapes and pairs");
    expect("\"\xf0\x9f\x98\x80 \xc3\xa9 \xe2\x82\xac\"", TG_OK, -1, "valid multi-byte UTF-8");
    expect("-0", TG_OK, -1, "-0");
    expect("1E+2", TG_OK, -1, "capital exponent with sign");

    canonical_escapes();
    dom();
    limits();
    allocator();
    utf8();
    string_limits();
    tg_engine_free(E);
    return tap_done();
}
