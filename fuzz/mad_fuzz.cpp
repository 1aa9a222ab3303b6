// libFuzzer target: every MAD decoder of src/mad/ over the same input.
//
// The input is handed whole to each decoder (MAD-level decoders see it as a MAD, attribute
// and record decoders as an attribute, CM decoders as a message and, through cm_message(),
// as a MAD). Each must stay inside the span, report Truncated exactly when the input is
// shorter than its layout, and, when it decodes, the value must encode without error and
// decode again to the same value.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "mad/cm.hpp"
#include "mad/common.hpp"
#include "mad/pma.hpp"
#include "mad/sa.hpp"
#include "mad/smp.hpp"

using namespace softrnic::mad;

namespace {

#define FUZZ_CHECK(cond)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            __builtin_fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, \
                              __LINE__);                                                 \
            abort();                                                                     \
        }                                                                                \
    } while (0)

template <typename T, size_t N, typename Decode, typename Encode>
void round_trip(std::span<const uint8_t> in, Decode decode, Encode encode) {
    T value{};
    const CodecStatus s = decode(in, value);
    if (in.size() < N) {
        FUZZ_CHECK(s == CodecStatus::Truncated);
        return;
    }
    FUZZ_CHECK(s != CodecStatus::Truncated && s != CodecStatus::OutOfRange);
    if (s != CodecStatus::Ok) return;
    std::array<uint8_t, N> buf{};
    FUZZ_CHECK(encode(value, std::span<uint8_t, N>(buf)) == CodecStatus::Ok);
    T again{};
    FUZZ_CHECK(decode(std::span<const uint8_t>(buf), again) == CodecStatus::Ok);
    FUZZ_CHECK(again == value);
}

template <typename T, typename Decode>
void decode_only(std::span<const uint8_t> in, Decode decode) {
    T value{};
    const CodecStatus s = decode(in, value);
    FUZZ_CHECK((in.size() < kCmMessageSize) == (s == CodecStatus::Truncated));
}

void cm_messages(std::span<const uint8_t> msg) {
    constexpr size_t N = kCmMessageSize;
    round_trip<CmReq, N>(msg, decode_cm_req, encode_cm_req);
    round_trip<CmMra, N>(msg, decode_cm_mra, encode_cm_mra);
    round_trip<CmRej, N>(msg, decode_cm_rej, encode_cm_rej);
    round_trip<CmRep, N>(msg, decode_cm_rep, encode_cm_rep);
    round_trip<CmRtu, N>(msg, decode_cm_rtu, encode_cm_rtu);
    round_trip<CmDreq, N>(msg, decode_cm_dreq, encode_cm_dreq);
    round_trip<CmDrep, N>(msg, decode_cm_drep, encode_cm_drep);
    round_trip<CmSidrReq, N>(msg, decode_cm_sidr_req, encode_cm_sidr_req);
    round_trip<CmSidrRep, N>(msg, decode_cm_sidr_rep, encode_cm_sidr_rep);
    decode_only<CmLap>(msg, decode_cm_lap);
    decode_only<CmApr>(msg, decode_cm_apr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::span<const uint8_t> in(data, size);

    round_trip<MadHeader, kMadHeaderSize>(
        in, decode_header, [](const MadHeader &h, std::span<uint8_t, kMadHeaderSize> out) {
            encode_header(h, out);
            return CodecStatus::Ok;
        });
    {
        MadHeader h{};
        const CodecStatus s = decode_class_header(in, mgmt_class::kCm, kCmClassVersion, h);
        FUZZ_CHECK((size < kMadSize) == (s == CodecStatus::Truncated));
    }
    round_trip<Smp, kMadSize>(in, decode_smp, encode_smp);
    round_trip<SaMad, kMadSize>(in, decode_sa_mad, encode_sa_mad);
    {
        RmppHeader r{};
        const CodecStatus s = decode_rmpp_header(in, r);
        FUZZ_CHECK((size < kSaHeaderOffset) == (s == CodecStatus::Truncated));
    }

    round_trip<ClassPortInfo, kClassPortInfoSize>(in, decode_class_port_info,
                                                  encode_class_port_info);
    round_trip<NodeInfo, kNodeInfoSize>(in, decode_node_info, encode_node_info);
    round_trip<NodeDescription, kNodeDescriptionSize>(in, decode_node_description,
                                                      encode_node_description);
    round_trip<PortInfo, kPortInfoSize>(in, decode_port_info, encode_port_info);
    round_trip<PKeyBlock, kPKeyTableSize>(in, decode_pkey_table, encode_pkey_table);
    round_trip<GuidBlock, kGuidInfoSize>(in, decode_guid_info, encode_guid_info);
    round_trip<SmInfo, kSmInfoSize>(in, decode_sm_info, encode_sm_info);

    round_trip<PathRecord, kPathRecordSize>(in, decode_path_record, encode_path_record);
    round_trip<McMemberRecord, kMcMemberRecordSize>(in, decode_mcmember_record,
                                                    encode_mcmember_record);
    round_trip<NodeRecord, kNodeRecordSize>(in, decode_node_record, encode_node_record);
    round_trip<PortInfoRecord, kPortInfoRecordSize>(in, decode_port_info_record,
                                                    encode_port_info_record);
    round_trip<ServiceRecord, kServiceRecordSize>(in, decode_service_record, encode_service_record);
    round_trip<InformInfo, kInformInfoSize>(in, decode_inform_info, encode_inform_info);
    round_trip<Notice, kNoticeSize>(in, decode_notice, encode_notice);

    round_trip<PortCounters, kPortCountersSize>(in, decode_port_counters, encode_port_counters);
    if (size >= kPmaDataOffset) {
        round_trip<PortCounters, kPortCountersSize>(in.subspan(kPmaDataOffset),
                                                    decode_port_counters, encode_port_counters);
    }
    // The SA data of a MAD as a record, as an SA client reads a response.
    if (size >= kSaDataOffset) {
        const auto data = in.subspan(kSaDataOffset);
        round_trip<PathRecord, kPathRecordSize>(data, decode_path_record, encode_path_record);
        round_trip<McMemberRecord, kMcMemberRecordSize>(data, decode_mcmember_record,
                                                        encode_mcmember_record);
    }

    cm_messages(in);
    cm_messages(cm_message(in));
    return 0;
}
