/*
 * test_canon.c -- RFC 8785 canonical form and XXH3 digests: the RFC's own
 * examples, key order by UTF-16 code units (checked against a reference
 * that really converts to UTF-16, both for tg_key_compare and for the
 * parser's member sort, on random objects of every size), string escaping
 * (random strings written with every kind of escape, against a reference
 * writer), idempotence.  The exact mode (TG_CANON_EXACT): the boundaries
 * of a double's integers and layouts, exponents of any length, and, on the
 * literals of spec/data/exact_numbers.tsv (written by Python's Decimal) and
 * on random spellings of random decimals: exact-form equality is decimal
 * equality, and the form is RFC 8785's wherever the double spells the
 * source.
 */
#include "tap.h"
#include "toolgate.h"

#include <stdlib.h>

static tg_engine_t *E;

static void canon_is(const char *in, const char *want, const char *name)
{
    tg_buf_t b;
    tg_error_t err;
    tg_buf_init(&b, E);
    if (tg_canon(E, in, strlen(in), &b, &err) != TG_OK) {
        tap_ok(0, name);
        printf("#   error %s: %s\n", tg_code_name(err.code), err.message);
    } else {
        tap_is_mem(b.data, b.len, want, name);
    }
    tg_buf_free(&b);
}

/* The form of json in mode into b (reset first); 0 when it did not parse. */
static int form(const char *json, size_t len, int mode, tg_buf_t *b)
{
    tg_doc_t *d;
    int rc;
    tg_buf_reset(b);
    if (tg_parse(E, json, len, &d, NULL) != TG_OK)
        return 0;
    rc = tg_canon_value_mode(tg_doc_root(d), mode, b, NULL);
    tg_doc_free(d);
    return rc == TG_OK;
}

static void exact_is(const char *in, const char *want, const char *name)
{
    tg_buf_t b;
    tg_buf_init(&b, E);
    if (!form(in, strlen(in), TG_CANON_EXACT, &b))
        tap_ok(0, name);
    else
        tap_is_mem(b.data, b.len, want, name);
    tg_buf_free(&b);
}

/* Whether a and b have the same exact form. */
static int same_exact(const char *a, const char *b)
{
    tg_buf_t x, y;
    int same;
    tg_buf_init(&x, E);
    tg_buf_init(&y, E);
    same = form(a, strlen(a), TG_CANON_EXACT, &x) && form(b, strlen(b), TG_CANON_EXACT, &y) &&
           x.len == y.len && memcmp(x.data, y.data, x.len) == 0;
    tg_buf_free(&x);
    tg_buf_free(&y);
    return same;
}

static int round_trips(const char *json)
{
    tg_doc_t *d;
    int r;
    if (tg_parse(E, json, strlen(json), &d, NULL) != TG_OK)
        return -1;
    r = tg_num_round_trips(tg_doc_root(d));
    tg_doc_free(d);
    return r;
}

/* Reference order: decode UTF-8 to UTF-16 code units and compare those. */
static size_t to_utf16(const unsigned char *s, size_t n, unsigned *out)
{
    size_t i = 0, k = 0;
    while (i < n) {
        unsigned c = s[i], cp;
        int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        cp = len == 1 ? c : c & (0xFF >> (len + 1));
        for (int j = 1; j < len; j++)
            cp = (cp << 6) | (s[i + j] & 0x3F);
        i += (size_t)len;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            out[k++] = 0xD800 + (cp >> 10);
            out[k++] = 0xDC00 + (cp & 0x3FF);
        } else {
            out[k++] = cp;
        }
    }
    return k;
}

static int ref_compare(const char *a, size_t an, const char *b, size_t bn)
{
    unsigned ua[64], ub[64];
    size_t na = to_utf16((const unsigned char *)a, an, ua);
    size_t nb = to_utf16((const unsigned char *)b, bn, ub);
    for (size_t i = 0; i < na && i < nb; i++)
        if (ua[i] != ub[i])
            return ua[i] < ub[i] ? -1 : 1;
    return na < nb ? -1 : na > nb ? 1 : 0;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A random short UTF-8 string drawn from the ranges where UTF-8 and
 * UTF-16 orders disagree. */
static size_t random_key(char *out)
{
    static const unsigned picks[] = {0x41,   0x7A,   0xE9,   0x7FF,   0x20AC,  0xD7FF,  0xE000,
                                     0xFB33, 0xFFFD, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF};
    size_t len = 0, n = 1 + rnd() % 4;
    for (size_t i = 0; i < n; i++) {
        unsigned cp = picks[rnd() % (sizeof picks / sizeof picks[0])];
        if (cp < 0x80) {
            out[len++] = (char)cp;
        } else if (cp < 0x800) {
            out[len++] = (char)(0xC0 | (cp >> 6));
            out[len++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out[len++] = (char)(0xE0 | (cp >> 12));
            out[len++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            out[len++] = (char)(0x80 | (cp & 0x3F));
        } else {
            out[len++] = (char)(0xF0 | (cp >> 18));
            out[len++] = (char)(0x80 | ((cp >> 12) & 0x3F));
            out[len++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            out[len++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    return len;
}

static int sign(int x)
{
    return (x > 0) - (x < 0);
}

/* Appends code point cp as UTF-8. */
static size_t put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Random code points, each written into src (JSON string body) in a random
 * legal way -- raw, \uXXXX in either case, a short escape, a surrogate pair
 * -- and into want as JSON.stringify writes it.  Lengths cross the parser's
 * and writer's 16- and 64-byte blocks. */
static void random_string(char *src, size_t *srclen, char *want, size_t *wantlen)
{
    static const unsigned picks[] = {
        'a',  'Z', ' ',  '~',  0x00,  0x01,  0x08,   0x09,   0x0A,   0x0C,    0x0D,    0x1F,    '"',
        '\\', '/', 0x7F, 0xE9, 0x7FF, 0x800, 0x20AC, 0xFFFD, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF};
    static const char hexl[] = "0123456789abcdef", hexu[] = "0123456789ABCDEF";
    size_t n = rnd() % 4 == 0 ? rnd() % 200 : rnd() % 40, s = 0, w = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned cp = rnd() % 3 ? 'a' + (unsigned)(rnd() % 26)
                                : picks[rnd() % (sizeof picks / sizeof picks[0])];
        unsigned how = (unsigned)(rnd() % 3);
        const char *hex = rnd() % 2 ? hexl : hexu;
        /* the source */
        if (cp == '"' || cp == '\\' || cp < 0x20 || how == 0) {
            /* clang-format off */
            const char *sh = cp == '"' ? "\\\"" : cp == '\\' ? "\\\\" : cp == '/' ? "\\/" : cp == 8 ? "\\b"
                           : cp == 9 ? "\\t" : cp == 10 ? "\\n" : cp == 12 ? "\\f" : cp == 13 ? "\\r" : NULL;
            /* clang-format on */
            if (sh && how != 1) {
                memcpy(src + s, sh, 2);
                s += 2;
            } else if (cp < 0x10000) {
                src[s++] = '\\';
                src[s++] = 'u';
                for (int k = 12; k >= 0; k -= 4)
                    src[s++] = hex[(cp >> k) & 15];
            } else {
                unsigned hi = 0xD800 + ((cp - 0x10000) >> 10),
                         lo = 0xDC00 + ((cp - 0x10000) & 0x3FF);
                for (int u = 0; u < 2; u++) {
                    src[s++] = '\\';
                    src[s++] = 'u';
                    for (int k = 12; k >= 0; k -= 4)
                        src[s++] = hex[((u ? lo : hi) >> k) & 15];
                }
            }
        } else {
            s += put_utf8(src + s, cp);
        }
        /* the canonical form */
        if (cp == '"' || cp == '\\') {
            want[w++] = '\\';
            want[w++] = (char)cp;
        } else if (cp == 8 || cp == 9 || cp == 10 || cp == 12 || cp == 13) {
            want[w++] = '\\';
            want[w++] = "btn?fr"[cp - 8];
        } else if (cp < 0x20) {
            w += (size_t)sprintf(want + w, "\\u%04x", cp);
        } else {
            w += put_utf8(want + w, cp);
        }
    }
    *srclen = s;
    *wantlen = w;
}

/* ---- exact numbers ---------------------------------------------------------- */

static char *dup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(malloc(n), s, n);
}

typedef struct xrow {
    char *literal, *want, *got;
    size_t got_len;
    long group;
    int round_trips;
} xrow;

/* Every row of exact_numbers.tsv: the form is Python's, round-trips is
 * Python's (float repr), and then the form is RFC 8785's; the form re-reads
 * as itself and as the source's double; and over every pair of rows, equal
 * forms are exactly equal Decimals (same group). */
static void exact_table(const char *path)
{
    FILE *f = fopen(path, "r");
    static char line[4096];
    xrow *rows = NULL;
    size_t n = 0, cap = 0, bad = 0, pairs_bad = 0, equal_pairs = 0;
    tg_buf_t b, rfc, again;

    if (!tap_ok(f != NULL, "exact_numbers.tsv opens")) {
        printf("#   path: %s\n", path);
        return;
    }
    tg_buf_init(&b, E);
    tg_buf_init(&rfc, E);
    tg_buf_init(&again, E);
    while (fgets(line, sizeof line, f)) {
        char *lit = strtok(line, "\t\n"), *want = strtok(NULL, "\t\n"),
             *group = strtok(NULL, "\t\n"), *rt = strtok(NULL, "\t\n");
        xrow *r;
        if (!lit || lit[0] == '#' || !rt)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            rows = realloc(rows, cap * sizeof *rows);
        }
        r = &rows[n++];
        r->literal = dup(lit);
        r->want = dup(want);
        r->group = atol(group);
        r->round_trips = atoi(rt);
        r->got = NULL;
        r->got_len = 0;
        if (!form(lit, strlen(lit), TG_CANON_EXACT, &b) ||
            !form(lit, strlen(lit), TG_CANON_RFC8785, &rfc)) {
            if (bad++ < 5)
                printf("#   %s does not parse\n", lit);
            continue;
        }
        r->got = malloc(b.len + 1);
        memcpy(r->got, b.data, b.len);
        r->got_len = b.len;
        if (b.len != strlen(want) || memcmp(b.data, want, b.len) != 0) {
            if (bad++ < 5)
                printf("#   %s: got %.*s, want %s\n", lit, (int)b.len, b.data, want);
        }
        if (round_trips(lit) != r->round_trips ||
            (r->round_trips && (rfc.len != b.len || memcmp(rfc.data, b.data, b.len) != 0))) {
            if (bad++ < 5)
                printf("#   %s: round-trips %d (want %d), RFC 8785 form %.*s\n", lit,
                       round_trips(lit), r->round_trips, (int)rfc.len, rfc.data);
        }
        /* idempotent, and the same double: RFC 8785 of the form is RFC 8785 of the source */
        if (!form(r->got, r->got_len, TG_CANON_EXACT, &again) || again.len != b.len ||
            memcmp(again.data, b.data, b.len) != 0 ||
            !form(r->got, r->got_len, TG_CANON_RFC8785, &again) || again.len != rfc.len ||
            memcmp(again.data, rfc.data, rfc.len) != 0) {
            if (bad++ < 5)
                printf("#   %s: the form %.*s does not re-read as itself\n", lit, (int)b.len,
                       b.data);
        }
    }
    fclose(f);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            int same_form = rows[i].got && rows[j].got && rows[i].got_len == rows[j].got_len &&
                            memcmp(rows[i].got, rows[j].got, rows[i].got_len) == 0;
            equal_pairs += rows[i].group == rows[j].group;
            if (same_form != (rows[i].group == rows[j].group) && pairs_bad++ < 5)
                printf("#   %s and %s: forms %s, Decimal %s\n", rows[i].literal, rows[j].literal,
                       same_form ? "equal" : "differ",
                       rows[i].group == rows[j].group ? "equal" : "differs");
        }
    printf("# %zu literals, %zu pairs, %zu of them equal decimals\n", n, n * (n - 1) / 2,
           equal_pairs);
    tap_ok(n > 500 && bad == 0,
           "exact_numbers.tsv: every form, round trip and re-read as Python says");
    tap_ok(n > 500 && equal_pairs > 500 && pairs_bad == 0,
           "exact_numbers.tsv: equal exact forms are exactly the pairs Decimal finds equal");
    for (size_t i = 0; i < n; i++) {
        free(rows[i].literal);
        free(rows[i].want);
        free(rows[i].got);
    }
    free(rows);
    tg_buf_free(&b);
    tg_buf_free(&rfc);
    tg_buf_free(&again);
}

/* A JSON spelling of -/+ 0.digits x 10^n (nd digits, the first not 0):
 * the point moved, zeros added before or after, the exponent written in
 * one of several ways.  Returns its length. */
static size_t spell(char *out, int negative, const char *digits, int nd, long n)
{
    static const char *const marks[] = {"e", "E", "e+", "E+", "e0", "e00"};
    int lead = rnd() % 3 ? 0 : (int)(1 + rnd() % 6), trail = rnd() % 3 ? 0 : (int)(rnd() % 5);
    int body = nd + trail, point = (int)(rnd() % (unsigned)(body + 1));
    size_t len = 0;
    long e;
    if (negative)
        out[len++] = '-';
    if (lead || point == 0) {
        len += (size_t)sprintf(out + len, "0.%.*s%.*s%.*s", lead, "000000", nd, digits, trail,
                               "00000");
        e = n + lead;
    } else {
        int ip = point < nd ? point : nd;
        len += (size_t)sprintf(out + len, "%.*s%.*s", ip, digits, point - ip, "00000");
        if (point < body)
            len += (size_t)sprintf(out + len, ".%.*s%.*s", nd - ip, digits + ip,
                                   body - (point > nd ? point : nd), "00000");
        e = n - point;
    }
    if (e < 0)
        len += (size_t)sprintf(out + len, "%s%ld", rnd() % 2 ? "e" : "E", e);
    else if (e > 0 || rnd() % 4 == 0)
        len += (size_t)sprintf(out + len, "%s%ld", marks[rnd() % 6], e);
    return len;
}

/* Random decimals, each spelled twice: the two give one exact form, which
 * differs from its neighbour's (one unit more in the last digit). */
static void exact_random(int rounds)
{
    int bad = 0;
    for (int i = 0; i < rounds; i++) {
        char digits[48], next[48], a[128], b[128], c[128];
        int nd = 1 + (int)(rnd() % 40), negative = (int)(rnd() % 2);
        long n = rnd() % 4 ? (long)(rnd() % 60) - 25 : (long)(rnd() % 600) - 320;
        digits[0] = (char)('1' + rnd() % 9);
        for (int k = 1; k < nd; k++)
            digits[k] = (char)('0' + rnd() % 10);
        while (nd > 1 && digits[nd - 1] == '0')
            nd--;
        digits[nd] = '\0';
        memcpy(next, digits, (size_t)nd + 1);
        if (next[nd - 1] == '9') /* keep it one digit run: 0.x9 + 1 unit would carry */
            next[nd - 1] = '8';
        else
            next[nd - 1]++;
        a[spell(a, negative, digits, nd, n)] = '\0';
        b[spell(b, negative, digits, nd, n)] = '\0';
        c[spell(c, negative, next, nd, n)] = '\0';
        if ((!same_exact(a, b) || same_exact(a, c)) && bad++ < 5)
            printf("#   %s, %s and %s\n", a, b, c);
    }
    tap_ok(bad == 0, "random decimals: two spellings, one exact form; the neighbour's differs");
}

int main(void)
{
    E = tg_engine_new(NULL, NULL, NULL, NULL);

    /* RFC 8785 section 3.2.2 */
    canon_is(
        "{\n  \"numbers\": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],\n"
        "  \"string\": \"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\\"\\/\",\n"
        "  \"literals\": [null, true, false]\n}",
        "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
        "\"string\":\"\xe2\x82\xac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}",
        "RFC 8785 3.2.2 example");
    /* RFC 8785 section 3.2.3: sorting */
    canon_is(
        "{\n  \"\\u20ac\": \"Euro Sign\",\n  \"\\r\": \"Carriage Return\",\n"
        "  \"\\ufb33\": \"Hebrew Letter Dalet With Dagesh\",\n  \"1\": \"One\",\n"
        "  \"\\ud83d\\ude00\": \"Emoji: Grinning Face\",\n  \"\\u0080\": \"Control\",\n"
        "  \"\\u00f6\": \"Latin Small Letter O With Diaeresis\"\n}",
        "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\","
        "\"\xc3\xb6\":\"Latin Small Letter O With Diaeresis\",\"\xe2\x82\xac\":\"Euro Sign\","
        "\"\xf0\x9f\x98\x80\":\"Emoji: Grinning Face\",\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}",
        "RFC 8785 3.2.3 sorting example");

    /* astral (surrogate pairs D83D..) sort before BMP characters above U+E000 */
    canon_is("{\"\\uffff\":1,\"\\ud800\\udc00\":2,\"\\ue000\":3,\"\\ud7ff\":4}",
             "{\"\xed\x9f\xbf\":4,\"\xf0\x90\x80\x80\":2,\"\xee\x80\x80\":3,\"\xef\xbf\xbf\":1}",
             "U+D7FF < U+10000 < U+E000 < U+FFFF in UTF-16 order");
    canon_is("{\"ab\":1,\"a\":2,\"\":3,\"b\":4,\"aa\":5}",
             "{\"\":3,\"a\":2,\"aa\":5,\"ab\":1,\"b\":4}", "prefixes sort first");

    /* strings: the minimal escapes */
    canon_is(
        "\"\\u0000\\u0001\\u001f\\b\\t\\n\\f\\r\\\"\\\\\\/\\u007f\\u2028\\u2029\\u00e9\"",
        "\"\\u0000\\u0001\\u001f\\b\\t\\n\\f\\r\\\"\\\\/\x7f\xe2\x80\xa8\xe2\x80\xa9\xc3\xa9\"",
        "string escapes as ECMAScript JSON.stringify writes them");
    /* the escapes JSON.stringify writes come out as they went in; any
     * other, or the long form of one with a short form, is rewritten */
    canon_is("[\"line\\none\\ttab \\\"q\\\" \\\\ \\b\\f\\r \\u0000\\u001f\\u000b\"]",
             "[\"line\\none\\ttab \\\"q\\\" \\\\ \\b\\f\\r \\u0000\\u001f\\u000b\"]",
             "canonical escapes, as written");
    canon_is("\"a\\n\\u001F\"", "\"a\\n\\u001f\"", "an uppercase \\u001F after a canonical escape");
    canon_is("\"a\\n\\u000a\\u0008\"", "\"a\\n\\n\\b\"", "\\u000a and \\u0008 have short forms");
    canon_is("\"a\\n\\/\"", "\"a\\n/\"", "\\/ after a canonical escape");
    canon_is("\"a\\n\\u00e9\"", "\"a\\n\xc3\xa9\"", "\\u00e9 after a canonical escape");
    canon_is("{\"k\":\"a\\nb\",\"j\":[\"\\\"\"],\"a\\tb\":{\"x\":\"\\r\"}}",
             "{\"a\\tb\":{\"x\":\"\\r\"},\"j\":[\"\\\"\"],\"k\":\"a\\nb\"}",
             "canonical escapes in member values and keys");
    exact_is("[\"a\\nb\",\"\\u001f\"]", "[\"a\\nb\",\"\\u001f\"]",
             "canonical escapes in the exact form");
    canon_is("[ ]", "[]", "empty array");
    canon_is("{ }", "{}", "empty object");
    canon_is("[{\"b\":[{\"d\":1,\"c\":2}],\"a\":{}}]", "[{\"a\":{},\"b\":[{\"c\":2,\"d\":1}]}]",
             "nested sorting");
    canon_is("[-0, 0.0, -0.0, 1.0e0, 10, 1e1]", "[0,0,0,1,10,10]", "number forms");

    /* key order: random keys from the tricky ranges against a real UTF-16 compare */
    {
        int bad = 0;
        for (int i = 0; i < 200000; i++) {
            char a[32], b[32];
            size_t an = random_key(a), bn = random_key(b);
            if (sign(tg_key_compare(a, an, b, bn)) != ref_compare(a, an, b, bn))
                bad++;
        }
        tap_ok(bad == 0, "tg_key_compare agrees with a UTF-16 reference on 200,000 random pairs");
    }

    /* the parser's member sort: random objects of 1..40 members (sorting
     * networks up to 8, insertion up to 16, merging above), keys from the
     * tricky ranges, some sharing long prefixes, some duplicated */
    {
        int bad = 0, dups = 0;
        static char json[65536], keys[64][80];
        size_t klen[64];
        for (int i = 0; i < 20000; i++) {
            size_t n = 1 + rnd() % (rnd() % 2 ? 8 : 40), len = 0;
            int dup = 0;
            tg_doc_t *doc;
            tg_error_t err;
            json[len++] = '{';
            for (size_t k = 0; k < n; k++) {
                if (rnd() % 4 == 0) { /* a long shared prefix */
                    memcpy(keys[k], "shared-prefix-", 14);
                    klen[k] = 14 + random_key(keys[k] + 14);
                } else {
                    klen[k] = random_key(keys[k]);
                }
                if (rnd() % 2) /* fewer accidental duplicates */
                    for (int t = (int)(rnd() % 4); t >= 0; t--)
                        keys[k][klen[k]++] = (char)('a' + rnd() % 26);
                if (rnd() % 64 == 0)
                    klen[k] = 0;            /* the empty key */
                if (k && rnd() % 50 == 0) { /* a duplicate */
                    size_t j = rnd() % k;
                    memcpy(keys[k], keys[j], klen[j]);
                    klen[k] = klen[j];
                }
                for (size_t j = 0; j < k; j++)
                    dup |= klen[j] == klen[k] && memcmp(keys[j], keys[k], klen[k]) == 0;
                len += (size_t)sprintf(json + len, "%s\"", k ? "," : "");
                memcpy(json + len, keys[k], klen[k]);
                len += klen[k];
                len += (size_t)sprintf(json + len, "\":%zu", k);
            }
            json[len++] = '}';
            if (tg_parse(E, json, len, &doc, &err) != TG_OK) {
                if (!dup || err.code != TG_E_DUPLICATE_KEY)
                    bad++;
                dups++;
                continue;
            }
            if (dup)
                bad++;
            for (size_t k = 1; k < n; k++) {
                size_t la, lb;
                const char *a = tg_key_at(tg_doc_root(doc), k - 1, &la);
                const char *b = tg_key_at(tg_doc_root(doc), k, &lb);
                if (ref_compare(a, la, b, lb) >= 0)
                    bad++;
            }
            tg_doc_free(doc);
        }
        printf("# %d objects had a duplicate key\n", dups);
        tap_ok(bad == 0 && dups > 100,
               "20,000 random objects: members in UTF-16 order, duplicates refused");
    }

    /* strings: every way of writing a character, against a reference */
    {
        static char src[4096], want[4096], json[8192];
        int bad = 0;
        tg_buf_t b;
        tg_buf_init(&b, E);
        for (int i = 0; i < 50000; i++) {
            size_t sl, wl, len;
            random_string(src, &sl, want, &wl);
            /* as a value, and as a key */
            len = (size_t)sprintf(json, "[\"");
            memcpy(json + len, src, sl);
            len += sl;
            len += (size_t)sprintf(json + len, "\",{\"");
            memcpy(json + len, src, sl);
            len += sl;
            len += (size_t)sprintf(json + len, "\":0}]");
            tg_buf_reset(&b);
            if (tg_canon(E, json, len, &b, NULL) != TG_OK || b.len != 2 * wl + 11 ||
                memcmp(b.data + 2, want, wl) != 0 || memcmp(b.data + wl + 6, want, wl) != 0) {
                if (bad++ < 3)
                    printf("#   in:  %.*s\n#   out: %.*s\n#   want: %.*s\n", (int)len, json,
                           (int)b.len, b.data, (int)wl, want);
            }
        }
        tg_buf_free(&b);
        tap_ok(bad == 0,
               "50,000 random strings, as values and keys: the minimal escapes, raw UTF-8");
    }

    /* canonical output is a fixed point */
    {
        const char *in = "{\"z\":[1.5e-7,{\"\\u00e9\":\"\\ud83d\\ude00\"},1e21],\"a\":\"\\u001f\"}";
        tg_buf_t b1, b2;
        tg_buf_init(&b1, E);
        tg_buf_init(&b2, E);
        tg_canon(E, in, strlen(in), &b1, NULL);
        tg_canon(E, b1.data, b1.len, &b2, NULL);
        tap_ok(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0,
               "canon(canon(x)) == canon(x)");
        tg_buf_free(&b1);
        tg_buf_free(&b2);
    }

    /* the exact mode (TG_CANON_EXACT) */
    {
        static const struct {
            const char *in, *want, *name;
        } cases[] = {
            {"9007199254740992", "9007199254740992", "2^53"},
            {"9007199254740993", "9007199254740993", "2^53 + 1 keeps its last digit"},
            {"-9007199254740993", "-9007199254740993", "-2^53 - 1"},
            {"18446744073709551616", "18446744073709551616", "2^64, a double, every digit"},
            {"12345678901234567890", "12345678901234567890", "12345678901234567890"},
            {"1e21", "1e+21", "1e21 as RFC 8785 writes it"},
            {"1000000000000000000000", "1e+21", "10^21 in the exponent layout"},
            {"999999999999999999999", "999999999999999999999", "21 integer digits, plain"},
            {"1e-7", "1e-7", "1e-7"},
            {"0.0000001", "1e-7", "0.0000001 is 1e-7"},
            {"0.000001", "0.000001", "0.000001 stays plain"},
            {"0.1", "0.1", "0.1 stays 0.1"},
            {"1.0", "1", "1.0 is 1"},
            {"0.1000000000000000000001", "0.1000000000000000000001",
             "0.1000000000000000000001 keeps its digits"},
            {"123456789012345678901234567890", "1.2345678901234567890123456789e+29",
             "a long mantissa in the exponent layout"},
            {"-0.00000123456789012345678901234", "-0.00000123456789012345678901234",
             "a long fraction, plain"},
            {"1.234567890123456789012e-7", "1.234567890123456789012e-7",
             "a long mantissa below 1e-6"},
            {"1e-400", "1e-400", "1e-400 (the double is 0)"},
            {"[-0,0.0,0e99,-0.000e-5]", "[0,0,0,0]", "every zero is 0"},
            /* exponents beyond int64, with the sum carrying and borrowing */
            {"1e-1000000000000000000000", "1e-1000000000000000000000", "a 22-digit exponent"},
            {"0.001e-999999999999999999997", "1e-1000000000000000000000",
             "a long exponent whose sum carries"},
            {"10e-1000000000000000000000", "1e-999999999999999999999",
             "a long exponent whose sum borrows"},
            {"123.45e-10000000000000000000000000000000000000001",
             "1.2345e-9999999999999999999999999999999999999999",
             "a 41-digit exponent, the borrow running through 40 digits"},
            {"12.5e-1000000000000000000", "1.25e-999999999999999999", "a 19-digit exponent"},
            {"{\"b\":[12345678901234567890,0.1,1.0],\"a\":{\"x\":9007199254740993}}",
             "{\"a\":{\"x\":9007199254740993},\"b\":[12345678901234567890,0.1,1]}",
             "a document, keys sorted as RFC 8785 does"},
        };
        static const char *const same[] = {
            "1.2345678901234567890e19", "123456789012345678900e-1", "1234567890123456789E+1",
            "0.0000012345678901234567890e25", "12345678901234567890.000"};
        int all = 1;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char name[128];
            snprintf(name, sizeof name, "exact: %s", cases[i].name);
            exact_is(cases[i].in, cases[i].want, name);
        }
        for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
            all &= same_exact(same[i], "12345678901234567890");
        tap_ok(all, "exact: five spellings of 12345678901234567890, one form");
    }
    canon_is("18446744073709551616", "18446744073709552000",
             "RFC 8785: 2^64 as the double's digits");
    canon_is("[12345678901234567890,12345678901234567891]",
             "[12345678901234567000,12345678901234567000]", "RFC 8785: they are one double");
    canon_is("1e-400", "0", "RFC 8785: 1e-400 is 0");
    tap_ok(!same_exact("12345678901234567890", "12345678901234567891") &&
               !same_exact("0.1000000000000000000001", "0.1"),
           "exact: 12345678901234567890 and ...891 differ, and so do 0.1000000000000000000001 "
           "and 0.1");
    tap_ok(!same_exact("1e-1000000000000000000000", "1e-1000000000000000000001") &&
               !same_exact("1e-10000000000000000", "1e-100000000000000000"),
           "exact: long exponents that differ give forms that differ");
    tap_ok(round_trips("0.1") == 1 && round_trips("1e21") == 1 &&
               round_trips("9007199254740992") == 1 && round_trips("123456789012345678") == 0 &&
               round_trips("18446744073709551616") == 0 && round_trips("1e-400") == 0 &&
               round_trips("-0") == 1 && round_trips("\"1\"") == 0,
           "tg_num_round_trips");
    {
        const char *data = getenv("TG_SPEC_DATA");
        char path[512];
        snprintf(path, sizeof path, "%s/exact_numbers.tsv", data ? data : "spec/data");
        exact_table(path);
    }
    exact_random(50000);

    /* hashing: XXH3-128 vectors (as printed by xxhsum -H2) */
    {
        char hex[TG_HASH_HEX];
        tg_hash128_t h;
        tg_hash128("", 0, &h);
        tg_hash128_hex(&h, hex);
        tap_is_mem(hex, 32, "99aa06d3014798d86001c324468d497f", "XXH3-128 of the empty string");
        tg_hash128("{}", 2, &h);
        tg_hash128_hex(&h, hex);
        tap_is_mem(hex, 32, "dc7048f8f8747f561349cde127705c16", "XXH3-128 of {}");
        tap_ok(tg_hash64("abc", 3) == 0x78af5f94892f3950ull, "XXH3-64 of abc");
    }
    {
        tg_doc_t *d1, *d2;
        tg_hash128_t h1, h2;
        tg_parse(E, "{\"b\":1,\"a\":[1.0,2]}", 19, &d1, NULL);
        tg_parse(E, " { \"a\" : [ 1 , 2e0 ] , \"b\" : 1 } ", 33, &d2, NULL);
        tg_hash_value(E, tg_doc_root(d1), &h1, NULL);
        tg_hash_value(E, tg_doc_root(d2), &h2, NULL);
        tap_ok(h1.hi == h2.hi && h1.lo == h2.lo,
               "equal documents in different spellings hash equal");
        tg_doc_free(d1);
        tg_doc_free(d2);
    }

    tg_engine_free(E);
    return tap_done();
}
