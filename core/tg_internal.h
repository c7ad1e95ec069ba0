/*
 * tg_internal.h -- what the core's files share and nobody else sees: the
 * engine and document structs, the DOM node layout, the arena, and the
 * error helpers.  Not installed.
 */
#ifndef TG_INTERNAL_H
#define TG_INTERNAL_H

/* locale_t, newlocale and strtod_l; every core file includes this header
 * before any system header. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "toolgate.h"

#include <float.h>
#include <locale.h>
#include <stdarg.h>
#include <string.h>

struct tg_engine_t {
    tg_alloc_fn alloc;
    void *alloc_ud;
    tg_limits_t limits;
    locale_t c_locale;            /* for strtod_l: number parsing must ignore LC_NUMERIC */
    size_t children;              /* live documents, schemas and registries made by it */
    int freed;                    /* tg_engine_free was called while children lived */
    struct tg_regex_cache *regex; /* PCRE2 contexts, made on first use (tg_regex.c) */
    struct tg_arena_block *spare; /* a freed arena block kept for reuse (tg_arena.c) */
};

/* A DOM node.  Containers hold their children in one contiguous arena block
 * (items), so element access is O(1); objects keep members sorted in RFC 8785
 * order, each member's key in the child node itself. */
struct tg_value_t {
    const char *key; /* member key (decoded UTF-8), NULL outside objects */
    uint32_t key_len;
    uint32_t offset; /* byte offset in the input (of the key, for members) */
    uint32_t len;    /* string bytes, number text bytes or child count */
    uint8_t type;    /* enum tg_type */
    uint8_t flags;   /* TG_F_* */
    union {
        const char *str;   /* TG_STRING: decoded bytes */
        const char *text;  /* TG_NUMBER: source text */
        tg_value_t *items; /* TG_ARRAY, TG_OBJECT */
    } p;
    double num; /* TG_NUMBER */
};

/* The parser's copy of its input is followed by this many NUL bytes: they
 * stop its byte loops without bound checks, and let its block-wise scans
 * and the canonical writer's block copies read past a value's last byte. */
#define TG_INPUT_PAD 64

/* tg_value_t.flags: facts the parser learns for free that let the canonical
 * writer copy bytes instead of working them out again.  The bytes of a
 * node with one of these lie in a parser's input copy (so TG_INPUT_PAD
 * bytes past them are readable), and the writer copies them in blocks.
 * Whoever makes a node any other way leaves them 0 (tg_value_copy clears
 * them). */
#define TG_F_RAW_STR                                                                               \
    1                  /* string: p.str[-1] and p.str[len] are '"' and no byte                     \
                        * needs an escape, so the len + 2 bytes from p.str - 1                     \
                        * are its canonical form */
#define TG_F_RAW_KEY 2 /* the same for the member's key */
#define TG_F_RAW_NUM 4 /* number: its source text is its canonical form */
#define TG_F_LONG_NUM                                                                              \
    8 /* number: more than 15 significant digits, the last not 0: its                              \
       * canonical form is the double's shortest digits, never its own */

/* Arena: a chain of blocks, bump allocation, everything freed at once. */
typedef struct tg_arena_block tg_arena_block;
typedef struct tg_arena {
    tg_engine_t *engine;
    tg_arena_block *head;
    char *next, *limit; /* the free part of the head block */
    size_t block_size;  /* size of the next block to allocate */
} tg_arena;

void tg_arena_init(tg_arena *a, tg_engine_t *e, size_t first_block);
/* The out-of-line part of tg_arena_alloc: a new block. */
void *tg_arena_alloc_block(tg_arena *a, size_t size);

/* 8-byte aligned, NULL on OOM.  Inline: most calls only bump a pointer. */
static inline void *tg_arena_alloc(tg_arena *a, size_t size)
{
    size = (size + 7) & ~(size_t)7;
    if (size < 8)
        size = 8;
    if (a->next && size <= (size_t)(a->limit - a->next)) {
        void *p = a->next;
        a->next += size;
        return p;
    }
    return tg_arena_alloc_block(a, size);
}
/* A NUL-terminated copy of n bytes of s, or NULL on OOM. */
const char *tg_arena_strdup(tg_arena *a, const char *s, size_t n);
/* Frees every block, except that the engine keeps one (small) block for
 * the next arena. */
void tg_arena_free(tg_arena *a);
/* Gives the engine's kept block back to the allocator (engine teardown). */
void tg_arena_spare_free(tg_engine_t *e);

struct tg_doc_t {
    tg_arena arena;
    tg_value_t *root;
};

/* Every object that allocates through the engine holds it: tg_engine_free
 * is then deferred until the last of them is freed, so a host (or a garbage
 * collector) may free things in any order. */
void tg_engine_retain(tg_engine_t *e);
void tg_engine_release(tg_engine_t *e);

/* Engine allocator shorthands. */
void *tg_mem_realloc(tg_engine_t *e, void *p, size_t osize, size_t nsize);
void tg_mem_free(tg_engine_t *e, void *p, size_t size);

/* Fills err (when not NULL) and returns code. */
int tg_fail(tg_error_t *err, int code, size_t offset, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
void tg_error_clear(tg_error_t *err);

/* Buffer growth; returns TG_OK or TG_E_NOMEM (err filled). */
int tg_buf_reserve(tg_buf_t *b, size_t extra, tg_error_t *err);
int tg_buf_append(tg_buf_t *b, const void *data, size_t n, tg_error_t *err);

/* The writers' hot path: append without a call when the room is there. */
static inline int tg_buf_put(tg_buf_t *b, const void *data, size_t n, tg_error_t *err)
{
    if (n > b->cap - b->len)
        return tg_buf_append(b, data, n, err);
    memcpy(b->data + b->len, data, n);
    b->len += n;
    return TG_OK;
}

/* The 128-bit product of a and b as two halves (the number conversions). */
static inline void tg_mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
#if defined(__SIZEOF_INT128__)
    __extension__ typedef unsigned __int128 tg_u128;
    tg_u128 p = (tg_u128)a * b;
    *hi = (uint64_t)(p >> 64);
    *lo = (uint64_t)p;
#else
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    *lo = (mid << 32) | (uint32_t)p00;
#endif
}

/* Writes the decimal digits of v into out (at most 20); returns the count.
 * Two digits per division. */
static inline int tg_u64_text(uint64_t v, char *out)
{
    static const char pairs[] = "00010203040506070809"
                                "10111213141516171819"
                                "20212223242526272829"
                                "30313233343536373839"
                                "40414243444546474849"
                                "50515253545556575859"
                                "60616263646566676869"
                                "70717273747576777879"
                                "80818283848586878889"
                                "90919293949596979899";
    char tmp[20], *p = tmp + sizeof tmp;
    int n;
    while (v >= 100) {
        p -= 2;
        memcpy(p, pairs + 2 * (v % 100), 2);
        v /= 100;
    }
    if (v >= 10) {
        p -= 2;
        memcpy(p, pairs + 2 * v, 2);
    } else {
        *--p = (char)('0' + v);
    }
    n = (int)(tmp + sizeof tmp - p);
    memcpy(out, p, (size_t)n);
    return n;
}

/* ---- JSON Lines -------------------------------------------------------------- */

/* The next complete line of text[*at .. len) (the bytes before its '\n',
 * *n of them), *at moved past it; NULL when no '\n' is left. */
static inline const char *tg_line_next(const char *text, size_t len, size_t *at, size_t *n)
{
    const char *start = text + *at, *nl = memchr(start, '\n', len - *at);
    if (!nl)
        return NULL;
    *n = (size_t)(nl - start);
    *at += *n + 1;
    return start;
}

/* memcmp(a, b, n) == 0 for the short keys, strings and numbers most
 * values hold, without a call: loads inside the n bytes only. */
static inline int tg_same_bytes(const char *a, const char *b, size_t n)
{
    uint64_t x, y, u, v;
    uint32_t p, q, r, t;
    if (n >= 8 && n <= 16) {
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        memcpy(&u, a + n - 8, 8);
        memcpy(&v, b + n - 8, 8);
        return ((x ^ y) | (u ^ v)) == 0;
    }
    if (n >= 4 && n < 8) {
        memcpy(&p, a, 4);
        memcpy(&q, b, 4);
        memcpy(&r, a + n - 4, 4);
        memcpy(&t, b + n - 4, 4);
        return ((p ^ q) | (r ^ t)) == 0;
    }
    if (n < 4) {
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i])
                return 0;
        return 1;
    }
    return memcmp(a, b, n) == 0;
}

/* A line of white space only (as Lua's %s reads it) is blank: JSON Lines
 * readers skip it. */
static inline int tg_line_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && (s[i] < '\t' || s[i] > '\r'))
            return 0;
    return 1;
}

/* ---- agreement (tg_agree.c) ---------------------------------------------- */

/* tg_pointer_agreement restricted to the pointers whose agree is below
 * `below` (SIZE_MAX: all of them, as tg_pointer_agreement): a caller that
 * lists only where the documents disagree leaves the rest unordered and
 * unwritten.  *count is the number of those pointers. */
int tg_pointer_agreement_below(tg_engine_t *e, const tg_value_t *const *docs, size_t n, size_t rep,
                               const tg_norm_t *plan, size_t below, tg_pointer_agreement_t *out,
                               size_t max, size_t *count, tg_error_t *err);

/* ---- JSON Pointers (tg_pointer.c) ---------------------------------------- */

/* Length of s (n bytes) escaped as a pointer segment ("~" -> "~0", "/" -> "~1"). */
size_t tg_ptr_escaped_len(const char *s, size_t n);
/* Writes s escaped at w; returns the end of what it wrote. */
char *tg_ptr_escape(char *w, const char *s, size_t n);

/* Appends segments to a fixed buffer; when one no longer fits, the result
 * is the longest whole-segment prefix that leaves room for "/...", then
 * "/...". */
typedef struct tg_ptr_writer {
    char *out;
    size_t cap, len;
    size_t keep; /* length of that prefix so far */
    int cut;
} tg_ptr_writer;

void tg_pw_init(tg_ptr_writer *w, char *out, size_t cap);
/* Appends "/" + seg; seg is escaped unless raw. */
void tg_pw_seg(tg_ptr_writer *w, const char *seg, size_t n, int raw);
void tg_pw_index(tg_ptr_writer *w, size_t i);
/* Appends an already escaped pointer ("/a/b~1c"), segment by segment. */
void tg_pw_escaped(tg_ptr_writer *w, const char *ptr, size_t len);
/* Cuts when needed and NUL-terminates. */
void tg_pw_end(tg_ptr_writer *w);

/* Writes the JSON Pointer ptr (already escaped), followed by seg (escaped
 * here) when seg is not NULL, into out (cap bytes, NUL-terminated).  One
 * too long is cut after its last whole segment that leaves room for "/..."
 * and ends in "/...". */
void tg_pointer_write(char *out, size_t cap, const char *ptr, size_t len, const char *seg,
                      size_t seg_len);

/* A run of significant digits in at most two pieces: na at a, then nb at b
 * (a number text's digits on both sides of its decimal point). */
typedef struct tg_digits {
    const char *a;
    size_t na;
    const char *b;
    size_t nb;
} tg_digits;

/* Writes ECMAScript Number::toString's layout of (negative ? -1 : 1) x
 * 0.D x 10^n, D the digits of d (no leading or trailing zeros), and a NUL
 * into out: plain up to 21 integer digits, "0.000001" down to 1e-7, the
 * exponent form "1.5e+21" / "1e-7" outside.  Returns the length.  At most
 * na + nb + 26 bytes; a double's digits (at most 17, |n| < 400) take at
 * most TG_NUMBER_BUF.  n may also be TG_LAYOUT_EXP_TEXT, for an exponent
 * beyond int64_t: the exponent form is written up to the 'e', and the
 * caller appends the exponent, sign and digits. */
#define TG_LAYOUT_EXP_TEXT INT64_MIN
size_t tg_number_layout(char *out, int negative, const tg_digits *d, int64_t n);

/* A number literal as the parser reads it: the value is
 * (negative ? -1 : 1) x w x 10^exp10, where w holds the first 19 significant
 * digits; truncated says that nonzero digits followed them (the value then
 * lies strictly between w and w + 1 times 10^exp10). */
typedef struct tg_number_parts {
    uint64_t w;
    int64_t exp10;
    int negative;
    int truncated;
} tg_number_parts;

/* The doubles that are powers of ten exactly (10^0 .. 10^22), and whether
 * one correctly rounded operation on them is one rounding here (doubles
 * evaluated in double precision, not x87 extended precision): Clinger's
 * fast path, for reading decimals (tg_strtod.c) and checking them
 * (tg_number.c). */
extern const double tg_exact_pow10[23];
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
#define TG_CLINGER_OK 1
#else
#define TG_CLINGER_OK 0
#endif

/* The nearest double to the number (ties to even), locale-independent
 * (tg_strtod.c).  text/len is the literal parts was read from: a valid
 * RFC 8259 number inside the parser's NUL-padded input copy.  Returns TG_OK
 * or TG_E_NUMBER_RANGE when the magnitude overflows a double. */
int tg_number_parse(tg_engine_t *e, const char *text, size_t len, const tg_number_parts *parts,
                    double *out);

/* Writes the n sibling nodes at src to dst sorted by key in RFC 8785 order
 * (stable).  Above TG_SORT_SMALL nodes src is sorted in place first, with
 * tmp (room for n nodes) as the merge buffer; up to it tmp is not used.
 * Every key must be readable for 8 bytes from its start, however short (the
 * parser's keys are: they lie in its NUL-padded input copy). */
#define TG_SORT_SMALL 16
void tg_sort_members(tg_value_t *src, size_t n, tg_value_t *tmp, tg_value_t *dst);

/* Appends s (len bytes of UTF-8) as an RFC 8785 JSON string. */
int tg_canon_string(tg_buf_t *out, const char *s, size_t len, tg_error_t *err);

/* The length (1..4) of the well-formed UTF-8 sequence at s, of which n
 * bytes may be read, or 0 (a stray, overlong, surrogate or cut sequence). */
static inline size_t tg_utf8_sequence(const unsigned char *s, size_t n)
{
    size_t len;
    if (s[0] < 0x80)
        return 1;
    if (s[0] < 0xC2)
        return 0;
    len = s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : s[0] < 0xF5 ? 4 : 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((len == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] > 0x9F))) ||
        (len == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] > 0x8F))))
        return 0;
    return len;
}

/* 1 when the len bytes at s are well-formed UTF-8 and this processor can
 * tell at SIMD speed (AVX2, chosen at run time: tg_utf8.c); 0 when they are
 * not, or when there is no fast check here -- the caller then validates
 * each sequence as it meets it.  s must be followed by at least 31 NUL
 * bytes (the parser's input copy is: TG_INPUT_PAD). */
int tg_utf8_check_fast(const char *s, size_t len);

/* tg_parse with options:
 * TG_PARSE_FAST_UTF8: the fast UTF-8 check (what tg_parse does); without
 *   it every sequence is validated where it stands, as where no fast check
 *   exists.  Both give the same document or the same error.
 * TG_PARSE_SHARE_REPEATS: a container of 32 bytes or more whose bytes
 *   repeat an earlier one's shares that one's children instead of being
 *   parsed again (the same value, the same error if any; a repeat's nodes
 *   carry the first copy's offsets, so only for callers that report none
 *   but the parse error's). */
#define TG_PARSE_FAST_UTF8 1u
#define TG_PARSE_SHARE_REPEATS 2u
/* TG_PARSE_REGISTRY: a registry file, bounded by max_registry_bytes
 *   (TG_E_REGISTRY_TOO_LARGE) instead of max_input_bytes. */
#define TG_PARSE_REGISTRY 4u
int tg_parse_with(tg_engine_t *e, const char *json, size_t len, unsigned options, tg_doc_t **out,
                  tg_error_t *err);

/* Writes an image's length field (len) and checksum, so a test or fuzzer
 * can reach the checks behind them with bytes of its own (tg_image.c). */
void tg_image_seal(unsigned char *data, size_t len);

/* Frees the engine's PCRE2 contexts and match data (tg_regex.c); called
 * when the engine itself goes. */
void tg_regex_cache_free(tg_engine_t *e);

/* ---- DOM helpers (tg_dom.c) -------------------------------------------- */

/* The exact order of two numbers, as the decimals they spell: <0, 0 or >0
 * (1 == 1.0 == 10e-1, 2^53 < 2^53 + 1, 100 < 100.00000000000000001). */
int tg_number_compare(const tg_value_t *a, const tg_value_t *b);
/* A total order of JSON values whose 0 is JSON equality (tg_value_equal):
 * by type (tg_type_of), then numbers by tg_number_compare, strings
 * bytewise, arrays and objects shorter first and then member by member
 * (objects in their stored RFC 8785 key order: each key bytewise, then its
 * value).  Adds one to *visited (when not NULL) per pair of values
 * compared, nested ones included, so a caller can count the work. */
int tg_value_compare(const tg_value_t *a, const tg_value_t *b, size_t *visited);
/* JSON equality: same type and value, numbers compared as the decimals
 * they spell (1 == 1.0 == 10e-1), objects regardless of member order. */
int tg_value_equal(const tg_value_t *a, const tg_value_t *b);
/* Deep copy of src into *dst, every byte (keys, strings, number texts) in
 * arena a, so the copy outlives src's document.  TG_OK or TG_E_NOMEM (then
 * whatever was copied stays in the arena until it is freed). */
int tg_value_copy(tg_arena *a, tg_value_t *dst, const tg_value_t *src);

/* ---- exact decimals (tg_decimal.c) --------------------------------------- */

/* A JSON number text read as the decimal it spells:
 * value = (negative ? -1 : 1) x digits(first..last) x 10^exp, with no
 * leading or trailing zeros in the digit run ('.' is skipped when reading
 * it).  first is NULL when the value is zero.  Points into the text. */
typedef struct tg_decimal {
    const char *first;
    const char *last;
    size_t n_digits;
    int64_t exp;
    int negative;
} tg_decimal;

/* text must be a valid RFC 8259 number (what the parser accepted). */
void tg_decimal_init(tg_decimal *d, const char *text, size_t len);
int tg_decimal_is_integer(const tg_decimal *d);
int tg_decimal_equal(const tg_decimal *a, const tg_decimal *b);
/* The order of the two values: <0, 0 or >0 (0 == -0; exact, whatever the
 * lengths and exponents). */
int tg_decimal_compare(const tg_decimal *a, const tg_decimal *b);
/* 1 when x is an integer multiple of d (d > 0), 0 when it is not, -1 when
 * d has more than TG_DECIMAL_EXACT_DIGITS significant digits and exact
 * arithmetic cannot decide. */
#define TG_DECIMAL_EXACT_DIGITS 18
int tg_decimal_multiple(const tg_decimal *x, const tg_decimal *d);

/* Appends the exact form of the number text (a valid RFC 8259 number):
 * the layout tg_number_layout gives its own decimal digits, with an
 * exponent as long as the value needs (exact for any exponent); "0" for
 * every zero.  TG_OK or TG_E_NOMEM. */
int tg_decimal_write(tg_buf_t *out, const char *text, size_t len, tg_error_t *err);

/* ---- hashing (tg_hash.c) ------------------------------------------------- */

/* The name of the XXH3 loop tg_hash128 and tg_hash64 run on this machine
 * for inputs past 240 bytes ("sse2", "avx2", "neon", "scalar", ...): what
 * the build chose, or "avx2" when the CPU has it and the build can switch;
 * for the tests and benchmarks to say which loop they measured. */
const char *tg_hash_loop(void);
/* tg_hash128_hex by a table of digit pairs, what it runs where SSE2 is
 * missing; here so spec/c/test_hash.c checks it on every machine. */
void tg_hash128_hex_portable(const tg_hash128_t *h, char out[TG_HASH_HEX]);

/* ---- a plan's digests (tg_plan.c) ----------------------------------------- */

/* The digest of a part a sample lacks ("no result", "no arguments", "no
 * step"): the words and their NUL, which no JSON text hashes to. */
void tg_plan_stand_in(const char *what, tg_hash128_t *h);
/* The canonical form of v in mode (TG_CANON_EXACT for arguments: samples
 * that differ in the 20th digit of a number are different arguments, as
 * they are for the executor and for args_digest; TG_CANON_RFC8785 for
 * results and epochs, compared with a probe's toolgate.hash), normalized
 * by norm (NULL: as it is), hashed; buf is scratch.  TG_OK or an error. */
int tg_plan_digest(const tg_norm_t *norm, int mode, const tg_value_t *v, tg_buf_t *buf,
                   tg_hash128_t *h, tg_error_t *err);
/* The first sample's epoch, as tg_plan_epoch keeps it. */
typedef struct tg_plan_epochs {
    const tg_value_t *first;
    tg_hash128_t digest; /* its digest, once a differing text asked for it */
    int digested;
} tg_plan_epochs;
/* Sample i's epoch ep (NULL: none) against the first sample's (in seen,
 * set at i == 0): *equal cleared when one lacks it or they differ (by
 * RFC 8785 form; nothing is digested while they are one text).  TG_OK or
 * an error. */
int tg_plan_epoch(const tg_value_t *ep, size_t i, tg_buf_t *buf, tg_plan_epochs *seen, int *equal,
                  tg_error_t *err);

/* ---- self-consistency (tg_consistency.c) --------------------------------- */

/* Writes x with two decimals and a NUL into out ("0.12" for 0.125: the
 * exact binary value rounded to the nearest hundredth, ties to even, as
 * glibc's printf("%.2f") does), whatever the locale; returns the length.
 * For |x| >= 2^53 and non-finite x (never a share or a threshold) it
 * writes tg_number_format's form instead. */
size_t tg_format_fixed2(double x, char out[TG_NUMBER_BUF]);

/* Appends the message of the table's row for features f under settings s
 * (nothing for an accept).  TG_OK or TG_E_NOMEM. */
int tg_consistency_message(const tg_consistency_t *s, const tg_plan_features_t *f, int row,
                           tg_buf_t *out, tg_error_t *err);

/* Reading ahead while lines are decided (tg_reader.c, tg_workers.c).
 * tg_reader_read_ahead reads up to want more bytes of a regular file into
 * r's spare buffer, leaving what r holds where it is, so that it may run
 * while the lines held are decided on other threads (nothing else may use
 * r meanwhile); the next tg_reader_lines takes them, and says a failure
 * or the end it met where its own read would have.  Nothing is done for
 * a pipe or a terminal, whose read may wait.  tg_workers_read_ahead has
 * the first thread done with its piece (the caller's too) run it once
 * while the next pieces are decided (r NULL: no more). */
void tg_reader_read_ahead(tg_reader_t *r, size_t want);
void tg_workers_read_ahead(tg_workers_t *w, tg_reader_t *r, size_t want);

#endif /* TG_INTERNAL_H */
