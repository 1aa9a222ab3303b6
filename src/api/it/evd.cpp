// Event Dispatchers, their life and parameters: it_evd_create, it_evd_modify, it_evd_query,
// it_evd_free, it_evd_callback_attach/detach. Events themselves (delivery, dequeue, wait)
// are in evd_events.cpp. See it_internal.hpp for what the sources share.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "it_internal.hpp"

namespace softrnic::itapi {

namespace {

constexpr unsigned kAllEvdFlags = IT_EVD_DEQUEUE_NOTIFICATIONS | IT_EVD_CREATE_FD |
                                  IT_EVD_OVERFLOW_DEFAULT | IT_EVD_OVERFLOW_NOTIFY |
                                  IT_EVD_OVERFLOW_AUTO_RESET;
constexpr unsigned kAllEvdParams = 0x000fff;
constexpr unsigned kModifiableEvdParams = IT_EVD_PARAM_QUEUE_SIZE | IT_EVD_PARAM_THRESHOLD |
                                          IT_EVD_PARAM_AEVD_HANDLE | IT_EVD_PARAM_ENABLED |
                                          IT_EVD_PARAM_OVERFLOWED;

bool simple_stream(uint32_t s) {
    switch (s) {
        case IT_DTO_EVENT_STREAM:
        case IT_CM_REQ_EVENT_STREAM:
        case IT_CM_MSG_EVENT_STREAM:
        case IT_ASYNC_AFF_EVENT_STREAM:
        case IT_ASYNC_UNAFF_EVENT_STREAM:
        case IT_SOFTWARE_EVENT_STREAM:
            return true;
        default:
            return false;
    }
}

// Streams that exist from the SEVD's creation on (IT-API L4338-L4341, L4917-L4920).
bool built_in_stream(it_event_type_t s) {
    return s == IT_ASYNC_AFF_EVENT_STREAM || s == IT_ASYNC_UNAFF_EVENT_STREAM ||
           s == IT_SOFTWARE_EVENT_STREAM;
}

// The largest SEVD queue: an RNICPI CQ's, which DTO SEVDs will sit on.
size_t max_queue(const Ia *ia) {
    return ia->attr.max_cqes_per_cq ? ia->attr.max_cqes_per_cq : size_t(1) << 20;
}

// The consumer may close the descriptor it was handed, which detaches it and clears
// IT_EVD_CREATE_FD (IT-API L5065-L5066). Caller holds evd->mu.
void notice_closed_fd(Evd *evd) {
    if (!evd->has_fd() || evd->fd_is(evd->user_fd)) return;
    evd->flags = it_evd_flags_t(evd->flags & ~IT_EVD_CREATE_FD);
    evd->user_fd = -1;
}

// AEVD: whether every feeding SEVD is empty (its notifications too). Caller holds aevd->mu.
bool aevd_empty_locked(Evd *aevd) {
    if (!aevd->q.empty()) return false;
    for (Evd *s : aevd->feeders) {
        std::lock_guard lk(s->mu);
        if (!s->q.empty()) return false;
    }
    return true;
}

// Takes `sevd` off its AEVD's feeders, and its queued notification off the AEVD.
// Caller holds the IA's topo_mu.
void detach_from_aevd(Evd *sevd) {
    Evd *aevd = nullptr;
    {
        std::lock_guard lk(sevd->mu);
        aevd = sevd->aevd;
    }
    if (!aevd) return;
    std::lock_guard alk(aevd->mu);
    auto &f = aevd->feeders;
    f.erase(std::remove(f.begin(), f.end(), sevd), f.end());
    const size_t n = aevd->q.size();
    for (size_t i = 0; i < n; ++i) {
        Slot s = aevd->q.front();
        aevd->q.pop_front();
        if (s.ev.aevd_notify.sevd != reinterpret_cast<it_evd_handle_t>(sevd)) aevd->q.push_back(s);
    }
    {
        std::lock_guard lk(sevd->mu);
        sevd->aevd = nullptr;
        sevd->notification_queued = false;
    }
    aevd_update_fd(aevd);
}

// Caller holds the IA's topo_mu.
void attach_to_aevd(Evd *sevd, Evd *aevd) {
    std::lock_guard alk(aevd->mu);
    aevd->feeders.push_back(sevd);
    std::lock_guard lk(sevd->mu);
    sevd->aevd = aevd;
}

}  // namespace

it_status_t evd_create(it_ia_handle_t h, uint32_t stream_bits, uint32_t flag_bits, size_t qsize,
                       size_t threshold, it_evd_handle_t aevdh, it_evd_handle_t *out, int *fd) {
    Ia *ia = as_ia(h);
    if (!ia) return IT_ERR_INVALID_IA;
    if (!out) return IT_ERR_FAULT;
    const bool aggregate = stream_bits == IT_AEVD_NOTIFICATION_EVENT_STREAM;
    if (!aggregate && !simple_stream(stream_bits)) return IT_ERR_INVALID_EVD_TYPE;
    const auto stream = static_cast<it_event_type_t>(stream_bits);
    // IT-API L4470-L4476: the overflow flags' combinations.
    if (flag_bits & ~kAllEvdFlags) return IT_ERR_INVALID_FLAGS;
    const auto flags = static_cast<it_evd_flags_t>(flag_bits);
    if (!aggregate) {
        const bool def = flags & IT_EVD_OVERFLOW_DEFAULT, notify = flags & IT_EVD_OVERFLOW_NOTIFY,
                   reset = flags & IT_EVD_OVERFLOW_AUTO_RESET;
        if (def && (notify || reset)) return IT_ERR_INVALID_FLAGS;
        if (reset && !notify) return IT_ERR_INVALID_FLAGS;
        if (reset && stream == IT_DTO_EVENT_STREAM) return IT_ERR_INVALID_FLAGS;
        if (notify && stream == IT_ASYNC_UNAFF_EVENT_STREAM) return IT_ERR_INVALID_FLAGS;
    }
    const bool want_fd = flags & IT_EVD_CREATE_FD;
    if (want_fd && !fd) return IT_ERR_FAULT;
    if (aggregate && aevdh) return IT_ERR_AEVD_NOT_ALLOWED;  // IT-API L4536
    if (want_fd && aevdh) return IT_ERR_MISMATCH_FD;         // IT-API L4549
    Evd *aevd = nullptr;
    if (aevdh) {
        aevd = as_evd(aevdh);
        if (!aevd || !aevd->aggregate() || aevd->ia != ia) return IT_ERR_INVALID_AEVD;
    }
    size_t actual = 0;
    if (!aggregate) {
        if (qsize > max_queue(ia)) return IT_ERR_RESOURCE_QUEUE_SIZE;
        actual = std::max<size_t>(qsize, 1);
        // IT_THRESHOLD_DISABLE or 1..the actual queue size (IT-API L4525-L4527).
        if (threshold > actual) return IT_ERR_INVALID_THRESHOLD;
    }
    auto evd = std::make_unique<Evd>(IT_HANDLE_TYPE_EVD, ia);
    evd->stream = stream;
    evd->flags = flags;
    evd->notifications = aggregate && (flags & IT_EVD_DEQUEUE_NOTIFICATIONS);
    evd->qsize = actual;
    evd->threshold = aggregate ? 0 : threshold;
    evd->rnic = ia->rnic;
    evd->q.reserve(aggregate ? 8 : actual);
    if (want_fd) {
        // The consumer gets a dup: it may close it (IT-API L5065-L5066) without the queue
        // ever closing a number the process has since reused.
        if (!evd->enable_fd()) return IT_ERR_RESOURCES;
        evd->user_fd = ::fcntl(evd->fd(), F_DUPFD_CLOEXEC, 0);
        if (evd->user_fd < 0) return IT_ERR_RESOURCES;
    }
    auto undo_fd = [&] {
        if (evd->user_fd >= 0) ::close(evd->user_fd);
    };
    {
        // Only one affiliated and one unaffiliated SEVD per IA (IT-API L4327-L4336).
        std::lock_guard lk(ia->mu);
        if (stream == IT_ASYNC_AFF_EVENT_STREAM) {
            if (ia->aff) return undo_fd(), IT_ERR_ASYNC_AFF_EVD_EXISTS;
            ia->aff = evd.get();
        } else if (stream == IT_ASYNC_UNAFF_EVENT_STREAM) {
            if (ia->unaff) return undo_fd(), IT_ERR_ASYNC_UNAFF_EVD_EXISTS;
            ia->unaff = evd.get();
        }
    }
    Evd *e = evd.release();
    add_child(e);
    if (aevd) {
        std::lock_guard topo(ia->topo_mu);
        attach_to_aevd(e, aevd);
    }
    *out = reinterpret_cast<it_evd_handle_t>(e);
    if (want_fd) *fd = e->user_fd;
    return IT_SUCCESS;
}

it_status_t evd_query(it_evd_handle_t h, uint32_t mask, it_evd_param_t *p) {
    Evd *evd = as_evd(h);
    if (!evd) return IT_ERR_INVALID_EVD;
    if (mask & ~kAllEvdParams) return IT_ERR_INVALID_MASK;
    if (mask == 0) return IT_SUCCESS;
    if (!p) return IT_ERR_FAULT;
    const bool all = mask & IT_EVD_PARAM_ALL;
    auto want = [&](unsigned bit) { return all || (mask & bit); };
    std::lock_guard lk(evd->mu);
    notice_closed_fd(evd);
    // Tied to an event stream; an AEVD: fed by an SEVD (IT-API L5267-L5269).
    const bool bound = evd->aggregate() ? !evd->feeders.empty()
                                        : built_in_stream(evd->stream) ||
                                              evd->streams.load(std::memory_order_acquire) > 0;
    if (want(IT_EVD_PARAM_IA)) p->ia = reinterpret_cast<it_ia_handle_t>(evd->ia);
    if (want(IT_EVD_PARAM_EVENT_NUMBER)) p->event_number = evd->stream;
    if (want(IT_EVD_PARAM_FLAG)) p->evd_flag = evd->flags;
    if (want(IT_EVD_PARAM_QUEUE_SIZE)) p->sevd_queue_size = evd->qsize;  // AEVD: 0
    if (want(IT_EVD_PARAM_THRESHOLD)) p->sevd_threshold = evd->threshold;
    if (want(IT_EVD_PARAM_AEVD_HANDLE)) p->aevid = reinterpret_cast<it_evd_handle_t>(evd->aevd);
    if (want(IT_EVD_PARAM_FD)) p->fd = evd->has_fd() ? evd->user_fd : -1;
    if (want(IT_EVD_PARAM_BOUND)) p->evd_bound = bound ? IT_TRUE : IT_FALSE;
    if (want(IT_EVD_PARAM_ENABLED)) p->evd_enabled = evd->enabled ? IT_TRUE : IT_FALSE;
    if (want(IT_EVD_PARAM_OVERFLOWED)) p->evd_overflowed = evd->overflowed ? IT_TRUE : IT_FALSE;
    if (want(IT_EVD_PARAM_CALLBACK)) p->evd_callback = evd->callback ? IT_TRUE : IT_FALSE;
    return IT_SUCCESS;
}

it_status_t evd_modify(it_evd_handle_t h, uint32_t mask, const it_evd_param_t *p) {
    Evd *evd = as_evd(h);
    if (!evd) return IT_ERR_INVALID_EVD;
    if (mask & ~kModifiableEvdParams) return IT_ERR_INVALID_MASK;
    if (mask == 0) return IT_SUCCESS;
    if (!p) return IT_ERR_FAULT;
    constexpr unsigned kSevdOnly =
        IT_EVD_PARAM_QUEUE_SIZE | IT_EVD_PARAM_THRESHOLD | IT_EVD_PARAM_AEVD_HANDLE;
    if (evd->aggregate() && (mask & kSevdOnly)) return IT_ERR_INVALID_MASK;  // IT-API L5028-L5033
    Ia *ia = evd->ia;
    const bool relink = mask & IT_EVD_PARAM_AEVD_HANDLE;
    Evd *new_aevd = nullptr;
    if (relink && p->aevid) {
        new_aevd = as_evd(p->aevid);
        if (!new_aevd || !new_aevd->aggregate() || new_aevd->ia != ia) return IT_ERR_INVALID_AEVD;
    }
    std::unique_lock topo(ia->topo_mu, std::defer_lock);
    if (relink) topo.lock();
    bool change_link = false;
    {
        // Everything is checked before anything changes: a failed call changes nothing.
        std::lock_guard lk(evd->mu);
        const bool enabled_after =
            (mask & IT_EVD_PARAM_ENABLED) ? raw(p->evd_enabled) != IT_FALSE : evd->enabled;
        if (relink && new_aevd != evd->aevd) {
            if (evd->callback) return IT_ERR_CALLBACK_EXISTS;
            // The SEVD is disabled and has no fd, and it may leave its AEVD only when that
            // one dequeues notifications (IT-API L5048-L5054, docs/spec-deviations.md).
            notice_closed_fd(evd);
            if (enabled_after || evd->has_fd()) return IT_ERR_INVALID_EVD_STATE;
            if (evd->aevd && !evd->aevd->dequeue_notifications()) return IT_ERR_INVALID_EVD_STATE;
            change_link = true;
        }
        size_t qsize = evd->qsize, threshold = evd->threshold;
        if (mask & IT_EVD_PARAM_QUEUE_SIZE) {
            if (p->sevd_queue_size > max_queue(ia)) return IT_ERR_RESOURCE_QUEUE_SIZE;
            qsize = std::max<size_t>(p->sevd_queue_size, 1);
            // Below the queued events, or (threshold unchanged) below the threshold
            // (IT-API L5073-L5079).
            if (qsize < evd->q.size()) return IT_ERR_INVALID_QUEUE_SIZE;
            if (!(mask & IT_EVD_PARAM_THRESHOLD) && threshold > qsize)
                return IT_ERR_INVALID_QUEUE_SIZE;
        }
        if (mask & IT_EVD_PARAM_THRESHOLD) {
            threshold = p->sevd_threshold;
            if (threshold > qsize) return IT_ERR_INVALID_THRESHOLD;
        }
        evd->qsize = qsize;
        evd->threshold = threshold;
        evd->q.reserve(qsize);
        if ((mask & IT_EVD_PARAM_OVERFLOWED) && raw(p->evd_overflowed) == IT_FALSE) {
            // Clearing it re-enables the overflow event of the consumer-controlled mode
            // (IT-API L4409-L4411); a DTO stream's overflow stays uncorrectable.
            evd->overflowed = false;
            evd->overflow_event_armed = true;
        }
        evd->enabled = enabled_after;
    }
    if (change_link) {
        detach_from_aevd(evd);
        if (new_aevd) attach_to_aevd(evd, new_aevd);
    }
    if (topo.owns_lock()) topo.unlock();
    // A change may have brought the criteria (a lower threshold, enabling): notify.
    if (evd->aggregate()) {
        std::lock_guard lk(evd->mu);
        aevd_update_fd(evd);
    } else {
        Evd *target = nullptr;
        {
            std::lock_guard lk(evd->mu);
            target = sevd_notify_targets(evd);
        }
        if (target) aevd_notify(target, evd);
    }
    run_callback(evd);
    return IT_SUCCESS;
}

void evd_abort(Evd *evd) {
    std::lock_guard lk(evd->mu);
    evd->dead = true;
    evd->wake();
}

bool evd_has_waiters(Evd *evd) {
    std::lock_guard lk(evd->mu);
    return evd->waiters > 0;
}

void evd_free_now(Evd *evd) {
    if (!handles().valid(evd, IT_HANDLE_TYPE_EVD)) return;
    Ia *ia = evd->ia;
    {
        std::lock_guard topo(ia->topo_mu);
        if (!evd->aggregate()) {
            detach_from_aevd(evd);
        } else {
            // it_ia_free: whatever still feeds it goes with it.
            std::vector<Evd *> feeders;
            {
                std::lock_guard lk(evd->mu);
                feeders = evd->feeders;
            }
            for (Evd *s : feeders)
                detach_from_aevd(s);
        }
    }
    {
        std::lock_guard lk(ia->mu);
        if (ia->aff == evd) ia->aff = nullptr;
        if (ia->unaff == evd) ia->unaff = nullptr;
    }
    {
        // The descriptor handed out goes with the EVD, unless the consumer closed it.
        std::lock_guard lk(evd->mu);
        if (evd->user_fd >= 0 && evd->fd_is(evd->user_fd)) ::close(evd->user_fd);
        evd->user_fd = -1;
    }
    retire(evd);
}

it_status_t evd_free(it_evd_handle_t h) {
    Evd *evd = as_evd(h);
    if (!evd) return IT_ERR_INVALID_EVD;
    {
        std::lock_guard lk(evd->mu);
        // IT-API L4936-L4938, L4917-L4920.
        if (evd->in_callback) return IT_ERR_INVALID_EVD_STATE;
        if (evd->aggregate() && !evd->feeders.empty()) return IT_ERR_EVD_BUSY;
        if (!evd->aggregate() && !built_in_stream(evd->stream) &&
            evd->streams.load(std::memory_order_acquire) > 0)
            return IT_ERR_EVD_BUSY;
    }
    // Waiters return IT_ERR_ABORT (IT-API L5426, L5488-L5490); the EVD goes once they have left
    // (it is parked in the registry's quarantine besides, for a waiter that is late).
    evd_abort(evd);
    for (int i = 0; i < 2000 && evd_has_waiters(evd); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    evd_free_now(evd);
    return IT_SUCCESS;
}

it_status_t evd_callback_attach(it_evd_handle_t h, it_evd_callback_rtn_t cb, void *arg) {
    Evd *evd = as_evd(h);
    if (!evd) return IT_ERR_INVALID_EVD;
    if (!privileged()) return IT_ERR_NO_PERMISSION;
    if (!cb) return IT_ERR_FAULT;
    std::lock_guard lk(evd->mu);
    // One notification mechanism at a time (IT-API L4049-L4058).
    if (evd->callback) return IT_ERR_CALLBACK_EXISTS;
    if (evd->waiters > 0) return IT_ERR_EVD_WAIT;
    notice_closed_fd(evd);
    if (evd->has_fd() || evd->aevd) return IT_ERR_INVALID_EVD_STATE;
    evd->callback = cb;
    evd->callback_arg = arg;
    // Not invoked before every event has been dequeued (IT-API L4063-L4070): at once when
    // there is none.
    evd->callback_armed = evd->aggregate() ? aevd_empty_locked(evd) : evd->q.empty();
    return IT_SUCCESS;
}

it_status_t evd_callback_detach(it_evd_handle_t h) {
    Evd *evd = as_evd(h);
    if (!evd) return IT_ERR_INVALID_EVD;
    if (!privileged()) return IT_ERR_NO_PERMISSION;
    std::lock_guard lk(evd->mu);
    if (!evd->callback) return IT_ERR_INVALID_EVD_STATE;
    evd->callback = nullptr;
    evd->callback_arg = nullptr;
    evd->callback_armed = false;
    return IT_SUCCESS;
}

void run_callback(Evd *evd) {
    for (;;) {
        it_evd_callback_rtn_t fn = nullptr;
        void *arg = nullptr;
        {
            std::lock_guard lk(evd->mu);
            if (evd->dead || !evd->callback || !evd->enabled) return;
            // Never two invocations at once (IT-API L4072-L4074): the running one looks
            // again when it returns.
            if (evd->in_callback) {
                evd->callback_again = true;
                return;
            }
            if (!evd->callback_armed) return;
            bool criteria = false;
            if (!evd->aggregate()) {
                criteria = evd->in_criteria();
            } else {
                criteria = !evd->q.empty();
                for (Evd *s : evd->feeders) {
                    std::lock_guard slk(s->mu);
                    criteria = criteria || (s->enabled && s->in_criteria());
                }
            }
            if (!criteria) return;
            evd->callback_armed = false;  // again once every event was dequeued
            evd->in_callback = true;
            evd->callback_again = false;
            fn = evd->callback;
            arg = evd->callback_arg;
        }
        fn(reinterpret_cast<it_evd_handle_t>(evd), arg);
        std::lock_guard lk(evd->mu);
        evd->in_callback = false;
        const bool again = evd->callback_again;
        evd->callback_again = false;
        if (!again) return;
    }
}

}  // namespace softrnic::itapi
