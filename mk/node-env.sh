# Sourced by the scripts that start Node (mk/run-tests.sh, examples/demo.sh,
# bench/run.sh, bench/nginx.sh).  The MCP servers and SDK transports use the
# global crypto (crypto.randomUUID()), which Debian 12's Node 18 gives module
# code only with --experimental-global-webcrypto; later Nodes have it anyway.
# The flag goes into NODE_OPTIONS (so every node a test, the proxy or nginx
# starts gets it) only where this node accepts it.
if node --experimental-global-webcrypto -e 0 >/dev/null 2>&1; then
  case " ${NODE_OPTIONS:-} " in
    *" --experimental-global-webcrypto "*) ;;
    *) NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--experimental-global-webcrypto" ;;
  esac
  export NODE_OPTIONS
fi
