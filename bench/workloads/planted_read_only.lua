-- oltp_read_only with a known amount of extra server work: --planted_per_100=N adds N
-- primary-key point selects to every 100 transactions (after each one's commit, as
-- autocommit statements), spread evenly: 100 adds one to every transaction's 10 point
-- selects and 4 range queries, 150 one to every transaction and a second to every other
-- one. 0 runs exactly oltp_read_only's statements.
require("oltp_read_only")

sysbench.cmdline.options.planted_per_100 =
   {"Extra point selects per 100 transactions", 0}

local read_only_event = event
local transactions = 0
local planted_so_far = 0

local function extra_point_select()
   -- oltp_common keeps its own helpers local: draw the table and id as they do.
   local table_number = sysbench.rand.uniform(1, sysbench.opt.tables)
   param[table_number].point_selects[1]:set(sysbench.rand.default(1, sysbench.opt.table_size))
   stmt[table_number].point_selects:execute()
end

function event()
   read_only_event()
   transactions = transactions + 1
   -- As many extra selects as bring the total to planted_per_100 / 100 of the
   -- transactions so far: evenly spread, never more than one ahead.
   local due = math.floor(transactions * sysbench.opt.planted_per_100 / 100)
   for _ = 1, due - planted_so_far do
      extra_point_select()
   end
   planted_so_far = due
end
