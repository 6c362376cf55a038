// The byte form of a MemoryOffer (transport/peer_memory.hpp has the layout).
#include <span>

#include "transport/peer_memory.hpp"

namespace tutti::transport {
namespace {

bool readFlag(ByteReader& in, const char* name) {
  const uint8_t flag = in.u8();
  if (flag > 1) in.fail("{} flag of {}, not 0 or 1", name, flag);
  return flag == 1;
}

void writeBuffer(ByteWriter& out, const BufferOffer& buffer) {
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

BufferOffer readBuffer(ByteReader& in) {
  BufferOffer buffer;
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

void writeMemoryOffer(ByteWriter& out, const MemoryOffer& offer) {
  out.u32(kMemoryOfferVersion)
      .u8(offer.anyBuffers ? 1 : 0)
      .raw(std::as_bytes(std::span(offer.process.nonce)))
      .u64(offer.process.address);
  writeBuffer(out, offer.send);
  writeBuffer(out, offer.recv);
}

MemoryOffer readMemoryOffer(ByteReader& in) {
  const uint32_t version = in.u32();
  if (version != kMemoryOfferVersion)
    in.fail(
        "peer-memory offer version {}, this rank's is {} (the ranks run different tutti builds)",
        version, kMemoryOfferVersion);
  MemoryOffer offer;
  offer.anyBuffers = readFlag(in, "anyBuffers");
  in.rawInto(std::as_writable_bytes(std::span(offer.process.nonce)));
  offer.process.address = in.u64();
  offer.send = readBuffer(in);
  offer.recv = readBuffer(in);
  return offer;
}

}  // namespace tutti::transport
