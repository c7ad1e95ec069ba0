/*
 * tg_regex.c -- the regular expressions of `pattern` and `patternProperties`,
 * on PCRE2 (8-bit code units, UTF mode), and the check of the "regex"
 * format (tg_regex_valid: an ECMA-262 syntax scan, then the same compile).
 *
 * JSON Schema says patterns are ECMA-262 regular expressions.  PCRE2 is
 * compiled here with the options that bring it closest:
 *   PCRE2_UTF                 match code points, not bytes
 *   PCRE2_ALT_BSUX (+ EXTRA)  \uXXXX, \u{X...} and \xXX as in ECMA-262
 *   PCRE2_DOLLAR_ENDONLY      `$` only at the very end, never before a final \n
 *   PCRE2_ALLOW_EMPTY_CLASS   `[]` matches nothing and `[^]` any character
 *   NEWLINE_ANYCRLF           `.` matches neither \n nor \r
 * and two things ECMA-262 has and PCRE2 10.42 lacks are rewritten before
 * compiling: long General_Category names (\p{Letter}, \p{gc=Lu},
 * \p{Assigned}) become their short forms, and a UTF-16 surrogate pair
 * written as two escapes (\uD83D\uDE00) becomes the one code point it
 * spells (\u{1F600}).  Patterns are unanchored searches.
 *
 * Where PCRE2, used this way, still differs from ECMA-262 (docs/rung.md, "Patterns"):
 *   - Patterns are read as with ECMA-262's /u flag: code points, \p{...}
 *     classes and \u{...} escapes always work, a surrogate pair of escapes
 *     is its code point, and a lone surrogate escape (\uD83D) is an error
 *     rather than half of a UTF-16 pair.
 *   - \d, \w and \b are ASCII-only in both.  \s is ASCII whitespace here,
 *     while ECMA-262's \s also matches U+00A0, U+FEFF, U+2028 and other
 *     Unicode spaces.
 *   - `.` matches U+2028 and U+2029, which ECMA-262's `.` does not.
 *   - Lookbehind must have a bounded length in PCRE2 10.42
 *     ((?<=a+) is refused); ECMA-262 allows any lookbehind.
 *   - Annex B leniencies of ECMA-262 are errors here: a range with a class
 *     escape ([\d-z]), a backreference to a group that does not exist (\8),
 *     an escape of a letter with no meaning.
 *   - PCRE2 accepts syntax ECMA-262 does not: possessive quantifiers (a++),
 *     atomic groups, inline flags ((?i)), \A \z \Q..\E, recursion,
 *     callouts, backtracking verbs.  A schema using them compiles here and
 *     would be refused by an ECMA-262 validator.
 *   - Case-insensitive or multiline matching cannot be asked for (JSON
 *     Schema patterns carry no flags), except with inline (?i) / (?m).
 *
 * Patterns longer than max_pattern_bytes are refused before PCRE2 compiles
 * them (TG_E_PATTERN_TOO_LONG).  Hostile patterns are bounded by
 * regex_match_limit (PCRE2's match limit, which the JIT honours too); a
 * match that reaches it is an error the caller must treat as a failed
 * check, never as a non-match that passes.
 *
 * Hostile input is bounded per validation too: the caller passes a budget
 * (max_regex_steps) that every match draws on.  PCRE2 does not say how
 * much of its match limit a match used, so a match runs first under a
 * small limit (FIRST_LIMIT) and, only when it reaches it, again under ten
 * times that, up to regex_match_limit; it is charged the limit under
 * which it finished.  A try whose limit is more than the budget has left
 * is not run: the validation ends with TG_E_REGEX_BUDGET.  The work done is
 * at most 10/9 of what is charged (the earlier tries add a tenth, a
 * hundredth, ...), and the charges depend on the pattern, the string and
 * the PCRE2 build alone (JIT or not): no timers, the same outcome every
 * run.
 *
 * Memory: PCRE2 allocates through a general context whose malloc and free
 * call the engine's allocator.  PCRE2's free gets no size, and the engine's
 * allocator wants one, so every block carries its size in a header.  The
 * contexts and the match data are made once per engine, on first use.
 *
 * Sharing: a registry's schemas repeat their patterns (one identifier rule
 * in every tool), and a compiled pattern with its JIT code costs far more
 * than its text.  tg_regex_compile hands out one compiled pattern per
 * distinct text per engine, counted; tg_regex_free gives back one count.
 * The table is engine state: schemas are compiled and freed under the
 * engine's one-thread rule (validations only read a pattern).
 */
#include "tg_schema.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* A compiled pattern, shared by every schema of one engine that has its
 * text (chained in the engine's table by the text's hash). */
struct tg_regex {
    pcre2_code *code;
    struct tg_regex_cache *owner;
    tg_regex *next;
    uint64_t hash;
    size_t refs;
    size_t len;
    char pattern[]; /* the text it was compiled from, len bytes */
};

struct tg_regex_cache {
    tg_engine_t *engine;
    tg_regex **shared; /* n_slots chains (a power of two, or 0) */
    size_t n_slots, n_shared;
    pcre2_general_context *general;
    pcre2_compile_context *compile;
    pcre2_match_context *match;
    pcre2_match_data *match_data;
    /* Set when the engine's allocator refused a block, so a JIT compile
     * that fails for want of memory can be told from one that fails for
     * want of executable pages (which only means: no JIT). */
    int alloc_failed;
};

/* Room for the size, keeping the block's alignment. */
#define HEADER (sizeof(max_align_t))

static void *rx_malloc(size_t size, void *ud)
{
    struct tg_regex_cache *c = ud;
    char *p = NULL;
    if (size <= SIZE_MAX - HEADER)
        p = tg_mem_realloc(c->engine, NULL, 0, size + HEADER);
    if (!p) {
        c->alloc_failed = 1;
        return NULL;
    }
    memcpy(p, &size, sizeof size);
    return p + HEADER;
}

static void rx_free(void *block, void *ud)
{
    struct tg_regex_cache *c = ud;
    char *p = block;
    size_t size;
    if (!p)
        return;
    p -= HEADER;
    memcpy(&size, p, sizeof size);
    tg_mem_free(c->engine, p, size + HEADER);
}

void tg_regex_cache_free(tg_engine_t *e)
{
    struct tg_regex_cache *c = e->regex;
    if (!c)
        return;
    pcre2_match_data_free(c->match_data);
    pcre2_match_context_free(c->match);
    pcre2_compile_context_free(c->compile);
    pcre2_general_context_free(c->general);
    /* (empty by now: every schema holding a pattern holds the engine too) */
    tg_mem_free(e, c->shared, c->n_slots * sizeof *c->shared);
    tg_mem_free(e, c, sizeof *c);
    e->regex = NULL;
}

static int cache_get(tg_engine_t *e, struct tg_regex_cache **out, tg_error_t *err)
{
    struct tg_regex_cache *c = e->regex;
    if (!c) {
        c = tg_mem_realloc(e, NULL, 0, sizeof *c);
        if (!c)
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        memset(c, 0, sizeof *c);
        c->engine = e;
        e->regex = c;
        c->general = pcre2_general_context_create(rx_malloc, rx_free, c);
        if (c->general) {
            c->compile = pcre2_compile_context_create(c->general);
            c->match = pcre2_match_context_create(c->general);
            /* One pair is enough: only whether it matched is asked. */
            c->match_data = pcre2_match_data_create(1, c->general);
        }
        if (!c->compile || !c->match || !c->match_data) {
            tg_regex_cache_free(e);
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        }
        pcre2_set_newline(c->compile, PCRE2_NEWLINE_ANYCRLF);
        pcre2_set_compile_extra_options(c->compile, PCRE2_EXTRA_ALT_BSUX);
    }
    *out = c;
    return TG_OK;
}

/* ---- ECMA-262 property names ------------------------------------------- */

/* General_Category long names (ECMA-262 table "Value aliases and canonical
 * values for the Unicode property General_Category") and their short ones. */
/* clang-format off */
static const struct {
    const char *lng, *shrt;
} gc_names[] = {
    {"Cased_Letter", "LC"},        {"Close_Punctuation", "Pe"},
    {"Connector_Punctuation", "Pc"}, {"Control", "Cc"},
    {"cntrl", "Cc"},               {"Currency_Symbol", "Sc"},
    {"Dash_Punctuation", "Pd"},    {"Decimal_Number", "Nd"},
    {"digit", "Nd"},               {"Enclosing_Mark", "Me"},
    {"Final_Punctuation", "Pf"},   {"Format", "Cf"},
    {"Initial_Punctuation", "Pi"}, {"Letter", "L"},
    {"Letter_Number", "Nl"},       {"Line_Separator", "Zl"},
    {"Lowercase_Letter", "Ll"},    {"Mark", "M"},
    {"Combining_Mark", "M"},       {"Math_Symbol", "Sm"},
    {"Modifier_Letter", "Lm"},     {"Modifier_Symbol", "Sk"},
    {"Nonspacing_Mark", "Mn"},     {"Number", "N"},
    {"Open_Punctuation", "Ps"},    {"Other", "C"},
    {"Other_Letter", "Lo"},        {"Other_Number", "No"},
    {"Other_Punctuation", "Po"},   {"Other_Symbol", "So"},
    {"Paragraph_Separator", "Zp"}, {"Private_Use", "Co"},
    {"Punctuation", "P"},          {"punct", "P"},
    {"Separator", "Z"},            {"Space_Separator", "Zs"},
    {"Spacing_Mark", "Mc"},        {"Surrogate", "Cs"},
    {"Symbol", "S"},               {"Titlecase_Letter", "Lt"},
    {"Unassigned", "Cn"},          {"Uppercase_Letter", "Lu"},
};
/* clang-format on */

static int has_prefix(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

/* Writes the PCRE2 spelling of the \p / \P escape whose braces hold
 * name[0..n) to out; returns the bytes written (never more than 5 + n). */
static size_t rewrite_property(char pe, const char *name, size_t n, char *out)
{
    const char *val = name;
    size_t vn = n, k = 0;
    if (has_prefix(name, n, "General_Category=")) {
        val = name + 17;
        vn = n - 17;
    } else if (has_prefix(name, n, "gc=")) {
        val = name + 3;
        vn = n - 3;
    }
    for (size_t i = 0; i < sizeof gc_names / sizeof gc_names[0]; i++)
        if (strlen(gc_names[i].lng) == vn && memcmp(gc_names[i].lng, val, vn) == 0) {
            val = gc_names[i].shrt;
            vn = strlen(val);
            break;
        }
    /* Assigned is "not Unassigned". */
    if (vn == 8 && memcmp(val, "Assigned", 8) == 0) {
        pe = pe == 'p' ? 'P' : 'p';
        val = "Cn";
        vn = 2;
    }
    out[k++] = '\\';
    out[k++] = pe;
    out[k++] = '{';
    memcpy(out + k, val, vn);
    k += vn;
    out[k++] = '}';
    return k;
}

/* The value of the four hex digits at p, or -1. */
static long hex4(const char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* The code point of the surrogate pair \uHHHH\uHHHH at pat[i] (a high
 * then a low surrogate, as ECMA-262's /u flag reads it), or -1. */
static long surrogate_pair(const char *pat, size_t i, size_t len)
{
    long hi, lo;
    if (i + 12 > len || pat[i] != '\\' || pat[i + 1] != 'u' || pat[i + 6] != '\\' ||
        pat[i + 7] != 'u')
        return -1;
    hi = hex4(pat + i + 2);
    lo = hex4(pat + i + 8);
    if (hi < 0xD800 || hi > 0xDBFF || lo < 0xDC00 || lo > 0xDFFF)
        return -1;
    return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
}

/* Writes \u{X...} for code point cp; returns the bytes written (at most
 * 10, fewer than the 12 of the pair it replaces). */
static size_t write_code_point(long cp, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    char digits[6];
    size_t n = 0, k = 0;
    while (cp) {
        digits[n++] = hex[cp & 15];
        cp >>= 4;
    }
    out[k++] = '\\';
    out[k++] = 'u';
    out[k++] = '{';
    while (n)
        out[k++] = digits[--n];
    out[k++] = '}';
    return k;
}

/* The pattern with every \p{...} / \P{...} and every surrogate pair
 * respelled, in out (which holds len bytes: a respelling is never longer);
 * returns the new length. */
static size_t rewrite_pattern(const char *pat, size_t len, char *out)
{
    size_t i = 0, k = 0;
    while (i < len) {
        long cp = surrogate_pair(pat, i, len);
        if (cp >= 0) {
            k += write_code_point(cp, out + k);
            i += 12;
            continue;
        }
        if (pat[i] == '\\' && i + 2 < len && (pat[i + 1] == 'p' || pat[i + 1] == 'P') &&
            pat[i + 2] == '{') {
            const char *close = memchr(pat + i + 3, '}', len - i - 3);
            if (close) {
                size_t n = (size_t)(close - (pat + i + 3));
                k += rewrite_property(pat[i + 1], pat + i + 3, n, out + k);
                i += n + 4;
                continue;
            }
        }
        /* Any other escape is copied whole, so \\p{ stays a literal. */
        if (pat[i] == '\\' && i + 1 < len)
            out[k++] = pat[i++];
        out[k++] = pat[i++];
    }
    return k;
}

static int needs_rewrite(const char *pat, size_t len)
{
    for (size_t i = 0; i + 2 < len; i++)
        if (pat[i] == '\\' && (((pat[i + 1] == 'p' || pat[i + 1] == 'P') && pat[i + 2] == '{') ||
                               surrogate_pair(pat, i, len) >= 0))
            return 1;
    return 0;
}

/* ---- ECMA-262 syntax (the "regex" format) --------------------------------- */

/* ECMA-262 without the /u flag, Annex B included, is what ajv-formats
 * compiles (new RegExp(s)) and the loosest reading there is; PCRE2 accepts
 * syntax it refuses.  This scanner follows that grammar's structure and
 * refuses what it refuses, and more where being exact would take more
 * than it is worth:
 *   - a quantifier with nothing quantifiable before it (start, "(", "|",
 *     another quantifier, ^ $ \b \B, a lookbehind), {n,m} with n > m;
 *   - a group other than (  (?:  (?=  (?!  (?<=  (?<!  (?<name>, a name
 *     other than ASCII [A-Za-z_$][A-Za-z0-9_$]*; unbalanced parentheses,
 *     nesting deeper than PCRE2's 250; an unterminated class;
 *   - a class range whose ends ECMA-262 orders otherwise, or whose ends
 *     the two engines might read differently: only a literal character
 *     below U+10000 or an escape with the same value in both may end one;
 *   - escapes of letters other than ECMA-262's (b B c d D f k n p P r s S
 *     t u v w W x): \A \Z \z \Q \E \K \G \R \X \h \N \g \e \o ... are
 *     PCRE2's; \c without a letter, \u{...} (read differently with and
 *     without /u), \k not followed by "<", \k in a class.
 * PCRE2 must then compile the pattern too (tg_regex_valid).  The
 * differential spec against ajv-formats checks random patterns for the
 * one rule that matters: nothing accepted here is refused by V8. */

#define RX_NEST 250 /* PCRE2's default parenthesis nesting limit */

enum {
    RX_NONE,
    RX_ATOM,
    RX_ASSERTION,
    RX_QUANTIFIED
};

static int rx_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int rx_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int rx_hex(const char *p, size_t len, size_t i, size_t n, long *value)
{
    long v = 0;
    if (i + n > len)
        return 0;
    for (size_t k = i; k < i + n; k++) {
        char c = p[k];
        int d = rx_digit(c)              ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                         : -1;
        if (d < 0)
            return 0;
        v = v * 16 + d;
    }
    *value = v;
    return 1;
}

/* The braced quantifier {n}, {n,} or {n,m} at p[i] ('{'): its length; 0
 * when the text is not one ('{' is then a literal, as Annex B reads it);
 * -1 when n > m. */
static long brace_quantifier(const char *p, size_t len, size_t i)
{
    size_t j = i + 1, n0 = j, n1, m0 = 0, m1 = 0;
    while (j < len && rx_digit(p[j]))
        j++;
    if (j == n0)
        return 0;
    n1 = j;
    if (j < len && p[j] == ',') {
        m0 = ++j;
        while (j < len && rx_digit(p[j]))
            j++;
        m1 = j;
    }
    if (j >= len || p[j] != '}')
        return 0;
    if (m1 > m0) { /* compare n and m as digit strings: they may be long */
        while (n0 < n1 - 1 && p[n0] == '0')
            n0++;
        while (m0 < m1 - 1 && p[m0] == '0')
            m0++;
        if (n1 - n0 > m1 - m0 || (n1 - n0 == m1 - m0 && memcmp(p + n0, p + m0, n1 - n0) > 0))
            return -1;
    }
    return (long)(j + 1 - i);
}

/* The bytes of the UTF-8 sequence led by c. */
static size_t rx_utf8_len(unsigned char c)
{
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* The escape at p[i] ('\'): its length, 0 when refused.  *value is the
 * character it stands for when both engines read it so and it may end a
 * class range, else -1; *assertion is set for \b and \B outside a class. */
static size_t rx_escape(const char *p, size_t len, size_t i, int in_class, long *value,
                        int *assertion)
{
    char c;
    *value = -1;
    *assertion = 0;
    if (i + 1 >= len)
        return 0;
    c = p[i + 1];
    if (rx_digit(c)) {
        /* \0 alone is NUL; other digits are backreferences or octal, which
         * PCRE2 and Annex B resolve differently: never a range end. */
        if (c == '0' && !(i + 2 < len && rx_digit(p[i + 2])))
            *value = 0;
        return 2;
    }
    if (!rx_letter(c)) {
        if ((unsigned char)c < 0x80)
            *value = (unsigned char)c; /* an identity escape: \. \- \\ ... */
        return 1 + rx_utf8_len((unsigned char)c);
    }
    switch (c) {
    case 'b':
        if (in_class)
            *value = 8;
        else
            *assertion = 1;
        return 2;
    case 'B':
        *assertion = !in_class;
        return 2;
    case 'f':
        *value = 0x0C;
        return 2;
    case 'n':
        *value = 0x0A;
        return 2;
    case 'r':
        *value = 0x0D;
        return 2;
    case 't':
        *value = 0x09;
        return 2;
    case 'v':
        *value = 0x0B;
        return 2;
    case 'c':
        if (i + 2 >= len || !rx_letter(p[i + 2]))
            return 0;
        *value = p[i + 2] % 32;
        return 3;
    case 'x':
        if (rx_hex(p, len, i + 2, 2, value))
            return 4;
        *value = 'x'; /* both read a lone \x as "x" */
        return 2;
    case 'u':
        if (i + 2 < len && p[i + 2] == '{')
            return 0;
        if (rx_hex(p, len, i + 2, 4, value)) {
            if (*value >= 0xD800 && *value <= 0xDFFF)
                *value = -1;
            return 6;
        }
        *value = 'u';
        return 2;
    case 'k':
        return !in_class && i + 2 < len && p[i + 2] == '<' ? 2 : 0;
    case 'd':
    case 'D':
    case 'w':
    case 'W':
    case 's':
    case 'S':
    case 'p':
    case 'P':
        return 2;
    default:
        return 0;
    }
}

/* One class atom at p[*j]; *value as rx_escape says. */
static int rx_class_atom(const char *p, size_t len, size_t *j, long *value)
{
    unsigned char c = (unsigned char)p[*j];
    size_t k;
    int assertion;
    if (c == '\\') {
        if (!(k = rx_escape(p, len, *j, 1, value, &assertion)))
            return 0;
        *j += k;
        return 1;
    }
    k = rx_utf8_len(c);
    *value = k == 1   ? c
             : k == 2 ? (long)(c & 0x1F) << 6 | (p[*j + 1] & 0x3F)
             : k == 3 ? (long)(c & 0x0F) << 12 | (long)(p[*j + 1] & 0x3F) << 6 | (p[*j + 2] & 0x3F)
                      : -1; /* two UTF-16 units without /u: never a range end */
    *j += k;
    return 1;
}

/* The class at p[i] ('['): its length, 0 when refused. */
static size_t rx_class(const char *p, size_t len, size_t i)
{
    size_t j = i + 1;
    if (j < len && p[j] == '^')
        j++;
    while (j < len && p[j] != ']') {
        long lo, hi;
        if (!rx_class_atom(p, len, &j, &lo))
            return 0;
        /* "a-b" is a range unless the "-" is the class's last character */
        if (j + 1 < len && p[j] == '-' && p[j + 1] != ']') {
            j++;
            if (!rx_class_atom(p, len, &j, &hi) || lo < 0 || hi < 0 || lo > hi)
                return 0;
        }
    }
    return j < len ? j + 1 - i : 0;
}

/* The group opening "(?" at p[i]: its length, 0 when refused; *behind is
 * set for a lookbehind. */
static size_t rx_group(const char *p, size_t len, size_t i, int *behind)
{
    size_t j = i + 3;
    *behind = 0;
    if (i + 2 >= len)
        return 0;
    if (p[i + 2] == ':' || p[i + 2] == '=' || p[i + 2] == '!')
        return 3;
    if (p[i + 2] != '<' || j >= len)
        return 0;
    if (p[j] == '=' || p[j] == '!') {
        *behind = 1;
        return 4;
    }
    if (!rx_letter(p[j]) && p[j] != '_' && p[j] != '$')
        return 0;
    while (j < len && (rx_letter(p[j]) || rx_digit(p[j]) || p[j] == '_' || p[j] == '$'))
        j++;
    return j < len && p[j] == '>' ? j + 1 - i : 0;
}

static int ecma_syntax(const char *p, size_t len)
{
    unsigned char behind[RX_NEST]; /* per open group: a lookbehind? */
    size_t depth = 0, i = 0;
    int prev = RX_NONE;
    while (i < len) {
        char c = p[i];
        long k = 0, value;
        int flag;
        if (c == '\\') {
            if (!(k = (long)rx_escape(p, len, i, 0, &value, &flag)))
                return 0;
            prev = flag ? RX_ASSERTION : RX_ATOM;
        } else if (c == '[') {
            if (!(k = (long)rx_class(p, len, i)))
                return 0;
            prev = RX_ATOM;
        } else if (c == '(') { /* PCRE2's (*VERB) fails at its "*": nothing to repeat */
            flag = 0;
            k = 1;
            if (i + 1 < len && p[i + 1] == '?' && !(k = (long)rx_group(p, len, i, &flag)))
                return 0;
            if (depth == RX_NEST)
                return 0;
            behind[depth++] = (unsigned char)flag;
            prev = RX_NONE;
        } else if (c == ')') {
            if (!depth)
                return 0;
            prev = behind[--depth] ? RX_ASSERTION : RX_ATOM;
            k = 1;
        } else if (c == '|') {
            prev = RX_NONE;
            k = 1;
        } else if (c == '^' || c == '$') {
            prev = RX_ASSERTION;
            k = 1;
        } else if (c == '*' || c == '+' || c == '?' ||
                   (c == '{' && (k = brace_quantifier(p, len, i)) != 0)) {
            if (prev != RX_ATOM || k < 0)
                return 0;
            if (!k)
                k = 1;
            if ((size_t)k + i < len && p[i + (size_t)k] == '?') /* lazy */
                k++;
            prev = RX_QUANTIFIED;
        } else {
            prev = RX_ATOM; /* a literal */
            k = (long)rx_utf8_len((unsigned char)c);
        }
        i += (size_t)k;
    }
    return depth == 0;
}

/* ---- compile and match ------------------------------------------------- */

/* pat compiled by PCRE2 (no JIT) into *code: TG_OK, TG_E_PATTERN,
 * TG_E_PATTERN_TOO_LONG or TG_E_NOMEM. */
static int compile_code(tg_engine_t *e, const char *pat, size_t len, pcre2_code **code,
                        tg_error_t *err)
{
    struct tg_regex_cache *c;
    char *rewritten = NULL;
    size_t rewritten_size = len;
    int errcode, rc;
    PCRE2_SIZE erroffset;
    const uint32_t options = PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY |
                             PCRE2_ALLOW_EMPTY_CLASS | PCRE2_NO_UTF_CHECK;

    /* PCRE2's compile time and memory grow with the pattern: a registry
     * (which may come from an MCP server) cannot make them unbounded. */
    if (len > e->limits.max_pattern_bytes)
        return tg_fail(err, TG_E_PATTERN_TOO_LONG, TG_NO_OFFSET,
                       "pattern of %zu bytes is longer than max_pattern_bytes (%zu)", len,
                       e->limits.max_pattern_bytes);
    if ((rc = cache_get(e, &c, err)) != TG_OK)
        return rc;
    if (needs_rewrite(pat, len)) {
        if (!(rewritten = tg_mem_realloc(e, NULL, 0, rewritten_size)))
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        len = rewrite_pattern(pat, len, rewritten);
        pat = rewritten;
    }
    *code = pcre2_compile((PCRE2_SPTR)pat, len, options, &errcode, &erroffset, c->compile);
    if (rewritten)
        tg_mem_free(e, rewritten, rewritten_size);
    if (!*code) {
        PCRE2_UCHAR why[120];
        if (errcode == PCRE2_ERROR_HEAP_FAILED)
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        pcre2_get_error_message(errcode, why, sizeof why);
        return tg_fail(err, TG_E_PATTERN, TG_NO_OFFSET, "%s (at offset %zu)", (const char *)why,
                       (size_t)erroffset);
    }
    return TG_OK;
}

static uint64_t pattern_hash(const char *pat, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a: patterns are short */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)pat[i]) * 1099511628211ull;
    return h;
}

/* Doubles the table (16 chains first); TG_OK or TG_E_NOMEM, the table as
 * it was. */
static int grow_shared(tg_engine_t *e, struct tg_regex_cache *c, tg_error_t *err)
{
    size_t n = c->n_slots ? c->n_slots * 2 : 16;
    tg_regex **slots = tg_mem_realloc(e, NULL, 0, n * sizeof *slots);
    if (!slots)
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    memset(slots, 0, n * sizeof *slots);
    for (size_t i = 0; i < c->n_slots; i++)
        for (tg_regex *r = c->shared[i], *next; r; r = next) {
            next = r->next;
            r->next = slots[r->hash & (n - 1)];
            slots[r->hash & (n - 1)] = r;
        }
    tg_mem_free(e, c->shared, c->n_slots * sizeof *c->shared);
    c->shared = slots;
    c->n_slots = n;
    return TG_OK;
}

int tg_regex_compile(tg_engine_t *e, const char *pat, size_t len, tg_regex **out, tg_error_t *err)
{
    struct tg_regex_cache *c;
    pcre2_code *code;
    tg_regex *re;
    uint64_t h = pattern_hash(pat, len);
    int rc;

    *out = NULL;
    /* the limit holds for a pattern met before too (limits may have changed) */
    if (len > e->limits.max_pattern_bytes)
        return tg_fail(err, TG_E_PATTERN_TOO_LONG, TG_NO_OFFSET,
                       "pattern of %zu bytes is longer than max_pattern_bytes (%zu)", len,
                       e->limits.max_pattern_bytes);
    if ((rc = cache_get(e, &c, err)) != TG_OK)
        return rc;
    if (c->n_slots)
        for (re = c->shared[h & (c->n_slots - 1)]; re; re = re->next)
            if (re->hash == h && re->len == len && memcmp(re->pattern, pat, len) == 0) {
                re->refs++;
                *out = re;
                return TG_OK;
            }
    if (2 * (c->n_shared + 1) > c->n_slots && (rc = grow_shared(e, c, err)) != TG_OK)
        return rc;
    if (len > SIZE_MAX - sizeof *re || !(re = tg_mem_realloc(e, NULL, 0, sizeof *re + len)))
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    if ((rc = compile_code(e, pat, len, &code, err)) != TG_OK) {
        tg_mem_free(e, re, sizeof *re + len);
        return rc;
    }
    c->alloc_failed = 0;
    rc = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    if (rc == PCRE2_ERROR_NOMEMORY && c->alloc_failed) {
        pcre2_code_free(code);
        tg_mem_free(e, re, sizeof *re + len);
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    }
    /* Any other JIT failure (no JIT in this build, no executable memory)
     * leaves the interpreter, which gives the same answers. */
    re->code = code;
    re->owner = c;
    re->hash = h;
    re->refs = 1;
    re->len = len;
    if (len)
        memcpy(re->pattern, pat, len);
    re->next = c->shared[h & (c->n_slots - 1)];
    c->shared[h & (c->n_slots - 1)] = re;
    c->n_shared++;
    *out = re;
    return TG_OK;
}

int tg_regex_valid(tg_engine_t *e, const char *pat, size_t len, int *valid, tg_error_t *err)
{
    pcre2_code *code;
    int rc;
    *valid = 0;
    if (!ecma_syntax(pat, len))
        return TG_OK;
    rc = compile_code(e, pat, len, &code, err);
    if (rc == TG_E_PATTERN || rc == TG_E_PATTERN_TOO_LONG) {
        tg_error_clear(err); /* an invalid value, not a failed validation */
        return TG_OK;
    }
    if (rc != TG_OK)
        return rc;
    pcre2_code_free(code);
    *valid = 1;
    return TG_OK;
}

void tg_regex_free(tg_regex *re)
{
    struct tg_regex_cache *c;
    tg_regex **at;
    if (!re || --re->refs > 0)
        return;
    c = re->owner;
    for (at = &c->shared[re->hash & (c->n_slots - 1)]; *at != re; at = &(*at)->next)
        ;
    *at = re->next;
    c->n_shared--;
    pcre2_code_free(re->code);
    tg_mem_free(c->engine, re, sizeof *re + re->len);
}

/* A match's first limit: what ordinary patterns on ordinary strings need
 * (one to a few dozen of PCRE2's units), with room to spare. */
#define FIRST_LIMIT 100

int tg_regex_search(tg_engine_t *e, const tg_regex *re, const char *s, size_t len, size_t *budget,
                    int *matched, tg_error_t *err)
{
    struct tg_regex_cache *c;
    const pcre2_code *code = re->code;
    size_t cap = e->limits.regex_match_limit;
    size_t limit = cap < FIRST_LIMIT ? cap : FIRST_LIMIT;
    int rc = cache_get(e, &c, err);
    if (rc != TG_OK)
        return rc;
    for (;;) {
        if (limit > *budget)
            return tg_fail(err, TG_E_REGEX_BUDGET, TG_NO_OFFSET,
                           "pattern matches would take more than max_regex_steps (%zu) steps in "
                           "this validation",
                           e->limits.max_regex_steps);
        pcre2_set_match_limit(c->match, (uint32_t)limit);
        /* Strings come from the DOM, which holds only well-formed UTF-8. */
        rc = pcre2_match(code, (PCRE2_SPTR)s, len, 0, PCRE2_NO_UTF_CHECK, c->match_data, c->match);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
            /* The JIT's fixed stack is small; the interpreter keeps its
             * frames on the heap and is bounded by the same match limit. */
            rc = pcre2_match(code, (PCRE2_SPTR)s, len, 0, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                             c->match_data, c->match);
        if (rc != PCRE2_ERROR_MATCHLIMIT && rc != PCRE2_ERROR_DEPTHLIMIT) {
            *budget -= limit;
            break;
        }
        if (limit == cap)
            return tg_fail(err, TG_E_REGEX_LIMIT, TG_NO_OFFSET,
                           "pattern match gave up after regex_match_limit (%zu) steps", cap);
        limit = limit > cap / 10 ? cap : limit * 10;
    }
    if (rc >= 0) {
        *matched = 1;
        return TG_OK;
    }
    if (rc == PCRE2_ERROR_NOMATCH) {
        *matched = 0;
        return TG_OK;
    }
    if (rc == PCRE2_ERROR_NOMEMORY)
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory in a pattern match");
    if (rc == PCRE2_ERROR_HEAPLIMIT)
        return tg_fail(err, TG_E_REGEX_LIMIT, TG_NO_OFFSET,
                       "pattern match gave up at PCRE2's heap limit");
    return tg_fail(err, TG_E_REGEX_LIMIT, TG_NO_OFFSET, "pattern match failed (PCRE2 error %d)",
                   rc);
}
