// The data path between this rank and one peer over UCP tagged messages: one endpoint (peer error
// handling on), `slots` send slots and `slots` receive slots.
//
// Messages: message k from rank s travels with the UCP tag data(s, k) (ucx_tags.hpp) and carries
// [Tag: 24 bytes][payload]; the receiver's slot k % slots has a receive for exactly that tag posted
// before the sender may send k, so UCX never holds a data message unexpected, and tag matching
// puts each message in its slot whatever order the lanes deliver in: tryPeek returns them in
// posting order. Each slot keeps 40 bytes in front of that header, so that the payload starts
// 64-byte aligned (kernels use vector loads on it).
//
// Flow control: the receiver releases slots in order and tells the sender how many it has
// released, in the UCP tag of an empty credit message (credit(r, count)), at least every
// `slots / 2` releases: the sender sends message k only once k < credited + slots. So at most
// `slots` messages are in flight per direction. The first credit (count 0) is the hello that
// connect() waits for: the peer's receives are posted.
//
// Leaving: a rank that destroys its transport sends every peer a bye counting the messages it
// sent; the peer answers with a got once all of them have arrived (UCX completes a rendezvous
// receive only after its sender has answered the receiver's request and announced the data's
// arrival: closing the sender's endpoint before that fails the receive). The leaver closes once,
// for every peer, its messages have all arrived (released as credits say, or answered), or the
// peer has said bye itself (it needs nothing more), or the link has failed.
//
// Failure: UCP's error callback for the endpoint (the peer died or closed it) or a failed send
// marks the link failed; tryAcquire then throws kRemote naming the peer, and so does tryPeek once
// the messages that arrived before the failure are consumed. UCX's shared-memory transports notice
// a dead peer only at a keepalive round (every 20 s by default; never one in the same process), so
// there the runtime's peer watch is what finds it; a transport without peer error handling at all
// gets endpoints without (the transport's connect() falls back), and the same holds.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "transport/transport.hpp"

namespace tutti::transport::ucx {

class UcxLink {
 public:
  // `what` names the peer in messages: "rank 3 (host:pid)". A credit's arrival adds the link to
  // *creditReposts, a bye's to *byesToAnswer.
  UcxLink(ucp_worker_h worker, int rank, int peer, std::string what, size_t slotBytes, int slots,
          std::vector<UcxLink*>* creditReposts, std::vector<UcxLink*>* byesToAnswer);
  ~UcxLink();
  UcxLink(const UcxLink&) = delete;
  UcxLink& operator=(const UcxLink&) = delete;

  // Creates the endpoint to `address` (the peer's worker address bytes), with UCP's peer error
  // handling when `peerErrors`, and posts the receives; UCX's status (UCS_ERR_UNREACHABLE: no
  // transport of this worker reaches the peer in that mode).
  ucs_status_t open(const std::vector<uint8_t>& address, bool peerErrors);

  SendConn& sender() { return sender_; }
  RecvConn& receiver() { return receiver_; }

  // Sends the hello (credit 0).
  void sayHello();
  // True once the peer's hello has arrived; throws when the link has failed.
  bool heardHello();
  // Sends (data and credits) not yet complete.
  size_t sendsInFlight() const { return sendsInFlight_; }
  // Posts the credit receive again once its credit has arrived (the transport does it for the
  // links its callback listed); credits are taken as they come, or UCX keeps them unexpected.
  void postCreditReceive();
  // Leaving: sayBye() tells the peer how many messages this rank sent it; doneWithPeer() is true
  // once they have all arrived (the peer released them, or answered the bye), the peer has said
  // bye itself, or the link has failed.
  void sayBye();
  bool doneWithPeer() const;
  // Answers the peer's bye once every message it counts has arrived; true when answered (or there
  // is nothing to answer any more: the link failed, or this rank is closing it).
  bool answerBye();
  // Closing: startClose() closes the endpoint, closing() is true until that has completed (the
  // caller progresses the worker meanwhile, reposting credit receives: credits still arriving are
  // taken); cancelReceives(), last, is true while some receive could not be cancelled yet.
  void startClose();
  bool closing();
  bool cancelReceives();

 private:
  struct SendSlot {
    UcxLink* link = nullptr;
    bool busy = false;  // its send has not completed: the slot is UCP's
  };
  // The receive of the peer's bye, or of its got.
  struct Notice {
    UcxLink* link = nullptr;
    void* request = nullptr;  // the posted receive while it is pending
    bool pending = false;
    std::optional<ucp_tag_t> tag;  // the sender's tag, once it has arrived
  };
  struct RecvSlot {
    UcxLink* link = nullptr;
    void* request = nullptr;  // the posted receive while it is pending
    bool complete = false;
    ucs_status_t status = UCS_OK;
    size_t length = 0;
  };

  class Sender final : public SendConn {
   public:
    explicit Sender(UcxLink& link) : link_(link) {}
    size_t slotBytes() const override { return link_.slotBytes_; }
    void* tryAcquire() override;
    void post(size_t bytes, const Tag& tag) override;

   private:
    UcxLink& link_;
  };

  class Receiver final : public RecvConn {
   public:
    explicit Receiver(UcxLink& link) : link_(link) {}
    size_t slotBytes() const override { return link_.slotBytes_; }
    const void* tryPeek(Envelope* got) override;
    void release() override;

   private:
    UcxLink& link_;
  };

  static void onError(void* arg, ucp_ep_h ep, ucs_status_t status);
  static void onDataSent(void* request, ucs_status_t status, void* user);
  static void onEmptySent(void* request, ucs_status_t status, void* user);
  static void onReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                         void* user);
  static void onCredit(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                       void* user);
  static void onNotice(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                       void* user);

  std::byte* sendSlot(uint64_t k) const;
  std::byte* recvSlot(uint64_t k) const;
  void throwIfFailed() const;
  // Keeps the first failure: "ucx: <what> (<UCX's text>) (seen by rank <rank>)".
  void fail(ucs_status_t status, const std::string& what);
  void failSend(ucs_status_t status);
  void postReceive(uint64_t k);
  void creditArrived(ucp_tag_t tag);
  void sendCredit();
  // An empty message with `tag` (credit, bye, got).
  void sendEmpty(ucp_tag_t tag);
  void postNotice(Notice& notice, ucp_tag_t tag);

  const int rank_;
  const int peer_;
  const std::string what_;
  const size_t slotBytes_;
  const uint64_t slots_;
  const size_t stride_;  // bytes per slot: the header area, then slotBytes_, rounded to 64
  ucp_worker_h worker_;
  std::vector<UcxLink*>* creditReposts_;
  std::vector<UcxLink*>* byesToAnswer_;
  ucp_ep_h ep_ = nullptr;
  void* closeRequest_ = nullptr;
  std::optional<Error> failure_;
  size_t sendsInFlight_ = 0;
  Sender sender_{*this};
  Receiver receiver_{*this};

  // Sending: messages [0, posted_) sent; the peer has released [0, credited_).
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> sendMemory_;
  std::vector<SendSlot> sendSlots_;
  uint64_t posted_ = 0;
  uint64_t credited_ = 0;
  bool acquired_ = false;
  // The credit receive: posted (its request, once ucp_tag_recv_nbx has returned) or not.
  bool creditPosted_ = false;
  void* creditRequest_ = nullptr;
  bool helloHeard_ = false;
  // Leaving: the peer's bye and got, and whether this rank has answered the bye.
  Notice bye_;
  Notice got_;
  bool answered_ = false;

  // Receiving: message consumed_ is the next tryPeek returns; released counts told the sender.
  std::unique_ptr<std::byte, Free> recvMemory_;
  std::vector<RecvSlot> recvSlots_;
  uint64_t consumed_ = 0;
  uint64_t toldConsumed_ = 0;
  bool peeked_ = false;
};

}  // namespace tutti::transport::ucx
