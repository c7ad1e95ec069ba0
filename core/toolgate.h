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
 *  - Every tg_*_free accepts NULL.  Pointers a function returns into a
 *    document, call, schema or registry are valid while that object lives.
 *
 * Quick start (examples/c/canon.c is the whole program):
 *
 *     tg_error_t err;
 *     tg_engine_t *e = tg_engine_new(NULL, NULL, NULL, &err);
 *     tg_buf_t out;
 *     tg_buf_init(&out, e);
 *     if (tg_canon(e, json, len, &out, &err) != TG_OK)
 *         fprintf(stderr, "%s at byte %zu: %s\n", tg_code_name(err.code),
 *                 err.offset, err.message);
 *     ... out.data, out.len: the canonical form ...
 *     tg_buf_free(&out);
 *     tg_engine_free(e);
 *
 * Build with `pkg-config --cflags --libs toolgate` after `make install`
 * (static: `pkg-config --static --libs toolgate`; the core needs PCRE2).
 * The sections below: status codes; engine (allocator and limits); parsed
 * documents; output buffers; RFC 8785 canonical form; numbers; JSON Schema;
 * tool calls; registries and the Resolution Rung; hashing; normalized
 * canonical form; agreement; sampled plans.
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
/* clang-format off */
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
    /* schemas (compile time: the registry fails to load) */
    TG_E_SCHEMA_KEYWORD,   /* "UNSUPPORTED_KEYWORD": a keyword toolgate does not implement */
    TG_E_SCHEMA,           /* "INVALID_SCHEMA": a keyword with a value of the wrong kind */
    TG_E_SCHEMA_REF,       /* "UNRESOLVED_REF": $ref to something not in the document */
    TG_E_PATTERN,          /* "INVALID_PATTERN": a pattern PCRE2 cannot compile */
    /* schemas (validation time: the call is refused, never accepted) */
    TG_E_REGEX_LIMIT,      /* "REGEX_LIMIT": a pattern match exceeded regex_match_limit */
    TG_E_VALIDATION_LIMIT, /* "VALIDATION_LIMIT": more than max_validation_steps */
    /* registries and calls */
    TG_E_DUPLICATE_TOOL,   /* "DUPLICATE_TOOL": one (server, name) added twice */
    TG_E_BAD_CALL,         /* "BAD_CALL": not a tool call in any known format */
    TG_E_BAD_ARGUMENTS,    /* "BAD_ARGUMENTS": arguments that cannot be decoded to an object */
    /* added later, kept last so the codes above keep their numbers */
    TG_E_PATTERN_TOO_LONG, /* "PATTERN_TOO_LONG": a schema pattern longer than max_pattern_bytes */
    TG_E_UNSUPPORTED_FORMAT, /* "UNSUPPORTED_FORMAT": assert_formats, and a format toolgate does not assert */
    TG_E_REGEX_BUDGET,     /* "REGEX_BUDGET": the pattern matches of one validation would pass max_regex_steps */
    TG_E_UNSUPPORTED_CALL, /* "UNSUPPORTED_CALL": a call toolgate cannot gate (tg_calls_decode) */
    TG_E_IO,               /* "IO_ERROR": a read or write of a file descriptor failed (tg_reader_lines, tg_write_all) */
    TG_E_REGISTRY_TOO_LARGE, /* "REGISTRY_TOO_LARGE": a registry file of more than max_registry_bytes */
    TG_E_IMAGE,            /* "BAD_REGISTRY_IMAGE": a registry image that is corrupt, truncated or of another format */
    TG_E_IMAGE_STALE,      /* "STALE_REGISTRY_IMAGE": a registry image whose sources changed since it was compiled */
    TG_E_CODE_COUNT        /* not a code: the number of codes */
};
/* clang-format on */

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
    size_t max_input_bytes;      /* bytes of JSON text per document */
    size_t max_depth;            /* nesting of arrays/objects; the root value is depth 0 */
    size_t max_string_bytes;     /* decoded UTF-8 bytes of one string or key */
    size_t max_members;          /* members of one object */
    size_t max_items;            /* elements of one array */
    size_t regex_match_limit;    /* PCRE2 match limit per pattern match */
    size_t max_validation_steps; /* units of validation work per validation
                                  * (schema nodes evaluated, members walked,
                                  * items sorted: see tg_validate) */
    size_t max_pattern_bytes;    /* bytes of one schema pattern (pattern,
                                  * patternProperties, propertyNames), checked
                                  * when a schema is compiled */
    size_t max_regex_steps;      /* PCRE2 match-limit units all pattern matches
                                  * of one validation may use (added last: the
                                  * fields above keep their offsets) */
    size_t max_registry_bytes;   /* bytes of one registry file or image
                                  * (tg_parse_registry, tg_image_open); calls
                                  * keep max_input_bytes (added last too) */
} tg_limits_t;

#define TG_DEFAULT_MAX_INPUT_BYTES ((size_t)1 << 20) /* 1 MiB */
#define TG_DEFAULT_MAX_DEPTH 64
#define TG_DEFAULT_MAX_STRING_BYTES ((size_t)1 << 18) /* 256 KiB */
#define TG_DEFAULT_MAX_MEMBERS 4096
#define TG_DEFAULT_MAX_ITEMS 65536
#define TG_DEFAULT_REGEX_MATCH_LIMIT 100000
#define TG_DEFAULT_MAX_VALIDATION_STEPS 1000000
#define TG_DEFAULT_MAX_PATTERN_BYTES 4096
#define TG_DEFAULT_MAX_REGEX_STEPS 10000000
#define TG_DEFAULT_MAX_REGISTRY_BYTES ((size_t)1 << 28) /* 256 MiB */

/* Ranges: every limit is at least 1.  Upper bounds keep offsets in 32 bits
 * and keep the recursive writers within a small, fixed C stack. */
#define TG_LIMIT_MAX_INPUT_BYTES ((size_t)0x7fffffff) /* 2 GiB - 1 */
#define TG_LIMIT_MAX_DEPTH 1000

typedef struct tg_engine_t tg_engine_t;

/* A 128-bit hash (XXH3-128), high half first: see "Hashing" below. */
typedef struct tg_hash128_t {
    uint64_t hi;
    uint64_t lo;
} tg_hash128_t;

/* Fills *out with the defaults above. */
TG_API void tg_limits_default(tg_limits_t *out);

/* Makes an engine.  limits NULL means the defaults; alloc NULL means the C
 * library's realloc/free.  Returns NULL (and fills err) when the limits are
 * out of range or memory runs out.  Free with tg_engine_free(); documents,
 * schemas and registries made from it keep it alive until they are freed
 * too, so they may be freed before or after it. */
TG_API tg_engine_t *tg_engine_new(const tg_limits_t *limits, tg_alloc_fn alloc, void *alloc_ud,
                                  tg_error_t *err);
TG_API void tg_engine_free(tg_engine_t *e);

/* Reads / replaces the engine's limits.  set_limits validates all fields
 * first and changes nothing on error. */
TG_API void tg_engine_limits(const tg_engine_t *e, tg_limits_t *out);
TG_API int tg_engine_set_limits(tg_engine_t *e, const tg_limits_t *limits, tg_error_t *err);

/* ------------------------------------------------------------------------ */
/* Parsed documents (arena DOM)                                              */
/* ------------------------------------------------------------------------ */

typedef struct tg_doc_t tg_doc_t;
typedef struct tg_value_t tg_value_t; /* a node inside a tg_doc_t */

enum tg_type {
    TG_NULL = 0,
    TG_FALSE,
    TG_TRUE,
    TG_NUMBER,
    TG_STRING,
    TG_ARRAY,
    TG_OBJECT
};

/* Parses len bytes of JSON text (RFC 8259, strictly: see the TG_E_* codes)
 * into a new document.  The text is copied; the caller's buffer is not kept.
 * On success *out owns all memory of the DOM; free it with tg_doc_free().
 * (The engine keeps one freed arena block, at most 64 KiB, for the next
 * document; it is released with the engine.)
 * On failure *out is NULL and err says what and where (byte offset). */
TG_API int tg_parse(tg_engine_t *e, const char *json, size_t len, tg_doc_t **out, tg_error_t *err);
/* tg_parse for a registry file: len is bounded by max_registry_bytes
 * (TG_E_REGISTRY_TOO_LARGE) instead of max_input_bytes, so a registry of
 * many tools loads without letting every call be that large. */
TG_API int tg_parse_registry(tg_engine_t *e, const char *json, size_t len, tg_doc_t **out,
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
/* Whether v, or any value inside it at any depth, is an object with a
 * member named key (len bytes): a schema walk that looks for one keyword
 * need not run when this says no. */
TG_API int tg_has_key(const tg_value_t *v, const char *key, size_t len);
/* The decoded UTF-8 bytes of a string (*len bytes, may contain NUL), or NULL
 * when v is not a string. */
TG_API const char *tg_str(const tg_value_t *v, size_t *len);
/* The value of a number as the nearest IEEE 754 double (0 for non-numbers).
 * Integers beyond 2^53 are therefore rounded, as RFC 8785 requires. */
TG_API double tg_num(const tg_value_t *v);
/* 1 when v is a number whose RFC 8785 form (the shortest digits of its
 * double) spells the decimal of its source text, so tg_num(v) written
 * back loses nothing; 0 when it spells another (9007199254740993,
 * 0.1000000000000000000001, 1e-400: only the text, or TG_CANON_EXACT,
 * keeps the value), and for anything that is not a number. */
TG_API int tg_num_round_trips(const tg_value_t *v);
/* The number exactly as written in the source (*len bytes), or NULL. */
TG_API const char *tg_num_text(const tg_value_t *v, size_t *len);
/* Byte offset of the value in the parsed text (for object members: of its
 * key), for error messages. */
TG_API size_t tg_offset(const tg_value_t *v);
/* What tg_value_t is in memory, for a binding that reads values in place
 * instead of calling the functions above (LuaJIT's FFI: one walk of a
 * document, no call into the core a node): i = 0 its size, then the
 * offsets of key, key_len, offset, len, type, p (string bytes, number
 * text, or the items) and num; (size_t)-1 for any other i.  The binding
 * declares the same layout and refuses to load when these differ. */
TG_API size_t tg_value_layout(int i);

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

/* Starts an empty buffer whose memory will come from e's allocator (no
 * allocation yet).  tg_buf_free releases the memory and leaves the buffer
 * empty and usable again. */
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
TG_API int tg_canon(tg_engine_t *e, const char *json, size_t len, tg_buf_t *out, tg_error_t *err);

/* The canonical forms the writers know.
 *
 *   TG_CANON_RFC8785  RFC 8785, as tg_canon_value writes it.
 *   TG_CANON_EXACT    "RFC 8785 with exact numbers", the form toolgate's
 *                     argument digests hash (args_digest, the defer
 *                     binding, self-consistency's argument agreement).
 *                     It differs from RFC 8785 only in numbers whose RFC
 *                     8785 form spells another decimal than their source
 *                     text: 12345678901234567890 (RFC 8785:
 *                     12345678901234567000), 9007199254740993 (...992),
 *                     0.1000000000000000000001 (0.1), 18446744073709551616
 *                     (a double, but written ...552000), 1e-400 (0).  Such a
 *                     number is written as its exact decimal: its
 *                     significant digits (no leading or trailing zeros) in
 *                     the layout ECMAScript's Number::toString gives
 *                     digits -- plain up to 21 integer digits, "0.000001"
 *                     down to 1e-7, else d.ddd e+/-x with every digit and
 *                     the exponent exact however long ("1e-400",
 *                     "1.23456789012345678901234e+23").  Every other number,
 *                     and everything that is not a number, is written as
 *                     RFC 8785 writes it, byte for byte: 1.0 is 1, 0.1
 *                     stays 0.1, 1e21 is 1e+21, so the digests of ordinary
 *                     arguments are their RFC 8785 digests.  Two texts
 *                     give the same bytes exactly when they are the same
 *                     decimal (1.2345678901234567890e19 and
 *                     12345678901234567890; -0 and 0).
 *                     Why: RFC 8785 reads every number as a double, but
 *                     the executors behind toolgate need not -- Python's
 *                     json, Go's json.Number, Java's BigDecimal read
 *                     12345678901234567890 and ...891 as two accounts.  A
 *                     digest that binds an approval to arguments must tell
 *                     apart what they tell apart.  The form is still valid
 *                     JSON, re-reads as itself, and any RFC 8785 writer
 *                     turns it into the RFC 8785 form of the source. */
enum tg_canon_mode {
    TG_CANON_RFC8785 = 0,
    TG_CANON_EXACT = 1
};

/* tg_canon_value in the form mode names (TG_E_ARG for any other). */
TG_API int tg_canon_value_mode(const tg_value_t *v, int mode, tg_buf_t *out, tg_error_t *err);

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
/* JSON Schema                                                               */
/* ------------------------------------------------------------------------ */

/* A compiled schema: an immutable C structure built once (at registry load)
 * and used for any number of validations.  It owns copies of everything it
 * needs, so the document it was compiled from may be freed. */
typedef struct tg_schema_t tg_schema_t;

typedef struct tg_schema_options_t {
    /* 1 (default): closed world.  Where a schema reached at an instance
     * location, with the subschemas it reaches in place (allOf, anyOf, oneOf,
     * $ref, transitively; not `not`), declares properties, an object key is
     * accepted only when one of them that validated there evaluates it
     * (properties names it, a patternProperties pattern matches it,
     * additionalProperties applies): what unevaluatedProperties: false on
     * that schema would say.  0: standard JSON Schema 2020-12 semantics. */
    int closed;
    /* 1: `format` is asserted: date-time, date, time, duration, email,
     * hostname, ipv4, ipv6, uri, uri-reference, uri-template, uuid, regex,
     * json-pointer, relative-json-pointer, and OpenAPI's byte, binary,
     * password, int32, int64, float and double (docs/rung.md, "Formats").  Any
     * other format name fails the compile (TG_E_UNSUPPORTED_FORMAT) unless
     * annotation_formats lists it.  0 (default): every format is an
     * annotation. */
    int assert_formats;
    /* Extra keywords to treat as annotations (ignored) instead of refusing
     * the schema; NULL-terminated, may be NULL. */
    const char *const *ignore_keywords;
    /* With assert_formats: format names to treat as annotations (never
     * checked, never refused), whether toolgate asserts them or not;
     * NULL-terminated, may be NULL. */
    const char *const *annotation_formats;
} tg_schema_options_t;

/* Fills *o with the defaults: closed world, formats not asserted, no
 * lists. */
TG_API void tg_schema_options_default(tg_schema_options_t *o);

/* Compiles the schema at v (an object or a boolean).  opt NULL means the
 * defaults.  v's document may be freed afterwards.  Keywords: JSON Schema
 * 2020-12's type, enum, const, the numeric, string, array and object
 * assertions, properties, patternProperties, additionalProperties,
 * propertyNames, dependentRequired, prefixItems, items, allOf, anyOf,
 * oneOf, not, $ref (to "#" and any JSON Pointer fragment in the same
 * document), $defs, format; the draft-07 spellings definitions and
 * array-form items with additionalItems; annotations (title, description,
 * default, examples, $schema, $id, $comment, deprecated, readOnly,
 * writeOnly, contentMediaType, contentEncoding) and x-* keywords are
 * ignored.  Every $defs entry is compiled, referenced or not.
 * On failure returns, and fills err with (pointer: the JSON Pointer of the
 * offending place in the schema; offset: its byte offset in the schema's
 * text; message naming the keyword):
 *   TG_E_SCHEMA_KEYWORD  any other keyword (pointer: the schema object
 *                        holding it), unless listed in ignore_keywords;
 *   TG_E_SCHEMA          a keyword value of the wrong kind, or a $ref cycle
 *                        reachable from the root that never moves into the
 *                        instance ({"$ref": "#"});
 *   TG_E_SCHEMA_REF      a $ref outside the document, to an anchor, or to
 *                        nothing;
 *   TG_E_PATTERN         a pattern PCRE2 cannot compile;
 *   TG_E_PATTERN_TOO_LONG a pattern longer than the engine's
 *                        max_pattern_bytes (checked before PCRE2 sees it);
 *   TG_E_UNSUPPORTED_FORMAT with assert_formats, a format toolgate does not
 *                        assert and annotation_formats does not list
 *                        (pointer: the format keyword);
 *   TG_E_NOMEM.
 * Free with tg_schema_free(). */
TG_API int tg_schema_compile(tg_engine_t *e, const tg_value_t *v, const tg_schema_options_t *opt,
                             tg_schema_t **out, tg_error_t *err);
TG_API void tg_schema_free(tg_schema_t *s);

/* Finding codes: which rung check a failed keyword belongs to. */
enum tg_finding_code {
    TG_H2 = 2, /* an undeclared key (closed world, additionalProperties:
                * false) or a missing one (required, dependentRequired) */
    TG_H3 = 3  /* a value fails its type / enum / const / range / length /
                * pattern / format / combinator check */
};

#define TG_FINDING_POINTER_MAX 256
#define TG_FINDING_MESSAGE_MAX 200

/* One reason an instance fails its schema. */
typedef struct tg_finding_t {
    int code;                             /* TG_H2 or TG_H3 */
    const char *keyword;                  /* static string: "required", "type", "closed", ... */
    char pointer[TG_FINDING_POINTER_MAX]; /* instance location */
    char schema_pointer[TG_FINDING_POINTER_MAX]; /* schema location */
    char message[TG_FINDING_MESSAGE_MAX];        /* for a person */
} tg_finding_t;

/* Validates v against s.  Writes the first max findings validation meets
 * into findings, all H2 before all H3 among them (each kind in the order
 * met), and their number into *count; validation stops once it has max
 * findings, since nothing later could change them.  *count == 0 means
 * valid, so max must be at least 1 (TG_E_ARG otherwise).  anyOf, oneOf and
 * not report one finding each, not their branches'.  Returns TG_OK when
 * validation ran to the end or to max findings (valid or not), or
 * TG_E_REGEX_LIMIT (a pattern match reached regex_match_limit),
 * TG_E_REGEX_BUDGET (the matches of this validation would pass
 * max_regex_steps),
 * TG_E_VALIDATION_LIMIT (more than max_validation_steps units of work:
 * schema nodes evaluated, object members walked, long scalars read, enum
 * values tried, uniqueItems items sorted and values compared; or schemas
 * nested past a fixed bound of 2048) or TG_E_NOMEM when it could not: then
 * the instance must be treated as invalid (fail closed).  Nothing is
 * allocated except for uniqueItems over arrays of more than 64 items, for
 * closed groups whose declared keys depend on which anyOf / oneOf branch
 * validates (freed before returning) and, once per engine, PCRE2's match
 * data. */
TG_API int tg_validate(tg_engine_t *e, const tg_schema_t *s, const tg_value_t *v,
                       tg_finding_t *findings, size_t max, size_t *count, tg_error_t *err);

/* ------------------------------------------------------------------------ */
/* Tool calls in the formats users have                                      */
/* ------------------------------------------------------------------------ */

/* The format a line is read as: a family of shapes (below). */
enum tg_call_format {
    TG_FORMAT_AUTO = 0, /* detect the family by the members only it defines (below) */
    TG_FORMAT_NATIVE,   /* {"server": "fs", "name": "read", "arguments": {...}} (server optional) */
    TG_FORMAT_OPENAI,   /* {"type": "function", "function": {"name", "arguments": "<JSON text>"}} */
    TG_FORMAT_ANTHROPIC, /* {"type": "tool_use", "name", "input": {...}} */
    TG_FORMAT_MCP /* {"jsonrpc": "2.0", "method": "tools/call", "params": {"name", "arguments"}} */
};

/* The shape a line was read as; tg_call_shape_name gives the name the
 * decisions report ("format").  A shape holds zero or more calls. */
enum tg_call_shape {
    TG_SHAPE_NATIVE = 0,           /* "native": one native call */
    TG_SHAPE_OPENAI,               /* "openai": one Chat Completions tool call */
    TG_SHAPE_OPENAI_TOOL_CALLS,    /* "openai-tool-calls": a bare array of them */
    TG_SHAPE_OPENAI_MESSAGE,       /* "openai-message": an assistant message */
    TG_SHAPE_OPENAI_CHAT,          /* "openai-chat": a whole chat.completion */
    TG_SHAPE_OPENAI_FUNCTION_CALL, /* "openai-function-call": one Responses API item */
    TG_SHAPE_OPENAI_RESPONSES,     /* "openai-responses": a whole Responses API response */
    TG_SHAPE_ANTHROPIC,            /* "anthropic": one tool_use block */
    TG_SHAPE_ANTHROPIC_MESSAGE,    /* "anthropic-message": a whole Messages response */
    TG_SHAPE_MCP,                  /* "mcp": one tools/call request */
    TG_SHAPE_MCP_BATCH             /* "mcp-batch": a JSON-RPC batch of them */
};

/* A decoded call.  It owns the parsed line (and any parsed arguments
 * string); the accessors' results live as long as the call. */
typedef struct tg_call_t tg_call_t;
/* The calls one line holds, in order. */
typedef struct tg_calls_t tg_calls_t;

/* Parses one line in the given format (TG_FORMAT_AUTO: detected) and finds
 * every call it holds, each with its server, name, arguments and id.
 *
 * Shapes, by family (the SDK types they follow: npm openai 6,
 * @anthropic-ai/sdk 1, @modelcontextprotocol/sdk 1):
 *   native     an object {server?, name, arguments, id?}.
 *   OpenAI     a tool call (ChatCompletionMessageFunctionToolCall)
 *              {id?, type?: "function", function: {name, arguments}};
 *              a bare array of tool calls; an assistant message
 *              (ChatCompletionMessage: an object with tool_calls,
 *              function_call, refusal or role) whose tool_calls are its
 *              calls; a chat.completion ("object": "chat.completion"):
 *              the calls of choices[].message, every choice in order; a
 *              Responses API function_call item (ResponseFunctionToolCall)
 *              {type: "function_call", call_id, name, arguments, id?,
 *              status?, caller?, namespace?}; a Responses API response
 *              ("object": "response"): its output[] function_call items.
 *   Anthropic  a tool_use block (ToolUseBlock, and ToolUseBlockParam's
 *              cache_control) {type: "tool_use", id?, name, input,
 *              caller?, toolset_name?, cache_control?}; a Messages
 *              response ("type": "message"): its content[] tool_use
 *              blocks.
 *   MCP        a JSON-RPC 2.0 request {jsonrpc: "2.0", id?, method:
 *              "tools/call", params: {name, arguments?, _meta?, task?}};
 *              a JSON-RPC batch (an array of them; MCP 2025-03-26 has
 *              batches, later revisions dropped them).
 * A call object is read strictly: a member its type does not define is
 * TG_E_BAD_CALL naming it ('unknown member "args" in a native call');
 * members that are not read (id, type, status, caller, cache_control,
 * _meta, task) are only allowed.  The root object of a one-call line may
 * also have "context", which decoding does not judge (tg_call_context).
 * Required: the name (a non-empty string); native "arguments", OpenAI
 * "function.arguments" and "arguments", Anthropic "input" (missing:
 * TG_E_BAD_CALL).  MCP's params.arguments is optional (the MCP schema
 * says so); absent, the arguments are {}.  OpenAI arguments are a JSON
 * string holding an object, parsed under the engine's limits (an object
 * is taken too); everywhere else arguments must be an object.  The
 * server: native "server", a Responses item's "namespace", a tool_use
 * block's "toolset_name" (null: none); elsewhere none.  The id: native,
 * OpenAI tool call, tool_use "id"; a Responses item's "call_id" (what its
 * function_call_output answers); the JSON-RPC "id".
 *
 * Envelopes: only the members that hold calls are read, plus those that
 * could hide a call from this reading: a message's role must be
 * "assistant" (absent allowed); an OpenAI message's content a string or
 * null, its function_call absent or null (deprecated function calling is
 * TG_E_UNSUPPORTED_CALL); tool_calls absent or null hold no call.
 * Everything else (id, model, usage, created, choices[].finish_reason,
 * index, logprobs, refusal, annotations, audio, stop_reason, container,
 * Responses metadata, ...) is ignored.  Items of a Responses output[] and
 * blocks of a Messages content[] are told by "type":
 *   calls      function_call; tool_use.
 *   skipped    (no call) message, reasoning, compaction, additional_tools,
 *              mcp_list_tools, mcp_approval_response and every *_output
 *              item; text, thinking, redacted_thinking, container_upload,
 *              compaction, fallback, mcp_tool_listing and every *_result
 *              block.
 *   refused    TG_E_UNSUPPORTED_CALL, the whole line: calls the provider
 *              runs itself (file_search_call, web_search_call,
 *              image_generation_call, code_interpreter_call, mcp_call,
 *              mcp_approval_request, tool_search_call; server_tool_use,
 *              mcp_tool_use), and client calls without JSON arguments
 *              (computer_call, local_shell_call, shell_call,
 *              apply_patch_call, custom_tool_call, program; a Chat
 *              Completions "custom" tool call).  toolgate cannot vouch for
 *              what it does not gate.
 *   other      TG_E_BAD_CALL (an unknown type).
 * A chat.completion.chunk is TG_E_BAD_CALL (a stream's part of a call).
 * A text-only message decodes to zero calls.
 *
 * TG_FORMAT_AUTO: the family is the one whose members the root object
 * has -- MCP: jsonrpc, method, params; OpenAI: function, custom, choices,
 * tool_calls, function_call, refusal, output, call_id, namespace, object,
 * type function / function_call / custom; Anthropic: input, toolset_name,
 * cache_control, type tool_use / message / server_tool_use / mcp_tool_use;
 * native: server, arguments (outside a function_call item); else native
 * when there is a "name".  Members of two families are TG_E_BAD_CALL
 * ("members of both an OpenAI tool call ("function") and an MCP request
 * ("method"): refusing to guess"), never read one way.  An array's
 * elements must all show one family, OpenAI or MCP; an empty array is
 * TG_E_BAD_CALL (under TG_FORMAT_OPENAI it is zero calls, under
 * TG_FORMAT_MCP an empty batch, TG_E_BAD_CALL).  An explicit format reads
 * only its own family's shapes, with the same strict members.
 *
 * The number of calls is bounded by max_input_bytes and max_items.
 * Errors: the JSON codes for a malformed line; TG_E_BAD_CALL when it is no
 * call in the format, or a call object breaks the rules above (err names
 * the member and, inside an envelope, where: "choices[0].message.
 * tool_calls[1]"); TG_E_BAD_ARGUMENTS when arguments are not an object or
 * an arguments string is not valid JSON (err->message includes the inner
 * code and offset); TG_E_UNSUPPORTED_CALL; TG_E_NOMEM; TG_E_ARG for an
 * unknown format.  On error *out is NULL.  Free with tg_calls_free. */
TG_API int tg_calls_decode(tg_engine_t *e, const char *json, size_t len, int format,
                           tg_calls_t **out, tg_error_t *err);
TG_API void tg_calls_free(tg_calls_t *s);
/* The number of calls, and call i (0 ..), or NULL when i is out of range.
 * A call from tg_calls_at is a view: it lives as long as s, and
 * tg_call_free does nothing to it. */
TG_API size_t tg_calls_count(const tg_calls_t *s);
TG_API const tg_call_t *tg_calls_at(const tg_calls_t *s, size_t i);
/* The shape the line was read as (enum tg_call_shape). */
TG_API int tg_calls_shape(const tg_calls_t *s);
/* "openai-chat", ... (see enum tg_call_shape), or "unknown". */
TG_API const char *tg_call_shape_name(int shape);

/* tg_calls_decode for a line that holds exactly one call (any shape);
 * another count is TG_E_BAD_CALL saying how many calls it holds.
 * tg_call_free frees the call and its line. */
TG_API int tg_call_decode(tg_engine_t *e, const char *json, size_t len, int format, tg_call_t **out,
                          tg_error_t *err);
TG_API void tg_call_free(tg_call_t *c);
/* The family the call was read as (never TG_FORMAT_AUTO), and the shape
 * of the line it came from. */
TG_API int tg_call_format_of(const tg_call_t *c);
TG_API int tg_call_shape(const tg_call_t *c);
/* Server named by the call, or NULL when it names none. */
TG_API const char *tg_call_server(const tg_call_t *c, size_t *len);
/* The tool's name (*len bytes, not NUL-terminated), and the arguments: a
 * JSON object ({} for an MCP call without them), valid while the call
 * lives. */
TG_API const char *tg_call_name(const tg_call_t *c, size_t *len);
TG_API const tg_value_t *tg_call_arguments(const tg_call_t *c);
/* The call's id (see tg_calls_decode), or NULL. */
TG_API const tg_value_t *tg_call_id(const tg_call_t *c);
/* The call object itself, inside its line (the tool call, item, block or
 * request). */
TG_API const tg_value_t *tg_call_object(const tg_call_t *c);
/* The "context" member of the line's root object, whatever the shape, or
 * NULL (decoding neither reads nor refuses it).  The per-call context
 * (granted scopes, allowed risk) comes from the operator, never from the
 * call: a host refuses a call that carries one unless it was told the
 * input is trusted (recorded traffic replayed). */
TG_API const tg_value_t *tg_call_context(const tg_call_t *c);

/* ------------------------------------------------------------------------ */
/* Registries and the Resolution Rung                                        */
/* ------------------------------------------------------------------------ */

/* A set of tools, each (server, name) once, with compiled schemas.  Built
 * by tg_registry_add, then only read: lookups never change it. */
typedef struct tg_registry_t tg_registry_t;

/* An empty registry, or NULL (TG_E_NOMEM in err).  Free with
 * tg_registry_free, which frees the tools' compiled schemas too. */
TG_API tg_registry_t *tg_registry_new(tg_engine_t *e, tg_error_t *err);
TG_API void tg_registry_free(tg_registry_t *r);

/* Adds a tool.  server may be "" (a tool not tied to a server).  input is
 * its input schema, or NULL for a tool that takes no arguments (then only
 * {} is accepted in closed world); output its output schema or NULL.  Both
 * are compiled with opt (NULL: defaults).  The tool's pin, XXH3-128 of the
 * canonical {"description","inputSchema","name","outputSchema"} (absent ones
 * as null), is computed here.  On success *index is the tool's index (0,
 * 1, ... in order of addition).  Errors: TG_E_DUPLICATE_TOOL, the schema
 * compile errors (err->pointer is inside the schema), TG_E_NOMEM; on error
 * the registry is unchanged. */
TG_API int tg_registry_add(tg_registry_t *r, const char *server, size_t server_len,
                           const char *name, size_t name_len, const char *description,
                           size_t description_len, const tg_value_t *input,
                           const tg_value_t *output, const tg_schema_options_t *opt, size_t *index,
                           tg_error_t *err);

/* The number of tools; their indexes are 0 .. count - 1. */
TG_API size_t tg_registry_count(const tg_registry_t *r);
/* Index of (server, name), or -1. */
TG_API long tg_registry_find(const tg_registry_t *r, const char *server, size_t server_len,
                             const char *name, size_t name_len);
/* The tools named name on any server: writes up to max indexes (in order
 * of addition) and returns how many there are in all. */
TG_API size_t tg_registry_find_name(const tg_registry_t *r, const char *name, size_t name_len,
                                    size_t *indexes, size_t max);
/* About tool i (NULL / 0 when i is out of range). */
TG_API const char *tg_registry_server(const tg_registry_t *r, size_t i, size_t *len);
TG_API const char *tg_registry_name(const tg_registry_t *r, size_t i, size_t *len);
TG_API const tg_hash128_t *tg_registry_pin(const tg_registry_t *r, size_t i);
TG_API const tg_schema_t *tg_registry_input_schema(const tg_registry_t *r, size_t i);
TG_API const tg_schema_t *tg_registry_output_schema(const tg_registry_t *r, size_t i);

/* ------------------------------------------------------------------------ */
/* Registry images (core/tg_image.c has the design and the file layout)      */
/* ------------------------------------------------------------------------ */

/* A compiled registry image: one read-only file holding a registry's
 * sources exactly as they were read, with their server, label, absolute
 * path, format, trust and XXH3-128, checked whole (magic, format version,
 * ABI, length, a checksum over every byte, every offset and length) before
 * anything in it is used.  `toolgate registry compile` writes one; every
 * place that takes a registry file takes an image, known by its magic. */
#define TG_IMAGE_VERSION 1u
#define TG_IMAGE_ABI 1u
typedef struct tg_image_t tg_image_t;

/* One source of an image.  Given to tg_image_write (hash ignored: it is
 * computed) or filled by tg_image_source (pointers into the image, valid
 * while it lives; server NULL when none was given; path "" (len 0) for a
 * source compiled from a text).  format: 0 auto, 1 native, 2 openai,
 * 3 anthropic, 4 mcp. */
typedef struct tg_image_source_t {
    const char *text;
    size_t text_len;
    const char *server;
    size_t server_len;
    const char *label;
    size_t label_len;
    const char *path;
    size_t path_len;
    int format;
    int trusted;
    tg_hash128_t hash;
} tg_image_source_t;

/* Appends the image of n sources to out (TG_E_ARG for a bad source,
 * TG_E_NOMEM).  The caller writes the bytes where it wants them. */
TG_API int tg_image_write(tg_engine_t *e, const tg_image_source_t *sources, size_t n, tg_buf_t *out,
                          tg_error_t *err);
/* Whether data starts with an image's magic (a registry file that is not
 * JSON text). */
TG_API int tg_image_is(const void *data, size_t len);
/* Opens the image in data[0..len), which the caller keeps alive and
 * unchanged while the image lives (nothing is copied).  TG_E_IMAGE for
 * anything malformed (err says what and where), TG_E_REGISTRY_TOO_LARGE
 * past max_registry_bytes, TG_E_NOMEM.  Free with tg_image_free. */
TG_API int tg_image_open(tg_engine_t *e, const void *data, size_t len, tg_image_t **out,
                         tg_error_t *err);
/* Maps the file at path read-only (shared pages) and opens it as
 * tg_image_open does; the mapping goes with tg_image_free.  TG_E_IO when
 * the file cannot be opened or mapped. */
TG_API int tg_image_map(tg_engine_t *e, const char *path, tg_image_t **out, tg_error_t *err);
TG_API void tg_image_free(tg_image_t *img);
/* The number of sources, and source i (TG_E_ARG out of range). */
TG_API size_t tg_image_count(const tg_image_t *img);
TG_API int tg_image_source(const tg_image_t *img, size_t i, tg_image_source_t *out);
/* TG_E_IMAGE_STALE when a source file still at its recorded path no longer
 * has the bytes the image holds (or cannot be read to tell); a path with
 * no file there is no staleness: the image stands alone.  TG_OK. */
TG_API int tg_image_check_sources(const tg_image_t *img, tg_error_t *err);

/* How a call's (server, name) resolved. */
enum tg_resolution {
    TG_RESOLVED = 0, /* exactly one tool */
    TG_UNKNOWN,      /* H1: no such tool (on that server) */
    TG_AMBIGUOUS     /* H1: a bare name that several servers expose */
};

#define TG_RUNG_MAX_FINDINGS 16

typedef struct tg_rung_result_t {
    int resolution;                          /* enum tg_resolution */
    size_t tool;                             /* index of the resolved tool */
    size_t n_candidates;                     /* TG_AMBIGUOUS: tools with that name (all of them) */
    size_t candidates[TG_RUNG_MAX_FINDINGS]; /* the first ones, in order of addition */
    size_t n_findings;                       /* H2/H3 findings written, most severe first */
    tg_finding_t findings[TG_RUNG_MAX_FINDINGS];
    size_t n_also; /* H5: other tools whose input schemas accept the arguments */
    size_t also[TG_RUNG_MAX_FINDINGS]; /* the first ones, in order of addition */
} tg_rung_result_t;

/* The Resolution Rung on one call: resolves (server, name) in r (server
 * NULL: a bare name, resolved only when exactly one server has it), then
 * validates args against the tool's input schema.  With report_also set and
 * a valid call, also lists the other tools whose input schemas accept args
 * (H5: a tool-selection signal, never a verdict).  Returns TG_OK when the
 * check ran (read the verdict from *out), or an error (validation limits,
 * NOMEM): then the call must be refused. */
TG_API int tg_rung_check(tg_engine_t *e, const tg_registry_t *r, const char *server,
                         size_t server_len, const char *name, size_t name_len,
                         const tg_value_t *args, int report_also, tg_rung_result_t *out,
                         tg_error_t *err);

/* ------------------------------------------------------------------------ */
/* Hashing (XXH3, seed 0)                                                    */
/* ------------------------------------------------------------------------ */

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
TG_API int tg_hash_value(tg_engine_t *e, const tg_value_t *v, tg_hash128_t *out, tg_error_t *err);

/* ------------------------------------------------------------------------ */
/* Normalized canonical form (x-toolgate-canonical)                          */
/* ------------------------------------------------------------------------ */

/* A normalization plan: which string values of an instance are rewritten
 * before canonicalization, so that spellings of one thing that mean the same
 * ("/tmp//a/", " /tmp/a", "/TMP/A" under lower) canonicalize, and so hash,
 * alike.  Built by tg_norm_add_rule / tg_norm_add_alias, then only read:
 * one plan serves any number of documents.  It owns copies of everything
 * added to it, allocated from its engine, which it keeps alive (free the
 * plan and the engine in either order). */
typedef struct tg_norm_t tg_norm_t;

/* The operations a rule applies to a string, always in this order (the
 * order of the values), whatever order the bits were given in:
 *   TG_NORM_TRIM   removes leading and trailing ASCII whitespace: space,
 *                  \t, \n, \v, \f, \r (nothing else: no U+00A0, no
 *                  Unicode spaces);
 *   TG_NORM_LOWER  maps the ASCII letters A-Z to a-z; every other byte,
 *                  and so every non-ASCII character, is left as it is (no
 *                  Unicode case mapping: "\u00c9" stays "\u00c9");
 *   TG_NORM_PATH   lexical POSIX path normalization, the rules of Go's
 *                  path.Clean; the file system is never consulted:
 *                  each run of "/" becomes one "/" (a leading "//" too:
 *                  "//a" is "/a", "//" is "/", as Linux resolves them,
 *                  not POSIX's implementation-defined double slash);
 *                  "." segments go; ".." removes the segment before it
 *                  ("/a/b/.." is "/a"), stays at the root of an absolute
 *                  path ("/.." and "/../a" are "/" and "/a") and is kept
 *                  when a relative path has nothing left to remove ("a/../.."
 *                  is "..", "../a" stays "../a"); a trailing "/" goes
 *                  ("a/" is "a") but "/" stays "/"; "" (and anything that
 *                  comes to nothing, like "a/..") becomes ".".  Bytes other
 *                  than '/' and '.' are never changed ("a\\b" keeps its
 *                  backslash);
 *   TG_NORM_ID     replaces a string that is exactly an alias's from (after
 *                  the operations before it) by its to; strings with no
 *                  alias stay as they are.  One lookup, never transitive.
 * All four keep valid UTF-8 valid. */
enum tg_norm_op {
    TG_NORM_TRIM = 1,
    TG_NORM_LOWER = 2,
    TG_NORM_PATH = 4,
    TG_NORM_ID = 8
};

/* Makes an empty plan (canonicalizing with it is plain canonicalization).
 * NULL and err filled when e is NULL (TG_E_ARG) or memory runs out
 * (TG_E_NOMEM).  Free with tg_norm_free(). */
TG_API tg_norm_t *tg_norm_new(tg_engine_t *e, tg_error_t *err);
TG_API void tg_norm_free(tg_norm_t *n);

/* Adds a rule: string values at the instance locations matching pattern get
 * the operations ops (a nonzero combination of TG_NORM_* bits).  pattern
 * (len bytes, need not be NUL-terminated) is a JSON Pointer (RFC 6901: ""
 * is the root, "/a/b" member b of member a, ~0 and ~1 stand for '~' and
 * '/'), in which a segment written exactly "*" matches any member key or
 * any array index (a key that really is "*" can only be reached by the
 * wildcard, which matches it too).  A segment matches an array element when
 * it is the element's index written as RFC 6901 does (decimal, no leading
 * zero: "01" never matches an index).  Patterns match whole pointers: "/a"
 * does not touch "/a/b".  When several rules match one location their
 * operations are combined (still applied in the fixed order above).
 * Values that are not strings are never changed, nor are object keys.
 * Errors (the plan is then unchanged): TG_E_ARG for ops of 0 or with
 * unknown bits, a pattern that is not "" and does not start with '/', a
 * '~' not followed by '0' or '1', or a pattern longer than
 * TG_FINDING_POINTER_MAX bytes; TG_E_NOMEM. */
TG_API int tg_norm_add_rule(tg_norm_t *n, const char *pattern, size_t len, unsigned ops,
                            tg_error_t *err);

/* Adds an alias for TG_NORM_ID: the string from (flen bytes) resolves to to
 * (tlen bytes).  from is compared bytewise with the value as the earlier
 * operations left it, so register it in that form (lower case under
 * TG_NORM_LOWER, ...).  Lookup is a hash table keyed by XXH3-64
 * (tg_hash64), O(1) per string.  Adding the same pair again changes
 * nothing.  Errors (the plan is then unchanged): TG_E_ARG when from already
 * resolves to a different id (one id cannot mean two things) or when from
 * or to is not valid UTF-8 (TG_E_UTF8 is not used: the bytes come from the
 * caller, not from a document); TG_E_NOMEM. */
TG_API int tg_norm_add_alias(tg_norm_t *n, const char *from, size_t flen, const char *to,
                             size_t tlen, tg_error_t *err);

/* Applies ops (TG_NORM_* bits; TG_NORM_ID looks up the aliases of plan n,
 * which may be NULL when ops has no TG_NORM_ID) to the string s (len bytes)
 * and appends the result to out.  What a rule would make of one value: a
 * Lua resolver can see an ID in the form aliases are matched in.  TG_OK,
 * TG_E_ARG, TG_E_NOMEM. */
TG_API int tg_norm_string(const tg_norm_t *n, unsigned ops, const char *s, size_t len,
                          tg_buf_t *out, tg_error_t *err);

/* Appends the canonical form of v that mode names (TG_CANON_RFC8785 or
 * TG_CANON_EXACT, see tg_canon_value_mode) to out, with the string values
 * that plan n's rules select rewritten first (object keys never are).  n
 * NULL, or a plan with no rules, gives exactly tg_canon_value_mode's bytes.
 * Subtrees no rule can reach are written as tg_canon_value writes them, so
 * the cost over plain canonicalization is a few comparisons per member on
 * the paths the patterns name; the only allocation is scratch for long
 * rewritten strings (or plans of many deep rules), freed before return.
 * Errors: those of tg_canon_value, TG_E_ARG (v or out NULL, an unknown
 * mode), TG_E_NOMEM. */
TG_API int tg_canon_normalized(const tg_norm_t *n, const tg_value_t *v, int mode, tg_buf_t *out,
                               tg_error_t *err);

/* ------------------------------------------------------------------------ */
/* Agreement (execution-grounded self-consistency)                           */
/* ------------------------------------------------------------------------ */

/* How far n values agree.  The modal share is modal_count / n. */
typedef struct tg_agreement_t {
    size_t n;              /* values counted */
    size_t distinct;       /* distinct values */
    size_t modal_count;    /* how many hold the most common value */
    size_t representative; /* index of the first value of the modal group; when
                            * several groups are equally common, the group whose
                            * first member comes first */
} tg_agreement_t;

/* Agreement of n 128-bit values (n >= 1), typically tg_hash_value digests
 * of the samples' canonical arguments, or of their results.  O(n log n): a
 * stable sort of a scratch copy of (value, index) pairs, on the C stack for
 * n <= 32; above that one allocation (2n pairs and a table of about n, at
 * most 2^16, bucket counters) freed before return, and a counting pass on
 * the values' top bits first, which leaves digests (uniform) a value or two
 * per bucket to sort.  Errors: TG_E_ARG (e, values or out NULL, n == 0),
 * TG_E_NOMEM. */
TG_API int tg_agree(tg_engine_t *e, const tg_hash128_t *values, size_t n, tg_agreement_t *out,
                    tg_error_t *err);

/* Agreement at one JSON Pointer. */
typedef struct tg_pointer_agreement_t {
    char pointer[TG_FINDING_POINTER_MAX]; /* NUL-terminated; a pointer that does not
                                           * fit is cut after its last whole segment
                                           * that leaves room for "/...", then "/..." */
    size_t agree;   /* documents whose value there equals the representative's (a
                     * document where both are absent counts as agreeing) */
    size_t present; /* documents that have a value there */
} tg_pointer_agreement_t;

/* Per-argument agreement, so a person sees which value was made up.  For
 * every JSON Pointer at which one of the n documents docs[0..n) has a leaf
 * (a scalar, {} or []), counts the documents that have a value there
 * (present) and those whose value there equals document rep's (agree;
 * where rep has no value, the documents that have none either).  Values,
 * leaves or not, are compared by their canonical form in TG_CANON_EXACT
 * with plan applied (plan NULL: none), as argument digests compare them:
 * 1 and 1.0 agree, 2^53 and 2^53 + 1 do not, and "/a/" and "/a" agree
 * under a TG_NORM_PATH rule; at a pointer where one document has a leaf and
 * another an object or array, those two disagree.  Pointers are the same
 * when their text is ({"0": x} and [x] share "/0").
 * Writes the first min(max, count) pointers, ordered by agree ascending and
 * then by the pointers' full text bytewise, into out (which may be NULL when
 * max is 0) and stores the number of such pointers in *count.
 * Cost: O(V) expected for V values in all (each pointer is interned once
 * in a hash table; a document that repeats the previous one's structure
 * costs a key comparison per value), plus O(P log P) comparisons to order
 * the P leaf pointers (each O(depth)).  Memory: O(distinct pointers), not
 * O(documents), in a few scratch arrays whose first blocks (about 5 KB)
 * are on the C stack, so a handful of small documents allocates nothing;
 * all freed before return.  The documents may come from any documents and
 * engines; e only lends the scratch memory.  Errors: TG_E_ARG (e, docs, a
 * docs[i] or count NULL, rep >= n, out NULL with max > 0), TG_E_NOMEM. */
TG_API int tg_pointer_agreement(tg_engine_t *e, const tg_value_t *const *docs, size_t n, size_t rep,
                                const tg_norm_t *plan, tg_pointer_agreement_t *out, size_t max,
                                size_t *count, tg_error_t *err);

/* ------------------------------------------------------------------------ */
/* Sampled plans                                                             */
/* ------------------------------------------------------------------------ */

/* What one pass over a single-tool plan's samples counts. */
typedef struct tg_plan_summary_t {
    size_t n;                            /* samples */
    tg_agreement_t args;                 /* agreement of the normalized exact canonical arguments */
    tg_agreement_t results;              /* agreement of the canonical results (plain RFC 8785) */
    int epochs_equal;                    /* every sample has an "epoch", all equal (canonically) */
    size_t n_failed;                     /* samples whose arguments fail the tool's input schema */
    size_t failed[TG_RUNG_MAX_FINDINGS]; /* the first of them (indexes from 0) */
    size_t at;                           /* after an error: the sample it stopped at (from 0) */
    tg_hash128_t rep_args;               /* the hash counted of the representative's arguments */
} tg_plan_summary_t;

/* Summarizes samples, an array of {"arguments", "result", "epoch"} of a
 * plan that calls tool (an index of r, or -1 when the tool's name did not
 * resolve: then every sample fails), in one pass: each sample's arguments
 * through the tool's input schema, their canonical form (TG_CANON_EXACT:
 * the form args_digest hashes) normalized by norm (NULL: none) and hashed,
 * the result's canonical hash (plain RFC 8785, as a probe hashes results;
 * a missing result hashes as a stand-in unlike any JSON), the epochs
 * (plain RFC 8785), then tg_agree on arguments and on results.  n == 0
 * leaves the agreements zero.  Errors:
 * TG_E_BAD_CALL (samples not an array, a sample not an object),
 * TG_E_BAD_ARGUMENTS (a sample without an "arguments" object; err names the
 * sample), the validation limits, TG_E_NOMEM; then nothing may be concluded
 * from *out but at, the sample it stopped at. */
TG_API int tg_plan_summarize(tg_engine_t *e, const tg_registry_t *r, long tool,
                             const tg_norm_t *norm, const tg_value_t *samples,
                             tg_plan_summary_t *out, tg_error_t *err);

/* ------------------------------------------------------------------------ */
/* Policies compiled for the core, contexts, and decisions                   */
/* ------------------------------------------------------------------------ */

/* A policy's built-in parts, compiled for one registry: the stage order,
 * the gate's risk order and rule, the verifier's and self-consistency's
 * settings, the policy's version, and each tool's contract as the gate
 * and the verifier read it.  Built once when a policy and registry load
 * (the Lua side works out the description from the policy file and the
 * registry, mappings and all); then only read, by any number of checks.
 * The registry must outlive it.
 *
 * The description is one JSON object:
 *   {"version": "default@1+...",          policy_version of every decision
 *    "registry_hash": "<32 hex>",         registry_hash of every decision
 *    "stages": [{"stage": "rung"}, {"stage": "gate"[, "custom": true]},
 *               {"stage": "verifier"}, {"stage": "consistency"},
 *               {"stage": "custom", "name": "...", "code": "..."}, ...],
 *    "risk_levels": ["none", "low", ...],  lowest first, at least one
 *    "report_also": false, "require_contract": false,
 *    "on_mismatch": "reject"|"defer", "on_error": "reject"|"defer",
 *    "requires_approval": false,
 *    "consistency": {"min_samples": 5, "max_samples": 10000,
 *                    "arg_accept": 0.8, "arg_reject": 0.2,
 *                    "result_accept": 0.8, "result_quarantine": 0.5,
 *                    "on_invalid": "defer"|"reject"},
 *    "tools": [{"risk": "low", "scopes": [...], "effects": [...],
 *               "deterministic": true, "has_output": true,
 *               "refuse": {"code": "SHADOWED", "message": "..."},
 *               "resolve": [{"pattern": "/account", "pre": ["trim"],
 *                            "resolver": "accounts"}, ...]}, ...]}
 * with "tools" in registry index order, one per tool (fields optional:
 * no risk declared, no scopes, ...).  "consistency" holds the decision
 * table's thresholds (tg_consistency_t; absent members, or no
 * "consistency", take the TG_DEFAULT_* values; thresholds lie in [0, 1],
 * arg_reject <= arg_accept, 1 <= min_samples <= max_samples <= 2^31 - 1).
 * A tool's "deterministic" is its contract's declaration (absent: none);
 * "resolve" lists its x-toolgate-canonical "id" rules whose IDs a policy
 * function resolves (tg_classify asks the host): the instance pattern (a
 * JSON Pointer, "*" for any member or element), the operations applied
 * before the lookup ("trim", "lower", "path"), and the resolver's name.
 * A gate with "custom": true (the policy's own admissible function) and
 * every custom stage are run by the host (see tg_check).  The description
 * holds an entry per tool, so it is bounded by max_registry_bytes, as a
 * registry file is, not by max_input_bytes.  Errors: TG_E_ARG for a
 * description that does not say what the core needs (err names the
 * field), the JSON codes, TG_E_NOMEM. */
typedef struct tg_policy_t tg_policy_t;
TG_API int tg_policy_new(tg_engine_t *e, const tg_registry_t *r, const char *json, size_t len,
                         tg_policy_t **out, tg_error_t *err);
TG_API void tg_policy_free(tg_policy_t *p);

/* Gives tool (a registry index) its normalization plan: the
 * x-toolgate-canonical rules and aliases its argument digests are taken
 * under in tg_classify (a tool without one has its arguments compared as
 * they are).  Part of building the policy: call it before the policy's
 * first use, from one thread.  The plan is only read, and must outlive the
 * policy.  Errors: TG_E_ARG (p NULL, tool out of range). */
TG_API int tg_policy_set_norm(tg_policy_t *p, size_t tool, const tg_norm_t *norm, tg_error_t *err);

/* A per-call context (what the operator grants), compiled for a policy:
 * the JSON object the host passes, of which the core reads "scopes" (a
 * list of granted scope names; anything else grants none), "max_risk" (a
 * level of the policy's risk order; a name outside it refuses every call
 * that reaches the gate, saying so), "epoch" (any JSON value, bound into
 * every defer) and "server" (for calls that name none).  Other members are
 * the host's (a policy function may read them).  Compile once, use for any
 * number of checks; the policy must outlive it.  Errors: TG_E_ARG (not an
 * object), the JSON codes, TG_E_NOMEM. */
typedef struct tg_context_t tg_context_t;
TG_API int tg_context_new(const tg_policy_t *p, const char *json, size_t len, tg_context_t **out,
                          tg_error_t *err);
TG_API void tg_context_free(tg_context_t *c);

/* The work space of checks: the call being decided and its decision.  One
 * per engine and thread; reused by every check (nothing is allocated per
 * call once it has grown to the largest call seen). */
typedef struct tg_decider_t tg_decider_t;
TG_API tg_decider_t *tg_decider_new(tg_engine_t *e, tg_error_t *err);
TG_API void tg_decider_free(tg_decider_t *d);

enum tg_verdict {
    TG_ACCEPT = 0,
    TG_REJECT,
    TG_DEFER
};

/* What a check step returns (tg_outcome_t.status). */
enum tg_check_status {
    TG_DECIDED = 0,   /* json holds the decision */
    TG_NEEDS_STAGE,   /* the stage at index `pending` must run in the host:
                       * answer with tg_check_answer */
    TG_NO_MORE_CALLS, /* every call of the text has been decided */
    TG_NEEDS_RESOLVE, /* tg_classify: an ID for a policy function to
                       * resolve (tg_classify_query): answer with
                       * tg_classify_resolve */
    TG_NEEDS_STORE    /* tg_classify: the determinism record of a tool
                       * (tg_classify_store_tool) from the host's store:
                       * answer with tg_classify_record */
};

typedef struct tg_outcome_t {
    int status;       /* enum tg_check_status */
    int verdict;      /* TG_DECIDED: enum tg_verdict */
    const char *json; /* TG_DECIDED: the decision as canonical JSON, in
                       * the TG_CANON_EXACT form (an echoed id keeps every
                       * digit), json_len bytes, then a NUL; valid until
                       * the next call on the decider */
    size_t json_len;
    const char *code;  /* TG_DECIDED: the decision's code, "" for an accept */
    const char *stage; /* TG_DECIDED: the stage that decided */
    size_t pending;    /* TG_NEEDS_STAGE: index in the policy's stages */
} tg_outcome_t;

/* Flags of tg_check. */
#define TG_CHECK_TRUST_CONTEXT                                                                     \
    1 /* a call's own "context" member is merged over                                              \
       * ctx (replayed traffic the host trusts);                                                   \
       * without it such a call is refused,                                                        \
       * CONTEXT_IN_CALL */
#define TG_CHECK_PAUSE                                                                             \
    2 /* return TG_NEEDS_STAGE before every stage, the                                             \
       * built-in ones too (a host tracing each                                                    \
       * stage); answer a built-in one with                                                        \
       * TG_RUN_IN_CORE */

#define TG_CHECK_ONE                                                                               \
    4 /* the text must hold exactly one call: another                                              \
       * count is refused, BAD_CALL saying how many                                                \
       * (a host that gives one decision a text) */

/* tg_check_answer's verdict for a built-in stage shown under TG_CHECK_PAUSE:
 * the core runs it. */
#define TG_RUN_IN_CORE (-2)

/* Runs policy p's pipeline on the first call the text json holds (its
 * shapes and formats as tg_calls_decode's) under context ctx (NULL: an
 * empty one) and writes the decision; tg_check_next decides the text's
 * next calls.  A decision of a decoded text says its shape ("format") and,
 * when it is a call's, which call ("index", from 0); a text that does not
 * decode, or a refused context (the text's, so every call's), gives one
 * decision and no call follows.  A text of no call (a text-only message)
 * returns TG_NO_MORE_CALLS at once, with no decision.  The built-in
 * stages run here; a custom stage or a policy gate function
 * makes it return TG_NEEDS_STAGE, and the host answers with
 * tg_check_answer, which goes on from there.  line > 0 is written into the
 * decision as "line".  Whatever goes wrong in the engine ends in a reject
 * or the policy's on_error verdict, never an accept.  Returns TG_OK (read
 * *out) or TG_E_NOMEM / TG_E_ARG (then nothing was decided: the host must
 * refuse the call). */
TG_API int tg_check(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx,
                    const char *json, size_t len, int format, int flags, size_t line,
                    tg_outcome_t *out, tg_error_t *err);

/* Decides the next call of the same text once the one in progress is
 * decided (TG_E_ARG while it waits for the host): like tg_check;
 * TG_NO_MORE_CALLS after the last. */
TG_API int tg_check_next(tg_decider_t *d, tg_outcome_t *out, tg_error_t *err);

/* The host's answer for the pending stage: verdict -1 passes it, else
 * TG_REJECT or TG_DEFER with code and message (len bytes each; bytes that
 * are not well-formed UTF-8 are dropped from what is written); for a
 * built-in stage shown under TG_CHECK_PAUSE, TG_RUN_IN_CORE.  Goes on with
 * the next stage; returns like tg_check. */
TG_API int tg_check_answer(tg_decider_t *d, int verdict, const char *code, size_t code_len,
                           const char *message, size_t message_len, tg_outcome_t *out,
                           tg_error_t *err);

/* Decides every complete line of a chunk of JSON Lines in one call: text
 * holds len bytes, of which the lines that end in '\n' are read (a final
 * line without one is left for the next chunk: give it a '\n' at the end
 * of the input).  Each line counts in *line (blank lines too, so numbers
 * match a text editor's); a line of only JSON whitespace is skipped; every
 * other line is decided as tg_check decides it, with its number, every
 * call of it in turn (tg_check_next), and each decision and a '\n' are
 * appended to out (none for a line of no call).  verdicts[0..2] count the
 * accepts, rejects and defers appended.  *used is the number of bytes
 * read.  Returns TG_OK with out->status TG_NO_MORE_CALLS when every
 * complete line is done, or TG_NEEDS_STAGE when a line's call waits for
 * the host: answer with tg_check_answer (its decision is then in
 * out->json, for the host to append), then call again from *used (the
 * line's next calls are decided first).  An
 * error (TG_E_NOMEM) leaves *used after the line that failed: the host
 * must refuse that line itself. */
TG_API int tg_check_lines(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx,
                          const char *text, size_t len, int format, int flags, size_t *line,
                          size_t *used, tg_buf_t *out, size_t verdicts[3], tg_outcome_t *o,
                          tg_error_t *err);

/* Threads that decide the lines of a chunk together.  A policy, its
 * registry and a context are only read once built, so several threads may
 * decide against them at once, each with an engine and a decider of its
 * own; tg_workers_new makes threads - 1 of them (the caller's thread is
 * the first worker), each engine with e's limits and allocator (which must
 * then be safe to call from several threads: the default one is).
 * threads is 1 .. TG_MAX_THREADS.  Free with tg_workers_free (joins the
 * threads). */
#define TG_MAX_THREADS 64
typedef struct tg_workers_t tg_workers_t;
TG_API tg_workers_t *tg_workers_new(tg_engine_t *e, size_t threads, tg_error_t *err);
TG_API void tg_workers_free(tg_workers_t *w);
/* Threads of a pool, the caller's included. */
TG_API size_t tg_workers_count(const tg_workers_t *w);
/* The processors online (at least 1): a default for threads. */
TG_API size_t tg_cpu_count(void);

/* tg_check_lines on the workers' threads: the chunk's complete lines cut
 * at line ends into one piece a thread (d, the caller's decider, takes
 * the first), the decisions joined in input order: the same bytes, line
 * numbers and counts as tg_check_lines on d alone.  A policy with stages
 * the host runs, TG_CHECK_PAUSE, or a chunk too small to share is decided
 * on d alone (tg_check_lines exactly); so is a chunk in which a piece
 * failed (it is decided again and stops at the failing line). */
TG_API int tg_check_lines_parallel(tg_workers_t *w, tg_decider_t *d, const tg_policy_t *p,
                                   const tg_context_t *ctx, const char *text, size_t len,
                                   int format, int flags, size_t *line, size_t *used, tg_buf_t *out,
                                   size_t verdicts[3], tg_outcome_t *o, tg_error_t *err);

/* Input read from a file descriptor into a buffer of the core's, for the
 * chunk entry points above, and output written from one: no host string
 * per piece, so pieces can be large enough to share among threads.
 *   tg_reader_new   reads fd (the caller keeps it open and closes it);
 *   tg_reader_open  opens path to read (TG_E_IO saying why it cannot),
 *                   closed by tg_reader_free;
 *   tg_reader_lines reads until the complete lines held (those ending in
 *                   '\n') are at least want bytes, or the input ends
 *                   (a last line without its '\n' gets one); *text and
 *                   *len are those lines, *len 0 at the end of the input;
 *                   a line longer than the buffer grows it; TG_E_IO when
 *                   read(2) fails, TG_E_NOMEM;
 *   tg_reader_take  says that the first used bytes of them were read (the
 *                   *used of tg_check_lines and its kin): they are gone;
 *   tg_write_all    writes len bytes to fd, all of them, or TG_E_IO.
 * TG_E_IO messages say what could not be read or written, and why. */
typedef struct tg_reader_t tg_reader_t;
TG_API tg_reader_t *tg_reader_new(tg_engine_t *e, int fd, tg_error_t *err);
TG_API tg_reader_t *tg_reader_open(tg_engine_t *e, const char *path, tg_error_t *err);
TG_API void tg_reader_free(tg_reader_t *r);
TG_API int tg_reader_lines(tg_reader_t *r, size_t want, const char **text, size_t *len,
                           tg_error_t *err);
TG_API void tg_reader_take(tg_reader_t *r, size_t used);
TG_API int tg_write_all(int fd, const char *data, size_t len, tg_error_t *err);

/* One step of a stream: tg_check_lines (tg_check_lines_parallel when w is
 * not NULL) on the complete lines r holds, read first until they are at
 * least want bytes or the input ends; the bytes read taken from r; out
 * (reset by the caller) written to fd, the decisions of the lines before
 * a failed line included.  Returns as tg_check_lines does (an error: the
 * failed line is taken, *line its number, for the host to refuse, and
 * *end 0).  *end is -1 when reading or writing failed (TG_E_IO, or
 * TG_E_NOMEM for a line the buffer cannot grow to hold): the stream
 * cannot go on; 1 once the input is done and nothing was left to decide;
 * else 0.
 * tg_classify_reader, with the plans, is below tg_classify_lines. */
TG_API int tg_check_reader(tg_workers_t *w, tg_decider_t *d, const tg_policy_t *p,
                           const tg_context_t *ctx, tg_reader_t *r, size_t want, int fd, int format,
                           int flags, size_t *line, tg_buf_t *out, size_t verdicts[3],
                           tg_outcome_t *o, int *end, tg_error_t *err);
/* The same for the other JSON Lines commands, one call per chunk (the line
 * rules of tg_check_lines):
 *   tg_canon_lines     appends each line's RFC 8785 canonical form, or with
 *                      hash set its XXH3-128 as 32 hex digits, and a '\n';
 *   tg_validate_lines  appends each line's verdict against schema as
 *                      {"errors":[{"code","keyword","message","path",
 *                      "schema_path"},...],"line":N,"valid":true|false}
 *                      and a '\n' (at most TG_RUNG_MAX_FINDINGS errors).
 * Both return TG_OK once every complete line is done, or the error of the
 * first line that fails (malformed JSON, a validation limit), with *line its
 * number and *used the bytes through it: report it and call again from
 * *used.  out keeps what the lines before it gave. */
TG_API int tg_canon_lines(tg_engine_t *e, const char *text, size_t len, int hash, size_t *line,
                          size_t *used, tg_buf_t *out, tg_error_t *err);
TG_API int tg_validate_lines(tg_engine_t *e, const tg_schema_t *schema, const char *text,
                             size_t len, size_t *line, size_t *used, tg_buf_t *out,
                             tg_error_t *err);

/* tg_check_reader for them: tg_canon_lines / tg_validate_lines on the
 * complete lines r holds (at least want bytes, as above), out (reset by
 * the caller) written to fd.  Returns TG_OK when every line held is done,
 * or the error of the first that failed (taken; *line its number, the
 * error's offset within it): report it and call again.  *end as for
 * tg_check_reader. */
TG_API int tg_canon_reader(tg_engine_t *e, tg_reader_t *r, size_t want, int fd, int hash,
                           size_t *line, tg_buf_t *out, int *end, tg_error_t *err);
TG_API int tg_validate_reader(tg_engine_t *e, const tg_schema_t *schema, tg_reader_t *r,
                              size_t want, int fd, size_t *line, tg_buf_t *out, int *end,
                              tg_error_t *err);

/* About the call in progress (for the host running a pending stage): its
 * server (NULL when none), name, arguments, args_digest (32 hex digits and
 * a NUL), the resolved tool's registry index (-1 before the rung resolved
 * it), and the context member the call carried (NULL when none). */
TG_API const char *tg_check_server(const tg_decider_t *d, size_t *len);
TG_API const char *tg_check_name(const tg_decider_t *d, size_t *len);
TG_API const tg_value_t *tg_check_arguments(const tg_decider_t *d);
TG_API const char *tg_check_args_digest(const tg_decider_t *d);
TG_API long tg_check_tool(const tg_decider_t *d);
TG_API const tg_value_t *tg_check_call_context(const tg_decider_t *d);

/* The verdict the stages that ran so far give the call in progress (enum
 * tg_verdict: TG_ACCEPT when none objected; TG_DEFER when one deferred:
 * the later stages still run).  A host stage that spends something only
 * for a call every other stage let through (a quota) asks it. */
TG_API int tg_check_verdict_so_far(const tg_decider_t *d);

/* All of the above in one read, for a binding that pays for each call
 * into the core (LuaJIT's FFI hands a pending stage its call with one). */
typedef struct tg_check_view_t {
    const char *server; /* NULL when none */
    size_t server_len;
    const char *name;
    size_t name_len;
    const tg_value_t *arguments;
    const char *args_digest; /* 32 hex digits and a NUL, NULL when none */
    long tool;               /* -1 before the rung resolved it */
    const tg_value_t *context;
} tg_check_view_t;
TG_API void tg_check_view(const tg_decider_t *d, tg_check_view_t *out);

/* ------------------------------------------------------------------------ */
/* MCP: a client's JSON-RPC message as a gateway reads it                    */
/* ------------------------------------------------------------------------ */

/* What a text or a value is to an MCP gateway (tg_mcp_message_t.kind). */
enum tg_mcp_kind {
    TG_MCP_NOT_JSON = 0, /* tg_mcp_check: the text is not JSON (error says why) */
    TG_MCP_BATCH,        /* tg_mcp_check: an array, a JSON-RPC batch: read each element */
    TG_MCP_NOT_OBJECT,   /* no JSON-RPC message (an element that is no object) */
    TG_MCP_MESSAGE       /* an object: the members below are read */
};

/* An id member (tg_mcp_message_t.id). */
enum tg_mcp_id {
    TG_MCP_ID_NONE = 0, /* no "id" member */
    TG_MCP_ID_OK,       /* a string, or an integer from -(2^53 - 1) to 2^53 - 1 */
    TG_MCP_ID_BAD       /* anything else (null, a fraction, a larger integer, ...) */
};

/* One JSON-RPC message: the members a gateway decides by.  The strings
 * point into the message's document and the reader's texts buffer. */
typedef struct tg_mcp_message_t {
    int kind;                /* enum tg_mcp_kind */
    int id;                  /* enum tg_mcp_id */
    int id_null;             /* the id member is null */
    const char *id_text;     /* the id member's canonical form (TG_CANON_EXACT): */
    size_t id_len;           /* what a request is filed and answered under; NULL: none */
    int method;              /* 0 no "method", 1 a string, 2 another type */
    const char *method_name; /* the method when it is a string (decoded, not NUL-ended) */
    size_t method_len;
    int has_result, has_error; /* a "result" / an "error" member */
    int has_cursor;            /* "params" is an object with a "cursor" */
    /* the era a request claims (MCP 2026-07-28's per-request envelope):
     * params._meta["io.modelcontextprotocol/protocolVersion"] when a string
     * (decoded, not NUL-ended), else NULL: no claim, a legacy message */
    const char *protocol_version;
    size_t protocol_version_len;
    /* method "tools/call": the call a gateway decides, on the server given */
    const char *name; /* params.name when a string, else NULL */
    size_t name_len;
    const char *call; /* {"server": .., "name": .., "arguments": ..} (arguments as
                       * written, TG_CANON_EXACT; {} when absent), NUL-ended; NULL
                       * when the message holds no call (call_error says why) */
    size_t call_len;
    const char *call_error; /* NUL-ended, NULL when there is a call */
    /* tg_mcp_check, when it checked the call (checked): the tool the rung
     * resolved (-1: none yet) and the arguments' digest (32 hex digits and a
     * NUL, "" when none), as tg_check_tool and tg_check_args_digest say */
    int checked;
    long tool;
    char args_digest[TG_HASH_HEX];
    tg_error_t error; /* TG_MCP_NOT_JSON: the parse error */
} tg_mcp_message_t;

/* Reads message msg (any value) as an MCP gateway does.  With a server
 * (server_len bytes; NULL for none) a tools/call's call is written for it
 * into texts (appended), where the id's canonical form goes too; m's
 * strings live as long as msg's document and texts' contents.  Errors:
 * TG_E_ARG (NULL msg, m or texts), TG_E_NOMEM. */
TG_API int tg_mcp_read(const tg_value_t *msg, const char *server, size_t server_len,
                       tg_mcp_message_t *m, tg_buf_t *texts, tg_error_t *err);

/* What a gateway does with one message in one call: parses the text under
 * d's engine's limits, reads the root as tg_mcp_read does (an array is
 * TG_MCP_BATCH, its elements not read; a text that is not JSON is
 * TG_MCP_NOT_JSON with m->error, and TG_OK), and when decide is non-zero
 * and the message is a tools/call request with a valid id and a call,
 * decides that call as tg_check does (format and flags are tg_check's;
 * TG_CHECK_ONE is added), the outcome in *o and m->checked set.  Otherwise
 * o->status is TG_NO_MORE_CALLS.  m's strings live until the next
 * tg_mcp_check on d, or d's end; o's as tg_check's.  Errors: TG_E_ARG, TG_E_NOMEM (the
 * check's errors come with m->checked set: the message was read). */
TG_API int tg_mcp_check(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx,
                        const char *text, size_t len, const char *server, size_t server_len,
                        int format, int flags, int decide, tg_mcp_message_t *m, tg_outcome_t *o,
                        tg_error_t *err);

/* What a model reads about a tools/call a gateway refused or deferred (the
 * text of the CallToolResult with isError), appended to out, NUL-ended (the
 * NUL not counted in out->len).  name: the tool as called; tool: its index
 * in r (-1: none); deferred: the decision is a defer; code, path, message:
 * the decision's (path and message may be NULL); approval_id: a defer's
 * approval (NULL: none); hint: the host's words for how a person acts on
 * it (a defer: how to grant the approval; H4: where the scope or the
 * policy is set; NULL: none).  For H2, H3 and BAD_ARGUMENTS the text says
 * what the tool's input schema accepts: each key (sorted, at most 16) with
 * its type, const or enum values (at most 8), asserted format, bounds,
 * and whether it is required; for QUOTA, that the same call passes once the time
 * its message gives has passed.  Deterministic: the same arguments give the same bytes.
 * Errors: TG_E_ARG (NULL name or out), TG_E_NOMEM. */
TG_API int tg_model_text(const tg_registry_t *r, long tool, const char *name, int deferred,
                         const char *code, const char *path, const char *message,
                         const char *approval_id, const char *hint, tg_buf_t *out, tg_error_t *err);

/* ------------------------------------------------------------------------ */
/* Self-consistency: the decision table                                      */
/* ------------------------------------------------------------------------ */

/* The decision table's thresholds: a policy's "consistency" settings
 * (docs/policies.md, "consistency"). */
typedef struct tg_consistency_t {
    size_t min_samples;       /* fewer samples: INSUFFICIENT_SAMPLES */
    size_t max_samples;       /* a limit, not a row: tg_classify refuses a plan
                               * of more samples (TOO_MANY_SAMPLES) before it
                               * counts anything */
    double arg_accept;        /* argument agreement at least this: agreeing */
    double arg_reject;        /* below this: ARG_DISAGREE or DETERMINISM_UNVERIFIED */
    double result_accept;     /* result agreement at least this: agreeing */
    double result_quarantine; /* below this, on a deterministic tool: RESULT_DISAGREE */
    int on_invalid;           /* TG_DEFER or TG_REJECT: the verdict of the
                               * three conditions of validity (too few samples,
                               * an epoch not fixed, determinism unverified) */
    int quarantine;           /* 1: a RESULT_DISAGREE quarantines the tools'
                               * declarations for the plans that follow; 0:
                               * it only defers (an experiment's switch) */
} tg_consistency_t;

#define TG_DEFAULT_MIN_SAMPLES 5
#define TG_DEFAULT_MAX_SAMPLES 10000
#define TG_LIMIT_MAX_SAMPLES 2147483647 /* max_samples is at most this */
#define TG_DEFAULT_ARG_ACCEPT 0.80
#define TG_DEFAULT_ARG_REJECT 0.20
#define TG_DEFAULT_RESULT_ACCEPT 0.80
#define TG_DEFAULT_RESULT_QUARANTINE 0.50

/* Fills *out with the defaults above (on_invalid: TG_DEFER, quarantine 1). */
TG_API void tg_consistency_default(tg_consistency_t *out);

/* What the table reads of a sampled plan. */
typedef struct tg_plan_features_t {
    size_t n;             /* samples */
    size_t arg_modal;     /* samples holding the most common arguments (their
                           * normalized exact digests; for a plan of several
                           * calls the whole sequence): 1..n, 0 when n is 0 */
    size_t result_modal;  /* the same for the results: 1..n, 0 when n is 0 */
    int epoch_fixed;      /* every sample has the same epoch, or the plan
                           * says so ("epoch_fixed") */
    int deterministic;    /* every call's tool is declared deterministic */
    int nondeterministic; /* some call's tool is declared nondeterministic
                           * (a tool that declares nothing is neither) */
    int verified;         /* every call's tool is declared deterministic and
                           * verified in the plan's epoch (a probe passed,
                           * no quarantine since) */
} tg_plan_features_t;

/* The rows of the table, in the order they are tried. */
enum tg_consistency_row {
    TG_ROW_INSUFFICIENT_SAMPLES = 0, /* n < min_samples: on_invalid */
    TG_ROW_EPOCH_NOT_FIXED,          /* on_invalid */
    TG_ROW_ARG_DISAGREE,             /* arg < arg_reject, verified: reject */
    TG_ROW_DETERMINISM_UNVERIFIED,   /* arg < arg_reject, not verified: on_invalid */
    TG_ROW_NONDETERMINISTIC,         /* arg >= arg_accept, a nondeterministic
                                      * tool: accept (results carry no signal) */
    TG_ROW_RESULT_DISAGREE,          /* arg >= arg_accept, result < result_quarantine,
                                      * deterministic: defer and quarantine */
    TG_ROW_RESULT_UNSTABLE,          /* arg >= arg_accept, result < result_accept: defer */
    TG_ROW_ACCEPT,                   /* arg >= arg_accept, result >= result_accept */
    TG_ROW_ARG_UNSTABLE              /* anything else: defer */
};

typedef struct tg_consistency_verdict_t {
    int verdict;      /* enum tg_verdict */
    int row;          /* enum tg_consistency_row */
    const char *code; /* the row's code ("ARG_DISAGREE", ...), "" for an accept */
    int quarantine;   /* 1 for RESULT_DISAGREE when the settings' quarantine
                       * is on: the declarations of the deterministic tools
                       * whose results disagree are quarantined */
} tg_consistency_verdict_t;

/* The decision table of DESIGN section 1.2, in one place: settings s on
 * features f.  Agreements are the modal shares arg_modal / n and
 * result_modal / n (as doubles); every comparison is the seed's (strict
 * "<" below a threshold).  It reads nothing but its arguments and keeps
 * nothing, so the same features can be decided under any number of
 * settings (threshold sweeps).  Errors: TG_E_ARG (a NULL argument, a modal
 * count above n or 0 with n > 0, on_invalid neither TG_DEFER nor
 * TG_REJECT); *out is then untouched. */
TG_API int tg_consistency_decide(const tg_consistency_t *s, const tg_plan_features_t *f,
                                 tg_consistency_verdict_t *out, tg_error_t *err);

/* ------------------------------------------------------------------------ */
/* The determinism store (in process)                                        */
/* ------------------------------------------------------------------------ */

/* What toolgate remembers about tools' determinism declarations, per
 * (server, tool): the epoch a probe verified it in, and whether it is
 * quarantined (a failed probe, a RESULT_DISAGREE): why, since when, in
 * which epoch.  Epochs are the canonical JSON text of the epoch value
 * ("\"e7\"", "1").  A server of NULL and of "" are the same server.  The
 * Lua side's toolgate.state.memory() wraps one; tg_classify reads and
 * writes it.  Reads may run on several threads at once; writes need the
 * store to themselves. */
typedef struct tg_store_t tg_store_t;
TG_API tg_store_t *tg_store_new(tg_engine_t *e, tg_error_t *err);
TG_API void tg_store_free(tg_store_t *s);

/* A tool's record.  Strings are the store's (not NUL-terminated), valid
 * until the record is next written. */
typedef struct tg_store_record_t {
    const char *verified_epoch; /* NULL: no probe has verified it (since) */
    size_t verified_epoch_len;
    int quarantined;
    const char *reason; /* quarantined: why (the first reason given) */
    size_t reason_len;
    int64_t since;     /* quarantined: when (a Unix time, the writer's) */
    const char *epoch; /* quarantined: the epoch it was caught in, NULL: none */
    size_t epoch_len;
} tg_store_record_t;

/* The record of (server, name): 1 and *out filled, or 0 when the store has
 * none. */
TG_API int tg_store_get(const tg_store_t *s, const char *server, size_t server_len,
                        const char *name, size_t name_len, tg_store_record_t *out);
/* A probe passed in epoch (NULL: none): the verified epoch becomes it, and
 * a quarantine from another epoch is lifted (a pass in the epoch that
 * caught the tool disagreeing proves nothing new).  TG_OK, TG_E_ARG,
 * TG_E_NOMEM (the record is then unchanged). */
TG_API int tg_store_verified(tg_store_t *s, const char *server, size_t server_len, const char *name,
                             size_t name_len, const char *epoch, size_t epoch_len, tg_error_t *err);
/* Quarantines the declaration: the first reason and time stay (that is
 * where a person starts looking), the verified epoch goes.  *changed (may
 * be NULL) says whether it was not quarantined before.  TG_OK, TG_E_ARG,
 * TG_E_NOMEM (the record is then unchanged). */
TG_API int tg_store_quarantine(tg_store_t *s, const char *server, size_t server_len,
                               const char *name, size_t name_len, const char *reason,
                               size_t reason_len, int64_t since, const char *epoch,
                               size_t epoch_len, int *changed, tg_error_t *err);
/* The records, in the order their tools were first written: 0 .. count-1. */
TG_API size_t tg_store_count(const tg_store_t *s);
TG_API int tg_store_at(const tg_store_t *s, size_t i, const char **server, size_t *server_len,
                       const char **name, size_t *name_len, tg_store_record_t *out);

/* ------------------------------------------------------------------------ */
/* Classifying sampled plans                                                 */
/* ------------------------------------------------------------------------ */

/* Self-consistency of one plan sampled several times
 * (docs/self-consistency.md), and its decision, on decider d
 * under policy p and context ctx (NULL: an empty one).  json is the plan
 * in either form:
 *   {"plan_id", "tool": {"server", "name"[, "deterministic", "verified"]},
 *    "samples": [{"arguments", "result", "epoch"}, ...][, "epoch_fixed"]}
 *   {"plan_id", "samples": [{"epoch", "calls": [{"server", "name",
 *    "arguments"}, ...], "results": [...]}, ...][, "epoch_fixed"]}
 * The plan is parsed once.  Every call of every sample goes through the
 * rung; arguments are compared by their exact canonical digests under
 * the tool's normalization plan (tg_policy_set_norm), results by their
 * RFC 8785 digests, epochs by their canonical form; the representative
 * (modal) sample's calls must pass the rung, other samples that fail it
 * are listed ("rung_failures"), and the argument pointers that disagree
 * are named ("disagreeing").  The determinism of the representative's
 * tools (inline declarations in a single-tool plan, the contract, the
 * store) and the agreements go through tg_consistency_decide; a
 * RESULT_DISAGREE quarantines the declarations of the deterministic tools
 * whose results disagree, with since = now.  Unless consistency rejects,
 * the policy's stages then run on each call of the representative sample
 * as tg_check runs them (custom stages and a policy gate rule return
 * TG_NEEDS_STAGE: answer with tg_check_answer), a reject from any of them
 * winning over a defer.  line > 0 is written into the decision; flags as
 * tg_check's (TG_CHECK_PAUSE).
 * store is the in-process store the determinism records are read from and
 * the quarantines written to; NULL means the host keeps them: for each
 * tool whose record the decision needs, in order, the call returns
 * TG_NEEDS_STORE (answer with tg_classify_record), and the quarantines
 * the plan decides are left to the host to write (tg_classify_quarantine).
 * IDs a policy function resolves (a tool's "resolve" rules) come back as
 * TG_NEEDS_RESOLVE, once per distinct ID of the plan, in order (answer
 * with tg_classify_resolve).
 * Whatever goes wrong in the engine ends in a reject or on_error's
 * verdict, never an accept.  Returns TG_OK (read *out: TG_DECIDED or a
 * question for the host) or TG_E_NOMEM / TG_E_ARG (then nothing was
 * decided: the host must refuse the plan). */
TG_API int tg_classify(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx,
                       tg_store_t *store, const char *json, size_t len, int flags, size_t line,
                       int64_t now, tg_outcome_t *out, tg_error_t *err);

/* TG_NEEDS_RESOLVE: the tool (registry index) whose rule found the ID, and
 * (when not NULL) the resolver's name and the ID, as the rule's operations
 * before "id" left it (valid until the next call on d).  -1 when no ID is
 * waiting. */
TG_API long tg_classify_query(const tg_decider_t *d, const char **resolver, size_t *resolver_len,
                              const char **id, size_t *id_len);
/* The host's answer: ok 1 and the canonical ID (len bytes of UTF-8; the
 * same ID: no alias), or ok 0 and why the function failed (the plan then
 * gets on_error's verdict, POLICY_ERROR).  Goes on; returns like
 * tg_classify. */
TG_API int tg_classify_resolve(tg_decider_t *d, int ok, const char *text, size_t len,
                               tg_outcome_t *out, tg_error_t *err);
/* TG_NEEDS_STORE: the tool (registry index) whose record is needed, -1
 * when none is. */
TG_API long tg_classify_store_tool(const tg_decider_t *d);
/* The host's answer: found 0 (no record), or its quarantined flag and
 * verified epoch (NULL: none).  Goes on; returns like tg_classify. */
TG_API int tg_classify_record(tg_decider_t *d, int found, int quarantined,
                              const char *verified_epoch, size_t len, tg_outcome_t *out,
                              tg_error_t *err);
/* After TG_DECIDED: the quarantines the plan decided, in order (written
 * into the store already when tg_classify had one): the tool (registry
 * index), the reason and the epoch (NULL: none), valid until the next call
 * on d; -1 for i out of range. */
TG_API size_t tg_classify_quarantines(const tg_decider_t *d);
TG_API long tg_classify_quarantine(const tg_decider_t *d, size_t i, const char **reason,
                                   size_t *reason_len, const char **epoch, size_t *epoch_len);

/* Classifies every complete line of a chunk of JSON Lines in one call,
 * with the line rules of tg_check_lines (and its arguments).  Returns TG_OK
 * with o->status: TG_NO_MORE_CALLS when every complete line is done; a
 * question for the host (TG_NEEDS_STAGE, TG_NEEDS_RESOLVE, TG_NEEDS_STORE)
 * about the line just read: answer until o->status is TG_DECIDED, append
 * o->json and a '\n', then call again from *used; or TG_DECIDED for a plan
 * whose quarantines the host's store (store NULL) must take before the
 * next plan is decided: append it, write them, call again from *used. */
TG_API int tg_classify_lines(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx,
                             tg_store_t *store, const char *text, size_t len, int flags,
                             int64_t now, size_t *line, size_t *used, tg_buf_t *out,
                             size_t verdicts[3], tg_outcome_t *o, tg_error_t *err);

/* tg_classify_lines on the workers' threads (see tg_check_lines_parallel):
 * the same bytes, line numbers, counts and store as on d alone.  Each
 * piece is classified against the store as the chunk found it, its own
 * quarantines seen by its later plans; the pieces' quarantines are then
 * written in input order, and from the first plan that read the record of
 * a tool an earlier piece quarantined the rest of the chunk is classified
 * again, after them (on every thread once, then on the caller's).  A policy
 * with stages the host runs or resolver functions, TG_CHECK_PAUSE, the
 * host's store (store NULL) or a small chunk is classified on d alone. */
TG_API int tg_classify_lines_parallel(tg_workers_t *w, tg_decider_t *d, const tg_policy_t *p,
                                      const tg_context_t *ctx, tg_store_t *store, const char *text,
                                      size_t len, int flags, int64_t now, size_t *line,
                                      size_t *used, tg_buf_t *out, size_t verdicts[3],
                                      tg_outcome_t *o, tg_error_t *err);

/* tg_check_reader for plans: tg_classify_lines (or its parallel form) on
 * the plans r holds, the decisions written to fd. */
TG_API int tg_classify_reader(tg_workers_t *w, tg_decider_t *d, const tg_policy_t *p,
                              const tg_context_t *ctx, tg_store_t *store, tg_reader_t *r,
                              size_t want, int fd, int flags, int64_t now, size_t *line,
                              tg_buf_t *out, size_t verdicts[3], tg_outcome_t *o, int *end,
                              tg_error_t *err);

/* ------------------------------------------------------------------------ */
/* Threshold sweeps over labeled plans                                       */
/* ------------------------------------------------------------------------ */

/* The features of a batch of labeled plans, gathered once by classify's
 * own pass, then decided under any number of consistency settings
 * without reading the plans again (toolgate sweep, toolgate.experiment).
 *
 * A labeled plan is a plan as tg_classify reads it with two more members:
 *   "label": "correct" | "fabricated"   the plan's ground truth
 *   "tool_labels": [{"server", "name", "deterministic": true|false}, ...]
 *                                        whether tools really are deterministic
 * (both optional; a plan without a label counts apart).
 *
 * What a plan's verdict can depend on is kept per plan: a verdict reached
 * before the decision table (a plan that does not parse, a representative
 * that fails the rung, too many samples: the same at every setting), or
 * the table's features (n, the modal counts, the epoch, each
 * representative call's declaration, inline verification and store record,
 * its result agreement) and what the policy's later stages said of the
 * representative's calls (they run whatever the table says, so a setting
 * under which the table does not reject finds their word).  A run then
 * replays the plans in input order through tg_consistency_decide, the
 * engine's own table: quarantines carry over from plan to plan exactly as
 * tg_classify's do in one process with an in-process store, starting from
 * the store's records as the features pass read them.  So a run gives,
 * plan for plan, the verdict and code tg_classify gives under a policy
 * with those settings. */
typedef struct tg_sweep_t tg_sweep_t;

/* A new, empty sweep for policy p (which must outlive its use; it may be
 * freed after p and the engine, as a garbage collector may).  NULL and err
 * filled when out of memory. */
TG_API tg_sweep_t *tg_sweep_new(const tg_policy_t *p, tg_error_t *err);
TG_API void tg_sweep_free(tg_sweep_t *s);

/* The features pass: every complete line of a chunk of JSON Lines
 * classified on d as tg_classify_lines classifies it (ctx, flags and the
 * line rules the same), under the sweep's policy, and its features added
 * to s in order.  store is read, never written (NULL: the host's store,
 * asked with TG_NEEDS_STORE; the host writes nothing either).  Returns
 * TG_OK with o->status TG_NO_MORE_CALLS when every complete line is in, or
 * a question for the host about the line just read (TG_NEEDS_STAGE,
 * TG_NEEDS_RESOLVE, TG_NEEDS_STORE): answer it as for tg_classify until
 * o->status is TG_DECIDED (the plan is then in), and call again from
 * *used.  Errors: TG_E_ARG, TG_E_NOMEM (the line is not in; the sweep
 * stays usable, short of it). */
TG_API int tg_sweep_lines(tg_sweep_t *s, tg_decider_t *d, const tg_context_t *ctx,
                          tg_store_t *store, const char *text, size_t len, int flags, size_t *line,
                          size_t *used, tg_outcome_t *o, tg_error_t *err);

/* The plans gathered. */
TG_API size_t tg_sweep_count(const tg_sweep_t *s);
/* The tools of its policy's registry (the length of tg_sweep_run's
 * quarantined). */
TG_API size_t tg_sweep_tools(const tg_sweep_t *s);

enum tg_label {
    TG_LABEL_NONE = 0, /* no "label" */
    TG_LABEL_CORRECT,
    TG_LABEL_FABRICATED,
    TG_LABEL_OTHER /* a "label" that is neither */
};

/* A tool's determinism label (registry index): -1 none given, 0 not
 * deterministic, 1 deterministic, 2 the plans disagree. */
TG_API int tg_sweep_tool_label(const tg_sweep_t *s, size_t tool);

/* What one run counted: plans by verdict (enum tg_verdict) and label
 * (enum tg_label), and the tools whose declarations it quarantined. */
typedef struct tg_sweep_counts_t {
    size_t plans[3][4];
    size_t quarantined;
} tg_sweep_counts_t;

/* Decides every gathered plan under settings cs (max_samples is the
 * features pass's policy's, and is not read), in input order, and counts.
 * quarantined (NULL, or one byte per registry tool) gets 1 for each tool
 * the run quarantined; verdicts (NULL, or one byte per plan) each plan's
 * verdict; codes (NULL, or one pointer per plan) each plan's code, "" for
 * an accept (static strings or the sweep's, valid until the next
 * tg_sweep_lines or tg_sweep_free).  Reads
 * s only, so runs may go on several threads at once.  Errors: TG_E_ARG (a
 * NULL s, cs or out; a threshold outside [0, 1], arg_reject above
 * arg_accept, min_samples 0, on_invalid neither TG_DEFER nor TG_REJECT:
 * err says which), TG_E_NOMEM. */
TG_API int tg_sweep_run(const tg_sweep_t *s, const tg_consistency_t *cs, tg_sweep_counts_t *out,
                        unsigned char *quarantined, unsigned char *verdicts, const char **codes,
                        tg_error_t *err);

/* What a sweep kept of one plan, for a decision function of the host's
 * own (tg_sweep_run_with). */
typedef struct tg_sweep_plan_t {
    int label;                   /* enum tg_label */
    int fixed;                   /* decided before the table (a rung failure, a malformed
                                  * plan, ...): verdict and code hold at every setting */
    int verdict;                 /* fixed: its verdict */
    const char *code;            /* fixed: its code (valid as tg_sweep_run's codes) */
    tg_plan_features_t features; /* not fixed: the table's features, the
                                  * determinism as the store's records said
                                  * when the plan was read (a host's function
                                  * keeps its own quarantines, if any) */
} tg_sweep_plan_t;

/* Plan i (from 0) of the sweep.  TG_OK, or TG_E_ARG for i out of range. */
TG_API int tg_sweep_plan(const tg_sweep_t *s, size_t i, tg_sweep_plan_t *out, tg_error_t *err);

/* tg_sweep_run with the host's decision table: table[i] (enum tg_verdict)
 * is what the host's function says of plan i's features, in place of
 * tg_consistency_decide's verdict (read for plans that are not fixed).
 * The rest is the engine's: a fixed plan keeps its verdict, and the
 * policy's later stages have their word on the others as in classify (a
 * reject of theirs wins; their defer stands over the host's accept).
 * Nothing is quarantined.  codes[i] is a later stage's code, a fixed
 * plan's, or "" for the host's verdicts.  Errors: TG_E_ARG (a NULL s,
 * table or out, a table entry that is not a verdict). */
TG_API int tg_sweep_run_with(const tg_sweep_t *s, const unsigned char *table,
                             tg_sweep_counts_t *out, unsigned char *verdicts, const char **codes,
                             tg_error_t *err);

/* ------------------------------------------------------------------------ */
/* Decision records (the audit log, docs/audit.md)                           */
/* ------------------------------------------------------------------------ */

/* A piece of text: p NULL means absent (its member is left out, or null
 * where the record always has it). */
typedef struct tg_text_t {
    const char *p;
    size_t n;
} tg_text_t;

/* What a record of kind "decision" holds (docs/schemas/decision-record.
 * schema.json).  Strings are written as JSON strings; decision and
 * arguments_redacted are JSON texts written as they are. */
typedef struct tg_decision_record_t {
    tg_text_t route, source, trace_id, span_id; /* the envelope (route: "" when absent) */
    double time;                                /* seconds since the epoch: 3 decimals */
    long long worker;                           /* < 0: none */
    tg_text_t phase, decision, outcome, mode;   /* phase absent: null */
    int enforced, approved;                     /* booleans */
    tg_text_t approval_id, principal;           /* absent: null */
    tg_text_t arguments;                        /* absent: no member */
    long long arguments_bytes;                  /* < 0: no member */
    tg_text_t arguments_digest;                 /* absent: no member */
    tg_text_t arguments_redacted;               /* a JSON array; absent: no member */
    int arguments_truncated;                    /* < 0: no member */
} tg_decision_record_t;

/* Writes the record's line (one JSON object, members in sorted order, no
 * newline) into out, at most cap bytes, and returns its whole length: a
 * return above cap means out holds only its first cap bytes (call again
 * with room for it).  Strings are escaped as toolgate.value.encode escapes
 * them: '"', '\\', \b \f \n \r \t, other bytes below 0x20 as \u00xx;
 * every other byte as it is. */
TG_API size_t tg_decision_record(const tg_decision_record_t *r, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* TOOLGATE_H */
