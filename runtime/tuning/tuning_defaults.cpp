// tutti's own tuning table, and where each figure came from.
//
// Machine: the 2-core VM the issues ran on ("Intel(R) Xeon(R) Processor", nproc 2, shared with
// other jobs), 2026-11-29 and -30; the figures are hand readings of these sweeps (three
// alternated runs each unless said otherwise):
//
// - oneshot_max_bytes 64K: where one-shot (the whole buffer to every peer) stops paying for its
//   single step; the first core runtime's figure.
// - direct_min_bytes 256K: `tutti-bench allreduce --ranks 2 --algo ring|direct`, out of place,
//   us: 64 KiB 17.4 direct against 14.6 for the ring, 128 KiB 29-32 against 28-31, 256 KiB
//   39-44 against 54-56. Below it ordinary buffers gain nothing and pay direct's round of offers.
// - direct_pull_out_of_place 256K..8M, direct_pull_in_place 4M..16M (2 ranks only): the same
//   sweep, -n 50, out of place / in place, us: 64 KiB 17.4/23.0 against the ring's 14.6/13.6,
//   512 KiB 76-87/129-157 against 105-135/72-88; GB/s: in place 4 MiB 5.1-6.8 against 4.8-5.6,
//   16 MiB 5.8-6.6 against 5.3-5.6, 1 MiB 4.1-4.5 against 4.7-6.0; out of place 16 MiB 3.4-4.9
//   against 4.6-5.0, 32 MiB 2.3-2.4 against 3.5-4.0. 4 ranks in place tie with the ring at 4
//   and 8 MiB and lose at 16 MiB (2.0-2.1 against 2.7).
// - tree_over_ring, tcp_tree_over_ring 0..0: not swept there; the cost model alone ranks the tree
//   against the ring (a machine's own sweep, `tutti-bench tune`, measures them).
// - doubling_range 0..0, tcp_doubling_range 0..64K: measured later, on an AMD EPYC VM of 2 cores
//   (2026-12-05, `tutti-bench allreduce --ranks N --algo doubling|oneshot -b 8 -e 256K -f 8`,
//   us out of place): over TCP doubling ran ahead of one-shot at every size for 3-8 ranks (4
//   ranks: 8 B 43 against 59, 32 KiB 79 against 114; 8 ranks: 32 KiB 303 against 537) and tied
//   with 2; over shared memory it lost below 32 KiB (4 ranks 8 B: 25 against 10). One-shot's
//   limit bounds the TCP range.
// - reduce_scatter_kernel_max_bytes 8M: `tutti-bench reducescatter --ranks 2 -n 30`,
//   TUTTI_DIRECT_BUFFERS=any against registered, busbw GB/s out of place: 1 MiB 3.9-6.1 against
//   3.9-5.3, 16 MiB 2.9-4.3 against 3.6-4.3, 32 MiB 2.0-2.9 against 2.8-3.1, 64 MiB 1.6-1.8
//   against 2.0-2.4.
// - direct_staged_bytes 128K: a piece of each peer's data stays in cache between its copy
//   through the kernel and the reduction (not swept).
// - shm_step_us 0.3, tcp_step_us 15, shm_gbs 5, tcp_gbs 2: README "Measured" (shared memory
//   about a memory copy's rate, TCP over loopback); they only need to rank the algorithms.
// - shm_streaming_min_bytes 1024G (never): streaming stores were measured later, on another machine
//   (docs/benchmarks.md, 2026-12-04); this one's gain is unknown, so its plain stores stay.
// - slot_bytes 256K, slots 8: the first core runtime's FIFO geometry (not swept).
#include "runtime/tuning/tuning.hpp"

namespace tutti::runtime {

const Tuning& defaultTuning() {
  static const Tuning table{
      .oneShotMaxBytes = 64 << 10,
      .tcpOneShotMaxBytes = 64 << 10,
      .directMinBytes = 256 << 10,
      .directPullOutOfPlace = {256 << 10, 8 << 20},
      .directPullInPlace = {4 << 20, 16 << 20},
      .treeOverRing = {0, 0},
      .tcpTreeOverRing = {0, 0},
      .doublingRange = {0, 0},
      .tcpDoublingRange = {0, 64 << 10},
      .reduceScatterKernelMaxBytes = 8 << 20,
      .directStagedBytes = 128 << 10,
      .shmStepUs = 0.3,
      .tcpStepUs = 15.0,
      .shmGBs = 5.0,
      .tcpGBs = 2.0,
      .shmStreamingMinBytes = size_t{1} << 40,
      .slotBytes = 256 << 10,
      .slots = 8,
  };
  return table;
}

}  // namespace tutti::runtime
