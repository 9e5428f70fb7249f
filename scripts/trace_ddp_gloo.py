#!/usr/bin/python3
"""Records a PyTorch profiler (Kineto) trace of DDP training on CPU with gloo: the real trace that
`commsim model from-trace` and `commsim validate --trace` are tested on (tests/data/trace/).

The model is mlp-small (scenarios/models/mlp-small.json: 784 -> 512 -> 512 -> 10), batch 64 per rank, 4 ranks on
this machine, DDP with 1 MB buckets (bucket_cap_mb=1, as scenarios/emulated-tiny.json's fusion size). Rank 0's
trace is written.  Needs Debian's python3-torch (1.13, built with gloo); run with the system interpreter:

    /usr/bin/python3 scripts/trace_ddp_gloo.py OUT.json [RANKS]
"""

import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel


def worker(rank, world, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29533"
    torch.set_num_threads(1)  # ranks share the machine's cores, as the emulated cluster's do
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    model = torch.nn.Sequential()
    model.add_module("fc1", torch.nn.Linear(784, 512))
    model.add_module("relu1", torch.nn.ReLU())
    model.add_module("fc2", torch.nn.Linear(512, 512))
    model.add_module("relu2", torch.nn.ReLU())
    model.add_module("fc3", torch.nn.Linear(512, 10))
    ddp = DistributedDataParallel(model, bucket_cap_mb=1)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
    loss_fn = torch.nn.CrossEntropyLoss()
    schedule = torch.profiler.schedule(wait=2, warmup=2, active=3, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                                with_stack=True, with_modules=True) as prof:
        for _ in range(8):
            opt.zero_grad()
            loss_fn(ddp(x), y).backward()
            opt.step()
            prof.step()
    if rank == 0:
        prof.export_chrome_trace(out)
    dist.destroy_process_group()


if __name__ == "__main__":
    out = sys.argv[1]
    world = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    mp.spawn(worker, args=(world, out), nprocs=world, join=True)
