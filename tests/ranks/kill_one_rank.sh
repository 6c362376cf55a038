# Sourced by the killed-rank tests: starts 4 ranks of `process_world --loop` under tuttirun with
# the given grace period, waits until all are all-reducing, SIGKILLs one of them and waits for
# tuttirun. Sets: log (the job's output), victim (the killed pid), status (tuttirun's exit code),
# elapsed (seconds from the kill to tuttirun's exit).
# Usage: kill_one_rank TUTTIRUN PROCESS_WORLD GRACE_SECONDS
kill_one_rank() {
  local tuttirun=$1 world=$2 grace=$3 launcher start
  log=$(mktemp)
  "$tuttirun" -n 4 --grace "$grace" -- "$world" --loop >"$log" 2>&1 &
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
  status=$?
  elapsed=$(($(date +%s) - start))
  cat "$log"
}
