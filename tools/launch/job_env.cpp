// What every rank of a local job is told: where rank 0 listens, and the job's secret.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "tools/launch/launch.hpp"

namespace tutti::launch {

int findFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    close(fd);
    throw std::system_error(err, std::generic_category(), "bind 127.0.0.1:0");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::vector<std::pair<std::string, std::string>> rankEnvironment(const Options& options, int rank,
                                                                 int localRank, int port,
                                                                 const std::string& secret) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"TUTTI_RANK", std::to_string(rank)},
      {"TUTTI_WORLD_SIZE", std::to_string(options.nranks)},
      {"TUTTI_LOCAL_RANK", std::to_string(localRank)},
      {"TUTTI_ADDR", "127.0.0.1"},
      {"TUTTI_PORT", std::to_string(port)},
      {"TUTTI_SECRET", secret},
  };
  env.insert(env.end(), options.extraEnv.begin(), options.extraEnv.end());
  return env;
}

std::vector<std::pair<std::string, std::string>> elasticEnvironment(const std::string& dir,
                                                                    int replacement) {
  std::vector<std::pair<std::string, std::string>> env = {{"TUTTI_ELASTIC_DIR", dir}};
  if (replacement > 0)
    env.emplace_back("TUTTI_GROW_TOKEN_FILE",
                     dir + "/grow-" + std::to_string(replacement) + ".token");
  return env;
}

std::vector<std::string> launcherVariables() {
  auto variables = rankEnvironment(Options{}, 0, 0, 0, "");
  for (auto& variable : elasticEnvironment("", 1)) variables.push_back(variable);
  std::vector<std::string> names;
  for (const auto& variable : variables) names.push_back(variable.first);
  return names;
}

}  // namespace tutti::launch
