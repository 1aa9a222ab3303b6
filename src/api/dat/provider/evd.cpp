// EVDs: CQ completions turned into DAT events, the events the provider queues itself
// (connection, CR, async, software), and the dat_evd_* calls. See provider.hpp for what the sources
// share.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "provider.hpp"

namespace softrnic::dapl {

// ------------------------------------------------------------------------------ events

DAT_DTO_COMPLETION_STATUS map_status(ri_wc_status_t s) {
    switch (s) {
        case RI_WC_STATUS_SUCCESS:
            return DAT_DTO_SUCCESS;
        case RI_WC_STATUS_WR_FLUSHED_ERROR:
            return DAT_DTO_ERR_FLUSHED;
        case RI_WC_STATUS_LOCAL_LENGTH_ERROR:
        case RI_WC_STATUS_HUGE_PAYLOAD_ERROR:
            return DAT_DTO_ERR_LOCAL_LENGTH;
        case RI_WC_STATUS_INVALID_STAG_ERROR:
        case RI_WC_STATUS_BASE_BOUNDS_VIOLATION_ERROR:
        case RI_WC_STATUS_ACCESS_VIOLATION_ERROR:
        case RI_WC_STATUS_INVALID_PD_ERROR:
        case RI_WC_STATUS_ADDRESS_WRAP_ERROR:
        case RI_WC_STATUS_ZERO_ORD_ERROR:
        case RI_WC_STATUS_LOCAL_PROTECTION_ERROR:
        case RI_WC_STATUS_LOCAL_ACCESS_ERROR:
            return DAT_DTO_ERR_LOCAL_PROTECTION;
        case RI_WC_STATUS_REMOTE_TERMINATION_ERROR:
        case RI_WC_STATUS_REMOTE_ACCESS_ERROR:
            return DAT_DTO_ERR_REMOTE_ACCESS;
        case RI_WC_STATUS_BAD_RESPONSE_ERROR:
            return DAT_DTO_ERR_BAD_RESPONSE;
        case RI_WC_STATUS_REMOTE_OP_ERROR:
        case RI_WC_STATUS_REMOTE_INVALID_REQ_ERROR:
            return DAT_DTO_ERR_REMOTE_RESPONDER;
        case RI_WC_STATUS_INVALID_BIND_MR_ERROR:
        case RI_WC_STATUS_INVALID_BIND_MW_ERROR:
            return DAT_RMR_OPERATION_FAILED;
        case RI_WC_STATUS_WQE_FORMAT_ERROR:
            return DAT_DTO_ERR_LOCAL_EP;
        default:
            return DAT_DTO_ERR_TRANSPORT;
    }
}

// Turns one CQ completion into the EVD's event `ev` (zeroed by the caller). False when the
// completion vanishes instead: its EP or RMR was freed (L5999). An EP whose completion
// failed goes to `broken`, for the caller to break after unlocking (any non-success
// completion breaks the connection, L8505). Called with evd->mu held.
[[gnu::always_inline]] inline bool wc_to_event(Evd *evd, const ri_rc_wc_t &wc, DAT_EVENT &ev,
                                               std::vector<Ep *> *broken) {
    ev.evd_handle = evd;
    DAT_DTO_COMPLETION_STATUS st = map_status(wc.op_status);
    if (wc.op_type == RI_WC_TYPE_BIND) {
        auto *rmr = reinterpret_cast<Rmr *>(static_cast<uintptr_t>(wc.id));
        if (!handles().valid(rmr, DAT_HANDLE_TYPE_RMR)) return false;
        ev.event_number = DAT_RMR_BIND_COMPLETION_EVENT;
        ev.event_data.rmr_completion_event_data.rmr_handle = rmr;
        ev.event_data.rmr_completion_event_data.user_cookie = rmr->cookie;
        ev.event_data.rmr_completion_event_data.status =
            st == DAT_DTO_SUCCESS ? DAT_RMR_BIND_SUCCESS : DAT_RMR_OPERATION_FAILED;
        return true;
    }
    auto *ep = static_cast<Ep *>(wc.qp_os_data);
    if (!handles().valid(ep, DAT_HANDLE_TYPE_EP)) return false;
    ev.event_number = DAT_DTO_COMPLETION_EVENT;
    auto &d = ev.event_data.dto_completion_event_data;
    d.ep_handle = ep;
    d.user_cookie.as_64 = wc.id;
    d.status = st;
    d.transfered_length = st == DAT_DTO_SUCCESS ? wc.bytes_transferred : 0;
    switch (wc.op_type) {
        case RI_WC_TYPE_SEND:
            d.operation = DAT_DTO_SEND;
            break;
        case RI_WC_TYPE_RDMA_WRITE:
            d.operation = DAT_DTO_RDMA_WRITE;
            fill_extended_dto(wc, ev);  // with immediate data: an extended completion
            break;
        case RI_WC_TYPE_FETCH_AND_ADD:
        case RI_WC_TYPE_COMPARE_AND_SWAP:
            fill_extended_dto(wc, ev);
            break;
        case RI_WC_TYPE_RDMA_READ:
        case RI_WC_TYPE_RDMA_READ_LOCAL_INVALIDATE: {
            d.operation = DAT_DTO_RDMA_READ;
            std::lock_guard elk(ep->mu);
            if (!ep->split_reads.empty() && ep->split_reads.front().first == wc.id &&
                (wc.flags & RI_WC_FLAG_LOCAL_SOLICITED) == 0) {
                if (st == DAT_DTO_SUCCESS) d.transfered_length = ep->split_reads.front().second;
                ep->split_reads.pop_front();
            }
            break;
        }
        default:
            if (fill_extended_dto(wc, ev)) {
                // An RDMA Write with immediate data consumed this receive.
            } else if (wc.flags & RI_WC_FLAG_RTAG_INVALIDATE) {
                d.operation = DAT_DTO_RECEIVE_WITH_INVALIDATE;
                d.rmr_context = wc.invalidated_rtag;
            } else {
                d.operation = DAT_DTO_RECEIVE;
            }
            ep->recvs_completed.store(ep->recvs_completed.load(std::memory_order_relaxed) + 1,
                                      std::memory_order_relaxed);
            break;
    }
    if (st != DAT_DTO_SUCCESS && st != DAT_DTO_ERR_FLUSHED && broken) broken->push_back(ep);
    return true;
}

// Moves CQ completions into the EVD's queue while there is room (the queue's drain_cq,
// `first` included). Called with evd->mu held, see wc_to_event for `broken`.
bool pull_cq_locked(Evd *evd, std::vector<Ep *> *broken, DAT_EVENT *first) {
    return evd->drain_cq(
        size_t(evd->qlen),
        [evd, broken](const ri_wc_t &wc, DAT_EVENT &ev) {
            return wc_to_event(evd, wc.rc_wc, ev, broken);
        },
        first);
}

void break_all(std::vector<Ep *> &broken) {
    for (Ep *ep : broken)
        ep_break(ep, DAT_CONNECTION_EVENT_BROKEN, true);
}

void post_async_overflow(Evd *evd);

// Queues a provider-generated event. `drain_first`: take the CQ's completions first so a
// DISCONNECTED follows every successful completion already produced (L6941, L1567).
// Returns false when the EVD is full (the event is lost).
bool push_event(Evd *evd, const DAT_EVENT &ev, bool drain_first) {
    if (evd == nullptr) return true;  // stream pointed at the NULL EVD: dropped (L2692)
    std::vector<Ep *> broken;
    bool ok = true;
    Cno *cno = nullptr;
    {
        std::lock_guard lk(evd->mu);
        if (drain_first) pull_cq_locked(evd, &broken);
        if (DAT_COUNT(evd->q.size()) >= capacity(evd)) {
            ok = false;
        } else {
            DAT_EVENT e = ev;
            e.evd_handle = evd;
            evd->q.push_back(e);
            evd->cv.notify_all();
            // The CNO is triggered only when nobody waits on the EVD directly (L2767).
            if (!evd->waiter && evd->enabled) cno = evd->cno;
        }
    }
    if (cno) cno_trigger(cno, evd);
    if (!ok && !(evd->flags & DAT_EVD_ASYNC_FLAG)) post_async_overflow(evd);
    break_all(broken);
    return ok;
}

void post_async(Ia *ia, DAT_EVENT_NUMBER num, DAT_HANDLE h, DAT_COUNT reason) {
    if (!ia->async_evd) return;
    DAT_EVENT ev{};
    ev.event_number = num;
    ev.event_data.asynch_error_event_data.dat_handle = h;
    ev.event_data.asynch_error_event_data.reason = reason;
    push_event(ia->async_evd, ev, false);
}
void post_async_overflow(Evd *evd) {
    if (evd->ia->async_evd && evd->ia->async_evd != evd)
        post_async(evd->ia, DAT_ASYNC_ERROR_EVD_OVERFLOW, evd, DAT_EVD_OVERFLOW_ERROR);
}

void post_conn(Evd *evd, DAT_EVENT_NUMBER num, Ep *ep, const std::vector<uint8_t> *pd,
               bool drain_first) {
    DAT_EVENT ev{};
    ev.event_number = num;
    ev.event_data.connect_event_data.ep_handle = ep;
    if (pd && !pd->empty()) {
        ev.event_data.connect_event_data.private_data_size = DAT_COUNT(pd->size());
        ev.event_data.connect_event_data.private_data = const_cast<uint8_t *>(pd->data());
    }
    push_event(evd, ev, drain_first);
}

// An EP on an SRQ that leaves the connected states takes no more SRQ buffers; OFED
// providers say so with EP_BROKEN on the async EVD (IB "last WQE reached"), and dtestsrq
// waits for it after each disconnect.
void srq_ep_ended(Ep *ep) {
    if (ep->srq) post_async(ep->ia, DAT_ASYNC_ERROR_EP_BROKEN, ep, DAT_EP_TRANSFER_TO_ERROR);
}

// ------------------------------------------------------------------------------ EVD

constexpr DAT_EVD_FLAGS kAllEvdFlags = static_cast<DAT_EVD_FLAGS>(
    DAT_EVD_SOFTWARE_FLAG | DAT_EVD_CR_FLAG | DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG |
    DAT_EVD_RMR_BIND_FLAG | DAT_EVD_ASYNC_FLAG);

Evd *make_evd(Ia *ia, DAT_COUNT qlen, DAT_EVD_FLAGS flags, Cno *cno, DAT_RETURN &ret) {
    auto *evd = new Evd(ia->provider, DAT_HANDLE_TYPE_EVD, ia);
    evd->qlen = qlen;
    evd->q.reserve(size_t(qlen));
    evd->flags = flags;
    evd->cno = cno;
    if (flags & (DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG)) {
        // Room for every completion the queue can hold, plus slack for completions that
        // are produced while the queue is full and wait in the CQ.
        ri_cq_attr_t ca{};
        uint32_t max = ia->attr.max_cqes_per_cq ? ia->attr.max_cqes_per_cq : 65536;
        ca.num_cqe = std::min<uint32_t>(max, uint32_t(qlen) * 2 + 64);
        ca.handler_id = ia->cq_handler;
        ri_err_data_t e = 0;
        evd->rnic = ia->rnic;
        if (ri_cq_create(ia->rnic, &ca, &evd->cq, nullptr, evd, &e) != RI_RET_SUCCESS) {
            delete evd;
            ret = err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD);
            return nullptr;
        }
        evd->cq_size = ca.num_cqe;
    }
    if (cno) {
        cno->evds.fetch_add(1, std::memory_order_relaxed);
        std::lock_guard lk(evd->mu);
        cno_arm_locked(evd);
    }
    add_child(ia, evd);
    return evd;
}

DAT_RETURN evd_create(DAT_IA_HANDLE h, DAT_COUNT qlen, DAT_CNO_HANDLE cnoh, DAT_EVD_FLAGS flags,
                      DAT_EVD_HANDLE *out) {
    Ia *ia = as_ia(h);
    if (!ia) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    if (qlen <= 0 || (ia->attr.max_cqes_per_cq && uint32_t(qlen) > ia->attr.max_cqes_per_cq))
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    Cno *cno = nullptr;
    if (cnoh != DAT_HANDLE_NULL) {
        cno = as<Cno>(cnoh, DAT_HANDLE_TYPE_CNO);
        if (!cno) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
    }
    if (flags == 0 || (flags & ~kAllEvdFlags)) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    if (!out) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    DAT_RETURN r = DAT_SUCCESS;
    Evd *evd = make_evd(ia, qlen, flags, cno, r);
    if (!evd) return r;
    *out = evd;
    return DAT_SUCCESS;
}

DAT_RETURN evd_query(DAT_EVD_HANDLE h, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM *p) {
    auto *evd = as<Evd>(h, DAT_HANDLE_TYPE_EVD);
    if (!evd) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    if (mask & ~DAT_EVD_FIELD_ALL) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!p) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    std::lock_guard lk(evd->mu);
    p->ia_handle = evd->ia;
    p->evd_qlen = capacity(evd);
    p->evd_state = static_cast<DAT_EVD_STATE>(
        (evd->enabled ? DAT_EVD_STATE_ENABLED : DAT_EVD_STATE_DISABLED) |
        (evd->waitable ? DAT_EVD_STATE_WAITABLE : DAT_EVD_STATE_UNWAITABLE));
    p->cno_handle = evd->cno;
    p->evd_flags = evd->flags;
    return DAT_SUCCESS;
}

DAT_RETURN evd_modify_cno(DAT_EVD_HANDLE h, DAT_CNO_HANDLE cnoh) {
    auto *evd = as<Evd>(h, DAT_HANDLE_TYPE_EVD);
    if (!evd) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    Cno *cno = nullptr;
    if (cnoh != DAT_HANDLE_NULL) {
        cno = as<Cno>(cnoh, DAT_HANDLE_TYPE_CNO);
        if (!cno) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
    }
    std::lock_guard lk(evd->mu);
    if (evd->cno) evd->cno->evds.fetch_sub(1, std::memory_order_relaxed);
    evd->cno = cno;
    if (cno) cno->evds.fetch_add(1, std::memory_order_relaxed);
    cno_arm_locked(evd);
    return DAT_SUCCESS;
}

DAT_RETURN evd_set_enabled(DAT_EVD_HANDLE h, bool on) {
    auto *evd = as<Evd>(h, DAT_HANDLE_TYPE_EVD);
    if (!evd) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    std::lock_guard lk(evd->mu);
    evd->enabled = on;
    cno_arm_locked(evd);
    return DAT_SUCCESS;
}
DAT_RETURN evd_enable(DAT_EVD_HANDLE h) {
    return evd_set_enabled(h, true);
}
DAT_RETURN evd_disable(DAT_EVD_HANDLE h) {
    return evd_set_enabled(h, false);
}
DAT_RETURN evd_set_waitable(DAT_EVD_HANDLE h, bool on) {
    auto *evd = as<Evd>(h, DAT_HANDLE_TYPE_EVD);
    if (!evd) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    std::lock_guard lk(evd->mu);
    evd->waitable = on;
    evd->cv.notify_all();  // a blocked waiter leaves with INVALID_STATE (L3554)
    return DAT_SUCCESS;
}
DAT_RETURN evd_set_unwaitable(DAT_EVD_HANDLE h) {
    return evd_set_waitable(h, false);
}
DAT_RETURN evd_clear_unwaitable(DAT_EVD_HANDLE h) {
    return evd_set_waitable(h, true);
}

DAT_RETURN evd_wait(DAT_EVD_HANDLE h, DAT_TIMEOUT timeout, DAT_COUNT threshold, DAT_EVENT *event,
                    DAT_COUNT *nmore) {
    auto *evd = as<Evd>(h, DAT_HANDLE_TYPE_EVD);
    if (!evd) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    if (threshold <= 0 || threshold > evd->qlen)
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    if (!event) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    // OUT like event (L3642); OFED's providers refuse a NULL one too.
    if (!nmore) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    // Threshold waits make no sense with notification-controlled completions (L3717).
    if (threshold > 1 && evd->unsignalled.load(std::memory_order_relaxed) > 0)
        return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD);
    std::vector<Ep *> broken;
    std::unique_lock lk(evd->mu);
    if (evd->waiter) return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_WAITER);
    if (!evd->waitable) return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE);
    evd->waiter = true;
    const bool infinite = timeout == DAT_TIMEOUT_INFINITE;
    const auto deadline = Clock::now() + std::chrono::microseconds(infinite ? 0 : timeout);
    const auto spin_until = Clock::now() + std::chrono::microseconds(50);
    DAT_RETURN ret = DAT_SUCCESS;
    for (;;) {
        pull_cq_locked(evd, &broken);
        if (DAT_COUNT(evd->q.size()) >= threshold) {
            *event = evd->q.front();
            evd->q.pop_front();
            *nmore = DAT_COUNT(evd->q.size());
            break;
        }
        if (evd->aborted) {
            ret = err(DAT_ABORT);
            break;
        }
        if (!evd->waitable) {
            ret = err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE);
            break;
        }
        auto now = Clock::now();
        if (!infinite && now >= deadline) {
            *nmore = DAT_COUNT(evd->q.size());
            ret = err(DAT_TIMEOUT_EXPIRED);
            break;
        }
        if (now < spin_until) {
            // Brief spin for latency: each poll also progresses the transport inline.
            lk.unlock();
            std::this_thread::yield();
            lk.lock();
            continue;
        }
        // Block: arm the CQ, re-check (a completion may have slipped in before arming),
        // then sleep until the CQ handler, a provider event or the deadline wakes us.
        uint64_t seq = evd->wake_seq;
        if (evd->cq) {
            evd->arm();
            pull_cq_locked(evd, &broken);
            if (DAT_COUNT(evd->q.size()) >= threshold) continue;
        }
        evd->sleep(lk, seq, infinite ? std::nullopt : std::optional(deadline),
                   [evd] { return evd->aborted || !evd->waitable; });
    }
    evd->waiter = false;
    lk.unlock();
    break_all(broken);
    return ret;
}

// An EVD without a CQ (connection requests, connection events, async errors, software
// events) is filled only by the provider's other threads: the connection manager's and the
// RNIC's event thread. A consumer that busy-polls such an EVD and nothing else (dtestcm
// waits for each connection event that way) takes the CPU those threads need to produce
// the event; on 2 vCPUs with both sides polling, dtestcm's connection set-up took 1.6x as
// long as with dat_evd_wait. After this many empty dequeues of the same such EVD in a row
// on one thread, with no dequeue of another EVD in between, the caller gives its CPU up
// once (sched_yield). A progress loop that also dequeues a DTO EVD (MPI libraries poll
// their connection EVD next to their DTO EVDs) never yields, and neither does a dequeue of
// a CQ-backed EVD: those polls drive progress inline, so spinning there is what makes
// them fast.
constexpr uint32_t kEmptyDequeuesBeforeYield = 16;

// This thread's run of empty dequeues of one CQ-less EVD (only compared, never followed).
struct IdlePolls {
    const Evd *evd = nullptr;
    uint32_t empties = 0;
};
// Initial-exec: read on every dequeue, and a dlopen'ed library's ordinary thread_local
// costs a __tls_get_addr call per access (see ObjectRegistry::remembered).
[[gnu::tls_model("initial-exec")]] thread_local IdlePolls tls_idle_polls;

DAT_RETURN evd_dequeue(DAT_EVD_HANDLE h, DAT_EVENT *event) {
    auto *evd = as<Evd>(h, DAT_HANDLE_TYPE_EVD);
    if (!evd) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    if (!event) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    std::vector<Ep *> broken;
    DAT_RETURN ret = DAT_SUCCESS;
    Cno *cno = nullptr;
    bool cq_less = false;
    {
        std::lock_guard lk(evd->mu);
        if (evd->waiter) return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_WAITER);
        cq_less = evd->cq == nullptr;
        // Events already taken from the CQ are older than anything still in it, so the
        // oldest is handed out without another CQ poll. A poll that finds the CQ empty
        // runs a progress pass, and one dequeue per event (the uDAPL model) would pay that
        // pass on every event of a batch the last poll took.
        bool taken = evd->q.empty() && pull_cq_locked(evd, &broken, event);
        if (!taken && evd->q.empty()) {
            // Without the error class bit, as OFED's providers return it for CQ-backed
            // EVDs: dtest -p loops on `dat_evd_dequeue(...) == DAT_QUEUE_EMPTY`.
            ret = DAT_QUEUE_EMPTY;
        } else {
            if (!taken) {
                *event = evd->q.front();
                evd->q.pop_front();
            }
            // Several completions can arrive under one trigger; a CNO consumer that takes
            // one event per wake-up (dtest -c) must be woken again for the rest.
            if (!evd->q.empty() && evd->enabled) cno = evd->cno;
        }
    }
    if (cno) cno_trigger(cno, evd);
    break_all(broken);
    IdlePolls &idle = tls_idle_polls;
    if (ret == DAT_QUEUE_EMPTY && cq_less) {
        idle.empties = idle.evd == evd ? idle.empties + 1 : 1;
        idle.evd = evd;
        if (idle.empties >= kEmptyDequeuesBeforeYield) std::this_thread::yield();
    } else {
        idle.evd = nullptr;
    }
    return ret;
}

DAT_RETURN evd_post_se(DAT_EVD_HANDLE h, const DAT_EVENT *event) {
    auto *evd = as<Evd>(h, DAT_HANDLE_TYPE_EVD);
    if (!evd) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    if (!event || event->event_number != DAT_SOFTWARE_EVENT)
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!(evd->flags & DAT_EVD_SOFTWARE_FLAG)) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    Cno *cno = nullptr;
    {
        std::lock_guard lk(evd->mu);
        // A full EVD refuses software events with no overflow event (L3848).
        if (DAT_COUNT(evd->q.size()) >= evd->qlen) return err(DAT_QUEUE_FULL);
        DAT_EVENT e{};
        e.event_number = DAT_SOFTWARE_EVENT;
        e.evd_handle = evd;
        e.event_data.software_event_data = event->event_data.software_event_data;
        evd->q.push_back(e);
        evd->cv.notify_all();
        if (!evd->waiter && evd->enabled) cno = evd->cno;
    }
    if (cno) cno_trigger(cno, evd);
    return DAT_SUCCESS;
}

DAT_RETURN evd_resize(DAT_EVD_HANDLE h, DAT_COUNT qlen) {
    auto *evd = as<Evd>(h, DAT_HANDLE_TYPE_EVD);
    if (!evd) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    if (qlen <= 0 ||
        (evd->ia->attr.max_cqes_per_cq && uint32_t(qlen) > evd->ia->attr.max_cqes_per_cq))
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    std::vector<Ep *> broken;
    DAT_RETURN ret = DAT_SUCCESS;
    {
        std::lock_guard lk(evd->mu);
        if (evd->waiter) return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_WAITER);
        pull_cq_locked(evd, &broken);
        if (DAT_COUNT(evd->q.size()) > qlen) {
            ret = err(DAT_INVALID_STATE);  // would lose events (L3612)
        } else if (evd->cq) {
            ri_cq_attr_t ca{};
            uint32_t max = evd->ia->attr.max_cqes_per_cq ? evd->ia->attr.max_cqes_per_cq : 65536;
            ca.num_cqe = std::min<uint32_t>(max, uint32_t(qlen) * 2 + 64);
            ri_err_data_t e = 0;
            ri_api_return_t r =
                ri_cq_modify(evd->ia->rnic, evd->cq, RI_CQ_MODIFY_MASK_NUM_CQE, &ca, &e);
            if (r != RI_RET_SUCCESS)
                ret = err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD);
            else
                evd->qlen = qlen;
        } else {
            evd->qlen = qlen;
        }
        evd->q.reserve(size_t(evd->qlen));
    }
    break_all(broken);
    return ret;
}

void free_evd_now(Evd *evd) {
    if (evd->cq) {
        // Every call on the CQ holds evd->mu (consumer-serialised view): a poller still
        // inside pull_cq_locked finishes first.
        std::lock_guard lk(evd->mu);
        ri_err_data_t e = 0;
        ri_cq_destroy(evd->ia->rnic, evd->cq, &e);
        evd->cq = nullptr;
    }
    if (evd->cno) evd->cno->evds.fetch_sub(1, std::memory_order_relaxed);
    retire(evd);
}

DAT_RETURN evd_free(DAT_EVD_HANDLE h) {
    auto *evd = as<Evd>(h, DAT_HANDLE_TYPE_EVD);
    if (!evd) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    {
        std::lock_guard lk(evd->mu);
        if (evd->waiter) return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_WAITER);
        if (evd->users.load(std::memory_order_acquire) > 0)
            return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
    }
    if (evd->ia->async_evd == evd) evd->ia->async_evd = nullptr;
    free_evd_now(evd);
    return DAT_SUCCESS;
}

}  // namespace softrnic::dapl
