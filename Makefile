# toolgate -- build, test, demo, bench.
#
#   make          the C core (build/libtoolgate.{a,so}) and the Lua 5.4 module
#   make test     installs missing Debian packages, builds, runs every suite,
#                 ends with one line "N passed, N failed"
#   make demo     the main job on the shipped examples
#   make bench    throughput next to the peers a user would pick instead,
#                 registries of 1,000 and 10,000 tools (BENCH_50K=1: 50,000)
#   make bench-nginx  the MCP gateway next to a plain nginx proxy (wrk), its
#                 memory and reloads with 10,000 tools
#
# Knobs: CC, CFLAGS, LUA (Lua 5.4 interpreter), LUAJIT, BUILD, PREFIX.

CC      ?= cc
CFLAGS  ?= -O2 -g
LUA     ?= lua5.4
LUAJIT  ?= luajit
BUILD   ?= build
PREFIX  ?= /usr/local

LUA54_CFLAGS ?= $(shell pkg-config --cflags lua5.4 2>/dev/null || echo -I/usr/include/lua5.4)
# The core's regular expressions (pattern, patternProperties) are PCRE2's.
PCRE2_LIBS ?= $(shell pkg-config --libs libpcre2-8 2>/dev/null || echo -lpcre2-8)
# tg_workers.c runs checks on POSIX threads.
LIBS    = $(PCRE2_LIBS) -lm -pthread
WARN    = -std=c11 -Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes \
          -Wmissing-prototypes -Wformat=2 -Wcast-qual -Wvla
ALL_CFLAGS = $(WARN) $(CFLAGS) -fPIC -Icore

CORE_SRC  = $(wildcard core/*.c)
CORE_OBJ  = $(CORE_SRC:core/%.c=$(BUILD)/core/%.o)
CORE_HDR  = $(wildcard core/*.h)
CTEST_SRC = $(wildcard spec/c/test_*.c)
CTEST_BIN = $(CTEST_SRC:spec/c/%.c=$(BUILD)/spec/%)
BENCH_BIN = $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/*.c))

LIB_A   = $(BUILD)/libtoolgate.a
LIB_SO  = $(BUILD)/libtoolgate.so
LUA54_MOD = $(BUILD)/lua54/toolgate/core_c.so
# the stdio proxy's process handling (core/tg_proc.h) for Lua 5.4
LUA54_PROC = $(BUILD)/lua54/toolgate/proc_c.so

# What the in-tree Lua code needs to find its modules and libraries.
LUA_ENV = LUA_PATH="$(CURDIR)/lua/?.lua;$(CURDIR)/spec/?.lua;;" \
          LUA_CPATH="$(CURDIR)/$(BUILD)/lua54/?.so;$(CURDIR)/$(BUILD)/?.so;;" \
          TOOLGATE_LIB="$(CURDIR)/$(LIB_SO)"

.PHONY: all deps test demo bench bench-nginx clean install uninstall docs lint

all: deps $(LIB_A) $(LIB_SO) $(LUA54_MOD) $(LUA54_PROC)

deps:
	@sh mk/deps.sh build

$(BUILD)/core/%.o: core/%.c $(CORE_HDR) | $(BUILD)/core
	$(CC) $(ALL_CFLAGS) -fvisibility=hidden -c $< -o $@

$(LIB_A): $(CORE_OBJ)
	rm -f $@
	ar rcs $@ $(CORE_OBJ)

$(LIB_SO): $(CORE_OBJ)
	$(CC) -shared -Wl,-soname,libtoolgate.so.0 $(CFLAGS) $(CORE_OBJ) -o $@ $(LIBS)

# The Lua 5.4 module carries the core inside it (static), like any rock.
$(LUA54_MOD): lua/toolgate/core_c.c $(LIB_A) core/toolgate.h | $(BUILD)/lua54/toolgate
	$(CC) $(ALL_CFLAGS) $(LUA54_CFLAGS) -shared lua/toolgate/core_c.c $(LIB_A) -o $@ $(LIBS)

$(LUA54_PROC): lua/toolgate/proc_c.c $(LIB_A) core/tg_proc.h | $(BUILD)/lua54/toolgate
	$(CC) $(ALL_CFLAGS) $(LUA54_CFLAGS) -shared lua/toolgate/proc_c.c $(LIB_A) -o $@ $(LIBS)

$(BUILD)/spec/%: spec/c/%.c spec/c/tap.h spec/c/acct.h $(LIB_A) | $(BUILD)/spec
	$(CC) $(ALL_CFLAGS) -Ispec/c $< $(LIB_A) -o $@ $(LIBS)

$(BUILD)/core $(BUILD)/lua54/toolgate $(BUILD)/spec $(BUILD)/bench:
	mkdir -p $@

# ---- tests ------------------------------------------------------------------

test:
	@sh mk/deps.sh test
	@$(MAKE) --no-print-directory all $(CTEST_BIN) $(BENCH_BIN)
	@$(MAKE) --no-print-directory hostile-build
	@$(LUA_ENV) BUILD="$(BUILD)" LUA="$(LUA)" LUAJIT="$(LUAJIT)" sh mk/run-tests.sh

# ---- demo and bench -----------------------------------------------------------

demo:
	@sh mk/deps.sh demo
	@$(MAKE) --no-print-directory all
	@[ -f nginx/test/node_modules/@modelcontextprotocol/sdk/package.json ] || \
	    npm ci --prefix nginx/test --no-audit --no-fund >/dev/null 2>&1 || echo "demo: npm ci --prefix nginx/test failed"
	@$(LUA_ENV) LUA="$(LUA)" sh examples/demo.sh

bench:
	@sh mk/deps.sh bench
	@$(MAKE) --no-print-directory all $(BENCH_BIN) $(BUILD)/bench/simdjson_floor
	@$(LUA_ENV) BUILD="$(BUILD)" sh bench/run.sh
	@$(LUA_ENV) BUILD="$(BUILD)" LUA="$(LUA)" LUAJIT="$(LUAJIT)" sh bench/registry_scale.sh

# The floor under the parse (simdjson has no C interface: C++, bench only).
CXX ?= c++
$(BUILD)/bench/simdjson_floor: bench/simdjson_floor.cc | $(BUILD)/bench
	$(CXX) -O2 -std=c++17 $< -o $@ -lsimdjson

# The MCP gateway next to a plain nginx proxy (wrk on loopback; bench/nginx.sh),
# then its memory and reloads with 10,000 tools (bench/registry_nginx.sh).
bench-nginx:
	@sh mk/deps.sh bench-nginx
	@$(MAKE) --no-print-directory all $(BUILD)/bench/rate_load
	@$(LUA_ENV) LUA="$(LUA)" BUILD="$(BUILD)" sh bench/nginx.sh
	@$(LUA_ENV) LUA="$(LUA)" BUILD="$(BUILD)" sh bench/registry_nginx.sh

$(BUILD)/bench/%: bench/%.c bench/bench.h $(LIB_A) core/toolgate.h | $(BUILD)/bench
	$(CC) $(ALL_CFLAGS) $< $(LIB_A) -o $@ $(LIBS)

# ---- install -----------------------------------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=]: the C library (shared, static,
# header, pkg-config file), the Lua modules for Lua 5.4 and for LuaJIT (in the
# directories both interpreters search by default, so nginx's lua module finds
# them with no extra path), the policies (their directory written into the
# installed toolgate/policy.lua, which finds them by name for --policy NAME and
# toolgate.new{policy = NAME}), the toolgate command and its man page.

VERSION     = $(shell sed -n 's/^.define TG_VERSION "\(.*\)"/\1/p' core/toolgate.h)
BINDIR      ?= $(PREFIX)/bin
LIBDIR      ?= $(PREFIX)/lib
INCLUDEDIR  ?= $(PREFIX)/include
DATADIR     ?= $(PREFIX)/share
MANDIR      ?= $(DATADIR)/man
POLICYDIR   ?= $(DATADIR)/toolgate/policies
LUA54_LDIR  ?= $(DATADIR)/lua/5.4
LUA54_CDIR  ?= $(LIBDIR)/lua/5.4
LUAJIT_LDIR ?= $(DATADIR)/lua/5.1
LUAJIT_CDIR ?= $(LIBDIR)/lua/5.1
# run after installing into the live system as root (DESTDIR empty)
LDCONFIG    ?= ldconfig

LUA_TOP  = lua/toolgate.lua
LUA_MODS = $(wildcard lua/toolgate/*.lua)
LUA_CLI  = $(wildcard lua/toolgate/cli/*.lua)
LUA_STATE = $(wildcard lua/toolgate/state/*.lua)
LUA_MCP  = $(wildcard lua/toolgate/mcp/*.lua)
POLICIES = $(wildcard policies/*.lua)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(POLICYDIR) $(DESTDIR)$(LUA54_CDIR)/toolgate \
	    $(DESTDIR)$(LUAJIT_CDIR)
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libtoolgate.a
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/libtoolgate.so.$(VERSION)
	ln -sf libtoolgate.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libtoolgate.so.0
	ln -sf libtoolgate.so.0 $(DESTDIR)$(LIBDIR)/libtoolgate.so
	install -m 644 core/toolgate.h $(DESTDIR)$(INCLUDEDIR)/toolgate.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' mk/toolgate.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/toolgate.pc
	for d in $(LUA54_LDIR) $(LUAJIT_LDIR); do \
	    install -d $(DESTDIR)$$d/toolgate/cli $(DESTDIR)$$d/toolgate/state $(DESTDIR)$$d/toolgate/mcp && \
	    install -m 644 $(LUA_TOP) $(DESTDIR)$$d/ && \
	    install -m 644 $(LUA_MODS) $(DESTDIR)$$d/toolgate/ && \
	    install -m 644 $(LUA_STATE) $(DESTDIR)$$d/toolgate/state/ && \
	    install -m 644 $(LUA_MCP) $(DESTDIR)$$d/toolgate/mcp/ && \
	    install -m 644 $(LUA_CLI) $(DESTDIR)$$d/toolgate/cli/ && \
	    sed -e 's|^local INSTALLED_DIR = nil.*$$|local INSTALLED_DIR = [[$(POLICYDIR)]]|' \
	        lua/toolgate/policy.lua > $(DESTDIR)$$d/toolgate/policy.lua || exit 1; \
	done
	install -m 755 $(LUA54_MOD) $(DESTDIR)$(LUA54_CDIR)/toolgate/core_c.so
	install -m 755 $(LUA54_PROC) $(DESTDIR)$(LUA54_CDIR)/toolgate/proc_c.so
# the FFI binding looks for libtoolgate.so beside each package.cpath entry
	ln -sf $(LIBDIR)/libtoolgate.so.0 $(DESTDIR)$(LUAJIT_CDIR)/libtoolgate.so
	install -m 644 $(POLICIES) $(DESTDIR)$(POLICYDIR)/
	sed -e 's|^local installed = nil.*$$|local installed = { path = [[$(LUA54_LDIR)/?.lua;$(LUA54_LDIR)/?/init.lua]], cpath = [[$(LUA54_CDIR)/?.so]] }|' \
	    bin/toolgate > $(DESTDIR)$(BINDIR)/toolgate
	chmod 755 $(DESTDIR)$(BINDIR)/toolgate
	install -m 644 docs/toolgate.1 $(DESTDIR)$(MANDIR)/man1/toolgate.1
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v $(LDCONFIG) >/dev/null; then \
	    echo $(LDCONFIG); $(LDCONFIG); fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/toolgate $(DESTDIR)$(MANDIR)/man1/toolgate.1 \
	    $(DESTDIR)$(LIBDIR)/libtoolgate.a $(DESTDIR)$(LIBDIR)/libtoolgate.so \
	    $(DESTDIR)$(LIBDIR)/libtoolgate.so.0 $(DESTDIR)$(LIBDIR)/libtoolgate.so.$(VERSION) \
	    $(DESTDIR)$(INCLUDEDIR)/toolgate.h $(DESTDIR)$(LIBDIR)/pkgconfig/toolgate.pc \
	    $(DESTDIR)$(LUA54_CDIR)/toolgate/core_c.so $(DESTDIR)$(LUA54_CDIR)/toolgate/proc_c.so \
	    $(DESTDIR)$(LUAJIT_CDIR)/libtoolgate.so \
	    $(POLICIES:policies/%=$(DESTDIR)$(POLICYDIR)/%)
	for d in $(LUA54_LDIR) $(LUAJIT_LDIR); do \
	    rm -f $(DESTDIR)$$d/toolgate.lua $(LUA_MODS:lua/%=$(DESTDIR)$$d/%) $(LUA_CLI:lua/%=$(DESTDIR)$$d/%) \
	        $(LUA_STATE:lua/%=$(DESTDIR)$$d/%) $(LUA_MCP:lua/%=$(DESTDIR)$$d/%); \
	    rmdir $(DESTDIR)$$d/toolgate/cli $(DESTDIR)$$d/toolgate/state $(DESTDIR)$$d/toolgate/mcp $(DESTDIR)$$d/toolgate \
	        2>/dev/null || true; \
	done
	-rmdir $(DESTDIR)$(LUA54_CDIR)/toolgate $(DESTDIR)$(POLICYDIR) $(DESTDIR)$(DATADIR)/toolgate 2>/dev/null
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v $(LDCONFIG) >/dev/null; then \
	    echo $(LDCONFIG); $(LDCONFIG); fi

# ---- docs and lint --------------------------------------------------------------

# The Lua API reference (LDoc, config.ld) in $(BUILD)/docs; the C API is
# documented in core/toolgate.h, the command in docs/toolgate.1.
docs:
	ldoc -q -d $(BUILD)/docs .

# luacheck, cppcheck, clang-format, the man page (TAP; make test runs it too).
lint:
	@BUILD="$(BUILD)" LUAJIT="$(LUAJIT)" sh mk/lint.sh

# ---- hostile input: sanitizers, fuzzing, soak ---------------------------------
# make test builds these too and runs them (mk/hostile.sh, TAP):
#   $(BUILD)/asan  the core, the C unit tests and the Lua 5.4 module under
#                  AddressSanitizer + UndefinedBehaviorSanitizer (ASAN_CC)
#   $(BUILD)/fuzz  the libFuzzer targets fuzz/fuzz_*.c, the core linked in (FUZZ_CC)
# make fuzz [FUZZ_SECONDS=60]  every fuzz target for that long; a crash is
#                              copied into fuzz/regressions/<target>/
# make soak                    1,000,000 decisions in one process, then 1,000,000 MCP
#                              calls through the nginx gateway; RSS stays flat
#                              (bench/soak.lua, bench/soak_nginx.sh)

ASAN_CC      ?= gcc
ASAN_CFLAGS  ?= -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
ASAN_BUILD    = $(BUILD)/asan
FUZZ_CC      ?= clang
FUZZ_CFLAGS  ?= -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_SECONDS ?= 60
FUZZ_BUILD    = $(BUILD)/fuzz
FUZZ_TARGETS  = $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_OBJ      = $(CORE_SRC:core/%.c=$(FUZZ_BUILD)/core/%.o)
FUZZ_WARN     = $(filter-out -Werror,$(WARN))

.PHONY: hostile-build asan-build asan-targets fuzz-build fuzz soak
.SECONDARY: $(FUZZ_OBJ)

hostile-build: asan-build fuzz-build

# The normal rules, in another build directory with other flags.
asan-build:
	@$(MAKE) --no-print-directory BUILD="$(ASAN_BUILD)" CC="$(ASAN_CC)" CFLAGS="$(ASAN_CFLAGS)" asan-targets

# (what asan-build asks of that sub-make: $(BUILD) is $(ASAN_BUILD) there)
asan-targets: $(LIB_A) $(LUA54_MOD) $(CTEST_BIN)
	@:

fuzz-build: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/%)
	@:

$(FUZZ_BUILD)/core/%.o: core/%.c $(CORE_HDR)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_WARN) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -Icore -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz.h $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_WARN) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Icore $< $(FUZZ_OBJ) -o $@ $(LIBS)

fuzz:
	@sh mk/deps.sh test
	@$(MAKE) --no-print-directory fuzz-build
	@BUILD="$(BUILD)" sh mk/hostile.sh fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

soak:
	@sh mk/deps.sh bench-nginx
	@$(MAKE) --no-print-directory all
	@$(LUA_ENV) $(LUA) bench/soak.lua
	@if command -v $(LUAJIT) >/dev/null; then $(LUA_ENV) $(LUAJIT) bench/soak.lua; fi
	@$(LUA_ENV) sh bench/soak_nginx.sh

clean:
	rm -rf $(BUILD)
