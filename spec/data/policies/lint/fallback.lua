-- lint: a context key read with a fallback or compared with nil is
-- expected absent; any other read (an operand, a truthiness test, an
-- index) of a key no context holds is still a finding
return {
  name = "f", version = "1",
  stages = {
    "rung",
    { name = "window", code = "WINDOW",
      run = function(call, tool, ctx)
        local now = ctx.now or os.time()
        local tz = ctx["tz"]
          or "UTC"
        if ctx.deadline ~= nil and now > ctx.deadline then return false, "too late" end
        if type(ctx.limit) == "number" and now > ctx.limit then return false end
        local epoch = ctx.epoch or 0
        if now < ctx.opens or now > ctx.closes then return false, "closed" end
        if not ctx.approved or ctx.region then now = now + ctx.region.offset end
        if ctx.tenant ~= "acme" then return false, "wrong tenant " .. tz end
        return now < ctx.quota and epoch < ctx.epoch
      end },
  },
}
