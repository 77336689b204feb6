#!/usr/bin/env bash
# Checks that every C++/CUDA source follows .clang-format (clang-format 14, Debian 12's).
# With --fix it rewrites the files instead. CI runs the check (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' 2>/dev/null || find common host device tests benchmarks \
  -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh')
if [ "${1:-}" = --fix ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/octwalk_format.$$; then
  grep -m 20 'error:' /tmp/octwalk_format.$$ || true
  rm -f /tmp/octwalk_format.$$
  echo "format check failed: run 'bash scripts/check_format.sh --fix' (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1))"
  exit 1
fi
rm -f /tmp/octwalk_format.$$
echo "format check: ${#files[@]} files follow .clang-format"
