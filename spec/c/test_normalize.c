/*
 * test_normalize.c -- normalization plans and tg_canon_normalized: the
 * path rules (against Go's path.Clean table and the cases the design
 * names), trim / lower / id and their fixed order, pattern matching with
 * "*", escapes and indexes, what is never touched (keys, non-strings),
 * plan NULL == tg_canon_value, argument errors, and allocation failures.
 */
#include "acct.h"
#include "tap.h"
#include "toolgate.h"

#include <stdlib.h>

static tg_engine_t *E;

static tg_doc_t *parse(tg_engine_t *e, const char *json)
{
    tg_doc_t *d = NULL;
    tg_error_t err;
    if (tg_parse(e, json, strlen(json), &d, &err) != TG_OK)
        printf("# parse %s: %s\n", json, err.message);
    return d;
}

/* The normalized canonical form (in mode) of json under plan n. */
static void norm_mode_is(const tg_norm_t *n, int mode, const char *json, const char *want,
                         const char *name)
{
    tg_doc_t *d = parse(E, json);
    tg_buf_t b;
    tg_error_t err;
    int rc;
    tg_buf_init(&b, E);
    rc = d ? tg_canon_normalized(n, tg_doc_root(d), mode, &b, &err) : TG_E_ARG;
    if (rc != TG_OK) {
        tap_ok(0, name);
        printf("#   error %s: %s\n", tg_code_name(rc), rc == TG_E_ARG ? "" : err.message);
    } else {
        tap_is_mem(b.data, b.len, want, name);
    }
    tg_buf_free(&b);
    tg_doc_free(d);
}

static void norm_is(const tg_norm_t *n, const char *json, const char *want, const char *name)
{
    norm_mode_is(n, TG_CANON_RFC8785, json, want, name);
}

static tg_norm_t *plan1(const char *pattern, unsigned ops)
{
    tg_error_t err;
    tg_norm_t *n = tg_norm_new(E, &err);
    if (tg_norm_add_rule(n, pattern, strlen(pattern), ops, &err) != TG_OK)
        printf("# add_rule %s: %s\n", pattern, err.message);
    return n;
}

/* JSON string literal of s (test inputs hold no characters that need escapes). */
static void quoted(char *out, size_t cap, const char *s)
{
    snprintf(out, cap, "\"%s\"", s);
}

static void paths(void)
{
    /* Go's path.Clean tests (src/path/path_test.go), then the design's. */
    static const char *const cases[][2] = {
        {"", "."},
        {"abc", "abc"},
        {"abc/def", "abc/def"},
        {"a/b/c", "a/b/c"},
        {".", "."},
        {"..", ".."},
        {"../..", "../.."},
        {"../../abc", "../../abc"},
        {"/abc", "/abc"},
        {"/", "/"},
        {"abc/", "abc"},
        {"abc/def/", "abc/def"},
        {"a/b/c/", "a/b/c"},
        {"./", "."},
        {"../", ".."},
        {"../../", "../.."},
        {"/abc/", "/abc"},
        {"abc//def//ghi", "abc/def/ghi"},
        {"//abc", "/abc"},
        {"///abc", "/abc"},
        {"//abc//", "/abc"},
        {"abc//", "abc"},
        {"abc/./def", "abc/def"},
        {"/./abc/def", "/abc/def"},
        {"abc/.", "abc"},
        {"abc/def/ghi/../jkl", "abc/def/jkl"},
        {"abc/def/../ghi/../jkl", "abc/jkl"},
        {"abc/def/..", "abc"},
        {"abc/def/../..", "."},
        {"/abc/def/../..", "/"},
        {"abc/def/../../..", ".."},
        {"/abc/def/../../..", "/"},
        {"abc/def/../../../ghi/jkl/../../../mno", "../../mno"},
        {"abc/./../def", "def"},
        {"abc//./../def", "def"},
        {"abc/../../././../def", "../../def"},
        /* the cases the design names */
        {"//", "/"},
        {"a/../..", ".."},
        {"/../a", "/a"},
        {"./a/./b/", "a/b"},
        {"a//b", "a/b"},
        {"/a/b/../../..", "/"},
        {"/..", "/"},
        {"a/..", "."},
        /* names that only look special, and bytes that are not '/' or '.' */
        {"/.../a", "/.../a"},
        {".a/..b/c.", ".a/..b/c."},
        {"a\\\\b/../c", "c"},
        {"C:\\\\x\\\\..", "C:\\\\x\\\\.."},
        {"/\xc3\xa9/./\xe2\x82\xac/", "/\xc3\xa9/\xe2\x82\xac"},
        {" /a/ ", " /a/ "},
    };
    tg_norm_t *n = plan1("", TG_NORM_PATH);
    size_t ok = 0, total = sizeof cases / sizeof cases[0];
    char in[128], want[128], name[300];
    for (size_t i = 0; i < total; i++) {
        quoted(in, sizeof in, cases[i][0]);
        quoted(want, sizeof want, cases[i][1]);
        snprintf(name, sizeof name, "path %s -> %s", in, want);
        norm_is(n, in, want, name);
        ok++;
    }
    tap_ok(ok >= 25, "at least 25 path cases");
    {
        /* long enough to leave the stack scratch: 3000 segments "a/./" */
        size_t reps = 3000, len = reps * 4;
        char *json = malloc(len + 3), *expect = malloc(reps * 2 + 2);
        json[0] = '"';
        for (size_t i = 0; i < reps; i++)
            memcpy(json + 1 + 4 * i, "a/./", 4);
        json[len + 1] = '"';
        json[len + 2] = '\0';
        expect[0] = '"';
        for (size_t i = 0; i < reps; i++)
            memcpy(expect + 1 + 2 * i, "a/", 2);
        expect[reps * 2] = '"'; /* the last '/' goes */
        expect[reps * 2 + 1] = '\0';
        norm_is(n, json, expect, "a 12 KB path is cleaned through heap scratch");
        free(json);
        free(expect);
    }
    tg_norm_free(n);
}

static void operations(void)
{
    tg_error_t err;
    tg_norm_t *n;

    n = plan1("", TG_NORM_TRIM);
    norm_is(n, "\"\\t\\n\\u000b\\f\\r x y \\r\\n\"", "\"x y\"",
            "trim: the six ASCII whitespace bytes, inner ones kept");
    norm_is(n, "\"\\u00a0x\\u3000\"", "\"\xc2\xa0x\xe3\x80\x80\"", "trim: no Unicode spaces");
    norm_is(n, "\"   \"", "\"\"", "trim: all blank becomes empty");
    norm_is(n, "\"\"", "\"\"", "trim: empty stays empty");
    tg_norm_free(n);

    n = plan1("", TG_NORM_LOWER);
    norm_is(n, "\"AbC-XYZ_09\"", "\"abc-xyz_09\"", "lower: ASCII letters");
    norm_is(n, "\"\\u00c9T\\u00c9\"", "\"\xc3\x89t\xc3\x89\"", "lower: no Unicode case mapping");
    norm_is(n, "\"Q\\\"\\\\\\u0001\"", "\"q\\\"\\\\\\u0001\"",
            "lower: output is still escaped canonically");
    norm_is(n, "\"already lower\"", "\"already lower\"", "lower: nothing to do");
    tg_norm_free(n);

    n = plan1("", TG_NORM_ID);
    tap_ok(tg_norm_add_alias(n, "alice", 5, "user:17", 7, &err) == TG_OK, "add alias alice");
    tap_ok(tg_norm_add_alias(n, "/home/a", 7, "user:17", 7, &err) == TG_OK, "add alias /home/a");
    tap_ok(tg_norm_add_alias(n, "user:17", 7, "x", 1, &err) == TG_OK, "add alias user:17 -> x");
    norm_is(n, "\"alice\"", "\"user:17\"", "id: an alias resolves");
    norm_is(n, "\"bob\"", "\"bob\"", "id: an unknown id stays");
    norm_is(n, "\"Alice\"", "\"Alice\"", "id: exact match only");
    norm_is(n, "\"user:17\"", "\"x\"", "id: one lookup, not transitive (alice is user:17, not x)");
    tg_norm_free(n);

    /* order: trim, lower, path, id, whatever rules supplied them */
    n = plan1("/a", TG_NORM_ID);
    tg_norm_add_rule(n, "/a", 2, TG_NORM_PATH, &err);
    tg_norm_add_rule(n, "/a", 2, TG_NORM_LOWER, &err);
    tg_norm_add_rule(n, "/a", 2, TG_NORM_TRIM, &err);
    tg_norm_add_alias(n, "/home/alice", 11, "user:17", 7, &err);
    norm_is(n, "{\"a\":\"  /HOME//Alice/x/../  \"}", "{\"a\":\"user:17\"}",
            "trim, lower, path, then id, from four rules");
    norm_is(n, "{\"a\":\" /a/ \"}", "{\"a\":\"/a\"}", "trim runs before path");
    tg_norm_free(n);
    n = plan1("", TG_NORM_TRIM | TG_NORM_PATH);
    norm_is(n, "\" /a/ \"", "\"/a\"", "trim before path in one rule");
    tg_norm_free(n);
    n = plan1("", TG_NORM_LOWER | TG_NORM_ID);
    tg_norm_add_alias(n, "alice", 5, "u1", 2, &err);
    norm_is(n, "\"ALICE\"", "\"u1\"", "lower before id");
    tg_norm_free(n);
    n = plan1("", TG_NORM_ID | TG_NORM_PATH);
    tg_norm_add_alias(n, "/a/b", 4, "u2", 2, &err);
    norm_is(n, "\"/a//b/\"", "\"u2\"", "path before id");
    tg_norm_free(n);
}

static void patterns(void)
{
    tg_error_t err;
    tg_norm_t *n;
    static const char *const plain_docs[] = {
        "{\"b\":[1.5,1e21,-0,0.30000000000000004,9007199254740993],\"a\":\"\\u00e9\\ud83d\\ude00\"}",
        "{\"\\uffff\":1,\"\\ud800\\udc00\":2,\"\\u0000\":[null,true,false,{}]}",
        "\"\\u001f\\\"\\\\/\"",
        "[1e-7,123e-20,5e-324,1.7976931348623157e308]",
        "{\"path\":\"/a/../b\",\"x\":{\"path\":\"/A/\"},\"l\":[\"/a/\",{\"p\":\" A \"}]}",
        "{\"k\\\"ey\":\"v\\nal\",\"\":\"\",\"1.0\":1.0}",
    };

    n = plan1("/path", TG_NORM_PATH);
    norm_is(n, "{\"path\":\"/a/../b\",\"other\":\"/a/../b\",\"x\":{\"path\":\"/a/../b\"}}",
            "{\"other\":\"/a/../b\",\"path\":\"/b\",\"x\":{\"path\":\"/a/../b\"}}",
            "a pattern matches its whole pointer only");
    tg_norm_free(n);

    n = plan1("/items/*/name", TG_NORM_LOWER);
    norm_is(n, "{\"items\":[{\"name\":\"A\"},{\"name\":\"B\",\"x\":\"C\"}],\"name\":\"D\"}",
            "{\"items\":[{\"name\":\"a\"},{\"name\":\"b\",\"x\":\"C\"}],\"name\":\"D\"}",
            "* matches any array index");
    norm_is(n, "{\"items\":{\"k\":{\"name\":\"A\"},\"*\":{\"name\":\"B\"}}}",
            "{\"items\":{\"*\":{\"name\":\"b\"},\"k\":{\"name\":\"a\"}}}",
            "* matches any key, \"*\" too");
    tg_norm_free(n);

    n = plan1("/*", TG_NORM_LOWER | TG_NORM_TRIM);
    norm_is(
        n,
        "{\"a\":1,\"b\":true,\"c\":null,\"d\":[\"X\"],\"e\":{\"F\":\"G\"},\"n\":1.50,\"s\":\" S \"}",
        "{\"a\":1,\"b\":true,\"c\":null,\"d\":[\"X\"],\"e\":{\"F\":\"G\"},\"n\":1.5,\"s\":\"s\"}",
        "non-strings are never changed; only the level named");
    norm_is(n, "{\"KEY\":\"VAL\",\" K \":\" V \"}", "{\" K \":\"v\",\"KEY\":\"val\"}",
            "keys are never changed");
    norm_is(n, "[\"A\",\"B\"]", "[\"a\",\"b\"]", "/* at an array root");
    norm_is(n, "\"ROOT\"", "\"ROOT\"", "/* does not match the root");
    tg_norm_free(n);

    n = plan1("/a~1b/c~0d", TG_NORM_LOWER);
    norm_is(n, "{\"a/b\":{\"c~d\":\"X\",\"c/d\":\"Y\"},\"a~1b\":{\"c~0d\":\"Z\"}}",
            "{\"a/b\":{\"c/d\":\"Y\",\"c~d\":\"x\"},\"a~1b\":{\"c~0d\":\"Z\"}}",
            "~1 and ~0 unescape");
    tg_norm_free(n);

    n = plan1("/arr/1", TG_NORM_LOWER);
    tg_norm_add_rule(n, "/obj/1", 6, TG_NORM_LOWER, &err);
    tg_norm_add_rule(n, "/arr/01", 7, TG_NORM_TRIM, &err);
    tg_norm_add_rule(n, "/obj/01", 7, TG_NORM_TRIM, &err);
    norm_is(n, "{\"arr\":[\"A\",\"B \",\"C\"],\"obj\":{\"1\":\"D\",\"01\":\" E \",\"0\":\"F\"}}",
            "{\"arr\":[\"A\",\"b \",\"C\"],\"obj\":{\"0\":\"F\",\"01\":\"E\",\"1\":\"d\"}}",
            "index segments: 1 names element 1 and key \"1\"; 01 only the key");
    tg_norm_free(n);

    n = plan1("/", TG_NORM_LOWER);
    tg_norm_add_rule(n, "//x", 3, TG_NORM_LOWER, &err);
    norm_is(n, "{\"\":\"A\",\"x\":\"B\",\"y\":{\"\":{\"x\":\"C\"}}}",
            "{\"\":\"a\",\"x\":\"B\",\"y\":{\"\":{\"x\":\"C\"}}}", "\"/\" names the empty key");
    norm_is(n, "{\"\":{\"\":{\"x\":\"C\"},\"x\":\"D\"}}", "{\"\":{\"\":{\"x\":\"C\"},\"x\":\"d\"}}",
            "\"//x\" names x under the empty key");
    tg_norm_free(n);

    n = plan1("/a/b", TG_NORM_LOWER);
    tg_norm_add_rule(n, "/a", 2, TG_NORM_LOWER, &err);
    norm_is(n, "{\"a\":{\"b\":\"X\"}}", "{\"a\":{\"b\":\"x\"}}",
            "a rule naming an object leaves it alone");
    norm_is(n, "{\"a\":\"X\"}", "{\"a\":\"x\"}", "a longer rule does not stop a shorter one");
    tg_norm_free(n);

    {
        /* the writer's filter works on lengths and indexes mod 64: past 64 too */
        char json[1024], want[1024], pat[128];
        size_t len = 0, wl = 0;
        len += (size_t)sprintf(json + len, "{\"a\":[");
        wl += (size_t)sprintf(want + wl, "{\"a\":[");
        for (int i = 0; i < 70; i++) {
            len += (size_t)sprintf(json + len, "%s\"X\"", i ? "," : "");
            wl += (size_t)sprintf(want + wl, "%s\"%s\"", i ? "," : "", i == 65 ? "x" : "X");
        }
        memset(pat, 'k', 70);
        pat[70] = '\0';
        len += (size_t)sprintf(json + len, "],\"%s\":\"Y\",\"%.6s\":\"Z\"}", pat, pat);
        /* (70 mod 64 is 6: the 6-byte key passes the filter and must still not match) */
        wl += (size_t)sprintf(want + wl, "],\"%.6s\":\"Z\",\"%s\":\"y\"}", pat, pat);
        n = plan1("/a/65", TG_NORM_LOWER);
        {
            char p2[80];
            int l = snprintf(p2, sizeof p2, "/%s", pat);
            tg_norm_add_rule(n, p2, (size_t)l, TG_NORM_LOWER, &err);
        }
        norm_is(n, json, want, "index 65 and a 70-byte key (lengths and indexes past 64)");
        tg_norm_free(n);
    }
    {
        /* 40 rules of 3 segments: the rule lists leave the C stack */
        char pat[32];
        n = tg_norm_new(E, &err);
        for (int i = 0; i < 40; i++) {
            int len = snprintf(pat, sizeof pat, "/*/k%d/*", i);
            tg_norm_add_rule(n, pat, (size_t)len, TG_NORM_LOWER, &err);
        }
        norm_is(
            n,
            "{\"x\":{\"k7\":[\"A\",{\"B\":\"C\"}],\"k99\":[\"D\"]},\"y\":{\"k39\":{\"z\":\"E\"}}}",
            "{\"x\":{\"k7\":[\"a\",{\"B\":\"C\"}],\"k99\":[\"D\"]},\"y\":{\"k39\":{\"z\":\"e\"}}}",
            "many deep rules");
        tg_norm_free(n);
    }

    /* plan NULL, an empty plan, and a plan that matches nothing are
     * tg_canon_value_mode, in either mode */
    {
        tg_norm_t *empty = tg_norm_new(E, &err), *miss = plan1("/nowhere/*", TG_NORM_LOWER);
        int same = 1;
        tg_norm_add_rule(miss, "/l/5", 4, TG_NORM_PATH, &err);
        for (size_t i = 0; i < 2 * (sizeof plain_docs / sizeof plain_docs[0]); i++) {
            int mode = i % 2 ? TG_CANON_EXACT : TG_CANON_RFC8785;
            tg_doc_t *d = parse(E, plain_docs[i / 2]);
            tg_buf_t a, b, c, x;
            tg_buf_init(&a, E);
            tg_buf_init(&b, E);
            tg_buf_init(&c, E);
            tg_buf_init(&x, E);
            same &= tg_canon_value_mode(tg_doc_root(d), mode, &a, &err) == TG_OK;
            same &= tg_canon_normalized(NULL, tg_doc_root(d), mode, &b, &err) == TG_OK;
            same &= tg_canon_normalized(empty, tg_doc_root(d), mode, &c, &err) == TG_OK;
            same &= tg_canon_normalized(miss, tg_doc_root(d), mode, &x, &err) == TG_OK;
            same &= a.len == b.len && memcmp(a.data, b.data, a.len) == 0;
            same &= a.len == c.len && memcmp(a.data, c.data, a.len) == 0;
            same &= a.len == x.len && memcmp(a.data, x.data, a.len) == 0;
            tg_buf_free(&a);
            tg_buf_free(&b);
            tg_buf_free(&c);
            tg_buf_free(&x);
            tg_doc_free(d);
        }
        tap_ok(same, "plan NULL, an empty plan and a plan that matches nothing give "
                     "tg_canon_value_mode's bytes, in both modes");
        tg_norm_free(empty);
        tg_norm_free(miss);
    }
    /* the exact mode: numbers as decimals, strings as the rules say */
    {
        const char *doc = "{\"p\":\"/A//b/\",\"n\":12345678901234567890,"
                          "\"m\":[9007199254740993,1.0,\" X \"],\"q\":0.1000000000000000000001}";
        n = plan1("/p", TG_NORM_PATH | TG_NORM_LOWER);
        tg_norm_add_rule(n, "/m/*", 4, TG_NORM_TRIM, &err);
        norm_mode_is(n, TG_CANON_EXACT, doc,
                     "{\"m\":[9007199254740993,1,\"X\"],\"n\":12345678901234567890,\"p\":\"/a/b\","
                     "\"q\":0.1000000000000000000001}",
                     "exact mode: rewritten strings, every digit of the numbers");
        norm_is(n, doc,
                "{\"m\":[9007199254740992,1,\"X\"],\"n\":12345678901234567000,\"p\":\"/a/b\","
                "\"q\":0.1}",
                "RFC 8785 mode: the same strings, numbers as doubles");
        norm_mode_is(n, TG_CANON_EXACT, "[1e21,1e-7,0.5,9007199254740992]",
                     "[1e+21,1e-7,0.5,9007199254740992]",
                     "exact mode: numbers a double spells are as RFC 8785 writes them");
        tg_norm_free(n);
    }
    {
        /* values from tg_value_copy-like sources: a call's arguments */
        tg_call_t *call;
        const char *text =
            "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"p\\\":\\\"/A//b/\\\",\\\"q\\\":\\\"Q\\\"}\"}}";
        tg_buf_t b;
        tg_buf_init(&b, E);
        n = plan1("/p", TG_NORM_PATH | TG_NORM_LOWER);
        if (tg_call_decode(E, text, strlen(text), TG_FORMAT_AUTO, &call, &err) == TG_OK) {
            tap_ok(tg_canon_normalized(n, tg_call_arguments(call), TG_CANON_RFC8785, &b, &err) ==
                       TG_OK,
                   "OpenAI arguments normalize");
            tap_is_mem(b.data, b.len, "{\"p\":\"/a/b\",\"q\":\"Q\"}",
                       "OpenAI arguments, normalized");
            tg_call_free(call);
        } else {
            tap_ok(0, "decode call");
        }
        tg_buf_free(&b);
        tg_norm_free(n);
    }
}

static void errors(void)
{
    tg_error_t err;
    tg_norm_t *n = tg_norm_new(E, &err);
    char pat[TG_FINDING_POINTER_MAX + 2];
    tg_buf_t b;
    tg_doc_t *d;

    tap_ok(tg_norm_new(NULL, &err) == NULL && err.code == TG_E_ARG,
           "norm_new(NULL) is BAD_ARGUMENT");
    tap_ok(tg_norm_add_rule(n, "/a", 2, 0, &err) == TG_E_ARG, "ops 0 is BAD_ARGUMENT");
    tap_ok(tg_norm_add_rule(n, "/a", 2, 16, &err) == TG_E_ARG, "unknown op bit is BAD_ARGUMENT");
    tap_ok(tg_norm_add_rule(n, "a", 1, TG_NORM_TRIM, &err) == TG_E_ARG,
           "a pattern without '/' is BAD_ARGUMENT");
    tap_ok(tg_norm_add_rule(n, "/a~", 3, TG_NORM_TRIM, &err) == TG_E_ARG && err.offset == 2,
           "a trailing '~' is BAD_ARGUMENT at its offset");
    tap_ok(tg_norm_add_rule(n, "/a~2", 4, TG_NORM_TRIM, &err) == TG_E_ARG, "~2 is BAD_ARGUMENT");
    tap_ok(tg_norm_add_rule(n, NULL, 1, TG_NORM_TRIM, &err) == TG_E_ARG,
           "NULL pattern is BAD_ARGUMENT");
    tap_ok(tg_norm_add_rule(NULL, "", 0, TG_NORM_TRIM, &err) == TG_E_ARG,
           "NULL plan is BAD_ARGUMENT");
    memset(pat, 'x', sizeof pat);
    pat[0] = '/';
    tap_ok(tg_norm_add_rule(n, pat, TG_FINDING_POINTER_MAX, TG_NORM_TRIM, &err) == TG_OK,
           "a pattern of TG_FINDING_POINTER_MAX bytes is accepted");
    tap_ok(tg_norm_add_rule(n, pat, TG_FINDING_POINTER_MAX + 1, TG_NORM_TRIM, &err) == TG_E_ARG,
           "one byte more is BAD_ARGUMENT");
    tap_ok(tg_norm_add_alias(n, "a", 1, "b", 1, &err) == TG_OK, "alias a -> b");
    tap_ok(tg_norm_add_alias(n, "a", 1, "b", 1, &err) == TG_OK, "the same alias again is fine");
    tap_ok(tg_norm_add_alias(n, "a", 1, "c", 1, &err) == TG_E_ARG,
           "a conflicting alias is BAD_ARGUMENT");
    tap_ok(tg_norm_add_alias(n, "\xff", 1, "c", 1, &err) == TG_E_ARG,
           "an alias that is not UTF-8 is BAD_ARGUMENT");
    tap_ok(tg_norm_add_alias(n, "c", 1, "\xed\xa0\x80", 3, &err) == TG_E_ARG,
           "a surrogate in an alias target is BAD_ARGUMENT");
    tap_ok(tg_norm_add_alias(n, "", 0, "empty", 5, &err) == TG_OK,
           "an alias from the empty string");
    tg_buf_init(&b, E);
    tap_ok(tg_canon_normalized(n, NULL, TG_CANON_RFC8785, &b, &err) == TG_E_ARG,
           "canon_normalized(NULL value) is BAD_ARGUMENT");
    d = parse(E, "[1]");
    tap_ok(tg_canon_normalized(n, tg_doc_root(d), TG_CANON_RFC8785, NULL, &err) == TG_E_ARG,
           "canon_normalized(NULL buffer) is BAD_ARGUMENT");
    tap_ok(tg_canon_normalized(n, tg_doc_root(d), 2, &b, &err) == TG_E_ARG &&
               tg_canon_normalized(NULL, tg_doc_root(d), -1, &b, &err) == TG_E_ARG &&
               tg_canon_value_mode(tg_doc_root(d), 2, &b, &err) == TG_E_ARG,
           "an unknown canonical mode is BAD_ARGUMENT, with a plan and without");
    tg_doc_free(d);
    tg_buf_free(&b);
    tg_norm_free(n);
    tg_norm_free(NULL);

    /* many aliases: the table grows and every one still resolves */
    {
        char from[32], to[32], json[48], want[48];
        int all = 1;
        n = plan1("", TG_NORM_ID);
        for (int i = 0; i < 2000; i++) {
            int fl = snprintf(from, sizeof from, "id-%d", i),
                tl = snprintf(to, sizeof to, "canonical-%d", i % 7);
            all &= tg_norm_add_alias(n, from, (size_t)fl, to, (size_t)tl, &err) == TG_OK;
        }
        tap_ok(all, "2000 aliases added");
        for (int i = 0; i < 2000; i += 199) {
            tg_buf_t out;
            tg_doc_t *doc;
            snprintf(json, sizeof json, "\"id-%d\"", i);
            snprintf(want, sizeof want, "\"canonical-%d\"", i % 7);
            doc = parse(E, json);
            tg_buf_init(&out, E);
            all &=
                tg_canon_normalized(n, tg_doc_root(doc), TG_CANON_RFC8785, &out, &err) == TG_OK &&
                out.len == strlen(want) && memcmp(out.data, want, out.len) == 0;
            tg_buf_free(&out);
            tg_doc_free(doc);
        }
        tap_ok(all, "they all resolve after the table grew");
        tg_norm_free(n);
    }
}

/* ---- allocation failures ---------------------------------------------------- */

/* Everything that allocates, in one go; the first failure's code. */
static int scenario(acct *a)
{
    tg_error_t err;
    tg_engine_t *e = tg_engine_new(NULL, acct_alloc, a, &err);
    tg_norm_t *n = NULL;
    tg_doc_t *d = NULL;
    tg_buf_t b;
    char pat[32], from[32], *json;
    int rc = TG_OK;
    size_t len = 0;

    if (!e)
        return err.code;
    tg_buf_init(&b, e);
    json = malloc(20000);
    len += (size_t)sprintf(json, "{\"p\":\"");
    for (int i = 0; i < 1000; i++)
        len += (size_t)sprintf(json + len, "A/./");
    len += (size_t)sprintf(json + len, "\",\"q\":[\" id-3 \",{\"r\":\"X\"}]}");
    if (!(n = tg_norm_new(e, &err))) {
        rc = err.code;
        goto out;
    }
    for (int i = 0; i < 40 && rc == TG_OK; i++) {
        int l = snprintf(pat, sizeof pat, "/q/*/k%d", i);
        rc = tg_norm_add_rule(n, pat, (size_t)l, TG_NORM_LOWER, &err);
    }
    if (rc == TG_OK)
        rc = tg_norm_add_rule(n, "/p", 2, TG_NORM_LOWER | TG_NORM_PATH, &err);
    if (rc == TG_OK)
        rc = tg_norm_add_rule(n, "/q/*", 4, TG_NORM_TRIM | TG_NORM_ID, &err);
    for (int i = 0; i < 100 && rc == TG_OK; i++) {
        int l = snprintf(from, sizeof from, "id-%d", i);
        rc = tg_norm_add_alias(n, from, (size_t)l, "u", 1, &err);
    }
    if (rc == TG_OK)
        rc = tg_parse(e, json, len, &d, &err);
    if (rc == TG_OK)
        rc = tg_canon_normalized(n, tg_doc_root(d), TG_CANON_RFC8785, &b, &err);
    /* {"p":"a/a/.../a","q":["u",{"r":"X"}]}: 1000 a's, 999 slashes */
    if (rc == TG_OK && (b.len != 6 + 1999 + 1 + 21 || memcmp(b.data, "{\"p\":\"a/a/", 10) != 0 ||
                        memcmp(b.data + b.len - 21, ",\"q\":[\"u\",{\"r\":\"X\"}]}", 21) != 0)) {
        printf("# scenario output: %.*s\n", (int)(b.len > 60 ? 60 : b.len), b.data);
        rc = -1;
    }
out:
    tg_doc_free(d);
    tg_buf_free(&b);
    tg_norm_free(n);
    tg_engine_free(e);
    free(json);
    return rc;
}

static void allocation_failures(void)
{
    acct a = {0};
    long calls;
    int all_ok = 1, rc;

    rc = scenario(&a);
    tap_ok(rc == TG_OK && a.live == 0, "the scenario runs and gives every byte back");
    calls = a.calls;
    for (long k = 1; k <= calls; k++) {
        a.live = a.calls = 0;
        a.fail_at = k;
        rc = scenario(&a);
        if (rc != TG_E_NOMEM || a.live != 0) {
            printf("# failing allocation %ld: %s, %ld bytes left\n", k, tg_code_name(rc), a.live);
            all_ok = 0;
        }
    }
    printf("# %ld allocation sites failed in turn\n", calls);
    tap_ok(calls > 10 && all_ok, "every allocation failure gives NOMEM and leaks nothing");
}

int main(void)
{
    tg_error_t err;
    E = tg_engine_new(NULL, NULL, NULL, &err);
    paths();
    operations();
    patterns();
    errors();
    allocation_failures();
    tg_engine_free(E);
    return tap_done();
}
