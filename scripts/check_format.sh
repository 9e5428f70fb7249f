#!/usr/bin/env bash
# Fails, naming the files, when a tracked C++ file differs from what clang-format 14 writes with the project's
# .clang-format. Fix with: clang-format-14 -i FILE...
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
unformatted=()
while IFS= read -r file; do
  clang-format-14 --dry-run -Werror "$file" >/dev/null 2>&1 || unformatted+=("$file")
done < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh')
if ((${#unformatted[@]})); then
  echo "check_format: ${#unformatted[@]} file(s) not formatted by .clang-format (run clang-format-14 -i on them):" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  exit 1
fi
echo "check_format: every C++ file is formatted"
