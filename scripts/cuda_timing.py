"""Timing on a GPU for the probe scripts (trace_ddp_nccl.py, gpu_kernel_costs.py)."""

import torch


def timed(fn, warmup, iters):
    """Mean seconds of fn() on the GPU, by CUDA events around iters calls after warmup calls."""
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / iters
