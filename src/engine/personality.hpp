// An RNIC instance's transport personality: the calls whose behaviour depends on whether
// the instance is an iWARP RNIC or an InfiniBand HCA.
//
// Each personality is one table of these entries; a Device points at its own, and the
// RNICPI ops dispatch through it once they have checked the RNIC handle (and, where the
// call takes one, found the QP). default_personality() answers every entry with the
// spec's "not supported" code; a personality states only what it implements and
// with_defaults() fills the rest from the default table, so a call a personality does not
// know about can never be a null pointer.
//
// Personalities:
//   iwarp_personality.cpp  iWARP (RDMAC verbs): the QP state machine of qp.cpp. The
//                          InfiniBand-only calls keep the default answer (L2370, L4178).
//   ib_personality.cpp     InfiniBand (docs/ib-personality.md): ri_rnic_modify today;
//                          address handles, multicast, special QPs, SMA MADs, UD datagrams
//                          and the IB QP state machine as they land. Chosen for an instance
//                          by softrnic_vp_create_ex (Device::personality).
#pragma once

#include <cstdint>

#include "rnicpi/rnicpi.h"

namespace softrnic::engine {

class Qp;
struct RnicHandle;

struct Personality {
    const char *name = nullptr;

    // ri_rnic_modify (L2293); the caller has checked the handle and its privilege. The
    // mask is the caller's ri_rnic_attr_mask_t read as an integer (engine/abi.hpp).
    ri_api_return_t (*rnic_modify)(RnicHandle &r, uint32_t mask,
                                   ri_rnic_modify_req_t *req) = nullptr;
    // ri_qp_create's transport checks (L3555), after the handles and before the engine
    // builds the QP: RI_RET_SUCCESS lets the creation go on.
    ri_api_return_t (*qp_create_check)(RnicHandle &r, const ri_qp_attr_t &attrs) = nullptr;
    // ri_qp_modify's state machine (L3725); the caller has found the QP and `attrs`. The
    // mask is the caller's ri_qp_attr_mask_t read as an integer (engine/abi.hpp): a C caller
    // may set bits the enumeration does not have.
    ri_api_return_t (*qp_modify)(Qp &qp, uint32_t mask, ri_qp_attr_t &attrs) = nullptr;
    // ri_special_qp_get (L4069).
    // `type` is the caller's ri_sqp_type_t read as an integer (engine/abi.hpp).
    ri_api_return_t (*special_qp_get)(RnicHandle &r, uint8_t port, uint32_t type,
                                      ri_qp_attr_t *attrs, ri_qp_handle_t *qp, ri_vp_data_t vp,
                                      ri_os_data_t os) = nullptr;
    // ri_qp_post_datagram (L4190): the QP handle is the personality's to check.
    ri_api_return_t (*qp_post_datagram)(RnicHandle &r, ri_qp_handle_t qp, ri_wr_type_t type,
                                        ri_wr_flags_t flags, ri_wr_id_t id, ri_data_seg_t *sg,
                                        uint_t num_sgl, uint32_t imm, ri_address_handle_t ah,
                                        uint32_t dest_qp, uint32_t qkey, uint8_t sl) = nullptr;
    // Address handles (L6361, L6441, L6506, L6559).
    ri_api_return_t (*ah_create)(RnicHandle &r, ri_pd_handle_t pd, ri_ud_address_vector_t *av,
                                 ri_address_handle_t *ah, ri_vp_data_t vp,
                                 ri_os_data_t os) = nullptr;
    ri_api_return_t (*ah_query)(RnicHandle &r, ri_address_handle_t ah, ri_ud_address_vector_t *av,
                                ri_pd_handle_t *pd) = nullptr;
    ri_api_return_t (*ah_modify)(RnicHandle &r, ri_address_handle_t ah,
                                 ri_ud_address_vector_t *av) = nullptr;
    ri_api_return_t (*ah_destroy)(RnicHandle &r, ri_address_handle_t ah) = nullptr;
    // Multicast groups (L6614, L6704).
    ri_api_return_t (*mcast_attach)(RnicHandle &r, ri_lid_t mlid, ri_gid_t *mgid, ri_qp_handle_t qp,
                                    ri_vp_data_t vp, ri_os_data_t os) = nullptr;
    ri_api_return_t (*mcast_detach)(RnicHandle &r, ri_lid_t mlid, ri_gid_t *mgid,
                                    ri_qp_handle_t qp) = nullptr;
    // Subnet management agent MADs (L6770).
    ri_api_return_t (*process_sma_mad)(RnicHandle &r, uint8_t port, char *mad_in,
                                       char *mad_out) = nullptr;
};

// Every entry answers "not supported": RI_RET_XPORT_UNSUPPORTED for the calls RNICPI
// defines for InfiniBand only ("called on a non-InfiniBand device", L2407),
// RI_RET_OP_UNSUPPORTED for the QP state machine, which every real personality has, and
// RI_RET_QP_INVALID_SERVICE_TYPE for ri_qp_create (no service type offered, L3636).
const Personality &default_personality();

// `overrides` with each null entry taken from default_personality().
Personality with_defaults(const Personality &overrides);

// The iWARP RNIC (iwarp_personality.cpp); what every instance is today.
const Personality &iwarp_personality();

// The InfiniBand HCA (ib_personality.cpp): an instance of softrnic_vp_create_ex's
// SOFTRNIC_KIND_IB.
const Personality &ib_personality();

}  // namespace softrnic::engine
