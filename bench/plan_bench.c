/*
 * plan_bench.c -- what the C core alone spends on a sampled plan, to set
 * beside the whole classification (bench/classify_bench.lua) and the Python
 * reference.
 *
 *   plan_bench --registry REGISTRY.json --plans PLANS.jsonl [--min-seconds S]
 *
 * The inputs are those of classify_bench.lua (gen_plans.py writes them):
 * a toolgate registry file and one single-tool plan per non-blank line,
 * {"tool": {"server", "name", ...}, "samples": [...], ...}.  Every plan is
 * loaded into memory before any timing.  Prints these lines, each timed
 * over whole passes until S seconds (default 1) have passed:
 *   toolgate-c-parse plans=<n> seconds=<s> us_per_plan=<x>
 *   toolgate-c-parse+summarize plans=<n> seconds=<s> us_per_plan=<x>
 *   toolgate-c-classify plans=<n> seconds=<s> us_per_plan=<x>
 *   toolgate-c-classify-lines-<t>t plans=<n> seconds=<s> us_per_plan=<x>
 * the first parsing each plan only; the second parsing it, resolving its
 * tool and summarizing its samples with tg_plan_summarize (rung on every
 * sample, canonical hashes, agreement); the third the whole decision,
 * tg_classify under a policy of the rung and consistency (every figure,
 * the decision table, the decision written), the store forgetting between
 * passes as the Python reference does; the last the same on the file's
 * text in the 64 KiB pieces toolgate classify reads, tg_classify_lines on 1
 * and on --threads T threads (default: the processors online, at most 4).
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

static void usage(const char *msg)
{
    if (msg)
        fprintf(stderr, "plan_bench: %s\n", msg);
    fprintf(stderr,
            "usage: plan_bench [--min-seconds S] [--threads T] --registry FILE --plans FILE\n");
    exit(2);
}

static void die(const char *what, const tg_error_t *err)
{
    bench_die("plan_bench", what, err);
}

static const char *string_member(const tg_value_t *obj, const char *key, size_t *len)
{
    const tg_value_t *v = tg_get(obj, key, strlen(key));
    return v && tg_type_of(v) == TG_STRING ? tg_str(v, len) : NULL;
}

/* Every tool of the registry file, compiled closed-world as toolgate does. */
static tg_registry_t *load_registry(tg_engine_t *e, const char *path)
{
    tg_schema_options_t opt;
    tg_error_t err;
    tg_doc_t *doc;
    tg_registry_t *r;
    const tg_value_t *tools;
    size_t len, index;
    char *text = bench_read_all("plan_bench", path, &len);

    if (tg_parse(e, text, len, &doc, &err) != TG_OK)
        die(path, &err);
    free(text);
    tools = tg_get(tg_doc_root(doc), "tools", 5);
    if (!tools || tg_type_of(tools) != TG_ARRAY)
        usage("the registry file needs a \"tools\" array");
    if (!(r = tg_registry_new(e, &err)))
        die("registry", &err);
    tg_schema_options_default(&opt);
    opt.closed = 1;
    for (size_t i = 0; i < tg_len(tools); i++) {
        const tg_value_t *t = tg_at(tools, i);
        size_t slen = 0, nlen = 0;
        const char *server = string_member(t, "server", &slen);
        const char *name = string_member(t, "name", &nlen);

        if (!name)
            usage("a tool without a string \"name\"");
        if (tg_registry_add(r, server ? server : "", slen, name, nlen, "", 0,
                            tg_get(t, "input_schema", 12), tg_get(t, "output_schema", 13), &opt,
                            &index, &err) != TG_OK)
            die(name, &err);
    }
    tg_doc_free(doc);
    return r;
}

/* The tool's index as classification resolves it: by (server, name), or by
 * a name that exactly one server offers; -1 otherwise. */
static long resolve(const tg_registry_t *r, const tg_value_t *tool)
{
    size_t slen, nlen, first;
    const char *server = string_member(tool, "server", &slen);
    const char *name = string_member(tool, "name", &nlen);

    if (!name)
        return -1;
    if (server)
        return tg_registry_find(r, server, slen, name, nlen);
    return tg_registry_find_name(r, name, nlen, &first, 1) == 1 ? (long)first : -1;
}

/* One plan's C work; what it returns only keeps the compiler honest. */
static size_t one(tg_engine_t *e, const tg_registry_t *r, const bench_line *p, int summarize)
{
    tg_doc_t *doc;
    tg_error_t err;
    tg_plan_summary_t sum;
    const tg_value_t *root;
    size_t out;

    if (tg_parse(e, p->text, p->len, &doc, &err) != TG_OK)
        die("plan", &err);
    root = tg_doc_root(doc);
    out = tg_len(root);
    if (summarize) {
        const tg_value_t *tool = tg_get(root, "tool", 4);
        if (!tool || tg_type_of(tool) != TG_OBJECT)
            usage("a plan without a \"tool\" object");
        if (tg_plan_summarize(e, r, resolve(r, tool), NULL, tg_get(root, "samples", 7), &sum,
                              &err) != TG_OK)
            die("summarize", &err);
        out = sum.args.distinct + sum.results.distinct + sum.n_failed;
    }
    tg_doc_free(doc);
    return out;
}

/* The compiled policy of the bench: rung and consistency, each tool's
 * declared determinism from the registry file. */
static tg_policy_t *bench_policy(tg_engine_t *e, const tg_registry_t *r, const char *path)
{
    size_t len, cap = 4096;
    char *text = bench_read_all("plan_bench", path, &len), *desc = malloc(cap);
    tg_doc_t *doc;
    tg_error_t err;
    tg_policy_t *p;
    const tg_value_t *tools;
    size_t at;

    if (!desc || tg_parse(e, text, len, &doc, &err) != TG_OK)
        die(path, &err);
    free(text);
    tools = tg_get(tg_doc_root(doc), "tools", 5);
    at = (size_t)snprintf(desc, cap,
                          "{\"version\":\"bench@1\",\"registry_hash\":\"-\",\"stages\":"
                          "[{\"stage\":\"rung\"},{\"stage\":\"consistency\"}],"
                          "\"risk_levels\":[\"none\"],\"tools\":[");
    for (size_t i = 0; i < tg_len(tools); i++) {
        const tg_value_t *det = tg_get(tg_at(tools, i), "deterministic", 13);
        const char *d = !det                         ? "{}"
                        : tg_type_of(det) == TG_TRUE ? "{\"deterministic\":true}"
                                                     : "{\"deterministic\":false}";
        if (at + 32 > cap && !(desc = realloc(desc, cap *= 2)))
            usage("out of memory");
        at += (size_t)snprintf(desc + at, cap - at, "%s%s", i ? "," : "", d);
    }
    snprintf(desc + at, cap - at, "]}");
    tg_doc_free(doc);
    if (tg_policy_new(e, r, desc, strlen(desc), &p, &err) != TG_OK)
        die("policy", &err);
    free(desc);
    return p;
}

/* Every plan of a pass through tg_classify. */
static size_t classify_pass(tg_engine_t *e, tg_decider_t *d, const tg_policy_t *p,
                            const bench_line *plans, size_t n)
{
    tg_store_t *store = tg_store_new(e, NULL);
    tg_outcome_t o;
    tg_error_t err;
    size_t sink = 0;
    for (size_t i = 0; i < n; i++) {
        if (tg_classify(d, p, NULL, store, plans[i].text, plans[i].len, 0, i + 1, 0, &o, &err) !=
                TG_OK ||
            o.status != TG_DECIDED)
            die("classify", &err);
        sink += o.json_len;
    }
    tg_store_free(store);
    return sink;
}

static void timed_classify(tg_engine_t *e, tg_decider_t *d, const tg_policy_t *p,
                           const bench_line *plans, size_t n, double min_seconds)
{
    double t0, elapsed;
    long passes = 0;
    size_t sink = classify_pass(e, d, p, plans, n);
    t0 = bench_now();
    do {
        sink += classify_pass(e, d, p, plans, n);
        passes++;
        elapsed = bench_now() - t0;
    } while (elapsed < min_seconds);
    printf("toolgate-c-classify plans=%zu seconds=%.3f us_per_plan=%.2f sink=%zu\n", n, elapsed,
           elapsed * 1e6 / ((double)passes * (double)n), sink);
}

/* The file's text classified as the command reads it: pieces of 64 KiB
 * on one thread, 1 MiB a thread on several (toolgate.lines.CHUNK and
 * SHARED_CHUNK), one tg_classify_lines call each. */
#define CHUNK 65536
#define SHARED_CHUNK 1048576
static void timed_lines(tg_engine_t *e, tg_decider_t *d, const tg_policy_t *p, const char *text,
                        size_t len, size_t n, size_t threads, double min_seconds)
{
    tg_workers_t *w = threads > 1 ? tg_workers_new(e, threads, NULL) : NULL;
    double t0 = 0, elapsed;
    long passes = -1; /* the first pass warms up */
    size_t sink = 0;
    tg_buf_t out;
    tg_buf_init(&out, e);
    do {
        tg_store_t *store = tg_store_new(e, NULL);
        size_t line = 0, used = 0, verdicts[3] = {0, 0, 0};
        tg_outcome_t o;
        tg_error_t err;
        int rc;
        size_t at = 0;
        tg_buf_reset(&out);
        /* in the pieces toolgate classify reads */
        while (at < len) {
            size_t want = w ? SHARED_CHUNK * threads : CHUNK;
            size_t piece = len - at < want ? len - at : want;
            rc = w ? tg_classify_lines_parallel(w, d, p, NULL, store, text + at, piece, 0, 0, &line,
                                                &used, &out, verdicts, &o, &err)
                   : tg_classify_lines(d, p, NULL, store, text + at, piece, 0, 0, &line, &used,
                                       &out, verdicts, &o, &err);
            if (rc != TG_OK || o.status != TG_NO_MORE_CALLS || used == 0)
                die("classify_lines", &err);
            at += used;
        }
        sink += out.len;
        tg_store_free(store);
        if (++passes == 0)
            t0 = bench_now();
        elapsed = passes ? bench_now() - t0 : 0;
    } while (passes < 1 || elapsed < min_seconds);
    printf("toolgate-c-classify-lines-%zut plans=%zu seconds=%.3f us_per_plan=%.2f sink=%zu\n",
           threads, n, elapsed, elapsed * 1e6 / ((double)passes * (double)n), sink);
    tg_buf_free(&out);
    tg_workers_free(w);
}

static void timed(const char *label, tg_engine_t *e, const tg_registry_t *r,
                  const bench_line *plans, size_t n, int summarize, double min_seconds)
{
    double t0, elapsed;
    long passes = 0;
    size_t sink = 0;

    for (size_t i = 0; i < n; i++) /* warm-up */
        sink += one(e, r, &plans[i], summarize);
    t0 = bench_now();
    do {
        for (size_t i = 0; i < n; i++)
            sink += one(e, r, &plans[i], summarize);
        passes++;
        elapsed = bench_now() - t0;
    } while (elapsed < min_seconds);
    printf("%s plans=%zu seconds=%.3f us_per_plan=%.2f sink=%zu\n", label, n, elapsed,
           elapsed * 1e6 / ((double)passes * (double)n), sink);
}

int main(int argc, char **argv)
{
    const char *registry_path = NULL, *plans_path = NULL;
    double min_seconds = 1.0;
    tg_engine_t *e;
    tg_registry_t *r;
    tg_policy_t *p;
    tg_decider_t *d;
    tg_error_t err;
    bench_line *plans;
    size_t n, len, threads = tg_cpu_count() < 4 ? tg_cpu_count() : 4;
    char *text;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--registry") && i + 1 < argc)
            registry_path = argv[++i];
        else if (!strcmp(argv[i], "--plans") && i + 1 < argc)
            plans_path = argv[++i];
        else if (!strcmp(argv[i], "--min-seconds") && i + 1 < argc)
            min_seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = (size_t)atoi(argv[++i]);
        else
            usage("unknown argument");
    }
    if (!registry_path || !plans_path)
        usage("--registry and --plans are required");
    if (!(min_seconds > 0))
        usage("--min-seconds must be > 0");

    if (!(e = tg_engine_new(NULL, NULL, NULL, &err)))
        die("engine", &err);
    r = load_registry(e, registry_path);

    plans = bench_read_lines("plan_bench", plans_path, 1, &n);
    if (n == 0)
        usage("no plans");

    timed("toolgate-c-parse", e, r, plans, n, 0, min_seconds);
    timed("toolgate-c-parse+summarize", e, r, plans, n, 1, min_seconds);
    p = bench_policy(e, r, registry_path);
    if (!(d = tg_decider_new(e, &err)))
        die("decider", &err);
    timed_classify(e, d, p, plans, n, min_seconds);
    text = bench_read_all("plan_bench", plans_path, &len);
    timed_lines(e, d, p, text, len, n, 1, min_seconds);
    if (threads > 1)
        timed_lines(e, d, p, text, len, n, threads, min_seconds);

    free(text);
    tg_decider_free(d);
    tg_policy_free(p);
    bench_free_lines(plans, n);
    tg_registry_free(r);
    tg_engine_free(e);
    return 0;
}
