#!/bin/sh
# Installs the Debian packages toolgate needs to build, test, demo and bench,
# and only those that are missing (a no-op, and offline, once all are there).
# Usage: mk/deps.sh [build|demo|test|bench|bench-nginx]   (each set includes build)
set -eu
set_name=${1:-build}

build="make gcc pkg-config lua5.4 liblua5.4-dev lua-cjson luajit2 libluajit2-5.1-dev libxxhash-dev libpcre2-dev lua-sql-sqlite3"
# (lua-sql-sqlite3: the local state of the stdio proxy and toolgate approvals, under Lua 5.4 and LuaJIT)
# (clang + libclang-rt-14-dev: libFuzzer and its sanitizers; valgrind: memcheck of the CLI)
# (nginx, its lua module and lua-resty-core: the MCP gateway, toolgate gateway; curl: its tests)
gateway="nginx libnginx-mod-http-lua lua-resty-core lua-resty-lrucache"
# (redis-server, lua-nginx-redis: a fleet of gateways sharing state on Redis, toolgate.state.redis;
# openssl: the certificates of its TLS test)
fleet="redis-server lua-nginx-redis openssl"
demo="$build python3 nodejs npm curl $gateway"
# (librsvg2-bin: rsvg-convert renders toolgate sweep's SVG in its spec;
#  chromium: opens sweep's HTML report headless and screenshots it, so a
#  script error in the report fails a test -- about 290 MB, once per machine)
test="$build lua-busted xxhash locales python3 nodejs npm luarocks lua-check lua-ldoc cppcheck clang-format groff-base clang libclang-rt-14-dev valgrind librsvg2-bin chromium $gateway $fleet curl"
# (libsimdjson-dev, g++: the parse floor make bench prints)
bench="$build python3 nodejs npm libsimdjson-dev g++"
bench_nginx="$build nodejs npm $gateway $fleet wrk"

case "$set_name" in
  build) want=$build ;;
  demo) want=$demo ;;
  test) want=$test ;;
  bench) want=$bench ;;
  bench-nginx) want=$bench_nginx ;;
  *) echo "mk/deps.sh: unknown package set '$set_name'" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
  # nodejs/npm: any working node and npm will do (e.g. a newer one from elsewhere)
  case "$p" in
    nodejs) command -v node >/dev/null 2>&1 && continue ;;
    npm) command -v npm >/dev/null 2>&1 && continue ;;
  esac
  st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$st" = installed ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "toolgate needs these Debian packages:$missing" >&2
  echo "install them as root: apt-get install$missing" >&2
  exit 1
fi
echo "mk/deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists yet; refresh them once if install fails.
apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1 || {
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends $missing
}
