#!/usr/bin/env bash
# Programs linked with tutti start from the variables other launchers set: torchrun's (RANK,
# WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and Slurm's (SLURM_PROCID, SLURM_NTASKS,
# SLURM_LOCALID on one node). Three processes per launcher run process_world's checks.
# (Debian 12's torchrun 1.13 itself fails under Python 3.11 before starting any worker, and
# Slurm is not installed: their variables are what tutti reads, so those are what is set here.)
# Usage: launcher_variables.sh PROCESS_WORLD
set -u
world=$1
status=0
run_job() {  # name, then a function that prints the env assignments of rank $1
  local name=$1 env_of=$2 pids=() rank
  for rank in 0 1 2; do
    env -u TUTTI_RANK -u TUTTI_WORLD_SIZE -u TUTTI_ADDR -u TUTTI_PORT TUTTI_TIMEOUT=60 \
      TUTTI_DEBUG=INFO $($env_of "$rank") "$world" --seed 11 --cases-per-kind 1 \
      >"/tmp/tutti-launcher-$$-$rank.log" 2>&1 &
    pids+=($!)
  done
  for rank in 0 1 2; do
    if ! wait "${pids[$rank]}"; then
      echo "$name: rank $rank failed"; status=1
    fi
    grep -q "environment: rank $rank of 3" "/tmp/tutti-launcher-$$-$rank.log" ||
      { echo "$name: rank $rank did not log its environment source"; status=1; }
    grep -E "bootstrap|cases" "/tmp/tutti-launcher-$$-$rank.log" | sed "s/^/[$name $rank] /"
    rm -f "/tmp/tutti-launcher-$$-$rank.log"
  done
}
# Below the ephemeral range (32768 and up), where other tests' sockets and listeners land.
port=$((20000 + RANDOM % 12000))
torchrun_env() { echo "RANK=$1 WORLD_SIZE=3 LOCAL_RANK=$1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"; }
slurm_env() {
  echo "SLURM_PROCID=$1 SLURM_NTASKS=3 SLURM_LOCALID=$1 SLURM_NNODES=1 SLURM_JOB_ID=$$ SLURM_STEP_ID=$port"
}
run_job torchrun torchrun_env
run_job slurm slurm_env
exit $status
