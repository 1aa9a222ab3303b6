// InfiniBand address handles (RNICPI L6361-6598; docs/ib-personality.md 4.4): objects of an
// IB instance, owned by the RNIC handle they were created on and using their PD, so that
// ri_pd_dealloc refuses while a handle still names the PD (RI_RET_PD_INUSE).
//
// "AH in use by posted WRs": a UD send copies the vector out at post time (resolve), so a
// later ri_ah_modify or ri_ah_destroy never changes a send already posted; a send posted
// after the destroy names an invalid handle and is refused at post time
// (RI_RET_ADDRESS_HANDLE_INVALID).
#include "engine/ah.hpp"

#include <mutex>

#include "base/log.hpp"
#include "engine/device.hpp"
#include "engine/qp.hpp"

namespace softrnic::engine {

namespace {

constexpr uint32_t kMaxFlowLabel = 0xFFFFF;  // 20 bits (IBA 1.2 ch. 8, GRH)

ri_api_return_t invalid(const char *why) {
    SOFTRNIC_LOG(Debug, Engine, "address vector refused: %s", why);
    return RI_RET_INVALID_PARAMETER;
}

bool gid_is_zero(const ri_gid_t &g) {
    return g.gid_prefix == 0 && g.gid_guid == 0;
}

}  // namespace

ri_api_return_t check_address_vector(const transport::ib::Hca &hca,
                                     const ri_ud_address_vector_t &v) {
    const ri_gen_address_vector_t &a = v.av_common;
    if (v.physical_port < 1 || v.physical_port > hca.num_ports()) return invalid("no such port");
    // LID 0 is reserved; the permissive LID addresses only directed-route SMPs (IBA 1.2
    // ch. 7), never a UD destination.
    if (a.dlid == 0 || a.dlid == kPermissiveLid) return invalid("DLID 0 or permissive");
    if (a.sl > 15) return invalid("SL above 15");
    // The ports have LMC 0 (one LID each): every source path bit would name a LID the port
    // does not own.
    if (a.source_path_bits != 0) return invalid("source path bits with LMC 0");
    if (a.max_static_rate > kMaxStaticRate) return invalid("static rate");
    if (a.send_global_routing_hdr_flg) {
        if (a.source_gid_index >= transport::ib::kGidTableSize) return invalid("SGID index");
        if (gid_is_zero(hca.port(v.physical_port).gids[a.source_gid_index]))
            return invalid("SGID index names an empty GID entry");
        if (a.flow_label > kMaxFlowLabel) return invalid("flow label above 20 bits");
        // A multicast DLID goes with a multicast DGID (IBA 1.2 ch. 10, multicast).
        const bool mc_dgid = (a.dgid.gid_prefix >> 56) == 0xFF;
        if (a.dlid >= kFirstMulticastLid && !mc_dgid)
            return invalid("multicast DLID with a unicast DGID");
        if (a.dlid < kFirstMulticastLid && mc_dgid)
            return invalid("unicast DLID with a multicast DGID");
        if (gid_is_zero(a.dgid)) return invalid("zero DGID");
    }
    return RI_RET_SUCCESS;
}

ResolvedAv resolve(const Ah &ah) {
    std::lock_guard lk(ah.mu);
    const ri_gen_address_vector_t &a = ah.av.av_common;
    ResolvedAv r;
    r.port = ah.av.physical_port;
    r.dlid = a.dlid;
    r.sl = a.sl;
    r.path_bits = a.source_path_bits;
    r.grh = a.send_global_routing_hdr_flg != 0;
    r.sgid_index = a.source_gid_index;
    r.hop_limit = a.hop_limit;
    r.traffic_class = a.traffic_class;
    r.flow_label = a.flow_label;
    r.dgid = a.dgid;
    return r;
}

Ah *Device::owned_ah(void *handle, const RnicHandle *owner) {
    if (!ahs) return nullptr;
    Ah *a = ahs->lookup(handle);
    return (a && a->owner == owner) ? a : nullptr;
}

ri_api_return_t Device::create_ah(RnicHandle &owner, void *pd_handle,
                                  const ri_ud_address_vector_t &av, ri_os_data_t os, Ah *&out) {
    out = nullptr;
    Pd *p = owned_pd(pd_handle, &owner);
    if (!p) return RI_RET_PD_INVALID_HANDLE;  // "RI_RET_PD_INVALID" on the page (L6414)
    if (ri_api_return_t r = check_address_vector(*hca, av); r != RI_RET_SUCCESS) return r;
    auto a = std::make_unique<Ah>();
    a->dev = this;
    a->owner.reset(&owner);
    a->os_data = os;
    a->pd.reset(p);
    a->pd_handle = pd_handle;
    a->av = av;
    Ah *raw_ah = a.get();
    void *h = ahs->insert(std::move(a));
    if (!h) return RI_RET_RESOURCE_SHORTAGE;
    raw_ah->handle = h;
    out = raw_ah;
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::modify_ah(RnicHandle &owner, void *handle,
                                  const ri_ud_address_vector_t &av) {
    Ah *a = owned_ah(handle, &owner);
    if (!a) return RI_RET_ADDRESS_HANDLE_INVALID;
    if (ri_api_return_t r = check_address_vector(*hca, av); r != RI_RET_SUCCESS) return r;
    std::lock_guard lk(a->mu);
    a->av = av;
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::query_ah(RnicHandle &owner, void *handle, ri_ud_address_vector_t &av,
                                 void *&pd_handle) {
    Ah *a = owned_ah(handle, &owner);
    if (!a) return RI_RET_ADDRESS_HANDLE_INVALID;
    std::lock_guard lk(a->mu);
    av = a->av;
    pd_handle = a->pd_handle;
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::destroy_ah(RnicHandle &owner, void *handle) {
    if (!owned_ah(handle, &owner)) return RI_RET_ADDRESS_HANDLE_INVALID;
    // No event names an address handle: nothing to drain.
    if (!ahs->erase(handle)) return RI_RET_ADDRESS_HANDLE_INVALID;
    return RI_RET_SUCCESS;
}

}  // namespace softrnic::engine
