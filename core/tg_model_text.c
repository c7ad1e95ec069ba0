/*
 * tg_model_text.c -- what a model reads about a tools/call an MCP gateway
 * refused or deferred (mcp.refusal = "result": the text of the
 * CallToolResult with isError).
 *
 * Written here, once, so that both bindings and every front end give the
 * same bytes for the same decision.  The text says what was wrong and what
 * the model can do about it: for arguments, what the tool accepts (its
 * keys, which are required, each key's type, enum values and bounds, read
 * from the compiled input schema); for a policy's refusal, that only a
 * person can change it and how (the host's hint); for a defer, that a
 * person was asked and how to ask again; for a quota, that waiting (the
 * time its message gives) is what helps.  Short and deterministic: the
 * keys in the schema's sorted order, at most MODEL_TEXT_MAX_KEYS of them
 * and MODEL_TEXT_MAX_ENUM values each, numbers in their canonical form.
 */
#include "tg_internal.h"
#include "tg_schema.h"

#include <stdio.h>

#define MODEL_TEXT_MAX_KEYS 16
#define MODEL_TEXT_MAX_ENUM 8

typedef struct {
    tg_buf_t *out;
    tg_error_t *err;
    int rc;
} writer;

static void put(writer *w, const char *s, size_t n)
{
    if (w->rc == TG_OK)
        w->rc = tg_buf_append(w->out, s, n, w->err);
}

static void puts_(writer *w, const char *s)
{
    put(w, s, strlen(s));
}

static void put_value(writer *w, const tg_value_t *v)
{
    if (w->rc == TG_OK)
        w->rc = tg_canon_value(v, w->out, w->err);
}

static void put_count(writer *w, const char *before, uint64_t n, const char *after)
{
    char num[24];
    snprintf(num, sizeof num, "%llu", (unsigned long long)n);
    puts_(w, before);
    puts_(w, num);
    puts_(w, after);
}

/* The node a schema's $ref leads to (a few hops), or the node itself. */
static const tg_snode *resolved(const tg_schema_t *s, uint32_t i)
{
    int hops;
    if (i == TG_SNONE || i >= s->n_nodes)
        return NULL;
    for (hops = 0; hops < 8 && s->nodes[i].ref != TG_SNONE && s->nodes[i].ref < s->n_nodes; hops++)
        i = s->nodes[i].ref;
    return &s->nodes[i];
}

static int is_required(const tg_snode *root, const tg_sname *key)
{
    for (uint32_t k = 0; k < root->n_required; k++)
        if (root->required[k].len == key->len &&
            memcmp(root->required[k].name, key->name, key->len) == 0)
            return 1;
    return 0;
}

/* "string", "integer or null", ... from the type bits. */
static void put_types(writer *w, unsigned types, int *first)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {{TG_T_STRING, "string"},   {TG_T_INTEGER, "integer"}, {TG_T_NUMBER, "number"},
                 {TG_T_BOOLEAN, "boolean"}, {TG_T_OBJECT, "object"},   {TG_T_ARRAY, "array"},
                 {TG_T_NULL, "null"}};
    int any = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(types & names[i].bit) || (names[i].bit == TG_T_INTEGER && (types & TG_T_NUMBER)))
            continue;
        puts_(w, any ? " or " : "");
        puts_(w, names[i].name);
        any = 1;
    }
    if (any)
        *first = 0;
}

static void put_bound(writer *w, int *first, const char *what, const tg_value_t *v)
{
    puts_(w, *first ? "" : ", ");
    puts_(w, what);
    put_value(w, v);
    *first = 0;
}

static void put_limit(writer *w, int *first, const char *before, uint64_t n, const char *after)
{
    puts_(w, *first ? "" : ", ");
    put_count(w, before, n, after);
    *first = 0;
}

/* What one key accepts: "(string, at most 100 characters, required)". */
static void put_key(writer *w, const tg_schema_t *s, const tg_sname *key, int required)
{
    const tg_snode *n = resolved(s, key->node);
    int first = 1;
    put(w, key->name, key->len);
    puts_(w, " (");
    if (n && n->kind == TG_S_OBJECT) {
        if (n->has & TG_K_TYPE)
            put_types(w, n->types, &first);
        if ((n->has & TG_K_CONST) && n->const_value)
            put_bound(w, &first, "exactly ", n->const_value);
        if ((n->has & TG_K_ENUM) && n->enum_values) {
            size_t len = tg_len(n->enum_values);
            puts_(w, first ? "one of " : ", one of ");
            for (size_t i = 0; i < len && i < MODEL_TEXT_MAX_ENUM; i++) {
                puts_(w, i ? ", " : "");
                put_value(w, tg_at(n->enum_values, i));
            }
            if (len > MODEL_TEXT_MAX_ENUM)
                put_count(w, ", and ", len - MODEL_TEXT_MAX_ENUM, " more");
            first = 0;
        }
        if (n->has & TG_K_MINIMUM)
            put_bound(w, &first, "at least ", &n->num->minimum.value);
        if (n->has & TG_K_EXCLUSIVE_MINIMUM)
            put_bound(w, &first, "above ", &n->num->exclusive_minimum.value);
        if (n->has & TG_K_MAXIMUM)
            put_bound(w, &first, "at most ", &n->num->maximum.value);
        if (n->has & TG_K_EXCLUSIVE_MAXIMUM)
            put_bound(w, &first, "below ", &n->num->exclusive_maximum.value);
        if ((n->has & TG_K_FORMAT) && tg_format_name(n->format)) {
            puts_(w, first ? "format " : ", format ");
            puts_(w, tg_format_name(n->format));
            first = 0;
        }
        if (n->has & TG_K_MIN_LENGTH)
            put_limit(w, &first, "at least ", n->min_length, " characters");
        if (n->has & TG_K_MAX_LENGTH)
            put_limit(w, &first, "at most ", n->max_length, " characters");
        if (n->has & TG_K_MIN_ITEMS)
            put_limit(w, &first, "at least ", n->min_items, " items");
        if (n->has & TG_K_MAX_ITEMS)
            put_limit(w, &first, "at most ", n->max_items, " items");
    }
    if (required) {
        puts_(w, first ? "required" : ", required");
        first = 0;
    }
    if (first)
        puts_(w, "any value");
    puts_(w, ")");
}

/* "NAME accepts: k1 (...), k2 (...); no other keys." */
static void put_accepts(writer *w, const tg_schema_t *s, const char *name)
{
    const tg_snode *root = s ? resolved(s, 0) : NULL;
    uint32_t n;
    if (!root || root->kind != TG_S_OBJECT)
        return;
    n = root->n_properties;
    if (n == 0) {
        /* nothing declared: no key is welcome when the schema says so or the world is closed */
        const tg_snode *more = resolved(s, root->additional_properties);
        if (root->n_pattern_properties == 0 &&
            ((more && more->kind == TG_S_FALSE) || root->closed != TG_OPEN)) {
            puts_(w, " ");
            puts_(w, name);
            puts_(w, " takes no arguments: call it with {}.");
        }
        return;
    }
    puts_(w, " ");
    puts_(w, name);
    puts_(w, " accepts: ");
    for (uint32_t k = 0; k < n && k < MODEL_TEXT_MAX_KEYS; k++) {
        puts_(w, k ? ", " : "");
        put_key(w, s, &root->properties[k], is_required(root, &root->properties[k]));
    }
    if (n > MODEL_TEXT_MAX_KEYS)
        put_count(w, ", and ", n - MODEL_TEXT_MAX_KEYS, " more keys");
    puts_(w, ".");
}

static int is(const char *s, const char *lit)
{
    return s && strcmp(s, lit) == 0;
}

int tg_model_text(const tg_registry_t *r, long tool, const char *name, int deferred,
                  const char *code, const char *path, const char *message, const char *approval_id,
                  const char *hint, tg_buf_t *out, tg_error_t *err)
{
    writer w = {out, err, TG_OK};
    const char *what = code && *code ? code : "?";

    tg_error_clear(err);
    if (!out || !name)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "name and out are required");
    if (deferred) {
        puts_(&w, "toolgate asked a person to approve this call to ");
        puts_(&w, name);
        puts_(&w, " (");
        puts_(&w, what);
        if (message && *message) {
            puts_(&w, ": ");
            puts_(&w, message);
        }
        puts_(&w, "); it has not run.");
        if (approval_id) {
            puts_(&w, " Approval ");
            puts_(&w, approval_id);
            puts_(&w, ".");
        }
        if (hint && *hint) {
            puts_(&w, " ");
            puts_(&w, hint);
        }
        puts_(&w,
              " Once it is granted, the same call with the same arguments passes; other arguments "
              "ask again.");
    } else {
        puts_(&w, "toolgate refused this call to ");
        puts_(&w, name);
        puts_(&w, ": ");
        puts_(&w, what);
        if (path && *path) {
            puts_(&w, " at ");
            puts_(&w, path);
        }
        if (message && *message) {
            puts_(&w, ": ");
            puts_(&w, message);
        }
        puts_(&w, ".");
        if (is(code, "H2") || is(code, "H3") || is(code, "BAD_ARGUMENTS")) {
            put_accepts(&w, tool >= 0 ? tg_registry_input_schema(r, (size_t)tool) : NULL, name);
            puts_(&w, " Correct the arguments and call again.");
        } else if (is(code, "H4") || is(code, "APPROVAL_DENIED")) {
            puts_(&w,
                  " The policy decides this, not the arguments: calling again unchanged gets the "
                  "same answer.");
            if (hint && *hint) {
                puts_(&w, " ");
                puts_(&w, hint);
            }
        } else if (is(code, "QUOTA")) {
            /* the message says the limit, the window and the seconds left */
            puts_(&w, " A quota counts these calls whatever their arguments: the same call passes "
                      "once the time it says has passed; calling sooner gets the same answer.");
        }
    }
    put(&w, "", 1); /* the NUL, not counted */
    if (w.rc == TG_OK)
        out->len--;
    return w.rc;
}
