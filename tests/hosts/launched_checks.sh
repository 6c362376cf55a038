# Checks for a launcher's run of 4 ranks with no TUTTI_* variable (sourced by the suite's launcher
# scripts, which define `launch ARGS...`: runs ARGS as 4 ranks and prints their output):
# process_world's collectives, then all_reduce_perf -c 1, whose #wrong must be 0 at every size.
# Sets failed=1 on a failure.
while read -r variable; do unset "$variable"; done < <(compgen -e | grep '^TUTTI_')
failed=0

# check_launched PROCESS_WORLD ALL_REDUCE_PERF
check_launched() {
  local out status rows wrong
  out=$(launch "$1" --seed 21 --cases-per-kind 2 --max-bytes 262144)
  status=$?
  echo "$out" | grep -v TRACE
  [ $status -eq 0 ] || { echo "FAILED: process_world exited $status"; failed=1; }
  [ "$(echo "$out" | grep -c 'rank [0-3]/4: [0-9]* cases, 0 failed')" -eq 4 ] ||
    { echo "FAILED: not every rank reported its cases passed"; failed=1; }

  out=$(launch "$2" -b 8 -e 4M -f 8 -g 1 -c 1 -n 3 -w 1)
  status=$?
  echo "$out"
  [ $status -eq 0 ] || { echo "FAILED: all_reduce_perf exited $status"; failed=1; }
  # The data rows: size count type redop root, then time algbw busbw #wrong twice.
  rows=$(echo "$out" | awk '$1 ~ /^[0-9]+$/ && NF == 13')
  [ -n "$rows" ] || { echo "FAILED: all_reduce_perf printed no result rows"; failed=1; }
  wrong=$(echo "$rows" | awk '$9 != 0 || $13 != 0' | wc -l)
  [ "$wrong" -eq 0 ] || { echo "FAILED: $wrong sizes with #wrong above 0"; failed=1; }
  echo "$out" | grep -q "Rank  3 Group  0 Pid .* on" ||
    { echo "FAILED: all_reduce_perf did not list rank 3"; failed=1; }
}
