-- oltp_read_write beside which, once the file named by --hold_open_when exists, one thread
-- holds a transaction open for the whole run: purge may not remove what its snapshot could
-- still read, so the history list grows with every transaction while TPS stays flat (a cell
-- whose engine has not settled, for the adaptive stopping rule to wait on). That thread
-- does nothing else but wait a second per event, so it adds about one transaction a second.
require("oltp_read_write")

sysbench.cmdline.options.hold_open_when = {"Hold a transaction open once this file exists", ""}

local ffi = require("ffi")
ffi.cdef("int usleep(unsigned int microseconds);")

local read_write_init = thread_init
local holding = false

function thread_init(...)
   read_write_init(...)
   local marker = io.open(sysbench.opt.hold_open_when, "r")
   if sysbench.tid == 0 and marker ~= nil then
      marker:close()
      holding = true
      con:query("START TRANSACTION WITH CONSISTENT SNAPSHOT")
      con:query("SELECT id FROM sbtest1 LIMIT 1")
   end
end

local read_write_event = event

function event()
   if holding then
      ffi.C.usleep(1000000)
      return
   end
   read_write_event()
end
