#!/usr/bin/env bash
# mpirun across two "hosts" (netns_hosts.sh) with no TUTTI_* variable set: the ranks meet through
# Open MPI's PMIx server, which hands rank 0's address and a fresh secret to the others
# (runtime/bootstrap/pmix_share.hpp). mpirun runs in the first namespace; its rsh agent, a script
# standing in for ssh, starts the daemon for 192.0.2.2 inside the second. Two ranks per host:
# process_world's collectives, then all_reduce_perf with -c 1, whose #wrong must be 0 everywhere.
# Skipped (exit 77) with the reason where namespaces cannot be made.
# Usage: mpirun_two_hosts.sh PROCESS_WORLD ALL_REDUCE_PERF
set -u
world=$1 perf=$2
. "$(dirname "$0")/netns_hosts.sh"
while read -r variable; do unset "$variable"; done < <(compgen -e | grep '^TUTTI_')

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

run() {
  timeout 240 ip netns exec "$h1" mpirun --allow-run-as-root --mca plm_rsh_agent "$agent" \
    --mca oob_tcp_if_include 192.0.2.0/24 --mca btl_tcp_if_include 192.0.2.0/24 \
    -H 192.0.2.1:2,192.0.2.2:2 -np 4 "$@" 2>&1
}

failed=0
out=$(run "$world" --seed 21 --cases-per-kind 2 --max-bytes 262144)
status=$?
echo "$out" | grep -v TRACE
[ $status -eq 0 ] || { echo "FAILED: process_world under mpirun exited $status"; failed=1; }
[ "$(echo "$out" | grep -c 'rank [0-3]/4: [0-9]* cases, 0 failed')" -eq 4 ] ||
  { echo "FAILED: not every rank reported its cases passed"; failed=1; }

out=$(run "$perf" -b 8 -e 4M -f 8 -g 1 -c 1 -n 3 -w 1)
status=$?
echo "$out"
[ $status -eq 0 ] || { echo "FAILED: all_reduce_perf under mpirun exited $status"; failed=1; }
# The data rows: size count type redop root, then time algbw busbw #wrong twice.
rows=$(echo "$out" | awk '$1 ~ /^[0-9]+$/ && NF == 13')
[ -n "$rows" ] || { echo "FAILED: all_reduce_perf printed no result rows"; failed=1; }
wrong=$(echo "$rows" | awk '$9 != 0 || $13 != 0' | wc -l)
[ "$wrong" -eq 0 ] || { echo "FAILED: $wrong sizes with #wrong above 0"; failed=1; }
echo "$out" | grep -q "Rank  3 Group  0 Pid .* on" ||
  { echo "FAILED: all_reduce_perf did not list rank 3"; failed=1; }
exit $failed
