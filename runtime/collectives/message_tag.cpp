#include "runtime/collectives/message_tag.hpp"

namespace tutti::runtime {
namespace {

// words[2]: the small fields side by side. Collective, type, operation and algorithm indices stay
// far below 128, so nothing is lost and the top bit of the algorithm's byte marks exchanges.
constexpr int kDtypeShift = 8, kOpShift = 16, kAlgorithmShift = 24, kRootShift = 32;
constexpr uint64_t kByte = 0xff, kSignatures = uint64_t{0x80} << kAlgorithmShift;

uint64_t field(uint64_t packed, int shift) {
  return (packed >> shift) & kByte;
}

}  // namespace

transport::Tag tagOf(const CallSignature& call, Carries carries) {
  const uint64_t packed = (call.collective & kByte) | (call.dtype & kByte) << kDtypeShift |
                          (call.op & kByte) << kOpShift |
                          (call.algorithm & 0x7f) << kAlgorithmShift |
                          uint64_t{static_cast<uint32_t>(call.root)} << kRootShift |
                          (carries == Carries::kSignatures ? kSignatures : 0);
  return {{call.count, call.ordinal, packed}};
}

CallSignature callOf(const transport::Tag& tag) {
  const uint64_t packed = tag.words[2];
  CallSignature call{};
  call.collective = static_cast<uint32_t>(field(packed, 0));
  call.dtype = static_cast<uint32_t>(field(packed, kDtypeShift));
  call.op = static_cast<uint32_t>(field(packed, kOpShift));
  call.algorithm = field(packed, kAlgorithmShift) & 0x7f;
  call.root = static_cast<int32_t>(static_cast<uint32_t>(packed >> kRootShift));
  call.count = tag.words[0];
  call.ordinal = tag.words[1];
  return call;
}

bool accepts(const transport::Tag& expected, const transport::Tag& got) {
  return got == expected || (expected.words[2] & got.words[2] & kSignatures) != 0;
}

}  // namespace tutti::runtime
