"""The benchmark suite: trimcp against the official SDK and FastMCP, in one command.

``runner`` (options, interleaving, progress), ``workloads`` (what each measures),
``impls`` (the servers compared), ``storm`` (the cancellation storm), ``procs`` (server
processes, idle-core check), ``report`` (aggregation, tables, chart).
"""
