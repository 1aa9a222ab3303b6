// What an InfiniBand QP carries beyond the engine's Qp (docs/ib-personality.md section 3.1):
// its IB state, service type and the attributes ri_qp_modify sets (IBA 1.2 table 91 as
// mapped onto RNICPI in section 3.2). iWARP QPs have none (Qp::ib is null).
#pragma once

#include <atomic>
#include <cstdint>

#include "engine/ib_qp_transitions.hpp"
#include "rnicpi/rnicpi.h"

namespace softrnic::engine {

// The values Qp::state holds for an IB QP. The data path acts on Qp::state: IDLE and RTS
// are its fast cases (post, arrival). An RC QP in RTS holds RTS there, so its posts and
// arrivals take the iWARP QP's paths unchanged, through its RC channel
// (transport/ib/rc_channel.hpp). Otherwise an IB QP holds kIbReceiving where arrivals are
// accepted but nothing starts on the send queue (an RC QP in RTR or SQD), kIbParked in
// the other states outside Error: its posts reach the slow branches, where
// IbQpContext::state decides (Qp::post_sq, Qp::post_rq). TIMEWAIT and READY_TO_RECEIVE
// are no iWARP states (RNICPI L8421, A7), so no iWARP QP ever holds them. Error is Error
// in both fields: the shared error paths (enter_error, flush) work on IB QPs unchanged.
inline constexpr ri_qp_state_t kIbParked = RI_QP_STATE_TIMEWAIT;
inline constexpr ri_qp_state_t kIbReceiving = RI_QP_STATE_READY_TO_RECEIVE;

struct IbQpContext {
    IbService service = IbService::Rc;
    // Every SQ WR completes signalled (RNICPI L8606); create-only.
    bool signal_completions = false;
    // The IB state; Qp::state says only what the data path needs (see kIbParked). Written by
    // ri_qp_modify and by the shared error path, read by the posters.
    std::atomic<IbQpState> state{IbQpState::Reset};
    // In SQD: whether the send queue has drained. RC operations complete inside their post
    // (in-process channel) and UD ones when handed over, so nothing is ever in flight and
    // SQD is drained as soon as it is entered (section 7.3).
    std::atomic<bool> sq_drained{false};

    // Attributes (ri_qp_modify's caller serialises the calls on one QP). Port and P_Key
    // index are those of the primary path (RNICPI L8510: alone valid on UD).
    uint8_t port = 0;
    uint16_t pkey_index = 0;
    uint32_t qkey = 0;
    uint32_t dest_qpn = 0;
    uint32_t send_psn = 0;
    uint32_t recv_psn = 0;
    uint8_t min_rnr_timer = 0;
    bool enable_atomic = false;
    bool sqd_notify = false;  // ENABLE_SQD given with the RTS -> SQD transition
    ri_path_address_info_t primary{};
    ri_path_address_info_t alternate{};
    ri_path_migration_state_t mig_state = RI_MIG_STATE_MIGRATED;
    // A special QP's port is fixed when it is handed out (RNICPI L4069); 0 otherwise.
    uint8_t fixed_port = 0;
    // UD: the port whose datagrams for this QPN reach the QP (Hca::bind_datagram), from
    // Reset -> Init until Reset or destroy; 0 while unbound. Not touched by clear().
    uint8_t bound_port = 0;

    // Back to what creation gives (Reset: "as though it is newly created", L3981-3994).
    void clear() {
        port = 0;
        pkey_index = 0;
        qkey = 0;
        dest_qpn = 0;
        send_psn = 0;
        recv_psn = 0;
        min_rnr_timer = 0;
        enable_atomic = false;
        sqd_notify = false;
        primary = {};
        alternate = {};
        mig_state = RI_MIG_STATE_MIGRATED;
        if (fixed_port) {
            port = fixed_port;
            primary.physical_port = fixed_port;
        }
        sq_drained.store(false, std::memory_order_relaxed);
    }
};

}  // namespace softrnic::engine
