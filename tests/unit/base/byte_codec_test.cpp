// The byte codec (base/byte_codec.hpp) against bytes assembled by hand: random records (fixed
// seed) encode to exactly the little-endian bytes expected and decode back to their values;
// every truncation of a record, a string over its bound and trailing bytes are refused with the
// reader's code and name; a writer over a fixed buffer writes the same bytes and refuses to
// overflow it.
#include "base/byte_codec.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/error_of.hpp"

using namespace tutti;
using namespace std::string_view_literals;
using tutti::tests::errorOf;

namespace {

constexpr uint64_t kSeed = 20261202;

// One field of a record, by its kind: the integer's width and signedness, a string, fixed bytes.
struct Field {
  enum Kind { kU8, kU16, kU32, kU64, kI32, kI64, kStr, kRaw } kind;
  uint64_t value = 0;  // the integers, as their unsigned bit pattern
  std::string bytes;   // kStr, kRaw
  bool operator==(const Field&) const = default;
};

size_t widthOf(Field::Kind kind) {
  switch (kind) {
    case Field::kU8: return 1;
    case Field::kU16: return 2;
    case Field::kU32:
    case Field::kI32: return 4;
    default: return 8;
  }
}

Field randomField(std::mt19937_64& rng) {
  Field field{static_cast<Field::Kind>(rng() % 8), 0, {}};
  if (field.kind == Field::kStr || field.kind == Field::kRaw) {
    field.bytes.resize(rng() % 40);
    for (char& c : field.bytes) c = static_cast<char>(rng());
  } else {
    const size_t bits = 8 * widthOf(field.kind);
    field.value = bits == 64 ? rng() : rng() & ((uint64_t{1} << bits) - 1);
  }
  return field;
}

// The expected encoding, byte by byte: least significant byte first.
std::string byHand(const std::vector<Field>& record) {
  std::string out;
  auto put = [&out](uint64_t value, size_t width) {
    for (size_t i = 0; i < width; ++i) out.push_back(static_cast<char>(value % 256)), value /= 256;
  };
  for (const Field& field : record) {
    if (field.kind == Field::kStr) put(field.bytes.size(), 4);
    if (field.kind == Field::kStr || field.kind == Field::kRaw)
      out += field.bytes;
    else
      put(field.value, widthOf(field.kind));
  }
  return out;
}

void write(ByteWriter& out, const std::vector<Field>& record) {
  for (const Field& f : record) {
    switch (f.kind) {
      case Field::kU8: out.u8(static_cast<uint8_t>(f.value)); break;
      case Field::kU16: out.u16(static_cast<uint16_t>(f.value)); break;
      case Field::kU32: out.u32(static_cast<uint32_t>(f.value)); break;
      case Field::kU64: out.u64(f.value); break;
      case Field::kI32: out.i32(static_cast<int32_t>(static_cast<uint32_t>(f.value))); break;
      case Field::kI64: out.i64(static_cast<int64_t>(f.value)); break;
      case Field::kStr: out.str(f.bytes); break;
      case Field::kRaw: out.raw(f.bytes); break;
    }
  }
}

// Reads fields of `record`'s kinds (and string sizes) back.
std::vector<Field> readBack(ByteReader& in, const std::vector<Field>& record) {
  std::vector<Field> got;
  for (const Field& f : record) {
    Field g{f.kind, 0, {}};
    switch (f.kind) {
      case Field::kU8: g.value = in.u8(); break;
      case Field::kU16: g.value = in.u16(); break;
      case Field::kU32: g.value = in.u32(); break;
      case Field::kU64: g.value = in.u64(); break;
      case Field::kI32: g.value = static_cast<uint32_t>(in.i32()); break;
      case Field::kI64: g.value = static_cast<uint64_t>(in.i64()); break;
      case Field::kStr: g.bytes = in.str(f.bytes.size()); break;
      case Field::kRaw: {
        const auto raw = in.raw(f.bytes.size());
        g.bytes.assign(reinterpret_cast<const char*>(raw.data()), raw.size());
        break;
      }
    }
    got.push_back(g);
  }
  return got;
}

std::vector<Field> randomRecord(std::mt19937_64& rng) {
  std::vector<Field> record(1 + rng() % 8);
  for (Field& field : record) field = randomField(rng);
  return record;
}

}  // namespace

TEST_CASE("byte codec: known bytes", "[base][codec]") {
  ByteWriter out;
  out.u8(0xab).u16(0x0102).u32(0x01020304).u64(0x0102030405060708).i32(-2).i64(-3).str("hi");
  const std::string_view expected =
      "\xab"
      "\x02\x01"
      "\x04\x03\x02\x01"
      "\x08\x07\x06\x05\x04\x03\x02\x01"
      "\xfe\xff\xff\xff"
      "\xfd\xff\xff\xff\xff\xff\xff\xff"
      "\x02\x00\x00\x00hi"sv;  // sv: the NULs are part of it
  CHECK(out.bytes() == expected);
  ByteReader in(out.bytes(), ErrorCode::kRemote, "known");
  CHECK(in.u8() == 0xab);
  CHECK(in.u16() == 0x0102);
  CHECK(in.u32() == 0x01020304);
  CHECK(in.u64() == 0x0102030405060708);
  CHECK(in.i32() == -2);
  CHECK(in.i64() == -3);
  CHECK(in.str(2) == "hi");
  CHECK(in.atEnd());
  in.end();
}

TEST_CASE("byte codec: random records round trip as bytes assembled by hand", "[base][codec]") {
  std::mt19937_64 rng(kSeed);
  INFO("seed " << kSeed);
  for (int trial = 0; trial < 500; ++trial) {
    const std::vector<Field> record = randomRecord(rng);
    const std::string expected = byHand(record);
    ByteWriter grown;
    write(grown, record);
    REQUIRE(grown.bytes() == expected);
    // The same bytes into a buffer of exactly the record's size.
    std::vector<std::byte> buffer(expected.size());
    ByteWriter fixed{std::span<std::byte>(buffer)};
    write(fixed, record);
    REQUIRE(fixed.size() == expected.size());
    REQUIRE(fixed.bytes() == expected);
    ByteReader in(expected, ErrorCode::kRemote, "record");
    REQUIRE(readBack(in, record) == record);
    CHECK(in.atEnd());
  }
}

TEST_CASE("byte codec: every truncation of a record is refused, naming the bytes",
          "[base][codec]") {
  std::mt19937_64 rng(kSeed + 1);
  INFO("seed " << kSeed + 1);
  for (int trial = 0; trial < 50; ++trial) {
    const std::vector<Field> record = randomRecord(rng);
    const std::string full = byHand(record);
    for (size_t length = 0; length < full.size(); ++length) {
      // A copy of exactly `length` bytes, so that a read past it is a read past the allocation.
      const std::vector<std::byte> cut(reinterpret_cast<const std::byte*>(full.data()),
                                       reinterpret_cast<const std::byte*>(full.data()) + length);
      const Error error = errorOf([&] {
        ByteReader in(std::span<const std::byte>(cut), ErrorCode::kInvalidUsage, "a cut record");
        readBack(in, record);
      });
      CHECK(error.code() == ErrorCode::kInvalidUsage);
      CHECK_THAT(error.what(), Catch::StartsWith("a cut record: truncated"));
    }
  }
}

TEST_CASE("byte codec: trailing bytes, long strings and bad values are refused", "[base][codec]") {
  ByteWriter out;
  out.u32(7).str("twelve bytes");
  SECTION("trailing bytes") {
    const std::string longer = std::string(out.bytes()) + "x";
    ByteReader in(longer, ErrorCode::kRemote, "peer 3");
    CHECK(in.u32() == 7);
    CHECK(in.str(12) == "twelve bytes");
    CHECK_FALSE(in.atEnd());
    const Error error = errorOf([&] { in.end(); });
    CHECK(error.code() == ErrorCode::kRemote);
    CHECK(std::string(error.what()) == "peer 3: 1 unexpected trailing bytes after offset 20");
  }
  SECTION("a string over its bound") {
    ByteReader in(out.bytes(), ErrorCode::kRemote, "peer 3");
    in.u32();
    const Error error = errorOf([&] { in.str(11); });
    CHECK(std::string(error.what()) ==
          "peer 3: a string of 12 bytes at offset 4, over the limit of 11");
  }
  SECTION("a length that points past the end, before anything is copied") {
    ByteWriter huge;
    huge.u32(UINT32_MAX);
    ByteReader in(huge.bytes(), ErrorCode::kRemote, "peer 3");
    CHECK_THAT(errorOf([&] { in.str(UINT32_MAX); }).what(),
               Catch::Contains("truncated: 4 bytes, 4294967295 more wanted at offset 4"));
  }
  SECTION("a value its owner finds wrong") {
    ByteReader in(out.bytes(), ErrorCode::kInvalidArgument, "peer 3");
    const uint32_t version = in.u32();
    const Error error = errorOf([&] { in.fail("version {}, this is version {}", version, 8); });
    CHECK(error.code() == ErrorCode::kInvalidArgument);
    CHECK(std::string(error.what()) == "peer 3: version 7, this is version 8");
  }
}

TEST_CASE("byte codec: a fixed buffer is never overrun", "[base][codec]") {
  std::array<std::byte, 6> buffer{};
  ByteWriter out{std::span<std::byte>(buffer)};
  out.u32(0x11223344);
  const Error error = errorOf([&] { out.u32(1); });
  CHECK(error.code() == ErrorCode::kInternal);
  CHECK(out.size() == 4);
  out.u16(0x5566).zeros(0);
  CHECK(out.bytes() == "\x44\x33\x22\x11\x66\x55"sv);
  CHECK(errorOf([&] { out.zeros(1); }).code() == ErrorCode::kInternal);
}
