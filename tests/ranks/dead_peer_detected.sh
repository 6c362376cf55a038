#!/usr/bin/env bash
# A rank SIGKILLed in the middle of all-reduces over shm: the survivors notice that its process is
# gone and fail on their own, naming it, long before TUTTI_TIMEOUT (300 s here) and before
# tuttirun's grace period (30 s) would have stopped them.
# Usage: dead_peer_detected.sh TUTTIRUN PROCESS_WORLD
set -u
tuttirun=$1 world=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
TUTTI_TIMEOUT=300 "$tuttirun" -n 4 --grace 30 -- "$world" --loop >"$log" 2>&1 &
launcher=$!
for _ in $(seq 1 200); do
  [ "$(grep -c '^ready' "$log")" -ge 4 ] && break
  sleep 0.05
done
[ "$(grep -c '^ready' "$log")" -ge 4 ] || { echo "ranks never became ready"; cat "$log"; exit 1; }
victim=$(pgrep -f -n -- "$world --loop")
start=$(date +%s)
kill -9 "$victim"
wait "$launcher"
elapsed=$(( $(date +%s) - start ))
cat "$log"
[ "$elapsed" -lt 15 ] || { echo "survivors took ${elapsed} s to stop"; exit 1; }
grep -q "is gone: its process exited" "$log" || { echo "no survivor named the dead rank"; exit 1; }
echo "ok: survivors stopped ${elapsed} s after the kill"
