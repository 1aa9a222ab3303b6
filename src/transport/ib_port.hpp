// The InfiniBand port seam: what an IB instance's Device holds (an Hca) and what the engine
// and the RNICPI layer read from its ports (docs/ib-personality.md §2).
//
// Physical ports are transport state: their GIDs, P_Keys, LIDs and link states belong to
// the fabric the ports attach to, not to RDMA semantics. The engine sees them only through
// this header, as it sees connections only through transport.hpp.
//
// Until the embedded subnet manager exists, the fabric is a process-local LID authority
// (transport/ib/local_subnet.*): every process is its own subnet per subnet name, hands
// out LIDs and brings ports to Active when their instance opens.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "rnicpi/rnicpi.h"
#include "transport/transport.hpp"

namespace softrnic::transport::ib {

inline constexpr uint8_t kMaxPorts = 4;
// Per port (§2.3): the GID table's entry 0 is the subnet prefix and the port GUID, the
// others the host's addresses; the P_Key table's entry 0 is the default partition.
inline constexpr size_t kGidTableSize = 16;
inline constexpr size_t kPkeyTableSize = 16;
inline constexpr ri_pkey_t kDefaultPkey = 0xFFFF;  // default partition, full member
inline constexpr uint64_t kLinkLocalPrefix = 0xFE80'0000'0000'0000ull;
inline constexpr uint8_t kSubnetTimeout = 18;  // 4.096 us × 2^18 ≈ 1 s (§2.4)
inline constexpr uint32_t kMaxMsgSize = 1u << 31;
inline constexpr size_t kMaxSubnetName = 63;

// What an instance's ports are built from; every GUID is resolved (non-zero) by Hca.
struct HcaConfig {
    std::string name;  // the instance's name
    std::string subnet;
    uint8_t num_ports = 2;
    ri_ib_mtu_t active_mtu = RI_IB_MTU_4K;
    uint64_t node_guid = 0;                        // 0: derived (§2.2)
    std::array<uint64_t, kMaxPorts> port_guids{};  // 0: node GUID | port number
};

// A copy of one port's attributes, taken under the Hca's lock.
struct PortAttributes {
    uint8_t number = 0;  // 1-based
    uint64_t guid = 0;
    ri_ib_port_state_t state = RI_IB_LINK_DOWN;
    ri_ib_mtu_t active_mtu = RI_IB_MTU_4K;
    ri_ib_port_flags_t capabilities{};  // PortInfo:CapabilityMask bits RNICPI names
    ri_lid_t lid = 0;                   // 0 until the port is Armed or Active
    ri_lid_t sm_lid = 0;
    uint16_t bad_pkey_count = 0;
    uint16_t bad_qkey_count = 0;
    std::array<ri_gid_t, kGidTableSize> gids{};     // unused entries are zero
    std::array<ri_pkey_t, kPkeyTableSize> pkeys{};  // unused entries are 0 (invalid)
};

// One UD datagram leaving a port (Hca::send_datagram): the destination, the keys and
// source fields it carries, and its payload, addressable in this process.
struct DatagramSend {
    ri_lid_t dlid = 0;
    uint32_t dest_qpn = 0;
    uint32_t q_key = 0;
    ri_pkey_t pkey = 0;
    uint32_t src_qpn = 0;
    uint8_t sl = 0;
    const std::byte *grh = nullptr;  // kGrhBytes when the address vector has a GRH
    std::span<const IoSpan> payload;
    uint64_t length = 0;
    bool has_immediate = false;
    uint32_t immediate = 0;
    bool solicited = false;
};

// The ports of one IB instance and their membership of a subnet. Thread-safe.
//
// Datagram ports (docs/ib-personality.md 4.1-4.4): each port of an attached instance is
// reachable by its LID from every IB instance of the same subnet in this process. A UD QP
// binds its QPN on its port (bind_datagram) and receives what send_datagram addresses to
// (LID, QPN) through Endpoint::rx_datagram, in the sender's thread, with the sender's
// gather list (one copy). Between processes (the lanes of 4.4) comes with step 6.
class Hca {
  public:
    explicit Hca(HcaConfig cfg);
    ~Hca();  // detaches
    Hca(const Hca &) = delete;
    Hca &operator=(const Hca &) = delete;

    const std::string &subnet() const { return cfg_.subnet; }
    uint8_t num_ports() const { return cfg_.num_ports; }
    uint64_t node_guid() const { return cfg_.node_guid; }
    uint64_t system_image_guid() const;
    void set_system_image_guid(uint64_t guid);

    // Port `number` (1..num_ports()).
    PortAttributes port(uint8_t number) const;

    // ri_rnic_open: the host's addresses fill the GID tables, then every port attaches to
    // its subnet: Down, then Init, then (when the LID authority grants it a LID) Active.
    // Returns the numbers of the ports that became Active, for their port events.
    std::vector<uint8_t> attach();
    // ri_rnic_close (and destruction): every port goes Down and gives its LID back.
    void detach();

    // ri_rnic_modify's port requests (L2378-2396).
    void set_capabilities(uint8_t number, ri_ib_port_flags_t flags);
    void reset_qkey_counter(uint8_t number);

    // Single attributes of port `number` (1..num_ports()), for the data path: cheaper
    // than port(). 0 for a bad number or index.
    ri_lid_t lid(uint8_t number) const;
    ri_ib_mtu_t active_mtu(uint8_t number) const;
    ri_pkey_t pkey(uint8_t number, uint16_t index) const;
    ri_gid_t gid(uint8_t number, uint8_t index) const;

    // `ep` receives the datagrams sent to (LID of `port`, `qpn`) from now on, replacing
    // any QP bound there before.
    void bind_datagram(uint8_t port, uint32_t qpn, Endpoint *ep);
    // No longer: returns once no call into the endpoint bound there is in progress.
    void unbind_datagram(uint8_t port, uint32_t qpn);
    // Delivers `d` from `port` to the QP bound at (d.dlid, d.dest_qpn) in this subnet, or
    // drops it: an unknown LID or QPN drops silently, as a switch and an HCA do. The
    // receiver's verdict is counted (Q_Key and P_Key violations at its port).
    DatagramVerdict send_datagram(uint8_t port, const DatagramSend &d);

  private:
    void detach_locked(std::vector<std::pair<uint8_t, ri_lid_t>> &down);
    void count_violation(uint8_t number, DatagramVerdict v);
    HcaConfig cfg_;
    mutable std::mutex mu_;
    uint64_t system_image_guid_ = 0;
    bool attached_ = false;
    std::array<PortAttributes, kMaxPorts> ports_{};
    // Violation counters (PortInfo:Q_KeyViolations and P_KeyViolations, saturating at
    // 0xFFFF), counted by the senders' threads; port() reports them.
    std::array<std::atomic<uint16_t>, kMaxPorts> bad_qkey_{};
    std::array<std::atomic<uint16_t>, kMaxPorts> bad_pkey_{};
};

// §2.2: 0x02 << 56 | (FNV-1a-64(machine id ‖ 0 ‖ subnet ‖ 0 ‖ name) & 0x00FF_FFFF_FFFF_FF00):
// a locally administered EUI-64 whose low byte is left for the port number. The machine
// id is /etc/machine-id, or the host name where that file is missing.
uint64_t derive_node_guid(std::string_view subnet, std::string_view name);
uint64_t fnv1a64(std::string_view bytes, uint64_t h = 0xcbf29ce484222325ull);
std::string machine_id();

// "u<uid>": one subnet per user unless SOFTRNIC_IB_SUBNET says otherwise.
std::string default_subnet();
// 1..63 bytes of letters, digits, '.', '_' and '-' (it names sockets later).
bool valid_subnet_name(std::string_view name);

// 256..4096 bytes to the enum, 0 for anything else; and back.
ri_ib_mtu_t mtu_from_bytes(uint32_t bytes);
uint32_t mtu_bytes(ri_ib_mtu_t mtu);

}  // namespace softrnic::transport::ib
