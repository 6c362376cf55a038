#!/usr/bin/env bash
# `meson install` into a scratch root, then C programs outside the tree are compiled with the
# installed tutti.pc / tutti-bucketing.pc and headers, linked against the installed libraries, and
# run; the installed all_reduce_perf runs two checked ranks; where the PyTorch backend is built,
# the installed tutti_torch is imported from there.
# Usage: installed_library_is_usable.sh BUILD_DIR CONSUMER_SOURCE BUCKETING_SOURCE torch|no-torch
set -eu
build=$1 source=$2 bucketing_source=$3 torch=$4
# A sanitizer build's library needs the sanitizer runtime loaded first in every program that
# uses it: an outside consumer built without it cannot run, so there is nothing to prove here.
if nm -D --undefined-only "$build/libtutti.so" | grep -q -e __asan_ -e __tsan_; then
  echo "SKIP: this build is sanitized"
  exit 77
fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
meson install -C "$build" --destdir "$root" --no-rebuild --quiet >/dev/null
pcdir=$(dirname "$(find "$root" -name tutti.pc | head -n 1)")
[ -n "$pcdir" ] || { echo "tutti.pc was not installed"; exit 1; }
for tool in tuttirun tutti-bench tutti-info; do
  [ -x "$(find "$root" -name "$tool" -type f | head -n 1)" ] || { echo "$tool not installed"; exit 1; }
done
export PKG_CONFIG_PATH=$pcdir PKG_CONFIG_SYSROOT_DIR=$root
libdir=$(dirname "$pcdir")  # pkgconfig/ sits in the library directory
# The nccl-tests programs as a health check starts them: installed, two ranks, checked (the
# installed library found where it was installed: its RPATH names the real prefix, not this root).
perf=$(find "$root" -name all_reduce_perf | head -n 1)
[ -L "$perf" ] || { echo "all_reduce_perf not installed"; exit 1; }
report=$(LD_LIBRARY_PATH=$libdir "$perf" -b 8 -e 1K -f 8 -g 2 -c 1 -n 2 -w 1 2>&1) ||
  { echo "installed all_reduce_perf failed: $report"; exit 1; }
grep -q '^# Out of bounds values : 0 OK$' <<<"$report" ||
  { echo "installed all_reduce_perf: $report"; exit 1; }
# Meson points LD_LIBRARY_PATH at the build tree; the installed library must serve alone.
build_and_run() {  # SOURCE PACKAGE
  # shellcheck disable=SC2046  # pkg-config's flags are words
  cc -std=c11 -Wall -Werror $(pkg-config --cflags "$2") "$1" $(pkg-config --libs "$2") \
    -Wl,-rpath,"$libdir" -o "$root/consumer"
  env -u LD_LIBRARY_PATH "$root/consumer"
}
build_and_run "$source" tutti
build_and_run "$bucketing_source" tutti-bucketing
[ "$torch" = torch ] || exit 0
# The package and its extension, which finds the installed libtutti through its own RPATH.
package=$(find "$root" -type d -name tutti_torch | head -n 1)
[ -n "$package" ] || { echo "tutti_torch was not installed"; exit 1; }
cd "$root"  # not the build tree, where a tutti_torch lies too
env -u LD_LIBRARY_PATH PYTHONPATH="$(dirname "$package")" OPENBLAS_NUM_THREADS=1 \
  /usr/bin/python3 -c '
import sys
import tutti_torch, tutti_torch.ddp
assert tutti_torch.__file__.startswith(sys.argv[1]), tutti_torch.__file__
assert tutti_torch._C.__file__.startswith(sys.argv[1]), tutti_torch._C.__file__
print("tutti_torch imports from", tutti_torch.__file__)
' "$root"
