# toolgate -- build, test, demo, bench.
#
#   make          the C core (build/libtoolgate.{a,so}) and the Lua 5.4 module
#   make test     installs missing Debian packages, builds, runs every suite,
#                 ends with one line "N passed, N failed"
#   make demo     the main job on the shipped examples
#   make bench    throughput next to the peers a user would pick instead
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
LIBS    = $(PCRE2_LIBS) -lm
WARN    = -std=c11 -Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes \
          -Wmissing-prototypes -Wformat=2 -Wcast-qual -Wvla
ALL_CFLAGS = $(WARN) $(CFLAGS) -fPIC -Icore

CORE_SRC  = $(wildcard core/*.c)
CORE_OBJ  = $(CORE_SRC:core/%.c=$(BUILD)/core/%.o)
CORE_HDR  = $(wildcard core/*.h)
CTEST_SRC = $(wildcard spec/c/test_*.c)
CTEST_BIN = $(CTEST_SRC:spec/c/%.c=$(BUILD)/spec/%)

LIB_A   = $(BUILD)/libtoolgate.a
LIB_SO  = $(BUILD)/libtoolgate.so
LUA54_MOD = $(BUILD)/lua54/toolgate/core_c.so

# What the in-tree Lua code needs to find its modules and libraries.
LUA_ENV = LUA_PATH="$(CURDIR)/lua/?.lua;$(CURDIR)/spec/?.lua;;" \
          LUA_CPATH="$(CURDIR)/$(BUILD)/lua54/?.so;$(CURDIR)/$(BUILD)/?.so;;" \
          TOOLGATE_LIB="$(CURDIR)/$(LIB_SO)"

.PHONY: all deps test check-c check-lua demo bench clean

all: deps $(LIB_A) $(LIB_SO) $(LUA54_MOD)

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

$(BUILD)/spec/%: spec/c/%.c spec/c/tap.h $(LIB_A) | $(BUILD)/spec
	$(CC) $(ALL_CFLAGS) -Ispec/c $< $(LIB_A) -o $@ $(LIBS)

$(BUILD)/core $(BUILD)/lua54/toolgate $(BUILD)/spec:
	mkdir -p $@

# ---- tests ------------------------------------------------------------------

test:
	@sh mk/deps.sh test
	@$(MAKE) --no-print-directory all $(CTEST_BIN)
	@$(LUA_ENV) BUILD="$(BUILD)" LUA="$(LUA)" LUAJIT="$(LUAJIT)" sh mk/run-tests.sh

# ---- demo and bench -----------------------------------------------------------

demo:
	@sh mk/deps.sh demo
	@$(MAKE) --no-print-directory all
	@$(LUA_ENV) LUA="$(LUA)" sh examples/demo.sh

bench:
	@sh mk/deps.sh bench
	@$(MAKE) --no-print-directory all $(BUILD)/bench/canon_bench $(BUILD)/bench/validate_bench
	@$(LUA_ENV) BUILD="$(BUILD)" sh bench/run.sh

$(BUILD)/bench/canon_bench: bench/canon_bench.c $(LIB_A) core/toolgate.h
	@mkdir -p $(BUILD)/bench
	$(CC) $(ALL_CFLAGS) $< $(LIB_A) -o $@ $(LIBS)

$(BUILD)/bench/validate_bench: bench/validate_bench.c $(LIB_A) core/toolgate.h
	@mkdir -p $(BUILD)/bench
	$(CC) $(ALL_CFLAGS) $< $(LIB_A) -o $@ $(LIBS)

clean:
	rm -rf $(BUILD)
