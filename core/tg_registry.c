/*
 * tg_registry.c -- the trusted set of tools: (server, name) -> compiled
 * schemas and pin.  Built by tg_registry_add, read by lookups that never
 * change it.
 *
 * Two open-addressing tables index the tools: one by (server, name), one by
 * bare name, where tools sharing a name are chained in order of addition so
 * an ambiguous bare name can list every candidate.
 */
#include "tg_internal.h"

/* XXH3 inlined here, as tg_hash.c has it (the values of tg_hash64): every
 * call decided hashes a server and a name, short strings, where a call
 * out costs about what the hash does. */
#define XXH_INLINE_ALL
#include <xxhash.h>

typedef struct tool {
    char *server; /* NUL-terminated copies, owned */
    size_t server_len;
    char *name;
    size_t name_len;
    tg_schema_t *input;
    tg_schema_t *output;
    tg_hash128_t pin;
    size_t next_same_name; /* index + 1 of the next tool with this name, 0 for none */
} tool;

struct tg_registry_t {
    tg_engine_t *e;
    tool *tools;
    size_t n, cap;
    size_t *by_pair; /* slots hold index + 1, 0 = empty */
    size_t *by_name; /* first tool (index + 1) with a name */
    size_t slots;    /* power of two, kept at least twice n */
};

static uint64_t pair_hash(const char *server, size_t slen, const char *name, size_t nlen)
{
    return XXH3_64bits(name, nlen) ^ (XXH3_64bits(server, slen) * 0x9E3779B97F4A7C15ull);
}

static int same(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && memcmp(a, b, alen) == 0;
}

tg_registry_t *tg_registry_new(tg_engine_t *e, tg_error_t *err)
{
    tg_registry_t *r = tg_mem_realloc(e, NULL, 0, sizeof *r);
    tg_error_clear(err);
    if (!r) {
        tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        return NULL;
    }
    memset(r, 0, sizeof *r);
    r->e = e;
    tg_engine_retain(e);
    return r;
}

static void free_tool(tg_engine_t *e, tool *t)
{
    tg_mem_free(e, t->server, t->server_len + 1);
    tg_mem_free(e, t->name, t->name_len + 1);
    tg_schema_free(t->input);
    tg_schema_free(t->output);
}

void tg_registry_free(tg_registry_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free_tool(r->e, &r->tools[i]);
    tg_mem_free(r->e, r->tools, r->cap * sizeof *r->tools);
    tg_mem_free(r->e, r->by_pair, r->slots * sizeof *r->by_pair);
    tg_mem_free(r->e, r->by_name, r->slots * sizeof *r->by_name);
    {
        tg_engine_t *e = r->e;
        tg_mem_free(e, r, sizeof *r);
        tg_engine_release(e);
    }
}

/* Slot of (server, name) in by_pair: where it is, or the empty slot where it
 * would go. */
static size_t pair_slot(const tg_registry_t *r, const char *server, size_t slen, const char *name,
                        size_t nlen)
{
    size_t mask = r->slots - 1, i = (size_t)pair_hash(server, slen, name, nlen) & mask;
    for (;; i = (i + 1) & mask) {
        size_t k = r->by_pair[i];
        if (k == 0)
            return i;
        if (same(r->tools[k - 1].server, r->tools[k - 1].server_len, server, slen) &&
            same(r->tools[k - 1].name, r->tools[k - 1].name_len, name, nlen))
            return i;
    }
}

static size_t name_slot(const tg_registry_t *r, const char *name, size_t nlen)
{
    size_t mask = r->slots - 1, i = (size_t)XXH3_64bits(name, nlen) & mask;
    for (;; i = (i + 1) & mask) {
        size_t k = r->by_name[i];
        if (k == 0 || same(r->tools[k - 1].name, r->tools[k - 1].name_len, name, nlen))
            return i;
    }
}

/* Rebuilds both tables at twice the size; the tools array is unchanged. */
static int grow_tables(tg_registry_t *r, tg_error_t *err)
{
    size_t slots = r->slots ? r->slots * 2 : 16;
    size_t *pair = tg_mem_realloc(r->e, NULL, 0, slots * sizeof *pair);
    size_t *byname = tg_mem_realloc(r->e, NULL, 0, slots * sizeof *byname);
    if (!pair || !byname) {
        tg_mem_free(r->e, pair, slots * sizeof *pair);
        tg_mem_free(r->e, byname, slots * sizeof *byname);
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    }
    memset(pair, 0, slots * sizeof *pair);
    memset(byname, 0, slots * sizeof *byname);
    tg_mem_free(r->e, r->by_pair, r->slots * sizeof *r->by_pair);
    tg_mem_free(r->e, r->by_name, r->slots * sizeof *r->by_name);
    r->by_pair = pair;
    r->by_name = byname;
    r->slots = slots;
    for (size_t i = 0; i < r->n; i++) {
        tool *t = &r->tools[i];
        size_t ns = name_slot(r, t->name, t->name_len);
        r->by_pair[pair_slot(r, t->server, t->server_len, t->name, t->name_len)] = i + 1;
        if (r->by_name[ns] == 0)
            r->by_name[ns] = i + 1; /* the chain through next_same_name is kept */
    }
    return TG_OK;
}

static char *copy_string(tg_engine_t *e, const char *s, size_t len)
{
    char *c = tg_mem_realloc(e, NULL, 0, len + 1);
    if (c) {
        if (len)
            memcpy(c, s, len);
        c[len] = '\0';
    }
    return c;
}

/* The pin: XXH3-128 of {"description","inputSchema","name","outputSchema"}
 * in canonical form (keys already in RFC 8785 order). */
static int compute_pin(tg_engine_t *e, const char *name, size_t nlen, const char *desc, size_t dlen,
                       const tg_value_t *input, const tg_value_t *output, tg_hash128_t *pin,
                       tg_error_t *err)
{
    tg_buf_t b;
    int rc;
    tg_buf_init(&b, e);
    if ((rc = tg_buf_append(&b, "{\"description\":", 15, err)) == TG_OK)
        rc = desc ? tg_canon_string(&b, desc, dlen, err) : tg_buf_append(&b, "null", 4, err);
    if (rc == TG_OK)
        rc = tg_buf_append(&b, ",\"inputSchema\":", 15, err);
    if (rc == TG_OK)
        rc = input ? tg_canon_value(input, &b, err) : tg_buf_append(&b, "null", 4, err);
    if (rc == TG_OK)
        rc = tg_buf_append(&b, ",\"name\":", 8, err);
    if (rc == TG_OK)
        rc = tg_canon_string(&b, name, nlen, err);
    if (rc == TG_OK)
        rc = tg_buf_append(&b, ",\"outputSchema\":", 16, err);
    if (rc == TG_OK)
        rc = output ? tg_canon_value(output, &b, err) : tg_buf_append(&b, "null", 4, err);
    if (rc == TG_OK)
        rc = tg_buf_append(&b, "}", 1, err);
    if (rc == TG_OK)
        tg_hash128(b.data, b.len, pin);
    tg_buf_free(&b);
    return rc;
}

/* Schema errors point into one schema; say which of the tool's two. */
static void locate_in(tg_error_t *err, const char *prefix)
{
    size_t plen = strlen(prefix), len;
    if (!err)
        return;
    len = strnlen(err->pointer, sizeof err->pointer - 1);
    if (len > sizeof err->pointer - 1 - plen) /* keep the prefix; cut the tail */
        len = sizeof err->pointer - 1 - plen;
    memmove(err->pointer + plen, err->pointer, len);
    memcpy(err->pointer, prefix, plen);
    err->pointer[plen + len] = '\0';
}

/* The schema of a tool declared without one: an object with no properties,
 * which the closed world reads as "no arguments". */
static int compile_no_arguments(tg_engine_t *e, const tg_schema_options_t *opt, tg_schema_t **out,
                                tg_error_t *err)
{
    static const char text[] = "{\"type\":\"object\",\"properties\":{}}";
    tg_doc_t *doc;
    int rc = tg_parse(e, text, sizeof text - 1, &doc, err);
    if (rc != TG_OK)
        return rc;
    rc = tg_schema_compile(e, tg_doc_root(doc), opt, out, err);
    tg_doc_free(doc);
    return rc;
}

int tg_registry_add(tg_registry_t *r, const char *server, size_t server_len, const char *name,
                    size_t name_len, const char *description, size_t description_len,
                    const tg_value_t *input, const tg_value_t *output,
                    const tg_schema_options_t *opt, size_t *index, tg_error_t *err)
{
    tool t;
    int rc;
    size_t ns;

    tg_error_clear(err);
    if (!server || !name || name_len == 0)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "a tool needs a server (may be \"\") and a name");
    if (r->n && r->by_pair[pair_slot(r, server, server_len, name, name_len)] != 0)
        return tg_fail(err, TG_E_DUPLICATE_TOOL, TG_NO_OFFSET,
                       "tool \"%.*s\" is already registered for server \"%.*s\"",
                       (int)(name_len > 100 ? 100 : name_len), name,
                       (int)(server_len > 100 ? 100 : server_len), server);
    memset(&t, 0, sizeof t);
    if ((rc = compute_pin(r->e, name, name_len, description, description_len, input, output, &t.pin,
                          err)) != TG_OK)
        return rc;
    rc = input ? tg_schema_compile(r->e, input, opt, &t.input, err)
               : compile_no_arguments(r->e, opt, &t.input, err);
    if (rc != TG_OK)
        locate_in(err, "/inputSchema");
    if (rc == TG_OK && output &&
        (rc = tg_schema_compile(r->e, output, opt, &t.output, err)) != TG_OK)
        locate_in(err, "/outputSchema");
    if (rc == TG_OK) {
        t.server = copy_string(r->e, server, server_len);
        t.name = copy_string(r->e, name, name_len);
        t.server_len = server_len;
        t.name_len = name_len;
        if (!t.server || !t.name)
            rc = tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    }
    if (rc == TG_OK && r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        tool *tools = tg_mem_realloc(r->e, r->tools, r->cap * sizeof *tools, cap * sizeof *tools);
        if (!tools)
            rc = tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        else {
            r->tools = tools;
            r->cap = cap;
        }
    }
    /* Keep the tables at most half full; growing rehashes before the add,
     * so a failure leaves the registry as it was. */
    if (rc == TG_OK && 2 * (r->n + 1) > r->slots)
        rc = grow_tables(r, err);
    if (rc != TG_OK) {
        free_tool(r->e, &t);
        return rc;
    }
    r->tools[r->n] = t;
    r->by_pair[pair_slot(r, server, server_len, name, name_len)] = r->n + 1;
    ns = name_slot(r, name, name_len);
    if (r->by_name[ns] == 0) {
        r->by_name[ns] = r->n + 1;
    } else { /* append to the chain, keeping the order of addition */
        size_t k = r->by_name[ns];
        while (r->tools[k - 1].next_same_name)
            k = r->tools[k - 1].next_same_name;
        r->tools[k - 1].next_same_name = r->n + 1;
    }
    if (index)
        *index = r->n;
    r->n++;
    return TG_OK;
}

size_t tg_registry_count(const tg_registry_t *r)
{
    return r->n;
}

long tg_registry_find(const tg_registry_t *r, const char *server, size_t server_len,
                      const char *name, size_t name_len)
{
    size_t k;
    if (!r->n)
        return -1;
    k = r->by_pair[pair_slot(r, server, server_len, name, name_len)];
    return k ? (long)(k - 1) : -1;
}

size_t tg_registry_find_name(const tg_registry_t *r, const char *name, size_t name_len,
                             size_t *indexes, size_t max)
{
    size_t k, n = 0;
    if (!r->n)
        return 0;
    for (k = r->by_name[name_slot(r, name, name_len)]; k; k = r->tools[k - 1].next_same_name) {
        if (n < max)
            indexes[n] = k - 1;
        n++;
    }
    return n;
}

const char *tg_registry_server(const tg_registry_t *r, size_t i, size_t *len)
{
    if (i >= r->n) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = r->tools[i].server_len;
    return r->tools[i].server;
}

const char *tg_registry_name(const tg_registry_t *r, size_t i, size_t *len)
{
    if (i >= r->n) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = r->tools[i].name_len;
    return r->tools[i].name;
}

const tg_hash128_t *tg_registry_pin(const tg_registry_t *r, size_t i)
{
    return i < r->n ? &r->tools[i].pin : NULL;
}

const tg_schema_t *tg_registry_input_schema(const tg_registry_t *r, size_t i)
{
    return i < r->n ? r->tools[i].input : NULL;
}

const tg_schema_t *tg_registry_output_schema(const tg_registry_t *r, size_t i)
{
    return i < r->n ? r->tools[i].output : NULL;
}
