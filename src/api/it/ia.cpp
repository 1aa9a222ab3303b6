// Interfaces and IAs: it_interface_list, it_ia_create, it_ia_free, it_ia_query,
// it_ia_info_free. See it_internal.hpp for what the sources share.
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "it_internal.hpp"

namespace softrnic::itapi {

namespace {

// Which IA every it_ia_info_t handed out belongs to, so that it_ia_info_free recognises
// the blocks it made (and ignores any other pointer) and it_ia_free frees what is left.
std::mutex g_info_mu;
std::map<const it_ia_info_t *, InfoBlock *> &info_owners() {
    static auto *m = new std::map<const it_ia_info_t *, InfoBlock *>;
    return *m;
}

// The spigot's network addresses: the RNIC's port addresses.
std::vector<it_net_addr_t> spigot_addresses(const api::RnicInstance::Attributes &a) {
    std::vector<it_net_addr_t> out;
    for (const in_addr &v4 : a.ipv4) {
        it_net_addr_t n{};
        n.addr_type = IT_IPV4;
        n.addr.ipv4 = v4;
        out.push_back(n);
    }
    for (const in6_addr &v6 : a.ipv6) {
        it_net_addr_t n{};
        n.addr_type = IT_IPV6;
        n.addr.ipv6 = v6;
        out.push_back(n);
    }
    return out;
}

it_boolean_t tf(bool b) {
    return b ? IT_TRUE : IT_FALSE;
}

}  // namespace

it_status_t ia_create(const char *name, uint32_t major, uint32_t minor, it_ia_handle_t *out) {
    if (!out) return IT_ERR_FAULT;
    bool known = false;
    for (const InterfaceDesc &d : kInterfaces)
        known = known || (name && std::string_view(name) == d.name);
    if (!known) return IT_ERR_INVALID_NAME;
    // Every minor version up to the one it_interface_list reports, of that major version
    // only: earlier major versions need not be supported (IT-API L5857-L5860), and this
    // library offers the 1.0 routine names only as bindings over the 2.1 semantics.
    if (major != kApiMajor) return IT_ERR_INVALID_MAJOR_VERSION;
    if (minor > kApiMinor) return IT_ERR_INVALID_MINOR_VERSION;
    auto ia = std::make_unique<Ia>(IT_HANDLE_TYPE_IA, nullptr);
    ia->ia = ia.get();
    ia->name = name;
    ia->major = major;
    ia->minor = minor;
    // The consumer-serialised view (api::RnicInstance), as the uDAPL provider opens it.
    if (!ia->dev.open("itapi", ia.get())) return IT_ERR_RESOURCES;
    ia->rnic = ia->dev.rnic();
    api::RnicInstance::Attributes attrs;
    if (!ia->dev.query(attrs)) return IT_ERR_RESOURCES;
    ia->attr = attrs.attr;
    ia->iwarp_flags = attrs.iwarp_flags;
    ia->addrs = spigot_addresses(attrs);
    handles().add(ia.get(), IT_HANDLE_TYPE_IA);
    *out = reinterpret_cast<it_ia_handle_t>(ia.release());
    return IT_SUCCESS;
}

it_status_t ia_free(it_ia_handle_t h) {
    Ia *ia = as_ia(h);
    if (!ia) return IT_ERR_INVALID_IA;
    std::vector<Obj *> kids;
    {
        std::lock_guard lk(ia->mu);
        kids.assign(ia->children.begin(), ia->children.end());
    }
    // A callback in progress on any EVD: nothing is freed (IT-API L5924-L5926).
    for (Obj *o : kids) {
        if (o->type != IT_HANDLE_TYPE_EVD) continue;
        auto *evd = static_cast<Evd *>(o);
        std::lock_guard lk(evd->mu);
        if (evd->in_callback) return IT_ERR_INVALID_EVD_STATE;
    }
    // Unblock every waiter (IT-API L5923-L5924), give them a moment to leave, then free the
    // children: SEVDs before the AEVDs they feed, RMRs before the LMRs they may be linked
    // to, PZs last (later slices put EPs and listens before them).
    for (Obj *o : kids)
        if (o->type == IT_HANDLE_TYPE_EVD) evd_abort(static_cast<Evd *>(o));
    auto busy = [&] {
        for (Obj *o : kids)
            if (o->type == IT_HANDLE_TYPE_EVD && evd_has_waiters(static_cast<Evd *>(o)))
                return true;
        return false;
    };
    for (int i = 0; i < 2000 && busy(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (bool aggregates : {false, true})
        for (Obj *o : kids)
            if (o->type == IT_HANDLE_TYPE_EVD && static_cast<Evd *>(o)->aggregate() == aggregates)
                evd_free_now(static_cast<Evd *>(o));
    for (Obj *o : kids)
        if (o->type == IT_HANDLE_TYPE_RMR) rmr_free_now(static_cast<Rmr *>(o));
    for (Obj *o : kids)
        if (o->type == IT_HANDLE_TYPE_LMR) lmr_free_now(static_cast<Lmr *>(o));
    for (Obj *o : kids)
        if (o->type == IT_HANDLE_TYPE_PZ) pz_free_now(static_cast<Pz *>(o));
    mem_unmap_all(ia);
    {
        std::lock_guard lk(g_info_mu);
        std::lock_guard ilk(ia->mu);
        for (InfoBlock *b : ia->infos) {
            info_owners().erase(&b->info);
            delete b;
        }
        ia->infos.clear();
    }
    ia->rnic = nullptr;
    ia->dev.close();
    handles().retire(ia, destroy_obj);
    return IT_SUCCESS;
}

it_status_t ia_query(it_ia_handle_t h, it_ia_info_t **out) {
    if (out) *out = nullptr;  // on failure *ia_info is NULL (IT-API L6024-L6025)
    Ia *ia = as_ia(h);
    if (!ia) return IT_ERR_INVALID_IA;
    if (!out) return IT_ERR_FAULT;
    auto b = std::make_unique<InfoBlock>();
    b->owner = ia;
    it_ia_info_t &i = b->info;
    const ri_rnic_attr_t &ra = ia->attr;
    b->name = ia->name;
    b->addrs = ia->addrs;
    i.ia_name = b->name.data();
    i.api_major_version = kApiMajor;
    i.api_minor_version = kApiMinor;
    i.sw_major_version = SOFTRNIC_VERSION_MAJOR;
    i.sw_minor_version = SOFTRNIC_VERSION_MINOR;
    i.vendor.iwarp.valid_vid = IT_FALSE;
    i.dto_alignment_hint = 64;
    i.transport_type = IT_IWARP_TCP_TRANSPORT;
    i.supported_service_types = IT_RC_SERVICE;  // iWARP: RC only (IT-API L1977)
    i.ep_work_queues_resizable = tf(ra.rnic_flags & RI_RNIC_CAN_RESIZE_QP);
    i.three_way_handshake_support = IT_FALSE;  // iWARP: two-way only
    i.private_data_support = IT_TRUE;
    i.max_message_size_support = IT_FALSE;
    i.ird_ord_ia_support = IT_TRUE;
    i.ird_ord_suppressible = IT_TRUE;
    i.spigot_online_support = IT_FALSE;
    i.spigot_offline_support = IT_FALSE;
    // What an iWARP IA reports (IT-API L17820-L17822).
    i.connect_private_data_len = IT_MAX_PRIV_DATA;
    i.accept_private_data_len = IT_MAX_PRIV_DATA;
    i.reject_private_data_len = IT_MAX_PRIV_DATA;
    i.disconnect_private_data_len = 0;
    i.ud_req_private_data_len = 0;
    i.ud_rep_private_data_len = 0;
    // One spigot: the RNIC's one port, with every address of this host's interfaces.
    it_spigot_info_t s{};
    s.spigot_id = 0;
    s.max_rc_send_len = size_t(1) << 30;
    s.max_rc_rdma_len = size_t(1) << 30;
    s.max_ud_send_len = 0;
    s.spigot_online = IT_TRUE;
    s.active_side_conn_qual = IT_IANA_PORT;
    s.passive_side_conn_qual = IT_IANA_PORT;
    s.num_net_addr = b->addrs.size();
    s.net_addr = b->addrs.empty() ? nullptr : b->addrs.data();
    b->spigots.push_back(s);
    i.num_spigots = b->spigots.size();
    i.spigot_info = b->spigots.data();
    {
        std::lock_guard lk(ia->mu);
        i.affiliated_err_evd = reinterpret_cast<it_evd_handle_t>(ia->aff);
        i.unaffiliated_err_evd = reinterpret_cast<it_evd_handle_t>(ia->unaff);
    }
    i.srq_support = tf(ra.max_srq > 0);
    i.hard_hi_watermark_support = tf(ra.max_srq > 0);
    i.soft_hi_watermark_support = tf(ra.max_srq > 0);
    i.srq_resizable = tf(ra.rnic_flags & RI_RNIC_CAN_RESIZE_SRQ);
    i.extended_iwarp_qp_states = IT_FALSE;
    i.socket_conversion_support = IT_TRUE;  // iff iWARP (IT-API L15289-L15291)
    i.rdma_read_ord_increasable = tf(ia->iwarp_flags & RI_IWARP_CAN_INCREASE_ORD);
    i.rdma_read_ird_modifiable = tf(ia->iwarp_flags & RI_IWARP_CAN_MODIFY_IRD);
    i.rmr_types_supported = (ra.rnic_flags & RI_RNIC_WIDE_WINDOWS_SUPPORTED)
                                ? it_rmr_type_t(IT_RMR_TYPE_NARROW | IT_RMR_TYPE_WIDE)
                                : IT_RMR_TYPE_NARROW;
    i.addr_mode_relative_support = tf(ra.rnic_flags & RI_RNIC_EXT_ZBVA);
    i.rdma_read_requires_remote_write = IT_TRUE;  // iWARP
    i.ep_rdma_enables_modifiable = IT_TRUE;
    i.rdma_read_local_extensions = IT_FALSE;
    i.dto_evd_overflow_detection = tf(ra.rnic_flags & RI_RNIC_CQ_OVERFLOW_CHECKING);
    i.atomic_support = IT_FALSE;  // iWARP has none in IT-API (IT-API L8063)
    i.lmr_link_support = IT_FALSE;
    i.direct_lmr_handle_support = IT_FALSE;
    i.direct_lmr_handle = nullptr;
    i.post_send_unlink_remote_support = IT_FALSE;
    i.narrow_rmr_unlink_support = IT_TRUE;
    i.wide_rmr_unlink_support = tf(ra.rnic_flags & RI_RNIC_WIDE_WINDOWS_SUPPORTED);
    i.unlink_fence_support = IT_FALSE;
    i.iobl_types_supported = it_iobl_type_t(0);
    InfoBlock *raw = b.release();
    {
        std::lock_guard lk(g_info_mu);
        info_owners()[&raw->info] = raw;
        std::lock_guard ilk(ia->mu);
        ia->infos.insert(raw);
    }
    *out = &raw->info;
    return IT_SUCCESS;
}

void ia_info_free(it_ia_info_t *info) {
    if (!info) return;
    InfoBlock *b = nullptr;
    {
        std::lock_guard lk(g_info_mu);
        auto it = info_owners().find(info);
        if (it == info_owners().end()) return;  // not ours, or freed with its IA
        b = it->second;
        info_owners().erase(it);
        // Its IA is live: it_ia_free takes g_info_mu to remove the blocks left.
        std::lock_guard ilk(b->owner->mu);
        b->owner->infos.erase(b);
    }
    delete b;
}

}  // namespace softrnic::itapi
