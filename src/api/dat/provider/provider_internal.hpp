// Internal objects of the softrnic uDAPL provider (libdaplsoftrnic.so.2).
//
// The provider is a thin translation: IA = one softrnic RNIC instance opened through
// RNICPI, PZ = PD, EVD = a software event queue fed by an RNICPI CQ (DTO and RMR-bind
// streams) and by the provider (connection, CR, async, software streams), EP = QP,
// LMR = MR, RMR = MW, SRQ = SRQ; connections come from the shared connection manager
// (src/cm). Nothing here reaches into src/engine or src/transport internals.
#pragma once

#include <dat2/dat_ib_extensions.h>
#include <dat2/dat_registry.h>
#include <dat2/udat.h>
#include <netinet/in.h>
#include <rnicpi/rnicpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
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
#include "cm/connection_manager.hpp"

namespace softrnic::dapl {

// DAT_RETURN of the error class: type | subtype.
constexpr DAT_RETURN err(DAT_RETURN type, DAT_RETURN subtype = 0) {
    return DAT_CLASS_ERROR | type | subtype;
}

struct Ia;
struct Evd;
struct Cno;
struct Pz;
struct Srq;
struct Ep;

// Every handle starts with the provider table pointer (DAT_HANDLE_TO_PROVIDER, L14260).
struct Obj {
    const DAT_PROVIDER *provider;
    DAT_HANDLE_TYPE type;
    Ia *ia = nullptr;
    DAT_CONTEXT context{};
    Obj(const DAT_PROVIDER *p, DAT_HANDLE_TYPE t, Ia *owner) : provider(p), type(t), ia(owner) {}
    // Not virtual: a vtable pointer would displace `provider` from the first word.
};

struct Cno : Obj {
    std::mutex mu;
    std::condition_variable cv;
    DAT_OS_WAIT_PROXY_AGENT agent{nullptr, nullptr};
    DAT_PROXY_TYPE proxy = DAT_PROXY_TYPE_NONE;
    int fd = -1;             // eventfd of an FD-CNO
    bool triggered = false;  // a trigger nobody has consumed yet (L2874)
    DAT_EVD_HANDLE last = nullptr;
    int waiters = 0;
    bool dead = false;  // IA closed: waiters leave with a NULL EVD
    std::atomic<int> evds{0};
    using Obj::Obj;
};

// The shared event queue (src/api/common) supplies the lock `mu`, the ring `q`, the CQ
// `cq` and the wake-up of waiters; the EVD adds what uDAPL says about its events.
struct Evd : Obj, api::EventQueue<DAT_EVENT> {
    DAT_COUNT qlen = 0;
    DAT_EVD_FLAGS flags{};
    uint32_t cq_size = 0;
    Cno *cno = nullptr;
    bool enabled = true;
    bool waitable = true;
    bool waiter = false;
    bool aborted = false;
    std::atomic<int> users{0};        // EPs, SPs attached
    std::atomic<int> unsignalled{0};  // EPs with UNSIGNALLED request completions
    // Async EVD only: one slot held for each live SRQ EP on the IA, so that the EP_BROKEN
    // every such EP posts when its connection ends (srq_ep_ended) is never lost to an
    // overflow, however many end at once (dtestsrq: 10 EPs, an async queue of 8).
    std::atomic<int> reserved{0};
    using Obj::Obj;
};

// Events an EVD holds: what the consumer asked for plus the async slots held for SRQ EPs
// (the async EVD is "at least" the length asked for, L2067). Caller holds evd->mu.
inline DAT_COUNT capacity(const Evd *evd) {
    return evd->qlen + evd->reserved.load(std::memory_order_relaxed);
}

struct Pz : Obj {
    ri_pd_handle_t pd = nullptr;
    std::atomic<int> users{0};
    using Obj::Obj;
};

struct Lmr : Obj {
    Pz *pz = nullptr;
    api::MemoryRegion mr;
    DAT_MEM_TYPE mem_type{};
    DAT_REGION_DESCRIPTION region{};
    DAT_VLEN length = 0;
    DAT_MEM_PRIV_FLAGS priv{};
    DAT_VA_TYPE va_type = DAT_VA_TYPE_VA;
    DAT_LMR_CONTEXT lmr_context = 0;
    DAT_RMR_CONTEXT rmr_context = 0;
    DAT_VADDR addr = 0;
    std::atomic<int> bound{0};  // RMRs bound into it
    using Obj::Obj;
};

struct Rmr : Obj {
    Pz *pz = nullptr;
    api::MemoryWindow mw;
    ri_rtag_t rtag = 0;  // current context (index | key)
    DAT_RMR_SCOPE scope = DAT_RMR_SCOPE_PZ;
    DAT_LMR_TRIPLET triplet{};
    DAT_MEM_PRIV_FLAGS priv{};
    Lmr *lmr = nullptr;  // bound into
    Ep *ep = nullptr;    // the EP of the last bind (an EP-scoped RMR serves only it)
    DAT_RMR_COOKIE cookie{};
    using Obj::Obj;
};

struct Srq : Obj {
    Pz *pz = nullptr;
    ri_srq_handle_t srq = nullptr;
    DAT_SRQ_ATTR attr{};
    std::atomic<int> users{0};
    std::atomic<int> posted{0};
    using Obj::Obj;
};

struct Sp;
struct Cr;

struct Ep : Obj {
    std::mutex mu;
    // Serialises the RNICPI calls on this EP's QP (create, modify, query, destroy) and
    // guards `qp` against their concurrent use: the provider opens RNICPI's
    // consumer-serialised view, so serialising calls on a critical object is ours to do
    // (RNICPI L1316-1363). Innermost: nothing else is locked while it is held. Posts do not
    // take it (the engine lets a send poster and a receive poster run at once).
    std::mutex qp_mu;
    DAT_EP_STATE state = DAT_EP_STATE_UNCONFIGURED_UNCONNECTED;
    Pz *pz = nullptr;
    Evd *recv = nullptr, *req = nullptr, *conn = nullptr;
    Srq *srq = nullptr;
    DAT_EP_ATTR attr{};
    ri_qp_handle_t qp = nullptr;
    cm::ConnId conn_id = 0;
    sockaddr_storage remote{};
    DAT_CONN_QUAL remote_qual = 0;
    DAT_CONN_QUAL local_qual = 0;
    std::vector<uint8_t> est_pd;  // ESTABLISHED private data, valid until reset/free
    Sp *rsp = nullptr;            // the RSP that reserved it
    Cr *cr = nullptr;             // pending CR (PASSIVE_CONNECTION_PENDING)
    // Receives posted and receives completed. Each has one writer at a time, so they are
    // advanced with a load and a store, not a read-modify-write (a locked instruction on
    // every post_recv and every receive completion, both on a ping-pong's critical path):
    // dat_ep_post_recv is not thread-safe per EP (L1813: one post_recv thread at a time),
    // and a QP's receive completions all come from one CQ, taken under its EVD's mutex.
    std::atomic<uint64_t> recvs_posted{0};
    std::atomic<uint64_t> recvs_completed{0};
    // Posted and not yet taken from the CQ (readers on other threads may see it lag).
    int64_t recvs_outstanding() const {
        return int64_t(recvs_posted.load(std::memory_order_relaxed) -
                       recvs_completed.load(std::memory_order_relaxed));
    }
    // Multi-segment RDMA reads split by the provider: (cookie, total length), in order.
    std::deque<std::pair<uint64_t, uint32_t>> split_reads;
    // Socket-style parameters for the common connection model (Table 5, L6288): unset
    // while comm.domain is AF_UNSPEC / local.ss_family is AF_UNSPEC.
    DAT_COMM comm{};
    sockaddr_storage local{};
    // SRQ high watermarks (L5838, L6369): hard = attr.max_recv_dtos, soft =
    // attr.srq_soft_hw (DAT_WATERMARK_INFINITE: none). The soft one fires once per setting.
    bool soft_armed = false;
    uint32_t wm_mark = 0;        // rq_hiwat the QP is armed with (0: not armed)
    bool provider_made = false;  // created by a PSP with DAT_PSP_PROVIDER_FLAG (L4015)
    using Obj::Obj;
};

// A service point: PSP, RSP or CSP.
struct Sp : Obj {
    DAT_CONN_QUAL qual = 0;  // CSP: its port
    Evd *evd = nullptr;
    DAT_PSP_FLAGS flags = DAT_PSP_CONSUMER_FLAG;
    Ep *ep = nullptr;  // RSP
    bool fired = false;
    cm::ConnId listener = 0;
    DAT_COMM comm{};          // CSP (PSP/RSP: the IA's, L4700)
    sockaddr_storage addr{};  // CSP: the address it is bound to, port included
    using Obj::Obj;
};

struct Cr : Obj {
    Sp *sp = nullptr;
    cm::ConnId id = 0;
    sockaddr_storage peer{};
    std::vector<uint8_t> pd;
    Ep *ep = nullptr;  // RSP's EP, or the one a PSP with DAT_PSP_PROVIDER_FLAG made
    DAT_CONN_QUAL qual = 0;
    // The SP's communicator and local address, kept for dat_cr_accept (L4668) since the
    // SP may be freed before the CR is answered. sp_addr is unset for PSPs/RSPs (IA's).
    DAT_COMM comm{};
    sockaddr_storage sp_addr{};
    uint16_t peer_ird = 0, peer_ord = 0;  // the requester's RDMA Read credits
    using Obj::Obj;
};

struct Ia : Obj {
    std::string name;
    DAT_PROVIDER_INFO info{};
    api::RnicInstance dev;        // the RNIC instance: owns vp and rnic
    ri_vp_handle_t vp = nullptr;  // dev.vp(), dev.rnic(): read on every call
    ri_rnic_handle_t rnic = nullptr;
    ri_cq_event_handler_id_t cq_handler = 0;
    ri_rnic_attr_t attr{};
    sockaddr_in addr{};
    // DAT_IB_TRANSPORT_MTU as dat_ia_query reports it (transport_mtu.hpp): the text and
    // the provider-specific attribute that points at it, valid while the IA is open; then
    // the IB extension operations offered (OFED consumers such as dtestx look them up).
    char ib_mtu_text[8] = {};
    DAT_NAMED_ATTR specific_attrs[4] = {};
    Evd *async_evd = nullptr;
    bool own_async = false;
    std::unique_ptr<cm::ConnectionManager> cm;
    std::mutex mu;  // children, conns, listeners
    std::set<Obj *> children;
    std::map<cm::ConnId, Ep *> conns;
    std::map<cm::ConnId, Sp *> listeners;
    std::map<DAT_CONN_QUAL, Sp *> quals;
    std::set<Cr *> crs;
    // Current context of every bound RMR, for RDMA Read sinks named by context (L7459).
    std::map<DAT_RMR_CONTEXT, Rmr *> rmr_contexts;
    using Obj::Obj;
};

// Deletes an object through its real type (Obj has no virtual destructor).
void destroy_obj(void *p);

}  // namespace softrnic::dapl
