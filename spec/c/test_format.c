/*
 * test_format.c -- the formats toolgate asserts (tg_format.c): every
 * format's valid and invalid edge cases, numeric formats on the number's
 * decimal text, formats that constrain only their own type, the messages,
 * the compile error for a format toolgate does not assert and the
 * annotation_formats list that lifts it, and the regex format's limits
 * (max_pattern_bytes, nesting, allocation failure).  The same formats are
 * compared with ajv-formats in spec/differential_formats_spec.lua.
 */
#include "acct.h"
#include "tap.h"
#include "toolgate.h"

#include <stdlib.h>

static tg_engine_t *E;

static tg_schema_options_t asserting(void)
{
    tg_schema_options_t o;
    tg_schema_options_default(&o);
    o.closed = 0;
    o.assert_formats = 1;
    return o;
}

static int compile(tg_engine_t *e, const char *schema, const tg_schema_options_t *opt,
                   tg_schema_t **out, tg_error_t *err)
{
    tg_doc_t *doc = NULL;
    int rc = tg_parse(e, schema, strlen(schema), &doc, err);
    *out = NULL;
    if (rc != TG_OK) {
        printf("# test bug: cannot parse %s: %s\n", schema, err->message);
        return rc;
    }
    rc = tg_schema_compile(e, tg_doc_root(doc), opt, out, err);
    tg_doc_free(doc);
    return rc;
}

/* The status of validating instance (JSON text); *valid and f[0]. */
static int check(tg_engine_t *e, const tg_schema_t *s, const char *instance, int *valid,
                 tg_finding_t *f)
{
    tg_doc_t *doc = NULL;
    tg_error_t err;
    size_t count = 0;
    int rc = tg_parse(e, instance, strlen(instance), &doc, &err);
    if (rc != TG_OK) {
        printf("# test bug: cannot parse %s: %s\n", instance, err.message);
        return rc;
    }
    rc = tg_validate(e, s, tg_doc_root(doc), f, 1, &count, &err);
    *valid = count == 0;
    tg_doc_free(doc);
    return rc;
}

/* value as a JSON string in out (cap bytes). */
static const char *quoted(const char *value, char *out, size_t cap)
{
    size_t k = 0;
    out[k++] = '"';
    for (const char *p = value; *p && k + 7 < cap; p++) {
        if (*p == '"' || *p == '\\') {
            out[k++] = '\\';
            out[k++] = *p;
        } else if ((unsigned char)*p < 0x20) {
            k += (size_t)snprintf(out + k, cap - k, "\\u%04x", (unsigned char)*p);
        } else {
            out[k++] = *p;
        }
    }
    out[k++] = '"';
    out[k] = '\0';
    return out;
}

/* One format against one instance: 1 when its verdict is want. */
static int verdict_is(const char *format, const char *instance, int want)
{
    char schema[128];
    tg_schema_options_t opt = asserting();
    tg_schema_t *s;
    tg_error_t err;
    tg_finding_t f[1];
    int valid = -1, rc;
    snprintf(schema, sizeof schema, "{\"format\":\"%s\"}", format);
    rc = compile(E, schema, &opt, &s, &err);
    if (rc == TG_OK)
        rc = check(E, s, instance, &valid, f);
    tg_schema_free(s);
    if (rc == TG_OK && valid == want)
        return 1;
    printf("#   %s: %.80s should be %s, is %s\n", format, instance, want ? "valid" : "invalid",
           rc != TG_OK ? tg_code_name(rc)
           : valid     ? "valid"
                       : "invalid");
    return 0;
}

/* ---- strings ----------------------------------------------------------------- */

static const struct {
    const char *format, *value;
    int valid;
} string_cases[] = {
    {"date-time", "1963-06-19T08:30:06.283185Z", 1},
    {"date-time", "1963-06-19t08:30:06z", 1},
    {"date-time", "1990-12-31T15:59:60-08:00", 1},
    {"date-time", "1998-12-31T23:59:60Z", 1},
    {"date-time", "1998-12-31T23:58:60Z", 0},
    {"date-time", "1990-02-31T15:59:59.123-08:00", 0},
    {"date-time", "1990-12-31T15:59:59-24:00", 0},
    {"date-time", "1963-06-19 08:30:06Z", 0},
    {"date-time", "1963-06-19T08:30:06", 0},
    {"date-time", "1963-06-19T08:30:06.Z", 0},
    {"date-time", "2020-01-01T00:00:00\xd9\xa3Z", 0},
    {"date-time", "1963-06-19T08:30:06.283185+01:00", 1},
    {"date", "2020-02-29", 1},
    {"date", "2021-02-29", 0},
    {"date", "1900-02-29", 0},
    {"date", "2000-02-29", 1},
    {"date", "2020-04-31", 0},
    {"date", "2020-13-01", 0},
    {"date", "2020-1-01", 0},
    {"date", "\xd9\xa1\xd9\xa1\xd9\xa1\xd9\xa1-01-01", 0},
    {"time", "08:30:06Z", 1},
    {"time", "08:30:06.5+05:30", 1},
    {"time", "23:59:60Z", 1},
    {"time", "01:29:60+01:30", 1},
    {"time", "12:00:60Z", 0},
    {"time", "08:30:06", 0},
    {"time", "24:00:00Z", 0},
    {"time", "08:30:06+0530", 0},
    {"time", "00:59:60+01:00", 1},
    {"time", "23:59:60+01:00", 0},
    {"time", "08:30:06+05", 0},
    {"email", "joe.bloggs@example.com", 1},
    {"email", "te~st@example.com", 1},
    {"email", "a+tag@sub-domain.example.co", 1},
    {"email", "user@localhost", 0}, /* one label: ajv-formats refuses it */
    {"email", "2962", 0},
    {"email", ".test@example.com", 0},
    {"email", "test.@example.com", 0},
    {"email", "te..st@example.com", 0},
    {"email", "joe.bloggs@invalid=domain.com", 0},
    {"email", "joe@-example.com", 0},
    {"email", "joe@example-.com", 0},
    {"email", "\"joe bloggs\"@example.com", 0},
    {"email", "joe.bloggs@[127.0.0.1]", 0},
    {"email", "a@b@c.com", 0},
    {"email", "a@b", 0},
    {"uri", "http://foo.bar/?baz=qux#quux", 1},
    {"uri", "https://user:pw@example.com:8080/p/a/t/h?q=1&r=%20", 1},
    {"uri", "urn:oasis:names:specification:docbook:dtd:xml:4.1.2", 1},
    {"uri", "mailto:John.Doe@example.com", 1},
    {"uri", "http://[2001:db8::7]/c=GB?objectClass?one", 1},
    {"uri", "ldap://[v1.fe80::a+en1]/", 1},
    {"uri", "file:///etc/passwd", 1},
    {"uri", "//foo.bar/?baz=qux#quux", 0},
    {"uri", "/abc", 0},
    {"uri", "\\\\WINDOWS\\fileshare", 0},
    {"uri", "http:// shouldfail.com", 0},
    {"uri", "http://example.com/a%2", 0},
    {"uri", "http://example.com/a%zz", 0},
    {"uri", "http://[::1", 0},
    {"uri", "http://example.com:80a/", 0},
    {"uri", "http://\xc3\xa9xample.com/", 0},
    {"uri", "1http://x", 0},
    {"uri", "a:b:c", 1},
    {"uri", "http://[v1.%41]/", 0},
    {"uri", "http://[fe80::1%25eth0]/", 0},
    {"uri", "a:", 0},
    {"uri", "a:?q", 0},
    {"uri", "a:#f", 0},
    {"uuid", "2EB8AA08-AA98-11EA-B4AA-73B441D16380", 1},
    {"uuid", "2eb8aa08-aa98-11ea-b4aa-73b441d16380", 1},
    {"uuid", "2eb8aa08-aa98-11ea-b4aa-73b441d1638", 0},
    {"uuid", "2eb8aa08aa9811eab4aa73b441d16380", 0},
    {"uuid", "2eb8aa08-aa98-11ea-b4aa-73b441d1638g", 0},
    {"uuid", "urn:uuid:2eb8aa08-aa98-11ea-b4aa-73b441d16380", 0},
    {"ipv4", "192.168.0.1", 1},
    {"ipv4", "0.0.0.0", 1},
    {"ipv4", "255.255.255.255", 1},
    {"ipv4", "256.0.0.1", 0},
    {"ipv4", "087.10.0.1", 0},
    {"ipv4", "1.2.3", 0},
    {"ipv4", "1.2.3.4.5", 0},
    {"ipv4", "1.2.3.\xd9\xa3", 0},
    {"ipv4", "0x7f000001", 0},
    {"ipv6", "::1", 1},
    {"ipv6", "::", 1},
    {"ipv6", "1::", 1},
    {"ipv6", "2001:db8:0:0:0:0:2:1", 1},
    {"ipv6", "2001:db8::2:1", 1},
    {"ipv6", "::ffff:192.168.0.1", 1},
    {"ipv6", "1:2:3:4:5:6:1.2.3.4", 1},
    {"ipv6", "1:2:3:4:5:6:7:8", 1},
    {"ipv6", "1:2:3:4:5:6:7:8:9", 0},
    {"ipv6", "1:2:3:4:5:6:7", 0},
    {"ipv6", "12345::", 0},
    {"ipv6", "1::2::3", 0},
    {"ipv6", ":1:2:3:4:5:6:7", 0},
    {"ipv6", "1:2:3:4:5:6:7:", 0},
    {"ipv6", "fe80::1%eth0", 0},
    {"ipv6", "::ffff:192.168.0.256", 0},
    {"ipv6", "1:2:3:4:5:6:7:1.2.3.4", 0},
    {"ipv6", "::1.2.3.4:5", 0},
    {"hostname", "example.com", 1},
    {"hostname", "example.com.", 1},
    {"hostname", "a--b.xn--bcher-kva.example", 1},
    {"hostname", "localhost", 1},
    {"hostname", "1.2.3.4", 1},
    {"hostname", "A.EXAMPLE", 1},
    {"hostname", "a.example; curl evil|sh", 0},
    {"hostname",
     "b\xc3\xbc"
     "cher.example",
     0},
    {"hostname", "example..com", 0},
    {"hostname", ".example.com", 0},
    {"hostname", "example.com..", 0},
    {"hostname", "-a.example", 0},
    {"hostname", "a-.example", 0},
    {"hostname", "a_b.example", 0},
    {"hostname", "a b", 0},
    {"hostname", "", 0},
    {"hostname", ".", 0},
    {"uri-reference", "", 1},
    {"uri-reference", "#f", 1},
    {"uri-reference", "?q", 1},
    {"uri-reference", "../a/b:c?d#e", 1},
    {"uri-reference", "//host:80/p", 1},
    {"uri-reference", "a:", 1},
    {"uri-reference", "http://x/%41", 1},
    {"uri-reference", "1a:b", 0},
    {"uri-reference", "#a#b", 0},
    {"uri-reference", "/%4", 0},
    {"uri-reference", "/a\"b", 0},
    {"uri-reference", "\\\\host\\share", 0},
    {"uri-reference", "//[::1", 0},
    {"uri-template", "http://example.com/{id}{?q,lang*}{#f}", 1},
    {"uri-template", "{+p}{/l*}{;x:3}{.d}{&a}{=r}{,r}{!r}{@r}{|r}", 1},
    {"uri-template", "{%41}{var:9999}%20\xc3\xa9", 1},
    {"uri-template", "{a.b}", 0},
    {"uri-template", "{}", 0},
    {"uri-template", "{x", 0},
    {"uri-template", "x}", 0},
    {"uri-template", "{x,}", 0},
    {"uri-template", "{var:0}", 0},
    {"uri-template", "{var:10000}", 0},
    {"uri-template", "{$x}", 0},
    {"uri-template", "a b", 0},
    {"uri-template", "%4g", 0},
    {"uri-template", "\x7f", 0},
    {"uri-template", "\xef\xb7\x90", 0}, /* U+FDD0, a noncharacter */
    {"duration", "P1D", 1},
    {"duration", "P2W", 1},
    {"duration", "PT0S", 1},
    {"duration", "P1M", 1},
    {"duration", "PT1M", 1},
    {"duration", "P1Y2M3DT4H5M6S", 1},
    {"duration", "P1M3DT5M6S", 1},
    {"duration", "P", 0},
    {"duration", "PT", 0},
    {"duration", "P1DT", 0},
    {"duration", "P1Y2W", 0},
    {"duration", "P1S", 0},
    {"duration", "PT1D", 0},
    {"duration", "P1Y1D", 0},
    {"duration", "PT1H1S", 0},
    {"duration", "P1D1Y", 0},
    {"duration", "P1.5D", 0},
    {"duration", "p1d", 0},
    {"duration", "P1W2D", 0},
    {"duration", "P1", 0},
    {"regex", "", 1},
    {"regex", "^[a-z]+$", 1},
    {"regex", "(?<y>\\d{4})-\\k<y>(?=a)*(?<!b)", 1},
    {"regex", "\\p{Letter}\\cA\\x41\\u0041[\\b\\-a-z]a{,2}", 1},
    {"regex", "(", 0},
    {"regex", ")", 0},
    {"regex", "[a", 0},
    {"regex", "(?i)a", 0},
    {"regex", "a++", 0},
    {"regex", "a{2}{3}", 0},
    {"regex", "a{3,2}", 0},
    {"regex", "*a", 0},
    {"regex", "a|?", 0},
    {"regex", "^*", 0},
    {"regex", "\\b+", 0},
    {"regex", "(?<=a)?", 0},
    {"regex", "(?>a)", 0},
    {"regex", "(*FAIL)", 0},
    {"regex", "(?P<n>a)", 0},
    {"regex", "a\\Z", 0},
    {"regex", "\\A", 0},
    {"regex", "\\Qa\\E", 0},
    {"regex", "\\c1", 0},
    {"regex", "\\u{41}", 0},
    {"regex", "[\\k<a>]", 0},
    {"regex", "[z-a]", 0},
    {"regex", "[\\x7a-\\x61]", 0},
    {"regex", "[\xf0\x9f\x98\x80-\xf0\x9f\x98\x81]", 0}, /* two UTF-16 units each without /u */
    {"regex", "[[:alpha:]{2,1}]", 0},                    /* ECMA-262: a class, then {2,1} */
    {"regex", "(?<a>x)(?<a>y)", 0},
    {"regex", "\\8", 0},
    {"json-pointer", "", 1},
    {"json-pointer", "/", 1},
    {"json-pointer", "/a~0b/~1/c d/\xc3\xa9", 1},
    {"json-pointer", "a", 0},
    {"json-pointer", "/~2", 0},
    {"json-pointer", "/a~", 0},
    {"json-pointer", "#/a", 0},
    {"relative-json-pointer", "0", 1},
    {"relative-json-pointer", "10/a~1b", 1},
    {"relative-json-pointer", "2#", 1},
    {"relative-json-pointer", "01", 0},
    {"relative-json-pointer", "-1", 0},
    {"relative-json-pointer", "0+1/a", 0},
    {"relative-json-pointer", "#", 0},
    {"relative-json-pointer", "0#/a", 0},
    {"byte", "", 1},
    {"byte", "QQ==", 1},
    {"byte", "QUI=", 1},
    {"byte", "QUJD+/9z", 1},
    {"byte", "QQ=", 0},
    {"byte", "Q===", 0},
    {"byte", "QQ==QUJD", 0},
    {"byte", "QUJD\nQUJD", 0},
    {"byte", "QUJ-", 0},
    {"binary", "\x01 \xc3\xbf", 1},
    {"password", "hunter2", 1},
};

/* One TAP line per format (the table keeps each format's rows together). */
static void string_formats(void)
{
    size_t n = sizeof string_cases / sizeof string_cases[0];
    for (size_t i = 0, j; i < n; i = j) {
        const char *format = string_cases[i].format;
        char name[96], buf[512];
        int all = 1;
        for (j = i; j < n && strcmp(string_cases[j].format, format) == 0; j++)
            all &= verdict_is(format, quoted(string_cases[j].value, buf, sizeof buf),
                              string_cases[j].valid);
        snprintf(name, sizeof name, "%s: %zu valid and invalid strings", format, j - i);
        tap_ok(all, name);
    }
}

/* Lengths at the limits, built here: labels of 63/64, host names of
 * 253/254 bytes (and one more for a final dot), local parts of 64/65. */
static void length_limits(void)
{
    char host[300], buf[320];
    size_t k = 0;
    memset(host, 'a', 63);
    strcpy(host + 63, ".example");
    tap_ok(verdict_is("hostname", quoted(host, buf, sizeof buf), 1),
           "hostname: a label of 63 bytes");
    memset(host, 'a', 64);
    strcpy(host + 64, ".example");
    tap_ok(verdict_is("hostname", quoted(host, buf, sizeof buf), 0),
           "hostname: a label of 64 bytes is refused");
    /* 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253 */
    for (int l = 0; l < 3; l++) {
        memset(host + k, 'a' + l, 63);
        k += 63;
        host[k++] = '.';
    }
    memset(host + k, 'd', 61);
    k += 61;
    host[k] = '\0';
    tap_ok(verdict_is("hostname", quoted(host, buf, sizeof buf), 1), "hostname: 253 bytes");
    strcpy(host + k, ".");
    tap_ok(verdict_is("hostname", quoted(host, buf, sizeof buf), 1),
           "hostname: 253 bytes and the root's dot");
    strcpy(host + k, "d");
    tap_ok(verdict_is("hostname", quoted(host, buf, sizeof buf), 0),
           "hostname: 254 bytes are refused");
    strcpy(host + k, "d.");
    tap_ok(verdict_is("hostname", quoted(host, buf, sizeof buf), 0),
           "hostname: 254 bytes and a dot are refused");

    memset(host, 'x', 64);
    strcpy(host + 64, "@example.com");
    tap_ok(verdict_is("email", quoted(host, buf, sizeof buf), 1), "email: a local part of 64");
    memset(host, 'x', 65);
    strcpy(host + 65, "@example.com");
    tap_ok(verdict_is("email", quoted(host, buf, sizeof buf), 0),
           "email: a local part of 65 is refused");
}

/* ---- numbers ----------------------------------------------------------------- */

static const struct {
    const char *format, *instance;
    int valid;
} number_cases[] = {
    {"int32", "0", 1},
    {"int32", "-0", 1},
    {"int32", "2147483647", 1},
    {"int32", "2147483648", 0},
    {"int32", "-2147483648", 1},
    {"int32", "-2147483649", 0},
    {"int32", "2147483647.0", 1},
    {"int32", "21474836.47e2", 1},
    {"int32", "2.147483648e9", 0},
    {"int32", "1.5", 0},
    {"int32", "2147483647.0000000001", 0},
    {"int32", "1e-400", 0},
    {"int32", "4294967296", 0},
    {"int64", "9223372036854775807", 1},
    {"int64", "9223372036854775808", 0},
    {"int64", "-9223372036854775808", 1},
    {"int64", "-9223372036854775809", 0},
    {"int64", "9007199254740993", 1},
    {"int64", "9.223372036854775807e18", 1},
    {"int64", "9.223372036854775808e18", 0},
    {"int64", "1e18", 1},
    {"int64", "1e20", 0},
    {"int64", "1e300", 0},
    {"int64", "0.5", 0},
    {"float", "3.4028235e38", 1},
    {"float", "-3.4028235e38", 1},
    {"float", "340282356779733661637539395458142568447", 1},
    {"float", "340282356779733661637539395458142568448", 0},
    {"float", "-340282356779733661637539395458142568448", 0},
    {"float", "3.5e38", 0},
    {"float", "1e-50", 1},
    {"float", "0", 1},
    {"float", "0.1", 1},
    {"double", "1.7976931348623157e308", 1},
    {"double", "-1.7976931348623157e308", 1},
    {"double", "5e-324", 1},
    {"double", "1e-400", 1},
};

/* A format constrains only its own type: anything else passes it. */
static const struct {
    const char *format, *instance;
} other_types[] = {
    {"hostname", "1"},
    {"hostname", "null"},
    {"hostname", "true"},
    {"hostname", "[\"a b\"]"},
    {"hostname", "{\"a\":1}"},
    {"regex", "1"},
    {"int32", "\"2147483648\""},
    {"int32", "null"},
    {"int64", "[1e20]"},
    {"float", "\"3.5e38\""},
    {"uri", "{}"},
};

static void numbers_and_types(void)
{
    int all = 1;
    for (size_t i = 0; i < sizeof number_cases / sizeof number_cases[0]; i++)
        all &= verdict_is(number_cases[i].format, number_cases[i].instance, number_cases[i].valid);
    tap_ok(all, "int32, int64, float, double: exact bounds on the decimal text");
    all = 1;
    for (size_t i = 0; i < sizeof other_types / sizeof other_types[0]; i++)
        all &= verdict_is(other_types[i].format, other_types[i].instance, 1);
    tap_ok(all, "a format constrains only its own type");
}

/* ---- messages, pointers ---------------------------------------------------------- */

static void messages(void)
{
    tg_schema_options_t opt = asserting();
    tg_schema_t *s;
    tg_error_t err;
    tg_finding_t f[1];
    int valid = 1;
    compile(E, "{\"properties\":{\"host\":{\"format\":\"hostname\"},\"n\":{\"format\":\"int32\"}}}",
            &opt, &s, &err);
    tap_ok(check(E, s, "{\"host\":\"a.example; curl evil|sh\"}", &valid, f) == TG_OK && !valid &&
               f[0].code == TG_H3 && strcmp(f[0].keyword, "format") == 0 &&
               strcmp(f[0].pointer, "/host") == 0 &&
               strcmp(f[0].schema_pointer, "/properties/host/format") == 0 &&
               strstr(f[0].message, "\"a.example; curl evil|sh\" is not a valid hostname") != NULL,
           "hostname: a shell command is H3 at /host, and the message says so");
    tap_ok(check(E, s, "{\"n\":2147483648}", &valid, f) == TG_OK && !valid &&
               strstr(f[0].message,
                      "2147483648 is not a valid int32 (an integer from -2147483648 to "
                      "2147483647)") != NULL,
           "int32: the message names the range");
    tg_schema_free(s);
}

/* ---- formats toolgate does not assert --------------------------------------------- */

static void unsupported(void)
{
    static const char *const listed[] = {"idn-hostname", "hostname", NULL};
    static const char *const other[] = {"iri", NULL};
    tg_schema_options_t opt = asserting(), annotations = asserting(), off;
    tg_schema_t *s;
    tg_error_t err;
    tg_finding_t f[1];
    int valid = 0;
    const char *schema =
        "{\"properties\":{\"h\":{\"format\":\"hostname\"},\"i\":{\"format\":\"idn-hostname\"}}}";

    tap_ok(compile(E, schema, &opt, &s, &err) == TG_E_UNSUPPORTED_FORMAT && s == NULL &&
               strcmp(tg_code_name(err.code), "UNSUPPORTED_FORMAT") == 0 &&
               strcmp(err.pointer, "/properties/i/format") == 0 &&
               strstr(err.message, "\"idn-hostname\" is not one toolgate asserts") != NULL,
           "assert_formats: an unknown format is UNSUPPORTED_FORMAT at its pointer, named");
    tap_ok(compile(E, "{\"$defs\":{\"never\":{\"format\":\"Date\"}}}", &opt, &s, &err) ==
                   TG_E_UNSUPPORTED_FORMAT &&
               strcmp(err.pointer, "/$defs/never/format") == 0,
           "assert_formats: in an unreferenced $defs entry too, and names are case-sensitive");
    annotations.annotation_formats = other;
    tap_ok(compile(E, schema, &annotations, &s, &err) == TG_E_UNSUPPORTED_FORMAT,
           "annotation_formats: a list without it does not help");
    annotations.annotation_formats = listed;
    tap_ok(compile(E, schema, &annotations, &s, &err) == TG_OK &&
               check(E, s, "{\"i\":\"-- not a host --\",\"h\":\"not a host\"}", &valid, f) ==
                   TG_OK &&
               valid,
           "annotation_formats: the listed formats are annotations, asserted ones included");
    tg_schema_free(s);
    annotations.annotation_formats = other;
    tap_ok(compile(E, "{\"format\":\"hostname\"}", &annotations, &s, &err) == TG_OK &&
               check(E, s, "\"not a host\"", &valid, f) == TG_OK && !valid,
           "annotation_formats: formats it does not list are still asserted");
    tg_schema_free(s);
    tg_schema_options_default(&off);
    tap_ok(compile(E, schema, &off, &s, &err) == TG_OK &&
               check(E, s, "{\"i\":\"x y\",\"h\":\"x y\"}", &valid, f) == TG_OK && valid,
           "without assert_formats every format is an annotation, unknown ones too");
    tg_schema_free(s);
    tap_ok(compile(E, "{\"format\":1}", &opt, &s, &err) == TG_E_SCHEMA,
           "a format that is not a string is INVALID_SCHEMA");
}

/* ---- regex: limits ------------------------------------------------------------------ */

/* "((...(a)...))" with n groups, as a JSON string (n <= 251). */
static const char *nested_groups(int n)
{
    static char text[2 * 251 + 4];
    size_t k = 0;
    text[k++] = '"';
    memset(text + k, '(', (size_t)n);
    k += (size_t)n;
    text[k++] = 'a';
    memset(text + k, ')', (size_t)n);
    k += (size_t)n;
    text[k++] = '"';
    text[k] = '\0';
    return text;
}

static void regex_limits(void)
{
    tg_schema_options_t opt = asserting();
    tg_limits_t lim;
    tg_engine_t *e;
    tg_schema_t *s;
    tg_error_t err;
    tg_finding_t f[1];
    acct a = {0};
    int valid = 0, rc;
    long calls;

    tg_limits_default(&lim);
    lim.max_pattern_bytes = 8;
    e = tg_engine_new(&lim, NULL, NULL, &err);
    compile(e, "{\"format\":\"regex\"}", &opt, &s, &err);
    tap_ok(check(e, s, "\"^[a-z]+$\"", &valid, f) == TG_OK && valid,
           "regex: max_pattern_bytes 8, an 8-byte pattern is valid");
    tap_ok(check(e, s, "\"^[a-z]*$.\"", &valid, f) == TG_OK && !valid,
           "regex: a 9-byte pattern is invalid (a value, not an error)");
    tg_schema_free(s);
    tg_engine_free(e);

    /* groups nest up to PCRE2's parenthesis limit, 250 */
    tap_ok(verdict_is("regex", nested_groups(250), 1), "regex: 250 nested groups are valid");
    tap_ok(verdict_is("regex", nested_groups(251), 0), "regex: 251 nested groups are invalid");

    /* PCRE2 compiling the value runs out of memory: an error, never a verdict */
    e = tg_engine_new(NULL, acct_alloc, &a, &err);
    compile(e, "{\"format\":\"regex\"}", &opt, &s, &err);
    check(e, s, "\"(a|b)+c\"", &valid, f); /* the regex contexts are made once */
    calls = a.calls;
    tap_ok(check(e, s, "\"(a|b)+c\"", &valid, f) == TG_OK && valid && a.calls > calls,
           "regex: checking a value allocates");
    a.fail_at = a.calls + 1;
    a.sticky = 1;
    rc = check(e, s, "\"(a|b)+c\"", &valid, f);
    tap_ok(rc == TG_E_NOMEM && a.fired, "regex: its allocation failing is NOMEM");
    a.fail_at = 0;
    tg_schema_free(s);
    tg_engine_free(e);
    tap_ok(a.live == 0, "regex: nothing leaks");
}

int main(void)
{
    E = tg_engine_new(NULL, NULL, NULL, NULL);
    string_formats();
    length_limits();
    numbers_and_types();
    messages();
    unsupported();
    regex_limits();
    tg_engine_free(E);
    return tap_done();
}
