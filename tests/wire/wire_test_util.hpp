// Helpers shared by the wire codec tests.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wire_test {

// Parses hex with any spacing ("000e c140 ...") into bytes. Test-only: aborts on bad input.
inline std::vector<uint8_t> hex(std::string_view s) {
    std::vector<uint8_t> out;
    int hi = -1;
    for (char c : s) {
        int v;
        if (c >= '0' && c <= '9')
            v = c - '0';
        else if (c >= 'a' && c <= 'f')
            v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v = c - 'A' + 10;
        else
            continue;
        if (hi < 0) {
            hi = v;
        } else {
            out.push_back(static_cast<uint8_t>(hi << 4 | v));
            hi = -1;
        }
    }
    if (hi >= 0) __builtin_trap();
    return out;
}

inline std::string to_hex(std::span<const uint8_t> b) {
    static const char d[] = "0123456789abcdef";
    std::string s;
    for (uint8_t x : b) {
        s += d[x >> 4];
        s += d[x & 15];
    }
    return s;
}

inline std::span<const uint8_t> bytes(std::string_view s) {
    return {reinterpret_cast<const uint8_t *>(s.data()), s.size()};
}

// The brief's section 8 vectors (exact TCP payload bytes).
namespace vec {
inline const char *kReqKey = "4d50412049442052 6571204672616d65";
inline const char *kRepKey = "4d50412049442052 6570204672616d65";
inline const std::string v2 = std::string(kReqKey) + "10020004 00100010";
inline const std::string v3 = std::string(kReqKey) + "50020004 80014001";
inline const std::string v4 = std::string(kRepKey) + "50020004 80014001";
inline const std::string v6 = std::string(kRepKey) + "20010000";
inline const std::string v7 = std::string(kRepKey) + "70020004 00000000";
inline const char *v9_crc = "000e c140 00000001 0000000000000000 ebd34c5f";
inline const char *v9_nocrc = "000e c140 00000001 0000000000000000 00000000";
inline const char *v10 =
    "002e 4141 00000000 00000001 00000001 00000000 00000000 0000000000000000 00000000 "
    "00000001 0000000000000000 ba10e3c9";
inline const char *v11 = "000e c142 00000000 0000000000000000 6975d6ca";
inline const char *v12 = "0017 4143 00000000 00000000 00000001 00000000 68656c6c6f 000000 b990b10c";
inline const char *v13 = "0013 4144 abcdef01 00000000 00000001 00000000 78 000000 bd34de32";
inline const char *v14_req =
    "002e 4141 00000000 00000001 00000001 00000000 00001111 0000000000002000 00000008 "
    "00002222 0000000000003000 26425da6";
inline const char *v14_resp = "0016 c142 00001111 0000000000002000 4142434445464748 e491c320";
inline const char *v20 =
    "002a 4147 00000000 00000002 00000001 00000000 1202c000 0076 4143 00000000 00000000 "
    "00000004 00000000 096f36ad";
inline const char *v21_ulp = "0016 4147 00000000 00000002 00000001 00000000 00ff0000 51896a8c";
inline const char *v21_op = "0016 4147 00000000 00000002 00000001 00000000 02060000 6f77b973";
inline const char *v23_fetchadd =
    "0046 414a 00000000 00000001 00000002 00000000 00000000 00000007 00001234 "
    "0000000000010000 0000000000000005 0000000000000000 0000000000000000 0000000000000000 "
    "8e7e7aee";
inline const char *v23_cmpswap =
    "0046 414a 00000000 00000001 00000003 00000000 00000002 00000008 00001234 "
    "0000000000010008 0000000000000099 ffffffffffffffff 0000000000000042 ffffffffffffffff "
    "929b0208";
inline const char *v23_atomic_resp =
    "001e 414b 00000000 00000003 00000001 00000000 00000007 0000000000000041 1420b003";
inline const char *v23_immediate =
    "001a 4148 00000000 00000000 00000002 00000000 0102030405060708 a98a5e54";
}  // namespace vec

}  // namespace wire_test
