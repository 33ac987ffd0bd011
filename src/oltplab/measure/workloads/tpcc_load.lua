-- The schema and the loader of tpcc.lua's nine tables (clauses 1.3 and 4.3.3), and its
-- prepare (parallel: thread 0 creates the tables and loads ITEM; warehouses are dealt to the
-- threads) and cleanup (drops the tables) commands. Returns a function that, given the
-- helpers of tpcc_common.lua, sets sysbench.cmdline.commands.

local TABLES = {"warehouse", "district", "customer", "history", "orders", "new_orders",
                "order_line", "item", "stock"}
local FIRST_NEW_ORDER = 2101 -- loaded orders from here on are undelivered (clause 4.3.3.1)

local uniform = sysbench.rand.uniform

return function(common)
   local ITEMS, CUSTOMERS, DISTRICTS, ORDERS = common.ITEMS, common.CUSTOMERS,
                                               common.DISTRICTS, common.ORDERS
   local connect, is_pgsql, exec, select_one = common.connect, common.is_pgsql, common.exec,
                                               common.select_one
   local sleep_ms, now_s, nurand = common.sleep_ms, common.now_s, common.nurand
   local astring, nstring, data_string = common.astring, common.nstring, common.data_string
   local address, last_name, money = common.address, common.last_name, common.money

   local function create_tables()
      local ts = is_pgsql() and "TIMESTAMP" or "DATETIME"
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
