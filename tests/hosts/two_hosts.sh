#!/usr/bin/env bash
# Two "hosts" on one machine: network namespaces joined by a veth pair, 3 ranks in each, all
# collectives checked by process_world. Ranks in one namespace talk shm; across, TCP over the veth
# (192.0.2.0/24, a documentation range that is never routed). Skipped (exit 77) with the reason
# where namespaces cannot be made.
# Usage: two_hosts.sh PROCESS_WORLD
set -u
world=$1
suffix=$$
h1=tutti-h1-$suffix h2=tutti-h2-$suffix

cleanup() {
  ip netns del "$h1" 2>/dev/null
  ip netns del "$h2" 2>/dev/null
}
trap cleanup EXIT

if ! command -v ip >/dev/null; then echo "SKIP: iproute2 (ip) is not installed"; exit 77; fi
if ! ip netns add "$h1" 2>/tmp/tutti-netns-$suffix.err; then
  echo "SKIP: cannot create network namespaces here: $(cat /tmp/tutti-netns-$suffix.err)"
  rm -f /tmp/tutti-netns-$suffix.err
  exit 77
fi
rm -f /tmp/tutti-netns-$suffix.err
ip netns add "$h2" || exit 1
ip link add "v1-$suffix" type veth peer name "v2-$suffix" || { echo "SKIP: no veth support"; exit 77; }
ip link set "v1-$suffix" netns "$h1"
ip link set "v2-$suffix" netns "$h2"
ip -n "$h1" addr add 192.0.2.1/24 dev "v1-$suffix"
ip -n "$h2" addr add 192.0.2.2/24 dev "v2-$suffix"
for ns in "$h1" "$h2"; do ip -n "$ns" link set lo up; done
ip -n "$h1" link set "v1-$suffix" up
ip -n "$h2" link set "v2-$suffix" up

secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
port=$((20000 + RANDOM % 20000))
pids=()
for rank in 0 1 2 3 4 5; do
  ns=$h1
  [ "$rank" -ge 3 ] && ns=$h2
  ip netns exec "$ns" env TUTTI_RANK=$rank TUTTI_WORLD_SIZE=6 TUTTI_LOCAL_RANK=$((rank % 3)) \
    TUTTI_ADDR=192.0.2.1 TUTTI_PORT=$port TUTTI_SECRET="$secret" TUTTI_TIMEOUT=60 \
    TUTTI_DEBUG=INFO "$world" --seed 99 --cases-per-kind 2 --max-bytes 524288 \
    >"/tmp/tutti-hosts-$suffix-$rank.log" 2>&1 &
  pids+=($!)
done
failed=0
for rank in 0 1 2 3 4 5; do
  wait "${pids[$rank]}" || { echo "rank $rank failed:"; failed=1; }
done
for rank in 0 1 2 3 4 5; do
  sed "s/^/[$rank] /" "/tmp/tutti-hosts-$suffix-$rank.log" | grep -v "TRACE"
  rm -f "/tmp/tutti-hosts-$suffix-$rank.log"
done
exit $failed
