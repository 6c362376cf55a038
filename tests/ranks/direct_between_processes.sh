#!/usr/bin/env bash
# The direct algorithms between processes: 3 ranks under tuttirun whose buffers are all
# tutti_mem_alloc memory (process_world --registered) map each other's memory through
# /proc/<pid>/fd. Every collective is checked against the reference by process_world; each rank's
# trace (TUTTI_TRACE_FILE) shows that every all-reduce (forced) and every reduce-scatter and
# allgather of 512 KiB or more (the planner's threshold) ran as "direct", not as a fallback.
# Usage: direct_between_processes.sh TUTTIRUN PROCESS_WORLD
set -u
tuttirun=$1 world=$2
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

TUTTI_ALGO=direct TUTTI_TIMEOUT=120 TUTTI_TRACE_FILE="$dir/trace-%r.json" \
  "$tuttirun" -n 3 -- "$world" --registered --seed 7 --cases-per-kind 4 --max-bytes 2097152 \
  || fail "the job exited $?"
for rank in 0 1 2; do
  python3 - "$dir/trace-$rank.json" <<'PY' || fail "rank $rank's trace"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
ops = [e for e in events if e["ph"] == "X"]
algorithms = [e["args"]["algorithm"] for e in ops if e["name"] == "allreduce"]
print(sys.argv[1], algorithms)
assert len(algorithms) == 4 and set(algorithms) == {"direct"}, algorithms
large = [(e["name"], e["args"]["bytes"], e["args"]["algorithm"]) for e in ops
         if e["name"] in ("reduce_scatter", "allgather") and e["args"]["bytes"] >= 512 << 10]
print(large)
assert {name for name, _, _ in large} == {"reduce_scatter", "allgather"}, large  # seed 7 has both
assert all(algorithm == "direct" for _, _, algorithm in large), large
PY
done
echo "every all-reduce and large reduce-scatter and allgather of the 3 processes ran direct"
