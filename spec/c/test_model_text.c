/*
 * test_model_text.c -- tg_model_text: what a model reads about a refused or
 * deferred tools/call, byte for byte, from the tool's compiled input schema.
 */
#include "toolgate.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

static tg_engine_t *E;

/* A registry of one tool, "plan", with the schema given (formats
 * asserted). */
static tg_registry_t *registry(const char *schema)
{
    tg_registry_t *r = tg_registry_new(E, NULL);
    tg_doc_t *d = NULL;
    tg_schema_options_t opt;
    size_t index;
    tg_error_t err;
    tg_schema_options_default(&opt);
    opt.assert_formats = 1;
    if (tg_parse(E, schema, strlen(schema), &d, &err) != TG_OK ||
        tg_registry_add(r, "s", 1, "plan", 4, "", 0, tg_doc_root(d), NULL, &opt, &index, &err) !=
            TG_OK)
        printf("# registry: %s\n", err.message);
    tg_doc_free(d);
    return r;
}

/* tg_model_text into b, compared with want. */
static int says(tg_registry_t *r, long tool, int deferred, const char *code, const char *path,
                const char *message, const char *approval, const char *hint, const char *want)
{
    tg_buf_t b;
    tg_error_t err;
    int ok;
    tg_buf_init(&b, E);
    ok = tg_model_text(r, tool, "plan", deferred, code, path, message, approval, hint, &b, &err) ==
             TG_OK &&
         b.len == strlen(want) && memcmp(b.data, want, b.len) == 0 && b.data[b.len] == '\0';
    if (!ok)
        printf("# got:  %.*s\n# want: %s\n", (int)b.len, b.data ? b.data : "", want);
    tg_buf_free(&b);
    return ok;
}

static void test_arguments(void)
{
    tg_registry_t *r =
        registry("{\"type\":\"object\",\"properties\":{"
                 "\"env\":{\"enum\":[\"prod\",\"staging\"]},"
                 "\"n\":{\"type\":\"integer\",\"exclusiveMinimum\":0,\"maximum\":1e3},"
                 "\"s\":{\"type\":\"string\",\"format\":\"email\",\"minLength\":2,\"maxLength\":8},"
                 "\"k\":{\"const\":true},"
                 "\"any\":{}},"
                 "\"required\":[\"n\",\"env\"]}");
    tap_ok(
        says(
            r, 0, 0, "H3", "/n", "\"/n\": 0 is not above 0", NULL, NULL,
            "toolgate refused this call to plan: H3 at /n: \"/n\": 0 is not above 0. plan accepts: "
            "any (any value), env (one of \"prod\", \"staging\", required), k (exactly true), n "
            "(integer, above 0, at most 1000, required), s (string, format email, at least 2 "
            "characters, at most 8 characters). Correct the arguments and call again."),
        "H3: every key, sorted, with its type, values, bounds and whether it is required");
    tap_ok(
        says(
            r, -1, 0, "H2", "/x", "x", NULL, NULL,
            "toolgate refused this call to plan: H2 at /x: x. Correct the arguments and call again."),
        "no tool resolved: no schema to describe");
    tg_registry_free(r);

    r = registry("{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}");
    tap_ok(
        says(
            r, 0, 0, "H2", "/x", "no", NULL, NULL,
            "toolgate refused this call to plan: H2 at /x: no. plan takes no arguments: call it with "
            "{}. Correct the arguments and call again."),
        "a tool that takes nothing says so");
    tg_registry_free(r);

    r = registry("{\"type\":\"object\",\"additionalProperties\":true}");
    tap_ok(
        says(r, 0, 0, "H3", "", "bad", NULL, NULL,
             "toolgate refused this call to plan: H3: bad. Correct the arguments and call again."),
        "a tool open to any key declares none to list");
    tg_registry_free(r);
}

static void test_policy(void)
{
    tg_registry_t *r = registry("{\"type\":\"object\"}");
    tap_ok(
        says(
            r, 0, 0, "H4", NULL, "scope s:write not granted", NULL, "Ask a person.",
            "toolgate refused this call to plan: H4: scope s:write not granted. The policy decides "
            "this, not the arguments: calling again unchanged gets the same answer. Ask a person."),
        "H4: the policy's, and the host's hint");
    tap_ok(
        says(
            r, 0, 1, "H4", NULL, "writes need a person's approval", "ab12", "Grant ab12 here.",
            "toolgate asked a person to approve this call to plan (H4: writes need a person's "
            "approval); it has not run. Approval ab12. Grant ab12 here. Once it is granted, the same "
            "call with the same arguments passes; other arguments ask again."),
        "a defer: asked, the approval, how to grant it");
    tap_ok(says(r, 0, 0, "PIN_CHANGED", NULL, "changed", NULL, "unused",
                "toolgate refused this call to plan: PIN_CHANGED: changed."),
           "another refusal: what happened, no advice");
    tap_ok(says(r, 0, 0, "QUOTA", NULL,
                "quota: at most 3 calls per 60 s to pay/transfer; the next call fits in 20 s", NULL,
                NULL,
                "toolgate refused this call to plan: QUOTA: quota: at most 3 calls per 60 s to "
                "pay/transfer; the next call fits in 20 s. A quota counts these calls whatever "
                "their arguments: the same call passes once the time it says has passed; calling "
                "sooner gets the same answer."),
           "QUOTA: the limit, the window and when to call again");
    {
        tg_buf_t b;
        tg_error_t err;
        tg_buf_init(&b, E);
        tap_ok(tg_model_text(r, 0, NULL, 0, "H4", NULL, NULL, NULL, NULL, &b, &err) == TG_E_ARG,
               "no name: TG_E_ARG");
        tg_buf_free(&b);
    }
    tg_registry_free(r);
}

int main(void)
{
    E = tg_engine_new(NULL, NULL, NULL, NULL);
    test_arguments();
    test_policy();
    tg_engine_free(E);
    return tap_done();
}
