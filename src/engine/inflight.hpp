// A QP's operations in flight on an asynchronous transport: the one ordered list of them.
//
// Each entry pairs the engine's part of an operation (`Work`: the WR, the local memory it
// pins) with the record the transport works on (transport::InflightOp). Entries are appended
// by the posting thread, finished by the transport in any order, and taken off the head only
// once finished, so completions keep submission order whatever order the wire answers in.
// One thread at a time takes entries off (`reporting`): a report never overtakes another.
//
// std::deque keeps references to the other elements valid across push_back and pop_front:
// a transport may use a record it holds without the lock while others are appended.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>

#include "transport/transport.hpp"

namespace softrnic::engine {

template <class Work>
class InflightList {
  public:
    struct Entry {
        Work work;
        transport::InflightOp op;
    };

    // Nothing in flight and nothing being completed: an operation may complete at once
    // without overtaking one. Only the posting thread appends, so for it this stays true
    // until it appends.
    bool idle() const { return count_.load(std::memory_order_acquire) == 0; }

    // Appends an entry for `w`; its record is the transport's until finished.
    Entry &push(const Work &w) {
        std::lock_guard lk(mu_);
        Entry &e = entries_.emplace_back();
        e.work = w;
        e.op.seq = next_seq_++;
        count_.fetch_add(1, std::memory_order_acq_rel);
        return e;
    }

    // The unfinished record numbered `seq`, or nullptr.
    transport::InflightOp *find(uint32_t seq) {
        std::lock_guard lk(mu_);
        if (entries_.empty()) return nullptr;
        const uint32_t d = seq - entries_.front().op.seq;  // consecutive, mod 2^32
        if (d >= entries_.size()) return nullptr;
        transport::InflightOp &op = entries_[d].op;
        return op.finished.load(std::memory_order_acquire) ? nullptr : &op;
    }

    // Finishes every unfinished record the transport holds: the oldest with `oldest`, the
    // others Disconnected. One listed but not yet handed over (its submit() has not taken
    // it) is left to that submit, which finds the stream ended (InflightOp::held).
    void fail_all(transport::OpResult oldest) {
        std::lock_guard lk(mu_);
        bool first = true;
        for (Entry &e : entries_) {
            if (e.op.finished.load(std::memory_order_acquire)) continue;
            if (!e.op.held.load(std::memory_order_acquire)) continue;
            e.op.finish(first ? oldest
                              : transport::OpResult{transport::OpOutcome::Disconnected, {}});
            first = false;
        }
    }

    // Takes the head if it is finished and nobody else is taking entries; the caller
    // completes it and then calls taken(). `only` (optional): take it only if it is that
    // record, i.e. nothing older is left.
    bool take_finished_head(Work &w, transport::OpResult &r,
                            const transport::InflightOp *only = nullptr) {
        std::lock_guard lk(mu_);
        if (reporting_ || entries_.empty()) return false;
        Entry &e = entries_.front();
        if (only && &e.op != only) return false;
        if (!e.op.finished.load(std::memory_order_acquire)) return false;
        w = e.work;
        r = e.op.result;
        entries_.pop_front();
        reporting_ = true;
        return true;
    }
    // Takes the head whatever its state (the transport has let go of every record: after
    // Channel::detach): an unfinished one comes back as Disconnected.
    bool take_any_head(Work &w, transport::OpResult &r) {
        std::lock_guard lk(mu_);
        if (entries_.empty()) return false;
        Entry &e = entries_.front();
        w = e.work;
        r = e.op.finished.load(std::memory_order_acquire)
                ? e.op.result
                : transport::OpResult{transport::OpOutcome::Disconnected, {}};
        entries_.pop_front();
        reporting_ = true;
        return true;
    }
    // The entry taken is completed.
    void taken() {
        {
            std::lock_guard lk(mu_);
            reporting_ = false;
        }
        count_.fetch_sub(1, std::memory_order_acq_rel);
    }

  private:
    std::mutex mu_;
    std::deque<Entry> entries_;  // guarded by mu_
    uint32_t next_seq_ = 1;      // guarded by mu_
    bool reporting_ = false;     // guarded by mu_: an entry is being completed
    // Entries listed or being completed.
    std::atomic<uint32_t> count_{0};
};

}  // namespace softrnic::engine
