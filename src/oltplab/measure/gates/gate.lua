-- Every cell's sysbench runs its workload through this script. It counts the errors
-- sysbench ignores, by code (count_errors.lua), and, given --stop_file (adaptive cells),
-- ends each thread after its current event once that file exists (looked for ten times a
-- second per thread): sysbench stops early and prints its summary as at any end. The
-- workload is a sysbench test name or a script path, given in OLTPLAB_WORKLOAD.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "workload.lua")

sysbench.cmdline.options.stop_file = {"End the run once this file exists", ""}

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_usec; } oltplab_stop_timeval;
int gettimeofday(oltplab_stop_timeval *tv, void *tz);
]]

local clock = ffi.new("oltplab_stop_timeval")
local function now_ms()
   ffi.C.gettimeofday(clock, nil)
   return tonumber(clock.tv_sec) * 1000 + tonumber(clock.tv_usec) / 1000
end

local inner_event = event
local looked_at = 0

function event(...)
   local stop_file = sysbench.opt.stop_file
   if stop_file ~= "" then
      local now = now_ms()
      if now - looked_at >= 100 then
         looked_at = now
         local found = io.open(stop_file)
         if found ~= nil then
            found:close()
            return true -- sysbench's thread loop ends on an event that returns a value
         end
      end
   end
   return inner_event(...)
end
