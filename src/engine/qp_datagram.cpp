// InfiniBand unreliable datagrams (docs/ib-personality.md 4.4, 4.6, 4.7; section 10 step 4):
// the send queue of a UD QP, which takes datagram WRs (ri_qp_post_datagram, or
// ri_qp_postsq reading SEND and SEND_IMMEDIATE as ri_wr_datagram_t, A10), and the arrival
// of a datagram at a UD QP (Endpoint::rx_datagram): key checks, a receive WQE, the GRH
// area, the completion with the source fields.
//
// The datagrams travel through the instance's ports (Hca::send_datagram): in this process
// the receiver's rx_datagram runs in the sender's thread with the sender's gather list, so
// the payload is copied once, straight into the receive buffer. A UD send completes when
// it has left (IBA 1.2 ch. 9): whatever becomes of it at the receiver.
#include <algorithm>
#include <array>
#include <cstring>

#include "engine/abi.hpp"
#include "engine/ah.hpp"
#include "engine/qp.hpp"
#include "engine/qp_internal.hpp"

namespace softrnic::engine {

namespace {

constexpr uint32_t kPrivilegedQkeyBit = 0x80000000u;
// GRH fields (IBA 1.2 ch. 8): IP version 6, next header 0x1B (the IBA transport).
constexpr uint8_t kGrhIpVersion = 6;
constexpr uint8_t kGrhNextHeader = 0x1B;
// What follows the GRH on the wire of a UD packet, for PayLen: BTH 12, DETH 8, ICRC 4.
constexpr uint32_t kUdHeaderBytes = 12 + 8 + 4;
constexpr uint32_t kImmBytes = 4;

void put_be64(std::byte *p, uint64_t v) {
    for (int i = 7; i >= 0; --i, v >>= 8)
        p[i] = std::byte(v & 0xFF);
}

// The GRH a datagram carries (IBA 1.2 ch. 8.3), big-endian as on the wire.
std::array<std::byte, transport::kGrhBytes> make_grh(const ResolvedAv &av, const ri_gid_t &sgid,
                                                     uint64_t payload, bool imm) {
    std::array<std::byte, transport::kGrhBytes> g{};
    const uint32_t word0 = uint32_t{kGrhIpVersion} << 28 | uint32_t{av.traffic_class} << 20 |
                           (av.flow_label & 0xFFFFF);
    for (int i = 0; i < 4; ++i)
        g[i] = std::byte((word0 >> (24 - 8 * i)) & 0xFF);
    const uint32_t pay_len =
        static_cast<uint32_t>(payload) + kUdHeaderBytes + (imm ? kImmBytes : 0);
    g[4] = std::byte((pay_len >> 8) & 0xFF);
    g[5] = std::byte(pay_len & 0xFF);
    g[6] = std::byte(kGrhNextHeader);
    g[7] = std::byte(av.hop_limit);
    put_be64(&g[8], sgid.gid_prefix);
    put_be64(&g[16], sgid.gid_guid);
    put_be64(&g[24], av.dgid.gid_prefix);
    put_be64(&g[32], av.dgid.gid_guid);
    return g;
}

}  // namespace

// ------------------------------------------------------------------------------ binding

void Qp::ib_bind_datagram(uint8_t port) {
    if (ib->bound_port == port) return;
    ib_unbind_datagram();
    dev->hca->bind_datagram(port, qp_id, this);
    ib->bound_port = port;
}

void Qp::ib_unbind_datagram() {
    if (!ib || !ib->bound_port) return;
    dev->hca->unbind_datagram(ib->bound_port, qp_id);  // waits out deliveries into us
    ib->bound_port = 0;
}

// --------------------------------------------------------------------------- send queue

ri_api_return_t Qp::post_sq_datagram(const ri_wr_t *wrs, uint32_t &num) {
    uint32_t n = num;
    num = 0;
    if (n && !wrs) return RI_RET_INVALID_PARAMETER;
    for (uint32_t i = 0; i < n; ++i) {
        const ri_wr_datagram_t &wr = wrs[i].wr_datagram;
        const IbQpState s = ib->state.load(std::memory_order_acquire);
        if (s == IbQpState::Reset || s == IbQpState::Init || s == IbQpState::Rtr)
            return RI_RET_QP_INVALID_STATE;  // L4422
        // SQD holds new WRs until it is left (section 7.3): not built yet.
        if (s == IbQpState::Sqd) return RI_RET_OP_UNSUPPORTED;
        const uint32_t flags = raw(wr.flags);
        uint64_t retired = dev->sq_retired[slot].load(std::memory_order_acquire);
        uint64_t retired_pos = (retired >> 40) == (incarnation & 0xFFFFFF) ? retired & kPosMask : 0;
        if (sq_head - retired_pos >= sq_size) return RI_RET_QP_CAPACITY_EXCEEDED;
        if (s != IbQpState::Rts) {
            // SQE, Error: never refused, completes flushed (L4422-4431; section 7.4).
            WrInfo info{wr.id, flags, wr.type, 0, ++sq_head};
            complete_sq_datagram(info, RI_WC_STATUS_WR_FLUSHED_ERROR, 0, true);
            ++num;
            continue;
        }
        // A10: a datagram is a SEND or a SEND_IMMEDIATE read as ri_wr_datagram_t.
        if (wr.type != RI_WR_TYPE_SEND && wr.type != RI_WR_TYPE_SEND_IMMEDIATE)
            return RI_RET_WR_INVALID_TYPE;
        if (flags & ~kWrFlagsKnown) return RI_RET_WR_INVALID_FLAGS;
        if (flags & RI_WR_LOCAL_FENCE_FLAG) return RI_RET_WR_INVALID_FLAGS;
        if (wr.num_sgls > sq_max_sges) return RI_RET_RNIC_SG_LIMIT_EXCEEDED;
        if (wr.num_sgls && !wr.sg_list) return RI_RET_WR_SG_INVALID_FORMAT;
        // The address handle: one of this consumer's, on the QP's PD (IBA 1.2 ch. 10: an AH
        // and the QP that uses it share a protection domain).
        Ah *ah = dev->owned_ah(wr.remote_node_address, owner);
        if (!ah || ah->pd != pd) return RI_RET_ADDRESS_HANDLE_INVALID;
        if (wr.dest_qp > 0xFFFFFF) return RI_RET_INVALID_PARAMETER;
        WrInfo info{wr.id, flags, wr.type, 0, ++sq_head};
        send_datagram(wr, resolve(*ah), info);
        ++num;
    }
    return RI_RET_SUCCESS;
}

void Qp::send_datagram(const ri_wr_datagram_t &wr, const ResolvedAv &av, const WrInfo &info) {
    IbQpContext &c = *ib;
    const transport::ib::Hca &hca = *dev->hca;
    IoSpan spans[Limits::kMaxSge];
    MemRef refs[Limits::kMaxSge];
    uint64_t length = 0;
    ri_wc_status_t st =
        resolve_local(wr.sg_list, wr.num_sgls, RI_MEM_FLAGS_LOCAL_READ, spans, refs, length);
    // A UD message is one packet: no longer than the port's MTU (IBA 1.2 ch. 9).
    if (st == RI_WC_STATUS_SUCCESS && length > transport::ib::mtu_bytes(hca.active_mtu(c.port))) {
        put_refs(refs, wr.num_sgls);
        st = RI_WC_STATUS_LOCAL_LENGTH_ERROR;
    }
    if (st != RI_WC_STATUS_SUCCESS) {
        // A local error moves a UD QP to SQE (section 7.4): this WR completes with it, the
        // ones after it flushed, until SQE -> RTS.
        c.state.store(IbQpState::Sqe, std::memory_order_release);
        complete_sq_datagram(info, st, 0, true);
        return;
    }
    transport::ib::DatagramSend d;
    d.dlid = av.dlid;
    d.dest_qpn = wr.dest_qp;
    // A privileged Q_Key in the WR means "the QP's own" (IBA 1.2 ch. 10, Q_Keys; 4.6).
    d.q_key = (wr.dest_qkey & kPrivilegedQkeyBit) ? c.qkey : wr.dest_qkey;
    d.pkey = hca.pkey(c.port, c.pkey_index);
    d.src_qpn = qp_id;
    d.sl = av.sl;
    std::array<std::byte, transport::kGrhBytes> grh;
    if (av.grh) {
        grh = make_grh(av, hca.gid(c.port, av.sgid_index), length,
                       wr.type == RI_WR_TYPE_SEND_IMMEDIATE);
        d.grh = grh.data();
    }
    d.payload = std::span<const IoSpan>(spans, wr.num_sgls);
    d.length = length;
    d.has_immediate = wr.type == RI_WR_TYPE_SEND_IMMEDIATE;
    d.immediate = wr.imm_data;
    d.solicited = raw(wr.flags) & RI_WR_SOLICITED_EVENT_FLAG;
    dev->hca->send_datagram(c.port, d);
    put_refs(refs, wr.num_sgls);
    complete_sq_datagram(info, RI_WC_STATUS_SUCCESS, length, c.signal_completions);
}

// ----------------------------------------------------------------------------- arrivals

transport::DatagramVerdict Qp::rx_datagram(const transport::DatagramArrival &a) {
    using transport::DatagramVerdict;
    RxScope scope(*this);
    if (!scope.entered() || !ib || ib->service != IbService::Ud)
        return DatagramVerdict::NotReceiving;
    IbQpContext &c = *ib;
    const IbQpState s = c.state.load(std::memory_order_acquire);
    if (s != IbQpState::Rtr && s != IbQpState::Rts && s != IbQpState::Sqd && s != IbQpState::Sqe)
        return DatagramVerdict::NotReceiving;
    // Keys (section 4.6): both mismatches drop silently and are counted by the port.
    if (!pkeys_match(dev->hca->pkey(c.port, c.pkey_index), a.pkey)) return DatagramVerdict::BadPkey;
    if (a.q_key != c.qkey) return DatagramVerdict::BadQkey;
    RecvWqe w{};
    ri_data_seg_t sg[Limits::kMaxSge];
    if (!take_recv(w, sg)) return DatagramVerdict::NoReceive;  // IBA: dropped silently

    uint64_t capacity = 0;
    for (uint32_t i = 0; i < w.num_sgls; ++i)
        capacity += sg[i].len;
    transport::DatagramSource src = a.source;
    src.pkey_index = c.pkey_index;
    const uint64_t total = transport::kGrhBytes + a.length;
    auto fail = [&](ri_wc_status_t st) {
        // A receive that completes in error takes the QP to Error (IBA 1.2 ch. 10).
        complete_recv_datagram(w, st, 0, 0, 0, src);
        enter_error(true);
        return DatagramVerdict::Delivered;
    };
    if (total > capacity) return fail(RI_WC_STATUS_LOCAL_LENGTH_ERROR);

    // The buffer's first 40 bytes are the GRH area (L4636-4639): the GRH when one came,
    // left as they are otherwise. The payload follows.
    auto write = [&](uint64_t offset, const std::byte *data, uint64_t len) -> ri_wc_status_t {
        uint64_t sge_start = 0, done = 0;
        for (uint32_t i = 0; i < w.num_sgls && done < len; ++i) {
            const ri_data_seg_t &e = sg[i];
            const uint64_t sge_end = sge_start + e.len;
            const uint64_t pos = offset + done;
            if (pos < sge_end) {
                const uint64_t in_sge = pos - sge_start;
                const uint64_t k = std::min<uint64_t>(e.len - in_sge, len - done);
                MemRef ref;
                std::byte *dst = nullptr;
                if (e.tag.ltag == 0 && owner->privileged() && enable_stag0_fastreg) {
                    dst = reinterpret_cast<std::byte *>(static_cast<uintptr_t>(e.addr.vaddr)) +
                          in_sge;
                } else {
                    MemFault f = dev->stags.acquire(e.tag.ltag, e.addr.vaddr + in_sge, k,
                                                    RI_MEM_FLAGS_LOCAL_WRITE, pd, this, ref);
                    if (f != MemFault::None) return fault_status(f);
                    dst = ref.ptr;
                }
                if (data) std::memcpy(dst, data + done, k);
                StagTable::put(ref);
                done += k;
            }
            sge_start = sge_end;
        }
        return RI_WC_STATUS_SUCCESS;
    };
    // Without a GRH the area's bytes stay undefined, but its memory is still checked: it is
    // part of the receive buffer the message consumes.
    ri_wc_status_t st = write(0, a.source.grh_present ? a.grh : nullptr, transport::kGrhBytes);
    uint64_t off = transport::kGrhBytes;
    for (const IoSpan &p : a.payload) {
        if (st != RI_WC_STATUS_SUCCESS) break;
        if (p.len == 0) continue;
        st = write(off, p.ptr, p.len);
        off += p.len;
    }
    if (st != RI_WC_STATUS_SUCCESS) return fail(st);
    uint32_t flags = a.solicited ? RI_WC_FLAG_SOLICITED_EVENT : 0;
    if (a.has_immediate) flags |= RI_WC_FLAG_IMMEDIATE_DATA;
    complete_recv_datagram(w, RI_WC_STATUS_SUCCESS, total, flags, a.has_immediate ? a.immediate : 0,
                           src);
    return DatagramVerdict::Delivered;
}

void Qp::complete_sq_datagram(const WrInfo &w, ri_wc_status_t status, uint64_t bytes, bool force) {
    Cqe e{};
    if (!sq_cqe(w, RI_WC_TYPE_SEND, status, bytes, force, e)) return;
    CqeDatagram d{};
    d.qpn = qp_id;
    if (!scq->push_datagram(e, d)) {
        raise(RI_EVENT_QP_CQ_SQ_ERROR);
        enter_error(false);
    }
}

void Qp::complete_recv_datagram(const RecvWqe &w, ri_wc_status_t status, uint64_t bytes,
                                uint32_t wc_flags, uint32_t imm,
                                const transport::DatagramSource &src) {
    Cqe e{};
    // ri_gen_wc_t has qpn where ri_rc_wc_t has invalidated_rtag: the trailer fills it.
    recv_cqe(w, RI_WC_TYPE_DATA_RECEIVED, status, bytes, wc_flags, 0, imm, e);
    CqeDatagram d{};
    d.qpn = qp_id;
    d.remote_qpn = src.remote_qpn;
    d.remote_lid = src.remote_lid;
    d.remote_sl = src.remote_sl;
    d.local_lid_pathbits = src.local_lid_pathbits;
    d.grh_present = src.grh_present;
    d.pkey_index = static_cast<uint16_t>(src.pkey_index);
    if (!rcq->push_datagram(e, d)) {
        raise(RI_EVENT_QP_CQ_RQ_ERROR);
        enter_error(true);
    }
}

}  // namespace softrnic::engine
