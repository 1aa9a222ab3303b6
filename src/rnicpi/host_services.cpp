// The RNICPI host services: what RNICPI expects the host stack (its "access layer") to
// provide around a verbs provider (device registry, ri_svc_* services, ri_rnic_get_hdl),
// plus softrnic.h. softrnic is both the provider and its own host (a user-space library has
// no kernel to play kAL), so these live here, below every API layer that will use them.
// Not to be confused with the IB Access Layer (ib_*), an API layer above RNICPI.
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "base/log.hpp"
#include "engine/abi.hpp"
#include "engine/device.hpp"
#include "engine/qp.hpp"
#include "rnicpi/provider.hpp"
#include "softrnic/softrnic.h"
#include "transport/ib_port.hpp"
#include "transport/loopback/loopback.hpp"

namespace softrnic::rnicpi {

using namespace softrnic::engine;

namespace {

struct Instances {
    std::mutex mu;
    std::map<std::string, std::unique_ptr<Device>> devices;
    std::set<const void *> vps;
    std::set<const void *> rnics;
    std::map<std::pair<uintptr_t, uint64_t>, uint32_t> pins;
};

Instances &registry() {
    static Instances *r = new Instances();  // never destroyed: handles may outlive statics
    return *r;
}

}  // namespace

void register_rnic(RnicHandle *r) {
    std::lock_guard lk(registry().mu);
    registry().rnics.insert(r);
}

void unregister_rnic(RnicHandle *r) {
    std::lock_guard lk(registry().mu);
    registry().rnics.erase(r);
}

void fill_common_rnic_attr(Device &d, ri_rnic_attr_t &a) {
    a.mem_page_sizes_bit_mask = Limits::kPageSize;
    a.vendor_id = 0x534652;  // "SFR"
    a.vendor_part_id = 1;
    a.hw_version = 1;
    a.res_ltag_value = 0;  // STag0
    a.max_pds = Limits::kMaxPds;
    a.max_qps = Limits::kMaxQps;
    a.max_wrs_qp = Limits::kMaxWrsQp;
    a.max_srq = Limits::kMaxSrqs;
    a.max_wrs_srq = Limits::kMaxWrsSrq;
    a.max_sgl_send_recvqp = Limits::kMaxSge;
    a.max_sgl_srq = Limits::kMaxSge;
    a.max_sgl_rdma_write = Limits::kMaxSge;
    a.max_sgl_rdma_read = Limits::kMaxSge;
    a.max_unregistered_inline = Limits::kMaxInline;
    a.max_cqs = Limits::kMaxCqs;
    a.max_cqes_per_cq = Limits::kMaxCqes;
    a.max_cq_event_handlers = Limits::kMaxCqHandlers;
    a.max_mrs = d.stags.capacity() - 1;
    a.max_mws = d.stags.capacity() - 1;
    a.max_pbl_size = Limits::kMaxPbl;
    a.max_ird = Limits::kMaxIrdQp * Limits::kMaxQps;
    a.max_ird_per_qp = Limits::kMaxIrdQp;
    a.max_ord = Limits::kMaxOrdQp * Limits::kMaxQps;
    a.max_ord_per_qp = Limits::kMaxOrdQp;
    std::snprintf(a.addl_vendor_info, sizeof a.addl_vendor_info, "softrnic %s", d.name().c_str());
}

ri_api_return_t fill_rnic_attr(Device &d, uint32_t flags, ri_rnic_attr_t *attrs,
                               uint_t *attr_size) {
    if (flags & ~uint32_t(RI_QUERY_RNIC_PORT_INFO)) return RI_RET_INVALID_PARAMETER;
    if (!attr_size) return RI_RET_INVALID_PARAMETER;
    if (d.is_ib()) return fill_ib_rnic_attr(d, flags, attrs, attr_size);
    std::vector<in_addr> v4;
    std::vector<in6_addr> v6;
    if (flags & RI_QUERY_RNIC_PORT_INFO) {
        ifaddrs *ifa = nullptr;
        if (getifaddrs(&ifa) == 0) {
            for (ifaddrs *i = ifa; i; i = i->ifa_next) {
                if (!i->ifa_addr) continue;
                if (i->ifa_addr->sa_family == AF_INET)
                    v4.push_back(reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr);
                else if (i->ifa_addr->sa_family == AF_INET6)
                    v6.push_back(reinterpret_cast<sockaddr_in6 *>(i->ifa_addr)->sin6_addr);
            }
            freeifaddrs(ifa);
        }
    }
    size_t need = sizeof(ri_rnic_attr_t) + sizeof(ri_iwarp_rnic_attr_t);
    if (flags & RI_QUERY_RNIC_PORT_INFO)
        need += sizeof(ri_iwarp_port_attr_t) + v6.size() * sizeof(in6_addr) +
                v4.size() * sizeof(in_addr);
    if (*attr_size < need) {
        *attr_size = static_cast<uint_t>(need);
        return RI_RET_BUFFER_TOO_SMALL;  // and the buffer is left untouched (L2268)
    }
    if (!attrs) return RI_RET_INVALID_PARAMETER;
    auto *base = reinterpret_cast<unsigned char *>(attrs);
    std::memset(base, 0, need);
    auto *iw = reinterpret_cast<ri_iwarp_rnic_attr_t *>(base + sizeof(ri_rnic_attr_t));
    ri_rnic_attr_t &a = *attrs;
    fill_common_rnic_attr(d, a);
    a.trans_attr.iwarp = iw;
    a.transport_type = RI_RDMA_TRANSPORT_TYPE_IWARP;
    a.rnic_flags = static_cast<ri_rnic_flags_t>(
        RI_RNIC_EXT_SRQ | RI_RNIC_EXT_BMM | RI_RNIC_EXT_ZBVA | RI_RNIC_EXT_LIF |
        RI_RNIC_RQ_OVERFLOW_CHECKING | RI_RNIC_CQ_OVERFLOW_CHECKING | RI_RNIC_CAN_RESIZE_QP |
        RI_RNIC_CAN_RESIZE_SRQ | RI_RNIC_SAFE_POST_ON_RTS | RI_RNIC_WIDE_WINDOWS_SUPPORTED |
        RI_RNIC_KEY_INDEX_KEY_SPLIT | RI_RNIC_CONSUMER0_OPAQUE | RI_RNIC_CONSUMER1_OPAQUE |
        RI_RNIC_LOCAL_SOLICITED_EVENT);
    iw->protocol_version = 1;  // IETF
    iw->num_ports = 1;
    iw->iwarp_rnic_flags =
        static_cast<ri_iwarp_rnic_flags_t>(RI_IWARP_CAN_MODIFY_IRD | RI_IWARP_CAN_INCREASE_ORD |
                                           RI_IWARP_TCP_SUPPORTED | RI_IWARP_PREFER_CRC);
    if (flags & RI_QUERY_RNIC_PORT_INFO) {
        unsigned char *p = base + sizeof(ri_rnic_attr_t) + sizeof(ri_iwarp_rnic_attr_t);
        auto *port = reinterpret_cast<ri_iwarp_port_attr_t *>(p);
        p += sizeof(ri_iwarp_port_attr_t);
        auto *a6 = reinterpret_cast<in6_addr *>(p);
        std::memcpy(a6, v6.data(), v6.size() * sizeof(in6_addr));
        p += v6.size() * sizeof(in6_addr);
        auto *a4 = reinterpret_cast<in_addr *>(p);
        std::memcpy(a4, v4.data(), v4.size() * sizeof(in_addr));
        port->ipv6_addrs = v6.empty() ? nullptr : a6;
        port->ipv4_addrs = v4.empty() ? nullptr : a4;
        port->port_num = 1;
        port->num_ipv4_addrs = static_cast<uint_t>(v4.size());
        port->num_ipv6_addrs = static_cast<uint_t>(v6.size());
        iw->port_attrs = port;
    }
    *attr_size = static_cast<uint_t>(need);
    return RI_RET_SUCCESS;
}

namespace {

// A configuration field is read only when the caller's struct is long enough to hold it.
template <class F>
F field_or_zero(const softrnic_vp_config_t &c, F softrnic_vp_config_t::*field, size_t offset) {
    return offset + sizeof(F) <= c.size ? c.*field : F{};
}
#define SOFTRNIC_CFG_FIELD(c, f) \
    field_or_zero(c, &softrnic_vp_config_t::f, offsetof(softrnic_vp_config_t, f))

// SOFTRNIC_IB_PORTS / SOFTRNIC_IB_MTU: the value, or the default with a warning when the
// value is not one of those allowed.
uint32_t env_number(base::EnvVar var, uint32_t fallback, bool (*ok)(uint32_t)) {
    const char *v = base::env_value(var);
    if (!v || !*v) return fallback;
    char *end = nullptr;
    unsigned long n = std::strtoul(v, &end, 10);
    if (*end == '\0' && n <= UINT32_MAX && ok(static_cast<uint32_t>(n)))
        return static_cast<uint32_t>(n);
    SOFTRNIC_LOG(Warn, Rnicpi, "%s=%s is not a valid value: %u is used",
                 base::env_vars()[static_cast<size_t>(var)].name, v, fallback);
    return fallback;
}

bool valid_port_count(uint32_t n) {
    return n >= 1 && n <= transport::ib::kMaxPorts;
}
bool valid_mtu(uint32_t n) {
    return transport::ib::mtu_from_bytes(n) != 0;
}

// softrnic_vp_create_ex's configuration: RI_RET_SUCCESS with `out` empty for an iWARP
// instance, or with the ports of an IB one; RI_RET_INVALID_PARAMETER for a bad value.
ri_api_return_t ib_config(const char *name, const softrnic_vp_config_t &c,
                          std::optional<transport::ib::HcaConfig> &out) {
    namespace ib = transport::ib;
    out.reset();
    if (c.size < offsetof(softrnic_vp_config_t, kind) + sizeof c.kind)
        return RI_RET_INVALID_PARAMETER;
    const uint32_t kind = raw(c.kind);  // any int a C caller stored
    if (kind == SOFTRNIC_KIND_IWARP) return RI_RET_SUCCESS;
    if (kind != SOFTRNIC_KIND_IB) return RI_RET_INVALID_PARAMETER;
    ib::HcaConfig h;
    h.name = name;
    uint32_t ports = SOFTRNIC_CFG_FIELD(c, num_ports);
    if (ports == 0) ports = env_number(base::EnvVar::IbPorts, 2, valid_port_count);
    if (!valid_port_count(ports)) return RI_RET_INVALID_PARAMETER;
    h.num_ports = static_cast<uint8_t>(ports);
    uint32_t mtu = SOFTRNIC_CFG_FIELD(c, active_mtu);
    if (mtu == 0) mtu = env_number(base::EnvVar::IbMtu, 4096, valid_mtu);
    h.active_mtu = ib::mtu_from_bytes(mtu);
    if (!h.active_mtu) return RI_RET_INVALID_PARAMETER;
    if (const char *subnet = SOFTRNIC_CFG_FIELD(c, subnet)) {
        if (!ib::valid_subnet_name(subnet)) return RI_RET_INVALID_PARAMETER;
        h.subnet = subnet;
    } else if (const char *v = base::env_value(base::EnvVar::IbSubnet); v && *v) {
        h.subnet = v;
        if (!ib::valid_subnet_name(h.subnet)) {
            h.subnet = ib::default_subnet();
            SOFTRNIC_LOG(Warn, Rnicpi,
                         "SOFTRNIC_IB_SUBNET=%s is not a valid subnet name: %s is used", v,
                         h.subnet.c_str());
        }
    } else {
        h.subnet = ib::default_subnet();
    }
    // The node GUID's 0 means "derive it"; a configured port GUID may not be 0, and no two
    // ports may share one (§2.2).
    h.node_guid = SOFTRNIC_CFG_FIELD(c, node_guid);
    if (const uint64_t *guids = SOFTRNIC_CFG_FIELD(c, port_guids)) {
        for (uint8_t i = 0; i < h.num_ports; ++i) {
            if (guids[i] == 0) return RI_RET_INVALID_PARAMETER;
            for (uint8_t j = 0; j < i; ++j)
                if (guids[i] == guids[j]) return RI_RET_INVALID_PARAMETER;
            h.port_guids[i] = guids[i];
        }
    }
    out = std::move(h);
    return RI_RET_SUCCESS;
}
#undef SOFTRNIC_CFG_FIELD

}  // namespace

namespace {
const char *state_name(ri_qp_state_t s) {
    switch (s) {
        case RI_QP_STATE_IDLE:
            return "IDLE";
        case RI_QP_STATE_READY_TO_SEND:
            return "RTS";
        case RI_QP_STATE_ERROR:
            return "ERROR";
        case RI_QP_STATE_TERMINATE:
            return "TERMINATE";
        case RI_QP_STATE_CLOSING:
            return "CLOSING";
        default:
            return "?";
    }
}
}  // namespace

std::string diag_qp(Qp &q) {
    std::ostringstream o;
    o << "qp " << q.qp_id << " state " << state_name(q.state.load(std::memory_order_acquire))
      << " sq_size " << q.sq_size << " rq_size " << q.rq_size << " sq_posted " << q.sq_head
      << " rq_queued " << q.rq.size() << " ord " << q.ord << " ird " << q.ird
      << (q.srq ? " srq" : "") << "\n";
    return o.str();
}

std::string diag_rnic(Device &d, bool dump) {
    std::ostringstream o;
    o << "softrnic " << d.name() << ": ";
    if (d.is_ib())
        o << "InfiniBand software HCA, " << unsigned(d.hca->num_ports()) << " ports, subnet "
          << d.hca->subnet();
    else
        o << "iWARP (IETF) software RNIC";
    o << ", open " << d.open << ", pds " << d.pds.live() << ", cqs " << d.cqs.live() << ", qps "
      << d.qps.live() << ", srqs " << d.srqs.live() << "\n";
    if (dump) {
        d.qps.for_each([&](Qp &q) { o << diag_qp(q); });
        d.stags.for_each_live([&](MemEntry &e) {
            o << "stag 0x" << std::hex << e.stag() << std::dec << " kind "
              << static_cast<int>(e.kind()) << " valid " << e.valid() << " length " << e.length
              << "\n";
        });
    }
    return o.str();
}

}  // namespace softrnic::rnicpi

namespace softrnic::engine {

Device *device_from_vp(ri_vp_handle_t vp) {
    auto &reg = rnicpi::registry();
    std::lock_guard lk(reg.mu);
    if (!vp || !reg.vps.count(vp)) return nullptr;
    return static_cast<VpHandle *>(vp)->dev;
}

RnicHandle *rnic_from_handle(ri_rnic_handle_t h) {
    auto &reg = rnicpi::registry();
    std::lock_guard lk(reg.mu);
    if (!h || !reg.rnics.count(h)) return nullptr;
    return static_cast<RnicHandle *>(h);
}

}  // namespace softrnic::engine

using namespace softrnic;
using namespace softrnic::engine;

// What libsoftrnic.so exports (libsoftrnic.map); everything else is compiled hidden.
#pragma GCC visibility push(default)
extern "C" {

ri_api_return_t ri_rnic_get_hdl(ri_vp_handle_t vp, ri_consumer_domain_t location,
                                ri_rnic_handle_t *rnic, ri_vp_data_t vp_data, ri_os_data_t os_data,
                                ri_err_data_t *err) {
    // The VP handle's ops vector fixes the thread model of the new handle (L9012-9020).
    if (!device_from_vp(vp)) {
        if (err) *err = 0;
        return RI_RET_VP_INVALID_HANDLE;
    }
    return ri_svc_ops(vp)->ri_op_rnic_get_hdl(vp, location, rnic, vp_data, os_data, err);
}

ri_api_return_t ri_svc_attach(ri_vp_handle_t vp, ri_dev_info_t dev_info,
                              ri_services_dev_arg_t *svcs, ri_ops_t *al_ops, ri_ops_t *vp_ops,
                              ri_err_data_t *err) {
    if (err) *err = 0;
    Device *d = device_from_vp(vp);
    if (!d) return RI_RET_VP_INVALID_HANDLE;
    if (!dev_info || !*dev_info) return RI_RET_INVALID_DEV_INFO;
    if (!svcs || !al_ops) return RI_RET_INVALID_PARAMETER;
    if (svcs->rnicpi_major_version != 1) return RI_RET_INVALID_VP_VERSION;
    if (strnlen(svcs->lib_path, RI_MAX_LIB_PATH_LEN) == RI_MAX_LIB_PATH_LEN)
        return RI_RET_INVALID_LIB_PATH;
    if (strnlen(svcs->hw_path, RI_MAX_HW_PATH_LEN) == RI_MAX_HW_PATH_LEN)
        return RI_RET_INVALID_HW_PATH;
    std::lock_guard lk(d->mu);
    if (d->attached) return RI_RET_RNIC_INUSE;  // L6934
    d->attached = true;
    d->lib_path = svcs->lib_path;
    // The views hand out these vectors (a NULL vp_ops means no provider-serialised model).
    d->view(View::Privileged)->ops = al_ops;
    d->view(View::User)->ops = al_ops;
    d->view(View::PrivilegedVpLocking)->ops = vp_ops ? vp_ops : al_ops;
    return RI_RET_SUCCESS;
}

ri_api_return_t ri_svc_detach(ri_vp_handle_t vp, ri_err_data_t *err) {
    if (err) *err = 0;
    Device *d = device_from_vp(vp);
    if (!d) return RI_RET_VP_INVALID_HANDLE;
    std::lock_guard lk(d->mu);
    if (!d->attached) return RI_RET_VP_INVALID_HANDLE;
    if (d->open) return RI_RET_RNIC_INUSE;  // L7015
    d->attached = false;
    return RI_RET_SUCCESS;
}

ri_api_return_t ri_svc_lib_reg(char *lib_path, ri_ops_t *al_ops, ri_ops_t *, ri_os_data_t,
                               ri_err_data_t *err) {
    if (err) *err = 0;
    if (!lib_path || !al_ops) return RI_RET_INVALID_LIB_PATH;
    auto &reg = rnicpi::registry();
    std::lock_guard lk(reg.mu);
    for (auto &[name, dev] : reg.devices)
        if (dev->attached && !dev->lib_path.empty() && dev->lib_path == lib_path)
            return RI_RET_SUCCESS;
    return RI_RET_INVALID_LIB_PATH;  // L7100
}

ri_api_return_t ri_svc_mem_pin(ri_vaddr_t va, ri_length_t len, ri_os_data_t, ri_err_data_t *err) {
    if (err) *err = 0;
    if (!va || len == 0) return RI_RET_INVALID_PARAMETER;
    // Pages of a user-space library are pinned by the registration holding the mapping;
    // the count records the exact range for the exact-range unpin rule (L7180-7183).
    auto &reg = rnicpi::registry();
    std::lock_guard lk(reg.mu);
    ++reg.pins[{reinterpret_cast<uintptr_t>(va), len}];
    return RI_RET_SUCCESS;
}

ri_api_return_t ri_svc_mem_unpin(ri_vaddr_t va, ri_length_t len, ri_os_data_t, ri_err_data_t *err) {
    if (err) *err = 0;
    auto &reg = rnicpi::registry();
    std::lock_guard lk(reg.mu);
    auto it = reg.pins.find({reinterpret_cast<uintptr_t>(va), len});
    if (it == reg.pins.end()) return RI_RET_INVALID_PARAMETER;
    if (--it->second == 0) reg.pins.erase(it);
    return RI_RET_SUCCESS;
}

ri_api_return_t softrnic_vp_create(const char *name, ri_vp_handle_t *vp) {
    return softrnic_vp_create_ex(name, nullptr, vp);
}

ri_api_return_t softrnic_vp_create_ex(const char *name, const softrnic_vp_config_t *cfg,
                                      ri_vp_handle_t *vp) {
    if (!name || !*name || !vp || strnlen(name, 64) >= 64) return RI_RET_INVALID_PARAMETER;
    try {
        std::unique_ptr<transport::ib::Hca> hca;
        if (cfg) {
            std::optional<transport::ib::HcaConfig> ib;
            if (ri_api_return_t r = rnicpi::ib_config(name, *cfg, ib); r != RI_RET_SUCCESS)
                return r;
            if (ib) hca = std::make_unique<transport::ib::Hca>(std::move(*ib));
        }
        transport::loopback::ensure_registered();
        auto &reg = rnicpi::registry();
        Device *d = nullptr;
        {
            std::lock_guard lk(reg.mu);
            if (reg.devices.count(name)) return RI_RET_RNIC_INUSE;
            auto dev = std::make_unique<Device>(name);
            if (hca) {
                dev->hca = std::move(hca);
                dev->ahs = std::make_unique<engine::ObjectTable<engine::Ah>>(
                    engine::ObjKind::Ah, engine::Limits::kMaxAddrHandles);
                dev->personality = &ib_personality();
            }
            d = dev.get();
            reg.devices.emplace(name, std::move(dev));
            for (int v = 0; v < 3; ++v)
                reg.vps.insert(d->view(static_cast<View>(v)));
        }
        ri_services_dev_arg_t svcs{};
        svcs.rnicpi_major_version = 1;
        svcs.rnicpi_minor_version = 0;
        svcs.fw_major_version = 0;
        svcs.fw_minor_version = 1;
        uint_t qsize = 0;
        // With port data on IB, whose size never changes (L2269); iWARP's port addresses
        // come and go, so its initial size is without them.
        rnicpi::fill_rnic_attr(*d, d->is_ib() ? RI_QUERY_RNIC_PORT_INFO : 0, nullptr, &qsize);
        svcs.query_size = qsize;
        std::snprintf(svcs.lib_path, sizeof svcs.lib_path, "libsoftrnic.so");
        // RNICPI L6837: the device's hardware path, here its kind and name.
        std::snprintf(svcs.hw_path, sizeof svcs.hw_path, "%s/%s",
                      d->is_ib() ? "softrnic-ib" : "softrnic", name);
        std::string info = name;
        ri_err_data_t err = 0;
        ri_api_return_t r =
            ri_svc_attach(d->view(View::Privileged), info.data(), &svcs,
                          const_cast<ri_ops_t *>(rnicpi::consumer_serialised_ops()),
                          const_cast<ri_ops_t *>(rnicpi::provider_serialised_ops()), &err);
        if (r != RI_RET_SUCCESS) {
            softrnic_vp_destroy(d->view(View::Privileged));
            return r;
        }
        *vp = d->view(View::Privileged);
        return RI_RET_SUCCESS;
    } catch (...) {
        return RI_RET_RESOURCE_SHORTAGE;
    }
}

ri_api_return_t softrnic_vp_destroy(ri_vp_handle_t vp) {
    Device *d = device_from_vp(vp);
    if (!d) return RI_RET_VP_INVALID_HANDLE;
    {
        std::lock_guard lk(d->mu);
        if (d->open) return RI_RET_RNIC_INUSE;
    }
    std::unique_ptr<Device> gone;
    {
        auto &reg = rnicpi::registry();
        std::lock_guard lk(reg.mu);
        for (int v = 0; v < 3; ++v)
            reg.vps.erase(d->view(static_cast<View>(v)));
        auto it = reg.devices.find(d->name());
        if (it != reg.devices.end()) {
            gone = std::move(it->second);
            reg.devices.erase(it);
        }
    }
    return RI_RET_SUCCESS;
}

ri_vp_handle_t softrnic_vp_view(ri_vp_handle_t vp, softrnic_vp_view_t view) {
    Device *d = device_from_vp(vp);
    if (!d) return nullptr;
    switch (view) {
        case SOFTRNIC_VIEW_PRIVILEGED:
            return d->view(View::Privileged);
        case SOFTRNIC_VIEW_PRIVILEGED_VP_LOCKING:
            return d->view(View::PrivilegedVpLocking);
        case SOFTRNIC_VIEW_USER:
            return d->view(View::User);
    }
    return nullptr;
}

ri_api_return_t softrnic_vp_drain_events(ri_vp_handle_t vp) {
    Device *d = device_from_vp(vp);
    if (!d) return RI_RET_VP_INVALID_HANDLE;
    if (d->events.on_event_thread()) return RI_RET_FAIL;
    d->events.drain();
    return RI_RET_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
