#!/usr/bin/env python3
"""Measures how compute slows while a communication-like kernel holds some of a GPU's SMs: the mechanism of the
simulator's compute-communication interference (sim/step/interference.cpp prices compute at (SMs - channels) / SMs
of its speed while a collective's channels run, one CTA per channel).

    python3 scripts/gpu_interference.py OUT.json

For k = 0, 1, 2, 4, 8, 16, 32, 64 blocks of a copy kernel (512 threads each, as an NCCL channel's CTA with the
Simple protocol: tuning.cc simpleDefaultThreads, NCCL_SIMPLE_MAX_NTHREADS; each block
streams float4 copies through a 1 GiB buffer for a fixed number of its SM's clock cycles: 3 x the overlapped work's
time alone), times on another stream: a bf16 8192^3 matrix product (compute-bound), an fp32 add of 2 x 256 Mi
elements (memory-bound), 20 of each, and 5 training steps of ResNet-50 (batch 256, bf16 autocast, channels-last),
after 3 warm-ups, by CUDA events. Writes each time, its slowdown against k = 0,
the model's (SMs / (SMs - k)), and the bytes per second the copy blocks moved meanwhile.
"""

import json
import sys

import cupy
import torch

COPY_KERNEL = cupy.RawKernel(r"""
extern "C" __global__ void copy_for(const float4* src, float4* dst, unsigned long long n, long long cycles,
                                    unsigned long long* copied) {
  const long long start = clock64();
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = first, done = 0;
  while (clock64() - start < cycles) {
    for (int r = 0; r < 32; ++r) {
      dst[i] = src[i];
      i += stride;
      if (i >= n) i = first;
    }
    done += 32;
  }
  atomicAdd(copied, done);
}
""", "copy_for")


def resnet50_step(batch=256):
    """One training step of torchvision's ResNet-50: bf16 autocast, channels-last, SGD (no DDP)."""
    import torchvision

    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    return step


def timed_on(stream, fn, iters):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        start.record()
        for _ in range(iters):
            fn()
        end.record()
    return start, end


def main(out):
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    clock_hz = cupy.cuda.runtime.getDeviceProperties(0)["clockRate"] * 1e3
    n4 = (1 << 30) // 16
    src, dst = cupy.zeros(n4 * 4, dtype=cupy.float32), cupy.zeros(n4 * 4, dtype=cupy.float32)
    copied = cupy.zeros(1, dtype=cupy.uint64)
    a, b = (torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    x, y = (torch.randn(256 << 20, device="cuda") for _ in range(2))
    compute, comm = torch.cuda.Stream(), torch.cuda.Stream()
    with torch.cuda.stream(compute):
        step = resnet50_step()
    # name: (operation, timed iterations)
    ops = {"matmul_bf16_8192": (lambda: a @ b, 20), "add_fp32_256Mi": (lambda: torch.add(x, y), 20),
           "resnet50_bf16_b256_step": (step, 5)}
    with torch.cuda.stream(compute):
        for fn, _ in ops.values():  # warm-up
            for _ in range(3):
                fn()
    torch.cuda.synchronize()
    window_s = {}  # how long the copy blocks run: 3 x the operations' time alone (k = 0, measured first)
    rows = []
    for k in [0, 1, 2, 4, 8, 16, 32, 64]:
        row = {"blocks": k, "model_slowdown": sms / (sms - k)}
        for name, (fn, iters) in ops.items():
            copied.fill(0)
            torch.cuda.synchronize()
            copy_start, copy_end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if k:
                copy_start.record(comm)
                with cupy.cuda.ExternalStream(comm.cuda_stream):
                    cycles = cupy.int64(int(window_s[name] * clock_hz))
                    COPY_KERNEL((k,), (512,), (src, dst, cupy.uint64(n4), cycles, copied))
                copy_end.record(comm)
            start, end = timed_on(compute, fn, iters)
            torch.cuda.synchronize()
            row[name + "_s"] = start.elapsed_time(end) / 1e3 / iters
            window_s.setdefault(name, 3 * row[name + "_s"] * iters)
            # each counted copy reads and writes 16 bytes
            row[name + "_copy_Bps"] = 32 * int(copied.get()[0]) / (copy_start.elapsed_time(copy_end) / 1e3) if k else 0
        rows.append(row)
    for row in rows:
        for name in ops:
            row[name + "_slowdown"] = row[name + "_s"] / rows[0][name + "_s"]
    report = {"gpu": props.name, "sms": sms, "clock_hz": clock_hz, "threads_per_block": 512, "rows": rows}
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    for row in rows:
        print(f"k={row['blocks']:3d} model {row['model_slowdown']:.3f}  " +
              "  ".join(f"{name} {row[name + '_slowdown']:.3f}" for name in ops))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gpu_interference.py OUT.json")
    main(sys.argv[1])
