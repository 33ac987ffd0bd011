-- What the gates (gate.lua, sliced.lua) run: the workload named in OLTPLAB_WORKLOAD (a
-- sysbench test name or a script path), then count_errors.lua on top of its hooks.
local workload = os.getenv("OLTPLAB_WORKLOAD")
if workload:sub(-4) == ".lua" then
   dofile(workload)
else
   require(workload)
end
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "count_errors.lua")
