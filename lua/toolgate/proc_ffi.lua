-- toolgate.proc_ffi: the LuaJIT FFI binding of tg_proc (core/tg_proc.h),
-- child processes on pipes and signals on a descriptor for the stdio MCP
-- proxy (normally reached through "toolgate.proc").  Mirrors
-- lua/toolgate/proc_c.c function for function, over the libtoolgate.so
-- toolgate.core_ffi loaded.  Failures return nil, message.

local ffi = require "ffi"
local C = require("toolgate.core_ffi").library

-- Keep in step with core/tg_proc.h.
ffi.cdef [[
typedef struct tg_proc_t { int pid; int in; int out; int err; } tg_proc_t;
int tg_proc_spawn(const char *const *argv, tg_proc_t *p);
int tg_proc_signals(const int *sigs, int n);
int tg_proc_next_signal(int fd);
int tg_proc_poll(const int *fds, const short *events, short *revents, int n, int timeout_ms);
long tg_proc_read(int fd, char *buf, size_t cap);
long tg_proc_write(int fd, const char *buf, size_t len);
int tg_proc_connect(const char *host, int port, int timeout_ms);
int tg_proc_nonblock(int fd, int on);
int tg_proc_wait(int pid, int nohang, int *code, int *signo);
int tg_proc_kill(int pid, int signo);
int tg_proc_close(int fd);
int tg_proc_signum(const char *name);
int tg_proc_poll_bits(int which);
double tg_proc_now(void);
double tg_proc_time(void);
const char *tg_proc_strerror(int errnum);
int tg_proc_stat(const char *path, int *perm, int *uid, int *is_dir);
int tg_proc_euid(void);
int tg_proc_mkdir(const char *path, int mode);
int tg_proc_chmod(const char *path, int mode);
int tg_proc_datagram(const char *path, const char *data, size_t len);
int tg_proc_umask(int mask);
]]

local READ_CHUNK, MAX_FDS = 65536, 16
local EAGAIN = 11 -- Linux

local M = { BINDING = "ffi", READ_CHUNK = READ_CHUNK }
M.POLLIN, M.POLLOUT, M.POLLERR, M.POLLHUP, M.POLLNVAL =
  C.tg_proc_poll_bits(0), C.tg_proc_poll_bits(1), C.tg_proc_poll_bits(2), C.tg_proc_poll_bits(3),
  C.tg_proc_poll_bits(4)

local function fail(rc)
  rc = tonumber(rc)
  if rc == -EAGAIN then return nil, "again" end
  return nil, ffi.string(C.tg_proc_strerror(-rc))
end

function M.spawn(argv)
  if type(argv) ~= "table" or #argv < 1 then error("spawn: a command and its arguments expected", 2) end
  local cargv = ffi.new("const char *[?]", #argv + 1)
  for i, a in ipairs(argv) do
    if type(a) ~= "string" then error("spawn: argument " .. i .. " must be a string", 2) end
    cargv[i - 1] = a -- argv keeps the strings alive
  end
  local p = ffi.new("tg_proc_t")
  local rc = C.tg_proc_spawn(cargv, p)
  if rc ~= 0 then return fail(rc) end
  return { pid = p.pid, stdin = p["in"], stdout = p.out, stderr = p.err }
end

function M.signals(sigs)
  local c = ffi.new("int[?]", #sigs + 1)
  for i, s in ipairs(sigs) do c[i - 1] = s end
  local rc = C.tg_proc_signals(c, #sigs)
  if rc < 0 then return fail(rc) end
  return rc
end

function M.next_signal(fd)
  local rc = C.tg_proc_next_signal(fd)
  if rc < 0 then return fail(rc) end
  if rc == 0 then return nil end
  return rc
end

local fds, events, revents = ffi.new("int[?]", MAX_FDS), ffi.new("short[?]", MAX_FDS), ffi.new("short[?]", MAX_FDS)

function M.poll(fd_list, event_list, timeout_ms)
  local n = #fd_list
  if n > MAX_FDS then error("poll: at most 16 descriptors", 2) end
  for i = 1, n do fds[i - 1], events[i - 1] = fd_list[i], event_list[i] end
  local rc = C.tg_proc_poll(fds, events, revents, n, timeout_ms)
  if rc < 0 then return fail(rc) end
  local out = {}
  for i = 1, n do out[i] = rc == 0 and 0 or revents[i - 1] end
  return out
end

local buf = ffi.new("char[?]", READ_CHUNK)

function M.read(fd)
  local n = tonumber(C.tg_proc_read(fd, buf, READ_CHUNK))
  if n < 0 then return fail(n) end
  if n == 0 then return false end
  return ffi.string(buf, n)
end

function M.write(fd, s, from)
  from = from or 1
  if from < 1 or from > #s + 1 then error("write: offset out of range", 2) end
  local ptr = ffi.cast("const char *", s) + (from - 1)
  local n = tonumber(C.tg_proc_write(fd, ptr, #s - (from - 1)))
  if n == -EAGAIN then return 0 end
  if n < 0 then return fail(n) end
  return n
end

function M.connect(host, port, timeout_ms)
  local rc = C.tg_proc_connect(host, port, timeout_ms)
  if rc < 0 then return fail(rc) end
  return rc
end

function M.nonblock(fd, on)
  local rc = C.tg_proc_nonblock(fd, on and 1 or 0)
  if rc < 0 then return fail(rc) end
  return rc == 1
end

local code, signo = ffi.new("int[1]"), ffi.new("int[1]")

function M.wait(pid, nohang)
  local rc = C.tg_proc_wait(pid, nohang and 1 or 0, code, signo)
  if rc < 0 then return fail(rc) end
  if rc == 0 then return false end
  if signo[0] ~= 0 then return "signaled", signo[0] end
  return "exited", code[0]
end

function M.kill(pid, sig)
  local rc = C.tg_proc_kill(pid, sig)
  if rc < 0 then return fail(rc) end
  return true
end

function M.close(fd)
  local rc = C.tg_proc_close(fd)
  if rc < 0 then return fail(rc) end
  return true
end

local perm, uid, is_dir = ffi.new("int[1]"), ffi.new("int[1]"), ffi.new("int[1]")

-- stat(path) -> {perm =, uid =, dir =} | nil, message, errno
function M.stat(path)
  local rc = C.tg_proc_stat(path, perm, uid, is_dir)
  if rc < 0 then return nil, ffi.string(C.tg_proc_strerror(-rc)), -rc end
  return { perm = perm[0], uid = uid[0], dir = is_dir[0] == 1 }
end

function M.euid() return C.tg_proc_euid() end

-- mkdir(path, mode) and chmod(path, mode) -> true | nil, message, errno
local function done(rc)
  if rc < 0 then return nil, ffi.string(C.tg_proc_strerror(-rc)), -rc end
  return true
end

function M.mkdir(path, mode) return done(C.tg_proc_mkdir(path, mode)) end

function M.chmod(path, mode) return done(C.tg_proc_chmod(path, mode)) end

function M.datagram(path, data) return done(C.tg_proc_datagram(path, data, #data)) end

function M.umask(mask) return C.tg_proc_umask(mask) end

function M.signum(name) return C.tg_proc_signum(name) end

function M.now() return C.tg_proc_now() end

function M.time() return C.tg_proc_time() end

return M
