/*
 * check_c_bench.c -- tg_check alone: the C floor under engine:check.
 *
 *   check_c_bench --schemas SCHEMAS.json --calls NATIVE.jsonl [--min-seconds S]
 *                 [--format native|auto] [--parse-only]
 *
 * SCHEMAS.json maps "server/name" to the tool's input schema (what
 * gen_mcp_calls.py writes for ajv); NATIVE.jsonl holds one native call
 * {"server","name","arguments"} per line (gen_mcp_calls.py --native), the
 * lines bench/check_bench.lua gives engine:check.  The registry is built
 * from the schemas (closed world), the policy is the rung policy's
 * pipeline (rung, then verifier) with no contracts, and every line goes
 * through tg_check: decode, resolve, validate, the arguments' digest, the
 * decision written as JSON.  --format auto reads the lines as engine:check
 * and `toolgate check` do by default (the format told by the members),
 * native (the default) as the native format alone: the difference is
 * what detection costs.  One untimed warm-up pass counts the accepts,
 * then whole passes are timed until S seconds (default 1); prints, in the
 * format of check_bench.lua's line:
 *   toolgate-c-check calls=<n> seconds=<s> ns_per_call=<y> accepted=<a>
 * so the gap between the two is what the binding and Lua add.  With
 * --parse-only, the same lines through tg_parse alone, timed the same way:
 *   toolgate-c-parse calls=<n> seconds=<s> ns_per_call=<y> parsed=<p>
 * beside tg_check's row, the difference is what a check does besides
 * parsing (decode, resolve, validate, digest, decide, write): what no
 * faster parser can take off.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

static void usage(const char *msg)
{
    if (msg)
        fprintf(stderr, "check_c_bench: %s\n", msg);
    fprintf(stderr, "usage: check_c_bench [--min-seconds S] [--format native|auto] [--parse-only] "
                    "--schemas FILE --calls FILE\n");
    exit(2);
}

static void die(const char *what, const tg_error_t *err)
{
    bench_die("check_c_bench", what, err);
}

/* One decision: 1 when the call is accepted, 0 when not (or not decided). */
static int one(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *c, const bench_line *l,
               int format)
{
    tg_outcome_t o;
    if (tg_check(d, p, c, l->text, l->len, format, TG_CHECK_ONE, 0, &o, NULL) != TG_OK)
        return 0;
    return o.status == TG_DECIDED && o.verdict == TG_ACCEPT;
}

/* One parse: 1 when the line is JSON, 0 when not. */
static int parse_one(tg_engine_t *e, const bench_line *l)
{
    tg_doc_t *doc;
    if (tg_parse(e, l->text, l->len, &doc, NULL) != TG_OK)
        return 0;
    tg_doc_free(doc);
    return 1;
}

int main(int argc, char **argv)
{
    const char *schemas_path = NULL, *calls_path = NULL;
    double min_seconds = 1.0, t0, elapsed;
    tg_engine_t *e;
    tg_error_t err;
    tg_doc_t *sdoc;
    const tg_value_t *sroot;
    tg_schema_options_t opt;
    tg_registry_t *r;
    tg_policy_t *p;
    tg_context_t *ctx;
    tg_decider_t *d;
    char *stext, *pjson;
    size_t slen, n_tools, n_lines, at;
    bench_line *lines;
    long passes = 0, accepted = 0, sink = 0;
    int format = TG_FORMAT_NATIVE, parse_only = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--schemas") && i + 1 < argc)
            schemas_path = argv[++i];
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc)
            calls_path = argv[++i];
        else if (!strcmp(argv[i], "--min-seconds") && i + 1 < argc)
            min_seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--parse-only"))
            parse_only = 1;
        else if (!strcmp(argv[i], "--format") && i + 1 < argc) {
            const char *f = argv[++i];
            if (!strcmp(f, "native"))
                format = TG_FORMAT_NATIVE;
            else if (!strcmp(f, "auto"))
                format = TG_FORMAT_AUTO;
            else
                usage("--format is native or auto");
        } else
            usage("unknown argument");
    }
    if (!schemas_path || !calls_path)
        usage("--schemas and --calls are required");
    if (!(min_seconds > 0))
        usage("--min-seconds must be > 0");

    /* the default limits throughout: the calls are decided as a host would */
    if (!(e = tg_engine_new(NULL, NULL, NULL, &err)))
        die("engine", &err);
    stext = bench_read_all("check_c_bench", schemas_path, &slen);
    if (tg_parse(e, stext, slen, &sdoc, &err) != TG_OK)
        die(schemas_path, &err);
    free(stext);
    sroot = tg_doc_root(sdoc);
    if (tg_type_of(sroot) != TG_OBJECT)
        usage("the schemas file must hold one JSON object");
    n_tools = tg_len(sroot);
    if (!(r = tg_registry_new(e, &err)))
        die("registry", &err);
    tg_schema_options_default(&opt);
    opt.closed = 1;
    for (size_t i = 0; i < n_tools; i++) {
        size_t klen, index;
        const char *key = tg_key_at(sroot, i, &klen);
        const char *slash = memchr(key, '/', klen);
        if (!slash)
            usage("a schemas key must be server/name");
        if (tg_registry_add(r, key, (size_t)(slash - key), slash + 1,
                            klen - (size_t)(slash - key) - 1, "", 0, tg_at(sroot, i), NULL, &opt,
                            &index, &err) != TG_OK) {
            fprintf(stderr, "check_c_bench: tool %.*s: ", (int)klen, key);
            die("registry", &err);
        }
    }

    /* the rung policy's pipeline, one contract-less entry per tool */
    pjson = malloc(200 + 3 * n_tools);
    at = (size_t)sprintf(pjson, "{\"version\":\"bench@1\",\"registry_hash\":\"bench\","
                                "\"risk_levels\":[\"low\"],\"stages\":[{\"stage\":\"rung\"},"
                                "{\"stage\":\"verifier\"}],\"tools\":[");
    for (size_t i = 0; i < n_tools; i++)
        at += (size_t)sprintf(pjson + at, "%s{}", i ? "," : "");
    at += (size_t)sprintf(pjson + at, "]}");
    if (tg_policy_new(e, r, pjson, at, &p, &err) != TG_OK)
        die("policy", &err);
    if (tg_context_new(p, "{}", 2, &ctx, &err) != TG_OK)
        die("context", &err);
    if (!(d = tg_decider_new(e, &err)))
        die("decider", &err);

    lines = bench_read_lines("check_c_bench", calls_path, 1, &n_lines);
    if (n_lines == 0)
        usage("no calls");
    for (size_t i = 0; i < n_lines; i++) /* warm-up, untimed; also the accepted count */
        accepted += parse_only ? parse_one(e, &lines[i]) : one(d, p, ctx, &lines[i], format);
    t0 = bench_now();
    do {
        for (size_t i = 0; i < n_lines; i++)
            sink += parse_only ? parse_one(e, &lines[i]) : one(d, p, ctx, &lines[i], format);
        passes++;
        elapsed = bench_now() - t0;
    } while (elapsed < min_seconds);
    if (sink != accepted * passes) {
        fprintf(stderr, "check_c_bench: the outcomes are not deterministic\n");
        return 1;
    }
    printf("toolgate-c-%s calls=%zu seconds=%.6f ns_per_call=%.1f %s=%ld\n",
           parse_only ? "parse" : "check", n_lines, elapsed,
           elapsed * 1e9 / ((double)passes * (double)n_lines), parse_only ? "parsed" : "accepted",
           accepted);

    bench_free_lines(lines, n_lines);
    tg_decider_free(d);
    tg_context_free(ctx);
    tg_policy_free(p);
    free(pjson);
    tg_registry_free(r);
    tg_doc_free(sdoc);
    tg_engine_free(e);
    return 0;
}
