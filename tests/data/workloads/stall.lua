-- Point selects, and after every --stall-every events of a thread a pause of --stall-ms:
-- a stall planted at known points, for the open-loop latency tests.
require("oltp_common")

local ffi = require("ffi")
ffi.cdef [[int usleep(unsigned int usec);]]

sysbench.cmdline.options.stall_every = {"Pause after this many events of a thread", 200}
sysbench.cmdline.options.stall_ms = {"Milliseconds each pause lasts", 500}

local events = 0

function prepare_statements()
   prepare_point_selects()
end

function event()
   execute_point_selects()
   events = events + 1
   if events % sysbench.opt.stall_every == 0 then
      ffi.C.usleep(sysbench.opt.stall_ms * 1000)
   end
end
