#!/usr/bin/env python3
"""Measures one NVIDIA GPU with PyTorch and records a profiler (Kineto) trace of DDP training on it with NCCL: the
GPU counterpart of scripts/trace_ddp_gloo.py, for `commsim model from-trace` and the device library
(devices/*.json).

    python3 scripts/trace_ddp_nccl.py OUT_DIR

Writes OUT_DIR/gpu-rates.json (dense matrix-product rates per dtype, device-to-device copy rate, ResNet-50 training
step time) and OUT_DIR/resnet50-ddp-nccl.json (rank 0's trace of two profiled steps). The model is torchvision's
ResNet-50 (scenarios/models/resnet50.json), batch 64, bf16 autocast, channels-last, SGD, DDP with 25 MB buckets (its
default), one rank per GPU on this machine's GPUs (one GPU: one rank, whose collectives NCCL runs as local copies).
"""

import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from cuda_timing import timed


def matmul_rates(n=8192):
    rates = {}
    for name, dtype, tf32 in [("bf16", torch.bfloat16, False), ("fp16", torch.float16, False),
                              ("tf32", torch.float32, True), ("fp32", torch.float32, False)]:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a, b = torch.randn(n, n, device="cuda", dtype=dtype), torch.randn(n, n, device="cuda", dtype=dtype)
        seconds = timed(lambda: a @ b, 3, 10)
        rates[name] = 2 * n**3 / seconds
    torch.backends.cuda.matmul.allow_tf32 = False
    return rates


def copy_rate(gib=4):
    src = torch.empty(gib << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    seconds = timed(lambda: dst.copy_(src), 3, 10)
    return 2 * src.numel() / seconds  # bytes read + written per second


def resnet50_ddp(out_dir, batch=64):
    import torchvision

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29544")
    dist.init_process_group("nccl", rank=0, world_size=1)
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    ddp = DistributedDataParallel(model, device_ids=[0])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()

    step_s = timed(step, 10, 20)
    schedule = torch.profiler.schedule(wait=1, warmup=2, active=2, repeat=1)
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities, schedule=schedule, with_stack=True,
                                with_modules=True) as prof:
        for _ in range(6):
            step()
            prof.step()
    torch.cuda.synchronize()
    prof.export_chrome_trace(os.path.join(out_dir, "resnet50-ddp-nccl.json"))
    dist.destroy_process_group()
    return step_s


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    report = {"gpu": props.name, "sms": props.multi_processor_count, "torch": torch.__version__,
              "cuda": torch.version.cuda, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
              "date": time.strftime("%Y-%m-%d")}
    for key, fn in [("matmul_flops_8192", matmul_rates), ("copy_Bps_read_plus_written", copy_rate),
                    ("resnet50_bf16_batch64_step_s", lambda: resnet50_ddp(out_dir))]:
        try:
            report[key] = fn()
        except Exception as e:  # report what failed and go on with the rest
            report[key] = f"failed: {e}"
    with open(os.path.join(out_dir, "gpu-rates.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: trace_ddp_nccl.py OUT_DIR")
    main(sys.argv[1])
