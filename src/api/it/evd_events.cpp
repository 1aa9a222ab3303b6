// Events on Event Dispatchers: delivery with overflow handling, AEVD notification, fd
// readiness, it_evd_dequeue, it_evd_wait, it_evd_post_se. See it_internal.hpp for what the
// sources share.
#include <chrono>
#include <mutex>
#include <optional>

#include "it_internal.hpp"

namespace softrnic::itapi {

namespace {

using Clock = std::chrono::steady_clock;

it_evd_handle_t handle_of(Evd *e) {
    return reinterpret_cast<it_evd_handle_t>(e);
}

// What an overflow of `sevd` does (IT-API L4366-L4411): post an overflow event, and whether
// making room re-arms it. IT_EVD_OVERFLOW_DEFAULT takes each stream's default from its
// page: DTO notifies once (its overflow cannot be corrected, L13673-L13682), CM messages
// and affiliated errors notify and re-arm (L12988-L12991, L12675), connection requests and
// unaffiliated errors never notify (L13248-L13251, L16896-L16899); software events never
// overflow (it_evd_post_se refuses instead).
struct OverflowMode {
    bool notify;
    bool auto_reset;
};
OverflowMode overflow_mode(const Evd *sevd) {
    if (sevd->flags & IT_EVD_OVERFLOW_DEFAULT) {
        switch (sevd->stream) {
            case IT_DTO_EVENT_STREAM:
                return {true, false};
            case IT_CM_MSG_EVENT_STREAM:
            case IT_ASYNC_AFF_EVENT_STREAM:
                return {true, true};
            default:
                return {false, false};
        }
    }
    return {(sevd->flags & IT_EVD_OVERFLOW_NOTIFY) != 0,
            (sevd->flags & IT_EVD_OVERFLOW_AUTO_RESET) != 0};
}

// Takes the oldest event of `sevd`. Caller holds sevd->mu; the queue is not empty.
void pop_locked(Evd *sevd, it_event_t *event) {
    const Slot &s = sevd->q.front();
    *event = s.ev;
    if (s.notify) --sevd->notify_events;
    sevd->q.pop_front();
    // Room again: a non-DTO stream in automatic mode has its overflow corrected and may
    // report the next one (IT-API L4407-L4408).
    if (sevd->overflowed && !sevd->dropping_forever && overflow_mode(sevd).auto_reset) {
        sevd->overflowed = false;
        sevd->overflow_event_armed = true;
    }
    if (sevd->q.empty() && sevd->callback) sevd->callback_armed = true;
    if (sevd->has_fd()) sevd->fd_ready(sevd->enabled && sevd->in_criteria());
}

// An AEVD's next event, or false. With IT_EVD_DEQUEUE_NOTIFICATIONS: a queued
// notification, else a new one for an SEVD still in its criteria (IT-API L4804-L4806, L5458-L5463).
// Without: the oldest event of the next feeding SEVD that has one (`wait`: that is enabled
// and in its criteria, IT-API L5370-L5372), taken round the feeders so that none starves.
// Caller holds aevd->mu.
bool aevd_take_locked(Evd *aevd, it_event_t *event, bool wait) {
    if (aevd->dequeue_notifications()) {
        if (!aevd->q.empty()) {
            *event = aevd->q.front().ev;
            aevd->q.pop_front();
            Evd *sevd = reinterpret_cast<Evd *>(event->aevd_notify.sevd);
            std::lock_guard lk(sevd->mu);  // still a feeder: detaching purges the queue
            sevd->notification_queued = false;
            return true;
        }
    }
    const size_t n = aevd->feeders.size();
    for (size_t k = 0; k < n; ++k) {
        const size_t i = (aevd->next_feeder + k) % n;
        Evd *sevd = aevd->feeders[i];
        std::lock_guard lk(sevd->mu);
        const bool ready = sevd->enabled && sevd->in_criteria();
        if (aevd->dequeue_notifications()) {
            if (!ready || sevd->notification_queued) continue;
            *event = it_event_t{};
            event->aevd_notify.event_number = IT_AEVD_NOTIFICATION_EVENT;
            event->aevd_notify.aevd = handle_of(aevd);
            event->aevd_notify.sevd = handle_of(sevd);
        } else {
            if (sevd->q.empty() || (wait && !ready)) continue;
            pop_locked(sevd, event);
        }
        aevd->next_feeder = i + 1;
        return true;
    }
    return false;
}

// An AEVD's readiness: its notifications, or a feeding SEVD in its criteria.
bool aevd_ready_locked(Evd *aevd) {
    if (aevd->dequeue_notifications() && !aevd->q.empty()) return true;
    for (Evd *s : aevd->feeders) {
        std::lock_guard lk(s->mu);
        if (s->enabled && s->in_criteria()) return true;
    }
    return false;
}

// After an AEVD dequeue: the fd, and the callback armed once everything was taken.
void aevd_after_take_locked(Evd *aevd) {
    aevd_update_fd(aevd);
    if (!aevd->callback || !aevd->q.empty()) return;
    for (Evd *s : aevd->feeders) {
        std::lock_guard lk(s->mu);
        if (!s->q.empty()) return;
    }
    aevd->callback_armed = true;
}

std::optional<Clock::time_point> deadline_of(uint64_t timeout_us) {
    // IT_TIMEOUT_INFINITE, and anything as long as a century, waits without a deadline.
    constexpr uint64_t kForever = uint64_t(100) * 365 * 24 * 3600 * 1000000;
    if (timeout_us >= kForever) return std::nullopt;
    return Clock::now() + std::chrono::microseconds(timeout_us);
}

enum class Full { Overflow, Reject };
enum class Delivered { Queued, Dropped, Rejected };

Delivered deliver_impl(Evd *sevd, const it_event_t &ev, bool notify, Full full) {
    Evd *aevd = nullptr;
    bool queued = false;
    Evd *overflow_target = nullptr;
    it_event_t overflow_ev{};
    {
        std::lock_guard lk(sevd->mu);
        if (sevd->dead) return Delivered::Dropped;
        if (sevd->dropping_forever || sevd->q.size() >= sevd->qsize) {
            if (full == Full::Reject) return Delivered::Rejected;
            // Overflow: the event is dropped; a DTO stream keeps dropping (IT-API
            // L4372-L4377).
            sevd->overflowed = true;
            if (sevd->stream == IT_DTO_EVENT_STREAM) sevd->dropping_forever = true;
            if (overflow_mode(sevd).notify && sevd->overflow_event_armed) {
                sevd->overflow_event_armed = false;
                Ia *ia = sevd->ia;
                std::lock_guard ilk(ia->mu);
                if (sevd->stream == IT_ASYNC_AFF_EVENT_STREAM) {
                    overflow_target = ia->unaff;
                    overflow_ev.unaff_async.event_number = IT_ASYNC_UNAFF_SEVD_ENQUEUE_FAILURE;
                    overflow_ev.unaff_async.ia = reinterpret_cast<it_ia_handle_t>(ia);
                    overflow_ev.unaff_async.spigot_id = 0;
                } else if (sevd->stream != IT_ASYNC_UNAFF_EVENT_STREAM) {
                    overflow_target = ia->aff;
                    overflow_ev.aff_async.event_number = IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE;
                    overflow_ev.aff_async.cause.sevd = handle_of(sevd);
                }
            }
        } else {
            Slot &s = sevd->q.emplace_back();
            s.ev = ev;
            s.ev.any.evd = handle_of(sevd);
            s.notify = notify;
            if (notify) ++sevd->notify_events;
            queued = true;
            sevd->wake();
            aevd = sevd_notify_targets(sevd);
        }
    }
    if (overflow_target) deliver(overflow_target, overflow_ev, true);
    if (aevd) aevd_notify(aevd, sevd);
    if (queued) run_callback(sevd);
    return queued ? Delivered::Queued : Delivered::Dropped;
}

}  // namespace

bool deliver(Evd *sevd, const it_event_t &ev, bool notify) {
    return deliver_impl(sevd, ev, notify, Full::Overflow) == Delivered::Queued;
}

Evd *sevd_notify_targets(Evd *sevd) {
    const bool ready = sevd->enabled && sevd->in_criteria();
    if (sevd->has_fd()) sevd->fd_ready(ready);
    return ready ? sevd->aevd : nullptr;
}

void aevd_update_fd(Evd *aevd) {
    if (aevd->has_fd()) aevd->fd_ready(aevd->enabled && aevd_ready_locked(aevd));
}

void aevd_refresh_fd(Evd *aevd) {
    // Still the AEVD of a live SEVD when read; a detach or free racing with this leaves a
    // retired EVD in the quarantine, whose lock and fd are still there.
    std::lock_guard lk(aevd->mu);
    if (!aevd->dead) aevd_update_fd(aevd);
}

void aevd_notify(Evd *aevd, Evd *sevd) {
    {
        std::lock_guard alk(aevd->mu);
        if (aevd->dead) return;
        if (aevd->dequeue_notifications()) {
            // One queued notification per SEVD at a time; another appears on the next
            // dequeue while the SEVD stays in its criteria (IT-API L5458-L5463).
            bool post = false;
            {
                std::lock_guard lk(sevd->mu);
                post = sevd->aevd == aevd && !sevd->notification_queued && sevd->enabled &&
                       sevd->in_criteria();
                if (post) sevd->notification_queued = true;
            }
            if (post) {
                Slot &s = aevd->q.emplace_back();
                s.ev.aevd_notify.event_number = IT_AEVD_NOTIFICATION_EVENT;
                s.ev.aevd_notify.aevd = handle_of(aevd);
                s.ev.aevd_notify.sevd = handle_of(sevd);
                s.notify = true;
            }
        }
        aevd->wake();
        aevd_update_fd(aevd);
    }
    run_callback(aevd);
}

it_status_t evd_dequeue(it_evd_handle_t h, it_event_t *event) {
    Evd *evd = as_evd(h);
    if (!evd) return IT_ERR_INVALID_EVD;
    if (!event) return IT_ERR_FAULT;
    if (evd->aggregate()) {
        std::lock_guard lk(evd->mu);
        const bool got = aevd_take_locked(evd, event, false);
        aevd_after_take_locked(evd);
        return got ? IT_SUCCESS : IT_ERR_QUEUE_EMPTY;
    }
    Evd *fed = nullptr;
    {
        std::lock_guard lk(evd->mu);
        // Not from an SEVD whose AEVD hands out its events itself (IT-API L4820-L4832).
        if (evd->aevd && !evd->aevd->dequeue_notifications()) return IT_ERR_INVALID_EVD_STATE;
        if (evd->q.empty()) {
            if (evd->callback) evd->callback_armed = true;
            return IT_ERR_QUEUE_EMPTY;  // IT-API L4838
        }
        pop_locked(evd, event);
        fed = evd->aevd;
    }
    // The AEVD's fd may owe its readiness to this SEVD alone.
    if (fed) aevd_refresh_fd(fed);
    return IT_SUCCESS;
}

it_status_t evd_wait(it_evd_handle_t h, uint64_t timeout_us, it_event_t *event, size_t *nmore) {
    Evd *evd = as_evd(h);
    if (!evd) return IT_ERR_INVALID_EVD;
    if (!event) return IT_ERR_FAULT;
    const auto deadline = deadline_of(timeout_us);
    std::unique_lock lk(evd->mu);
    if (evd->dead) return IT_ERR_ABORT;
    if (evd->callback) return IT_ERR_CALLBACK_EXISTS;  // IT-API L5351-L5353
    const bool fd_on = evd->has_fd() && evd->fd_is(evd->user_fd);
    if (evd->aggregate()) {
        // Not while it notifies its fd (IT-API L5344-L5347).
        if (fd_on && evd->enabled) return IT_ERR_INVALID_EVD_STATE;
    } else {
        // Not on an SEVD whose AEVD hands out its events, nor on one enabled to notify an
        // AEVD or fd (IT-API L5338-L5347); one waiter only above threshold 1 (L5355-L5358).
        if (evd->aevd && !evd->aevd->dequeue_notifications()) return IT_ERR_INVALID_EVD_STATE;
        if ((evd->aevd || fd_on) && evd->enabled) return IT_ERR_INVALID_EVD_STATE;
        if (evd->threshold > 1 && evd->waiters > 0) return IT_ERR_WAITER_LIMIT;
    }
    ++evd->waiters;
    it_status_t st = IT_ERR_TIMEOUT_EXPIRED;
    for (;;) {
        if (evd->dead) {
            st = IT_ERR_ABORT;
            break;
        }
        if (evd->aggregate()) {
            const bool got = aevd_take_locked(evd, event, true);
            if (got) aevd_after_take_locked(evd);
            if (got) {
                st = IT_SUCCESS;
                break;
            }
        } else if (evd->in_criteria()) {
            pop_locked(evd, event);
            st = IT_SUCCESS;
            break;
        }
        if (deadline && Clock::now() >= *deadline) break;
        evd->sleep(lk, evd->wake_seq, deadline, [&] { return evd->dead; });
    }
    --evd->waiters;
    // nmore: the events left, an SEVD's only (IT-API L5325-L5326, L5402-L5407).
    if (nmore && st != IT_ERR_ABORT) *nmore = evd->aggregate() ? 0 : evd->q.size();
    return st;
}

it_status_t evd_post_se(it_evd_handle_t h, const void *event) {
    Evd *evd = as_evd(h);
    if (!evd) return IT_ERR_INVALID_EVD;
    if (evd->aggregate() || evd->stream != IT_SOFTWARE_EVENT_STREAM) return IT_ERR_INVALID_SOFT_EVD;
    it_event_t ev{};
    ev.sw.event_number = IT_SOFTWARE_EVENT;
    ev.sw.data = const_cast<void *>(event);  // opaque to the library (IT-API L5155)
    // A full queue refuses the event; a software stream never overflows (IT-API L5158-L5160).
    switch (deliver_impl(evd, ev, true, Full::Reject)) {
        case Delivered::Rejected:
            return IT_ERR_EVD_QUEUE_FULL;
        default:
            return IT_SUCCESS;
    }
}

}  // namespace softrnic::itapi
