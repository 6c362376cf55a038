#!/usr/bin/env bash
# tutti-topo on real files: the DGX-1 V100 hybrid cube-mesh gives 6 NVLink rings that each visit
# all 8 GPUs once, the matrix shows NVL paths, and a missing file is an error naming it.
# Usage: tutti_topo_cli.sh TUTTI_TOPO FIXTURES_DIR
set -u
topo=$1 fixtures=$2
fail() { echo "FAILED: $*"; exit 1; }
rings=$("$topo" --file "$fixtures/dgx1-v100.xml" --rings) || fail "--rings exited $?"
echo "$rings"
[ "$(grep -c '^  ring .* via NVL ' <<<"$rings")" -eq 6 ] || fail "expected 6 NVLink rings"
while read -r _ _ members; do
  members=${members%% via*}
  [ "$(tr ' ' '\n' <<<"$members" | sort -n | tr '\n' ' ')" = "0 1 2 3 4 5 6 7 " ] ||
    fail "ring '$members' does not visit GPUs 0..7 once each"
done < <(grep '^  ring ' <<<"$rings")
"$topo" --file "$fixtures/dgx1-v100.xml" --matrix | grep -q NVL || fail "--matrix shows no NVL path"
if err=$("$topo" --file "$fixtures/no-such-file.xml" --rings 2>&1); then fail "a missing file succeeded"; fi
grep -q "no-such-file.xml" <<<"$err" || fail "the error does not name the file: $err"
echo ok
