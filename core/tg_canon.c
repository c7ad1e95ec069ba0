/*
 * tg_canon.c -- RFC 8785 (JSON Canonicalization Scheme) writer.
 *
 * Three rules make a document canonical: object members sorted by the
 * UTF-16 code units of their keys; strings written as ECMAScript
 * JSON.stringify writes them (escape only '"', '\\' and U+0000..U+001F, the
 * latter as \b \t \n \f \r or \u00xx in lower case; everything else as raw
 * UTF-8); numbers as ECMAScript Number::toString (tg_number.c).  No
 * whitespace.
 *
 * The parser sorts every object as it closes it (tg_sort_members, here:
 * small objects by a branch-free sorting network over 8-byte key
 * prefixes) and marks the strings, keys and numbers that are canonical as
 * they stand (TG_F_RAW_*), so writing is one walk that mostly copies bytes
 * in whole blocks.
 *
 * The same walk writes "RFC 8785 with exact numbers" (TG_CANON_EXACT, the
 * form argument digests hash): a number whose double's shortest digits
 * spell another decimal than its text is written as its own decimal
 * instead (tg_decimal_write), in the same layout; nothing else differs.
 */
#include "tg_internal.h"

#include <string.h>
#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#endif

/* ---- key order ----------------------------------------------------------- */

/* UTF-8 byte order is code point order; UTF-16 order differs only in that
 * U+E000..U+FFFF (lead bytes EE, EF) sort after the supplementary planes
 * (lead bytes F0..F4, surrogate pairs D800..DFFF in UTF-16).  The first
 * differing byte of two valid strings is either inside the same sequence
 * or a lead byte in both, so re-ranking those two lead bytes suffices. */
static inline unsigned utf16_rank(unsigned char c)
{
    return c + ((unsigned)(c - 0xEE) < 2u ? 0x10u : 0u);
}

/* Byte by byte to the first difference; whole words first when the keys
 * are long (both are readable for n bytes). */
static inline int key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen, i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            break;
    }
    for (; i < n; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (x != y)
            return utf16_rank(x) < utf16_rank(y) ? -1 : 1;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

int tg_key_compare(const char *a, size_t alen, const char *b, size_t blen)
{
    return key_cmp(a, alen, b, blen);
}

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define KEY_PREFIX 1
/* The first 8 bytes of a key, zero past its end, as a number that orders
 * like the keys: big-endian, with the lead bytes EE and EF raised to FE
 * and FF (above F0..F4, as utf16_rank does; FE and FF never occur in
 * UTF-8).  tg_sort_members' keys are readable for 8 bytes. */
static inline uint64_t key_prefix(const tg_value_t *m)
{
    const uint64_t low7 = 0x7F7F7F7F7F7F7F7Full;
    uint64_t x, v, z;
    size_t keep = m->key_len < 8 ? m->key_len : 8;
    memcpy(&x, m->key, 8);
    /* keep the first `keep` bytes (two shifts: 64 for an empty key) */
    x &= ~(uint64_t)0 >> (4 * (8 - keep)) >> (4 * (8 - keep));
    if (x & ~low7) {                                             /* not all ASCII */
        v = (x & 0xFEFEFEFEFEFEFEFEull) ^ 0xEEEEEEEEEEEEEEEEull; /* 0 where EE or EF */
        z = ~(((v & low7) + low7) | v | low7);                   /* 0x80 there, exactly */
        x += (z >> 7) * 0x10;
    }
    return __builtin_bswap64(x);
}

/* a < b given their prefixes: equal prefixes leave the shorter key first
 * when either ends within them, else the rest decides. */
static inline int prefixed_less(uint64_t pa, const tg_value_t *a, uint64_t pb, const tg_value_t *b)
{
    if (pa != pb)
        return pa < pb;
    if (a->key_len <= 8 || b->key_len <= 8)
        return a->key_len < b->key_len;
    return key_cmp(a->key + 8, a->key_len - 8, b->key + 8, b->key_len - 8) < 0;
}

static inline int member_less(const tg_value_t *a, const tg_value_t *b)
{
    return prefixed_less(key_prefix(a), a, key_prefix(b), b);
}
#else
#define KEY_PREFIX 0
static inline int member_less(const tg_value_t *a, const tg_value_t *b)
{
    return key_cmp(a->key, a->key_len, b->key, b->key_len) < 0;
}
#endif

/* Stable merge sort in place, small runs by insertion. */
static void merge_sort(tg_value_t *items, size_t n, tg_value_t *tmp)
{
    if (n <= 8) {
        for (size_t i = 1; i < n; i++) {
            tg_value_t x = items[i];
            size_t j = i;
            while (j > 0 && member_less(&x, &items[j - 1])) {
                items[j] = items[j - 1];
                j--;
            }
            items[j] = x;
        }
        return;
    }
    {
        size_t half = n / 2, i = 0, j = half, k = 0;
        merge_sort(items, half, tmp);
        merge_sort(items + half, n - half, tmp);
        while (i < half && j < n)
            tmp[k++] = member_less(&items[j], &items[i]) ? items[j++] : items[i++];
        while (i < half)
            tmp[k++] = items[i++];
        while (j < n)
            tmp[k++] = items[j++];
        memcpy(items, tmp, n * sizeof *items);
    }
}

#if KEY_PREFIX
/* Optimal sorting networks for 2..8 keys (Knuth, TAOCP 5.3.4): positions
 * compared and exchanged in this order sort any input, and without a
 * branch on the data (checked by spec/c/test_canon.c's random objects). */
#define NETWORK_MAX 8
static const unsigned char network_size[NETWORK_MAX + 1] = {0, 0, 1, 3, 5, 9, 12, 16, 19};
/* clang-format off */
static const unsigned char network[NETWORK_MAX + 1][19][2] = {
    [2] = {{0, 1}},
    [3] = {{0, 1}, {1, 2}, {0, 1}},
    [4] = {{0, 1}, {2, 3}, {0, 2}, {1, 3}, {1, 2}},
    [5] = {{0, 1}, {3, 4}, {2, 4}, {2, 3}, {0, 3}, {0, 2}, {1, 4}, {1, 3}, {1, 2}},
    [6] = {{1, 2}, {4, 5}, {0, 2}, {3, 5}, {0, 1}, {3, 4}, {2, 5}, {0, 3}, {1, 4}, {2, 4},
           {1, 3}, {2, 3}},
    [7] = {{1, 2}, {3, 4}, {5, 6}, {0, 2}, {3, 5}, {4, 6}, {0, 1}, {4, 5}, {2, 6}, {0, 4},
           {1, 5}, {0, 3}, {2, 5}, {1, 3}, {2, 4}, {2, 3}},
    [8] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}, {0, 1}, {2, 3},
           {4, 5}, {6, 7}, {2, 4}, {3, 5}, {1, 4}, {3, 6}, {1, 2}, {3, 4}, {5, 6}},
};
/* clang-format on */

/* Compares and exchanges two keys and their indices, without a branch on
 * the data. */
static inline void exchange(uint64_t *ka, uint64_t *kb, unsigned *ia, unsigned *ib)
{
    uint64_t a = *ka, b = *kb;
    uint64_t swap = 0 - (uint64_t)(b < a); /* all ones to exchange */
    uint64_t dk = (a ^ b) & swap;
    unsigned di = (*ia ^ *ib) & (unsigned)swap;
    *ka = a ^ dk; /* the smaller */
    *kb = b ^ dk;
    *ia ^= di;
    *ib ^= di;
}

/* Sorts up to NETWORK_MAX members by their key prefixes; 0 (and dst
 * untouched) when two prefixes are equal, where only the full comparison
 * can decide.  Two to four members, most objects, get straight-line code
 * (no loop whose exit depends on the size); more run the table. */
static int network_sort(const tg_value_t *src, size_t n, tg_value_t *dst)
{
    uint64_t key[NETWORK_MAX];
    unsigned at[NETWORK_MAX];
    if (n <= 4) {
        uint64_t k0 = key_prefix(&src[0]), k1 = key_prefix(&src[1]);
        uint64_t k2 = n > 2 ? key_prefix(&src[2]) : UINT64_MAX;
        uint64_t k3 = n > 3 ? key_prefix(&src[3]) : UINT64_MAX;
        unsigned i0 = 0, i1 = 1, i2 = 2, i3 = 3;
        /* network 4 (padding sorts last: no key starts with 8 bytes FF) */
        exchange(&k0, &k1, &i0, &i1);
        exchange(&k2, &k3, &i2, &i3);
        exchange(&k0, &k2, &i0, &i2);
        exchange(&k1, &k3, &i1, &i3);
        exchange(&k1, &k2, &i1, &i2);
        if ((k0 == k1) | ((n > 2) & (k1 == k2)) | ((n > 3) & (k2 == k3)))
            return 0;
        dst[0] = src[i0];
        dst[1] = src[i1];
        if (n > 2)
            dst[2] = src[i2];
        if (n > 3)
            dst[3] = src[i3];
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        key[i] = key_prefix(&src[i]);
        at[i] = (unsigned)i;
    }
    for (unsigned c = 0; c < network_size[n]; c++) {
        unsigned i = network[n][c][0], j = network[n][c][1];
        exchange(&key[i], &key[j], &at[i], &at[j]);
    }
    for (size_t i = 1; i < n; i++) /* equal prefixes end up side by side */
        if (key[i] == key[i - 1])
            return 0;
    for (size_t i = 0; i < n; i++)
        dst[i] = src[at[i]];
    return 1;
}
#endif

void tg_sort_members(tg_value_t *src, size_t n, tg_value_t *tmp, tg_value_t *dst)
{
    if (n < 2) {
        memcpy(dst, src, n * sizeof *dst);
        return;
    }
#if KEY_PREFIX
    if (n <= NETWORK_MAX && network_sort(src, n, dst))
        return;
#endif
    if (n <= TG_SORT_SMALL) {
        /* Small objects: sort their indices by insertion, so each node is
         * copied once, straight to its place. */
        unsigned char order[TG_SORT_SMALL];
        for (size_t i = 0; i < n; i++) {
            size_t j = i;
            while (j > 0 && member_less(&src[i], &src[order[j - 1]])) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = (unsigned char)i;
        }
        for (size_t i = 0; i < n; i++)
            dst[i] = src[order[i]];
        return;
    }
    merge_sort(src, n, tmp);
    memcpy(dst, src, n * sizeof *dst);
}

/* ---- writer -------------------------------------------------------------- */

/* Eight bytes at a time: nonzero when x holds '"', '\\' or a control
 * character (non-ASCII needs no escape in canonical form).  (A borrow can
 * only flag bytes above a real hit, so the lowest flag is exact.) */
static inline uint64_t needs_escape8(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    return (((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b)) & high;
}

/* The first byte in [p, end) that needs an escape, or end.  Reads only
 * inside [p, end): the string may be anyone's memory. */
static inline const char *find_escape(const char *p, const char *end)
{
#if defined(__SSE2__) && defined(__GNUC__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i ctl = _mm_set1_epi8(0x1F);
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                                 _mm_cmpeq_epi8(_mm_max_epu8(x, ctl), ctl)); /* x <= 0x1F */
        unsigned bits = (unsigned)_mm_movemask_epi8(m);
        if (bits)
            return p + __builtin_ctz(bits);
        p += 16;
    }
#endif
    while (end - p >= 8) {
        uint64_t x, m;
        memcpy(&x, p, 8);
        m = needs_escape8(x);
        if (m) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return p + (__builtin_ctzll(m) >> 3);
#else
            break; /* the byte loop below finds it */
#endif
        }
        p += 8;
    }
    while (p < end && (unsigned char)*p >= 0x20 && *p != '"' && *p != '\\')
        p++;
    return p;
}

/* memcpy for the short runs between escapes, inline: the first and last
 * 8 (or 4) bytes, overlapping when shorter, read and write nothing outside
 * the n bytes. */
static inline void copy_exact(char *dst, const char *src, size_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t a, b;
        memcpy(&a, src, 8);
        memcpy(&b, src + n - 8, 8);
        memcpy(dst, &a, 8);
        memcpy(dst + n - 8, &b, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t a, b;
        memcpy(&a, src, 4);
        memcpy(&b, src + n - 4, 4);
        memcpy(dst, &a, 4);
        memcpy(dst + n - 4, &b, 4);
    } else if (n < 4) {
        for (size_t i = 0; i < n; i++)
            dst[i] = src[i];
    } else {
        memcpy(dst, src, n);
    }
}

/* The letter of the five control characters JSON.stringify writes as \b,
 * \t, \n, \f, \r; 0 for the others (\u00xx). */
/* clang-format off */
static const char short_escape[32] = {
    ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\f'] = 'f', ['\r'] = 'r',
};
/* clang-format on */

int tg_canon_string(tg_buf_t *out, const char *s, size_t len, tg_error_t *err)
{
    static const char hex[] = "0123456789abcdef";
    const char *p = s, *end = s + len;
    int rc;

    if (len > SIZE_MAX - 8)
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "string too large to write");
    /* Invariant: room for the rest of the string unescaped and the closing
     * quote, so runs are copied without a check; an escape (at most 6
     * bytes for 1) makes sure of the room for itself and the rest. */
    if (len + 2 > out->cap - out->len && (rc = tg_buf_reserve(out, len + 2, err)) != TG_OK)
        return rc;
    out->data[out->len++] = '"';
    for (;;) {
        const char *run = p;
        unsigned char c;
        char *w;
        p = find_escape(p, end);
        copy_exact(out->data + out->len, run, (size_t)(p - run));
        out->len += (size_t)(p - run);
        if (p == end)
            break;
        if ((size_t)(end - p) + 6 > out->cap - out->len &&
            (rc = tg_buf_reserve(out, (size_t)(end - p) + 6, err)) != TG_OK)
            return rc;
        c = (unsigned char)*p++;
        w = out->data + out->len;
        w[0] = '\\';
        if (c == '"' || c == '\\') {
            w[1] = (char)c;
            out->len += 2;
        } else if (short_escape[c]) {
            w[1] = short_escape[c];
            out->len += 2;
        } else {
            w[1] = 'u';
            w[2] = '0';
            w[3] = '0';
            w[4] = hex[c >> 4];
            w[5] = hex[c & 15];
            out->len += 6;
        }
    }
    out->data[out->len++] = '"';
    return TG_OK;
}

/* The digits of a number literal and its decimal point position (value =
 * 0.digits x 10^n), when it has at most 15 significant digits and n is in
 * [-300, 300].  Such a literal names a normal double, and no other decimal
 * of at most 15 digits names the same double (DBL_DIG), so its own digits
 * are the shortest that round-trip: ECMAScript's choice, without digit
 * generation.  Returns the digit count, 0 for a zero value, -1 otherwise. */
static int literal_digits(const char *t, size_t len, char *digits, int *n)
{
    tg_decimal d;
    int nd = 0;
    int64_t x;

    tg_decimal_init(&d, t, len);
    if (!d.first)
        return 0;
    if (d.n_digits > 15)
        return -1;
    x = d.exp + (int64_t)d.n_digits;
    if (x < -300 || x > 300)
        return -1;
    for (const char *p = d.first; p <= d.last; p++)
        if (*p != '.')
            digits[nd++] = *p;
    *n = (int)x;
    return nd;
}

/* Copies n bytes and some after them in whole blocks: always the first 64
 * (fixed-size copies the compiler inlines: no call, and no branch on the
 * length for the strings and numbers that are most of a document), then
 * 16 at a time.  Sources are a RAW node's bytes in a parser input copy,
 * readable TG_INPUT_PAD bytes past them, or a 64-byte local buffer; the
 * destination has the room that room() made. */
#define BLOCK_HEAD 64
static inline void copy_blocks(char *dst, const char *src, size_t n)
{
    _Static_assert(TG_INPUT_PAD >= BLOCK_HEAD, "copy_blocks reads 64 bytes");
    memcpy(dst, src, BLOCK_HEAD);
    for (size_t i = BLOCK_HEAD; i < n; i += 16)
        memcpy(dst + i, src + i, 16);
}

/* Room for n more bytes and copy_blocks' overhang. */
static inline int room(tg_buf_t *out, size_t n, tg_error_t *err)
{
    return n + BLOCK_HEAD <= out->cap - out->len ? TG_OK : tg_buf_reserve(out, n + BLOCK_HEAD, err);
}

/* v's RFC 8785 form into buf; returns its length, 0 when v has no JSON
 * form.  *from_double is set when the digits are those of v's double,
 * which may spell another decimal than v's text (2^53 + 1); a literal's
 * own digits (literal_digits) always spell it. */
static size_t rfc_number(const tg_value_t *v, char buf[BLOCK_HEAD], int *from_double)
{
    char digits[16];
    int n, nd = (v->flags & TG_F_LONG_NUM) ? -1 : literal_digits(v->p.text, v->len, digits, &n);
    _Static_assert(TG_NUMBER_BUF <= BLOCK_HEAD, "buf holds any double's form");
    *from_double = nd < 0;
    if (nd == 0) { /* every spelling of zero, -0 included */
        buf[0] = '0';
        return 1;
    }
    if (nd > 0) {
        tg_digits run = {digits, (size_t)nd, NULL, 0};
        return tg_number_layout(buf, v->p.text[0] == '-', &run, n);
    }
    return tg_number_format(v->num, buf);
}

/* Whether the number text buf (len bytes) is the decimal v's text spells. */
static int spells(const char *buf, size_t len, const tg_value_t *v)
{
    tg_decimal a, b;
    if (len == v->len && memcmp(buf, v->p.text, len) == 0) /* most often: the text itself */
        return 1;
    tg_decimal_init(&a, buf, len);
    tg_decimal_init(&b, v->p.text, v->len);
    return tg_decimal_equal(&a, &b);
}

int tg_num_round_trips(const tg_value_t *v)
{
    char buf[BLOCK_HEAD];
    int from_double;
    size_t len;
    if (!v || v->type != TG_NUMBER)
        return 0;
    len = rfc_number(v, buf, &from_double);
    return len > 0 && (!from_double || spells(buf, len, v));
}

/* RFC 8785's form of v; with exact set, the exact decimal instead when the
 * double's digits spell another. */
static int write_number(tg_buf_t *out, const tg_value_t *v, int exact, tg_error_t *err)
{
    char buf[BLOCK_HEAD];
    int from_double, rc;
    size_t len = rfc_number(v, buf, &from_double);

    if (len == 0) /* the parser never yields these; values from elsewhere might */
        return tg_fail(err, TG_E_NONFINITE, v->offset, "NaN and Infinity have no JSON form");
    if (exact && from_double && !spells(buf, len, v))
        return tg_decimal_write(out, v->p.text, v->len, err);
    if ((rc = room(out, len, err)) != TG_OK)
        return rc;
    copy_blocks(out->data + out->len, buf, len);
    out->len += len;
    return TG_OK;
}

static int write_value(const tg_value_t *v, tg_buf_t *out, int exact, tg_error_t *err);

/* Writes v; the values the parser found canonical already (most strings
 * and numbers) are copied here, without a call. */
static inline int write_child(const tg_value_t *v, tg_buf_t *out, int exact, tg_error_t *err)
{
    if (v->flags & (TG_F_RAW_STR | TG_F_RAW_NUM)) {
        size_t quotes = (v->flags & TG_F_RAW_STR) ? 1 : 0; /* a string's, around it */
        size_t n = v->len + 2 * quotes;
        int rc = room(out, n, err);
        if (rc != TG_OK)
            return rc;
        copy_blocks(out->data + out->len, v->p.text - quotes, n);
        out->len += n;
        return TG_OK;
    }
    return write_value(v, out, exact, err);
}

/* Writes a member's key and the ':' after it, with the ',' before it when
 * it is not the first. */
static inline int write_key(const tg_value_t *m, int first, tg_buf_t *out, tg_error_t *err)
{
    int rc = room(out, (size_t)m->key_len + 4, err);
    if (rc != TG_OK)
        return rc;
    if (!first)
        out->data[out->len++] = ',';
    if (m->flags & TG_F_RAW_KEY) {
        copy_blocks(out->data + out->len, m->key - 1, (size_t)m->key_len + 2);
        out->len += (size_t)m->key_len + 2;
    } else if ((rc = tg_canon_string(out, m->key, m->key_len, err)) != TG_OK) {
        return rc;
    }
    return tg_buf_put(out, ":", 1, err);
}

static int write_value(const tg_value_t *v, tg_buf_t *out, int exact, tg_error_t *err)
{
    int rc;
    switch (v->type) {
    case TG_NULL:
        return tg_buf_put(out, "null", 4, err);
    case TG_FALSE:
        return tg_buf_put(out, "false", 5, err);
    case TG_TRUE:
        return tg_buf_put(out, "true", 4, err);
    case TG_NUMBER:
        return write_number(out, v, exact, err);
    case TG_STRING:
        return tg_canon_string(out, v->p.str, v->len, err);
    case TG_ARRAY:
        if ((rc = tg_buf_put(out, "[", 1, err)) != TG_OK)
            return rc;
        for (uint32_t i = 0; i < v->len; i++) {
            if (i && (rc = tg_buf_put(out, ",", 1, err)) != TG_OK)
                return rc;
            if ((rc = write_child(&v->p.items[i], out, exact, err)) != TG_OK)
                return rc;
        }
        return tg_buf_put(out, "]", 1, err);
    case TG_OBJECT:
        if ((rc = tg_buf_put(out, "{", 1, err)) != TG_OK)
            return rc;
        for (uint32_t i = 0; i < v->len; i++) {
            const tg_value_t *m = &v->p.items[i];
            if ((m->flags & TG_F_RAW_KEY) && (m->flags & (TG_F_RAW_STR | TG_F_RAW_NUM))) {
                /* the usual member: ,"key":value copied in one stroke */
                size_t key_n = (size_t)m->key_len + 2;
                size_t quotes = (m->flags & TG_F_RAW_STR) ? 1 : 0;
                size_t value_n = m->len + 2 * quotes;
                char *w;
                if ((rc = room(out, key_n + value_n + 2, err)) != TG_OK)
                    return rc;
                w = out->data + out->len;
                if (i)
                    *w++ = ',';
                copy_blocks(w, m->key - 1, key_n);
                w += key_n;
                *w++ = ':';
                copy_blocks(w, m->p.text - quotes, value_n);
                out->len = (size_t)(w - out->data) + value_n;
                continue;
            }
            if ((rc = write_key(m, i == 0, out, err)) != TG_OK ||
                (rc = write_child(m, out, exact, err)) != TG_OK)
                return rc;
        }
        return tg_buf_put(out, "}", 1, err);
    default:
        return tg_fail(err, TG_E_ARG, v->offset, "corrupt value");
    }
}

int tg_canon_value_mode(const tg_value_t *v, int mode, tg_buf_t *out, tg_error_t *err)
{
    tg_error_clear(err);
    if (!v || !out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "NULL value or buffer");
    if (mode != TG_CANON_RFC8785 && mode != TG_CANON_EXACT)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "unknown canonical mode %d", mode);
    return write_child(v, out, mode == TG_CANON_EXACT, err);
}

int tg_canon_value(const tg_value_t *v, tg_buf_t *out, tg_error_t *err)
{
    return tg_canon_value_mode(v, TG_CANON_RFC8785, out, err);
}

int tg_canon(tg_engine_t *e, const char *json, size_t len, tg_buf_t *out, tg_error_t *err)
{
    tg_doc_t *doc;
    int rc = tg_parse(e, json, len, &doc, err);
    if (rc != TG_OK)
        return rc;
    rc = tg_canon_value(tg_doc_root(doc), out, err);
    tg_doc_free(doc);
    return rc;
}
