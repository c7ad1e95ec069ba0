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
    {"{\"multipleOf\":0.1000000000000000001}", "2", 1,
     "multipleOf: a 19-digit divisor is judged on doubles (its double is 0.1)"},
    {"{\"multipleOf\":0.1000000000000000001}", "1e300", 0,
     "multipleOf: fallback refuses quotients past 2^53"},
    {"{\"multipleOf\":2.5}", "5", 1, "multipleOf: 5 of 2.5"},
    {"{\"multipleOf\":2.5}", "6", 0, "multipleOf: 6 of 2.5"},
};

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
    {"{\"properties\":{\"a\":{}},\"patternProperties\":{\"^x-\":{}}}", "{\"a\":1,\"y\":1}", 1,
     "closed: patternProperties opts out"},
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
};

/* ---- findings ---------------------------------------------------------------- */

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

    /* H2 found after an H3 still comes first; max keeps the first ones. */
    rc = validate(s, "{\"mode\":1,\"path\":2,\"opts\":{\"zz\":1}}", f, 8, &count);
    tap_ok(rc == TG_OK && count == 3 && f[0].code == TG_H2 &&
               strcmp(f[0].pointer, "/opts/zz") == 0 && f[1].code == TG_H3 &&
               strcmp(f[1].pointer, "/mode") == 0 && f[2].code == TG_H3 &&
               strcmp(f[2].pointer, "/path") == 0,
           "findings: H2 before H3, each in the order met");
    rc = validate(s, "{\"mode\":1,\"path\":2,\"opts\":{\"zz\":1}}", f, 1, &count);
    tap_ok(rc == TG_OK && count == 1 && f[0].code == TG_H2, "findings: max 1 keeps the H2");
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

    /* steps: N passes, N - 1 fails (root + one property = 2 nodes) */
    compile("{\"properties\":{\"a\":{\"type\":\"integer\"}}}", NULL, &s, &err);
    lim = saved;
    lim.max_validation_steps = 2;
    tg_engine_set_limits(E, &lim, &err);
    tap_ok(validate(s, "{\"a\":1}", f, 4, &count) == TG_OK && count == 0,
           "max_validation_steps 2: two nodes validate");
    lim.max_validation_steps = 1;
    tg_engine_set_limits(E, &lim, &err);
    tap_ok(validate(s, "{\"a\":1}", f, 4, &count) == TG_E_VALIDATION_LIMIT,
           "max_validation_steps 1: VALIDATION_LIMIT");
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
    }
    findings();
    limits();
    allocation_failures();
    tg_engine_free(E);
    return tap_done();
}
