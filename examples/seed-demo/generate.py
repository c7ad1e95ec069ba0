#!/usr/bin/env python3
"""Simulate the seed's batch: 4,000 plans, each sampled N = 20 times, on 12 tools.

Writes two files into --out:
  registry.json  toolgate's native registry: 12 tools on the server "sandbox";
                 10 declared "deterministic": true, 2 nondeterministic by
                 contract (get_time, random_sample).
  plans.jsonl    one plan-sample set per line, in the single-tool form that
                 `toolgate classify` reads, plus two members toolgate ignores:
                 "label" ("correct" | "fabricated") and "cause", and
                 "tool_labels" (whether the plan's tool really is
                 deterministic): the labeled form `toolgate sweep` reads.

Three of the ten declared-deterministic tools are not deterministic; they
passed their startup probe (two back-to-back calls matched), so their plans
carry "verified": true, as in the seed:
  search_index   concurrent writes: while a segment merge runs, each sample
                 gets the same hits in a different order;
  read_config    a config reload lands mid-batch: earlier samples see the old
                 version, later ones the new, and the samples that race the
                 reload itself get "reload in progress";
  resolve_user   a 60 s TTL cache expires mid-batch (a batch of 20 samples
                 spans about 64 s): earlier samples see the cached record,
                 the few in flight at the expiry each refetch it (their own
                 cached_at), later ones see the refreshed record.
Where in the batch the merge window, the reload and the expiry fall is drawn
from ranges calibrated so that the affected plans' modal share over
(arguments, result) lands at 0.45-0.55, inside the seed's 0.41-0.58.

Fabricated plans (12% of the plans on declared-deterministic tools, about 10%
of the batch): the model invents the identifying argument (a user_id, a path,
an order id, ...).  The most common invented value is shared by 1-4 of the 20
samples (argument agreement 0.05-0.20, the seed's cluster); the rest are
distinct.  Some invented values break the tool's pattern (the rung catches
those when the modal sample is one of them).

Correct plans: every sample carries the same arguments up to spelling (one
or two samples write the keys in another order or 50 as 50.0; RFC 8785 merges
both); 5% have one stray sample that sets an optional argument differently.
Results come from a deterministic model of each tool (same arguments, same
result), except on the three tools above and on the two nondeterministic ones.

Python 3 standard library only; the output depends only on the arguments.
"""

import argparse
import hashlib
import json
import os
import random
import time

SERVER = "sandbox"
BASE_TIME = 1793869200  # 2026-11-05T09:00:00Z, the seed's date of record
SAMPLE_SPACING = 3.2    # seconds between samples of one plan: 20 samples span ~64 s
TTL = 60

# ---------------------------------------------------------------- registry

def obj(props, required=(), **extra):
    s = {"type": "object", "properties": props}
    if required:
        s["required"] = list(required)
    s.update(extra)
    return s


PATH = {"type": "string", "minLength": 1, "maxLength": 512, "pattern": "^/"}

TOOLS = [
    # name, deterministic (declared), description, input schema
    ("read_file", True, "Read a text file from the sandbox filesystem",
     obj({"path": PATH, "encoding": {"enum": ["utf-8", "latin-1"]},
          "max_bytes": {"type": "integer", "minimum": 1, "maximum": 1048576}}, ["path"])),
    ("list_directory", True, "List a directory",
     obj({"path": PATH, "recursive": {"type": "boolean"}}, ["path"])),
    ("get_order", True, "Fetch one order by id",
     obj({"order_id": {"type": "string", "pattern": "^ord_[0-9a-f]{8}$"},
          "include_items": {"type": "boolean"}}, ["order_id"])),
    ("lookup_invoice", True, "Fetch one invoice by number",
     obj({"invoice_id": {"type": "string", "pattern": "^INV-[0-9]{4}-[0-9]{6}$"}}, ["invoice_id"])),
    ("convert_currency", True, "Convert an amount at the epoch's rate table",
     obj({"amount": {"type": "number", "exclusiveMinimum": 0},
          "from": {"enum": ["CHF", "EUR", "USD", "GBP", "JPY"]},
          "to": {"enum": ["CHF", "EUR", "USD", "GBP", "JPY"]}}, ["amount", "from", "to"])),
    ("compute_checksum", True, "Checksum of a file",
     obj({"path": PATH, "algorithm": {"enum": ["sha256", "md5", "crc32"]}}, ["path", "algorithm"])),
    ("describe_table", True, "Columns of a database table",
     obj({"table": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,62}$"},
          "schema": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,62}$"}}, ["table"])),
    ("search_index", True, "Full-text search over a document index",
     obj({"index": {"type": "string", "pattern": "^[a-z][a-z0-9-]{0,62}$"},
          "query": {"type": "string", "minLength": 1, "maxLength": 256},
          "limit": {"type": "integer", "minimum": 1, "maximum": 50}}, ["index", "query"])),
    ("read_config", True, "Read a service configuration file",
     obj({"path": PATH, "section": {"type": "string", "minLength": 1}}, ["path"])),
    ("resolve_user", True, "Resolve a user id to the user's directory record",
     obj({"user_id": {"type": "string", "pattern": "^u[0-9]{6}$"},
          "fields": {"type": "array", "items": {"enum": ["email", "groups", "display_name"]},
                     "uniqueItems": True}}, ["user_id"])),
    ("get_time", False, "The current time in a time zone",
     obj({"timezone": {"type": "string", "pattern": "^[A-Za-z]+(/[A-Za-z_]+)*$"}}, ["timezone"])),
    ("random_sample", False, "A uniform random sample of records from a population",
     obj({"population": {"enum": ["orders", "users", "invoices"]},
          "k": {"type": "integer", "minimum": 1, "maximum": 100}}, ["population", "k"])),
]
DETERMINISTIC = {name for name, det, _, _ in TOOLS if det}
MISDECLARED = {"search_index": "unstable_order", "read_config": "config_reload_race",
               "resolve_user": "ttl_cache_expiry"}


def registry():
    tools = []
    for name, det, desc, schema in TOOLS:
        tools.append({"name": name, "description": desc, "input_schema": schema,
                      "deterministic": det, "risk": "low"})
    return {"toolgate": 1, "server": SERVER, "tools": tools}

# ---------------------------------------------------------------- the world

def h(*parts):
    """A stable pseudo-random integer from the parts (the tools' 'storage')."""
    return int(hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def hexdigest(*parts, n=16):
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:n]


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(t))) + "Z"


SERVICES = ["billing", "ledger", "auth", "mailer", "search", "gateway", "scheduler", "reports"]
WORDS = ["refund", "policy", "invoice", "overdue", "quarterly", "export", "latency", "incident",
         "onboarding", "contract", "renewal", "vendor", "audit", "payroll", "backup", "migration"]
TABLES = ["orders", "order_items", "customers", "invoices", "payments", "refunds", "users", "audit_log"]
INDEXES = ["kb-articles", "tickets", "contracts", "runbooks"]
FIRST = ["Ana", "Ben", "Chloe", "Dario", "Elif", "Femi", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Luca"]
LAST = ["Keller", "Moreau", "Rossi", "Schmid", "Okafor", "Novak", "Lindqvist", "Tanaka", "Brunner"]
GROUPS = ["finance", "ops", "support", "eng", "sales", "legal", "oncall", "admins"]
RATES = {"CHF": 1.0, "EUR": 1.063, "USD": 0.892, "GBP": 1.261, "JPY": 0.00587}


def user_exists(uid):
    return uid.startswith("u00") and h("user", uid) % 10 != 0


def not_found(kind, key, value):
    return {"error": "not_found", "message": "no %s %s" % (kind, value), key: value}


def tool_result(name, args, t):
    """The deterministic model of each tool (its answer in the fixed epoch)."""
    if name == "read_file":
        p = args["path"]
        if h("file", p) % 7 == 0 or "/tmp/" in p or p.endswith(".bak"):
            return {"error": "ENOENT", "path": p}
        size = 200 + h("size", p) % 9000
        cap = args.get("max_bytes")
        return {"path": p, "size": size, "sha256": hexdigest("content", p, n=64),
                "head": "# %s, rev %d" % (os.path.basename(p), h("rev", p) % 40),
                "truncated": bool(cap and cap < size)}
    if name == "list_directory":
        p = args["path"]
        n = 2 + h("dir", p) % 6
        entries = [{"name": "%s_%d.%s" % (WORDS[h("e", p, i) % len(WORDS)], i, "csv" if i % 2 else "json"),
                    "type": "file", "size": 100 + h("es", p, i) % 5000} for i in range(n)]
        if args.get("recursive"):
            entries.append({"name": "archive/", "type": "dir", "entries": 3 + h("ar", p) % 20})
        return {"path": p, "entries": entries}
    if name == "get_order":
        oid = args["order_id"]
        if h("order", oid) % 3 != 0:
            return not_found("order", "order_id", oid)
        r = {"order_id": oid, "status": ["paid", "shipped", "refunded"][h("st", oid) % 3],
             "total": {"amount": (h("amt", oid) % 90000) / 100, "currency": "CHF"}}
        if args.get("include_items"):
            r["items"] = [{"sku": "SKU-%05d" % (h("sku", oid, i) % 99999), "qty": 1 + i}
                          for i in range(1 + h("ni", oid) % 3)]
        return r
    if name == "lookup_invoice":
        iid = args["invoice_id"]
        if h("inv", iid) % 4 == 0:
            return not_found("invoice", "invoice_id", iid)
        return {"invoice_id": iid, "amount_due": (h("due", iid) % 500000) / 100, "currency": "EUR",
                "due_date": "2026-%02d-%02d" % (1 + h("m", iid) % 12, 1 + h("d", iid) % 28),
                "status": ["open", "overdue", "paid"][h("s", iid) % 3]}
    if name == "convert_currency":
        a, f, to = args["amount"], args["from"], args["to"]
        rate = round(RATES[f] / RATES[to], 6)
        return {"amount": round(a * rate, 2), "currency": to, "rate": rate, "rates_as_of": "2026-11-05"}
    if name == "compute_checksum":
        p, alg = args["path"], args["algorithm"]
        if h("file", p) % 7 == 0 or "/tmp/" in p:
            return {"error": "ENOENT", "path": p}
        n = {"sha256": 64, "md5": 32, "crc32": 8}[alg]
        return {"path": p, "algorithm": alg, "digest": hexdigest("content", p, alg, n=n)}
    if name == "describe_table":
        tb, sc = args["table"], args.get("schema", "public")
        if tb not in TABLES:
            return {"error": "undefined_table", "message": 'relation "%s.%s" does not exist' % (sc, tb)}
        return {"table": "%s.%s" % (sc, tb),
                "columns": [{"name": c, "type": ty} for c, ty in
                            [("id", "bigint"), ("created_at", "timestamptz")] +
                            [("%s_%d" % (WORDS[h("c", tb, i) % len(WORDS)], i), ["text", "numeric", "boolean"][h("t", tb, i) % 3])
                             for i in range(2 + h("nc", tb) % 5)]]}
    if name == "search_index":
        ix, q, lim = args["index"], args["query"], args.get("limit", 10)
        if ix not in INDEXES:
            return {"error": "index_not_found", "index": ix}
        n = min(lim, 5 + h("nh", ix, q) % 4)
        return {"index": ix, "total": 20 + h("tot", ix, q) % 300,
                "hits": [{"doc_id": "%s-%05d" % (ix[:3], h("doc", ix, q, i) % 100000),
                          "score": round(12.0 - i * 0.75 - (h("sc", ix, q, i) % 50) / 100, 2)} for i in range(n)]}
    if name == "read_config":
        p = args["path"]
        svc = os.path.basename(p).split(".")[0]
        if svc not in SERVICES:
            return {"error": "ENOENT", "path": p}
        return config_record(p, svc, 17 + h("ver", p) % 30, args.get("section"))
    if name == "resolve_user":
        uid = args["user_id"]
        if not user_exists(uid):
            return not_found("user", "user_id", uid)
        return user_record(uid, 0, t)
    if name == "get_time":
        return {"timezone": args["timezone"], "unix": round(t, 3), "iso": iso(t)}
    raise ValueError(name)


def config_record(path, svc, version, section):
    values = {"timeout_ms": 1000 + 250 * (version % 8), "max_retries": 2 + version % 3,
              "feature_flags": ["%s_v%d" % (svc, version - k) for k in range(2)]}
    r = {"path": path, "version": version, "values": values}
    if section:
        r["section"] = section
    return r


def user_record(uid, refresh, cached_at):
    k = h("user", uid)
    groups = [GROUPS[(k + i) % len(GROUPS)] for i in range(1 + k % 3)]
    if refresh:
        groups = groups + [GROUPS[(k + 5) % len(GROUPS)]]  # a group change the stale entry missed
    return {"user_id": uid, "display_name": "%s %s" % (FIRST[k % len(FIRST)], LAST[k % len(LAST)]),
            "email": "%s.%s@example.org" % (FIRST[k % len(FIRST)].lower(), LAST[k % len(LAST)].lower()),
            "groups": groups, "etag": 'W/"%s"' % hexdigest("etag", uid, refresh, n=8),
            "cached_at": iso(cached_at)}

# ------------------------------------------------------------- arguments

def true_args(rng, name):
    """The arguments a correct plan calls the tool with (its intent)."""
    if name == "read_file":
        a = {"path": "/srv/%s/%s_%d.%s" % (rng.choice(SERVICES), rng.choice(WORDS), rng.randrange(1, 400),
                                           rng.choice(["csv", "json", "md", "log"]))}
        if rng.random() < 0.3:
            a["max_bytes"] = rng.choice([4096, 65536])
        return a
    if name == "list_directory":
        return {"path": "/srv/%s/%s" % (rng.choice(SERVICES), rng.choice(["exports", "inbox", "reports"])),
                "recursive": rng.random() < 0.3}
    if name == "get_order":
        return {"order_id": "ord_%08x" % rng.randrange(16 ** 8), "include_items": rng.random() < 0.5}
    if name == "lookup_invoice":
        return {"invoice_id": "INV-2026-%06d" % rng.randrange(10 ** 6)}
    if name == "convert_currency":
        f, to = rng.sample(list(RATES), 2)
        return {"amount": rng.choice([50, 120, 249.9, 1000, 1830.25, 99]), "from": f, "to": to}
    if name == "compute_checksum":
        return {"path": "/srv/%s/%s_%d.tar" % (rng.choice(SERVICES), rng.choice(WORDS), rng.randrange(1, 400)),
                "algorithm": rng.choice(["sha256", "sha256", "md5", "crc32"])}
    if name == "describe_table":
        a = {"table": rng.choice(TABLES)}
        if rng.random() < 0.4:
            a["schema"] = rng.choice(["public", "billing"])
        return a
    if name == "search_index":
        return {"index": rng.choice(INDEXES), "query": " ".join(rng.sample(WORDS, 2)),
                "limit": rng.choice([5, 8, 10])}
    if name == "read_config":
        a = {"path": "/etc/sandbox/%s.yaml" % rng.choice(SERVICES)}
        if rng.random() < 0.3:
            a["section"] = rng.choice(["limits", "features"])
        return a
    if name == "resolve_user":
        while True:
            uid = "u00%04d" % rng.randrange(10000)
            if user_exists(uid):
                break
        a = {"user_id": uid}
        if rng.random() < 0.3:
            a["fields"] = ["email", "groups"]
        return a
    if name == "get_time":
        return {"timezone": rng.choice(["Europe/Zurich", "UTC", "America/New_York", "Asia/Tokyo"])}
    if name == "random_sample":
        return {"population": rng.choice(["orders", "users", "invoices"]), "k": rng.choice([5, 10, 20])}
    raise ValueError(name)


# the optional argument a stray sample sets differently (None: drop it)
STRAY = {
    "read_file": ("max_bytes", lambda a, rng: 16384),
    "list_directory": ("recursive", lambda a, rng: not a["recursive"]),
    "get_order": ("include_items", lambda a, rng: not a["include_items"]),
    "lookup_invoice": None,
    "convert_currency": None,
    "compute_checksum": ("algorithm", lambda a, rng: "sha256" if a["algorithm"] != "sha256" else "md5"),
    "describe_table": ("schema", lambda a, rng: "public" if a.get("schema") != "public" else "billing"),
    "search_index": ("limit", lambda a, rng: 20),
    "read_config": ("section", lambda a, rng: "limits" if a.get("section") != "limits" else None),
    "resolve_user": ("fields", lambda a, rng: ["email"] if "fields" in a else ["email", "groups", "display_name"]),
}

# the argument a fabricated plan invents, and an invented value (rng) of it;
# bad=True: one that breaks the schema's pattern
FABRICATE = {
    "read_file": ("path", lambda rng, bad: "/srv/%s/%s_%s_final%s" % (rng.choice(SERVICES), rng.choice(WORDS),
                                                                       rng.choice(WORDS), rng.choice([".csv", ".json", ".bak", "_v2.md"]))),
    "list_directory": ("path", lambda rng, bad: ("srv/" if bad else "/srv/") + "%s/%s" % (rng.choice(WORDS), rng.choice(WORDS))),
    "get_order": ("order_id", lambda rng, bad: ("ORD-%d" % rng.randrange(10 ** 6)) if bad else "ord_%08x" % rng.randrange(16 ** 8)),
    "lookup_invoice": ("invoice_id", lambda rng, bad: ("INV-%d" % rng.randrange(10 ** 5)) if bad
                       else "INV-%d-%06d" % (rng.choice([2025, 2026]), rng.randrange(10 ** 6))),
    "convert_currency": ("amount", lambda rng, bad: rng.choice([round(rng.uniform(10, 5000), 2), rng.randrange(10, 5000)])),
    "compute_checksum": ("path", lambda rng, bad: "/tmp/%s-%d.tar" % (rng.choice(WORDS), rng.randrange(1000))),
    "describe_table": ("table", lambda rng, bad: ("%sTable" % rng.choice(WORDS)) if bad
                       else "%s_%s" % (rng.choice(WORDS), rng.choice(["log", "history", "v2", "items"]))),
    "search_index": ("index", lambda rng, bad: "%s-%s" % (rng.choice(WORDS), rng.choice(["idx", "docs", "kb", "archive"]))),
    "read_config": ("path", lambda rng, bad: "/etc/sandbox/%s.%s" % (rng.choice(WORDS), rng.choice(["yaml", "yml", "toml"]))),
    "resolve_user": ("user_id", lambda rng, bad: rng.choice(["%s.%s" % (rng.choice(FIRST).lower(), rng.choice(LAST).lower()),
                                                             "user_%d" % rng.randrange(10 ** 4), "u%05d" % rng.randrange(10 ** 5)])
                     if bad else "u%06d" % rng.randrange(10 ** 6)),
}
PATTERNED = {"list_directory", "get_order", "lookup_invoice", "describe_table", "resolve_user"}

# ------------------------------------------------------------- spelling

def respell(v, rng):
    """The same JSON value spelled differently: keys in another order and
    whole numbers written as floats (50 -> 50.0).  RFC 8785 merges both."""
    if isinstance(v, dict):
        items = list(v.items())
        rng.shuffle(items)
        if len(items) > 1 and [k for k, _ in items] == list(v):
            items.reverse()
        return {k: respell(x, rng) for k, x in items}
    if isinstance(v, list):
        return [respell(x, rng) for x in v]
    if isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    return v

# ------------------------------------------------------------- plans

def fabricated_args(rng, name, n):
    """n invented argument sets: the modal value is shared by m = 1..4 samples."""
    key, invent = FABRICATE[name]
    base = true_args(rng, name)
    m = rng.choices([1, 2, 3, 4], weights=[25, 35, 25, 15])[0]
    bad_rate = 0.25 if name in PATTERNED else 0.0
    values, seen = [], set()

    def fresh():
        while True:
            v = invent(rng, rng.random() < bad_rate)
            if v not in seen and v != base[key]:
                seen.add(v)
                return v
    modal = fresh()
    values += [modal] * m
    # the rest: distinct values, or small groups that stay below m
    while len(values) < n:
        v = fresh()
        values += [v] * min(n - len(values), rng.choice([1, 1, 1, 2]) if m > 2 else 1)
    rng.shuffle(values)
    out = []
    for v in values:
        a = dict(base)
        a[key] = v
        out.append(a)
    return out, key


def drift_results(rng, name, args, n, times):
    """Results of a mis-declared tool for one correct plan: (results, cause)."""
    base = tool_result(name, args, times[0])
    if "error" in base:
        return [base] * n, "stable"
    if name == "search_index":
        if rng.random() < 0.05:
            return [base] * n, "quiet_window"
        # a segment merge covers a run of L consecutive samples; each of them
        # reads the segments in another interleaving: same hits, other order
        length = rng.choice([9, 10, 11])
        start = rng.randrange(0, n - length + 1)
        out = []
        for i in range(n):
            if start <= i < start + length:
                hits = list(base["hits"])
                while hits == base["hits"]:
                    rng.shuffle(hits)
                out.append(dict(base, hits=hits))
            else:
                out.append(base)
        return out, "unstable_order"
    if name == "read_config":
        if rng.random() < 0.08:
            return [base] * n, "quiet_window"
        # a reload lands at sample r; t samples race it
        r, t = rng.choice([8, 9, 10, 11]), rng.choice([1, 2, 3])
        new = config_record(base["path"], os.path.basename(base["path"]).split(".")[0],
                            base["version"] + 1, args.get("section"))
        busy = {"error": "EBUSY", "message": "config reload in progress", "path": base["path"]}
        return [base if i < r else busy if i < r + t else new for i in range(n)], "config_reload_race"
    if name == "resolve_user":
        if rng.random() < 0.08:
            return [base] * n, "quiet_window"
        # the entry was cached at the first sample; it expires 60 s later, at
        # sample e; the h samples in flight then each refetch (own cached_at)
        uid = args["user_id"]
        e, herd = rng.choice([9, 10, 11]), rng.choice([1, 2, 3])
        cached = user_record(uid, 0, times[0])
        out = []
        for i in range(n):
            if i < e:
                out.append(cached)
            elif i < e + herd:
                out.append(user_record(uid, 1, times[i]))
            else:
                out.append(user_record(uid, 1, times[e + herd - 1]))
        return out, "ttl_cache_expiry"
    raise ValueError(name)


def make_plan(rng, idx, name, n, epoch, fabricated_rate):
    t0 = BASE_TIME + idx * 13.0
    times = [t0 + i * SAMPLE_SPACING for i in range(n)]
    det = name in DETERMINISTIC
    label, cause = "correct", "stable"
    if det and rng.random() < fabricated_rate:
        label = "fabricated"
        arglist, key = fabricated_args(rng, name, n)
        cause = "fabricated:/" + key
        results = [tool_result(name, a, times[i]) for i, a in enumerate(arglist)]
    else:
        a = true_args(rng, name)
        arglist = [a] * n
        if name == "random_sample":
            results = [{"population": a["population"],
                        "items": ["%s-%05d" % (a["population"][:3], rng.randrange(10 ** 5)) for _ in range(a["k"])]}
                       for _ in range(n)]
            cause = "nondeterministic_by_contract"
        elif name == "get_time":
            results = [tool_result(name, a, times[i]) for i in range(n)]
            cause = "nondeterministic_by_contract"
        elif name in MISDECLARED:
            results, cause = drift_results(rng, name, a, n, times)
        else:
            results = [tool_result(name, a, times[0])] * n
        # one stray sample setting an optional argument differently
        if det and STRAY.get(name) and rng.random() < 0.05:
            key, alt = STRAY[name]
            i = rng.randrange(n)
            b = dict(a)
            v = alt(a, rng)
            if v is None:
                b.pop(key, None)
            else:
                b[key] = v
            arglist = list(arglist)
            arglist[i] = b
            results = list(results)
            results[i] = tool_result(name, b, times[i]) if name != "resolve_user" else results[i]
            cause += "+stray_sample"
    samples = []
    respelled = set(rng.sample(range(n), rng.choice([0, 1, 1, 2])))
    for i in range(n):
        args, res = arglist[i], results[i]
        if i in respelled:
            args, res = respell(args, rng), respell(res, rng)
        samples.append({"arguments": args, "result": res, "epoch": epoch})
    # the ground truth toolgate sweep reads: the plan's label, and whether
    # its tool really is deterministic (the mis-declared ones are not)
    return {"plan_id": "p%04d" % (idx + 1),
            "tool": {"server": SERVER, "name": name, "deterministic": det, "verified": det},
            "samples": samples, "label": label, "cause": cause,
            "tool_labels": [{"server": SERVER, "name": name,
                             "deterministic": det and name not in MISDECLARED}]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=20261105, help="RNG seed (default 20261105)")
    ap.add_argument("--plans", type=int, default=4000, help="plans in the batch (default 4000)")
    ap.add_argument("--samples", type=int, default=20, help="samples per plan, N (default 20)")
    ap.add_argument("--fabricated-rate", type=float, default=0.12,
                    help="share of plans on declared-deterministic tools whose argument is invented (default 0.12)")
    ap.add_argument("--plans-per-epoch", type=int, default=200,
                    help="plans per sandbox snapshot (epoch); default 200")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"),
                    help="output directory (default: out/ next to this script)")
    a = ap.parse_args()
    # the drifts of the mis-declared tools start at sample 8 to 11 (as in
    # the seed's batch of 20): fewer samples could not show them
    if a.samples < 12:
        ap.error("--samples must be at least 12 (the simulated drifts start at samples 8 to 11)")
    if a.plans < 1 or a.plans_per_epoch < 1:
        ap.error("--plans and --plans-per-epoch must be at least 1")
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "registry.json"), "w") as f:
        json.dump(registry(), f, indent=2)
        f.write("\n")
    names = [t[0] for t in TOOLS]
    with open(os.path.join(a.out, "plans.jsonl"), "w") as f:
        for idx in range(a.plans):
            epoch = "snap-%02d" % (idx // a.plans_per_epoch + 1)
            plan = make_plan(rng, idx, rng.choice(names), a.samples, epoch, a.fabricated_rate)
            f.write(json.dumps(plan, separators=(",", ":"), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
