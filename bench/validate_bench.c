/*
 * validate_bench.c -- toolgate's side of the parse + validate benchmark.
 *
 *   validate_bench --schemas SCHEMAS.json --calls CALLS.jsonl [--min-seconds S]
 *   validate_bench --check --schemas SCHEMAS.json --calls CALLS.jsonl
 *
 * The inputs are those of bench/peers/validate_node.js (gen_mcp_calls.py
 * writes them): SCHEMAS.json maps a tool key to its JSON Schema, CALLS.jsonl
 * holds one {"tool": "<key>", "arguments": "<raw JSON text>", ...} per
 * non-blank line.
 *
 * Every schema is compiled once with tg_schema_compile (closed = 1; the
 * schemas are already explicitly closed, so the verdicts must be ajv's), and
 * every call's arguments text is loaded into memory, before any timing.
 * Bench mode runs one untimed warm-up pass (which also counts the valid
 * calls), then times whole passes of tg_parse(arguments text) + tg_validate
 * over all calls until S seconds (default 1) have passed, and prints, in the
 * format of node-ajv's line:
 *   toolgate-c-validate calls=<n> seconds=<s> ns_per_call=<y> valid=<v>
 * Text that does not parse counts as invalid, as does a validation that
 * cannot finish (a limit): fail closed.  The engine's limits are the
 * defaults while timing (larger ones only to read the input files).
 *
 * --check prints one line per call, in order: {"valid":true} or
 * {"valid":false}.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

typedef struct call_t {
    char *text;
    size_t len;
    const tg_schema_t *schema;
} call_t;

static void usage(const char *msg)
{
    if (msg)
        fprintf(stderr, "validate_bench: %s\n", msg);
    fprintf(stderr,
            "usage: validate_bench [--check] [--min-seconds S] --schemas FILE --calls FILE\n");
    exit(2);
}

static void die(const char *what, const tg_error_t *err)
{
    bench_die("validate_bench", what, err);
}

/* One verdict: parse the arguments text, validate it; 1 valid, 0 not. */
static int one(tg_engine_t *e, const call_t *c)
{
    tg_doc_t *doc;
    tg_error_t err;
    tg_finding_t finding;
    size_t count = 1;
    int rc;

    if (tg_parse(e, c->text, c->len, &doc, &err) != TG_OK)
        return 0;
    rc = tg_validate(e, c->schema, tg_doc_root(doc), &finding, 1, &count, &err);
    tg_doc_free(doc);
    return rc == TG_OK && count == 0;
}

int main(int argc, char **argv)
{
    const char *schemas_path = NULL, *calls_path = NULL;
    double min_seconds = 1.0, t0, elapsed;
    int check = 0;
    tg_engine_t *e;
    tg_limits_t defaults, roomy;
    tg_error_t err;
    tg_doc_t *sdoc;
    const tg_value_t *sroot;
    tg_schema_options_t opt;
    tg_schema_t **schemas;
    const char **keys;
    size_t *key_lens, n_schemas, n = 0, ncap = 0, slen;
    call_t *calls = NULL;
    char *stext;
    bench_line *lines;
    size_t n_lines;
    long passes = 0, valid = 0, sink = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check"))
            check = 1;
        else if (!strcmp(argv[i], "--schemas") && i + 1 < argc)
            schemas_path = argv[++i];
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc)
            calls_path = argv[++i];
        else if (!strcmp(argv[i], "--min-seconds") && i + 1 < argc)
            min_seconds = atof(argv[++i]);
        else
            usage("unknown argument");
    }
    if (!schemas_path || !calls_path)
        usage("--schemas and --calls are required");
    if (!(min_seconds > 0))
        usage("--min-seconds must be > 0");

    /* Roomy limits to read the input files (a call line carries its
     * arguments as a JSON string); the defaults again before any call. */
    tg_limits_default(&defaults);
    roomy = defaults;
    roomy.max_input_bytes = TG_LIMIT_MAX_INPUT_BYTES;
    roomy.max_string_bytes = TG_LIMIT_MAX_INPUT_BYTES;
    roomy.max_members = 1 << 20;
    e = tg_engine_new(&roomy, NULL, NULL, &err);
    if (!e)
        die("engine", &err);

    stext = bench_read_all("validate_bench", schemas_path, &slen);
    if (tg_parse(e, stext, slen, &sdoc, &err) != TG_OK)
        die(schemas_path, &err);
    free(stext);
    sroot = tg_doc_root(sdoc);
    if (tg_type_of(sroot) != TG_OBJECT)
        usage("the schemas file must hold one JSON object");
    n_schemas = tg_len(sroot);
    schemas = calloc(n_schemas + 1, sizeof *schemas);
    keys = calloc(n_schemas + 1, sizeof *keys);
    key_lens = calloc(n_schemas + 1, sizeof *key_lens);
    tg_schema_options_default(&opt);
    opt.closed = 1;
    for (size_t i = 0; i < n_schemas; i++) {
        keys[i] = tg_key_at(sroot, i, &key_lens[i]);
        if (tg_schema_compile(e, tg_at(sroot, i), &opt, &schemas[i], &err) != TG_OK) {
            fprintf(stderr, "validate_bench: schema %.*s: ", (int)key_lens[i], keys[i]);
            die("compile", &err);
        }
    }

    lines = bench_read_lines("validate_bench", calls_path, 1, &n_lines);
    for (size_t li = 0; li < n_lines; li++) {
        tg_doc_t *cdoc;
        const tg_value_t *tool, *args;
        const char *s;
        size_t tlen, alen, k;

        if (tg_parse(e, lines[li].text, lines[li].len, &cdoc, &err) != TG_OK) {
            fprintf(stderr, "validate_bench: call %zu: ", n + 1);
            die("parse", &err);
        }
        tool = tg_get(tg_doc_root(cdoc), "tool", 4);
        args = tg_get(tg_doc_root(cdoc), "arguments", 9);
        if (!tool || tg_type_of(tool) != TG_STRING || !args || tg_type_of(args) != TG_STRING) {
            fprintf(stderr, "validate_bench: call %zu: needs string \"tool\" and \"arguments\"\n",
                    n + 1);
            return 2;
        }
        s = tg_str(tool, &tlen);
        for (k = 0; k < n_schemas; k++)
            if (key_lens[k] == tlen && !memcmp(keys[k], s, tlen))
                break;
        if (k == n_schemas) {
            fprintf(stderr, "validate_bench: call %zu: no schema for tool %.*s\n", n + 1, (int)tlen,
                    s);
            return 2;
        }
        if (n == ncap) {
            ncap = ncap ? 2 * ncap : 1024;
            calls = realloc(calls, ncap * sizeof *calls);
        }
        s = tg_str(args, &alen);
        calls[n].text = malloc(alen ? alen : 1);
        memcpy(calls[n].text, s, alen);
        calls[n].len = alen;
        calls[n].schema = schemas[k];
        n++;
        tg_doc_free(cdoc);
    }
    bench_free_lines(lines, n_lines);
    if (n == 0)
        usage("no calls");
    if (tg_engine_set_limits(e, &defaults, &err) != TG_OK)
        die("limits", &err);

    if (check) {
        for (size_t i = 0; i < n; i++)
            fputs(one(e, &calls[i]) ? "{\"valid\":true}\n" : "{\"valid\":false}\n", stdout);
    } else {
        for (size_t i = 0; i < n; i++) /* warm-up, untimed; also the valid count */
            valid += one(e, &calls[i]);
        t0 = bench_now();
        do {
            for (size_t i = 0; i < n; i++)
                sink += one(e, &calls[i]);
            passes++;
            elapsed = bench_now() - t0;
        } while (elapsed < min_seconds);
        if (sink != valid * passes) {
            fprintf(stderr, "validate_bench: validation is not deterministic\n");
            return 1;
        }
        printf("toolgate-c-validate calls=%zu seconds=%.6f ns_per_call=%.1f valid=%ld\n", n,
               elapsed, elapsed * 1e9 / ((double)passes * (double)n), valid);
    }

    for (size_t i = 0; i < n; i++)
        free(calls[i].text);
    free(calls);
    for (size_t i = 0; i < n_schemas; i++)
        tg_schema_free(schemas[i]);
    free(schemas);
    free(keys);
    free(key_lens);
    tg_doc_free(sdoc);
    tg_engine_free(e);
    return 0;
}
