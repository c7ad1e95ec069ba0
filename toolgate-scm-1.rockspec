-- LuaRocks build of toolgate for Lua 5.4: the Lua modules, the C core built
-- into the Lua 5.4 module toolgate.core_c, the shipped policies and the
-- toolgate command.  From a checkout:
--   luarocks --lua-version=5.4 make --deps-mode=none toolgate-scm-1.rockspec
--   luarocks --lua-version=5.4 make --deps-mode=none --tree=DIR toolgate-scm-1.rockspec
-- (--deps-mode=none: lua-cjson is Debian's lua-cjson package, which LuaRocks
-- does not see; without it LuaRocks asks its registry for lua-cjson.)  Needs the
-- headers xxhash.h and pcre2.h (Debian: libxxhash-dev, libpcre2-dev).
-- LuaJIT and nginx use the FFI binding over libtoolgate.so: `make install`.
-- `make test` installs this rock into a temporary tree (mk/test-rock.sh).
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
    ["toolgate.sandbox"] = "lua/toolgate/sandbox.lua",
    ["toolgate.policy"] = "lua/toolgate/policy.lua",
    ["toolgate.decision"] = "lua/toolgate/decision.lua",
    ["toolgate.audit"] = "lua/toolgate/audit.lua",
    ["toolgate.audit_log"] = "lua/toolgate/audit_log.lua",
    ["toolgate.shadow"] = "lua/toolgate/shadow.lua",
    ["toolgate.lines"] = "lua/toolgate/lines.lua",
    ["toolgate.documents"] = "lua/toolgate/documents.lua",
    ["toolgate.verifier"] = "lua/toolgate/verifier.lua",
    ["toolgate.pipeline"] = "lua/toolgate/pipeline.lua",
    ["toolgate.quota"] = "lua/toolgate/quota.lua",
    ["toolgate.engine"] = "lua/toolgate/engine.lua",
    ["toolgate.state"] = "lua/toolgate/state.lua",
    ["toolgate.cli.canon"] = "lua/toolgate/cli/canon.lua",
    ["toolgate.cli.check"] = "lua/toolgate/cli/check.lua",
    ["toolgate.cli.validate"] = "lua/toolgate/cli/validate.lua",
    ["toolgate.cli.registry"] = "lua/toolgate/cli/registry.lua",
    ["toolgate.cli.classify"] = "lua/toolgate/cli/classify.lua",
    ["toolgate.cli.probe"] = "lua/toolgate/cli/probe.lua",
    ["toolgate.cli.sweep"] = "lua/toolgate/cli/sweep.lua",
    ["toolgate.experiment"] = "lua/toolgate/experiment.lua",
    ["toolgate.plot"] = "lua/toolgate/plot.lua",
    ["toolgate.cli.test"] = "lua/toolgate/cli/test.lua",
    ["toolgate.cli.policy"] = "lua/toolgate/cli/policy.lua",
    ["toolgate.suggest"] = "lua/toolgate/suggest.lua",
    ["toolgate.lint"] = "lua/toolgate/lint.lua",
    ["toolgate.explain"] = "lua/toolgate/explain.lua",
    -- the shipped policies, beside the modules, where toolgate.policy finds
    -- them by name (--policy strict, toolgate.new{policy = "strict"})
    ["toolgate.policies.default"] = "policies/default.lua",
    ["toolgate.policies.example"] = "policies/example.lua",
    ["toolgate.policies.gateway"] = "policies/gateway.lua",
    ["toolgate.policies.mcp"] = "policies/mcp.lua",
    ["toolgate.policies.rung"] = "policies/rung.lua",
    ["toolgate.policies.strict"] = "policies/strict.lua",
    ["toolgate.cli.gateway"] = "lua/toolgate/cli/gateway.lua",
    ["toolgate.mcp"] = "lua/toolgate/mcp.lua",
    ["toolgate.mcp.headers"] = "lua/toolgate/mcp/headers.lua",
    ["toolgate.mcp.rounds"] = "lua/toolgate/mcp/rounds.lua",
    ["toolgate.mcp.client_approval"] = "lua/toolgate/mcp/client_approval.lua",
    ["toolgate.metrics"] = "lua/toolgate/metrics.lua",
    ["toolgate.nginx"] = "lua/toolgate/nginx.lua",
    ["toolgate.inbox"] = "lua/toolgate/inbox.lua",
    ["toolgate.webhooks"] = "lua/toolgate/webhooks.lua",
    ["toolgate.otel"] = "lua/toolgate/otel.lua",
    ["toolgate.stdio_trace"] = "lua/toolgate/stdio_trace.lua",
    ["toolgate.state.shared_dict"] = "lua/toolgate/state/shared_dict.lua",
    ["toolgate.state.redis"] = "lua/toolgate/state/redis.lua",
    ["toolgate.stdio"] = "lua/toolgate/stdio.lua",
    ["toolgate.proc"] = "lua/toolgate/proc.lua",
    ["toolgate.proc_ffi"] = "lua/toolgate/proc_ffi.lua",
    ["toolgate.cli.mcp_proxy"] = "lua/toolgate/cli/mcp_proxy.lua",
    ["toolgate.cli.approvals"] = "lua/toolgate/cli/approvals.lua",
    ["toolgate.cli.log"] = "lua/toolgate/cli/log.lua",
    ["toolgate.cli.log_shadow"] = "lua/toolgate/cli/log_shadow.lua",
    ["toolgate.cli.env"] = "lua/toolgate/cli/env.lua",
    ["toolgate.mcp_client"] = "lua/toolgate/mcp_client.lua",
    ["toolgate.mcp.http_client"] = "lua/toolgate/mcp/http_client.lua",
    ["toolgate.state.sqlite"] = "lua/toolgate/state/sqlite.lua",
    -- the stdio proxy's process handling (core/tg_proc.h) for Lua 5.4
    ["toolgate.proc_c"] = {
      sources = { "lua/toolgate/proc_c.c", "core/tg_proc.c" },
      incdirs = { "core" },
      defines = { "_GNU_SOURCE" },
    },
    ["toolgate.core_c"] = {
      sources = {
        "lua/toolgate/core_c.c",
        "core/tg_agree.c",
        "core/tg_arena.c",
        "core/tg_call.c",
        "core/tg_canon.c",
        "core/tg_classify.c",
        "core/tg_consistency.c",
        "core/tg_decide.c",
        "core/tg_decimal.c",
        "core/tg_decision.c",
        "core/tg_dom.c",
        "core/tg_engine.c",
        "core/tg_format.c",
        "core/tg_hash.c",
        "core/tg_image.c",
        "core/tg_json.c",
        "core/tg_lines.c",
        "core/tg_mcp.c",
        "core/tg_model_text.c",
        "core/tg_normalize.c",
        "core/tg_number.c",
        "core/tg_plan.c",
        "core/tg_policy.c",
        "core/tg_pointer.c",
        "core/tg_reader.c",
        "core/tg_record.c",
        "core/tg_regex.c",
        "core/tg_registry.c",
        "core/tg_rung.c",
        "core/tg_schema_compile.c",
        "core/tg_schema_validate.c",
        "core/tg_store.c",
        "core/tg_strtod.c",
        "core/tg_sweep.c",
        "core/tg_utf8.c",
        "core/tg_workers.c",
      },
      incdirs = { "core", "$(XXHASH_INCDIR)", "$(PCRE2_INCDIR)" },
      libdirs = { "$(PCRE2_LIBDIR)" },
      defines = { "_GNU_SOURCE" },
      libraries = { "pcre2-8", "m", "pthread" },
    },
  },
  install = {
    bin = { toolgate = "bin/toolgate" },
  },
  -- Copied into the rock's directory (luarocks doc toolgate).
  copy_directories = { "docs" },
}
