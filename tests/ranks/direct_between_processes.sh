#!/usr/bin/env bash
# The direct all-reduce between processes: 3 ranks under tuttirun whose buffers are all
# tutti_mem_alloc memory (process_world --registered) map each other's memory through
# /proc/<pid>/fd. Every collective is checked against the reference by process_world; each rank's
# trace (TUTTI_TRACE_FILE) shows that every all-reduce ran as "direct", not as a fallback.
# Usage: direct_between_processes.sh TUTTIRUN PROCESS_WORLD
set -u
tuttirun=$1 world=$2
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

TUTTI_ALGO=direct TUTTI_TIMEOUT=120 TUTTI_TRACE_FILE="$dir/trace-%r.json" \
  "$tuttirun" -n 3 -- "$world" --registered --seed 5 --cases-per-kind 4 --max-bytes 2097152 \
  || fail "the job exited $?"
for rank in 0 1 2; do
  python3 - "$dir/trace-$rank.json" <<'PY' || fail "rank $rank's trace"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
algorithms = [e["args"]["algorithm"] for e in events if e["ph"] == "X" and e["name"] == "allreduce"]
print(sys.argv[1], algorithms)
assert len(algorithms) == 4 and set(algorithms) == {"direct"}, algorithms
PY
done
echo "every all-reduce of the 3 processes ran direct"
