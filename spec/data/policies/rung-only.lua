-- A pipeline of the Resolution Rung alone, for specs of the rung's decisions.
return { name = "rung-only", version = "1", stages = { "rung" } }
