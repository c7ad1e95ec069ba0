/*
 * tg_schema_validate.c -- a parsed instance against a compiled schema, with
 * findings a person can act on.
 *
 * One recursive walk over the schema nodes and the instance together.  Each
 * failed keyword becomes a finding (code, keyword, instance and schema
 * pointers, message) unless the walk is "silent": the branches of anyOf and
 * oneOf and the operand of not are evaluated for a yes/no only, stop at
 * their first failure, and the combinator reports once for all of them.
 * allOf and $ref are plain conjunctions, so their findings are the
 * subschemas' own.
 *
 * The findings reported are the first ones the walk meets, as many as the
 * caller has room for, H2 (a missing or undeclared key) sorted before H3
 * (a bad value) among them, each kind in walk order.  Once the room is
 * full nothing later can change what is reported, and the walk stops.
 *
 * Closed world (tg_schema_compile.c classifies each group): a group whose
 * keys only its head declares is checked in the head's pass over its
 * members; one whose keys are a fixed set is checked against that set
 * first; any other ("marked") follows JSON Schema 2020-12's annotations:
 * every member that evaluates a key of the object (properties names it, a
 * patternProperties pattern matches it, additionalProperties applies)
 * marks it in a bitmap of the object's members, a branch of anyOf / oneOf
 * marks a bitmap of its own that is merged into its parent's only when
 * the branch validated, `not` marks nothing, and what is left unmarked at
 * the head is undeclared.  The bitmaps live on a stack of words, from the
 * engine's allocator, freed before tg_validate returns.
 *
 * Budgets: max_validation_steps counts the walk's work: one step per node
 * evaluated, plus one per member of an object a node with object keywords
 * walks, one per 64 bytes of a string or number text, one per enum value
 * tried, and for uniqueItems one per item sorted and one per nested value
 * its comparisons visit (nested anyOf/oneOf, or a $ref graph that fans out,
 * could otherwise multiply the work per instance).  Pattern matches draw on
 * max_regex_steps (tg_regex.c).  Nesting is capped at TG_SCHEMA_MAX_NESTING
 * to bound the C stack.  Any of these, a regex over its match limit, and
 * running out of memory end the walk with an error: the caller must then
 * refuse.
 *
 * Nothing is allocated on this path except the sort table of uniqueItems
 * over long arrays and the bitmaps of marked groups; pointers are built
 * from a chain of stack frames, and messages are written straight into
 * the caller's findings.
 */
#include "tg_schema.h"

#include <stdlib.h>

/* ---- JSON Pointers ------------------------------------------------------ */

/* Where the walk is in the instance: a chain of frames on the C stack. */
typedef struct vpath {
    const struct vpath *up;
    const char *key; /* member key, or NULL for an array element */
    uint32_t key_len;
    uint32_t index;
} vpath;

static void pw_instance(tg_ptr_writer *w, const vpath *at)
{
    size_t depth = 0;
    for (const vpath *p = at; p; p = p->up)
        depth++;
    /* Root first; a cut pointer stops early, so this stays short. */
    for (size_t d = 0; d < depth && !w->cut; d++) {
        const vpath *p = at;
        for (size_t k = depth - 1 - d; k; k--)
            p = p->up;
        if (p->key)
            tg_pw_seg(w, p->key, p->key_len, 0);
        else
            tg_pw_index(w, p->index);
    }
}

/* ---- messages ------------------------------------------------------------- */

#define MSG_POINTER_MAX 80 /* an instance pointer inside a message */
#define MSG_EXCERPT 40     /* bytes of a string or number shown */

typedef struct msg_writer {
    char *out;
    size_t cap, len;
    int cut;
} msg_writer;

static void mw_put(msg_writer *w, const char *s, size_t n)
{
    if (w->cut)
        return;
    if (n > w->cap - 1 - w->len) {
        memcpy(w->out + w->len, s, w->cap - 1 - w->len);
        w->len = w->cap - 1;
        w->cut = 1;
        return;
    }
    memcpy(w->out + w->len, s, n);
    w->len += n;
}

static void mw_str(msg_writer *w, const char *s)
{
    mw_put(w, s, strlen(s));
}

static void mw_u64(msg_writer *w, uint64_t x)
{
    char digits[20];
    mw_put(w, digits, (size_t)tg_u64_text(x, digits));
}

/* A cut message ends in "..." after its last whole UTF-8 character. */
static void mw_end(msg_writer *w)
{
    if (w->cut) {
        w->len = w->cap - 4;
        while (w->len > 0 && ((unsigned char)w->out[w->len] & 0xC0) == 0x80)
            w->len--;
        memcpy(w->out + w->len, "...", 3);
        w->len += 3;
    }
    w->out[w->len] = '\0';
}

/* s as a JSON string literal, at most MSG_EXCERPT bytes of it. */
static void mw_quoted(msg_writer *w, const char *s, size_t n)
{
    size_t shown = n <= MSG_EXCERPT ? n : MSG_EXCERPT;
    while (shown < n && shown > 0 && ((unsigned char)s[shown] & 0xC0) == 0x80)
        shown--;
    mw_put(w, "\"", 1);
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            mw_put(w, esc, 2);
        } else if (c < 0x20) {
            static const char hex[] = "0123456789abcdef";
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            mw_put(w, esc, 6);
        } else {
            mw_put(w, s + i, 1);
        }
    }
    mw_put(w, shown < n ? "...\"" : "\"", shown < n ? 4 : 1);
}

static void mw_value(msg_writer *w, const tg_value_t *v)
{
    switch (v->type) {
    case TG_NULL:
        mw_str(w, "null");
        break;
    case TG_TRUE:
        mw_str(w, "true");
        break;
    case TG_FALSE:
        mw_str(w, "false");
        break;
    case TG_NUMBER:
        if (v->len <= MSG_EXCERPT) {
            mw_put(w, v->p.text, v->len);
        } else {
            mw_put(w, v->p.text, MSG_EXCERPT - 3);
            mw_str(w, "...");
        }
        break;
    case TG_STRING:
        mw_quoted(w, v->p.str, v->len);
        break;
    case TG_ARRAY:
        mw_str(w, "an array");
        break;
    default:
        mw_str(w, "an object");
        break;
    }
}

/* The message's subject: "/a/b": or (root): */
static void mw_where(msg_writer *w, const vpath *at)
{
    char ptr[MSG_POINTER_MAX + 1];
    tg_ptr_writer pw;
    if (!at) {
        mw_str(w, "(root): ");
        return;
    }
    tg_pw_init(&pw, ptr, sizeof ptr);
    pw_instance(&pw, at);
    tg_pw_end(&pw);
    mw_put(w, "\"", 1);
    mw_str(w, ptr);
    mw_put(w, "\": ", 3);
}

static const char *const type_names[] = {"null",   "boolean", "object", "array",
                                         "number", "string",  "integer"};

static const char *type_name(const tg_value_t *v)
{
    switch (v->type) {
    case TG_NULL:
        return "null";
    case TG_TRUE:
    case TG_FALSE:
        return "a boolean";
    case TG_NUMBER:
        return "a number";
    case TG_STRING:
        return "a string";
    case TG_ARRAY:
        return "an array";
    default:
        return "an object";
    }
}

/* ---- the walk's state and its findings ------------------------------------ */

/* Reporting is the rare path: kept out of line so the walk stays small. */
#if defined(__GNUC__)
#define COLD __attribute__((cold, noinline))
#define NOINLINE __attribute__((noinline))
#else
#define COLD
#define NOINLINE
#endif

#define NO_MARKS SIZE_MAX /* no bitmap: the walk is not in a marked group */

typedef struct vctx {
    tg_engine_t *e;
    const tg_snode *nodes;
    tg_finding_t *out;
    size_t max, n, n_h2;
    size_t steps_left;   /* what is left of max_validation_steps */
    size_t regex_budget; /* what is left of max_regex_steps */
    unsigned silent;     /* > 0 inside anyOf / oneOf branches and not */
    unsigned nesting;
    int stop; /* out is full: nothing later can change it */
    /* marked groups: a stack of bitmaps, by word offset (the stack moves
     * when it grows); marks is the current one, or NO_MARKS */
    uint64_t *words;
    size_t n_words, cap_words;
    size_t marks;
    tg_error_t *err;
} vctx;

/* The slot where a finding of this code goes, or NULL when it is not kept. */
static tg_finding_t *slot(vctx *c, int code)
{
    size_t pos;
    if (c->silent || c->stop)
        return NULL;
    /* an H2 goes after the last H2, an H3 at the end */
    pos = code == TG_H2 ? c->n_h2++ : c->n;
    memmove(&c->out[pos + 1], &c->out[pos], (c->n - pos) * sizeof *c->out);
    if (++c->n == c->max)
        c->stop = 1;
    return &c->out[pos];
}

COLD static int steps_exceeded(vctx *c)
{
    c->steps_left = 0;
    return tg_fail(c->err, TG_E_VALIDATION_LIMIT, TG_NO_OFFSET,
                   "validation took more than max_validation_steps (%zu) steps",
                   c->e->limits.max_validation_steps);
}

/* Counts k units of work against max_validation_steps. */
static inline int charge(vctx *c, size_t k)
{
    if (k > c->steps_left)
        return steps_exceeded(c);
    c->steps_left -= k;
    return TG_OK;
}

/* Starts a finding: pointers filled, message begun with its subject.
 * Returns NULL when it is not kept (then nothing is to be written). */
COLD static tg_finding_t *begin(vctx *c, int code, const char *keyword, const vpath *at,
                                const vpath *subject, const tg_snode *n, const char *seg,
                                const char *seg2, size_t seg2_len, msg_writer *w)
{
    tg_finding_t *f = slot(c, code);
    tg_ptr_writer pw;
    if (!f)
        return NULL;
    f->code = code;
    f->keyword = keyword;
    tg_pw_init(&pw, f->pointer, sizeof f->pointer);
    pw_instance(&pw, at);
    tg_pw_end(&pw);
    tg_pw_init(&pw, f->schema_pointer, sizeof f->schema_pointer);
    tg_pw_escaped(&pw, n->ptr, n->ptr_len);
    if (seg)
        tg_pw_seg(&pw, seg, strlen(seg), 1);
    if (seg2)
        tg_pw_seg(&pw, seg2, seg2_len, 0);
    tg_pw_end(&pw);
    w->out = f->message;
    w->cap = sizeof f->message;
    w->len = 0;
    w->cut = 0;
    mw_where(w, subject);
    return f;
}

/* Starts an H3 finding about the value at `at` for keyword kw of n. */
static tg_finding_t *begin_h3(vctx *c, const char *kw, const vpath *at, const tg_snode *n,
                              msg_writer *w)
{
    return begin(c, TG_H3, kw, at, at, n, kw, NULL, 0, w);
}

/* ---- keyword checks ---------------------------------------------------------- */

static int eval(vctx *c, uint32_t id, const tg_value_t *v, const vpath *at, int entry, int *ok);

/* After a failure: a silent walk needs no more, nor does a full one. */
#define DECIDED(c, ok) (!*(ok) && ((c)->silent || (c)->stop))

static int is_integer(const tg_value_t *v)
{
    tg_decimal d;
    if (!memchr(v->p.text, '.', v->len) && !memchr(v->p.text, 'e', v->len) &&
        !memchr(v->p.text, 'E', v->len))
        return 1;
    tg_decimal_init(&d, v->p.text, v->len);
    return tg_decimal_is_integer(&d);
}

static int type_ok(uint8_t types, const tg_value_t *v)
{
    switch (v->type) {
    case TG_NULL:
        return types & TG_T_NULL;
    case TG_TRUE:
    case TG_FALSE:
        return types & TG_T_BOOLEAN;
    case TG_NUMBER:
        return (types & TG_T_NUMBER) || ((types & TG_T_INTEGER) && is_integer(v));
    case TG_STRING:
        return types & TG_T_STRING;
    case TG_ARRAY:
        return types & TG_T_ARRAY;
    default:
        return types & TG_T_OBJECT;
    }
}

static void check_type(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at, int *ok)
{
    msg_writer w;
    size_t count = 0, shown = 0;
    if (type_ok(n->types, v))
        return;
    *ok = 0;
    if (!begin_h3(c, "type", at, n, &w))
        return;
    if (v->type == TG_ARRAY || v->type == TG_OBJECT) {
        mw_str(&w, "got ");
    } else {
        mw_value(&w, v);
        mw_str(&w, " is ");
    }
    mw_str(&w, type_name(v));
    mw_str(&w, ", expected ");
    for (size_t i = 0; i < 7; i++)
        count += (n->types >> i) & 1;
    for (size_t i = 0; i < 7; i++)
        if (n->types & (1u << i)) {
            if (shown)
                mw_str(&w, shown + 1 == count ? " or " : ", ");
            mw_str(&w, type_names[i]);
            shown++;
        }
    mw_end(&w);
}

static int check_enum(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at, int *ok)
{
    const tg_value_t *list = n->enum_values;
    msg_writer w;
    int rc = charge(c, list->len);
    if (rc != TG_OK)
        return rc;
    for (uint32_t i = 0; i < list->len; i++)
        if (tg_value_equal(v, &list->p.items[i]))
            return TG_OK;
    *ok = 0;
    if (!begin_h3(c, "enum", at, n, &w))
        return TG_OK;
    mw_value(&w, v);
    mw_str(&w, list->len ? " is not one of " : " is not allowed (enum is empty)");
    for (uint32_t i = 0; i < list->len && !w.cut; i++) {
        if (i)
            mw_str(&w, ", ");
        mw_value(&w, &list->p.items[i]);
    }
    mw_end(&w);
    return TG_OK;
}

static void check_const(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at, int *ok)
{
    msg_writer w;
    if (tg_value_equal(v, n->const_value))
        return;
    *ok = 0;
    if (!begin_h3(c, "const", at, n, &w))
        return;
    mw_value(&w, v);
    mw_str(&w, " is not the constant ");
    mw_value(&w, n->const_value);
    mw_end(&w);
}

/* One numeric bound: reports "<value> <relation> <bound>" when it fails. */
COLD static void number_bound(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at,
                              int fails, const char *kw, const char *relation, const tg_sbound *b,
                              int *ok)
{
    msg_writer w;
    if (!fails)
        return;
    *ok = 0;
    if (!begin_h3(c, kw, at, n, &w))
        return;
    mw_value(&w, v);
    mw_str(&w, relation);
    mw_str(&w, b->value.p.text);
    mw_end(&w);
}

/* The exact order of the number v and the bound b (tg_number_compare's,
 * whose first test, different doubles, decides here most of the time). */
static inline int bound_order(const tg_value_t *v, const tg_sbound *b)
{
    if (v->num != b->value.num)
        return v->num < b->value.num ? -1 : 1;
    return tg_number_compare(v, &b->value);
}

static void check_number(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at, int *ok)
{
    if (n->has & TG_K_MINIMUM)
        number_bound(c, n, v, at, bound_order(v, &n->num->minimum) < 0, "minimum",
                     " is less than the minimum ", &n->num->minimum, ok);
    if (n->has & TG_K_EXCLUSIVE_MINIMUM)
        number_bound(c, n, v, at, bound_order(v, &n->num->exclusive_minimum) <= 0,
                     "exclusiveMinimum", " is not greater than ", &n->num->exclusive_minimum, ok);
    if (n->has & TG_K_MAXIMUM)
        number_bound(c, n, v, at, bound_order(v, &n->num->maximum) > 0, "maximum",
                     " is greater than the maximum ", &n->num->maximum, ok);
    if (n->has & TG_K_EXCLUSIVE_MAXIMUM)
        number_bound(c, n, v, at, bound_order(v, &n->num->exclusive_maximum) >= 0,
                     "exclusiveMaximum", " is not less than ", &n->num->exclusive_maximum, ok);
    if (n->has & TG_K_MULTIPLE_OF) {
        tg_decimal x;
        tg_decimal_init(&x, v->p.text, v->len);
        /* the compiler refused divisors too long to decide exactly */
        number_bound(c, n, v, at, tg_decimal_multiple(&x, &n->num->multiple_of_decimal) != 1,
                     "multipleOf", " is not a multiple of ", &n->num->multiple_of, ok);
    }
}

/* A count against its bound: "<subject> has N <unit>s, <limit> L". */
COLD static void count_bound(vctx *c, const tg_snode *n, const vpath *at, const char *kw,
                             const char *subject, uint64_t count, const char *unit,
                             const char *limit, uint64_t bound, int *ok)
{
    msg_writer w;
    *ok = 0;
    if (!begin_h3(c, kw, at, n, &w))
        return;
    mw_str(&w, subject);
    mw_str(&w, " has ");
    mw_u64(&w, count);
    mw_str(&w, " ");
    mw_str(&w, unit);
    if (count != 1)
        mw_str(&w, "s");
    mw_str(&w, limit);
    mw_u64(&w, bound);
    mw_end(&w);
}

static int check_string(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at, int *ok)
{
    msg_writer w;
    if (n->has & (TG_K_MIN_LENGTH | TG_K_MAX_LENGTH)) {
        uint64_t cps = 0;
        /* Code points: every byte that does not continue a sequence. */
        for (uint32_t i = 0; i < v->len; i++)
            cps += ((unsigned char)v->p.str[i] & 0xC0) != 0x80;
        if ((n->has & TG_K_MIN_LENGTH) && cps < n->min_length)
            count_bound(c, n, at, "minLength", "the string", cps, "character",
                        ", fewer than the minimum ", n->min_length, ok);
        if ((n->has & TG_K_MAX_LENGTH) && cps > n->max_length)
            count_bound(c, n, at, "maxLength", "the string", cps, "character",
                        ", more than the maximum ", n->max_length, ok);
        if (DECIDED(c, ok))
            return TG_OK;
    }
    if (n->has & TG_K_PATTERN) {
        int matched, rc = tg_regex_search(c->e, n->pattern.re, v->p.str, v->len, &c->regex_budget,
                                          &matched, c->err);
        if (rc != TG_OK)
            return rc;
        if (!matched) {
            *ok = 0;
            if (begin_h3(c, "pattern", at, n, &w)) {
                mw_value(&w, v);
                mw_str(&w, " does not match the pattern ");
                mw_quoted(&w, n->pattern.source, strlen(n->pattern.source));
                mw_end(&w);
            }
        }
    }
    return TG_OK;
}

/* A format constrains its own type only (tg_format_check). */
static int check_format(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at, int *ok)
{
    msg_writer w;
    int valid, rc = tg_format_check(c->e, n->format, v, &valid, c->err);
    if (rc != TG_OK || valid)
        return rc;
    *ok = 0;
    if (begin_h3(c, "format", at, n, &w)) {
        mw_value(&w, v);
        mw_str(&w, " is not a valid ");
        mw_str(&w, tg_format_name(n->format));
        mw_str(&w, tg_format_says(n->format));
        mw_end(&w);
    }
    return TG_OK;
}

/* ---- arrays -------------------------------------------------------------- */

/* Sorting the items for uniqueItems: indexes into items, compared by
 * tg_value_compare, whose visits are counted. */
typedef struct item_sort {
    const tg_value_t *items;
    size_t visited, compared;
    uint32_t dup_i, dup_j; /* the first equal pair met, i < j */
    int dup;
} item_sort;

/* Merges the sorted runs src[lo..mid) and src[mid..hi) into dst; stops at
 * the first two equal items (returns 1). */
static int merge_runs(item_sort *st, const uint32_t *src, uint32_t *dst, size_t lo, size_t mid,
                      size_t hi)
{
    size_t a = lo, b = mid, k = lo;
    while (a < mid && b < hi) {
        int cmp = tg_value_compare(&st->items[src[a]], &st->items[src[b]], &st->visited);
        st->compared++;
        if (cmp == 0) {
            st->dup = 1;
            st->dup_i = src[a] < src[b] ? src[a] : src[b];
            st->dup_j = src[a] < src[b] ? src[b] : src[a];
            return 1;
        }
        dst[k++] = cmp < 0 ? src[a++] : src[b++];
    }
    while (a < mid)
        dst[k++] = src[a++];
    while (b < hi)
        dst[k++] = src[b++];
    return 0;
}

#define SORT_ON_STACK 64 /* items sorted without allocating */

/* uniqueItems in O(n log n) comparisons: a bottom-up merge sort of the
 * items by tg_value_compare (a total order whose 0 is JSON equality),
 * which meets any two equal items as neighbours of some merge and stops
 * there.  Charges one step per item, then one per nested value the
 * comparisons visited.  Returns TG_OK with *dup, *i < *j set when two items
 * are equal, or an error. */
NOINLINE static int find_duplicate(vctx *c, const tg_value_t *v, int *dup, uint32_t *i, uint32_t *j)
{
    uint32_t stack[2 * SORT_ON_STACK], *buf = stack, *src, *dst;
    size_t n = v->len, bytes = 2 * n * sizeof *buf;
    item_sort st = {v->p.items, 0, 0, 0, 0, 0};
    int rc = charge(c, n);
    *dup = 0;
    if (rc != TG_OK || n < 2)
        return rc;
    if (n > SORT_ON_STACK && !(buf = tg_mem_realloc(c->e, NULL, 0, bytes)))
        return tg_fail(c->err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    src = buf;
    dst = buf + n;
    for (uint32_t k = 0; k < n; k++)
        src[k] = k;
    for (size_t width = 1; width < n && !st.dup; width *= 2) {
        uint32_t *t;
        for (size_t lo = 0; lo < n && !st.dup; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            merge_runs(&st, src, dst, lo, mid, hi);
        }
        t = src;
        src = dst;
        dst = t;
    }
    if (buf != stack)
        tg_mem_free(c->e, buf, bytes);
    *dup = st.dup;
    *i = st.dup_i;
    *j = st.dup_j;
    return charge(c, st.visited - st.compared);
}

static int check_array(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at, int *ok)
{
    if ((n->has & TG_K_MIN_ITEMS) && v->len < n->min_items)
        count_bound(c, n, at, "minItems", "the array", v->len, "item", ", fewer than the minimum ",
                    n->min_items, ok);
    if ((n->has & TG_K_MAX_ITEMS) && v->len > n->max_items)
        count_bound(c, n, at, "maxItems", "the array", v->len, "item", ", more than the maximum ",
                    n->max_items, ok);
    if (DECIDED(c, ok))
        return TG_OK;
    if (n->has & TG_K_UNIQUE_ITEMS) {
        uint32_t i = 0, j = 0;
        msg_writer w;
        int dup, rc = find_duplicate(c, v, &dup, &i, &j);
        if (rc != TG_OK)
            return rc;
        if (dup) {
            *ok = 0;
            if (begin_h3(c, "uniqueItems", at, n, &w)) {
                mw_str(&w, "items ");
                mw_u64(&w, i);
                mw_str(&w, " and ");
                mw_u64(&w, j);
                mw_str(&w, " are equal, items must be unique");
                mw_end(&w);
            }
            if (DECIDED(c, ok))
                return TG_OK;
        }
    }
    if (n->has & TG_K_ITEMS)
        for (uint32_t i = 0; i < v->len; i++) {
            uint32_t child = i < n->n_prefix_items ? n->prefix_items[i] : n->rest_items;
            vpath ip = {at, NULL, 0, i};
            int rc;
            if (child == TG_SNONE)
                break;
            if ((rc = eval(c, child, &v->p.items[i], &ip, 1, ok)) != TG_OK)
                return rc;
            if (DECIDED(c, ok))
                return TG_OK;
        }
    return TG_OK;
}

/* ---- objects --------------------------------------------------------------- */

/* An H2 about key (at its would-be member) of the object at `at`. */
COLD static void key_finding(vctx *c, const char *kw, const vpath *at, const tg_snode *n,
                             const char *seg, const char *seg2, size_t seg2_len, const char *key,
                             uint32_t key_len, const char *what, const char *why, int *ok)
{
    vpath member = {at, key, key_len, 0};
    msg_writer w;
    *ok = 0;
    if (!begin(c, TG_H2, kw, &member, at, n, seg, seg2, seg2_len, &w))
        return;
    mw_str(&w, what);
    mw_quoted(&w, key, key_len);
    mw_str(&w, why);
    mw_end(&w);
}

/* tg_key_compare with the common case inline: keys that differ in an
 * ASCII first byte (where UTF-8 and UTF-16 orders agree). */
static inline int key_order(const char *a, uint32_t alen, const char *b, uint32_t blen)
{
    if (alen && blen && a[0] != b[0] && ((unsigned char)a[0] | (unsigned char)b[0]) < 0x80)
        return (unsigned char)a[0] < (unsigned char)b[0] ? -1 : 1;
    return tg_key_compare(a, alen, b, blen);
}

/* ---- closed world -------------------------------------------------------- */

/* Closed world, a fixed set: the keys no member of n's group declares.
 * Members and declared names are both in RFC 8785 order: one merge walk.
 * (When the group's names are n's own properties, check_members does this
 * on its walk instead.) */
static int check_closed(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at, int *ok)
{
    uint32_t j = 0;
    int rc = charge(c, v->len);
    if (rc != TG_OK)
        return rc;
    for (uint32_t i = 0; i < v->len && !DECIDED(c, ok); i++) {
        const tg_value_t *m = &v->p.items[i];
        int cmp = 1;
        while (j < n->n_declared &&
               (cmp = key_order(n->declared[j].name, n->declared[j].len, m->key, m->key_len)) < 0)
            j++;
        if (j == n->n_declared || cmp != 0)
            key_finding(c, "closed", at, n, NULL, NULL, 0, m->key, m->key_len, "key ",
                        " is not declared by the schema", ok);
    }
    return TG_OK;
}

/* A zeroed bitmap of n_members bits on the stack; *at is its offset. */
static int marks_push(vctx *c, size_t n_members, size_t *at)
{
    size_t need = n_members / 64 + 1;
    if (need > c->cap_words - c->n_words) {
        size_t cap = c->cap_words ? c->cap_words : 64;
        uint64_t *w;
        while (cap - c->n_words < need)
            cap *= 2;
        if (!(w = tg_mem_realloc(c->e, c->words, c->cap_words * sizeof *w, cap * sizeof *w)))
            return tg_fail(c->err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        c->words = w;
        c->cap_words = cap;
    }
    memset(c->words + c->n_words, 0, need * sizeof *c->words);
    *at = c->n_words;
    c->n_words += need;
    return TG_OK;
}

/* Member i of the object is evaluated (in a marked group). */
static inline void mark(vctx *c, uint32_t i)
{
    if (c->marks != NO_MARKS)
        c->words[c->marks + i / 64] |= (uint64_t)1 << (i % 64);
}

/* ---- objects (continued) ------------------------------------------------- */

/* properties, patternProperties, additionalProperties and propertyNames
 * over the members, marking the members they evaluate; closed: also
 * refuse what no property or pattern names (the group is n alone, as far
 * as its keys go). */
static int check_members(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at,
                         int closed, int *ok)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < v->len; i++) {
        const tg_value_t *m = &v->p.items[i];
        vpath mp = {at, m->key, m->key_len, 0};
        int matched = 0, rc, cmp = 1;
        /* Members and properties are both in RFC 8785 order: one merge walk. */
        while (j < n->n_properties && (cmp = key_order(n->properties[j].name, n->properties[j].len,
                                                       m->key, m->key_len)) < 0)
            j++;
        if (j < n->n_properties && cmp == 0) {
            matched = 1;
            if ((rc = eval(c, n->properties[j].node, m, &mp, 1, ok)) != TG_OK)
                return rc;
        }
        for (uint32_t k = 0; k < n->n_pattern_properties && !DECIDED(c, ok); k++) {
            int hit;
            rc = tg_regex_search(c->e, n->pattern_properties[k].re, m->key, m->key_len,
                                 &c->regex_budget, &hit, c->err);
            if (rc != TG_OK)
                return rc;
            if (hit) {
                matched = 1;
                if ((rc = eval(c, n->pattern_properties[k].node, m, &mp, 1, ok)) != TG_OK)
                    return rc;
            }
        }
        if (matched || n->additional_properties != TG_SNONE)
            mark(c, i);
        if (!matched && closed)
            key_finding(c, "closed", at, n, NULL, NULL, 0, m->key, m->key_len, "key ",
                        " is not declared by the schema", ok);
        if (!matched && n->additional_properties != TG_SNONE && !DECIDED(c, ok)) {
            if (c->nodes[n->additional_properties].kind == TG_S_FALSE)
                key_finding(c, "additionalProperties", at, n, "additionalProperties", NULL, 0,
                            m->key, m->key_len, "key ",
                            " is not allowed (additionalProperties is false)", ok);
            else if ((rc = eval(c, n->additional_properties, m, &mp, 1, ok)) != TG_OK)
                return rc;
        }
        if (n->property_names != TG_SNONE && !DECIDED(c, ok)) {
            tg_value_t name;
            memset(&name, 0, sizeof name);
            name.type = TG_STRING;
            name.p.str = m->key;
            name.len = m->key_len;
            if ((rc = eval(c, n->property_names, &name, &mp, 1, ok)) != TG_OK)
                return rc;
        }
        if (DECIDED(c, ok))
            return TG_OK;
    }
    return TG_OK;
}

static int check_object(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at,
                        int closed, int *ok)
{
    /* the walks below are over the members */
    int rc = n->has & (TG_K_OBJECT & ~(TG_K_MIN_PROPERTIES | TG_K_MAX_PROPERTIES))
                 ? charge(c, v->len)
                 : TG_OK;
    if (rc != TG_OK)
        return rc;
    /* required is sorted like the members: one merge walk. */
    for (uint32_t i = 0, j = 0; i < n->n_required && !DECIDED(c, ok); i++) {
        const tg_sname *r = &n->required[i];
        int cmp = 1;
        while (j < v->len &&
               (cmp = key_order(v->p.items[j].key, v->p.items[j].key_len, r->name, r->len)) < 0)
            j++;
        if (j == v->len || cmp != 0)
            key_finding(c, "required", at, n, "required", NULL, 0, r->name, r->len, "required key ",
                        " is missing", ok);
    }
    for (uint32_t i = 0; i < n->n_dependent_required && !DECIDED(c, ok); i++) {
        const tg_sdependency *d = &n->dependent_required[i];
        if (!tg_get(v, d->key.name, d->key.len))
            continue;
        for (uint32_t k = 0; k < d->n_needs && !DECIDED(c, ok); k++)
            if (!tg_get(v, d->needs[k].name, d->needs[k].len)) {
                vpath member = {at, d->needs[k].name, d->needs[k].len, 0};
                msg_writer w;
                *ok = 0;
                if (begin(c, TG_H2, "dependentRequired", &member, at, n, "dependentRequired",
                          d->key.name, d->key.len, &w)) {
                    mw_str(&w, "key ");
                    mw_quoted(&w, d->needs[k].name, d->needs[k].len);
                    mw_str(&w, " is required when ");
                    mw_quoted(&w, d->key.name, d->key.len);
                    mw_str(&w, " is present");
                    mw_end(&w);
                }
            }
    }
    if ((n->has & TG_K_MIN_PROPERTIES) && v->len < n->min_properties)
        count_bound(c, n, at, "minProperties", "the object", v->len, "key",
                    ", fewer than the minimum ", n->min_properties, ok);
    if ((n->has & TG_K_MAX_PROPERTIES) && v->len > n->max_properties)
        count_bound(c, n, at, "maxProperties", "the object", v->len, "key",
                    ", more than the maximum ", n->max_properties, ok);
    if (DECIDED(c, ok))
        return TG_OK;
    if (n->has & (TG_K_PROPERTIES | TG_K_PATTERN_PROPERTIES | TG_K_ADDITIONAL_PROPERTIES |
                  TG_K_PROPERTY_NAMES))
        return check_members(c, n, v, at, closed, ok);
    return TG_OK;
}

/* ---- combinators ------------------------------------------------------------- */

/* Whether every member of the object (n_members bits) is marked at words. */
static int all_marked(const uint64_t *words, size_t n_members)
{
    size_t full = n_members / 64, rest = n_members % 64;
    for (size_t k = 0; k < full; k++)
        if (words[k] != UINT64_MAX)
            return 0;
    return !rest || words[full] == ((uint64_t)1 << rest) - 1;
}

/* How many of the branches v matches, evaluated silently; stops counting
 * at `enough`.  In a marked group each branch marks a bitmap of its own,
 * merged into the group's only when the branch validated; with
 * until_declared (anyOf, where one match is enough) it stops too once
 * every key is marked, since the branches left cannot declare more. */
static int count_matches(vctx *c, const uint32_t *branches, uint32_t n_branches,
                         const tg_value_t *v, const vpath *at, uint32_t enough, int until_declared,
                         uint32_t *matched)
{
    size_t parent = c->marks, mine = NO_MARKS, words = v->len / 64 + 1;
    int rc = parent == NO_MARKS ? TG_OK : marks_push(c, v->len, &mine);
    *matched = 0;
    if (rc != TG_OK)
        return rc;
    c->silent++;
    for (uint32_t i = 0; i < n_branches && *matched < enough; i++) {
        int branch_ok = 1;
        if (mine != NO_MARKS) {
            memset(c->words + mine, 0, words * sizeof *c->words);
            c->marks = mine;
        }
        rc = eval(c, branches[i], v, at, 0, &branch_ok);
        c->marks = parent;
        if (rc != TG_OK)
            break;
        *matched += (uint32_t)branch_ok;
        if (branch_ok && mine != NO_MARKS) {
            for (size_t k = 0; k < words; k++)
                c->words[parent + k] |= c->words[mine + k];
            if (until_declared && all_marked(c->words + parent, v->len))
                break;
        }
    }
    c->silent--;
    if (mine != NO_MARKS)
        c->n_words = mine;
    return rc;
}

static int check_combinators(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at,
                             int *ok)
{
    uint32_t matched;
    msg_writer w;
    int rc;
    for (uint32_t i = 0; i < n->n_all_of; i++) {
        if ((rc = eval(c, n->all_of[i], v, at, 0, ok)) != TG_OK)
            return rc;
        if (DECIDED(c, ok))
            return TG_OK;
    }
    if (n->n_any_of) {
        /* Every valid branch declares keys for a marked group: try them all. */
        uint32_t enough = c->marks != NO_MARKS ? n->n_any_of : 1;
        if ((rc = count_matches(c, n->any_of, n->n_any_of, v, at, enough, 1, &matched)) != TG_OK)
            return rc;
        if (!matched) {
            *ok = 0;
            if (begin_h3(c, "anyOf", at, n, &w)) {
                mw_value(&w, v);
                mw_str(&w, " matches none of the ");
                mw_u64(&w, n->n_any_of);
                mw_str(&w, " alternatives of anyOf");
                mw_end(&w);
            }
            if (DECIDED(c, ok))
                return TG_OK;
        }
    }
    if (n->n_one_of) {
        /* A silent walk only needs to know "not exactly one". */
        uint32_t enough = c->silent ? 2 : n->n_one_of;
        if ((rc = count_matches(c, n->one_of, n->n_one_of, v, at, enough, 0, &matched)) != TG_OK)
            return rc;
        if (matched != 1) {
            *ok = 0;
            if (begin_h3(c, "oneOf", at, n, &w)) {
                mw_value(&w, v);
                if (matched) {
                    mw_str(&w, " matches ");
                    mw_u64(&w, matched);
                    mw_str(&w, " of the ");
                } else {
                    mw_str(&w, " matches none of the ");
                }
                mw_u64(&w, n->n_one_of);
                mw_str(&w, " alternatives of oneOf, exactly one must match");
                mw_end(&w);
            }
            if (DECIDED(c, ok))
                return TG_OK;
        }
    }
    if (n->not_schema != TG_SNONE) {
        /* what `not` evaluates is never declared */
        size_t marks = c->marks;
        c->marks = NO_MARKS;
        rc = count_matches(c, &n->not_schema, 1, v, at, 1, 0, &matched);
        c->marks = marks;
        if (rc != TG_OK)
            return rc;
        if (matched) {
            *ok = 0;
            if (begin_h3(c, "not", at, n, &w)) {
                mw_value(&w, v);
                mw_str(&w, " must not match the schema of not");
                mw_end(&w);
            }
        }
    }
    return TG_OK;
}

/* ---- one node -------------------------------------------------------------------- */

/* Everything n asserts about v, in place; closed: n's own properties are
 * all its group declares (TG_CLOSED_INLINE, at its instance location). */
static int eval_keywords(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at,
                         int closed, int *ok)
{
    int rc;
    if (n->ref != TG_SNONE) {
        if ((rc = eval(c, n->ref, v, at, 0, ok)) != TG_OK)
            return rc;
        if (DECIDED(c, ok))
            return TG_OK;
    }
    /* the checks below read a scalar's text (or bytes) whole */
    if (v->len >= 64 && (v->type == TG_STRING || v->type == TG_NUMBER) &&
        (n->has & (TG_K_TYPE | TG_K_ENUM | TG_K_CONST | TG_K_NUMBER | TG_K_STRING)) &&
        (rc = charge(c, v->len / 64)) != TG_OK)
        return rc;
    if (n->has & TG_K_TYPE)
        check_type(c, n, v, at, ok);
    if (n->has & TG_K_CONST)
        check_const(c, n, v, at, ok);
    if ((n->has & TG_K_ENUM) && (rc = check_enum(c, n, v, at, ok)) != TG_OK)
        return rc;
    if (DECIDED(c, ok))
        return TG_OK;
    if ((n->has & TG_K_FORMAT) && ((rc = check_format(c, n, v, at, ok)) != TG_OK || DECIDED(c, ok)))
        return rc;
    rc = TG_OK;
    switch (v->type) {
    case TG_NUMBER:
        if (n->has & TG_K_NUMBER)
            check_number(c, n, v, at, ok);
        break;
    case TG_STRING:
        if (n->has & TG_K_STRING)
            rc = check_string(c, n, v, at, ok);
        break;
    case TG_ARRAY:
        if (n->has & TG_K_ARRAY)
            rc = check_array(c, n, v, at, ok);
        break;
    case TG_OBJECT:
        if (n->has & TG_K_OBJECT)
            rc = check_object(c, n, v, at, closed, ok);
        break;
    default:
        break;
    }
    if (rc != TG_OK || DECIDED(c, ok))
        return rc;
    if (n->n_all_of || n->n_any_of || n->n_one_of || n->not_schema != TG_SNONE)
        return check_combinators(c, n, v, at, ok);
    return TG_OK;
}

/* Whether some member of n's group names key (n->declared, sorted). */
static int declarable(const tg_snode *n, const char *key, uint32_t len)
{
    size_t lo = 0, hi = n->n_declared;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = tg_key_compare(n->declared[mid].name, n->declared[mid].len, key, len);
        if (cmp == 0)
            return 1;
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* A marked group's head at the object v, after its keywords were
 * evaluated (rc, *head_ok) with its members marking what they evaluate in
 * the bitmap at mine: what is left unmarked is undeclared.  When the head
 * fails anyway (a branch that did not match declared nothing), only keys
 * no member could declare are reported: the rest would only repeat, as
 * H2s, what the failed combinator's finding says. */
NOINLINE static int end_marked(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at,
                               size_t mine, int rc, int *head_ok)
{
    int report = !DECIDED(c, head_ok) && !c->stop && (*head_ok || !n->any_key_declarable);
    if (rc == TG_OK && report)
        rc = charge(c, v->len);
    for (uint32_t i = 0; rc == TG_OK && report && i < v->len && !DECIDED(c, head_ok) && !c->stop;
         i++) {
        const tg_value_t *m = &v->p.items[i];
        if (!(c->words[mine + i / 64] & ((uint64_t)1 << (i % 64))) &&
            (*head_ok || !declarable(n, m->key, m->key_len)))
            key_finding(c, "closed", at, n, NULL, NULL, 0, m->key, m->key_len, "key ",
                        " is not declared by the schema", head_ok);
    }
    c->n_words = mine;
    return rc;
}

static int eval_node(vctx *c, const tg_snode *n, const tg_value_t *v, const vpath *at, int entry,
                     int *ok)
{
    size_t mine = NO_MARKS;
    int closed = 0, head_ok = 1, *keywords_ok = ok, rc;
    /* Closed world is the group's: checked once, where the walk enters
     * an instance location, never again by the group's members. */
    if (entry && n->closed && v->type == TG_OBJECT) {
        if (n->closed == TG_CLOSED_INLINE) {
            closed = 1;
        } else if (n->closed == TG_CLOSED_APART) {
            if ((rc = check_closed(c, n, v, at, ok)) != TG_OK || DECIDED(c, ok))
                return rc;
        } else {
            if ((rc = marks_push(c, v->len, &mine)) != TG_OK)
                return rc;
            c->marks = mine;
            keywords_ok = &head_ok;
        }
    }
    rc = eval_keywords(c, n, v, at, closed, keywords_ok);
    if (mine == NO_MARKS)
        return rc;
    c->marks = NO_MARKS;
    rc = end_marked(c, n, v, at, mine, rc, &head_ok);
    *ok &= head_ok;
    return rc;
}

static int eval(vctx *c, uint32_t id, const tg_value_t *v, const vpath *at, int entry, int *ok)
{
    const tg_snode *n = &c->nodes[id];
    size_t marks = c->marks;
    int rc;
    if (c->stop)
        return TG_OK;
    if ((rc = charge(c, 1)) != TG_OK)
        return rc;
    if (n->kind == TG_S_TRUE)
        return TG_OK;
    if (n->kind == TG_S_FALSE) {
        msg_writer w;
        *ok = 0;
        if (begin(c, TG_H3, "false", at, at, n, NULL, NULL, 0, &w)) {
            mw_str(&w, "no value is allowed here (the schema is false)");
            mw_end(&w);
        }
        return TG_OK;
    }
    if (c->nesting >= TG_SCHEMA_MAX_NESTING)
        return tg_fail(c->err, TG_E_VALIDATION_LIMIT, TG_NO_OFFSET,
                       "schemas nested more than %d deep during validation", TG_SCHEMA_MAX_NESTING);
    c->nesting++;
    /* a new instance location: the marks of the one it left are not its own */
    c->marks = entry ? NO_MARKS : marks;
    rc = eval_node(c, n, v, at, entry, ok);
    c->marks = marks;
    c->nesting--;
    return rc;
}

int tg_validate(tg_engine_t *e, const tg_schema_t *s, const tg_value_t *v, tg_finding_t *findings,
                size_t max, size_t *count, tg_error_t *err)
{
    vctx c;
    int ok = 1;
    int rc;

    tg_error_clear(err);
    if (count)
        *count = 0;
    if (!e || !s || !v || !findings || !count || max == 0)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "engine, schema, value, findings and count are required, max >= 1");
    memset(&c, 0, sizeof c);
    c.e = e;
    c.nodes = s->nodes;
    c.out = findings;
    c.max = max;
    c.steps_left = e->limits.max_validation_steps;
    c.regex_budget = e->limits.max_regex_steps;
    c.marks = NO_MARKS;
    c.err = err;
    rc = eval(&c, 0, v, NULL, 1, &ok);
    tg_mem_free(e, c.words, c.cap_words * sizeof *c.words);
    *count = c.n;
    return rc;
}
