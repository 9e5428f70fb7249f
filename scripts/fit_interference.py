#!/usr/bin/env python3
"""Fits the topology library's `concurrent_slowdown` (sim/step/interference.hpp) to what
scripts/gpu_interference.py measured: compute runs at (S - K) / S / (1 + c) of its speed while K channels' blocks
run beside it, so the measured slowdown at K blocks is S / (S - K) x (1 + c).

    python3 scripts/fit_interference.py INTERFERENCE.json [OP]

c is fitted on K = 1, 4, 16 of the operation OP (default: the ResNet-50 training step), as the mean of
measured / (S / (S - K)) - 1, and predicts K = 2, 8, 32, each printed with its error. K = 64 (half the SMs, where the
copies saturate memory) is outside what NCCL runs (at most 32 channels on these GPUs) and is listed apart.
"""

import json
import sys

FIT, PREDICT, APART = (1, 4, 16), (2, 8, 32), (64,)


def main(path, op="resnet50_bf16_b256_step"):
    with open(path) as f:
        report = json.load(f)
    sms = report["sms"]
    rows = {row["blocks"]: row[op + "_slowdown"] for row in report["rows"]}
    share = lambda k: sms / (sms - k)
    c = sum(rows[k] / share(k) - 1 for k in FIT) / len(FIT)
    print(f"{report['gpu']}, {sms} SMs, {op}: concurrent_slowdown c = {c:.4f} (fitted on K = {FIT})")
    print(f"{'K':>3} {'measured':>9} {'SM share':>9} {'model':>9} {'error':>7}")
    for k in FIT + PREDICT + APART:
        model = share(k) * (1 + c)
        label = "fitted" if k in FIT else "predicted" if k in PREDICT else "outside NCCL's range"
        print(f"{k:>3} {rows[k]:9.3f} {share(k):9.3f} {model:9.3f} {model / rows[k] - 1:+7.1%}  {label}")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: fit_interference.py INTERFERENCE.json [OP]")
    main(*sys.argv[1:])
