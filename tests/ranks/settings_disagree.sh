#!/usr/bin/env bash
# Settings that must agree on every rank (TUTTI_CHECK_CALLS, TUTTI_SLOTS, TUTTI_CHUNK_BYTES,
# TUTTI_TRANSPORT, TUTTI_ALGO, the tuning table of TUTTI_TUNING_FILE) make init fail on every
# rank, naming the variable that differs (and the table's key), and no other, with both ranks'
# values; TUTTI_RING_ORDER too, each rank naming its own value (records carry only a fingerprint
# of it). Ranks on machines with different tables of their own (TUTTI_TUNING_FILE unset or auto)
# plan from rank 0's: init succeeds, and the collectives check out.
# Usage: settings_disagree.sh PROCESS_WORLD TUTTI_INFO
set -u
world=$1 info=$2
status=0
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
# run_pair RANK0_ENV RANK1_ENV: both ranks in the background, their pids in $pids, logs in $dir.
run_pair() {
  # The port lies below the ephemeral range (32768 and up), where other tests' sockets land.
  local port=$((20000 + RANDOM % 12000)) rank
  pids=()
  for rank in 0 1; do
    local extra=${1:-}
    [ "$rank" = 1 ] && extra=${2:-}
    # shellcheck disable=SC2086  # the words of each rank's environment
    env TUTTI_RANK=$rank TUTTI_WORLD_SIZE=2 TUTTI_ADDR=127.0.0.1 TUTTI_PORT=$port \
      TUTTI_TIMEOUT=30 XDG_CACHE_HOME="$dir/no-table" $extra "$world" --seed 3 \
      --cases-per-kind 1 >"$dir/$rank.log" 2>&1 &
    pids+=($!)
  done
}
expect_refusal() {  # the variable rank 1 sets differently, its value, and how the error shows it
  local variable=$1 value=$2 shown=${3:-$1=$2} rank
  run_pair "" "$variable=$value"
  for rank in 0 1; do
    local log="$dir/$rank.log"
    if wait "${pids[$rank]}"; then
      echo "$variable: rank $rank succeeded although rank 1 set $variable=$value"; status=1
    fi
    grep -q "settings differ between ranks.*$shown" "$log" ||
      { echo "$variable: rank $rank's error does not name $shown:"; cat "$log"; status=1; }
    local named
    named=$(grep -m1 "settings differ between ranks" "$log" | grep -o "TUTTI_[A-Z_]*" | sort -u)
    [ "$named" = "$variable" ] ||
      { echo "$variable: rank $rank's error names $named:"; cat "$log"; status=1; }
  done
}
expect_refusal TUTTI_CHECK_CALLS 1
expect_refusal TUTTI_SLOTS 4
expect_refusal TUTTI_CHUNK_BYTES 65536
expect_refusal TUTTI_TRANSPORT tcp
expect_refusal TUTTI_ALGO tree "TUTTI_ALGO=auto, rank 1 uses TUTTI_ALGO=tree\|TUTTI_ALGO=tree, rank 0 uses TUTTI_ALGO=auto"
tuning=$dir/tuning
echo "oneshot_max_bytes = 32K" >"$tuning"
expect_refusal TUTTI_TUNING_FILE "$tuning" "TUTTI_TUNING_FILE:oneshot_max_bytes=\(64K, rank 1 uses TUTTI_TUNING_FILE:oneshot_max_bytes=32K\|32K, rank 0 uses TUTTI_TUNING_FILE:oneshot_max_bytes=64K\)"
# Machines' own tables (the file tutti-bench tune --save writes, here for two CPU models by two
# cache directories): rank 1 takes rank 0's, whether it has another or none, unset or auto.
# tutti-info names the file this machine's table would be: "... no table for this machine at PATH;".
table=$(XDG_CACHE_HOME=/nowhere "$info" algorithms | sed -n '\|^tuning table: .* at /nowhere/|{s|.* at /nowhere/||; s|;.*||; p}')
[ -n "$table" ] || { echo "tutti-info names no machine table: $(XDG_CACHE_HOME=/nowhere "$info" algorithms | head -1)"; exit 1; }
for host in 0 1; do mkdir -p "$(dirname "$dir/host$host/$table")"; done
echo "oneshot_max_bytes = 16K" >"$dir/host0/$table"
echo "oneshot_max_bytes = 128K" >"$dir/host1/$table"
expect_agreement() {  # rank 0's and rank 1's environments
  local rank
  run_pair "TUTTI_DEBUG=INFO $1" "TUTTI_DEBUG=INFO $2"
  for rank in 0 1; do
    wait "${pids[$rank]}" ||
      { echo "rank $rank failed with rank 0's '$1' and rank 1's '$2':"; cat "$dir/$rank.log"; status=1; }
  done
  grep -q "rank 1: plans from rank 0's tuning table" "$dir/1.log" ||
    { echo "rank 1 did not take rank 0's table with rank 0's '$1' and rank 1's '$2':"; cat "$dir/1.log"; status=1; }
}
expect_agreement "XDG_CACHE_HOME=$dir/host0" "XDG_CACHE_HOME=$dir/host1"
expect_agreement "XDG_CACHE_HOME=$dir/host0" "XDG_CACHE_HOME=$dir/host1 TUTTI_TUNING_FILE=auto"
expect_agreement "XDG_CACHE_HOME=$dir/host0" ""
expect_agreement "" "XDG_CACHE_HOME=$dir/host1"
# A table named on rank 1 is not traded: it must be rank 0's.
expect_refusal TUTTI_TUNING_FILE "$dir/host1/$table" "TUTTI_TUNING_FILE:oneshot_max_bytes=\(64K, rank 1 uses TUTTI_TUNING_FILE:oneshot_max_bytes=128K\|128K, rank 0 uses TUTTI_TUNING_FILE:oneshot_max_bytes=64K\)"
expect_refusal TUTTI_RING_ORDER 1,0 "another TUTTI_RING_ORDER than rank [01], which uses TUTTI_RING_ORDER='[1 0]*'"
[ $status = 0 ] && echo "every disagreement was refused on both ranks; machines' own tables gave way to rank 0's"
exit $status
