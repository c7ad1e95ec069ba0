-- toolgate canon: RFC 8785 canonical form of JSON documents.
local cli = require "toolgate.cli"
local toolgate = require "toolgate"

local M = {}

M.usage = [[
usage: toolgate canon [--lines] [--hash] [FILE]

Writes the RFC 8785 (JCS) canonical form of the JSON document in FILE (or
standard input) and a newline.  With --hash, writes instead the XXH3-128
hash of the canonical form as 32 lowercase hex digits.

  --lines   one document per line (JSON Lines): one output line per input
            line; blank lines are skipped; a bad line is reported on standard
            error with its line number and the others go on
  --hash    print the XXH3-128 hex digest of the canonical form

Input is read strictly (RFC 8259): duplicate keys, invalid UTF-8, lone
surrogate escapes, NaN/Infinity, leading zeros, control characters in strings
and trailing data are errors, as are documents beyond the limits
(1 MiB, depth 64, ...; see docs/limits.md).  Numbers are IEEE 754 doubles: integers
beyond 2^53 are rounded, as RFC 8785 requires.

exit status: 0 all documents done, 1 some document was malformed,
2 bad usage or unreadable input
]]

function M.run(args)
  local opts, pos = cli.parse(args, { flags = { lines = true, hash = true } })
  if #pos > 1 then cli.usage_error("at most one FILE") end
  local transform = opts.hash and toolgate.hash or toolgate.canon

  if not opts.lines then
    local data, name = cli.read_all("canon", pos[1])
    if not data then return cli.EXIT_USAGE end
    local out, err, code, offset = transform(data)
    if not out then
      cli.diag("canon", name .. ": " .. cli.describe(err, code, offset))
      return cli.EXIT_FAILED
    end
    cli.out(out, "\n")
    return cli.EXIT_OK
  end

  -- the core reads the input and canonicalizes every complete line of a
  -- piece in one call, writing the output itself
  local engine = toolgate.codec().engine
  local failed = cli.read_lines("canon", pos[1], engine, function(reader, want, line)
    return engine:canon_reader(reader, want, opts.hash, line, 1)
  end)
  if not failed then return cli.EXIT_USAGE end
  return failed > 0 and cli.EXIT_FAILED or cli.EXIT_OK
end

return M
