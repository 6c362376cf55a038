#!/usr/bin/env bash
# tutti-topo on real files: the DGX-1 V100 hybrid cube-mesh gives 6 NVLink rings that each visit
# all 8 GPUs once, the matrix shows NVL paths; with --hosts 4, 4 rail-aligned rings visit all 32
# GPUs once and two trees cover the 4 hosts; --svg draws each ring; --predict prints the cost
# model's busbw; --time reports the search;
# the JSON export loads back (--file) to the same paths and rings and exports the same JSON, a bad
# one is an error naming the JSON path; every format loads from a pipe; a missing file is an error
# naming it, an empty path one naming the option. RDMA NICs from the sysfs fixtures
# (TUTTI_SYSFS_ROOT): --nics lists devices, ports and their non-zero error counters and the ports
# TUTTI_IB_HCA leaves in use; a probe's default output ends with a line per port, a file's does
# not; a bad TUTTI_IB_HCA or root is an error naming it.
# Usage: tutti_topo_cli.sh TUTTI_TOPO FIXTURES_DIR SYSFS_FIXTURES_DIR
set -u
topo=$1 fixtures=$2 sysfs=$3
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
# An empty path is refused, naming the option (--file '' probed this machine instead).
for option in --file --xml --json --svg; do
  out=$("$topo" "$option" '' 2>&1 >/dev/null) && fail "$option '' succeeded"
  grep -qF -- "$option: an empty path" <<<"$out" || fail "$option '': no error naming it: $out"
done
svg=$(mktemp --suffix=.svg) && trap 'rm -f "$svg"' EXIT
"$topo" --file "$fixtures/dgx1-v100.xml" --hosts 2 --svg "$svg" || fail "--svg exited $?"
head -c 4 "$svg" | grep -q '<svg' || fail "--svg wrote no SVG"
tail -n 1 "$svg" | grep -q '</svg>' || fail "--svg is not closed"
[ "$(grep -c '>ring [0-3]: .* on NIC [0-3]</text>' "$svg")" -eq 4 ] ||
  fail "--svg lacks the 4 rings"
[ "$(grep -c 'stroke="#e6194b"' "$svg")" -gt 8 ] || fail "--svg does not draw ring 0 in colour"
# --predict: the cost model's figures for 2 copies of the 8 x H100, 8 x 400 Gb/s host (worked out
# by hand in cost_model_test.cpp), a row per size, and the quickest algorithm.
predict=$("$topo" --file "$fixtures/hgx-h100-8x400g.xml" --hosts 2 --predict) ||
  fail "--predict exited $?"
echo "$predict"
grep -q '^all-reduce over 16 GPUs on 2 host(s), busbw in GB/s:$' <<<"$predict" ||
  fail "--predict does not name the GPUs and hosts"
grep -q '^  ring: 8 channels, busbw 384.0 GB/s, latency 131.6 us$' <<<"$predict" ||
  fail "--predict's ring differs"
grep -Eq '^ +8 GiB +382\.80 +[0-9.]+  ring$' <<<"$predict" || fail "--predict's 8 GiB row differs"
"$topo" --file "$fixtures/hwloc-dev-vm.xml" --predict | grep -q '^no all-reduce to price' ||
  fail "--predict without GPUs does not say so"
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
ib=$sysfs/ib-cx6-vpi
nics=$(TUTTI_SYSFS_ROOT=$ib "$topo" --nics) || fail "--nics exited $?"
echo "$nics"
expect() { grep -qxF -- "$1" <<<"$2" || fail "expected the line '$1'"; }
expect "mlx5_0: 0000:5e:00.0 NUMA 0, PCI path pci0000:5d/0000:5d:00.0/0000:5e:00.0" "$nics"
expect "  port 1: ACTIVE (LinkUp), 200 Gb/sec (4X HDR), InfiniBand, GID \
fe80:0000:0000:0000:0c42:a103:0091:1a41 (IB/RoCE v1); used" "$nics"
expect "    ! errors: excessive_buffer_overrun_errors 15, link_downed 255, \
port_rcv_switch_relay_errors 2, port_xmit_discards 65535" "$nics"
expect "  port 1: DOWN (Polling), 10 Gb/sec (4X SDR), InfiniBand, GID \
fe80:0000:0000:0000:946d:ae03:00fb:2e10 (IB/RoCE v1); not used: not active" "$nics"
expect "ports in use (TUTTI_IB_HCA=unset): mlx5_0:1, mlx5_1:1" "$nics"
[ "$(grep -c '! errors' <<<"$nics")" -eq 1 ] || fail "only mlx5_1 has errors"
nics=$(TUTTI_SYSFS_ROOT=$ib TUTTI_IB_HCA='^=mlx5_0' "$topo" --nics) || fail "--nics exited $?"
expect "ports in use (TUTTI_IB_HCA=^=mlx5_0): mlx5_1:1" "$nics"
grep -q "; not used: TUTTI_IB_HCA$" <<<"$nics" || fail "mlx5_0 is not shown left out"
nics=$(TUTTI_SYSFS_ROOT=$sysfs/roce-cx6dx "$topo" --nics) || fail "--nics exited $?"
echo "$nics"
expect "    ! errors: hw_counters/local_ack_timeout_err 3, hw_counters/out_of_buffer 1432, \
hw_counters/out_of_sequence 7" "$nics"
expect "    counters: N/A (no PMA)" "$nics"
expect "ports in use (TUTTI_IB_HCA=unset): i40iw0:1, mlx5_0:1, mlx5_1:1" "$nics"
nics=$(TUTTI_SYSFS_ROOT=$sysfs/opa-hfi1 "$topo" --nics) || fail "--nics exited $?"
expect "  ! errors: hw_counters/TxLinkdownErr 2 (the device's)" "$nics"
expect "    ! errors: hw_counters/PktDrop 134" "$nics"
# The default output of a probe ends with a line per port; that of a file has none.
out=$(TUTTI_SYSFS_ROOT=$ib "$topo") || fail "the probe exited $?"
ports=$(sed -n '/^RDMA NIC ports (sysfs /,$p' <<<"$out")
[ "$(grep -c '^  mlx5_[012]:1 ' <<<"$ports")" -eq 3 ] || fail "expected 3 port lines: $ports"
expect "  mlx5_2:1 DOWN (Polling), 10 Gb/sec (4X SDR), InfiniBand, GID \
fe80:0000:0000:0000:946d:ae03:00fb:2e10 (IB/RoCE v1), 0000:d8:00.0 NUMA 1" "$ports"
if TUTTI_SYSFS_ROOT=$ib "$topo" --file "$fixtures/dgx1-v100.xml" | grep -q "RDMA NIC"; then
  fail "a file's tree shows this machine's NICs"
fi
if err=$(TUTTI_SYSFS_ROOT=$ib TUTTI_IB_HCA=mlx5_0:x "$topo" --nics 2>&1); then
  fail "a bad TUTTI_IB_HCA succeeded"
fi
grep -qF "TUTTI_IB_HCA='mlx5_0:x': port 'x' in 'mlx5_0:x' is not a port number" <<<"$err" ||
  fail "the error does not name the bad part: $err"
if err=$(TUTTI_SYSFS_ROOT=$sysfs/no-such-root "$topo" 2>&1); then fail "a missing root succeeded"; fi
grep -qF "TUTTI_SYSFS_ROOT: sysfs root '$sysfs/no-such-root' is not a directory" <<<"$err" ||
  fail "the error does not name the root: $err"
echo ok
