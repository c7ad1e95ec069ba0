/*
 * tg_format.c -- the `format` values toolgate asserts (when the schema's
 * options ask for it): syntax checks, no look-ups, no locale.  A format
 * constrains one instance type (strings, or for the OpenAPI numeric
 * formats numbers); a value of any other type passes it.
 *
 * Every check accepts a subset of what ajv-formats 3 ("full" mode) accepts
 * (spec/differential_formats_spec.lua holds toolgate to that); where the
 * standard allows more than ajv-formats does, toolgate follows ajv-formats,
 * and where ajv-formats is looser than the standard, toolgate follows the
 * standard.
 *
 *   date-time, date, time  RFC 3339 §5.6: date-time, full-date, full-time.
 *                          "T" and "Z" may be lower case; seconds may be 60
 *                          when the time, moved to UTC, is 23:59:60 (a leap
 *                          second); days are checked against the month and
 *                          leap years.  A time needs its offset, with its
 *                          colon (+05:30).
 *   duration               RFC 3339 Appendix A: "P" then years, months,
 *                          days, "T" hours, minutes, seconds, each unit
 *                          once, in that order, with no unit skipped inside
 *                          the date or the time part (P1Y2M, P1M3D, PT1H5M;
 *                          not P1Y3D), or weeks alone (P2W); whole numbers,
 *                          upper case.
 *   email                  RFC 5321 Mailbox: Dot-string "@" Domain, the
 *                          domain of two labels or more (each as in a
 *                          hostname, no final dot).  Quoted local
 *                          parts ("a b"@x) and address literals
 *                          (a@[127.0.0.1]) are refused: tool arguments have
 *                          no use for them and they are where parsers
 *                          disagree.  Local part <= 64 bytes, domain <= 255.
 *   hostname               RFC 1123 §2.1: labels of 1..63 letters, digits and
 *                          hyphens, no hyphen first or last, at most 253
 *                          bytes, plus an optional final dot (the root).
 *                          ASCII: an IDN is allowed in its A-label form
 *                          (xn--...), not in Unicode.
 *   ipv4                   dotted quad, each 0..255, no leading zeros.
 *   ipv6                   RFC 4291 §2.2 text forms: 8 groups, or fewer
 *                          with one "::", optionally ending in a dotted
 *                          quad; no zone id (fe80::1%eth0 is refused).
 *   uri, uri-reference     RFC 3986 URI and URI-reference: every character
 *                          of its class, %-escapes with two hex digits, IP
 *                          literals in brackets; ASCII only (an IRI is not
 *                          a URI).  A uri has a scheme and a non-empty
 *                          hier-part ("a:" is refused); a relative
 *                          reference's first segment has no colon.
 *   uri-template           RFC 6570 level 4, with variable names of
 *                          ALPHA / DIGIT / "_" / %-escapes (no "." inside
 *                          a name, which ajv-formats refuses).
 *   uuid                   8-4-4-4-12 hex digits, either case, any version.
 *   regex                  an ECMA-262 regular expression (tg_regex_valid:
 *                          the engine's PCRE2 must compile it and it may use
 *                          only syntax ECMA-262 has).
 *   json-pointer           RFC 6901: "" or "/"-prefixed tokens, "~" only in
 *                          "~0" and "~1".
 *   relative-json-pointer  a non-negative integer without leading zeros,
 *                          then "#" or a JSON Pointer.
 *   byte                   RFC 4648 §4 base64, padded to a multiple of 4.
 *   binary, password       any string: OpenAPI gives these no syntax (any
 *                          octets; a hint to hide the input).
 *   int32, int64           an integer (1.0 and 1e2 are) from -2^31 to
 *                          2^31-1 or -2^63 to 2^63-1, decided on the
 *                          number's decimal text, exactly.
 *   float                  a number that stays finite when rounded to IEEE
 *                          754 binary32: magnitude below 2^128 - 2^103
 *                          (3.4028235e38 rounds to FLT_MAX and is valid).
 *   double                 any number (the parser already refuses what no
 *                          double holds).
 */
#include "tg_schema.h"

typedef int (*format_check)(const char *s, size_t len);

static int base64(const char *s, size_t len);
static int date_time(const char *s, size_t len);
static int duration(const char *s, size_t len);
static int email(const char *s, size_t len);
static int full_date(const char *s, size_t len);
static int full_time(const char *s, size_t len);
static int hostname(const char *s, size_t len);
static int ipv4(const char *s, size_t len);
static int ipv6(const char *s, size_t len);
static int json_pointer(const char *s, size_t len);
static int relative_json_pointer(const char *s, size_t len);
static int uri(const char *s, size_t len);
static int uri_reference(const char *s, size_t len);
static int uri_template(const char *s, size_t len);
static int uuid(const char *s, size_t len);
static int any_string(const char *s, size_t len);
static int int32(const char *s, size_t len);
static int int64(const char *s, size_t len);
static int float32(const char *s, size_t len);
static int any_number(const char *s, size_t len);

/* Each format: its name, the type it constrains, its check (on a string's
 * bytes or a number's text; NULL for regex, which needs the engine) and
 * what a message adds after "is not a valid <name>". */
static const struct {
    const char *name;
    uint8_t type; /* TG_T_STRING or TG_T_NUMBER */
    format_check check;
    const char *says;
} formats[TG_FMT_COUNT] = {
    /* clang-format off */
    [TG_FMT_NONE]         = {"", 0, NULL, ""},
    [TG_FMT_DATE_TIME]    = {"date-time", TG_T_STRING, date_time, " (RFC 3339)"},
    [TG_FMT_DATE]         = {"date", TG_T_STRING, full_date, " (RFC 3339 full-date)"},
    [TG_FMT_TIME]         = {"time", TG_T_STRING, full_time, " (RFC 3339 full-time)"},
    [TG_FMT_EMAIL]        = {"email", TG_T_STRING, email, ""},
    [TG_FMT_URI]          = {"uri", TG_T_STRING, uri, " (RFC 3986)"},
    [TG_FMT_UUID]         = {"uuid", TG_T_STRING, uuid, ""},
    [TG_FMT_IPV4]         = {"ipv4", TG_T_STRING, ipv4, ""},
    [TG_FMT_IPV6]         = {"ipv6", TG_T_STRING, ipv6, ""},
    [TG_FMT_HOSTNAME]     = {"hostname", TG_T_STRING, hostname, " (RFC 1123)"},
    [TG_FMT_URI_REFERENCE] = {"uri-reference", TG_T_STRING, uri_reference, " (RFC 3986)"},
    [TG_FMT_URI_TEMPLATE] = {"uri-template", TG_T_STRING, uri_template, " (RFC 6570)"},
    [TG_FMT_DURATION]     = {"duration", TG_T_STRING, duration, " (RFC 3339 Appendix A)"},
    [TG_FMT_REGEX]        = {"regex", TG_T_STRING, NULL, " (ECMA-262)"},
    [TG_FMT_JSON_POINTER] = {"json-pointer", TG_T_STRING, json_pointer, " (RFC 6901)"},
    [TG_FMT_RELATIVE_JSON_POINTER] = {"relative-json-pointer", TG_T_STRING,
                                      relative_json_pointer, ""},
    [TG_FMT_BYTE]         = {"byte", TG_T_STRING, base64, " (base64, RFC 4648)"},
    [TG_FMT_BINARY]       = {"binary", TG_T_STRING, any_string, ""},
    [TG_FMT_PASSWORD]     = {"password", TG_T_STRING, any_string, ""},
    [TG_FMT_INT32]        = {"int32", TG_T_NUMBER, int32,
                             " (an integer from -2147483648 to 2147483647)"},
    [TG_FMT_INT64]        = {"int64", TG_T_NUMBER, int64,
                             " (an integer from -9223372036854775808 to 9223372036854775807)"},
    [TG_FMT_FLOAT]        = {"float", TG_T_NUMBER, float32,
                             " (beyond the range of a 32-bit float)"},
    [TG_FMT_DOUBLE]       = {"double", TG_T_NUMBER, any_number, ""},
    /* clang-format on */
};

int tg_format_lookup(const char *name, size_t len)
{
    for (int f = 1; f < TG_FMT_COUNT; f++)
        if (strlen(formats[f].name) == len && memcmp(formats[f].name, name, len) == 0)
            return f;
    return TG_FMT_NONE;
}

const char *tg_format_name(int format)
{
    return format > 0 && format < TG_FMT_COUNT ? formats[format].name : "";
}

const char *tg_format_says(int format)
{
    return format > 0 && format < TG_FMT_COUNT ? formats[format].says : "";
}

int tg_format_check(tg_engine_t *e, int format, const tg_value_t *v, int *valid, tg_error_t *err)
{
    *valid = 1;
    if (format <= 0 || format >= TG_FMT_COUNT)
        return TG_OK;
    if (formats[format].type == TG_T_STRING && v->type == TG_STRING) {
        if (format == TG_FMT_REGEX)
            return tg_regex_valid(e, v->p.str, v->len, valid, err);
        *valid = formats[format].check(v->p.str, v->len);
    } else if (formats[format].type == TG_T_NUMBER && v->type == TG_NUMBER) {
        *valid = formats[format].check(v->p.text, v->len);
    }
    return TG_OK;
}

/* ---- character classes (ASCII only: no locale) ---------------------------- */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* n digits at s as a number, or -1 when they are not all digits. */
static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit(s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* "%" HEXDIG HEXDIG at s[i] (i < len, s[i] == '%'). */
static int pct_encoded(const char *s, size_t len, size_t i)
{
    return i + 2 < len && is_hex(s[i + 1]) && is_hex(s[i + 2]);
}

/* ---- RFC 3339 ------------------------------------------------------------- */

static int full_date(const char *s, size_t len)
{
    static const int days[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, m, d;
    if (len != 10 || s[4] != '-' || s[7] != '-')
        return 0;
    y = digits(s, 4);
    m = digits(s + 5, 2);
    d = digits(s + 8, 2);
    if (y < 0 || m < 1 || m > 12 || d < 1 || d > days[m - 1])
        return 0;
    if (m == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
        return 0;
    return 1;
}

static int full_time(const char *s, size_t len)
{
    int h, m, sec, off = 0;
    size_t i = 8;
    if (len < 9 || s[2] != ':' || s[5] != ':')
        return 0;
    h = digits(s, 2);
    m = digits(s + 3, 2);
    sec = digits(s + 6, 2);
    if (h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 60)
        return 0;
    if (s[i] == '.') {
        size_t start = ++i;
        while (i < len && is_digit(s[i]))
            i++;
        if (i == start)
            return 0;
    }
    if (i + 1 == len && (s[i] == 'Z' || s[i] == 'z')) {
        off = 0;
    } else if (i + 6 == len && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
        int oh = digits(s + i + 1, 2), om = digits(s + i + 4, 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59)
            return 0;
        off = (oh * 60 + om) * (s[i] == '-' ? -1 : 1);
    } else {
        return 0;
    }
    /* A leap second is inserted at 23:59:60 UTC only. */
    if (sec == 60 && ((h * 60 + m - off) % 1440 + 1440) % 1440 != 23 * 60 + 59)
        return 0;
    return 1;
}

static int date_time(const char *s, size_t len)
{
    return len > 11 && (s[10] == 'T' || s[10] == 't') && full_date(s, 10) &&
           full_time(s + 11, len - 11);
}

/* Units 1*DIGIT letter from s[*i] whose letters run through order without
 * a gap, starting at any of them ("YMD": Y, YM, YMD, M, MD, D).  Returns
 * how many were read, or -1 when the text breaks that rule. */
static int duration_units(const char *s, size_t len, size_t *i, const char *order)
{
    const char *next = NULL; /* the only letter allowed after the last one */
    int n = 0;
    while (*i < len && is_digit(s[*i])) {
        size_t j = *i;
        const char *u;
        while (j < len && is_digit(s[j]))
            j++;
        if (j == len || !s[j] || !(u = strchr(order, s[j])) || (next && u != next))
            return -1;
        next = u + 1;
        *i = j + 1;
        n++;
    }
    return n;
}

static int duration(const char *s, size_t len)
{
    size_t i = 1;
    int date, time = 0;
    if (len < 3 || s[0] != 'P')
        return 0;
    if (s[len - 1] == 'W') { /* dur-week stands alone */
        while (i < len - 1 && is_digit(s[i]))
            i++;
        return i == len - 1;
    }
    if ((date = duration_units(s, len, &i, "YMD")) < 0)
        return 0;
    if (i < len && s[i] == 'T') {
        i++;
        if ((time = duration_units(s, len, &i, "HMS")) < 1)
            return 0;
    }
    return i == len && date + time > 0;
}

/* ---- host names and email (RFC 1123, RFC 5321) --------------------------- */

/* The number of labels in s[0..len), dot-separated, each 1..63 letters,
 * digits and hyphens with no hyphen first or last; 0 when s is not that
 * (an empty label included, so a final dot too). */
static size_t dns_labels(const char *s, size_t len)
{
    size_t labels = 0, label = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '.') {
            if (label == 0 || s[i - 1] == '-')
                return 0;
            labels++;
            label = 0;
        } else if (is_alpha(s[i]) || is_digit(s[i]) || (s[i] == '-' && label > 0)) {
            if (++label > 63)
                return 0;
        } else {
            return 0;
        }
    }
    return labels;
}

static int hostname(const char *s, size_t len)
{
    if (len && s[len - 1] == '.') /* the root's empty label: "example.com." */
        len--;
    return len <= 253 && dns_labels(s, len) > 0;
}

static int is_atext(char c)
{
    return is_alpha(c) || is_digit(c) || (c && strchr("!#$%&'*+-/=?^_`{|}~", c));
}

static int email(const char *s, size_t len)
{
    const char *at = memchr(s, '@', len);
    size_t local;
    if (!at)
        return 0;
    local = (size_t)(at - s);
    if (local == 0 || local > 64 || s[0] == '.' || s[local - 1] == '.')
        return 0;
    for (size_t i = 0; i < local; i++) {
        if (s[i] == '.') {
            if (s[i + 1] == '.')
                return 0;
        } else if (!is_atext(s[i])) {
            return 0;
        }
    }
    /* A single-label domain (user@localhost) is valid in RFC 5321, but
     * ajv-formats refuses it. */
    return len - local - 1 <= 255 && dns_labels(at + 1, len - local - 1) >= 2;
}

/* ---- uri, uri-reference (RFC 3986) ---------------------------------------- */

static int is_unreserved(char c)
{
    return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

static int is_sub_delim(char c)
{
    return c && strchr("!$&'()*+,;=", c) != NULL;
}

/* Checks s[0..len) against: unreserved / pct-encoded / sub-delims / extra. */
static int uri_chars(const char *s, size_t len, const char *extra)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '%') {
            if (!pct_encoded(s, len, i))
                return 0;
            i += 2;
        } else if (!is_unreserved(c) && !is_sub_delim(c) && !(c && strchr(extra, c))) {
            return 0;
        }
    }
    return 1;
}

/* authority = [ userinfo "@" ] host [ ":" port ] */
static int authority(const char *s, size_t len)
{
    const char *at = memchr(s, '@', len);
    size_t host_len;
    if (at) {
        size_t ui = (size_t)(at - s);
        if (!uri_chars(s, ui, ":"))
            return 0;
        s += ui + 1;
        len -= ui + 1;
    }
    if (len && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return 0;
        host_len = (size_t)(close - s) + 1;
        /* IP-literal = "[" ( IPv6address / IPvFuture ) "]";
         * IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ) */
        if (host_len > 2 && (s[1] == 'v' || s[1] == 'V')) {
            size_t i = 2;
            while (i < host_len - 1 && is_hex(s[i]))
                i++;
            if (i == 2 || s[i] != '.' || i + 1 >= host_len - 1)
                return 0;
            for (i++; i < host_len - 1; i++)
                if (!is_unreserved(s[i]) && !is_sub_delim(s[i]) && s[i] != ':')
                    return 0;
        } else if (!ipv6(s + 1, host_len - 2)) {
            return 0;
        }
    } else {
        const char *colon = memchr(s, ':', len);
        host_len = colon ? (size_t)(colon - s) : len;
        if (!uri_chars(s, host_len, ""))
            return 0;
    }
    if (host_len < len) {
        if (s[host_len] != ':')
            return 0;
        for (size_t i = host_len + 1; i < len; i++)
            if (!is_digit(s[i]))
                return 0;
    }
    return 1;
}

/* URI-reference = URI / relative-ref.  absolute: a URI only, and with a
 * non-empty hier-part (RFC 3986 allows "a:" and "a:?q"; ajv-formats does
 * not). */
static int uri_ref(const char *s, size_t len, int absolute)
{
    size_t i = 0, end;
    const char *q;
    if (len && is_alpha(s[0])) {
        while (i < len &&
               (is_alpha(s[i]) || is_digit(s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.'))
            i++;
        i = i < len && s[i] == ':' ? i + 1 : 0; /* no colon: a relative path */
    }
    if (absolute && i == 0)
        return 0;
    /* The fragment, then the query, end the hier-part / relative-part. */
    q = memchr(s + i, '#', len - i);
    end = q ? (size_t)(q - s) : len;
    if (q && !uri_chars(q + 1, len - end - 1, ":@/?"))
        return 0;
    q = memchr(s + i, '?', end - i);
    if (q) {
        if (!uri_chars(q + 1, end - (size_t)(q - s) - 1, ":@/?"))
            return 0;
        end = (size_t)(q - s);
    }
    if (end - i >= 2 && s[i] == '/' && s[i + 1] == '/') {
        const char *slash = memchr(s + i + 2, '/', end - i - 2);
        size_t auth_end = slash ? (size_t)(slash - s) : end;
        if (!authority(s + i + 2, auth_end - i - 2))
            return 0;
        i = auth_end;
    } else if (absolute && i == end) {
        return 0;
    } else if (i == 0) {
        /* path-noscheme: a colon in the first segment would make it a scheme */
        const char *slash = memchr(s, '/', end);
        if (memchr(s, ':', slash ? (size_t)(slash - s) : end))
            return 0;
    }
    /* path-abempty / path-absolute / path-rootless / path-noscheme / path-empty */
    return uri_chars(s + i, end - i, ":@/");
}

static int uri(const char *s, size_t len)
{
    return uri_ref(s, len, 1);
}

static int uri_reference(const char *s, size_t len)
{
    return uri_ref(s, len, 0);
}

/* ---- uri-template (RFC 6570) ---------------------------------------------- */

/* The code point of the UTF-8 sequence at s[*i] (well-formed: the DOM
 * holds nothing else); *i moves past it. */
static uint32_t utf8_next(const char *s, size_t *i)
{
    const unsigned char *p = (const unsigned char *)s + *i;
    if (p[0] < 0x80) {
        *i += 1;
        return p[0];
    }
    if (p[0] < 0xE0) {
        *i += 2;
        return (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
    }
    if (p[0] < 0xF0) {
        *i += 3;
        return (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    }
    *i += 4;
    return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
           (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
}

/* RFC 3987 ucschar / iprivate, the non-ASCII characters a literal may hold. */
static int is_ucschar_or_private(uint32_t c)
{
    if (c < 0x10000)
        return (c >= 0xA0 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFDCF) ||
               (c >= 0xFDF0 && c <= 0xFFEF);
    return (c & 0xFFFF) <= 0xFFFD && !(c >= 0xE0000 && c <= 0xE0FFF);
}

/* One varspec at s[*i]: varname [ ":" max-length / "*" ]. */
static int varspec(const char *s, size_t len, size_t *i)
{
    size_t start = *i;
    while (*i < len && (is_alpha(s[*i]) || is_digit(s[*i]) || s[*i] == '_' || s[*i] == '%')) {
        if (s[*i] == '%') {
            if (!pct_encoded(s, len, *i))
                return 0;
            *i += 2;
        }
        (*i)++;
    }
    if (*i == start)
        return 0;
    if (*i < len && s[*i] == '*') {
        (*i)++;
    } else if (*i < len && s[*i] == ':') { /* max-length = %x31-39 0*3DIGIT */
        size_t d = ++*i;
        if (d == len || s[d] < '1' || s[d] > '9')
            return 0;
        while (*i < len && is_digit(s[*i]) && *i - d < 4)
            (*i)++;
    }
    return 1;
}

static int uri_template(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        if (c == '{') {
            i++;
            if (i < len && s[i] && strchr("+#./;?&=,!@|", s[i]))
                i++;
            if (!varspec(s, len, &i))
                return 0;
            while (i < len && s[i] == ',') {
                i++;
                if (!varspec(s, len, &i))
                    return 0;
            }
            if (i == len || s[i] != '}')
                return 0;
            i++;
        } else if (c == '%') {
            if (!pct_encoded(s, len, i))
                return 0;
            i += 3;
        } else if (c >= 0x80) {
            if (!is_ucschar_or_private(utf8_next(s, &i)))
                return 0;
        } else if (c > 0x20 && c < 0x7F && !strchr("\"'<>\\^`{|}", c)) {
            i++;
        } else {
            return 0;
        }
    }
    return 1;
}

/* ---- uuid, ip addresses --------------------------------------------------- */

static int uuid(const char *s, size_t len)
{
    if (len != 36)
        return 0;
    for (size_t i = 0; i < len; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return 0;
        } else if (!is_hex(s[i])) {
            return 0;
        }
    }
    return 1;
}

static int ipv4(const char *s, size_t len)
{
    size_t i = 0;
    for (int part = 0; part < 4; part++) {
        size_t start = i;
        int v = 0;
        if (part) {
            if (i >= len || s[i] != '.')
                return 0;
            start = ++i;
        }
        while (i < len && is_digit(s[i]) && i - start < 3)
            v = v * 10 + (s[i++] - '0');
        if (i == start || v > 255 || (i - start > 1 && s[start] == '0'))
            return 0;
    }
    return i == len;
}

static int ipv6(const char *s, size_t len)
{
    int groups = 0, gap = -1; /* gap: group index where "::" stands */
    size_t i = 0;
    if (len >= 2 && s[0] == ':' && s[1] == ':') {
        gap = 0;
        i = 2;
    } else if (len && s[0] == ':') {
        return 0;
    }
    while (i < len) {
        size_t start = i;
        while (i < len && is_hex(s[i]) && i - start < 4)
            i++;
        if (i < len && s[i] == '.') {
            /* A trailing dotted quad stands for the last two groups. */
            if (!ipv4(s + start, len - start))
                return 0;
            groups += 2;
            i = len;
            break;
        }
        if (i == start)
            return 0;
        groups++;
        if (i == len)
            break;
        if (s[i] != ':')
            return 0;
        i++;
        if (i < len && s[i] == ':') {
            if (gap >= 0)
                return 0;
            gap = groups;
            i++;
        } else if (i == len) {
            return 0; /* a single trailing colon */
        }
    }
    return gap >= 0 ? groups <= 7 : groups == 8;
}

/* ---- JSON Pointers (RFC 6901, relative JSON Pointer) ----------------------- */

static int json_pointer(const char *s, size_t len)
{
    if (len && s[0] != '/')
        return 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '~' && (++i == len || (s[i] != '0' && s[i] != '1')))
            return 0;
    return 1;
}

static int relative_json_pointer(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && is_digit(s[i]))
        i++;
    if (i == 0 || (i > 1 && s[0] == '0'))
        return 0;
    return (i + 1 == len && s[i] == '#') || json_pointer(s + i, len - i);
}

/* ---- OpenAPI: byte, binary, password --------------------------------------- */

static int is_base64(char c)
{
    return is_alpha(c) || is_digit(c) || c == '+' || c == '/';
}

static int base64(const char *s, size_t len)
{
    size_t pad = 0;
    if (len % 4)
        return 0;
    if (len && s[len - 1] == '=')
        pad = len > 1 && s[len - 2] == '=' ? 2 : 1;
    for (size_t i = 0; i < len - pad; i++)
        if (!is_base64(s[i]))
            return 0;
    return 1;
}

static int any_string(const char *s, size_t len)
{
    (void)s;
    (void)len;
    return 1;
}

/* ---- OpenAPI numbers, on the decimal text ---------------------------------- */

/* lo <= the integer x <= hi, exactly (lo, hi: number texts, -lo >= hi). */
static int integer_in(const char *s, size_t len, const char *lo, const char *hi)
{
    tg_decimal x, min, max;
    /* The common case needs no arithmetic: a plain integer with fewer
     * digits than hi (JSON has no leading zeros) lies inside. */
    if (len - (s[0] == '-') < strlen(hi) && !memchr(s, '.', len) && !memchr(s, 'e', len) &&
        !memchr(s, 'E', len))
        return 1;
    tg_decimal_init(&x, s, len);
    tg_decimal_init(&min, lo, strlen(lo));
    tg_decimal_init(&max, hi, strlen(hi));
    return tg_decimal_is_integer(&x) && tg_decimal_compare(&x, &min) >= 0 &&
           tg_decimal_compare(&x, &max) <= 0;
}

static int int32(const char *s, size_t len)
{
    return integer_in(s, len, "-2147483648", "2147483647");
}

static int int64(const char *s, size_t len)
{
    return integer_in(s, len, "-9223372036854775808", "9223372036854775807");
}

/* Rounding to nearest binary32 overflows from FLT_MAX + half its ulp,
 * 2^128 - 2^103, up (that tie goes to the even neighbour, 2^128). */
static int float32(const char *s, size_t len)
{
    static const char bound[] = "340282356779733661637539395458142568448";
    tg_decimal x, b;
    tg_decimal_init(&x, s, len);
    tg_decimal_init(&b, bound, sizeof bound - 1);
    x.negative = 0;
    return tg_decimal_compare(&x, &b) < 0;
}

static int any_number(const char *s, size_t len)
{
    (void)s;
    (void)len;
    return 1;
}
