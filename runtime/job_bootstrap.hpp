// What a world and the communicators split from it share: the store, what keeps it served, the
// rendezvous address (TCP listens on the interface that routes there) and the job secret.
#pragma once

#include <memory>

#include "base/auth.hpp"
#include "base/socket.hpp"
#include "runtime/bootstrap/bootstrap.hpp"

namespace tutti::runtime {

struct JobBootstrap {
  std::shared_ptr<bootstrap::Store> store;
  std::shared_ptr<bootstrap::StoreServer> storeServer;  // when this rank hosts the rendezvous
  SockAddr rendezvous;
  Secret secret;
};

}  // namespace tutti::runtime
