"""Workload kinds, each with the scripts it runs beside it: `kind` (what a kind is), `kinds`
(the registry), `sbtest` (sysbench's own tables; its read/write mix
`oltp_read_write_pct.lua`) and `tpcc` (the TPC-C-like kind: `tpcc.lua` and the files it
loads, its DDL one file a dialect). The gates every cell runs through are measure's."""
