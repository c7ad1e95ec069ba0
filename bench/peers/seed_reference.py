#!/usr/bin/env python3
"""Independent Python reference of the seed's execution-grounded
self-consistency gate, with the project's decision table.

    python3 bench/peers/seed_reference.py [FILE]            # one verdict line per plan
    python3 bench/peers/seed_reference.py --bench [FILE]    # one timing line
    python3 bench/peers/seed_reference.py --bench --with-parse [FILE]

Input (FILE or stdin): plan-sample lines as written by bench/gen_plans.py:
  {"plan_id":"p1","tool":{"server":"","name":"read_config","deterministic":true,"verified":true},
   "samples":[{"arguments":{...},"result":<any JSON>,"epoch":"e7"}, ...]}
Optional top-level "epoch_fixed": false.  A missing tool.deterministic or
tool.verified counts as false.  Blank lines are skipped.

Output, one line per plan, in input order:
  {"plan_id":..,"verdict":"accept|reject|defer","code":..,"arg_agreement":..,"result_agreement":..,"n":..}
code is null for accept.  The agreements are null when the plan is deferred
before they are computed (INSUFFICIENT_SAMPLES, EPOCH_NOT_FIXED), as in the
seed, which raises before computing them.

Canonicalization is the seed's, on purpose (it is not RFC 8785):
json.dumps(x, sort_keys=True, separators=(",", ":")) of the parsed value
(ensure_ascii on, code-point key order, Python number spelling, so 1 and 1.0
differ and integers above 2**53 keep every digit); results are hashed with
sha256; agreement = (count of the most common key) / n.

--bench: parses every line first, then times only the classification loop
(canonicalize + hash + count + decide, no output) with time.perf_counter,
repeating whole passes until >= 1 s, and prints
  python-seed-reference plans=<n> samples_per_plan=<k> seconds=<s> us_per_plan=<x>
where seconds is the timed total over all passes and us_per_plan is
seconds / (passes * plans) * 1e6.  samples_per_plan is k when every plan has
k samples, else the mean.  --with-parse also times json.loads of each line
inside the loop and labels the line python-seed-reference+parse.
"""

import argparse
import hashlib
import json
import sys
import time

MIN_SAMPLES = 5
ARG_ACCEPT = 0.80
ARG_REJECT = 0.20
RESULT_ACCEPT = 0.80
RESULT_DISAGREE = 0.50
MIN_BENCH_SECONDS = 1.0


# --- the seed, verbatim in substance ---------------------------------------

def _canon_args(args):
    return json.dumps(args, sort_keys=True, separators=(",", ":"))


def _canon_result(result):
    return hashlib.sha256(json.dumps(result, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _agreement(keys):
    n = len(keys)
    return max(keys.count(k) for k in set(keys)) / n


# --- the project's decision table around it --------------------------------

def classify(plan, min_samples=MIN_SAMPLES, arg_accept=ARG_ACCEPT, arg_reject=ARG_REJECT,
             result_accept=RESULT_ACCEPT):
    """(verdict, code, arg_agreement, result_agreement, n) for one parsed plan."""
    tool = plan.get("tool") or {}
    samples = plan.get("samples") or []
    n = len(samples)
    if n < min_samples:
        return "defer", "INSUFFICIENT_SAMPLES", None, None, n
    epochs = [s.get("epoch") for s in samples]
    if plan.get("epoch_fixed", True) is False or any(e != epochs[0] for e in epochs):
        return "defer", "EPOCH_NOT_FIXED", None, None, n

    arg_keys = [_canon_args(s.get("arguments")) for s in samples]
    res_keys = [_canon_result(s.get("result")) for s in samples]
    arg = _agreement(arg_keys)
    res = _agreement(res_keys)
    deterministic = tool.get("deterministic") is True
    verified = tool.get("verified") is True

    if arg < arg_reject:
        if deterministic and verified:
            return "reject", "ARG_DISAGREE", arg, res, n
        return "defer", "DETERMINISM_UNVERIFIED", arg, res, n
    if not deterministic and arg >= arg_accept:
        return "accept", None, arg, res, n  # results of a nondeterministic tool carry no signal
    if arg >= arg_accept and res < RESULT_DISAGREE and deterministic:
        return "defer", "RESULT_DISAGREE", arg, res, n
    if arg >= arg_accept and res < result_accept:
        return "defer", "RESULT_UNSTABLE", arg, res, n
    if arg >= arg_accept and res >= result_accept:
        return "accept", None, arg, res, n
    return "defer", "ARG_UNSTABLE", arg, res, n


def read_lines(path):
    f = open(path, "rb") if path and path != "-" else sys.stdin.buffer
    with f:
        return [line for line in f.read().decode("utf-8").split("\n") if line.strip()]


def bench(lines, with_parse):
    plans = [json.loads(line) for line in lines]
    n = len(plans)
    if n == 0:
        sys.exit("seed_reference: no plans")
    ks = [len(p.get("samples") or []) for p in plans]
    k = ks[0] if all(x == ks[0] for x in ks) else round(sum(ks) / n, 3)
    classify_ = classify
    loads = json.loads
    for p in plans:  # warm-up pass, untimed
        classify_(p)
    passes = 0
    total = 0.0
    sink = 0
    while total < MIN_BENCH_SECONDS:
        if with_parse:
            t0 = time.perf_counter()
            for line in lines:
                sink += classify_(loads(line))[0] == "accept"
            t1 = time.perf_counter()
        else:
            t0 = time.perf_counter()
            for p in plans:
                sink += classify_(p)[0] == "accept"
            t1 = time.perf_counter()
        total += t1 - t0
        passes += 1
    label = "python-seed-reference+parse" if with_parse else "python-seed-reference"
    print("%s plans=%d samples_per_plan=%s seconds=%.6f us_per_plan=%.3f"
          % (label, n, k, total, total / (passes * n) * 1e6))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", nargs="?", default="-")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--with-parse", action="store_true")
    a = ap.parse_args()
    lines = read_lines(a.file)
    if a.bench:
        bench(lines, a.with_parse)
        return
    out = []
    for line in lines:
        plan = json.loads(line)
        v, code, arg, res, n = classify(plan)
        out.append(json.dumps({"plan_id": plan.get("plan_id"), "verdict": v, "code": code,
                               "arg_agreement": arg, "result_agreement": res, "n": n},
                              ensure_ascii=False, separators=(",", ":")))
    sys.stdout.write("\n".join(out) + ("\n" if out else ""))


if __name__ == "__main__":
    main()
