# Hosts on one machine for the suite's scripts (sourced): $host_count (default 2) network
# namespaces on a bridge in a namespace of its own (the switch), host K at 192.0.2.K/24 (a
# documentation range that is never routed) on its interface "eth0", all removed on exit. With
# rail_count=2 or 3, each host has as many NICs, one per rail as on a cluster's rail-aligned
# fabric: eth1 at 198.51.100.K/24 on a second bridge, eth2 at 203.0.113.K/24 on a third. Exits 77
# (meson's SKIP) with the reason where namespaces cannot be made. Sets suffix, hosts (the
# namespaces, host K at index K-1), h1 and h2 (the first two).
suffix=$$
host_count=${host_count:-2}
rail_count=${rail_count:-1}
rail_subnets=(192.0.2 198.51.100 203.0.113)
switch=tutti-sw-$suffix
hosts=()
for k in $(seq 1 "$host_count"); do hosts+=("tutti-h$k-$suffix"); done
h1=${hosts[0]} h2=${hosts[1]}

remove_hosts() {
  for ns in "${hosts[@]}" "$switch"; do ip netns del "$ns" 2>/dev/null; done
}
trap remove_hosts EXIT

if ! command -v ip >/dev/null; then echo "SKIP: iproute2 (ip) is not installed"; exit 77; fi
if ! ip netns add "$switch" 2>/tmp/tutti-netns-$suffix.err; then
  echo "SKIP: cannot create network namespaces here: $(cat /tmp/tutti-netns-$suffix.err)"
  rm -f /tmp/tutti-netns-$suffix.err
  exit 77
fi
rm -f /tmp/tutti-netns-$suffix.err
for r in $(seq 0 $((rail_count - 1))); do
  ip -n "$switch" link add "br$r" type bridge || { echo "SKIP: no bridge support"; exit 77; }
  ip -n "$switch" link set "br$r" up
done
for k in $(seq 1 "$host_count"); do
  ns=${hosts[$((k - 1))]}
  ip netns add "$ns" || exit 1
  for r in $(seq 0 $((rail_count - 1))); do
    veth=p$k
    [ "$r" -gt 0 ] && veth=p${k}r$r
    ip -n "$switch" link add "$veth" type veth peer name "eth$r" netns "$ns" ||
      { echo "SKIP: no veth support"; exit 77; }
    ip -n "$switch" link set "$veth" master "br$r" up
    ip -n "$ns" addr add "${rail_subnets[$r]}.$k/24" dev "eth$r"
    ip -n "$ns" link set "eth$r" up
  done
  ip -n "$ns" link set lo up
done
