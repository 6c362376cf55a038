#!/usr/bin/env bash
# A rank SIGKILLed in the middle of all-reduces over shm: the survivors notice that its process is
# gone and fail on their own, naming it, long before TUTTI_TIMEOUT (300 s here) and before
# tuttirun's grace period (30 s) would have stopped them.
# Usage: dead_peer_detected.sh TUTTIRUN PROCESS_WORLD
set -u
source "$(dirname "$0")/kill_one_rank.sh"
export TUTTI_TIMEOUT=300
kill_one_rank "$1" "$2" 30
trap 'rm -f "$log"' EXIT
[ "$elapsed" -lt 15 ] || { echo "survivors took ${elapsed} s to stop"; exit 1; }
grep -q "is gone: its process exited" "$log" || { echo "no survivor named the dead rank"; exit 1; }
echo "ok: survivors stopped ${elapsed} s after the kill"
