// The instance's event thread: delivers CQ notifications and asynchronous events.
//
// Callbacks never run inside a post or poll call: a consumer-serialised host stack may
// hold a spinlock across those (RNICPI L1351), and a callback that re-enters the library
// must not find the caller's locks held. Producers queue a small record and signal the
// thread; that happens only for armed CQs and for errors, never on the plain fast path.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "rnicpi/rnicpi.h"

namespace softrnic::engine {

class EventThread {
  public:
    // deliver() is run on the event thread for each record, in order.
    using Deliver = std::function<void(const struct QueuedEvent &)>;

    void start(Deliver deliver);
    void stop();  // joins; records still queued are dropped
    bool on_event_thread() const {
        return std::this_thread::get_id() == thread_id_.load(std::memory_order_acquire);
    }

    void post(const struct QueuedEvent &ev);
    // Returns when every record posted before the call has been delivered. No-op on the
    // event thread itself (a callback destroying its own CQ must not wait for itself).
    void drain();

  private:
    void run();
    Deliver deliver_;
    std::thread thread_;
    std::atomic<std::thread::id> thread_id_{};
    std::mutex mu_;
    std::condition_variable cv_;
    std::condition_variable done_cv_;
    std::deque<struct QueuedEvent> queue_;
    uint64_t posted_ = 0;
    uint64_t delivered_ = 0;
    bool stopping_ = false;
    bool running_ = false;
};

enum class EventKind : uint8_t { CqNotify, Async };

struct QueuedEvent {
    EventKind kind = EventKind::Async;
    // The object the event is about (CQ/QP/SRQ handle), checked for liveness at delivery so
    // nothing is delivered for an object destroyed in the meantime; nullptr for RNIC-wide.
    void *object = nullptr;
    uint8_t object_kind = 0;  // ObjKind value, 0 for none
    ri_event_record_t record{};
    ri_async_event_callback_t async_cb = nullptr;  // captured when queued (L2067-2071)
    uint32_t cq_handler_id = 0;
    ri_os_data_t cq_os_data = nullptr;
};

// "RI_EVENT_QP_LLQ_CONNECTION_RESET", "RI_WC_STATUS_WR_FLUSHED_ERROR": for log lines.
const char *async_event_name(ri_async_event_type_t t);
const char *wc_status_name(ri_wc_status_t s);

}  // namespace softrnic::engine
