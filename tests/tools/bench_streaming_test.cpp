// tutti-bench tune's choice of streaming stores (bench/streaming_stores.hpp): the threshold from
// which streaming gained most over plain stores through each size's fastest algorithm, a lone
// noisy size ignored; the merged sweep takes each size's rows from the stores it will run with.
#include <catch2/catch.hpp>
#include <map>
#include <stdexcept>
#include <string>

#include "bench/streaming_stores.hpp"

using namespace tutti::bench;

namespace {

constexpr size_t K = 1 << 10, M = 1 << 20, kNever = size_t{1} << 40;

// Each algorithm's time as a multiple of the ring's: the others twice it, auto (which the choice
// must ignore) a tenth.
double factorOf(const std::string& algorithm) {
  return algorithm == "ring" ? 1 : algorithm == "auto" ? 0.1 : 2;
}

// A sweep of the four fixed algorithms and auto: per size, the ring takes `ring[bytes]` seconds
// in both placements, the others factorOf(algorithm) times that.
Results sweep(int nranks, const std::map<size_t, double>& ring) {
  Results results;
  results.nranks = nranks;
  for (const auto& [bytes, seconds] : ring)
    for (const std::string algorithm : {"oneshot", "ring", "tree", "direct", "auto"}) {
      ResultRow row;
      row.collective = "allreduce";
      row.algorithm = algorithm;
      row.bytes = bytes;
      row.outOfPlace.seconds = row.inPlace.seconds = seconds * factorOf(algorithm);
      results.rows.push_back(row);
    }
  return results;
}

}  // namespace

TEST_CASE("streaming stores run from the size where they gained most, summed upwards") {
  std::map<size_t, double> plain, streaming;
  for (size_t bytes = 1 * K; bytes <= 64 * M; bytes *= 4) {
    plain[bytes] = 1.0;
    streaming[bytes] = bytes >= 256 * K ? 0.6 : 1.2;  // slower below 256K, faster from it
  }
  streaming[4 * K] = 0.9;   // one lucky sample below
  streaming[16 * M] = 1.1;  // one unlucky sample above
  const StreamingChoice choice = chooseStreaming(sweep(2, plain), sweep(2, streaming), kNever);
  CHECK(choice.minBytes == 256 * K);
  for (const ResultRow& row : choice.merged.rows) {
    INFO(row.algorithm << " at " << row.bytes);
    const double ring = row.bytes >= 256 * K ? streaming.at(row.bytes) : plain.at(row.bytes);
    CHECK(row.outOfPlace.seconds == ring * factorOf(row.algorithm));
  }
  CHECK(choice.merged.rows.size() == plain.size() * 5);
  CHECK(choice.merged.nranks == 2);
}

TEST_CASE("streaming stores that gain from no size on are never used") {
  std::map<size_t, double> plain, streaming;
  for (size_t bytes = 8; bytes <= 16 * M; bytes *= 8) {
    plain[bytes] = 1.0;
    streaming[bytes] = 1.0;  // ties gain nothing
  }
  streaming[8] = 1.3;
  StreamingChoice choice = chooseStreaming(sweep(4, plain), sweep(4, streaming), kNever);
  CHECK(choice.minBytes == kNever);
  CHECK(choice.merged.rows.size() == plain.size() * 5);
  for (const ResultRow& row : choice.merged.rows)
    CHECK(row.outOfPlace.seconds == factorOf(row.algorithm));

  streaming[16 * M] = 0.9;  // the largest size alone gains: it streams alone
  choice = chooseStreaming(sweep(4, plain), sweep(4, streaming), kNever);
  CHECK(choice.minBytes == 16 * M);
}

TEST_CASE("sweeps that cannot be compared size by size are refused") {
  const std::map<size_t, double> some = {{1 * K, 1.0}, {4 * K, 1.0}}, fewer = {{1 * K, 1.0}};
  CHECK_THROWS_WITH(chooseStreaming(sweep(2, some), sweep(4, some), kNever),
                    "the sweeps ran 2 and 4 ranks");
  CHECK_THROWS_WITH(chooseStreaming(sweep(2, some), sweep(2, fewer), kNever),
                    "the sweep with plain stores has oneshot at 4096 bytes, the one with "
                    "streaming stores not");
  CHECK_THROWS_WITH(chooseStreaming(sweep(2, fewer), sweep(2, some), kNever),
                    "the sweep with streaming stores has oneshot at 4096 bytes, the one with "
                    "plain stores not");
  Results broken = sweep(2, some);
  broken.rows[3].inPlace.seconds = 0;
  CHECK_THROWS_WITH(chooseStreaming(sweep(2, some), broken, kNever),
                    "the sweep with streaming stores has a time of 0 s for direct at 1024 bytes");
  CHECK_THROWS_WITH(chooseStreaming(sweep(2, {{0, 1.0}}), sweep(2, {{0, 1.0}}), kNever),
                    "the sweeps have no all-reduce above 0 bytes");
}
