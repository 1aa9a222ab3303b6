// The handle registry, object destruction, and the helpers every object uses:
// private-data framing, parent and child bookkeeping, RNICPI returns as DAT returns. See
// provider.hpp for what the sources share.
#include <cstring>
#include <mutex>
#include <vector>

#include "provider.hpp"

namespace softrnic::dapl {

// The DAT registry unloads providers after their last IA closed: the registry is then
// released.
api::LibraryRegistry g_handles;

void destroy_obj(void *p) {
    auto *o = static_cast<Obj *>(p);
    switch (o->type) {
        case DAT_HANDLE_TYPE_IA:
            delete static_cast<Ia *>(o);
            break;
        case DAT_HANDLE_TYPE_EVD:
            delete static_cast<Evd *>(o);
            break;
        case DAT_HANDLE_TYPE_CNO:
            delete static_cast<Cno *>(o);
            break;
        case DAT_HANDLE_TYPE_PZ:
            delete static_cast<Pz *>(o);
            break;
        case DAT_HANDLE_TYPE_LMR:
            delete static_cast<Lmr *>(o);
            break;
        case DAT_HANDLE_TYPE_RMR:
            delete static_cast<Rmr *>(o);
            break;
        case DAT_HANDLE_TYPE_SRQ:
            delete static_cast<Srq *>(o);
            break;
        case DAT_HANDLE_TYPE_EP:
            delete static_cast<Ep *>(o);
            break;
        case DAT_HANDLE_TYPE_PSP:
        case DAT_HANDLE_TYPE_RSP:
        case DAT_HANDLE_TYPE_CSP:
            delete static_cast<Sp *>(o);
            break;
        case DAT_HANDLE_TYPE_CR:
            delete static_cast<Cr *>(o);
            break;
        default:
            delete o;
            break;
    }
}

std::vector<uint8_t> wrap_pd(const void *pd, size_t n, uint8_t flags) {
    std::vector<uint8_t> v(kHdr + n);
    std::memcpy(v.data(), kMagic, 4);
    v[4] = kHdrVersion;
    v[5] = flags;
    v[6] = static_cast<uint8_t>(n & 0xFF);
    v[7] = static_cast<uint8_t>(n >> 8);
    if (n) std::memcpy(v.data() + kHdr, pd, n);
    return v;
}
// Strips the header; false when the frame is not ours.
bool unwrap_pd(const std::vector<uint8_t> &in, std::vector<uint8_t> &out, uint8_t *flags) {
    if (in.size() < kHdr || std::memcmp(in.data(), kMagic, 4) != 0) return false;
    size_t n = in[6] | (size_t(in[7]) << 8);
    if (n != in.size() - kHdr) return false;
    if (flags) *flags = in[5];
    out.assign(in.begin() + kHdr, in.end());
    return true;
}

void add_child(Ia *ia, Obj *o) {
    handles().add(o, o->type);
    std::lock_guard lk(ia->mu);
    ia->children.insert(o);
}
void retire(Obj *o) {
    if (o->ia && o->ia != o) {
        std::lock_guard lk(o->ia->mu);
        o->ia->children.erase(o);
    }
    handles().retire(o, destroy_obj);
}

DAT_RETURN ep_state_error(DAT_EP_STATE s) {
    DAT_RETURN sub = DAT_INVALID_STATE_EP_NOTREADY;
    switch (s) {
        case DAT_EP_STATE_UNCONNECTED:
            sub = DAT_INVALID_STATE_EP_UNCONNECTED;
            break;
        case DAT_EP_STATE_ACTIVE_CONNECTION_PENDING:
            sub = DAT_INVALID_STATE_EP_ACTCONNPENDING;
            break;
        case DAT_EP_STATE_PASSIVE_CONNECTION_PENDING:
            sub = DAT_INVALID_STATE_EP_PASSCONNPENDING;
            break;
        case DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING:
            sub = DAT_INVALID_STATE_EP_TENTCONNPENDING;
            break;
        case DAT_EP_STATE_CONNECTED:
            sub = DAT_INVALID_STATE_EP_CONNECTED;
            break;
        case DAT_EP_STATE_DISCONNECTED:
            sub = DAT_INVALID_STATE_EP_DISCONNECTED;
            break;
        case DAT_EP_STATE_RESERVED:
            sub = DAT_INVALID_STATE_EP_RESERVED;
            break;
        case DAT_EP_STATE_COMPLETION_PENDING:
            sub = DAT_INVALID_STATE_EP_COMPLPENDING;
            break;
        case DAT_EP_STATE_DISCONNECT_PENDING:
            sub = DAT_INVALID_STATE_EP_DISCPENDING;
            break;
        case DAT_EP_STATE_UNCONFIGURED_UNCONNECTED:
            sub = DAT_INVALID_STATE_EP_UNCONFIGURED;
            break;
        case DAT_EP_STATE_UNCONFIGURED_RESERVED:
            sub = DAT_INVALID_STATE_EP_UNCONFRESERVED;
            break;
        case DAT_EP_STATE_UNCONFIGURED_PASSIVE:
            sub = DAT_INVALID_STATE_EP_UNCONFPASSIVE;
            break;
        case DAT_EP_STATE_UNCONFIGURED_TENTATIVE:
            sub = DAT_INVALID_STATE_EP_UNCONFTENTATIVE;
            break;
        default:
            break;
    }
    return err(DAT_INVALID_STATE, sub);
}

// RNICPI post/verb failures as DAT returns.
DAT_RETURN from_ri(ri_api_return_t r) {
    switch (r) {
        case RI_RET_SUCCESS:
            return DAT_SUCCESS;
        case RI_RET_QP_INVALID_STATE:
            return err(DAT_INVALID_STATE);
        case RI_RET_RESOURCE_SHORTAGE:
            return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
        case RI_RET_QP_CAPACITY_EXCEEDED:
        case RI_RET_RNIC_WR_LIMIT_EXCEEDED:
        case RI_RET_CQ_WOULD_OVERFLOW:
            return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
        case RI_RET_MEM_INVALID_ACCESS:
        case RI_RET_MEM_INVALID_ADDRESS:
            return err(DAT_INVALID_PARAMETER);
        default:
            return err(DAT_INVALID_PARAMETER);
    }
}

}  // namespace softrnic::dapl
