/*
 * tg_schema_compile.c -- JSON Schema documents to compiled nodes.
 *
 * The vocabulary is JSON Schema 2020-12's assertions and in-place/child
 * applicators (see toolgate.h), plus the draft-07 spellings `definitions`
 * and array-form `items` with `additionalItems`.  Anything else is refused
 * (TG_E_SCHEMA_KEYWORD) unless it is an annotation, an `x-` vendor
 * extension or in the caller's ignore list: a keyword toolgate would
 * silently skip is a check the schema's author believes in and toolgate
 * would not make.
 *
 * Compiling is a worklist over schema locations: every location gets one
 * node, found again by its DOM address (so a $ref to "#/$defs/a" and the
 * walk into $defs/a meet at the same node), and the node array is filled
 * in index order while compiling appends new locations at its end.  There
 * is no recursion over the schema, so a deep schema costs heap, not stack.
 *
 * Every entry of $defs / definitions is compiled, referenced or not: a
 * registry should not carry a definition that could never compile.
 *
 * Two passes follow over the finished graph:
 *   - a $ref cycle that returns to a schema without moving into the
 *     instance ({"$ref": "#"} at the root; $defs/a -> $defs/b -> $defs/a
 *     through $ref, allOf, anyOf, oneOf or not) would make validation loop
 *     forever; one reachable from the root is a compile error;
 *   - closed world (opt->closed): a schema reached at an instance location
 *     heads a group with every schema it reaches in place through allOf,
 *     anyOf, oneOf and $ref (not `not`).  When some member declares
 *     `properties` (even {}), the group is closed: a key of the object is
 *     declared only when a member that validated there evaluates it (its
 *     properties name it, one of its patternProperties matches it, its
 *     additionalProperties applies), which is what unevaluatedProperties:
 *     false on the head would say.  Members reached through allOf and $ref
 *     alone ("unconditional") count whether they validated or not: if one
 *     fails, so does the instance.  The group is classified here so that
 *     the common shapes keep their cost (enum tg_closed): open when an
 *     unconditional member has additionalProperties (every key is then
 *     evaluated); inline when the head's own properties and patterns are
 *     all that declares; a fixed set of names (the union, stored on the
 *     head) when only unconditional members declare, with plain
 *     properties; marked (the validator tracks evaluated keys) otherwise.
 */
#include "tg_schema.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct map_slot {
    const tg_value_t *v;
    uint32_t node;
} map_slot;

typedef struct compiler {
    tg_engine_t *e;
    tg_schema_t *s;
    const tg_value_t *root;
    const tg_schema_options_t *opt;
    tg_error_t *err;
    const tg_value_t **src; /* the source of each node */
    uint32_t cap_src;
    map_slot *map;  /* DOM address -> node, open addressing */
    size_t map_cap; /* a power of two */
} compiler;

/* ---- keywords ------------------------------------------------------------ */

enum keyword {
    KW_UNKNOWN = 0,
    KW_UNSUPPORTED, /* a JSON Schema keyword toolgate does not implement */
    KW_ANNOTATION,
    /* clang-format off */
    KW_TYPE, KW_ENUM, KW_CONST,
    KW_MINIMUM, KW_MAXIMUM, KW_EXCLUSIVE_MINIMUM, KW_EXCLUSIVE_MAXIMUM, KW_MULTIPLE_OF,
    KW_MIN_LENGTH, KW_MAX_LENGTH, KW_PATTERN, KW_FORMAT,
    KW_ITEMS, KW_PREFIX_ITEMS, KW_ADDITIONAL_ITEMS, KW_MIN_ITEMS, KW_MAX_ITEMS,
    KW_UNIQUE_ITEMS,
    KW_PROPERTIES, KW_PATTERN_PROPERTIES, KW_ADDITIONAL_PROPERTIES, KW_PROPERTY_NAMES,
    KW_REQUIRED, KW_DEPENDENT_REQUIRED, KW_MIN_PROPERTIES, KW_MAX_PROPERTIES,
    KW_ALL_OF, KW_ANY_OF, KW_ONE_OF, KW_NOT, KW_REF, KW_DEFS
    /* clang-format on */
};

/* Every keyword toolgate knows, sorted by their bytes (keyword_of searches
 * by halves: every member of every schema object is looked up).  The
 * standard keywords with no implementation here are KW_UNSUPPORTED, named
 * as such in the error, so a reader tells them from a typo. */
static const struct {
    const char *name;
    size_t len;
    enum keyword kw;
} keywords[] = {
    {"$anchor", sizeof "$anchor" - 1, KW_UNSUPPORTED},
    {"$comment", sizeof "$comment" - 1, KW_ANNOTATION},
    {"$defs", sizeof "$defs" - 1, KW_DEFS},
    {"$dynamicAnchor", sizeof "$dynamicAnchor" - 1, KW_UNSUPPORTED},
    {"$dynamicRef", sizeof "$dynamicRef" - 1, KW_UNSUPPORTED},
    {"$id", sizeof "$id" - 1, KW_ANNOTATION},
    {"$recursiveAnchor", sizeof "$recursiveAnchor" - 1, KW_UNSUPPORTED},
    {"$recursiveRef", sizeof "$recursiveRef" - 1, KW_UNSUPPORTED},
    {"$ref", sizeof "$ref" - 1, KW_REF},
    {"$schema", sizeof "$schema" - 1, KW_ANNOTATION},
    {"$vocabulary", sizeof "$vocabulary" - 1, KW_UNSUPPORTED},
    {"additionalItems", sizeof "additionalItems" - 1, KW_ADDITIONAL_ITEMS},
    {"additionalProperties", sizeof "additionalProperties" - 1, KW_ADDITIONAL_PROPERTIES},
    {"allOf", sizeof "allOf" - 1, KW_ALL_OF},
    {"anyOf", sizeof "anyOf" - 1, KW_ANY_OF},
    {"const", sizeof "const" - 1, KW_CONST},
    {"contains", sizeof "contains" - 1, KW_UNSUPPORTED},
    {"contentEncoding", sizeof "contentEncoding" - 1, KW_ANNOTATION},
    {"contentMediaType", sizeof "contentMediaType" - 1, KW_ANNOTATION},
    {"contentSchema", sizeof "contentSchema" - 1, KW_UNSUPPORTED},
    {"default", sizeof "default" - 1, KW_ANNOTATION},
    {"definitions", sizeof "definitions" - 1, KW_DEFS},
    {"dependencies", sizeof "dependencies" - 1, KW_UNSUPPORTED},
    {"dependentRequired", sizeof "dependentRequired" - 1, KW_DEPENDENT_REQUIRED},
    {"dependentSchemas", sizeof "dependentSchemas" - 1, KW_UNSUPPORTED},
    {"deprecated", sizeof "deprecated" - 1, KW_ANNOTATION},
    {"description", sizeof "description" - 1, KW_ANNOTATION},
    {"else", sizeof "else" - 1, KW_UNSUPPORTED},
    {"enum", sizeof "enum" - 1, KW_ENUM},
    {"examples", sizeof "examples" - 1, KW_ANNOTATION},
    {"exclusiveMaximum", sizeof "exclusiveMaximum" - 1, KW_EXCLUSIVE_MAXIMUM},
    {"exclusiveMinimum", sizeof "exclusiveMinimum" - 1, KW_EXCLUSIVE_MINIMUM},
    {"format", sizeof "format" - 1, KW_FORMAT},
    {"if", sizeof "if" - 1, KW_UNSUPPORTED},
    {"items", sizeof "items" - 1, KW_ITEMS},
    {"maxContains", sizeof "maxContains" - 1, KW_UNSUPPORTED},
    {"maxItems", sizeof "maxItems" - 1, KW_MAX_ITEMS},
    {"maxLength", sizeof "maxLength" - 1, KW_MAX_LENGTH},
    {"maxProperties", sizeof "maxProperties" - 1, KW_MAX_PROPERTIES},
    {"maximum", sizeof "maximum" - 1, KW_MAXIMUM},
    {"minContains", sizeof "minContains" - 1, KW_UNSUPPORTED},
    {"minItems", sizeof "minItems" - 1, KW_MIN_ITEMS},
    {"minLength", sizeof "minLength" - 1, KW_MIN_LENGTH},
    {"minProperties", sizeof "minProperties" - 1, KW_MIN_PROPERTIES},
    {"minimum", sizeof "minimum" - 1, KW_MINIMUM},
    {"multipleOf", sizeof "multipleOf" - 1, KW_MULTIPLE_OF},
    {"not", sizeof "not" - 1, KW_NOT},
    {"oneOf", sizeof "oneOf" - 1, KW_ONE_OF},
    {"pattern", sizeof "pattern" - 1, KW_PATTERN},
    {"patternProperties", sizeof "patternProperties" - 1, KW_PATTERN_PROPERTIES},
    {"prefixItems", sizeof "prefixItems" - 1, KW_PREFIX_ITEMS},
    {"properties", sizeof "properties" - 1, KW_PROPERTIES},
    {"propertyNames", sizeof "propertyNames" - 1, KW_PROPERTY_NAMES},
    {"readOnly", sizeof "readOnly" - 1, KW_ANNOTATION},
    {"required", sizeof "required" - 1, KW_REQUIRED},
    {"then", sizeof "then" - 1, KW_UNSUPPORTED},
    {"title", sizeof "title" - 1, KW_ANNOTATION},
    {"type", sizeof "type" - 1, KW_TYPE},
    {"unevaluatedItems", sizeof "unevaluatedItems" - 1, KW_UNSUPPORTED},
    {"unevaluatedProperties", sizeof "unevaluatedProperties" - 1, KW_UNSUPPORTED},
    {"uniqueItems", sizeof "uniqueItems" - 1, KW_UNIQUE_ITEMS},
    {"writeOnly", sizeof "writeOnly" - 1, KW_ANNOTATION},
};

static int same(const char *a, size_t alen, const char *b)
{
    /* the first byte first: keyword_of tries every keyword in turn */
    if (alen ? b[0] != a[0] : b[0] != '\0')
        return 0;
    return strlen(b) == alen && memcmp(a, b, alen) == 0;
}

/* Whether the NULL-terminated list (may be NULL) holds k[0..len). */
static int listed(const char *const *list, const char *k, size_t len)
{
    if (list)
        for (; *list; list++)
            if (same(k, len, *list))
                return 1;
    return 0;
}

/* What the member key k names; *name is its static spelling (DOM keys are
 * not NUL-terminated).  A keyword that would be refused is an annotation
 * when it is a vendor extension or the caller asked to ignore it. */
static enum keyword keyword_of(const compiler *C, const char *k, size_t len, const char **name)
{
    enum keyword kw = KW_UNKNOWN;
    size_t lo = 0, hi = sizeof keywords / sizeof keywords[0];
    *name = "";
    while (len && lo < hi) { /* (no keyword is empty) */
        size_t mid = lo + (hi - lo) / 2, n = keywords[mid].len;
        int c = memcmp(k, keywords[mid].name, len < n ? len : n);
        if (c == 0)
            c = len < n ? -1 : len > n;
        if (c == 0) {
            *name = keywords[mid].name;
            kw = keywords[mid].kw;
            break;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (kw != KW_UNKNOWN && kw != KW_UNSUPPORTED)
        return kw;
    if (len >= 2 && k[0] == 'x' && k[1] == '-')
        return KW_ANNOTATION;
    if (listed(C->opt->ignore_keywords, k, len))
        return KW_ANNOTATION;
    return kw;
}

/* ---- errors and pointers ----------------------------------------------------- */

/* Fills err with code and a message; its pointer is ptr, plus the segment
 * seg (a keyword, or a key) when seg is not NULL. */
#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
static int
fail(compiler *C, int code, const char *ptr, const char *seg, const tg_value_t *at, const char *fmt,
     ...)
{
    tg_error_t *err = C->err;
    if (err) {
        va_list ap;
        err->code = code;
        err->offset = at ? tg_offset(at) : TG_NO_OFFSET;
        va_start(ap, fmt);
        /* Only %s / %zu of ASCII or UTF-8 text: locale cannot matter. */
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        tg_pointer_write(err->pointer, sizeof err->pointer, ptr, strlen(ptr), seg,
                         seg ? strlen(seg) : 0);
    }
    return code;
}

static int nomem(compiler *C)
{
    return tg_fail(C->err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
}

/* The node's numeric keywords, made (zeroed, in the arena) at the first. */
static tg_snumeric *numeric(compiler *C, tg_snode *n)
{
    tg_snumeric *num = n->num;
    if (!num && (num = tg_arena_alloc(&C->s->arena, sizeof *num)) != NULL) {
        memset(num, 0, sizeof *num);
        n->num = num;
    }
    return num;
}

/* base + "/" + seg (RFC 6901 escaped) as a new NUL-terminated arena string. */
static const char *ptr_child(compiler *C, const char *base, const char *seg, size_t seg_len)
{
    size_t blen = strlen(base), elen = tg_ptr_escaped_len(seg, seg_len);
    char *p = tg_arena_alloc(&C->s->arena, blen + 1 + elen + 1), *w;
    if (!p)
        return NULL;
    memcpy(p, base, blen);
    w = p + blen;
    *w++ = '/';
    *tg_ptr_escape(w, seg, seg_len) = '\0';
    return p;
}

static const char *ptr_index(compiler *C, const char *base, size_t i)
{
    char digits[20];
    return ptr_child(C, base, digits, (size_t)tg_u64_text(i, digits));
}

/* A short, printable excerpt of a key or string for messages. */
static int excerpt_len(const char *s, size_t n)
{
    size_t k = n < 60 ? n : 60;
    while (k < n && k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80)
        k--;
    return (int)k;
}

/* ---- nodes --------------------------------------------------------------------- */

static size_t map_hash(const tg_value_t *v)
{
    return (size_t)(((uintptr_t)v >> 3) * 0x9e3779b97f4a7c15ull);
}

static int map_grow(compiler *C)
{
    size_t cap = C->map_cap ? C->map_cap * 2 : 64;
    map_slot *m = tg_mem_realloc(C->e, NULL, 0, cap * sizeof *m);
    if (!m)
        return nomem(C);
    memset(m, 0, cap * sizeof *m);
    for (size_t i = 0; i < C->map_cap; i++)
        if (C->map[i].v) {
            size_t j = map_hash(C->map[i].v) & (cap - 1);
            while (m[j].v)
                j = (j + 1) & (cap - 1);
            m[j] = C->map[i];
        }
    tg_mem_free(C->e, C->map, C->map_cap * sizeof *C->map);
    C->map = m;
    C->map_cap = cap;
    return TG_OK;
}

/* The node for the schema at v (an object or boolean, which the caller
 * checked), made and queued for compiling on first sight; ptr is where it
 * sits in the document. */
static int intern(compiler *C, const tg_value_t *v, const char *ptr, uint32_t *out)
{
    tg_schema_t *s = C->s;
    size_t j;
    tg_snode *n;
    int rc;

    if (!ptr)
        return nomem(C);
    if (C->map_cap) {
        for (j = map_hash(v) & (C->map_cap - 1); C->map[j].v; j = (j + 1) & (C->map_cap - 1))
            if (C->map[j].v == v) {
                *out = C->map[j].node;
                return TG_OK;
            }
    }
    if (s->n_nodes == s->cap_nodes) {
        uint32_t cap = s->cap_nodes ? s->cap_nodes * 2 : 16;
        tg_snode *nodes;
        if (s->cap_nodes >= UINT32_MAX / 4)
            return nomem(C);
        nodes = tg_mem_realloc(C->e, s->nodes, s->cap_nodes * sizeof *nodes, cap * sizeof *nodes);
        if (!nodes)
            return nomem(C);
        s->nodes = nodes;
        s->cap_nodes = cap;
    }
    if (s->n_nodes == C->cap_src) {
        const tg_value_t **src = tg_mem_realloc(C->e, (void *)C->src, C->cap_src * sizeof *src,
                                                s->cap_nodes * sizeof *src);
        if (!src)
            return nomem(C);
        C->src = src;
        C->cap_src = s->cap_nodes;
    }
    if ((s->n_nodes + 1) * 2 > C->map_cap && (rc = map_grow(C)) != TG_OK)
        return rc;
    for (j = map_hash(v) & (C->map_cap - 1); C->map[j].v; j = (j + 1) & (C->map_cap - 1))
        ;
    C->map[j].v = v;
    C->map[j].node = s->n_nodes;
    n = &s->nodes[s->n_nodes];
    memset(n, 0, sizeof *n);
    n->kind = v->type == TG_TRUE ? TG_S_TRUE : v->type == TG_FALSE ? TG_S_FALSE : TG_S_OBJECT;
    n->ptr = ptr;
    n->ptr_len = (uint32_t)strlen(ptr);
    n->ref = n->not_schema = n->rest_items = TG_SNONE;
    n->additional_properties = n->property_names = TG_SNONE;
    C->src[s->n_nodes] = v;
    *out = s->n_nodes++;
    return TG_OK;
}

static int is_schema(const tg_value_t *v)
{
    return v->type == TG_OBJECT || v->type == TG_TRUE || v->type == TG_FALSE;
}

/* The subschema v found at ptr (NULL: out of memory). */
static int subschema(compiler *C, const tg_value_t *v, const char *ptr, uint32_t *out)
{
    if (!ptr)
        return nomem(C);
    if (!is_schema(v))
        return fail(C, TG_E_SCHEMA, ptr, NULL, v, "a schema must be an object or a boolean");
    return intern(C, v, ptr, out);
}

/* ---- keyword values -------------------------------------------------------- */

static int want_number(compiler *C, const tg_snode *n, const char *kw, const tg_value_t *v,
                       tg_sbound *out)
{
    if (v->type != TG_NUMBER)
        return fail(C, TG_E_SCHEMA, n->ptr, kw, v, "%s must be a number", kw);
    memset(&out->value, 0, sizeof out->value);
    out->value.type = TG_NUMBER;
    out->value.num = v->num;
    out->value.len = v->len;
    if (!(out->value.p.text = tg_arena_strdup(&C->s->arena, v->p.text, v->len)))
        return nomem(C);
    return TG_OK;
}

static int want_count(compiler *C, const tg_snode *n, const char *kw, const tg_value_t *v,
                      uint64_t *out)
{
    tg_decimal d;
    int integer = 0;
    if (v->type == TG_NUMBER) {
        tg_decimal_init(&d, v->p.text, v->len);
        integer = tg_decimal_is_integer(&d);
    }
    if (!integer || v->num < 0)
        return fail(C, TG_E_SCHEMA, n->ptr, kw, v, "%s must be a non-negative integer", kw);
    /* Beyond 2^64 no instance can reach the bound anyway. */
    *out = v->num >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v->num;
    return TG_OK;
}

/* A non-empty array of schemas, as node indexes. */
static int want_schema_array(compiler *C, const tg_snode *n, const char *kw, const tg_value_t *v,
                             const uint32_t **out, uint32_t *count)
{
    const char *base;
    uint32_t *ids;
    if (v->type != TG_ARRAY || v->len == 0)
        return fail(C, TG_E_SCHEMA, n->ptr, kw, v, "%s must be a non-empty array of schemas", kw);
    if (!(base = ptr_child(C, n->ptr, kw, strlen(kw))) ||
        !(ids = tg_arena_alloc(&C->s->arena, v->len * sizeof *ids)))
        return nomem(C);
    for (uint32_t i = 0; i < v->len; i++) {
        int rc = subschema(C, &v->p.items[i], ptr_index(C, base, i), &ids[i]);
        if (rc != TG_OK)
            return rc;
    }
    *out = ids;
    *count = v->len;
    return TG_OK;
}

static int want_child(compiler *C, const tg_snode *n, const char *kw, const tg_value_t *v,
                      uint32_t *out)
{
    return subschema(C, v, ptr_child(C, n->ptr, kw, strlen(kw)), out);
}

static int name_cmp(const void *a, const void *b)
{
    const tg_sname *x = a, *y = b;
    return tg_key_compare(x->name, x->len, y->name, y->len);
}

/* Names by name, then (node holding it) by first appearance. */
static int name_then_index_cmp(const void *a, const void *b)
{
    const tg_sname *x = a, *y = b;
    int c = name_cmp(a, b);
    return c ? c : (x->node > y->node) - (x->node < y->node);
}

static int index_cmp(const void *a, const void *b)
{
    const tg_sname *x = a, *y = b;
    return (x->node > y->node) - (x->node < y->node);
}

/* Keeps the first of each run of equal names in sorted names; returns
 * how many are kept.  (Equal in tg_key_compare is equal bytes.) */
static size_t drop_repeats(tg_sname *names, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (!w || name_cmp(&names[w - 1], &names[i]) != 0)
            names[w++] = names[i];
    return w;
}

/* An array of strings (duplicates dropped), copied; in RFC 8785 order when
 * sorted is set, else in order of first appearance.  O(n log n): repeats
 * are found by sorting, not by comparing each name with all before it. */
static int want_names(compiler *C, const char *ptr, const char *kw, const tg_value_t *v, int sorted,
                      const tg_sname **out, uint32_t *count)
{
    tg_sname *names = NULL;
    size_t k = v->len;
    if (v->type != TG_ARRAY)
        return fail(C, TG_E_SCHEMA, ptr, kw, v, "\"%s\" must be an array of strings", kw);
    if (v->len && !(names = tg_arena_alloc(&C->s->arena, v->len * sizeof *names)))
        return nomem(C);
    for (uint32_t i = 0; i < v->len; i++) {
        const tg_value_t *x = &v->p.items[i];
        if (x->type != TG_STRING)
            return fail(C, TG_E_SCHEMA, ptr, kw, x, "\"%s\" must be an array of strings", kw);
        names[i].name = x->p.str; /* the schema's own text until the copy below */
        names[i].len = x->len;
        names[i].node = i;
    }
    if (k > 1) {
        qsort(names, k, sizeof *names, name_then_index_cmp);
        k = drop_repeats(names, k);
        if (!sorted)
            qsort(names, k, sizeof *names, index_cmp);
    }
    for (size_t i = 0; i < k; i++) {
        if (!(names[i].name = tg_arena_strdup(&C->s->arena, names[i].name, names[i].len)))
            return nomem(C);
        names[i].node = TG_SNONE;
    }
    *out = k ? names : NULL;
    *count = (uint32_t)k;
    return TG_OK;
}

static const struct {
    const char *name;
    uint8_t bit;
} type_names[] = {
    {"null", TG_T_NULL},       {"boolean", TG_T_BOOLEAN}, {"object", TG_T_OBJECT},
    {"array", TG_T_ARRAY},     {"number", TG_T_NUMBER},   {"string", TG_T_STRING},
    {"integer", TG_T_INTEGER},
};

static int type_bit(const tg_value_t *v)
{
    if (v->type == TG_STRING)
        for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
            if (same(v->p.str, v->len, type_names[i].name))
                return type_names[i].bit;
    return 0;
}

static int want_type(compiler *C, tg_snode *n, const tg_value_t *v)
{
    const char *what = "type must be one of null, boolean, object, array, number, string, "
                       "integer, or a non-empty array of them without repeats";
    if (v->type == TG_STRING) {
        int bit = type_bit(v);
        if (!bit)
            return fail(C, TG_E_SCHEMA, n->ptr, "type", v, "%s", what);
        n->types = (uint8_t)bit;
    } else if (v->type == TG_ARRAY && v->len > 0) {
        for (uint32_t i = 0; i < v->len; i++) {
            int bit = type_bit(&v->p.items[i]);
            if (!bit || (n->types & bit))
                return fail(C, TG_E_SCHEMA, n->ptr, "type", &v->p.items[i], "%s", what);
            n->types |= (uint8_t)bit;
        }
    } else {
        return fail(C, TG_E_SCHEMA, n->ptr, "type", v, "%s", what);
    }
    n->has |= TG_K_TYPE;
    return TG_OK;
}

static int want_value_copy(compiler *C, const tg_value_t *v, const tg_value_t **out)
{
    tg_value_t *copy = tg_arena_alloc(&C->s->arena, sizeof *copy);
    if (!copy || tg_value_copy(&C->s->arena, copy, v) != TG_OK)
        return nomem(C);
    copy->key = NULL;
    copy->key_len = 0;
    *out = copy;
    return TG_OK;
}

static int want_regex(compiler *C, const char *ptr, const char *kw, const tg_value_t *at,
                      const char *pat, size_t len, tg_spattern *out)
{
    tg_error_t why;
    int rc = tg_regex_compile(C->e, pat, len, &out->re, &why);
    if (rc == TG_E_PATTERN || rc == TG_E_PATTERN_TOO_LONG)
        return fail(C, rc, ptr, kw, at, "invalid pattern \"%.*s\": %s", excerpt_len(pat, len), pat,
                    why.message);
    return rc == TG_OK ? TG_OK : nomem(C);
}

/* ---- $ref ---------------------------------------------------------------------- */

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Follows one decoded JSON Pointer token from *v; NULL when absent. */
static const tg_value_t *step(const tg_value_t *v, const char *tok, size_t n)
{
    if (v->type == TG_OBJECT)
        return tg_get(v, tok, n);
    if (v->type == TG_ARRAY) {
        size_t i = 0;
        if (n == 0 || n > 9 || (n > 1 && tok[0] == '0'))
            return NULL;
        for (size_t k = 0; k < n; k++) {
            if (tok[k] < '0' || tok[k] > '9')
                return NULL;
            i = i * 10 + (size_t)(tok[k] - '0');
        }
        return tg_at(v, i);
    }
    return NULL;
}

/* Walks the fragment (already %-decoded into buf, len bytes, which this
 * unescapes in place token by token) from the document root. */
static int walk_pointer(compiler *C, const tg_snode *n, const tg_value_t *refv, char *buf,
                        size_t len, const tg_value_t **target, const char **ptr)
{
    const tg_value_t *v = C->root;
    const char *p = "";
    size_t i = 1;
    while (i <= len) {
        size_t start = i, k = 0;
        char *tok = buf + start;
        while (i < len && buf[i] != '/') {
            char c = buf[i++];
            if (c == '~') {
                if (i >= len || (buf[i] != '0' && buf[i] != '1'))
                    return fail(
                        C, TG_E_SCHEMA_REF, n->ptr, "$ref", refv,
                        "$ref \"%.*s\" is not a valid JSON Pointer (~ must be followed by 0 or 1)",
                        excerpt_len(refv->p.str, refv->len), refv->p.str);
                c = buf[i++] == '0' ? '~' : '/';
            }
            tok[k++] = c;
        }
        i++; /* past the '/' (or the end) */
        if (!(v = step(v, tok, k)))
            return fail(C, TG_E_SCHEMA_REF, n->ptr, "$ref", refv,
                        "$ref \"%.*s\" points to nothing in this document",
                        excerpt_len(refv->p.str, refv->len), refv->p.str);
        if (!(p = ptr_child(C, p, tok, k)))
            return nomem(C);
    }
    *target = v;
    *ptr = p;
    return TG_OK;
}

static int want_ref(compiler *C, tg_snode *n, const tg_value_t *v)
{
    const tg_value_t *target = C->root;
    const char *ptr = "";
    char *buf;
    size_t len = 0;
    int rc = TG_OK;

    if (v->type != TG_STRING)
        return fail(C, TG_E_SCHEMA, n->ptr, "$ref", v, "$ref must be a string");
    if (v->len == 0 || v->p.str[0] != '#')
        return fail(C, TG_E_SCHEMA_REF, n->ptr, "$ref", v,
                    "$ref \"%.*s\" is not local: only references into this document "
                    "(\"#...\") are supported",
                    excerpt_len(v->p.str, v->len), v->p.str);
    if (!(buf = tg_mem_realloc(C->e, NULL, 0, v->len)))
        return nomem(C);
    /* The fragment is URI-encoded: %-decode it first. */
    for (size_t i = 1; i < v->len && rc == TG_OK; i++) {
        char c = v->p.str[i];
        if (c == '%') {
            int hi = i + 2 < v->len ? hexval(v->p.str[i + 1]) : -1;
            int lo = hi >= 0 ? hexval(v->p.str[i + 2]) : -1;
            if (lo < 0)
                rc =
                    fail(C, TG_E_SCHEMA_REF, n->ptr, "$ref", v, "$ref \"%.*s\" has a bad %%-escape",
                         excerpt_len(v->p.str, v->len), v->p.str);
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        buf[len++] = c;
    }
    if (rc == TG_OK && len > 0) {
        if (buf[0] != '/')
            rc = fail(C, TG_E_SCHEMA_REF, n->ptr, "$ref", v,
                      "$ref \"%.*s\" names an anchor: only JSON Pointer fragments "
                      "(\"#/...\") are supported",
                      excerpt_len(v->p.str, v->len), v->p.str);
        else
            rc = walk_pointer(C, n, v, buf, len, &target, &ptr);
    }
    tg_mem_free(C->e, buf, v->len);
    if (rc != TG_OK)
        return rc;
    if (!is_schema(target))
        return fail(C, TG_E_SCHEMA_REF, n->ptr, "$ref", v,
                    "$ref \"%.*s\" points to a value that is not a schema",
                    excerpt_len(v->p.str, v->len), v->p.str);
    return intern(C, target, ptr, &n->ref);
}

/* ---- objects: properties, patternProperties, dependentRequired, $defs ---------- */

static int want_properties(compiler *C, tg_snode *n, const tg_value_t *v)
{
    const char *base;
    tg_sname *props;
    if (v->type != TG_OBJECT)
        return fail(C, TG_E_SCHEMA, n->ptr, "properties", v,
                    "properties must be an object of schemas");
    if (!(base = ptr_child(C, n->ptr, "properties", 10)))
        return nomem(C);
    props = v->len ? tg_arena_alloc(&C->s->arena, v->len * sizeof *props) : NULL;
    if (v->len && !props)
        return nomem(C);
    /* The DOM keeps members in RFC 8785 order, which is the order the
     * validator's merge walk wants. */
    for (uint32_t i = 0; i < v->len; i++) {
        const tg_value_t *m = &v->p.items[i];
        int rc = subschema(C, m, ptr_child(C, base, m->key, m->key_len), &props[i].node);
        if (rc != TG_OK)
            return rc;
        if (!(props[i].name = tg_arena_strdup(&C->s->arena, m->key, m->key_len)))
            return nomem(C);
        props[i].len = m->key_len;
    }
    n->properties = props;
    n->n_properties = v->len;
    n->has |= TG_K_PROPERTIES;
    return TG_OK;
}

static int want_pattern_properties(compiler *C, tg_snode *n, const tg_value_t *v)
{
    const char *base;
    tg_spattern *pats = NULL;
    if (v->type != TG_OBJECT)
        return fail(C, TG_E_SCHEMA, n->ptr, "patternProperties", v,
                    "patternProperties must be an object of schemas");
    if (!(base = ptr_child(C, n->ptr, "patternProperties", 17)))
        return nomem(C);
    if (v->len && !(pats = tg_arena_alloc(&C->s->arena, v->len * sizeof *pats)))
        return nomem(C);
    n->has |= TG_K_PATTERN_PROPERTIES;
    for (uint32_t i = 0; i < v->len; i++) {
        const tg_value_t *m = &v->p.items[i];
        const char *ptr = ptr_child(C, base, m->key, m->key_len);
        int rc;
        if (!ptr)
            return nomem(C);
        if ((rc = subschema(C, m, ptr, &pats[i].node)) != TG_OK)
            return rc;
        pats[i].re = NULL;
        pats[i].source = NULL; /* only `pattern` keeps its text */
        /* Counted before compiling, so tg_schema_free sees every regex. */
        n->pattern_properties = pats;
        n->n_pattern_properties = i + 1;
        if ((rc = want_regex(C, ptr, NULL, m, m->key, m->key_len, &pats[i])) != TG_OK)
            return rc;
    }
    return TG_OK;
}

static int want_dependent_required(compiler *C, tg_snode *n, const tg_value_t *v)
{
    const char *base;
    tg_sdependency *deps = NULL;
    if (v->type != TG_OBJECT)
        return fail(C, TG_E_SCHEMA, n->ptr, "dependentRequired", v,
                    "dependentRequired must be an object of string arrays");
    if (!(base = ptr_child(C, n->ptr, "dependentRequired", 17)))
        return nomem(C);
    if (v->len && !(deps = tg_arena_alloc(&C->s->arena, v->len * sizeof *deps)))
        return nomem(C);
    for (uint32_t i = 0; i < v->len; i++) {
        const tg_value_t *m = &v->p.items[i];
        int rc;
        if (!(deps[i].key.name = tg_arena_strdup(&C->s->arena, m->key, m->key_len)))
            return nomem(C);
        deps[i].key.len = m->key_len;
        deps[i].key.node = TG_SNONE;
        rc = want_names(C, base, deps[i].key.name, m, 0, &deps[i].needs, &deps[i].n_needs);
        if (rc != TG_OK)
            return rc;
    }
    n->dependent_required = v->len ? deps : NULL;
    n->n_dependent_required = v->len;
    if (v->len)
        n->has |= TG_K_DEPENDENT_REQUIRED;
    return TG_OK;
}

static int want_defs(compiler *C, const tg_snode *n, const char *kw, const tg_value_t *v)
{
    const char *base;
    if (v->type != TG_OBJECT)
        return fail(C, TG_E_SCHEMA, n->ptr, kw, v, "%s must be an object of schemas", kw);
    if (!(base = ptr_child(C, n->ptr, kw, strlen(kw))))
        return nomem(C);
    for (uint32_t i = 0; i < v->len; i++) {
        const tg_value_t *m = &v->p.items[i];
        uint32_t id;
        int rc = subschema(C, m, ptr_child(C, base, m->key, m->key_len), &id);
        if (rc != TG_OK)
            return rc;
    }
    return TG_OK;
}

/* ---- one schema object ------------------------------------------------------ */

/* Reads the members of the schema object v into *n.  Array keywords are
 * settled after the loop, since prefixItems, items and additionalItems
 * decide together what applies where. */
static int compile_members(compiler *C, tg_snode *n, const tg_value_t *v)
{
    const tg_value_t *items = NULL, *prefix = NULL;
    int tuple = 0; /* prefixItems, or draft-07 array-form items */
    uint32_t items_id = TG_SNONE, additional_items_id = TG_SNONE;
    int rc = TG_OK;

    for (uint32_t i = 0; i < v->len && rc == TG_OK; i++) {
        const tg_value_t *m = &v->p.items[i];
        const char *kw;
        switch (keyword_of(C, m->key, m->key_len, &kw)) {
        case KW_UNKNOWN:
            return fail(C, TG_E_SCHEMA_KEYWORD, n->ptr, NULL, m,
                        "unknown keyword \"%.*s\" (not JSON Schema 2020-12; a typo?)",
                        excerpt_len(m->key, m->key_len), m->key);
        case KW_UNSUPPORTED:
            return fail(C, TG_E_SCHEMA_KEYWORD, n->ptr, NULL, m,
                        "keyword \"%s\" is not supported by toolgate", kw);
        case KW_ANNOTATION:
            break;
        case KW_TYPE:
            rc = want_type(C, n, m);
            break;
        case KW_ENUM:
            if (m->type != TG_ARRAY)
                return fail(C, TG_E_SCHEMA, n->ptr, kw, m, "enum must be an array");
            rc = want_value_copy(C, m, &n->enum_values);
            n->has |= TG_K_ENUM;
            break;
        case KW_CONST:
            rc = want_value_copy(C, m, &n->const_value);
            n->has |= TG_K_CONST;
            break;
        case KW_MINIMUM:
            if (!numeric(C, n))
                return nomem(C);
            rc = want_number(C, n, kw, m, &numeric(C, n)->minimum);
            n->has |= TG_K_MINIMUM;
            break;
        case KW_MAXIMUM:
            if (!numeric(C, n))
                return nomem(C);
            rc = want_number(C, n, kw, m, &numeric(C, n)->maximum);
            n->has |= TG_K_MAXIMUM;
            break;
        case KW_EXCLUSIVE_MINIMUM:
            if (!numeric(C, n))
                return nomem(C);
            rc = want_number(C, n, kw, m, &numeric(C, n)->exclusive_minimum);
            n->has |= TG_K_EXCLUSIVE_MINIMUM;
            break;
        case KW_EXCLUSIVE_MAXIMUM:
            if (!numeric(C, n))
                return nomem(C);
            rc = want_number(C, n, kw, m, &numeric(C, n)->exclusive_maximum);
            n->has |= TG_K_EXCLUSIVE_MAXIMUM;
            break;
        case KW_MULTIPLE_OF: {
            tg_snumeric *num = numeric(C, n);
            if (!num)
                return nomem(C);
            rc = want_number(C, n, kw, m, &num->multiple_of);
            if (rc != TG_OK)
                break;
            /* > 0 as the decimal it spells: 1e-400 is a positive divisor */
            tg_decimal_init(&num->multiple_of_decimal, num->multiple_of.value.p.text, m->len);
            if (!num->multiple_of_decimal.first || num->multiple_of_decimal.negative)
                return fail(C, TG_E_SCHEMA, n->ptr, kw, m,
                            "multipleOf must be a number greater than 0");
            /* Refused rather than decided in doubles, which cannot tell
             * multiples of such a divisor from near misses. */
            if (num->multiple_of_decimal.n_digits > TG_DECIMAL_EXACT_DIGITS)
                return fail(C, TG_E_SCHEMA, n->ptr, kw, m,
                            "multipleOf %.*s has more than %d significant digits: toolgate "
                            "decides multipleOf exactly and cannot with a divisor this long",
                            excerpt_len(m->p.text, m->len), m->p.text, TG_DECIMAL_EXACT_DIGITS);
            n->has |= TG_K_MULTIPLE_OF;
            break;
        }
        case KW_MIN_LENGTH:
            rc = want_count(C, n, kw, m, &n->min_length);
            n->has |= TG_K_MIN_LENGTH;
            break;
        case KW_MAX_LENGTH:
            rc = want_count(C, n, kw, m, &n->max_length);
            n->has |= TG_K_MAX_LENGTH;
            break;
        case KW_PATTERN:
            if (m->type != TG_STRING)
                return fail(C, TG_E_SCHEMA, n->ptr, kw, m, "pattern must be a string");
            n->has |= TG_K_PATTERN;
            rc = want_regex(C, n->ptr, kw, m, m->p.str, m->len, &n->pattern);
            /* its text, for the messages */
            if (rc == TG_OK &&
                !(n->pattern.source = tg_arena_strdup(&C->s->arena, m->p.str, m->len)))
                rc = nomem(C);
            break;
        case KW_FORMAT:
            if (m->type != TG_STRING)
                return fail(C, TG_E_SCHEMA, n->ptr, kw, m, "format must be a string");
            if (C->opt->assert_formats && !listed(C->opt->annotation_formats, m->p.str, m->len)) {
                /* A format that passes whatever it says would be a check
                 * the schema's author believes in and toolgate does not
                 * make: like an unknown keyword, it fails the load. */
                n->format = (uint8_t)tg_format_lookup(m->p.str, m->len);
                if (n->format == TG_FMT_NONE)
                    return fail(C, TG_E_UNSUPPORTED_FORMAT, n->ptr, kw, m,
                                "format \"%.*s\" is not one toolgate asserts (assert_formats "
                                "is on; annotation_formats may list it as an annotation)",
                                excerpt_len(m->p.str, m->len), m->p.str);
                n->has |= TG_K_FORMAT;
            }
            break;
        case KW_ITEMS:
            items = m;
            if (m->type == TG_ARRAY) { /* draft-07 tuple form */
                tuple = 1;
                if (m->len)
                    rc = want_schema_array(C, n, kw, m, &n->prefix_items, &n->n_prefix_items);
            } else
                rc = want_child(C, n, kw, m, &items_id);
            break;
        case KW_PREFIX_ITEMS:
            prefix = m;
            tuple = 1;
            rc = want_schema_array(C, n, kw, m, &n->prefix_items, &n->n_prefix_items);
            break;
        case KW_ADDITIONAL_ITEMS:
            rc = want_child(C, n, kw, m, &additional_items_id);
            break;
        case KW_MIN_ITEMS:
            rc = want_count(C, n, kw, m, &n->min_items);
            n->has |= TG_K_MIN_ITEMS;
            break;
        case KW_MAX_ITEMS:
            rc = want_count(C, n, kw, m, &n->max_items);
            n->has |= TG_K_MAX_ITEMS;
            break;
        case KW_UNIQUE_ITEMS:
            if (m->type != TG_TRUE && m->type != TG_FALSE)
                return fail(C, TG_E_SCHEMA, n->ptr, kw, m, "uniqueItems must be a boolean");
            if (m->type == TG_TRUE)
                n->has |= TG_K_UNIQUE_ITEMS;
            break;
        case KW_PROPERTIES:
            rc = want_properties(C, n, m);
            break;
        case KW_PATTERN_PROPERTIES:
            rc = want_pattern_properties(C, n, m);
            break;
        case KW_ADDITIONAL_PROPERTIES:
            rc = want_child(C, n, kw, m, &n->additional_properties);
            n->has |= TG_K_ADDITIONAL_PROPERTIES;
            break;
        case KW_PROPERTY_NAMES:
            rc = want_child(C, n, kw, m, &n->property_names);
            n->has |= TG_K_PROPERTY_NAMES;
            break;
        case KW_REQUIRED:
            /* in member order, for the validator's merge walk */
            rc = want_names(C, n->ptr, kw, m, 1, &n->required, &n->n_required);
            if (n->n_required)
                n->has |= TG_K_REQUIRED;
            break;
        case KW_DEPENDENT_REQUIRED:
            rc = want_dependent_required(C, n, m);
            break;
        case KW_MIN_PROPERTIES:
            rc = want_count(C, n, kw, m, &n->min_properties);
            n->has |= TG_K_MIN_PROPERTIES;
            break;
        case KW_MAX_PROPERTIES:
            rc = want_count(C, n, kw, m, &n->max_properties);
            n->has |= TG_K_MAX_PROPERTIES;
            break;
        case KW_ALL_OF:
            rc = want_schema_array(C, n, kw, m, &n->all_of, &n->n_all_of);
            break;
        case KW_ANY_OF:
            rc = want_schema_array(C, n, kw, m, &n->any_of, &n->n_any_of);
            break;
        case KW_ONE_OF:
            rc = want_schema_array(C, n, kw, m, &n->one_of, &n->n_one_of);
            break;
        case KW_NOT:
            rc = want_child(C, n, kw, m, &n->not_schema);
            break;
        case KW_REF:
            rc = want_ref(C, n, m);
            break;
        case KW_DEFS:
            rc = want_defs(C, n, kw, m);
            break;
        }
    }
    if (rc != TG_OK)
        return rc;
    if (prefix && items && items->type == TG_ARRAY)
        return fail(C, TG_E_SCHEMA, n->ptr, "items", items,
                    "items as an array (draft-07 tuples) cannot stand beside prefixItems");
    /* items (a schema) covers what the tuple leaves; additionalItems does
     * only beside a draft-07 tuple (array-form items), and is otherwise
     * ignored, as 2020-12 ignores it beside prefixItems. */
    if (items_id != TG_SNONE)
        n->rest_items = items_id;
    else if (tuple && !prefix && additional_items_id != TG_SNONE)
        n->rest_items = additional_items_id;
    if (tuple || n->rest_items != TG_SNONE)
        n->has |= TG_K_ITEMS;
    return TG_OK;
}

/* ---- the graph: cycles and closed groups ------------------------------------------ */

enum edge {
    EDGE_GROUP = 1,  /* $ref, allOf: in place, same closed group */
    EDGE_NOT = 2,    /* not: in place, outside the group */
    EDGE_MOVES = 4,  /* into a member, an element or a key */
    EDGE_BRANCH = 8, /* anyOf, oneOf: in place, same group, counts when it validates */
};

/* The k-th child of n (k = 0, 1, ...), TG_SNONE past the last; *kind says
 * how it applies. */
static uint32_t child_at(const tg_snode *n, uint32_t k, int *kind)
{
    *kind = EDGE_GROUP;
    if (n->ref != TG_SNONE && k-- == 0)
        return n->ref;
    if (k < n->n_all_of)
        return n->all_of[k];
    k -= n->n_all_of;
    *kind = EDGE_BRANCH;
    if (k < n->n_any_of)
        return n->any_of[k];
    k -= n->n_any_of;
    if (k < n->n_one_of)
        return n->one_of[k];
    k -= n->n_one_of;
    *kind = EDGE_NOT;
    if (n->not_schema != TG_SNONE && k-- == 0)
        return n->not_schema;
    *kind = EDGE_MOVES;
    if (k < n->n_properties)
        return n->properties[k].node;
    k -= n->n_properties;
    if (k < n->n_pattern_properties)
        return n->pattern_properties[k].node;
    k -= n->n_pattern_properties;
    if (n->additional_properties != TG_SNONE && k-- == 0)
        return n->additional_properties;
    if (n->property_names != TG_SNONE && k-- == 0)
        return n->property_names;
    if (k < n->n_prefix_items)
        return n->prefix_items[k];
    k -= n->n_prefix_items;
    if (n->rest_items != TG_SNONE && k-- == 0)
        return n->rest_items;
    return TG_SNONE;
}

typedef struct frame {
    uint32_t node, next;
} frame;

/* Marks what the root reaches (reach[i] bit 1) and which of those are
 * reached at an instance location (bit 2: the root, and every target of a
 * moving edge). */
static void mark_reachable(const tg_schema_t *s, uint8_t *reach, uint32_t *stack)
{
    size_t top = 0;
    reach[0] = 3;
    stack[top++] = 0;
    while (top) {
        const tg_snode *n = &s->nodes[stack[--top]];
        int kind;
        uint32_t c;
        for (uint32_t k = 0; (c = child_at(n, k, &kind)) != TG_SNONE; k++) {
            if (kind == EDGE_MOVES)
                reach[c] |= 2;
            if (!(reach[c] & 1)) {
                reach[c] |= 1;
                stack[top++] = c;
            }
        }
    }
}

static int cycle_error(compiler *C, const frame *stack, size_t top, uint32_t back_to)
{
    char msg[TG_ERROR_MESSAGE_MAX];
    size_t len, from = top;
    const tg_snode *nodes = C->s->nodes;
    while (from > 0 && stack[from - 1].node != back_to)
        from--;
    len = (size_t)snprintf(msg, sizeof msg,
                           "$ref cycle that never moves into the instance (validation "
                           "would not end): ");
    for (size_t i = from - 1; i < top && len < sizeof msg; i++)
        len +=
            (size_t)snprintf(msg + len, sizeof msg - len, "\"%s\" -> ", nodes[stack[i].node].ptr);
    if (len < sizeof msg)
        snprintf(msg + len, sizeof msg - len, "\"%s\"", nodes[back_to].ptr);
    return fail(C, TG_E_SCHEMA, nodes[back_to].ptr, NULL, NULL, "%s", msg);
}

/* Depth-first over in-place edges from every reachable node; a node met
 * again while still on the path closes a cycle (white/grey/black). */
static int check_cycles(compiler *C, const uint8_t *reach, uint8_t *color, frame *stack)
{
    const tg_schema_t *s = C->s;
    for (uint32_t r = 0; r < s->n_nodes; r++) {
        size_t top = 0;
        if (!(reach[r] & 1) || color[r])
            continue;
        color[r] = 1;
        stack[top++] = (frame){r, 0};
        while (top) {
            frame *f = &stack[top - 1];
            int kind;
            uint32_t c = child_at(&s->nodes[f->node], f->next++, &kind);
            if (c == TG_SNONE || kind == EDGE_MOVES) {
                color[f->node] = 2;
                top--;
            } else if (color[c] == 1) {
                return cycle_error(C, stack, top, c);
            } else if (!color[c]) {
                color[c] = 1;
                stack[top++] = (frame){c, 0};
            }
        }
    }
    return TG_OK;
}

/* Adds the children of members[i] along edges of the given kinds to the
 * group headed by head (stamped in seen with head + 1). */
static void add_members(const tg_schema_t *s, uint32_t head, uint32_t *seen, uint32_t *members,
                        size_t i, int kinds, size_t *n_members)
{
    const tg_snode *n = &s->nodes[members[i]];
    int kind;
    uint32_t c;
    /* in-place edges come first (child_at) */
    for (uint32_t k = 0;
         (c = child_at(n, k, &kind)) != TG_SNONE && kind != EDGE_NOT && kind != EDGE_MOVES; k++)
        if ((kind & kinds) && seen[c] != head + 1) {
            seen[c] = head + 1;
            members[(*n_members)++] = c;
        }
}

/* The union of the properties of members[0..n_members), sorted, onto the
 * head's declared. */
static int union_of_names(compiler *C, uint32_t head, const uint32_t *members, size_t n_members)
{
    tg_schema_t *s = C->s;
    size_t n_names = 0;
    tg_sname *names;
    for (size_t i = 0; i < n_members; i++)
        n_names += s->nodes[members[i]].n_properties;
    if (!(names = tg_arena_alloc(&s->arena, (n_names ? n_names : 1) * sizeof *names)))
        return nomem(C);
    n_names = 0;
    for (size_t i = 0; i < n_members; i++) {
        const tg_snode *n = &s->nodes[members[i]];
        for (uint32_t k = 0; k < n->n_properties; k++)
            names[n_names++] = n->properties[k];
    }
    qsort(names, n_names, sizeof *names, name_cmp);
    n_names = drop_repeats(names, n_names);
    s->nodes[head].declared = names;
    s->nodes[head].n_declared = (uint32_t)n_names;
    return TG_OK;
}

/* Classifies the closed group headed by node head (enum tg_closed): its
 * members are collected in members, those reached through $ref and allOf
 * alone first; for a fixed set, the union of their properties goes onto
 * the head. */
static int close_group(compiler *C, uint32_t head, uint32_t *seen, uint32_t *members)
{
    tg_schema_t *s = C->s;
    const uint32_t declares = TG_K_PROPERTIES | TG_K_PATTERN_PROPERTIES;
    size_t n_members = 0, n_unconditional, with_props = 0;
    uint32_t last_with_props = head;
    int closed = 0, patterns = 0, conditional = 0;

    seen[head] = head + 1;
    members[n_members++] = head;
    for (size_t i = 0; i < n_members; i++)
        add_members(s, head, seen, members, i, EDGE_GROUP, &n_members);
    n_unconditional = n_members;
    for (size_t i = 0; i < n_members; i++)
        add_members(s, head, seen, members, i, EDGE_GROUP | EDGE_BRANCH, &n_members);
    for (size_t i = 0; i < n_members; i++) {
        const tg_snode *n = &s->nodes[members[i]];
        if (n->has & TG_K_PROPERTIES)
            closed = 1;
        if (i >= n_unconditional) {
            conditional |= (n->has & (declares | TG_K_ADDITIONAL_PROPERTIES)) != 0;
            continue;
        }
        if (n->has & TG_K_ADDITIONAL_PROPERTIES)
            return TG_OK; /* it evaluates every key */
        if (n->has & declares) {
            with_props++;
            last_with_props = members[i];
            patterns |= (n->has & TG_K_PATTERN_PROPERTIES) != 0;
        }
    }
    if (!closed)
        return TG_OK;
    if (!conditional && with_props == 1 && last_with_props == head) {
        s->nodes[head].closed = TG_CLOSED_INLINE;
        return TG_OK;
    }
    if (conditional || patterns) {
        /* When the instance fails anyway, the head reports only the keys
         * no member could declare: those a failed branch would have
         * declared say nothing the branch's own finding does not. */
        s->nodes[head].closed = TG_CLOSED_MARKED;
        for (size_t i = 0; i < n_members; i++) {
            const tg_snode *n = &s->nodes[members[i]];
            if (n->has & (TG_K_PATTERN_PROPERTIES | TG_K_ADDITIONAL_PROPERTIES))
                s->nodes[head].any_key_declarable = 1;
        }
        return union_of_names(C, head, members, n_members);
    }
    s->nodes[head].closed = TG_CLOSED_APART;
    if (with_props == 1) {
        /* One member declares them all: share its (sorted) array. */
        s->nodes[head].declared = s->nodes[last_with_props].properties;
        s->nodes[head].n_declared = s->nodes[last_with_props].n_properties;
        return TG_OK;
    }
    return union_of_names(C, head, members, n_unconditional);
}

static int analyse(compiler *C)
{
    tg_schema_t *s = C->s;
    size_t n = s->n_nodes;
    uint8_t *reach = tg_mem_realloc(C->e, NULL, 0, 2 * n);
    uint32_t *seen = tg_mem_realloc(C->e, NULL, 0, n * sizeof *seen);
    frame *stack = tg_mem_realloc(C->e, NULL, 0, n * sizeof *stack);
    int rc = TG_OK;

    if (!reach || !seen || !stack) {
        rc = nomem(C);
    } else {
        memset(reach, 0, 2 * n);
        mark_reachable(s, reach, seen);
        rc = check_cycles(C, reach, reach + n, stack);
        if (rc == TG_OK && C->opt->closed) {
            memset(seen, 0, n * sizeof *seen);
            for (uint32_t i = 0; i < n && rc == TG_OK; i++)
                if (reach[i] & 2)
                    rc = close_group(C, i, seen, (uint32_t *)(void *)stack);
        }
    }
    tg_mem_free(C->e, reach, 2 * n);
    tg_mem_free(C->e, seen, n * sizeof *seen);
    tg_mem_free(C->e, stack, n * sizeof *stack);
    return rc;
}

/* ---- entry points --------------------------------------------------------------- */

void tg_schema_options_default(tg_schema_options_t *o)
{
    o->closed = 1;
    o->assert_formats = 0;
    o->ignore_keywords = NULL;
    o->annotation_formats = NULL;
}

void tg_schema_free(tg_schema_t *s)
{
    tg_engine_t *e;
    if (!s)
        return;
    e = s->engine;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const tg_snode *n = &s->nodes[i];
        tg_regex_free(n->pattern.re);
        for (uint32_t k = 0; k < n->n_pattern_properties; k++)
            tg_regex_free(n->pattern_properties[k].re);
    }
    tg_mem_free(e, s->nodes, s->cap_nodes * sizeof *s->nodes);
    tg_arena_free(&s->arena);
    tg_mem_free(e, s, sizeof *s);
    tg_engine_release(e);
}

int tg_schema_compile(tg_engine_t *e, const tg_value_t *v, const tg_schema_options_t *opt,
                      tg_schema_t **out, tg_error_t *err)
{
    tg_schema_options_t defaults;
    compiler C;
    tg_schema_t *s;
    uint32_t root;
    int rc;

    tg_error_clear(err);
    if (!out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "out is NULL");
    *out = NULL;
    if (!e || !v)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "engine or schema is NULL");
    if (!opt) {
        tg_schema_options_default(&defaults);
        opt = &defaults;
    }
    if (!is_schema(v))
        return tg_fail(err, TG_E_SCHEMA, tg_offset(v), "a schema must be an object or a boolean");
    if (!(s = tg_mem_realloc(e, NULL, 0, sizeof *s)))
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    memset(s, 0, sizeof *s);
    s->engine = e;
    tg_arena_init(&s->arena, e, 1024);
    tg_engine_retain(e);

    C.e = e;
    C.s = s;
    C.root = v;
    C.opt = opt;
    C.err = err;
    C.src = NULL;
    C.cap_src = 0;
    C.map = NULL;
    C.map_cap = 0;

    rc = intern(&C, v, "", &root);
    for (uint32_t i = 0; rc == TG_OK && i < s->n_nodes; i++)
        if (s->nodes[i].kind == TG_S_OBJECT) {
            /* Compile into a copy: interning children may move the array. */
            tg_snode n = s->nodes[i];
            rc = compile_members(&C, &n, C.src[i]);
            s->nodes[i] = n;
        }
    if (rc == TG_OK)
        rc = analyse(&C);
    tg_mem_free(e, (void *)C.src, C.cap_src * sizeof *C.src);
    tg_mem_free(e, C.map, C.map_cap * sizeof *C.map);
    if (rc != TG_OK) {
        tg_schema_free(s);
        return rc;
    }
    /* A registry holds thousands of schemas for as long as it lives: give
     * back the array's growth room (its doubling leaves up to half unused). */
    if (s->n_nodes < s->cap_nodes) {
        tg_snode *nodes =
            tg_mem_realloc(e, s->nodes, s->cap_nodes * sizeof *nodes, s->n_nodes * sizeof *nodes);
        if (!nodes) { /* (an allocator that refuses even this: every failure is NOMEM) */
            tg_schema_free(s);
            return nomem(&C);
        }
        s->nodes = nodes;
        s->cap_nodes = s->n_nodes;
    }
    *out = s;
    return TG_OK;
}
