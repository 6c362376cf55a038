// tuttirun, run for real ($TUTTIRUN) on small shell commands.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include "subprocess.hpp"

namespace {

using tutti::test::run;
using tutti::test::splitLines;

std::vector<std::string> tuttirun(std::vector<std::string> args) {
  args.insert(args.begin(), tutti::test::requiredEnv("TUTTIRUN"));
  return args;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("tuttirun gives every rank its own TUTTI_* environment", "[tuttirun]") {
  auto r = run(tuttirun({"-n", "3", "-x", "EXTRA=hello world", "sh", "-c",
                         "echo $TUTTI_RANK $TUTTI_WORLD_SIZE $TUTTI_LOCAL_RANK $TUTTI_ADDR "
                         "$TUTTI_PORT $TUTTI_SECRET \"$EXTRA\""}));
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto lines = splitLines(r.out);
  REQUIRE(lines.size() == 3);
  std::set<int> ranks;
  std::set<std::string> ports, secrets;
  for (const auto& line : lines) {
    std::istringstream in(line);
    int rank = -1, size = -1, local = -1, port = -1;
    std::string addr, secret, extra1, extra2;
    in >> rank >> size >> local >> addr >> port >> secret >> extra1 >> extra2;
    CHECK(size == 3);
    CHECK(local == rank);
    CHECK(addr == "127.0.0.1");
    CHECK(port > 0);
    CHECK(port < 65536);
    CHECK(secret.size() == 32);
    CHECK(secret.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(extra1 + " " + extra2 == "hello world");
    ranks.insert(rank);
    ports.insert(std::to_string(port));
    secrets.insert(secret);
  }
  CHECK(ranks == std::set<int>{0, 1, 2});
  CHECK(ports.size() == 1);
  CHECK(secrets.size() == 1);

  auto again = run(tuttirun({"-n", "1", "sh", "-c", "echo $TUTTI_SECRET"}));
  REQUIRE(again.status == 0);
  CHECK(splitLines(again.out).at(0) != *secrets.begin());  // a fresh secret per job
}

TEST_CASE("tuttirun refuses -x for the variables it sets itself", "[tuttirun]") {
  for (const std::string name : {"TUTTI_RANK", "TUTTI_WORLD_SIZE", "TUTTI_LOCAL_RANK", "TUTTI_ADDR",
                                 "TUTTI_PORT", "TUTTI_SECRET"}) {
    auto r = run(tuttirun({"-n", "2", "-x", name + "=1", "echo", "ran"}));
    INFO(name << ": " << r.err);
    CHECK(r.status == 2);
    CHECK(contains(r.err, "-x " + name + ": tuttirun sets it for each rank itself"));
    CHECK(r.out.find("ran") == std::string::npos);
  }
}

TEST_CASE("tuttirun ignores its own variables in its environment, with a warning", "[tuttirun]") {
  auto r = run({"env", "TUTTI_RANK=1", "TUTTI_WORLD_SIZE=5", tutti::test::requiredEnv("TUTTIRUN"),
                "-n", "2", "sh", "-c", "echo $TUTTI_RANK $TUTTI_WORLD_SIZE"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto lines = splitLines(r.out);
  CHECK(std::multiset<std::string>(lines.begin(), lines.end()) ==
        std::multiset<std::string>{"0 2", "1 2"});
  CHECK(contains(r.err, "tuttirun: TUTTI_RANK in the environment is ignored"));
  CHECK(contains(r.err, "tuttirun: TUTTI_WORLD_SIZE in the environment is ignored"));
}

TEST_CASE("tuttirun passes the command's own flags through", "[tuttirun]") {
  for (bool separator : {true, false}) {
    std::vector<std::string> args = {"-n", "2", "sh", "-c", "echo \"[$0] [$1]\"", "-n", "--prefix"};
    if (separator) args.insert(args.begin() + 2, "--");
    auto r = run(tuttirun(args));
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(splitLines(r.out) == std::vector<std::string>{"[-n] [--prefix]", "[-n] [--prefix]"});
  }
}

TEST_CASE("tuttirun --prefix prefixes every line of stdout and stderr", "[tuttirun]") {
  auto r = run(tuttirun(
      {"--prefix", "-n", "2", "sh", "-c", "echo one; echo two; echo oops >&2; printf tail"}));
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto out = splitLines(r.out);
  std::multiset<std::string> got(out.begin(), out.end());
  CHECK(got == std::multiset<std::string>{"[0] one", "[0] two", "[0] tail", "[1] one", "[1] two",
                                          "[1] tail"});
  auto err = splitLines(r.err);
  CHECK(std::multiset<std::string>(err.begin(), err.end()) ==
        std::multiset<std::string>{"[0] oops", "[1] oops"});
  // A rank's own lines keep their order.
  auto pos = [&](const std::string& line) { return r.out.find(line); };
  CHECK(pos("[1] one") < pos("[1] two"));
  CHECK(pos("[1] two") < pos("[1] tail"));
}

TEST_CASE("tuttirun exits with a failing rank's code and stops the others", "[tuttirun]") {
  auto r = run(tuttirun({"-n", "3", "--grace", "0.5", "sh", "-c",
                         "if [ $TUTTI_RANK = 1 ]; then exit 3; fi; sleep 30"}));
  CHECK(r.status == 3);
  CHECK(contains(r.err, "tuttirun: rank 1 (pid "));
  CHECK(contains(r.err, ") exited with code 3"));
  CHECK(r.seconds < 10);  // the sleeping siblings were killed after the grace period
}

TEST_CASE("tuttirun gives the other ranks the grace period to finish", "[tuttirun]") {
  auto r = run(tuttirun({"-n", "2", "--grace", "20", "sh", "-c",
                         "if [ $TUTTI_RANK = 0 ]; then exit 4; fi; sleep 0.3; echo finished"}));
  CHECK(r.status == 4);
  CHECK(r.out == "finished\n");
  CHECK(r.seconds < 10);
}

TEST_CASE("tuttirun reports a rank killed by a signal as 128 + signal", "[tuttirun]") {
  auto r = run(tuttirun({"-n", "2", "--grace", "0.5", "sh", "-c",
                         "if [ $TUTTI_RANK = 0 ]; then kill -9 $$; fi; sleep 30"}));
  CHECK(r.status == 137);
  CHECK(contains(r.err, "tuttirun: rank 0 (pid "));
  CHECK(contains(r.err, ") was killed by signal 9 (Killed)"));
  CHECK(r.seconds < 10);
}

TEST_CASE("tuttirun forwards SIGTERM to every rank", "[tuttirun]") {
  char pattern[] = "/tmp/tuttirun_test.XXXXXX";
  REQUIRE(mkdtemp(pattern) != nullptr);
  std::filesystem::path dir = pattern;
  tutti::test::Subprocess job(
      tuttirun({"-n", "2", "sh", "-c",
                "trap 'echo got TERM $TUTTI_RANK; exit 5' TERM; sleep 30 & touch " + dir.string() +
                    "/ready.$TUTTI_RANK; wait"}));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!(std::filesystem::exists(dir / "ready.0") && std::filesystem::exists(dir / "ready.1")) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(job.pid(), SIGTERM);
  auto r = job.wait(30);
  std::filesystem::remove_all(dir);
  CHECK(r.status == 5);
  auto out = splitLines(r.out);
  CHECK(std::set<std::string>(out.begin(), out.end()) ==
        std::set<std::string>{"got TERM 0", "got TERM 1"});
  CHECK(r.seconds < 20);
}

TEST_CASE("tuttirun leaves no stray processes of a failed job", "[tuttirun]") {
  // The background sleep holds the test's pipes: the run ends quickly only if it was killed.
  auto r = run(tuttirun({"-n", "1", "sh", "-c", "sleep 30 & exit 3"}));
  CHECK(r.status == 3);
  CHECK(r.seconds < 10);
}

TEST_CASE("tuttirun --timeout kills the job and exits 124", "[tuttirun]") {
  auto r = run(tuttirun({"-n", "2", "--timeout", "0.5", "sleep", "30"}));
  CHECK(r.status == 124);
  CHECK(contains(r.err, "timeout"));
  CHECK(r.seconds < 10);
}

TEST_CASE("tuttirun exits 127 when the program cannot be executed", "[tuttirun]") {
  auto r = run(tuttirun({"-n", "2", "tutti-no-such-program", "arg"}));
  CHECK(r.status == 127);
  CHECK(contains(r.err, "tutti-no-such-program"));
  CHECK(contains(r.err, "No such file or directory"));
}

TEST_CASE("tuttirun exits 0 when every rank does", "[tuttirun]") {
  auto r = run(tuttirun({"-n", "4", "true"}));
  CHECK(r.status == 0);
  CHECK(r.err.empty());
}

TEST_CASE("tuttirun rejects bad usage with exit status 2", "[tuttirun]") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"-n", "2"},                     // no program
           {"-n", "0", "true"},             // no ranks
           {"-n", "5000", "true"},          // too many
           {"true"},                        // -n missing
           {"-n", "2", "--bogus", "true"},  // unknown flag
           {"-n", "two", "true"},           // not a number
           {"-n", "2", "-x", "NOEQUALS", "true"},
           {"-n", "2", "--grace", "-1", "true"},
           {"-n", "2", "--grace", "nan", "true"},
           {"-n", "2", "--grace", "1e10", "true"},  // past where a clock's nanoseconds overflow
           {"-n", "2", "--timeout", "1e10", "true"},
       }) {
    auto r = run(tuttirun(args));
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    INFO(joined);
    CHECK(r.status == 2);
    CHECK(contains(r.err, "Usage: tuttirun"));
  }
}
