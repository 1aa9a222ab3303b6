// A face's waitable event queue: the events, oldest first, in a ring that allocates nothing
// while it has room; the lock around them (a futex word, taken on every dequeue); an
// optional RNICPI CQ whose completions the face turns into its own events; and the wake-up
// machinery of a blocking wait (CQ arming, notification, bounded timed sleeps).
//
// The queue keeps the mechanics every face repeats (a DAT EVD today; an IT-API EVD, an IB
// Access Layer CQ and the Lane15 CI's event queue next); what the face's spec says about
// its events (their format, thresholds, overflow, CNO wake-ups) stays with the face.
// Members are public: the face holds `mu` across its own checks and the queue's calls,
// every call on the CQ included (the consumer-serialised view, RNICPI L1316-1363).
#pragma once

#include <rnicpi/rnicpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "base/futex_mutex.hpp"

namespace softrnic::api {

// Events oldest first: a ring sized when the queue is created or resized that grows only
// when full, so taking and adding events allocates nothing (a std::deque allocated and
// freed a block every few events). Caller holds the queue's lock.
template <class Event>
class EventRing {
  public:
    void reserve(size_t n) {
        if (n > buf_.size()) regrow(n);
    }
    size_t size() const { return count_; }
    bool empty() const { return count_ == 0; }
    const Event &front() const { return buf_[head_]; }
    void pop_front() {
        head_ = head_ + 1 == buf_.size() ? 0 : head_ + 1;
        --count_;
    }
    void push_back(const Event &e) { emplace_back() = e; }
    // A zeroed slot at the back, filled in place. An event assembled on the stack and
    // copied in is read back with wide loads over its narrow field stores, a store
    // forwarding stall on the completion-to-event path.
    Event &emplace_back() {
        if (count_ == buf_.size()) regrow(buf_.empty() ? 8 : buf_.size() * 2);
        size_t tail = head_ + count_;
        if (tail >= buf_.size()) tail -= buf_.size();
        ++count_;
        Event &slot = buf_[tail];
        slot = Event{};
        return slot;
    }
    // Takes back the event emplace_back just handed out.
    void pop_back() { --count_; }

  private:
    void regrow(size_t n) {
        std::vector<Event> grown(n);
        for (size_t i = 0; i < count_; ++i)
            grown[i] = buf_[(head_ + i) % buf_.size()];
        buf_.swap(grown);
        head_ = 0;
    }
    std::vector<Event> buf_;
    size_t head_ = 0;
    size_t count_ = 0;
};

template <class Event>
struct EventQueue {
    using Clock = std::chrono::steady_clock;
    using Lock = std::unique_lock<base::FutexMutex>;
    // The longest a waiter sleeps before it looks again: a lost wake-up delays it, never
    // hangs it.
    static constexpr std::chrono::milliseconds kMaxSleep{100};

    base::FutexMutex mu;
    std::condition_variable_any cv;
    EventRing<Event> q;
    ri_rnic_handle_t rnic = nullptr;
    ri_cq_handle_t cq = nullptr;  // null: only the face produces events
    uint64_t wake_seq = 0;        // advanced by notify()

    // Moves CQ completions into the ring while it holds fewer than `limit` events.
    // `convert(const ri_wc_t &, Event &)` fills a zeroed event and returns false when the
    // completion is to vanish (its object is gone). With `first` (the ring is then empty),
    // the oldest completion that converts becomes *first instead, the caller's own event,
    // which takes no ring slot: a dequeue of one event then fills the consumer's event in
    // place rather than a slot it copies out of. Returns whether *first was filled.
    // Caller holds `mu`.
    template <class Convert>
    [[gnu::always_inline]] bool drain_cq(size_t limit, Convert &&convert, Event *first = nullptr) {
        if (cq == nullptr) return false;
        constexpr uint_t kBatch = 16;
        bool filled = false;
        ri_wc_t wcs[kBatch];
        for (;;) {
            size_t room = limit > q.size() ? limit - q.size() : 0;
            if (first && !filled) ++room;  // *first takes no ring slot
            if (room == 0) return filled;
            uint_t n = static_cast<uint_t>(std::min<size_t>(room, kBatch));
            ri_err_data_t e = 0;
            if (ri_cq_poll(rnic, cq, wcs, &n, &e) != RI_RET_SUCCESS || n == 0) return filled;
            uint_t i = 0;
            if (first && !filled) {
                while (i < n && !filled) {
                    *first = Event{};
                    filled = convert(wcs[i++], *first);
                }
            }
            for (; i < n; ++i)
                if (!convert(wcs[i], q.emplace_back())) q.pop_back();
            if (n < kBatch) return filled;
        }
    }

    // Asks the CQ for a notification of its next completion (notifications are one-shot).
    // Caller holds `mu`.
    void arm() {
        if (cq == nullptr) return;
        ri_err_data_t e = 0;
        ri_cq_req_notification(rnic, cq, RI_CMPLT_NOTIFY_ANY, &e);
    }

    // A CQ notification: wakes every waiter, even one whose events are still in the CQ.
    // Caller holds `mu`.
    void notify() {
        ++wake_seq;
        cv.notify_all();
    }

    // Sleeps (releasing `lk`, a lock of `mu`) until a notify() after `seen` (the wake_seq
    // read before the caller armed the CQ and drained it once more), a change in the number
    // of queued events, `stop()`, or `deadline` (none: wait without one), and never longer
    // than kMaxSleep.
    template <class Stop>
    void sleep(Lock &lk, uint64_t seen, std::optional<Clock::time_point> deadline, Stop &&stop) {
        const size_t have = q.size();
        auto step = Clock::now() + kMaxSleep;
        if (deadline && *deadline < step) step = *deadline;
        cv.wait_until(lk, step, [&] { return wake_seq != seen || q.size() != have || stop(); });
    }
};

}  // namespace softrnic::api
