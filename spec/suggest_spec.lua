-- toolgate.suggest: the valid name a mistyped one most likely meant.
describe("toolgate.suggest", function()
  local suggest = require "toolgate.suggest"
  local KNOWN = { "closed", "on_bad_name", "on_collision", "on_confusable", "on_shadowing", "sources" }

  it("names the valid name one or two edits away, transpositions counting one", function()
    assert.equal("closed", suggest.closest("clossed", KNOWN))    -- one added
    assert.equal("closed", suggest.closest("clsed", KNOWN))      -- one dropped
    assert.equal("closed", suggest.closest("clozed", KNOWN))     -- one changed
    assert.equal("closed", suggest.closest("colsed", KNOWN))     -- two swapped
    assert.equal("closed", suggest.closest("cloesd", KNOWN))
    assert.equal("on_shadowing", suggest.closest("on_shadowign", KNOWN))
    assert.equal("on_shadowing", suggest.closest("onshadowng", KNOWN)) -- two edits in a long name
    assert.equal("max_depth", suggest.closest("max_depht", { "max_depth", "max_items" }))
    assert.equal("reject", suggest.closest("rejet", { "allow", "error", "reject" }))
  end)

  it("names nothing beyond two edits, or beyond a third of a short name, or for the name itself", function()
    assert.is_nil(suggest.closest("clo", KNOWN))
    assert.is_nil(suggest.closest("xxxxxx", KNOWN))
    assert.is_nil(suggest.closest("closed", KNOWN))
    assert.equal("name", suggest.closest("nmae", { "name" }))   -- a swap is one edit
    assert.is_nil(suggest.closest("nxmx", { "name" }))          -- two of four letters: not a typo
    assert.is_nil(suggest.closest("foo", { "run", "code" }))
    assert.is_nil(suggest.closest(42, KNOWN))
    assert.equal("", suggest.hint("zzz", KNOWN))
    assert.equal(' (did you mean "closed"?)', suggest.hint("closd", KNOWN))
  end)

  it("takes the first of the nearest, in the list's order", function()
    assert.equal("abcd", suggest.closest("abce", { "abcd", "abcf" }))
    assert.equal("abcf", suggest.closest("abce", { "abcf", "abcd" }))
    assert.equal("abce1", suggest.closest("abce", { "abcdef", "abce1" }))
  end)
end)
