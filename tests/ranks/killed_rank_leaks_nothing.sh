#!/usr/bin/env bash
# A rank SIGKILLed in the middle of all-reduces: tuttirun stops the others and reports the rank,
# and /dev/shm holds no tutti segment afterwards (segments are unlinked once everybody mapped
# them, so tuttirun found none to remove). Usage: killed_rank_leaks_nothing.sh TUTTIRUN PROCESS_WORLD
set -u
source "$(dirname "$0")/kill_one_rank.sh"
before=$(ls /dev/shm | grep -c '^tutti-' || true)
kill_one_rank "$1" "$2" 1
trap 'rm -f "$log"' EXIT
[ "$status" -eq 137 ] || { echo "tuttirun exited $status, expected 137"; exit 1; }
grep -q "killed by signal 9" "$log" || { echo "no message naming the killed rank"; exit 1; }
! grep -q "shared-memory segment" "$log" || { echo "tuttirun had to remove segments:"; cat "$log"; exit 1; }
after=$(ls /dev/shm | grep -c '^tutti-' || true)
[ "$after" -le "$before" ] || { echo "leaked segments:"; ls -l /dev/shm; exit 1; }
echo "ok: rank pid $victim killed, tuttirun exited 137, /dev/shm clean"
