#!/bin/sh
# bench/registry_file.sh COUNT: the path of a registry of COUNT generated MCP
# tools (bench/gen_tools.py --seed 1, server "gen"), written to
# bench/out/registry/ once and kept while bench/gen_tools.py stays the same.
# One seed for every count, so each registry is the start of the larger ones.
# bench/registry_file.sh tool: the tool the benches call, in all of them:
# the first read-only one with no required argument (so {} is valid).
set -eu
dir=$PWD/bench/out/registry
mkdir -p "$dir"
registry() {
  stamp=$(cksum <bench/gen_tools.py | cut -d' ' -f1)
  f="$dir/tools-$1.json"
  if [ ! -f "$f" ] || [ "$(cat "$f.stamp" 2>/dev/null)" != "$stamp" ]; then
    python3 bench/gen_tools.py --seed 1 --count "$1" >"$f.tmp"
    mv "$f.tmp" "$f"
    echo "$stamp" >"$f.stamp"
  fi
  echo "$f"
}
if [ "$1" = tool ]; then
  python3 -c '
import json, sys
for t in json.load(open(sys.argv[1]))["tools"]:
    if "required" not in t["inputSchema"] and t.get("annotations", {}).get("readOnlyHint"):
        print(t["name"])
        break' "$(registry 1000)"
else
  registry "$1"
fi
