#!/usr/bin/env bash
# tutti-topo on real files: the DGX-1 V100 hybrid cube-mesh gives 6 NVLink rings that each visit
# all 8 GPUs once, the matrix shows NVL paths; with --hosts 4, 4 rail-aligned rings visit all 32
# GPUs once and two trees cover the 4 hosts; --svg draws each ring; --time reports the search;
# the JSON export loads back (--file) to the same paths and rings and exports the same JSON, a bad
# one is an error naming the JSON path; every format loads from a pipe; a missing file is an error
# naming it.
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
plan=$("$topo" --file "$fixtures/dgx1-v100.xml" --hosts 4 --rings --trees) ||
  fail "--hosts exited $?"
echo "$plan"
grep -q '^across 4 hosts: 4 channels, 48 GB/s in total$' <<<"$plan" ||
  fail "expected 4 rings, 48 GB/s"
all=$(for h in 0 1 2 3; do for g in 0 1 2 3 4 5 6 7; do echo "$h/$g"; done; done |
  sort | tr '\n' ' ')
for c in 0 1 2 3; do
  members=$(grep "^  ring $c: .* via NET " <<<"$plan") || fail "no ring $c across hosts"
  grep -q " on NIC $c\$" <<<"$members" || fail "ring $c does not use NIC $c: $members"
  members=${members#*: } members=${members%% via*}
  [ "$(tr ' ' '\n' <<<"$members" | sort | tr '\n' ' ')" = "$all" ] ||
    fail "ring $c does not visit the 32 GPUs once each"
done
[ "$(grep -c '^tree [01] (NIC [01], 12 GB/s):$' <<<"$plan")" -eq 2 ] || fail "expected 2 trees"
[ "$(grep -c '^  host [0-3]: up ' <<<"$plan")" -eq 8 ] || fail "expected 4 hosts in each tree"
if "$topo" --file "$fixtures/dgx1-v100.xml" --hosts 0 --rings >/dev/null 2>&1; then
  fail "--hosts 0 succeeded"
fi
svg=$(mktemp --suffix=.svg) && trap 'rm -f "$svg"' EXIT
"$topo" --file "$fixtures/dgx1-v100.xml" --hosts 2 --svg "$svg" || fail "--svg exited $?"
head -c 4 "$svg" | grep -q '<svg' || fail "--svg wrote no SVG"
tail -n 1 "$svg" | grep -q '</svg>' || fail "--svg is not closed"
[ "$(grep -c '>ring [0-3]: .* on NIC [0-3]</text>' "$svg")" -eq 4 ] ||
  fail "--svg lacks the 4 rings"
[ "$(grep -c 'stroke="#e6194b"' "$svg")" -gt 8 ] || fail "--svg does not draw ring 0 in colour"
timing=$("$topo" --file "$fixtures/dgx1-v100.xml" --hosts 16 --time) || fail "--time exited $?"
echo "$timing"
grep -Eq '^time: load [0-9.]+ ms, 16 hosts. paths [0-9.]+ ms, search \(rings, trees\) [0-9.]+ ms$' \
  <<<"$timing" || fail "--time prints no timing"
json=$(mktemp --suffix=.json) && trap 'rm -f "$svg" "$json"' EXIT
"$topo" --file "$fixtures/dgx1-v100.xml" --json "$json" || fail "--json exited $?"
[ "$("$topo" --file "$json" --matrix --rings)" = "$("$topo" --file "$fixtures/dgx1-v100.xml" \
  --matrix --rings)" ] || fail "--file of the JSON export differs from the XML it came from"
[ "$("$topo" --file "$json" --json -)" = "$(cat "$json")" ] ||
  fail "the JSON export is not a fixed point"
# Each format through a pipe, as from <(...) and /dev/stdin: read once, never sought, the same
# graph as from the file.
for file in "$fixtures/dgx1-v100.xml" "$json" "$fixtures/hwloc-2socket-gpu.xml"; do
  want=$("$topo" --file "$file" --matrix --rings) || fail "--file $file exited $?"
  got=$("$topo" --file <(cat "$file") --matrix --rings 2>&1) || fail "--file <(cat $file): $got"
  [ "$got" = "$want" ] || fail "--file <(cat $file) differs from the file"
  got=$(cat "$file" | "$topo" --file /dev/stdin --matrix --rings 2>&1) ||
    fail "cat $file | --file /dev/stdin: $got"
  [ "$got" = "$want" ] || fail "--file /dev/stdin differs from the file $file"
done
printf '{"hosts": [""], "nodes": [{"id": 0, "kind": "TPU"}]}' >"$json"
if err=$("$topo" --file "$json" 2>&1); then fail "a bad JSON file succeeded"; fi
grep -q "nodes\[0\].kind: unknown node kind" <<<"$err" || fail "the error does not name the path: $err"
if err=$("$topo" --file "$fixtures/no-such-file.xml" --rings 2>&1); then fail "a missing file succeeded"; fi
grep -q "no-such-file.xml" <<<"$err" || fail "the error does not name the file: $err"
echo ok
