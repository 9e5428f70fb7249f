#!/usr/bin/env python3
"""Measures what one kernel costs on a GPU: 2000 launches of a one-element add, eagerly (the host's rate of PyTorch
operations, each a dispatch and a cudaLaunchKernel) and replayed from a CUDA graph (the GPU's gap between
back-to-back kernels, what a chain of short kernels such as the NCCL backend's busy-wait layers pays per kernel).
And a framework's cast of ResNet-50's 25 557 032 fp32 gradients to fp16 and back (PyTorch's `.half()` then
`.float()`), what the NCCL backend's cast kernels do around a collective with comm_dtype fp16.
Each: the median of 3 timings by CUDA events, each of 3 rounds after 1 warm-up round.

    python3 scripts/gpu_kernel_costs.py OUT.json
"""

import json
import statistics
import sys

import torch

from cuda_timing import timed


def per_round_s(fn, repeats=3):
    """The median of `repeats` timings of 3 rounds of fn after 1 warm-up round."""
    return statistics.median(timed(fn, 1, 3) for _ in range(repeats))


def main(out, n=2000):
    x = torch.zeros(1, device="cuda")

    def launches():
        for _ in range(n):
            x.add_(1)

    eager_s = per_round_s(launches) / n
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=torch.cuda.Stream()):
        launches()
    graph_s = per_round_s(graph.replay) / n
    gradients = torch.randn(25_557_032, device="cuda")
    cast_s = per_round_s(lambda: gradients.half().float())
    report = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "eager_launch_s": eager_s,
              "graph_kernel_s": graph_s, "cast_fp32_fp16_fp32_resnet50_s": cast_s}
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gpu_kernel_costs.py OUT.json")
    main(sys.argv[1])
