-- The loader of tpcc.lua's nine tables (clause 4.3.3), and its prepare (parallel: thread 0
-- creates the tables and loads ITEM; warehouses are dealt to the threads) and cleanup (drops
-- the tables) commands. Returns a function that, given the helpers of tpcc_common.lua and
-- the folder of the scripts, sets sysbench.cmdline.commands. The schema (clause 1.3) is
-- data: one DDL file a dialect in that folder, tpcc_mysql.sql and tpcc_postgresql.sql.

local TABLES = {"warehouse", "district", "customer", "history", "orders", "new_orders",
                "order_line", "item", "stock"}
local FIRST_NEW_ORDER = 2101 -- loaded orders from here on are undelivered (clause 4.3.3.1)

local uniform = sysbench.rand.uniform

-- A DDL file's statements: `--` comments dropped to the line's end, split at semicolons.
local function statements_in(path)
   local file, problem = io.open(path)
   if file == nil then
      error("tpcc: cannot read its DDL: " .. problem, 0)
   end
   local sql = file:read("*a"):gsub("%-%-[^\n]*", "")
   file:close()
   local found = {}
   for statement in sql:gmatch("[^;]+") do
      statement = statement:match("^%s*(.-)%s*$")
      if statement ~= "" then
         found[#found + 1] = statement
      end
   end
   if #found == 0 then
      error("tpcc: no statement in its DDL " .. path, 0)
   end
   return found
end

return function(common, here)
   -- Both dialects' files are read as the script loads, in every thread: a missing or empty
   -- one fails `sysbench tpcc.lua help`, oltplab's check before anything is provisioned,
   -- not the load.
   local ddl = {mysql = statements_in(here .. "tpcc_mysql.sql"),
                postgresql = statements_in(here .. "tpcc_postgresql.sql")}
   local ITEMS, CUSTOMERS, DISTRICTS, ORDERS = common.ITEMS, common.CUSTOMERS,
                                               common.DISTRICTS, common.ORDERS
   local connect, is_pgsql, exec, select_one = common.connect, common.is_pgsql, common.exec,
                                               common.select_one
   local sleep_ms, now_s, nurand = common.sleep_ms, common.now_s, common.nurand
   local astring, nstring, data_string = common.astring, common.nstring, common.data_string
   local address, last_name, money = common.address, common.last_name, common.money

   local function create_tables()
      for _, statement in ipairs(ddl[is_pgsql() and "postgresql" or "mysql"]) do
         exec(statement)
      end
   end

   local function tables_present()
      local names = {}
      for i, name in ipairs(TABLES) do
         names[i] = "'" .. name .. "'"
      end
      local schema = is_pgsql() and "current_schema()" or "DATABASE()"
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
end
