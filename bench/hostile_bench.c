/*
 * hostile_bench.c -- what one hostile call costs the validator (issue #10,
 * class 15), with the default limits.
 *
 *   hostile_bench [--min-seconds S]
 *
 * Each case is one schema and one instance of about 1 MB or less, parsed
 * once before timing; whole tg_validate calls are timed until S seconds
 * (default 1) have passed, and one line per case is printed:
 *   <case> bytes=<n> ms_per_call=<t> result=<OK|code> findings=<k>
 * The cases:
 *   unique-65536-ones      uniqueItems over 65,536 copies of 1 (refused:
 *                          uniqueItems, at the first comparison)
 *   unique-65536-distinct  uniqueItems over 65,536 distinct integers
 *                          (valid: a full sort)
 *   pattern-50000          ^(\w+\s?)*$ over 50,000 strings just under the
 *                          match limit (16 findings, then the walk stops)
 *   pattern-50000-silent   the same under anyOf, where a failed branch is no
 *                          finding (REGEX_BUDGET once max_regex_steps is used)
 * Before the fixes of issue #10 the first took 13-18 s a call and the third
 * 10 s.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

static void die(const char *what, const tg_error_t *err)
{
    bench_die("hostile_bench", what, err);
}

/* "[" + n copies of item, comma-separated + "]", malloc'd. */
static char *array_of(const char *item, size_t n, size_t *len)
{
    size_t il = strlen(item), k = 0;
    char *t = malloc(n * (il + 1) + 2);
    if (!t)
        exit(1);
    t[k++] = '[';
    for (size_t i = 0; i < n; i++) {
        if (i)
            t[k++] = ',';
        memcpy(t + k, item, il);
        k += il;
    }
    t[k++] = ']';
    *len = k;
    return t;
}

static char *distinct(size_t n, size_t *len)
{
    char *t = malloc(n * 8 + 2);
    size_t k = 0;
    if (!t)
        exit(1);
    t[k++] = '[';
    for (size_t i = 0; i < n; i++)
        k += (size_t)sprintf(t + k, i ? ",%zu" : "%zu", (i * 40503u) % n);
    t[k++] = ']';
    *len = k;
    return t;
}

static void run(tg_engine_t *e, const char *name, const char *schema, char *text, size_t len,
                double min_seconds)
{
    tg_doc_t *sdoc, *idoc;
    tg_schema_t *s;
    tg_error_t err;
    tg_finding_t f[16];
    size_t count = 0;
    long calls = 0;
    int rc = TG_OK;
    double t0, elapsed;

    if (tg_parse(e, schema, strlen(schema), &sdoc, &err) != TG_OK)
        die(name, &err);
    if (tg_schema_compile(e, tg_doc_root(sdoc), NULL, &s, &err) != TG_OK)
        die(name, &err);
    if (tg_parse(e, text, len, &idoc, &err) != TG_OK)
        die(name, &err);
    t0 = bench_now();
    do {
        rc = tg_validate(e, s, tg_doc_root(idoc), f, 16, &count, &err);
        calls++;
        elapsed = bench_now() - t0;
    } while (elapsed < min_seconds);
    printf("%s bytes=%zu ms_per_call=%.3f result=%s findings=%zu\n", name, len,
           elapsed * 1e3 / (double)calls, rc == TG_OK ? "OK" : tg_code_name(rc),
           rc == TG_OK ? count : 0);
    tg_doc_free(idoc);
    tg_schema_free(s);
    tg_doc_free(sdoc);
    free(text);
}

int main(int argc, char **argv)
{
    double min_seconds = 1.0;
    tg_engine_t *e;
    tg_error_t err;
    size_t len;
    char *text;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--min-seconds") && i + 1 < argc)
            min_seconds = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: hostile_bench [--min-seconds S]\n");
            return 2;
        }
    }
    if (!(e = tg_engine_new(NULL, NULL, NULL, &err)))
        die("engine", &err);
    text = array_of("1", 65536, &len);
    run(e, "unique-65536-ones", "{\"uniqueItems\":true}", text, len, min_seconds);
    text = distinct(65536, &len);
    run(e, "unique-65536-distinct", "{\"uniqueItems\":true}", text, len, min_seconds);
    text = array_of("\"aaaaaaaaaaaaaaa!\"", 50000, &len);
    run(e, "pattern-50000", "{\"items\":{\"pattern\":\"^(\\\\w+\\\\s?)*$\"}}", text, len,
        min_seconds);
    text = array_of("\"aaaaaaaaaaaaaaa!\"", 50000, &len);
    run(e, "pattern-50000-silent",
        "{\"items\":{\"anyOf\":[{\"pattern\":\"^(\\\\w+\\\\s?)*$\"},{\"type\":\"string\"}]}}", text,
        len, min_seconds);
    tg_engine_free(e);
    return 0;
}
