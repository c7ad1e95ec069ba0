-- toolgate validate: JSON Schema validation of instances.
local cli = require "toolgate.cli"
local core = require "toolgate.core"
local value = require "toolgate.value"

local M = {}

M.usage = [[
usage: toolgate validate --schema FILE [--closed] [--assert-formats]
                        [--annotation-format NAME]... [--lines] [FILE]

Validates the JSON instance in FILE (or standard input) against the schema
and writes {"valid":true|false,"errors":[...]}, each error
{"code":"H2|H3","keyword":"...","path":"/instance/pointer",
 "schema_path":"/schema/pointer","message":"..."} (at most 16).

Standard JSON Schema 2020-12 semantics unless --closed (toolgate's closed
world: an object schema that declares properties and says nothing of
additionalProperties / patternProperties accepts no other key).

  --schema FILE      the schema (required)
  --closed           closed-world objects
  --assert-formats   check every "format" the schema uses: the formats of JSON
                     Schema 2020-12 (date-time, date, time, duration, email,
                     hostname, ipv4, ipv6, uri, uri-reference, uri-template,
                     uuid, regex, json-pointer, relative-json-pointer) and
                     OpenAPI's (byte, binary, password, int32, int64, float,
                     double).  A format toolgate cannot check (idn-email, iri,
                     a typo) makes the schema fail to compile
                     (UNSUPPORTED_FORMAT) rather than pass unchecked
  --annotation-format NAME
                     with --assert-formats: leave the format NAME unchecked,
                     an annotation (repeatable)
  --lines            one instance per line; the output lines carry "line"

exit status: 0 all instances validated (valid or not), 1 some instance was
not well-formed JSON or could not be checked (a limit), 2 bad usage, an
unreadable file or a schema toolgate cannot compile
]]

function M.run(args)
  local opts, pos = cli.parse(args, {
    flags = { closed = true, ["assert-formats"] = true, lines = true },
    options = { schema = true },
    multi = { ["annotation-format"] = true },
  })
  if #pos > 1 then cli.usage_error("at most one FILE") end
  if not opts.schema then cli.usage_error("--schema is required") end
  if opts["annotation-format"] and not opts["assert-formats"] then
    cli.usage_error("--annotation-format needs --assert-formats (formats are annotations without it)")
  end

  local engine = assert(core.new_engine())
  local text = cli.read_all("validate", opts.schema)
  if not text then return cli.EXIT_USAGE end
  local doc, err, code, offset = engine:parse(text)
  if not doc then
    cli.diag("validate", opts.schema .. ": " .. cli.describe(err, code, offset))
    return cli.EXIT_USAGE
  end
  local schema, serr, scode, pointer = engine:compile_schema(doc:root(), {
    closed = opts.closed or false, assert_formats = opts["assert-formats"] or false,
    annotation_formats = opts["annotation-format"],
  })
  if not schema then
    cli.diag("validate", string.format("%s: %s at %s: %s", opts.schema, scode,
      pointer ~= "" and pointer or "/", serr))
    return cli.EXIT_USAGE
  end

  local failed = false
  local function one(instance_text, label, n)
    local idoc, ierr, icode, ioffset = engine:parse(instance_text)
    if not idoc then
      failed = true
      cli.flush()
      cli.diag("validate", label .. ": " .. cli.describe(ierr, icode, ioffset))
      return
    end
    local findings, verr, vcode = schema:validate(idoc:root())
    if not findings then
      failed = true
      cli.flush()
      cli.diag("validate", label .. ": " .. tostring(vcode) .. ": " .. tostring(verr))
      return
    end
    local errors = setmetatable({}, value.array_mt)
    for i, f in ipairs(findings) do
      errors[i] = { code = f.code, keyword = f.keyword, path = f.pointer,
                    schema_path = f.schema_pointer, message = f.message }
    end
    cli.out(cli.encode({ valid = #findings == 0, errors = errors, line = n }), "\n")
  end

  if opts.lines then
    -- the core reads the input and validates every complete line of a
    -- piece in one call, writing the verdicts itself
    local n = cli.read_lines("validate", pos[1], engine, function(reader, want, line)
      return schema:validate_reader(reader, want, line, 1)
    end)
    if not n then return cli.EXIT_USAGE end
    failed = failed or n > 0
  else
    local data, name = cli.read_all("validate", pos[1])
    if not data then return cli.EXIT_USAGE end
    one(data, name, nil)
  end
  return failed and cli.EXIT_FAILED or cli.EXIT_OK
end

return M
