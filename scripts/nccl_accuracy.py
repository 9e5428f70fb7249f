#!/usr/bin/env python3
"""Compare commsim's NCCL predictions with published nccl-tests curves.

For every curve in validate/nccl-tests/published/*.json that names a topology, runs
`commsim collective` on that topology with the curve's node count, collective, sizes and any
forced NCCL_ALGO/NCCL_PROTO, and writes a per-size comparison of bus bandwidth to a Markdown
report. Curves marked "fit": true are reported apart from the predictions.

Usage: python3 scripts/nccl_accuracy.py [--commsim PATH] [--out FILE] [--check] [--refit]

--refit first fits the NCCL model's scales to the curves marked "fit": true (at most one machine per GPU
generation), with `commsim calibrate --from-nccl-tests`, and writes them to libraries/nccl.json ("fitted", by
generation); the table is compiled in, so rebuild (cmake --build build) and run again without --refit.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = Path("validate/nccl-tests/published")
OPS = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter"}
MIB = 1 << 20
TARGET_SMALL, TARGET_LARGE, TARGET_MAX = 0.25, 0.10, 0.30  # median |err| < 1 MiB, >= 1 MiB; any point


def busbw_factor(op, n):
    return 2.0 * (n - 1) / n if op == "allreduce" else (n - 1) / n


def published_points(curve, op, ranks):
    """(bytes, published busbw) per usable row. busbw is recomputed from the published time when
    there is one (nccl-tests prints busbw rounded to 0.01 GB/s); rows below 8 bytes per rank and
    rows whose busbw is unknown or printed as 0 are left out."""
    points = []
    for r in curve["rows"]:
        if r["bytes"] < 8 * ranks:
            continue
        if r.get("time_us"):
            bw = r["bytes"] / r["time_us"] / 1e3 * busbw_factor(op, ranks)
        else:
            bw = r.get("busbw_GBps") or 0.0
        if bw > 0:
            points.append((r["bytes"], bw))
    return points


def commsim_args(curve, topo, op):
    env = curve.get("env", {})
    args = ["collective", "--topology", topo, "--nodes", str(curve["nodes"]), "--op", op,
            "--algo", env.get("NCCL_ALGO", "auto").lower()]
    if "NCCL_PROTO" in env:
        args += ["--proto", env["NCCL_PROTO"].lower()]
    if env.get("NCCL_MIN_NCHANNELS") and env.get("NCCL_MIN_NCHANNELS") == env.get("NCCL_MAX_NCHANNELS"):
        args += ["--channels", env["NCCL_MIN_NCHANNELS"]]  # the channel count forced
    if curve.get("gpus_per_thread", 1) > 1:  # nccl-tests -g: one thread issued every GPU's kernel
        args += ["--gpus-per-thread", str(curve["gpus_per_thread"])]
    # Priced with the NCCL release the curve states it ran (the topology names the machine's usual one); a release
    # older than the oldest table keeps the topology's and is reported apart (predates).
    version = curve.get("nccl_version")
    if version and not predates(version, oldest_table_version()):
        args += ["--nccl-version", version]
    return args


def run_commsim(commsim, args, sizes):
    """Rows of commsim's --json output, or raises RuntimeError with its message."""
    fd, tmp = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        for attempt in range(4):  # the binary may be mid-rebuild
            try:
                p = subprocess.run([commsim] + args + ["--sizes", ",".join(map(str, sizes)), "--json", tmp],
                                   cwd=ROOT, capture_output=True, text=True)
                break
            except OSError as e:
                if attempt == 3:
                    raise RuntimeError(f"cannot run {commsim}: {e}")
                time.sleep(15)
        if p.returncode != 0:
            raise RuntimeError(((p.stderr.strip() or p.stdout.strip()).splitlines() or [f"exit status {p.returncode}"])[-1])
        with open(tmp) as f:
            return json.load(f)
    finally:
        os.unlink(tmp)


def version_tuple(text):
    return tuple(int(x) for x in text.split(".")[:2])


def oldest_table_version():
    """The oldest NCCL version libraries/nccl.json has constants for."""
    table = json.loads((ROOT / "libraries/nccl.json").read_text())
    return min((v["version"] for v in table["versions"]), key=version_tuple)


def predates(curve_version, oldest):
    """True when the curve names an NCCL version older than the oldest table (an unnamed version is not)."""
    return bool(curve_version) and version_tuple(curve_version) < version_tuple(oldest)


def evaluate(commsim, shown, path):
    """One curve -> dict with 'skip' (reason) or 'points' [(bytes, pub, pred, err, algo/proto)]."""
    curve = json.loads(path.read_text())
    res = {"file": path.name, "curve": curve, "fit": bool(curve.get("fit"))}
    topo = curve.get("topology")
    op = OPS.get(curve["collective"])
    ranks = curve["nodes"] * curve["gpus_per_node"]
    if not topo:
        return {**res, "skip": curve.get("skip_reason", "no topology")}
    if not (ROOT / topo).is_file():
        return {**res, "skip": f"topology file {topo} does not exist yet"}
    if op is None:
        return {**res, "skip": f"collective {curve['collective']} not supported"}
    points = published_points(curve, op, ranks)
    if not points:
        return {**res, "skip": "no row with a usable busbw"}
    args = commsim_args(curve, topo, op)
    res["command"] = " ".join(shlex.quote(a) for a in [shown] + args) + " --sizes <the sizes below>"
    try:
        out = run_commsim(commsim, args, [b for b, _ in points])
    except RuntimeError as e:
        return {**res, "skip": f"commsim failed: {e}"}
    if out.get("ranks") != ranks:
        return {**res, "skip": f"{topo} gives {out.get('ranks')} ranks on {curve['nodes']} node(s), the curve has {ranks}"}
    # Keyed by the size asked for: commsim sizes allgather / reduce-scatter as nccl-tests 2.13.12+ does (each rank's
    # part rounded down to 16 bytes), which leaves out sizes older nccl-tests ran below 16 bytes per rank.
    pred = {r["requested_bytes"]: r for r in out["rows"]}
    res["dropped"] = [b for b, _ in points if b not in pred]
    points = [(b, pub) for b, pub in points if b in pred]
    res["points"] = [(b, pub, pred[b]["busbw_GBps"], (pred[b]["busbw_GBps"] - pub) / pub,
                      f"{pred[b]['algorithm']}/{pred[b]['protocol']}") for b, pub in points]
    return res


def refit(commsim, curves):
    """Fits the scales of each GPU generation to its "fit": true curves and writes them to libraries/nccl.json."""
    by_arch = {}
    for path in curves:
        curve = json.loads(path.read_text())
        if not curve.get("fit"):
            continue
        topo = json.loads((ROOT / curve["topology"]).read_text())
        by_arch.setdefault(topo["library"]["gpu_arch"], []).append((path, curve))
    table_path = ROOT / "libraries/nccl.json"
    table = json.loads(table_path.read_text())
    table["fitted"] = {}
    host = None
    for arch, fits in sorted(by_arch.items()):
        machines = {(c["topology"], c["nodes"]) for _, c in fits}
        if len(machines) != 1:
            sys.exit(f"nccl_accuracy: the {arch} fit curves are on {len(machines)} machines; fit on one machine per generation")
        (topo, nodes), = machines
        files = [str(p.relative_to(ROOT)) for p, _ in fits]
        fd, tmp = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            cmd = [commsim, "calibrate", topo, "--nodes", str(nodes), "--from-nccl-tests", *files, "-o", tmp]
            p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            print(p.stdout, end="")
            if p.returncode != 0:
                sys.exit(f"nccl_accuracy: calibration for {arch} failed: {p.stderr.strip()}")
            lib = json.loads(Path(tmp).read_text())["library"]
        finally:
            os.unlink(tmp)
        source = (f"commsim calibrate {topo} --nodes {nodes} --from-nccl-tests {' '.join(files)} "
                  "(written by python3 scripts/nccl_accuracy.py --refit)")
        table["fitted"][arch] = {"scales": lib["fitted"], "band_rel": lib["fitted_band_rel"], "source": source}
        if "fitted_gpus_per_thread" in lib:  # the nccl-tests -g of every fit curve: the latency scales' regime
            table["fitted"][arch]["gpus_per_thread"] = lib["fitted_gpus_per_thread"]
        # The host's issue time per GPU comes from the fit curves run with nccl-tests -g > 1 (one machine).
        if "fitted_launch_us_per_gpu" in lib:
            if host is not None:
                sys.exit("nccl_accuracy: fit curves with nGpus > 1 on two machines; the host issue time needs one")
            host = {"launch_us_per_gpu": lib["fitted_launch_us_per_gpu"], "source": source}
    if host is not None:
        table["fitted"]["host"] = host
    # Only the "fitted" block (the last key) is rewritten; the constants above keep their layout.
    text = table_path.read_text()
    fitted = json.dumps(table["fitted"], indent=2).replace("\n", "\n  ")
    table_path.write_text(text[:text.rindex('"fitted"')] + '"fitted": ' + fitted + "\n}\n")
    print(f"wrote the fitted scales of {', '.join(sorted(by_arch))} to libraries/nccl.json; rebuild, then run without --refit")


def self_calibrated(commsim, r):
    """The curve's machine calibrated on every other of the curve's sizes (the smallest, the third, ...) with
    `commsim calibrate --from-nccl-tests`, then predicted at the sizes left out: what a user gets who calibrates on a
    log of their own machine. A dict with 'points' as evaluate()'s (held-out sizes only) and 'inside' (how many held-out
    points lie inside the calibrated error band), or 'skip' (why not)."""
    curve, op = r["curve"], OPS[r["curve"]["collective"]]
    sizes = sorted(b for b, *_ in r["points"])
    fit_sizes, held = set(sizes[0::2]), sizes[1::2]
    fd, fit_log = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    fd, calibrated = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        Path(fit_log).write_text(json.dumps({**curve, "rows": [row for row in curve["rows"] if row["bytes"] in fit_sizes]}))
        p = subprocess.run([commsim, "calibrate", curve["topology"], "--nodes", str(curve["nodes"]), "--from-nccl-tests",
                            fit_log, "-o", calibrated], cwd=ROOT, capture_output=True, text=True)
        if p.returncode != 0:
            return {"skip": ((p.stderr.strip() or p.stdout.strip()).splitlines() or [f"exit {p.returncode}"])[-1]}
        out = run_commsim(commsim, commsim_args(curve, calibrated, op), held)
    except RuntimeError as e:
        return {"skip": str(e)}
    finally:
        os.unlink(fit_log)
        os.unlink(calibrated)
    pred = {row["requested_bytes"]: row for row in out["rows"]}
    published = {b: pub for b, pub, *_ in r["points"]}
    points = [(b, published[b], pred[b]["busbw_GBps"], (pred[b]["busbw_GBps"] - published[b]) / published[b],
               f"{pred[b]['algorithm']}/{pred[b]['protocol']}") for b in held if b in pred]
    # Inside the band: the published time within +-band of the predicted one, i.e. |predicted / published busbw - 1|
    # = |error| <= band.
    inside = sum(abs(err) <= pred[b]["band_rel"] for b, _, _, err, _ in points)
    return {"points": points, "inside": inside, "band": max((pred[b]["band_rel"] for b in held if b in pred), default=0)}


def fmt_size(b):
    for unit, scale in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if b >= scale:
            return f"{b / scale:g} {unit}"
    return f"{b} B"


def pct(x, signed=False):
    return "-" if x is None else f"{x * 100:+.1f} %" if signed else f"{x * 100:.1f} %"


def med(errs):
    return statistics.median(abs(e) for e in errs) if errs else None


def bands(points):
    """The signed errors below 1 MiB and from 1 MiB, the number of points beyond the limit, and whether the three
    targets hold for them pooled."""
    small = [p[3] for p in points if p[0] < MIB]
    large = [p[3] for p in points if p[0] >= MIB]
    beyond = sum(abs(p[3]) > TARGET_MAX for p in points)
    met = (med(small) or 0) <= TARGET_SMALL and (med(large) or 0) <= TARGET_LARGE and beyond == 0
    return small, large, beyond, met


def curve_stats(points):
    small, large, beyond, met = bands(points)
    worst = max(abs(p[3]) for p in points)
    return med(small), med(large), worst, beyond, statistics.median(p[3] for p in points), met


def curve_section(r):
    c = r["curve"]
    lines = [f"### {r['file']}", "",
             f"{c['machine']}; {c['nodes']} x {c['gpus_per_node']} GPUs, {c['collective']}"
             f"{' (in-place)' if c.get('in_place') else ''}, NCCL {c.get('nccl_version') or 'not stated'}; "
             f"topology `{c['topology']}`.", ""]
    if c.get("topology_note"):
        lines += [f"Topology note: {c['topology_note']}.", ""]
    lines += [f"Source: {c['source']}", ""]
    if c.get("env_source"):  # where NCCL settings the source does not print were taken from
        lines += [f"Environment: {c['env_source']}.", ""]
    lines += [f"Command: `{r['command']}`", ""]
    if r.get("dropped"):
        lines += [f"Left out: {', '.join(f'{b} B' for b in r['dropped'])} (under 16 bytes per rank, which nccl-tests "
                  "2.13.12+ rounds to 0 and commsim, sizing as it does, does not predict).", ""]
    lines += ["| size | published busbw (GB/s) | predicted busbw (GB/s) | signed error | algo/proto |",
              "|---:|---:|---:|---:|---|"]
    lines += [f"| {fmt_size(b)} | {pub:.3g} | {pred:.3g} | {pct(err, True)} | {ap} |" for b, pub, pred, err, ap in r["points"]]
    return lines + [""]


def per_size(pts):
    """Rows of the median |error| at each message size over the curves that have it, and whether every size meets
    its band's target (the targets hold at every size, not only pooled over a band)."""
    by_size = {}
    for p in pts:
        by_size.setdefault(p[0], []).append(p[3])
    lines = ["| size | curves | median abs error | target | met |", "|---:|---:|---:|---:|---|"]
    all_met = True
    for size in sorted(by_size):
        target = TARGET_LARGE if size >= MIB else TARGET_SMALL
        m = med(by_size[size])
        all_met &= m <= target
        lines.append(f"| {fmt_size(size)} | {len(by_size[size])} | {pct(m)} | <= {target * 100:.0f} % | "
                     f"{'yes' if m <= target else 'no'} |")
    return lines + [""], all_met


def summary(results):
    pts = [p for r in results for p in r["points"]]
    small, large, beyond, pooled_met = bands(pts)
    lines = ["| size band (pooled) | points | median abs error | target | met |", "|---|---:|---:|---:|---|",
             f"| < 1 MiB | {len(small)} | {pct(med(small))} | <= {TARGET_SMALL * 100:.0f} % | {'yes' if (med(small) or 0) <= TARGET_SMALL else 'no'} |",
             f"| >= 1 MiB | {len(large)} | {pct(med(large))} | <= {TARGET_LARGE * 100:.0f} % | {'yes' if (med(large) or 0) <= TARGET_LARGE else 'no'} |",
             f"| all sizes | {len(pts)} | max {pct(max((abs(p[3]) for p in pts), default=None))}, {beyond} point(s) beyond "
             f"{TARGET_MAX * 100:.0f} % | none beyond {TARGET_MAX * 100:.0f} % | {'yes' if beyond == 0 else 'no'} |", "",
             "Per message size (the targets hold at every size):", ""]
    size_lines, sizes_met = per_size(pts)
    lines += size_lines + [
             "| curve | points | median abs error < 1 MiB | median abs error >= 1 MiB | median signed error | max abs error | points beyond 30 % | targets met |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    all_ok = bool(pts) and pooled_met and sizes_met
    for r in results:
        ms, ml, worst, nb, signed, ok = curve_stats(r["points"])
        all_ok &= ok
        lines.append(f"| {r['file']} | {len(r['points'])} | {pct(ms)} | {pct(ml)} | {pct(signed, True)} | {pct(worst)} | {nb} | {'yes' if ok else 'no'} |")
    return lines + [""], all_ok


def self_calibrated_section(commsim, predicted):
    """Each predicted curve calibrated on half its sizes and predicted at the other half (self_calibrated)."""
    runs = [(r, self_calibrated(commsim, r)) for r in predicted]
    held = [{"file": r["file"], "points": c["points"], "inside": c["inside"], "band": c["band"]}
            for r, c in runs if c.get("points")]
    md = ["## Calibrated on its own log: half the sizes fitted, the other half predicted", "",
          "What a user gets after `commsim calibrate TOPOLOGY --from-nccl-tests LOG` on their own machine: each predicted",
          "curve's machine is calibrated on every other size of the curve (the smallest, the third, ...) and then predicted",
          "at the sizes left out, with the same command and options as above on the calibrated topology: its own scales",
          "take the place of the shipped ones (libraries/nccl.json) for every (collective, algorithm, protocol) the fitted",
          "sizes ran. The targets are the same. A held-out point is inside the band when the published time lies within",
          "the calibrated error band of the predicted one.", ""]
    if not held:
        return md + ["No curve could be calibrated.", ""]
    md += summary(held)[0]
    inside = sum(h["inside"] for h in held)
    total = sum(len(h["points"]) for h in held)
    md += [f"Inside the calibrated error band: {inside} of {total} held-out points ({inside / total * 100:.0f} %).", "",
           "| curve | held-out points | error band | inside the band |", "|---|---:|---:|---:|"]
    md += [f"| {h['file']} | {len(h['points'])} | +-{h['band'] * 100:.1f} % | {h['inside']} |" for h in held]
    md += [f"| {r['file']} | - | - | not calibrated: {c['skip']} |" for r, c in runs if "skip" in c]
    return md + [""]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commsim", default="build/cli/commsim", help="commsim binary (relative to the repository root)")
    ap.add_argument("--out", default="docs/accuracy-nccl.md", help="report to write")
    ap.add_argument("--check", action="store_true", help="exit 1 if the predicted curves miss the targets")
    ap.add_argument("--refit", action="store_true", help="fit the scales to the \"fit\": true curves into libraries/nccl.json")
    a = ap.parse_args()
    commsim = str(ROOT / a.commsim) if not os.path.isabs(a.commsim) else a.commsim
    if a.refit:
        refit(commsim, sorted((ROOT / PUBLISHED).glob("*.json")))
        return 0
    results = [evaluate(commsim, a.commsim, p) for p in sorted((ROOT / PUBLISHED).glob("*.json"))]
    used = [r for r in results if "points" in r]
    oldest = oldest_table_version()
    older = [r for r in used if not r["fit"] and predates(r["curve"].get("nccl_version"), oldest)]
    # A curve whose published busbw its own stated hardware cannot carry says nothing of a model of that hardware.
    inconsistent = [r for r in used if not r["fit"] and r not in older and r["curve"].get("inconsistent_with_hardware")]
    predicted = [r for r in used if not r["fit"] and r not in older and r not in inconsistent]
    fitted = [r for r in used if r["fit"]]
    skipped = [r for r in results if "skip" in r]

    cmd = "python3 scripts/nccl_accuracy.py" + "".join(" " + shlex.quote(x) for x in sys.argv[1:])
    md = ["# commsim vs published nccl-tests curves (NCCL model)", "",
          f"Generated by `{cmd}` from the repository root; do not edit by hand.", "",
          f"Each curve in `{PUBLISHED}/` that names a topology is predicted with `commsim collective` on that",
          "topology, with the curve's node count and collective, `--algo auto` (or the curve's forced",
          "`NCCL_ALGO`/`NCCL_PROTO`, and `--channels N` where `NCCL_MIN_NCHANNELS` = `NCCL_MAX_NCHANNELS` = N),",
          "`--gpus-per-thread G` where one thread drove G GPUs (nccl-tests -g G, the",
          "curve's `gpus_per_thread`), `--nccl-version V` where the curve states the NCCL release it ran (else the",
          "topology's `library.version`) and the curve's message sizes. Signed error = (predicted - published) /",
          "published busbw. Published busbw is recomputed from the published time where the curve has one (nccl-tests",
          "rounds busbw to 0.01 GB/s); rows under 8 bytes per rank are left out.", "",
          "Fitted constants (libraries/nccl.json \"fitted\", by `--refit`): per GPU generation the latency and",
          "bandwidth scales of each (collective, algorithm, protocol) NCCL ran on that generation's fit curves, a",
          "bandwidth never above the links' ceiling, the latency scales for the fit curves' nccl-tests -g only (a",
          "curve run with another -g keeps NCCL's latency: docs/calibration.md); and one host issue time per GPU,",
          "from the fit curves run with nccl-tests -g > 1 (the lowest time / G).", "",
          f"Targets for the predicted curves: median |error| <= {TARGET_LARGE * 100:.0f} % at every size >= 1 MiB, "
          f"<= {TARGET_SMALL * 100:.0f} % at every size below 1 MiB, no point beyond {TARGET_MAX * 100:.0f} %. Each summary",
          "gives the medians pooled over each band and, below, at each size (a pooled median can meet a target that",
          "the sizes of one regime miss).", "",
          f"Curves used to fit model constants (`\"fit\": true`): "
          f"{', '.join(r['file'] for r in fitted) or 'none'}. They are reported apart and left out of the targets.",
          f"Predicted curves (`\"fit\": false`): {len(predicted)}. Skipped: {len(skipped)}.",
          f"Curves measured with an NCCL older than the oldest constants table ({oldest}): {len(older)}; the model "
          "does not claim those versions (their protocols, algorithms and constants differ), so they are reported "
          "apart, as predictions outside the model's range, and left out of the targets.",
          f"Curves whose published busbw exceeds what their own stated hardware carries (`inconsistent_with_hardware`, "
          f"with the inequality): {len(inconsistent)}; reported apart, left out of the targets.", "",
          "## Summary: predicted curves", ""]
    lines, ok = summary(predicted) if predicted else (["No predicted curve could be run.", ""], False)
    md += lines
    if fitted:
        md += ["## Summary: fitted curves (not predictions)", ""] + summary(fitted)[0]
    if older:
        md += [f"## Summary: curves from NCCL older than {oldest} (outside the model's range)", ""] + summary(older)[0]
    if inconsistent:
        md += ["## Summary: curves inconsistent with their stated hardware", "",
               "| curve | why |", "|---|---|"]
        md += [f"| {r['file']} | {r['curve']['inconsistent_with_hardware']} |" for r in inconsistent] + [""]
        md += summary(inconsistent)[0]
    md += self_calibrated_section(commsim, predicted)
    md += ["## Skipped curves", "", "| curve | topology | reason |", "|---|---|---|"]
    md += [f"| {r['file']} | {r['curve'].get('topology') or '-'} | {r['skip']} |" for r in skipped]
    md += ["", "## Predicted curves", ""]
    for r in predicted:
        md += curve_section(r)
    if older:
        md += [f"## Curves from NCCL older than {oldest}", ""]
        for r in older:
            md += curve_section(r)
    if inconsistent:
        md += ["## Curves inconsistent with their stated hardware", ""]
        for r in inconsistent:
            md += curve_section(r)
    if fitted:
        md += ["## Fitted curves", ""]
        for r in fitted:
            md += curve_section(r)
    out = ROOT / a.out if not os.path.isabs(a.out) else Path(a.out)
    out.write_text("\n".join(md).rstrip() + "\n")

    start = md.index("## Summary: predicted curves")
    print("\n".join(md[start:md.index("## Skipped curves")]))
    print(f"skipped {len(skipped)} curve(s):")
    for r in skipped:
        print(f"  {r['file']}: {r['skip']}")
    print(f"report: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    print(f"targets {'met' if ok else 'MISSED'}")
    return 0 if ok or not a.check else 1


if __name__ == "__main__":
    sys.exit(main())
