/*
 * tg_json.c -- strict RFC 8259 parser into an arena DOM.
 *
 * Strict means: exactly one value with optional surrounding whitespace
 * (space, tab, LF, CR); no BOM, comments, trailing commas, single quotes,
 * NaN/Infinity, leading zeros or bare control characters; strings must be
 * well-formed UTF-8 and \u escapes must pair surrogates correctly; an object
 * must not name a key twice (RFC 8785 requires all of this of its input).
 *
 * The input is copied once into the document's arena, followed by
 * TG_INPUT_PAD NUL bytes: a NUL stops every byte loop here without a bound
 * check, and the padding lets strings be scanned 16 bytes and numbers 8
 * digits at a time.  Strings are decoded in place in that copy (a decoded
 * string is never longer than its escaped form), so a string costs no
 * allocation of its own.  Numbers are split into digits and exponent in
 * the same pass that checks them (tg_strtod.c makes the double).  Where
 * the processor can check a whole text's UTF-8 at SIMD speed (tg_utf8.c)
 * and the text passes, strings are scanned without stopping at non-ASCII
 * bytes; otherwise each sequence is validated where it stands, so that
 * errors still come in source order.  Along
 * the way the parser notes which strings, keys and numbers are already in
 * canonical form (TG_F_RAW_*), so that the writer can copy them.
 *
 * Children of a container are parsed straight into slots of a scratch
 * stack and moved into one contiguous arena block when the container
 * closes; objects are then sorted into RFC 8785 order, which also puts
 * duplicate keys side by side.  The read position travels in a register
 * (every parse function takes and returns it).
 *
 * Recursion depth is bounded by max_depth (at most TG_LIMIT_MAX_DEPTH).
 *
 * Asked to (TG_PARSE_SHARE_REPEATS), the parser notices a container whose
 * bytes repeat those of one it parsed before in the same text -- the
 * samples of a plan that agree, their arguments and results -- and makes
 * the repeat's node share the earlier one's children instead of parsing
 * them again: the same bytes parse to the same value, without error.  The
 * nodes inside a repeat then carry the offsets of the first occurrence, so
 * only callers that report no offset but the parse error's ask for this.
 */
#include "tg_internal.h"

#include <string.h>
#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#endif

/* Where inlining matters to the hot path, say so (GCC and Clang). */
#if defined(__GNUC__)
#define ALWAYS_INLINE __attribute__((always_inline)) inline
#define NOINLINE __attribute__((noinline))
#else
#define ALWAYS_INLINE inline
#define NOINLINE
#endif

#define LOCAL_STACK 64 /* children held before the scratch stack goes to the heap */

/* What the string scanner looks closer at, made once a parse: '"', '\\',
 * the control characters and, unless the input's UTF-8 is known good, the
 * non-ASCII bytes. */
#if defined(__SSE2__) && defined(__GNUC__)
/* Sixteen bytes at a time: one signed compare finds the control
 * characters and the non-ASCII bytes (flipping the top bit first makes it
 * an unsigned one: below 0x20 only). */
typedef struct {
    __m128i quote, bslash, flip, below;
} plain_test;

static inline plain_test plain_test_of(int utf8_checked)
{
    plain_test t = {_mm_set1_epi8('"'), _mm_set1_epi8('\\'),
                    _mm_set1_epi8(utf8_checked ? (char)0x80 : 0),
                    _mm_set1_epi8(utf8_checked ? (char)(' ' ^ 0x80) : ' ')};
    return t;
}
#else
typedef struct {
    uint64_t non_ascii; /* the bytes' top bits, when non-ASCII needs a closer look */
} plain_test;

static inline plain_test plain_test_of(int utf8_checked)
{
    plain_test t = {utf8_checked ? 0 : 0x8080808080808080ull};
    return t;
}
#endif

/* The parse functions take the read position p and return the position
 * after what they read, or NULL once they failed (then rc and *err say
 * why), so that p lives in a register rather than in this struct. */
typedef struct parser {
    tg_engine_t *e;
    const tg_limits_t *lim;
    char *base; /* arena copy of the input, NUL-padded */
    char *end;  /* one past the last input byte */
    tg_arena *arena;
    tg_value_t *stack; /* children of the open containers */
    size_t stack_len, stack_cap;
    int stack_heap; /* stack was allocated with the engine's allocator */
    size_t depth;
    int utf8_checked; /* the whole input is well-formed UTF-8 (tg_utf8_check_fast) */
    plain_test plain; /* made from utf8_checked */
    int rc;           /* the error code, once a parse function returned NULL */
    tg_error_t *err;
    /* TG_PARSE_SHARE_REPEATS: the caller's text (never decoded in place),
     * the containers seen, and how many more bytes may be compared */
    const char *src;
    size_t peak; /* the deepest depth reached so far */
    size_t compare_budget;
    uint32_t seen_slots; /* a bit for each filled slot of seen[] */
    struct seen_container *seen;
} parser;

/* Records an error at `at`; returns NULL for the caller to pass up. */
static char *fail_at(parser *P, const char *at, int code, const char *msg)
{
    P->rc = tg_fail(P->err, code, (size_t)(at - P->base), "%s", msg);
    return NULL;
}

/* The NUL after the input stops this (and every other byte loop here)
 * without a bound check. */
static inline char *skip_ws(char *p)
{
    if ((unsigned char)*p > ' ') /* compact JSON: nothing to skip */
        return p;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    return p;
}

/* ---- scratch stack ----------------------------------------------------- */

/* Room for extra more nodes; TG_OK, or TG_E_NOMEM recorded at `at`. */
static int stack_reserve(parser *P, const char *at, size_t extra)
{
    size_t need, cap;
    tg_value_t *s;
    if (extra <= P->stack_cap - P->stack_len)
        return TG_OK;
    need = P->stack_len + extra;
    cap = P->stack_cap * 2;
    if (cap < need)
        cap = need;
    if (cap > SIZE_MAX / sizeof *s) {
        fail_at(P, at, TG_E_NOMEM, "out of memory");
        return TG_E_NOMEM;
    }
    s = tg_mem_realloc(P->e, P->stack_heap ? P->stack : NULL,
                       P->stack_heap ? P->stack_cap * sizeof *s : 0, cap * sizeof *s);
    if (!s) {
        fail_at(P, at, TG_E_NOMEM, "out of memory");
        return TG_E_NOMEM;
    }
    if (!P->stack_heap && P->stack_len)
        memcpy(s, P->stack, P->stack_len * sizeof *s);
    P->stack = s;
    P->stack_cap = cap;
    P->stack_heap = 1;
    return TG_OK;
}

/* ---- strings ----------------------------------------------------------- */

/* 1 + the value of each hex digit, 0 for every other byte (a table: no
 * branch on digit or letter). */
/* clang-format off */
static const unsigned char hex_plus1[256] = {
    ['0'] = 1,   ['1'] = 2,   ['2'] = 3,   ['3'] = 4,   ['4'] = 5,   ['5'] = 6,
    ['6'] = 7,   ['7'] = 8,   ['8'] = 9,   ['9'] = 10,  ['a'] = 11,  ['b'] = 12,
    ['c'] = 13,  ['d'] = 14,  ['e'] = 15,  ['f'] = 16,  ['A'] = 11,  ['B'] = 12,
    ['C'] = 13,  ['D'] = 14,  ['E'] = 15,  ['F'] = 16,
};
/* clang-format on */

/* The four hex digits at p as a code unit, or -1. */
static inline long hex4(const char *p)
{
    long a = (long)hex_plus1[(unsigned char)p[0]] - 1, b = (long)hex_plus1[(unsigned char)p[1]] - 1;
    long c = (long)hex_plus1[(unsigned char)p[2]] - 1, d = (long)hex_plus1[(unsigned char)p[3]] - 1;
    if ((a | b | c | d) < 0)
        return -1;
    return a << 12 | b << 8 | c << 4 | d;
}

/* UTF-8 by lead byte (Unicode 15, table 3-7: no overlongs, no surrogates,
 * nothing past U+10FFFF): the sequence length (0: not a lead byte) and the
 * range of the second byte. */
/* clang-format off */
static const unsigned char utf8_len[256] = {
    [0xC2] = 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,       /* C2..CF */
    [0xD0] = 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* D0..DF */
    [0xE0] = 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, /* E0..EF */
    [0xF0] = 4, 4, 4, 4, 4,                                  /* F0..F4 */
};
/* clang-format on */

/* Length of the well-formed UTF-8 sequence at p (lead byte >= 0x80), or 0.
 * Reads up to 4 bytes (the padding makes that safe) and decides with one
 * predictable branch, whatever the length. */
static inline size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0], n = utf8_len[c];
    unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    unsigned ok = (n != 0) & ((size_t)(end - p) >= n) & (p[1] - lo <= hi - lo) &
                  ((n < 3) | ((p[2] & 0xC0) == 0x80)) & ((n < 4) | ((p[3] & 0xC0) == 0x80));
    return ok ? n : 0;
}

#if defined(__SSE2__) && defined(__GNUC__)
/* A bit for each byte of x where the scanner must look closer. */
static inline unsigned special16(const plain_test *t, __m128i x)
{
    __m128i m =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, t->quote), _mm_cmpeq_epi8(x, t->bslash)),
                     _mm_cmplt_epi8(_mm_xor_si128(x, t->flip), t->below));
    return (unsigned)_mm_movemask_epi8(m);
}

static inline char *skip_plain(char *r, const plain_test *t)
{
    for (;;) {
        unsigned bits = special16(t, _mm_loadu_si128((const __m128i *)(const void *)r));
        if (bits)
            return r + __builtin_ctz(bits);
        r += 16;
    }
}
#else
/* Eight bytes at a time: a mask with the high bit set in each byte of x
 * that is '"', '\\', a control character or (non_ascii set) non-ASCII,
 * i.e. where the string scanner must look closer.  (The classic
 * has-zero-byte tricks: a borrow can only flag bytes above a real hit, so
 * the lowest flag is exact.) */
static inline uint64_t string_special8(uint64_t x, uint64_t non_ascii)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    return ((x & non_ascii) | ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b)) &
           high;
}

static inline char *skip_plain(char *r, const plain_test *t)
{
    for (;;) {
        uint64_t x, m;
        memcpy(&x, r, 8);
        m = string_special8(x, t->non_ascii);
        if (m) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return r + (__builtin_ctzll(m) >> 3);
#else
            while (!(*r == '"' || *r == '\\' || (unsigned char)*r < 0x20 ||
                     ((unsigned char)*r >= 0x80 && t->non_ascii)))
                r++;
            return r;
#endif
        }
        r += 8;
    }
}
#endif
/* skip_plain's contract: returns the first byte at or after r that is '"',
 * '\\', below 0x20 or (unless utf8_checked) above 0x7F.  It reads whole 16- or 8-byte blocks: the
 * input copy ends in TG_INPUT_PAD NUL bytes, which stop it like any control
 * character, so it never reads past them.  (So an oversized string is
 * scanned to its end, as fast as the input copy was made, before it is
 * refused.) */

static NOINLINE char *parse_string_slow(parser *P, char *start, char *r, const char **s,
                                        uint32_t *len, int *raw);

/* p is just past the opening quote.  Decodes in place; on success *s and
 * *len describe the decoded bytes, *raw says whether the string's canonical
 * form is its bytes between the quotes around them (TG_F_RAW_STR), and the
 * position after the closing quote is returned.
 *
 * This is the common case, inlined: plain bytes and valid UTF-8 up to the
 * closing quote, within max_string_bytes.  Anything else (an escape, an
 * error) continues in parse_string_slow from where this stopped. */
static ALWAYS_INLINE char *parse_string(parser *P, char *p, const char **s, uint32_t *len, int *raw)
{
    char *start = p, *r = p;
    for (;;) {
        unsigned char c;
        r = skip_plain(r, &P->plain);
        c = (unsigned char)*r;
        if (c == '"') {
            if ((size_t)(r - start) > P->lim->max_string_bytes)
                break;
            *s = start;
            *len = (uint32_t)(r - start);
            *raw = 1;
            return r + 1;
        }
        if (c < 0x80)
            break;
        /* Non-ASCII text tends to come in runs: validate them here. */
        do {
            size_t n;
            if ((size_t)(r - start) > P->lim->max_string_bytes ||
                !(n = utf8_seq((const unsigned char *)r, (const unsigned char *)P->end)))
                return parse_string_slow(P, start, r, s, len, raw);
            r += n;
        } while ((unsigned char)*r >= 0x80);
    }
    return parse_string_slow(P, start, r, s, len, raw);
}

/* Moves the n bytes at r down to w (w <= r) inside the input copy.  Once
 * the gap is 8 bytes wide it goes in 8-byte blocks, reading past r + n
 * (the padding allows it) and writing past w + n only onto bytes already
 * read: short runs between escapes cost no call. */
static inline void move_down(char *w, const char *r, size_t n)
{
    if (r - w >= 8) {
        for (size_t i = 0; i < n; i += 8) {
            uint64_t x;
            memcpy(&x, r + i, 8);
            memcpy(w + i, &x, 8);
        }
    } else if (w != r) {
        memmove(w, r, n);
    }
}

/* Moves the run of plain bytes at r (what skip_plain would pass over) down
 * to w (w < r) and returns its length.  With SSE2 each 16-byte block is
 * stored as soon as it is found plain: the bytes it overwrites were read
 * already (w < r), so scanning and moving are one pass; the last block is
 * stored whole only when that cannot reach bytes not yet read. */
static inline size_t move_plain(char *w, char *r, const plain_test *t)
{
#if defined(__SSE2__) && defined(__GNUC__)
    size_t n = 0;
    for (;;) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(r + n));
        unsigned bits = special16(t, x);
        if (!bits || r - w >= 16)
            _mm_storeu_si128((__m128i *)(void *)(w + n), x);
        if (bits) {
            size_t k = (size_t)__builtin_ctz(bits);
            if (r - w < 16)
                memmove(w + n, r + n, k);
            return n + k;
        }
        n += 16;
    }
#else
    size_t n = (size_t)(skip_plain(r, t) - r);
    move_down(w, r, n);
    return n;
#endif
}

/* The general case from r on (nothing before r was decoded differently
 * from its bytes).  Decoded bytes are written at w, which falls behind r
 * from the first escape on (every escape is longer than its decoding);
 * at the end a '"' is written after them, so quotes still surround them.
 *
 * Errors come in source order; before each character (a plain byte, a
 * UTF-8 sequence, an escape, the closing quote, or the end) the decoded
 * length so far is checked against max_string_bytes. */
static char *parse_string_slow(parser *P, char *start, char *r, const char **s, uint32_t *len,
                               int *raw)
{
    char *w = r, *end = P->end;
    const size_t max = P->lim->max_string_bytes;
    int plain = 1; /* no decoded byte needs an escape in canonical form */

    for (;;) {
        unsigned char c;
        if ((size_t)(w - start) > max)
            return fail_at(P, start - 1, TG_E_STRING_TOO_LONG,
                           "string longer than max_string_bytes");
        c = (unsigned char)*r;
        if (c == '\\') {
            long cp, lo;
            char *esc = r;
            if (end - r < 2)
                return fail_at(P, r, TG_E_EOF, "unterminated escape");
            switch (r[1]) {
            /* clang-format off */
            case '"': *w++ = '"'; r += 2; plain = 0; continue;
            case '\\': *w++ = '\\'; r += 2; plain = 0; continue;
            case '/': *w++ = '/'; r += 2; continue;
            case 'b': *w++ = '\b'; r += 2; plain = 0; continue;
            case 'f': *w++ = '\f'; r += 2; plain = 0; continue;
            case 'n': *w++ = '\n'; r += 2; plain = 0; continue;
            case 'r': *w++ = '\r'; r += 2; plain = 0; continue;
            case 't': *w++ = '\t'; r += 2; plain = 0; continue;
            case 'u': break;
            /* clang-format on */
            default:
                return fail_at(P, r, TG_E_ESCAPE, "invalid escape sequence");
            }
            if (end - r < 6 || (cp = hex4(r + 2)) < 0)
                return fail_at(P, r, end - r < 6 ? TG_E_EOF : TG_E_ESCAPE,
                               "\\u must be followed by four hex digits");
            r += 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return fail_at(P, esc, TG_E_SURROGATE,
                               "low surrogate escape without a high surrogate before it");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - r < 6 || r[0] != '\\' || r[1] != 'u' || (lo = hex4(r + 2)) < 0 ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return fail_at(P, esc, TG_E_SURROGATE,
                                   "high surrogate escape not followed by a low surrogate escape");
                r += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp < 0x80) {
                if (cp < 0x20 || cp == '"' || cp == '\\')
                    plain = 0;
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
            continue;
        }
        if (c == '"') {
            *w = '"'; /* w < r after an escape; else this is the quote itself */
            *s = start;
            *len = (uint32_t)(w - start);
            *raw = plain;
            return r + 1;
        }
        if (c >= 0x80 && !P->utf8_checked) {
            /* A run of multi-byte characters (CJK text, emoji) is checked
             * sequence by sequence, then moved down in one go (text known
             * to be good UTF-8 is a plain run, below). */
            char *run = r;
            do {
                size_t n = utf8_seq((const unsigned char *)r, (const unsigned char *)end);
                if (!n)
                    return fail_at(P, r, TG_E_UTF8, "invalid UTF-8 in string");
                r += n;
            } while (r < end && (unsigned char)*r >= 0x80);
            move_down(w, run, (size_t)(r - run));
            w += r - run;
            continue;
        }
        if (r >= end)
            return fail_at(P, r, TG_E_EOF, "unterminated string");
        if (c < 0x20)
            return fail_at(P, r, TG_E_CONTROL_CHAR, "control character in string must be escaped");
        {
            /* A run of plain bytes (one longer than the string may still
             * grow is refused at the top of the loop) */
            size_t n = move_plain(w, r, &P->plain);
            w += n;
            r += n;
        }
    }
}

/* ---- numbers ----------------------------------------------------------- */

#define DIGIT(c) ((unsigned)(c) - '0' < 10)
#define W_DIGITS 19               /* decimal digits that always fit in a uint64_t */
#define EXP_CAP 100000000000000ll /* an exponent beyond any input length */

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Up to 8 digits at a time (Lemire's SWAR conversion): their count among
 * the 8 bytes at p, which the input padding makes readable, and value,
 * without a branch per digit.  Bytes are in string order, the first in the
 * low byte. */
static inline unsigned digits8(const char *p, uint64_t *value, unsigned *zeros)
{
    const uint64_t ascii0 = 0x3030303030303030ull, high = 0xF0F0F0F0F0F0F0F0ull;
    uint64_t x, not_digit, d;
    unsigned k;
    memcpy(&x, p, 8);
    /* a byte is a digit when it and it + 6 both have high nibble 3; a carry
     * out of a byte only disturbs the bytes after it, past the first
     * non-digit, which are not looked at */
    not_digit = ((x & high) ^ ascii0) | (((x + 0x0606060606060606ull) & high) ^ ascii0);
    /* the first non-digit's index, or 8 (no branch: the top bit stands in
     * for "none" and the comparison adds the missing 1) */
    k = ((unsigned)__builtin_ctzll(not_digit | (1ull << 63)) >> 3) + (not_digit == 0);
    if (k == 0) {
        *value = 0;
        *zeros = 0;
        return 0;
    }
    d = (x - ascii0) << (8 * (8 - k)); /* the k digits, behind 8 - k zeros */
    /* the leading zeros among the k digits */
    *zeros = d ? ((unsigned)__builtin_ctzll(d) >> 3) - (8 - k) : k;
    d = d * 10 + (d >> 8);
    d = (((d & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
         (((d >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >>
        32;
    *value = d;
    return k;
}
#endif

/* Reads the run of digits at p into *w (*nd significant digits so far) as
 * long as w can hold them; returns the first byte not taken (a digit when
 * w is full).  fraction: zeros before the first significant digit do not
 * count as digits of w. */
static inline char *digit_run(char *p, uint64_t *w, int *nd, int fraction)
{
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    static const uint64_t pow10[9] = {1,      10,      100,      1000,     10000,
                                      100000, 1000000, 10000000, 100000000};
    for (;;) {
        uint64_t v;
        unsigned zeros, k = digits8(p, &v, &zeros);
        unsigned sig = *nd || !fraction ? k : k - zeros;
        if (*nd + (int)sig > W_DIGITS)
            return p; /* the byte loop takes it from here */
        *w = *w * pow10[k] + v;
        *nd += (int)sig;
        p += k;
        if (k < 8)
            return p;
    }
#else
    (void)w;
    (void)nd;
    (void)fraction;
    return p; /* the byte loop does it all */
#endif
}

/* Checks the number's syntax and, in the same pass, splits it into the
 * parts tg_number_parse needs.  The input copy is NUL-padded, so reading
 * the byte after the last one stops every loop below without a bound
 * check.  The number is its own canonical form (TG_F_RAW_NUM) when it has
 * at most 15 significant digits (then they are the shortest that
 * round-trip, DBL_DIG), no exponent, no trailing zero after a point, is
 * not zero (or is exactly "0"), and is at least 1e-6 (ECMAScript writes
 * smaller ones with an exponent). */
static NOINLINE char *parse_number(parser *P, char *p, tg_value_t *v)
{
    char *start = p;
    tg_number_parts n;
    int nd = 0, has_exp = 0, trailing_zero = 0, rc;
    char last_digit;

    n.w = 0;
    n.exp10 = 0;
    n.truncated = 0;
    n.negative = *p == '-';
    if (n.negative) {
        p++;
        if (*p == 'I')
            return fail_at(P, start, TG_E_NONFINITE, "-Infinity is not a JSON number");
        if (!DIGIT(*p))
            return fail_at(P, start, TG_E_NUMBER, "minus sign must be followed by a digit");
    }
    if (*p == '0') {
        p++;
        if (DIGIT(*p))
            return fail_at(P, start, TG_E_LEADING_ZERO, "leading zeros are not allowed");
    } else {
        p = digit_run(p, &n.w, &nd, 0);
        for (; DIGIT(*p); p++) { /* the digits past what w holds */
            if (nd < W_DIGITS) {
                n.w = n.w * 10 + (uint64_t)(*p - '0');
                nd++;
            } else {
                n.exp10++;
                n.truncated |= *p != '0';
            }
        }
    }
    if (*p == '.') {
        p++;
        if (!DIGIT(*p))
            return fail_at(P, start, TG_E_NUMBER, "decimal point must be followed by a digit");
        {
            char *q = digit_run(p, &n.w, &nd, 1);
            n.exp10 -= q - p;
            p = q;
        }
        for (; DIGIT(*p); p++) {
            if (nd < W_DIGITS) {
                if (nd || *p != '0') { /* zeros before the first digit only scale */
                    n.w = n.w * 10 + (uint64_t)(*p - '0');
                    nd++;
                }
                n.exp10--;
            } else {
                n.truncated |= *p != '0';
            }
        }
        trailing_zero = p[-1] == '0';
    }
    last_digit = p[-1];
    if ((*p | 0x20) == 'e') {
        int64_t x = 0;
        int neg = 0;
        has_exp = 1;
        p++;
        if (*p == '+' || *p == '-')
            neg = *p++ == '-';
        if (!DIGIT(*p))
            return fail_at(P, start, TG_E_NUMBER, "exponent must have digits");
        for (; DIGIT(*p); p++)
            if (x < EXP_CAP)
                x = x * 10 + (*p - '0');
        n.exp10 += neg ? -x : x;
    }
    v->type = TG_NUMBER;
    v->p.text = start;
    v->len = (uint32_t)(p - start);
    if (n.exp10 == 0 && nd <= 15) {
        /* a short integer (the most common number) is its own double */
        v->num = n.negative ? -(double)n.w : (double)n.w;
    } else if ((rc = tg_number_parse(P->e, start, (size_t)(p - start), &n, &v->num)) != TG_OK) {
        return fail_at(P, start, rc, "number is outside the range of an IEEE 754 double");
    }
    if (n.w ? !has_exp && nd <= 15 && !trailing_zero && nd + n.exp10 > -6 : p - start == 1)
        v->flags = TG_F_RAW_NUM;
    else if (nd > 15 && last_digit != '0')
        v->flags = TG_F_LONG_NUM;
    return p;
}

/* ---- values ------------------------------------------------------------ */

/* parse_value is inlined into the container loops (most values are
 * scalars, parsed there without a call); the recursion goes through
 * parse_array and parse_object. */
static ALWAYS_INLINE char *parse_value(parser *P, char *p, size_t at);

/* Claims the next scratch slot for a child (its fields are the caller's
 * to fill); TG_OK, or TG_E_NOMEM recorded at `at`. */
static inline int push_slot(parser *P, const char *at, size_t *slot)
{
    int rc;
    if (P->stack_len == P->stack_cap && (rc = stack_reserve(P, at, 1)) != TG_OK)
        return rc;
    *slot = P->stack_len++;
    return TG_OK;
}

/* Moves the children in stack slots first.. into one arena block and makes
 * the container in slot at (the stack may have moved since it was
 * claimed, so nodes are always reached by index).  p is just past the
 * closing bracket; returns it, or NULL. */
static char *close_container(parser *P, char *p, size_t at, size_t first)
{
    size_t n = P->stack_len - first;
    tg_value_t *items = NULL, *v;
    if (n) {
        items = tg_arena_alloc(P->arena, n * sizeof *items);
        if (!items)
            return fail_at(P, p, TG_E_NOMEM, "out of memory");
        if (P->stack[at].type == TG_OBJECT && n > 1) {
            /* Sort into the block (a big object uses the free space above
             * the stack as its merge buffer), then look for equal
             * neighbours. */
            if (n > TG_SORT_SMALL && stack_reserve(P, p, n) != TG_OK)
                return NULL;
            tg_sort_members(P->stack + first, n, P->stack + P->stack_len, items);
            for (size_t i = 1; i < n; i++) {
                const tg_value_t *a = &items[i - 1], *b = &items[i];
                if (a->key_len == b->key_len && tg_same_bytes(a->key, b->key, a->key_len)) {
                    const tg_value_t *later = a->offset > b->offset ? a : b;
                    P->rc = tg_fail(P->err, TG_E_DUPLICATE_KEY, later->offset,
                                    "duplicate object key \"%.*s\"",
                                    (int)(a->key_len > 64 ? 64 : a->key_len), a->key);
                    return NULL;
                }
            }
        } else {
            memcpy(items, P->stack + first, n * sizeof *items);
        }
    }
    v = &P->stack[at];
    v->p.items = items;
    v->len = (uint32_t)n;
    P->stack_len = first;
    return p;
}

/* p is on the '['. */
static NOINLINE char *parse_array(parser *P, char *p, size_t at)
{
    const size_t first = P->stack_len, max_items = P->lim->max_items;
    P->stack[at].type = TG_ARRAY;
    p = skip_ws(p + 1);
    if (*p == ']' && p < P->end)
        return close_container(P, p + 1, at, first);
    for (;;) {
        size_t slot;
        if (P->stack_len - first >= max_items)
            return fail_at(P, p, TG_E_TOO_MANY_ITEMS, "array has more than max_items elements");
        if (push_slot(P, p, &slot) != TG_OK)
            return NULL;
        P->stack[slot].key = NULL;
        P->stack[slot].key_len = 0;
        if (!(p = parse_value(P, p, slot)))
            return NULL;
        p = skip_ws(p);
        if (p >= P->end)
            return fail_at(P, p, TG_E_EOF, "unterminated array");
        if (*p == ',') {
            p = skip_ws(p + 1);
            if (*p == ']' && p < P->end)
                return fail_at(P, p, TG_E_SYNTAX, "trailing comma in array");
            continue;
        }
        if (*p == ']')
            return close_container(P, p + 1, at, first);
        return fail_at(P, p, TG_E_SYNTAX, "expected ',' or ']' in array");
    }
}

/* p is on the '{'. */
static NOINLINE char *parse_object(parser *P, char *p, size_t at)
{
    const size_t first = P->stack_len, max_members = P->lim->max_members;
    P->stack[at].type = TG_OBJECT;
    p = skip_ws(p + 1);
    if (*p == '}' && p < P->end)
        return close_container(P, p + 1, at, first);
    for (;;) {
        const char *key;
        uint32_t key_len;
        char *key_at;
        size_t slot;
        int raw;
        tg_value_t *m;
        if (p >= P->end)
            return fail_at(P, p, TG_E_EOF, "unterminated object");
        if (*p != '"')
            return fail_at(P, p, TG_E_SYNTAX,
                           *p == '}' ? "trailing comma in object"
                                     : "expected a string key in object");
        if (P->stack_len - first >= max_members)
            return fail_at(P, p, TG_E_TOO_MANY_MEMBERS, "object has more than max_members members");
        key_at = p;
        if (!(p = parse_string(P, p + 1, &key, &key_len, &raw)))
            return NULL;
        p = skip_ws(p);
        if (p >= P->end)
            return fail_at(P, p, TG_E_EOF, "unterminated object");
        if (*p != ':')
            return fail_at(P, p, TG_E_SYNTAX, "expected ':' after object key");
        p++;
        if (push_slot(P, p, &slot) != TG_OK || !(p = parse_value(P, p, slot)))
            return NULL;
        m = &P->stack[slot];
        m->key = key;
        m->key_len = key_len;
        m->offset = (uint32_t)(key_at - P->base); /* a member is found by its key */
        if (raw)
            m->flags |= TG_F_RAW_KEY;
        p = skip_ws(p);
        if (p >= P->end)
            return fail_at(P, p, TG_E_EOF, "unterminated object");
        if (*p == ',') {
            p = skip_ws(p + 1);
            continue;
        }
        if (*p == '}')
            return close_container(P, p + 1, at, first);
        return fail_at(P, p, TG_E_SYNTAX, "expected ',' or '}' in object");
    }
}

/* ---- repeated containers (TG_PARSE_SHARE_REPEATS) ----------------------- */

#define SEEN_SLOTS 32 /* containers remembered, by a hash of their first bytes */
#define SEEN_MIN 32   /* bytes: a shorter container costs less to parse than to look up */

/* A container parsed before: its span in the caller's text and what its
 * node holds.  height is how much deeper than the container its deepest
 * descendant container lies, so that a repeat is shared only where parsing
 * it would not have gone past max_depth. */
typedef struct seen_container {
    uint32_t start, span, len, height;
    tg_value_t *items;
    uint8_t type, flags;
} seen_container;

/* The slot of the container whose text starts at s (16 bytes readable). */
static inline unsigned seen_slot(const char *s)
{
    uint64_t a, b;
    memcpy(&a, s, 8);
    memcpy(&b, s + 8, 8);
    return (unsigned)(((a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full)) >> 59);
}

/* How many of the n bytes at a and b are equal before the first that
 * differs (n when all are). */
static size_t equal_prefix(const char *a, const char *b, size_t n)
{
    size_t i = 0;
#if defined(__SSE2__) && defined(__GNUC__)
    /* a repeat is mostly compared whole: sixteen bytes a step */
    for (; i + 16 <= n; i += 16) {
        unsigned same = (unsigned)_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(a + i)),
                           _mm_loadu_si128((const __m128i *)(const void *)(b + i))));
        if (same != 0xFFFF)
            return i + (size_t)__builtin_ctz(~same);
    }
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return i + (size_t)(__builtin_ctzll(x ^ y) >> 3);
#else
            break;
#endif
        }
    }
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* When the container at p repeats the bytes of the one seen last in its
 * slot, makes v share its children (the same bytes parse to the same
 * value) and returns the position after it; NULL otherwise.  The
 * bytes a failed comparison went through count against compare_budget
 * (the input's length), so a text made of near repeats costs at most one
 * more pass over it; a repeat found costs less than parsing it. */
static inline char *share_repeat(parser *P, char *p, unsigned slot, tg_value_t *v)
{
    size_t at = (size_t)(p - P->base), same;
    const seen_container *c = &P->seen[slot];
    if (P->compare_budget == 0 || !(P->seen_slots >> slot & 1) || c->span > (size_t)(P->end - p) ||
        P->depth + c->height >= P->lim->max_depth)
        return NULL;
    same = equal_prefix(P->src + at, P->src + c->start,
                        c->span < P->compare_budget ? c->span : P->compare_budget);
    if (same < c->span) {
        P->compare_budget -= same < P->compare_budget ? same + 1 : P->compare_budget;
        return NULL;
    }
    v->type = c->type;
    v->flags = c->flags;
    v->len = c->len;
    v->p.items = c->items;
    if (P->peak < P->depth + 1 + c->height)
        P->peak = P->depth + 1 + c->height;
    return p + c->span;
}

/* Remembers in slot the container parsed into v from start to end (the
 * depth outside it is P->depth; its deepest descendant reached peak). */
static inline void remember(parser *P, unsigned slot, const char *start, const char *end,
                            const tg_value_t *v, size_t peak)
{
    seen_container *c = &P->seen[slot];
    c->start = (uint32_t)(start - P->base);
    c->span = (uint32_t)(end - start);
    c->len = v->len;
    c->height = (uint32_t)(peak - (P->depth + 1));
    c->items = v->p.items;
    c->type = v->type;
    c->flags = v->flags;
    P->seen_slots |= 1u << slot;
}

/* The container at p (within max_depth) into slot at, when repeats are
 * looked for: shared with an earlier copy of its bytes, or parsed and
 * remembered. */
static NOINLINE char *parse_repeatable(parser *P, char *p, size_t at)
{
    char *start = p, *q;
    const size_t outer_peak = P->peak;
    /* a container too close to the end to be SEEN_MIN long has no slot */
    const unsigned slot =
        (size_t)(P->end - p) >= SEEN_MIN ? seen_slot(P->src + (p - P->base)) : SEEN_SLOTS;
    if (slot < SEEN_SLOTS && (q = share_repeat(P, p, slot, &P->stack[at])) != NULL)
        return q;
    P->depth++;
    P->peak = P->depth;
    p = *p == '{' ? parse_object(P, p, at) : parse_array(P, p, at);
    P->depth--;
    if (p && (size_t)(p - start) >= SEEN_MIN)
        remember(P, slot, start, p, &P->stack[at], P->peak);
    if (P->peak < outer_peak)
        P->peak = outer_peak;
    return p;
}

static char *literal(parser *P, char *p, tg_value_t *v, const char *word, size_t n, int type)
{
    if ((size_t)(P->end - p) < n || memcmp(p, word, n) != 0)
        return fail_at(P, p, TG_E_SYNTAX, "invalid literal");
    v->type = (uint8_t)type;
    return p + n;
}

/* Parses one value into stack slot at (claimed by the caller; its key
 * fields are the caller's).  Scalars never move the stack; containers may,
 * so they are handed the index. */
static ALWAYS_INLINE char *parse_value(parser *P, char *p, size_t at)
{
    tg_value_t *v = &P->stack[at];
    p = skip_ws(p);
    v->flags = 0;
    v->len = 0;
    v->num = 0;
    v->p.items = NULL;
    if (p >= P->end)
        return fail_at(P, p, TG_E_EOF, "expected a value");
    v->offset = (uint32_t)(p - P->base);
    switch (*p) {
    case '"': {
        const char *s;
        uint32_t len;
        int raw;
        if (!(p = parse_string(P, p + 1, &s, &len, &raw)))
            return NULL;
        v->type = TG_STRING;
        v->flags = raw ? TG_F_RAW_STR : 0;
        v->p.str = s;
        v->len = len;
        return p;
    }
    case '{':
    case '[':
        if (P->depth >= P->lim->max_depth)
            return fail_at(P, p, TG_E_TOO_DEEP, "nesting deeper than max_depth");
        if (P->seen)
            return parse_repeatable(P, p, at);
        P->depth++;
        p = *p == '{' ? parse_object(P, p, at) : parse_array(P, p, at);
        P->depth--;
        return p;
    case 't':
        return literal(P, p, v, "true", 4, TG_TRUE);
    case 'f':
        return literal(P, p, v, "false", 5, TG_FALSE);
    case 'n':
        return literal(P, p, v, "null", 4, TG_NULL);
    case 'N':
    case 'I':
        return fail_at(P, p, TG_E_NONFINITE, "NaN and Infinity are not JSON numbers");
    default:
        if (*p == '-' || DIGIT(*p))
            return parse_number(P, p, v);
        if ((unsigned char)*p == 0xEF && P->end - p >= 3 && (unsigned char)p[1] == 0xBB &&
            (unsigned char)p[2] == 0xBF)
            return fail_at(P, p, TG_E_SYNTAX, "byte order mark is not allowed");
        return fail_at(P, p, TG_E_SYNTAX, "unexpected character");
    }
}

int tg_parse(tg_engine_t *e, const char *json, size_t len, tg_doc_t **out, tg_error_t *err)
{
    return tg_parse_with(e, json, len, TG_PARSE_FAST_UTF8, out, err);
}

int tg_parse_registry(tg_engine_t *e, const char *json, size_t len, tg_doc_t **out, tg_error_t *err)
{
    return tg_parse_with(e, json, len, TG_PARSE_FAST_UTF8 | TG_PARSE_REGISTRY, out, err);
}

int tg_parse_with(tg_engine_t *e, const char *json, size_t len, unsigned options, tg_doc_t **out,
                  tg_error_t *err)
{
    parser P;
    tg_value_t local[LOCAL_STACK];
    seen_container seen[SEEN_SLOTS]; /* filled as seen_slots says */
    tg_doc_t *doc;
    tg_arena arena;
    int rc;

    tg_error_clear(err);
    *out = NULL;
    if (!json && len)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "json is NULL");
    if (options & TG_PARSE_REGISTRY) {
        if (len > e->limits.max_registry_bytes)
            return tg_fail(err, TG_E_REGISTRY_TOO_LARGE, 0,
                           "registry of %zu bytes is larger than max_registry_bytes (%zu)", len,
                           e->limits.max_registry_bytes);
    } else if (len > e->limits.max_input_bytes)
        return tg_fail(err, TG_E_INPUT_TOO_LARGE, 0,
                       "input of %zu bytes is larger than max_input_bytes (%zu)", len,
                       e->limits.max_input_bytes);

    /* Room for the input copy and, for documents up to a few KB, all nodes
     * in the first block; big documents grow the arena geometrically. */
    tg_arena_init(&arena, e, len + 1 + sizeof *doc + (len < 16384 ? 4 * len : 65536) + 256);
    doc = tg_arena_alloc(&arena, sizeof *doc);
    /* The copy is padded with NULs so the block-wise string scans may read
     * past the last input byte; a NUL stops them like any control
     * character, and stops every other byte loop too. */
    P.base = doc ? tg_arena_alloc(&arena, len + TG_INPUT_PAD) : NULL;
    if (!doc || !P.base || !(doc->root = tg_arena_alloc(&arena, sizeof *doc->root))) {
        tg_arena_free(&arena);
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    }
    if (len)
        memcpy(P.base, json, len);
    memset(P.base + len, 0, TG_INPUT_PAD);
    P.e = e;
    P.lim = &e->limits;
    P.end = P.base + len;
    P.arena = &arena;
    P.stack = local;
    P.stack_len = 0;
    P.stack_cap = LOCAL_STACK;
    P.stack_heap = 0;
    P.depth = 0;
    P.utf8_checked = (options & TG_PARSE_FAST_UTF8) && tg_utf8_check_fast(P.base, len);
    P.plain = plain_test_of(P.utf8_checked);
    P.rc = TG_OK;
    P.err = err;
    P.src = json;
    P.peak = 0;
    P.compare_budget = len;
    P.seen_slots = 0;
    P.seen = options & TG_PARSE_SHARE_REPEATS ? seen : NULL;

    {
        char *p = skip_ws(P.base);
        size_t slot = 0;
        if (p >= P.end)
            p = fail_at(&P, p, TG_E_EMPTY, "no JSON value in input");
        else if (push_slot(&P, p, &slot) != TG_OK)
            p = NULL;
        else {
            P.stack[slot].key = NULL;
            P.stack[slot].key_len = 0;
            if ((p = parse_value(&P, p, slot)) != NULL)
                *doc->root = P.stack[slot];
        }
        if (p && (p = skip_ws(p)) < P.end)
            fail_at(&P, p, TG_E_TRAILING, "unexpected data after the JSON value");
        rc = P.rc;
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
