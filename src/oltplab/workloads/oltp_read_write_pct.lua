-- oltplab's read/write mix: every event is one point SELECT or one index UPDATE, drawn
-- with the odds --read-percent / --write-percent, inside the usual BEGIN ... COMMIT
-- (none with --skip_trx). Runs on the sbtest tables of sysbench's oltp_common.

require("oltp_common")

sysbench.cmdline.options.read_percent =
   {"Percent of events that are a point SELECT", 80}
sysbench.cmdline.options.write_percent =
   {"Percent of events that are an index UPDATE", 20}

function prepare_statements()
   local reads, writes = sysbench.opt.read_percent, sysbench.opt.write_percent
   if reads < 0 or writes < 0 or reads + writes ~= 100 then
      error(string.format("--read-percent (%d) and --write-percent (%d) must be at " ..
                          "least 0 and add up to 100", reads, writes))
   end
   -- One statement per event: the drawn one.
   sysbench.opt.point_selects = 1
   sysbench.opt.index_updates = 1

   if not sysbench.opt.skip_trx then
      prepare_begin()
      prepare_commit()
   end
   prepare_point_selects()
   prepare_index_updates()
end

function event()
   if not sysbench.opt.skip_trx then
      begin()
   end
   -- Drawn uniformly, whatever --rand-type says: that one picks the rows.
   if sysbench.rand.uniform(1, 100) <= sysbench.opt.read_percent then
      execute_point_selects()
   else
      execute_index_updates()
   end
   if not sysbench.opt.skip_trx then
      commit()
   end
end
