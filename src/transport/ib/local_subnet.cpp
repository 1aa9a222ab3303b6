#include "transport/ib/local_subnet.hpp"

#include <map>
#include <mutex>
#include <set>
#include <string>

#include "base/log.hpp"

namespace softrnic::transport::ib {

namespace {

struct Subnet {
    std::map<uint64_t, ri_lid_t> lid_of_guid;  // every LID ever given, by port GUID
    ri_lid_t next_lid = kFirstPortLid;         // the lowest LID never given
    std::set<uint64_t> live;                   // GUIDs of the ports up now
};

struct Authority {
    std::mutex mu;
    std::map<std::string, Subnet, std::less<>> subnets;
};

Authority &authority() {
    static Authority *a = new Authority();  // never destroyed: instances may outlive statics
    return *a;
}

}  // namespace

std::optional<LidGrant> local_attach(std::string_view subnet, uint64_t port_guid) {
    Authority &a = authority();
    std::lock_guard lk(a.mu);
    auto it = a.subnets.find(subnet);
    if (it == a.subnets.end()) it = a.subnets.emplace(std::string(subnet), Subnet{}).first;
    Subnet &s = it->second;
    if (s.live.count(port_guid)) {
        SOFTRNIC_LOG(Warn, Transport,
                     "subnet %.*s: a second port with GUID 0x%016llx is left in Init (two live "
                     "ports may not share a GUID)",
                     static_cast<int>(subnet.size()), subnet.data(),
                     static_cast<unsigned long long>(port_guid));
        return std::nullopt;
    }
    ri_lid_t lid = 0;
    if (auto known = s.lid_of_guid.find(port_guid); known != s.lid_of_guid.end()) {
        lid = known->second;
    } else {
        if (s.next_lid > kLastUnicastLid) {
            SOFTRNIC_LOG(Warn, Transport,
                         "subnet %.*s: no unicast LID left for port GUID 0x%016llx; it stays "
                         "in Init",
                         static_cast<int>(subnet.size()), subnet.data(),
                         static_cast<unsigned long long>(port_guid));
            return std::nullopt;
        }
        lid = s.next_lid++;
        s.lid_of_guid.emplace(port_guid, lid);
    }
    s.live.insert(port_guid);
    return LidGrant{lid, kAuthorityLid};
}

void local_detach(std::string_view subnet, uint64_t port_guid) {
    Authority &a = authority();
    std::lock_guard lk(a.mu);
    auto it = a.subnets.find(subnet);
    if (it != a.subnets.end()) it->second.live.erase(port_guid);
}

}  // namespace softrnic::transport::ib
