#!/usr/bin/env python3
"""Deterministic generator of tool calls against the real MCP registries.

    python3 bench/gen_mcp_calls.py [--seed 1] [--count 3000] [--invalid-share 0.25] \\
        [--edge-share 0.08] [--registries examples/registries] \\
        --schemas-out bench/out/mcp-schemas.json > bench/out/mcp-calls.jsonl
    python3 bench/gen_mcp_calls.py --stats < bench/out/mcp-calls.jsonl

Python standard library only; the same arguments give the same bytes.

Input: the three recorded MCP tools/list results examples/registries/mcp-*.json
(each {"server", ..., "tools": [...]}), read in file-name order.  Tool keys
are "server/name".

--schemas-out gets one JSON object mapping each tool key to its inputSchema
made closed-world for a standard validator: every object schema that has
"properties" and neither "additionalProperties" nor "patternProperties"
gets "additionalProperties": false, recursively through every subschema
position except under "not" (toolgate never closes a schema reached only
through "not").  "$schema" is removed (the recordings say draft-07; ajv's
2020 build would refuse it), so the schemas are read as 2020-12.  This is
exactly toolgate's closed world as long as no object schema with
"properties" is combined in place (allOf/anyOf/oneOf/$ref) with another
one that declares keys; toolgate's closed world is then
"unevaluatedProperties": false on the group (bench/gen_unions.py and
spec/differential_unions_spec.lua test that shape), which a per-object
"additionalProperties": false cannot say.  The generator warns on stderr
when a schema has that shape (none of the three recorded registries
does).

stdout gets one call per line:
  {"tool":"server/name","arguments":"<raw JSON text>","expect":true|false,"mutation":null|"<kind>:<pointer>"}
Valid arguments are generated from the schema: every required key, each
optional key half of the time, enums, numbers inside minimum/maximum,
arrays of at least minItems, nested objects and arrays of objects; strings
are paths, URLs, globs, names and free text in many scripts with astral
characters, C0 controls and escapes (15% of the calls are written with
every non-ASCII character escaped, surrogate pairs included; 10% are
pretty-printed); numbers come in varied spellings (1.0, 1e1, 100e-1, -0,
-0.0, 1E3, integers beyond 2^53, 5e-324, ...); keys are in shuffled order.

A share of the calls (--invalid-share) gets exactly one violation, and
another share (--edge-share) exactly one edit that keeps them valid; the
"mutation" field says which, as KIND:JSON-POINTER of the place edited:
  invalid  type_flip             a value of a type the schema does not allow
                                 (the arguments object itself included)
           null                  null where the schema does not allow it
           extra_key             an undeclared key, top level or nested
                                 (near misses: case, a trailing space or
                                 NUL, a Cyrillic homoglyph, "__proto__",
                                 "", ...)
           drop_required         a required key removed, top level or nested
           below_minimum         minimum - 1e-9 or minimum - 1 (exclusiveMinimum:
                                 the bound)
           above_maximum         maximum + 1 (exclusiveMaximum: the bound)
           enum_near_miss        an enum string with its case, spacing or one
                                 letter changed
           wrong_item_type       one array item of the wrong type
           empty_array           [] under minItems >= 1
           long_string_over_max  a 100 KB string where maxLength is smaller
  valid    at_minimum, at_maximum  exactly the bound, in some spelling
           long_string           a 100 KB string (no maxLength)
           empty_array_ok        [] where minItems allows it
"expect" is the validity by construction, in closed world; ajv on the
converted schemas is the ground truth for differential testing, and
"expect" is a check of this generator against it.
"""

import argparse
import copy
import glob
import json
import os
import random
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_corpus as gc  # noqa: E402

RawNum = gc.RawNum
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_REGISTRIES = os.path.join(os.path.dirname(HERE), "examples", "registries")

LONG_STRING_BYTES = 100_000
PRETTY_SHARE = 0.10

INVALID_KINDS = ["type_flip", "null", "extra_key", "drop_required", "below_minimum", "above_maximum",
                 "enum_near_miss", "wrong_item_type", "empty_array", "long_string_over_max"]
VALID_KINDS = ["at_minimum", "at_maximum", "long_string", "empty_array_ok"]

# --------------------------------------------------------------------------
# registries and the closed-world conversion

SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SCHEMA_ONE = ("additionalProperties", "propertyNames", "additionalItems", "contains", "if", "then", "else",
              "unevaluatedProperties", "unevaluatedItems", "contentSchema")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
IN_PLACE = ("allOf", "anyOf", "oneOf", "$ref")


def load_registries(directory):
    tools = []
    for path in sorted(glob.glob(os.path.join(directory, "mcp-*.json"))):
        with open(path, encoding="utf-8") as f:
            reg = json.load(f)
        server = reg["server"]
        listing = reg.get("result", reg)
        for t in listing["tools"]:
            tools.append(("%s/%s" % (server, t["name"]), t["inputSchema"]))
    if not tools:
        sys.exit("gen_mcp_calls: no mcp-*.json registry in " + directory)
    return tools


def close_world(schema, where, closing=True):
    """A copy of schema with additionalProperties:false on every object
    schema that declares properties and says nothing of additional keys."""
    if not isinstance(schema, dict):
        return schema
    s = {k: v for k, v in schema.items() if k != "$schema"}
    if "properties" in s and any(k in s for k in IN_PLACE):
        sys.stderr.write("gen_mcp_calls: warning: %s combines properties with %s in place; "
                         "additionalProperties:false is not toolgate's closed world there\n"
                         % (where, "/".join(k for k in IN_PLACE if k in s)))
    for k in SCHEMA_MAPS:
        if isinstance(s.get(k), dict):
            s[k] = {name: close_world(sub, where, closing) for name, sub in s[k].items()}
    for k in SCHEMA_ONE:
        if k in s:
            s[k] = close_world(s[k], where, closing)
    for k in SCHEMA_LISTS:
        if isinstance(s.get(k), list):
            s[k] = [close_world(sub, where, closing) for sub in s[k]]
    if "items" in s:
        s["items"] = ([close_world(sub, where, closing) for sub in s["items"]] if isinstance(s["items"], list)
                      else close_world(s["items"], where, closing))
    if "not" in s:
        s["not"] = close_world(s["not"], where, False)
    if closing and "properties" in s and "additionalProperties" not in s and "patternProperties" not in s:
        s["additionalProperties"] = False
    return s


# --------------------------------------------------------------------------
# valid values from a schema

GLOBS = ["*.log", "node_modules", "**/*.tmp", ".git/**", "dist/*", "*.{js,ts}", "build", "[Tt]emp*",
         "**/__pycache__/**", "*.min.*", "**/données/*", "*~"]
NAMES = ["Ada Lovelace", "project-toolgate", "Réunion Q3", "user:42", "東京オフィス", "Zoë", "órgão",
         "customer 🚀", "O'Brien", "a\tb", "back\\slash", "quote\"d", "Ünïcödé", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "名前", ""]
KINDS = ["person", "organization", "event", "concept", "project", "city", "ツール", "ορισμός"]
RELATIONS = ["works_at", "knows", "located in", "depends-on", "owns", "est lié à", "관련"]


def schema_types(s):
    t = s.get("type")
    if t is None:
        return None
    return [t] if isinstance(t, str) else list(t)


def gen_string(r, key):
    k = (key or "").lower()
    if r.random() < 0.04:
        return ""
    if k in ("path", "source", "destination", "paths"):
        return gc.path(r)
    if k in ("pattern", "excludepatterns"):
        return r.choice(GLOBS)
    if k == "data":
        return gc.url(r) if r.random() < 0.8 else "data:text/plain;base64,SGVsbG8sIPCfjI0h"
    if k in ("name", "names", "entityname", "entitynames", "from", "to"):
        return r.choice(NAMES) if r.random() < 0.5 else gc.person(r)
    if k == "entitytype":
        return r.choice(KINDS)
    if k == "relationtype":
        return r.choice(RELATIONS)
    if k in ("content", "newtext", "oldtext"):
        return "\n".join(gc.text(r, 3, 20, 0.7) for _ in range(r.randint(1, 4)))
    return gc.text(r, 1, 12, 0.6)


def int_spellings(k):
    out = [str(k), "%d.0" % k, "%d.00" % k, "%de0" % k, "%dE+0" % k]
    if k:
        out += ["%de-1" % (k * 10), "%d00e-2" % k]
    if k % 10 == 0 and k:
        out.append("%de1" % (k // 10))
    if k == 0:
        out += ["-0", "-0.0", "0e5", "0e-1"]
    return out


def at_bound(r, bound):
    """The bound itself, in a spelling chosen at random."""
    if float(bound).is_integer():
        text = r.choice(int_spellings(int(bound)))
    else:
        text = r.choice([repr(float(bound)), repr(float(bound)) + "0"])
    assert float(text) == float(bound)
    return RawNum(text)


def gen_number(r, s, integer):
    lo = s.get("minimum", s.get("exclusiveMinimum"))
    hi = s.get("maximum", s.get("exclusiveMaximum"))

    def ok(x):
        x = float(x.text) if isinstance(x, RawNum) else float(x)
        if "minimum" in s and x < s["minimum"]:
            return False
        if "exclusiveMinimum" in s and x <= s["exclusiveMinimum"]:
            return False
        if "maximum" in s and x > s["maximum"]:
            return False
        if "exclusiveMaximum" in s and x >= s["exclusiveMaximum"]:
            return False
        return not integer or x.is_integer()

    for _ in range(50):
        if lo is None and hi is None:
            x = gc.number(r) if r.random() < 0.7 else RawNum(r.choice(
                ["1.0", "1e1", "-0", "-0.0", "0", "1E3", "2.50", "100e-2", "1e-7", "-1.5e+300", "7"]))
        else:
            a = lo if lo is not None else hi - 1000
            b = hi if hi is not None else lo + 1000
            k = r.random()
            if k < 0.4:
                x = r.randint(int(-(-a // 1)), int(b // 1)) if int(-(-a // 1)) <= int(b // 1) else a
            elif k < 0.6 and not integer:
                x = round(r.uniform(a, b), r.randint(1, 3))
            else:
                v = r.randint(int(-(-a // 1)), int(b // 1))
                x = RawNum(r.choice(int_spellings(v)))
        if integer and isinstance(x, float) and x.is_integer():
            x = int(x)
        if ok(x):
            return x
    raise ValueError("cannot generate a number for %r" % (s,))


def gen(r, s, key=None, depth=0):
    if not isinstance(s, dict):
        return gc.scalar(r)
    if "const" in s:
        return copy.deepcopy(s["const"])
    if "enum" in s:
        return copy.deepcopy(r.choice(s["enum"]))
    types = schema_types(s)
    t = r.choice(types) if types else ("object" if "properties" in s else "string")
    if t == "object":
        props = s.get("properties", {})
        required = s.get("required", [])
        d = {}
        for name, sub in props.items():
            if name in required or r.random() < 0.5:
                d[name] = gen(r, sub, name, depth + 1)
        return gc.shuffled(r, d, 0.5)
    if t == "array":
        lo = s.get("minItems", 0)
        hi = s.get("maxItems", lo + 30)
        k = r.random()
        if k < 0.12:
            n = lo
        elif k < 0.9:
            n = r.randint(max(lo, 1), max(lo, min(hi, lo + 4)))
        else:
            n = r.randint(lo, max(lo, min(hi, 20)))
        items = s.get("items", {})
        return [gen(r, items[i] if isinstance(items, list) and i < len(items) else
                    (items if isinstance(items, dict) else {}), key, depth + 1) for i in range(n)]
    if t == "string":
        return gen_string(r, key)
    if t in ("number", "integer"):
        return gen_number(r, s, t == "integer")
    if t == "boolean":
        return r.random() < 0.5
    if t == "null":
        return None
    raise ValueError("unknown type %r" % (t,))


# --------------------------------------------------------------------------
# mutation sites: every (pointer, schema, value) of the generated arguments


def sites(value, s, ptr=()):
    yield ptr, s, value
    if not isinstance(s, dict):
        return
    if isinstance(value, dict):
        props = s.get("properties", {})
        for k, v in value.items():
            if k in props:
                yield from sites(v, props[k], ptr + (k,))
    elif isinstance(value, list) and isinstance(s.get("items"), dict):
        for i, v in enumerate(value):
            yield from sites(v, s["items"], ptr + (i,))


def pointer(ptr):
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in ptr) if ptr else ""


def replace_at(args, ptr, new):
    if not ptr:
        return new
    args = copy.deepcopy(args)
    node = args
    for p in ptr[:-1]:
        node = node[p]
    node[ptr[-1]] = new
    return args


WRONG = {
    "string": lambda r: r.choice([12345, True, ["not", "a", "string"], {"text": "x"}, RawNum("1.0")]),
    "number": lambda r: r.choice(["12", "1e1", True, [1], {"value": 1}, "NaN"]),
    "integer": lambda r: r.choice(["12", 1.5, True, [1]]),
    "boolean": lambda r: r.choice(["true", "false", 0, 1, [True]]),
    "array": lambda r: r.choice([{"0": "not an array"}, "a,b", 1, True]),
    "object": lambda r: r.choice([["not", "an", "object"], "{}", 0, False]),
    "null": lambda r: r.choice([0, "", False]),
}
TYPE_OF = [(bool, "boolean"), (str, "string"), (list, "array"), (dict, "object"), (RawNum, "number"),
           (int, "integer"), (float, "number"), (type(None), "null")]


def json_type(v):
    for py, t in TYPE_OF:
        if isinstance(v, py):
            if t == "number" and isinstance(v, RawNum) and float(v.text).is_integer():
                return "integer"
            if t == "number" and isinstance(v, float) and v.is_integer():
                return "integer"
            return t
    raise TypeError(v)


def type_allowed(types, v):
    t = json_type(v)
    return t in types or (t == "integer" and "number" in types)


def extra_keys(r, declared, present):
    cands = ["unexpected", "extra", "__proto__", "constructor", "toString", "hasOwnProperty", "",
             "emoji_🔑", "a\nb", "x-debug", "$schema"]
    for d in declared:
        cands += [d.upper(), d.capitalize(), d + " ", " " + d, d + "_", d.replace("a", "\u0430").replace(
            "e", "\u0435").replace("o", "\u043e"), d + "\u200b", d + "\u0000"]
    cands = [c for c in cands if c not in declared and c not in present]
    return r.choice(cands)


def near_misses(word, enum):
    out = [word.lower(), word.upper(), word.capitalize(), word + " ", " " + word, word[:-1], word + "s",
           word.replace("e", "\u0435"), word.replace(" ", ""), word.replace(" ", "_"), word[::-1]]
    if len(word) > 1:
        out.append(word[0].swapcase() + word[1:])
    return [w for w in dict.fromkeys(out) if w not in enum and w != word]


def long_string(r):
    parts, size = [], 0
    while size < LONG_STRING_BYTES:
        p = gc.text(r, 20, 60, 0.4)
        parts.append(p)
        size += len(p.encode("utf-8")) + 1
    s = " ".join(parts).encode("utf-8")[:LONG_STRING_BYTES].decode("utf-8", "ignore")
    return s


def candidates(args, schema):
    """{kind: [site...]} for every mutation that applies to these args."""
    out = {k: [] for k in INVALID_KINDS + VALID_KINDS}
    for ptr, s, v in sites(args, schema):
        if not isinstance(s, dict):
            continue
        types = schema_types(s)
        if types is not None:
            out["type_flip"].append((ptr, s, v))
            if "null" not in types:
                out["null"].append((ptr, s, v))
        if isinstance(v, dict) and s.get("additionalProperties") is False:
            out["extra_key"].append((ptr, s, v))
        if isinstance(v, dict) and any(k in v for k in s.get("required", [])):
            out["drop_required"].append((ptr, s, v))
        if types and ("number" in types or "integer" in types) and not isinstance(v, (bool, str)):
            if "minimum" in s or "exclusiveMinimum" in s:
                out["below_minimum"].append((ptr, s, v))
            if "maximum" in s or "exclusiveMaximum" in s:
                out["above_maximum"].append((ptr, s, v))
            if "minimum" in s:
                out["at_minimum"].append((ptr, s, v))
            if "maximum" in s:
                out["at_maximum"].append((ptr, s, v))
        if isinstance(v, str) and isinstance(s.get("enum"), list) and all(isinstance(e, str) for e in s["enum"]):
            out["enum_near_miss"].append((ptr, s, v))
        if isinstance(v, str) and "enum" not in s and "const" not in s and "pattern" not in s \
                and "format" not in s:
            out["long_string_over_max" if "maxLength" in s else "long_string"].append((ptr, s, v))
        if isinstance(v, list) and v and isinstance(s.get("items"), dict) and schema_types(s["items"]):
            out["wrong_item_type"].append((ptr, s, v))
        if isinstance(v, list):
            out["empty_array" if s.get("minItems", 0) >= 1 else "empty_array_ok"].append((ptr, s, v))
    return {k: v for k, v in out.items() if v}


def apply(r, kind, site, args):
    ptr, s, v = site
    types = schema_types(s)
    if kind == "type_flip":
        for _ in range(20):
            new = WRONG[r.choice(types)](r)
            if not type_allowed(types, new):
                return ptr, replace_at(args, ptr, new)
        raise ValueError("no wrong type for %r" % (types,))
    if kind == "null":
        return ptr, replace_at(args, ptr, None)
    if kind == "extra_key":
        key = extra_keys(r, list(s.get("properties", {})), v)
        new = dict(v)
        new[key] = gc.scalar(r) if r.random() < 0.8 else gc.nested(r, 2)
        items = list(new.items())
        i = r.randrange(len(items))
        items.insert(i, items.pop())  # the extra key at a random place
        return ptr + (key,), replace_at(args, ptr, dict(items))
    if kind == "drop_required":
        key = r.choice([k for k in s["required"] if k in v])
        return ptr + (key,), replace_at(args, ptr, {k: x for k, x in v.items() if k != key})
    if kind == "below_minimum":
        if "minimum" not in s:
            new = at_bound(r, s["exclusiveMinimum"])
        elif r.random() < 0.7:
            new = RawNum(repr(float(s["minimum"]) - 1e-9))
        else:
            new = at_bound(r, s["minimum"] - 1)
        return ptr, replace_at(args, ptr, new)
    if kind == "above_maximum":
        new = at_bound(r, s["maximum"] + 1 if "maximum" in s else s["exclusiveMaximum"])
        return ptr, replace_at(args, ptr, new)
    if kind == "at_minimum":
        return ptr, replace_at(args, ptr, at_bound(r, s["minimum"]))
    if kind == "at_maximum":
        return ptr, replace_at(args, ptr, at_bound(r, s["maximum"]))
    if kind == "enum_near_miss":
        return ptr, replace_at(args, ptr, r.choice(near_misses(v, s["enum"])))
    if kind in ("long_string", "long_string_over_max"):
        return ptr, replace_at(args, ptr, long_string(r))
    if kind == "wrong_item_type":
        i = r.randrange(len(v))
        item_types = schema_types(s["items"])
        for _ in range(20):
            new = WRONG[r.choice(item_types)](r)
            if not type_allowed(item_types, new):
                return ptr + (i,), replace_at(args, ptr + (i,), new)
        raise ValueError("no wrong item type for %r" % (item_types,))
    if kind in ("empty_array", "empty_array_ok"):
        return ptr, replace_at(args, ptr, [])
    raise ValueError(kind)


# --------------------------------------------------------------------------


# How often each kind is picked among the mutations that apply to some
# tool: uniform, except that 100 KB strings are kept rare so that they do
# not make up most of the corpus's bytes (and of the benchmark's time).
WEIGHTS = {"long_string": 0.25, "long_string_over_max": 0.25}


def static_kinds(s, out=None):
    """The mutation kinds some arguments of schema s can take."""
    out = set() if out is None else out
    if not isinstance(s, dict):
        return out
    types = schema_types(s)
    if types:
        out.add("type_flip")
        if "null" not in types:
            out.add("null")
    if s.get("additionalProperties") is False:
        out.add("extra_key")
    if s.get("required"):
        out.add("drop_required")
    if types and ("number" in types or "integer" in types):
        if "minimum" in s or "exclusiveMinimum" in s:
            out.add("below_minimum")
        if "maximum" in s or "exclusiveMaximum" in s:
            out.add("above_maximum")
        if "minimum" in s:
            out.add("at_minimum")
        if "maximum" in s:
            out.add("at_maximum")
    if isinstance(s.get("enum"), list) and all(isinstance(e, str) for e in s["enum"]):
        out.add("enum_near_miss")
    if types and "string" in types and not any(k in s for k in ("enum", "const", "pattern", "format")):
        out.add("long_string_over_max" if "maxLength" in s else "long_string")
    if types and "array" in types:
        out.add("empty_array" if s.get("minItems", 0) >= 1 else "empty_array_ok")
        if isinstance(s.get("items"), dict) and schema_types(s["items"]):
            out.add("wrong_item_type")
    for sub in s.get("properties", {}).values():
        static_kinds(sub, out)
    if isinstance(s.get("items"), dict):
        static_kinds(s["items"], out)
    return out


def pick(r, kinds):
    total = sum(WEIGHTS.get(k, 1.0) for k in kinds)
    x = r.random() * total
    for k in kinds:
        x -= WEIGHTS.get(k, 1.0)
        if x < 0:
            return k
    return kinds[-1]


def generate(tools, schemas, seed, count, invalid_share, edge_share):
    r = random.Random(seed)
    keys = [key for key, _ in tools]
    tools_for = {}
    for key in keys:
        for kind in sorted(static_kinds(schemas[key])):
            tools_for.setdefault(kind, []).append(key)
    invalid = [k for k in INVALID_KINDS if k in tools_for]
    edge = [k for k in VALID_KINDS if k in tools_for]
    for _ in range(count):
        label, expect = None, True
        k = r.random()
        kind = None
        if k < invalid_share and invalid:
            kind = pick(r, invalid)
        elif invalid_share <= k < invalid_share + edge_share and edge:
            kind = pick(r, edge)
        key = r.choice(tools_for[kind] if kind else keys)
        schema = schemas[key]
        args = gen(r, schema)
        if kind:
            # optional keys may be absent: draw again until the kind applies
            for _ in range(1000):
                cands = candidates(args, schema)
                if kind in cands:
                    break
                args = gen(r, schema)
            else:
                raise RuntimeError("mutation %s never applies to %s" % (kind, key))
            inner = [c for c in cands[kind] if c[0]]  # the arguments object itself only 1 time in 10
            site = r.choice(inner) if inner and r.random() >= 0.1 else r.choice(cands[kind])
            where, args = apply(r, kind, site, args)
            label, expect = kind + ":" + pointer(where), kind in VALID_KINDS
        ascii_only = r.random() < gc.ASCII_ESCAPED_SHARE
        indent = 2 if r.random() < PRETTY_SHARE else None
        yield {"tool": key, "arguments": gc.emit(args, ascii_only, indent), "expect": expect, "mutation": label}


def stats(lines):
    n = valid = 0
    kinds = {}
    sizes = []
    for line in lines:
        if not line.strip():
            continue
        c = json.loads(line)
        n += 1
        valid += c["expect"]
        sizes.append(len(c["arguments"].encode("utf-8")))
        kind = (c["mutation"] or "none").split(":")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    sizes.sort()
    print("calls=%d expect_valid=%d expect_invalid=%d total_bytes=%d median_bytes=%d max_bytes=%d" % (
        n, valid, n - valid, sum(sizes), sizes[len(sizes) // 2] if sizes else 0, sizes[-1] if sizes else 0))
    print(" ".join("%s=%d" % kv for kv in sorted(kinds.items())))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--invalid-share", type=float, default=0.25)
    ap.add_argument("--edge-share", type=float, default=0.08)
    ap.add_argument("--registries", default=DEFAULT_REGISTRIES, help="folder holding mcp-*.json")
    ap.add_argument("--schemas-out", help="file to write the tool -> closed-world schema JSON object to")
    ap.add_argument("--stats", action="store_true", help="summarize a calls file read from stdin")
    ap.add_argument("--native", action="store_true",
                    help="write toolgate's native call lines {server, name, arguments} (the arguments "
                         "text spliced in as it is, its line ends made spaces) instead")
    a = ap.parse_args()
    if a.stats:
        stats(sys.stdin)
        return
    if not a.schemas_out:
        ap.error("--schemas-out is required")
    if not 0 <= a.invalid_share + a.edge_share <= 1:
        ap.error("--invalid-share + --edge-share must be within 0..1")
    tools = load_registries(a.registries)
    schemas = {key: close_world(s, key) for key, s in tools}
    with open(a.schemas_out, "w", encoding="utf-8") as f:
        json.dump(schemas, f, ensure_ascii=False, indent=1)
        f.write("\n")
    out = sys.stdout.buffer
    for call in generate(tools, schemas, a.seed, a.count, a.invalid_share, a.edge_share):
        if a.native:
            # what `toolgate check` reads; a peer reads the same lines
            server, name = call["tool"].split("/", 1)
            args = call["arguments"].replace("\n", " ").replace("\r", " ")
            line = '{"server":%s,"name":%s,"arguments":%s}' % (
                json.dumps(server, ensure_ascii=False), json.dumps(name, ensure_ascii=False), args)
            out.write(line.encode("utf-8") + b"\n")
        else:
            out.write(json.dumps(call, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")


if __name__ == "__main__":
    main()
