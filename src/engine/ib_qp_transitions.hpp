// The InfiniBand QP state table: which ri_qp_modify transitions exist for each service type
// and which attribute bits each one requires or allows (IBA 1.2 table 91, which RNICPI
// L3923 refers to, mapped onto the ri_qp_attr_mask bits; docs/ib-personality.md section 3.2).
//
// Pure data and checks, with no QP behind them: the IB personality's ri_qp_modify runs these
// first (docs/ib-personality.md section 3.3, steps 1 to 5: malformed mask, service type,
// transition, required bits, extra bits), then its value checks, then its effects.
#pragma once

#include <cstdint>
#include <optional>

#include "rnicpi/rnicpi.h"

namespace softrnic::engine {

// IBA's QP states, as the RNICPI state values name them (RNICPI L8405-8423): Reset is Idle,
// and SQD has two values (draining, drained) that name one state.
enum class IbQpState : uint8_t { Reset, Init, Rtr, Rts, Sqd, Sqe, Error };

// What a QP carries, for the table: a reliable connection, an unreliable datagram QP, or one
// of the special QPs of ri_special_qp_get (QP0, the SMI; QP1, the GSI), which follow the UD
// rows with their own Reset -> Init (docs/ib-personality.md section 3.2).
enum class IbService : uint8_t { Rc, Ud, Qp0, Qp1 };

// The IB state an RNICPI state value names, or nothing for the iWARP-only states,
// TIMEWAIT, which IB QPs do not have (RNICPI L8421; docs/ib-personality.md A7), and values
// outside the enumeration. Taken as an integer: a C caller may pass anything.
std::optional<IbQpState> ib_state_of(uint32_t s);

// The IB personality's highest mask bit (RI_QP_ATTR_PORT_NUM).
inline constexpr uint32_t kIbQpAttrMaskAll = (uint32_t{RI_QP_ATTR_PORT_NUM} << 1) - 1;

// The attribute bits that exist for a service type (RC has no Q_Key; UD and the special QPs
// have no ORD/IRD, access flags, destination QPN, receive PSN, RNR timer or paths).
uint32_t ib_attrs_of(IbService svc);

// Required and allowed bits of one transition. `access_required`: at least one of the three
// access bits (RNICPI splits IBA's access flags in three; docs/ib-personality.md A11).
struct IbTransition {
    uint32_t required = 0;
    uint32_t optional = 0;
    bool access_required = false;
};

// The transition from `from` to `to` for `svc`, or nothing when the table has no such edge.
// `sqd_drained`: in SQD, whether the send queue has drained (attributes change in SQD only
// then).
std::optional<IbTransition> ib_transition(IbQpState from, IbQpState to, IbService svc,
                                          bool sqd_drained);

// Steps 1 to 5 of docs/ib-personality.md section 3.3 for ri_qp_modify(mask, attrs.state) on
// a QP in `from`: RI_RET_SUCCESS, or the first failing step's code. Without
// RI_QP_ATTR_NEXT_STATE the transition is from `from` to itself. `target` gets the state the
// transition leads to.
ri_api_return_t ib_check_modify(IbQpState from, IbService svc, bool sqd_drained, uint32_t mask,
                                uint32_t next, IbQpState &target);

}  // namespace softrnic::engine
