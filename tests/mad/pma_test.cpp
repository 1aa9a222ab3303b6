// PMA PortCounters: a golden vector built by hand from the IBA 1.2 ch. 16 layout.
#include <gtest/gtest.h>

#include "mad/pma.hpp"
#include "mad_test_util.hpp"

using namespace softrnic::mad;
using namespace mad_test;

namespace {

TEST(Pma, PortCountersGolden) {
    PortCounters c{.port_select = 1,
                   .counter_select = 0x0203,
                   .symbol_error_counter = 0x0405,
                   .link_error_recovery_counter = 0x06,
                   .link_downed_counter = 0x07,
                   .port_rcv_errors = 0x0809,
                   .port_rcv_remote_physical_errors = 0x0a0b,
                   .port_rcv_switch_relay_errors = 0x0c0d,
                   .port_xmit_discards = 0x0e0f,
                   .port_xmit_constraint_errors = 0x10,
                   .port_rcv_constraint_errors = 0x11,
                   .local_link_integrity_errors = 0xa,
                   .excessive_buffer_overrun_errors = 0xb,
                   .vl15_dropped = 0x1415,
                   .port_xmit_data = 0x21222324,
                   .port_rcv_data = 0x31323334,
                   .port_xmit_pkts = 0x41424344,
                   .port_rcv_pkts = 0x51525354,
                   .port_xmit_wait = 0x61626364};
    const auto golden =
        hex("00 01 0203 | 0405 06 07 | 0809 0a0b | 0c0d 0e0f | 10 11 00 ab |"
            "0000 1415 | 21222324 | 31323334 | 41424344 | 51525354 | 61626364");
    check_layout<kPortCountersSize>(c, golden, decode_port_counters, encode_port_counters);
    check_reserved_ignored(c, with_bits(golden, {{0, 0xff}, {18, 0xff}, {20, 0xff}, {21, 0xff}}),
                           decode_port_counters);
    std::array<uint8_t, kPortCountersSize> buf{};
    c.excessive_buffer_overrun_errors = 16;
    EXPECT_EQ(encode_port_counters(c, buf), CodecStatus::OutOfRange);
}

}  // namespace
