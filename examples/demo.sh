#!/bin/sh
# make demo: toolgate's main job on the shipped examples.
# Run from the repository root by `make demo` (which builds first).
set -u
tg="$LUA bin/toolgate"

echo "== RFC 8785 canonical form and XXH3-128 of each example document"
for f in examples/documents/*.json; do
  echo "-- $f"
  $tg canon "$f"
  echo "   hash $($tg canon --hash "$f")"
done

echo
echo "== one call per line: two spellings of one call hash alike; the duplicate key is refused"
$tg canon --lines --hash examples/documents/calls.jsonl
echo "(exit status $? : 1 means some line was refused, as line 3 must be)"
