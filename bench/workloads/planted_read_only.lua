-- oltp_read_only with a known amount of extra server work: --planted_per_10=N adds N
-- primary-key point selects to every 10 transactions (after each one's commit, as
-- autocommit statements): 10 adds one to every transaction's 10 point selects and 4 range
-- queries, 15 one to every transaction and a second to every other one. 0 runs exactly
-- oltp_read_only's statements.
require("oltp_read_only")

sysbench.cmdline.options.planted_per_10 =
   {"Extra point selects per 10 transactions", 0}

local read_only_event = event
local transactions = 0

local function extra_point_select()
   -- oltp_common keeps its own helpers local: draw the table and id as they do.
   local table_number = sysbench.rand.uniform(1, sysbench.opt.tables)
   param[table_number].point_selects[1]:set(sysbench.rand.default(1, sysbench.opt.table_size))
   stmt[table_number].point_selects:execute()
end

function event()
   read_only_event()
   transactions = transactions + 1
   local planted = sysbench.opt.planted_per_10
   local extra = math.floor(planted / 10)
   if transactions % 10 < planted % 10 then
      extra = extra + 1
   end
   for _ = 1, extra do
      extra_point_select()
   end
end
