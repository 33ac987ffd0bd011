-- A TPC-C-like workload for sysbench 1.0.20, written from the TPC-C specification
-- (revision 5.11, clauses 1, 2 and 4), for MySQL/MariaDB (--db-driver=mysql) and
-- PostgreSQL (--db-driver=pgsql). Not TPC-C: no keying or think times, no audit; each
-- thread is a terminal with a home warehouse, and every event is one transaction.
--   prepare (parallel): thread 0 creates the tables and loads ITEM; warehouses are dealt
--     to the threads.   cleanup: drops the nine tables.
--   run: each thread deals its own deck of transaction types (--mix) and prints, per epoch
--     second, one line per type it ran in that second (see the interface note, issue 45):
--     oltplab tpcc: second <s> thread <t> <type> committed=.. rollbacks=.. retries=..
--       gave_up=.. errors=..|- latency=..|-
--   init/done print SUM(d_next_o_id) before and after, and done checks the consistency
--   conditions 1-4 (clause 3.3.2) with --check=on.
-- Its helpers are in tpcc_common.lua, its loader and commands in tpcc_load.lua, its schema in
-- one DDL file a dialect (tpcc_mysql.sql, tpcc_postgresql.sql), all in this folder.

-- This script's folder; "" when sysbench was given the bare name, in this folder.
local HERE = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or ""

-- Numeric defaults are given as strings: sysbench 1.0.20 passes a number's default on as
-- an unanchored tostring() result, which the collector may free before it is parsed (seen
-- here as "Invalid value for the 'c_id' option").
sysbench.cmdline.options = {
   warehouses = {"Warehouses: loaded by prepare, used by run (1..W)", "1",
                 sysbench.cmdline.ARG_INT},
   mix = {"Cards per deck for new_order,payment,order_status,delivery,stock_level",
          "10,10,1,1,1"},
   c_last = {"Run-time NURand constant C for C_LAST (A=255)", "173",
             sysbench.cmdline.ARG_INT},
   c_id = {"Run-time NURand constant C for C_ID (A=1023)", "611", sysbench.cmdline.ARG_INT},
   ol_i_id = {"Run-time NURand constant C for OL_I_ID (A=8191)", "4027",
              sysbench.cmdline.ARG_INT},
   c_last_load = {"Load-time NURand constant C for C_LAST (A=255)", "91",
                  sysbench.cmdline.ARG_INT},
   check = {"Check consistency conditions 1-4 after the run", true},
   retries = {"Tries of a transaction after a deadlock or serialization error", "10",
              sysbench.cmdline.ARG_INT},
}

local common = dofile(HERE .. "tpcc_common.lua")
dofile(HERE .. "tpcc_load.lua")(common, HERE)

local floor, log, exp = math.floor, math.log, math.exp
local uniform = sysbench.rand.uniform
local ITEMS, CUSTOMERS, DISTRICTS = common.ITEMS, common.CUSTOMERS, common.DISTRICTS
local connect, is_pgsql, exec = common.connect, common.is_pgsql, common.exec
local select_rows, select_one, now_s = common.select_rows, common.select_one, common.now_s
local nurand, last_name, money = common.nurand, common.last_name, common.money

local TYPES = {"new_order", "payment", "order_status", "delivery", "stock_level"}

-- --- the five transactions (clause 2) ---------------------------------------------------
-- Each draws its inputs first (so that a retry repeats them) and returns a function that
-- runs the transaction and says "committed" or "rolled_back".

local thread_id, warehouses, home, home_district

local function other_warehouse()
   local w = uniform(1, warehouses - 1)
   return w >= home and w + 1 or w
end

local function customer_key(by_name)
   if by_name then
      return {last = last_name(nurand(255, 0, 999, sysbench.opt.c_last))}
   end
   return {id = nurand(1023, 1, CUSTOMERS, sysbench.opt.c_id)}
end

-- clause 2.5.2.2: by last name, the customer in the middle of the matches by C_FIRST
local function customer_id(w, d, key)
   if key.id ~= nil then
      return key.id
   end
   local rows = select_rows(string.format(
      "SELECT c_id FROM customer WHERE c_w_id = %d AND c_d_id = %d AND c_last = '%s' " ..
      "ORDER BY c_first", w, d, key.last))
   if #rows == 0 then
      error(string.format("no customer named %s in %d,%d", key.last, w, d))
   end
   return tonumber(rows[math.ceil(#rows / 2)][1])
end

local function new_order()
   local w, d = home, uniform(1, DISTRICTS)
   local c = nurand(1023, 1, CUSTOMERS, sysbench.opt.c_id)
   local lines = {}
   local all_local = 1
   for number = 1, uniform(5, 15) do
      local supply = home
      if warehouses > 1 and uniform(1, 100) == 1 then
         supply = other_warehouse()
         all_local = 0
      end
      lines[number] = {item = nurand(8191, 1, ITEMS, sysbench.opt.ol_i_id), supply = supply,
                       quantity = uniform(1, 10)}
   end
   if uniform(1, 100) == 1 then
      lines[#lines].item = ITEMS + 1 -- an unused item: the transaction rolls back
   end
   return function()
      exec("BEGIN")
      select_rows("SELECT w_tax FROM warehouse WHERE w_id = " .. w)
      local next_id = tonumber(select_one(string.format(
         "SELECT d_next_o_id FROM district WHERE d_w_id = %d AND d_id = %d FOR UPDATE", w,
         d)))
      exec(string.format(
         "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %d AND d_id = %d",
         w, d))
      select_rows(string.format("SELECT c_discount, c_last, c_credit FROM customer " ..
                                   "WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d", w, d, c))
      exec(string.format("INSERT INTO orders VALUES (%d,%d,%d,%d,CURRENT_TIMESTAMP,NULL,%d,%d)",
                         next_id, d, w, c, #lines, all_local))
      exec(string.format("INSERT INTO new_orders VALUES (%d,%d,%d)", next_id, d, w))
      for number, line in ipairs(lines) do
         local price = select_one("SELECT i_price, i_name, i_data FROM item WHERE i_id = " ..
                                     line.item)
         if price == nil then
            exec("ROLLBACK")
            return "rolled_back"
         end
         local quantity, dist = select_one(string.format(
            "SELECT s_quantity, s_dist_%02d, s_data FROM stock " ..
            "WHERE s_w_id = %d AND s_i_id = %d FOR UPDATE", d, line.supply, line.item))
         quantity = tonumber(quantity)
         if quantity >= line.quantity + 10 then
            quantity = quantity - line.quantity
         else
            quantity = quantity - line.quantity + 91
         end
         exec(string.format(
            "UPDATE stock SET s_quantity = %d, s_ytd = s_ytd + %d, " ..
            "s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + %d " ..
            "WHERE s_w_id = %d AND s_i_id = %d", quantity, line.quantity,
            line.supply == w and 0 or 1, line.supply, line.item))
         exec(string.format(
            "INSERT INTO order_line VALUES (%d,%d,%d,%d,%d,%d,NULL,%d,%.2f,'%s')", next_id, d,
            w, number, line.item, line.supply, line.quantity, line.quantity * tonumber(price),
            dist))
      end
      exec("COMMIT")
      return "committed"
   end
end

local function payment()
   local w, d = home, uniform(1, DISTRICTS)
   local c_w, c_d = w, d
   if warehouses > 1 and uniform(1, 100) > 85 then
      c_w, c_d = other_warehouse(), uniform(1, DISTRICTS)
   end
   local key = customer_key(uniform(1, 100) <= 60)
   local amount = money(100, 500000)
   return function()
      exec("BEGIN")
      exec(string.format("UPDATE warehouse SET w_ytd = w_ytd + %.2f WHERE w_id = %d", amount,
                         w))
      local w_name = select_one("SELECT w_name, w_street_1, w_street_2, w_city, w_state, " ..
                                   "w_zip FROM warehouse WHERE w_id = " .. w)
      exec(string.format(
         "UPDATE district SET d_ytd = d_ytd + %.2f WHERE d_w_id = %d AND d_id = %d", amount,
         w, d))
      local d_name = select_one(string.format(
         "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district " ..
         "WHERE d_w_id = %d AND d_id = %d", w, d))
      local c = customer_id(c_w, c_d, key)
      local credit, data = select_one(string.format(
         "SELECT c_credit, c_data, c_first, c_middle, c_last, c_street_1, c_street_2, " ..
         "c_city, c_state, c_zip, c_phone, c_since, c_credit_lim, c_discount, c_balance " ..
         "FROM customer WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d FOR UPDATE", c_w,
         c_d, c))
      local set_data = ""
      if credit == "BC" then
         local entry = string.format("%d %d %d %d %d %.2f|", c, c_d, c_w, d, w, amount)
         set_data = ", c_data = '" .. (entry .. data):sub(1, 500) .. "'"
      end
      exec(string.format(
         "UPDATE customer SET c_balance = c_balance - %.2f, " ..
         "c_ytd_payment = c_ytd_payment + %.2f, c_payment_cnt = c_payment_cnt + 1%s " ..
         "WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d", amount, amount, set_data, c_w,
         c_d, c))
      exec(string.format(
         "INSERT INTO history VALUES (%d,%d,%d,%d,%d,CURRENT_TIMESTAMP,%.2f,'%s    %s')", c,
         c_d, c_w, d, w, amount, w_name, d_name))
      exec("COMMIT")
      return "committed"
   end
end

local function order_status()
   local w, d = home, uniform(1, DISTRICTS)
   local key = customer_key(uniform(1, 100) <= 60)
   return function()
      exec("BEGIN")
      local c = customer_id(w, d, key)
      select_rows(string.format("SELECT c_balance, c_first, c_middle, c_last FROM customer " ..
                                   "WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d", w, d, c))
      local order = select_one(string.format(
         "SELECT o_id, o_entry_d, o_carrier_id FROM orders " ..
         "WHERE o_w_id = %d AND o_d_id = %d AND o_c_id = %d ORDER BY o_id DESC LIMIT 1", w,
         d, c))
      if order ~= nil then
         select_rows(string.format(
            "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d " ..
            "FROM order_line WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id = %s", w, d,
            order))
      end
      exec("COMMIT")
      return "committed"
   end
end

local function delivery()
   local w, carrier = home, uniform(1, 10)
   return function()
      exec("BEGIN")
      for d = 1, DISTRICTS do
         local order = select_one(string.format(
            "SELECT no_o_id FROM new_orders WHERE no_w_id = %d AND no_d_id = %d " ..
            "ORDER BY no_o_id LIMIT 1 FOR UPDATE", w, d))
         if order ~= nil then
            exec(string.format(
               "DELETE FROM new_orders WHERE no_w_id = %d AND no_d_id = %d AND no_o_id = %s",
               w, d, order))
            local c = select_one(string.format(
               "SELECT o_c_id FROM orders WHERE o_w_id = %d AND o_d_id = %d AND o_id = %s",
               w, d, order))
            exec(string.format("UPDATE orders SET o_carrier_id = %d " ..
                                  "WHERE o_w_id = %d AND o_d_id = %d AND o_id = %s",
                               carrier, w, d, order))
            local lines = string.format("ol_w_id = %d AND ol_d_id = %d AND ol_o_id = %s", w,
                                        d, order)
            exec("UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE " .. lines)
            local total = select_one("SELECT SUM(ol_amount) FROM order_line WHERE " .. lines)
            exec(string.format(
               "UPDATE customer SET c_balance = c_balance + %s, " ..
               "c_delivery_cnt = c_delivery_cnt + 1 " ..
               "WHERE c_w_id = %d AND c_d_id = %d AND c_id = %s", total, w, d, c))
         end
      end
      exec("COMMIT")
      return "committed"
   end
end

local function stock_level()
   local w, d, threshold = home, home_district, uniform(10, 20)
   return function()
      exec("BEGIN")
      local next_id = tonumber(select_one(string.format(
         "SELECT d_next_o_id FROM district WHERE d_w_id = %d AND d_id = %d", w, d)))
      select_rows(string.format(
         "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock " ..
         "WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id < %d AND ol_o_id >= %d " ..
         "AND s_w_id = %d AND s_i_id = ol_i_id AND s_quantity < %d", w, d, next_id,
         next_id - 20, w, threshold))
      exec("COMMIT")
      return "committed"
   end
end

local TRANSACTIONS = {new_order = new_order, payment = payment, order_status = order_status,
                      delivery = delivery, stock_level = stock_level}

-- --- the deck ---------------------------------------------------------------------------

local deck, dealt = {}, 0

local function build_deck()
   local counts = {}
   for count in sysbench.opt.mix:gmatch("[^,]+") do
      counts[#counts + 1] = tonumber(count)
   end
   if #counts ~= #TYPES then
      error("--mix needs " .. #TYPES .. " counts, got '" .. sysbench.opt.mix .. "'")
   end
   for i, kind in ipairs(TYPES) do
      if counts[i] == nil or counts[i] < 0 or counts[i] % 1 ~= 0 then
         error("--mix: bad count for " .. kind .. " in '" .. sysbench.opt.mix .. "'")
      end
      for _ = 1, counts[i] do
         deck[#deck + 1] = kind
      end
   end
   if #deck == 0 then
      error("--mix deals no transaction")
   end
   dealt = #deck
end

local function deal()
   if dealt == #deck then
      for i = #deck, 2, -1 do
         local other = uniform(1, i)
         deck[i], deck[other] = deck[other], deck[i]
      end
      dealt = 0
   end
   dealt = dealt + 1
   return deck[dealt]
end

-- --- per-second accounting and output ---------------------------------------------------

-- sysbench's latency histogram: 1024 buckets on a log scale over [0.001, 100000] ms
local LOG_LOW, LOG_SPAN, BUCKETS = log(0.001), log(100000) - log(0.001), 1024

local function bucket(ms)
   if ms <= 0 then
      return 0
   end
   local i = floor((log(ms) - LOG_LOW) * (BUCKETS - 1) / LOG_SPAN + 0.5)
   return math.max(0, math.min(BUCKETS - 1, i))
end

local second, tallies = nil, {}

local function counts_text(counts, render)
   local keys = {}
   for key in pairs(counts) do
      keys[#keys + 1] = key
   end
   if #keys == 0 then
      return "-"
   end
   table.sort(keys)
   for i, key in ipairs(keys) do
      keys[i] = render(key) .. ":" .. counts[key]
   end
   return table.concat(keys, ",")
end

local function bucket_ms(i)
   return string.format("%.3f", exp(i * LOG_SPAN / (BUCKETS - 1) + LOG_LOW))
end

local function flush_second()
   for _, kind in ipairs(TYPES) do
      local t = tallies[kind]
      if t ~= nil then
         io.stdout:write(string.format(
            "oltplab tpcc: second %d thread %d %s committed=%d rollbacks=%d retries=%d " ..
            "gave_up=%d errors=%s latency=%s\n", second, thread_id, kind, t.committed,
            t.rollbacks, t.retries, t.gave_up, counts_text(t.errors, tostring),
            counts_text(t.latency, bucket_ms)))
      end
   end
   io.stdout:flush()
   tallies = {}
end

local function tally(kind, ended, outcome, retries, errors, ms)
   local s = floor(ended)
   if second ~= nil and s ~= second then
      flush_second()
   end
   second = s
   local t = tallies[kind]
   if t == nil then
      t = {committed = 0, rollbacks = 0, retries = 0, gave_up = 0, errors = {}, latency = {}}
      tallies[kind] = t
   end
   if outcome == "committed" then
      t.committed = t.committed + 1
   elseif outcome == "rolled_back" then
      t.rollbacks = t.rollbacks + 1
   else
      t.gave_up = t.gave_up + 1
   end
   t.retries = t.retries + retries
   for code, n in pairs(errors) do
      t.errors[code] = (t.errors[code] or 0) + n
   end
   local b = bucket(ms)
   t.latency[b] = (t.latency[b] or 0) + 1
end

-- --- errors -----------------------------------------------------------------------------

local RETRYABLE = {mysql = {["1213"] = true, ["1205"] = true},
                   pgsql = {["40P01"] = true, ["40001"] = true}}

-- The code of a deadlock or serialization failure, nil for any other error.
local function retryable_code(err)
   if type(err) ~= "table" or err.sql_state == nil then
      return nil
   end
   local pgsql = is_pgsql()
   local code = pgsql and err.sql_state or tostring(err.sql_errno)
   if RETRYABLE[pgsql and "pgsql" or "mysql"][code] then
      return code
   end
   return nil
end

-- Whatever --mysql-ignore-errors says, these reach event() as catchable errors.
function sysbench.hooks.sql_error_ignorable(err)
   return retryable_code(err) ~= nil
end

local function describe(err)
   if type(err) == "table" then
      return string.format("tpcc: SQL error %s (%s): %s; query: %s", tostring(err.sql_errno),
                           tostring(err.sql_state), tostring(err.sql_errmsg),
                           tostring(err.query))
   end
   return tostring(err)
end

-- --- sysbench hooks ---------------------------------------------------------------------

function thread_init(tid)
   thread_id = tid
   warehouses = sysbench.opt.warehouses
   home = tid % warehouses + 1
   -- threads sharing a warehouse look at different districts in Stock-Level
   home_district = floor(tid / warehouses) % DISTRICTS + 1
   connect()
   build_deck()
   io.stdout:write(string.format("oltplab tpcc: thread %d home %d\n", tid, home))
end

function event()
   local kind = deal()
   local transaction = TRANSACTIONS[kind]()
   local started = now_s()
   local retries, errors, outcome = 0, {}, nil
   while outcome == nil do
      local ok, result = pcall(transaction)
      if ok then
         outcome = result
      else
         local code = retryable_code(result)
         if code == nil then
            -- a plain error, not sysbench's restart-event table: the run must stop here
            -- rather than go on with another transaction
            error(describe(result), 0)
         end
         exec("ROLLBACK")
         errors[code] = (errors[code] or 0) + 1
         if retries >= sysbench.opt.retries then
            outcome = "gave_up"
         else
            retries = retries + 1
         end
      end
   end
   local ended = now_s()
   tally(kind, ended, outcome, retries, errors, (ended - started) * 1000)
end

function thread_done()
   if second ~= nil then
      flush_second()
   end
end

-- --- before and after the run -----------------------------------------------------------

local function district_orders()
   return select_one("SELECT SUM(d_next_o_id) FROM district WHERE d_w_id <= " ..
                        sysbench.opt.warehouses)
end

local function by_district(sql)
   local found = {}
   for _, row in ipairs(select_rows(sql)) do
      found[row[1] .. "," .. row[2]] = row
   end
   return found
end

local function cents(text)
   return floor(tonumber(text) * 100 + 0.5)
end

-- Consistency conditions 1-4 of clause 3.3.2; each returns its failures as text.
local function check_conditions()
   local W = sysbench.opt.warehouses
   local failures = {{}, {}, {}, {}}
   local sums = {}
   for _, row in ipairs(select_rows("SELECT d_w_id, SUM(d_ytd) FROM district " ..
                                       "WHERE d_w_id <= " .. W .. " GROUP BY d_w_id")) do
      sums[row[1]] = row[2]
   end
   for _, row in ipairs(select_rows("SELECT w_id, w_ytd FROM warehouse WHERE w_id <= " ..
                                       W .. " ORDER BY w_id")) do
      if sums[row[1]] == nil or cents(row[2]) ~= cents(sums[row[1]]) then
         table.insert(failures[1], string.format("%s,0: w_ytd %s sum(d_ytd) %s", row[1],
                                                 row[2], tostring(sums[row[1]])))
      end
   end
   local orders = by_district("SELECT o_w_id, o_d_id, MAX(o_id), SUM(o_ol_cnt) FROM orders " ..
                                 "WHERE o_w_id <= " .. W .. " GROUP BY o_w_id, o_d_id")
   local news = by_district("SELECT no_w_id, no_d_id, MAX(no_o_id), MIN(no_o_id), " ..
                               "COUNT(*) FROM new_orders WHERE no_w_id <= " .. W ..
                               " GROUP BY no_w_id, no_d_id")
   local lines = by_district("SELECT ol_w_id, ol_d_id, COUNT(*) FROM order_line " ..
                                "WHERE ol_w_id <= " .. W .. " GROUP BY ol_w_id, ol_d_id")
   local districts = select_rows("SELECT d_w_id, d_id, d_next_o_id FROM district " ..
                                    "WHERE d_w_id <= " .. W .. " ORDER BY d_w_id, d_id")
   for _, row in ipairs(districts) do
      local key = row[1] .. "," .. row[2]
      local o, n, l = orders[key] or {}, news[key] or {}, lines[key] or {}
      local last = tostring(tonumber(row[3]) - 1)
      if last ~= tostring(o[3]) or last ~= tostring(n[3]) then
         table.insert(failures[2], string.format("%s: d_next_o_id-1 %s max(o_id) %s " ..
                                                    "max(no_o_id) %s", key, last,
                                                 tostring(o[3]), tostring(n[3])))
      end
      local span = n[3] and tonumber(n[3]) - tonumber(n[4]) + 1 or 0
      if span ~= tonumber(n[5] or 0) then
         table.insert(failures[3], string.format("%s: max-min+1 %d count %s", key, span,
                                                 tostring(n[5] or 0)))
      end
      if tonumber(o[4] or 0) ~= tonumber(l[3] or 0) then
         table.insert(failures[4], string.format("%s: sum(o_ol_cnt) %s count(order_line) %s",
                                                 key, tostring(o[4]), tostring(l[3])))
      end
   end
   return failures
end

function init()
   connect()
   io.stdout:write("oltplab tpcc: district_orders before=" .. district_orders() .. "\n")
   io.stdout:flush()
end

function done()
   connect()
   io.stdout:write("oltplab tpcc: district_orders after=" .. district_orders() .. "\n")
   if sysbench.opt.check then
      for k, found in ipairs(check_conditions()) do
         if #found == 0 then
            io.stdout:write(string.format("oltplab tpcc: consistency %d ok\n", k))
         end
         for _, what in ipairs(found) do
            io.stdout:write(string.format("oltplab tpcc: consistency %d failed %s\n", k, what))
         end
      end
   end
   io.stdout:flush()
end
