-- LuaRocks build of toolgate for Lua 5.4 (and 5.1/LuaJIT, where the FFI
-- binding needs libtoolgate.so from `make install`).  Build from a checkout:
--   luarocks make --deps-mode=none toolgate-scm-1.rockspec
-- (lua-cjson comes from Debian's lua-cjson package on the machines we test.)
rockspec_format = "3.0"
package = "toolgate"
version = "scm-1"
source = {
  -- `luarocks make` builds the working tree and fetches nothing; this is
  -- only where a packed rock would come from.
  url = "git+file://.",
}
description = {
  summary = "Decides, before an LLM agent's tool call runs, whether it should run",
  detailed = [[
    A C core (strict JSON, RFC 8785 canonical form, XXH3 hashing, JSON Schema
    checks, agreement counting) with Lua policy scripts on top.
  ]],
  license = "MIT",
}
dependencies = {
  "lua >= 5.1",
  "lua-cjson",
}
external_dependencies = {
  XXHASH = { header = "xxhash.h" },
  PCRE2 = { header = "pcre2.h", library = "pcre2-8" },
}
build = {
  type = "builtin",
  modules = {
    ["toolgate"] = "lua/toolgate.lua",
    ["toolgate.core"] = "lua/toolgate/core.lua",
    ["toolgate.core_ffi"] = "lua/toolgate/core_ffi.lua",
    ["toolgate.value"] = "lua/toolgate/value.lua",
    ["toolgate.cli"] = "lua/toolgate/cli.lua",
    ["toolgate.json"] = "lua/toolgate/json.lua",
    ["toolgate.registry"] = "lua/toolgate/registry.lua",
    ["toolgate.rung"] = "lua/toolgate/rung.lua",
    ["toolgate.sandbox"] = "lua/toolgate/sandbox.lua",
    ["toolgate.policy"] = "lua/toolgate/policy.lua",
    ["toolgate.gate"] = "lua/toolgate/gate.lua",
    ["toolgate.verifier"] = "lua/toolgate/verifier.lua",
    ["toolgate.pipeline"] = "lua/toolgate/pipeline.lua",
    ["toolgate.engine"] = "lua/toolgate/engine.lua",
    ["toolgate.state"] = "lua/toolgate/state.lua",
    ["toolgate.consistency"] = "lua/toolgate/consistency.lua",
    ["toolgate.cli.canon"] = "lua/toolgate/cli/canon.lua",
    ["toolgate.cli.check"] = "lua/toolgate/cli/check.lua",
    ["toolgate.cli.validate"] = "lua/toolgate/cli/validate.lua",
    ["toolgate.cli.registry"] = "lua/toolgate/cli/registry.lua",
    ["toolgate.cli.classify"] = "lua/toolgate/cli/classify.lua",
    ["toolgate.cli.probe"] = "lua/toolgate/cli/probe.lua",
    ["toolgate.core_c"] = {
      sources = {
        "lua/toolgate/core_c.c",
        "core/tg_agree.c",
        "core/tg_arena.c",
        "core/tg_call.c",
        "core/tg_canon.c",
        "core/tg_decimal.c",
        "core/tg_dom.c",
        "core/tg_engine.c",
        "core/tg_format.c",
        "core/tg_hash.c",
        "core/tg_json.c",
        "core/tg_normalize.c",
        "core/tg_number.c",
        "core/tg_regex.c",
        "core/tg_registry.c",
        "core/tg_rung.c",
        "core/tg_schema_compile.c",
        "core/tg_schema_validate.c",
        "core/tg_strtod.c",
      },
      incdirs = { "core", "$(XXHASH_INCDIR)", "$(PCRE2_INCDIR)" },
      libdirs = { "$(PCRE2_LIBDIR)" },
      defines = { "_GNU_SOURCE" },
      libraries = { "pcre2-8", "m" },
    },
  },
  install = {
    bin = { toolgate = "bin/toolgate" },
  },
}
