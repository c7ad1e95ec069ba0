#!/usr/bin/env python3
"""Deterministic generator of realistic LLM tool-call argument objects.

Writes one compact JSON object per line on stdout; every line is between
MIN_BYTES and MAX_BYTES bytes of UTF-8 (newline excluded).

    python3 bench/gen_corpus.py [--seed 1] [--count 3000] > bench/out/corpus.jsonl
    python3 bench/gen_corpus.py --stats < bench/out/corpus.jsonl   # size summary

Python standard library only.  The same --seed and --count always give the
same bytes (the generator uses only random.Random(seed), never the clock,
hash randomisation or dict/set iteration over unordered data).

The module is also imported by gen_plans.py and gen_calls.py: TOOLS maps a
tool name to its argument generator, and emit() is the serializer.

What the corpus exercises (all of it valid JSON, valid UTF-8, no lone
surrogates, no number that overflows a double):
  * file paths (POSIX and Windows, with backslashes), URLs with query strings
    and percent-escapes, SQL-ish queries, shell/code snippets;
  * free text in several scripts: accents, Cyrillic, Greek, Arabic, CJK, a CJK
    extension-B (astral) ideograph, emoji incl. ZWJ sequences, skin tones and
    flags, mathematical alphanumerics (astral), U+2028/U+2029;
  * escapes \\n \\t \\" \\\\ and the C0 controls U+0000..U+001F, plus U+007F;
  * IDs (UUIDs, prefixed ids, snowflake ids), nested objects 2..5 levels deep,
    arrays of objects;
  * numbers: small and negative ints, ints above 2**53 written exactly as
    source text (12345678901234567890, 2**53+1, 2**64-1, -2**63), short
    decimals (19.99, 0.25, -122.4194), full-precision doubles
    (random.random(), 0.1+0.2), exponents (1e-7, 1.5e+300, 5e-324), and some
    non-canonical spellings an LLM writes (1.0, 2.50, 1E3, 1e-07, -0.0,
    100e-2) -- RFC 8785 output differs from the source text for these;
  * keys in deliberately unsorted (insertion or shuffled) order, non-ASCII
    keys, and key pairs whose UTF-16 order differs from their code-point
    order (e.g. U+FF61.. versus astral emoji keys), which JCS sorts by
    UTF-16 code units.
About 15% of the documents are written with ensure_ascii (\\u00e9 and
surrogate-pair escapes like \\ud83d\\ude80 in the source text).
"""

import argparse
import json
import random
import string
import sys
import uuid

MIN_BYTES = 100
MAX_BYTES = 4096
ASCII_ESCAPED_SHARE = 0.15


# --------------------------------------------------------------------------
# serializer


class RawNum:
    """A number whose JSON source text is written verbatim (e.g. "1e-7", "1.0")."""

    __slots__ = ("text",)

    def __init__(self, text):
        json.loads(text)  # must be a valid JSON number
        self.text = text

    def __repr__(self):
        return "RawNum(%r)" % self.text


def emit(value, ascii_only=False, indent=None):
    """JSON text: like json.dumps(value, ensure_ascii=ascii_only,
    separators=(",", ":")), or with indent like json.dumps(..., indent=indent),
    but RawNum values are written verbatim and dict keys keep their
    insertion order."""
    out = []
    _emit(value, ascii_only, indent, 0, out)
    return "".join(out)


def _emit(v, a, indent, level, out):
    if isinstance(v, RawNum):
        out.append(v.text)
    elif v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, int):
        out.append(int.__repr__(v))
    elif isinstance(v, float):
        out.append(json.dumps(v))  # float.__repr__, rejects nan/inf
    elif isinstance(v, str):
        out.append(json.dumps(v, ensure_ascii=a))
    elif isinstance(v, (list, tuple, dict)):
        is_dict = isinstance(v, dict)
        o, c = ("{", "}") if is_dict else ("[", "]")
        if not v:
            out.append(o + c)
            return
        pad = "\n" + " " * (indent * (level + 1)) if indent else ""
        out.append(o)
        for i, x in enumerate(v.items() if is_dict else v):
            if i:
                out.append(",")
            out.append(pad)
            if is_dict:
                k, x = x
                out.append(json.dumps(k, ensure_ascii=a))
                out.append(": " if indent else ":")
            _emit(x, a, indent, level + 1, out)
        if indent:
            out.append("\n" + " " * (indent * level))
        out.append(c)
    else:
        raise TypeError("cannot emit %r" % (v,))


def plain(value):
    """The same value with RawNum replaced by the Python number it denotes
    (what json.loads(emit(value)) returns)."""
    return json.loads(emit(value))


# --------------------------------------------------------------------------
# vocabulary

EN = ("the config file for the staging cluster was updated yesterday and the "
      "deploy failed because the health check timed out after thirty seconds "
      "please summarize the open issues assigned to me and draft a reply to "
      "the customer about their refund request order shipped invoice quarterly "
      "report revenue churn latency p99 budget owner review approve merge "
      "rollback incident postmortem meeting agenda notes").split()
FR = "réunion déplacée à jeudi café crème élève garçon où l'équipe a déjà vérifié le déploiement façade".split()
DE = "Größe prüfen Übersicht Straße Äpfel über Bestätigung Fehlermeldung schließen Grüße".split()
ES = "señal añadir pingüino canción mañana información está aquí ¿dónde? ¡listo!".split()
RU = "привет мир отчёт за квартал проверьте конфигурацию сервера пожалуйста".split()
EL = "καλημέρα κόσμε αναφορά διακομιστής".split()
AR = "مرحبا بالعالم تقرير الربع".split()
JA = ["会議は木曜日に変更されました", "設定ファイルを確認してください", "東京", "ありがとうございます", "ｶﾀｶﾅ半角", "。"]
ZH = ["请检查配置文件", "北京市朝阳区", "数据库连接超时", "用户", "订单已发货", "，"]
KO = ["안녕하세요", "회의록", "서울특별시", "확인 부탁드립니다"]
ASTRAL = ["🚀", "👍🏽", "🇫🇷", "🇯🇵", "👩‍💻", "👨‍👩‍👧‍👦", "🎉", "✅", "❤️", "🔥", "😀", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝟘𝟙𝟚", "𠜎", "𝄞", "🧪"]
CONTROLS = ["\n", "\t", "\r\n", "\"", "\\", "\x00", "\x01", "\x07", "\x08", "\x0b", "\x0c", "\x1b[31m",
            "\x1f", "\x7f", "\u2028", "\u2029", "\u00a0", "\u200b", "\ufeff"]
FIRST = ["Ana", "Björn", "Chloé", "Dmitri", "Émile", "Fatima", "Güneş", "Hiroshi", "Ingrid", "José",
         "Kwame", "Léa", "Mei", "Nikolai", "Øyvind", "Priya", "Zoë", "李", "Søren", "Tomás"]
LAST = ["Smith", "García", "Müller", "Nguyen", "O'Brien", "Kowalski", "Dubois", "Tanaka", "Ivanova",
        "Jensen", "Łukasiewicz", "Núñez", "van der Berg", "张", "Ólafsson"]
DOMAINS = ["example.com", "api.example.org", "intranet.corp.example", "files.example.net",
           "例え.jp", "bücher.example", "localhost:8080", "10.0.0.12:9200"]
DIRS = ["src", "lib", "docs", "config", "tests", "var", "log", "home", "alice", "projects", "toolgate",
        "build", "node_modules", "Documents", "Téléchargements", "資料", ".cache", "my project"]
EXTS = [".py", ".json", ".md", ".yaml", ".c", ".lua", ".csv", ".log", ".txt", ".toml", ".sql", ""]
TABLES = ["users", "orders", "invoices", "events", "line_items", "audit_log", "sessions", "products"]
COLUMNS = ["id", "email", "created_at", "status", "amount_cents", "country", "user_id", "total", "name"]
CURRENCIES = ["USD", "EUR", "JPY", "GBP", "CHF", "BRL", "INR"]
LANGS = ["en", "fr", "de", "es", "ja", "zh", "ko", "ru", "pt-BR"]
TRAP_KEYS = [  # UTF-16 order != code-point order for the last two groups
    "a", "B", "é", "z", "€", "名前", "ключ", "clé", "Ω", "ｶ", "｡", "\U0001f511", "\U0001f600", "\U00010000",
    "\ue000", "\ufb01", "", " ", "1", "10", "9", "_id", "$ref", "\u00e9", "e\u0301",
]


def _words(r, pool, lo, hi, sep=" "):
    return sep.join(r.choice(pool) for _ in range(r.randint(lo, hi)))


def text(r, lo=3, hi=25, spice=0.5):
    """Free text, mostly English, mixed with other scripts, emoji, escapes."""
    parts = [_words(r, EN, lo, hi)]
    if r.random() < spice:
        for _ in range(r.randint(1, 3)):
            k = r.random()
            if k < 0.18:
                parts.append(_words(r, FR, 2, 6))
            elif k < 0.28:
                parts.append(_words(r, DE, 2, 5))
            elif k < 0.36:
                parts.append(_words(r, ES, 2, 5))
            elif k < 0.44:
                parts.append(_words(r, RU, 2, 5))
            elif k < 0.48:
                parts.append(_words(r, EL, 1, 3))
            elif k < 0.52:
                parts.append(_words(r, AR, 1, 3))
            elif k < 0.64:
                parts.append(_words(r, JA, 1, 3, sep=""))
            elif k < 0.74:
                parts.append(_words(r, ZH, 1, 3, sep=""))
            elif k < 0.78:
                parts.append(_words(r, KO, 1, 2))
            else:
                parts.append("".join(r.choice(ASTRAL) for _ in range(r.randint(1, 3))))
    if r.random() < spice * 0.6:
        for _ in range(r.randint(1, 3)):
            i = r.randrange(len(parts) + 1)
            parts.insert(i, r.choice(CONTROLS))
    s = " ".join(parts)
    if r.random() < 0.3:
        s = s[:1].upper() + s[1:] + r.choice([".", "!", "?", "…", " 🙂", ":\n- item one\n- item two"])
    return s


def person(r):
    return "%s %s" % (r.choice(FIRST), r.choice(LAST))


def email(r):
    name = r.choice(["alice", "bob", "carol", "dave", "eve", "mallory", "trent", "peggy", "josé", "li.wei"])
    return "%s%s@%s" % (name, r.choice(["", "+bench", ".%d" % r.randint(1, 99)]),
                        r.choice(["example.com", "corp.example", "mail.example.org"]))


def uid(r):
    return str(uuid.UUID(int=r.getrandbits(128), version=4))


def prefixed_id(r, prefix):
    return prefix + "_" + "".join(r.choice(string.ascii_letters + string.digits) for _ in range(r.randint(10, 24)))


def path(r):
    k = r.random()
    segs = [r.choice(DIRS) for _ in range(r.randint(1, 5))]
    name = r.choice(["main", "index", "README", "config", "report-2024-Q3", "données", "报告", "notes v2",
                     "setup", "schema"]) + r.choice(EXTS)
    if k < 0.15:
        return "C:\\Users\\" + r.choice(FIRST) + "\\" + "\\".join(segs) + "\\" + name
    if k < 0.3:
        return "./" + "/".join(segs) + "/" + name
    if k < 0.4:
        return "~/" + "/".join(segs) + "/" + name
    return "/" + "/".join(segs) + "/" + name


def url(r):
    scheme = r.choice(["https", "https", "https", "http"])
    host = r.choice(DOMAINS)
    p = "/".join(r.choice(["v1", "v2", "api", "users", "search", "items", "repos", "toolgate", "issues",
                           "%E2%9C%93", "caf%C3%A9", "files"]) for _ in range(r.randint(1, 4)))
    u = "%s://%s/%s" % (scheme, host, p)
    if r.random() < 0.6:
        q = "&".join("%s=%s" % (r.choice(["q", "page", "per_page", "sort", "lang", "filter", "cursor"]),
                                r.choice(["1", "50", "desc", "ja", "status%3Aopen", "a+b", uid(r)[:8], "ü"]))
                     for _ in range(r.randint(1, 4)))
        u += "?" + q
    if r.random() < 0.1:
        u += "#section-" + str(r.randint(1, 9))
    return u


def sql(r):
    t = r.choice(TABLES)
    cols = r.sample(COLUMNS, r.randint(1, 4))
    k = r.random()
    if k < 0.5:
        q = "SELECT %s FROM %s WHERE %s = $1" % (", ".join(cols), t, r.choice(COLUMNS))
        if r.random() < 0.5:
            q += " AND created_at >= '2024-01-01' AND name ILIKE '%%%s%%'" % r.choice(["café", "o''brien", "李"])
        q += " ORDER BY %s %s LIMIT %d" % (r.choice(COLUMNS), r.choice(["ASC", "DESC"]), r.choice([10, 50, 100]))
    elif k < 0.7:
        q = "UPDATE %s SET status = 'archived', note = $2 WHERE id IN (%s)" % (
            t, ", ".join(str(r.randint(1, 10 ** 6)) for _ in range(r.randint(1, 6))))
    elif k < 0.85:
        q = ("SELECT country, count(*) AS n,\n       sum(amount_cents) / 100.0 AS total\n"
             "FROM %s\nGROUP BY country\nHAVING count(*) > %d\n-- \"quoted\" comment\n" % (t, r.randint(1, 100)))
    else:
        q = "INSERT INTO %s (%s) VALUES (%s) RETURNING id" % (
            t, ", ".join(cols), ", ".join("$%d" % (i + 1) for i in range(len(cols))))
    return q


def iso_time(r):
    return "2024-%02d-%02dT%02d:%02d:%02d%s" % (
        r.randint(1, 12), r.randint(1, 28), r.randint(0, 23), r.randint(0, 59), r.randint(0, 59),
        r.choice(["Z", "+02:00", "-07:00", ".123Z", "+05:30"]))


BIG_INTS = [12345678901234567890, 2 ** 53 + 1, 2 ** 64 - 1, -(2 ** 63), 9007199254740993,
            98765432109876543210987, 2 ** 53, 1234567890123456789]
DOUBLE_SPELLINGS = ["1e-7", "1e-07", "1.5e+300", "1E3", "2.5e+3", "1.0", "2.50", "100.0", "-0.0", "-0",
                    "100e-2", "0.000001", "1e21", "1e20", "5e-324", "1.7976931348623157e+308",
                    "0.30000000000000004", "123456789012345680000", "-1.25E-5", "3.0e0"]


def number(r, kind=None):
    """A JSON number (int, float, or RawNum with a chosen source spelling)."""
    k = r.random() if kind is None else kind
    if k < 0.22:
        return r.randint(0, 100)
    if k < 0.3:
        return -r.randint(1, 10 ** r.randint(1, 9))
    if k < 0.38:
        return r.randint(10 ** 6, 2 ** 53 - 1)
    if k < 0.46:
        return r.choice(BIG_INTS)
    if k < 0.6:
        return r.choice([19.99, 0.25, -122.4194, 37.7749, 0.5, 99.95, -0.75, 3.14, 1.1, 2.675])
    if k < 0.72:
        return r.random()
    if k < 0.76:
        return r.choice([0.1 + 0.2, 1 / 3, 2 / 3, 1e-7, 1.5e+300, 6.02214076e23, -2.2250738585072014e-308])
    if k < 0.82:
        return r.uniform(-1e6, 1e6)
    if k < 0.9:
        return round(r.uniform(-1000, 1000), r.randint(1, 4))
    return RawNum(r.choice(DOUBLE_SPELLINGS))


def scalar(r):
    k = r.random()
    if k < 0.3:
        return text(r, 1, 6, 0.3)
    if k < 0.55:
        return number(r)
    if k < 0.65:
        return r.choice([True, False])
    if k < 0.72:
        return None
    if k < 0.8:
        return uid(r)
    if k < 0.88:
        return url(r)
    return path(r)


def key(r):
    k = r.random()
    if k < 0.15:
        return r.choice(TRAP_KEYS)
    if k < 0.25:
        return r.choice(["clé", "名前", "ключ", "größe", "prix_€", "emoji_🔑", "données", "説明", "año"])
    return r.choice(["name", "value", "type", "id", "items", "config", "options", "meta", "data", "status",
                     "enabled", "count", "tags", "owner", "created_at", "version", "limits", "path",
                     "labels", "source", "target", "rules", "x", "y", "zone", "priority", "weight"])


def nested(r, depth):
    """An object nested exactly `depth` levels (depth>=1)."""
    obj = {}
    for _ in range(r.randint(1, 4)):
        obj[key(r)] = scalar(r)
    if depth > 1:
        if r.random() < 0.3:
            obj[key(r)] = [nested(r, depth - 1) for _ in range(r.randint(1, 2))]
        else:
            obj[key(r)] = nested(r, depth - 1)
    return shuffled(r, obj, 0.4)


def shuffled(r, obj, p):
    if r.random() >= p:
        return obj
    items = list(obj.items())
    r.shuffle(items)
    return dict(items)


# --------------------------------------------------------------------------
# tool argument generators (insertion order is the "natural" unsorted order)


def a_read_file(r):
    d = {"path": path(r)}
    if r.random() < 0.5:
        d["encoding"] = r.choice(["utf-8", "latin-1", "utf-16"])
    if r.random() < 0.5:
        d["offset"] = r.choice([0, r.randint(1, 10 ** 6)])
        d["limit"] = r.randint(1, 10 ** 6)
    if r.random() < 0.3:
        d["follow_symlinks"] = r.choice([True, False])
    if r.random() < 0.4:
        d["reason"] = text(r, 4, 14)
    return shuffled(r, d, 0.3)


def a_http_request(r):
    d = {"url": url(r), "method": r.choice(["GET", "GET", "POST", "PUT", "PATCH", "DELETE"])}
    if r.random() < 0.7:
        h = {"Accept": "application/json", "User-Agent": "toolgate-agent/0.1"}
        if r.random() < 0.5:
            h["Authorization"] = "Bearer " + prefixed_id(r, "tok")
        if r.random() < 0.3:
            h["X-Request-Id"] = uid(r)
        if r.random() < 0.2:
            h["Accept-Language"] = "fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5"
        d["headers"] = shuffled(r, h, 0.5)
    if d["method"] in ("POST", "PUT", "PATCH"):
        d["body"] = nested(r, r.randint(2, 5))
    if r.random() < 0.5:
        d["timeout_ms"] = r.choice([1000, 5000, 30000, r.randint(100, 120000)])
    if r.random() < 0.3:
        d["retry"] = {"max": r.randint(0, 5), "backoff": r.choice([0.5, 1.5, 2.0, 0.25])}
    return shuffled(r, d, 0.3)


def a_sql_query(r):
    d = {"database": r.choice(["analytics", "prod_replica", "billing", "crm"]), "query": sql(r)}
    if r.random() < 0.7:
        d["params"] = [r.choice([email(r), r.randint(1, 10 ** 6), None, True, 19.99, "café", number(r)])
                       for _ in range(r.randint(1, 5))]
    if r.random() < 0.5:
        d["limit"] = r.choice([10, 100, 1000])
    if r.random() < 0.5:
        d["read_only"] = r.random() < 0.8
    return shuffled(r, d, 0.3)


def a_send_message(r):
    d = {"channel": r.choice(["#general", "#incidents", "#random", "@" + r.choice(FIRST).lower(), "#販売"]),
         "text": text(r, 5, 60, 0.8)}
    if r.random() < 0.3:
        d["thread_ts"] = "%d.%06d" % (r.randint(1700000000, 1800000000), r.randint(0, 999999))
    if r.random() < 0.4:
        d["mentions"] = [email(r) for _ in range(r.randint(1, 4))]
    if r.random() < 0.3:
        d["attachments"] = [shuffled(r, {"title": text(r, 1, 5, 0.4), "url": url(r),
                                         "size_bytes": r.randint(0, 10 ** 9)}, 0.5)
                            for _ in range(r.randint(1, 3))]
    return shuffled(r, d, 0.3)


def a_create_issue(r):
    d = {"repo": r.choice(["acme/toolgate", "acme/web", "データ/解析", "ops/infra"]),
         "title": text(r, 3, 10, 0.4),
         "body": "\n\n".join(text(r, 10, 60, 0.6) for _ in range(r.choice([1, 1, 2, 3, 5, 8])))}
    if r.random() < 0.7:
        d["labels"] = r.sample(["bug", "enhancement", "p1", "p2", "needs-triage", "docs", "🚀 release", "régression"],
                               r.randint(1, 4))
    if r.random() < 0.5:
        d["assignees"] = [r.choice(["alice", "bob", "carol", "dmitri"]) for _ in range(r.randint(1, 2))]
    if r.random() < 0.6:
        d["priority"] = r.choice(["low", "medium", "high", "critical"])
    if r.random() < 0.4:
        d["estimate_hours"] = r.choice([0.5, 1, 2.5, 8, 13.25])
    if r.random() < 0.5:
        d["metadata"] = nested(r, r.randint(2, 5))
    return shuffled(r, d, 0.3)


def a_geo_search(r):
    d = {"query": r.choice(["coffee near me", "café ouvert", "ラーメン", "pharmacy 24h", "北京烤鸭", "Späti"]),
         "location": {"lat": r.choice([37.7749, 48.8566, 35.6762, round(r.uniform(-90, 90), 6)]),
                      "lon": r.choice([-122.4194, 2.3522, 139.6503, round(r.uniform(-180, 180), 6)])}}
    if r.random() < 0.7:
        d["radius_km"] = r.choice([0.5, 1, 2.5, 10, r.random() * 50])
    if r.random() < 0.5:
        d["filters"] = shuffled(r, {"open_now": r.choice([True, False]), "min_rating": r.choice([3.5, 4, 4.5]),
                                    "price_level": r.sample([1, 2, 3, 4], r.randint(1, 3))}, 0.5)
    if r.random() < 0.6:
        d["max_results"] = r.choice([5, 10, 20, 50])
    return shuffled(r, d, 0.4)


def a_create_payment(r):
    d = {"amount": r.choice([19.99, 5, 1299.0, 0.25, 100, 49.5, RawNum("19.990"), RawNum("1.0E2")]),
         "currency": r.choice(CURRENCIES),
         "customer_id": prefixed_id(r, "cus"),
         "idempotency_key": uid(r)}
    if r.random() < 0.5:
        d["ledger_id"] = r.choice([12345678901234567890, 2 ** 63 - 1, 2 ** 53 + 1, r.randint(2 ** 53, 2 ** 64)])
    if r.random() < 0.6:
        d["line_items"] = [shuffled(r, {"sku": prefixed_id(r, "sku"), "qty": r.randint(1, 12),
                                        "unit_price": r.choice([19.99, 0.99, 4.5, 1234.56]),
                                        "discount": r.choice([0, 0.1, 0.25, None])}, 0.5)
                           for _ in range(r.randint(1, 6))]
    if r.random() < 0.6:
        m = {}
        for _ in range(r.randint(1, 5)):
            m[r.choice(["order_ref", "clé", "note", "名前", "source", "ключ", "campaign", "emoji_🔑"] + TRAP_KEYS)] = \
                r.choice([text(r, 1, 5, 0.5), uid(r), str(r.randint(1, 10 ** 9))])
        d["metadata"] = m
    return shuffled(r, d, 0.3)


def a_record_metrics(r):
    d = {"series": [shuffled(r, {"name": r.choice(["latency_ms", "cpu", "mem_bytes", "error_rate", "qps"]),
                                 "value": number(r, r.uniform(0.45, 1.0)),
                                 "timestamp": r.randint(1700000000000, 1800000000000)}, 0.5)
                    for _ in range(r.choice([1, 2, 4, 8, 16, 32]))]}
    if r.random() < 0.6:
        d["tags"] = {"env": r.choice(["prod", "staging"]), "region": r.choice(["eu-west-1", "us-east-1", "ap-東京"])}
    if r.random() < 0.5:
        d["sample_rate"] = r.choice([0.25, 0.1, 1, 0.001, 1e-7])
    return shuffled(r, d, 0.4)


def a_update_record(r):
    d = {"table": r.choice(TABLES),
         "id": r.choice([r.randint(1, 10 ** 6), r.choice(BIG_INTS[:4]), r.randint(2 ** 53, 2 ** 63), uid(r)]),
         "patch": nested(r, r.randint(2, 5))}
    if r.random() < 0.5:
        d["expected_version"] = r.randint(1, 500)
    if r.random() < 0.4:
        d["upsert"] = r.choice([True, False])
    return shuffled(r, d, 0.3)


CODE_SNIPPETS = [
    'print("hello, world")\nfor i in range(3):\n\tprint(i)',
    'import json\nprint(json.dumps({"a": 1, "b": [1, 2, 3]}))',
    'local t = {x = 1, y = "two"}\nfor k, v in pairs(t) do print(k, v) end',
    'console.log(`path: C:\\\\tmp\\\\x`);\nconsole.log("tab\\tend")',
    'SELECT 1;\n-- comment with "quotes" and \'single\'',
    'echo "$HOME" | sed -e \'s/\\//\\\\/g\'\nexit 0',
    'fn main() {\n    println!("{:?}", "日本語");\n}',
    'x = "\\u00e9"\nassert len(x) == 1',
]


def a_run_code(r):
    d = {"language": r.choice(["python", "javascript", "lua", "bash", "sql", "rust"]),
         "code": "\n".join(r.choice(CODE_SNIPPETS) for _ in range(r.choice([1, 2, 3, 5, 8, 13])))}
    if r.random() < 0.5:
        d["timeout_s"] = r.choice([5, 30, 2.5, 60])
    if r.random() < 0.4:
        d["env"] = {"LANG": "C.UTF-8", "TZ": r.choice(["UTC", "Europe/Paris", "Asia/Tokyo"]),
                    "DEBUG": r.choice(["1", "0"])}
    if r.random() < 0.4:
        d["stdin"] = r.choice([None, text(r, 2, 20, 0.8)])
    return shuffled(r, d, 0.3)


def a_calendar_event(r):
    d = {"title": text(r, 2, 8, 0.6), "start": iso_time(r), "end": iso_time(r),
         "attendees": [shuffled(r, {"email": email(r), "name": person(r), "optional": r.choice([True, False])}, 0.4)
                       for _ in range(r.randint(1, 8))]}
    if r.random() < 0.5:
        d["location"] = r.choice([None, "Salle Île-de-France, 3ᵉ étage", "会議室A", "https://meet.example.com/abc-defg"])
    if r.random() < 0.3:
        d["recurrence"] = {"freq": r.choice(["DAILY", "WEEKLY"]), "interval": r.randint(1, 4),
                           "until": iso_time(r), "byday": r.sample(["MO", "TU", "WE", "TH", "FR"], r.randint(1, 3))}
    if r.random() < 0.5:
        d["reminders_min"] = r.sample([0, 5, 10, 15, 30, 60, 1440], r.randint(1, 3))
    return shuffled(r, d, 0.3)


def a_translate_text(r):
    d = {"text": text(r, 5, 50, 0.9), "source_lang": r.choice(LANGS), "target_lang": r.choice(LANGS)}
    if r.random() < 0.5:
        g = {}
        for _ in range(r.randint(1, 6)):
            g[r.choice(["clé", "名前", "ключ", "Größe", "año", "cœur", "東京", "ｶﾅ", "🔑", "naïve", "Ω"])] = \
                r.choice(["key", "name", "size", "year", "heart", "Tokyo", "kana", "emoji key", "naive"])
        d["glossary"] = g
    if r.random() < 0.4:
        d["formality"] = r.choice(["default", "more", "less"])
    return shuffled(r, d, 0.3)


def a_search_docs(r):
    d = {"query": text(r, 1, 8, 0.5),
         "filters": nested(r, r.randint(2, 4)),
         "page": r.randint(1, 20), "per_page": r.choice([10, 25, 50, 100])}
    if r.random() < 0.5:
        d["sort"] = [{"field": r.choice(COLUMNS), "order": r.choice(["asc", "desc"])} for _ in range(r.randint(1, 3))]
    if r.random() < 0.3:
        d["cursor"] = None
    return shuffled(r, d, 0.4)


TOOLS = {
    "read_file": a_read_file,
    "http_request": a_http_request,
    "sql_query": a_sql_query,
    "send_message": a_send_message,
    "create_issue": a_create_issue,
    "geo_search": a_geo_search,
    "create_payment": a_create_payment,
    "record_metrics": a_record_metrics,
    "update_record": a_update_record,
    "run_code": a_run_code,
    "calendar_event": a_calendar_event,
    "translate_text": a_translate_text,
    "search_docs": a_search_docs,
}
TOOL_NAMES = list(TOOLS)  # fixed order, so choices are reproducible


def arguments(r, tool=None, lo=MIN_BYTES, hi=MAX_BYTES, ascii_only=False):
    """(tool_name, args) whose emit() is lo..hi UTF-8 bytes."""
    name = tool or r.choice(TOOL_NAMES)
    for _ in range(50):
        d = TOOLS[name](r)
        size = len(emit(d, ascii_only).encode("utf-8"))
        if size > hi:
            continue
        while size < lo:  # pad realistically: LLMs often add a rationale
            d["reason"] = d.get("reason", "") + text(r, 4, 12, 0.3) + " "
            size = len(emit(d, ascii_only).encode("utf-8"))
        if size <= hi:
            return name, d
    raise RuntimeError("could not generate %s arguments within %d..%d bytes" % (name, lo, hi))


def generate(seed, count):
    r = random.Random(seed)
    for _ in range(count):
        ascii_only = r.random() < ASCII_ESCAPED_SHARE
        _, d = arguments(r, ascii_only=ascii_only)
        yield emit(d, ascii_only)


def stats(sizes):
    s = sorted(sizes)
    n = len(s)

    def pct(p):
        return s[min(n - 1, int(p * n))]
    return ("docs=%d total_bytes=%d min=%d p10=%d median=%d mean=%.0f p90=%d p99=%d max=%d"
            % (n, sum(s), s[0], pct(0.10), s[n // 2], sum(s) / n, pct(0.90), pct(0.99), s[-1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--stats", action="store_true",
                    help="read a corpus on stdin and print its size distribution instead")
    a = ap.parse_args()
    out = sys.stdout.buffer
    if a.stats:
        sizes = [len(line.rstrip(b"\n")) for line in sys.stdin.buffer if line.strip()]
        print(stats(sizes))
        return
    for line in generate(a.seed, a.count):
        b = line.encode("utf-8")
        assert MIN_BYTES <= len(b) <= MAX_BYTES
        out.write(b + b"\n")


if __name__ == "__main__":
    main()
