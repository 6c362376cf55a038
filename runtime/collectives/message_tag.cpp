#include "runtime/collectives/message_tag.hpp"

namespace tutti::runtime {

CallSignature callOf(const transport::Tag& tag) {
  using namespace tag_layout;
  const uint64_t packed = tag.words[2];
  auto field = [&](int shift) { return static_cast<uint32_t>((packed >> shift) & kByte); };
  CallSignature call;
  call.collective = field(0);
  call.dtype = field(kDtypeShift);
  call.op = field(kOpShift);
  call.algorithm = field(kAlgorithmShift) & kAlgorithmBits;
  call.root = static_cast<int32_t>(static_cast<uint32_t>(packed >> kRootShift));
  call.count = tag.words[0];
  call.ordinal = tag.words[1];
  return call;
}

}  // namespace tutti::runtime
