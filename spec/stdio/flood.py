"""flood.py: a client that writes N short lines to a stdio MCP command
(toolgate mcp-proxy) and does not read its answers until the command stops
reading; meanwhile it watches the command's memory.

  python3 flood.py N SECONDS -- COMMAND [ARGS...]

Writes N lines "1" (two bytes each, each answered by the proxy itself with
an error), every 1000th instead {"jsonrpc":"2.0","id":K} (answered with an
error of id K, to check the order), from a thread.  The main thread samples
the command's VmHWM (peak resident memory, /proc/PID/status) until the
writer has been blocked for a second (or SECONDS pass), then reads every
answer (SECONDS at most), closes the command's input and prints one JSON
line: {"written_while_blocked", "blocked", "hwm_kb", "answers",
"ids_in_order", "status"}.  Python's standard library only.
"""

import json
import os
import select
import subprocess
import sys
import threading
import time

n, limit = int(sys.argv[1]), float(sys.argv[2])
command = sys.argv[sys.argv.index("--") + 1:]
child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
written = [0]


def writer():
    chunk = []
    try:
        for i in range(1, n + 1):
            chunk.append('{"jsonrpc":"2.0","id":%d}\n' % i if i % 1000 == 0 else "1\n")
            if len(chunk) == 1024 or i == n:
                os.write(child.stdin.fileno(), "".join(chunk).encode())
                written[0] = i
                chunk = []
    except OSError:
        pass


def hwm_kb():
    with open("/proc/%d/status" % child.pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


t = threading.Thread(target=writer, daemon=True)
t.start()
deadline = time.monotonic() + limit
last, still_since, blocked = -1, time.monotonic(), False
while time.monotonic() < deadline and written[0] < n:
    time.sleep(0.1)
    if written[0] != last:
        last, still_since = written[0], time.monotonic()
    elif time.monotonic() - still_since >= 1.0:
        blocked = True
        break
peak = hwm_kb()
written_while_blocked = written[0]

# now read: every answer, in order
answers, ids, buf = 0, [], b""
deadline = time.monotonic() + limit
fd = child.stdout.fileno()
while answers < n and time.monotonic() < deadline:
    if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
        break
    chunk = os.read(fd, 1 << 20)
    if not chunk:
        break
    buf += chunk
    parts = buf.split(b"\n")
    buf = parts.pop()
    for line in parts:
        answers += 1
        m = json.loads(line)
        if m.get("id") is not None:
            ids.append(m["id"])
t.join(5)
child.stdin.close()
try:
    status = child.wait(30)
except subprocess.TimeoutExpired:
    child.kill()
    status = child.wait()
print(json.dumps({"written_while_blocked": written_while_blocked, "blocked": blocked, "hwm_kb": peak,
                  "answers": answers, "ids_in_order": ids == list(range(1000, n + 1, 1000)), "status": status}))
