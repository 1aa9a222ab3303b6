#include "transport/tcp/wire/common.hpp"

namespace softrnic::transport::tcp::wire {

TermCode term_code(Status s) {
    switch (s) {
        case Status::Ok:
            return {};
        case Status::BufferTooSmall:
        case Status::InvalidArgument:
            return {2, 0, 0x05};  // local catastrophic at the layer that noticed: ours
        case Status::MpaBadKey:
        case Status::MpaBadRevision:
        case Status::MpaPrivateDataTooLong:
        case Status::MpaMarkersRequested:
        case Status::MpaBadIrdOrd:
        case Status::MpaRejected:
        case Status::MpaNotEnhanced:
            return {2, 0, 0x04};
        case Status::MpaInsufficientIrd:
            return {2, 0, 0x06};
        case Status::MpaNoMatchingRtr:
            return {2, 0, 0x07};
        case Status::CrcMismatch:
            return {2, 0, 0x02};
        case Status::FramingLength:
        case Status::UlpduTooLong:
        case Status::MarkerMismatch:
            return {2, 0, 0x03};
        case Status::DdpTaggedVersion:
            return {1, 1, 0x04};
        case Status::DdpTaggedOffsetWrap:
            return {1, 1, 0x03};
        case Status::DdpUntaggedVersion:
            return {1, 2, 0x06};
        case Status::DdpInvalidQn:
            return {1, 2, 0x01};
        case Status::DdpInvalidMsn:
            return {1, 2, 0x03};
        case Status::DdpInvalidMo:
            return {1, 2, 0x04};
        case Status::DdpMessageTooLong:
            return {1, 2, 0x05};
        case Status::RdmapVersion:
            return {0, 2, 0x05};
        case Status::RdmapUnexpectedOpcode:
            return {0, 2, 0x06};
        case Status::RdmapBadAtomicOpcode:
        case Status::RdmapMalformedTerminate:
            return {0, 2, 0xFF};  // remote operation, unspecified: no closer code exists
    }
    return {0, 0, 0xFF};
}

const char *to_string(Status s) {
    switch (s) {
        case Status::Ok:
            return "ok";
        case Status::BufferTooSmall:
            return "buffer too small";
        case Status::InvalidArgument:
            return "invalid argument";
        case Status::MpaBadKey:
            return "MPA key mismatch";
        case Status::MpaBadRevision:
            return "MPA revision not supported";
        case Status::MpaPrivateDataTooLong:
            return "MPA private data longer than 512";
        case Status::MpaMarkersRequested:
            return "MPA markers requested (not supported)";
        case Status::MpaBadIrdOrd:
            return "MPA enhanced frame without IRD/ORD block";
        case Status::MpaRejected:
            return "MPA peer rejected the connection";
        case Status::MpaNotEnhanced:
            return "MPA reply is not enhanced";
        case Status::MpaInsufficientIrd:
            return "MPA insufficient IRD";
        case Status::MpaNoMatchingRtr:
            return "MPA no matching RTR model";
        case Status::CrcMismatch:
            return "CRC error";
        case Status::FramingLength:
            return "ULPDU_LENGTH disagrees with the header";
        case Status::UlpduTooLong:
            return "ULPDU_LENGTH over the cap";
        case Status::MarkerMismatch:
            return "bad MPA marker";
        case Status::DdpTaggedVersion:
            return "DDP tagged: invalid DDP version";
        case Status::DdpUntaggedVersion:
            return "DDP untagged: invalid DDP version";
        case Status::DdpInvalidQn:
            return "DDP untagged: invalid QN";
        case Status::DdpInvalidMsn:
            return "DDP untagged: invalid MSN";
        case Status::DdpInvalidMo:
            return "DDP untagged: invalid MO";
        case Status::DdpMessageTooLong:
            return "DDP untagged: message too long";
        case Status::DdpTaggedOffsetWrap:
            return "DDP tagged: TO wrap";
        case Status::RdmapVersion:
            return "RDMAP: invalid version";
        case Status::RdmapUnexpectedOpcode:
            return "RDMAP: unexpected opcode";
        case Status::RdmapBadAtomicOpcode:
            return "RDMAP: bad atomic opcode";
        case Status::RdmapMalformedTerminate:
            return "RDMAP: malformed Terminate";
    }
    return "unknown";
}

}  // namespace softrnic::transport::tcp::wire
