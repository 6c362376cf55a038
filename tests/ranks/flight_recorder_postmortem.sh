#!/usr/bin/env bash
# A 4-process job in which rank 2 skips all-reduce #17: ranks 0, 1 and 3 time out (TUTTI_TIMEOUT=2)
# and each dumps its flight recorder into TUTTI_DUMP_DIR; rank 2, alive in its own work, dumps on
# SIGUSR1; `tutti-info postmortem` then names rank 2, its host and pid, as behind, and the
# operation the others wait in. Then the same job with rank 2 stopped (SIGSTOP) before #17: once
# the others have failed and dumped it is continued, enters #17 and goes on until it fails and
# dumps too, having issued as many collectives as they did or more; postmortem must still name
# rank 2 as the one they waited for.
# Usage: flight_recorder_postmortem.sh TUTTIRUN SKIP_COLLECTIVE TUTTI_INFO
set -u
tuttirun=$1 program=$2 info=$3
fail() { echo "FAILED: $*"; cat "$log"; ls -l "$dir"; exit 1; }
# Polls a condition for up to 60 s.
wait_for() { for _ in $(seq 1 600); do eval "$1" && return 0; sleep 0.1; done; return 1; }
dir="" log=$(mktemp) launcher=""
trap 'kill "$launcher" 2>/dev/null; rm -rf "$dir" "$log"' EXIT

# start_job ARGS...: runs the job with rank 2 skipping #17 in a fresh $dir, waits for the dumps of
# ranks 0, 1 and 3 and sets $pid to rank 2's.
start_job() {
  rm -rf "$dir"
  dir=$(mktemp -d)
  TUTTI_DUMP_DIR=$dir TUTTI_TIMEOUT=2 "$tuttirun" -n 4 --grace 60 -- \
    "$program" --skip-rank 2 --at 17 "$@" >"$log" 2>&1 &
  launcher=$!
  wait_for '[ "$(ls "$dir" | grep -c "^tutti-.*-rank[013]\.json$")" -eq 3 ]' ||
    fail "ranks 0, 1 and 3 did not all dump"
  pid=$(sed -n 's/^\(skipping\|stopping\) rank 2 pid \([0-9]*\)$/\2/p' "$log")
  [ -n "$pid" ] || fail "rank 2 did not say it skipped"
  [ ! -e "$(ls "$dir"/tutti-*-rank2.json 2>/dev/null)" ] || fail "rank 2 dumped before the others"
}

start_job
kill -USR1 "$pid"
wait_for 'ls "$dir"/tutti-*-rank2.json >/dev/null 2>&1' || fail "SIGUSR1 made rank 2 dump nothing"
kill -0 "$pid" || fail "SIGUSR1 killed rank 2"
kill -TERM "$launcher"
wait "$launcher"

report=$("$info" postmortem "$dir") || fail "tutti-info postmortem exited $?"
echo "$report"
host=$(hostname)
grep -qxF "rank 2 (host $host, pid $pid) is behind: last completed #16 allreduce; ranks 0,1,3 are waiting in #17 allreduce(count=1024, float32, sum) for rank 2" <<<"$report" ||
  fail "the report does not name rank 2 as behind in #17"
# A rank that times out first exits, so later ones may fail on its exit instead (remote error).
failed='dumped on (timeout|remote error): last completed #16 allreduce; failed in #17 allreduce'
[ "$(grep -cE "$failed" <<<"$report")" -eq 3 ] || fail "expected ranks 0, 1 and 3 to fail in #17"
grep -q "dumped on timeout: .*timed out after 2 s" <<<"$report" || fail "no rank timed out"
grep -q "pid $pid), dumped on SIGUSR1: last completed #16 allreduce$" <<<"$report" ||
  fail "rank 2's SIGUSR1 dump is not in the report"
! grep -q mismatch <<<"$report" || fail "a mismatch was reported where calls agree"
echo "ok: rank 2 named as behind in #17"

start_job --stop
kill -CONT "$pid"
wait_for 'ls "$dir"/tutti-*-rank2.json >/dev/null 2>&1' || fail "rank 2, continued, did not dump"
wait "$launcher"
report=$("$info" postmortem "$dir") || fail "tutti-info postmortem exited $?"
echo "$report"
# Ranks 0, 1 and 3 waited for rank 2 in #17 (it is an all-to-all exchange at this size); rank 2
# entered it after they failed, completed it from what they had left or failed in it.
grep -qxE "rank 2 \(host $host, pid $pid\) is behind: it entered #17 allreduce\(count=1024, float32, sum\) only after (rank|ranks) [013,]+ had failed in it waiting for it" <<<"$report" ||
  fail "the report does not name the stopped rank 2 as behind in #17"
[ "$(grep -c "is behind" <<<"$report")" -eq 1 ] || fail "another rank was called behind"
echo "ok: the stopped rank 2 named as behind in #17"
