// The software RNIC instance and its resource objects.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "engine/base_names.hpp"
#include "engine/events.hpp"
#include "engine/handles.hpp"
#include "engine/ib_qp_transitions.hpp"
#include "engine/memory.hpp"
#include "engine/object.hpp"
#include "engine/personality.hpp"
#include "rnicpi/rnicpi.h"
#include "transport/ib_port.hpp"
#include "transport/progress.hpp"

namespace softrnic::engine {

class Device;
class Qp;

// Resource limits this software RNIC advertises (ri_rnic_query).
struct Limits {
    static constexpr uint32_t kMaxPds = 4096;
    static constexpr uint32_t kMaxQps = 16384;
    static constexpr uint32_t kMaxCqs = 16384;
    static constexpr uint32_t kMaxSrqs = 1024;
    static constexpr uint32_t kMaxWrsQp = 16384;
    static constexpr uint32_t kMaxWrsSrq = 65536;
    static constexpr uint32_t kMaxSge = 8;  // send/recv QP, SRQ, RDMA write, RDMA read
    static constexpr uint32_t kMaxCqes = 1u << 20;
    static constexpr uint32_t kMaxCqHandlers = 64;
    static constexpr uint32_t kMaxStags = 1u << 18;  // MRs + MWs
    static constexpr uint32_t kMaxPbl = 1u << 18;    // pages per physical/fast-reg region
    static constexpr uint32_t kMaxIrdQp = 128;
    static constexpr uint32_t kMaxOrdQp = 128;
    static constexpr uint32_t kMaxInline = 0;  // INLINE_OK is a hint we may ignore (L8922)
    static constexpr uint64_t kPageSize = 4096;
    static constexpr uint32_t kMaxAddrHandles = 16384;  // IB instances only
};

enum class View : uint8_t { Privileged = 0, PrivilegedVpLocking = 1, User = 2 };

// Who serialises the calls on one RNIC handle's objects (RNICPI L1316-1363): the consumer,
// or the provider, holding RnicHandle::serial for the call. A property of the ops table the
// call came through, not of the handle, so the RNICPI layer says which one applies.
enum class Serialisation : uint8_t { ByConsumer, ByProvider };

// A VP handle: one per view of an instance. The ops pointer must come first (L11299).
struct VpHandle {
    const ri_ops_t *ops;
    uint32_t magic;
    Device *dev;
    View view;
    static constexpr uint32_t kMagic = 0x53525650;  // "SRVP"
};

// A consumer's RNIC handle (ri_rnic_get_hdl). The ops pointer must come first.
struct RnicHandle {
    const ri_ops_t *ops;
    uint32_t magic;
    Device *dev;
    View view;
    ri_consumer_domain_t location;
    ri_os_data_t os_data;
    // Objects created on this handle (Object::owner) and memory entries it owns.
    UseCount users;
    // Provider-serialised view: serialises calls on this handle's objects (L1353-1358).
    std::recursive_mutex serial;
    static constexpr uint32_t kMagic = 0x53524E43;  // "SRNC"
    bool privileged() const { return view != View::User; }
};

// A protection domain: nothing but an object that others use.
class Pd : public Object {};

// An InfiniBand address handle (ri_ah_create, RNICPI L6361; docs/ib-personality.md 4.4):
// an address vector and the PD it was created on. Its vector changes only through
// ri_ah_modify, under `mu`; a UD send copies what it needs out of it at post time
// (Qp::post_datagram), so a handle may be modified or destroyed while sends that named it
// are outstanding without touching them.
class Ah : public Object {
  public:
    Use<Pd> pd;
    void *pd_handle = nullptr;
    mutable std::mutex mu;
    ri_ud_address_vector_t av{};  // guarded by mu
};

// A completion as queued inside a CQ.
struct Cqe {
    ri_rc_wc_t wc;
    uint32_t retire_slot;  // QP slot whose send queue this completion retires, or ~0
    uint64_t retire_word;  // (incarnation << 40) | send-queue position after this WR
    bool solicited;
    bool datagram;  // IB: a UD receive, whose CqeDatagram trails it in the CQ's slot
};

// The fields of a UD receive completion that ri_rc_wc_t lacks (ri_gen_wc_t, RNICPI
// L3525-3530). ri_gen_wc_t's prefix up to immediate_data is ri_rc_wc_t's, with qpn where
// invalidated_rtag is (the union ri_wc_t overlays them). IB instances' CQs carry one of these
// per slot; iWARP CQs none.
struct CqeDatagram {
    uint32_t qpn;
    uint32_t remote_qpn;
    ri_lid_t remote_lid;
    uint8_t remote_sl;
    uint8_t local_lid_pathbits;
    uint8_t grh_present;
    uint16_t pkey_index;
};

// A completion queue; its users are the work queues it is attached to.
class Cq : public Object {
  public:
    uint32_t handler_id = 0;
    uint32_t requested = 0;
    SlotQueue<Cqe> ring;
    ScopedGate resize_gate;
    std::atomic<uint8_t> armed{0};  // 0 none, 1 solicited, 2 any
    std::atomic<bool> overflowed{false};
    // IB: the QPs attached to it, counted by queue, as ordinary (> 0) or special (< 0):
    // special QPs may not share a CQ with ordinary ones (RNICPI L4131-4133). Unused on iWARP.
    std::atomic<int32_t> ib_qp_kinds{0};

    // Producer side (any thread). Returns false on overflow (the CQ is then in error).
    bool push(const Cqe &e);
    // The same for a UD receive completion (a CQ of an IB instance).
    bool push_datagram(const Cqe &e, const CqeDatagram &d);
    // Consumer side: fills up to `max` entries. One consumer at a time (RNICPI serialises
    // the calls on one CQ: the consumer, or the provider-serialised handle's lock).
    uint32_t poll(ri_wc_t *out, uint32_t max);
    // Consumer side: true when poll() would return something. Inline, for the empty
    // polls of a busy-polling consumer.
    bool has_completions() const { return ring.ready_for_single_consumer(); }
    // ri_cq_modify's resize to `num_cqe` (RNICPI L2998): producers stop, every CQE moves
    // across. `num_cqe` becomes the capacity granted. Caller serialises it against polls.
    ri_api_return_t resize(uint32_t &num_cqe);

  private:
    // SOFTRNIC_LOG=debug: one line for a completion in error (push() asks only at that level).
    void log_error_completion(const Cqe &e) const;
    template <class Fill>
    bool push_with(const Cqe &e, Fill &&fill);
    uint32_t poll_ib(ri_wc_t *out, uint32_t max);
};

// A receive WQE as kept in a receive queue or SRQ; its SGEs trail it in the slot.
struct RecvWqe {
    ri_wr_id_t id;
    uint32_t flags;
    uint32_t num_sgls;
};

// A shared receive queue; its users are the QPs attached to it.
class Srq : public Object {
  public:
    Use<Pd> pd;
    uint32_t max_wrs = 0;
    uint32_t max_sgl = 0;
    std::atomic<uint32_t> lowat{0};
    std::atomic<bool> limit_armed{false};
    std::atomic<bool> in_error{false};
    SlotQueue<RecvWqe, ri_data_seg_t> ring;
    std::atomic<uint32_t> posted{0};  // WQEs in the queue
    ScopedGate resize_gate;
    std::mutex post_mu;  // orders posters against resize (posters are the consumer's threads)

    // ri_srq_modify: the size and/or the limit of `mask` (RNICPI L4867-4874), then `a` gets
    // the SRQ's attributes as they now are.
    ri_api_return_t modify(uint32_t mask, ri_srq_attr_t &a);
};

class Device {
  public:
    explicit Device(std::string name);
    ~Device();

    const std::string &name() const { return name_; }

    // What kind of RNIC this instance is: the calls that depend on it dispatch through
    // this table (engine/personality.hpp): iwarp_personality(), or ib_personality() for
    // an InfiniBand instance, which also has the ports below.
    const Personality *personality = &iwarp_personality();
    // An InfiniBand instance's ports (transport/ib_port.hpp); null on iWARP. Set once,
    // before the instance is published.
    std::unique_ptr<transport::ib::Hca> hca;
    bool is_ib() const { return hca != nullptr; }
    VpHandle *view(View v) { return &views_[static_cast<int>(v)]; }

    // --- state guarded by mu ---
    std::recursive_mutex mu;
    bool attached = false;
    bool open = false;
    ri_pbl_mode_t pbl_mode = RI_PHYS_PAGE_LIST_MODE;
    ri_os_data_t open_os_data = nullptr;
    std::set<RnicHandle *> rnics;
    std::string lib_path;

    // Event delivery.
    std::atomic<ri_async_event_callback_t> async_cb{nullptr};
    std::array<std::atomic<ri_cq_event_callback_t>, Limits::kMaxCqHandlers + 1> cq_handlers{};
    std::array<std::atomic<bool>, Limits::kMaxCqHandlers + 1> cq_handler_used{};
    EventThread events;
    // Moves data for this instance's connected streams (declared before the QP table so it
    // outlives every channel registered with it).
    transport::ProgressEngine progress;

    ObjectTable<Pd> pds{ObjKind::Pd, Limits::kMaxPds};
    ObjectTable<Cq> cqs{ObjKind::Cq, Limits::kMaxCqs};
    ObjectTable<Qp> qps{ObjKind::Qp, Limits::kMaxQps};
    ObjectTable<Srq> srqs{ObjKind::Srq, Limits::kMaxSrqs};
    StagTable stags{Limits::kMaxStags};
    // IB: address handles (ri_ah_*); null on iWARP, which has none. Set with `hca`.
    std::unique_ptr<ObjectTable<Ah>> ahs;

    // Send-queue retirement words, by QP slot: written by CQ pollers, read by posters.
    // They live here, not in the QP, so a late poll never touches a destroyed QP.
    std::unique_ptr<std::atomic<uint64_t>[]> sq_retired;
    std::atomic<uint32_t> next_qp_id{1};
    std::atomic<uint32_t> next_qpn{0};  // IB QPNs; 0 until the first is allocated
    // IB: QP0 and QP1 of each port, handed out once until destroyed (RNICPI L4128):
    // index 2 * (port - 1) + (0 for QP0, 1 for QP1).
    std::array<std::atomic<bool>, 2 * transport::ib::kMaxPorts> special_qps{};
    // `type`: the caller's ri_sqp_type_t as an integer.
    ri_api_return_t create_special_qp(RnicHandle &owner, uint8_t port, uint32_t type,
                                      ri_qp_attr_t &attr, ri_os_data_t os, Qp *&out);
    std::atomic<uint32_t> incarnation_seed{1};

    // Pins (ri_mem_pin): exact-range reference counts (L6029-6040).
    std::mutex pin_mu;
    std::map<std::pair<uintptr_t, uint64_t>, uint32_t> pins;

    // --- object creation (objects.cpp): validates the attributes against the limits above,
    // builds and publishes the object, writes back what the consumer got. Returns the
    // RNICPI code; on failure nothing was created. The caller has resolved the handles.
    struct QpParts {
        Pd &pd;
        Cq &scq;
        Cq &rcq;
        Srq *srq;
    };
    ri_api_return_t create_pd(RnicHandle &owner, ri_os_data_t os, Pd *&out);
    ri_api_return_t create_cq(RnicHandle &owner, ri_cq_attr_t &attr, ri_os_data_t os, Cq *&out);
    ri_api_return_t create_srq(RnicHandle &owner, Pd &pd, ri_srq_attr_t &attr, ri_os_data_t os,
                               Srq *&out);
    // On an IB instance the QP's service type is qp_ib.trans_type, which the personality
    // has checked; a special QP (ri_special_qp_get) names its kind (Qp0 or Qp1) and its
    // port instead, and gets QPN 0 or 1.
    ri_api_return_t create_qp(RnicHandle &owner, const QpParts &parts, ri_qp_attr_t &attr,
                              ri_os_data_t os, Qp *&out, IbService special = IbService::Rc,
                              uint8_t fixed_port = 0);
    // IB: the next QPN (24 bits, never 0, 1 or 0xFFFFFF).
    uint32_t allocate_qpn();

    // --- object destruction (objects.cpp): `handle` must name one of `owner`'s objects
    // (RI_RET_*_INVALID_HANDLE otherwise) that nothing uses (RI_RET_*_INUSE otherwise; a QP
    // is never used). The object leaves its table with `owner`'s lock held when `by` is
    // ByProvider. For the objects events name (CQ, SRQ, QP) the event thread is then
    // drained without that lock, since a callback may be calling through the same handle:
    // no event for the object runs after the call returns (RNICPI L3070, L4043, L4944). The
    // object itself is freed last.
    ri_api_return_t destroy_pd(RnicHandle &owner, void *handle, Serialisation by);
    ri_api_return_t destroy_cq(RnicHandle &owner, void *handle, Serialisation by);
    ri_api_return_t destroy_srq(RnicHandle &owner, void *handle, Serialisation by);
    ri_api_return_t destroy_qp(RnicHandle &owner, void *handle, Serialisation by);

    // --- IB address handles (ah.cpp; RNICPI L6361-6598). `av` is checked against the
    // instance's ports (check_address_vector); the handle is `owner`'s.
    ri_api_return_t create_ah(RnicHandle &owner, void *pd_handle, const ri_ud_address_vector_t &av,
                              ri_os_data_t os, Ah *&out);
    ri_api_return_t modify_ah(RnicHandle &owner, void *handle, const ri_ud_address_vector_t &av);
    ri_api_return_t query_ah(RnicHandle &owner, void *handle, ri_ud_address_vector_t &av,
                             void *&pd_handle);
    ri_api_return_t destroy_ah(RnicHandle &owner, void *handle);
    Ah *owned_ah(void *handle, const RnicHandle *owner);

    // --- memory registration (registration.cpp): validates the rights and the range,
    // takes an STag and publishes it (valid last); same contract as the creation calls.
    // `key` is the consumer's 8-bit STag key (used when it owns the key). A MemEntry holds
    // its uses of the PD and of `owner` until StagTable::release.
    ri_api_return_t alloc_fastreg_mr(RnicHandle &owner, Pd &pd, uint32_t attr, uint32_t list_len,
                                     uint32_t key, ri_os_data_t os, MemEntry *&out);
    ri_api_return_t register_mr(RnicHandle &owner, Pd &pd, const ri_mr_reg_attr_t &attr,
                                uint32_t key, ri_os_data_t os, MemEntry *&out);
    ri_api_return_t register_phys_mr(RnicHandle &owner, Pd &pd, const ri_mr_reg_phys_attr_t &attr,
                                     uint32_t key, ri_os_data_t os, MemEntry *&out);
    // `src` was looked up from `src_handle`; it is looked up again under its writer lock.
    ri_api_return_t register_shared_mr(RnicHandle &owner, MemEntry &src, void *src_handle, Pd &pd,
                                       ri_mr_reg_attr_t &attr, uint32_t key, ri_os_data_t os,
                                       MemEntry *&out);
    // Re-registration in place (RI_MR_REREG_* `mask`; `phys` for ri_mr_rereg_phys): the old
    // STag is invalid from the start, and on failure the region is gone (L5339-5347).
    ri_api_return_t reregister_mr(RnicHandle &owner, void *handle, uint32_t mask,
                                  const ri_mr_reg_attr_t *attr, const ri_mr_reg_phys_attr_t *phys,
                                  uint32_t key, MemEntry *&out);
    ri_api_return_t deregister_mr(RnicHandle &owner, void *handle);
    ri_api_return_t alloc_mw(RnicHandle &owner, Pd &pd, uint32_t type, ri_os_data_t os,
                             MemEntry *&out);
    ri_api_return_t dealloc_mw(RnicHandle &owner, void *handle);
    // Handle lookups restricted to what `owner` owns (nullptr otherwise).
    Pd *owned_pd(void *handle, const RnicHandle *owner);
    MemEntry *owned_mem(void *handle, bool window, const RnicHandle *owner);

    void start_events();
    void stop_events();
    void raise(ri_async_event_type_t type, void *object, ObjKind kind, ri_os_data_t os_data);
    // RI_EVENT_PORT_EVENT (unaffiliated, InfiniBand only): `port` is now in `state`.
    void raise_port_event(uint8_t port, ri_ib_port_state_t state);
    void notify_cq(Cq &cq);

  private:
    MemEntry *new_mem(MemKind kind, RnicHandle &owner, Pd &pd, ri_os_data_t os);
    void deliver(const QueuedEvent &ev);
    std::string name_;
    std::array<VpHandle, 3> views_;
};

// Instances by name, and VP handle validation.
Device *device_from_vp(ri_vp_handle_t vp);
RnicHandle *rnic_from_handle(ri_rnic_handle_t h);

}  // namespace softrnic::engine
