"""locked.py: drives a stdio MCP command (toolgate mcp-proxy) while another
connection holds the SQLite state locked, and times its answers.

  python3 locked.py DB LINES_JSON WAIT_SECONDS -- COMMAND [ARGS...]

Starts COMMAND, initializes it (initialize, notifications/initialized),
then takes BEGIN EXCLUSIVE on the SQLite file DB from a connection of its
own, writes each line of LINES_JSON (a JSON array of strings) and reads
answers for WAIT_SECONDS at most (or until every line with an id has one).
Then it rolls back, closes the command's input and prints one JSON line:
{"answers": [{"id", "ms", "message"}...], "status"}, ms counted from the
writing of the lines.  Python's standard library only.
"""

import json
import os
import select
import sqlite3
import subprocess
import sys
import time

db, lines, wait = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3])
command = sys.argv[sys.argv.index("--") + 1:]
child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
buf = b""


def read_message(deadline):
    global buf
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([child.stdout], [], [], left)[0]:
            return None
        chunk = os.read(child.stdout.fileno(), 65536)
        if not chunk:
            return None
        buf += chunk
    line, buf = buf.split(b"\n", 1)
    return json.loads(line)


def send(text):
    child.stdin.write(text.encode() + b"\n")
    child.stdin.flush()


send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "locked", "version": "1"}}}))
init = read_message(time.monotonic() + 30)
assert init and init.get("id") == 1, init
send('{"jsonrpc":"2.0","method":"notifications/initialized"}')

lock = sqlite3.connect(db, isolation_level=None, timeout=0)
lock.execute("BEGIN EXCLUSIVE")
t0 = time.monotonic()
want = sum(1 for text in lines if "id" in json.loads(text))
for text in lines:
    send(text)
answers = []
deadline = t0 + wait
while len(answers) < want:
    m = read_message(deadline)
    if m is None:
        break
    answers.append({"id": m.get("id"), "ms": round((time.monotonic() - t0) * 1000),
                    "message": m.get("error", {}).get("message") if "error" in m else None,
                    "code": m.get("error", {}).get("code") if "error" in m else None})
lock.execute("ROLLBACK")
lock.close()
child.stdin.close()
try:
    status = child.wait(30)
except subprocess.TimeoutExpired:
    child.kill()
    status = child.wait()
print(json.dumps({"answers": answers, "status": status}))
