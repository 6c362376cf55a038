#!/usr/bin/env bash
# Ranks SIGKILLed in init after creating their segments, before anyone mapped them, leave the names
# in /dev/shm (nobody is left to unlink them): tuttirun removes them once every rank has ended,
# names them on stderr, and leaves other jobs' segments alone.
# Usage: killed_in_init_swept.sh TUTTIRUN RANK_KILLED_IN_INIT
set -u
tuttirun=$1 killed=$2
out=$(mktemp) err=$(mktemp)
# Another job's segment (another secret), made the same way, must survive the sweep.
other=$(env TUTTI_SECRET=0123456789abcdef0123456789abcdef TUTTI_RANK=0 TUTTI_WORLD_SIZE=2 "$killed")
trap 'rm -f "$out" "$err" "/dev/shm/${other#/}"' EXIT
[ -e "/dev/shm/${other#/}" ] || { echo "the helper left no segment ($other): nothing to test"; exit 1; }
"$tuttirun" -n 3 -- "$killed" >"$out" 2>"$err"
status=$?
[ "$status" -eq 137 ] || { echo "tuttirun exited $status, expected 137"; cat "$err"; exit 1; }
mapfile -t names <"$out"
[ "${#names[@]}" -eq 3 ] || { echo "expected 3 segment names, got: ${names[*]}"; exit 1; }
for name in "${names[@]}"; do
  [ ! -e "/dev/shm/${name#/}" ] || { echo "$name is still in /dev/shm"; cat "$err"; exit 1; }
  grep -q "removed 3 shared-memory segments that ranks killed during init left in /dev/shm:.*${name#/}" "$err" ||
    { echo "tuttirun's stderr does not name $name:"; cat "$err"; exit 1; }
done
[ -e "/dev/shm/${other#/}" ] || { echo "another job's segment $other was removed"; exit 1; }
echo "ok: 3 ranks killed in init, their segments removed and named; another job's kept"
