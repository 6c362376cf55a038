#include "runtime/bootstrap/pmix_share.hpp"

#include <pmix.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "base/error.hpp"
#include "base/log.hpp"

namespace tutti::bootstrap {
namespace {

constexpr const char* kKey = "tutti.rendezvous";  // rank 0's "ADDRESS SECRET-HEX"

[[noreturn]] void fail(pmix_status_t status, const std::string& what) {
  raise(status == PMIX_ERR_TIMEOUT ? ErrorCode::kTimeout : ErrorCode::kSystem,
        "bootstrap through the launcher's PMIx server: {}: {}", what, PMIx_Error_string(status));
}

// PMIx_Init for the time of the exchange; PMIx counts inits, so an MPI library's own is untouched.
class PmixSession {
 public:
  PmixSession() {
    if (const pmix_status_t status = PMIx_Init(&me_, nullptr, 0); status != PMIX_SUCCESS)
      fail(status, "PMIx_Init (set TUTTI_ADDR, TUTTI_PORT and TUTTI_SECRET to go without it)");
  }
  ~PmixSession() { PMIx_Finalize(nullptr, 0); }
  PmixSession(const PmixSession&) = delete;
  PmixSession& operator=(const PmixSession&) = delete;

  const pmix_proc_t& me() const { return me_; }

 private:
  pmix_proc_t me_{};
};

void publish(const std::string& text) {
  pmix_value_t value;
  PMIX_VALUE_LOAD(&value, text.c_str(), PMIX_STRING);  // copies the string
  const pmix_status_t status = PMIx_Put(PMIX_GLOBAL, kKey, &value);
  PMIX_VALUE_DESTRUCT(&value);
  if (status != PMIX_SUCCESS) fail(status, "PMIx_Put");
  if (const pmix_status_t committed = PMIx_Commit(); committed != PMIX_SUCCESS)
    fail(committed, "PMIx_Commit");
}

void fence(const pmix_proc_t& me, std::chrono::milliseconds timeout) {
  pmix_proc_t everyone;
  PMIX_PROC_LOAD(&everyone, me.nspace, PMIX_RANK_WILDCARD);
  bool collect = true;
  int seconds = static_cast<int>(
      std::clamp<int64_t>((timeout.count() + 999) / 1000, 1, std::numeric_limits<int>::max()));
  pmix_info_t info[2];
  PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &seconds, PMIX_INT);
  const pmix_status_t status = PMIx_Fence(&everyone, 1, info, 2);
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
  if (status != PMIX_SUCCESS) fail(status, "PMIx_Fence");
}

std::string rank0Text(const pmix_proc_t& me) {
  pmix_proc_t root;
  PMIX_PROC_LOAD(&root, me.nspace, 0);
  pmix_value_t* value = nullptr;
  if (const pmix_status_t status = PMIx_Get(&root, kKey, nullptr, 0, &value);
      status != PMIX_SUCCESS)
    fail(status, fmt::format("PMIx_Get of rank 0's {}", kKey));
  std::string text;
  const bool isString = value->type == PMIX_STRING && value->data.string;
  if (isString) text = value->data.string;
  PMIX_VALUE_RELEASE(value);
  if (!isString) raise(ErrorCode::kRemote, "rank 0's {} in PMIx is not a string", kKey);
  return text;
}

}  // namespace

bool pmixBuilt() {
  return true;
}

void shareThroughPmix(LaunchEnv& env, std::chrono::milliseconds timeout) {
  PmixSession session;
  const pmix_proc_t& me = session.me();
  if (static_cast<int64_t>(me.rank) != env.rank)
    raise(ErrorCode::kInvalidArgument,
          "the launcher's PMIx server says this is rank {} of namespace {}, its {} variables say "
          "rank {}",
          me.rank, me.nspace, env.source, env.rank);
  if (env.rank == 0) {
    if (env.addr.empty()) env.addr = chooseAddress(nullptr).host();
    if (!env.secret.present) env.secret = Secret::random();
    publish(env.addr + " " + env.secret.hex());
  }
  fence(me, timeout);
  if (env.rank == 0) return;
  const std::string text = rank0Text(me);
  const size_t space = text.find(' ');
  const auto secret =
      space == std::string::npos ? std::nullopt : Secret::fromHex(text.substr(space + 1));
  if (space == 0 || !secret)
    raise(ErrorCode::kRemote, "rank 0's {} in PMIx is malformed ({} bytes)", kKey, text.size());
  if (env.addr.empty()) env.addr = text.substr(0, space);
  if (!env.secret.present) env.secret = *secret;
  log::info("bootstrap: rendezvous {} and the job's secret from rank 0 through PMIx", env.addr);
}

}  // namespace tutti::bootstrap
