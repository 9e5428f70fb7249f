#!/usr/bin/env python3
"""Fails when the C++ sources repeat themselves more than the budget allows.

A line is "repeated" when it lies in a run of WINDOW or more consecutive significant lines (whitespace-trimmed, blank
lines, lone braces and comment-only lines skipped) that stands, letter for letter, in another place of the tree. The
budget is the count at the commit that introduced this check; a change that copies code raises the count and fails,
one that removes a copy lowers it (then lower the budget too, so the gain is kept).

Usage: scripts/check_duplicates.py [--list N]   (N: print the N longest repeated runs)
"""
import argparse
import collections
import re
import subprocess
import sys
from pathlib import Path

WINDOW = 6
BUDGET_LINES = 0  # the count when the check was introduced: no repeated code left
ROOT = Path(__file__).resolve().parent.parent
TRIVIAL = re.compile(r"^(//.*|#include .*|[{}();,]*|}\s*(//.*)?|#pragma once|namespace \w+ \{|}  // namespace.*|public:|private:)$")


def significant_lines(path):
    """(line number, normalised text) of the lines that carry code."""
    out = []
    for number, raw in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        text = " ".join(raw.split())
        if text and not TRIVIAL.match(text):
            out.append((number, text))
    return out


def sources():
    listed = subprocess.run(["git", "ls-files", "*.cpp", "*.hpp", "*.cu", "*.cuh", "*.cpp.in"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split()
    return [ROOT / name for name in listed]


def repeated(files):
    """Set of (file, line number) lying in a repeated window, and the windows' places for the listing."""
    places = collections.defaultdict(list)
    lines_of = {}
    for path in files:
        lines = significant_lines(path)
        lines_of[path] = lines
        for start in range(len(lines) - WINDOW + 1):
            key = "\n".join(text for _, text in lines[start:start + WINDOW])
            places[key].append((path, lines[start][0]))
    marked = set()
    runs = []
    for key, where in places.items():
        if len(where) < 2:
            continue
        runs.append(where)
        for path, first_line in where:
            numbers = [number for number, _ in lines_of[path]]
            start = numbers.index(first_line)
            marked.update((path, number) for number in numbers[start:start + WINDOW])
    return marked, runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", type=int, default=0, help="print this many repeated windows")
    args = parser.parse_args()
    marked, runs = repeated(sources())
    for where in runs[:args.list]:
        print("  " + "  ~  ".join(f"{path.relative_to(ROOT)}:{line}" for path, line in where))
    count = len(marked)
    if count > BUDGET_LINES:
        print(f"check_duplicates: {count} repeated lines (budget {BUDGET_LINES}); run "
              f"scripts/check_duplicates.py --list 20 to see them and share the code instead of copying it")
        return 1
    print(f"check_duplicates: {count} repeated lines (budget {BUDGET_LINES})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
