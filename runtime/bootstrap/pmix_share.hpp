// Rank 0's rendezvous address and the job's secret, handed to every rank through the launcher's
// PMIx server (Open MPI's mpirun, Slurm's srun --mpi=pmix): across hosts the ranks meet without
// TUTTI_ADDR, and the rendezvous is authenticated without TUTTI_SECRET, for PMIx serves a job's
// data to that job's processes only. Built where libpmix-dev is; elsewhere pmixBuilt() is false.
#pragma once

#include <chrono>

#include "runtime/bootstrap/bootstrap.hpp"

namespace tutti::bootstrap {

bool pmixBuilt();
// A PMIx server launched this process: it left its namespace, rank and server URI.
bool pmixServed();
// Collective over the job (a PMIx fence): rank 0 fills in what `env` lacks (its address, from the
// interface TUTTI_SOCKET_IFNAME or the default route picks; a random secret) and publishes both;
// every other rank takes them. Fails naming PMIx (kSystem, or kTimeout after `timeout`).
void shareThroughPmix(LaunchEnv& env, std::chrono::milliseconds timeout);

}  // namespace tutti::bootstrap
