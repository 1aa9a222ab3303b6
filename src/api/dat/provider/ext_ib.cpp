// The InfiniBand extension of uDAPL (dat_ib_extensions.h) on softrnic's reliable connections:
// RDMA Write with immediate data, fetch-and-add and compare-and-swap, posted as RNICPI work
// requests. Over TCP these run on RFC 7306, which both softrnic ends agree on at connection
// set-up (ep_connect.cpp, cr.cpp); shm carries them natively. Unreliable datagrams, counters
// and collectives are not offered: they answer DAT_NOT_IMPLEMENTED (the spec's "not
// supported", the same code as DAT_MODEL_NOT_SUPPORTED). See provider.hpp for what the
// sources share.
#include <algorithm>
#include <cstdarg>
#include <cstring>

#include <dat2/dat_ib_extensions.h>

#include "provider.hpp"

namespace softrnic::dapl {

namespace {

// The fixed length of an atomic operand and of its original value (IB atomics, RFC 7306).
constexpr DAT_VLEN kAtomicBytes = 8;

// What every extended post checks first: a live EP whose QP may take requests.
DAT_RETURN check_post_target(Ep *ep) {
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    return post_state(ep);
}

// RDMA Write with immediate data: the data lands at `remote`, and the 32-bit immediate
// consumes a receive at the peer, reported there as DAT_IB_RDMA_WRITE_IMMED_DATA. The work
// request carries the consumer flag that marks its own completion as an extended one.
DAT_RETURN post_rdma_write_immed(Ep *ep, DAT_COUNT segments, const DAT_LMR_TRIPLET *local,
                                 DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                 DAT_UINT32 immediate, DAT_COMPLETION_FLAGS flags) {
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    const DAT_COUNT max =
        std::max<DAT_COUNT>(std::max(ep->attr.max_rdma_write_iov, ep->attr.max_request_iov), 1);
    if (segments < 0 || segments > max) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    if (segments > 0 && !local) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    if (!remote) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
    unsigned ri_flags = 0;
    if (DAT_RETURN r = request_flags(ep, flags, ri_flags, DAT_INVALID_ARG8)) return r;
    if (DAT_RETURN r = check_post_target(ep)) return r;
    Sgl sg;
    if (!sg.build(segments, local)) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    if (sg.total > (1u << 30)) return err(DAT_LENGTH_ERROR);  // the IA's max_rdma_size
    if (sg.total > remote->segment_length) return err(DAT_LENGTH_ERROR);
    ri_wr_t wr;
    std::memset(&wr, 0, sizeof wr);
    wr.wr_rdma_write.type = RI_WR_TYPE_RDMA_WRITE_IMMEDIATE;
    wr.wr_rdma_write.flags = static_cast<ri_wr_flags_t>(ri_flags | kExtendedWriteMark);
    wr.wr_rdma_write.id = cookie.as_64;
    wr.wr_rdma_write.sg_list = sg.segs;
    wr.wr_rdma_write.num_sgls = sg.n;
    wr.wr_rdma_write.rdma_addr = remote->virtual_address;
    wr.wr_rdma_write.rtag = remote->rmr_context;
    wr.wr_rdma_write.imm_data = immediate;
    return post_sq(ep, wr);
}

// Fetch-and-add (operand2 unused) or compare-and-swap on the peer's 64-bit word; the
// original value lands in the 8 bytes at `local`. RNICPI's atomic WR names no remote
// address: the target is the start of the region or window `remote->rmr_context` names,
// so `remote->virtual_address` must be that start (docs/spec-deviations.md).
DAT_RETURN post_atomic(Ep *ep, ri_wr_type_t type, uint64_t operand1, uint64_t operand2,
                       const DAT_LMR_TRIPLET *local, DAT_DTO_COOKIE cookie,
                       const DAT_RMR_TRIPLET *remote, DAT_COMPLETION_FLAGS flags,
                       DAT_RETURN local_arg, DAT_RETURN remote_arg, DAT_RETURN flags_arg) {
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    if (!local) return err(DAT_INVALID_PARAMETER, local_arg);
    if (local->segment_length < kAtomicBytes) return err(DAT_LENGTH_ERROR);
    if (!remote) return err(DAT_INVALID_PARAMETER, remote_arg);
    if (remote->segment_length < kAtomicBytes) return err(DAT_LENGTH_ERROR);
    // IB and RFC 7306 both require a naturally aligned 64-bit target.
    if (remote->virtual_address % kAtomicBytes != 0) return err(DAT_INVALID_PARAMETER, remote_arg);
    unsigned ri_flags = 0;
    if (DAT_RETURN r = request_flags(ep, flags, ri_flags, flags_arg)) return r;
    if (DAT_RETURN r = check_post_target(ep)) return r;
    ri_wr_t wr;
    std::memset(&wr, 0, sizeof wr);
    wr.wr_atomic.type = type;
    wr.wr_atomic.flags = static_cast<ri_wr_flags_t>(ri_flags);
    wr.wr_atomic.id = cookie.as_64;
    wr.wr_atomic.rtag = remote->rmr_context;
    wr.wr_atomic.atomic_operand1 = operand1;
    wr.wr_atomic.atomic_operand2 = operand2;
    wr.wr_atomic.atomic_result.addr.vaddr = local->virtual_address;
    wr.wr_atomic.atomic_result.tag.ltag = local->lmr_context;
    wr.wr_atomic.atomic_result.len = kAtomicBytes;
    return post_sq(ep, wr);
}

}  // namespace

DAT_RETURN extended_op(DAT_HANDLE h, DAT_EXTENDED_OP op, va_list args) {
    // The argument lists follow the dat_ib_* macros of dat_ib_extensions.h, in order; the
    // DAT_COMPLETION_FLAGS enum arrives promoted to int through the ellipsis.
    switch (static_cast<int>(op)) {
        case DAT_IB_RDMA_WRITE_IMMED_OP: {
            Ep *ep = as_ep(h);
            const auto segments = va_arg(args, DAT_COUNT);
            const auto *local = va_arg(args, DAT_LMR_TRIPLET *);
            const auto cookie = va_arg(args, DAT_DTO_COOKIE);
            const auto *remote = va_arg(args, DAT_RMR_TRIPLET *);
            const auto immediate = va_arg(args, DAT_UINT32);
            const auto flags = static_cast<DAT_COMPLETION_FLAGS>(va_arg(args, int));
            return post_rdma_write_immed(ep, segments, local, cookie, remote, immediate, flags);
        }
        case DAT_IB_FETCH_AND_ADD_OP: {
            Ep *ep = as_ep(h);
            const auto add = va_arg(args, DAT_UINT64);
            const auto *local = va_arg(args, DAT_LMR_TRIPLET *);
            const auto cookie = va_arg(args, DAT_DTO_COOKIE);
            const auto *remote = va_arg(args, DAT_RMR_TRIPLET *);
            const auto flags = static_cast<DAT_COMPLETION_FLAGS>(va_arg(args, int));
            return post_atomic(ep, RI_WR_TYPE_FETCH_AND_ADD, add, 0, local, cookie, remote, flags,
                               DAT_INVALID_ARG4, DAT_INVALID_ARG6, DAT_INVALID_ARG7);
        }
        case DAT_IB_CMP_AND_SWAP_OP: {
            Ep *ep = as_ep(h);
            const auto compare = va_arg(args, DAT_UINT64);
            const auto swap = va_arg(args, DAT_UINT64);
            const auto *local = va_arg(args, DAT_LMR_TRIPLET *);
            const auto cookie = va_arg(args, DAT_DTO_COOKIE);
            const auto *remote = va_arg(args, DAT_RMR_TRIPLET *);
            const auto flags = static_cast<DAT_COMPLETION_FLAGS>(va_arg(args, int));
            return post_atomic(ep, RI_WR_TYPE_COMPARE_AND_SWAP, compare, swap, local, cookie,
                               remote, flags, DAT_INVALID_ARG5, DAT_INVALID_ARG7, DAT_INVALID_ARG8);
        }
        default:
            // Unreliable datagrams need the InfiniBand personality; counters and collectives
            // are not kept. Every other operation number is unknown to the extension.
            if (!handles().valid(h, -1)) return err(DAT_INVALID_HANDLE);
            return err(DAT_NOT_IMPLEMENTED);
    }
}

// Extended completions (DAT_IB_DTO_EVENT): the DTO data as usual plus the extension record
// in event_extension_data, laid out as DAT_IB_EXTENSION_EVENT_DATA. False for an ordinary
// completion, which the caller converts itself.
bool fill_extended_dto(const ri_rc_wc_t &wc, DAT_EVENT &ev) {
    DAT_IB_EXTENSION_EVENT_DATA ext;
    std::memset(&ext, 0, sizeof ext);
    auto &d = ev.event_data.dto_completion_event_data;
    switch (wc.op_type) {
        case RI_WC_TYPE_RDMA_WRITE:
            if (!(wc.flags & kExtendedWriteMark)) return false;
            d.operation = static_cast<DAT_DTOS>(DAT_IB_DTO_RDMA_WRITE_IMMED);
            ext.type = DAT_IB_RDMA_WRITE_IMMED;
            break;
        case RI_WC_TYPE_RDMA_IMMEDIATE_RECEIVED:
            d.operation = static_cast<DAT_DTOS>(DAT_IB_DTO_RECV_IMMED);
            ext.type = DAT_IB_RDMA_WRITE_IMMED_DATA;
            ext.val.immed.data = wc.immediate_data;
            break;
        case RI_WC_TYPE_FETCH_AND_ADD:
            d.operation = static_cast<DAT_DTOS>(DAT_IB_DTO_FETCH_ADD);
            ext.type = DAT_IB_FETCH_AND_ADD;
            break;
        case RI_WC_TYPE_COMPARE_AND_SWAP:
            d.operation = static_cast<DAT_DTOS>(DAT_IB_DTO_CMP_SWAP);
            ext.type = DAT_IB_CMP_AND_SWAP;
            break;
        default:
            return false;
    }
    ev.event_number = static_cast<DAT_EVENT_NUMBER>(DAT_IB_DTO_EVENT);
    ext.status = d.status == DAT_DTO_SUCCESS ? DAT_OP_SUCCESS : DAT_IB_OP_ERR;
    static_assert(sizeof ext <= sizeof ev.event_extension_data);
    std::memcpy(ev.event_extension_data, &ext, sizeof ext);
    return true;
}

}  // namespace softrnic::dapl
