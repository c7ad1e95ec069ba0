-- toolgate.core_ffi: the LuaJIT FFI binding of the toolgate core
-- (normally reached through "toolgate.core").
--
-- Mirrors core_c.c function for function over the same libtoolgate.so, as
-- OpenResty does it: the classic C API is never JIT-compiled, FFI calls are.
-- The library is found, in order, at $TOOLGATE_LIB, next to any entry of
-- package.cpath (as libtoolgate.so), then by the system loader.
--
-- Errors: wrong argument types raise; bad data returns
-- nil, message, CODE, byte_offset (offset counts from 0).

local ffi = require "ffi"

-- Keep in step with core/toolgate.h (spec/core_spec.lua checks it).
ffi.cdef [[
typedef struct tg_error_t {
    int code;
    size_t offset;
    char pointer[256];
    char message[200];
} tg_error_t;
typedef struct tg_limits_t {
    size_t max_input_bytes;
    size_t max_depth;
    size_t max_string_bytes;
    size_t max_members;
    size_t max_items;
} tg_limits_t;
typedef struct tg_engine_t tg_engine_t;
typedef struct tg_buf_t {
    char *data;
    size_t len;
    size_t cap;
    tg_engine_t *engine;
} tg_buf_t;
typedef struct tg_hash128_t {
    uint64_t hi;
    uint64_t lo;
} tg_hash128_t;
typedef void *(*tg_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);

const char *tg_code_name(int code);
void tg_limits_default(tg_limits_t *out);
tg_engine_t *tg_engine_new(const tg_limits_t *limits, tg_alloc_fn alloc, void *alloc_ud, tg_error_t *err);
void tg_engine_free(tg_engine_t *e);
void tg_engine_limits(const tg_engine_t *e, tg_limits_t *out);
int tg_engine_set_limits(tg_engine_t *e, const tg_limits_t *limits, tg_error_t *err);
void tg_buf_init(tg_buf_t *b, tg_engine_t *e);
void tg_buf_free(tg_buf_t *b);
void tg_buf_reset(tg_buf_t *b);
int tg_canon(tg_engine_t *e, const char *json, size_t len, tg_buf_t *out, tg_error_t *err);
size_t tg_number_format(double d, char out[32]);
void tg_hash128(const void *data, size_t len, tg_hash128_t *out);
void tg_hash128_hex(const tg_hash128_t *h, char out[33]);
]]

local function load_library()
  local tried = {}
  local explicit = os.getenv("TOOLGATE_LIB")
  if explicit and explicit ~= "" then
    local ok, lib = pcall(ffi.load, explicit)
    if ok then return lib end
    error("toolgate: cannot load TOOLGATE_LIB=" .. explicit .. ": " .. tostring(lib), 0)
  end
  for template in package.cpath:gmatch("[^;]+") do
    local path = template:gsub("%?", "libtoolgate")
    local f = io.open(path, "rb")
    if f then
      f:close()
      local ok, lib = pcall(ffi.load, path)
      if ok then return lib end
      tried[#tried + 1] = path .. ": " .. tostring(lib)
    end
  end
  local ok, lib = pcall(ffi.load, "toolgate")
  if ok then return lib end
  tried[#tried + 1] = "system loader: " .. tostring(lib)
  error("toolgate: cannot find libtoolgate.so (set TOOLGATE_LIB)\n  " ..
        table.concat(tried, "\n  "), 0)
end

local C = load_library()

local TG_NO_OFFSET = ffi.cast("size_t", -1)
local LIMIT_NAMES = { "max_input_bytes", "max_depth", "max_string_bytes", "max_members", "max_items" }
local IS_LIMIT = {}
for _, name in ipairs(LIMIT_NAMES) do IS_LIMIT[name] = true end

local M = { VERSION = "0.1.0", BINDING = "ffi" }

local function error_values(err, with_offset)
  local message, code = ffi.string(err.message), ffi.string(C.tg_code_name(err.code))
  if not with_offset then return nil, message, code end
  if err.offset == TG_NO_OFFSET then return nil, message, code, nil end
  return nil, message, code, tonumber(err.offset)
end

local function read_limits(t, lim)
  if type(t) ~= "table" then error("limits: table expected, got " .. type(t), 3) end
  for k, v in pairs(t) do
    if type(k) ~= "string" then error("limits: keys must be strings", 3) end
    if not IS_LIMIT[k] then error("limits: unknown limit '" .. k .. "'", 3) end
    if type(v) ~= "number" or v < 0 or v ~= math.floor(v) or v >= 2^63 then
      error("limits: " .. k .. " must be a non-negative integer", 3)
    end
    lim[k] = v
  end
end

local function limits_table(lim)
  local t = {}
  for _, name in ipairs(LIMIT_NAMES) do t[name] = tonumber(lim[name]) end
  return t
end

local Engine = {}
Engine.__index = Engine

-- One allocation holds the engine pointer, its reusable output buffer and
-- an error struct; the finalizer frees the C side.
local state_t = ffi.typeof [[
struct {
    tg_engine_t *e;
    tg_buf_t out;
    tg_error_t err;
    tg_limits_t lim;
}
]]

local function free_state(st)
  if st.e ~= nil then
    C.tg_buf_free(st.out)
    C.tg_engine_free(st.e)
    st.e = nil
  end
end

function M.new_engine(limits)
  local st = state_t()
  C.tg_limits_default(st.lim)
  if limits ~= nil then read_limits(limits, st.lim) end
  st.e = C.tg_engine_new(st.lim, nil, nil, st.err)
  if st.e == nil then return error_values(st.err, false) end
  C.tg_buf_init(st.out, st.e)
  ffi.gc(st, free_state)
  return setmetatable({ st = st }, Engine)
end

local function check_engine(self)
  if getmetatable(self) ~= Engine then error("toolgate engine expected", 3) end
  if self.st.e == nil then error("toolgate engine already freed", 3) end
  return self.st
end

local function check_string(s, n)
  if type(s) ~= "string" then
    error("bad argument #" .. n .. " (string expected, got " .. type(s) .. ")", 3)
  end
end

function Engine:limits()
  local st = check_engine(self)
  C.tg_engine_limits(st.e, st.lim)
  return limits_table(st.lim)
end

function Engine:set_limits(t)
  local st = check_engine(self)
  C.tg_engine_limits(st.e, st.lim)
  read_limits(t, st.lim)
  if C.tg_engine_set_limits(st.e, st.lim, st.err) ~= 0 then return error_values(st.err, false) end
  return true
end

function Engine:canon(text)
  local st = check_engine(self)
  check_string(text, 1)
  C.tg_buf_reset(st.out)
  if C.tg_canon(st.e, text, #text, st.out, st.err) ~= 0 then return error_values(st.err, true) end
  return ffi.string(st.out.data, st.out.len)
end

local hex_buf = ffi.new("char[33]")
local hash_buf = ffi.new("tg_hash128_t")

function Engine:hash(text)
  local st = check_engine(self)
  check_string(text, 1)
  C.tg_buf_reset(st.out)
  if C.tg_canon(st.e, text, #text, st.out, st.err) ~= 0 then return error_values(st.err, true) end
  C.tg_hash128(st.out.data, st.out.len, hash_buf)
  C.tg_hash128_hex(hash_buf, hex_buf)
  return ffi.string(hex_buf, 32)
end

local number_buf = ffi.new("char[32]")

function M.format_number(x)
  if type(x) ~= "number" then
    error("bad argument #1 to 'format_number' (number expected, got " .. type(x) .. ")", 2)
  end
  local n = C.tg_number_format(x, number_buf)
  if n == 0 then return nil, "NaN and Infinity have no JSON form", "NONFINITE_NUMBER" end
  return ffi.string(number_buf, n)
end

function M.hash_bytes(s)
  check_string(s, 1)
  C.tg_hash128(s, #s, hash_buf)
  C.tg_hash128_hex(hash_buf, hex_buf)
  return ffi.string(hex_buf, 32)
end

function M.default_limits()
  local lim = ffi.new("tg_limits_t")
  C.tg_limits_default(lim)
  return limits_table(lim)
end

return M
