#!/usr/bin/env bash
# A rank SIGKILLed in the middle of all-reduces: tuttirun stops the others and reports the rank,
# and /dev/shm holds no tutti segment afterwards (segments are unlinked once everybody mapped
# them). Usage: killed_rank_leaks_nothing.sh TUTTIRUN PROCESS_WORLD
set -u
tuttirun=$1 world=$2
before=$(ls /dev/shm | grep -c '^tutti-' || true)
log=$(mktemp)
"$tuttirun" -n 4 --grace 1 -- "$world" --loop >"$log" 2>&1 &
launcher=$!
for _ in $(seq 1 200); do
  [ "$(grep -c '^ready' "$log")" -ge 4 ] && break
  sleep 0.05
done
[ "$(grep -c '^ready' "$log")" -ge 4 ] || { echo "ranks never became ready"; cat "$log"; exit 1; }
victim=$(pgrep -f -n -- "$world --loop")
kill -9 "$victim"
wait "$launcher"
status=$?
cat "$log"
[ "$status" -eq 137 ] || { echo "tuttirun exited $status, expected 137"; exit 1; }
grep -q "killed by signal 9" "$log" || { echo "no message naming the killed rank"; exit 1; }
after=$(ls /dev/shm | grep -c '^tutti-' || true)
[ "$after" -le "$before" ] || { echo "leaked segments:"; ls -l /dev/shm; exit 1; }
echo "ok: rank pid $victim killed, tuttirun exited 137, /dev/shm clean"
