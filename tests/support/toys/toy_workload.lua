-- The toy workload kind's script (tests/support/toys/toy_workload.py): a table of its own,
-- toy_rows, loaded by `prepare`, dropped by `cleanup`, and measured by `run`: each event
-- reads one row and adds one to it, in a transaction.
sysbench.cmdline.options = {
   rows = {"Rows of the toy table", 1000},
}

local function connected()
   local drv = sysbench.sql.driver()
   return drv, drv:connect()
end

function cmd_prepare()
   local drv, con = connected()
   con:query("CREATE TABLE toy_rows (id INTEGER NOT NULL PRIMARY KEY, v INTEGER NOT NULL)")
   local values = {}
   for id = 1, sysbench.opt.rows do
      values[#values + 1] = "(" .. id .. ", 0)"
      if #values == 500 or id == sysbench.opt.rows then
         con:query("INSERT INTO toy_rows (id, v) VALUES " .. table.concat(values, ", "))
         values = {}
      end
   end
   con:disconnect()
end

function cmd_cleanup()
   local drv, con = connected()
   con:query("DROP TABLE IF EXISTS toy_rows")
   con:disconnect()
end

sysbench.cmdline.commands = {
   prepare = {cmd_prepare},
   cleanup = {cmd_cleanup},
}

function thread_init()
   drv, con = connected()
end

function thread_done()
   con:disconnect()
end

function event()
   local id = sysbench.rand.default(1, sysbench.opt.rows)
   con:query("BEGIN")
   con:query("SELECT v FROM toy_rows WHERE id = " .. id)
   con:query("UPDATE toy_rows SET v = v + 1 WHERE id = " .. id)
   con:query("COMMIT")
end
