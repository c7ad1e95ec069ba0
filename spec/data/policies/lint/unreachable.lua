-- lint: 4 samples agree at least 1/4 = 0.25, so no ARG_DISAGREE at 4; RESULT_UNSTABLE has no band
return {
  name = "u", version = "1",
  consistency = {
    min_samples = 4,
    arg_reject = 0.25,
    result_accept = 0.7,
    result_quarantine = 0.7,
  },
}
