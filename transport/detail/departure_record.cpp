#include "transport/detail/departure_record.hpp"

#include <string_view>

namespace tutti::transport {

void writeDepartureBody(ByteWriter& out, const Departure& departure) {
  out.i32(departure.code)
      .u64(departure.collectives)
      .str(std::string_view(departure.message).substr(0, Departure::kMaxMessageBytes));
}

void readDepartureBody(ByteReader& in, Departure& departure) {
  departure.code = in.i32();
  departure.collectives = in.u64();
  departure.message = in.str(Departure::kMaxMessageBytes);
}

Departure::State departureStateOf(uint32_t word) {
  if (word < static_cast<uint32_t>(Departure::State::kFinished) ||
      word > static_cast<uint32_t>(Departure::State::kAborted))
    return Departure::State::kNone;
  return static_cast<Departure::State>(word);
}

}  // namespace tutti::transport
