#!/usr/bin/env python3
"""Predicted against measured, per strategy, from the JSON files scripts/gpu_check.sh writes into DIR
(predicted-NAME.json from `commsim simulate`, measured-NAME.json from `commsim run --backend nccl`).

    python3 scripts/gpu_compare.py DIR

Columns: steady-state step time, compute and communication stream busy time (ms), each measured then predicted, and
the step's error (predicted / measured - 1). A strategy whose measured file is missing is listed as not run.
"""

import glob
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main(folder):
    names = sorted(os.path.basename(p)[len("predicted-"):-len(".json")]
                   for p in glob.glob(os.path.join(folder, "predicted-*.json")))
    print(f"{'strategy':<20} {'step ms':>16} {'error':>8} {'compute ms':>16} {'comm ms':>16}")
    print(f"{'':<20} {'meas / pred':>16} {'':>8} {'meas / pred':>16} {'meas / pred':>16}")
    for name in names:
        predicted = load(os.path.join(folder, f"predicted-{name}.json"))
        measured = load(os.path.join(folder, f"measured-{name}.json"))
        if predicted is None or measured is None:
            print(f"{name:<20} not run")
            continue
        step_m, step_p = measured["step_time_s"] * 1e3, predicted["step_time_s"] * 1e3
        pair = lambda key: f"{measured['breakdown'][key] * 1e3:7.3f} / {predicted['breakdown'][key] * 1e3:7.3f}"
        print(f"{name:<20} {step_m:7.3f} / {step_p:7.3f} {step_p / step_m - 1:+8.1%} {pair('compute_s'):>16} "
              f"{pair('comm_s'):>16}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gpu_compare.py DIR")
    main(sys.argv[1])
