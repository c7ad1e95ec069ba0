/*
 * tg_policy.c -- a policy's built-in parts compiled for one registry, and
 * per-call contexts compiled for a policy.
 *
 * Both are read from JSON the host writes once (the Lua side, after it has
 * loaded and checked the policy file and the registry): the core never
 * sees Lua values, and both bindings hand it the same bytes.  Everything
 * lives in one arena per object, freed at once.
 */
#include "tg_decide.h"

static int bad(tg_error_t *err, const char *what)
{
    return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "policy description: %s", what);
}

static const tg_value_t *member(const tg_value_t *obj, const char *key)
{
    return tg_get(obj, key, strlen(key));
}

/* A copy of the string v into the arena; TG_E_ARG when v is not a string. */
static int take_text(tg_arena *a, const tg_value_t *v, tg_text *out, tg_error_t *err,
                     const char *what)
{
    size_t len;
    const char *s = tg_str(v, &len);
    if (!s)
        return bad(err, what);
    if (!(out->s = tg_arena_strdup(a, s, len)))
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    out->len = len;
    return TG_OK;
}

/* t as a JSON string, its canonical form (quotes and escapes), in a: the
 * decision writer copies it instead of escaping it for every decision. */
static int json_of(tg_policy_t *p, const tg_text *t, tg_text *out, tg_error_t *err)
{
    tg_buf_t b;
    int rc;
    tg_buf_init(&b, p->e);
    if ((rc = tg_canon_string(&b, t->s, t->len, err)) == TG_OK) {
        if ((out->s = tg_arena_strdup(&p->arena, b.data, b.len)) != NULL)
            out->len = b.len;
        else
            rc = tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    }
    tg_buf_free(&b);
    return rc;
}

/* The bytes of b, kept in p's arena as out. */
static int keep(tg_policy_t *p, const tg_buf_t *b, tg_text *out, tg_error_t *err)
{
    if (!(out->s = tg_arena_strdup(&p->arena, b->len ? b->data : "", b->len)))
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    out->len = b->len;
    return TG_OK;
}

/* stamp_json and stages_json (tg_decide.h), from the JSON texts above. */
static int decision_texts(tg_policy_t *p, tg_error_t *err)
{
    static const char version_key[] = "\"policy_version\":", hash_key[] = ",\"registry_hash\":";
    tg_buf_t b;
    int rc = TG_OK;
    tg_buf_init(&b, p->e);
    for (size_t i = 0; i < p->n_stages && rc == TG_OK; i++) {
        const tg_text *name = &p->stages[i].name_json;
        if (i)
            rc = tg_buf_append(&b, ",", 1, err);
        if (rc == TG_OK)
            rc = tg_buf_append(&b, name->s, name->len, err);
        p->stages[i].ran_json_len = b.len;
    }
    if (rc == TG_OK)
        rc = keep(p, &b, &p->stages_json, err);
    tg_buf_reset(&b);
    if (rc == TG_OK)
        rc = tg_buf_append(&b, version_key, sizeof version_key - 1, err);
    if (rc == TG_OK)
        rc = tg_buf_append(&b, p->version_json.s, p->version_json.len, err);
    if (rc == TG_OK)
        rc = tg_buf_append(&b, hash_key, sizeof hash_key - 1, err);
    if (rc == TG_OK)
        rc = tg_buf_append(&b, p->registry_hash_json.s, p->registry_hash_json.len, err);
    if (rc == TG_OK)
        rc = keep(p, &b, &p->stamp_json, err);
    tg_buf_free(&b);
    return rc;
}

/* An optional boolean member: 0 when absent. */
static int take_flag(const tg_value_t *obj, const char *key, int *out, tg_error_t *err)
{
    const tg_value_t *v = member(obj, key);
    *out = 0;
    if (!v)
        return TG_OK;
    if (v->type != TG_TRUE && v->type != TG_FALSE)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "policy description: \"%s\" must be a boolean",
                       key);
    *out = v->type == TG_TRUE;
    return TG_OK;
}

/* An optional "reject" / "defer" member (default reject). */
static int take_verdict(const tg_value_t *obj, const char *key, int *out, tg_error_t *err)
{
    size_t len;
    const char *s = tg_str(member(obj, key), &len);
    *out = TG_REJECT;
    if (!member(obj, key))
        return TG_OK;
    if (s && len == 5 && memcmp(s, "defer", 5) == 0)
        *out = TG_DEFER;
    else if (!s || len != 6 || memcmp(s, "reject", 6) != 0)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "policy description: \"%s\" must be \"reject\" or \"defer\"", key);
    return TG_OK;
}

/* A list of strings (absent: none), copied. */
static int take_list(tg_arena *a, const tg_value_t *v, tg_text **out, size_t *n, tg_error_t *err,
                     const char *what)
{
    *out = NULL;
    *n = 0;
    if (!v)
        return TG_OK;
    if (v->type != TG_ARRAY)
        return bad(err, what);
    if (!(*out = tg_arena_alloc(a, (v->len ? v->len : 1) * sizeof **out)))
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    for (uint32_t i = 0; i < v->len; i++) {
        int rc = take_text(a, &v->p.items[i], &(*out)[i], err, what);
        if (rc != TG_OK)
            return rc;
    }
    *n = v->len;
    return TG_OK;
}

static long rank_of(const tg_policy_t *p, const char *s, size_t len)
{
    for (size_t i = 0; i < p->n_levels; i++)
        if (p->levels[i].len == len && memcmp(p->levels[i].s, s, len) == 0)
            return (long)i;
    return -1;
}

static const struct {
    const char *name;
    int kind;
} stage_names[] = {
    {"rung", TG_STAGE_RUNG},         {"gate", TG_STAGE_GATE},
    {"verifier", TG_STAGE_VERIFIER}, {"consistency", TG_STAGE_CONSISTENCY},
    {"custom", TG_STAGE_CUSTOM},
};

static int read_stage(tg_policy_t *p, const tg_value_t *v, tg_pstage *st, tg_error_t *err)
{
    size_t len;
    const char *kind = tg_str(member(v, "stage"), &len);
    int rc;
    st->kind = -1;
    for (size_t i = 0; kind && i < sizeof stage_names / sizeof stage_names[0]; i++)
        if (strlen(stage_names[i].name) == len && memcmp(stage_names[i].name, kind, len) == 0)
            st->kind = stage_names[i].kind;
    if (st->kind < 0)
        return bad(err, "a stage needs \"stage\": rung, gate, verifier, consistency or custom");
    if (st->kind == TG_STAGE_CUSTOM) {
        st->in_host = 1;
        if ((rc = take_text(&p->arena, member(v, "name"), &st->name, err,
                            "a custom stage needs a string \"name\"")) != TG_OK)
            return rc;
        return take_text(&p->arena, member(v, "code"), &st->code, err,
                         "a custom stage needs a string \"code\"");
    }
    st->name.s = kind ? stage_names[st->kind].name : "";
    st->name.len = strlen(st->name.s);
    if (st->kind == TG_STAGE_GATE)
        return take_flag(v, "custom", &st->in_host, err);
    return TG_OK;
}

static const struct {
    const char *name;
    unsigned bit;
} op_names[] = {{"trim", TG_NORM_TRIM}, {"lower", TG_NORM_LOWER}, {"path", TG_NORM_PATH}};

/* A resolve rule: its pattern split into unescaped segments ("~1" is '/',
 * "~0" is '~'), each with the array index it spells when it spells one
 * as RFC 6901 writes indexes (no leading zero). */
static int read_resolve(tg_policy_t *p, const tg_value_t *v, tg_presolve *r, tg_error_t *err)
{
    static const char what[] = "a \"resolve\" rule needs a pattern (a JSON Pointer), \"pre\" "
                               "(trim, lower, path) and a string \"resolver\"";
    const tg_value_t *pre = member(v, "pre");
    size_t len, n = 0;
    const char *pat = tg_str(member(v, "pattern"), &len);
    char *buf;
    int rc;
    if (v->type != TG_OBJECT || !pat || (len && pat[0] != '/') || (pre && pre->type != TG_ARRAY))
        return bad(err, what);
    if ((rc = take_text(&p->arena, member(v, "resolver"), &r->resolver, err, what)) != TG_OK)
        return rc;
    for (uint32_t i = 0; pre && i < pre->len; i++) {
        size_t k, olen;
        const char *op = tg_str(&pre->p.items[i], &olen);
        for (k = 0; k < sizeof op_names / sizeof op_names[0]; k++)
            if (op && strlen(op_names[k].name) == olen && memcmp(op_names[k].name, op, olen) == 0)
                break;
        if (k == sizeof op_names / sizeof op_names[0])
            return bad(err, what);
        r->pre_ops |= op_names[k].bit;
    }
    for (size_t i = 0; i < len; i++)
        n += pat[i] == '/';
    r->n_segs = n;
    if (!(r->segs = tg_arena_alloc(&p->arena, (n ? n : 1) * sizeof *r->segs)) ||
        !(buf = tg_arena_alloc(&p->arena, len + 1)))
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    for (size_t i = 0, k = 0; i < len; k++) {
        tg_pseg *sg = &r->segs[k];
        size_t j = ++i, w = 0;
        sg->key.s = buf;
        while (j < len && pat[j] != '/') {
            if (pat[j] == '~') {
                if (j + 1 >= len || (pat[j + 1] != '0' && pat[j + 1] != '1'))
                    return bad(err, what);
                buf[w++] = pat[j + 1] == '1' ? '/' : '~';
                j += 2;
            } else {
                buf[w++] = pat[j++];
            }
        }
        sg->key.len = w;
        sg->wild = w == 1 && buf[0] == '*';
        sg->index = (size_t)-1;
        if (w && (w == 1 || buf[0] != '0') && w < 19) {
            size_t x = 0, d;
            for (d = 0; d < w && buf[d] >= '0' && buf[d] <= '9'; d++)
                x = x * 10 + (size_t)(buf[d] - '0');
            if (d == w)
                sg->index = x;
        }
        buf += w;
        i = j;
    }
    return TG_OK;
}

static int read_tool(tg_policy_t *p, const tg_value_t *v, tg_ptool *t, tg_error_t *err)
{
    const tg_value_t *risk = member(v, "risk"), *refuse = member(v, "refuse");
    const tg_value_t *effects = member(v, "effects"), *det = member(v, "deterministic");
    const tg_value_t *resolve = member(v, "resolve");
    int rc;
    if (v->type != TG_OBJECT)
        return bad(err, "each of \"tools\" must be an object");
    t->risk = -1;
    if (risk && risk->type != TG_NULL) {
        size_t len;
        const char *s = tg_str(risk, &len);
        if (!s || (t->risk = rank_of(p, s, len)) < 0)
            return bad(err, "a tool's \"risk\" must be one of \"risk_levels\"");
    }
    if ((rc = take_list(&p->arena, member(v, "scopes"), &t->scopes, &t->n_scopes, err,
                        "a tool's \"scopes\" must be a list of strings")) != TG_OK)
        return rc;
    /* the verifier checks effects after the call ran (engine:verify); here
     * only whether there are any to verify matters */
    if (effects && effects->type != TG_ARRAY)
        return bad(err, "a tool's \"effects\" must be a list of strings");
    t->declares_effects = effects != NULL;
    if ((rc = take_flag(v, "has_output", &t->has_output, err)) != TG_OK)
        return rc;
    t->deterministic = -1;
    if (det && (rc = take_flag(v, "deterministic", &t->deterministic, err)) != TG_OK)
        return rc;
    if (resolve) {
        if (resolve->type != TG_ARRAY)
            return bad(err, "a tool's \"resolve\" must be a list of rules");
        if (!(t->resolve = tg_arena_alloc(&p->arena,
                                          (resolve->len ? resolve->len : 1) * sizeof *t->resolve)))
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        memset(t->resolve, 0, (resolve->len ? resolve->len : 1) * sizeof *t->resolve);
        for (uint32_t i = 0; i < resolve->len; i++)
            if ((rc = read_resolve(p, &resolve->p.items[i], &t->resolve[i], err)) != TG_OK)
                return rc;
        t->n_resolve = resolve->len;
        p->has_resolve |= resolve->len > 0;
    }
    if (refuse) {
        if ((rc = take_text(&p->arena, member(refuse, "code"), &t->refuse_code, err,
                            "\"refuse\" needs a string \"code\"")) != TG_OK)
            return rc;
        return take_text(&p->arena, member(refuse, "message"), &t->refuse_message, err,
                         "\"refuse\" needs a string \"message\"");
    }
    return TG_OK;
}

/* A threshold of "consistency": absent keeps the default. */
static int take_share(const tg_value_t *obj, const char *key, double *out, tg_error_t *err)
{
    const tg_value_t *v = member(obj, key);
    if (!v)
        return TG_OK;
    if (v->type != TG_NUMBER || tg_num(v) < 0 || tg_num(v) > 1)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "policy description: consistency \"%s\" must be a number from 0 to 1", key);
    *out = tg_num(v);
    return TG_OK;
}

static int take_count(const tg_value_t *obj, const char *key, size_t *out, tg_error_t *err)
{
    const tg_value_t *v = member(obj, key);
    double x;
    if (!v)
        return TG_OK;
    x = tg_num(v);
    if (v->type != TG_NUMBER || x < 1 || x > TG_LIMIT_MAX_SAMPLES || x != (double)(size_t)x)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "policy description: consistency \"%s\" must be a whole number from 1 "
                       "to 2^31-1",
                       key);
    *out = (size_t)x;
    return TG_OK;
}

static int read_consistency(tg_policy_t *p, const tg_value_t *c, tg_error_t *err)
{
    tg_consistency_t *s = &p->consistency;
    const tg_value_t *q;
    int rc;
    tg_consistency_default(s);
    if (!c)
        return TG_OK;
    if (c->type != TG_OBJECT)
        return bad(err, "\"consistency\" must be an object");
    if ((rc = take_count(c, "min_samples", &s->min_samples, err)) != TG_OK ||
        (rc = take_count(c, "max_samples", &s->max_samples, err)) != TG_OK ||
        (rc = take_share(c, "arg_accept", &s->arg_accept, err)) != TG_OK ||
        (rc = take_share(c, "arg_reject", &s->arg_reject, err)) != TG_OK ||
        (rc = take_share(c, "result_accept", &s->result_accept, err)) != TG_OK ||
        (rc = take_share(c, "result_quarantine", &s->result_quarantine, err)) != TG_OK ||
        (rc = take_verdict(c, "on_invalid", &s->on_invalid, err)) != TG_OK)
        return rc;
    if ((q = member(c, "quarantine")) != NULL) {
        if (q->type != TG_TRUE && q->type != TG_FALSE)
            return bad(err, "consistency \"quarantine\" must be true or false");
        s->quarantine = q->type == TG_TRUE;
    }
    if (!member(c, "on_invalid"))
        s->on_invalid = TG_DEFER;
    if (s->max_samples < s->min_samples)
        return bad(err, "consistency \"max_samples\" must not be below \"min_samples\"");
    if (s->arg_reject > s->arg_accept)
        return bad(err, "consistency \"arg_reject\" must not be above \"arg_accept\"");
    return TG_OK;
}

static int read_policy(tg_policy_t *p, const tg_value_t *root, tg_error_t *err)
{
    const tg_value_t *stages = member(root, "stages"), *tools = member(root, "tools");
    int rc;
    if (root->type != TG_OBJECT)
        return bad(err, "must be an object");
    if ((rc = take_text(&p->arena, member(root, "version"), &p->version, err,
                        "\"version\" must be a string")) != TG_OK ||
        (rc = take_text(&p->arena, member(root, "registry_hash"), &p->registry_hash, err,
                        "\"registry_hash\" must be a string")) != TG_OK ||
        (rc = take_list(&p->arena, member(root, "risk_levels"), &p->levels, &p->n_levels, err,
                        "\"risk_levels\" must be a list of strings")) != TG_OK ||
        (rc = take_flag(root, "report_also", &p->report_also, err)) != TG_OK ||
        (rc = take_flag(root, "require_contract", &p->require_contract, err)) != TG_OK ||
        (rc = take_flag(root, "requires_approval", &p->requires_approval, err)) != TG_OK ||
        (rc = take_verdict(root, "on_mismatch", &p->on_mismatch, err)) != TG_OK ||
        (rc = take_verdict(root, "on_error", &p->on_error, err)) != TG_OK ||
        (rc = read_consistency(p, member(root, "consistency"), err)) != TG_OK)
        return rc;
    if (p->n_levels == 0)
        return bad(err, "\"risk_levels\" must list at least one level");
    if (!stages || stages->type != TG_ARRAY || stages->len == 0)
        return bad(err, "\"stages\" must be a non-empty list");
    if (!(p->stages = tg_arena_alloc(&p->arena, stages->len * sizeof *p->stages)))
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    memset(p->stages, 0, stages->len * sizeof *p->stages);
    for (uint32_t i = 0; i < stages->len; i++)
        if ((rc = read_stage(p, &stages->p.items[i], &p->stages[i], err)) != TG_OK)
            return rc;
    p->n_stages = stages->len;
    for (size_t i = 0; i < p->n_stages; i++)
        if ((rc = json_of(p, &p->stages[i].name, &p->stages[i].name_json, err)) != TG_OK)
            return rc;
    if ((rc = json_of(p, &p->version, &p->version_json, err)) != TG_OK ||
        (rc = json_of(p, &p->registry_hash, &p->registry_hash_json, err)) != TG_OK ||
        (rc = decision_texts(p, err)) != TG_OK)
        return rc;
    for (size_t i = p->n_stages; i-- > 0;)
        if (p->stages[i].kind == TG_STAGE_RUNG)
            p->rung_stage = i;
    if (!tools || tools->type != TG_ARRAY || tools->len != tg_registry_count(p->r))
        return bad(err, "\"tools\" must list one contract per registry tool, in index order");
    if (!(p->tools = tg_arena_alloc(&p->arena, (tools->len ? tools->len : 1) * sizeof *p->tools)))
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    memset(p->tools, 0, (tools->len ? tools->len : 1) * sizeof *p->tools);
    for (uint32_t i = 0; i < tools->len; i++) {
        tg_text server, name;
        server.s = tg_registry_server(p->r, i, &server.len);
        name.s = tg_registry_name(p->r, i, &name.len);
        if ((rc = read_tool(p, &tools->p.items[i], &p->tools[i], err)) != TG_OK ||
            (rc = json_of(p, &server, &p->tools[i].server_json, err)) != TG_OK ||
            (rc = json_of(p, &name, &p->tools[i].name_json, err)) != TG_OK)
            return rc;
    }
    p->n_tools = tools->len;
    return TG_OK;
}

int tg_policy_new(tg_engine_t *e, const tg_registry_t *r, const char *json, size_t len,
                  tg_policy_t **out, tg_error_t *err)
{
    tg_policy_t *p;
    tg_doc_t *doc;
    int rc;

    tg_error_clear(err);
    if (!out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "out is NULL");
    *out = NULL;
    if (!e || !r || !json)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "engine, registry and description are required");
    /* one entry per tool: as large as a registry, bounded as one */
    if ((rc = tg_parse_with(e, json, len, TG_PARSE_FAST_UTF8 | TG_PARSE_REGISTRY, &doc, err)) !=
        TG_OK)
        return rc;
    if (!(p = tg_mem_realloc(e, NULL, 0, sizeof *p))) {
        tg_doc_free(doc);
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    }
    memset(p, 0, sizeof *p);
    p->e = e;
    p->r = r;
    tg_arena_init(&p->arena, e, 1024);
    tg_engine_retain(e);
    rc = read_policy(p, tg_doc_root(doc), err);
    tg_doc_free(doc);
    if (rc != TG_OK) {
        tg_policy_free(p);
        return rc;
    }
    *out = p;
    return TG_OK;
}

int tg_policy_set_norm(tg_policy_t *p, size_t tool, const tg_norm_t *norm, tg_error_t *err)
{
    tg_error_clear(err);
    if (!p || tool >= p->n_tools)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "no such tool in the policy");
    p->tools[tool].norm = norm;
    return TG_OK;
}

void tg_policy_free(tg_policy_t *p)
{
    tg_engine_t *e;
    if (!p)
        return;
    e = p->e;
    tg_arena_free(&p->arena);
    tg_mem_free(e, p, sizeof *p);
    tg_engine_release(e);
}

/* ---- contexts --------------------------------------------------------------- */

int tg_context_read(tg_context_t *c, const tg_value_t *v, tg_error_t *err)
{
    const tg_value_t *scopes = member(v, "scopes"), *max_risk = member(v, "max_risk");
    const tg_value_t *epoch = member(v, "epoch"), *server = member(v, "server");
    if (v->type != TG_OBJECT)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "a context must be a JSON object");
    if (scopes) {
        /* granted scopes: a list of names; anything else grants none */
        size_t n = 0;
        c->scopes = NULL;
        c->n_scopes = 0;
        if (scopes->type == TG_ARRAY && scopes->len) {
            if (!(c->scopes = tg_arena_alloc(&c->arena, scopes->len * sizeof *c->scopes)))
                return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
            for (uint32_t i = 0; i < scopes->len; i++) {
                size_t len;
                const char *s = tg_str(&scopes->p.items[i], &len);
                if (!s)
                    continue;
                if (!(c->scopes[n].s = tg_arena_strdup(&c->arena, s, len)))
                    return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
                c->scopes[n++].len = len;
            }
        }
        c->n_scopes = n;
    }
    if (max_risk) {
        size_t len;
        const char *s = tg_str(max_risk, &len);
        tg_buf_t text;
        c->max_risk = s ? rank_of(c->p, s, len) : -1;
        if (c->max_risk < 0) {
            /* not a level: keep what it was, for the gate to say so */
            c->max_risk = -2;
            tg_buf_init(&text, c->e);
            if (s) {
                c->max_risk_text.s = tg_arena_strdup(&c->arena, s, len);
                c->max_risk_text.len = len;
            } else if (tg_canon_value(max_risk, &text, err) == TG_OK) {
                c->max_risk_text.s = tg_arena_strdup(&c->arena, text.data, text.len);
                c->max_risk_text.len = text.len;
            }
            tg_buf_free(&text);
            if (!c->max_risk_text.s)
                return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        }
    }
    if (epoch) {
        tg_buf_t text;
        int rc;
        tg_buf_init(&text, c->e);
        rc = tg_canon_value(epoch, &text, err);
        if (rc == TG_OK && !(c->epoch.s = tg_arena_strdup(&c->arena, text.data, text.len)))
            rc = tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        c->epoch.len = text.len;
        tg_buf_free(&text);
        if (rc != TG_OK)
            return rc;
    }
    if (server) {
        size_t len;
        const char *s = tg_str(server, &len);
        c->server.s = NULL;
        if (s && !(c->server.s = tg_arena_strdup(&c->arena, s, len)))
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        c->server.len = len;
    }
    return TG_OK;
}

int tg_context_new(const tg_policy_t *p, const char *json, size_t len, tg_context_t **out,
                   tg_error_t *err)
{
    tg_context_t *c;
    tg_doc_t *doc;
    int rc;

    tg_error_clear(err);
    if (!out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "out is NULL");
    *out = NULL;
    if (!p || !json)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "policy and context are required");
    if ((rc = tg_parse(p->e, json, len, &doc, err)) != TG_OK)
        return rc;
    if (!(c = tg_mem_realloc(p->e, NULL, 0, sizeof *c))) {
        tg_doc_free(doc);
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    }
    memset(c, 0, sizeof *c);
    c->e = p->e;
    c->p = p;
    c->max_risk = -1;
    tg_arena_init(&c->arena, p->e, 256);
    tg_engine_retain(p->e);
    rc = tg_context_read(c, tg_doc_root(doc), err);
    tg_doc_free(doc);
    if (rc != TG_OK) {
        tg_context_free(c);
        return rc;
    }
    *out = c;
    return TG_OK;
}

void tg_context_free(tg_context_t *c)
{
    tg_engine_t *e;
    if (!c)
        return;
    e = c->e;
    tg_arena_free(&c->arena);
    tg_mem_free(e, c, sizeof *c);
    tg_engine_release(e);
}
