# Hosts on one machine for the suite's scripts (sourced): $host_count (default 2) network
# namespaces on a bridge in a namespace of its own (the switch), host K at 192.0.2.K/24 (a
# documentation range that is never routed) on its interface "eth0", all removed on exit. Exits 77
# (meson's SKIP) with the reason where namespaces cannot be made. Sets suffix, hosts (the
# namespaces, host K at index K-1), h1 and h2 (the first two).
suffix=$$
host_count=${host_count:-2}
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
ip -n "$switch" link add br0 type bridge || { echo "SKIP: no bridge support"; exit 77; }
ip -n "$switch" link set br0 up
for k in $(seq 1 "$host_count"); do
  ns=${hosts[$((k - 1))]}
  ip netns add "$ns" || exit 1
  ip -n "$switch" link add "p$k" type veth peer name eth0 netns "$ns" ||
    { echo "SKIP: no veth support"; exit 77; }
  ip -n "$switch" link set "p$k" master br0 up
  ip -n "$ns" addr add "192.0.2.$k/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
done
