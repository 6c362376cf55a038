#!/usr/bin/env bash
# Settings that must agree on every rank (TUTTI_CHECK_CALLS, TUTTI_SLOTS, TUTTI_CHUNK_BYTES,
# TUTTI_TRANSPORT, TUTTI_ALGO, the tuning table of TUTTI_TUNING_FILE) make init fail on every
# rank, naming the variable that differs (and the table's key), and no other, with both ranks'
# values; TUTTI_RING_ORDER too, each rank naming its own value (records carry only a fingerprint
# of it).
# Usage: settings_disagree.sh PROCESS_WORLD
set -u
world=$1
status=0
expect_refusal() {  # the variable rank 1 sets differently, its value, and how the error shows it
  # The port lies below the ephemeral range (32768 and up), where other tests' sockets land.
  local variable=$1 value=$2 shown=${3:-$1=$2} port=$((20000 + RANDOM % 12000)) pids=() rank
  for rank in 0 1; do
    local extra=()
    [ "$rank" = 1 ] && extra=("$variable=$value")
    env TUTTI_RANK=$rank TUTTI_WORLD_SIZE=2 TUTTI_ADDR=127.0.0.1 TUTTI_PORT=$port \
      TUTTI_TIMEOUT=30 "${extra[@]}" "$world" --seed 3 --cases-per-kind 1 \
      >"/tmp/tutti-settings-$$-$rank.log" 2>&1 &
    pids+=($!)
  done
  for rank in 0 1; do
    local log="/tmp/tutti-settings-$$-$rank.log"
    if wait "${pids[$rank]}"; then
      echo "$variable: rank $rank succeeded although rank 1 set $variable=$value"; status=1
    fi
    grep -q "settings differ between ranks.*$shown" "$log" ||
      { echo "$variable: rank $rank's error does not name $shown:"; cat "$log"; status=1; }
    local named
    named=$(grep -m1 "settings differ between ranks" "$log" | grep -o "TUTTI_[A-Z_]*" | sort -u)
    [ "$named" = "$variable" ] ||
      { echo "$variable: rank $rank's error names $named:"; cat "$log"; status=1; }
    rm -f "$log"
  done
}
expect_refusal TUTTI_CHECK_CALLS 1
expect_refusal TUTTI_SLOTS 4
expect_refusal TUTTI_CHUNK_BYTES 65536
expect_refusal TUTTI_TRANSPORT tcp
expect_refusal TUTTI_ALGO tree "TUTTI_ALGO=auto, rank 1 uses TUTTI_ALGO=tree\|TUTTI_ALGO=tree, rank 0 uses TUTTI_ALGO=auto"
tuning=$(mktemp) && trap 'rm -f "$tuning"' EXIT
echo "oneshot_max_bytes = 32K" >"$tuning"
expect_refusal TUTTI_TUNING_FILE "$tuning" "TUTTI_TUNING_FILE:oneshot_max_bytes=\(64K, rank 1 uses TUTTI_TUNING_FILE:oneshot_max_bytes=32K\|32K, rank 0 uses TUTTI_TUNING_FILE:oneshot_max_bytes=64K\)"
expect_refusal TUTTI_RING_ORDER 1,0 "another TUTTI_RING_ORDER than rank [01], which uses TUTTI_RING_ORDER='[1 0]*'"
[ $status = 0 ] && echo "every disagreement was refused on both ranks"
exit $status
