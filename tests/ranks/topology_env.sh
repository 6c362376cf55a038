#!/usr/bin/env bash
# The runtime's topology variables in a 2-rank tuttirun job. TUTTI_TOPO_FILE with an NCCL fixture:
# rank 0 logs the CPU ring and the file's GPU rings (the DGX-1 V100's 6 NVLink rings);
# TUTTI_TOPO_DUMP_FILE writes NCCL XML that tutti-topo loads back to the same file (and that is
# what tutti-topo makes of the fixture), or JSON for a .json name; a missing or garbage
# TUTTI_TOPO_FILE fails the job with an error naming the variable and the file. Ranks pinned to
# CPUs order the ring by core: with this VM's hwloc XML (CPU 0 on core 0, CPU 1 on core 1) and odd
# ranks pinned to CPU 0, even ones to CPU 1, the ring is 1 3 0 2, and the job's collectives (checked
# against the reference) follow it, the tree's too.
# Usage: topology_env.sh TUTTIRUN PROCESS_WORLD TUTTI_TOPO FIXTURES_DIR
set -u
tuttirun=$1 world=$2 topo=$3 fixtures=$4
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
job() { "$tuttirun" -n 2 -- "$world" --seed 3 --cases-per-kind 1 --max-bytes 4096; }

TUTTI_DEBUG=INFO TUTTI_TOPO_FILE="$fixtures/dgx1-v100.xml" TUTTI_TOPO_DUMP_FILE="$dir/dump.xml" \
  job >"$dir/log" 2>&1 || { cat "$dir/log"; fail "job with TUTTI_TOPO_FILE exited $?"; }
grep -E 'tutti INFO ring 0: (0 1|1 0) via SHM [0-9.]+ GB/s$' "$dir/log" || fail "no CPU ring logged"
[ "$(grep -c 'tutti INFO topology GPU ring [0-5]: .* via NVL 20 GB/s$' "$dir/log")" -eq 6 ] ||
  fail "the file's 6 NVLink rings are not logged"
"$topo" --file "$dir/dump.xml" --xml "$dir/again.xml" || fail "the dump does not load"
cmp "$dir/dump.xml" "$dir/again.xml" || fail "the dump does not load back equal"
"$topo" --file "$fixtures/dgx1-v100.xml" --xml "$dir/fixture.xml"
cmp "$dir/dump.xml" "$dir/fixture.xml" || fail "the dump differs from the file it was given"

TUTTI_TOPO_DUMP_FILE="$dir/probed.json" job >"$dir/log" 2>&1 || fail "job with a JSON dump exited $?"
python3 -c 'import json, sys; t = json.load(open(sys.argv[1])); assert t["nodes"] and t["pus"]' \
  "$dir/probed.json" || fail "the JSON dump of the probe is not a topology"

if [ "$(nproc)" -ge 2 ]; then
  printf '#!/bin/sh\nexec taskset -c $((1 - TUTTI_RANK %% 2)) "$@"\n' >"$dir/pin.sh"
  chmod +x "$dir/pin.sh"
  TUTTI_DEBUG=INFO TUTTI_TOPO_FILE="$fixtures/hwloc-dev-vm.xml" \
    "$tuttirun" -n 4 -- "$dir/pin.sh" "$world" --cases-per-kind 1 --max-bytes 4096 >"$dir/log" 2>&1 ||
    { cat "$dir/log"; fail "pinned job exited $?"; }
  grep -q 'tutti INFO ring 0: 1 3 0 2 via SHM' "$dir/log" || { cat "$dir/log"; fail "ring not by core"; }
  # One host: the tree's members are the ranks in ring order (positions 0 1 2 3 = ranks 1 3 0 2,
  # position 2 under 0, 1 and 3 under 2), not in rank order.
  grep -q 'tutti INFO tree 0: parents 1 - 0 0$' "$dir/log" ||
    { cat "$dir/log"; fail "tree 0 does not follow the ring"; }
fi

for bad in "$dir/missing.xml" "$dir/garbage.xml"; do
  printf 'not xml at all \001\n' >"$dir/garbage.xml"
  if TUTTI_TOPO_FILE="$bad" job >"$dir/log" 2>&1; then fail "TUTTI_TOPO_FILE=$bad succeeded"; fi
  grep -q "TUTTI_TOPO_FILE=$bad: topology file $bad" "$dir/log" ||
    { cat "$dir/log"; fail "the error does not name the variable and $bad"; }
done
echo ok
