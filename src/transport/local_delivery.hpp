// One outbound operation carried out against a responder's Endpoint in this process: the
// initiator's thread runs the responder's checks and copies straight between the two QPs'
// memory (one copy). What every in-process path shares: the iWARP loopback transport and
// the InfiniBand RC channel between the IB instances of one process.
#pragma once

#include <cstring>

#include "transport/transport.hpp"

namespace softrnic::transport {

inline RxStatus deliver_local(Endpoint &p, const OutboundOp &op) {
    switch (op.kind) {
        case OpKind::Send:
        case OpKind::SendInvalidate:
        case OpKind::SendImmediate:
            return p.rx_send(op.kind, op.local, op.length, op.solicited, op.remote_stag,
                             op.immediate);
        case OpKind::RdmaWrite:
        case OpKind::RdmaWriteImmediate: {
            if (op.length) {
                IoSpan dst{};
                void *ref = nullptr;
                RxStatus st =
                    p.rx_tagged_acquire(op.remote_stag, op.remote_to, op.length, false, dst, ref);
                if (!st.ok) return st;
                uint64_t off = 0;
                for (const IoSpan &s : op.local) {
                    std::memcpy(dst.ptr + off, s.ptr, s.len);
                    off += s.len;
                }
                p.rx_tagged_release(ref);
            }
            if (op.kind == OpKind::RdmaWriteImmediate)
                return p.rx_write_immediate(op.length, op.immediate, op.solicited);
            return RxStatus::success();
        }
        case OpKind::RdmaRead: {
            if (!op.length) return RxStatus::success();
            IoSpan src{};
            void *ref = nullptr;
            RxStatus st =
                p.rx_tagged_acquire(op.remote_stag, op.remote_to, op.length, true, src, ref);
            if (!st.ok) return st;
            uint64_t off = 0;
            for (const IoSpan &s : op.local) {
                std::memcpy(s.ptr, src.ptr + off, s.len);
                off += s.len;
            }
            p.rx_tagged_release(ref);
            return RxStatus::success();
        }
        case OpKind::FetchAdd:
        case OpKind::CompareSwap: {
            uint64_t orig = 0;
            RxStatus st =
                p.rx_atomic(op.kind, op.remote_stag, op.remote_to, op.operand1, op.operand2, orig);
            if (st.ok && op.atomic_result) *op.atomic_result = orig;
            return st;
        }
    }
    return RxStatus::fail(RemoteFault::UnexpectedOpcode);
}

}  // namespace softrnic::transport
