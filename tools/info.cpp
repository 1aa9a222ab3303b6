// `softrnic info`: what ri_rnic_query reports for each kind of instance softrnic makes, and
// `softrnic info --env`: every declared SOFTRNIC_* variable. Both as text for people and,
// with --json, as one JSON object for scripts.
#include "info.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "json_out.hpp"
#include "loopback_session.hpp"

namespace softrnic::tools {
namespace {

struct PortInfo {
    unsigned number = 0;
    std::string state;
    unsigned lid = 0, sm_lid = 0, max_mtu = 0;
    std::vector<std::string> gids;                     // "index: text", non-zero only
    std::vector<std::pair<unsigned, unsigned>> pkeys;  // index, value
};

struct InstanceInfo {
    std::string vendor_info;
    bool ib = false;
    unsigned protocol_version = 0, num_ports = 0;
    unsigned max_qps = 0, max_wrs_qp = 0, max_sges = 0, max_cqs = 0, max_cqes = 0;
    unsigned max_srqs = 0, max_wrs_srq = 0, max_mrs = 0, max_mws = 0, ird = 0, ord = 0;
    unsigned rnic_flags = 0, ib_flags = 0;
    unsigned long long node_guid = 0, sys_image_guid = 0;
    unsigned ipv4_addrs = 0, ipv6_addrs = 0;
    std::vector<PortInfo> ports;
};

std::string gid_text(const ri_gid_t &gid) {
    char b[48];
    std::snprintf(b, sizeof b, "%04x:%04x:%04x:%04x:%04x:%04x:%04x:%04x",
                  unsigned(gid.gid_prefix >> 48), unsigned(gid.gid_prefix >> 32) & 0xFFFF,
                  unsigned(gid.gid_prefix >> 16) & 0xFFFF, unsigned(gid.gid_prefix) & 0xFFFF,
                  unsigned(gid.gid_guid >> 48), unsigned(gid.gid_guid >> 32) & 0xFFFF,
                  unsigned(gid.gid_guid >> 16) & 0xFFFF, unsigned(gid.gid_guid) & 0xFFFF);
    return b;
}

// One instance of `cfg`'s kind, opened, queried with its port data, and destroyed.
InstanceInfo query_instance(const char *name, const softrnic_vp_config_t *cfg) {
    ri_vp_handle_t vp = nullptr;
    ri_err_data_t err = 0;
    check(softrnic_vp_create_ex(name, cfg, &vp), "softrnic_vp_create_ex");
    check(ri_rnic_open(vp, RI_PHYS_PAGE_LIST_MODE, nullptr, &err), "ri_rnic_open");
    ri_rnic_handle_t rnic = nullptr;
    check(ri_rnic_get_hdl(vp, RI_CONSUMER_LOCATION_KERNEL, &rnic, nullptr, nullptr, &err),
          "ri_rnic_get_hdl");
    uint_t size = 0;
    ri_rnic_query(rnic, RI_QUERY_RNIC_PORT_INFO, nullptr, &size, &err);
    std::vector<unsigned char> buf(size);
    auto *a = reinterpret_cast<ri_rnic_attr_t *>(buf.data());
    check(ri_rnic_query(rnic, RI_QUERY_RNIC_PORT_INFO, a, &size, &err), "ri_rnic_query");
    InstanceInfo in;
    in.vendor_info = a->addl_vendor_info;
    in.ib = a->transport_type == RI_RDMA_TRANSPORT_TYPE_IB;
    in.max_qps = a->max_qps;
    in.max_wrs_qp = a->max_wrs_qp;
    in.max_sges = a->max_sgl_send_recvqp;
    in.max_cqs = a->max_cqs;
    in.max_cqes = a->max_cqes_per_cq;
    in.max_srqs = a->max_srq;
    in.max_wrs_srq = a->max_wrs_srq;
    in.max_mrs = a->max_mrs;
    in.max_mws = a->max_mws;
    in.ird = a->max_ird_per_qp;
    in.ord = a->max_ord_per_qp;
    in.rnic_flags = static_cast<unsigned>(a->rnic_flags);
    if (in.ib) {
        const ri_ib_rnic_attr_t &ib = *a->trans_attr.ib;
        in.num_ports = ib.num_ports;
        in.node_guid = ib.node_guid;
        in.sys_image_guid = ib.system_image_guid;
        in.ib_flags = static_cast<unsigned>(ib.ib_rnic_flags);
        for (unsigned p = 0; p < ib.num_ports && ib.port_attrs; ++p) {
            const ri_ib_port_attr_t &port = ib.port_attrs[p];
            PortInfo pi;
            pi.number = p + 1;
            pi.state = port.ib_port_state == RI_IB_LINK_ACTIVE       ? "Active"
                       : port.ib_port_state == RI_IB_LINK_ARM        ? "Armed"
                       : port.ib_port_state == RI_IB_LINK_INITIALIZE ? "Init"
                                                                     : "Down";
            pi.lid = port.base_lid;
            pi.sm_lid = port.sm_lid;
            pi.max_mtu = 128u << port.max_mtu;
            for (unsigned g = 0; g < port.src_gid_table_size; ++g) {
                const ri_gid_t &gid = port.src_gid_table[g];
                if (gid.gid_prefix || gid.gid_guid)
                    pi.gids.push_back(gid_text(gid));
                else
                    pi.gids.emplace_back();
            }
            for (unsigned k = 0; k < ib.partition_table_size; ++k)
                if (port.pkey_table[k]) pi.pkeys.emplace_back(k, port.pkey_table[k]);
            in.ports.push_back(std::move(pi));
        }
    } else {
        in.protocol_version = a->trans_attr.iwarp->protocol_version;
        if (a->trans_attr.iwarp->port_attrs) {
            in.ipv4_addrs = a->trans_attr.iwarp->port_attrs->num_ipv4_addrs;
            in.ipv6_addrs = a->trans_attr.iwarp->port_attrs->num_ipv6_addrs;
        }
    }
    ri_rnic_free_hdl(vp, rnic, &err);
    ri_rnic_close(vp, &err);
    softrnic_vp_destroy(vp);
    return in;
}

void print_text(const InstanceInfo &in) {
    std::printf("vendor info      %s\n", in.vendor_info.c_str());
    if (in.ib)
        std::printf("transport        InfiniBand (%u ports)\n", in.num_ports);
    else
        std::printf("transport        iWARP (protocol version %u)\n", in.protocol_version);
    std::printf("max qps          %u (wrs/qp %u, sges %u)\n", in.max_qps, in.max_wrs_qp,
                in.max_sges);
    std::printf("max cqs          %u (cqes/cq %u)\n", in.max_cqs, in.max_cqes);
    std::printf("max srqs         %u (wrs/srq %u)\n", in.max_srqs, in.max_wrs_srq);
    std::printf("max mrs / mws    %u / %u\n", in.max_mrs, in.max_mws);
    std::printf("ird / ord per qp %u / %u\n", in.ird, in.ord);
    std::printf("rnic flags       0x%x\n", in.rnic_flags);
    if (!in.ib) {
        std::printf("port addresses   %u IPv4, %u IPv6\n", in.ipv4_addrs, in.ipv6_addrs);
        return;
    }
    std::printf("node guid        0x%016llx\n", in.node_guid);
    std::printf("sys image guid   0x%016llx\n", in.sys_image_guid);
    std::printf("ib flags         0x%x\n", in.ib_flags);
    for (const PortInfo &p : in.ports) {
        std::printf("port %u           %s, LID %u, SM LID %u, max MTU %u\n", p.number,
                    p.state.c_str(), p.lid, p.sm_lid, p.max_mtu);
        for (size_t g = 0; g < p.gids.size(); ++g)
            if (!p.gids[g].empty()) std::printf("  gid %-2zu         %s\n", g, p.gids[g].c_str());
        std::printf("  pkeys         ");
        for (auto [k, v] : p.pkeys)
            std::printf(" [%u] 0x%04x", k, v);
        std::printf("\n");
    }
}

std::string to_json(const InstanceInfo &in) {
    auto u = [](const char *k, unsigned long long v) {
        return "\"" + std::string(k) + "\":" + std::to_string(v);
    };
    std::string o = "{\"vendor_info\":" + json_string(in.vendor_info) + ",\"transport\":\"" +
                    (in.ib ? "ib" : "iwarp") + "\",";
    o += in.ib ? u("num_ports", in.num_ports) : u("protocol_version", in.protocol_version);
    o += "," + u("max_qps", in.max_qps) + "," + u("max_wrs_per_qp", in.max_wrs_qp) + "," +
         u("max_sges", in.max_sges) + "," + u("max_cqs", in.max_cqs) + "," +
         u("max_cqes_per_cq", in.max_cqes) + "," + u("max_srqs", in.max_srqs) + "," +
         u("max_wrs_per_srq", in.max_wrs_srq) + "," + u("max_mrs", in.max_mrs) + "," +
         u("max_mws", in.max_mws) + "," + u("max_ird_per_qp", in.ird) + "," +
         u("max_ord_per_qp", in.ord) + "," + u("rnic_flags", in.rnic_flags);
    if (!in.ib)
        return o + "," + u("ipv4_addrs", in.ipv4_addrs) + "," + u("ipv6_addrs", in.ipv6_addrs) +
               "}";
    char guid[2][24];
    std::snprintf(guid[0], sizeof guid[0], "0x%016llx", in.node_guid);
    std::snprintf(guid[1], sizeof guid[1], "0x%016llx", in.sys_image_guid);
    o += ",\"node_guid\":\"" + std::string(guid[0]) + "\",\"sys_image_guid\":\"" + guid[1] + "\"," +
         u("ib_flags", in.ib_flags) + ",\"ports\":[";
    for (size_t i = 0; i < in.ports.size(); ++i) {
        const PortInfo &p = in.ports[i];
        o += std::string(i ? "," : "") + "{" + u("port", p.number) +
             ",\"state\":" + json_string(p.state) + "," + u("lid", p.lid) + "," +
             u("sm_lid", p.sm_lid) + "," + u("max_mtu", p.max_mtu) + ",\"gids\":[";
        bool first = true;
        for (size_t g = 0; g < p.gids.size(); ++g) {
            if (p.gids[g].empty()) continue;
            o += std::string(first ? "" : ",") + "{" + u("index", g) +
                 ",\"gid\":" + json_string(p.gids[g]) + "}";
            first = false;
        }
        o += "],\"pkeys\":[";
        for (size_t k = 0; k < p.pkeys.size(); ++k)
            o += std::string(k ? "," : "") + "{" + u("index", p.pkeys[k].first) + "," +
                 u("pkey", p.pkeys[k].second) + "}";
        o += "]}";
    }
    return o + "]}";
}

}  // namespace

// Every kind of instance softrnic makes: an iWARP RNIC and an InfiniBand HCA (its subnet,
// port count and MTU as the SOFTRNIC_IB_* variables say).
int info(bool json) {
    const InstanceInfo iwarp = query_instance("info", nullptr);
    softrnic_vp_config_t cfg{};
    cfg.size = sizeof cfg;
    cfg.kind = SOFTRNIC_KIND_IB;
    const InstanceInfo ib = query_instance("info-ib", &cfg);
    if (json) {
        std::printf("{\"instances\":[%s,%s]}\n", to_json(iwarp).c_str(), to_json(ib).c_str());
        return 0;
    }
    print_text(iwarp);
    std::printf("\n");
    print_text(ib);
    return 0;
}

// The declared SOFTRNIC_* variables (softrnic_env_var), with the value each has here.
int info_env(bool json) {
    std::string o = "{\"variables\":[";
    for (unsigned i = 0; const softrnic_env_var_t *v = softrnic_env_var(i); ++i) {
        const char *now = std::getenv(v->name);
        if (!json) {
            std::printf("%s\n    default %s; now %s\n    %s\n", v->name, v->default_value,
                        now ? now : "(unset)", v->meaning);
            continue;
        }
        o += std::string(i ? "," : "") + "{\"name\":" + json_string(v->name) +
             ",\"default\":" + json_string(v->default_value) +
             ",\"value\":" + (now ? json_string(now) : std::string("null")) +
             ",\"meaning\":" + json_string(v->meaning) + "}";
    }
    if (json) std::printf("%s]}\n", o.c_str());
    return 0;
}

}  // namespace softrnic::tools
