#!/usr/bin/env bash
# The direct algorithms between processes, 3 ranks under tuttirun, every collective checked
# against the reference by process_world; each rank's trace (TUTTI_TRACE_FILE) shows which
# algorithm ran:
# - tutti_mem_alloc buffers (process_world --registered), mapped through /proc/<pid>/fd, and
#   ordinary buffers, copied through the kernel (process_vm_readv): every all-reduce
#   (forced) and every reduce-scatter and allgather of 256 KiB or more (the planner's threshold)
#   ran "direct";
# - registered buffers on every rank but rank 2, whose ordinary output the others reach only
#   through the kernel: every rank pulls (rank 2, which maps every peer's, too), and every
#   all-reduce ran "direct";
# - the direct all-reduce forced on rank 0 only (tutti_comm_set_algorithm), cases of 256 KiB to
#   2 MiB, where the planner of rank 1 picks direct too: the offers keep both on the same rounds
#   (forced pull only when every rank forces it) and every case is right;
# - ordinary buffers of processes whose memory the kernel will not let peers copy
#   (--refuse-ptrace), or with TUTTI_DIRECT_BUFFERS=registered: none did, and the results are
#   still right;
# - the planner's choice for ordinary buffers (tutti-bench, 2 ranks, checked results): the
#   all-reduce pulls through the kernel out of place at 1 MiB, not in place; in place at 16 MiB,
#   not out of place; the reduce-scatter reads through the kernel at 1 MiB, not at 16 MiB.
# Usage: direct_between_processes.sh TUTTIRUN PROCESS_WORLD TUTTI_BENCH
set -u
tuttirun=$1 world=$2 bench=$3
# The planner's picks, as it makes them: TUTTI_AUTOTUNE would time other algorithms too.
export TUTTI_AUTOTUNE=off
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

# run EXPECTED [process_world options]: EXPECTED is "direct" or "fallback".
run() {
  local expected=$1
  shift
  rm -f "$dir"/trace-*.json
  TUTTI_ALGO=direct TUTTI_TIMEOUT=120 TUTTI_DEBUG=INFO TUTTI_TRACE_FILE="$dir/trace-%r.json" \
    "$tuttirun" -n 3 -- "$world" --seed 7 --cases-per-kind 4 --max-bytes 2097152 "$@" \
    > "$dir/log" 2>&1 || { cat "$dir/log"; fail "the job with $* exited non-zero"; }
  for rank in 0 1 2; do
    python3 - "$dir/trace-$rank.json" "$expected" <<'PY' || fail "rank $rank's trace, $*"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
expected = sys.argv[2]
ops = [e for e in events if e["ph"] == "X"]
algorithms = [e["args"]["algorithm"] for e in ops if e["name"] == "allreduce"]
large = [(e["name"], e["args"]["bytes"], e["args"]["algorithm"]) for e in ops
         if e["name"] in ("reduce_scatter", "allgather") and e["args"]["bytes"] >= 256 << 10]
print(sys.argv[1], algorithms, large)
assert len(algorithms) == 4, algorithms
assert {name for name, _, _ in large} == {"reduce_scatter", "allgather"}, large  # seed 7 has both
ran = algorithms + [algorithm for _, _, algorithm in large]
if expected == "direct":
    assert set(ran) == {"direct"}, ran
else:
    assert "direct" not in ran and "" not in ran, ran
PY
  done
}

run direct --registered
run direct
run direct --registered-but-rank 2
echo "every all-reduce and large reduce-scatter and allgather ran direct, registered or not, or on all ranks but one"
TUTTI_TIMEOUT=60 "$tuttirun" -n 2 -- "$world" --seed 7 --cases-per-kind 4 --min-bytes 262144 \
  --max-bytes 2097152 --direct-on-rank 0 > "$dir/log" 2>&1 ||
  { cat "$dir/log"; fail "the job with direct forced on rank 0 only"; }
echo "with direct forced on one rank only, the ranks still kept together"
run fallback --refuse-ptrace
grep -q "the kernel does not copy from pid" "$dir/log" || fail "no rank logged the refusal"
TUTTI_DIRECT_BUFFERS=registered run fallback
echo "where the kernel refuses, or registered memory only is asked for, they ran another algorithm"

rm -f "$dir"/trace-*.json
TUTTI_TRACE_FILE="$dir/trace-%r.json" "$bench" allreduce --ranks 2 -b 1M -e 16M -f 16 -n 3 -w 1 \
  > "$dir/log" 2>&1 || { cat "$dir/log"; fail "tutti-bench exited non-zero"; }
grep -q "Out of bounds values : 0 OK" "$dir/log" || { cat "$dir/log"; fail "tutti-bench's check"; }
python3 - "$dir/trace-0.json" <<'PY' || fail "the planner's choices"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
ran = [(e["args"]["bytes"], e["args"]["algorithm"]) for e in events
       if e["ph"] == "X" and e["name"] == "allreduce" and e["args"]["bytes"] >= 1 << 20]
print(ran)
# tutti-bench runs a size's out-of-place calls, then its in-place ones: at 1 MiB direct, then
# the ring; at 16 MiB the ring, then direct.
def runs(size):
    calls = [algorithm for bytes, algorithm in ran if bytes == size]
    return [a for i, a in enumerate(calls) if i == 0 or calls[i - 1] != a]
assert runs(1 << 20) == ["direct", "ring"], runs(1 << 20)
assert runs(16 << 20) == ["ring", "direct"], runs(16 << 20)
PY
echo "the all-reduce of ordinary buffers ran direct out of place at 1 MiB and in place at 16 MiB, not otherwise"

rm -f "$dir"/trace-*.json
TUTTI_TRACE_FILE="$dir/trace-%r.json" "$bench" reducescatter --ranks 2 -b 1M -e 16M -f 16 -n 2 \
  -w 1 > "$dir/log" 2>&1 || { cat "$dir/log"; fail "tutti-bench reducescatter exited non-zero"; }
grep -q "Out of bounds values : 0 OK" "$dir/log" || { cat "$dir/log"; fail "tutti-bench's check"; }
python3 - "$dir/trace-1.json" <<'PY' || fail "the reduce-scatter's choices"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
ran = {(e["args"]["bytes"], e["args"]["algorithm"]) for e in events
       if e["ph"] == "X" and e["name"] == "reduce_scatter"}
print(sorted(ran))
assert ran == {(1 << 20, "direct"), (16 << 20, "ring")}, ran
PY
echo "the reduce-scatter of ordinary buffers read through the kernel at 1 MiB, not at 16 MiB"
