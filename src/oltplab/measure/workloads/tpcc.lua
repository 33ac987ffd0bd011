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

local ffi = require("ffi")
-- gate.lua and sliced.lua declare gettimeofday and usleep: other names here, or their
-- cdef would be a redefinition.
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } oltplab_tpcc_timespec;
int clock_gettime(int clock, oltplab_tpcc_timespec *now);
int poll(void *fds, unsigned long count, int timeout_ms);
]]

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

local floor, log, exp = math.floor, math.log, math.exp
local uniform = sysbench.rand.uniform

local TABLES = {"warehouse", "district", "customer", "history", "orders", "new_orders",
                "order_line", "item", "stock"}
local TYPES = {"new_order", "payment", "order_status", "delivery", "stock_level"}
local ITEMS, CUSTOMERS, DISTRICTS, ORDERS = 100000, 3000, 10, 3000
local FIRST_NEW_ORDER = 2101 -- loaded orders from here on are undelivered (clause 4.3.3.1)

-- --- connection and queries ------------------------------------------------------------

local con, pgsql

local function connect()
   local driver = sysbench.sql.driver()
   pgsql = driver:name() == "pgsql"
   con = driver:connect()
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

-- --- schema and loader (clauses 1.3 and 4.3.3) ------------------------------------------

local function create_tables()
   local ts = pgsql and "TIMESTAMP" or "DATETIME"
   local dists = {}
   for d = 1, DISTRICTS do
      dists[d] = string.format("s_dist_%02d CHAR(24)", d)
   end
   local ddl = {
      "CREATE TABLE warehouse (w_id INT NOT NULL, w_name VARCHAR(10), " ..
         "w_street_1 VARCHAR(20), w_street_2 VARCHAR(20), w_city VARCHAR(20), " ..
         "w_state CHAR(2), w_zip CHAR(9), w_tax DECIMAL(4,4), w_ytd DECIMAL(12,2), " ..
         "PRIMARY KEY (w_id))",
      "CREATE TABLE district (d_id SMALLINT NOT NULL, d_w_id INT NOT NULL, " ..
         "d_name VARCHAR(10), d_street_1 VARCHAR(20), d_street_2 VARCHAR(20), " ..
         "d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9), d_tax DECIMAL(4,4), " ..
         "d_ytd DECIMAL(12,2), d_next_o_id INT, PRIMARY KEY (d_w_id, d_id))",
      "CREATE TABLE customer (c_id INT NOT NULL, c_d_id SMALLINT NOT NULL, " ..
         "c_w_id INT NOT NULL, c_first VARCHAR(16), c_middle CHAR(2), c_last VARCHAR(16), " ..
         "c_street_1 VARCHAR(20), c_street_2 VARCHAR(20), c_city VARCHAR(20), " ..
         "c_state CHAR(2), c_zip CHAR(9), c_phone CHAR(16), c_since " .. ts .. ", " ..
         "c_credit CHAR(2), c_credit_lim DECIMAL(12,2), c_discount DECIMAL(4,4), " ..
         "c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2), c_payment_cnt SMALLINT, " ..
         "c_delivery_cnt SMALLINT, c_data VARCHAR(500), PRIMARY KEY (c_w_id, c_d_id, c_id))",
      "CREATE TABLE history (h_c_id INT, h_c_d_id SMALLINT, h_c_w_id INT, " ..
         "h_d_id SMALLINT, h_w_id INT, h_date " .. ts .. ", h_amount DECIMAL(6,2), " ..
         "h_data VARCHAR(24))",
      "CREATE TABLE orders (o_id INT NOT NULL, o_d_id SMALLINT NOT NULL, " ..
         "o_w_id INT NOT NULL, o_c_id INT, o_entry_d " .. ts .. ", o_carrier_id SMALLINT, " ..
         "o_ol_cnt SMALLINT, o_all_local SMALLINT, PRIMARY KEY (o_w_id, o_d_id, o_id))",
      "CREATE TABLE new_orders (no_o_id INT NOT NULL, no_d_id SMALLINT NOT NULL, " ..
         "no_w_id INT NOT NULL, PRIMARY KEY (no_w_id, no_d_id, no_o_id))",
      "CREATE TABLE order_line (ol_o_id INT NOT NULL, ol_d_id SMALLINT NOT NULL, " ..
         "ol_w_id INT NOT NULL, ol_number SMALLINT NOT NULL, ol_i_id INT, " ..
         "ol_supply_w_id INT, ol_delivery_d " .. ts .. ", ol_quantity SMALLINT, " ..
         "ol_amount DECIMAL(6,2), ol_dist_info CHAR(24), " ..
         "PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))",
      "CREATE TABLE item (i_id INT NOT NULL, i_im_id INT, i_name VARCHAR(24), " ..
         "i_price DECIMAL(5,2), i_data VARCHAR(50), PRIMARY KEY (i_id))",
      "CREATE TABLE stock (s_i_id INT NOT NULL, s_w_id INT NOT NULL, s_quantity SMALLINT, " ..
         table.concat(dists, ", ") .. ", s_ytd INT, s_order_cnt SMALLINT, " ..
         "s_remote_cnt SMALLINT, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id))",
      "CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first)",
      "CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
   }
   for _, statement in ipairs(ddl) do
      exec(statement)
   end
end

local function tables_present()
   local names = {}
   for i, name in ipairs(TABLES) do
      names[i] = "'" .. name .. "'"
   end
   local schema = pgsql and "current_schema()" or "DATABASE()"
   return tonumber(select_one("SELECT COUNT(*) FROM information_schema.tables " ..
                                 "WHERE table_schema = " .. schema ..
                                 " AND table_name IN (" .. table.concat(names, ",") ..
                                 ")"))
end

-- Rows gathered into multi-row INSERTs; each INSERT commits on its own (autocommit).
local function batch(table_name, size)
   local rows, count = {}, 0
   local self = {}
   function self.flush()
      if count > 0 then
         exec("INSERT INTO " .. table_name .. " VALUES " .. table.concat(rows, ",", 1, count))
         count = 0
      end
   end
   function self.add(values)
      count = count + 1
      rows[count] = "(" .. values .. ")"
      if count >= size then
         self.flush()
      end
   end
   return self
end

local function load_items()
   local items = batch("item", 1000)
   for i = 1, ITEMS do
      items.add(string.format("%d,%d,'%s',%.2f,'%s'", i, uniform(1, 10000), astring(14, 24),
                              money(100, 10000), data_string()))
   end
   items.flush()
end

local function load_stock(w)
   local stock = batch("stock", 500)
   for i = 1, ITEMS do
      local dists = {}
      for d = 1, DISTRICTS do
         dists[d] = "'" .. astring(24) .. "'"
      end
      stock.add(string.format("%d,%d,%d,%s,0,0,0,'%s'", i, w, uniform(10, 100),
                              table.concat(dists, ","), data_string()))
   end
   stock.flush()
end

local function load_customers(w, d, since)
   local customers, history = batch("customer", 300), batch("history", 1000)
   for c = 1, CUSTOMERS do
      -- clause 4.3.2.3: the first 1000 customers take every last name once
      local name = c <= 1000 and c - 1 or nurand(255, 0, 999, sysbench.opt.c_last_load)
      customers.add(string.format(
         "%d,%d,%d,'%s','OE','%s',%s,'%s','%s','%s',50000.00,%.4f,-10.00,10.00,1,0,'%s'",
         c, d, w, astring(8, 16), last_name(name), address(), nstring(16), since,
         uniform(1, 10) == 1 and "BC" or "GC", uniform(0, 5000) / 10000, astring(300, 500)))
      history.add(string.format("%d,%d,%d,%d,%d,'%s',10.00,'%s'", c, d, w, d, w, since,
                                astring(12, 24)))
   end
   customers.flush()
   history.flush()
end

local function load_orders(w, d, entry)
   local orders, lines = batch("orders", 1000), batch("order_line", 1000)
   local new_orders = batch("new_orders", 1000)
   local customers = {}
   for c = 1, CUSTOMERS do
      customers[c] = c
   end
   for c = CUSTOMERS, 2, -1 do -- a random permutation of the customers
      local other = uniform(1, c)
      customers[c], customers[other] = customers[other], customers[c]
   end
   for o = 1, ORDERS do
      local delivered = o < FIRST_NEW_ORDER
      local line_count = uniform(5, 15)
      orders.add(string.format("%d,%d,%d,%d,'%s',%s,%d,1", o, d, w, customers[o], entry,
                               delivered and tostring(uniform(1, 10)) or "NULL", line_count))
      for number = 1, line_count do
         lines.add(string.format("%d,%d,%d,%d,%d,%d,%s,5,%.2f,'%s'", o, d, w, number,
                                 uniform(1, ITEMS), w,
                                 delivered and "'" .. entry .. "'" or "NULL",
                                 delivered and 0 or money(1, 999999), astring(24)))
      end
      if not delivered then
         new_orders.add(string.format("%d,%d,%d", o, d, w))
      end
   end
   orders.flush()
   lines.flush()
   new_orders.flush()
end

local function load_warehouse(w)
   local started = now_s()
   local now = os.date("%Y-%m-%d %H:%M:%S")
   exec(string.format("INSERT INTO warehouse VALUES (%d,'%s',%s,%.4f,300000.00)", w,
                      astring(6, 10), address(), uniform(0, 2000) / 10000))
   load_stock(w)
   for d = 1, DISTRICTS do
      exec(string.format("INSERT INTO district VALUES (%d,%d,'%s',%s,%.4f,30000.00,%d)", d,
                         w, astring(6, 10), address(), uniform(0, 2000) / 10000, ORDERS + 1))
      load_customers(w, d, now)
      load_orders(w, d, now)
   end
   print(string.format("oltplab tpcc: loaded warehouse %d in %.1f s", w, now_s() - started))
end

local function cmd_prepare()
   connect()
   local tid, threads = sysbench.tid, sysbench.opt.threads
   if tid == 0 then
      create_tables()
      local started = now_s()
      load_items()
      print(string.format("oltplab tpcc: loaded %d items in %.1f s", ITEMS, now_s() - started))
   else
      while tables_present() < #TABLES do
         sleep_ms(200)
      end
   end
   for w = tid + 1, sysbench.opt.warehouses, threads do
      load_warehouse(w)
   end
end

local function cmd_cleanup()
   connect()
   for _, name in ipairs(TABLES) do
      exec("DROP TABLE IF EXISTS " .. name)
   end
end

sysbench.cmdline.commands = {
   prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
   cleanup = {cmd_cleanup},
}

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
