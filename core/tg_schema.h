/*
 * tg_schema.h -- what the schema compiler (tg_schema_compile.c) hands the
 * validator (tg_schema_validate.c): the compiled node layout, and the
 * regex (tg_regex.c) and format (tg_format.c) checks both use.  Not
 * installed.
 *
 * A compiled schema is an array of nodes, one per schema location the
 * document reaches (the root, every subschema, every $ref target), linked
 * by index.  Node 0 is the root.  Everything a node points to lives in the
 * schema's arena, so the source document may be freed after compiling.
 */
#ifndef TG_SCHEMA_H
#define TG_SCHEMA_H

#include "tg_internal.h"

/* ---- regular expressions (tg_regex.c) ---------------------------------------- */

typedef struct tg_regex tg_regex; /* a compiled PCRE2 pattern */

/* Compiles an ECMA-262 pattern (len bytes of UTF-8) with the engine's PCRE2
 * contexts.  TG_OK and *out (free with tg_regex_free), TG_E_PATTERN (err's
 * message says why, from PCRE2) or TG_E_NOMEM. */
int tg_regex_compile(tg_engine_t *e, const char *pat, size_t len, tg_regex **out, tg_error_t *err);
void tg_regex_free(tg_regex *re);
/* Unanchored search of s (len bytes of well-formed UTF-8), charged to
 * *budget (what is left of the validation's max_regex_steps; tg_regex.c
 * says how a match is charged): *matched is 1 or 0 on TG_OK;
 * TG_E_REGEX_LIMIT when the match gave up at the engine's
 * regex_match_limit or the budget ran out; TG_E_NOMEM. */
int tg_regex_search(tg_engine_t *e, const tg_regex *re, const char *s, size_t len, size_t *budget,
                    int *matched, tg_error_t *err);

/* Whether pat (len bytes of UTF-8) is an ECMA-262 regular expression, for
 * the "regex" format: it uses only syntax ECMA-262 has (none of PCRE2's
 * own: inline flags, possessive quantifiers, \A \Z \Q, verbs, ...) and the
 * engine's PCRE2 compiles it, as `pattern` would be, within
 * max_pattern_bytes.  *valid is 1 or 0 on TG_OK; TG_E_NOMEM. */
int tg_regex_valid(tg_engine_t *e, const char *pat, size_t len, int *valid, tg_error_t *err);

/* ---- formats (tg_format.c) ----------------------------------------------- */

/* The formats toolgate asserts (tg_format.c's header says what each
 * accepts); kept in this order, new ones last. */
enum tg_format {
    TG_FMT_NONE = 0, /* not asserted: an annotation */
    TG_FMT_DATE_TIME,
    TG_FMT_DATE,
    TG_FMT_TIME,
    TG_FMT_EMAIL,
    TG_FMT_URI,
    TG_FMT_UUID,
    TG_FMT_IPV4,
    TG_FMT_IPV6,
    TG_FMT_HOSTNAME,
    TG_FMT_URI_REFERENCE,
    TG_FMT_URI_TEMPLATE,
    TG_FMT_DURATION,
    TG_FMT_REGEX,
    TG_FMT_JSON_POINTER,
    TG_FMT_RELATIVE_JSON_POINTER,
    TG_FMT_BYTE,
    TG_FMT_BINARY,
    TG_FMT_PASSWORD,
    TG_FMT_INT32, /* the numeric formats (OpenAPI) */
    TG_FMT_INT64,
    TG_FMT_FLOAT,
    TG_FMT_DOUBLE,
    TG_FMT_COUNT
};

/* The format named name[0..len), or TG_FMT_NONE when toolgate does not
 * assert it. */
int tg_format_lookup(const char *name, size_t len);
/* Its name ("date-time"), "" for TG_FMT_NONE. */
const char *tg_format_name(int format);
/* What a message says after "is not a valid <name>": the rule, when the
 * name alone does not say it (" (an integer from ...)"), else "". */
const char *tg_format_says(int format);
/* Whether v satisfies format: *valid is 0 when v has the type the format
 * constrains (a string, or a number for int32, int64, float, double) and
 * breaks it, else 1 (TG_FMT_NONE, other types).  TG_OK, or TG_E_NOMEM
 * (the regex check compiles the string). */
int tg_format_check(tg_engine_t *e, int format, const tg_value_t *v, int *valid, tg_error_t *err);

/* ---- compiled nodes ------------------------------------------------------------ */

#define TG_SNONE UINT32_MAX /* no node */

/* Schema evaluations nested inside one another during one validation.
 * Compile time refuses $ref cycles that stay on one instance, so nesting
 * grows only with the instance's depth; this bounds the C stack anyway
 * (exceeding it is TG_E_VALIDATION_LIMIT). */
#define TG_SCHEMA_MAX_NESTING 2048

enum tg_snode_kind {
    TG_S_OBJECT = 0,
    TG_S_TRUE,
    TG_S_FALSE
};

/* `type` bits */
enum {
    TG_T_NULL = 1 << 0,
    TG_T_BOOLEAN = 1 << 1,
    TG_T_OBJECT = 1 << 2,
    TG_T_ARRAY = 1 << 3,
    TG_T_NUMBER = 1 << 4,
    TG_T_STRING = 1 << 5,
    TG_T_INTEGER = 1 << 6
};

/* Which assertions a node has (`has` bits); applicators are known by
 * their node indexes and counts instead. */
enum {
    TG_K_TYPE = 1u << 0,
    TG_K_ENUM = 1u << 1,
    TG_K_CONST = 1u << 2,
    TG_K_MINIMUM = 1u << 3,
    TG_K_MAXIMUM = 1u << 4,
    TG_K_EXCLUSIVE_MINIMUM = 1u << 5,
    TG_K_EXCLUSIVE_MAXIMUM = 1u << 6,
    TG_K_MULTIPLE_OF = 1u << 7,
    TG_K_MIN_LENGTH = 1u << 8,
    TG_K_MAX_LENGTH = 1u << 9,
    TG_K_PATTERN = 1u << 10,
    TG_K_FORMAT = 1u << 11, /* an asserted format (on its own type) */
    TG_K_MIN_ITEMS = 1u << 12,
    TG_K_MAX_ITEMS = 1u << 13,
    TG_K_UNIQUE_ITEMS = 1u << 14,
    TG_K_MIN_PROPERTIES = 1u << 15,
    TG_K_MAX_PROPERTIES = 1u << 16,
    TG_K_REQUIRED = 1u << 17,
    TG_K_DEPENDENT_REQUIRED = 1u << 18,
    TG_K_PROPERTIES = 1u << 19,
    TG_K_PATTERN_PROPERTIES = 1u << 20,
    TG_K_ADDITIONAL_PROPERTIES = 1u << 21,
    TG_K_PROPERTY_NAMES = 1u << 22,
    TG_K_ITEMS = 1u << 23 /* prefixItems, items or additionalItems apply */
};

#define TG_K_NUMBER                                                                                \
    (TG_K_MINIMUM | TG_K_MAXIMUM | TG_K_EXCLUSIVE_MINIMUM | TG_K_EXCLUSIVE_MAXIMUM |               \
     TG_K_MULTIPLE_OF)
#define TG_K_STRING (TG_K_MIN_LENGTH | TG_K_MAX_LENGTH | TG_K_PATTERN)
#define TG_K_ARRAY (TG_K_MIN_ITEMS | TG_K_MAX_ITEMS | TG_K_UNIQUE_ITEMS | TG_K_ITEMS)
#define TG_K_OBJECT                                                                                \
    (TG_K_MIN_PROPERTIES | TG_K_MAX_PROPERTIES | TG_K_REQUIRED | TG_K_DEPENDENT_REQUIRED |         \
     TG_K_PROPERTIES | TG_K_PATTERN_PROPERTIES | TG_K_ADDITIONAL_PROPERTIES | TG_K_PROPERTY_NAMES)

/* A name (property key); NUL-terminated copy, len bytes. */
typedef struct tg_sname {
    const char *name;
    uint32_t len;
    uint32_t node; /* properties: the member's schema; unused elsewhere */
} tg_sname;

/* A numeric bound: the schema's number, its text copied (NUL-terminated,
 * also for messages), so it compares exactly (tg_number_compare). */
typedef struct tg_sbound {
    tg_value_t value;
} tg_sbound;

/* A node's numeric keywords, kept apart from it: most nodes have none, and
 * held inline they were half of every node's size (a registry of 10,000
 * tools holds hundreds of thousands of nodes). */
typedef struct tg_snumeric {
    tg_sbound minimum, maximum, exclusive_minimum, exclusive_maximum;
    tg_sbound multiple_of;
    tg_decimal multiple_of_decimal;
} tg_snumeric;

typedef struct tg_spattern {
    tg_regex *re;
    const char *source; /* `pattern`: its text, for messages */
    uint32_t node;      /* patternProperties: the members' schema */
} tg_spattern;

typedef struct tg_sdependency {
    tg_sname key;          /* when this key is present ... */
    const tg_sname *needs; /* ... these must be too */
    uint32_t n_needs;
} tg_sdependency;

/* How a node's closed world is checked (opt->closed), when it heads a
 * group at an instance location. */
enum tg_closed {
    TG_OPEN = 0,
    TG_CLOSED_APART,  /* the group declares a fixed set of names (`declared`),
                       * checked in a pass of its own */
    TG_CLOSED_INLINE, /* the node's own `properties` and `patternProperties`
                       * are all the group declares: checked in the same pass
                       * as them (check_members) */
    TG_CLOSED_MARKED  /* what the group declares depends on which of its anyOf /
                       * oneOf branches validate (or on patterns beside other
                       * names): members mark the keys they evaluate */
};

typedef struct tg_snode {
    uint32_t has;   /* TG_K_* */
    uint8_t kind;   /* enum tg_snode_kind */
    uint8_t types;  /* TG_T_* of `type` */
    uint8_t format; /* enum tg_format */
    uint8_t closed; /* enum tg_closed: closed world when reached at an instance location */
    uint8_t any_key_declarable; /* TG_CLOSED_MARKED: a member has patternProperties or
                                 * additionalProperties */
    const char *ptr;            /* JSON Pointer of this schema in its document */
    uint32_t ptr_len;

    /* in-place applicators */
    uint32_t ref, not_schema;
    const uint32_t *all_of, *any_of, *one_of;
    uint32_t n_all_of, n_any_of, n_one_of;

    /* any instance */
    const tg_value_t *const_value;
    const tg_value_t *enum_values; /* an array */

    /* numbers: apart, NULL unless a TG_K_NUMBER bit is set */
    tg_snumeric *num;

    /* strings; counts saturate at UINT64_MAX */
    uint64_t min_length, max_length;
    tg_spattern pattern;

    /* arrays */
    uint64_t min_items, max_items;
    const uint32_t *prefix_items;
    uint32_t n_prefix_items;
    uint32_t rest_items; /* items after the prefix (items / additionalItems) */

    /* objects */
    uint64_t min_properties, max_properties;
    const tg_sname *properties; /* sorted in RFC 8785 key order */
    uint32_t n_properties;
    const tg_spattern *pattern_properties;
    uint32_t n_pattern_properties;
    uint32_t additional_properties, property_names;
    const tg_sname *required;
    uint32_t n_required;
    const tg_sdependency *dependent_required;
    uint32_t n_dependent_required;
    /* closed world: the keys the group declares (TG_CLOSED_APART), or
     * every name a member declares (TG_CLOSED_MARKED); sorted */
    const tg_sname *declared;
    uint32_t n_declared;
} tg_snode;

struct tg_schema_t {
    tg_engine_t *engine;
    tg_arena arena;  /* everything the nodes point to */
    tg_snode *nodes; /* engine-allocated, cap_nodes long */
    uint32_t n_nodes, cap_nodes;
};

#endif /* TG_SCHEMA_H */
