/*
 * toolgate.h -- public C API of the toolgate core.
 *
 * The core does the byte work of toolgate: strict JSON parsing into an arena
 * DOM, RFC 8785 (JCS) canonical form, XXH3 hashing.  It has no Lua
 * dependency; the Lua 5.4 C-API binding and the LuaJIT FFI binding both call
 * exactly these functions.
 *
 * Conventions (read once, they hold for every function below):
 *
 *  - Every exported symbol starts with tg_; types end in _t when opaque.
 *  - Functions that can fail return an int status: TG_OK (0) on success or a
 *    positive TG_E_* code, and fill the caller's tg_error_t when it is not
 *    NULL.  Nothing aborts, exits or prints.  Error messages are written into
 *    the caller's struct; nothing is malloc'd behind the caller's back.
 *  - Memory comes from the engine's allocator (a lua_Alloc-shaped hook, so a
 *    host can account for it).  A parsed document owns one arena; freeing the
 *    document frees everything that came from it at once.
 *  - There is no global mutable state.  Several engines may live in one
 *    process; an engine and everything made from it must be used by one
 *    thread at a time.
 *  - Results never depend on the C locale (LC_NUMERIC in particular).
 */
#ifndef TOOLGATE_H
#define TOOLGATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TG_VERSION "0.1.0"

/* Exported symbols; the library is built with hidden visibility so that
 * nothing else leaves it. */
#if defined(__GNUC__)
#define TG_API __attribute__((visibility("default")))
#else
#define TG_API
#endif

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

/* Every failure has its own code; tg_code_name() gives its stable name (the
 * name is what the Lua side and the command line report). */
enum tg_code {
    TG_OK = 0,
    TG_E_NOMEM,            /* "NOMEM": the allocator returned NULL */
    TG_E_ARG,              /* "BAD_ARGUMENT": caller passed an invalid argument */
    /* limits (tg_limits_t) */
    TG_E_INPUT_TOO_LARGE,  /* "INPUT_TOO_LARGE": more than max_input_bytes */
    TG_E_TOO_DEEP,         /* "TOO_DEEP": nesting deeper than max_depth */
    TG_E_STRING_TOO_LONG,  /* "STRING_TOO_LONG": a string (or key) longer than max_string_bytes */
    TG_E_TOO_MANY_MEMBERS, /* "TOO_MANY_MEMBERS": an object with more than max_members */
    TG_E_TOO_MANY_ITEMS,   /* "TOO_MANY_ITEMS": an array with more than max_items */
    /* malformed JSON (RFC 8259, read strictly) */
    TG_E_EMPTY,            /* "EMPTY": no value at all (empty or blank input) */
    TG_E_SYNTAX,           /* "SYNTAX": unexpected character */
    TG_E_EOF,              /* "UNEXPECTED_END": input ended inside a value */
    TG_E_TRAILING,         /* "TRAILING_GARBAGE": something after the value */
    TG_E_DUPLICATE_KEY,    /* "DUPLICATE_KEY": an object names one key twice */
    TG_E_UTF8,             /* "INVALID_UTF8": bytes that are not well-formed UTF-8 */
    TG_E_SURROGATE,        /* "LONE_SURROGATE": \uD800-\uDFFF escape not in a valid pair */
    TG_E_CONTROL_CHAR,     /* "CONTROL_CHARACTER": unescaped U+0000..U+001F in a string */
    TG_E_ESCAPE,           /* "INVALID_ESCAPE": unknown escape or bad \u hex digits */
    TG_E_LEADING_ZERO,     /* "LEADING_ZERO": a number such as 01 or -007 */
    TG_E_NUMBER,           /* "INVALID_NUMBER": 1., .5, 1e, -, +1 and the like */
    TG_E_NONFINITE,        /* "NONFINITE_NUMBER": NaN, Infinity, -Infinity */
    TG_E_NUMBER_RANGE,     /* "NUMBER_OUT_OF_RANGE": magnitude beyond IEEE 754 double */
    TG_E_CODE_COUNT        /* not a code: the number of codes */
};

/* The stable upper-case name of a code ("DUPLICATE_KEY"), or "UNKNOWN". */
TG_API const char *tg_code_name(int code);

#define TG_ERROR_MESSAGE_MAX 200
#define TG_ERROR_POINTER_MAX 256

/* What went wrong.  offset is the byte offset into the input where the
 * problem was found, or TG_NO_OFFSET; pointer is a JSON Pointer (RFC 6901)
 * to the offending value when one applies, "" otherwise. */
#define TG_NO_OFFSET ((size_t)-1)
typedef struct tg_error_t {
    int code;
    size_t offset;
    char pointer[TG_ERROR_POINTER_MAX];
    char message[TG_ERROR_MESSAGE_MAX];
} tg_error_t;

/* ------------------------------------------------------------------------ */
/* Engine: allocator and limits                                              */
/* ------------------------------------------------------------------------ */

/* Allocator hook with lua_Alloc's contract: nsize == 0 frees ptr and returns
 * NULL; otherwise behaves as realloc(ptr, nsize) (ptr may be NULL, then
 * osize is meaningless).  osize is the size the block had, so a host can
 * keep an exact account. */
typedef void *(*tg_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);

/* Hard limits on what one call may make the engine do.  Each has a named
 * default and an allowed range; tg_engine_set_limits() refuses values outside
 * it (TG_E_ARG) and leaves the old limits in force. */
typedef struct tg_limits_t {
    size_t max_input_bytes;  /* bytes of JSON text per document */
    size_t max_depth;        /* nesting of arrays/objects; the root value is depth 0 */
    size_t max_string_bytes; /* decoded UTF-8 bytes of one string or key */
    size_t max_members;      /* members of one object */
    size_t max_items;        /* elements of one array */
} tg_limits_t;

#define TG_DEFAULT_MAX_INPUT_BYTES  ((size_t)1 << 20) /* 1 MiB */
#define TG_DEFAULT_MAX_DEPTH        64
#define TG_DEFAULT_MAX_STRING_BYTES ((size_t)1 << 18) /* 256 KiB */
#define TG_DEFAULT_MAX_MEMBERS      4096
#define TG_DEFAULT_MAX_ITEMS        65536

/* Ranges: every limit is at least 1.  Upper bounds keep offsets in 32 bits
 * and keep the recursive writers within a small, fixed C stack. */
#define TG_LIMIT_MAX_INPUT_BYTES  ((size_t)0x7fffffff) /* 2 GiB - 1 */
#define TG_LIMIT_MAX_DEPTH        1000

typedef struct tg_engine_t tg_engine_t;

/* Fills *out with the defaults above. */
TG_API void tg_limits_default(tg_limits_t *out);

/* Makes an engine.  limits NULL means the defaults; alloc NULL means the C
 * library's realloc/free.  Returns NULL (and fills err) when the limits are
 * out of range or memory runs out.  Free with tg_engine_free(). */
TG_API tg_engine_t *tg_engine_new(const tg_limits_t *limits, tg_alloc_fn alloc,
                           void *alloc_ud, tg_error_t *err);
TG_API void tg_engine_free(tg_engine_t *e);

/* Reads / replaces the engine's limits.  set_limits validates all fields
 * first and changes nothing on error. */
TG_API void tg_engine_limits(const tg_engine_t *e, tg_limits_t *out);
TG_API int tg_engine_set_limits(tg_engine_t *e, const tg_limits_t *limits,
                         tg_error_t *err);

/* ------------------------------------------------------------------------ */
/* Parsed documents (arena DOM)                                              */
/* ------------------------------------------------------------------------ */

typedef struct tg_doc_t tg_doc_t;
typedef struct tg_value_t tg_value_t; /* a node inside a tg_doc_t */

enum tg_type {
    TG_NULL = 0, TG_FALSE, TG_TRUE, TG_NUMBER, TG_STRING, TG_ARRAY, TG_OBJECT
};

/* Parses len bytes of JSON text (RFC 8259, strictly: see the TG_E_* codes)
 * into a new document.  The text is copied; the caller's buffer is not kept.
 * On success *out owns all memory of the DOM; free it with tg_doc_free().
 * On failure *out is NULL and err says what and where (byte offset). */
TG_API int tg_parse(tg_engine_t *e, const char *json, size_t len, tg_doc_t **out,
             tg_error_t *err);
TG_API void tg_doc_free(tg_doc_t *doc);

/* The root value; valid as long as the document lives. */
TG_API const tg_value_t *tg_doc_root(const tg_doc_t *doc);

/* Accessors.  Values are read-only and live as long as their document.
 * Object members are kept in RFC 8785 key order (UTF-16 code units), not
 * in source order: JSON objects are unordered and the parser sorts each
 * object once, which is also how it finds duplicate keys. */
TG_API int tg_type_of(const tg_value_t *v);
/* Members of an object, elements of an array, bytes of a string, else 0. */
TG_API size_t tg_len(const tg_value_t *v);
/* The i-th element (array) or member value (object); NULL when out of range
 * or v is not a container. */
TG_API const tg_value_t *tg_at(const tg_value_t *v, size_t i);
/* The key of the i-th member of an object (UTF-8, *len bytes, may contain
 * NUL); NULL when v is not an object or i is out of range. */
TG_API const char *tg_key_at(const tg_value_t *v, size_t i, size_t *len);
/* The member named key (len bytes) of an object, or NULL. */
TG_API const tg_value_t *tg_get(const tg_value_t *v, const char *key, size_t len);
/* The decoded UTF-8 bytes of a string (*len bytes, may contain NUL), or NULL
 * when v is not a string. */
TG_API const char *tg_str(const tg_value_t *v, size_t *len);
/* The value of a number as the nearest IEEE 754 double (0 for non-numbers).
 * Integers beyond 2^53 are therefore rounded, as RFC 8785 requires. */
TG_API double tg_num(const tg_value_t *v);
/* The number exactly as written in the source (*len bytes), or NULL. */
TG_API const char *tg_num_text(const tg_value_t *v, size_t *len);
/* Byte offset of the value in the parsed text (for object members: of its
 * key), for error messages. */
TG_API size_t tg_offset(const tg_value_t *v);

/* ------------------------------------------------------------------------ */
/* Output buffers                                                            */
/* ------------------------------------------------------------------------ */

/* A growable byte buffer filled by the writers below.  Its memory comes
 * from the engine's allocator; release it with tg_buf_free().  data is not
 * NUL-terminated unless a function says so. */
typedef struct tg_buf_t {
    char *data;
    size_t len;
    size_t cap;
    tg_engine_t *engine;
} tg_buf_t;

TG_API void tg_buf_init(tg_buf_t *b, tg_engine_t *e);
TG_API void tg_buf_free(tg_buf_t *b);
/* Empties the buffer, keeping its memory for reuse. */
TG_API void tg_buf_reset(tg_buf_t *b);

/* ------------------------------------------------------------------------ */
/* RFC 8785 canonical form                                                   */
/* ------------------------------------------------------------------------ */

/* Appends the RFC 8785 (JCS) canonical form of v to out: no whitespace,
 * object keys sorted by UTF-16 code units, strings with the minimal escapes
 * of ECMAScript JSON.stringify, numbers as ECMAScript Number.prototype.
 * toString of their double value (-0 becomes 0). */
TG_API int tg_canon_value(const tg_value_t *v, tg_buf_t *out, tg_error_t *err);

/* Parses json and appends its canonical form to out (parse + write). */
TG_API int tg_canon(tg_engine_t *e, const char *json, size_t len, tg_buf_t *out,
             tg_error_t *err);

/* Compares two UTF-8 keys in RFC 8785 order (UTF-16 code units); <0, 0, >0. */
TG_API int tg_key_compare(const char *a, size_t alen, const char *b, size_t blen);

/* ------------------------------------------------------------------------ */
/* Numbers                                                                   */
/* ------------------------------------------------------------------------ */

/* Enough for any finite double in ECMAScript form, plus a NUL. */
#define TG_NUMBER_BUF 32

/* Writes the ECMAScript Number::toString form of d (shortest digits that
 * round-trip, nearest and then even when several do, the spec's layout) and
 * a NUL into out.  Returns the length, or 0 when d is NaN or infinite. */
TG_API size_t tg_number_format(double d, char out[TG_NUMBER_BUF]);

/* ------------------------------------------------------------------------ */
/* Hashing (XXH3, seed 0)                                                    */
/* ------------------------------------------------------------------------ */

typedef struct tg_hash128_t {
    uint64_t hi;
    uint64_t lo;
} tg_hash128_t;

#define TG_HASH_HEX 33 /* 32 lowercase hex digits and a NUL */

/* XXH3-128 of len bytes into *out.  (Results go through pointers here and
 * below: LuaJIT compiles FFI calls that pass or return structs by value
 * only in the interpreter.) */
TG_API void tg_hash128(const void *data, size_t len, tg_hash128_t *out);
/* XXH3-64 of len bytes (for internal tables, not for digests). */
TG_API uint64_t tg_hash64(const void *data, size_t len);
/* The 128-bit hash as 32 lowercase hex digits, high half first (the byte
 * order of XXH128's canonical representation, as xxhsum -H2 prints it). */
TG_API void tg_hash128_hex(const tg_hash128_t *h, char out[TG_HASH_HEX]);

/* XXH3-128 of the canonical form of v (canonicalizes into scratch). */
TG_API int tg_hash_value(tg_engine_t *e, const tg_value_t *v, tg_hash128_t *out,
                  tg_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* TOOLGATE_H */
