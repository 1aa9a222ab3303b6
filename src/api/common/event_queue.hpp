// A face's waitable event queue: the events, oldest first, in a ring that allocates nothing
// while it has room; the lock around them (a futex word, taken on every dequeue); an
// optional RNICPI CQ whose completions the face turns into its own events; the wake-up
// machinery of a blocking wait (CQ arming, notification, bounded timed sleeps); and an
// optional descriptor the consumer can poll() instead of waiting (off unless enabled).
//
// The queue keeps the mechanics every face repeats (a DAT EVD today; an IT-API EVD, an IB
// Access Layer CQ and the Lane15 CI's event queue next); what the face's spec says about
// its events (their format, thresholds, overflow, CNO wake-ups) stays with the face.
// Members are public (but for the descriptor's state): the face holds `mu` across its own
// checks and the queue's calls, every call on the CQ included (the consumer-serialised
// view, RNICPI L1316-1363).
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

// The descriptor a face hands its consumer for poll() or select() (IT-API: an EVD created
// with IT_EVD_CREATE_FD is "identified as ready to read when a Notification occurs",
// L4538-L4544): an eventfd, readable while raised. It remembers whether it is raised, so a
// raise or a lower that changes nothing costs no system call; the consumer therefore never
// reads it (its readiness is the queue's to reset). Used under the queue's lock; the
// destructor closes it. Neither copyable nor movable, as the queue holding it.
class EventFd {
  public:
    EventFd() = default;
    ~EventFd();
    EventFd(const EventFd &) = delete;
    EventFd &operator=(const EventFd &) = delete;

    // Creates the eventfd (EFD_NONBLOCK | EFD_CLOEXEC), not readable. False (errno set)
    // when eventfd() fails.
    bool open();
    bool on() const { return fd_ >= 0; }
    int get() const { return fd_; }  // -1: never opened
    void raise() {
        if (!raised_) write_one();
    }
    void lower() {
        if (raised_) read_all();
    }
    // Whether descriptor `other` of this process still refers to this eventfd (a consumer
    // handed a dup() of it may have closed it, and the number may since name another
    // file). False when the kernel cannot tell (kcmp unavailable or denied).
    bool same_file(int other) const;

  private:
    void write_one();
    void read_all();
    int fd_ = -1;
    bool raised_ = false;
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
    // With the descriptor on, events left in the ring make it readable. Caller holds `mu`.
    template <class Convert>
    [[gnu::always_inline]] bool drain_cq(size_t limit, Convert &&convert, Event *first = nullptr) {
        if (cq == nullptr) return false;
        bool cq_emptied = false;
        const bool filled = poll_cq(limit, convert, first, cq_emptied);
        if (efd_.on()) [[unlikely]]
            fd_after_drain(cq_emptied);
        return filled;
    }

    // Asks the CQ for a notification of its next completion (notifications are one-shot).
    // Caller holds `mu`.
    void arm() {
        if (cq == nullptr) return;
        ri_err_data_t e = 0;
        ri_cq_req_notification(rnic, cq, RI_CMPLT_NOTIFY_ANY, &e);
    }

    // A CQ notification: wakes every waiter, even one whose events are still in the CQ,
    // and makes the descriptor readable. Caller holds `mu`.
    void notify() {
        ++wake_seq;
        cv.notify_all();
        if (efd_.on()) [[unlikely]] {
            cq_notified_ = true;
            efd_.raise();
        }
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

    // The waitable descriptor. While on, it is readable whenever the ring holds events or a
    // notify() came after the last drain_cq that found the CQ empty (the notified
    // completions may still be in the CQ); it stops being readable only in dequeued().
    // Spurious readiness (a notification whose completion a drain already took) lasts until
    // the consumer's next dequeue, which then finds nothing (IT_ERR_QUEUE_EMPTY, IT-API
    // L4838), as a wait may return without events (L5469-L5474). For completions to make it
    // readable, the face keeps its CQ armed: it arms in its notification handler and arms before
    // the drain_cq of a dequeue that may empty the ring (a completion after that drain then
    // notifies).

    // Gives the queue its descriptor: the face's create, before the queue is shared (fd()
    // is read without `mu`). False when eventfd() fails (errno set); a second call keeps the
    // descriptor the first made. The destructor closes it, so a face whose consumer may
    // close what it was handed (IT-API detaches the fd that way, L5065-L5066) hands out a
    // dup() of it: the queue never closes a number the process has since reused.
    bool enable_fd() {
        if (efd_.on()) return true;
        if (!efd_.open()) return false;
        if (!q.empty()) efd_.raise();
        return true;
    }
    int fd() const { return efd_.get(); }  // -1: off
    // Whether `other` still refers to this queue's descriptor (EventFd::same_file).
    bool fd_is(int other) const { return efd_.on() && efd_.same_file(other); }

    // For a face whose descriptor is readable by its own rule rather than "the ring holds
    // events" (IT-API: an EVD's fd is readable when the enabled EVD reaches its
    // notification criteria, L4538-L4544): the face raises and lowers it itself and wakes
    // waiters with wake(), never calling queued(), notify() or dequeued(), which apply
    // the ring rule. Caller holds `mu`.
    void fd_ready(bool ready) {
        if (!efd_.on()) return;
        if (ready)
            efd_.raise();
        else
            efd_.lower();
    }
    // Wakes every waiter (a sleep() returns), leaving the descriptor alone. Caller holds `mu`.
    void wake() {
        ++wake_seq;
        cv.notify_all();
    }

    // After the face put events in `q` itself (push_back, emplace_back): wakes every waiter
    // and makes the descriptor readable. Caller holds `mu`.
    void queued() {
        cv.notify_all();
        if (efd_.on()) [[unlikely]]
            efd_.raise();
    }

    // After every dequeue by the consumer, one that found nothing included, once it has
    // taken its events (its drain_cq, pop_front): if the ring is now empty and no notify()
    // came after the last drain_cq that found the CQ empty, the descriptor stops being
    // readable. Without a CQ no completion can wait behind a notification, so an empty ring
    // suffices. Caller holds `mu`.
    void dequeued() {
        if (efd_.on()) [[unlikely]] {
            if (q.empty() && (!cq_notified_ || cq == nullptr)) efd_.lower();
        }
    }

  private:
    // drain_cq's loop; `cq_emptied`: a poll returned fewer completions than it asked for
    // (or failed), so nothing notified before it is still in the CQ.
    template <class Convert>
    [[gnu::always_inline]] bool poll_cq(size_t limit, Convert &convert, Event *first,
                                        bool &cq_emptied) {
        constexpr uint_t kBatch = 16;
        bool filled = false;
        ri_wc_t wcs[kBatch];
        for (;;) {
            size_t room = limit > q.size() ? limit - q.size() : 0;
            if (first && !filled) ++room;  // *first takes no ring slot
            if (room == 0) return filled;
            const uint_t asked = static_cast<uint_t>(std::min<size_t>(room, kBatch));
            uint_t n = asked;
            ri_err_data_t e = 0;
            if (ri_cq_poll(rnic, cq, wcs, &n, &e) != RI_RET_SUCCESS || n == 0) {
                cq_emptied = true;
                return filled;
            }
            uint_t i = 0;
            if (first && !filled) {
                while (i < n && !filled) {
                    *first = Event{};
                    filled = convert(wcs[i++], *first);
                }
            }
            for (; i < n; ++i)
                if (!convert(wcs[i], q.emplace_back())) q.pop_back();
            if (n < kBatch) {
                cq_emptied = n < asked;
                return filled;
            }
        }
    }

    void fd_after_drain(bool cq_emptied) {
        if (cq_emptied) cq_notified_ = false;
        if (!q.empty()) efd_.raise();
    }

    EventFd efd_;
    bool cq_notified_ = false;  // a notify() since the last drain_cq that found the CQ empty
};

}  // namespace softrnic::api
