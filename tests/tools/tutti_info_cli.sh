#!/usr/bin/env bash
# tutti-info on hand-made dumps: usage and env; postmortem flags calls that differ at one sequence
# number and names a rank that left no dump from who waits for it; in version 2 dumps it lines
# collectives up by collective_seq, so that send/recv between some ranks neither hide a mismatch
# nor make a rank look behind; a rank that entered (or, stopped inside it, finished) a collective
# only after the others had failed in it waiting for it is behind, whatever the counts say; bad
# input (no directory, no dumps, malformed JSON, a dump that is a directory or a FIFO, a missing
# field, two jobs, one rank twice, a dump inconsistent in itself) is an error naming it, exit 2.
# Usage: tutti_info_cli.sh TUTTI_INFO
set -u
info=$1
fail() { echo "FAILED: $*"; exit 1; }
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT

# expect_error CODE TEXT ARGS...: tutti-info ARGS exits CODE and its stderr contains TEXT.
expect_error() {
  local code=$1 text=$2 out
  shift 2
  out=$("$info" "$@" 2>&1 >/dev/null)
  local status=$?
  [ "$status" -eq "$code" ] || fail "tutti-info $* exited $status, expected $code: $out"
  grep -qF -- "$text" <<<"$out" || fail "tutti-info $*: no '$text' in: $out"
}

# entry SEQ STATE COUNT [WAITING_ON]: one recorded all-reduce of float32 sums.
entry() {
  local waiting=${4:-null} error=""
  [ "$2" = failed ] && error=', "error": "timed out"'
  echo "{\"seq\": $1, \"collective\": \"allreduce\", \"algorithm\": \"ring\", \"count\": $3,
    \"dtype\": \"float32\", \"op\": \"sum\", \"root\": null, \"bytes\": $(($3 * 4)),
    \"state\": \"$2\", \"enqueued_ns\": 1, \"started_ns\": 2, \"ended_ns\": 3,
    \"waiting_on\": $waiting$error}"
}

# dump DIR JOB RANK SIZE LAST_ISSUED ENTRIES...: writes DIR/tutti-JOB-rankRANK.json.
dump() {
  local out=$1 job=$2 rank=$3 size=$4 last=$5 peers="" r
  shift 5
  for ((r = 0; r < size; r++)); do peers+="${peers:+,}{\"rank\": $r, \"host\": \"h$r\", \"pid\": $((100 + r))}"; done
  local entries
  entries=$(IFS=,; echo "$*")
  cat >"$out/tutti-$job-rank$rank.json" <<JSON
{"format": "tutti-flight-recorder", "version": 1, "reason": "timeout", "job": "$job",
 "communicator": "$job", "host": "h$rank", "pid": $((100 + rank)), "rank": $rank, "size": $size,
 "clock": {"steady_ns": 5, "wall_ns": 6}, "last_issued": $last, "capacity": 2048,
 "recorded": $last, "dropped": 0, "error": null, "peers": [$peers], "entries": [$entries]}
JSON
}

"$info" --help | grep -q postmortem || fail "--help does not mention postmortem"
expect_error 2 "postmortem" # no arguments: the usage
"$info" env | grep -q '^TUTTI_DUMP_DIR ' || fail "env does not list TUTTI_DUMP_DIR"
"$info" env | grep -q '^TUTTI_FLIGHT_RECORDER_ENTRIES (integer \[0, 1048576\]), default 2048' ||
  fail "env does not list TUTTI_FLIGHT_RECORDER_ENTRIES with its default"
expect_error 2 "DIR is required" postmortem
expect_error 2 "$dir/missing: no such directory" postmortem "$dir/missing"
mkdir "$dir/empty"
expect_error 2 "no flight-recorder dumps" postmortem "$dir/empty"

# Calls that differ at #5, and rank 2 of 3 missing while the others wait for it.
mkdir "$dir/mismatch"
dump "$dir/mismatch" wjob 0 3 5 "$(entry 4 done 1024)" "$(entry 5 failed 1024 2)"
dump "$dir/mismatch" wjob 1 3 5 "$(entry 4 done 1024)" "$(entry 5 failed 2048 2)"
report=$("$info" postmortem "$dir/mismatch") || fail "postmortem exited $?"
echo "$report"
grep -qxF "mismatch at #5: rank 0 called allreduce(count=1024, float32, sum); rank 1 called allreduce(count=2048, float32, sum)" <<<"$report" ||
  fail "the mismatch at #5 is not flagged"
grep -qxF "rank 2 (host h2, pid 102) left no dump; ranks 0,1 are waiting for it in #5 allreduce(count=2048, float32, sum)" <<<"$report" ||
  fail "the rank without a dump is not named"

# Version 2: ranks 0 and 1 exchanged a message (#1) that rank 2 took no part in, so their
# collectives are numbered one higher. p2p ENTRY COLLECTIVE turns an entry into a send or recv;
# v2 ENTRY COLLECTIVE_SEQ adds the field; to_v2 FILE LAST_COLLECTIVE converts a dump.
p2p() { sed "s/\"collective\": \"allreduce\"/\"collective\": \"$2\"/; s/\"dtype\": \"float32\", \"op\": \"sum\"/\"dtype\": \"float32\", \"op\": null/; s/\"root\": null/\"root\": 1, \"collective_seq\": null/" <<<"$1"; }
v2() { sed "s/\"seq\": \([0-9]*\),/\"seq\": \1, \"collective_seq\": $2,/" <<<"$1"; }
to_v2() { sed -i "s/\"version\": 1/\"version\": 2/; s/\"last_issued\"/\"last_collective\": $2, \"last_issued\"/" "$1"; }
mkdir "$dir/pipeline"
dump "$dir/pipeline" wjob 0 3 3 "$(p2p "$(entry 1 done 16)" send)" "$(v2 "$(entry 2 done 1024)" 1)" "$(v2 "$(entry 3 failed 1024 2)" 2)"
dump "$dir/pipeline" wjob 1 3 3 "$(p2p "$(entry 1 done 16)" recv)" "$(v2 "$(entry 2 done 1024)" 1)" "$(v2 "$(entry 3 running 1024 2)" 2)"
dump "$dir/pipeline" wjob 2 3 1 "$(v2 "$(entry 1 done 1024)" 1)"
for r in 0 1 2; do to_v2 "$dir/pipeline/tutti-wjob-rank$r.json" $((r == 2 ? 1 : 2)); done
report=$("$info" postmortem "$dir/pipeline") || fail "postmortem exited $?"
echo "$report"
grep -q "mismatch" <<<"$report" && fail "a send/recv between some ranks was taken for a mismatch"
grep -qxF "rank 2 (host h2, pid 102) is behind: last completed #1 allreduce; ranks 0,1 are waiting in #3 allreduce(count=1024, float32, sum) for rank 2" <<<"$report" ||
  fail "the rank behind by one collective is not named with the collective awaited"
# The same, but rank 2 went on to a collective of another count: a mismatch at collective #2.
dump "$dir/pipeline" wjob 2 3 2 "$(v2 "$(entry 1 done 1024)" 1)" "$(v2 "$(entry 2 failed 2048 0)" 2)"
to_v2 "$dir/pipeline/tutti-wjob-rank2.json" 2
report=$("$info" postmortem "$dir/pipeline") || fail "postmortem exited $?"
echo "$report"
grep -qxF "mismatch at collective #2: ranks 0,1 called allreduce(count=1024, float32, sum); rank 2 called allreduce(count=2048, float32, sum)" <<<"$report" ||
  fail "the mismatch at collective #2 is not flagged"
grep -q ") is behind:" <<<"$report" && fail "a rank is called behind although all issued 2 collectives"

# A rank stopped before #5 and continued after ranks 0 and 1 failed in it waiting for it (at
# steady time 4000; all dumped at 8000): it entered #5 at 7000 and failed there too, so that every
# rank issued 5 collectives. timed ENTRY ENQUEUED STARTED ENDED sets an entry's times.
timed() { sed "s/\"enqueued_ns\": 1, \"started_ns\": 2, \"ended_ns\": 3/\"enqueued_ns\": $2, \"started_ns\": $3, \"ended_ns\": $4/" <<<"$1"; }
mkdir "$dir/stopped"
dump "$dir/stopped" wjob 0 3 5 "$(entry 4 done 8)" "$(timed "$(entry 5 failed 8 2)" 1000 1000 4000)"
dump "$dir/stopped" wjob 1 3 5 "$(entry 4 done 8)" "$(timed "$(entry 5 failed 8 2)" 1000 1000 4000)"
dump "$dir/stopped" wjob 2 3 5 "$(entry 4 done 8)" "$(timed "$(entry 5 failed 8 0)" 7000 7000 7500)"
sed -i 's/"steady_ns": 5,/"steady_ns": 8000,/' "$dir"/stopped/*.json
report=$("$info" postmortem "$dir/stopped") || fail "postmortem exited $?"
echo "$report"
grep -qxF "rank 2 (host h2, pid 102) is behind: it entered #5 allreduce(count=8, float32, sum) only after ranks 0,1 had failed in it waiting for it" <<<"$report" ||
  fail "the rank that entered #5 after the others failed in it is not named"
[ "$(grep -c "behind" <<<"$report")" -eq 1 ] || fail "another rank is called behind, or none"
# Stopped inside #5 instead: it completed #5 (from what the others left) after they failed, and
# failed in #6.
dump "$dir/stopped" wjob 2 3 6 "$(entry 4 done 8)" "$(timed "$(entry 5 done 8)" 1000 1000 7000)" "$(timed "$(entry 6 failed 8 0)" 7100 7100 7500)"
sed -i 's/"steady_ns": 5,/"steady_ns": 8000,/' "$dir"/stopped/tutti-wjob-rank2.json
report=$("$info" postmortem "$dir/stopped") || fail "postmortem exited $?"
echo "$report"
grep -qxF "rank 2 (host h2, pid 102) is behind: it finished #5 allreduce(count=8, float32, sum) only after ranks 0,1 had failed in it waiting for it" <<<"$report" ||
  fail "the rank that finished #5 after the others failed in it is not named"
[ "$(grep -c "behind" <<<"$report")" -eq 1 ] || fail "another rank is called behind, or none"

# expect_inconsistent TEXT SED: a one-rank dump edited by SED is refused with TEXT.
expect_inconsistent() {
  rm -rf "$dir/inconsistent" && mkdir "$dir/inconsistent"
  dump "$dir/inconsistent" wjob 0 2 3 "$(entry 2 done 8)" "$(entry 3 failed 8 1)"
  sed -i "$2" "$dir/inconsistent/tutti-wjob-rank0.json"
  expect_error 2 "$dir/inconsistent/tutti-wjob-rank0.json: inconsistent dump: $1" postmortem "$dir/inconsistent"
}
expect_inconsistent "2 entries for a capacity of 1" 's/"capacity": 2048/"capacity": 1/'
expect_inconsistent "capacity 4194304 is above the recorder's maximum 1048576" 's/"capacity": 2048/"capacity": 4194304/'
expect_inconsistent "entry #9 is outside the operations it issued (1 to last_issued 3)" 's/"seq": 3,/"seq": 9,/'
expect_inconsistent "entry #0 is outside the operations it issued" 's/"seq": 2,/"seq": 0,/'
expect_inconsistent "last_issued 1152921504606846976 is beyond any job" 's/"seq": 3,/"seq": 1152921504606846976,/; s/"last_issued": 3/"last_issued": 1152921504606846976/'
expect_inconsistent "two entries #3" 's/"seq": 2,/"seq": 3,/'
expect_inconsistent "entry #3 names a rank that is not a peer of rank 0 of 2" 's/"waiting_on": 1/"waiting_on": 7/'
expect_inconsistent "entry #3 names a rank that is not a peer of rank 0 of 2" 's/"waiting_on": 1/"waiting_on": 0/'
rm -rf "$dir/inconsistent" && mkdir "$dir/inconsistent"
dump "$dir/inconsistent" wjob 0 2 3 "$(v2 "$(entry 3 done 8)" 4)"
to_v2 "$dir/inconsistent/tutti-wjob-rank0.json" 3
expect_error 2 "inconsistent dump: entry #3 is collective #4, beyond last_collective 3" postmortem "$dir/inconsistent"
dump "$dir/inconsistent" wjob 0 2 2 "$(v2 "$(entry 2 done 8)" 2)"
to_v2 "$dir/inconsistent/tutti-wjob-rank0.json" 4
expect_error 2 "inconsistent dump: last_collective 4 is above last_issued 2" postmortem "$dir/inconsistent"
rm -rf "$dir/inconsistent" && mkdir "$dir/inconsistent"
dump "$dir/inconsistent" wjob 0 2 1 "$(timed "$(entry 1 done 8)" 1 5 4)"
expect_error 2 "entry #1: its times are out of order (enqueued, started, ended)" postmortem "$dir/inconsistent"
dump "$dir/inconsistent" wjob 0 2 1 "$(timed "$(entry 1 done 8)" -1 2 3)"
expect_error 2 "entry #1: \"enqueued_ns\" -1 is not a time of the dump's clock" postmortem "$dir/inconsistent"

mkdir "$dir/malformed"
dump "$dir/malformed" wjob 0 2 1 "$(entry 1 done 8)"
echo '{"format": "tutti-flight-recorder", "version": 1, ' >"$dir/malformed/tutti-wjob-rank1.json"
expect_error 2 "$dir/malformed/tutti-wjob-rank1.json: not valid JSON" postmortem "$dir/malformed"
# A dump's name on a directory, or on a FIFO no process writes (not waited on): not a file.
for kind in directory fifo; do
  mkdir "$dir/$kind"
  dump "$dir/$kind" wjob 0 2 1 "$(entry 1 done 8)"
  name="$dir/$kind/tutti-wjob-rank1.json"
  if [ $kind = directory ]; then mkdir "$name"; else mkfifo "$name"; fi
  expect_error 2 "$dir/$kind/tutti-wjob-rank1.json: not a file" postmortem "$dir/$kind"
done

mkdir "$dir/field"
dump "$dir/field" wjob 0 2 1 "$(entry 1 done 8)"
sed -i 's/"size": 2,//' "$dir/field/tutti-wjob-rank0.json"
expect_error 2 "tutti-wjob-rank0.json: missing field \"size\"" postmortem "$dir/field"

mkdir "$dir/other"
echo '{"traceEvents": []}' >"$dir/other/tutti-trace.json"
expect_error 2 "not a tutti flight-recorder dump" postmortem "$dir/other"

mkdir "$dir/mixed"
dump "$dir/mixed" wjobA 0 2 1 "$(entry 1 done 8)"
dump "$dir/mixed" wjobB 1 2 1 "$(entry 1 done 8)"
expect_error 2 "the dumps come from 2 jobs (wjobA, wjobB)" postmortem "$dir/mixed"

mkdir "$dir/twice"
dump "$dir/twice" wjob 0 2 1 "$(entry 1 done 8)"
mv "$dir/twice/tutti-wjob-rank0.json" "$dir/twice/tutti-wjob-rank0-copy.json"
dump "$dir/twice" wjob 0 2 1 "$(entry 1 done 8)"
expect_error 2 "are both rank 0 of communicator wjob" postmortem "$dir/twice"

mkdir "$dir/range"
dump "$dir/range" wjob 3 2 1 "$(entry 1 done 8)"
expect_error 2 "rank 3 is not in a communicator of size 2" postmortem "$dir/range"

# transports: what TUTTI_TRANSPORT picks for a pair of ranks on one host and on two.
out=$(env -u TUTTI_TRANSPORT "$info" transports) || fail "transports exited $?"
grep -qx "  ranks on one host: shm" <<<"$out" || fail "auto on one host: $out"
grep -qx "  ranks on two hosts: tcp" <<<"$out" || fail "auto on two hosts: $out"
out=$(TUTTI_TRANSPORT=^shm "$info" transports) || fail "transports ^shm exited $?"
grep -qx "  ranks on one host: tcp" <<<"$out" || fail "^shm on one host: $out"
out=$(TUTTI_TRANSPORT=shm "$info" transports) || fail "transports shm exited $?"
grep -qx "  ranks on two hosts: none: init fails" <<<"$out" || fail "shm on two hosts: $out"
TUTTI_TRANSPORT=udp expect_error 2 "'udp' is not a transport" transports

# algorithms: the table in force and where it came from; auto's picks from 8 B to 256 MiB, none
# of them direct over TCP; a bad TUTTI_TUNING_FILE named with its line and key, exit 2 (the picks
# themselves are checked against real runs by tests/ranks/tutti_info_algorithms.sh).
out=$(TUTTI_TUNING_FILE=defaults "$info" algorithms --ranks 4 --transport tcp) ||
  fail "algorithms exited $?"
grep -qx "tuning table: TUTTI_TUNING_FILE=defaults" <<<"$out" || fail "algorithms' table source: $out"
grep -q "^  oneshot_max_bytes  *64K  " <<<"$out" || fail "algorithms' table: $out"
grep -q "^all-reduce with auto, 4 ranks over tcp, out of place, ordinary buffers:" <<<"$out" ||
  fail "algorithms' heading: $out"
[ "$(grep -c '^ *[0-9][0-9KMG]* \(doubling\|oneshot\|ring\|tree\) ' <<<"$out")" = 26 ] ||
  fail "algorithms does not list 26 sizes, none direct: $out"
grep -q '^ *8 doubling ' <<<"$out" && grep -q '^ *256M ring ' <<<"$out" ||
  fail "algorithms over tcp: not recursive doubling at 8 B and the ring at 256 MiB: $out"
printf 'slots = 4\ndirect_min_bytes = 1M\n' >"$dir/tuning"
out=$(TUTTI_TUNING_FILE="$dir/tuning" "$info" algorithms) || fail "algorithms with a file: $?"
grep -qx "tuning table: TUTTI_TUNING_FILE=$dir/tuning" <<<"$out" || fail "file source: $out"
grep -q "^  direct_min_bytes  *1M  " <<<"$out" || fail "the file's direct_min_bytes: $out"
printf 'slots = 4\nslots_per_peer = 2\n' >"$dir/tuning"
TUTTI_TUNING_FILE="$dir/tuning" expect_error 2 \
  "TUTTI_TUNING_FILE=$dir/tuning: line 2: unknown key 'slots_per_peer'" algorithms
expect_error 2 "--transport: udp not in {shm,tcp}" algorithms --transport udp
echo "ok"
