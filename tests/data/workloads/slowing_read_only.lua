-- oltp_read_only that slows down as it runs: every transaction adds one primary-key point
-- select per --slowing_every seconds since the thread started, so TPS keeps falling (a cell
-- made to drift, for the adaptive stopping rule to wait on). With --slowing_on, only on
-- servers whose VERSION() holds that text: one matrix then has a flat cell and a drifting one.
require("oltp_read_only")

sysbench.cmdline.options.slowing_every = {"Seconds per extra point select", 2}
sysbench.cmdline.options.slowing_on = {"Slow down only where VERSION() holds this", ""}

local read_only_init = thread_init
local slowing = true

function thread_init(...)
   read_only_init(...)
   if sysbench.opt.slowing_on ~= "" then
      local version = con:query_row("SELECT VERSION()")
      slowing = string.find(version, sysbench.opt.slowing_on, 1, true) ~= nil
   end
end

local read_only_event = event
local started = nil

function event()
   read_only_event()
   if not slowing then
      return
   end
   started = started or os.time()
   local extra = math.floor((os.time() - started) / sysbench.opt.slowing_every)
   for _ = 1, extra do
      local table_number = sysbench.rand.uniform(1, sysbench.opt.tables)
      param[table_number].point_selects[1]:set(sysbench.rand.default(1, sysbench.opt.table_size))
      stmt[table_number].point_selects:execute()
   end
end
