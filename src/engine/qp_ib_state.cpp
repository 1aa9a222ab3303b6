// The InfiniBand QP state machine (Reset, Init, RTR, RTS, SQD, SQE, Error) behind
// ri_qp_modify on an IB instance (docs/ib-personality.md section 3): the table checks of
// ib_qp_transitions.cpp, then the value checks, then the effects, all or nothing (RNICPI
// L3883-3886). Qp::state holds what the data path needs (ib_qp_context.hpp): RTS for an RC
// QP in RTS, kIbReceiving for one in RTR or SQD, kIbParked otherwise outside Error. A UD
// QP's send queue is qp_datagram.cpp's (binding its QPN on its port from Init on). An RC
// QP binds its QPN from RTR on, so that its requesters find it, and claims its RC channel
// (transport/ib/rc_channel.hpp) at RTR -> RTS; its posts then take the engine's RC path.
// SQ posts in SQD answer RI_RET_OP_UNSUPPORTED (the held list of section 7.3 is not built).
#include <algorithm>
#include <atomic>
#include <cstring>

#include "engine/abi.hpp"
#include "engine/qp.hpp"
#include "engine/qp_internal.hpp"

namespace softrnic::engine {

namespace {

constexpr uint32_t kMaxPsn = 0xFFFFFF;
constexpr uint32_t kMaxQpn = 0xFFFFFF;
constexpr uint16_t kFirstMulticastLid = 0xC000;
constexpr uint32_t kPrivilegedQkeyBit = 0x80000000u;

// RNICPI's path_mtu has no stated unit (docs/ib-personality.md A4): 1-5 are ri_ib_mtu_t,
// 256-4096 bytes; anything else is no MTU (0).
ri_ib_mtu_t path_mtu_of(uint16_t v) {
    if (v >= RI_IB_MTU_256 && v <= RI_IB_MTU_4K) return static_cast<ri_ib_mtu_t>(v);
    return transport::ib::mtu_from_bytes(v);
}

bool same_av(const ri_gen_address_vector_t &x, const ri_gen_address_vector_t &y) {
    return x.sl == y.sl && x.send_global_routing_hdr_flg == y.send_global_routing_hdr_flg &&
           x.hop_limit == y.hop_limit && x.source_gid_index == y.source_gid_index &&
           x.flow_label == y.flow_label && std::memcmp(&x.dgid, &y.dgid, sizeof x.dgid) == 0 &&
           x.dlid == y.dlid && x.traffic_class == y.traffic_class &&
           x.max_static_rate == y.max_static_rate && x.source_path_bits == y.source_path_bits;
}

ri_qp_state_t rnicpi_state_of(IbQpState s, bool drained) {
    switch (s) {
        case IbQpState::Reset:
            return RI_QP_STATE_IDLE;
        case IbQpState::Init:
            return RI_QP_STATE_INITIALIZED;
        case IbQpState::Rtr:
            return RI_QP_STATE_READY_TO_RECEIVE;
        case IbQpState::Rts:
            return RI_QP_STATE_READY_TO_SEND;
        case IbQpState::Sqd:
            return drained ? RI_QP_STATE_SEND_QUEUE_DRAINED : RI_QP_STATE_SEND_QUEUE_DRAINING;
        case IbQpState::Sqe:
            return RI_QP_STATE_SEND_QUEUE_ERROR;
        case IbQpState::Error:
            return RI_QP_STATE_ERROR;
    }
    return RI_QP_STATE_ERROR;
}

// Section 3.3 step 6 for one path (primary or alternate). `port` is the port it leaves
// from (1..n, checked by the caller), `rc` whether multicast DLIDs are refused.
ri_api_return_t check_path(const ri_path_address_info_t &p, const transport::ib::Hca &hca,
                           uint8_t port, bool rc) {
    const ri_ib_mtu_t mtu = path_mtu_of(p.path_mtu);
    if (mtu == 0 || mtu > hca.port(port).active_mtu) return RI_RET_RNIC_INVALID_MTU;
    // IBA 1.2 ch. 9: the ACK timeout is a 5-bit exponent, the retry counts 3-bit.
    if (p.local_ack_timeout > 31 || p.retry_count > 7 || p.rnr_retry_count > 7)
        return RI_RET_INVALID_PARAMETER;
    const ri_gen_address_vector_t &av = p.av;
    if (av.sl > 15 || av.dlid == 0 || (rc && av.dlid >= kFirstMulticastLid))
        return RI_RET_INVALID_PARAMETER;
    if (av.source_gid_index >= transport::ib::kGidTableSize) return RI_RET_INVALID_PARAMETER;
    return RI_RET_SUCCESS;
}

// A P_Key index of `port`'s table: in range, and naming a valid entry (L3955).
ri_api_return_t check_pkey(const transport::ib::Hca &hca, uint8_t port, uint16_t index) {
    if (index >= transport::ib::kPkeyTableSize) return RI_RET_RNIC_INVALID_PKEY_INDEX;
    if (hca.port(port).pkeys[index] == 0) return RI_RET_RNIC_INVALID_PKEY_ENTRY;
    return RI_RET_SUCCESS;
}

}  // namespace

ri_api_return_t Qp::ib_check_values(uint32_t mask, const ri_qp_attr_t &a, IbQpState from,
                                    IbQpState to) const {
    const IbQpContext &c = *ib;
    const ri_ib_qp_attr_t &in = a.qp_xport.qp_ib;
    const transport::ib::Hca &hca = *dev->hca;
    const bool rc = c.service == IbService::Rc;
    // The port and P_Key index in force once this modify applies.
    const uint8_t port = (mask & RI_QP_ATTR_PORT_NUM) ? in.primary_av.physical_port : c.port;
    const uint16_t pkey =
        (mask & RI_QP_ATTR_PRIMARY_PKEY) ? in.primary_av.pkey_index : c.pkey_index;
    if ((mask & RI_QP_ATTR_PORT_NUM) && (port < 1 || port > hca.num_ports()))
        return RI_RET_RNIC_INVALID_PORT;
    if (mask & (RI_QP_ATTR_PORT_NUM | RI_QP_ATTR_PRIMARY_PKEY)) {
        if (pkey >= transport::ib::kPkeyTableSize) return RI_RET_RNIC_INVALID_PKEY_INDEX;
        if (port >= 1 && port <= hca.num_ports())
            if (ri_api_return_t r = check_pkey(hca, port, pkey); r != RI_RET_SUCCESS) return r;
    }
    if (mask & RI_QP_ATTR_PRIMARY_PATH) {
        const ri_path_address_info_t &p = in.primary_av;
        // RTR -> RTS takes only the three requester timers (section 3.4): the AV and the MTU
        // must be those in force.
        if (from == IbQpState::Rtr && to == IbQpState::Rts &&
            (!same_av(p.av, c.primary.av) || path_mtu_of(p.path_mtu) != c.primary.path_mtu))
            return RI_RET_QP_ATTRIBUTE_CANT_CHANGE;
        if (ri_api_return_t r = check_path(p, hca, port, rc); r != RI_RET_SUCCESS) return r;
    }
    if (mask & RI_QP_ATTR_ALTERNATE_PATH) {
        const ri_path_address_info_t &p = in.alternate_av;
        if (p.physical_port < 1 || p.physical_port > hca.num_ports())
            return RI_RET_RNIC_INVALID_PORT;
        if (ri_api_return_t r = check_pkey(hca, p.physical_port, p.pkey_index); r != RI_RET_SUCCESS)
            return r;
        if (ri_api_return_t r = check_path(p, hca, p.physical_port, rc); r != RI_RET_SUCCESS)
            return r;
    }
    if ((mask & RI_QP_ATTR_MIN_RNR_TIMER) && in.min_rnrnak_timer > 31)
        return RI_RET_RNIC_INVALID_RNR_VALUE;
    // No APM (docs/ib-personality.md section 7.5): only Migrated.
    if ((mask & RI_QP_ATTR_MIGSTATE) && raw(in.mig_state) != RI_MIG_STATE_MIGRATED)
        return RI_RET_MIGRATION_STATE_INVALID;
    if ((mask & RI_QP_ATTR_MAX_RDMA_READ_OUTGOING) && a.max_rdma_read_outgoing > Limits::kMaxOrdQp)
        return RI_RET_RNIC_IRD_ORD_EXCEEDED;
    if ((mask & RI_QP_ATTR_MAX_RDMA_READ_INCOMING) && a.max_rdma_read_incoming > Limits::kMaxIrdQp)
        return RI_RET_RNIC_IRD_ORD_EXCEEDED;
    if ((mask & RI_QP_ATTR_SEND_PSN) && in.send_psn > kMaxPsn) return RI_RET_INVALID_PARAMETER;
    if ((mask & RI_QP_ATTR_RECV_PSN) && in.rcv_psn > kMaxPsn) return RI_RET_INVALID_PARAMETER;
    if ((mask & RI_QP_ATTR_DEST_QPID) && in.dest_qpn > kMaxQpn) return RI_RET_INVALID_PARAMETER;
    // Step 7: a Q_Key with its high bit set is for privileged consumers only (IBA 1.2 ch. 10;
    // section 4.6). QP0 ignores its Q_Key.
    if ((mask & RI_QP_ATTR_QKEY) && c.service != IbService::Qp0 &&
        (in.rcv_qkey & kPrivilegedQkeyBit) && !owner->privileged())
        return RI_RET_NO_PERMISSION;
    return RI_RET_SUCCESS;
}

ri_api_return_t Qp::ib_modify(uint32_t mask, ri_qp_attr_t &a) {
    IbQpContext &c = *ib;
    const IbQpState from = c.state.load(std::memory_order_acquire);
    IbQpState to = from;
    // Steps 1-5: the mask, the service type, the transition, required and extra bits.
    if (ri_api_return_t r = ib_check_modify(
            from, c.service, c.sq_drained.load(std::memory_order_acquire), mask, raw(a.state), to);
        r != RI_RET_SUCCESS)
        return r;
    if (mask & (RI_QP_ATTR_SQ_SIZE | RI_QP_ATTR_RQ_SIZE))
        if (ri_api_return_t r = check_resize(mask, a); r != RI_RET_SUCCESS) return r;
    // Steps 6 and 7.
    if (ri_api_return_t r = ib_check_values(mask, a, from, to); r != RI_RET_SUCCESS) return r;

    // Nothing below can fail: apply.
    const ri_ib_qp_attr_t &in = a.qp_xport.qp_ib;
    apply_resize(mask, a);
    if (mask & RI_QP_ATTR_ENABLE_RDMA_READ) enable_read = a.enable_rdma_read != 0;
    if (mask & RI_QP_ATTR_ENABLE_RDMA_WRITE) enable_write = a.enable_rdma_write != 0;
    if (mask & RI_QP_ATTR_ENABLE_ATOMICS) c.enable_atomic = in.enable_atomic != 0;
    if (mask & RI_QP_ATTR_MAX_RDMA_READ_OUTGOING) ord = a.max_rdma_read_outgoing;
    if (mask & RI_QP_ATTR_MAX_RDMA_READ_INCOMING) ird = a.max_rdma_read_incoming;
    if (mask & RI_QP_ATTR_PORT_NUM) c.port = in.primary_av.physical_port;
    if (mask & RI_QP_ATTR_PRIMARY_PKEY) c.pkey_index = in.primary_av.pkey_index;
    if ((mask & RI_QP_ATTR_QKEY) && c.service != IbService::Qp0) c.qkey = in.rcv_qkey;
    if (mask & RI_QP_ATTR_DEST_QPID) c.dest_qpn = in.dest_qpn;
    if (mask & RI_QP_ATTR_SEND_PSN) c.send_psn = in.send_psn;
    if (mask & RI_QP_ATTR_RECV_PSN) c.recv_psn = in.rcv_psn;
    if (mask & RI_QP_ATTR_MIN_RNR_TIMER)
        c.min_rnr_timer = static_cast<uint8_t>(in.min_rnrnak_timer);
    if (mask & RI_QP_ATTR_MIGSTATE) c.mig_state = in.mig_state;
    if (mask & RI_QP_ATTR_PRIMARY_PATH) {
        const ri_path_address_info_t &p = in.primary_av;
        if (!(from == IbQpState::Rtr && to == IbQpState::Rts)) {
            c.primary.av = p.av;
            c.primary.path_mtu = path_mtu_of(p.path_mtu);
        }
        c.primary.local_ack_timeout = p.local_ack_timeout;
        c.primary.retry_count = p.retry_count;
        c.primary.rnr_retry_count = p.rnr_retry_count;
    }
    // The port and P_Key index have their own bits (section 3.2).
    c.primary.physical_port = c.port;
    c.primary.pkey_index = c.pkey_index;
    if (mask & RI_QP_ATTR_ALTERNATE_PATH) {
        c.alternate = in.alternate_av;
        c.alternate.path_mtu = path_mtu_of(in.alternate_av.path_mtu);
    }

    if (mask & RI_QP_ATTR_NEXT_STATE) {
        switch (to) {
            case IbQpState::Reset:
                if (from == IbQpState::Reset) break;
                ib_unbind_datagram();  // first: no arrival meets the queues being reset
                // Back to "newly created" (L3981-3994): WRs still queued go without
                // completions (IBA 1.2 ch. 10, Reset); Error flushed them on entry already.
                discard_rq();
                // The RC channel first: operations it still held complete flushed (the QP
                // no longer sends), before the send queue starts over.
                state.store(kIbParked, std::memory_order_release);
                if (chan) {
                    chan->detach();
                    complete_inflight();
                    chan.reset();
                    async_chan = false;
                }
                reset_queues();
                sq_sig_all = 0;
                c.clear();
                enable_read = enable_write = false;
                ord = ird = 0;
                error_pending.store(false, std::memory_order_release);
                c.state.store(IbQpState::Reset, std::memory_order_release);
                state.store(kIbParked, std::memory_order_release);
                break;
            case IbQpState::Error:
                if (from == IbQpState::Error) break;
                // Flushes both queues as on iWARP (L4422-4431); sets c.state.
                enter_error(false);
                // No further SRQ WQE can be taken: mandatory on IB (L3985-3990).
                if (srq) raise(RI_EVENT_QP_LAST_WQE_REACHED);
                break;
            case IbQpState::Sqd: {
                if (from == IbQpState::Sqd) break;
                c.sqd_notify = (mask & RI_QP_ATTR_ENABLE_SQD) && in.enable_async_notify_for_sqd;
                // Nothing is ever in flight without a data plane: drained at once (7.3).
                c.sq_drained.store(true, std::memory_order_release);
                c.state.store(IbQpState::Sqd, std::memory_order_release);
                // Arrivals go on; nothing new starts on the send queue.
                if (c.service == IbService::Rc)
                    state.store(kIbReceiving, std::memory_order_release);
                if (c.sqd_notify) raise(RI_EVENT_TYPE_QP_SEND_QUEUE_DRAINED);
                break;
            }
            default:
                if (to != IbQpState::Sqd) c.sq_drained.store(false, std::memory_order_release);
                c.state.store(to, std::memory_order_release);
                if (c.service != IbService::Rc) break;
                if (to == IbQpState::Rtr) {
                    state.store(kIbReceiving, std::memory_order_release);
                } else if (to == IbQpState::Rts) {
                    // The path is fixed from RTR on (section 3.4): the channel is claimed
                    // once, at RTR -> RTS, and kept through SQD -> RTS.
                    if (!chan) {
                        transport::IbPathBinding b;
                        b.hca = dev->hca.get();
                        b.port = c.port;
                        b.dlid = c.primary.av.dlid;
                        b.local_qpn = qp_id;
                        b.remote_qpn = c.dest_qpn;
                        b.pkey = dev->hca->pkey(c.port, c.pkey_index);
                        b.ack_timeout = c.primary.local_ack_timeout;
                        b.retry_count = c.primary.retry_count;
                        b.rnr_retry = c.primary.rnr_retry_count;
                        bool known = false;
                        chan = transport::claim(b, known, dev->progress);
                        async_chan = chan->asynchronous();
                        chan_caps.store(chan->capabilities(), std::memory_order_release);
                        sq_sig_all = c.signal_completions ? RI_WR_SIGNALED_FLAG : 0;
                        chan->attach(this);
                    }
                    state.store(RI_QP_STATE_READY_TO_SEND, std::memory_order_release);
                }
                break;
        }
    }
    // A UD QP receives on its port from Init on (its arrivals are refused until RTR by
    // rx_datagram); an RC QP from RTR on, once its destination is set (rx_rc_accepts reads
    // it). A port change moves either; Reset unbinds them (above).
    const IbQpState now = c.state.load(std::memory_order_acquire);
    if (c.port && ((c.service == IbService::Ud && now != IbQpState::Reset) ||
                   (c.service == IbService::Rc &&
                    (now == IbQpState::Rtr || now == IbQpState::Rts || now == IbQpState::Sqd))))
        ib_bind_datagram(c.port);
    // Report what is in force now (L3892-3900).
    a.sq_size = sq_size;
    a.rq_size = rq_size;
    a.max_rdma_read_outgoing = ord;
    a.max_rdma_read_incoming = ird;
    return RI_RET_SUCCESS;
}

void Qp::ib_query(ri_qp_attr_t &a) const {
    const IbQpContext &c = *ib;
    std::memset(&a.qp_xport, 0, sizeof a.qp_xport);
    const IbQpState s = c.state.load(std::memory_order_acquire);
    a.state = rnicpi_state_of(s, c.sq_drained.load(std::memory_order_acquire));
    ri_ib_qp_attr_t &o = a.qp_xport.qp_ib;
    o.send_psn = c.send_psn;
    o.signal_completions = c.signal_completions;
    o.trans_type = c.service == IbService::Rc ? RI_SERVICE_RELIABLE_CONNECTION
                                              : RI_SERVICE_UNRELIABLE_DATAGRAM;
    o.enable_async_notify_for_sqd = c.sqd_notify;
    o.primary_av = c.primary;
    o.rcv_psn = c.recv_psn;
    o.dest_qpn = c.dest_qpn;
    o.min_rnrnak_timer = c.min_rnr_timer;
    o.alternate_av = c.alternate;
    o.mig_state = c.mig_state;
    o.enable_atomic = c.enable_atomic;
    // Meaningful in RTS (L8600); the state itself otherwise (docs/ib-personality.md A3).
    o.current_state = a.state;
    o.rcv_qkey = c.qkey;
}

ri_api_return_t Qp::ib_sq_post_state() const {
    switch (ib->state.load(std::memory_order_acquire)) {
        case IbQpState::Reset:
        case IbQpState::Init:
        case IbQpState::Rtr:
            return RI_RET_QP_INVALID_STATE;  // L4422: only in these states on IB
        case IbQpState::Rts:
        case IbQpState::Sqd:
            // An RC QP in RTS never comes here (Qp::state is RTS). Left: SQD, which would
            // hold the WR (section 7.3, not built), and QP0/QP1 traffic; UD posts never
            // come here.
            return RI_RET_OP_UNSUPPORTED;
        case IbQpState::Sqe:
        case IbQpState::Error:
            break;  // completes flushed (L4422-4431; section 7.4)
    }
    return RI_RET_SUCCESS;
}

bool Qp::rx_rc_accepts(ri_lid_t slid, uint32_t src_qpn, ri_pkey_t pkey, uint8_t &rnr_timer) {
    // Section 4.3's pairing, checked at each operation (the fabric's lock keeps this QP
    // bound while the operation runs): an RC QP in RTR, RTS or SQD whose path names the
    // requester, in a partition they share.
    if (!ib || ib->service != IbService::Rc) return false;
    const IbQpState s = ib->state.load(std::memory_order_acquire);
    if (s != IbQpState::Rtr && s != IbQpState::Rts && s != IbQpState::Sqd) return false;
    rnr_timer = ib->min_rnr_timer;
    return ib->dest_qpn == src_qpn && ib->primary.av.dlid == slid &&
           pkeys_match(dev->hca->pkey(ib->port, ib->pkey_index), pkey);
}

}  // namespace softrnic::engine
