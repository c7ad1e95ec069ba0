-- toolgate env: the environment variables a lua5.4 or luajit script needs
-- to require "toolgate" from where this command found it (a source tree,
-- an install outside the interpreters' default paths), as shell lines.
local cli = require "toolgate.cli"

local M = {}

M.usage = [[
usage: toolgate env

Prints, for a POSIX shell, the variables that let a lua5.4 or luajit
script require "toolgate" from where this command found its own modules
(a source tree after make, or an install outside the default paths):
  export LUA_PATH='DIR/?.lua;DIR/?/init.lua;;'
  export LUA_CPATH='CDIR/?.so;LIBDIR/?.so;;'
  export TOOLGATE_LIB='LIBDIR/libtoolgate.so'
(";;" keeps the interpreters' default paths; TOOLGATE_LIB is where
LuaJIT's FFI binding loads the core from).  From a source tree:
  eval "$(bin/toolgate env)"
  lua5.4 -e 'print(require("toolgate").canon("[1.0]"))'
]]

local function absolute(path)
  if path:sub(1, 1) == "/" then return path end
  local pwd = os.getenv("PWD")
  if not pwd then
    local p = io.popen("pwd")
    pwd = p and p:read("*l")
    if p then p:close() end
  end
  return (pwd or ".") .. "/" .. path:gsub("^%./", "")
end

-- the directory of the file a module name resolves to, and that file's
-- name relative to it removed: "lua/toolgate.lua" for "toolgate" is "lua"
local function dir_of(name, search, tail)
  local path = package.searchpath(name, search)
  if not path or path:sub(-#tail) ~= tail then return nil end
  local dir = path:sub(1, -#tail - 1):gsub("/$", "")
  return absolute(dir == "" and "." or dir)
end

-- the first package.cpath directory holding libtoolgate.so, as
-- toolgate.core_ffi looks for it
local function library()
  for template in package.cpath:gmatch("[^;]+") do
    local path = template:gsub("%?", "libtoolgate")
    local f = io.open(path, "rb")
    if f then
      f:close()
      return absolute(path)
    end
  end
end

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

function M.run(args)
  local _, pos = cli.parse(args, {})
  if #pos > 0 then cli.usage_error("env takes no argument") end
  local ldir = dir_of("toolgate", package.path, "toolgate.lua")
  if not ldir then
    cli.diag("env", "cannot tell where the toolgate module is (package.path)")
    return cli.EXIT_USAGE
  end
  local cpath = {}
  local cdir = dir_of("toolgate.core_c", package.cpath, "toolgate/core_c.so")
  if cdir then cpath[#cpath + 1] = cdir .. "/?.so" end
  local lib = library()
  if lib then cpath[#cpath + 1] = lib:match("^(.*)/[^/]*$") .. "/?.so" end
  cpath[#cpath + 1] = ";"
  cli.out("export LUA_PATH=", quote(ldir .. "/?.lua;" .. ldir .. "/?/init.lua;;"), "\n")
  cli.out("export LUA_CPATH=", quote(table.concat(cpath, ";")), "\n")
  if lib then cli.out("export TOOLGATE_LIB=", quote(lib), "\n") end
  return cli.EXIT_OK
end

return M
