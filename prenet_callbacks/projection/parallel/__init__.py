"""Parallel: what a step costs when several devices share it.

When it runs: for every projected row with more than one GPU. Data parallelism: `data_parallel` (DDP buckets,
ZeRO 1-3, FSDP, offload, and what overlaps with backward) over the node's `links` (NVLink, xGMI, PCIe) and the
target's `fabric` (one node or several). Tensor and pipeline parallelism: `model_layout` (the degrees and the
schedule a target names), `tensor_split` and `layout_workload` (one rank's share of the step), `layout_comm`
(its collectives and sends), `pipeline` (the schedule's time and a rank's activation memory).

What it may touch: workloads and the hardware catalog's interconnect specs; it builds no rows.
"""
