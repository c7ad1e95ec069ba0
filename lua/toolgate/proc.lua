-- toolgate.proc: child processes on pipes and signals on a descriptor (the
-- stdio MCP proxy's process handling, core/tg_proc.h), through the binding
-- of the running interpreter, as toolgate.core does: the FFI binding under
-- LuaJIT, the C-API module under Lua 5.4.  Both expose the same functions:
--   spawn(argv) -> {pid, stdin, stdout, stderr} | nil, message
--   signals({signo...}) -> fd;  next_signal(fd) -> signo | nil
--   poll(fds, events, timeout_ms) -> revents list
--   read(fd) -> bytes (at most READ_CHUNK) | false (end of file) | nil, "again" | nil, message
--   write(fd, s[, from]) -> bytes written (0: the pipe is full) | nil, message
--   connect(host, port, timeout_ms) -> fd (a non-blocking TCP socket; read and write it as a pipe) | nil, message
--   nonblock(fd, on) -> was_on;  wait(pid, nohang) -> "exited"|"signaled", n | false
--   kill(pid, signo), close(fd), signum(name), now() (monotonic), time() (since the epoch);
--   POLLIN, POLLOUT, POLLERR, POLLHUP, POLLNVAL
--   stat(path) -> {perm, uid, dir} | nil, message, errno;  euid();  umask(mask) -> the mask before
--   mkdir(path, mode), chmod(path, mode) -> true | nil, message, errno  (the local state's directory)
--   datagram(path, data) -> true | nil, message, errno  (one datagram to a unix socket: syslog's /dev/log)
if rawget(_G, "jit") then
  return require "toolgate.proc_ffi"
end
return require "toolgate.proc_c"
