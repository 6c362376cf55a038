#!/usr/bin/env bash
# Two "hosts" on one machine: network namespaces joined by a veth pair, 3 ranks in each (the even
# ones on the first, so that hosts are not runs of rank numbers), all collectives checked by
# process_world. Ranks in one namespace talk shm; across, TCP over the veth (netns_hosts.sh); with
# TUTTI_TRANSPORT set (meson's -ucx run: ucx) every pair takes that transport instead. The ring
# visits one host's ranks, then the other's: 0 2 4 1 3 5. The double
# binary tree runs across the hosts with a chain along the ring inside each, whose head alone
# talks to the other host: ranks 0 and 1 lead tree 0, ranks 5 and 4 tree 1 (meson runs this with
# TUTTI_ALGO=tree once, so that every all-reduce case takes that tree). Skipped (exit 77) with the
# reason where namespaces cannot be made.
# Usage: two_hosts.sh PROCESS_WORLD
set -u
world=$1
. "$(dirname "$0")/netns_hosts.sh"

secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')

# launch TRANSPORT: the 6 ranks with TUTTI_TRANSPORT=TRANSPORT; rank r's output in log_r.
launch() {
  local port=$((20000 + RANDOM % 20000)) rank ns
  pids=()
  for rank in 0 1 2 3 4 5; do
    ns=$h1
    [ $((rank % 2)) -eq 1 ] && ns=$h2
    ip netns exec "$ns" env TUTTI_RANK=$rank TUTTI_WORLD_SIZE=6 TUTTI_LOCAL_RANK=$((rank / 2)) \
      TUTTI_ADDR=192.0.2.1 TUTTI_PORT=$port TUTTI_SECRET="$secret" TUTTI_TIMEOUT=60 \
      TUTTI_DEBUG=INFO TUTTI_TRANSPORT="$1" "$world" --seed 99 --cases-per-kind 2 \
      --max-bytes 524288 >"/tmp/tutti-hosts-$suffix-$rank.log" 2>&1 &
    pids+=($!)
  done
}
log() { echo "/tmp/tutti-hosts-$suffix-$1.log"; }
show_logs() {
  for rank in 0 1 2 3 4 5; do
    sed "s/^/[$rank] /" "$(log "$rank")" | grep -v "TRACE"
    rm -f "$(log "$rank")"
  done
}

failed=0
# The selection meson gives (ucx in the -ucx run), else auto.
selection=${TUTTI_TRANSPORT:-auto}
launch "$selection"
for rank in 0 1 2 3 4 5; do
  wait "${pids[$rank]}" || { echo "rank $rank failed:"; failed=1; }
done
# auto: each pair over the transport the registry picks, shm within a namespace, tcp across;
# a single transport: every pair over it.
expect_connected() {  # RANK SAME_HOST OTHER_HOST ALL
  local line="connected, shm to $2; tcp to $3 (TUTTI_TRANSPORT=auto)"
  [ "$selection" = auto ] || line="connected, $selection to $4 (TUTTI_TRANSPORT=$selection)"
  grep -qF "$line" "$(log "$1")" || { echo "FAILED: rank $1 did not log: $line"; failed=1; }
}
expect_connected 0 "2 4" "1 3 5" "1 2 3 4 5"
expect_connected 5 "1 3" "0 2 4" "0 1 2 3 4"
for plan in "ring 0: 0 2 4 1 3 5 via NET" "tree 0: parents - 0 0 1 2 3\$" \
  "tree 1: parents 2 3 4 5 5 -\$"; do
  grep -q "tutti INFO $plan" "$(log 0)" || { echo "FAILED: rank 0 did not plan $plan"; failed=1; }
done
show_logs

# A selection that cannot join the hosts fails at init on every rank, naming the peer and why.
launch shm
for rank in 0 1 2 3 4 5; do
  if wait "${pids[$rank]}"; then echo "FAILED: rank $rank ran with TUTTI_TRANSPORT=shm"; failed=1; fi
  grep -q "none of the transports TUTTI_TRANSPORT=shm allows (shm) reaches rank [0-9] (.*), which runs on another host" "$(log "$rank")" ||
    { echo "FAILED: rank $rank did not say why TUTTI_TRANSPORT=shm cannot work"; failed=1; }
done
show_logs
exit $failed
