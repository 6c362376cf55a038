# Two "hosts" on one machine for the suite's scripts (sourced): network namespaces $h1 and $h2
# joined by a veth pair, 192.0.2.1 in $h1 and 192.0.2.2 in $h2 (a documentation range that is
# never routed), removed on exit. Exits 77 (meson's SKIP) with the reason where namespaces cannot
# be made. Sets suffix, h1, h2.
suffix=$$
h1=tutti-h1-$suffix h2=tutti-h2-$suffix

remove_hosts() {
  ip netns del "$h1" 2>/dev/null
  ip netns del "$h2" 2>/dev/null
}
trap remove_hosts EXIT

if ! command -v ip >/dev/null; then echo "SKIP: iproute2 (ip) is not installed"; exit 77; fi
if ! ip netns add "$h1" 2>/tmp/tutti-netns-$suffix.err; then
  echo "SKIP: cannot create network namespaces here: $(cat /tmp/tutti-netns-$suffix.err)"
  rm -f /tmp/tutti-netns-$suffix.err
  exit 77
fi
rm -f /tmp/tutti-netns-$suffix.err
ip netns add "$h2" || exit 1
ip link add "v1-$suffix" type veth peer name "v2-$suffix" || { echo "SKIP: no veth support"; exit 77; }
ip link set "v1-$suffix" netns "$h1"
ip link set "v2-$suffix" netns "$h2"
ip -n "$h1" addr add 192.0.2.1/24 dev "v1-$suffix"
ip -n "$h2" addr add 192.0.2.2/24 dev "v2-$suffix"
for ns in "$h1" "$h2"; do ip -n "$ns" link set lo up; done
ip -n "$h1" link set "v1-$suffix" up
ip -n "$h2" link set "v2-$suffix" up
