// Internal objects of softrnic's IT-API 2.1 library (libitapi.so.2), and what its sources
// share: the handle registry, the handle checks, and the functions each source offers the
// others, listed by the file that defines them. Spec references: IT-API Lnnnn is a line of
// the IT-API 2.1 specification text.
//
// The library is a thin translation, as the uDAPL provider is: IA = one softrnic RNIC
// instance opened through RNICPI, PZ = PD, EVD = a software event queue (the shared
// EventQueue), LMR = MR and RMR = MW (the shared MemoryRegion and MemoryWindow); endpoints
// and connections come in later slices (docs/it-api.md).
#pragma once

#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <rnicpi/rnicpi.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "api/common/event_queue.hpp"
#include "api/common/memory_registration.hpp"
#include "api/common/object_registry.hpp"
#include "api/common/rnic_instance.hpp"

namespace softrnic::itapi {

struct Ia;
struct Evd;

// Every object. The registry kind of an object is its it_handle_type_enum_t value.
struct Obj {
    it_handle_type_enum_t type;
    Ia *ia = nullptr;  // the IA it belongs to (an IA: itself)
    // The Consumer Context (it_context_t's 64 bits) and whether it was ever set
    // (it_get_consumer_context answers IT_ERR_NO_CONTEXT until then, IT-API L5526-L5527).
    std::atomic<uint64_t> context{0};
    std::atomic<bool> context_set{false};
    Obj(it_handle_type_enum_t t, Ia *owner) : type(t), ia(owner) {}
    // Not virtual: objects are deleted through destroy_obj, by their type.
};

// The interfaces this library offers (it_interface_list): the IA names of the uDAPL
// provider, each forcing or leaving open the transport the connection manager will use.
struct InterfaceDesc {
    const char *name;
};
inline constexpr InterfaceDesc kInterfaces[] = {{"softrnic"}, {"softrnic-tcp"}, {"softrnic-shm"}};
inline constexpr uint32_t kApiMajor = 2;
inline constexpr uint32_t kApiMinor = 1;

struct Pz : Obj {
    ri_pd_handle_t pd = nullptr;
    // Objects that name this PZ (EPs, LMRs, RMRs, S-RQs, address handles): it_pz_free
    // answers IT_ERR_PZ_BUSY while any exists (IT-API L10302-L10305).
    std::atomic<int> users{0};
    using Obj::Obj;
};

// A Local Memory Region: an RNICPI MR over [addr, addr + length) in its PZ's PD.
struct Lmr : Obj {
    // pz, privs and the registration: it_lmr_modify changes them while queries read them.
    std::mutex mu;
    Pz *pz = nullptr;
    api::MemoryRegion mr;
    void *addr = nullptr;
    it_length_t length = 0;
    uint32_t addr_mode = IT_ADDR_MODE_ABSOLUTE;
    uint32_t privs = 0;  // it_mem_priv_t bits as created or modified
    uint32_t flags = 0;  // it_lmr_flag_t bits the LMR has (what it_lmr_query reports)
    uint32_t shared_id = 0;
    // RMRs linked to it: it_lmr_free and it_lmr_modify answer IT_ERR_LMR_BUSY while any is
    // (IT-API L6911-L6913, L7265-L7267). Only it_rmr_link links one (with endpoints).
    std::atomic<int> rmr_links{0};
    using Obj::Obj;
};

// A Remote Memory Region: an RNICPI MW in its PZ's PD, Narrow (type 2) or Wide (type 1).
struct Rmr : Obj {
    Pz *pz = nullptr;
    api::MemoryWindow mw;
    uint32_t type = IT_RMR_TYPE_NARROW;  // it_rmr_type_t, never DEFAULT
    Lmr *lmr = nullptr;                  // the LMR it is linked to, if any
    using Obj::Obj;
};

// One queued event and whether it is a Notification Event (IT-API L4500-L4510): every
// event of a non-DTO stream is; a DTO completion is when posted with IT_NOTIFY_FLAG, in
// error, or a solicited receive.
struct Slot {
    it_event_t ev;
    bool notify;
};

// A Simple or Aggregate Event Dispatcher. The shared queue supplies the lock `mu`, the
// ring `q`, the waiters' condition and the descriptor; the EVD adds what IT-API says about
// its events. Lock order: the IA's `topo_mu`, then an AEVD's `mu`, then an SEVD's `mu`;
// a producer holds one SEVD lock at a time and takes its AEVD's afterwards, unnested.
struct Evd : Obj, api::EventQueue<Slot> {
    it_event_type_t stream = IT_DTO_EVENT_STREAM;  // IT_AEVD_NOTIFICATION_EVENT_STREAM: AEVD
    it_evd_flags_t flags{};  // guarded by mu (closing the fd clears IT_EVD_CREATE_FD)
    // AEVD: IT_EVD_DEQUEUE_NOTIFICATIONS, fixed at creation (read by its SEVDs' threads
    // without this EVD's lock).
    bool notifications = false;
    size_t qsize = 0;      // SEVD: actual queue size
    size_t threshold = 0;  // SEVD: IT_THRESHOLD_DISABLE or 1..qsize
    bool enabled = true;   // notifies its AEVD, fd or callback
    // SEVD: the AEVD it feeds (guarded by mu, changed under the AEVD's mu too).
    Evd *aevd = nullptr;
    // AEVD: the SEVDs that feed it (guarded by mu), and where the next scan starts, so that
    // no SEVD starves the others (IT-API L17312-L17321).
    std::vector<Evd *> feeders;
    size_t next_feeder = 0;
    // SEVD: a notification for its IT_EVD_DEQUEUE_NOTIFICATIONS AEVD is queued there.
    bool notification_queued = false;
    size_t notify_events = 0;  // Notification Events in q
    // Overflow (IT-API L4366-L4411): the reported state, whether the next overflow may
    // post an overflow event, and a DTO stream's uncorrectable overflow.
    bool overflowed = false;
    bool overflow_event_armed = true;
    bool dropping_forever = false;
    int user_fd = -1;  // the dup() of the descriptor handed to the consumer
    int waiters = 0;
    bool dead = false;  // freed (or its IA is): waiters leave with IT_ERR_ABORT
    // Event streams feeding it besides the built-in ones (EPs, listens, UD service
    // requests): it_evd_free answers IT_ERR_EVD_BUSY while any exists (IT-API L4917).
    std::atomic<int> streams{0};
    // Callback (IT-API L4045-L4106): armed once every event was dequeued; invoked by the
    // thread whose event brought the criteria, never twice at once.
    it_evd_callback_rtn_t callback = nullptr;
    void *callback_arg = nullptr;
    bool callback_armed = false;
    bool in_callback = false;
    bool callback_again = false;
    using Obj::Obj;

    bool aggregate() const { return stream == IT_AEVD_NOTIFICATION_EVENT_STREAM; }
    bool dequeue_notifications() const { return notifications; }
    bool has_fd() const { return (flags & IT_EVD_CREATE_FD) != 0; }
    // SEVD, caller holds mu (IT-API L4523).
    bool in_criteria() const {
        return notify_events > 0 || (threshold > 0 && q.size() >= threshold);
    }
};

// The it_ia_info_t blocks handed out by it_ia_query, with what they point at.
struct InfoBlock {
    it_ia_info_t info{};
    Ia *owner = nullptr;
    std::string name;
    std::vector<it_spigot_info_t> spigots;
    std::vector<it_net_addr_t> addrs;
};

struct Ia : Obj {
    std::string name;
    uint32_t major = kApiMajor, minor = kApiMinor;  // the version the consumer asked for
    api::RnicInstance dev;                          // the RNIC instance: owns rnic
    ri_rnic_handle_t rnic = nullptr;                // dev.rnic()
    ri_rnic_attr_t attr{};
    uint32_t iwarp_flags = 0;          // ri_iwarp_rnic_flags_t of the RNIC
    std::vector<it_net_addr_t> addrs;  // the spigot's network addresses
    std::mutex mu;                     // children, infos, aff, unaff
    std::mutex topo_mu;                // which SEVD feeds which AEVD (it_evd_modify, free)
    std::set<Obj *> children;
    std::set<InfoBlock *> infos;
    Evd *aff = nullptr;    // the IT_ASYNC_AFF_EVENT_STREAM SEVD, if any
    Evd *unaff = nullptr;  // the IT_ASYNC_UNAFF_EVENT_STREAM SEVD, if any
    // it_mem_map's mappings not yet unmapped: I/O address -> mapped lengths (guarded by mu).
    std::multimap<uint64_t, uint64_t> io_maps;
    using Obj::Obj;
};

// The bits of an enumeration value a C caller passed. A C enum holds any int; in C++ a
// value outside the enumerators' range is undefined, so the library never loads one as
// its enum type: masks, flags, stream numbers and booleans from the consumer are read as
// their bytes and checked as integers.
template <class E>
inline uint32_t raw(const E &e) {
    static_assert(sizeof(E) == sizeof(uint32_t));
    uint32_t v;
    std::memcpy(&v, &e, sizeof v);
    return v;
}

// ------------------------------------------------------------------------------ handles.cpp

// The one registry of live handles of this library.
extern api::LibraryRegistry g_handles;
inline api::ObjectRegistry &handles() {
    return *g_handles.registry;
}
template <class T>
inline T *as(const void *h, it_handle_type_enum_t t) {
    return handles().valid(h, t) ? static_cast<T *>(static_cast<Obj *>(const_cast<void *>(h)))
                                 : nullptr;
}
inline Ia *as_ia(const void *h) {
    return as<Ia>(h, IT_HANDLE_TYPE_IA);
}
inline Evd *as_evd(const void *h) {
    return as<Evd>(h, IT_HANDLE_TYPE_EVD);
}
inline Pz *as_pz(const void *h) {
    return as<Pz>(h, IT_HANDLE_TYPE_PZ);
}
inline Lmr *as_lmr(const void *h) {
    return as<Lmr>(h, IT_HANDLE_TYPE_LMR);
}
inline Rmr *as_rmr(const void *h) {
    return as<Rmr>(h, IT_HANDLE_TYPE_RMR);
}

void destroy_obj(void *p);
// Registers `o` as live and as a child of its IA.
void add_child(Obj *o);
// Unregisters `o`, takes it off its IA's children and parks it in the quarantine.
void retire(Obj *o);
// The privilege rule of IT-API L1728-L1741: softrnic's Privileged Consumer is a process
// whose effective user id is 0 (docs/it-api.md).
bool privileged();

// ------------------------------------------------------------------------------ ia.cpp

it_status_t ia_create(const char *name, uint32_t major, uint32_t minor, it_ia_handle_t *out);
it_status_t ia_free(it_ia_handle_t h);
it_status_t ia_query(it_ia_handle_t h, it_ia_info_t **out);
void ia_info_free(it_ia_info_t *info);

// ------------------------------------------------------------------------------ pz.cpp

it_status_t pz_create(it_ia_handle_t h, it_pz_handle_t *out);
it_status_t pz_free(it_pz_handle_t h);
it_status_t pz_query(it_pz_handle_t h, uint32_t mask, it_pz_param_t *p);
void pz_free_now(Pz *pz);  // it_ia_free: whatever still names it

// ------------------------------------------------------------------------------ memory.cpp

it_status_t lmr_create(it_pz_handle_t h, void *addr, const it_iobl_t *iobl, it_length_t length,
                       uint32_t addr_mode, uint32_t privs, uint32_t flags, uint32_t shared_id,
                       it_lmr_handle_t *out, it_rmr_context_t *rmr_context);
it_status_t lmr_create_unlinked(it_pz_handle_t h, uint32_t flags, it_lmr_handle_t *out);
it_status_t lmr_free(it_lmr_handle_t h);
it_status_t lmr_query(it_lmr_handle_t h, uint32_t mask, it_lmr_param_t *p);
it_status_t lmr_modify(it_lmr_handle_t h, uint32_t mask, const it_lmr_param_t *p);
it_status_t rmr_create(it_pz_handle_t h, uint32_t type, it_rmr_handle_t *out);
it_status_t rmr_free(it_rmr_handle_t h);
it_status_t rmr_query(it_rmr_handle_t h, uint32_t mask, it_rmr_param_t *p);
it_status_t mem_map(it_ia_handle_t h, void *vaddr, size_t len, it_io_addr_t *io_addr,
                    size_t *mapped_len);
it_status_t mem_unmap(it_ia_handle_t h, it_io_addr_t io_addr, size_t mapped_len);
// it_ia_free: whatever still names them.
void lmr_free_now(Lmr *lmr);
void rmr_free_now(Rmr *rmr);
// it_ia_free: the mappings it_mem_unmap did not undo.
void mem_unmap_all(Ia *ia);

// ------------------------------------------------------------------------------ evd.cpp

it_status_t evd_create(it_ia_handle_t h, uint32_t stream, uint32_t flags, size_t qsize,
                       size_t threshold, it_evd_handle_t aevdh, it_evd_handle_t *out, int *fd);
it_status_t evd_modify(it_evd_handle_t h, uint32_t mask, const it_evd_param_t *p);
it_status_t evd_query(it_evd_handle_t h, uint32_t mask, it_evd_param_t *p);
it_status_t evd_free(it_evd_handle_t h);
// it_ia_free: every waiter has left (or the wait for them timed out).
void evd_free_now(Evd *evd);
// Marks `evd` dead and wakes its waiters (they return IT_ERR_ABORT).
void evd_abort(Evd *evd);
// Whether a waiter is still inside it_evd_wait on `evd`.
bool evd_has_waiters(Evd *evd);
it_status_t evd_callback_attach(it_evd_handle_t h, it_evd_callback_rtn_t cb, void *arg);
it_status_t evd_callback_detach(it_evd_handle_t h);
// Invokes the callback of `evd` when it is armed and the criteria hold (IT-API L4063-L4070);
// called with no lock held.
void run_callback(Evd *evd);

// ------------------------------------------------------------------------------ evd_events.cpp

// Puts `ev` on SEVD `sevd` as an event of its stream (a producer's entry point: it_evd_post_se
// today; EPs, listens and the async streams next): overflow handling, waiter wake-up, AEVD, fd
// and callback notification. False when the event was dropped (overflow).
bool deliver(Evd *sevd, const it_event_t &ev, bool notify);
// The SEVD's fd and AEVD after its state changed (enable, dequeue). Caller holds sevd->mu;
// returns the AEVD to notify afterwards (aevd_notify), or null.
Evd *sevd_notify_targets(Evd *sevd);
// A notification from `sevd` to its AEVD `aevd` (IT-API L4564-L4566); no lock held.
void aevd_notify(Evd *aevd, Evd *sevd);
// Recomputes an AEVD's fd readiness; caller holds aevd->mu (and no SEVD lock).
void aevd_update_fd(Evd *aevd);
// The same, taking the AEVD's lock (after a dequeue from one of its SEVDs).
void aevd_refresh_fd(Evd *aevd);
it_status_t evd_dequeue(it_evd_handle_t h, it_event_t *event);
it_status_t evd_wait(it_evd_handle_t h, uint64_t timeout_us, it_event_t *event, size_t *nmore);
it_status_t evd_post_se(it_evd_handle_t h, const void *event);

}  // namespace softrnic::itapi
