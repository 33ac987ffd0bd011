-- A script with a syntax error: loading it must fail with sysbench's own message.
require("oltp_common")

function event(
   execute_point_selects()
end
