/*
 * test_schema_suite.c -- the official JSON Schema Test Suite (draft 2020-12)
 * in standard mode (closed = 0).
 *
 * Reads every *.json file of $JSON_SCHEMA_TEST_SUITE, or of
 * ../shared/data/json-schema-test-suite/draft2020-12 (relative to the
 * working directory, the repository root under `make test`); the suite is
 * read in place, never copied into the repository.  Each file is an array
 * of groups {"description", "schema", "tests": [{"description", "data",
 * "valid"}]}.
 *
 * A group is skipped, and counted with its reason, only when its schema
 * needs what toolgate deliberately lacks: a remote $ref, $id, $anchor or
 * $dynamicRef (toolgate resolves "#..." pointers within one document), or
 * a keyword it does not implement (compile says TG_E_SCHEMA_KEYWORD).
 * Every other group must compile and every test must give the expected
 * validity.  One TAP line per file.
 */
#define _POSIX_C_SOURCE 200809L

#include "tap.h"
#include "toolgate.h"

#include <dirent.h>
#include <stdlib.h>

#define MAX_FILES 256
#define MAX_REASONS 32

static tg_engine_t *E;

typedef struct {
    char name[80];
    int groups;
} reason;

static reason reasons[MAX_REASONS];
static int n_reasons;

static void count_reason(const char *name)
{
    for (int i = 0; i < n_reasons; i++)
        if (strcmp(reasons[i].name, name) == 0) {
            reasons[i].groups++;
            return;
        }
    if (n_reasons < MAX_REASONS) {
        snprintf(reasons[n_reasons].name, sizeof reasons[n_reasons].name, "%s", name);
        reasons[n_reasons++].groups = 1;
    }
}

static int is_key(const char *k, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(k, want, len) == 0;
}

/* Why a schema needs what toolgate does not do, or NULL. */
static const char *needs_unsupported(const tg_value_t *v)
{
    size_t n = tg_len(v);
    if (tg_type_of(v) == TG_OBJECT) {
        for (size_t i = 0; i < n; i++) {
            size_t klen, slen;
            const char *k = tg_key_at(v, i, &klen);
            const tg_value_t *m = tg_at(v, i);
            const char *s = tg_str(m, &slen);
            const char *why;
            if (s && is_key(k, klen, "$ref") && (slen == 0 || s[0] != '#'))
                return "remote $ref";
            if (s && is_key(k, klen, "$id"))
                return "$id";
            if (s && is_key(k, klen, "$anchor"))
                return "$anchor";
            if (s && (is_key(k, klen, "$dynamicRef") || is_key(k, klen, "$dynamicAnchor")))
                return "$dynamicRef";
            if ((why = needs_unsupported(m)))
                return why;
        }
    } else if (tg_type_of(v) == TG_ARRAY) {
        for (size_t i = 0; i < n; i++) {
            const char *why = needs_unsupported(tg_at(v, i));
            if (why)
                return why;
        }
    }
    return NULL;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long size;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)size + 1);
    if (buf && fread(buf, 1, (size_t)size, f) != (size_t)size) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)size;
    return buf;
}

static const char *text_of(const tg_value_t *v, const char *key)
{
    static char buf[160];
    size_t len;
    const char *s = tg_str(tg_get(v, key, strlen(key)), &len);
    snprintf(buf, sizeof buf, "%.*s", s ? (int)(len > 150 ? 150 : len) : 6, s ? s : "(none)");
    return buf;
}

typedef struct {
    int groups, run, passed, failed, skipped;
} tally;

static void run_group(const char *file, const tg_value_t *g, tally *t)
{
    const tg_value_t *schema = tg_get(g, "schema", 6), *tests = tg_get(g, "tests", 5);
    tg_schema_options_t opt;
    tg_schema_t *s;
    tg_error_t err;
    const char *why = needs_unsupported(schema);
    char desc[160];
    int rc;

    snprintf(desc, sizeof desc, "%s", text_of(g, "description"));
    t->groups++;
    if (why) {
        t->skipped++;
        count_reason(why);
        return;
    }
    tg_schema_options_default(&opt);
    opt.closed = 0;
    opt.assert_formats = 1;
    rc = tg_schema_compile(E, schema, &opt, &s, &err);
    if (rc == TG_E_SCHEMA_KEYWORD) {
        char name[80];
        const char *q = strchr(err.message, '"'), *q2 = q ? strchr(q + 1, '"') : NULL;
        snprintf(name, sizeof name, "keyword %.*s", q && q2 ? (int)(q2 - q + 1) : 1,
                 q && q2 ? q : "?");
        t->skipped++;
        count_reason(name);
        return;
    }
    if (rc != TG_OK) {
        size_t n = tg_len(tests);
        t->run += (int)n;
        t->failed += (int)n;
        printf("#   %s / %s: compile failed: %s at \"%s\": %s\n", file, desc, tg_code_name(rc),
               err.pointer, err.message);
        return;
    }
    for (size_t i = 0; i < tg_len(tests); i++) {
        const tg_value_t *test = tg_at(tests, i);
        const tg_value_t *data = tg_get(test, "data", 4);
        int want = tg_type_of(tg_get(test, "valid", 5)) == TG_TRUE;
        tg_finding_t f[4];
        size_t count;
        rc = tg_validate(E, s, data, f, 4, &count, &err);
        t->run++;
        if (rc == TG_OK && (count == 0) == want) {
            t->passed++;
            continue;
        }
        t->failed++;
        printf("#   %s / %s / %s: want %s, got %s", file, desc, text_of(test, "description"),
               want ? "valid" : "invalid",
               rc != TG_OK ? tg_code_name(rc)
               : count     ? "invalid"
                           : "valid");
        if (rc == TG_OK && count)
            printf(" (%s at \"%s\": %s)", f[0].keyword, f[0].pointer, f[0].message);
        printf("\n");
    }
    tg_schema_free(s);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
    const char *dir = getenv("JSON_SCHEMA_TEST_SUITE");
    char *names[MAX_FILES];
    int n_names = 0;
    tally total = {0, 0, 0, 0, 0};
    tg_limits_t lim;
    DIR *d;
    struct dirent *ent;

    if (!dir || !*dir)
        dir = "../shared/data/json-schema-test-suite/draft2020-12";
    if (!(d = opendir(dir))) {
        printf("ok 1 # SKIP JSON Schema Test Suite not found in %s: get it with git clone "
               "https://github.com/json-schema-org/JSON-Schema-Test-Suite and set "
               "JSON_SCHEMA_TEST_SUITE=<the clone>/tests/draft2020-12\n",
               dir);
        printf("1..1\n");
        return 0;
    }
    while ((ent = readdir(d)) && n_names < MAX_FILES) {
        size_t len = strlen(ent->d_name);
        if (len > 5 && strcmp(ent->d_name + len - 5, ".json") == 0)
            names[n_names++] = strdup(ent->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n_names, sizeof *names, by_name);

    tg_limits_default(&lim);
    lim.max_input_bytes = 16u << 20;
    E = tg_engine_new(&lim, NULL, NULL, NULL);
    for (int i = 0; i < n_names; i++) {
        char path[4096], name[200];
        size_t len;
        char *text;
        tg_doc_t *doc = NULL;
        tg_error_t err;
        tally t = {0, 0, 0, 0, 0};

        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        text = read_file(path, &len);
        if (!text || tg_parse(E, text, len, &doc, &err) != TG_OK) {
            snprintf(name, sizeof name, "%s: readable JSON", names[i]);
            tap_ok(0, name);
            free(text);
            continue;
        }
        for (size_t g = 0; g < tg_len(tg_doc_root(doc)); g++)
            run_group(names[i], tg_at(tg_doc_root(doc), g), &t);
        snprintf(name, sizeof name, "%s: %d groups, %d tests run, %d failed, %d groups skipped",
                 names[i], t.groups, t.run, t.failed, t.skipped);
        tap_ok(t.failed == 0 && t.run > 0, name);
        total.groups += t.groups;
        total.run += t.run;
        total.passed += t.passed;
        total.failed += t.failed;
        total.skipped += t.skipped;
        tg_doc_free(doc);
        free(text);
        free(names[i]);
    }
    printf("# suite: files=%d groups=%d tests run=%d passed=%d failed=%d skipped groups=%d (",
           n_names, total.groups, total.run, total.passed, total.failed, total.skipped);
    for (int i = 0; i < n_reasons; i++)
        printf("%s%s: %d", i ? ", " : "", reasons[i].name, reasons[i].groups);
    printf(")\n");
    tg_engine_free(E);
    return tap_done();
}
