// kernels/device/tree_allreduce.hpp: the tree all-reduce one thread group runs for one channel
// (NCCL's tree, reduce up then broadcast down, without the split that overlaps them). Each
// channel's part (channelPart) moves in chunks of at most one slot:
//   up    a leaf sends its chunks to its parent; an inner node receives its children's partial
//         results, reduces them and its own, and sends that up; the root does the same and writes
//         the result;
//   down  the root sends the results to its children; an inner node receives them from its
//         parent, writes them out and passes them on; a leaf receives them.
// Up and down are separate connections, so all chunks go up, pipelined, before the root turns
// them down. The fold at a node is op(op(child 0, child 1), own); every element is reduced once,
// at the root, then copied: all ranks hold identical bits. avg folds as sum.
#pragma once

#include <cstddef>

#include "kernels/device/chunks.hpp"
#include "kernels/device/primitives.hpp"
#include "kernels/device/tree.hpp"

namespace tutti::kernels::device {

template <typename Proto, typename T, typename Op, typename Group>
TUTTI_HOST_DEVICE Status treeAllReduce(const Group& group, const TreeArgs<T>& args) {
  const Range mine = channelPart<T>(args.count, args.nchannels, args.channel);
  const T* src = args.src + mine.offset;
  T* dst = args.dst + mine.offset;
  const TreeLinks& links = args.links;
  const int parents = links.hasParent ? 1 : 0;
  if (parents == 0 && links.nchildren == 0) {
    if (src != dst) groupCopy(group, dst, src, mine.count * sizeof(T));
    return Status::kOk;
  }

  Primitives<Proto, T, Op, Group> up(group, links.fromChildren, links.nchildren, &links.toParent,
                                     parents, args.signal);
  const size_t chunk = chunkElems<T>(up.chunkBytes());
  for (size_t base = 0; base < mine.count && up.status() == Status::kOk; base += chunk) {
    const size_t len = smallerOf(mine.count - base, chunk);
    if (links.nchildren == 0) {
      up.send(src + base, len);
    } else if (links.hasParent) {
      up.recvReduceSend(src + base, len);
    } else {
      up.recvReduceCopy(src + base, dst + base, len);
    }
  }
  if (up.status() != Status::kOk) return up.status();

  Primitives<Proto, T, Op, Group> down(group, &links.fromParent, parents, links.toChildren,
                                       links.nchildren, args.signal);
  for (size_t base = 0; base < mine.count && down.status() == Status::kOk; base += chunk) {
    const size_t len = smallerOf(mine.count - base, chunk);
    if (!links.hasParent) {
      down.send(dst + base, len);
    } else if (links.nchildren > 0) {
      down.recvCopySend(dst + base, len);
    } else {
      down.recv(dst + base, len);
    }
  }
  return down.status();
}

}  // namespace tutti::kernels::device
