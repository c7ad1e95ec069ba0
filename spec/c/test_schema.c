/*
 * test_schema.c -- the JSON Schema compiler and validator: every keyword
 * valid and invalid, every compile error class with its code and pointer,
 * closed world, findings (codes, keywords, pointers, messages, order,
 * truncation), the two validation budgets, exact multipleOf, and
 * allocation failure at every allocation.  Formats: test_format.c.
 */
#include "acct.h"
#include "tap.h"
#include "toolgate.h"

#include <stdlib.h>

static tg_engine_t *E;

static tg_doc_t *parse(const char *json)
{
    tg_doc_t *doc = NULL;
    tg_error_t err;
    if (tg_parse(E, json, strlen(json), &doc, &err) != TG_OK)
        printf("# test bug: cannot parse %s: %s\n", json, err.message);
    return doc;
}

/* Compiles schema text; the schema document is freed at once, so every
 * validation below also proves the compiled schema owns its data. */
static int compile(const char *schema, const tg_schema_options_t *opt, tg_schema_t **out,
                   tg_error_t *err)
{
    tg_doc_t *doc = parse(schema);
    int rc;
    *out = NULL;
    if (!doc)
        return -1;
    rc = tg_schema_compile(E, tg_doc_root(doc), opt, out, err);
    tg_doc_free(doc);
    return rc;
}

/* Validates instance text; returns the status, findings in f[0..max). */
static int validate(const tg_schema_t *s, const char *instance, tg_finding_t *f, size_t max,
                    size_t *count)
{
    tg_doc_t *doc = parse(instance);
    tg_error_t err;
    int rc;
    if (!doc)
        return -1;
    rc = tg_validate(E, s, tg_doc_root(doc), f, max, count, &err);
    tg_doc_free(doc);
    return rc;
}

typedef struct {
    const char *schema, *instance;
    int valid;
    const char *name;
} vcase;

/* Runs a table of cases with the given options; one TAP line per case. */
static void run_cases(const vcase *cases, size_t n, const tg_schema_options_t *opt)
{
    for (size_t i = 0; i < n; i++) {
        tg_schema_t *s;
        tg_error_t err;
        tg_finding_t f[8];
        size_t count = 0;
        int rc = compile(cases[i].schema, opt, &s, &err), vrc = -1;
        if (rc == TG_OK)
            vrc = validate(s, cases[i].instance, f, 8, &count);
        if (!tap_ok(rc == TG_OK && vrc == TG_OK && (count == 0) == cases[i].valid, cases[i].name)) {
            printf("#   schema %s, instance %s: ", cases[i].schema, cases[i].instance);
            if (rc != TG_OK)
                printf("compile %s: %s\n", tg_code_name(rc), err.message);
            else if (vrc != TG_OK)
                printf("validate %s\n", tg_code_name(vrc));
            else
                printf("%s%s%s\n", count ? "invalid: " : "valid", count ? f[0].keyword : "",
                       count ? f[0].message : "");
        }
        tg_schema_free(s);
    }
}

static tg_schema_options_t standard(void)
{
    tg_schema_options_t o;
    tg_schema_options_default(&o);
    o.closed = 0;
    return o;
}

/* ---- keywords ---------------------------------------------------------------- */

static const vcase keyword_cases[] = {
    {"{\"type\":\"string\"}", "\"x\"", 1, "type string: a string"},
    {"{\"type\":\"string\"}", "1", 0, "type string: a number"},
    {"{\"type\":\"integer\"}", "1.0", 1, "type integer: 1.0 is an integer"},
    {"{\"type\":\"integer\"}", "1.5e1", 1, "type integer: 1.5e1 is an integer"},
    {"{\"type\":\"integer\"}", "1.25e1", 0, "type integer: 1.25e1 is not"},
    {"{\"type\":\"integer\"}", "1.0000000000000000001", 0,
     "type integer: decided on the decimal, not the double"},
    {"{\"type\":\"integer\"}", "9007199254740993", 1, "type integer: beyond 2^53"},
    {"{\"type\":\"number\"}", "-0.5", 1, "type number"},
    {"{\"type\":\"number\"}", "\"1\"", 0, "type number: a numeric string is not"},
    {"{\"type\":[\"string\",\"null\"]}", "null", 1, "type array: null"},
    {"{\"type\":[\"string\",\"null\"]}", "false", 0, "type array: boolean"},
    {"{\"type\":\"boolean\"}", "true", 1, "type boolean"},
    {"{\"type\":\"object\"}", "[]", 0, "type object: an array"},
    {"{\"type\":\"array\"}", "[]", 1, "type array"},
    {"{\"enum\":[\"read\",\"write\"]}", "\"read\"", 1, "enum: member"},
    {"{\"enum\":[\"read\",\"write\"]}", "\"Read\"", 0, "enum: case matters"},
    {"{\"enum\":[1,{\"a\":[1]}]}", "{\"a\":[1.0]}", 1, "enum: deep, 1 == 1.0"},
    {"{\"enum\":[9007199254740993]}", "9007199254740992", 0,
     "enum: equal doubles, different decimals"},
    {"{\"enum\":[]}", "1", 0, "enum: empty accepts nothing"},
    {"{\"const\":{\"a\":1,\"b\":[true]}}", "{\"b\":[true],\"a\":1e0}", 1, "const: object"},
    {"{\"const\":0}", "-0", 1, "const: -0 equals 0"},
    {"{\"const\":false}", "0", 0, "const: false is not 0"},
    {"{\"minimum\":1}", "1", 1, "minimum: equal"},
    {"{\"minimum\":1}", "0.9", 0, "minimum: below"},
    {"{\"maximum\":1}", "1.1", 0, "maximum: above"},
    {"{\"exclusiveMinimum\":1}", "1", 0, "exclusiveMinimum: equal"},
    {"{\"exclusiveMinimum\":1}", "1.0001", 1, "exclusiveMinimum: above"},
    {"{\"exclusiveMaximum\":1}", "1", 0, "exclusiveMaximum: equal"},
    {"{\"exclusiveMaximum\":1}", "\"1\"", 1, "number keywords ignore strings"},
    {"{\"multipleOf\":2}", "10", 1, "multipleOf: 10 of 2"},
    {"{\"multipleOf\":2}", "7", 0, "multipleOf: 7 of 2"},
    {"{\"minLength\":3}", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", 1,
     "minLength: three code points in 9 bytes"},
    {"{\"maxLength\":2}", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", 0,
     "maxLength: three code points are more than 2"},
    {"{\"maxLength\":2}", "[1,2,3]", 1, "string keywords ignore arrays"},
    {"{\"pattern\":\"b+\"}", "\"abbc\"", 1, "pattern: unanchored search"},
    {"{\"pattern\":\"^b+$\"}", "\"abbc\"", 0, "pattern: anchored by the pattern"},
    {"{\"pattern\":\"^a$\"}", "\"a\\n\"", 0, "pattern: $ does not match before a final newline"},
    {"{\"pattern\":\"^\\\\u00e9$\"}", "\"\xc3\xa9\"", 1, "pattern: ECMA-262 \\u escape"},
    /* a UTF-16 pair of escapes is the code point it spells (ECMA-262 /u) */
    {"{\"pattern\":\"^\\\\ud83d\\\\ude00$\"}", "\"\xf0\x9f\x98\x80\"", 1,
     "pattern: surrogate pair escape \\ud83d\\ude00 is U+1F600"},
    {"{\"pattern\":\"^\\\\uD83D\\\\uDE00$\"}", "\"\xf0\x9f\x98\x81\"", 0,
     "pattern: surrogate pair escape (upper case) matches only U+1F600"},
    {"{\"pattern\":\"^[\\\\uD83D\\\\uDE00-\\\\uD83D\\\\uDE4F]+$\"}",
     "\"\xf0\x9f\x98\x81\xf0\x9f\x99\x8f\"", 1, "pattern: surrogate pairs as a class range"},
    {"{\"pattern\":\"^\\\\p{Letter}+$\"}", "\"\xcf\x80x\"", 1, "pattern: \\p{Letter}"},
    {"{\"pattern\":\"^\\\\p{gc=Lu}$\"}", "\"a\"", 0, "pattern: \\p{gc=Lu}"},
    {"{\"pattern\":\"^.$\"}", "\"\xf0\x9f\x98\x80\"", 1, "pattern: . is one code point"},
    {"{\"pattern\":\"^[^]$\"}", "\"\\n\"", 1, "pattern: [^] matches any character"},
    {"{\"properties\":{\"a\":{\"type\":\"integer\"}}}", "{\"a\":\"x\"}", 0,
     "properties: bad value"},
    {"{\"properties\":{\"a\":{\"type\":\"integer\"}}}", "{\"b\":\"x\"}", 1,
     "properties: others free in standard mode"},
    {"{\"required\":[\"a\",\"b\"]}", "{\"a\":1}", 0, "required: one missing"},
    {"{\"required\":[\"a\",\"a\"]}", "{\"a\":1}", 1, "required: repeated names are one"},
    {"{\"required\":[\"a\"]}", "[]", 1, "required ignores arrays"},
    {"{\"properties\":{\"a\":{}},\"additionalProperties\":false}", "{\"a\":1,\"b\":2}", 0,
     "additionalProperties false"},
    {"{\"additionalProperties\":{\"type\":\"string\"}}", "{\"a\":\"x\",\"b\":2}", 0,
     "additionalProperties schema"},
    {"{\"patternProperties\":{\"^x-\":{\"type\":\"string\"}},\"additionalProperties\":false}",
     "{\"x-a\":\"1\"}", 1, "patternProperties: matched, so not additional"},
    {"{\"patternProperties\":{\"^x-\":{\"type\":\"string\"}}}", "{\"x-a\":1}", 0,
     "patternProperties: bad value"},
    {"{\"propertyNames\":{\"maxLength\":3}}", "{\"abc\":1,\"abcd\":2}", 0, "propertyNames"},
    {"{\"propertyNames\":false}", "{}", 1, "propertyNames false: empty object"},
    {"{\"minProperties\":2}", "{\"a\":1}", 0, "minProperties"},
    {"{\"maxProperties\":1}", "{\"a\":1,\"b\":2}", 0, "maxProperties"},
    {"{\"dependentRequired\":{\"a\":[\"b\"]}}", "{\"a\":1}", 0, "dependentRequired: missing"},
    {"{\"dependentRequired\":{\"a\":[\"b\"]}}", "{\"b\":1}", 1, "dependentRequired: not triggered"},
    {"{\"items\":{\"type\":\"integer\"}}", "[1,2,\"x\"]", 0, "items"},
    {"{\"prefixItems\":[{\"type\":\"string\"}],\"items\":false}", "[\"a\"]", 1,
     "prefixItems + items false: exact"},
    {"{\"prefixItems\":[{\"type\":\"string\"}],\"items\":false}", "[\"a\",1]", 0,
     "prefixItems + items false: one too many"},
    {"{\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "[\"a\"]", 1,
     "prefixItems: shorter arrays are fine"},
    {"{\"items\":[{\"type\":\"string\"}],\"additionalItems\":false}", "[\"a\",1]", 0,
     "draft-07 items array + additionalItems false"},
    {"{\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"integer\"}}",
     "[\"a\",1,2]", 1, "draft-07 additionalItems schema"},
    {"{\"items\":[],\"additionalItems\":false}", "[1]", 0, "draft-07 empty tuple"},
    {"{\"items\":{\"type\":\"integer\"},\"additionalItems\":false}", "[1,2]", 1,
     "additionalItems is ignored beside a schema items (draft-07)"},
    /* 2020-12 ignores additionalItems beside prefixItems: items says what follows */
    {"{\"prefixItems\":[{}],\"additionalItems\":false}", "[1,2]", 1,
     "additionalItems is ignored beside prefixItems (2020-12)"},
    {"{\"prefixItems\":[{}],\"additionalItems\":{\"type\":\"string\"}}", "[1,2]", 1,
     "additionalItems schema is ignored beside prefixItems"},
    {"{\"prefixItems\":[{}],\"items\":false,\"additionalItems\":true}", "[1,2]", 0,
     "prefixItems + items false: additionalItems true opens nothing"},
    {"{\"minItems\":2}", "[1]", 0, "minItems"},
    {"{\"maxItems\":1}", "[1,2]", 0, "maxItems"},
    {"{\"maxItems\":1.0}", "[1]", 1, "maxItems 1.0 is an integer bound"},
    {"{\"uniqueItems\":true}", "[1,1.0]", 0, "uniqueItems: 1 and 1.0"},
    {"{\"uniqueItems\":true}", "[{\"a\":1,\"b\":2},{\"b\":2,\"a\":1}]", 0,
     "uniqueItems: objects regardless of order"},
    {"{\"uniqueItems\":true}", "[[1],[\"1\"],1,\"1\",true,null,{}]", 1,
     "uniqueItems: distinct kinds"},
    {"{\"uniqueItems\":false}", "[1,1]", 1, "uniqueItems false"},
    {"{\"allOf\":[{\"minimum\":1},{\"maximum\":3}]}", "4", 0, "allOf"},
    {"{\"anyOf\":[{\"type\":\"string\"},{\"minimum\":3}]}", "4", 1, "anyOf: one"},
    {"{\"anyOf\":[{\"type\":\"string\"},{\"minimum\":3}]}", "2", 0, "anyOf: none"},
    {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":3}]}", "4", 0, "oneOf: two"},
    {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":3}]}", "3.5", 1, "oneOf: exactly one"},
    {"{\"not\":{\"type\":\"string\"}}", "\"x\"", 0, "not"},
    {"true", "{\"anything\":[1]}", 1, "true schema at the root"},
    {"false", "null", 0, "false schema at the root"},
    {"{\"properties\":{\"a\":false}}", "{\"a\":1}", 0, "false schema nested"},
    {"{\"properties\":{\"a\":true}}", "{\"a\":1}", 1, "true schema nested"},
    {"{\"$ref\":\"#/$defs/s\",\"$defs\":{\"s\":{\"type\":\"string\"}}}", "1", 0, "$ref $defs"},
    {"{\"$ref\":\"#/definitions/s\",\"definitions\":{\"s\":{\"type\":\"string\"}}}", "\"x\"", 1,
     "$ref definitions (draft-07)"},
    {"{\"$defs\":{\"a~b/c%d\":{\"type\":\"string\"}},\"$ref\":\"#/$defs/a~0b~1c%25d\"}", "1", 0,
     "$ref with ~0, ~1 and %25"},
    {"{\"prefixItems\":[{\"type\":\"integer\"},{\"$ref\":\"#/prefixItems/0\"}]}", "[1,\"x\"]", 0,
     "$ref to an array element"},
    {"{\"$ref\":\"#/$defs/s\",\"maxLength\":2,\"$defs\":{\"s\":{\"type\":\"string\"}}}", "\"abc\"",
     0, "$ref beside other keywords: both apply"},
    {"{\"properties\":{\"next\":{\"$ref\":\"#\"},\"v\":{\"type\":\"integer\"}}}",
     "{\"v\":1,\"next\":{\"v\":2,\"next\":{\"v\":\"x\"}}}", 0, "$ref # recursion"},
    {"{\"format\":\"date\"}", "\"not a date\"", 1, "format is an annotation by default"},
    {"{\"title\":\"t\",\"description\":\"d\",\"default\":1,\"examples\":[1],\"$schema\":\"s\","
     "\"$id\":\"i\",\"$comment\":\"c\",\"deprecated\":true,\"readOnly\":true,\"writeOnly\":false,"
     "\"contentMediaType\":\"m\",\"contentEncoding\":\"e\",\"x-toolgate-canonical\":{\"k\":1}}",
     "1", 1, "annotations and x- keywords are ignored"},
};

static const vcase multiple_cases[] = {
    {"{\"multipleOf\":0.01}", "19.99", 1, "multipleOf: 19.99 of 0.01"},
    {"{\"multipleOf\":0.0001}", "0.0075", 1, "multipleOf: 0.0075 of 0.0001"},
    {"{\"multipleOf\":0.0001}", "0.00751", 0, "multipleOf: 0.00751 of 0.0001"},
    {"{\"multipleOf\":0.1}", "0.3", 1, "multipleOf: 0.3 of 0.1"},
    {"{\"multipleOf\":0.1}", "-0.3", 1, "multipleOf: -0.3 of 0.1"},
    {"{\"multipleOf\":0.1}", "1e21", 1, "multipleOf: 1e21 of 0.1"},
    {"{\"multipleOf\":1.5e-7}", "4.5e-7", 1, "multipleOf: exponents on both sides"},
    {"{\"multipleOf\":1e-8}", "12391239123", 1, "multipleOf: integer of 1e-8"},
    {"{\"multipleOf\":0.123456789}", "1e308", 0, "multipleOf: 1e308 of 0.123456789"},
    {"{\"multipleOf\":2}", "9007199254740993", 0, "multipleOf: 2^53 + 1 is odd"},
    {"{\"multipleOf\":3}", "10", 0, "multipleOf: 10 of 3"},
    {"{\"multipleOf\":7}", "0", 1, "multipleOf: 0"},
    {"{\"multipleOf\":0.5000000000000000000}", "1.5", 1,
     "multipleOf: trailing zeros do not count as digits"},
    {"{\"multipleOf\":0.100000000000000001}", "2", 0,
     "multipleOf: an 18-digit divisor is exact (its double is 0.1)"},
    {"{\"multipleOf\":0.100000000000000001}", "0.200000000000000002", 1,
     "multipleOf: an 18-digit divisor's multiple"},
    {"{\"multipleOf\":1e-400}", "1", 1, "multipleOf: a divisor below the doubles is positive"},
    {"{\"multipleOf\":2.5}", "5", 1, "multipleOf: 5 of 2.5"},
    {"{\"multipleOf\":2.5}", "6", 0, "multipleOf: 6 of 2.5"},
};

/* Every numeric keyword reads a number one way, as the decimal it spells:
 * each literal below rounds (as a double) onto or across its bound. */
static const vcase number_cases[] = {
    {"{\"maximum\":100}", "100.00000000000000001", 0,
     "maximum: 100.00000000000000001 (double 100) is above 100"},
    {"{\"maximum\":100}", "100", 1, "maximum: 100 is at 100"},
    {"{\"maximum\":100}", "1.0000000000000000001e2", 0, "maximum: the same value with an exponent"},
    {"{\"maximum\":100.00000000000000001}", "100.00000000000000001", 1,
     "maximum: a long bound, the same value"},
    {"{\"maximum\":100.00000000000000001}", "100.00000000000000002", 0,
     "maximum: a long bound, just above"},
    {"{\"minimum\":100}", "99.999999999999999999", 0,
     "minimum: 99.999999999999999999 (double 100) is below 100"},
    {"{\"minimum\":100}", "100.0", 1, "minimum: 100.0 is at 100"},
    {"{\"exclusiveMaximum\":100}", "99.999999999999999999", 1,
     "exclusiveMaximum: 99.999999999999999999 is below 100"},
    {"{\"exclusiveMaximum\":100}", "100.00000000000000001", 0,
     "exclusiveMaximum: 100.00000000000000001 is not below 100"},
    {"{\"exclusiveMinimum\":100}", "100.00000000000000001", 1,
     "exclusiveMinimum: 100.00000000000000001 is above 100"},
    {"{\"exclusiveMinimum\":100}", "1e2", 0, "exclusiveMinimum: 1e2 is 100"},
    {"{\"exclusiveMaximum\":100.00000000000000001}", "100", 1,
     "exclusiveMaximum: 100 is below a long bound that rounds to it"},
    {"{\"maximum\":9007199254740992}", "9007199254740993", 0,
     "maximum: 2^53 + 1 is above 2^53 (one double)"},
    {"{\"minimum\":9007199254740993}", "9007199254740992", 0, "minimum: 2^53 is below 2^53 + 1"},
    {"{\"exclusiveMinimum\":0}", "1e-400", 1, "exclusiveMinimum: 1e-400 (double 0) is above 0"},
    {"{\"maximum\":0}", "1e-400", 0, "maximum: 1e-400 is above 0"},
    {"{\"minimum\":0}", "-1e-400", 0, "minimum: -1e-400 is below 0"},
    {"{\"maximum\":-0}", "0", 1, "maximum: 0 is at -0"},
    {"{\"exclusiveMaximum\":0}", "-0.0", 0, "exclusiveMaximum: -0.0 is 0"},
    {"{\"maximum\":-100}", "-99.999999999999999999", 0,
     "maximum: negative, -99.999999999999999999 is above -100"},
    {"{\"type\":\"integer\",\"maximum\":100}", "100.00000000000000000", 1,
     "integer and maximum: 100.00000000000000000 is the integer 100"},
    {"{\"type\":\"integer\"}", "100.00000000000000001", 0, "integer: 100.00000000000000001 is not"},
    /* equality (enum, const) at the same boundaries */
    {"{\"const\":9007199254740992}", "9007199254740993", 0, "const: 2^53 + 1 is not 2^53"},
    {"{\"const\":1}", "1.0", 1, "const: 1.0 is 1"},
    {"{\"const\":1}", "1e0", 1, "const: 1e0 is 1"},
    {"{\"const\":1.0}", "10e-1", 1, "const: 10e-1 is 1.0"},
    {"{\"enum\":[100]}", "100.00000000000000001", 0, "enum: 100.00000000000000001 is not 100"},
    {"{\"const\":100.00000000000000001}", "100", 0, "const: 100 is not 100.00000000000000001"},
    {"{\"enum\":[[1,{\"a\":2}]]}", "[1e0,{\"a\":2.0}]", 1, "enum: nested numbers compare exactly"},
    /* uniqueItems at the same boundaries */
    {"{\"uniqueItems\":true}", "[9007199254740992,9007199254740993]", 1,
     "uniqueItems: 2^53 and 2^53 + 1 differ"},
    {"{\"uniqueItems\":true}", "[1,1.0]", 0, "uniqueItems: 1 and 1.0 are equal"},
    {"{\"uniqueItems\":true}", "[1e0,1]", 0, "uniqueItems: 1e0 and 1 are equal"},
    {"{\"uniqueItems\":true}", "[100,100.00000000000000001]", 1,
     "uniqueItems: 100 and 100.00000000000000001 differ"},
    {"{\"uniqueItems\":true}", "[0,-0]", 0, "uniqueItems: 0 and -0 are equal"},
    {"{\"uniqueItems\":true}", "[[1,\"x\"],[1.0,\"x\"]]", 0,
     "uniqueItems: arrays equal item by item"},
    {"{\"uniqueItems\":true}", "[{\"a\":1,\"b\":[2]},{\"b\":[2.0],\"a\":1e0}]", 0,
     "uniqueItems: objects equal whatever the member order"},
    {"{\"uniqueItems\":true}", "[{\"a\":1},{\"a\":1,\"b\":1}]", 1,
     "uniqueItems: an object and a longer one differ"},
    {"{\"uniqueItems\":true}", "[\"a\",\"a\\u0000\"]", 1,
     "uniqueItems: a string and its extension differ"},
    {"{\"uniqueItems\":true}", "[false,0,null,\"\",[],{}]", 1,
     "uniqueItems: values of different types differ"},
};

/* uniqueItems over long arrays (sorted, not compared pairwise): 98 distinct
 * integers and then the pair. */
static void unique_long(const tg_schema_options_t *opt)
{
    static const struct {
        const char *pair;
        int valid;
    } pairs[] = {
        {"9007199254740992,9007199254740993", 1},
        {"1,1.0", 0},
        {"100,100.00000000000000001", 1},
        {"0,-0", 0},
        {"[1,\"x\"],[1.0,\"x\"]", 0},
        {"{\"a\":1},{\"a\":1e0}", 0},
        {"\"a\",\"b\"", 1},
    };
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        char text[2048], name[160];
        size_t n = 0;
        vcase one[1];
        n += (size_t)snprintf(text + n, sizeof text - n, "[");
        for (int i = 0; i < 98; i++)
            n += (size_t)snprintf(text + n, sizeof text - n, "%d,", 1000 + i * 7);
        snprintf(text + n, sizeof text - n, "%s]", pairs[k].pair);
        snprintf(name, sizeof name, "uniqueItems, 100 items: %s %s", pairs[k].pair,
                 pairs[k].valid ? "differ" : "are equal");
        one[0].schema = "{\"uniqueItems\":true}";
        one[0].instance = text;
        one[0].valid = pairs[k].valid;
        one[0].name = name;
        run_cases(one, 1, opt);
    }
}

/* ---- compile errors ----------------------------------------------------------- */

static const struct {
    const char *schema;
    int code;
    const char *pointer, *says;
} compile_errors[] = {
    {"{\"if\":{}}", TG_E_SCHEMA_KEYWORD, "", "\"if\" is not supported"},
    {"{\"properties\":{\"a\":{\"requird\":[\"x\"]}}}", TG_E_SCHEMA_KEYWORD, "/properties/a",
     "unknown keyword \"requird\""},
    {"{\"$defs\":{\"never/used\":{\"iff\":1}}}", TG_E_SCHEMA_KEYWORD, "/$defs/never~1used",
     "\"iff\""},
    {"{\"nullable\":true}", TG_E_SCHEMA_KEYWORD, "", "\"nullable\""},
    {"{\"minimum\":\"3\"}", TG_E_SCHEMA, "/minimum", "minimum must be a number"},
    {"{\"required\":[1]}", TG_E_SCHEMA, "/required", "array of strings"},
    {"{\"type\":\"strnig\"}", TG_E_SCHEMA, "/type", "type must be"},
    {"{\"type\":[]}", TG_E_SCHEMA, "/type", "type must be"},
    {"{\"type\":[\"string\",\"string\"]}", TG_E_SCHEMA, "/type", "without repeats"},
    {"{\"multipleOf\":0}", TG_E_SCHEMA, "/multipleOf", "greater than 0"},
    {"{\"multipleOf\":-0.0}", TG_E_SCHEMA, "/multipleOf", "greater than 0"},
    {"{\"multipleOf\":0.1000000000000000001}", TG_E_SCHEMA, "/multipleOf",
     "more than 18 significant digits: toolgate decides multipleOf exactly"},
    {"{\"pattern\":\"\\\\ud83d\"}", TG_E_PATTERN, "/pattern", "invalid pattern"},
    {"{\"pattern\":\"\\\\ude00\\\\ud83d\"}", TG_E_PATTERN, "/pattern", "invalid pattern"},
    /* an escaped backslash, then a lone low surrogate: no pair */
    {"{\"pattern\":\"\\\\\\\\ud83d\\\\ude00\"}", TG_E_PATTERN, "/pattern", "invalid pattern"},
    {"{\"minLength\":-1}", TG_E_SCHEMA, "/minLength", "non-negative integer"},
    {"{\"maxItems\":1.5}", TG_E_SCHEMA, "/maxItems", "non-negative integer"},
    {"{\"allOf\":[]}", TG_E_SCHEMA, "/allOf", "non-empty array"},
    {"{\"anyOf\":[{},3]}", TG_E_SCHEMA, "/anyOf/1", "object or a boolean"},
    {"{\"properties\":{\"a\":3}}", TG_E_SCHEMA, "/properties/a", "object or a boolean"},
    {"{\"properties\":[]}", TG_E_SCHEMA, "/properties", "object of schemas"},
    {"{\"enum\":3}", TG_E_SCHEMA, "/enum", "enum must be an array"},
    {"{\"uniqueItems\":\"yes\"}", TG_E_SCHEMA, "/uniqueItems", "boolean"},
    {"{\"dependentRequired\":{\"a/b\":[1]}}", TG_E_SCHEMA, "/dependentRequired/a~1b",
     "array of strings"},
    {"{\"format\":3}", TG_E_SCHEMA, "/format", "format must be a string"},
    {"{\"prefixItems\":[{}],\"items\":[{}]}", TG_E_SCHEMA, "/items", "prefixItems"},
    {"{\"$ref\":3}", TG_E_SCHEMA, "/$ref", "$ref must be a string"},
    {"{\"$ref\":\"http://example.com/s.json\"}", TG_E_SCHEMA_REF, "/$ref", "not local"},
    {"{\"$ref\":\"other.json#/a\"}", TG_E_SCHEMA_REF, "/$ref", "not local"},
    {"{\"$ref\":\"#/$defs/missing\",\"$defs\":{}}", TG_E_SCHEMA_REF, "/$ref", "points to nothing"},
    {"{\"properties\":{\"x\":{\"$ref\":\"#/properties/y\"}}}", TG_E_SCHEMA_REF,
     "/properties/x/$ref", "points to nothing"},
    {"{\"$ref\":\"#foo\"}", TG_E_SCHEMA_REF, "/$ref", "anchor"},
    {"{\"$ref\":\"#/a~2\",\"a~2\":1}", TG_E_SCHEMA_REF, "/$ref", "~ must be followed"},
    {"{\"$ref\":\"#/%zz\"}", TG_E_SCHEMA_REF, "/$ref", "%-escape"},
    {"{\"$ref\":\"#/enum/0\",\"enum\":[1]}", TG_E_SCHEMA_REF, "/$ref", "not a schema"},
    {"{\"$ref\":\"#/prefixItems/01\",\"prefixItems\":[{},{}]}", TG_E_SCHEMA_REF, "/$ref",
     "points to nothing"},
    {"{\"pattern\":\"(\"}", TG_E_PATTERN, "/pattern", "missing closing parenthesis"},
    {"{\"pattern\":\"(?<=a+)b\"}", TG_E_PATTERN, "/pattern", "lookbehind"},
    {"{\"patternProperties\":{\"a~(\":{}}}", TG_E_PATTERN, "/patternProperties/a~0(",
     "invalid pattern"},
    {"{\"$ref\":\"#\"}", TG_E_SCHEMA, "", "cycle"},
    {"{\"not\":{\"$ref\":\"#\"}}", TG_E_SCHEMA, "", "cycle"},
    {"{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"allOf\":[{\"$ref\":\"#/$defs/a\"}]}},"
     "\"properties\":{\"p\":{\"$ref\":\"#/$defs/a\"}}}",
     TG_E_SCHEMA, "/$defs/a",
     "\"/$defs/a\" -> \"/$defs/b\" -> \"/$defs/b/allOf/0\" -> \"/$defs/a\""},
};

static void compile_error_cases(void)
{
    for (size_t i = 0; i < sizeof compile_errors / sizeof compile_errors[0]; i++) {
        tg_schema_t *s;
        tg_error_t err;
        char name[160];
        int rc = compile(compile_errors[i].schema, NULL, &s, &err);
        int ok = rc == compile_errors[i].code &&
                 strcmp(err.pointer, compile_errors[i].pointer) == 0 &&
                 strstr(err.message, compile_errors[i].says) != NULL && s == NULL;
        snprintf(name, sizeof name, "compile error %s at \"%s\": %s",
                 tg_code_name(compile_errors[i].code), compile_errors[i].pointer,
                 compile_errors[i].schema);
        if (!tap_ok(ok, name))
            printf("#   got %s at \"%s\": %s\n", tg_code_name(rc), err.pointer, err.message);
        tg_schema_free(s);
    }
    {
        tg_schema_t *s;
        tg_error_t err;
        tg_schema_options_t opt;
        const char *const ignore[] = {"nullable", "discriminator", "if", "then", NULL};
        tg_schema_options_default(&opt);
        opt.ignore_keywords = ignore;
        tap_ok(compile("{\"nullable\":true,\"properties\":{\"a\":{\"discriminator\":{},"
                       "\"if\":{},\"then\":3}}}",
                       &opt, &s, &err) == TG_OK,
               "ignore_keywords turns refused keywords, known or not, into annotations");
        tg_schema_free(s);
        tap_ok(compile("{\"minimum\":\"3\"}", NULL, &s, &err) == TG_E_SCHEMA && err.offset == 1,
               "a schema error carries the byte offset of its keyword");
        tap_ok(compile("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/a\"}}}", NULL, &s, &err) == TG_OK,
               "a $ref cycle the root never reaches does not fail");
        tg_schema_free(s);
        tap_ok(compile("{\"properties\":{\"child\":{\"$ref\":\"#\"}},\"items\":{\"$ref\":\"#\"}}",
                       NULL, &s, &err) == TG_OK,
               "recursion through properties and items is no cycle");
        tg_schema_free(s);
        tap_ok(compile("3", NULL, &s, &err) == TG_E_SCHEMA && s == NULL,
               "a number is not a schema");
    }
    {
        /* A long pointer in an error is cut at a segment boundary. */
        char schema[2048];
        size_t n = 0;
        tg_schema_t *s;
        tg_error_t err;
        for (int i = 0; i < 12; i++)
            n += (size_t)snprintf(schema + n, sizeof schema - n,
                                  "{\"properties\":{\"segment-number-%02d-xxxxxxxxxxxx\":", i);
        n += (size_t)snprintf(schema + n, sizeof schema - n, "{\"bogus\":1}");
        for (int i = 0; i < 12; i++)
            n += (size_t)snprintf(schema + n, sizeof schema - n, "}}");
        tap_ok(compile(schema, NULL, &s, &err) == TG_E_SCHEMA_KEYWORD &&
                   strlen(err.pointer) < TG_ERROR_POINTER_MAX &&
                   strcmp(err.pointer + strlen(err.pointer) - 4, "/...") == 0 &&
                   strncmp(err.pointer, "/properties/segment-number-00-", 30) == 0,
               "a long error pointer ends in /... after a whole segment");
        printf("#   %s\n", err.pointer);
    }
}

/* ---- closed world ------------------------------------------------------------- */

static const vcase closed_cases[] = {
    {"{\"properties\":{\"a\":{}}}", "{\"a\":1}", 1, "closed: declared key"},
    {"{\"properties\":{\"a\":{}}}", "{\"a\":1,\"b\":2}", 0, "closed: undeclared key"},
    {"{\"type\":\"object\"}", "{\"b\":2}", 1, "closed: no properties, nothing to close"},
    {"{\"properties\":{\"o\":{\"properties\":{\"x\":{}}}}}", "{\"o\":{\"x\":1,\"y\":2}}", 0,
     "closed: nested object"},
    {"{\"allOf\":[{\"properties\":{\"a\":{}}},{\"properties\":{\"b\":{}}}]}", "{\"a\":1,\"b\":2}",
     1, "closed: allOf members declare together"},
    {"{\"allOf\":[{\"properties\":{\"a\":{}}},{\"properties\":{\"b\":{}}}]}", "{\"a\":1,\"c\":3}",
     0, "closed: allOf group refuses others"},
    {"{\"anyOf\":[{\"properties\":{\"a\":{}},\"required\":[\"a\"]},"
     "{\"properties\":{\"b\":{}},\"required\":[\"b\"]}]}",
     "{\"a\":1,\"b\":2}", 1, "closed: anyOf branches declare together"},
    {"{\"anyOf\":[{\"properties\":{\"a\":{}},\"required\":[\"a\"]},"
     "{\"properties\":{\"b\":{}},\"required\":[\"b\"]}]}",
     "{\"a\":1,\"c\":2}", 0, "closed: anyOf group refuses others"},
    {"{\"oneOf\":[{\"properties\":{\"a\":{}}},{\"properties\":{\"b\":{}},\"required\":[\"b\"]}]}",
     "{\"a\":1}", 1, "closed: oneOf group"},
    {"{\"$defs\":{\"base\":{\"properties\":{\"id\":{}}}},\"$ref\":\"#/$defs/base\","
     "\"properties\":{\"name\":{}}}",
     "{\"id\":1,\"name\":\"x\"}", 1, "closed: $ref target declares for the group"},
    {"{\"$defs\":{\"base\":{\"properties\":{\"id\":{}}}},\"$ref\":\"#/$defs/base\","
     "\"properties\":{\"name\":{}}}",
     "{\"id\":1,\"zzz\":1}", 0, "closed: $ref group refuses others"},
    {"{\"$defs\":{\"base\":{\"properties\":{\"id\":{}}}},"
     "\"properties\":{\"item\":{\"$ref\":\"#/$defs/base\"}}}",
     "{\"item\":{\"id\":1,\"extra\":2}}", 0, "closed: a $ref'd definition closes where it is used"},
    {"{\"properties\":{\"a\":{}},\"additionalProperties\":true}", "{\"b\":1}", 1,
     "closed: additionalProperties true opens"},
    {"{\"properties\":{\"a\":{}},\"additionalProperties\":{\"type\":\"integer\"}}", "{\"b\":1}", 1,
     "closed: additionalProperties schema opens (and checks)"},
    {"{\"properties\":{\"a\":{}},\"additionalProperties\":{\"type\":\"integer\"}}", "{\"b\":\"x\"}",
     0, "closed: additionalProperties schema still checks"},
    /* patternProperties declares the keys it matches, and only those (it
     * opted the whole object out before) */
    {"{\"properties\":{\"a\":{}},\"patternProperties\":{\"^x-\":{}}}", "{\"a\":1,\"x-y\":1}", 1,
     "closed: patternProperties declares the keys it matches"},
    {"{\"properties\":{\"a\":{}},\"patternProperties\":{\"^x-\":{}}}", "{\"a\":1,\"y\":1}", 0,
     "closed: patternProperties declares no other key"},
    {"{\"allOf\":[{\"properties\":{\"a\":{}}},{\"additionalProperties\":true}]}", "{\"z\":1}", 1,
     "closed: one member opening opens the group"},
    {"{\"properties\":{\"a\":{}},\"not\":{\"properties\":{\"b\":{}},\"required\":[\"c\"]}}",
     "{\"a\":1,\"b\":2}", 0, "closed: keys declared under not do not count"},
    {"{\"items\":{\"properties\":{\"a\":{}}}}", "[{\"a\":1},{\"b\":1}]", 0, "closed: array items"},
    {"{\"prefixItems\":[{\"properties\":{\"a\":{}}}]}", "[{\"a\":1,\"b\":1}]", 0,
     "closed: prefixItems"},
    {"{\"additionalProperties\":{\"properties\":{\"a\":{}}}}", "{\"k\":{\"a\":1,\"b\":1}}", 0,
     "closed: values of additionalProperties"},
    {"{\"properties\":{\"name\":{},\"children\":{\"items\":{\"$ref\":\"#\"}}}}",
     "{\"name\":\"a\",\"children\":[{\"name\":\"b\",\"children\":[]}]}", 1,
     "closed: recursive schema, valid"},
    {"{\"properties\":{\"name\":{},\"children\":{\"items\":{\"$ref\":\"#\"}}}}",
     "{\"name\":\"a\",\"children\":[{\"name\":\"b\",\"extra\":1}]}", 0,
     "closed: recursive schema, undeclared deep down"},
    {"{\"properties\":{\"a\":{}}}", "[1]", 1, "closed: only objects are closed"},
    /* empty properties declare no key, wherever in the group they stand */
    {"{\"properties\":{}}", "{\"x\":1}", 0, "closed: empty properties refuse every key"},
    {"{\"allOf\":[{\"properties\":{}}]}", "{\"x\":1}", 0,
     "closed: empty properties in an allOf member refuse every key"},
    {"{\"$ref\":\"#/$defs/a\",\"$defs\":{\"a\":{\"type\":\"object\",\"properties\":{}}}}",
     "{\"x\":1}", 0, "closed: empty properties behind $ref refuse every key"},
    {"{\"allOf\":[{\"properties\":{}}]}", "{}", 1, "closed: empty properties accept {}"},
    /* unions: a key counts as declared only where a subschema that
     * validated there declares it (unevaluatedProperties: false) */
    {"{\"oneOf\":[{\"properties\":{\"action\":{\"const\":\"read\"},\"path\":{}},"
     "\"required\":[\"action\",\"path\"]},{\"properties\":{\"action\":{\"const\":\"delete\"},"
     "\"path\":{},\"recursive\":{\"type\":\"boolean\"}},\"required\":[\"action\",\"path\"]}]}",
     "{\"action\":\"read\",\"path\":\"/etc/shadow\",\"recursive\":\"--no-preserve-root\"}", 0,
     "closed: a key only the branch that did not match declares is undeclared (oneOf)"},
    {"{\"oneOf\":[{\"properties\":{\"action\":{\"const\":\"read\"},\"path\":{}},"
     "\"required\":[\"action\",\"path\"]},{\"properties\":{\"action\":{\"const\":\"delete\"},"
     "\"path\":{},\"recursive\":{\"type\":\"boolean\"}},\"required\":[\"action\",\"path\"]}]}",
     "{\"action\":\"delete\",\"path\":\"/tmp/x\",\"recursive\":true}", 1,
     "closed: the branch that matched declares its keys (oneOf)"},
    {"{\"anyOf\":[{\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"]},"
     "{\"properties\":{\"b\":{\"type\":\"integer\"}},\"required\":[\"b\"]}]}",
     "{\"a\":1,\"b\":\"x\"}", 0, "closed: anyOf, b is declared only by a branch that failed on it"},
    {"{\"anyOf\":[{\"properties\":{\"a\":{}}},{\"properties\":{\"b\":{}}}]}", "{\"a\":1,\"b\":2}",
     1, "closed: anyOf, every valid branch declares (not the first only)"},
    {"{\"allOf\":[{\"properties\":{\"a\":{}}},{\"patternProperties\":{\"^x-\":{}}}]}",
     "{\"a\":1,\"b\":2}", 0, "closed: patternProperties in an allOf member opens nothing else"},
    {"{\"allOf\":[{\"properties\":{\"a\":{}}},{\"patternProperties\":{\"^x-\":{}}}]}",
     "{\"a\":1,\"x-b\":2}", 1, "closed: patternProperties in an allOf member declares its matches"},
    {"{\"anyOf\":[{\"properties\":{\"a\":{}},\"required\":[\"a\"]},"
     "{\"additionalProperties\":{\"type\":\"integer\"}}]}",
     "{\"a\":\"s\",\"b\":2}", 0,
     "closed: additionalProperties of a failed branch declares nothing"},
    {"{\"anyOf\":[{\"properties\":{\"a\":{}},\"required\":[\"a\"]},"
     "{\"additionalProperties\":{\"type\":\"integer\"}}]}",
     "{\"a\":1,\"b\":2}", 1, "closed: additionalProperties of a valid branch declares every key"},
    {"{\"properties\":{\"a\":{}},\"anyOf\":[{\"not\":{\"properties\":{\"b\":{}},"
     "\"required\":[\"c\"]}}]}",
     "{\"a\":1,\"b\":2}", 0, "closed: keys declared under not in a branch do not count"},
    {"{\"$defs\":{\"Cat\":{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"cat\"},"
     "\"lives\":{\"type\":\"integer\"}},\"required\":[\"kind\"]},\"Dog\":{\"type\":\"object\","
     "\"properties\":{\"kind\":{\"const\":\"dog\"},\"bark\":{\"type\":\"string\"}},"
     "\"required\":[\"kind\"]}},\"properties\":{\"pet\":{\"anyOf\":[{\"$ref\":\"#/$defs/Cat\"},"
     "{\"$ref\":\"#/$defs/Dog\"},{\"type\":\"null\"}]}}}",
     "{\"pet\":{\"kind\":\"cat\",\"bark\":\"woof\"}}", 0,
     "closed: a discriminated union of $refs, a key of the other member"},
    {"{\"$defs\":{\"Cat\":{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"cat\"},"
     "\"lives\":{\"type\":\"integer\"}},\"required\":[\"kind\"]},\"Dog\":{\"type\":\"object\","
     "\"properties\":{\"kind\":{\"const\":\"dog\"},\"bark\":{\"type\":\"string\"}},"
     "\"required\":[\"kind\"]}},\"properties\":{\"pet\":{\"anyOf\":[{\"$ref\":\"#/$defs/Cat\"},"
     "{\"$ref\":\"#/$defs/Dog\"},{\"type\":\"null\"}]}}}",
     "{\"pet\":{\"kind\":\"dog\",\"bark\":\"woof\"}}", 1,
     "closed: a discriminated union of $refs, the matching member's keys"},
    {"{\"anyOf\":[{\"anyOf\":[{\"properties\":{\"a\":{\"const\":1}}},"
     "{\"properties\":{\"b\":{}},\"required\":[\"b\"]}]},{\"properties\":{\"c\":{}},"
     "\"required\":[\"c\"]}]}",
     "{\"a\":2,\"c\":1}", 0, "closed: nested unions, a declared only by a failed inner branch"},
    {"{\"anyOf\":[{\"anyOf\":[{\"properties\":{\"a\":{\"const\":1}}},"
     "{\"properties\":{\"b\":{}},\"required\":[\"b\"]}]},{\"properties\":{\"c\":{}},"
     "\"required\":[\"c\"]}]}",
     "{\"a\":1,\"c\":1}", 1, "closed: nested unions, both levels declare"},
    {"{\"properties\":{\"o\":{\"anyOf\":[{\"properties\":{\"x\":{\"properties\":{\"y\":{}}}}}]}}}",
     "{\"o\":{\"x\":{\"y\":1,\"z\":2}}}", 0,
     "closed: a group inside a branch is closed where it is reached"},
    {"{\"oneOf\":[{\"properties\":{\"a\":{}},\"required\":[\"a\"]},{\"properties\":{\"b\":{}},"
     "\"required\":[\"b\"]}]}",
     "{\"a\":1,\"b\":1}", 0, "closed: oneOf with two matches fails (as oneOf)"},
};

/* ---- findings ---------------------------------------------------------------- */

static int finding_is(const tg_finding_t *f, int code, const char *kw, const char *ptr,
                      const char *sptr, const char *msg);

/* Closed world's findings stay readable: a bad value is one H3, a union
 * that matched no branch is its own H3 (not also an H2 per key some branch
 * would have declared), a key no branch declares is still an H2. */
static void closed_findings(void)
{
    static const char *const oneof =
        "{\"oneOf\":[{\"properties\":{\"action\":{\"const\":\"read\"},\"path\":{}},"
        "\"required\":[\"action\"]},{\"properties\":{\"action\":{\"const\":\"delete\"},"
        "\"path\":{},\"recursive\":{\"type\":\"boolean\"}},\"required\":[\"action\"]}]}";
    tg_schema_t *s;
    tg_error_t err;
    tg_finding_t f[4];
    size_t count;

    compile(
        "{\"allOf\":[{\"properties\":{\"a\":{\"type\":\"integer\"}}},{\"properties\":{\"b\":{}}}]}",
        NULL, &s, &err);
    tap_ok(validate(s, "{\"a\":\"x\"}", f, 4, &count) == TG_OK && count == 1 &&
               finding_is(&f[0], TG_H3, "type", "/a", "/allOf/0/properties/a/type", NULL),
           "closed findings: a bad value in an allOf member is one H3, the key stays declared");
    tg_schema_free(s);
    compile("{\"allOf\":[{\"properties\":{\"a\":{\"type\":\"integer\"}}},"
            "{\"patternProperties\":{\"^x-\":{}}}]}",
            NULL, &s, &err);
    tap_ok(validate(s, "{\"a\":\"x\",\"x-y\":1}", f, 4, &count) == TG_OK && count == 1 &&
               finding_is(&f[0], TG_H3, "type", "/a", "/allOf/0/properties/a/type", NULL),
           "closed findings: the same in a marked group");
    tg_schema_free(s);
    compile(oneof, NULL, &s, &err);
    tap_ok(validate(s, "{\"action\":\"read\",\"path\":\"/etc/shadow\",\"recursive\":\"-rf\"}", f, 4,
                    &count) == TG_OK &&
               count == 1 &&
               finding_is(&f[0], TG_H2, "closed", "/recursive", "",
                          "(root): key \"recursive\" is not declared by the schema"),
           "closed findings: the key only the other branch declares is an H2 at the head");
    tap_ok(validate(s, "{\"action\":\"write\",\"path\":\"/x\"}", f, 4, &count) == TG_OK &&
               count == 1 && finding_is(&f[0], TG_H3, "oneOf", "", "/oneOf", NULL),
           "closed findings: no branch matched: the oneOf H3 alone (no H2 for action, path)");
    tap_ok(validate(s, "{\"action\":\"write\",\"path\":\"/x\",\"zz\":1}", f, 4, &count) == TG_OK &&
               count == 2 && finding_is(&f[0], TG_H2, "closed", "/zz", "", NULL) &&
               finding_is(&f[1], TG_H3, "oneOf", "", "/oneOf", NULL),
           "closed findings: no branch matched, a key no branch declares is still an H2");
    tg_schema_free(s);
}

static int finding_is(const tg_finding_t *f, int code, const char *kw, const char *ptr,
                      const char *sptr, const char *msg)
{
    int ok = f->code == code && strcmp(f->keyword, kw) == 0 && strcmp(f->pointer, ptr) == 0 &&
             strcmp(f->schema_pointer, sptr) == 0 && (!msg || strcmp(f->message, msg) == 0);
    if (!ok)
        printf("#   got H%d %s at \"%s\" (schema \"%s\"): %s\n", f->code, f->keyword, f->pointer,
               f->schema_pointer, f->message);
    return ok;
}

static void findings(void)
{
    const char *schema =
        "{\"type\":\"object\",\"properties\":{\"mode\":{\"enum\":[\"read\",\"write\"]},"
        "\"path\":{\"type\":\"string\"},\"opts\":{\"properties\":{\"depth\":{\"type\":\"integer\","
        "\"minimum\":0}}}},\"required\":[\"path\",\"mode\"]}";
    tg_schema_t *s;
    tg_error_t err;
    tg_finding_t f[8];
    size_t count;
    int rc;

    tap_ok(compile(schema, NULL, &s, &err) == TG_OK, "findings: schema compiles");
    rc = validate(s, "{\"mode\":\"fast\",\"extra\":1,\"opts\":{\"depth\":-1.5}}", f, 8, &count);
    tap_ok(rc == TG_OK && count == 5, "findings: five");
    tap_ok(finding_is(&f[0], TG_H2, "required", "/path", "/required",
                      "(root): required key \"path\" is missing"),
           "findings: missing key is H2 required, at the would-be member");
    tap_ok(finding_is(&f[1], TG_H2, "closed", "/extra", "",
                      "(root): key \"extra\" is not declared by the schema"),
           "findings: undeclared key is H2 closed, at its member");
    tap_ok(finding_is(&f[2], TG_H3, "enum", "/mode", "/properties/mode/enum",
                      "\"/mode\": \"fast\" is not one of \"read\", \"write\""),
           "findings: enum is H3 with a message for a person");
    tap_ok(finding_is(&f[3], TG_H3, "type", "/opts/depth", "/properties/opts/properties/depth/type",
                      "\"/opts/depth\": -1.5 is a number, expected integer"),
           "findings: type, nested pointers");
    tap_ok(finding_is(&f[4], TG_H3, "minimum", "/opts/depth",
                      "/properties/opts/properties/depth/minimum",
                      "\"/opts/depth\": -1.5 is less than the minimum 0"),
           "findings: minimum, every failed keyword reported");
    rc = validate(s, "{\"mode\":\"read\",\"path\":\"/tmp\"}", f, 8, &count);
    tap_ok(rc == TG_OK && count == 0, "findings: a valid instance has none");

    /* H2 found after an H3 still comes first; max keeps the first ones the
     * walk meets (members in RFC 8785 order: mode, opts, path). */
    rc = validate(s, "{\"mode\":1,\"path\":2,\"opts\":{\"zz\":1}}", f, 8, &count);
    tap_ok(rc == TG_OK && count == 3 && f[0].code == TG_H2 &&
               strcmp(f[0].pointer, "/opts/zz") == 0 && f[1].code == TG_H3 &&
               strcmp(f[1].pointer, "/mode") == 0 && f[2].code == TG_H3 &&
               strcmp(f[2].pointer, "/path") == 0,
           "findings: H2 before H3, each in the order met");
    rc = validate(s, "{\"mode\":1,\"path\":2,\"opts\":{\"zz\":1}}", f, 1, &count);
    tap_ok(rc == TG_OK && count == 1 && f[0].code == TG_H3 && strcmp(f[0].pointer, "/mode") == 0,
           "findings: max 1 keeps the first finding met (the walk stops there)");
    rc = validate(s, "{\"mode\":1,\"path\":2,\"opts\":{\"zz\":1}}", f, 2, &count);
    tap_ok(rc == TG_OK && count == 2 && f[0].code == TG_H2 && strcmp(f[1].pointer, "/mode") == 0,
           "findings: max 2 keeps the H2 and the first H3");
    tg_schema_free(s);

    {
        tg_doc_t *doc = parse("{}");
        tap_ok(compile("{}", NULL, &s, &err) == TG_OK &&
                   tg_validate(E, s, tg_doc_root(doc), f, 0, &count, &err) == TG_E_ARG,
               "findings: max 0 is refused (count 0 must mean valid)");
        tg_doc_free(doc);
        tg_schema_free(s);
    }

    /* ~ and / escaped in both pointers */
    compile("{\"properties\":{\"a/b\":{\"properties\":{\"c~d\":{\"type\":\"string\"}}}}}", NULL, &s,
            &err);
    rc = validate(s, "{\"a/b\":{\"c~d\":5}}", f, 8, &count);
    tap_ok(rc == TG_OK && count == 1 &&
               finding_is(&f[0], TG_H3, "type", "/a~1b/c~0d",
                          "/properties/a~1b/properties/c~0d/type",
                          "\"/a~1b/c~0d\": 5 is a number, expected string"),
           "findings: ~ and / escaped in pointers");
    tg_schema_free(s);

    /* each kind of finding: code, keyword and schema pointer */
    {
        static const struct {
            const char *schema, *instance;
            int code;
            const char *kw, *ptr, *sptr, *msg;
        } kinds[] = {
            {"{\"properties\":{\"a\":{}},\"additionalProperties\":false}", "{\"b\":1}", TG_H2,
             "additionalProperties", "/b", "/additionalProperties",
             "(root): key \"b\" is not allowed (additionalProperties is false)"},
            {"{\"dependentRequired\":{\"card\":[\"cvv\"]}}", "{\"card\":1}", TG_H2,
             "dependentRequired", "/cvv", "/dependentRequired/card",
             "(root): key \"cvv\" is required when \"card\" is present"},
            {"{\"anyOf\":[{\"type\":\"string\"},{\"required\":[\"x\"]}]}", "{}", TG_H3, "anyOf", "",
             "/anyOf", "(root): an object matches none of the 2 alternatives of anyOf"},
            {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":1},{\"maximum\":9}]}", "5", TG_H3,
             "oneOf", "", "/oneOf",
             "(root): 5 matches 3 of the 3 alternatives of oneOf, exactly one must match"},
            {"{\"items\":{\"not\":{\"const\":0}}}", "[1,0]", TG_H3, "not", "/1", "/items/not",
             "\"/1\": 0 must not match the schema of not"},
            {"{\"prefixItems\":[true],\"items\":false}", "[1,2]", TG_H3, "false", "/1", "/items",
             "\"/1\": no value is allowed here (the schema is false)"},
            {"{\"maxLength\":2}", "\"abc\"", TG_H3, "maxLength", "", "/maxLength",
             "(root): the string has 3 characters, more than the maximum 2"},
            {"{\"minItems\":2}", "[1]", TG_H3, "minItems", "", "/minItems",
             "(root): the array has 1 item, fewer than the minimum 2"},
            {"{\"uniqueItems\":true}", "[1,2,1]", TG_H3, "uniqueItems", "", "/uniqueItems",
             "(root): items 0 and 2 are equal, items must be unique"},
            {"{\"pattern\":\"^[a-z]+$\"}", "\"A\\\"b\"", TG_H3, "pattern", "", "/pattern",
             "(root): \"A\\\"b\" does not match the pattern \"^[a-z]+$\""},
            {"{\"multipleOf\":0.5}", "0.7", TG_H3, "multipleOf", "", "/multipleOf",
             "(root): 0.7 is not a multiple of 0.5"},
            {"{\"exclusiveMaximum\":3}", "3", TG_H3, "exclusiveMaximum", "", "/exclusiveMaximum",
             "(root): 3 is not less than 3"},
            {"{\"const\":\"x\"}", "[1]", TG_H3, "const", "", "/const",
             "(root): an array is not the constant \"x\""},
            {"{\"propertyNames\":{\"pattern\":\"^[a-z]+$\"}}", "{\"Bad\":1}", TG_H3, "pattern",
             "/Bad", "/propertyNames/pattern",
             "\"/Bad\": \"Bad\" does not match the pattern \"^[a-z]+$\""},
            {"{\"$defs\":{\"n\":{\"type\":\"number\"}},\"properties\":{\"x\":{\"$ref\":\"#/$defs/n\"}}}",
             "{\"x\":true}", TG_H3, "type", "/x", "/$defs/n/type",
             "\"/x\": true is a boolean, expected number"},
            {"{\"type\":[\"integer\",\"string\",\"null\"]}", "{}", TG_H3, "type", "", "/type",
             "(root): got an object, expected null, string or integer"},
        };
        tg_schema_options_t std = standard();
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            char name[128];
            int ok = compile(kinds[i].schema, &std, &s, &err) == TG_OK &&
                     validate(s, kinds[i].instance, f, 8, &count) == TG_OK && count == 1;
            snprintf(name, sizeof name, "finding %s: %s", kinds[i].kw, kinds[i].schema);
            if (ok)
                ok = finding_is(&f[0], kinds[i].code, kinds[i].kw, kinds[i].ptr, kinds[i].sptr,
                                kinds[i].msg);
            else
                printf("#   count %zu\n", count);
            tap_ok(ok, name);
            tg_schema_free(s);
        }
    }

    /* Long messages and pointers are cut cleanly. */
    {
        char text[4096], instance[4096];
        size_t n = 0, m = 0;
        int ok;
        n += (size_t)snprintf(text + n, sizeof text - n, "{\"enum\":[");
        for (int i = 0; i < 30; i++)
            n += (size_t)snprintf(text + n, sizeof text - n, "%s\"value-\xc3\xa9%02d\"",
                                  i ? "," : "", i);
        snprintf(text + n, sizeof text - n, "]}");
        compile(text, NULL, &s, &err);
        ok = validate(s, "\"nope\"", f, 8, &count) == TG_OK && count == 1;
        tap_ok(ok && strlen(f[0].message) < TG_FINDING_MESSAGE_MAX &&
                   strcmp(f[0].message + strlen(f[0].message) - 3, "...") == 0 &&
                   (((unsigned char)f[0].message[strlen(f[0].message) - 4] & 0xC0) != 0xC0),
               "findings: a long message ends in ... after a whole character");
        printf("#   %s\n", f[0].message);
        tg_schema_free(s);

        n = m = 0;
        n += (size_t)snprintf(text + n, sizeof text - n, "{\"additionalProperties\":");
        for (int i = 0; i < 12; i++) {
            n += (size_t)snprintf(text + n, sizeof text - n, "{\"additionalProperties\":");
            m += (size_t)snprintf(instance + m, sizeof instance - m,
                                  "{\"key/with~tilde-number-%02d-xx\":", i);
        }
        n += (size_t)snprintf(text + n, sizeof text - n, "{\"type\":\"string\"}");
        m += (size_t)snprintf(instance + m, sizeof instance - m, "{\"leaf\":1}");
        for (int i = 0; i < 12; i++) {
            n += (size_t)snprintf(text + n, sizeof text - n, "}");
            m += (size_t)snprintf(instance + m, sizeof instance - m, "}");
        }
        snprintf(text + n, sizeof text - n, "}");
        compile(text, NULL, &s, &err);
        ok = validate(s, instance, f, 8, &count) == TG_OK && count == 1;
        tap_ok(ok && strlen(f[0].pointer) < TG_FINDING_POINTER_MAX &&
                   strcmp(f[0].pointer + strlen(f[0].pointer) - 4, "/...") == 0 &&
                   strncmp(f[0].pointer, "/key~1with~0tilde-number-00-xx/", 31) == 0 &&
                   strcmp(f[0].schema_pointer + strlen(f[0].schema_pointer) - 4, "/...") == 0,
               "findings: long pointers are cut after a whole segment, ending in /...");
        printf("#   %s\n#   %s\n", f[0].pointer, f[0].message);
        tg_schema_free(s);
    }

    /* repeated names count once: required in RFC 8785 order, a
     * dependentRequired list in the order the names first appear */
    tap_ok(compile("{\"required\":[\"zz\",\"a\",\"zz\",\"m\",\"a\"],"
                   "\"dependentRequired\":{\"t\":[\"c\",\"b\",\"c\",\"a\",\"b\"]}}",
                   NULL, &s, &err) == TG_OK,
           "findings: names given twice compile");
    rc = validate(s, "{\"t\":1}", f, 8, &count);
    tap_ok(rc == TG_OK && count == 6 && strcmp(f[0].pointer, "/a") == 0 &&
               strcmp(f[1].pointer, "/m") == 0 && strcmp(f[2].pointer, "/zz") == 0 &&
               strcmp(f[3].pointer, "/c") == 0 && strcmp(f[4].pointer, "/b") == 0 &&
               strcmp(f[5].pointer, "/a") == 0,
           "findings: repeated required and dependentRequired names are reported once, in order");
    tg_schema_free(s);
}

/* ---- limits ------------------------------------------------------------------- */

static void limits(void)
{
    tg_limits_t lim, saved;
    tg_schema_t *s;
    tg_error_t err;
    tg_finding_t f[4];
    size_t count;
    char defs[8192];
    size_t n = 0;

    tg_engine_limits(E, &saved);

    /* a catastrophic pattern hits the match limit: an error, never a pass */
    compile("{\"pattern\":\"^(a+)+$\"}", NULL, &s, &err);
    tap_ok(validate(s, "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\"", f, 4, &count) == TG_E_REGEX_LIMIT,
           "regex_match_limit: ^(a+)+$ on a...b is REGEX_LIMIT");
    tap_ok(validate(s, "\"aaaa\"", f, 4, &count) == TG_OK && count == 0,
           "regex_match_limit: the same pattern on a short match is fine");
    tg_schema_free(s);
    compile("{\"patternProperties\":{\"^(a+)+$\":{}}}", NULL, &s, &err);
    tap_ok(validate(s, "{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\":1}", f, 4, &count) ==
               TG_E_REGEX_LIMIT,
           "regex_match_limit: patternProperties too");
    tg_schema_free(s);

    /* steps: N passes, N - 1 fails (root + its walk over one member + one
     * property = 3) */
    compile("{\"properties\":{\"a\":{\"type\":\"integer\"}}}", NULL, &s, &err);
    lim = saved;
    lim.max_validation_steps = 3;
    tg_engine_set_limits(E, &lim, &err);
    tap_ok(validate(s, "{\"a\":1}", f, 4, &count) == TG_OK && count == 0,
           "max_validation_steps 3: two nodes and one member validate");
    lim.max_validation_steps = 2;
    tg_engine_set_limits(E, &lim, &err);
    tap_ok(validate(s, "{\"a\":1}", f, 4, &count) == TG_E_VALIDATION_LIMIT,
           "max_validation_steps 2: VALIDATION_LIMIT");
    tg_schema_free(s);

    /* nested anyOf: 2^17 branch evaluations */
    n += (size_t)snprintf(defs + n, sizeof defs - n, "{\"$defs\":{\"a0\":{\"type\":\"string\"}");
    for (int i = 1; i <= 16; i++)
        n += (size_t)snprintf(
            defs + n, sizeof defs - n,
            ",\"a%d\":{\"anyOf\":[{\"$ref\":\"#/$defs/a%d\"},{\"$ref\":\"#/$defs/a%d\"}]}", i,
            i - 1, i - 1);
    snprintf(defs + n, sizeof defs - n, "},\"$ref\":\"#/$defs/a16\"}");
    tap_ok(compile(defs, NULL, &s, &err) == TG_OK, "nested anyOf compiles");
    lim = saved;
    lim.max_validation_steps = 1000;
    tg_engine_set_limits(E, &lim, &err);
    tap_ok(validate(s, "5", f, 4, &count) == TG_E_VALIDATION_LIMIT,
           "nested anyOf: VALIDATION_LIMIT at 1000 steps");
    tg_engine_set_limits(E, &saved, &err);
    tap_ok(validate(s, "5", f, 4, &count) == TG_OK && count == 1 &&
               strcmp(f[0].keyword, "anyOf") == 0,
           "nested anyOf: runs to its end with the default budget");
    tap_ok(validate(s, "\"x\"", f, 4, &count) == TG_OK && count == 0,
           "nested anyOf: a match ends the search early");
    tg_schema_free(s);

    /* nesting: three schemas per array level (items, allOf/0, the root) */
    lim = saved;
    lim.max_depth = 1000;
    tg_engine_set_limits(E, &lim, &err);
    compile("{\"items\":{\"allOf\":[{\"$ref\":\"#\"}]}}", NULL, &s, &err);
    {
        char deep[2 * 700 + 1];
        memset(deep, '[', 600);
        memset(deep + 600, ']', 600);
        deep[1200] = '\0';
        tap_ok(validate(s, deep, f, 4, &count) == TG_OK && count == 0,
               "nesting: 600 levels (1800 schemas deep) validate");
        memset(deep, '[', 700);
        memset(deep + 700, ']', 700);
        deep[1400] = '\0';
        tap_ok(validate(s, deep, f, 4, &count) == TG_E_VALIDATION_LIMIT,
               "nesting: 700 levels (2100 schemas deep) is VALIDATION_LIMIT, not a deep stack");
    }
    tg_schema_free(s);

    /* max_pattern_bytes: a pattern of N bytes compiles, N + 1 does not */
    lim = saved;
    lim.max_pattern_bytes = 8;
    tg_engine_set_limits(E, &lim, &err);
    tap_ok(compile("{\"pattern\":\"^[a-z]+$\"}", NULL, &s, &err) == TG_OK,
           "max_pattern_bytes 8: an 8-byte pattern compiles");
    tg_schema_free(s);
    tap_ok(compile("{\"pattern\":\"^[a-z]*$.\"}", NULL, &s, &err) == TG_E_PATTERN_TOO_LONG &&
               s == NULL && strcmp(err.pointer, "/pattern") == 0 &&
               strcmp(tg_code_name(err.code), "PATTERN_TOO_LONG") == 0,
           "max_pattern_bytes 8: a 9-byte pattern is PATTERN_TOO_LONG at /pattern");
    tap_ok(compile("{\"patternProperties\":{\"^[a-z]*$.\":{}}}", NULL, &s, &err) ==
               TG_E_PATTERN_TOO_LONG,
           "max_pattern_bytes 8: patternProperties too");
    lim.max_pattern_bytes = 0;
    tap_ok(tg_engine_set_limits(E, &lim, &err) == TG_E_ARG, "max_pattern_bytes 0 is out of range");
    tg_engine_set_limits(E, &saved, &err);
}

/* Validates an instance text built by the caller (which frees it). */
static int validate_text(const tg_schema_t *s, const char *text, size_t len, tg_finding_t *f,
                         size_t max, size_t *count, tg_error_t *err)
{
    tg_doc_t *doc = NULL;
    int rc = tg_parse(E, text, len, &doc, err);
    if (rc != TG_OK)
        return -1;
    rc = tg_validate(E, s, tg_doc_root(doc), f, max, count, err);
    tg_doc_free(doc);
    return rc;
}

/* n copies of item (len bytes) as a JSON array, malloc'd, in *len_out;
 * head (may be NULL) goes first. */
static char *array_of(const char *head, const char *item, size_t n, size_t *len_out)
{
    size_t hl = head ? strlen(head) : 0, il = strlen(item), k = 0;
    char *t = malloc(hl + n * (il + 1) + 3);
    t[k++] = '[';
    if (hl) {
        memcpy(t + k, head, hl);
        k += hl;
    }
    for (size_t i = 0; i < n; i++) {
        if (i || hl)
            t[k++] = ',';
        memcpy(t + k, item, il);
        k += il;
    }
    t[k++] = ']';
    t[k] = '\0';
    *len_out = k;
    return t;
}

/* The costs of validation are bounded: uniqueItems sorts, regex work has a
 * budget per validation, and the walk stops once its findings are known.
 * Each hostile case refuses correctly and at once (the old code took
 * seconds on each). */
static void hostile_costs(void)
{
    tg_limits_t lim, saved;
    tg_schema_t *s;
    tg_error_t err;
    tg_finding_t f[16], big[17];
    size_t count, len;
    char *text;

    tg_engine_limits(E, &saved);
    lim = saved;
    lim.max_input_bytes = 1 << 22;
    tg_engine_set_limits(E, &lim, &err);

    /* 65,536 copies of 1 under uniqueItems: refused, after one comparison */
    compile("{\"uniqueItems\":true}", NULL, &s, &err);
    text = array_of(NULL, "1", 65536, &len);
    tap_ok(validate_text(s, text, len, f, 16, &count, &err) == TG_OK && count == 1 &&
               strcmp(f[0].keyword, "uniqueItems") == 0 &&
               strcmp(f[0].message, "(root): items 0 and 1 are equal, items must be unique") == 0,
           "uniqueItems: 65,536 copies of 1 are refused at once");
    free(text);
    /* 65,536 distinct integers: one step per item sorted, and one node */
    {
        char *t = malloc(65536 * 8 + 3);
        size_t k = 0;
        t[k++] = '[';
        for (int i = 0; i < 65536; i++)
            k += (size_t)sprintf(t + k, i ? ",%u" : "%u", ((unsigned)i * 40503u) % 65536u);
        t[k++] = ']';
        lim.max_validation_steps = 65537;
        tg_engine_set_limits(E, &lim, &err);
        tap_ok(validate_text(s, t, k, f, 16, &count, &err) == TG_OK && count == 0,
               "uniqueItems: 65,536 distinct items in 65,537 steps");
        lim.max_validation_steps = 65536;
        tg_engine_set_limits(E, &lim, &err);
        tap_ok(validate_text(s, t, k, f, 16, &count, &err) == TG_E_VALIDATION_LIMIT,
               "uniqueItems: the items count as steps (65,536 steps is VALIDATION_LIMIT)");
        lim.max_validation_steps = saved.max_validation_steps;
        tg_engine_set_limits(E, &lim, &err);
        free(t);
    }
    /* nested values count too: two equal-length arrays of 1000 numbers */
    {
        char *a = array_of(NULL, "7", 1000, &len), *t = malloc(2 * len + 4);
        size_t k = (size_t)sprintf(t, "[%s,%s", a, a);
        t[k - 2] = '8'; /* the second array differs in its last item */
        t[k++] = ']';
        t[k] = '\0';
        lim.max_validation_steps = 1 + 2 + 1000;
        tg_engine_set_limits(E, &lim, &err);
        tap_ok(validate_text(s, t, k, f, 16, &count, &err) == TG_OK && count == 0,
               "uniqueItems: 1,000 nested pairs visited, within 1 + 2 + 1,000 steps");
        lim.max_validation_steps = 1 + 2 + 999;
        tg_engine_set_limits(E, &lim, &err);
        tap_ok(validate_text(s, t, k, f, 16, &count, &err) == TG_E_VALIDATION_LIMIT,
               "uniqueItems: the nested values visited count as steps");
        lim.max_validation_steps = saved.max_validation_steps;
        tg_engine_set_limits(E, &lim, &err);
        free(a);
        free(t);
    }
    tg_schema_free(s);

    /* ^(\w+\s?)*$ over 50,000 strings each just under the match limit.
     * Each one a finding: the walk stops at the 16th (the old walk went on,
     * since an H2 might still have displaced an H3). */
    compile("{\"items\":{\"pattern\":\"^(\\\\w+\\\\s?)*$\"}}", NULL, &s, &err);
    text = array_of(NULL, "\"aaaaaaaaaaaaaaa!\"", 50000, &len);
    tap_ok(validate_text(s, text, len, f, 16, &count, &err) == TG_OK && count == 16 &&
               strcmp(f[15].pointer, "/15") == 0,
           "stop: 50,000 near-limit non-matches stop at the 16th finding");
    free(text);
    tg_schema_free(s);
    /* ... and after the findings it has room for nothing else is looked at */
    compile("{\"items\":{\"type\":\"string\",\"pattern\":\"^(\\\\w+\\\\s?)*$\"}}", NULL, &s, &err);
    text = array_of("1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1", "\"aaaaaaaaaaaaaaaaaaaaaaaaa!\"", 10, &len);
    tap_ok(validate_text(s, text, len, big, 17, &count, &err) == TG_E_REGEX_LIMIT,
           "stop: with room for 17, the hostile match after 16 findings is REGEX_LIMIT");
    tap_ok(validate_text(s, text, len, f, 16, &count, &err) == TG_OK && count == 16 &&
               strcmp(f[15].pointer, "/15") == 0,
           "stop: with room for 16, the walk stops before the hostile match");
    free(text);
    tg_schema_free(s);
    /* Silently (a branch of anyOf) they are no findings: max_regex_steps
     * refuses once the matches have used it up, after 100 of them. */
    compile("{\"items\":{\"anyOf\":[{\"pattern\":\"^(\\\\w+\\\\s?)*$\"},{\"type\":\"string\"}]}}",
            NULL, &s, &err);
    text = array_of(NULL, "\"aaaaaaaaaaaaaaa!\"", 50000, &len);
    tap_ok(validate_text(s, text, len, f, 16, &count, &err) == TG_E_REGEX_BUDGET &&
               strstr(err.message, "max_regex_steps (10000000)") != NULL,
           "max_regex_steps: 50,000 near-limit matches are REGEX_BUDGET, not 10 seconds");
    free(text);
    text = array_of(NULL, "\"aaaaaaaaaaaaaaa!\"", 100, &len);
    tap_ok(validate_text(s, text, len, f, 16, &count, &err) == TG_OK && count == 0,
           "max_regex_steps: 100 of them (100,000 each) fit the default budget");
    free(text);
    text = array_of(NULL, "\"aaaaaaaaaaaaaaa!\"", 101, &len);
    tap_ok(validate_text(s, text, len, f, 16, &count, &err) == TG_E_REGEX_BUDGET,
           "max_regex_steps: 101 of them do not");
    free(text);
    tg_schema_free(s);

    /* max_regex_steps at N and N - 1: a match is charged the limit under
     * which it finished (100, then 1,000, 10,000, ... up to
     * regex_match_limit) */
    compile("{\"items\":{\"pattern\":\"^[a-z]+$\"}}", NULL, &s, &err);
    lim.max_regex_steps = 300;
    tg_engine_set_limits(E, &lim, &err);
    tap_ok(validate(s, "[\"a\",\"b\",\"C\"]", f, 4, &count) == TG_OK && count == 1,
           "max_regex_steps 300: three plain matches (100 each) decide");
    lim.max_regex_steps = 299;
    tg_engine_set_limits(E, &lim, &err);
    tap_ok(validate(s, "[\"a\",\"b\",\"C\"]", f, 4, &count) == TG_E_REGEX_BUDGET,
           "max_regex_steps 299: the third match is REGEX_BUDGET");
    tg_schema_free(s);
    /* a match of a few thousand units finishes under 10,000 */
    compile("{\"pattern\":\"^(\\\\w+\\\\s?)*$\"}", NULL, &s, &err);
    lim.max_regex_steps = 10000;
    tg_engine_set_limits(E, &lim, &err);
    tap_ok(validate(s, "\"aaaaaaaaaa!\"", f, 4, &count) == TG_OK && count == 1,
           "max_regex_steps 10000: a match that needs thousands of units decides");
    lim.max_regex_steps = 9999;
    tg_engine_set_limits(E, &lim, &err);
    tap_ok(validate_text(s, "\"aaaaaaaaaa!\"", 13, f, 4, &count, &err) == TG_E_REGEX_BUDGET &&
               strstr(err.message, "max_regex_steps") != NULL,
           "max_regex_steps 9999: the same match is REGEX_BUDGET");
    lim.max_regex_steps = 1000000;
    lim.regex_match_limit = 1000;
    tg_engine_set_limits(E, &lim, &err);
    tap_ok(validate_text(s, "\"aaaaaaaaaa!\"", 13, f, 4, &count, &err) == TG_E_REGEX_LIMIT &&
               strstr(err.message, "regex_match_limit (1000)") != NULL,
           "regex_match_limit 1000: the same match is REGEX_LIMIT (regex_match_limit)");
    tg_schema_free(s);
    lim = saved;
    lim.max_regex_steps = 0;
    tap_ok(tg_engine_set_limits(E, &lim, &err) == TG_E_ARG, "max_regex_steps 0 is out of range");
    lim.max_regex_steps = (size_t)0xffffffff + 1;
    tap_ok(tg_engine_set_limits(E, &lim, &err) == TG_E_ARG, "max_regex_steps 2^32 is out of range");
    tg_engine_set_limits(E, &saved, &err);
}

/* ---- allocation failures -------------------------------------------------------- */

static void allocation_failures(void)
{
    const char *schema =
        "{\"$defs\":{\"id\":{\"type\":\"string\",\"pattern\":\"^[a-z]+\\\\d*$\"},"
        "\"unused\":{\"enum\":[1,[2],{\"three\":3}]}},"
        "\"allOf\":[{\"properties\":{\"a\":{\"$ref\":\"#/$defs/id\"}}},{\"properties\":{\"b\":{}}}],"
        "\"properties\":{\"c\":{\"const\":{\"k\":[1,2]}},\"d\":{\"items\":{\"$ref\":\"#\"}},"
        "\"e\":{\"patternProperties\":{\"^x\":{\"multipleOf\":0.01}},\"uniqueItems\":true}},"
        "\"required\":[\"a\"],\"dependentRequired\":{\"a\":[\"b\"]}}";
    const char *instance =
        "{\"a\":\"abc1\",\"b\":1,\"c\":{\"k\":[1,2]},\"d\":[{\"a\":\"z\",\"b\":2}]}";
    tg_doc_t *sdoc = parse(schema), *idoc = parse(instance);
    acct a = {0};
    tg_engine_t *e;
    tg_schema_t *s;
    tg_error_t err;
    tg_finding_t f[4];
    size_t count;
    long calls;
    int all_ok = 1;

    e = tg_engine_new(NULL, acct_alloc, &a, &err);
    tap_ok(tg_schema_compile(e, tg_doc_root(sdoc), NULL, &s, &err) == TG_OK,
           "allocations: the schema compiles with a counting allocator");
    tap_ok(tg_validate(e, s, tg_doc_root(idoc), f, 4, &count, &err) == TG_OK && count == 0,
           "allocations: and validates");
    tg_schema_free(s);
    tg_engine_free(e);
    calls = a.calls;
    tap_ok(a.live == 0, "allocations: every byte given back");

    for (long k = 1; k <= calls; k++) {
        int rc;
        a.live = a.calls = 0;
        a.fail_at = k;
        e = tg_engine_new(NULL, acct_alloc, &a, &err);
        if (!e) {
            all_ok &= a.live == 0;
            continue;
        }
        rc = tg_schema_compile(e, tg_doc_root(sdoc), NULL, &s, &err);
        if (rc == TG_OK) {
            /* the failing allocation is the validation's own */
            rc = tg_validate(e, s, tg_doc_root(idoc), f, 4, &count, &err);
            tg_schema_free(s);
        } else {
            all_ok &= s == NULL;
        }
        if (rc != TG_E_NOMEM) {
            all_ok = 0;
            printf("# failing allocation %ld: %s (%s)\n", k, tg_code_name(rc), err.message);
        }
        tg_engine_free(e);
        if (a.live != 0) {
            all_ok = 0;
            printf("# failing allocation %ld leaks %ld bytes\n", k, a.live);
        }
    }
    printf("# %ld allocations failed in turn\n", calls);
    tap_ok(calls > 10 && all_ok, "allocations: each failure is NOMEM and leaks nothing");

    /* uniqueItems over a long array sorts hashes in a table of its own */
    {
        char big[1024];
        size_t n = 0;
        tg_doc_t *bdoc, *udoc = parse("{\"uniqueItems\":true}");
        n += (size_t)snprintf(big + n, sizeof big - n, "[");
        for (int i = 0; i < 100; i++)
            n += (size_t)snprintf(big + n, sizeof big - n, "%s%d", i ? "," : "", i % 99);
        snprintf(big + n, sizeof big - n, "]");
        bdoc = parse(big);
        a.live = a.calls = a.fail_at = 0;
        e = tg_engine_new(NULL, acct_alloc, &a, &err);
        tg_schema_compile(e, tg_doc_root(udoc), NULL, &s, &err);
        tap_ok(tg_validate(e, s, tg_doc_root(bdoc), f, 4, &count, &err) == TG_OK && count == 1 &&
                   strstr(f[0].message, "items 0 and 99") != NULL,
               "uniqueItems: a duplicate in a long array");
        a.fail_at = a.calls + 1;
        tap_ok(tg_validate(e, s, tg_doc_root(bdoc), f, 4, &count, &err) == TG_E_NOMEM,
               "uniqueItems: its table's allocation failing is NOMEM");
        tg_schema_free(s);
        tg_engine_free(e);
        tap_ok(a.live == 0, "uniqueItems: nothing leaks");
        tg_doc_free(bdoc);
        tg_doc_free(udoc);
    }
    tg_doc_free(sdoc);
    tg_doc_free(idoc);
}

/* Schemas of one engine with one pattern text share its compiled code: one
 * freed, the others still match with it; every pattern goes with the last. */
static void shared_patterns(void)
{
    const char *a = "{\"properties\":{\"id\":{\"pattern\":\"^[a-z]+$\"}},"
                    "\"patternProperties\":{\"^[a-z]+$\":{\"type\":[\"integer\",\"string\"]}}}";
    const char *b = "{\"properties\":{\"id\":{\"pattern\":\"^[0-9]+$\"}}}";
    tg_schema_t *s1, *s2, *s3;
    tg_error_t err;
    tg_finding_t f[2];
    size_t count;
    int ok = compile(a, NULL, &s1, &err) == TG_OK && compile(a, NULL, &s2, &err) == TG_OK &&
             compile(b, NULL, &s3, &err) == TG_OK;
    tg_schema_free(s1);
    tap_ok(ok && validate(s2, "{\"id\":\"abc\",\"x\":1}", f, 2, &count) == TG_OK && count == 0 &&
               validate(s2, "{\"id\":\"ab1\"}", f, 2, &count) == TG_OK && count == 1 &&
               validate(s2, "{\"x\":true}", f, 2, &count) == TG_OK && count == 1,
           "a pattern shared by two schemas still matches after the first is freed");
    tap_ok(ok && validate(s3, "{\"id\":\"123\"}", f, 2, &count) == TG_OK && count == 0 &&
               validate(s3, "{\"id\":\"abc\"}", f, 2, &count) == TG_OK && count == 1,
           "another text is another pattern");
    tg_schema_free(s2);
    tg_schema_free(s3);
}

int main(void)
{
    tg_schema_options_t std = standard(), closed;
    tg_schema_options_default(&closed);

    E = tg_engine_new(NULL, NULL, NULL, NULL);
    tap_ok(closed.closed == 1 && closed.assert_formats == 0 && closed.ignore_keywords == NULL &&
               closed.annotation_formats == NULL,
           "options: closed world by default, formats not asserted");
    run_cases(keyword_cases, sizeof keyword_cases / sizeof keyword_cases[0], &std);
    run_cases(multiple_cases, sizeof multiple_cases / sizeof multiple_cases[0], &std);
    run_cases(number_cases, sizeof number_cases / sizeof number_cases[0], &std);
    unique_long(&std);
    compile_error_cases();
    run_cases(closed_cases, sizeof closed_cases / sizeof closed_cases[0], &closed);
    {
        /* the same undeclared keys pass in standard mode */
        tg_schema_t *s;
        tg_error_t err;
        tg_finding_t f[2];
        size_t count;
        compile("{\"allOf\":[{\"properties\":{\"a\":{}}},{\"properties\":{\"b\":{}}}]}", &std, &s,
                &err);
        tap_ok(validate(s, "{\"a\":1,\"c\":3}", f, 2, &count) == TG_OK && count == 0,
               "closed = 0: standard 2020-12, undeclared keys pass");
        tg_schema_free(s);
        compile("{\"allOf\":[{\"properties\":{\"a\":{}}},{\"properties\":{\"b\":{}}}]}", NULL, &s,
                &err);
        tap_ok(validate(s, "{\"a\":1,\"c\":3}", f, 2, &count) == TG_OK && count == 1 &&
                   finding_is(&f[0], TG_H2, "closed", "/c", "", NULL),
               "closed: one finding for the group, at the group's head");
        tg_schema_free(s);
        closed_findings();
    }
    findings();
    limits();
    hostile_costs();
    allocation_failures();
    shared_patterns();
    tg_engine_free(E);
    return tap_done();
}
