#!/usr/bin/env bash
# The default job: builds commsim if needed, then predicts the demo scenario with each technique side by side.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/bootstrap.sh >/dev/null
exec build/cli/commsim compare scenarios/demo-techniques.json "$@"
