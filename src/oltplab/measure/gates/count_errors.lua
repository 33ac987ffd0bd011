-- Counts the errors sysbench ignores (deadlocks, lock wait timeouts, lost connections it
-- reconnects after), by code: MySQL's error number, or PostgreSQL's SQLSTATE where there
-- is none. Loaded after the workload, whose hooks it calls on. When a thread ends it
-- prints what it counted, one line, before sysbench's summary:
--   oltplab: ignored errors: 1205=2 1213=45
local counts = {}

local restart_before = sysbench.hooks.before_restart_event
function sysbench.hooks.before_restart_event(errdesc)
   local code = errdesc.sql_errno
   if code == nil or code == 0 then
      code = errdesc.sql_state
   end
   code = tostring(code or "unknown")
   counts[code] = (counts[code] or 0) + 1
   if restart_before ~= nil then
      restart_before(errdesc)
   end
end

local done_before = thread_done
function thread_done(...)
   local said = {}
   for code, count in pairs(counts) do
      said[#said + 1] = code .. "=" .. count
   end
   if #said > 0 then
      table.sort(said)
      io.stdout:write("oltplab: ignored errors: " .. table.concat(said, " ") .. "\n")
      io.stdout:flush()
   end
   if done_before ~= nil then
      return done_before(...)
   end
end
