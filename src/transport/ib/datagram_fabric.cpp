#include "transport/ib/datagram_fabric.hpp"

#include <map>
#include <string>
#include <tuple>

namespace softrnic::transport::ib::fabric {

namespace {

struct PortRef {
    Hca *hca;
    uint8_t port;
};

struct State {
    std::shared_mutex mu;
    // Subnet name -> LID -> the port that has it now.
    std::map<std::string, std::map<ri_lid_t, PortRef>, std::less<>> lids;
    // (instance, port, QPN) -> the UD QP's endpoint.
    std::map<std::tuple<const Hca *, uint8_t, uint32_t>, Endpoint *> bound;
};

State &state() {
    static State *s = new State();  // never destroyed: instances may outlive statics
    return *s;
}

}  // namespace

std::shared_mutex &lock() {
    return state().mu;
}

void port_up(std::string_view subnet, ri_lid_t lid, Hca *hca, uint8_t port) {
    State &s = state();
    auto it = s.lids.find(subnet);
    if (it == s.lids.end())
        it = s.lids.emplace(std::string(subnet), std::map<ri_lid_t, PortRef>{}).first;
    it->second[lid] = PortRef{hca, port};
}

void port_down(std::string_view subnet, ri_lid_t lid) {
    State &s = state();
    auto it = s.lids.find(subnet);
    if (it == s.lids.end()) return;
    it->second.erase(lid);
    if (it->second.empty()) s.lids.erase(it);
}

void bind(const Hca *hca, uint8_t port, uint32_t qpn, Endpoint *ep) {
    state().bound[{hca, port, qpn}] = ep;
}

void unbind(const Hca *hca, uint8_t port, uint32_t qpn) {
    state().bound.erase({hca, port, qpn});
}

Endpoint *find(std::string_view subnet, ri_lid_t lid, uint32_t qpn, Hca *&hca, uint8_t &port) {
    State &s = state();
    auto it = s.lids.find(subnet);
    if (it == s.lids.end()) return nullptr;
    auto p = it->second.find(lid);
    if (p == it->second.end()) return nullptr;
    auto b = s.bound.find({p->second.hca, p->second.port, qpn});
    if (b == s.bound.end()) return nullptr;
    hca = p->second.hca;
    port = p->second.port;
    return b->second;
}

}  // namespace softrnic::transport::ib::fabric
