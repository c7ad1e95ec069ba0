-- toolgate.core: the binding of the C core for the running interpreter.
-- LuaJIT (nginx's lua module, OpenResty) gets the FFI binding, which the JIT
-- compiles; Lua 5.4 gets the C-API module.  Both expose the same functions.
if rawget(_G, "jit") then
  return require "toolgate.core_ffi"
end
return require "toolgate.core_c"
