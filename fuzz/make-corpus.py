#!/usr/bin/env python3
"""Builds the fuzzers' seed corpora (fuzz/corpus/<target>/) from the
repository's test data: example documents and calls (and the SDKs' call
shapes of spec/data/calls/sdk.jsonl), the registries' tool
schemas (spec/data/registries, examples/registries), argument objects of
simulated plans (examples/seed-demo/generate.py), and a few hand-written
inputs for what the data does not show (each call format against
fuzz_call.c's registry, escapes, limits).

    python3 fuzz/make-corpus.py      # rewrites fuzz/corpus/ (commit the result)

Each seed is a small file named by a hash of its bytes, so re-running the
script changes nothing unless the data changed.  Python 3 stdlib only.
"""

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")
MAX_SEED = 4096  # bytes; libFuzzer's default max_len


def rel(*p):
    return os.path.join(ROOT, *p)


def lines(path):
    with open(path, "rb") as f:
        return [l.rstrip(b"\n") for l in f if l.strip()]


def dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode()


def tool_schemas(doc):
    """(name, input schema, output schema) of every tool in a registry file,
    whatever its format."""
    if isinstance(doc, dict):
        if "result" in doc:
            doc = doc["result"]
        tools = doc.get("tools", [])
    else:
        tools = doc
    for t in tools:
        if not isinstance(t, dict):
            continue
        fn = t.get("function") if isinstance(t.get("function"), dict) else t
        name = fn.get("name")
        inp = fn.get("parameters", fn.get("input_schema", fn.get("inputSchema")))
        out = fn.get("output_schema", fn.get("outputSchema"))
        yield name, inp, out


def registries():
    files = sorted(glob.glob(rel("spec/data/registries/*.json")))
    files += sorted(glob.glob(rel("examples/registries/mcp-*.json")))
    for f in files:
        with open(f, encoding="utf-8") as fh:
            yield f, json.load(fh)


def write(target, seeds):
    d = os.path.join(OUT, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    kept = 0
    for s in seeds:
        if len(s) > MAX_SEED:
            continue
        name = hashlib.sha1(s).hexdigest()[:16]
        with open(os.path.join(d, name), "wb") as f:
            f.write(s)
        kept += 1
    print(f"{target}: {kept} seeds", file=sys.stderr)


def json_seeds():
    seeds = []
    for f in sorted(glob.glob(rel("examples/documents/*.json"))):
        with open(f, "rb") as fh:
            seeds.append(fh.read())
    seeds += lines(rel("examples/documents/calls.jsonl"))
    for f in sorted(glob.glob(rel("examples/calls/*.json*"))):
        seeds += lines(f) if f.endswith(".jsonl") else [open(f, "rb").read()]
    for f in sorted(glob.glob(rel("spec/data/registries/*.json"))):
        with open(f, "rb") as fh:
            seeds.append(fh.read())
    # the number table's literals, a few to a document
    nums = []
    for l in lines(rel("spec/data/numbers.tsv")):
        if l.startswith(b"#"):
            continue
        lit = l.split(b"\t")[0]
        if not lit.startswith(b"0x"):
            nums.append(lit)
    for i in range(0, len(nums), 8):
        seeds.append(b"[" + b",".join(nums[i:i + 8]) + b"]")
    # the exact-number table's literals (a double cannot hold most of them)
    nums = [l.split(b"\t")[0] for l in lines(rel("spec/data/exact_numbers.tsv")) if not l.startswith(b"#")]
    for i in range(0, len(nums), 40):
        seeds.append(b"[" + b",".join(nums[i:i + 40]) + b"]")
    seeds += [
        b'{"a":"\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\\\/","\xc3\xa9":[true,false,null]}',
        b'{"\\ud800\\udc00":1,"\xef\xac\xb3":2,"\xf0\x9f\x98\x80":3}',
        b'[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
        b'[-0,0.0,1e21,1e-7,123456789012345678901234567890,5e-324,1.7976931348623157e308]',
        b'{"a":1,"a":2}', b'"\\udc00"', b'[1,]', b' \t\r\n{} ', b'"\x7f\xc2\x80"',
        # escapes the canonical form keeps as they are (JSON.stringify's),
        # and near misses: an uppercase \u001F, a long form with a short one
        b'["a\\nb\\"c\\u001fd\\\\e\\b\\f\\r\\t",{"k\\n":"\\u0000x"}]',
        b'["a\\n\\u001F","b\\t\\u000a","c\\r\\/","d\\n\\u00e9"]',
    ]
    # containers that repeat (what classify shares): whole samples, their
    # arguments, repeats deeper than the first copy, near misses
    arg = b'{"path":"/tmp/a\\u00e9","limit":10,"tags":["x","y"],"n":{"k":[1,2.50,-0]}}'
    seeds += [
        b'{"samples":[' + b",".join([b'{"arguments":' + arg + b',"result":"r' + bytes([48 + i % 2]) + b'"}'
                                     for i in range(5)]) + b"]}",
        b"[" + arg + b",[" + arg + b"],[[" + arg + b"]]," + arg + b"]",
        b"[" + arg + b"," + arg[:-2] + b"3}}," + arg + b"]",
        b'[{"a":"0123456789abcdef0123456789abcdef"},{"a":"0123456789abcdef0123456789abcdef"},'
        b'{"a":"0123456789abcdef0123456789abcdef","a":1}]',
    ]
    return seeds


def schema_seeds():
    seeds = []
    for _, doc in registries():
        for _, inp, out in tool_schemas(doc):
            for s in (inp, out):
                if isinstance(s, (dict, bool)):
                    seeds.append(dumps(s))
    seeds += [
        b'{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}',
        b'{"patternProperties":{"^x-":{"type":"string","pattern":"\\\\p{Letter}+$"}},"propertyNames":{"maxLength":8}}',
        b'{"anyOf":[{"properties":{"a":{}}},{"properties":{"b":{}}}],"not":{"required":["c"]}}',
        b'{"oneOf":[{"type":"integer","multipleOf":0.01},{"type":"string","format":"date-time"}]}',
        b'{"items":[{"type":"string"}],"additionalItems":false,"definitions":{"x":true}}',
        b'{"type":["array","null"],"prefixItems":[{"const":1}],"items":{"enum":[1,"a",null]},"uniqueItems":true}',
        b'{"dependentRequired":{"a":["b"]},"minProperties":1,"maxProperties":3,"required":["a"]}',
        b'{"type":"string","pattern":"^(a+)+$","minLength":1,"maxLength":64}',
        b'{"type":"number","minimum":-1e308,"exclusiveMaximum":1e308,"multipleOf":1e-300}',
        b'{"properties":{"a":{"format":"uri-reference"},"b":{"format":"idn-hostname"}}}',
        b'{"if":{"type":"string"}}', b'{"$ref":"#"}', b'false', b'true', b'{}',
    ]
    return seeds


# a call for each tool of mcp-*.json that the example calls name, and its arguments
def call_pairs():
    tools = {}
    for _, doc in registries():
        for name, inp, _ in tool_schemas(doc):
            if isinstance(inp, (dict, bool)):
                tools.setdefault(name, inp)
    pairs = []
    for f in sorted(glob.glob(rel("examples/calls/*.jsonl"))) + [rel("examples/documents/calls.jsonl")]:
        for l in lines(f):
            try:
                c = json.loads(l)
            except ValueError:
                continue
            name, args = c.get("name"), c.get("arguments", c.get("input"))
            if "params" in c:
                name, args = c["params"].get("name"), c["params"].get("arguments")
            if "function" in c:
                name = c["function"].get("name")
                try:
                    args = json.loads(c["function"].get("arguments", ""))
                except ValueError:
                    args = None
            if name in tools and isinstance(args, dict):
                pairs.append((tools[name], args))
    return tools, pairs


def validate_seeds():
    tools, pairs = call_pairs()
    seeds = [dumps(s) + b"\0" + dumps(a) for s, a in pairs]
    for name, s in sorted(tools.items(), key=lambda kv: str(kv[0])):
        seeds.append(dumps(s) + b"\0{}")
    seeds += [s + b"\0" + i for s, i in [
        (b'{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}', b'{"a":1.0}'),
        (b'{"type":"object","properties":{"a":{"type":"integer"}}}', b'{"a":1,"b":2}'),
        (b'{"type":"string","pattern":"^(a+)+$"}', b'"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"'),
        (b'{"type":"array","uniqueItems":true}', b'[1,1.0,{"a":1},{"a":1.0}]'),
        (b'{"type":"string","format":"email"}', b'"a@b.example"'),
        (b'{"properties":{"h":{"format":"hostname"},"n":{"format":"int32"},"f":{"format":"float"},'
         b'"r":{"format":"regex"},"d":{"format":"duration"},"t":{"format":"uri-template"}}}',
         b'{"h":"a.example; curl evil|sh","n":2147483648,"f":3.5e38,"r":"(?<n>a)\\k<n>","d":"P1Y2M",'
         b'"t":"{+p}"}'),
        (b'{"items":{"format":"int64"}}', b'[9223372036854775807,9223372036854775808,-9.2e18,1e20]'),
        (b'{"type":"number","multipleOf":0.01}', b'19.99'),
        (b'{"$defs":{"t":{"type":"array","items":{"$ref":"#/$defs/t"}}},"$ref":"#/$defs/t"}', b'[[[[]]],[]]'),
        # closed world through unions (issue #10): what a branch that did not match declares
        (b'{"oneOf":[{"properties":{"action":{"const":"read"},"path":{}},"required":["action"]},'
         b'{"properties":{"action":{"const":"delete"},"recursive":{"type":"boolean"}}}]}',
         b'{"action":"read","path":"/etc/shadow","recursive":"--no-preserve-root"}'),
        (b'{"allOf":[{"properties":{"a":{}}},{"patternProperties":{"^x-":{"type":"string"}}}],'
         b'"anyOf":[{"additionalProperties":{"type":"integer"}},{"required":["a"]}]}', b'{"a":1,"x-b":"v","c":2}'),
        (b'{"maximum":100,"uniqueItems":true,"prefixItems":[{}],"additionalItems":false}',
         b'[100.00000000000000001,100,1e2]'),
    ]]
    return seeds


# fuzz_call.c's registry: fs/read, fs/write, web/read, web/fetch, mem/create, noargs, open
def call_seeds():
    seeds = []
    for f in sorted(glob.glob(rel("examples/calls/*.jsonl"))) + [rel("examples/documents/calls.jsonl")]:
        seeds += lines(f)
    args = [
        ("fs", "read", {"path": "/srv/a.txt", "head": 3, "encoding": "utf-8"}),
        ("fs", "write", {"path": "/a", "content": "x", "mode": "append"}),
        ("web", "fetch", {"url": "https://example.com/", "headers": {"Accept": "text/html"}, "retries": 1.5}),
        ("mem", "create", {"entities": [{"name": "Ada", "entityType": "person", "tags": ["a", "b"]}],
                           "when": "2026-11-05T09:00:00Z", "id": 7, "note": "n", "x-flag": True}),
        (None, "noargs", {}), (None, "open", {"anything": [1, 2]}), (None, "read", {"path": "/a"}),
    ]
    for server, name, a in args:
        native = {"name": name, "arguments": a}
        if server:
            native["server"] = server
        seeds.append(dumps(native))
        seeds.append(dumps({"type": "function", "id": "call_1", "function": {"name": name, "arguments": json.dumps(a)}}))
        seeds.append(dumps({"type": "tool_use", "id": "toolu_1", "name": name, "input": a}))
        seeds.append(dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": a}}))
    seeds += [b'{"name":"read"}', b'{"type":"function","function":{"name":"read","arguments":"{\\"path\\":1"}}',
              b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"read","arguments":[]}}']
    seeds += envelope_seeds(args)
    # the SDK fixtures: every shape as the SDKs' types make it, and its
    # hostile variants
    seeds += lines(rel("spec/data/calls/sdk.jsonl"))
    return seeds


def envelope_seeds(args):
    """The shapes that hold several calls, and the lines refused for the
    members of two formats or for calls toolgate cannot gate."""
    (s1, n1, a1), (s2, n2, a2) = args[0], args[2]
    chat_call = lambda i, n, a: {"id": "call_%d" % i, "type": "function",
                                 "function": {"name": n, "arguments": json.dumps(a)}}
    message = {"role": "assistant", "content": None, "refusal": None,
               "tool_calls": [chat_call(1, n1, a1), chat_call(2, n2, a2)]}
    item = lambda i, n, a, ns: dict({"type": "function_call", "id": "fc_%d" % i, "call_id": "call_%d" % i,
                                     "name": n, "arguments": json.dumps(a), "status": "completed"},
                                    **({"namespace": ns} if ns else {}))
    block = lambda i, n, a: {"type": "tool_use", "id": "toolu_%d" % i, "name": n, "input": a,
                             "caller": {"type": "direct"}}
    request = lambda i, n, a: {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                               "params": {"name": n, "arguments": a}}
    shapes = [
        {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
         "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None, "message": message}]},
        message,
        {"role": "assistant", "content": "no call", "refusal": None},
        message["tool_calls"],
        {"id": "resp_1", "object": "response", "status": "completed",
         "output": [{"type": "reasoning", "id": "rs_1", "summary": []}, item(1, n1, a1, s1),
                    {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
                    item(2, n2, a2, s2)]},
        item(3, n1, a1, None),
        {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
         "content": [{"type": "text", "text": "t"}, block(1, n1, a1), block(2, n2, a2)],
         "stop_reason": "tool_use", "stop_sequence": None},
        [request(1, n1, a1), request(2, n2, a2)],
        # refused: two formats, unknown shapes, calls the provider runs
        dict(chat_call(1, n1, a1), **request(1, n2, a2)),
        dict(block(1, n1, a1), arguments=a2),
        {"name": n1, "args": a1, "type": "tool_call", "id": "x"},
        {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": n1, "server_name": "s", "input": a1},
        {"type": "message", "role": "assistant",
         "content": [{"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}]},
        {"object": "response", "output": [{"type": "web_search_call", "id": "ws", "status": "completed"}]},
        {"object": "chat.completion.chunk", "choices": []},
        [chat_call(1, n1, a1), request(2, n2, a2)],
        # read by two explicit formats (so never under auto)
        {"object": "chat.completion", "choices": [], "type": "message", "content": []},
    ]
    return [dumps(v) for v in shapes]


def classify_seeds():
    seeds = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, rel("examples/seed-demo/generate.py"), "--plans", "40",
                        "--out", tmp], check=True, stdout=subprocess.DEVNULL)
        for l in lines(os.path.join(tmp, "plans.jsonl")):
            plan = json.loads(l)
            # the first 8 samples: enough to agree or not, small seeds
            seeds.append(b"\0".join(dumps(s["arguments"]) for s in plan["samples"][:8]))
    seeds += [b"\0".join(dumps(a) for a in group) for group in [
        [{"path": "/tmp//a/", "team": " Ops "}, {"path": "/tmp/a", "team": "ops"}, {"path": "/tmp/b", "team": "OPS"}],
        [{"account": "acct-1", "tags": ["A", "b"]}, {"account": " alice", "tags": ["a", "B"]}, {"account": "bob"}],
        [{"entities": [{"name": " Alice"}, {"name": "x"}]}, {"entities": [{"name": "acct-1"}]}, [1, 2], {"0": 1}],
        [{"a/b": {"~": "X"}}, {"a/b": {"~": "x"}}, {"q": {"path": " /a/../b "}}, {"q": {"path": "/b"}}],
    ]]
    # numbers a double rounds together: different arguments all the same
    seeds.append(b"\0".join([b'{"limit":12345678901234567890}', b'{"limit":12345678901234567891}',
                              b'{"limit":1.2345678901234567890e19}', b'{"limit":9007199254740993}',
                              b'{"limit":9007199254740992,"tags":[1e-400,0.1000000000000000000001]}']))
    # whole plans, which the target also classifies as they are
    same = {"path": "/a", "limit": 5}
    single = lambda samples, **kw: dict({"plan_id": "p", "tool": {"server": "sb", "name": "lookup"},
                                         "samples": samples}, **kw)
    seeds += [dumps(p) for p in [
        single([{"arguments": same, "result": 1, "epoch": "e"}] * 3),
        single([{"arguments": same, "result": i, "epoch": "e"} for i in range(4)], epoch_fixed=True),
        single([{"arguments": {"path": "/a/%d" % i}, "result": 1, "epoch": i % 2} for i in range(5)]),
        single([{"arguments": {"limit": "x"}, "result": 1}, {"arguments": same}, {"arguments": same}]),
        single([{"arguments": same, "epoch": "e"}] * 3, tool={"server": "sb", "name": "lookup",
                                                            "deterministic": True, "verified": True}),
        {"plan_id": 7, "samples": [{"epoch": "e", "calls": [{"server": "sb", "name": "lookup", "arguments": same},
                                                            {"name": "lookup"}], "results": [1, {"a": [2]}]}] * 3},
        {"plan_id": True, "samples": [{"calls": [{"server": "sb", "name": "nope", "arguments": {}}]}] * 2},
        {"samples": [], "tool": {"name": "lookup"}},
    ]]
    seeds += [b'{"samples":[1]}', b'{"tool":{"name":"lookup"},"samples":[{"result":1}]}', b'[]']
    return seeds


# fuzz_mcp.c's server "fs": read, write, noargs.  Client messages as the
# gateways meet them: tools/call with good, bad and missing parts, the id
# forms (string, integers at the bound, fractions, null), other methods,
# answers, notifications, batches.
def mcp_seeds():
    def msg(**m):
        return dumps(dict({"jsonrpc": "2.0"}, **m))

    def call(id_, params):
        return msg(id=id_, method="tools/call", params=params)

    seeds = [
        call(1, {"name": "read", "arguments": {"path": "/a", "head": 3}}),
        call("x", {"name": "read", "arguments": {"path": "a"}}),
        call(2, {"name": "write", "arguments": {"path": "/a", "content": "c" * 70}}),
        call(3, {"name": "noargs"}),
        call(4, {"name": "nope", "arguments": {}}),
        call(5, {"name": "read", "arguments": "not an object"}),
        call(6, {"arguments": {"path": "/a"}}),
        call(7, {"name": 7}),
        call(8, [1]),
        call(None, {"name": "read", "arguments": {"path": "/a"}}),
        call(1.5, {"name": "read", "arguments": {"path": "/a"}}),
        call(9007199254740991, {"name": "read", "arguments": {"path": "/a"}}),
        call(-9007199254740992, {"name": "read", "arguments": {"path": "/a"}}),
        call("\u00e9\n", {"name": "r\"e\u0000ad", "arguments": {"path": "/\u00e9", "n": 9007199254740993}}),
        msg(id=1, method="tools/list", params={"cursor": "c"}),
        msg(id=1, method="ping"),
        msg(method="notifications/initialized"),
        msg(id=3, method=7),
        msg(id="a", result={"content": []}),
        msg(id=None, error={"code": -32700, "message": "parse error"}),
        dumps([{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read"}}]),
    ]
    seeds += [b'{"id":1e2,"method":"tools/call","params":{"name":"read","arguments":{"path":"/a"}}}',
              b'{"id":1.0,"method":"tools/call","params":{"name":"read","arguments":{"path":1e400}}}',
              b'{"id":1,"method":"tools/call","params":{"name":"read"', b'[]', b'7']
    return seeds


def lines_seeds():
    """Programs for fuzz_lines.c: a byte of settings (threads, chunk cuts),
    then one byte a line.  Quarantines fall at chosen points of a long run
    of plans that read the same tools, so the threads' merge meets them in
    every piece, in the rest of a chunk classified again, and in its
    second round; calls programs too."""
    def op(tool, kind):
        # the first count of samples (bits 5, 6) that makes the byte
        # neither a line of junk nor a blank line
        return next(b for b in (tool | kind << 2 | s << 5 for s in (2, 1, 3, 0)) if b % 23 and b % 31 != 1)

    agree = [op(t, 0) for t in (0, 1, 3, 2)]
    seeds = []
    n = 160
    # where (a fraction of the way) which tool is quarantined; the last
    # two: in the second round, a plan classified again on the caller's
    # thread quarantines t3, which a later piece (of 3 or 4) read
    quarantines = ([(0.05, 0)], [(0.3, 0), (0.55, 1)], [(0.52, 0), (0.8, 1)], [(0.26, 0), (0.27, 1)],
                   [(0.75, 0), (0.76, 1)], [(0.05, 0), (0.375, 1), (0.625, 3)],
                   [(0.05, 0), (0.32, 1), (0.53, 3)])
    for threads in (0, 1, 2):  # 2, 3, 4 threads
        for cuts in (0, 0b011011, 0b000010):
            for at in quarantines:
                prog = [agree[i % 4] for i in range(n)]
                for i in range(7, n, 29):
                    prog[i] = op(3, 4)  # arguments disagree
                for where, tool in at:
                    prog[int(where * n)] = op(tool, 3)  # results disagree: quarantined
                prog[n // 3] = 0  # a line of junk
                prog[n // 3 + 1] = 1  # a blank line
                seeds.append(bytes([threads | cuts << 2] + prog))
    calls = [op(t, k) for k in range(4) for t in range(4)]
    seeds.append(bytes([0xC1] + [calls[i % len(calls)] for i in range(n)] + [0, 1]))
    seeds.append(bytes([0xFE] + [calls[(i * 7) % len(calls)] for i in range(n)]))
    return seeds


# Registry images (fuzz_image.c), compiled by `toolgate registry compile`
# (the build's Lua 5.4 module) from the small registries, one and two to
# an image; a registry that does not load under the default policy is left out.
def image_seeds():
    small = [f for f, _ in registries() if os.path.getsize(f) < MAX_SEED // 2]
    sets = [[f] for f in small] + [[small[i], small[i + 1]] for i in range(0, len(small) - 1, 3)]
    seeds = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "seed.tgimg")
        for files in sets:
            args = ["lua5.4", rel("bin/toolgate"), "registry", "compile", "--output", out]
            args += ["s%d=%s" % (i, os.path.relpath(f, ROOT)) for i, f in enumerate(files)]
            done = subprocess.run(args, cwd=ROOT, capture_output=True)
            if done.returncode == 0:
                with open(out, "rb") as f:
                    seeds.append(f.read())
    return seeds


def main():
    write("fuzz_json", json_seeds())
    write("fuzz_schema_compile", schema_seeds())
    write("fuzz_schema_validate", validate_seeds())
    write("fuzz_call", call_seeds())
    write("fuzz_classify", classify_seeds())
    write("fuzz_mcp", mcp_seeds())
    write("fuzz_lines", lines_seeds())
    write("fuzz_image", image_seeds())


if __name__ == "__main__":
    main()
