#include "runtime/collectives/direct_offer.hpp"

#include <string>

namespace tutti::runtime {

OfferBytes encodeOffer(const Offer& offer) {
  OfferBytes bytes{};
  ByteWriter out(bytes);
  out.u32(kOfferVersion);
  writeCall(out, offer.call);
  out.u8(offer.forced ? 1 : 0).u64(offer.timeoutMs);
  transport::writeMemoryOffer(out, offer.memory);
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
  const uint8_t forced = in.u8();
  if (forced > 1) in.fail("forced flag of {}, not 0 or 1", forced);
  offer.forced = forced == 1;
  offer.timeoutMs = in.u64();
  offer.memory = transport::readMemoryOffer(in);
  in.end();
  return offer;
}

}  // namespace tutti::runtime
