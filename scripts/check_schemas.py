#!/usr/bin/env python3
"""Checks every shipped topology, scenario and model file against its JSON Schema (schemas/*.schema.json,
draft 2020-12), and each schema against the draft's meta-schema. Run by ctest (schemas.shipped_files); needs
python3-jsonschema (Debian package, in scripts/bootstrap.sh).

Usage: check_schemas.py [REPO_ROOT]   exit 0: all valid; 1: a file or schema is invalid (one line each)."""
import glob
import json
import os
import sys

import jsonschema

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))

# Which shipped files each schema describes. scenarios/demo-techniques.json and demo-bytescheduler.json are compare
# files (variants of a scenario), not scenarios.
SHIPPED = {
    "topology": ["topologies/*.json", "validate/suites/topologies/*.json"],
    "scenario": ["scenarios/*.json", "validate/suites/scenarios/*.json"],
    "model": ["scenarios/models/*.json", "validate/suites/models/*.json"],
}
NOT_SCENARIOS = {"scenarios/demo-techniques.json", "scenarios/demo-bytescheduler.json"}


def main():
    failures, checked = [], 0
    for kind, patterns in SHIPPED.items():
        with open(os.path.join(ROOT, "schemas", f"{kind}.schema.json")) as f:
            schema = json.load(f)
        validator_class = jsonschema.validators.validator_for(schema)
        if validator_class is not jsonschema.Draft202012Validator:
            failures.append(f"schemas/{kind}.schema.json: not a draft 2020-12 schema")
            continue
        try:
            validator_class.check_schema(schema)
        except jsonschema.SchemaError as e:
            failures.append(f"schemas/{kind}.schema.json: {e.message}")
            continue
        validator = validator_class(schema)
        files = sorted({p for pattern in patterns for p in glob.glob(os.path.join(ROOT, pattern))})
        if not files:
            failures.append(f"{kind}: no shipped files match {patterns}")
        for path in files:
            rel = os.path.relpath(path, ROOT)
            if rel in NOT_SCENARIOS:
                continue
            with open(path) as f:
                doc = json.load(f)
            errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
            checked += 1
            for e in errors[:3]:
                where = ".".join(str(p) for p in e.absolute_path) or "(top level)"
                failures.append(f"{rel}: {where}: {e.message[:200]}")
    for line in failures:
        print(line)
    print(f"{checked} files checked against schemas/*.schema.json, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
