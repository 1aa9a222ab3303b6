// An InfiniBand instance's ports (transport/ib_port.hpp): GUIDs, GID and P_Key tables,
// link states and LIDs, from the process-local LID authority (local_subnet.hpp).
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "base/stats.hpp"
#include "transport/ib/datagram_fabric.hpp"
#include "transport/ib/local_subnet.hpp"
#include "transport/ib_port.hpp"

namespace softrnic::transport::ib {

namespace {

uint64_t load_be64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v = (v << 8) | p[i];
    return v;
}

// GID table entries 1.. (§2.3): the host's IPv4 addresses as IPv4-mapped IPv6 addresses
// (::ffff:a.b.c.d), then its IPv6 addresses, each once, as many as fit. They are there for
// the RoCEv2 wire; the table is read at every attach, since addresses come and go.
std::vector<ri_gid_t> host_address_gids(size_t max) {
    std::vector<ri_gid_t> v4, v6;
    ifaddrs *ifa = nullptr;
    if (getifaddrs(&ifa) != 0) return {};
    for (ifaddrs *i = ifa; i; i = i->ifa_next) {
        if (!i->ifa_addr) continue;
        ri_gid_t g{};
        if (i->ifa_addr->sa_family == AF_INET) {
            unsigned char b[4];
            std::memcpy(b, &reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr, 4);
            g.gid_prefix = 0;
            g.gid_guid = 0x0000'FFFF'0000'0000ull | (uint64_t{b[0]} << 24) |
                         (uint64_t{b[1]} << 16) | (uint64_t{b[2]} << 8) | b[3];
            v4.push_back(g);
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            const auto *a = reinterpret_cast<sockaddr_in6 *>(i->ifa_addr)->sin6_addr.s6_addr;
            g.gid_prefix = load_be64(a);
            g.gid_guid = load_be64(a + 8);
            v6.push_back(g);
        }
    }
    freeifaddrs(ifa);
    std::vector<ri_gid_t> out;
    for (const auto *list : {&v4, &v6})
        for (const ri_gid_t &g : *list) {
            bool seen = false;
            for (const ri_gid_t &o : out)
                seen = seen || (o.gid_prefix == g.gid_prefix && o.gid_guid == g.gid_guid);
            if (!seen && out.size() < max) out.push_back(g);
        }
    return out;
}

}  // namespace

uint64_t fnv1a64(std::string_view bytes, uint64_t h) {
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

std::string machine_id() {
    std::ifstream f("/etc/machine-id");
    std::string id;
    if (f && std::getline(f, id) && !id.empty()) return id;
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) return host;
    return {};
}

uint64_t derive_node_guid(std::string_view subnet, std::string_view name) {
    static const std::string machine = machine_id();
    constexpr std::string_view kZero("\0", 1);
    uint64_t h = fnv1a64(machine);
    h = fnv1a64(kZero, h);
    h = fnv1a64(subnet, h);
    h = fnv1a64(kZero, h);
    h = fnv1a64(name, h);
    return (uint64_t{0x02} << 56) | (h & 0x00FF'FFFF'FFFF'FF00ull);
}

std::string default_subnet() {
    return "u" + std::to_string(::getuid());
}

bool valid_subnet_name(std::string_view name) {
    if (name.empty() || name.size() > kMaxSubnetName) return false;
    for (char c : name) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

ri_ib_mtu_t mtu_from_bytes(uint32_t bytes) {
    switch (bytes) {
        case 256:
            return RI_IB_MTU_256;
        case 512:
            return RI_IB_MTU_512;
        case 1024:
            return RI_IB_MTU_1K;
        case 2048:
            return RI_IB_MTU_2K;
        case 4096:
            return RI_IB_MTU_4K;
        default:
            return static_cast<ri_ib_mtu_t>(0);
    }
}

uint32_t mtu_bytes(ri_ib_mtu_t mtu) {
    return mtu >= RI_IB_MTU_256 && mtu <= RI_IB_MTU_4K ? 128u << mtu : 0;
}

Hca::Hca(HcaConfig cfg) : cfg_(std::move(cfg)) {
    if (!cfg_.node_guid) cfg_.node_guid = derive_node_guid(cfg_.subnet, cfg_.name);
    system_image_guid_ = cfg_.node_guid;
    for (uint8_t i = 0; i < cfg_.num_ports; ++i) {
        uint8_t number = static_cast<uint8_t>(i + 1);
        if (!cfg_.port_guids[i]) cfg_.port_guids[i] = cfg_.node_guid | number;
        PortAttributes &p = ports_[i];
        p.number = number;
        p.guid = cfg_.port_guids[i];
        p.state = RI_IB_LINK_DOWN;
        p.active_mtu = cfg_.active_mtu;
        p.gids[0] = ri_gid_t{kLinkLocalPrefix, p.guid};
        p.pkeys[0] = kDefaultPkey;
    }
}

Hca::~Hca() {
    detach();
}

uint64_t Hca::system_image_guid() const {
    std::lock_guard lk(mu_);
    return system_image_guid_;
}

void Hca::set_system_image_guid(uint64_t guid) {
    std::lock_guard lk(mu_);
    system_image_guid_ = guid;
}

PortAttributes Hca::port(uint8_t number) const {
    std::lock_guard lk(mu_);
    if (number < 1 || number > cfg_.num_ports) return {};
    PortAttributes p = ports_[number - 1];
    p.bad_qkey_count = bad_qkey_[number - 1].load(std::memory_order_relaxed);
    p.bad_pkey_count = bad_pkey_[number - 1].load(std::memory_order_relaxed);
    return p;
}

ri_lid_t Hca::lid(uint8_t number) const {
    std::lock_guard lk(mu_);
    return number >= 1 && number <= cfg_.num_ports ? ports_[number - 1].lid : 0;
}

ri_ib_mtu_t Hca::active_mtu(uint8_t number) const {
    std::lock_guard lk(mu_);
    return number >= 1 && number <= cfg_.num_ports ? ports_[number - 1].active_mtu : ri_ib_mtu_t{};
}

ri_pkey_t Hca::pkey(uint8_t number, uint16_t index) const {
    std::lock_guard lk(mu_);
    if (number < 1 || number > cfg_.num_ports || index >= kPkeyTableSize) return 0;
    return ports_[number - 1].pkeys[index];
}

ri_gid_t Hca::gid(uint8_t number, uint8_t index) const {
    std::lock_guard lk(mu_);
    if (number < 1 || number > cfg_.num_ports || index >= kGidTableSize) return {};
    return ports_[number - 1].gids[index];
}

std::vector<uint8_t> Hca::attach() {
    std::vector<ri_gid_t> host = host_address_gids(kGidTableSize - 1);
    std::unique_lock lk(mu_);
    std::vector<uint8_t> active;
    if (attached_) return active;
    attached_ = true;
    for (uint8_t i = 0; i < cfg_.num_ports; ++i) {
        PortAttributes &p = ports_[i];
        for (size_t g = 1; g < kGidTableSize; ++g)
            p.gids[g] = g - 1 < host.size() ? host[g - 1] : ri_gid_t{};
        // Attach message sent: PhysState LinkUp, port Init (§2.4 item 1).
        p.state = RI_IB_LINK_INITIALIZE;
        std::optional<LidGrant> grant = local_attach(cfg_.subnet, p.guid);
        if (!grant) continue;
        // What the SM's SubnSet(PortInfo) pair does: LID, SM LID, Armed, then Active.
        p.lid = grant->lid;
        p.sm_lid = grant->sm_lid;
        p.state = RI_IB_LINK_ACTIVE;
        active.push_back(p.number);
    }
    std::vector<std::pair<uint8_t, ri_lid_t>> up;
    for (uint8_t n : active)
        up.emplace_back(n, ports_[n - 1].lid);
    lk.unlock();
    // The fabric's lock comes before ours (a delivery holds it and reads our P_Keys).
    std::unique_lock fl(fabric::lock());
    for (auto [n, lid] : up)
        fabric::port_up(cfg_.subnet, lid, this, n);
    return active;
}

void Hca::detach() {
    std::vector<std::pair<uint8_t, ri_lid_t>> down;
    {
        std::lock_guard lk(mu_);
        detach_locked(down);
    }
    if (down.empty()) return;
    std::unique_lock fl(fabric::lock());
    for (auto [n, lid] : down)
        fabric::port_down(cfg_.subnet, lid);
}

void Hca::detach_locked(std::vector<std::pair<uint8_t, ri_lid_t>> &down) {
    if (!attached_) return;
    attached_ = false;
    for (uint8_t i = 0; i < cfg_.num_ports; ++i) {
        PortAttributes &p = ports_[i];
        if (p.lid) down.emplace_back(p.number, p.lid);
        if (p.lid) local_detach(cfg_.subnet, p.guid);
        p.state = RI_IB_LINK_DOWN;
        p.lid = 0;
        p.sm_lid = 0;
    }
}

void Hca::set_capabilities(uint8_t number, ri_ib_port_flags_t flags) {
    std::lock_guard lk(mu_);
    if (number >= 1 && number <= cfg_.num_ports) ports_[number - 1].capabilities = flags;
}

void Hca::reset_qkey_counter(uint8_t number) {
    if (number >= 1 && number <= cfg_.num_ports)
        bad_qkey_[number - 1].store(0, std::memory_order_relaxed);
}

void Hca::count_violation(uint8_t number, DatagramVerdict v) {
    if (number < 1 || number > cfg_.num_ports) return;
    std::atomic<uint16_t> &c =
        v == DatagramVerdict::BadQkey ? bad_qkey_[number - 1] : bad_pkey_[number - 1];
    // IBA counters stop at their maximum instead of wrapping.
    uint16_t n = c.load(std::memory_order_relaxed);
    while (n != 0xFFFF &&
           !c.compare_exchange_weak(n, static_cast<uint16_t>(n + 1), std::memory_order_relaxed)) {
    }
}

void Hca::bind_datagram(uint8_t port, uint32_t qpn, Endpoint *ep) {
    std::unique_lock fl(fabric::lock());
    fabric::bind(this, port, qpn, ep);
}

void Hca::unbind_datagram(uint8_t port, uint32_t qpn) {
    std::unique_lock fl(fabric::lock());
    fabric::unbind(this, port, qpn);
}

DatagramVerdict Hca::send_datagram(uint8_t port, const DatagramSend &d) {
    base::stat_add(base::Stat::UdSent);
    DatagramArrival a;
    a.source.remote_qpn = d.src_qpn;
    a.source.remote_lid = lid(port);
    a.source.remote_sl = d.sl;
    // The ports have LMC 0: no bits of the DLID select among a port's LIDs.
    a.source.local_lid_pathbits = 0;
    a.source.grh_present = d.grh != nullptr;
    a.q_key = d.q_key;
    a.pkey = d.pkey;
    a.grh = d.grh;
    a.payload = d.payload;
    a.length = d.length;
    a.has_immediate = d.has_immediate;
    a.immediate = d.immediate;
    a.solicited = d.solicited;
    std::shared_lock fl(fabric::lock());
    Hca *to = nullptr;
    uint8_t to_port = 0;
    Endpoint *ep = fabric::find(cfg_.subnet, d.dlid, d.dest_qpn, to, to_port);
    DatagramVerdict v = ep ? ep->rx_datagram(a) : DatagramVerdict::NotReceiving;
    switch (v) {
        case DatagramVerdict::Delivered:
            base::stat_add(base::Stat::UdDelivered);
            break;
        case DatagramVerdict::NotReceiving:
            base::stat_add(base::Stat::UdUnreachable);
            break;
        case DatagramVerdict::BadQkey:
        case DatagramVerdict::BadPkey:
            base::stat_add(base::Stat::UdKeyViolations);
            to->count_violation(to_port, v);
            break;
        case DatagramVerdict::NoReceive:
            base::stat_add(base::Stat::UdNoReceive);
            break;
    }
    return v;
}

}  // namespace softrnic::transport::ib
