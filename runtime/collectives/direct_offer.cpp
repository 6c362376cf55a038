#include "runtime/collectives/direct_offer.hpp"

#include <string>

namespace tutti::runtime {
namespace {

void writeBuffer(ByteWriter& out, const OfferedBuffer& buffer) {
  const RegisteredRange& range = buffer.range;
  out.u64(buffer.address)
      .u8(buffer.registered ? 1 : 0)
      .u64(range.id)
      .u64(range.device)
      .u64(range.inode)
      .i32(range.fd)
      .u64(range.allocationBytes)
      .u64(range.offset);
}

bool readFlag(ByteReader& in, const char* name) {
  const uint8_t flag = in.u8();
  if (flag > 1) in.fail("{} flag of {}, not 0 or 1", name, flag);
  return flag == 1;
}

OfferedBuffer readBuffer(ByteReader& in) {
  OfferedBuffer buffer;
  buffer.address = in.u64();
  buffer.registered = readFlag(in, "registered");
  RegisteredRange& range = buffer.range;
  range.id = in.u64();
  range.device = in.u64();
  range.inode = in.u64();
  range.fd = in.i32();
  range.allocationBytes = in.u64();
  range.offset = in.u64();
  return buffer;
}

}  // namespace

OfferBytes encodeOffer(const Offer& offer) {
  OfferBytes bytes{};
  ByteWriter out(bytes);
  out.u32(kOfferVersion);
  writeCall(out, offer.call);
  out.u8(offer.anyBuffers ? 1 : 0)
      .u8(offer.forced ? 1 : 0)
      .u64(offer.timeoutMs)
      .raw(std::as_bytes(std::span(offer.process.nonce)))
      .u64(offer.process.address);
  writeBuffer(out, offer.send);
  writeBuffer(out, offer.recv);
  return bytes;
}

Offer decodeOffer(const OfferBytes& bytes, int peer) {
  const std::string what = fmt::format("rank {}'s direct offer", peer);
  ByteReader in(bytes, ErrorCode::kRemote, what);
  const uint32_t version = in.u32();
  if (version != kOfferVersion)
    in.fail("version {}, this rank's is {} (the ranks run different tutti builds)", version,
            kOfferVersion);
  Offer offer;
  offer.call = readCall(in);
  offer.anyBuffers = readFlag(in, "anyBuffers");
  offer.forced = readFlag(in, "forced");
  offer.timeoutMs = in.u64();
  in.rawInto(std::as_writable_bytes(std::span(offer.process.nonce)));
  offer.process.address = in.u64();
  offer.send = readBuffer(in);
  offer.recv = readBuffer(in);
  in.end();
  return offer;
}

}  // namespace tutti::runtime
