// The InfiniBand QP state table (engine/ib_qp_transitions.hpp) against IBA 1.2 table 91 as
// docs/ib-personality.md section 3.2 maps it onto the RNICPI mask bits: every (service type,
// from, to), every bit alone and the required set minus each bit, and the order of the
// checks (section 3.3).
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <string>
#include <tuple>

#include "engine/ib_qp_transitions.hpp"

namespace softrnic::engine {
namespace {

using S = IbQpState;
using Svc = IbService;

constexpr uint32_t kOrd = RI_QP_ATTR_MAX_RDMA_READ_OUTGOING;
constexpr uint32_t kIrd = RI_QP_ATTR_MAX_RDMA_READ_INCOMING;
constexpr uint32_t kRead = RI_QP_ATTR_ENABLE_RDMA_READ;
constexpr uint32_t kWrite = RI_QP_ATTR_ENABLE_RDMA_WRITE;
constexpr uint32_t kAtomic = RI_QP_ATTR_ENABLE_ATOMICS;
constexpr uint32_t kAccess = kRead | kWrite | kAtomic;
constexpr uint32_t kDest = RI_QP_ATTR_DEST_QPID;
constexpr uint32_t kSqd = RI_QP_ATTR_ENABLE_SQD;
constexpr uint32_t kQkey = RI_QP_ATTR_QKEY;
constexpr uint32_t kSpsn = RI_QP_ATTR_SEND_PSN;
constexpr uint32_t kRpsn = RI_QP_ATTR_RECV_PSN;
constexpr uint32_t kRnr = RI_QP_ATTR_MIN_RNR_TIMER;
constexpr uint32_t kPath = RI_QP_ATTR_PRIMARY_PATH;
constexpr uint32_t kAlt = RI_QP_ATTR_ALTERNATE_PATH;
constexpr uint32_t kMig = RI_QP_ATTR_MIGSTATE;
constexpr uint32_t kPkey = RI_QP_ATTR_PRIMARY_PKEY;
constexpr uint32_t kPort = RI_QP_ATTR_PORT_NUM;
constexpr uint32_t kSizes = RI_QP_ATTR_SQ_SIZE | RI_QP_ATTR_RQ_SIZE;

// The expected table, written from docs/ib-personality.md section 3.2: required bits,
// optional bits, and whether one access bit is required. Sizes are optional everywhere and
// added below; any -> Reset and any -> Error take nothing.
struct Row {
    uint32_t required, optional;
    bool access = false;
};
using Key = std::tuple<Svc, S, S>;

std::map<Key, Row> expected_table() {
    std::map<Key, Row> t;
    // RC.
    t[{Svc::Rc, S::Reset, S::Init}] = {kPkey | kPort, kAccess, true};
    t[{Svc::Rc, S::Init, S::Init}] = {0, kPkey | kPort | kAccess};
    t[{Svc::Rc, S::Init, S::Rtr}] = {kPath | kDest | kRpsn | kIrd | kRnr, kAlt | kAccess | kPkey};
    t[{Svc::Rc, S::Rtr, S::Rts}] = {kSpsn | kOrd, kPath | kAlt | kAccess | kRnr | kMig};
    t[{Svc::Rc, S::Rts, S::Rts}] = {0, kAccess | kAlt | kMig | kRnr};
    t[{Svc::Rc, S::Rts, S::Sqd}] = {0, kSqd};
    t[{Svc::Rc, S::Sqd, S::Rts}] = {0, kAlt | kAccess | kRnr | kMig};
    t[{Svc::Rc, S::Sqd, S::Sqd}] = {
        0, kPort | kPath | kOrd | kIrd | kAlt | kAccess | kPkey | kRnr | kMig};  // drained only
    // UD, then the special QPs (no port to change).
    for (Svc s : {Svc::Ud, Svc::Qp0, Svc::Qp1}) {
        const uint32_t port = s == Svc::Ud ? kPort : 0;
        t[{s, S::Init, S::Init}] = {0, kPkey | port | kQkey};
        t[{s, S::Init, S::Rtr}] = {0, kPkey | kQkey};
        t[{s, S::Rtr, S::Rts}] = {kSpsn, kQkey};
        t[{s, S::Rts, S::Rts}] = {0, kQkey};
        t[{s, S::Rts, S::Sqd}] = {0, kSqd};
        t[{s, S::Sqd, S::Rts}] = {0, kQkey};
        t[{s, S::Sqd, S::Sqd}] = {0, kPkey | kQkey};
        t[{s, S::Sqe, S::Rts}] = {0, kQkey};
    }
    t[{Svc::Ud, S::Reset, S::Init}] = {kPkey | kPort | kQkey, 0};
    t[{Svc::Qp0, S::Reset, S::Init}] = {kPkey, kQkey};
    t[{Svc::Qp1, S::Reset, S::Init}] = {kPkey | kQkey, 0};
    for (Svc s : {Svc::Rc, Svc::Ud, Svc::Qp0, Svc::Qp1})
        for (S from : {S::Reset, S::Init, S::Rtr, S::Rts, S::Sqd, S::Sqe, S::Error}) {
            t[{s, from, S::Reset}] = {0, 0};
            t[{s, from, S::Error}] = {0, 0};
        }
    return t;
}

const std::array<S, 7> kStates = {S::Reset, S::Init, S::Rtr, S::Rts, S::Sqd, S::Sqe, S::Error};
const std::array<Svc, 4> kServices = {Svc::Rc, Svc::Ud, Svc::Qp0, Svc::Qp1};

ri_qp_state_t value_of(S s) {
    switch (s) {
        case S::Reset:
            return RI_QP_STATE_IDLE;
        case S::Init:
            return RI_QP_STATE_INITIALIZED;
        case S::Rtr:
            return RI_QP_STATE_READY_TO_RECEIVE;
        case S::Rts:
            return RI_QP_STATE_READY_TO_SEND;
        case S::Sqd:
            return RI_QP_STATE_SEND_QUEUE_DRAINED;
        case S::Sqe:
            return RI_QP_STATE_SEND_QUEUE_ERROR;
        case S::Error:
            return RI_QP_STATE_ERROR;
    }
    return RI_QP_STATE_TIMEWAIT;
}

std::string name(Svc svc, S from, S to) {
    static const char *const st[] = {"Reset", "Init", "RTR", "RTS", "SQD", "SQE", "Error"};
    static const char *const sv[] = {"RC", "UD", "QP0", "QP1"};
    return std::string(sv[int(svc)]) + " " + st[int(from)] + "->" + st[int(to)];
}

ri_api_return_t check(S from, Svc svc, uint32_t mask, S to, bool drained = true) {
    IbQpState target{};
    const ri_api_return_t r =
        ib_check_modify(from, svc, drained, mask | RI_QP_ATTR_NEXT_STATE, value_of(to), target);
    if (r == RI_RET_SUCCESS) EXPECT_EQ(target, to);
    return r;
}

// Every edge: legal ones accept exactly their required bits (plus one access bit where one
// is required), refuse each required bit missing, take each optional bit, and refuse every
// other bit of the service type; illegal ones are QP_INVALID_STATE.
TEST(IbQpTransitions, EveryEdgeOfTable91) {
    const auto table = expected_table();
    int legal = 0;
    for (Svc svc : kServices)
        for (S from : kStates)
            for (S to : kStates) {
                SCOPED_TRACE(name(svc, from, to));
                const auto it = table.find({svc, from, to});
                // RQ_SIZE is refused while receives are live; test the sizes apart below.
                const uint32_t sizes = (from == S::Rtr || from == S::Rts || from == S::Sqd)
                                           ? RI_QP_ATTR_SQ_SIZE
                                           : kSizes;
                if (it == table.end()) {
                    EXPECT_EQ(check(from, svc, 0, to), RI_RET_QP_INVALID_STATE);
                    continue;
                }
                ++legal;
                const Row &row = it->second;
                const uint32_t base = row.required | (row.access ? kRead : 0);
                EXPECT_EQ(check(from, svc, base, to), RI_RET_SUCCESS);
                EXPECT_EQ(check(from, svc, base | sizes, to), RI_RET_SUCCESS);
                for (uint32_t bit = 1u << 1; bit <= kPort; bit <<= 1) {
                    if (!(ib_attrs_of(svc) & bit) || (bit & kSizes)) continue;
                    SCOPED_TRACE("bit " + std::to_string(__builtin_ctz(bit)));
                    if (row.required & bit) {
                        EXPECT_EQ(check(from, svc, base & ~bit, to), RI_RET_INVALID_PARAMETER);
                    } else if ((row.optional & bit) || (row.access && (bit & kAccess))) {
                        EXPECT_EQ(check(from, svc, base | bit, to), RI_RET_SUCCESS);
                    } else {
                        EXPECT_EQ(check(from, svc, base | bit, to),
                                  RI_RET_QP_ATTRIBUTE_CANT_CHANGE);
                    }
                }
                if (row.access)
                    EXPECT_EQ(check(from, svc, row.required, to), RI_RET_INVALID_PARAMETER)
                        << "one of the three access bits is required";
            }
    EXPECT_EQ(legal, 4 * 14 + 8 + 3 * 9) << "edges in the table";
}

// Step 2 before step 3: an attribute the service type lacks is a service-type error even on
// an edge that does not exist.
TEST(IbQpTransitions, ServiceTypeIsCheckedBeforeTheTransition) {
    for (uint32_t bit :
         {kOrd, kIrd, kRead, kWrite, kAtomic, kDest, kRpsn, kRnr, kPath, kAlt, kMig}) {
        for (Svc svc : {Svc::Ud, Svc::Qp0, Svc::Qp1}) {
            EXPECT_EQ(check(S::Reset, svc, bit, S::Rts), RI_RET_QP_INVALID_SERVICE_TYPE);
            EXPECT_EQ(check(S::Reset, svc, bit | kPkey | kPort | kQkey, S::Init),
                      RI_RET_QP_INVALID_SERVICE_TYPE);
        }
    }
    EXPECT_EQ(check(S::Reset, Svc::Rc, kQkey, S::Rts), RI_RET_QP_INVALID_SERVICE_TYPE);
    EXPECT_EQ(check(S::Reset, Svc::Rc, kQkey | kPkey | kPort | kRead, S::Init),
              RI_RET_QP_INVALID_SERVICE_TYPE);
}

TEST(IbQpTransitions, MaskBitsAboveThePortAreInvalid) {
    for (uint32_t bit = kPort << 1; bit != 0; bit <<= 1)
        EXPECT_EQ(check(S::Reset, Svc::Rc, bit, S::Error), RI_RET_INVALID_PARAMETER);
}

// States IB QPs do not have: Terminate and Closing (iWARP's) and TIMEWAIT (RNICPI L8421).
TEST(IbQpTransitions, IwarpStatesAndTimewaitAreInvalid) {
    for (uint32_t s : {uint32_t{RI_QP_STATE_TERMINATE}, uint32_t{RI_QP_STATE_CLOSING},
                       uint32_t{RI_QP_STATE_TIMEWAIT}, uint32_t{77}}) {
        EXPECT_FALSE(ib_state_of(s).has_value());
        IbQpState target{};
        EXPECT_EQ(ib_check_modify(S::Rts, Svc::Rc, true, RI_QP_ATTR_NEXT_STATE, s, target),
                  RI_RET_QP_INVALID_STATE);
    }
}

// Both SQD values name SQD; its attributes change only once the send queue drained.
TEST(IbQpTransitions, SqdByEitherNameAndAttributesOnlyWhenDrained) {
    IbQpState target{};
    for (ri_qp_state_t s : {RI_QP_STATE_SEND_QUEUE_DRAINING, RI_QP_STATE_SEND_QUEUE_DRAINED}) {
        ASSERT_EQ(ib_check_modify(S::Rts, Svc::Rc, false, RI_QP_ATTR_NEXT_STATE | kSqd, s, target),
                  RI_RET_SUCCESS);
        EXPECT_EQ(target, S::Sqd);
    }
    EXPECT_EQ(ib_check_modify(S::Sqd, Svc::Rc, false, kOrd, RI_QP_STATE_IDLE, target),
              RI_RET_QP_INVALID_STATE)
        << "draining: no attribute change yet";
    EXPECT_EQ(ib_check_modify(S::Sqd, Svc::Rc, true, kOrd, RI_QP_STATE_IDLE, target),
              RI_RET_SUCCESS);
    EXPECT_EQ(target, S::Sqd);
    EXPECT_EQ(ib_check_modify(S::Sqd, Svc::Ud, false, RI_QP_ATTR_NEXT_STATE | kQkey,
                              RI_QP_STATE_READY_TO_SEND, target),
              RI_RET_SUCCESS)
        << "back to RTS whether drained or not";
}

// Without NEXT_STATE the transition is to the same state: attribute changes in Init and
// RTS, nothing in RTR (table 91 has no RTR -> RTR).
TEST(IbQpTransitions, AttributeChangesWithoutANextState) {
    IbQpState target{};
    EXPECT_EQ(ib_check_modify(S::Init, Svc::Ud, true, kQkey, RI_QP_STATE_ERROR, target),
              RI_RET_SUCCESS)
        << "attrs.state is not read without NEXT_STATE";
    EXPECT_EQ(target, S::Init);
    EXPECT_EQ(ib_check_modify(S::Rts, Svc::Rc, true, kRnr, RI_QP_STATE_IDLE, target),
              RI_RET_SUCCESS);
    EXPECT_EQ(ib_check_modify(S::Rtr, Svc::Rc, true, kRnr, RI_QP_STATE_IDLE, target),
              RI_RET_QP_INVALID_STATE);
    EXPECT_EQ(ib_check_modify(S::Error, Svc::Rc, true, kRnr, RI_QP_STATE_IDLE, target),
              RI_RET_QP_ATTRIBUTE_CANT_CHANGE)
        << "Error -> Error takes nothing";
}

// The receive queue is not resized while receives are live (RTR, RTS, SQD).
TEST(IbQpTransitions, ReceiveQueueResizeOnlyBeforeRtr) {
    IbQpState target{};
    EXPECT_EQ(ib_check_modify(S::Init, Svc::Rc, true, RI_QP_ATTR_RQ_SIZE, RI_QP_STATE_IDLE, target),
              RI_RET_SUCCESS);
    for (S from : {S::Rtr, S::Rts, S::Sqd})
        EXPECT_EQ(ib_check_modify(from, Svc::Rc, true, RI_QP_ATTR_NEXT_STATE | RI_QP_ATTR_RQ_SIZE,
                                  RI_QP_STATE_ERROR, target),
                  RI_RET_QP_INVALID_STATE);
    EXPECT_EQ(ib_check_modify(S::Rts, Svc::Rc, true, RI_QP_ATTR_SQ_SIZE, RI_QP_STATE_IDLE, target),
              RI_RET_SUCCESS);
}

}  // namespace
}  // namespace softrnic::engine
