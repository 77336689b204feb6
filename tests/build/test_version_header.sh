#!/usr/bin/env bash
# cmake/version.cmake names the commit a build comes from: in a checkout of its own, git's HEAD even when a
# .source-githash was left there; in a copy without its .git (alone, or inside another repository), the file's.
# Usage: test_version_header.sh SOURCE_DIR (the project's tree, for version.cmake and version.h.in)
set -euo pipefail
source_dir=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git_quiet() { git -c user.name=test -c user.email=test@example.org -c init.defaultBranch=main "$@" > /dev/null; }

make_tree() {
  mkdir -p "$1/cmake" "$1/host/core"
  cp "$source_dir/cmake/version.cmake" "$1/cmake/"
  cp "$source_dir/host/core/version.h.in" "$1/host/core/"
}

hash_of() {
  cmake -DSOURCE_DIR="$1" -DOUTPUT="$work/out.h" -DPROJECT_VERSION=0.0.0 -P "$1/cmake/version.cmake"
  sed -n 's/^#define OCTWALK_GIT_HASH "\(.*\)"$/\1/p' "$work/out.h"
}

expect() {
  if [ "$2" != "$3" ]; then
    echo "FAIL: $1: expected '$3', got '$2'" >&2
    exit 1
  fi
  echo "ok: $1: $2"
}

make_tree "$work/checkout"
git_quiet -C "$work/checkout" init
git_quiet -C "$work/checkout" add -A
git_quiet -C "$work/checkout" commit -m tree
head=$(git -C "$work/checkout" rev-parse --short=12 HEAD)
echo 0123456789ab > "$work/checkout/.source-githash"
expect "a checkout of its own, with a stale .source-githash" "$(hash_of "$work/checkout")" "$head"

make_tree "$work/copy"
echo 0123456789ab > "$work/copy/.source-githash"
expect "a copy without .git" "$(hash_of "$work/copy")" 0123456789ab

mkdir -p "$work/outer"
git_quiet -C "$work/outer" init
git_quiet -C "$work/outer" commit --allow-empty -m outer
make_tree "$work/outer/copy"
echo 0123456789ab > "$work/outer/copy/.source-githash"
expect "a copy inside another repository" "$(hash_of "$work/outer/copy")" 0123456789ab
