#include "transport/ucx/ucx_link.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/log.hpp"
#include "transport/ucx/ucx_tags.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace tutti::transport::ucx {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kPayloadOffset = kAlign;
constexpr size_t kHeaderOffset = kPayloadOffset - sizeof(Tag);

std::byte* allocateSlots(uint64_t slots, size_t stride) {
  void* p = std::aligned_alloc(kAlign, slots * stride);
  if (!p) raise(ErrorCode::kSystem, "ucx: cannot allocate {} slots of {} bytes", slots, stride);
  return static_cast<std::byte*>(p);
}

// A nbx call's result: true when the operation completed at once (the callback will not run);
// false while it is pending (*request is the request); an error status for an immediate failure.
ucs_status_t startedAs(ucs_status_ptr_t result, void** request) {
  if (result == nullptr) return UCS_OK;
  if (UCS_PTR_IS_ERR(result)) return UCS_PTR_STATUS(result);
  *request = result;
  return UCS_INPROGRESS;
}

// A receive's parameters: its callback always runs (UCX 1.13 leaves the sender's tag out of the
// receive info of an immediate completion), possibly before ucp_tag_recv_nbx returns.
ucp_request_param_t receiveParam(ucp_tag_recv_nbx_callback_t callback, void* user) {
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = callback;
  param.user_data = user;
  return param;
}

}  // namespace

void UcxLink::Free::operator()(std::byte* p) const {
  std::free(p);
}

UcxLink::UcxLink(ucp_worker_h worker, int rank, int peer, std::string what, size_t slotBytes,
                 int slots, std::vector<UcxLink*>* creditReposts,
                 std::vector<UcxLink*>* byesToAnswer)
    : rank_(rank),
      peer_(peer),
      what_(std::move(what)),
      slotBytes_(slotBytes),
      slots_(static_cast<uint64_t>(slots)),
      stride_((kPayloadOffset + slotBytes + kAlign - 1) / kAlign * kAlign),
      worker_(worker),
      creditReposts_(creditReposts),
      byesToAnswer_(byesToAnswer),
      sendMemory_(allocateSlots(slots_, stride_)),
      sendSlots_(slots_, SendSlot{this, false}),
      recvMemory_(allocateSlots(slots_, stride_)),
      recvSlots_(slots_) {
  for (RecvSlot& slot : recvSlots_) slot.link = this;
}

ucs_status_t UcxLink::open(const std::vector<uint8_t>& address, bool peerErrors) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  params.err_mode = peerErrors ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  if (peerErrors) {
    params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_handler.cb = &UcxLink::onError;
    params.err_handler.arg = this;
  }
  const ucs_status_t status = ucp_ep_create(worker_, &params, &ep_);
  if (status != UCS_OK) return status;
  for (uint64_t k = 0; k < slots_; ++k) postReceive(k);
  postCreditReceive();
  postNotice(bye_, byeTag(peer_, 0));
  postNotice(got_, gotTag(peer_, 0));
  return UCS_OK;
}

UcxLink::~UcxLink() = default;

std::byte* UcxLink::sendSlot(uint64_t k) const {
  return sendMemory_.get() + (k % slots_) * stride_;
}

std::byte* UcxLink::recvSlot(uint64_t k) const {
  return recvMemory_.get() + (k % slots_) * stride_;
}

void UcxLink::throwIfFailed() const {
  if (failure_) throw *failure_;
}

void UcxLink::fail(ucs_status_t status, const std::string& what) {
  if (failure_) return;
  failure_ = Error(ErrorCode::kRemote, fmt::format("ucx: {} ({}) (seen by rank {})", what,
                                                   ucs_status_string(status), rank_));
}

void UcxLink::failSend(ucs_status_t status) {
  fail(status, fmt::format("a send to {} failed", what_));
}

void UcxLink::onError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* link = static_cast<UcxLink*>(arg);
  link->fail(status, fmt::format("{} closed the connection", link->what_));
}

// ---- sending ----

void UcxLink::onDataSent(void* request, ucs_status_t status, void* user) {
  auto* slot = static_cast<SendSlot*>(user);
  slot->busy = false;
  --slot->link->sendsInFlight_;
  if (status != UCS_OK) slot->link->failSend(status);
  ucp_request_free(request);
}

void* UcxLink::Sender::tryAcquire() {
  UcxLink& l = link_;
  l.throwIfFailed();
  if (l.posted_ - l.credited_ >= l.slots_) {
    l.postCreditReceive();  // takes credits that arrived while none was posted
    if (l.posted_ - l.credited_ >= l.slots_) return nullptr;
  }
  if (l.sendSlots_[l.posted_ % l.slots_].busy) return nullptr;
  l.acquired_ = true;
  return l.sendSlot(l.posted_) + kPayloadOffset;
}

void UcxLink::Sender::post(size_t bytes, const Tag& tag) {
  UcxLink& l = link_;
  if (!l.acquired_)
    raise(ErrorCode::kInvalidUsage, "ucx: post to {} without a slot from tryAcquire", l.what_);
  if (bytes > l.slotBytes_)
    raise(ErrorCode::kInvalidUsage, "ucx: post of {} bytes to {} exceeds the slot size {}", bytes,
          l.what_, l.slotBytes_);
  l.acquired_ = false;
  // The header in the sender's byte order: UCX joins only hosts of one architecture.
  std::byte* message = l.sendSlot(l.posted_) + kHeaderOffset;
  std::memcpy(message, &tag, sizeof(tag));
  SendSlot& slot = l.sendSlots_[l.posted_ % l.slots_];
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = &UcxLink::onDataSent;
  param.user_data = &slot;
  // Counted before the call, in case its callback runs before it returns.
  slot.busy = true;
  ++l.sendsInFlight_;
  void* request = nullptr;
  const ucs_status_t status = startedAs(
      ucp_tag_send_nbx(l.ep_, message, sizeof(tag) + bytes, dataTag(l.rank_, l.posted_), &param),
      &request);
  ++l.posted_;
  if (status != UCS_INPROGRESS) {  // done at once: no callback
    slot.busy = false;
    --l.sendsInFlight_;
    if (status != UCS_OK) l.failSend(status);  // thrown by the next tryAcquire
  }
}

void UcxLink::onEmptySent(void* request, ucs_status_t status, void* user) {
  auto* link = static_cast<UcxLink*>(user);
  --link->sendsInFlight_;
  if (status != UCS_OK) link->failSend(status);
  ucp_request_free(request);
}

void UcxLink::sendCredit() {
  sendEmpty(creditTag(rank_, consumed_));
  toldConsumed_ = consumed_;
}

void UcxLink::sendEmpty(ucp_tag_t tag) {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = &UcxLink::onEmptySent;
  param.user_data = this;
  ++sendsInFlight_;  // before the call, as in post()
  void* request = nullptr;
  const ucs_status_t status = startedAs(ucp_tag_send_nbx(ep_, nullptr, 0, tag, &param), &request);
  if (status != UCS_INPROGRESS) {
    --sendsInFlight_;
    if (status != UCS_OK) failSend(status);
  }
}

void UcxLink::sayHello() {
  sendCredit();
}

// ---- credits ----

void UcxLink::onCredit(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                       void* user) {
  auto* link = static_cast<UcxLink*>(user);
  link->creditPosted_ = false;
  link->creditRequest_ = nullptr;
  if (status == UCS_OK) {
    link->creditArrived(info->sender_tag);
    link->creditReposts_->push_back(link);
  }
  ucp_request_free(request);
}

void UcxLink::creditArrived(ucp_tag_t tag) {
  credited_ = std::max(credited_, widen(credited_, tag));
  helloHeard_ = true;
}

void UcxLink::postCreditReceive() {
  // Credits that queued up while no receive was posted complete at once: take them all.
  while (!creditPosted_ && !failure_) {
    creditPosted_ = true;
    const ucp_request_param_t param = receiveParam(&UcxLink::onCredit, this);
    void* request = nullptr;
    const ucs_status_t status = startedAs(
        ucp_tag_recv_nbx(worker_, nullptr, 0, creditTag(peer_, 0), kAnyCounterMask, &param),
        &request);
    if (status != UCS_INPROGRESS) {
      creditPosted_ = false;
      fail(status, fmt::format("receiving credits from {} failed", what_));
    } else if (creditPosted_) {
      creditRequest_ = request;  // else its callback has run already
    }
  }
}

bool UcxLink::heardHello() {
  throwIfFailed();
  postCreditReceive();
  return helloHeard_;
}

// ---- receiving ----

void UcxLink::onReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                         void* user) {
  auto* slot = static_cast<RecvSlot*>(user);
  slot->request = nullptr;
  slot->complete = true;
  slot->status = status;
  slot->length = status == UCS_OK ? info->length : 0;
  ucp_request_free(request);
}

void UcxLink::postReceive(uint64_t k) {
  RecvSlot& slot = recvSlots_[k % slots_];
  slot.complete = false;
  const ucp_request_param_t param = receiveParam(&UcxLink::onReceived, &slot);
  void* request = nullptr;
  const ucs_status_t status =
      startedAs(ucp_tag_recv_nbx(worker_, recvSlot(k) + kHeaderOffset, sizeof(Tag) + slotBytes_,
                                 dataTag(peer_, k), kExactMask, &param),
                &request);
  if (status != UCS_INPROGRESS) {
    slot.complete = true;
    slot.status = status;
  } else if (!slot.complete) {
    slot.request = request;  // else its callback has run already
  }
}

const void* UcxLink::Receiver::tryPeek(Envelope* got) {
  UcxLink& l = link_;
  const RecvSlot& slot = l.recvSlots_[l.consumed_ % l.slots_];
  if (!slot.complete) {
    l.throwIfFailed();
    return nullptr;
  }
  if (slot.status == UCS_ERR_MESSAGE_TRUNCATED)
    raise(ErrorCode::kRemote,
          "ucx: {} sent a message of more than the slot size {} (seen by rank {})", l.what_,
          l.slotBytes_, l.rank_);
  if (slot.status != UCS_OK)
    raise(ErrorCode::kRemote, "ucx: receiving from {} failed: {} (seen by rank {})", l.what_,
          ucs_status_string(slot.status), l.rank_);
  if (slot.length < sizeof(Tag))
    raise(ErrorCode::kRemote, "ucx: {} sent a message of {} bytes, shorter than its header",
          l.what_, slot.length);
  const std::byte* message = l.recvSlot(l.consumed_);
  got->bytes = slot.length - sizeof(Tag);
  std::memcpy(&got->tag, message + kHeaderOffset, sizeof(Tag));
  l.peeked_ = true;
  return message + kPayloadOffset;
}

void UcxLink::Receiver::release() {
  UcxLink& l = link_;
  if (!l.peeked_)
    raise(ErrorCode::kInvalidUsage, "ucx: release of a slot from {} that was not peeked", l.what_);
  l.peeked_ = false;
  const uint64_t k = l.consumed_++;
  // The slot's next receive is posted before the credit that lets the sender use it.
  l.postReceive(k + l.slots_);
  if (l.consumed_ - l.toldConsumed_ >= std::max<uint64_t>(1, l.slots_ / 2) && !l.failure_)
    l.sendCredit();
}

// ---- leaving ----

void UcxLink::onNotice(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                       void* user) {
  auto* notice = static_cast<Notice*>(user);
  notice->pending = false;
  notice->request = nullptr;
  if (status == UCS_OK) {
    notice->tag = info->sender_tag;
    UcxLink* link = notice->link;
    if (notice == &link->bye_) link->byesToAnswer_->push_back(link);
  }
  ucp_request_free(request);
}

void UcxLink::postNotice(Notice& notice, ucp_tag_t tag) {
  notice.link = this;
  notice.pending = true;
  const ucp_request_param_t param = receiveParam(&UcxLink::onNotice, &notice);
  void* request = nullptr;
  const ucs_status_t status =
      startedAs(ucp_tag_recv_nbx(worker_, nullptr, 0, tag, kAnyCounterMask, &param), &request);
  if (status != UCS_INPROGRESS) {
    notice.pending = false;
    fail(status, fmt::format("receiving from {} failed", what_));
  } else if (notice.pending) {
    notice.request = request;  // else its callback has run already
  }
}

void UcxLink::sayBye() {
  if (!failure_) sendEmpty(byeTag(rank_, posted_));
}

bool UcxLink::doneWithPeer() const {
  // Released messages have arrived: the peer's credits may have told all already.
  return failure_ || bye_.tag || credited_ >= posted_ ||
         (got_.tag && widen(credited_, *got_.tag) >= posted_);
}

bool UcxLink::answerBye() {
  if (answered_ || failure_ || !ep_) return true;  // !ep_: this rank is closing
  // The peer sent at most `slots` messages beyond those released, each into its own slot.
  const uint64_t sent = widen(consumed_, *bye_.tag);
  for (uint64_t k = consumed_; k < sent; ++k)
    if (!recvSlots_[k % slots_].complete) return false;
  sendEmpty(gotTag(rank_, sent));
  answered_ = true;
  return true;
}

// ---- closing ----

void UcxLink::startClose() {
  // By force: the peer has what it needs (doneWithPeer), and a flushing close would wait for its
  // progress, which may never come (it is gone, or busy elsewhere).
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  if (!ep_) return;
  const ucs_status_ptr_t result = ucp_ep_close_nbx(ep_, &param);
  ep_ = nullptr;
  if (result && !UCS_PTR_IS_ERR(result)) closeRequest_ = result;
}

bool UcxLink::closing() {
  if (!closeRequest_) return false;
  if (ucp_request_check_status(closeRequest_) == UCS_INPROGRESS) return true;
  ucp_request_free(closeRequest_);
  closeRequest_ = nullptr;
  return false;
}

bool UcxLink::cancelReceives() {
  for (RecvSlot& slot : recvSlots_)
    if (slot.request) ucp_request_cancel(worker_, slot.request);
  if (creditRequest_) ucp_request_cancel(worker_, creditRequest_);
  for (const Notice* notice : {&bye_, &got_})
    if (notice->request) ucp_request_cancel(worker_, notice->request);
  return std::any_of(recvSlots_.begin(), recvSlots_.end(),
                     [](const RecvSlot& slot) { return slot.request != nullptr; }) ||
         creditRequest_ != nullptr || bye_.request != nullptr || got_.request != nullptr;
}

}  // namespace tutti::transport::ucx
