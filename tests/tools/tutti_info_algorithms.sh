#!/usr/bin/env bash
# tutti-info algorithms names what the runtime runs: 2 ranks under tutti-bench (ordinary buffers,
# out of place then in place at each size), each rank's trace (TUTTI_TRACE_FILE) showing which
# all-reduce algorithm ran, against tutti-info's picks for the same case; with the default table
# and with a TUTTI_TUNING_FILE that moves every threshold (which both the ranks and tutti-info
# read), so the picks differ between the two runs. Then tutti-bench tune writes a table from a
# short sweep that TUTTI_TUNING_FILE accepts (what it measures is noise here: only the file's
# form is checked), and refuses bad usage.
# Usage: tutti_info_algorithms.sh TUTTI_INFO TUTTI_BENCH
set -u
info=$1 bench=$2
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

cat >"$dir/tuning" <<'TABLE'
# moves every threshold of the defaults
oneshot_max_bytes = 1K
direct_min_bytes = 16K
direct_pull_out_of_place = 16K..256K
direct_pull_in_place = 1M..4M
TABLE

# compare LABEL [first]: tutti-info's picks and the ranks' traces for the environment as it is;
# with "first" (TUTTI_AUTOTUNE timing the algorithms) only each size's first call, which runs the
# planner's pick, is compared.
compare() {
  "$info" algorithms --ranks 2 >"$dir/out-of-place" &&
    "$info" algorithms --ranks 2 --in-place >"$dir/in-place" || fail "$1: tutti-info exited $?"
  rm -f "$dir"/trace-*.json
  # From 32 B: the bench's own 8-byte all-reduces (its timing) would mix with the sweep's.
  TUTTI_TRACE_FILE="$dir/trace-%r.json" "$bench" allreduce --ranks 2 -b 32 -e 8M -f 4 -n 1 -w 1 \
    >"$dir/log" 2>&1 || { cat "$dir/log"; fail "$1: tutti-bench exited non-zero"; }
  for rank in 0 1; do
    python3 - "$dir" "$rank" "$1" "${2:-all}" <<'PY' || fail "$1: rank $rank ran other algorithms than tutti-info says"
import json, re, sys
dir, rank, label, which = sys.argv[1:]
def picks(name):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    out = {}
    for line in open(f"{dir}/{name}"):
        m = re.match(r"^ +(\d+)([KMG]?) (\w+) ", line)
        if m: out[int(m.group(1)) * units[m.group(2)]] = m.group(3)
    return out
out_of_place, in_place = picks("out-of-place"), picks("in-place")
events = json.load(open(f"{dir}/trace-{rank}.json"))["traceEvents"]
ran = [(e["args"]["bytes"], e["args"]["algorithm"]) for e in events
       if e["ph"] == "X" and e["name"] == "allreduce" and e["args"]["bytes"] >= 32]
sizes = sorted({b for b, _ in ran})
assert len(sizes) == 10, sizes
seen = set()
for size in sizes:
    # The size's out-of-place calls (warm-up ones too), then its in-place ones.
    calls = [a for b, a in ran if b == size]
    if which == "first":
        assert calls[0] == out_of_place[size], (size, calls, out_of_place[size])
        seen.add(calls[0])
        continue
    runs = [a for i, a in enumerate(calls) if i == 0 or calls[i - 1] != a]
    expected = [out_of_place[size]] + ([in_place[size]] if in_place[size] != out_of_place[size] else [])
    print(label, "rank", rank, size, runs, "tutti-info:", expected)
    assert runs == expected, (size, runs, expected)
    seen.update(expected)
assert seen == {"oneshot", "ring", "direct"}, seen
PY
  done
}

unset TUTTI_TUNING_FILE
# The planner's picks, with TUTTI_AUTOTUNE off and on.
TUTTI_AUTOTUNE=off compare defaults
grep -q "^TUTTI_AUTOTUNE=off: with 2 ranks auto runs the picks below" "$dir/out-of-place" ||
  fail "TUTTI_AUTOTUNE=off: $(cat "$dir/out-of-place")"
compare "defaults, TUTTI_AUTOTUNE unset" first
grep -q "^TUTTI_AUTOTUNE=auto: with 2 ranks auto runs the pick below on a size's first call, then" \
  "$dir/out-of-place" || fail "TUTTI_AUTOTUNE unset: $(cat "$dir/out-of-place")"
"$info" algorithms --ranks 4 | grep -q "^TUTTI_AUTOTUNE=auto: with 4 ranks auto runs the picks below" ||
  fail "TUTTI_AUTOTUNE unset, 4 ranks: $("$info" algorithms --ranks 4)"
TUTTI_AUTOTUNE=on "$info" algorithms --ranks 4 |
  grep -q "^TUTTI_AUTOTUNE=on: with 4 ranks auto runs the pick below on a size's first call" ||
  fail "TUTTI_AUTOTUNE=on, 4 ranks: $(TUTTI_AUTOTUNE=on "$info" algorithms --ranks 4)"
# meson's test setup points XDG_CACHE_HOME at an empty directory: no table of this machine's.
grep -q "^tuning table: defaults (TUTTI_TUNING_FILE unset (auto): no table for this machine at " \
  "$dir/out-of-place" || fail "not the defaults: $(cat "$dir/out-of-place")"
# size and algorithm of tutti-info's picks, out of place then in place
picks() { cat "$dir/out-of-place" "$dir/in-place" | awk '/^ +[0-9]+[KMG]? / {print $1, $2}'; }
defaults=$(picks)
export TUTTI_TUNING_FILE="$dir/tuning"
TUTTI_AUTOTUNE=off compare "$TUTTI_TUNING_FILE"
grep -qx "tuning table: TUTTI_TUNING_FILE=$dir/tuning" "$dir/out-of-place" ||
  fail "not the file's table: $(cat "$dir/out-of-place")"
[ "$defaults" != "$(picks)" ] ||
  fail "the file's table gives the same picks as the defaults"
echo "the ranks ran what tutti-info algorithms said, with the default table and with a file's"

unset TUTTI_TUNING_FILE
"$bench" --help | grep -q "tutti-bench tune --ranks N -o FILE" || fail "tutti-bench --help does not name tune"
"$bench" tune --ranks 2 -b 64K -e 1M -f 4 -n 1 -w 0 --rounds 2 -o "$dir/tuned" >"$dir/log" 2>&1 ||
  { cat "$dir/log"; fail "tutti-bench tune exited non-zero"; }
grep -q "^# tutti-bench tune: 2 ranks, .*CPU " "$dir/tuned" || fail "tune's header: $(cat "$dir/tuned")"
grep -q "^# sweep .*(allreduce --algo all --rounds 2, " "$dir/tuned" || fail "tune's header lacks its rounds"
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["configuration"]["rounds"])' \
  "$dir/tuned.json")" = 2 ] || fail "tune's sweep did not run its --rounds"
[ "$(grep -c '^[a-z_]* = ' "$dir/tuned")" = 18 ] || fail "tune wrote not every key: $(cat "$dir/tuned")"
TUTTI_TUNING_FILE="$dir/tuned" "$info" algorithms >"$dir/out" 2>&1 ||
  { cat "$dir/out"; fail "TUTTI_TUNING_FILE refused what tune wrote"; }
[ -s "$dir/tuned.streaming.json" ] || fail "tune wrote no sweep with streaming stores beside its own"
grep -q "^# shm_streaming_min_bytes .*: where streaming stores gained over plain ones" "$dir/tuned" ||
  fail "tune's header does not say how it chose the streaming threshold"
for scratch in plain-stores streaming-stores; do
  [ ! -e "$dir/tuned.$scratch" ] || fail "tune left its sweep's table $dir/tuned.$scratch behind"
done
"$bench" tune --from-streaming "$dir/tuned.streaming.json" -o "$dir/x" >"$dir/log" 2>&1
[ $? = 2 ] || fail "tune --from-streaming without --from: $(cat "$dir/log")"
python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); s["machine"]["transports"] = ["tcp"]; json.dump(s, open(sys.argv[2], "w"))' \
  "$dir/tuned.json" "$dir/tcp.json"
"$bench" tune --from "$dir/tcp.json" --from-streaming "$dir/tuned.streaming.json" -o "$dir/x" \
  >"$dir/log" 2>&1
[ $? = 1 ] && grep -q "ran over transports tcp, not shared memory only" "$dir/log" ||
  fail "tune --from-streaming beside a sweep over TCP: $(cat "$dir/log")"
"$bench" tune --from "$dir/tuned.json" --from-streaming "$dir/tuned.streaming.json" -o "$dir/again" \
  >/dev/null || fail "tune --from exited $?"
diff <(grep -v '^#' "$dir/tuned") <(grep -v '^#' "$dir/again") || fail "tune --from read another table"
"$bench" tune -o "$dir/x" >"$dir/log" 2>&1; [ $? = 2 ] || fail "tune without --ranks or --from"
# What the sweep's ranks would refuse is refused before any starts: "options|what the message names"
for case in "--rounds 0|--rounds" "-n 0|--iters" "-b 1Q|-b 1Q" "-e 8 -b 1K|-e 8 is smaller than -b 1K"; do
  # shellcheck disable=SC2086 # the options are several words
  "$bench" tune --ranks 2 ${case%%|*} -o "$dir/x" >"$dir/log" 2>&1
  [ $? = 2 ] && grep -q -- "${case#*|}" "$dir/log" && [ ! -e "$dir/x.json" ] ||
    fail "tune ${case%%|*}: not refused before its sweep: $(cat "$dir/log")"
done
"$bench" tune --from "$dir/missing.json" -o "$dir/x" >"$dir/log" 2>&1
[ $? = 1 ] && grep -q "missing.json" "$dir/log" || fail "tune --from a missing file: $(cat "$dir/log")"
XDG_CACHE_HOME="$dir/cache" "$bench" tune --from "$dir/tuned.json" \
  --from-streaming "$dir/tuned.streaming.json" --save >"$dir/log" 2>&1 ||
  { cat "$dir/log"; fail "tune --save exited non-zero"; }
grep -q "TUTTI_TUNING_FILE is unset or auto" "$dir/log" || fail "tune --save does not say how it is used: $(cat "$dir/log")"
saved=$(ls "$dir"/cache/tutti/tuning-*) || fail "tune --save wrote nothing under XDG_CACHE_HOME"
# The machine's first table serves every rank count, and is the sweep's rank count's section.
diff <(grep -v '^#' "$dir/tuned"; printf '\n[ranks 2]\n') <(grep -v '^#' "$saved") ||
  fail "tune --save wrote another table"
# A sweep at another rank count adds its section and keeps the rest (here the same sweep told
# it was of 4 ranks, direct made the fastest at its smallest size only: a range of one size).
python3 - "$dir/tuned.json" "$dir/tuned4.json" <<'PY'
import json, sys
sweep = json.load(open(sys.argv[1]))
sweep["configuration"]["nranks"] = 4
smallest = min(row["bytes"] for row in sweep["rows"])
for row in sweep["rows"]:
    if row["algorithm"] == "direct":
        for placement in ("out_of_place", "in_place"):
            row[placement]["time_us"] *= 0.001 if row["bytes"] == smallest else 1000
json.dump(sweep, open(sys.argv[2], "w"))
PY
XDG_CACHE_HOME="$dir/cache" "$bench" tune --from "$dir/tuned4.json" --save >"$dir/log" 2>&1 ||
  { cat "$dir/log"; fail "tune --save of a 4-rank sweep exited non-zero"; }
grep -q "^\[ranks 2\]$" "$saved" && grep -q "^\[ranks 4\]$" "$saved" ||
  fail "tune --save did not keep 2 ranks' section and add 4's: $(cat "$saved")"
XDG_CACHE_HOME="$dir/cache" "$info" algorithms --ranks 4 |
  grep -q "^ *direct_pull_out_of_place  *64K\.\.64K " ||
  fail "tutti-info at 4 ranks does not plan from 4 ranks' section: $(cat "$saved")"
for ranks_section in 3:2 4:4 9:4; do
  XDG_CACHE_HOME="$dir/cache" "$info" algorithms --ranks "${ranks_section%:*}" >"$dir/out"
  grep -qx "  for ${ranks_section%:*} ranks: its \[ranks ${ranks_section#*:}\] section" "$dir/out" ||
    fail "tutti-info at ${ranks_section%:*} ranks names another section: $(head -2 "$dir/out")"
done
XDG_CACHE_HOME="$dir/cache" TUTTI_TUNING_FILE=auto "$info" algorithms >"$dir/out" ||
  fail "algorithms with auto exited $?"
grep -qx "tuning table: TUTTI_TUNING_FILE=auto ($saved)" "$dir/out" || fail "auto's source: $(head -1 "$dir/out")"
(unset TUTTI_TUNING_FILE; XDG_CACHE_HOME="$dir/cache" "$info" algorithms >"$dir/out") ||
  fail "algorithms with TUTTI_TUNING_FILE unset exited $?"
grep -qx "tuning table: TUTTI_TUNING_FILE unset (auto) ($saved)" "$dir/out" ||
  fail "unset's source: $(head -1 "$dir/out")"
echo "tutti-bench tune wrote a table TUTTI_TUNING_FILE takes, from a sweep or from its results, and as this machine's"
