-- lint: arg_accept = arg_reject leaves ARG_UNSTABLE no band
return {
  name = "o", version = "1",
  consistency = {
    arg_accept = 0.5,
    arg_reject = 0.5,
  },
}
