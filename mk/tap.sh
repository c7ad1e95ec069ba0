# mk/tap.sh -- TAP helpers for the shell suites of make test (sourced by
# test-install.sh and test-rock.sh, which set n=0 first).

ok() {
  n=$((n + 1))
  echo "ok $n - $1"
}
# not_ok NAME [LOG [head|tail]]: a failure, with 30 lines of LOG (its head by
# default) as TAP comments
not_ok() {
  n=$((n + 1))
  echo "not ok $n - $1"
  [ -n "${2:-}" ] && [ -f "$2" ] && "${3:-head}" -30 "$2" | sed 's/^/# /'
}
# same OUTPUT EXPECTED NAME
same() {
  if [ "$1" = "$2" ]; then ok "$3"; else
    not_ok "$3"
    printf '# got:      %s\n# expected: %s\n' "$1" "$2"
  fi
}
# The installed copy alone must answer: nothing from the checkout's env.
clean_env() {
  env -u LUA_PATH -u LUA_CPATH -u LUA_PATH_5_4 -u LUA_CPATH_5_4 -u TOOLGATE_LIB \
    -u TOOLGATE_POLICY_DIR -u TOOLGATE_ROOT -u LUA_INIT -u LUA_INIT_5_4 "$@"
}
