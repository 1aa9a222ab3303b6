// The iWARP personality: an RDMAC verbs RNIC. It creates QPs, and its QP state machine
// is Qp::modify (qp.cpp); every InfiniBand-only call keeps the default "not an InfiniBand device".
#include "engine/personality.hpp"
#include "engine/qp.hpp"

namespace softrnic::engine {

namespace {

// Every iWARP QP is an RC QP of the RDMAC verbs; objects.cpp checks the rest.
ri_api_return_t iwarp_qp_create_check(RnicHandle &, const ri_qp_attr_t &) {
    return RI_RET_SUCCESS;
}

ri_api_return_t iwarp_qp_modify(Qp &qp, uint32_t mask, ri_qp_attr_t &attrs) {
    return qp.modify(mask, attrs);
}

Personality make_iwarp() {
    Personality p;
    p.name = "iwarp";
    p.qp_create_check = iwarp_qp_create_check;
    p.qp_modify = iwarp_qp_modify;
    return with_defaults(p);
}

}  // namespace

const Personality &iwarp_personality() {
    static const Personality p = make_iwarp();
    return p;
}

}  // namespace softrnic::engine
