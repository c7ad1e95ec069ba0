#!/usr/bin/env python3
"""Deterministic generator of the schema-validation corpus.

    python3 bench/gen_calls.py [--seed 1] [--count 3000] [--invalid-share 0.2] \\
        --schemas-out bench/out/schemas.json > bench/out/calls.jsonl

--schemas-out gets one JSON object mapping each tool key to its JSON Schema
(draft 2020-12; keywords used: $schema, $defs, $ref (local), type (incl.
type arrays), properties, required, additionalProperties (false or a
schema), items, minItems, maxItems, uniqueItems, enum, minimum, maximum,
exclusiveMinimum, minLength, maxLength, pattern (ASCII-only ECMA-262/PCRE
common subset), minProperties, maxProperties; no "format").

stdout gets one call per line:
  {"tool":"<key>","arguments":"<raw JSON text of the arguments>","expect":true|false,"mutation":null|"<what>"}
"arguments" is the JSON text an LLM would send (the same generator as
gen_corpus.py, so unicode, big integers and odd number spellings included).
"expect" is the validity by construction: valid calls are generated to fit
the schema; invalid ones had exactly one violation applied ("mutation" says
which).  Consumers that only need tool + arguments may ignore the rest.
"""

import argparse
import json
import os
import random
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_corpus as gc  # noqa: E402

S = "https://json-schema.org/draft/2020-12/schema"
STR = {"type": "string"}
REASON = {"type": "string", "maxLength": 4096}
UUID_RE = "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
EMAIL_RE = "^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$"


def obj(props, required=(), closed=True, **kw):
    d = {"type": "object", "properties": props}
    if required:
        d["required"] = list(required)
    if closed:
        d["additionalProperties"] = False
    d.update(kw)
    return d


def tool(props, required, **kw):
    props = dict(props)
    props["reason"] = REASON
    d = {"$schema": S}
    d.update(obj(props, required, **kw))
    return d


SCHEMAS = {
    "read_file": tool({
        "path": {"type": "string", "minLength": 1, "maxLength": 4096},
        "encoding": {"enum": ["utf-8", "latin-1", "utf-16"]},
        "offset": {"type": "integer", "minimum": 0},
        "limit": {"type": "integer", "minimum": 1, "maximum": 1000000},
        "follow_symlinks": {"type": "boolean"},
    }, ["path"]),
    "http_request": tool({
        "url": {"type": "string", "pattern": "^https?://"},
        "method": {"enum": ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]},
        "headers": {"type": "object", "additionalProperties": STR},
        "body": {"type": "object"},
        "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600000},
        "retry": obj({"max": {"type": "integer", "minimum": 0, "maximum": 10},
                      "backoff": {"type": "number", "exclusiveMinimum": 0}}, ["max"]),
    }, ["url", "method"]),
    "sql_query": tool({
        "database": {"enum": ["analytics", "prod_replica", "billing", "crm"]},
        "query": {"type": "string", "minLength": 1, "maxLength": 20000},
        "params": {"type": "array", "maxItems": 20, "items": {"type": ["string", "number", "boolean", "null"]}},
        "limit": {"type": "integer", "minimum": 1, "maximum": 10000},
        "read_only": {"type": "boolean"},
    }, ["database", "query"]),
    "send_message": tool({
        "channel": {"type": "string", "pattern": "^[#@]", "maxLength": 80},
        "text": {"type": "string", "minLength": 1, "maxLength": 8000},
        "thread_ts": {"type": "string", "pattern": "^[0-9]+\\.[0-9]{6}$"},
        "mentions": {"type": "array", "maxItems": 10, "items": {"type": "string", "pattern": EMAIL_RE}},
        "attachments": {"type": "array", "items": obj({
            "title": STR, "url": {"type": "string", "pattern": "^https?://"},
            "size_bytes": {"type": "integer", "minimum": 0}}, ["title", "url"])},
    }, ["channel", "text"]),
    "create_issue": tool({
        "repo": {"type": "string", "pattern": "^[^/]+/[^/]+$"},
        "title": {"type": "string", "minLength": 1, "maxLength": 512},
        "body": {"type": "string", "maxLength": 65536},
        "labels": {"type": "array", "items": STR, "uniqueItems": True},
        "assignees": {"type": "array", "items": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"}, "maxItems": 10},
        "priority": {"enum": ["low", "medium", "high", "critical"]},
        "estimate_hours": {"type": "number", "minimum": 0},
        "metadata": {"type": "object"},
    }, ["repo", "title", "body"]),
    "geo_search": tool({
        "query": {"type": "string", "minLength": 1},
        "location": obj({"lat": {"type": "number", "minimum": -90, "maximum": 90},
                         "lon": {"type": "number", "minimum": -180, "maximum": 180}}, ["lat", "lon"]),
        "radius_km": {"type": "number", "minimum": 0, "maximum": 500},
        "filters": obj({"open_now": {"type": "boolean"},
                        "min_rating": {"type": "number", "minimum": 0, "maximum": 5},
                        "price_level": {"type": "array", "uniqueItems": True,
                                        "items": {"type": "integer", "minimum": 1, "maximum": 4}}}),
        "max_results": {"type": "integer", "minimum": 1, "maximum": 100},
    }, ["query", "location"]),
    "create_payment": tool({
        "amount": {"type": "number", "exclusiveMinimum": 0},
        "currency": {"enum": gc.CURRENCIES},
        "customer_id": {"type": "string", "pattern": "^cus_[A-Za-z0-9]+$"},
        "idempotency_key": {"type": "string", "pattern": UUID_RE},
        "ledger_id": {"type": "integer", "minimum": 0},
        "line_items": {"type": "array", "minItems": 1, "items": obj({
            "sku": {"type": "string", "pattern": "^sku_"},
            "qty": {"type": "integer", "minimum": 1},
            "unit_price": {"type": "number", "minimum": 0},
            "discount": {"type": ["number", "null"], "minimum": 0, "maximum": 1}}, ["sku", "qty", "unit_price"])},
        "metadata": {"type": "object", "maxProperties": 50, "additionalProperties": STR},
    }, ["amount", "currency", "customer_id", "idempotency_key"]),
    "record_metrics": tool({
        "series": {"type": "array", "minItems": 1, "items": obj({
            "name": {"enum": ["latency_ms", "cpu", "mem_bytes", "error_rate", "qps"]},
            "value": {"type": "number"},
            "timestamp": {"type": "integer", "minimum": 0}}, ["name", "value"])},
        "tags": {"type": "object", "additionalProperties": STR},
        "sample_rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    }, ["series"]),
    "update_record": tool({
        "table": {"enum": gc.TABLES},
        "id": {"type": ["integer", "string"]},
        "patch": {"type": "object", "minProperties": 1},
        "expected_version": {"type": "integer", "minimum": 1},
        "upsert": {"type": "boolean"},
    }, ["table", "id", "patch"]),
    "run_code": tool({
        "language": {"enum": ["python", "javascript", "lua", "bash", "sql", "rust"]},
        "code": {"type": "string", "minLength": 1, "maxLength": 20000},
        "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 300},
        "env": {"type": "object", "additionalProperties": STR},
        "stdin": {"type": ["string", "null"]},
    }, ["language", "code"]),
    "calendar_event": tool({
        "title": {"type": "string", "minLength": 1},
        "start": {"$ref": "#/$defs/datetime"},
        "end": {"$ref": "#/$defs/datetime"},
        "attendees": {"type": "array", "minItems": 1, "maxItems": 50, "items": {"$ref": "#/$defs/attendee"}},
        "location": {"type": ["string", "null"]},
        "recurrence": obj({"freq": {"enum": ["DAILY", "WEEKLY", "MONTHLY"]},
                           "interval": {"type": "integer", "minimum": 1},
                           "until": {"$ref": "#/$defs/datetime"},
                           "byday": {"type": "array", "uniqueItems": True,
                                     "items": {"enum": ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]}}}, ["freq"]),
        "reminders_min": {"type": "array", "uniqueItems": True, "items": {"type": "integer", "minimum": 0}},
    }, ["title", "start", "end", "attendees"], **{"$defs": {
        "datetime": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}"},
        "attendee": obj({"email": {"type": "string", "pattern": EMAIL_RE}, "name": STR,
                         "optional": {"type": "boolean"}}, ["email"]),
    }}),
    "translate_text": tool({
        "text": {"type": "string", "minLength": 1},
        "source_lang": {"$ref": "#/$defs/lang"},
        "target_lang": {"$ref": "#/$defs/lang"},
        "glossary": {"type": "object", "additionalProperties": STR},
        "formality": {"enum": ["default", "more", "less"]},
    }, ["text", "target_lang"], **{"$defs": {"lang": {"enum": gc.LANGS}}}),
    "search_docs": tool({
        "query": {"type": "string"},
        "filters": {"type": "object"},
        "page": {"type": "integer", "minimum": 1},
        "per_page": {"enum": [10, 25, 50, 100]},
        "sort": {"type": "array", "items": obj({"field": STR, "order": {"enum": ["asc", "desc"]}}, ["field", "order"])},
        "cursor": {"type": ["string", "null"]},
    }, ["query"]),
}
assert list(SCHEMAS) == gc.TOOL_NAMES

WRONG_TYPE = {"string": 12345, "integer": "12", "number": "19.99", "boolean": "true",
              "array": {"0": "not an array"}, "object": ["not", "an", "object"], "null": 0}
NOT_MATCHING = "!!invalid!!"


def resolve(schema, root):
    while "$ref" in schema:
        schema = root["$defs"][schema["$ref"].split("/")[-1]]
    return schema


def mutations(args, schema):
    """(label, function(args)->args) violations applicable to these args."""
    out = []
    props = schema["properties"]
    for k in schema.get("required", []):
        out.append(("drop_required:" + k, lambda a, k=k: {x: v for x, v in a.items() if x != k}))
    if schema.get("additionalProperties") is False:
        out.append(("extra_property", lambda a: dict(a, unexpected_field=True)))
    for k in args:
        s = resolve(props.get(k, {}), schema)
        t = s.get("type")
        if isinstance(t, str):
            out.append(("wrong_type:" + k, lambda a, k=k, t=t: dict(a, **{k: WRONG_TYPE[t]})))
        if "enum" in s:
            out.append(("not_in_enum:" + k, lambda a, k=k: dict(a, **{k: "__not_in_enum__"})))
        if t == "integer" and "minimum" in s:
            out.append(("below_minimum:" + k, lambda a, k=k, m=s["minimum"]: dict(a, **{k: m - 1})))
        if t in ("integer", "number") and "maximum" in s:
            out.append(("above_maximum:" + k, lambda a, k=k, m=s["maximum"]: dict(a, **{k: m * 2 + 1})))
        if t == "number" and "exclusiveMinimum" in s:
            out.append(("not_above_exclusive_minimum:" + k,
                        lambda a, k=k, m=s["exclusiveMinimum"]: dict(a, **{k: m})))
        if t == "string" and "pattern" in s:
            out.append(("pattern_mismatch:" + k, lambda a, k=k: dict(a, **{k: NOT_MATCHING})))
        if t == "string" and "minLength" in s:
            out.append(("too_short:" + k, lambda a, k=k: dict(a, **{k: ""})))
        if t == "array" and isinstance(args[k], list) and args[k]:
            item = resolve(s.get("items", {}), schema)
            if item.get("type") == "object" and item.get("required"):
                rk = item["required"][0]
                out.append(("item_drop_required:%s[0].%s" % (k, rk), lambda a, k=k, rk=rk: dict(a, **{
                    k: [{x: v for x, v in a[k][0].items() if x != rk}] + a[k][1:]})))
            if s.get("uniqueItems"):
                out.append(("duplicate_items:" + k, lambda a, k=k: dict(a, **{k: a[k] + a[k][:1]})))
        if t == "object" and "properties" in s and isinstance(args[k], dict) and s.get("required"):
            rk = s["required"][0]
            out.append(("nested_drop_required:%s.%s" % (k, rk), lambda a, k=k, rk=rk: dict(a, **{
                k: {x: v for x, v in a[k].items() if x != rk}})))
    return out


def generate(seed, count, invalid_share):
    r = random.Random(seed)
    names = gc.TOOL_NAMES
    for _ in range(count):
        name = r.choice(names)
        ascii_only = r.random() < gc.ASCII_ESCAPED_SHARE
        _, args = gc.arguments(r, name, ascii_only=ascii_only)
        label = None
        if r.random() < invalid_share:
            label, fn = r.choice(mutations(args, SCHEMAS[name]))
            args = fn(args)
        yield {"tool": name, "arguments": gc.emit(args, ascii_only), "expect": label is None, "mutation": label}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--invalid-share", type=float, default=0.2)
    ap.add_argument("--schemas-out", required=True, help="file to write the tool->schema JSON object to")
    a = ap.parse_args()
    with open(a.schemas_out, "w", encoding="utf-8") as f:
        json.dump(SCHEMAS, f, ensure_ascii=False, indent=1)
        f.write("\n")
    out = sys.stdout.buffer
    for call in generate(a.seed, a.count, a.invalid_share):
        out.write(json.dumps(call, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")


if __name__ == "__main__":
    main()
