#!/usr/bin/env bash
# mpirun across two "hosts" (netns_hosts.sh) with no TUTTI_* variable set: the ranks meet through
# Open MPI's PMIx server, which hands rank 0's address and a fresh secret to the others
# (runtime/bootstrap/pmix_share.hpp). mpirun runs in the first namespace; its rsh agent, a script
# standing in for ssh, starts the daemon for 192.0.2.2 inside the second. Two ranks per host,
# checked by launched_checks.sh.
# Skipped (exit 77) with the reason where namespaces cannot be made.
# Usage: mpirun_two_hosts.sh PROCESS_WORLD ALL_REDUCE_PERF
set -u
world=$1 perf=$2
. "$(dirname "$0")/netns_hosts.sh"
. "$(dirname "$0")/launched_checks.sh"

agent=$(mktemp /tmp/tutti-rsh-agent-XXXXXX)
trap 'rm -f "$agent"; remove_hosts' EXIT
cat >"$agent" <<AGENT
#!/usr/bin/env bash
# Open MPI's rsh agent: [options] HOST COMMAND... -> COMMAND in HOST's namespace.
while [[ "\$1" == -* ]]; do shift; done
case "\$1" in
  192.0.2.1) ns=$h1 ;;
  192.0.2.2) ns=$h2 ;;
  *) echo "agent: unknown host \$1" >&2; exit 1 ;;
esac
shift
exec ip netns exec "\$ns" bash -c "\$*"
AGENT
chmod +x "$agent"

launch() {
  timeout 240 ip netns exec "$h1" mpirun --allow-run-as-root --mca plm_rsh_agent "$agent" \
    --mca oob_tcp_if_include 192.0.2.0/24 --mca btl_tcp_if_include 192.0.2.0/24 \
    -H 192.0.2.1:2,192.0.2.2:2 -np 4 "$@" 2>&1
}

check_launched "$world" "$perf"
exit $failed
