#!/usr/bin/env bash
# A one-machine Slurm cluster started here (munged, slurmctld and slurmd on private ports, their
# state in a temporary folder), and `srun -n 4 --mpi=pmix` with no TUTTI_* variable: the ranks get
# the job's secret through Slurm's PMIx server (runtime/bootstrap/pmix_share.hpp), checked by
# launched_checks.sh. Skipped (exit 77) with the reason where Slurm, munge or Slurm's PMIx plugin
# is missing, or the daemons do not start.
# Usage: slurm_one_host.sh PROCESS_WORLD ALL_REDUCE_PERF
set -u
world=$1 perf=$2
. "$(dirname "$0")/launched_checks.sh"

for program in munged mungekey slurmctld slurmd srun sinfo scontrol; do
  command -v $program >/dev/null ||
    { echo "SKIP: $program is not installed (Debian: slurmd slurmctld slurm-client munge)"; exit 77; }
done

dir=$(mktemp -d /tmp/tutti-slurm-XXXXXX)
export SLURM_CONF=$dir/slurm.conf
stop_slurm() {
  scontrol shutdown >/dev/null 2>&1
  [ -f "$dir/slurmd.pid" ] && kill "$(cat "$dir/slurmd.pid")" 2>/dev/null
  [ -f "$dir/munged.pid" ] && kill "$(cat "$dir/munged.pid")" 2>/dev/null
  sleep 1
  rm -rf "$dir"
}
trap stop_slurm EXIT

host=$(hostname)
port=$((20000 + RANDOM % 20000))
mkdir -p "$dir/ctld" "$dir/d"
cat >"$SLURM_CONF" <<CONF
ClusterName=tutti-test
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/d
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
if ! srun --mpi=list 2>&1 | grep -q pmix; then
  echo "SKIP: Slurm has no PMIx plugin (srun --mpi=list: $(srun --mpi=list 2>&1 | tr '\n' ' '))"
  exit 77
fi

mungekey -c -f -k "$dir/munge.key" >/dev/null 2>&1 && chmod 600 "$dir/munge.key"
if ! munged --key-file="$dir/munge.key" --socket="$dir/munge.socket" --pid-file="$dir/munged.pid" \
  --log-file="$dir/munged.log" --seed-file="$dir/munge.seed" --force 2>"$dir/munged.err"; then
  echo "SKIP: munged does not start: $(cat "$dir/munged.err")"
  exit 77
fi
slurmctld -c -f "$SLURM_CONF" && slurmd -f "$SLURM_CONF" ||
  { echo "SKIP: the Slurm daemons do not start"; cat "$dir"/*.log; exit 77; }
for _ in $(seq 1 30); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 1
done
sinfo -h -o %t | grep -q idle ||
  { echo "SKIP: the Slurm node never became idle: $(sinfo 2>&1)"; cat "$dir"/*.log; exit 77; }

# -O: four tasks on fewer cores.
launch() {
  timeout 240 srun -n 4 -O --mpi=pmix "$@" 2>&1
}

check_launched "$world" "$perf"
# On one host the ranks would meet without PMIx too, only unauthenticated: the log says the secret
# came through it.
[ "$(launch env TUTTI_DEBUG=INFO "$world" --cases-per-kind 1 | grep -c "the job's secret from rank 0 through PMIx")" -eq 3 ] ||
  { echo "FAILED: ranks 1-3 did not take the job's secret from rank 0 through PMIx"; failed=1; }
exit $failed
