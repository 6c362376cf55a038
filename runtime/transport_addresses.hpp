// What one rank publishes at connection time: the address of each transport it made, by the
// transport's name, in the byte codec's form (base/byte_codec.hpp), so that a peer's malformed or
// truncated record is refused naming that peer instead of being misread.
#pragma once

#include <map>
#include <string>

namespace tutti::runtime {

// Transport name -> that transport's address.
using TransportAddresses = std::map<std::string, std::string>;

std::string encodeTransportAddresses(const TransportAddresses& addresses);
// Rank `peer`'s record as rank `rank` reads it; kRemote naming both when malformed.
TransportAddresses decodeTransportAddresses(const std::string& bytes, int rank, int peer);
// The address of transport `name` in rank `peer`'s record; kRemote when it published none.
const std::string& addressOf(const TransportAddresses& addresses, const std::string& name, int rank,
                             int peer);

}  // namespace tutti::runtime
