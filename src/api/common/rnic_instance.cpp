// The RNIC instance behind a face's IA (rnic_instance.hpp).
#include "api/common/rnic_instance.hpp"

#include <unistd.h>

#include <atomic>

#include "softrnic/softrnic.h"

namespace softrnic::api {

bool RnicInstance::open(const char *prefix, void *os_data,
                        const std::function<void(ri_vp_handle_t)> &before_handle) {
    close();
    static std::atomic<unsigned> seq{0};
    name_ = std::string(prefix) + "-" + std::to_string(::getpid()) + "-" +
            std::to_string(seq.fetch_add(1, std::memory_order_relaxed));
    if (softrnic_vp_create(name_.c_str(), &vp_) != RI_RET_SUCCESS) {
        vp_ = nullptr;
        return false;
    }
    ri_err_data_t e = 0;
    if (ri_rnic_open(vp_, RI_PHYS_PAGE_LIST_MODE, os_data, &e) != RI_RET_SUCCESS) {
        softrnic_vp_destroy(vp_);
        vp_ = nullptr;
        return false;
    }
    if (before_handle) before_handle(vp_);
    if (ri_rnic_get_hdl(vp_, RI_CONSUMER_LOCATION_KERNEL, &rnic_, nullptr, os_data, &e) !=
        RI_RET_SUCCESS) {
        rnic_ = nullptr;
        close();
        return false;
    }
    return true;
}

void RnicInstance::close() {
    ri_err_data_t e = 0;
    if (rnic_) {
        ri_rnic_free_hdl(vp_, rnic_, &e);
        rnic_ = nullptr;
    }
    if (vp_) {
        ri_rnic_close(vp_, &e);
        softrnic_vp_destroy(vp_);
        vp_ = nullptr;
    }
}

bool RnicInstance::query(Attributes &out, bool ports) const {
    if (!rnic_) return false;
    const auto flags = static_cast<ri_rnic_query_flags_t>(ports ? RI_QUERY_RNIC_PORT_INFO : 0);
    uint_t size = 0;
    ri_err_data_t e = 0;
    ri_rnic_query(rnic_, flags, nullptr, &size, &e);  // asks the size
    std::vector<uint64_t> buf(size / sizeof(uint64_t) + 1);
    size = uint_t(buf.size() * sizeof(uint64_t));
    auto *attr = reinterpret_cast<ri_rnic_attr_t *>(buf.data());
    if (size < sizeof(ri_rnic_attr_t) ||
        ri_rnic_query(rnic_, flags, attr, &size, &e) != RI_RET_SUCCESS)
        return false;
    Attributes a;
    a.attr = *attr;
    a.attr.trans_attr.iwarp = nullptr;
    if (attr->transport_type == RI_RDMA_TRANSPORT_TYPE_IWARP && attr->trans_attr.iwarp) {
        const ri_iwarp_rnic_attr_t &iw = *attr->trans_attr.iwarp;
        a.iwarp_flags = iw.iwarp_rnic_flags;
        for (uint_t p = 0; iw.port_attrs && p < iw.num_ports; ++p) {
            const ri_iwarp_port_attr_t &port = iw.port_attrs[p];
            a.ipv4.insert(a.ipv4.end(), port.ipv4_addrs, port.ipv4_addrs + port.num_ipv4_addrs);
            a.ipv6.insert(a.ipv6.end(), port.ipv6_addrs, port.ipv6_addrs + port.num_ipv6_addrs);
        }
    }
    out = std::move(a);
    return true;
}

}  // namespace softrnic::api
