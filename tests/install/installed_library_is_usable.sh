#!/usr/bin/env bash
# `meson install` into a scratch root, then a C program outside the tree is compiled with the
# installed tutti.pc and headers, linked against the installed libtutti, and run.
# Usage: installed_library_is_usable.sh BUILD_DIR CONSUMER_SOURCE
set -eu
build=$1 source=$2
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
cc -std=c11 -Wall -Werror $(pkg-config --cflags tutti) "$source" $(pkg-config --libs tutti) \
  -Wl,-rpath,"$libdir" -o "$root/consumer"
# Meson points LD_LIBRARY_PATH at the build tree; the installed library must serve alone.
env -u LD_LIBRARY_PATH "$root/consumer"
