#!/usr/bin/env bash
# A full /dev/shm: in a private mount namespace (unshare -m) a small tmpfs is mounted over
# /dev/shm, and 4 ranks over shm need more than it holds (a FIFO is 8 slots of 256 KiB). With
# 1 MiB no rank can back a single FIFO; with 10 MiB the first ranks can and a later one cannot.
# Either way the job must fail at init, not hang and not die of SIGBUS at the first write (tmpfs
# allocates lazily: the transport must reserve its memory up front), with a message that names
# /dev/shm and the size needed; and the tmpfs must be empty afterwards (nothing leaked).
# Skipped (exit 77) where mount namespaces or tmpfs mounts are not allowed.
# Usage: full_dev_shm.sh TUTTIRUN FAULT_RANK
set -u
tuttirun=$1 fault_rank=$2

if [ -z "${FAULT_PRIVATE_MOUNTS:-}" ]; then
  if ! why=$(unshare -m --propagation private true 2>&1); then
    echo "SKIP: no private mount namespace here (unshare -m: $why)"
    exit 77
  fi
  FAULT_PRIVATE_MOUNTS=1 exec unshare -m --propagation private "$0" "$@"
fi

failed=0
for size in 1m 10m; do
  if ! why=$(mount -t tmpfs -o size=$size tutti-faults-shm /dev/shm 2>&1); then
    echo "SKIP: cannot mount a tmpfs over /dev/shm: $why"
    exit 77
  fi
  # The ranks that did not fail themselves fail as soon as they notice (a dead peer, the store
  # gone) and unlink their segments on the way out; the grace leaves them time for that on a
  # loaded machine (CI runs the soaks beside this test): killed sooner, a rank still in init
  # leaks its segment, which is another test's matter (killed-rank-leaks-no-shm).
  log=$(TUTTI_TRANSPORT=shm TUTTI_TIMEOUT=20 timeout 60 "$tuttirun" -n 4 --grace 10 -- \
    "$fault_rank" --ops 3 2>&1)
  status=$?
  problem=""
  if [ "$status" -eq 0 ]; then
    problem="the job succeeded in a $size /dev/shm"
  elif [ "$status" -eq 124 ]; then
    problem="the job hung"
  elif grep -q "signal 7" <<<"$log"; then
    problem="a rank died of SIGBUS"
  elif ! grep -q "not enough space in /dev/shm for segment .* needs [0-9]* bytes" <<<"$log"; then
    problem="no message names /dev/shm and the size needed"
  elif [ -n "$(ls /dev/shm)" ]; then
    problem="segments left in /dev/shm: $(ls /dev/shm)"
  fi
  umount /dev/shm
  if [ -n "$problem" ]; then
    echo "FAILED with a $size /dev/shm: $problem (exit $status); output:"
    echo "$log"
    failed=1
  else
    echo "ok: a $size /dev/shm: $(grep -m1 -o "not enough space in /dev/shm.*" <<<"$log")"
  fi
done
exit $failed
