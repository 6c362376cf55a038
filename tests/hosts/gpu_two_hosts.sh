#!/usr/bin/env bash
# The device ring across two "hosts" (netns_hosts.sh), with the CPU stand-in for the CUDA driver
# (tests/ranks/host_cuda_driver.cpp): tutti-bench on device buffers, every result checked (-c 1).
# Links inside a host go GPU to GPU; a link to the other host goes through a pair of link proxies
# (runtime/gpu/ring_proxies.hpp), and the ring runs Simple only. Cases:
#   4 ranks, 2 per host (ranks 0 1 | 2 3): links 1->2 and 3->0 cross, each through a one-way
#     proxy; every ring collective
#   2 ranks, 1 per host: both links cross, through one proxy each way on one socket
#   4 ranks numbered across the hosts (ranks 0 2 | 1 3): the ring follows the communicator's plan,
#     0 2 1 3, crossing once each way (links 2->1 and 3->0) where rank order would cross four
#     times; reduce-scatter and allgather, whose blocks are ranks' wherever the ring puts them
#   TUTTI_ALGO=tree: the device tree has no proxies, so across hosts the all-reduce is staged
#     (the host's tree) and no device ring is connected
#   the second host's ranks SIGKILLed while the kernels run: the first host's ranks learn it from
#     their proxies' broken sockets (nothing else talks while kernels run, and no rank is left
#     there to leave a note) and fail naming the proxy, well before TUTTI_TIMEOUT
# The namespaces share this machine's boot id, which the GPU sharing plan takes for one machine:
# each host's stand-in GPUs get UUIDs of their own (HOST_CUDA_UUID_SALT), as two machines' have.
# Skipped (exit 77) with the reason where namespaces cannot be made.
# Usage: gpu_two_hosts.sh TUTTI_BENCH STAND_IN_DRIVER
set -u
bench=$1 driver=$2
. "$(dirname "$0")/netns_hosts.sh"

secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
failed=0
fail() { echo "FAILED: $*"; failed=1; }
log() { echo "/tmp/tutti-gpu-hosts-$suffix-$1.log"; }

# launch NRANKS PER_HOST COLLECTIVE [TUTTI-BENCH ARGS]: ranks 0..PER_HOST-1 on the first host, the
# next on the second (with $interleaved set, even ranks on the first, odd on the second); rank r's
# output in log r. $extra_env (words VAR=value) goes to every rank.
extra_env=()
interleaved=
launch() {
  local n=$1 per=$2 collective=$3 port=$((20000 + RANDOM % 20000)) rank host local
  shift 3
  pids=()
  for rank in $(seq 0 $((n - 1))); do
    host=$((rank / per)) local=$((rank % per))
    [ -n "$interleaved" ] && host=$((rank % 2)) local=$((rank / 2))
    ip netns exec "${hosts[$host]}" env "${extra_env[@]}" \
      HOST_CUDA_UUID_SALT=$host TUTTI_RANK="$rank" TUTTI_WORLD_SIZE="$n" \
      TUTTI_LOCAL_RANK=$local TUTTI_ADDR=192.0.2.1 TUTTI_PORT=$port \
      TUTTI_SECRET="$secret" TUTTI_TIMEOUT=60 TUTTI_DEBUG=INFO TUTTI_CUDA_DRIVER="$driver" \
      "$bench" "$collective" --device cuda -c 1 -w 1 "$@" >"$(log "$rank")" 2>&1 &
    pids+=($!)
  done
}

show_logs() {  # NRANKS
  local rank
  for rank in $(seq 0 $(($1 - 1))); do
    sed "s/^/[$rank] /" "$(log "$rank")" | grep -v "TRACE"
    rm -f "$(log "$rank")"
  done
}

expect() {  # RANK TEXT
  grep -qF -- "$2" "$(log "$1")" || fail "rank $1 did not log: $2"
}

# checked_run NRANKS PER_HOST COLLECTIVE [ARGS]: every rank exits 0, rank 0 finds every value
# right, every rank's kernels ran the ring across the hosts (not staged).
checked_run() {
  local n=$1 rank
  launch "$@"
  for rank in $(seq 0 $((n - 1))); do
    wait "${pids[$rank]}" || fail "$3 on $n ranks: rank $rank exited with $?"
    expect "$rank" "joined the device ring of $n ranks"
    expect "$rank" "across hosts: Simple only"
    if grep -q "staged through host memory" "$(log "$rank")"; then
      fail "$3 on $n ranks: rank $rank staged its buffers"
    fi
  done
  expect 0 "# Out of bounds values : 0 OK"
}

for collective in allreduce reducescatter allgather broadcast reduce; do
  checked_run 4 2 "$collective" -b 8 -e 1M -f 32 -n 2
  expect 1 "link proxy to rank 2 (192.0.2.2:"
  expect 1 "(16 FIFOs out, 0 in)"
  expect 2 "link proxy to rank 1 (192.0.2.1:"
  expect 2 "(0 FIFOs out, 16 in)"
  expect 0 "link proxy to rank 3 (192.0.2.2:"
  show_logs 4
done

checked_run 2 1 allreduce -b 8 -e 1M -f 32 -n 2
expect 0 "link proxy to rank 1 (192.0.2.2:"
expect 0 "(16 FIFOs out, 16 in)"
show_logs 2

interleaved=1
for collective in reducescatter allgather; do
  checked_run 4 2 "$collective" -b 8 -e 1M -f 32 -n 2
  expect 0 "; ring 0 2 1 3)"
  expect 2 "link proxy to rank 1 (192.0.2.2:"
  expect 2 "(16 FIFOs out, 0 in)"
  expect 1 "link proxy to rank 2 (192.0.2.1:"
  expect 1 "(0 FIFOs out, 16 in)"
  expect 0 "link proxy to rank 3 (192.0.2.2:"
  expect 0 "(0 FIFOs out, 16 in)"
  if grep -q "link proxy to rank 1 " "$(log 0)"; then
    fail "$collective with ranks numbered across the hosts: rank 0 crossed to its rank-order next"
  fi
  show_logs 4
done
interleaved=

extra_env=(TUTTI_ALGO=tree)
launch 4 2 allreduce -b 8 -e 1M -f 32 -n 2
for rank in 0 1 2 3; do
  wait "${pids[$rank]}" || fail "tree all-reduce: rank $rank exited with $?"
  if grep -q "joined the device ring" "$(log "$rank")"; then
    fail "tree all-reduce across hosts: rank $rank connected a device ring"
  fi
done
expect 0 "# Out of bounds values : 0 OK"
show_logs 4
extra_env=()

# The second host dies while the kernels run: ranks 0 and 1 must fail through their proxies (rank 1
# sends to rank 2, rank 0 receives from rank 3) long before TUTTI_TIMEOUT's 60 s; each says its
# proxy broke, or repeats the other's failure that says so.
launch 4 2 allreduce -b 4M -e 4M -n 100000
for _ in $(seq 1 300); do
  grep -q "joined the device ring" "$(log 2)" && break
  sleep 0.1
done
sleep 1
kill -KILL "${pids[2]}" "${pids[3]}"
for rank in 0 1; do
  for _ in $(seq 1 300); do
    kill -0 "${pids[$rank]}" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "${pids[$rank]}" 2>/dev/null; then
    fail "rank $rank still runs 30 s after the second host died"
  elif wait "${pids[$rank]}"; then
    fail "rank $rank exited 0 though the second host died"
  fi
  expect "$rank" "the GPU link proxy of rank "
done
for rank in 0 1; do kill -KILL "${pids[$rank]}" 2>/dev/null; done
wait 2>/dev/null
show_logs 4
exit $failed
