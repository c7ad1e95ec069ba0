/*
 * test_plan.c -- tg_plan_summarize: the one-pass count behind classify for
 * single-tool plans: agreement on (normalized, exact) arguments and on
 * (RFC 8785) results,
 * rung failures, epochs, malformed samples, many samples, and allocation
 * failure at every allocation.
 */
#include "acct.h"
#include "tap.h"
#include "toolgate.h"

#include <stdlib.h>

static tg_engine_t *E;
static tg_registry_t *R;

static const tg_value_t *samples_of(tg_doc_t **doc, const char *json)
{
    tg_error_t err;
    if (tg_parse(E, json, strlen(json), doc, &err) != TG_OK) {
        printf("# parse: %s\n", err.message);
        return NULL;
    }
    return tg_get(tg_doc_root(*doc), "samples", 7);
}

int main(void)
{
    const char *schema = "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},"
                         "\"path\":{\"type\":\"string\"}},\"required\":[\"id\"]}";
    tg_doc_t *sdoc, *doc;
    tg_plan_summary_t s;
    tg_error_t err;
    const tg_value_t *samples;
    size_t index;

    E = tg_engine_new(NULL, NULL, NULL, NULL);
    R = tg_registry_new(E, NULL);
    tg_parse(E, schema, strlen(schema), &sdoc, NULL);
    tg_registry_add(R, "sb", 2, "lookup", 6, NULL, 0, tg_doc_root(sdoc), NULL, NULL, &index, NULL);
    tg_doc_free(sdoc);

    samples = samples_of(
        &doc, "{\"samples\":["
              "{\"arguments\":{\"id\":\"a\"},\"result\":{\"x\":1,\"y\":2},\"epoch\":\"e\"},"
              "{\"arguments\":{\"id\":\"a\"},\"result\":{\"y\":2,\"x\":1.0},\"epoch\":\"e\"},"
              "{\"arguments\":{\"id\":\"b\"},\"result\":3,\"epoch\":\"e\"},"
              "{\"arguments\":{\"id\":7},\"epoch\":\"e\"},"
              "{\"arguments\":{\"id\":\"a\"},\"result\":{\"x\":1,\"y\":2},\"epoch\":\"e\"}]}");
    tap_ok(tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err) == TG_OK,
           "a plan of 5 samples");
    tap_ok(s.n == 5 && s.args.modal_count == 3 && s.args.distinct == 3 &&
               s.args.representative == 0,
           "argument agreement 3/5, 3 distinct, representative the first");
    tap_ok(s.results.modal_count == 3 && s.results.distinct == 3,
           "results in another key order agree; a missing one is its own value");
    tap_ok(s.epochs_equal, "one epoch");
    tap_ok(s.n_failed == 1 && s.failed[0] == 3, "sample 4 fails the rung (id not a string)");
    tg_doc_free(doc);

    samples = samples_of(
        &doc, "{\"samples\":[{\"arguments\":{\"id\":\"a\"},\"epoch\":\"e\"},"
              "{\"arguments\":{\"id\":\"a\"},\"epoch\":\"f\"},{\"arguments\":{\"id\":\"a\"}}]}");
    tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err);
    tap_ok(!s.epochs_equal, "epochs that differ, or are missing, are not equal");
    tap_ok(tg_plan_summarize(E, R, -1, NULL, samples, &s, &err) == TG_OK && s.n_failed == 3,
           "an unresolved tool: every sample fails");
    tg_doc_free(doc);

    /* arguments by their exact form, results and epochs by RFC 8785 */
    samples = samples_of(
        &doc,
        "{\"samples\":["
        "{\"arguments\":{\"id\":\"a\",\"n\":12345678901234567890},\"result\":12345678901234567890,"
        "\"epoch\":9007199254740992},"
        "{\"arguments\":{\"id\":\"a\",\"n\":12345678901234567891},\"result\":12345678901234567891,"
        "\"epoch\":9007199254740993},"
        "{\"arguments\":{\"id\":\"a\",\"n\":1.2345678901234567890e19},\"result\":1.2345678901234567e19,"
        "\"epoch\":9007199254740992}]}");
    tap_ok(tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err) == TG_OK &&
               s.args.distinct == 2 && s.args.modal_count == 2,
           "arguments that differ in the 20th digit are different arguments; one decimal in two "
           "spellings is one");
    tap_ok(s.results.distinct == 1 && s.epochs_equal,
           "results and epochs compare as RFC 8785 does (as a probe's results do)");
    tg_doc_free(doc);

    /* results seen before are compared value by value, the first four
     * distinct ones kept: a fifth repeated is digested again, and agrees */
    samples = samples_of(
        &doc,
        "{\"samples\":["
        "{\"arguments\":{\"id\":\"a\"},\"result\":[1]},{\"arguments\":{\"id\":\"a\"},\"result\":[2]},"
        "{\"arguments\":{\"id\":\"a\"},\"result\":[3]},{\"arguments\":{\"id\":\"a\"},\"result\":[4]},"
        "{\"arguments\":{\"id\":\"a\"},\"result\":[5.0]},{\"arguments\":{\"id\":\"a\"},\"result\":[5]},"
        "{\"arguments\":{\"id\":\"a\"},\"result\":[1.0]},{\"arguments\":{\"id\":\"a\"},\"result\":[5]}]}");
    tap_ok(tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err) == TG_OK &&
               s.results.distinct == 5 && s.results.modal_count == 3 &&
               s.results.representative == 4,
           "results past the fourth distinct one are digested and still agree");
    tg_doc_free(doc);

    /* epochs: one text, another spelling of one value, two values */
    {
        static const char *const plans[][4] = {
            {"\"e\"", "\"e\"", "\"e\"", "equal"},
            {"1", "1.0", "10e-1", "equal"},
            {"\"e\"", "\"e\"", "\"f\"", "not equal"},
            {"\"e\"", "\"f\"", "\"e\"", "not equal"},
            {"{\"v\":1}", "{\"v\":1.0}", "{\"v\":2}", "not equal"},
        };
        for (size_t p = 0; p < sizeof plans / sizeof plans[0]; p++) {
            char text[512], name[128];
            snprintf(text, sizeof text,
                     "{\"samples\":[{\"arguments\":{\"id\":\"a\"},\"epoch\":%s},"
                     "{\"arguments\":{\"id\":\"a\"},\"epoch\":%s},"
                     "{\"arguments\":{\"id\":\"a\"},\"epoch\":%s}]}",
                     plans[p][0], plans[p][1], plans[p][2]);
            snprintf(name, sizeof name, "epochs %s, %s, %s are %s", plans[p][0], plans[p][1],
                     plans[p][2], plans[p][3]);
            samples = samples_of(&doc, text);
            tap_ok(tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err) == TG_OK &&
                       s.epochs_equal == (plans[p][3][0] == 'e'),
                   name);
            tg_doc_free(doc);
        }
    }

    /* results that are all one value agree without a digest of their
     * own, and still apart from the samples with none */
    samples = samples_of(
        &doc,
        "{\"samples\":[{\"arguments\":{\"id\":\"a\"},\"result\":{\"k\":[1,2]}},"
        "{\"arguments\":{\"id\":\"a\"},\"result\":{\"k\":[1,2]}},{\"arguments\":{\"id\":\"a\"}},"
        "{\"arguments\":{\"id\":\"a\"},\"result\":{\"k\":[1,2]}}]}");
    tap_ok(tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err) == TG_OK &&
               s.results.distinct == 2 && s.results.modal_count == 3 &&
               s.results.representative == 0,
           "three results of one value agree, a missing one apart");
    tg_doc_free(doc);
    samples = samples_of(
        &doc,
        "{\"samples\":[{\"arguments\":{\"id\":\"a\"}},{\"arguments\":{\"id\":\"a\"},\"result\":7},"
        "{\"arguments\":{\"id\":\"a\"},\"result\":7},{\"arguments\":{\"id\":\"a\"},\"result\":8},"
        "{\"arguments\":{\"id\":\"a\"},\"result\":7.0},{\"arguments\":{\"id\":\"a\"},\"result\":8}]}");
    tap_ok(tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err) == TG_OK &&
               s.results.distinct == 3 && s.results.modal_count == 3 &&
               s.results.representative == 1,
           "a second value among the results: the first, met twice, agrees with its other "
           "spelling");
    tg_doc_free(doc);

    /* arguments met again keep their digest and rung verdict; another
     * spelling of them (7.0) is checked and digested again, and agrees */
    samples =
        samples_of(&doc, "{\"samples\":[{\"arguments\":{\"id\":7}},{\"arguments\":{\"id\":\"a\"}},"
                         "{\"arguments\":{\"id\":7}},{\"arguments\":{\"id\":7.0}}]}");
    tap_ok(tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err) == TG_OK &&
               s.n_failed == 3 && s.failed[0] == 0 && s.failed[1] == 2 && s.failed[2] == 3 &&
               s.args.distinct == 2 && s.args.modal_count == 3,
           "arguments met again (7, 7, 7.0) fail the rung again, and agree");
    tg_doc_free(doc);

    /* numbers past the exponents a value comparison tells apart: the same
     * as far as tg_value_equal goes, different exact forms */
    samples = samples_of(
        &doc, "{\"samples\":[{\"arguments\":{\"id\":\"a\",\"n\":1e-756784567890123456789}},"
              "{\"arguments\":{\"id\":\"a\",\"n\":1e-7567845678901234567889}}]}");
    tap_ok(tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err) == TG_OK &&
               s.args.distinct == 2,
           "arguments that differ only past the exponents a comparison tells apart are two");
    tg_doc_free(doc);

    /* normalization makes spellings agree */
    {
        tg_norm_t *norm = tg_norm_new(E, NULL);
        tg_norm_add_rule(norm, "/path", 5, TG_NORM_PATH, NULL);
        samples = samples_of(
            &doc,
            "{\"samples\":[{\"arguments\":{\"id\":\"a\",\"path\":\"/a//b/\"}},"
            "{\"arguments\":{\"id\":\"a\",\"path\":\"/a/./b\"}},{\"arguments\":{\"id\":\"a\",\"path\":\"/a/b\"}}]}");
        tg_plan_summarize(E, R, (long)index, norm, samples, &s, &err);
        tap_ok(s.args.modal_count == 3, "path normalization: three spellings, one value");
        tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err);
        tap_ok(s.args.modal_count == 1, "without the plan: three values");
        tg_doc_free(doc);
        tg_norm_free(norm);
    }

    /* malformed */
    samples = samples_of(&doc, "{\"samples\":[{\"arguments\":{\"id\":\"a\"}},42]}");
    tap_ok(tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err) == TG_E_BAD_CALL,
           "a sample that is not an object");
    tg_doc_free(doc);
    samples = samples_of(&doc, "{\"samples\":[{\"result\":1}]}");
    tap_ok(tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err) == TG_E_BAD_ARGUMENTS &&
               strstr(err.message, "sample 1") != NULL,
           "a sample without arguments, named in the message");
    tg_doc_free(doc);
    samples = samples_of(&doc, "{\"samples\":{}}");
    tap_ok(tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err) == TG_E_BAD_CALL,
           "samples not an array");
    tg_doc_free(doc);
    samples = samples_of(&doc, "{\"samples\":[]}");
    tap_ok(tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err) == TG_OK && s.n == 0,
           "no samples");
    tg_doc_free(doc);

    /* many samples (the heap path), and allocation failure everywhere */
    {
        size_t n = 1000, cap = n * 64 + 64, len = 0;
        char *text = malloc(cap);
        long calls;
        int all_ok = 1;
        acct a = {0};
        tg_engine_t *e;
        len += (size_t)snprintf(text + len, cap - len, "{\"samples\":[");
        for (size_t i = 0; i < n; i++)
            len += (size_t)snprintf(text + len, cap - len,
                                    "%s{\"arguments\":{\"id\":\"%s\"},\"result\":%zu}",
                                    i ? "," : "", i % 10 ? "same" : "other", i % 4);
        len += (size_t)snprintf(text + len, cap - len, "]}");
        samples = samples_of(&doc, text);
        tap_ok(tg_plan_summarize(E, R, (long)index, NULL, samples, &s, &err) == TG_OK &&
                   s.n == 1000 && s.args.modal_count == 900 && s.results.modal_count == 250 &&
                   s.args.representative == 1,
               "1,000 samples: 900 agree on arguments, 250 on results");
        tg_doc_free(doc);

        e = tg_engine_new(NULL, acct_alloc, &a, NULL);
        {
            tg_registry_t *r = tg_registry_new(e, NULL);
            tg_doc_t *d, *sd;
            tg_parse(e, schema, strlen(schema), &sd, NULL);
            tg_registry_add(r, "sb", 2, "lookup", 6, NULL, 0, tg_doc_root(sd), NULL, NULL, &index,
                            NULL);
            tg_doc_free(sd);
            tg_parse(e, text, len, &d, NULL);
            samples = tg_get(tg_doc_root(d), "samples", 7);
            a.calls = 0;
            tg_plan_summarize(e, r, (long)index, NULL, samples, &s, &err);
            calls = a.calls;
            for (long k = 1; k <= calls; k++) {
                int rc;
                a.calls = 0;
                a.fail_at = k;
                rc = tg_plan_summarize(e, r, (long)index, NULL, samples, &s, &err);
                all_ok &= rc == TG_E_NOMEM;
            }
            a.fail_at = 0;
            tg_doc_free(d);
            tg_registry_free(r);
        }
        tg_engine_free(e);
        printf("# %ld allocation sites failed in turn\n", calls);
        tap_ok(calls > 0 && all_ok && a.live == 0,
               "every allocation failure gives NOMEM and nothing leaks");
        free(text);
    }

    tg_registry_free(R);
    tg_engine_free(E);
    return tap_done();
}
