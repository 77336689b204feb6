#!/usr/bin/env bash
# Links tests/g6_client/g6_client.c the way a client of libg6 does, against libg6.a alone and against
# libg6.so, and runs both on the CPU backend with no CUDA runtime on the library path; libg6.so must not
# need libcudart (docs/hermite_libg6.md: what the libraries need at link time).
# Usage: check_link.sh CC INCLUDE_DIR LIBG6_A LIBG6_SO WORK_DIR [EXTRA_STATIC_LIBS...]
set -euo pipefail
cc=$1 include=$2 archive=$3 shared=$4 work=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
fail() { echo "check_link: $*" >&2; exit 1; }
for lib in "$archive" "$shared"; do
  [ -e "$lib" ] || { echo "check_link: $lib is not built; skipped"; exit 77; }
done

"$cc" -I"$include" "$here/g6_client.c" "$archive" "$@" -lstdc++ -lgomp -lm -o "$work/client_static" ||
  fail "a C client does not link against $archive with -lstdc++ -lgomp -lm $*"
shared_dir=$(dirname "$shared")
"$cc" -I"$include" "$here/g6_client.c" -L"$shared_dir" -lg6 -lm -o "$work/client_shared" ||
  fail "a C client does not link against $shared"
if readelf -d "$shared" | grep NEEDED | grep -q cudart; then
  fail "$shared needs the CUDA runtime: $(readelf -d "$shared" | grep NEEDED | grep cudart)"
fi

export OCTWALK_G6_BACKEND=cpu
env -u LD_LIBRARY_PATH "$work/client_static" || fail "the client linked against $archive failed ($?)"
LD_LIBRARY_PATH="$shared_dir" "$work/client_shared" || fail "the client linked against $shared failed ($?)"
if LD_LIBRARY_PATH="$shared_dir" ldd "$work/client_shared" | grep -q 'cudart'; then
  fail "the client of $shared loads the CUDA runtime"
fi
