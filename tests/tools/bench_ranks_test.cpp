// Every collective with real ranks (--ranks 3 and 4) and a few types: the report parses as
// nccl-tests' format, every check passes; and a fault on one rank is caught by -c.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench_table.hpp"
#include "subprocess.hpp"

namespace {

// tutti-bench with args, under env(1) with `env` (NAME=VALUE each) when given.
tutti::test::ProcessResult bench(std::vector<std::string> args,
                                 const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), tutti::test::requiredEnv("TUTTIBENCH"));
  if (!env.empty()) {
    args.insert(args.begin(), env.begin(), env.end());
    args.insert(args.begin(), "env");
  }
  return tutti::test::run(args, 120);
}

const std::vector<std::string> kCollectives = {"allreduce", "reducescatter", "allgather",
                                               "broadcast", "reduce",        "alltoall",
                                               "sendrecv",  "barrier"};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The table's rows (not the # lines), each split into its fields.
std::vector<std::vector<std::string>> tableRows(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& line : tutti::test::splitLines(out)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    auto& fields = rows.emplace_back();
    for (std::string f; in >> f;) fields.push_back(f);
  }
  return rows;
}

bool isReducing(const std::string& c) {
  return c == "allreduce" || c == "reducescatter" || c == "reduce";
}

}  // namespace

TEST_CASE("every collective x types x ranks: rows parse, all correct", "[bench]") {
  for (const std::string ranks : {"3", "4"}) {
    for (const auto& collective : kCollectives) {
      for (const std::string type : {"int8", "half", "double"}) {
        auto r =
            bench({collective, "--ranks", ranks, "-b", "8", "-e", "64K", "-f", "16", "-n", "2",
                   "-w", "1", "-d", type, "-o", collective == "reduce" ? "max" : "sum", "-r", "1"});
        INFO(collective << " " << type << " --ranks " << ranks << "\n" << r.out << r.err);
        REQUIRE(r.status == 0);
        auto table = tutti::test::parseTable(r.out);
        REQUIRE(table);
        CHECK(table->ok);
        CHECK(table->outOfBounds == 0);
        REQUIRE(table->rows.size() == (collective == "barrier" ? 1u : 4u));
        for (const auto& row : table->rows) {
          if (collective != "barrier") {
            CHECK(row.type == type);
            CHECK(row.outOfPlace.wrong == 0);
            CHECK(row.inPlace.wrong == 0);
          }
          CHECK(row.op ==
                (isReducing(collective) ? (collective == "reduce" ? "max" : "sum") : "none"));
          CHECK(row.root == (collective == "broadcast" || collective == "reduce" ? 1 : -1));
        }
      }
      if (collective == "barrier") break;
    }
  }
}

TEST_CASE("-o all, -d all and -r all run every combination", "[bench]") {
  auto r = bench({"reduce", "--ranks", "3",  "-b",  "64", "-e",  "64", "-n", "1",  "-w", "0",
                  "-o",     "all",     "-d", "all", "-r", "all", "-m", "2",  "-a", "3"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto table = tutti::test::parseTable(r.out);
  REQUIRE(table);
  CHECK(table->rows.size() == 10 * 5 * 3);  // types x ops x roots
  CHECK(table->ok);
}

TEST_CASE("-c catches one flipped element on one rank", "[bench]") {
  for (const std::string collective : {"allreduce", "allgather", "sendrecv"}) {
    auto r = bench({collective, "--ranks", "3", "-b", "1K", "-e", "4K", "-n", "1", "-w", "0",
                    "--fault", "2:5"});
    INFO(collective << "\n" << r.out << r.err);
    CHECK(r.status == 1);
    auto table = tutti::test::parseTable(r.out);
    REQUIRE(table);
    CHECK_FALSE(table->ok);
    CHECK(table->outOfBounds == 6);  // 3 sizes x 2 placements
    for (const auto& row : table->rows) {
      CHECK(row.outOfPlace.wrong == 1);
      CHECK(row.inPlace.wrong == 1);
    }
  }
}

TEST_CASE("-m -N -u -I -M -a: more rows and comment lines, same table", "[bench]") {
  auto r =
      bench({"alltoall", "--ranks", "3", "-b", "1K", "-e", "16K", "-f", "4",  "-n", "5",  "-w",
             "1",        "-m",      "2", "-N", "2",  "-u", "-I",  "-M", "-a", "0",  "-d", "int32"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto table = tutti::test::parseTable(r.out);
  REQUIRE(table);
  CHECK(table->ok);
  CHECK(table->rows.size() == 2 * 3);  // two cycles of 1K 4K 16K (1020 4092 16380 B)
  CHECK(r.out.find("agg iters: 2") != std::string::npos);
  CHECK(r.out.find("#  -I       1020 B out-of-place: min ") != std::string::npos);
  CHECK(r.out.find("#  -I      16380 B in-place    : min ") != std::string::npos);
  CHECK(r.out.find("# Memory: send buffer ") != std::string::npos);
  CHECK(r.err.find("elapsed") == std::string::npos);  // no progress line when not a terminal
}

TEST_CASE("--ranks says that it ignores TUTTI_PORT and TUTTI_WORLD_SIZE from the environment",
          "[bench]") {
  auto r = tutti::test::run(
      {"env", "TUTTI_PORT=1", "TUTTI_WORLD_SIZE=5", tutti::test::requiredEnv("TUTTIBENCH"),
       "allreduce", "--ranks", "2", "-b", "8", "-e", "8", "-n", "1", "-w", "0"},
      120);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const auto table = tutti::test::parseTable(r.out);
  REQUIRE(table);
  CHECK(table->rows.size() == 1);
  CHECK(table->ok);
  CHECK(r.err.find("tutti-bench: TUTTI_PORT in the environment is ignored") != std::string::npos);
  CHECK(r.err.find("tutti-bench: TUTTI_WORLD_SIZE in the environment is ignored") !=
        std::string::npos);
}

TEST_CASE("--quiet prints the table only; -T ends a row that takes too long", "[bench]") {
  auto quiet = bench({"broadcast", "--ranks", "2", "-b", "8", "-e", "8", "-n", "1", "--quiet"});
  CHECK(quiet.status == 0);
  CHECK(quiet.out.find("# Command line") == std::string::npos);
  CHECK(tutti::test::parseTable(quiet.out));

  auto slow = bench({"allreduce", "--ranks", "2", "-b", "64M", "-e", "64M", "-n", "1000", "-w", "0",
                     "-c", "0", "-T", "0.05"});
  INFO(slow.out << slow.err);
  CHECK(slow.status != 0);
  CHECK(slow.err.find("took longer than -T 0.05 s") != std::string::npos);
  CHECK(slow.seconds < 60);
}

TEST_CASE("--algo all: a column group per algorithm, side by side; --transport tcp", "[bench]") {
  auto r = bench({"allreduce", "--ranks", "3", "-b", "8", "-e", "256K", "-f", "64", "-n", "2", "-w",
                  "1", "--algo", "all", "--transport", "tcp", "-d", "int64"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("transport tcp") != std::string::npos);
  for (const char* algorithm : {"ring:", "tree:", "oneshot:", "doubling:", "direct:", "auto:"}) {
    CHECK(r.out.find(algorithm) != std::string::npos);
  }
  const auto rows = tableRows(r.out);
  CHECK(rows.size() == 3);  // 8, 512 and 32768 B
  for (const auto& fields : rows) {
    REQUIRE(fields.size() == 5 + 4 * 12);
    for (size_t wrong = 5 + 3; wrong < fields.size(); wrong += 4) CHECK(fields[wrong] == "0");
  }
}

namespace {

// "#  rounds <bytes> B <label>: t1 t2 t3 us, median t": the label, the round times and the median.
struct RoundsLine {
  std::string label;
  std::vector<std::string> times;
  std::string median;
};

std::vector<RoundsLine> roundsLines(const std::string& out) {
  std::vector<RoundsLine> found;
  for (const auto& line : tutti::test::splitLines(out)) {
    if (line.rfind("#  rounds ", 0) != 0) continue;
    const size_t colon = line.find(':');
    std::istringstream head(line.substr(10, colon - 10)), tail(line.substr(colon + 1));
    RoundsLine& r = found.emplace_back();
    std::string bytes, unit, word;
    head >> bytes >> unit;
    for (std::string part; head >> part;) r.label += (r.label.empty() ? "" : " ") + part;
    r.label = bytes + " " + r.label;
    while (tail >> word && word != "us,") r.times.push_back(word);
    tail >> word >> r.median;
  }
  return found;
}

}  // namespace

TEST_CASE("--rounds: the algorithms in turn, each row its median round, checked every round",
          "[bench]") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("tutti-bench-rounds-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto r = bench({"allreduce", "--ranks", "2",         "-b",     "1K",
                  "-e",        "64K",     "-f",        "8",      "-n",
                  "3",         "-w",      "1",         "--algo", "all",
                  "--rounds",  "3",       "--verbose", "-J",     dir + "/run.json"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const auto rows = tableRows(r.out);
  REQUIRE(rows.size() == 3);  // 1K, 8K, 64K: one row each, whatever the rounds
  const auto rounds = roundsLines(r.out);
  REQUIRE(rounds.size() == 3 * 6 * 2);  // a line per size, algorithm and placement
  for (size_t row = 0; row < rows.size(); ++row) {
    REQUIRE(rows[row].size() == 5 + 4 * 12);
    for (size_t group = 0; group < 12; ++group) {
      const RoundsLine& line = rounds[row * 12 + group];
      INFO(line.label);
      CHECK(line.label.rfind(rows[row][0] + " ", 0) == 0);
      CHECK(line.label.find(group % 2 ? "in-place" : "out-of-place") != std::string::npos);
      REQUIRE(line.times.size() == 3);
      std::vector<double> sorted;
      for (const auto& t : line.times) sorted.push_back(std::stod(t));
      std::sort(sorted.begin(), sorted.end());
      CHECK(std::stod(line.median) == sorted[1]);
      CHECK(rows[row][5 + 4 * group] == line.median);  // the row reports the median round
      CHECK(rows[row][5 + 4 * group + 3] == "0");
    }
  }
  std::ifstream in(dir + "/run.json");
  const auto document = nlohmann::json::parse(in);
  CHECK(document["configuration"]["rounds"] == 3);
  REQUIRE(document["rows"].size() == 3 * 6);
  double busbw = 0;
  for (const auto& row : document["rows"]) {
    busbw += row["out_of_place"]["busbw_gbps"].get<double>() +
             row["in_place"]["busbw_gbps"].get<double>();
  }
  // The average over what the rows report, not over every round.
  CHECK(document["summary"]["avg_busbw_gbps"].get<double>() ==
        Approx(busbw / (2 * 3 * 6)).epsilon(1e-6));

  // A wrong element in every round is one failed check per size and placement, not one a round.
  auto faulty = bench({"allreduce", "--ranks", "2", "-b", "1K", "-e", "4K", "-n", "1", "-w", "0",
                       "--rounds", "4", "--fault", "1:5"});
  INFO(faulty.out << faulty.err);
  CHECK(faulty.status == 1);
  const auto table = tutti::test::parseTable(faulty.out);
  REQUIRE(table);
  CHECK(table->outOfBounds == 3 * 2);
  for (const auto& row : table->rows) {
    CHECK(row.outOfPlace.wrong == 1);
    CHECK(row.inPlace.wrong == 1);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("--buffers registered: tutti_mem_alloc buffers, checked, under the direct all-reduce",
          "[bench]") {
  auto r = bench({"allreduce", "--ranks", "3",      "-b",        "1M",         "-e", "4M",
                  "-f",        "4",       "-n",     "2",         "-w",         "1",  "-c",
                  "2",         "--algo",  "direct", "--buffers", "registered", "-d", "float"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("buffers registered") != std::string::npos);
  const auto rows = tableRows(r.out);
  CHECK(rows.size() == 2);  // 1 and 4 MiB
  for (const auto& fields : rows) {
    REQUIRE(fields.size() == 5 + 4 * 2);
    CHECK(fields[5 + 3] == "0");  // #wrong, out-of-place and in-place
    CHECK(fields[5 + 7] == "0");
  }
  auto bad = bench({"allreduce", "--ranks", "2", "--buffers", "device"});
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--buffers") != std::string::npos);
}

// Run with TUTTI_CUDA_DRIVER naming the host stand-in driver (tests/ranks/host_cuda_driver.cpp:
// two "GPUs" whose memory the host cannot touch), registered only where libtutti has the GPU path.
TEST_CASE("--device cuda: every collective on GPU buffers, staged by tutti, checked", "[cuda]") {
  for (const auto& collective : kCollectives) {
    if (collective == "barrier") continue;
    auto r = bench({collective, "--ranks", "3", "-b", "8", "-e", "64K", "-f", "64", "-n", "2", "-w",
                    "1", "-d", "int32", "--device", "cuda"});
    INFO(collective << "\n" << r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("buffers cuda") != std::string::npos);
    // Three ranks on two GPUs: the third shares the first's.
    for (const char* rank : {"Rank  0 ", "Rank  1 ", "Rank  2 "}) {
      const size_t line = r.out.find(rank);
      REQUIRE(line != std::string::npos);
      const std::string device = rank[6] == '1' ? "device  1 [cuda" : "device  0 [cuda";
      CHECK(r.out.find(device, line) == r.out.find("device", line));
    }
    auto table = tutti::test::parseTable(r.out);
    REQUIRE(table);
    CHECK(table->ok);
    REQUIRE(table->rows.size() == 3u);  // 8 B, 512 B, 32 KiB
    for (const auto& row : table->rows) {
      CHECK(row.outOfPlace.wrong == 0);
      CHECK(row.inPlace.wrong == 0);
    }
  }
  // The check reads the results back from the GPU: a wrong one is found.
  auto wrong = bench({"allreduce", "--ranks", "2", "-b", "4K", "-e", "4K", "-n", "1", "-w", "0",
                      "--device", "cuda", "--fault", "1:3"});
  CHECK(wrong.status != 0);
  CHECK(wrong.out.find("FAILED") != std::string::npos);
  // Without a driver: --device cuda says why; auto falls back to host memory.
  auto none = bench({"allreduce", "--ranks", "2", "-e", "64", "--device", "cuda"},
                    {"TUTTI_CUDA_DRIVER=none"});
  CHECK(none.status != 0);
  CHECK(none.err.find("--device cuda: no GPU path: TUTTI_CUDA_DRIVER=none") != std::string::npos);
  auto host = bench({"allreduce", "--ranks", "2", "-e", "64"}, {"TUTTI_CUDA_DRIVER=none"});
  CHECK(host.status == 0);
  CHECK(host.out.find("buffers host") != std::string::npos);
  auto registered =
      bench({"allreduce", "--ranks", "2", "--device", "cuda", "--buffers", "registered"});
  CHECK(registered.status == 2);
  CHECK(registered.err.find("--buffers registered is host memory") != std::string::npos);
}

// A run that exited 0 with `rows` sizes in its table, every value checked right.
void checkedRows(const tutti::test::ProcessResult& r, size_t rows) {
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto table = tutti::test::parseTable(r.out);
  REQUIRE(table);
  CHECK(table->ok);
  REQUIRE(table->rows.size() == rows);
  for (const auto& row : table->rows) {
    CHECK(row.outOfPlace.wrong == 0);
    CHECK(row.inPlace.wrong == 0);
  }
}

TEST_CASE(
    "--device cuda, processes sharing a GPU: kernels under MPS within its blocks, else staged",
    "[shared-gpu]") {
  // Three processes on the stand-in's two GPUs: ranks 0 and 2 share device 0. 1 MiB asks for
  // every channel, 64 KiB for four; the log says how the ring was joined, or why it was not.
  const std::vector<std::string> args = {"allreduce", "--ranks", "3",  "-b",       "64K",
                                         "-e",        "1M",      "-f", "16",       "-n",
                                         "2",         "-w",      "1",  "--device", "cuda"};
  const auto checked = [](const tutti::test::ProcessResult& r) { checkedRows(r, 2); };
  const std::string joined = "joined the device ring of 3 ranks on device 0 (";
  auto roomy = bench(args, {"TUTTI_DEBUG=INFO"});
  checked(roomy);
  CHECK(roomy.err.find(joined + "16 channels") != std::string::npos);
  // Five blocks at once on each GPU: two each for device 0's two ranks.
  auto tight =
      bench(args, {"TUTTI_DEBUG=INFO", "HOST_CUDA_MULTIPROCESSORS=1", "HOST_CUDA_BLOCKS_PER_SM=5"});
  checked(tight);
  CHECK(tight.err.find(joined + "2 channels") != std::string::npos);
  const std::string device0 = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f";
  const std::string staged =
      "device buffers are staged through host memory, not run as device "
      "kernels: ";
  auto noMps = bench(args, {"TUTTI_DEBUG=INFO", "HOST_CUDA_MPS=0"});
  checked(noMps);
  CHECK(noMps.err.find(staged + "ranks 0, 2 share " + device0 + " without MPS") !=
        std::string::npos);
  CHECK(noMps.err.find("joined the device ring") == std::string::npos);
  auto full = bench(args, {"HOST_CUDA_MULTIPROCESSORS=1", "HOST_CUDA_BLOCKS_PER_SM=1"});
  checked(full);
  CHECK(full.err.find(staged + device0 +
                      " holds 1 of the collective kernels' blocks at once, "
                      "fewer than one channel for each of its 2 ranks (0, 2)") !=
        std::string::npos);
}

TEST_CASE("--device cuda, a ring not in rank order (TUTTI_RING_ORDER): the kernels follow it",
          "[shared-gpu]") {
  // Four processes, two on each stand-in GPU. The kernels' blocks and roots are ranks' wherever
  // the ring puts them: every value is checked, every root tried, from LL's sizes to Simple's.
  for (const std::string collective :
       {"allreduce", "reducescatter", "allgather", "broadcast", "reduce"}) {
    INFO(collective);
    auto r = bench({collective, "--ranks", "4", "-b", "8", "-e", "256K", "-f", "32", "-n", "2",
                    "-w", "1", "-r", "all", "--device", "cuda"},
                   {"TUTTI_DEBUG=INFO", "TUTTI_RING_ORDER=2 0 3 1"});
    checkedRows(r, collective == "broadcast" || collective == "reduce" ? 4 * 4u : 4u);
    for (int rank = 0; rank < 4; ++rank)
      CHECK(r.err.find("rank " + std::to_string(rank) + " joined the device ring of 4 ranks") !=
            std::string::npos);
    CHECK(r.err.find("; ring 2 0 3 1)") != std::string::npos);
  }
}

TEST_CASE("--device cuda on a DGX-1's GPUs: the channels run the topology's rings over them",
          "[shared-gpu]") {
  // Four processes on four stand-in GPUs placed at the bus ids of GPUs 0-3 of a real DGX-1's
  // topology, whose NVLink mesh gives channels rings over different links. 2 MiB runs four
  // channels: every value is checked, every root tried, over each channel's ring.
  const std::vector<std::string> env = {
      "TUTTI_DEBUG=INFO", std::string("TUTTI_TOPO_FILE=") + TUTTI_TOPO_FIXTURES + "/dgx1-v100.xml",
      "HOST_CUDA_PCI_BUS_IDS=0000:06:00.0 0000:07:00.0 0000:0a:00.0 0000:0b:00.0"};
  for (const std::string collective :
       {"allreduce", "reducescatter", "allgather", "broadcast", "reduce"}) {
    INFO(collective);
    auto r = bench({collective, "--ranks", "4", "-b", "8", "-e", "2M", "-f", "64", "-n", "2", "-w",
                    "1", "-r", "all", "--device", "cuda"},
                   env);
    checkedRows(r, collective == "broadcast" || collective == "reduce" ? 4 * 4u : 4u);
    CHECK(r.err.find("rank 0 joined the device ring of 4 ranks on device 0 (") !=
          std::string::npos);
    CHECK(r.err.find("rank 3 joined the device ring of 4 ranks on device 3 (") !=
          std::string::npos);
    CHECK(r.err.find("; rings 0 3 2 1 | 0 3 1 2 | 0 1 2 3 | 0 2 1 3)") != std::string::npos);
  }
}

TEST_CASE("--device cuda, GPUs without peer access: their links' FIFOs lie in pinned host memory",
          "[shared-gpu]") {
  // Four processes, ranks 0 and 2 on stand-in device 0, 1 and 3 on device 1, which cannot map each
  // other's memory (HOST_CUDA_PEER_ACCESS=0: mapping it fails, as where GPUs lack peer access).
  // Every link of the ring 0 1 2 3 joins the two GPUs; of the tree (0's children 1 and 2, 1's
  // child 3), the inboxes of 0 and 1 have a writer on the other GPU, those of 2 and 3 do not.
  const std::string inHost = "'s GPU cannot reach this one's memory (no peer access)";
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {"ring", {"rank 0: rank 3", "rank 1: rank 0", "rank 2: rank 1", "rank 3: rank 2"}},
      {"tree", {"rank 0: rank 1", "rank 1: rank 0"}}};
  for (const auto& [algo, hosted] : runs) {
    INFO(algo);
    auto r = bench({"allreduce", "--ranks", "4", "-b", "8", "-e", "1M", "-f", "32", "-n", "2", "-w",
                    "1", "--device", "cuda"},
                   {"TUTTI_DEBUG=INFO", "HOST_CUDA_PEER_ACCESS=0", "TUTTI_ALGO=" + algo});
    checkedRows(r, 4);
    CHECK(r.err.find("joined the device " + algo) != std::string::npos);
    for (const std::string& link : hosted) CHECK(r.err.find(link + inHost) != std::string::npos);
    if (algo == "tree") {
      CHECK(r.err.find("rank 2: rank 0" + inHost) == std::string::npos);
      CHECK(r.err.find("rank 3: rank 1" + inHost) == std::string::npos);
    }
  }
}

TEST_CASE("-J and --csv hold the table; --compare and --min-busbw gate", "[bench][json]") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("tutti-bench-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string json = dir + "/run.json", csv = dir + "/run.csv";
  const std::vector<std::string> sweep = {"--ranks", "2", "-b", "8", "-e", "32K",
                                          "-f",      "8", "-n", "3", "-w", "1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"reducescatter"};
    args.insert(args.end(), sweep.begin(), sweep.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return bench(args);
  };

  auto r = with({"-J", json, "--csv", csv, "--plot", dir + "/run.svg"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto table = tutti::test::parseTable(r.out);
  REQUIRE(table);
  std::ifstream in(json);
  auto document = nlohmann::json::parse(in);
  CHECK(document["configuration"]["collective"] == "reducescatter");
  CHECK(document["machine"]["cores"].get<int>() > 0);
  REQUIRE(document["rows"].size() == table->rows.size());
  for (size_t i = 0; i < table->rows.size(); ++i) {
    const auto& row = document["rows"][i];
    CHECK(row["bytes"] == table->rows[i].bytes);
    CHECK(row["in_place"]["busbw_gbps"].get<double>() ==
          Approx(table->rows[i].inPlace.busbw).margin(0.006));
    CHECK(row["out_of_place"]["wrong"] == 0);
  }
  CHECK(document["summary"]["avg_busbw_gbps"].get<double>() ==
        Approx(table->avgBusBw).epsilon(1e-4));
  CHECK(tutti::test::splitLines(slurp(csv)).size() >= 1 + 2 * table->rows.size());
  CHECK(slurp(dir + "/run.svg").find("<polyline") != std::string::npos);

  auto same = with({"--compare", json, "--min-ratio", "0"});
  CHECK(same.status == 0);
  CHECK(same.out.find("   ratio\n") != std::string::npos);
  auto gated = with({"--compare", json, "--min-ratio", "1000"});
  CHECK(gated.status == 1);
  CHECK(gated.err.find("below --min-ratio 1000") != std::string::npos);
  // A baseline of other sizes compares nothing: the gate fails rather than pass every row.
  auto elsewhere = bench({"reducescatter", "--ranks", "2", "-b", "64K", "-e", "64K", "-n", "3",
                          "-w", "1", "--compare", json, "--min-ratio", "0"});
  CHECK(elsewhere.status == 1);
  CHECK(elsewhere.err.find("--compare " + json +
                           ": no row of this run has one there to compare with") !=
        std::string::npos);
  CHECK(with({"--min-busbw", "1e-9"}).status == 0);
  auto slow = with({"--min-busbw", "1e6"});
  CHECK(slow.status == 1);
  CHECK(slow.err.find("below --min-busbw") != std::string::npos);
  auto missing = with({"--compare", dir + "/none.json"});
  CHECK(missing.status == 2);
  CHECK(missing.out.empty());
  std::filesystem::remove_all(dir);
}
