#include "engine/events.hpp"

namespace softrnic::engine {

void EventThread::start(Deliver deliver) {
    std::lock_guard lk(mu_);
    if (running_) return;
    deliver_ = std::move(deliver);
    stopping_ = false;
    running_ = true;
    thread_ = std::thread([this] { run(); });
    thread_id_.store(thread_.get_id(), std::memory_order_release);
}

void EventThread::stop() {
    {
        std::lock_guard lk(mu_);
        if (!running_) return;
        stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    std::lock_guard lk(mu_);
    queue_.clear();
    delivered_ = posted_;
    running_ = false;
    thread_id_.store(std::thread::id{}, std::memory_order_release);
    done_cv_.notify_all();
}

void EventThread::post(const QueuedEvent &ev) {
    {
        std::lock_guard lk(mu_);
        if (!running_ || stopping_) return;
        queue_.push_back(ev);
        ++posted_;
    }
    cv_.notify_one();
}

void EventThread::drain() {
    if (on_event_thread()) return;
    std::unique_lock lk(mu_);
    uint64_t target = posted_;
    done_cv_.wait(lk, [&] { return delivered_ >= target || !running_; });
}

void EventThread::run() {
    std::unique_lock lk(mu_);
    for (;;) {
        cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        QueuedEvent ev = queue_.front();
        queue_.pop_front();
        lk.unlock();
        deliver_(ev);
        lk.lock();
        ++delivered_;
        done_cv_.notify_all();
    }
}

}  // namespace softrnic::engine
