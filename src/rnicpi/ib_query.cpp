// ri_rnic_query on an InfiniBand instance (docs/ib-personality.md §2.1): the common
// attributes, ri_ib_rnic_attr_t, and with RI_QUERY_RNIC_PORT_INFO one ri_ib_port_attr_t per
// port with its GID and P_Key tables, all in the caller's buffer. Layout:
//
//   ri_rnic_attr_t | ri_ib_rnic_attr_t | ri_ib_port_attr_t[n] | ri_gid_t[n][16] | ri_pkey_t[n][16]
//
// (every part but the last a multiple of 8 bytes long, so each stays aligned). The size
// depends only on the port count, so the query_size given at attach is exact (L2269).
#include <cstring>

#include "engine/device.hpp"
#include "engine/qp.hpp"
#include "rnicpi/provider.hpp"
#include "transport/ib_port.hpp"

namespace softrnic::rnicpi {

using namespace softrnic::engine;
namespace ib = softrnic::transport::ib;

namespace {

static_assert(sizeof(ri_rnic_attr_t) % alignof(ri_gid_t) == 0 &&
              sizeof(ri_ib_rnic_attr_t) % alignof(ri_gid_t) == 0 &&
              sizeof(ri_ib_port_attr_t) % alignof(ri_gid_t) == 0);

// What the personality offers so far (§10). The flags and limits of what is not built yet
// (RNR NAK, AH port check, atomics, UD multicast, type 2B windows; multicast groups) are
// reported once their calls answer: multicast limits are zero without multicast (L7960).
constexpr uint32_t kIbRnicFlags =
    RI_IB_PORT_ACTIVE_EVENT | RI_IB_PKEY_CNTR | RI_IB_QKEY_CNTR | RI_IB_SI_GUID;

// As iWARP's, minus the iWARP-only EXT_ZBVA and EXT_LIF (L7683-7684) and
// SAFE_POST_ON_RTS, which means nothing where the peer is in RTR before it is sent to.
constexpr uint32_t kIbCommonFlags =
    RI_RNIC_EXT_SRQ | RI_RNIC_EXT_BMM | RI_RNIC_RQ_OVERFLOW_CHECKING |
    RI_RNIC_CQ_OVERFLOW_CHECKING | RI_RNIC_CAN_RESIZE_QP | RI_RNIC_CAN_RESIZE_SRQ |
    RI_RNIC_WIDE_WINDOWS_SUPPORTED | RI_RNIC_KEY_INDEX_KEY_SPLIT | RI_RNIC_CONSUMER0_OPAQUE |
    RI_RNIC_CONSUMER1_OPAQUE | RI_RNIC_LOCAL_SOLICITED_EVENT;

constexpr size_t kPortBytes = sizeof(ri_ib_port_attr_t) + ib::kGidTableSize * sizeof(ri_gid_t) +
                              ib::kPkeyTableSize * sizeof(ri_pkey_t);

}  // namespace

ri_api_return_t fill_ib_rnic_attr(Device &d, uint32_t flags, ri_rnic_attr_t *attrs,
                                  uint_t *attr_size) {
    ib::Hca &hca = *d.hca;
    const size_t n = hca.num_ports();
    const bool ports = flags & RI_QUERY_RNIC_PORT_INFO;
    size_t need = sizeof(ri_rnic_attr_t) + sizeof(ri_ib_rnic_attr_t) + (ports ? n * kPortBytes : 0);
    if (*attr_size < need) {
        *attr_size = static_cast<uint_t>(need);
        return RI_RET_BUFFER_TOO_SMALL;  // and the buffer is left untouched (L2268)
    }
    if (!attrs) return RI_RET_INVALID_PARAMETER;
    auto *base = reinterpret_cast<unsigned char *>(attrs);
    std::memset(base, 0, need);
    ri_rnic_attr_t &a = *attrs;
    fill_common_rnic_attr(d, a);
    a.transport_type = RI_RDMA_TRANSPORT_TYPE_IB;
    a.rnic_flags = static_cast<ri_rnic_flags_t>(kIbCommonFlags);
    auto *iba = reinterpret_cast<ri_ib_rnic_attr_t *>(base + sizeof(ri_rnic_attr_t));
    a.trans_attr.ib = iba;
    iba->max_mr_size = uint64_t{Limits::kMaxPbl} * Limits::kPageSize;
    iba->node_guid = hca.node_guid();
    iba->system_image_guid = hca.system_image_guid();
    iba->ib_rnic_flags = static_cast<ri_ib_rnic_flags_t>(kIbRnicFlags);
    iba->max_addr_hdls = Limits::kMaxAddrHandles;
    iba->partition_table_size = ib::kPkeyTableSize;  // L7965: at least 1
    iba->num_ports = static_cast<uint8_t>(n);        // valid without port data too (L7982)
    iba->local_ack_delay = 0;
    if (ports) {
        unsigned char *p = base + sizeof(ri_rnic_attr_t) + sizeof(ri_ib_rnic_attr_t);
        auto *pa = reinterpret_cast<ri_ib_port_attr_t *>(p);
        auto *gids = reinterpret_cast<ri_gid_t *>(p + n * sizeof(ri_ib_port_attr_t));
        auto *pkeys = reinterpret_cast<ri_pkey_t *>(reinterpret_cast<unsigned char *>(gids) +
                                                    n * ib::kGidTableSize * sizeof(ri_gid_t));
        for (size_t i = 0; i < n; ++i) {
            ib::PortAttributes port = hca.port(static_cast<uint8_t>(i + 1));
            ri_gid_t *g = gids + i * ib::kGidTableSize;
            ri_pkey_t *k = pkeys + i * ib::kPkeyTableSize;
            std::memcpy(g, port.gids.data(), sizeof port.gids);
            std::memcpy(k, port.pkeys.data(), sizeof port.pkeys);
            ri_ib_port_attr_t &o = pa[i];
            o.src_gid_table = g;
            o.pkey_table = k;
            o.src_gid_table_size = ib::kGidTableSize;
            o.max_msg_size = ib::kMaxMsgSize;
            o.max_mtu = RI_IB_MTU_4K;  // §2.4; the active MTU is PortInfo's (the SMA's)
            o.ib_port_state = port.state;
            o.ib_port_flags = port.capabilities;
            o.base_lid = port.lid;
            o.sm_lid = port.sm_lid;
            o.bad_pkey_count = port.bad_pkey_count;
            o.bad_qkey_count = port.bad_qkey_count;
            o.lmc = 0;
            o.max_vls = 1;
            o.sm_sl = 0;
            o.subnet_timeout = ib::kSubnetTimeout;
            o.init_type_reply = 0;  // no InitType (L7914: zero if unsupported)
        }
        iba->port_attrs = pa;
    }
    *attr_size = static_cast<uint_t>(need);
    return RI_RET_SUCCESS;
}

}  // namespace softrnic::rnicpi
