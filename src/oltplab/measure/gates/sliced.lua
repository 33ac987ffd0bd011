-- Runs a workload only in this process's time slots, so that the cells of a round share
-- the same seconds of the host: slot k of every cycle of --slots slots of --slice_ms,
-- counted from --t0_ms (epoch milliseconds). The workload is a sysbench test name or a
-- script path, given in OLTPLAB_WORKLOAD. At the end each thread prints, per slice
-- it ran in, the events it started there and (thread 1 only, when --server_pid names a
-- local process) the server's CPU ticks over the slice:
--   SLICE <thread> <slice> <events> <server ticks or -1>
-- and thread 0 first says which slices were this cell's, so that the output alone tells
-- what the cell measured (oltplab rebuild and import read it so):
--   SLOTS <slot> <slots> <slices owned> <slice_ms>
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "workload.lua")

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_usec; } oltplab_timeval;
int gettimeofday(oltplab_timeval *tv, void *tz);
int usleep(unsigned int usec);
]]

sysbench.cmdline.options.slot = {"This process's slot in a cycle (0-based)", 0}
sysbench.cmdline.options.slots = {"Slots in a cycle", 2}
sysbench.cmdline.options.slice_ms = {"Slot length in milliseconds", 1000}
sysbench.cmdline.options.t0_ms = {"When slice 0 starts (epoch milliseconds)", 0}
sysbench.cmdline.options.server_pid = {"The server's process id (0: none)", 0}
sysbench.cmdline.options.owned = {"Whole slices this cell owns", 0}

local clock = ffi.new("oltplab_timeval")
local function now_ms()
   ffi.C.gettimeofday(clock, nil)
   return tonumber(clock.tv_sec) * 1000 + tonumber(clock.tv_usec) / 1000
end

-- utime + stime of the server, all its threads: fields 14 and 15 of /proc/PID/stat,
-- counted after the command name (which may hold spaces) closes.
local function server_ticks()
   local file = io.open("/proc/" .. sysbench.opt.server_pid .. "/stat")
   if file == nil then
      return nil
   end
   local text = file:read("*a")
   file:close()
   local fields = {}
   for field in text:match("%) (.*)"):gmatch("%S+") do
      fields[#fields + 1] = field
   end
   return tonumber(fields[12]) + tonumber(fields[13])
end

local inner_init, inner_event, inner_done = thread_init, event, thread_done
local thread, events, ticks = 0, {}, {}
local current, ticks_at_start = nil, nil

local function measures_server()
   return thread == 0 and sysbench.opt.server_pid > 0
end

local function close_slice()
   if current ~= nil and measures_server() then
      local now = server_ticks()
      if now ~= nil and ticks_at_start ~= nil then
         ticks[current] = now - ticks_at_start
      end
   end
   current = nil
end

function thread_init(thread_id)
   thread = thread_id
   if inner_init then
      inner_init(thread_id)
   end
end

function event()
   local opt = sysbench.opt
   while true do
      local elapsed = now_ms() - opt.t0_ms
      local slice = math.floor(elapsed / opt.slice_ms)
      if slice >= 0 and slice % opt.slots == opt.slot then
         if current ~= slice then
            close_slice()
            current = slice
            ticks_at_start = measures_server() and server_ticks() or nil
         end
         inner_event()
         events[slice] = (events[slice] or 0) + 1
         return
      end
      close_slice()
      local wait_ms = (slice + 1) * opt.slice_ms - elapsed
      ffi.C.usleep(math.max(100, math.floor(wait_ms * 1000)))
   end
end

function thread_done(thread_id)
   close_slice()
   local opt = sysbench.opt
   local lines = {}
   if thread_id == 0 then
      lines[1] = string.format("SLOTS %d %d %d %d", opt.slot, opt.slots, opt.owned, opt.slice_ms)
   end
   local slices = {}
   for slice in pairs(events) do
      slices[#slices + 1] = slice
   end
   table.sort(slices)
   for _, slice in ipairs(slices) do
      lines[#lines + 1] = string.format("SLICE %d %d %d %d", thread_id, slice, events[slice],
                                        ticks[slice] or -1)
   end
   -- One write for the thread's whole block: print() writes a line and its newline apart,
   -- and the threads end together, so their lines were spliced into one another.
   if #lines > 0 then
      io.stdout:write(table.concat(lines, "\n") .. "\n")
      io.stdout:flush()
   end
   if inner_done then
      inner_done(thread_id)
   end
end
