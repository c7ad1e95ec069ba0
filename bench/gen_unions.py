#!/usr/bin/env python3
"""Deterministic generator of union schemas and instances for the closed
world's differential test against ajv (spec/differential_unions_spec.lua).

    python3 bench/gen_unions.py [--seed 1] [--schemas 48] [--per-schema 60] \\
        --schemas-out SCHEMAS.json --reference-out REFERENCE.json > CALLS.jsonl

Python standard library only; the same arguments give the same bytes.

Schemas have the shapes generators emit for tool inputs:
  pydantic   models in $defs, a field that is an anyOf of $refs (a
             discriminated union: each model has a const or one-value enum
             "type"/"kind" field), nullable fields as anyOf [X, {"type":
             "null"}], optional nested models, lists of unions;
  zod        zod-to-json-schema: anyOf of inline objects, most with
             additionalProperties: false, discriminated by a const;
  nested     unions inside union branches, and a union beside properties;
  allof      allOf of an object and a member with patternProperties (and
             one with properties of its own);
  oneof      oneOf of overlapping objects, some told apart only by a
             required key.

--schemas-out gets {tool: schema} as toolgate reads it (closed world).
--reference-out gets {tool: the same schema with "unevaluatedProperties":
false on every closed group head}: what toolgate's closed world means,
spelled in standard JSON Schema 2020-12.  A group head is the root or a
schema reached at an instance location (properties, patternProperties,
additionalProperties, items, prefixItems, propertyNames); its group is
every schema it reaches in place through $ref, allOf, anyOf and oneOf; the
group is closed when a member has "properties".  (The generated schemas put
no object schema under "not" and no $ref to a head, so adding the keyword
at the heads changes nothing else.)

stdout gets one instance per line:
  {"tool":"<name>","arguments":"<raw JSON text>","mutation":"<kind>"}
valid instances (mutation "none") come from a random branch of every
union; the others each get one edit at one object of the instance:
  foreign_key     a key only another branch (or model) declares, with a
                  value that branch accepts
  foreign_bad     the same key with a value of the wrong type
  unknown_key     a key no schema declares
  pattern_key     a key matching a patternProperties pattern (allof)
  wrong_type      a declared key's value of the wrong type
  drop_required   a required key removed
  null_field      null for a key (right for nullable ones, wrong elsewhere)
There is no "expect": ajv on the reference schemas is the ground truth.
"""

import argparse
import copy
import json
import random
import sys

IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
MOVING_MAPS = ("properties", "patternProperties")
MOVING_ONE = ("additionalProperties", "items", "propertyNames", "additionalItems")

FIELD_NAMES = ["path", "name", "mode", "recursive", "limit", "query", "url", "depth", "force",
               "tags", "owner", "size", "title", "body", "lang", "ttl", "retries", "label"]
TAGS = ["read", "write", "delete", "move", "search", "fetch", "list", "stat"]
TYPES = ["string", "integer", "boolean", "number"]


# --------------------------------------------------------------------------
# schema shapes

def scalar(rng, t=None):
    t = t or rng.choice(TYPES)
    s = {"type": t}
    if t == "string" and rng.random() < 0.2:
        s["maxLength"] = rng.choice([8, 16, 64])
    if t == "integer" and rng.random() < 0.3:
        s["minimum"] = 0
    if rng.random() < 0.3:
        s["title"] = "F"
    return s


def fields(rng, k, avoid=()):
    names = [n for n in FIELD_NAMES if n not in avoid]
    rng.shuffle(names)
    return {n: scalar(rng) for n in names[:k]}


def tagged_object(rng, tag_key, tag, extra, closed_inline=False, tag_as_enum=False):
    props = {tag_key: {"enum": [tag]} if tag_as_enum else {"const": tag}}
    props.update(extra)
    req = [tag_key] + [n for n in extra if rng.random() < 0.5]
    s = {"type": "object", "properties": props, "required": req}
    if closed_inline:
        s["additionalProperties"] = False
    return s


def pydantic(rng):
    tag_key = rng.choice(["type", "kind", "action"])
    tags = rng.sample(TAGS, rng.randint(2, 4))
    defs = {}
    shared = fields(rng, 1, avoid=(tag_key,))  # a key every model has
    for t in tags:
        extra = dict(shared)
        extra.update(fields(rng, rng.randint(1, 3), avoid=(tag_key,) + tuple(shared)))
        m = tagged_object(rng, tag_key, t, extra, tag_as_enum=rng.random() < 0.3)
        m["title"] = t.capitalize()
        defs[t.capitalize()] = m
    inner = {"type": "object", "title": "Inner", "properties": fields(rng, 2), "required": []}
    defs["Inner"] = inner
    refs = [{"$ref": "#/$defs/" + t.capitalize()} for t in tags]
    union = {"anyOf" if rng.random() < 0.7 else "oneOf": refs, "title": "Item"}
    props = {"item": union,
             "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
             "inner": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]}}
    if rng.random() < 0.5:
        props["items"] = {"type": "array", "items": {"anyOf": copy.deepcopy(refs)}}
    return {"$defs": defs, "type": "object", "title": "Args", "properties": props,
            "required": ["item"]}


def zod(rng):
    tag_key = rng.choice(["type", "op"])
    tags = rng.sample(TAGS, rng.randint(2, 4))
    shared = fields(rng, 1, avoid=(tag_key,))
    branches = []
    for t in tags:
        extra = dict(shared)
        extra.update(fields(rng, rng.randint(1, 3), avoid=(tag_key,) + tuple(shared)))
        branches.append(tagged_object(rng, tag_key, t, extra, closed_inline=rng.random() < 0.8))
    s = {"anyOf": branches}
    if rng.random() < 0.3:
        # a union as one argument of an object
        s = {"type": "object", "properties": {"args": s, "dry_run": {"type": "boolean"}},
             "required": ["args"], "additionalProperties": False}
    return s


def nested(rng):
    a = tagged_object(rng, "k", "a", fields(rng, 2, avoid=("k",)))
    b = tagged_object(rng, "k", "b", fields(rng, 2, avoid=("k",)))
    c = tagged_object(rng, "k", "c", fields(rng, 2, avoid=("k",)))
    inner = {"anyOf": [a, b]} if rng.random() < 0.5 else {"oneOf": [a, b]}
    s = {"anyOf": [inner, c]}
    if rng.random() < 0.5:
        # properties beside the union, at the same head
        s["properties"] = {"id": {"type": "integer"}}
    if rng.random() < 0.4:
        s = {"type": "object", "properties": {"x": s}, "required": ["x"]}
    return s


def allof(rng):
    base = {"type": "object", "properties": fields(rng, rng.randint(1, 3)), "required": []}
    pat = {"patternProperties": {"^x-": {"type": "string"}}}
    members = [base, pat]
    if rng.random() < 0.5:
        members.append({"properties": fields(rng, 1, avoid=tuple(base["properties"]))})
    rng.shuffle(members)
    s = {"allOf": members}
    if rng.random() < 0.3:
        s["anyOf"] = [{"required": [next(iter(base["properties"]))]}, {"type": "object"}]
    return s


def oneof(rng):
    common = fields(rng, 1)
    b1 = {"type": "object", "properties": dict(common, **fields(rng, 1, avoid=tuple(common))),
          "required": list(common)}
    extra_key = rng.choice([n for n in FIELD_NAMES if n not in b1["properties"]])
    b2 = {"type": "object", "properties": dict(common, **{extra_key: scalar(rng)}),
          "required": list(common) + [extra_key]}
    return {"oneOf": [b1, b2]}


SHAPES = [("pydantic", pydantic), ("zod", zod), ("nested", nested), ("allof", allof),
          ("oneof", oneof)]


# --------------------------------------------------------------------------
# groups and the reference transform

def resolve(root, ref):
    node = root
    for tok in ref[2:].split("/") if ref != "#" else []:
        node = node[tok.replace("~1", "/").replace("~0", "~")]
    return node


def members(root, head):
    """Every schema in the group headed by head (identity-deduplicated)."""
    out, todo, seen = [], [head], set()
    while todo:
        s = todo.pop()
        if not isinstance(s, dict) or id(s) in seen:
            continue
        seen.add(id(s))
        out.append(s)
        if "$ref" in s:
            todo.append(resolve(root, s["$ref"]))
        for k in IN_PLACE_LISTS:
            todo.extend(s.get(k, []))
    return out


def heads(root):
    """The schemas reached at an instance location: the root and every
    target of a moving keyword, anywhere in the document."""
    out, todo = [], [root]
    while todo:
        s = todo.pop()
        if not isinstance(s, dict):
            continue
        out.append(s)
        for m in members(root, s):
            for k in MOVING_MAPS:
                todo.extend(m.get(k, {}).values())
            for k in MOVING_ONE:
                if isinstance(m.get(k), dict):
                    todo.append(m[k])
            if isinstance(m.get("prefixItems"), list):
                todo.extend(m["prefixItems"])
    return out


def reference(schema):
    ref = copy.deepcopy(schema)
    done = set()
    for h in heads(ref):
        if id(h) in done:
            continue
        done.add(id(h))
        if any("properties" in m for m in members(ref, h)):
            h["unevaluatedProperties"] = False
    # ajv 8 evaluates `items` in one loop and keeps what an anyOf branch
    # evaluated in one item for the next: [{"type":"read"}, {"type":"move",
    # "rec":"s"}] passes {"items": {"anyOf": [R, M], "unevaluatedProperties":
    # false}} when R declares rec.  Behind a $ref (compiled as a function of
    # its own with inlineRefs: false) each item starts afresh.
    n = 0
    for h in heads(ref):
        for m in members(ref, h):
            it = m.get("items")
            if isinstance(it, dict) and "unevaluatedProperties" in it:
                name = "__items_%d" % n
                n += 1
                ref.setdefault("$defs", {})[name] = it
                m["items"] = {"$ref": "#/$defs/" + name}
    return ref


# --------------------------------------------------------------------------
# instances

def value_of(rng, s, root):
    if "$ref" in s:
        return value_of(rng, resolve(root, s["$ref"]), root)
    if "const" in s:
        return s["const"]
    if "enum" in s:
        return rng.choice(s["enum"])
    for k in ("anyOf", "oneOf"):
        if k in s and not s.get("properties") and s.get("type") != "object":
            return value_of(rng, rng.choice(s[k]), root)
    if "allOf" in s or s.get("type") == "object" or "properties" in s or "anyOf" in s or "oneOf" in s:
        obj = {}
        parts = [s] + s.get("allOf", [])
        for k in ("anyOf", "oneOf"):
            if k in s:
                parts.append(rng.choice(s[k]))
        for p in parts:
            if "$ref" in p:
                p = resolve(root, p["$ref"])
            if p is not s and ("anyOf" in p or "oneOf" in p or "allOf" in p):
                v = value_of(rng, p, root)
                if isinstance(v, dict):
                    obj.update(v)
                continue
            req = set(p.get("required", []))
            for name, sub in p.get("properties", {}).items():
                if name in req or rng.random() < 0.5:
                    obj[name] = value_of(rng, sub, root)
            if "patternProperties" in p and rng.random() < 0.5:
                obj["x-" + rng.choice(["a", "b"])] = "v"
        return obj
    t = s.get("type")
    if t == "array":
        return [value_of(rng, s["items"], root) for _ in range(rng.randint(0, 2))]
    if t == "string":
        return rng.choice(["a", "/tmp/x", "hello world", "ü"])[:s.get("maxLength", 99)]
    if t == "integer":
        return rng.randint(s.get("minimum", -3), 50)
    if t == "number":
        return rng.choice([0.5, 2, -1.25, 1e3])
    if t == "boolean":
        return rng.random() < 0.5
    if t == "null":
        return None
    return rng.choice(["a", 1, True])


def wrong_for(rng, s, root):
    while "$ref" in s:
        s = resolve(root, s["$ref"])
    t = s.get("type")
    choices = [v for v, vt in (("s", "string"), (7, "integer"), (True, "boolean"), ([1], "array"))
               if vt != t and not (t == "number" and vt == "integer")]
    return rng.choice(choices)


def objects_in(v, out):
    if isinstance(v, dict):
        out.append(v)
        for x in v.values():
            objects_in(x, out)
    elif isinstance(v, list):
        for x in v:
            objects_in(x, out)
    return out


def declared_anywhere(schema):
    """Every (name, subschema) any properties of the document declares."""
    out = []

    def walk(s):
        if isinstance(s, dict):
            for name, sub in s.get("properties", {}).items():
                out.append((name, sub))
            for v in s.values():
                walk(v)
        elif isinstance(s, list):
            for v in s:
                walk(v)
    walk(schema)
    return out


def mutate(rng, inst, schema):
    objs = objects_in(inst, [])
    if not objs:
        return "none"
    o = rng.choice(objs)
    kind = rng.choice(["foreign_key", "foreign_key", "foreign_bad", "unknown_key", "pattern_key",
                       "wrong_type", "drop_required", "null_field"])
    decl = declared_anywhere(schema)
    if kind in ("foreign_key", "foreign_bad"):
        cands = [(n, s) for n, s in decl if n not in o]
        if not cands:
            kind = "unknown_key"
        else:
            name, sub = rng.choice(cands)
            o[name] = value_of(rng, sub, schema) if kind == "foreign_key" else wrong_for(rng, sub, schema)
            return kind
    if kind == "unknown_key":
        # (no name of Object.prototype's: ajv's unevaluatedProperties looks
        # keys up in a plain object and takes "constructor" or "__proto__"
        # as evaluated)
        o[rng.choice(["zzz", "Path", "path ", "pаth", ""])] = 1
    elif kind == "pattern_key":
        o["x-" + rng.choice(["q", "r"])] = rng.choice(["v", 3])
    elif kind == "wrong_type" and o:
        k = rng.choice(sorted(o))
        o[k] = rng.choice([[1], {"a": 1}, "s", 9, False])
    elif kind in ("drop_required", "wrong_type") and o:
        del o[rng.choice(sorted(o))]
    elif kind == "null_field" and o:
        o[rng.choice(sorted(o))] = None
    return kind


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--schemas", type=int, default=48)
    ap.add_argument("--per-schema", type=int, default=60)
    ap.add_argument("--schemas-out", required=True)
    ap.add_argument("--reference-out", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    schemas, refs, lines = {}, {}, []
    for i in range(a.schemas):
        shape, make = SHAPES[i % len(SHAPES)]
        name = "%s-%02d" % (shape, i)
        s = make(rng)
        schemas[name] = s
        refs[name] = reference(s)
        for j in range(a.per_schema):
            inst = value_of(rng, s, s)
            kind = "none" if j % 3 == 0 else mutate(rng, inst, s)
            lines.append(json.dumps({"tool": name, "arguments": json.dumps(inst, ensure_ascii=False),
                                     "mutation": kind}, ensure_ascii=False))
    with open(a.schemas_out, "w", encoding="utf-8") as f:
        json.dump(schemas, f, ensure_ascii=False)
    with open(a.reference_out, "w", encoding="utf-8") as f:
        json.dump(refs, f, ensure_ascii=False)
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
