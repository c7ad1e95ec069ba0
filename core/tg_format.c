/*
 * tg_format.c -- the `format` values toolgate asserts (when the schema's
 * options ask for it): syntax checks on strings, no look-ups, no locale.
 *
 *   date-time, date, time  RFC 3339 §5.6: date-time, full-date, full-time.
 *                          "T" and "Z" may be lower case; seconds may be 60
 *                          when the time, moved to UTC, is 23:59:60 (a leap
 *                          second); days are checked against the month and
 *                          leap years.  A time needs its offset.
 *   email                  RFC 5321 Mailbox: Dot-string "@" Domain.  Quoted
 *                          local parts ("a b"@x) and address literals
 *                          (a@[127.0.0.1]) are refused: tool arguments have
 *                          no use for them and they are where parsers
 *                          disagree.  Local part <= 64 bytes, domain <= 255,
 *                          labels <= 63, letters/digits/hyphens.
 *   uri                    RFC 3986 URI: scheme ":" hier-part ["?" query]
 *                          ["#" fragment], every character of its class,
 *                          %-escapes with two hex digits, IP literals in
 *                          brackets; ASCII only (an IRI is not a URI).
 *   uuid                   8-4-4-4-12 hex digits, either case, any version.
 *   ipv4                   dotted quad, each 0..255, no leading zeros.
 *   ipv6                   RFC 4291 §2.2 text forms: 8 groups, or fewer
 *                          with one "::", optionally ending in a dotted
 *                          quad; no zone id (fe80::1%eth0 is refused).
 */
#include "tg_schema.h"

static const char *const format_names[TG_FMT_COUNT] = {
    [TG_FMT_NONE] = "",     [TG_FMT_DATE_TIME] = "date-time", [TG_FMT_DATE] = "date",
    [TG_FMT_TIME] = "time", [TG_FMT_EMAIL] = "email",         [TG_FMT_URI] = "uri",
    [TG_FMT_UUID] = "uuid", [TG_FMT_IPV4] = "ipv4",           [TG_FMT_IPV6] = "ipv6",
};

int tg_format_lookup(const char *name, size_t len)
{
    for (int f = 1; f < TG_FMT_COUNT; f++)
        if (strlen(format_names[f]) == len && memcmp(format_names[f], name, len) == 0)
            return f;
    return TG_FMT_NONE;
}

const char *tg_format_name(int format)
{
    return format > 0 && format < TG_FMT_COUNT ? format_names[format] : "";
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

/* ---- email (RFC 5321 Mailbox, no quoted strings or address literals) ------ */

static int is_atext(char c)
{
    return is_alpha(c) || is_digit(c) || (c && strchr("!#$%&'*+-/=?^_`{|}~", c));
}

/* Domain = sub-domain *("." sub-domain), sub-domain = Let-dig [Ldh-str]. */
static int domain(const char *s, size_t len)
{
    size_t label = 0;
    if (len == 0 || len > 255)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '.') {
            if (label == 0 || s[i - 1] == '-')
                return 0;
            label = 0;
        } else if (is_alpha(c) || is_digit(c) || (c == '-' && label > 0)) {
            if (++label > 63)
                return 0;
        } else {
            return 0;
        }
    }
    return label > 0 && s[len - 1] != '-';
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
    return domain(at + 1, len - local - 1);
}

/* ---- uri (RFC 3986) ------------------------------------------------------- */

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
            if (i + 2 >= len || !is_hex(s[i + 1]) || !is_hex(s[i + 2]))
                return 0;
            i += 2;
        } else if (!is_unreserved(c) && !is_sub_delim(c) && !(c && strchr(extra, c))) {
            return 0;
        }
    }
    return 1;
}

static int ipv4(const char *s, size_t len);
static int ipv6(const char *s, size_t len);

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
        /* IP-literal = "[" ( IPv6address / IPvFuture ) "]" */
        if (host_len > 2 && (s[1] == 'v' || s[1] == 'V')) {
            size_t i = 2;
            while (i < host_len - 1 && is_hex(s[i]))
                i++;
            if (i == 2 || s[i] != '.' || i + 1 >= host_len - 1 ||
                !uri_chars(s + i + 1, host_len - 2 - i, ":"))
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

static int uri(const char *s, size_t len)
{
    size_t i = 0, end;
    const char *q;
    if (len == 0 || !is_alpha(s[0]))
        return 0;
    while (i < len &&
           (is_alpha(s[i]) || is_digit(s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.'))
        i++;
    if (i == len || s[i] != ':')
        return 0;
    i++;
    /* The fragment, then the query, end the hier-part. */
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
    }
    /* path-abempty / path-absolute / path-rootless / path-empty */
    return uri_chars(s + i, end - i, ":@/");
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

int tg_format_check(int format, const char *s, size_t len)
{
    switch (format) {
    case TG_FMT_DATE_TIME:
        return date_time(s, len);
    case TG_FMT_DATE:
        return full_date(s, len);
    case TG_FMT_TIME:
        return full_time(s, len);
    case TG_FMT_EMAIL:
        return email(s, len);
    case TG_FMT_URI:
        return uri(s, len);
    case TG_FMT_UUID:
        return uuid(s, len);
    case TG_FMT_IPV4:
        return ipv4(s, len);
    case TG_FMT_IPV6:
        return ipv6(s, len);
    default:
        return 1;
    }
}
