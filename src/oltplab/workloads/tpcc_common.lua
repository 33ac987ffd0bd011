-- The helpers of tpcc.lua (which loads this file with dofile and says what the workload
-- is): the thread's connection and its queries, the clock, the random values of clause
-- 4.3.2, and the cardinalities of clause 4.3.3.1 that the loader (tpcc_load.lua) and the
-- transactions share. Returns them as a table; the connection stays here, set by connect().

local ffi = require("ffi")
-- gate.lua and sliced.lua declare gettimeofday and usleep: other names here, or their
-- cdef would be a redefinition.
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } oltplab_tpcc_timespec;
int clock_gettime(int clock, oltplab_tpcc_timespec *now);
int poll(void *fds, unsigned long count, int timeout_ms);
]]

local floor = math.floor
local uniform = sysbench.rand.uniform

local ITEMS, CUSTOMERS, DISTRICTS, ORDERS = 100000, 3000, 10, 3000

-- --- connection and queries ------------------------------------------------------------

local con, pgsql

local function connect()
   local driver = sysbench.sql.driver()
   pgsql = driver:name() == "pgsql"
   con = driver:connect()
end

-- The SQL dialect and the error codes differ on PostgreSQL.
local function is_pgsql()
   return pgsql
end

local function exec(sql)
   con:query(sql)
end

-- Every row of a SELECT, each a table of strings (nil for NULL). Read by count (fetching
-- past the end logs an alert) and freed at once; only a SELECT's result is touched, as
-- reading another statement's result crashed sysbench 1.0.20 here.
local function select_rows(sql)
   local result = con:query(sql)
   local rows = {fields = result.nfields}
   for i = 1, result.nrows do
      rows[i] = result:fetch_row()
   end
   result:free()
   return rows
end

-- The first row's values (NULLs as nil), or nil when there is no row.
local function select_one(sql)
   local rows = select_rows(sql)
   if rows[1] == nil then
      return nil
   end
   return unpack(rows[1], 1, rows.fields)
end

local function sleep_ms(ms)
   ffi.C.poll(nil, 0, ms)
end

local clock = ffi.new("oltplab_tpcc_timespec")
local function now_s()
   ffi.C.clock_gettime(0, clock) -- CLOCK_REALTIME: the seconds printed are epoch seconds
   return tonumber(clock.tv_sec) + tonumber(clock.tv_nsec) / 1e9
end

-- --- random values (clause 4.3.2) -------------------------------------------------------

local function nurand(a, x, y, c)
   return (bit.bor(uniform(0, a), uniform(x, y)) + c) % (y - x + 1) + x
end

local patterns = {}
-- sysbench's generator turns each '@' into a random letter and each '#' into a digit.
local function random_string(mark, low, high)
   local length = uniform(low, high or low)
   local key = mark .. length
   local pattern = patterns[key]
   if pattern == nil then
      pattern = string.rep(mark, length)
      patterns[key] = pattern
   end
   return sysbench.rand.string(pattern)
end

local function astring(low, high)
   return random_string("@", low, high)
end

local function nstring(length)
   return random_string("#", length)
end

-- I_DATA and S_DATA: 10% hold "ORIGINAL" at a random place (clause 4.3.3.1).
local function data_string()
   local text = astring(26, 50)
   if uniform(1, 10) == 1 then
      local at = uniform(1, #text - 7)
      text = text:sub(1, at - 1) .. "ORIGINAL" .. text:sub(at + 8)
   end
   return text
end

local function address()
   return string.format("'%s','%s','%s','%s','%s11111'", astring(10, 20), astring(10, 20),
                        astring(10, 20), astring(2), nstring(4))
end

local SYLLABLES = {"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION",
                   "EING"}
local function last_name(number)
   return SYLLABLES[floor(number / 100) + 1] .. SYLLABLES[floor(number / 10) % 10 + 1] ..
             SYLLABLES[number % 10 + 1]
end

local function money(low_cents, high_cents)
   return uniform(low_cents, high_cents) / 100
end

return {
   ITEMS = ITEMS, CUSTOMERS = CUSTOMERS, DISTRICTS = DISTRICTS, ORDERS = ORDERS,
   connect = connect, is_pgsql = is_pgsql, exec = exec, select_rows = select_rows,
   select_one = select_one, sleep_ms = sleep_ms, now_s = now_s,
   nurand = nurand, astring = astring, nstring = nstring, data_string = data_string,
   address = address, last_name = last_name, money = money,
}
