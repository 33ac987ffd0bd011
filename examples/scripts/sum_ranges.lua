-- An example of your own workload: each event is --sums SELECT SUM() range queries
-- on the sbtest tables that sysbench's oltp_common prepares.
require("oltp_common")

sysbench.cmdline.options.sums = {"SELECT SUM() queries per event", 2}

function prepare_statements()
   sysbench.opt.sum_ranges = sysbench.opt.sums
   prepare_sum_ranges()
end

function event()
   execute_sum_ranges()
end
