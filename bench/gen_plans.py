#!/usr/bin/env python3
"""Deterministic generator of plan-sample sets for the self-consistency benchmark.

One JSON object per line on stdout:

  {"plan_id":"p1","category":"identical",
   "tool":{"server":"","name":"read_config","deterministic":true,"verified":true},
   "samples":[{"arguments":{...},"result":<any JSON>,"epoch":"e7"}, ...]}

    python3 bench/gen_plans.py [--seed 1] [--count 2000] [--samples 5] \\
        [--registry-out bench/out/plans-registry.json] > bench/out/plans.jsonl

Every plan has exactly --samples samples.  "category" says how the plan was
built (for debugging; consumers may ignore it); a few plans also carry
"epoch_fixed": false.  Categories and their shares:

  identical          30%  all samples equal (arguments and result)
  arg_key_order      12%  same arguments, keys in a different order in each sample
  result_key_order   10%  same arguments, same result payload with keys reordered
  one_arg_off        12%  one sample has one argument value changed (and its own result)
  two_args_off        6%  two samples differ from the rest (at 5 samples: 3/5 agree)
  fabricated         10%  every sample has different arguments
  result_all_differ   6%  identical arguments, every result different
  result_some_differ  6%  identical arguments, 3 of 5 results agree (two differ)
  result_one_off      4%  identical arguments, one result different
  epoch_drift         3%  one sample has a different epoch
  epoch_unfixed       1%  "epoch_fixed": false

Key reordering never changes agreement: the payloads are equal after
canonicalization.  The generator checks every plan so that grouping samples
by the seed's canonical form (json.dumps(sort_keys=True) of the value
json.loads returns) and by RFC 8785 (numbers as IEEE-754 doubles, -0 == 0,
1.0 == 1) gives the same groups, so a JCS-based implementation and the
Python seed reference reach the same verdicts on this corpus.

Note: with 5 samples the lowest possible agreement is 1/5 = 0.20, which is
not < arg_reject (0.20), so fabricated plans defer ARG_UNSTABLE; use
--samples 6 (or more) to reach ARG_DISAGREE / DETERMINISM_UNVERIFIED.
"""

import argparse
import json
import os
import random
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_corpus as gc  # noqa: E402

# (server, name, deterministic, verified, argument generator in gen_corpus.TOOLS, weight)
PLAN_TOOLS = [
    ("", "read_config", True, True, "read_file", 4),
    ("fs", "read_file", True, True, "read_file", 3),
    ("db", "sql_query", True, True, "sql_query", 3),
    ("", "search_docs", True, True, "search_docs", 2),
    ("chat", "send_message", True, True, "send_message", 1),
    ("metrics", "record_metrics", True, True, "record_metrics", 1),
    ("db", "update_record", True, False, "update_record", 2),
    ("billing", "create_payment", True, False, "create_payment", 1),
    ("web", "http_request", False, True, "http_request", 2),
    ("", "translate_text", False, True, "translate_text", 1),
    ("maps", "geo_search", False, False, "geo_search", 1),
    ("exec", "run_code", False, False, "run_code", 1),
]

CATEGORIES = [
    ("identical", 30), ("arg_key_order", 12), ("result_key_order", 10), ("one_arg_off", 12),
    ("two_args_off", 6), ("fabricated", 10), ("result_all_differ", 6), ("result_some_differ", 6),
    ("result_one_off", 4), ("epoch_drift", 3), ("epoch_unfixed", 1),
]


def weighted(r, items):
    total = sum(w for *_, w in items)
    x = r.uniform(0, total)
    for it in items:
        x -= it[-1]
        if x <= 0:
            return it
    return items[-1]


# ---- canonical keys used only for the consistency check -------------------

def seed_key(v):
    """The seed's canonical form of a parsed value."""
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def _jcs_norm(v):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        f = float(v)  # correctly rounded, like a JSON parser producing doubles
        return 0.0 if f == 0 else f
    if isinstance(v, list):
        return [_jcs_norm(x) for x in v]
    return {k: _jcs_norm(x) for k, x in v.items()}


def jcs_key(v):
    """A key equal for two values iff their RFC 8785 forms are equal."""
    return json.dumps(_jcs_norm(v), sort_keys=True, separators=(",", ":"))


def groups(keys):
    first = {}
    return tuple(first.setdefault(k, i) for i, k in enumerate(keys))


# ---- payloads ---------------------------------------------------------------

def result_payload(r, tool):
    k = r.random()
    if k < 0.08:
        return gc.text(r, 2, 20, 0.5)
    if k < 0.12:
        return gc.number(r)
    if k < 0.14:
        return None
    if k < 0.17:
        return r.choice([True, False])
    if k < 0.25:
        return [gc.scalar(r) for _ in range(r.randint(0, 6))]
    if tool in ("read_config", "read_file"):
        d = {"content": gc.text(r, 5, 60, 0.5), "size": r.randint(0, 10 ** 7), "mtime": gc.iso_time(r),
             "sha256": "%064x" % r.getrandbits(256)}
    elif tool in ("sql_query", "update_record"):
        cols = r.sample(gc.COLUMNS, r.randint(1, 4))
        d = {"rows": [{c: gc.scalar(r) for c in cols} for _ in range(r.randint(0, 6))],
             "row_count": r.randint(0, 10 ** 6), "elapsed_ms": round(r.uniform(0.1, 900), 2)}
    elif tool == "http_request":
        d = {"status": r.choice([200, 200, 201, 204, 404, 500]),
             "headers": {"content-type": "application/json", "etag": '"%08x"' % r.getrandbits(32)},
             "body": gc.nested(r, r.randint(2, 4))}
    else:
        d = gc.nested(r, r.randint(2, 5))
    return gc.shuffled(r, d, 0.3)


def reorder(r, v):
    """The same value with object keys (at every level) in a shuffled order."""
    if isinstance(v, dict):
        items = [(k, reorder(r, x)) for k, x in v.items()]
        r.shuffle(items)
        return dict(items)
    if isinstance(v, list):
        return [reorder(r, x) for x in v]
    return v


def reorder_differently(r, v):
    """reorder(), trying to give text that differs from the original."""
    base = gc.emit(v)
    for _ in range(8):
        w = reorder(r, v)
        if gc.emit(w) != base:
            return w
    return w


def leaf_paths(v, prefix=()):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from leaf_paths(x, prefix + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from leaf_paths(x, prefix + (i,))
    else:
        yield prefix


def mutate(r, args):
    """A copy of args with one leaf value changed (a plausible hallucinated value)."""
    a = json.loads(gc.emit(args))  # deep copy, RawNum -> number
    paths = [p for p in leaf_paths(a) if p]
    p = r.choice(paths)
    parent = a
    for step in p[:-1]:
        parent = parent[step]
    old = parent[p[-1]]
    if isinstance(old, str):
        new = r.choice([old + "_v2", old.upper() if old.upper() != old else old + "s", gc.path(r), gc.uid(r)])
    elif isinstance(old, bool):
        new = not old
    elif isinstance(old, (int, float)):
        new = r.choice([old * 10 + 7 if abs(old) < 2 ** 40 else 42, -1, 0.5, "%s" % old])
    else:  # None
        new = r.choice(["default", 0, False])
    parent[p[-1]] = new
    return a


def distinct(r, make, n, avoid=(), key_fns=(seed_key, jcs_key)):
    """n values from make(), pairwise distinct, and distinct from every value
    in avoid, under every key_fn."""
    out, seen = [], [set() for _ in key_fns]
    for v in avoid:
        pv = json.loads(gc.emit(v))
        for f, s in zip(key_fns, seen):
            s.add(f(pv))
    for _ in range(n * 20):
        v = make()
        pv = json.loads(gc.emit(v))
        ks = [f(pv) for f in key_fns]
        if any(k in s for k, s in zip(ks, seen)):
            continue
        for k, s in zip(ks, seen):
            s.add(k)
        out.append(v)
        if len(out) == n:
            return out
    raise RuntimeError("could not draw %d distinct values" % n)


# ---- plans ------------------------------------------------------------------

def build(r, n, plan_no):
    server, name, det, ver, gen, _ = weighted(r, PLAN_TOOLS)
    cat = weighted(r, CATEGORIES)[0]
    epoch = "e%d" % r.randint(1, 40)
    _, args = gc.arguments(r, gen, hi=2048)
    res = result_payload(r, name)
    A = [args] * n
    R = [res] * n
    E = [epoch] * n
    extra = {}
    m = min(2, n - 1)

    if cat == "arg_key_order":
        A = [reorder_differently(r, args) for _ in range(n)]
    elif cat == "result_key_order":
        R = [reorder_differently(r, res) if isinstance(res, (dict, list)) else res for _ in range(n)]
    elif cat == "one_arg_off":
        i = r.randrange(n)
        A = list(A)
        A[i] = mutate(r, args)
        R = list(R)
        R[i] = distinct(r, lambda: result_payload(r, name), 1, [res])[0] if r.random() < 0.7 else res
    elif cat == "two_args_off":
        idx = r.sample(range(n), m)
        A = list(A)
        for i in idx:
            A[i] = mutate(r, args)
        R = list(R)
        for i, x in zip(idx, distinct(r, lambda: result_payload(r, name), m, [res])):
            R[i] = x
    elif cat == "fabricated":
        A = distinct(r, lambda: gc.arguments(r, gen, hi=2048)[1], n)
        R = distinct(r, lambda: result_payload(r, name), n)
    elif cat == "result_all_differ":
        R = distinct(r, lambda: result_payload(r, name), n)
    elif cat == "result_some_differ":
        others = distinct(r, lambda: result_payload(r, name), m, [res])
        R = list(R)
        for j, i in enumerate(r.sample(range(n), m)):
            R[i] = others[j]
    elif cat == "result_one_off":
        R = list(R)
        R[r.randrange(n)] = distinct(r, lambda: result_payload(r, name), 1, [res])[0]
    elif cat == "epoch_drift":
        E = list(E)
        E[r.randrange(n)] = "e%d" % (int(epoch[1:]) + 1)
    elif cat == "epoch_unfixed":
        extra["epoch_fixed"] = False

    plan = {"plan_id": "p%d" % plan_no, "category": cat,
            "tool": {"server": server, "name": name, "deterministic": det, "verified": ver}}
    plan.update(extra)
    plan["samples"] = [{"arguments": a, "result": x, "epoch": e} for a, x, e in zip(A, R, E)]
    line = gc.emit(plan)

    # the seed's grouping and RFC 8785's grouping must agree (see module doc)
    parsed = json.loads(line)["samples"]
    for part in ("arguments", "result"):
        vals = [s[part] for s in parsed]
        if groups(map(seed_key, vals)) != groups(map(jcs_key, vals)):
            return None
    return line


def generate(seed, count, n):
    r = random.Random(seed)
    i = 0
    while i < count:
        line = build(r, n, i + 1)
        if line is not None:
            i += 1
            yield line


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--registry-out", metavar="FILE",
                    help="also write a toolgate registry of the plans' tools (open input schemas, "
                         "the declared determinism as contract), for toolgate classify")
    a = ap.parse_args()
    if a.samples < 1:
        ap.error("--samples must be >= 1")
    if a.registry_out:
        tools = [{"server": server, "name": name, "input_schema": {"type": "object"},
                  "deterministic": det}
                 for server, name, det, _verified, _gen, _w in PLAN_TOOLS]
        with open(a.registry_out, "w", encoding="utf-8") as f:
            json.dump({"toolgate": 1, "tools": tools}, f, indent=1)
            f.write("\n")
    out = sys.stdout.buffer
    for line in generate(a.seed, a.count, a.samples):
        out.write(line.encode("utf-8") + b"\n")


if __name__ == "__main__":
    main()
