// The InfiniBand QP state table (ib_qp_transitions.hpp).
#include "engine/ib_qp_transitions.hpp"

namespace softrnic::engine {

namespace {

constexpr uint32_t kNext = RI_QP_ATTR_NEXT_STATE;
constexpr uint32_t kSizes = RI_QP_ATTR_SQ_SIZE | RI_QP_ATTR_RQ_SIZE;
constexpr uint32_t kOrd = RI_QP_ATTR_MAX_RDMA_READ_OUTGOING;
constexpr uint32_t kIrd = RI_QP_ATTR_MAX_RDMA_READ_INCOMING;
constexpr uint32_t kAccess =
    RI_QP_ATTR_ENABLE_RDMA_READ | RI_QP_ATTR_ENABLE_RDMA_WRITE | RI_QP_ATTR_ENABLE_ATOMICS;
constexpr uint32_t kDest = RI_QP_ATTR_DEST_QPID;
constexpr uint32_t kSqd = RI_QP_ATTR_ENABLE_SQD;
constexpr uint32_t kQkey = RI_QP_ATTR_QKEY;
constexpr uint32_t kSendPsn = RI_QP_ATTR_SEND_PSN;
constexpr uint32_t kRecvPsn = RI_QP_ATTR_RECV_PSN;
constexpr uint32_t kRnr = RI_QP_ATTR_MIN_RNR_TIMER;
constexpr uint32_t kPath = RI_QP_ATTR_PRIMARY_PATH;
constexpr uint32_t kAltPath = RI_QP_ATTR_ALTERNATE_PATH;
constexpr uint32_t kMig = RI_QP_ATTR_MIGSTATE;
constexpr uint32_t kPkey = RI_QP_ATTR_PRIMARY_PKEY;
constexpr uint32_t kPort = RI_QP_ATTR_PORT_NUM;

using S = IbQpState;

// RC rows of IBA 1.2 table 91 (docs/ib-personality.md section 3.2), sizes aside.
std::optional<IbTransition> rc_edge(S from, S to, bool drained) {
    if (from == S::Reset && to == S::Init) return IbTransition{kPkey | kPort, kAccess, true};
    if (from == S::Init && to == S::Init) return IbTransition{0, kPkey | kPort | kAccess};
    if (from == S::Init && to == S::Rtr)
        return IbTransition{kPath | kDest | kRecvPsn | kIrd | kRnr, kAltPath | kAccess | kPkey};
    // The three requester timers ride in the primary path (section 3.4): recorded at
    // Init -> RTR, so PRIMARY_PATH is optional here.
    if (from == S::Rtr && to == S::Rts)
        return IbTransition{kSendPsn | kOrd, kPath | kAltPath | kAccess | kRnr | kMig};
    if (from == S::Rts && to == S::Rts) return IbTransition{0, kAccess | kAltPath | kMig | kRnr};
    if (from == S::Rts && to == S::Sqd) return IbTransition{0, kSqd};
    if (from == S::Sqd && to == S::Rts) return IbTransition{0, kAltPath | kAccess | kRnr | kMig};
    if (from == S::Sqd && to == S::Sqd && drained)
        return IbTransition{0,
                            kPort | kPath | kOrd | kIrd | kAltPath | kAccess | kPkey | kRnr | kMig};
    return std::nullopt;
}

// UD rows; the special QPs differ at Reset -> Init and have no port to change (it is fixed
// by ri_special_qp_get, RNICPI L4069); QP0's Q_Key is accepted and ignored.
std::optional<IbTransition> ud_edge(S from, S to, IbService svc, bool drained) {
    const bool special = svc == IbService::Qp0 || svc == IbService::Qp1;
    const uint32_t port = special ? 0 : kPort;
    if (from == S::Reset && to == S::Init) {
        if (svc == IbService::Qp0) return IbTransition{kPkey, kQkey};
        if (svc == IbService::Qp1) return IbTransition{kPkey | kQkey, 0};
        return IbTransition{kPkey | kPort | kQkey, 0};
    }
    if (from == S::Init && to == S::Init) return IbTransition{0, kPkey | port | kQkey};
    if (from == S::Init && to == S::Rtr) return IbTransition{0, kPkey | kQkey};
    if (from == S::Rtr && to == S::Rts) return IbTransition{kSendPsn, kQkey};
    if (from == S::Rts && to == S::Rts) return IbTransition{0, kQkey};
    if (from == S::Rts && to == S::Sqd) return IbTransition{0, kSqd};
    if (from == S::Sqd && to == S::Rts) return IbTransition{0, kQkey};
    if (from == S::Sqd && to == S::Sqd && drained) return IbTransition{0, kPkey | kQkey};
    if (from == S::Sqe && to == S::Rts) return IbTransition{0, kQkey};
    return std::nullopt;
}

}  // namespace

std::optional<IbQpState> ib_state_of(uint32_t s) {
    switch (s) {
        case RI_QP_STATE_IDLE:
            return S::Reset;
        case RI_QP_STATE_INITIALIZED:
            return S::Init;
        case RI_QP_STATE_READY_TO_RECEIVE:
            return S::Rtr;
        case RI_QP_STATE_READY_TO_SEND:
            return S::Rts;
        case RI_QP_STATE_SEND_QUEUE_DRAINING:
        case RI_QP_STATE_SEND_QUEUE_DRAINED:
            return S::Sqd;
        case RI_QP_STATE_SEND_QUEUE_ERROR:
            return S::Sqe;
        case RI_QP_STATE_ERROR:
            return S::Error;
        default:  // Terminate and Closing are iWARP's; TIMEWAIT is no QP state
            return std::nullopt;
    }
}

uint32_t ib_attrs_of(IbService svc) {
    constexpr uint32_t kAll = kNext | kSizes | kSqd | kSendPsn | kPkey | kPort;
    if (svc == IbService::Rc)
        return kAll | kOrd | kIrd | kAccess | kDest | kRecvPsn | kRnr | kPath | kAltPath | kMig;
    return kAll | kQkey;
}

std::optional<IbTransition> ib_transition(IbQpState from, IbQpState to, IbService svc,
                                          bool sqd_drained) {
    std::optional<IbTransition> t;
    // Any state may be reset or moved to Error, with no attributes (docs/ib-personality.md
    // A8: Reset -> Error too).
    if (to == S::Reset || to == S::Error)
        t = IbTransition{};
    else if (from == S::Reset && to == S::Reset)
        t = IbTransition{};
    else
        t = svc == IbService::Rc ? rc_edge(from, to, sqd_drained)
                                 : ud_edge(from, to, svc, sqd_drained);
    // Resizes are RNICPI's, not IBA attributes: allowed in every transition (RNICPI
    // L3892-3906); the receive queue's is refused while receives are live (see below).
    if (t) t->optional |= kSizes;
    return t;
}

ri_api_return_t ib_check_modify(IbQpState from, IbService svc, bool sqd_drained, uint32_t mask,
                                uint32_t next, IbQpState &target) {
    // 1. A bit the IB mask does not have (RNICPI L3953).
    if (mask & ~kIbQpAttrMaskAll) return RI_RET_INVALID_PARAMETER;
    // 2. An attribute this service type does not have (RNICPI L3961; A17).
    if (mask & ~ib_attrs_of(svc)) return RI_RET_QP_INVALID_SERVICE_TYPE;
    // 3. The transition (RNICPI L3956, L8402).
    target = from;
    if (mask & kNext) {
        const std::optional<IbQpState> to = ib_state_of(next);
        if (!to) return RI_RET_QP_INVALID_STATE;
        target = *to;
    }
    const std::optional<IbTransition> t = ib_transition(from, target, svc, sqd_drained);
    if (!t) return RI_RET_QP_INVALID_STATE;
    if ((mask & RI_QP_ATTR_RQ_SIZE) && (from == S::Rtr || from == S::Rts || from == S::Sqd))
        return RI_RET_QP_INVALID_STATE;
    // 4. A required attribute missing ("qp_mask is invalid", RNICPI L3953).
    if ((mask & t->required) != t->required) return RI_RET_INVALID_PARAMETER;
    if (t->access_required && !(mask & kAccess)) return RI_RET_INVALID_PARAMETER;
    // 5. An attribute this transition does not take (RNICPI L3964).
    if (mask & ~(kNext | t->required | t->optional)) return RI_RET_QP_ATTRIBUTE_CANT_CHANGE;
    return RI_RET_SUCCESS;
}

}  // namespace softrnic::engine
