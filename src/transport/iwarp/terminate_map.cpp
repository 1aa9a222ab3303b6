#include "transport/iwarp/terminate_map.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "transport/tcp/wire/ddp_rdmap.hpp"

namespace softrnic::transport::iwarp {

namespace w = tcp::wire;

namespace {

bool irrq(FaultedOp op) {
    return op == FaultedOp::ReadRequest || op == FaultedOp::Atomic || op == FaultedOp::None;
}

// The header of the failed operation as it stood on the wire (single or last segment).
size_t quote(const FaultReport &f, std::span<uint8_t> out) {
    w::DdpHeader h;
    switch (f.op) {
        case FaultedOp::None:
            return 0;
        case FaultedOp::Write:
        case FaultedOp::ReadResponse:
            h.opcode = f.op == FaultedOp::Write ? w::Opcode::RdmaWrite : w::Opcode::ReadResponse;
            h.stag = f.stag;
            h.to = f.to;
            return w::encode_tagged_header(h, out);
        case FaultedOp::ReadRequest:
            h.opcode = w::Opcode::ReadRequest;
            break;
        case FaultedOp::Atomic:
            h.opcode = w::Opcode::AtomicRequest;
            break;
        case FaultedOp::Send:
            h.opcode = w::Opcode::Send;
            break;
        case FaultedOp::SendInvalidate:
            h.opcode = w::Opcode::SendInvalidate;
            h.inv_stag = f.stag;
            break;
        case FaultedOp::WriteImmediate:
            h.opcode = w::Opcode::ImmediateData;
            break;
    }
    h.qn = static_cast<uint32_t>(w::queue_of(h.opcode));
    return w::encode_untagged_header(h, out);
}

}  // namespace

w::TermCode terminate_code(const FaultReport &f) {
    const bool rdmap = irrq(f.op);
    switch (f.fault) {
        case RemoteFault::InvalidStag:
            return rdmap ? w::TermCode{0, 1, 0x00} : w::TermCode{1, 1, 0x00};
        case RemoteFault::Bounds:
            return rdmap ? w::TermCode{0, 1, 0x01} : w::TermCode{1, 1, 0x01};
        case RemoteFault::Access:
            return {0, 1, 0x02};
        case RemoteFault::NotAssociated:
            return rdmap ? w::TermCode{0, 1, 0x03} : w::TermCode{1, 1, 0x02};
        case RemoteFault::Wrap:
            return rdmap ? w::TermCode{0, 1, 0x04} : w::TermCode{1, 1, 0x03};
        case RemoteFault::CannotInvalidate:
            return {0, 1, 0x09};
        case RemoteFault::UnexpectedOpcode:
            return {0, 2, 0x06};
        case RemoteFault::NoReceiveBuffer:
            return {1, 2, 0x02};
        case RemoteFault::MessageTooLong:
            return {1, 2, 0x05};
        case RemoteFault::ConnectionLost:
            return {2, 0, 0x01};
        case RemoteFault::Crc:
            return {2, 0, 0x02};
        case RemoteFault::Framing:
            return {2, 0, 0x03};
        case RemoteFault::DdpVersion:
            return rdmap ? w::TermCode{1, 2, 0x06} : w::TermCode{1, 1, 0x04};
        case RemoteFault::InvalidQueue:
            return {1, 2, 0x01};
        case RemoteFault::InvalidSequence:
            return {1, 2, 0x03};
        case RemoteFault::InvalidOffset:
            return {1, 2, 0x04};
        case RemoteFault::RdmaVersion:
            return {0, 2, 0x05};
        case RemoteFault::None:
        case RemoteFault::Catastrophic:
            break;
    }
    return {0, 0, 0x00};
}

RemoteFault fault_of(w::TermCode c) {
    switch (c.layer) {
        case 2:
            if (c.ecode == 0x02) return RemoteFault::Crc;
            if (c.ecode == 0x01) return RemoteFault::ConnectionLost;
            return RemoteFault::Framing;
        case 1:
            if ((c.etype == 1 && c.ecode == 0x04) || (c.etype == 2 && c.ecode == 0x06))
                return RemoteFault::DdpVersion;
            if (c.etype == 1) {
                if (c.ecode == 0x00) return RemoteFault::InvalidStag;
                if (c.ecode == 0x01) return RemoteFault::Bounds;
                if (c.ecode == 0x02) return RemoteFault::NotAssociated;
                if (c.ecode == 0x03) return RemoteFault::Wrap;
            }
            if (c.etype == 2) {
                if (c.ecode == 0x01) return RemoteFault::InvalidQueue;
                if (c.ecode == 0x02) return RemoteFault::NoReceiveBuffer;
                if (c.ecode == 0x03) return RemoteFault::InvalidSequence;
                if (c.ecode == 0x04) return RemoteFault::InvalidOffset;
                if (c.ecode == 0x05) return RemoteFault::MessageTooLong;
            }
            return RemoteFault::Framing;
        case 0:
            if (c.etype == 1) {
                switch (c.ecode) {
                    case 0x00:
                        return RemoteFault::InvalidStag;
                    case 0x01:
                        return RemoteFault::Bounds;
                    case 0x02:
                        return RemoteFault::Access;
                    case 0x03:
                        return RemoteFault::NotAssociated;
                    case 0x04:
                        return RemoteFault::Wrap;
                    case 0x09:
                        return RemoteFault::CannotInvalidate;
                }
            }
            if (c.etype == 2) {
                if (c.ecode == 0x05) return RemoteFault::RdmaVersion;
                if (c.ecode == 0x06) return RemoteFault::UnexpectedOpcode;
                if (c.ecode == 0x09) return RemoteFault::CannotInvalidate;
            }
            return RemoteFault::Catastrophic;
    }
    return RemoteFault::Catastrophic;
}

size_t encode_terminate(const FaultReport &f, std::span<const uint8_t> offending,
                        uint16_t offending_len, std::span<uint8_t> out) {
    w::TerminateSpec t{};
    t.code = terminate_code(f);
    std::array<uint8_t, w::kUntaggedHeaderLen> rebuilt{};
    if (offending.empty() && f.op != FaultedOp::None && f.site_known) {
        const size_t n = quote(f, rebuilt);
        offending = std::span<const uint8_t>(rebuilt.data(), n);
        offending_len = static_cast<uint16_t>(n);
    }
    if (offending.size() >= w::kTaggedHeaderLen) {
        t.offending = offending;
        t.offending_len = offending_len;
        t.include_ddp_header = true;
        t.include_rdma_header = true;  // only honoured for a Read Request
    }
    size_t n = w::encode_terminate(t, out);
    if (n == 0) {  // the quote did not fit: say the code alone
        t = {};
        t.code = terminate_code(f);
        n = w::encode_terminate(t, out);
    }
    return n;
}

size_t terminate_message(const FaultReport &f, std::span<uint8_t, kFaultMessageMax> out) {
    std::array<uint8_t, kTerminateHeaderLen + kFaultMessageMax> msg{};
    const size_t n = encode_terminate(f, {}, 0, msg);
    const auto body = message_of(std::span<const uint8_t>(msg.data(), n));
    std::memcpy(out.data(), body.data(), body.size());
    return body.size();
}

}  // namespace softrnic::transport::iwarp
