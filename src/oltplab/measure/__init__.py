"""Measuring a spec: the runner walks the plan, one session per engine and tier at a time,
each running its workloads through sysbench with the telemetry devices attached."""
