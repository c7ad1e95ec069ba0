#!/usr/bin/env python3
"""Deterministic generator of large, realistic MCP tool registries.

    python3 bench/gen_tools.py [--seed 1] [--count 10000] [--server gen] > tools.json
    python3 bench/gen_tools.py --count 10000 --servers 4 --out-dir DIR
    python3 bench/gen_tools.py --stats < tools.json

Python standard library only; the same arguments give the same bytes.

Output: an MCP tools/list result as examples/registries/record-mcp.mjs
records it, {"server": ..., "protocolVersion": ..., "tools": [...]}, compact
JSON, loadable as `--registry FILE` or `--registry SERVER=FILE`.  With
--servers K and --out-dir DIR the tools are dealt round-robin into K files
DIR/<server>-01.json .. DIR/<server>-K.json, servers <server>-01 ..; the
file names are printed one a line.  Tool names are unique across all of
them and never differ only by case or by '-' versus '_' (no collision,
shadowing or confusable findings).

The tools are what a large MCP deployment serves (SaaS connectors, cloud
and database admin, internal APIs), in three sizes, their mix chosen so a
tool averages about 3.9 KB of JSON (the measurements of issue 37):
  small   60%  2-5 flat arguments, a sentence or two of description
  medium  30%  6-14 arguments, a nested object, arrays, a $defs entry
  large   10%  14-28 arguments, objects three deep, several $defs, long
               descriptions, nullable anyOf fields, an outputSchema
Every schema keyword used is one toolgate compiles: type, properties,
required, additionalProperties, items, minItems/maxItems, uniqueItems,
enum, const, pattern (ECMA-262), format (date-time, date, email, uri, uuid,
hostname, ipv4: annotations unless a policy asserts them, and valid when
it does), minimum/maximum, minLength/maxLength, default, examples, anyOf,
oneOf, $defs and $ref.  About a third of the tools (most large ones) have
an outputSchema; most carry MCP annotations (readOnlyHint, destructiveHint,
idempotentHint, openWorldHint) and some a title.

--stats reads a generated file (or several, as arguments) and prints the
tool count, the JSON bytes, bytes per tool and the size mix.
"""
import argparse
import json
import os
import sys

import random

DOMAINS = [
    "github", "gitlab", "jira", "linear", "slack", "teams", "stripe", "shopify", "salesforce", "hubspot",
    "zendesk", "intercom", "notion", "confluence", "gdrive", "dropbox", "s3", "gcs", "k8s", "ecs",
    "postgres", "mysql", "mongo", "redis", "bigquery", "snowflake", "datadog", "pagerduty", "sentry",
    "grafana", "twilio", "sendgrid", "calendar", "gmail", "figma", "asana", "trello", "airtable",
    "okta", "vault", "terraform", "cloudflare", "vercel", "netlify", "docker", "npm", "pypi", "billing",
    "crm", "hr", "payroll", "inventory", "warehouse", "ledger", "catalog", "search", "analytics",
]
VERBS = [
    ("get", "read"), ("list", "read"), ("search", "read"), ("describe", "read"), ("export", "read"),
    ("create", "write"), ("update", "write"), ("patch", "write"), ("upsert", "write"), ("assign", "write"),
    ("archive", "write"), ("restore", "write"), ("sync", "write"), ("import", "write"), ("run", "write"),
    ("delete", "destroy"), ("purge", "destroy"), ("revoke", "destroy"), ("cancel", "destroy"),
]
NOUNS = [
    "issue", "pull_request", "comment", "branch", "release", "channel", "message", "thread", "user",
    "team", "invoice", "customer", "subscription", "payment", "refund", "order", "product", "variant",
    "lead", "contact", "deal", "ticket", "page", "database", "file", "folder", "bucket", "object",
    "pod", "deployment", "service", "secret", "table", "query", "index", "dashboard", "monitor",
    "incident", "alert", "event", "schedule", "webhook", "workflow", "job", "pipeline", "artifact",
    "record", "report", "segment", "campaign", "template", "policy", "role", "token", "zone", "domain",
]
FIELDS = [
    "id", "name", "title", "body", "status", "priority", "owner", "assignee", "labels", "tags", "query",
    "limit", "cursor", "page_size", "sort_by", "order", "since", "until", "created_after", "region",
    "project", "repository", "path", "ref", "email", "url", "currency", "amount", "quantity", "notes",
    "metadata", "filters", "fields", "include_archived", "dry_run", "force", "timeout_seconds", "retries",
    "callback_url", "locale", "timezone", "color", "visibility", "parent_id", "workspace", "namespace",
    "environment", "version", "checksum", "content_type", "encoding", "message", "reason", "scope",
    "attachments", "recipients", "schedule", "window", "threshold", "severity", "source", "target",
]
WORDS = (
    "the a an of to for in on with by from and or that this each every which when only if not "
    "resource record item request response value field account workspace project server client "
    "returns creates updates deletes lists searches matching given specified optional required default "
    "page results cursor token filter sort order limit maximum minimum number string identifier unique "
    "user team owner permission access scope timestamp date time zone format encoded URL address email "
    "status state active archived pending failed completed cancelled draft published visible hidden "
    "must should may be is are will can cannot used use using set sets use set to used when omitted "
    "API endpoint call upstream service rate limited retried idempotent safe destructive irreversible"
).split()
ENUMS = [
    ["open", "closed", "all"], ["asc", "desc"], ["low", "medium", "high", "urgent"],
    ["draft", "active", "archived", "deleted"], ["public", "private", "internal"],
    ["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD"], ["json", "csv", "ndjson", "parquet"],
    ["created", "updated", "name", "relevance"], ["info", "warning", "error", "critical"],
    ["us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1", "ap-northeast-1"],
    ["daily", "weekly", "monthly", "yearly"], ["GET", "POST", "PUT", "PATCH", "DELETE"],
]
PATTERNS = [
    "^[A-Za-z0-9_.-]+$", "^[a-z]{2}-[A-Z]{2}$", "^\\d{4}-\\d{2}-\\d{2}$", "^#[0-9a-fA-F]{6}$",
    "^[A-Z]{3}$", "^(?:[a-z0-9-]+\\.)+[a-z]{2,}$", "^[a-z][a-z0-9-]{2,62}$", "^[0-9a-f]{40}$",
    "^v\\d+\\.\\d+\\.\\d+(?:-[0-9A-Za-z.-]+)?$", "^[A-Z][A-Z0-9]+-\\d+$", "^/(?:[^/\\u0000]+/?)*$",
]
FORMATS = ["date-time", "date", "email", "uri", "uuid", "hostname", "ipv4"]

# (name, weight, arguments, description sentences, nesting depth, $defs, outputSchema share)
SIZES = [
    ("small", 60, (2, 5), (1, 2), 1, (0, 0), 0.15),
    ("medium", 30, (6, 14), (2, 4), 2, (1, 2), 0.40),
    ("large", 10, (14, 28), (4, 8), 3, (2, 5), 0.85),
]


class Gen:
    def __init__(self, rng):
        self.r = rng

    def sentence(self, lo=6, hi=16):
        words = [self.r.choice(WORDS) for _ in range(self.r.randint(lo, hi))]
        return words[0].capitalize() + " " + " ".join(words[1:]) + "."

    def text(self, lo, hi):
        return " ".join(self.sentence() for _ in range(self.r.randint(lo, hi)))

    def leaf(self):
        """A string, number, boolean or string-array argument, described."""
        r = self.r
        k = r.random()
        s = {}
        if k < 0.45:
            s["type"] = "string"
            c = r.random()
            if c < 0.2:
                s["enum"] = list(r.choice(ENUMS))
            elif c < 0.35:
                s["pattern"] = r.choice(PATTERNS)
            elif c < 0.5:
                s["format"] = r.choice(FORMATS)
            else:
                if r.random() < 0.5:
                    s["minLength"] = 1
                if r.random() < 0.5:
                    s["maxLength"] = r.choice([64, 128, 256, 1024, 4096, 65536])
        elif k < 0.65:
            s["type"] = "integer"
            s["minimum"] = r.choice([0, 1])
            if r.random() < 0.7:
                s["maximum"] = r.choice([10, 100, 500, 1000, 10000, 2147483647])
            if r.random() < 0.4:
                s["default"] = s["minimum"] + 1
        elif k < 0.72:
            s["type"] = "number"
            if r.random() < 0.5:
                s["minimum"] = 0
        elif k < 0.85:
            s["type"] = "boolean"
            if r.random() < 0.5:
                s["default"] = r.random() < 0.5
        else:
            s["type"] = "array"
            item = {"type": "string"}
            if r.random() < 0.3:
                item["enum"] = list(r.choice(ENUMS))
            s["items"] = item
            if r.random() < 0.5:
                s["maxItems"] = r.choice([10, 50, 100])
            if r.random() < 0.3:
                s["uniqueItems"] = True
        if r.random() < 0.85:
            s["description"] = self.sentence()
        if r.random() < 0.1 and s["type"] == "string" and "enum" not in s and "format" not in s \
                and "pattern" not in s:
            s["examples"] = ["example-" + str(r.randint(1, 999))]
        return s

    def obj(self, nprops, depth, defs):
        """An object of nprops arguments; deeper ones hold nested objects, arrays of objects and $refs."""
        r = self.r
        props = {}
        names = r.sample(FIELDS, min(nprops, len(FIELDS)))
        for name in names:
            k = r.random()
            if depth > 1 and k < 0.15:
                props[name] = self.obj(r.randint(2, 6), depth - 1, defs)
            elif depth > 1 and k < 0.25:
                props[name] = {"type": "array", "items": self.obj(r.randint(2, 5), depth - 1, defs),
                               "description": self.sentence()}
            elif defs and k < 0.35:
                props[name] = {"$ref": "#/$defs/" + r.choice(defs)}
            elif depth > 1 and k < 0.40:
                props[name] = {"anyOf": [self.leaf(), {"type": "null"}], "description": self.sentence()}
            elif depth > 1 and k < 0.42:
                props[name] = {"oneOf": [{"type": "string", "format": "uuid"},
                                         {"type": "integer", "minimum": 1}], "description": self.sentence()}
            else:
                props[name] = self.leaf()
        req = [n for n in names if r.random() < 0.35]
        s = {"type": "object", "properties": props}
        if req:
            s["required"] = req
        if r.random() < 0.3:
            s["additionalProperties"] = False
        if r.random() < 0.5:
            s["description"] = self.sentence()
        return s

    def tool(self, name, verb_kind, size):
        r = self.r
        _, _, nargs, nsent, depth, ndefs, out_share = size
        defs_schemas = {}
        for i in range(r.randint(*ndefs)):
            defs_schemas["%s_%d" % (r.choice(NOUNS), i)] = self.obj(r.randint(3, 8), 2, [])
        input_schema = self.obj(r.randint(*nargs), depth, sorted(defs_schemas))
        if defs_schemas:
            input_schema["$defs"] = defs_schemas
        t = {"name": name}
        if r.random() < 0.5:
            t["title"] = name.replace("_", " ").title()
        t["description"] = self.text(*nsent)
        t["inputSchema"] = input_schema
        if r.random() < out_share:
            t["outputSchema"] = self.obj(r.randint(2, 3 * depth + 2), depth, [])
        if r.random() < 0.8:
            a = {"readOnlyHint": verb_kind == "read"}
            if verb_kind != "read":
                a["destructiveHint"] = verb_kind == "destroy"
                a["idempotentHint"] = r.random() < 0.5
            a["openWorldHint"] = r.random() < 0.7
            t["annotations"] = a
        return t


def generate(seed, count):
    r = random.Random(seed)
    g = Gen(r)
    weights = [s[1] for s in SIZES]
    seen = set()
    tools = []
    for _ in range(count):
        domain, (verb, kind), noun = r.choice(DOMAINS), r.choice(VERBS), r.choice(NOUNS)
        base = "%s_%s_%s" % (domain, verb, noun)
        name, n = base, 1
        while name in seen:
            n += 1
            name = "%s_%d" % (base, n)
        seen.add(name)
        size = r.choices(SIZES, weights)[0]
        tools.append(g.tool(name, kind, size))
    return tools


def registry_text(server, tools):
    doc = {"server": server, "protocolVersion": "2025-06-18", "tools": tools}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def stats(texts):
    count = nbytes = 0
    for text in texts:
        nbytes += len(text.encode("utf-8"))
        count += len(json.loads(text)["tools"])
    per = nbytes / count if count else 0
    print("tools=%d bytes=%d bytes_per_tool=%.0f" % (count, nbytes, per))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--server", default="gen")
    ap.add_argument("--servers", type=int, default=1)
    ap.add_argument("--out-dir")
    ap.add_argument("--stats", nargs="*")
    a = ap.parse_args()
    if a.stats is not None:
        if a.stats:
            texts = []
            for p in a.stats:
                with open(p, encoding="utf-8") as f:
                    texts.append(f.read())
        else:
            texts = [sys.stdin.read()]
        stats(texts)
        return
    tools = generate(a.seed, a.count)
    if a.servers <= 1 and not a.out_dir:
        sys.stdout.write(registry_text(a.server, tools))
        return
    if not a.out_dir:
        ap.error("--servers K needs --out-dir DIR")
    os.makedirs(a.out_dir, exist_ok=True)
    k = max(1, a.servers)
    for i in range(k):
        server = "%s-%02d" % (a.server, i + 1)
        path = os.path.join(a.out_dir, server + ".json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(registry_text(server, tools[i::k]))
        print(path)


if __name__ == "__main__":
    main()
