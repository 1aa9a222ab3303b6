// Shared by the two-process tests and their peer executable (twoproc_peer): the control
// protocol's token helpers, loopback addresses, and the byte layouts both sides build and
// verify (a logical message of `total` bytes, the pattern of a seed, scattered over pieces
// separated by gap bytes).
//
// Control protocol: one request per SOCK_SEQPACKET message, "<seq> <verb> <args...>", one
// reply per request, "<seq> OK key=value ..." or "<seq> ERR <text>". Byte strings travel as
// hex ("-" for empty). The peer never sends anything unasked.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../rnicpi/fixture.hpp"
#include "cm/connection_manager.hpp"

namespace twoproc {

inline constexpr size_t kMaxCtlMessage = 64 * 1024;
inline constexpr size_t kGap = 8;  // bytes between the pieces of a scatter/gather layout

// --- tokens -----------------------------------------------------------------------------

inline std::vector<std::string> split_ws(std::string_view s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && s[i] == ' ')
            ++i;
        size_t j = i;
        while (j < s.size() && s[j] != ' ')
            ++j;
        if (j > i) out.emplace_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

// Accepts decimal, or hex with a 0x prefix. Negative numbers only for signed T.
template <class T>
inline std::optional<T> to_num(std::string_view s) {
    int base = 10;
    bool neg = false;
    if (!s.empty() && s[0] == '-') {
        neg = true;
        s.remove_prefix(1);
    }
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    }
    unsigned long long v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
    if (neg) {
        if constexpr (std::is_signed_v<T>) return static_cast<T>(-static_cast<long long>(v));
        return std::nullopt;
    }
    return static_cast<T>(v);
}

inline std::string to_hex(std::span<const uint8_t> b) {
    if (b.empty()) return "-";
    static const char *d = "0123456789abcdef";
    std::string s;
    s.reserve(b.size() * 2);
    for (uint8_t c : b) {
        s.push_back(d[c >> 4]);
        s.push_back(d[c & 15]);
    }
    return s;
}
inline std::optional<std::vector<uint8_t>> from_hex(std::string_view s) {
    std::vector<uint8_t> out;
    if (s == "-") return out;
    if (s.size() % 2) return std::nullopt;
    auto nib = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (size_t i = 0; i < s.size(); i += 2) {
        int h = nib(s[i]), l = nib(s[i + 1]);
        if (h < 0 || l < 0) return std::nullopt;
        out.push_back(static_cast<uint8_t>(h << 4 | l));
    }
    return out;
}
inline std::vector<uint8_t> bytes_of(std::string_view s) {
    return {s.begin(), s.end()};
}

// "key=value" tokens of a reply.
inline std::map<std::string, std::string> parse_kv(const std::vector<std::string> &toks,
                                                   size_t from) {
    std::map<std::string, std::string> kv;
    for (size_t i = from; i < toks.size(); ++i) {
        auto eq = toks[i].find('=');
        if (eq == std::string::npos)
            kv[toks[i]] = "";
        else
            kv[toks[i].substr(0, eq)] = toks[i].substr(eq + 1);
    }
    return kv;
}

// --- addresses --------------------------------------------------------------------------

inline softrnic::cm::Address loopback(int family, uint16_t port = 0) {
    softrnic::cm::Address a;
    if (family == AF_INET) {
        auto *s = reinterpret_cast<sockaddr_in *>(&a.storage);
        s->sin_family = AF_INET;
        s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        s->sin_port = htons(port);
        a.len = sizeof(sockaddr_in);
    } else {
        auto *s = reinterpret_cast<sockaddr_in6 *>(&a.storage);
        s->sin6_family = AF_INET6;
        s->sin6_addr = in6addr_loopback;
        s->sin6_port = htons(port);
        a.len = sizeof(sockaddr_in6);
    }
    return a;
}

// "v4"/"v6" (the loopback address of that family) or a numeric IPv4/IPv6 literal.
inline std::optional<softrnic::cm::Address> parse_address(const std::string &s, uint16_t port) {
    if (s == "v4") return loopback(AF_INET, port);
    if (s == "v6") return loopback(AF_INET6, port);
    softrnic::cm::Address a;
    auto *s4 = reinterpret_cast<sockaddr_in *>(&a.storage);
    if (::inet_pton(AF_INET, s.c_str(), &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
        a.len = sizeof(sockaddr_in);
        return a;
    }
    auto *s6 = reinterpret_cast<sockaddr_in6 *>(&a.storage);
    if (::inet_pton(AF_INET6, s.c_str(), &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        a.len = sizeof(sockaddr_in6);
        return a;
    }
    return std::nullopt;
}

inline uint16_t port_of(const softrnic::cm::Address &a) {
    return ntohs(a.storage.ss_family == AF_INET
                     ? reinterpret_cast<const sockaddr_in *>(&a.storage)->sin_port
                     : reinterpret_cast<const sockaddr_in6 *>(&a.storage)->sin6_port);
}

// --- layouts ----------------------------------------------------------------------------

struct Piece {
    size_t off = 0;  // from the start of the buffer
    size_t len = 0;
};
using Layout = std::vector<Piece>;

// `n` pieces covering `total` bytes, kGap bytes apart; the remainder of an uneven split goes
// to the first or the last piece.
inline Layout make_layout(size_t total, uint32_t n, bool rem_first) {
    Layout l;
    if (n == 0) return l;
    size_t each = total / n, rem = total % n, off = 0;
    for (uint32_t i = 0; i < n; ++i) {
        size_t len = each + ((rem_first ? i == 0 : i + 1 == n) ? rem : 0);
        l.push_back({off, len});
        off += len + kGap;
    }
    return l;
}
inline size_t layout_span(size_t total, uint32_t n) {
    return total + kGap * n;
}
// The first `total` bytes of a layout (what a message of that length fills).
inline Layout truncate(const Layout &l, size_t total) {
    Layout out;
    for (const Piece &p : l) {
        if (total == 0) break;
        size_t len = std::min(p.len, total);
        out.push_back({p.off, len});
        total -= len;
    }
    return out;
}
inline size_t layout_total(const Layout &l) {
    size_t t = 0;
    for (const Piece &p : l)
        t += p.len;
    return t;
}
inline std::string layout_args(const Layout &l) {
    std::string s = std::to_string(l.size());
    for (const Piece &p : l)
        s += " " + std::to_string(p.off) + " " + std::to_string(p.len);
    return s;
}
// Parses "<n> <off> <len> ..." from toks[at...].
inline std::optional<Layout> parse_layout(const std::vector<std::string> &toks, size_t at) {
    if (at >= toks.size()) return std::nullopt;
    auto n = to_num<uint32_t>(toks[at]);
    if (!n || *n > 64 || toks.size() < at + 1 + 2 * size_t{*n}) return std::nullopt;
    Layout l;
    for (uint32_t i = 0; i < *n; ++i) {
        auto off = to_num<size_t>(toks[at + 1 + 2 * i]);
        auto len = to_num<size_t>(toks[at + 2 + 2 * i]);
        if (!off || !len) return std::nullopt;
        l.push_back({*off, *len});
    }
    return l;
}
inline bool layout_fits(const Layout &l, size_t buf_len) {
    for (const Piece &p : l)
        if (p.off > buf_len || p.len > buf_len - p.off) return false;
    return true;
}

// Sets the whole buffer to `gap` (gap >= 0), then writes the pattern of `seed` (the bytes of
// one logical message of layout_total(l) bytes) into the pieces in order.
inline void fill_layout(uint8_t *buf, size_t buf_len, const Layout &l, uint64_t seed, int gap) {
    if (gap >= 0) std::memset(buf, gap, buf_len);
    std::vector<uint8_t> msg(layout_total(l));
    rt::fill_pattern(msg.data(), msg.size(), seed);
    size_t at = 0;
    for (const Piece &p : l) {
        if (p.len) std::memcpy(buf + p.off, msg.data() + at, p.len);  // data() may be null
        at += p.len;
    }
}

// Checks what fill_layout would have produced: the pieces hold the message, and (gap >= 0)
// every other byte of the buffer holds `gap`. Returns an empty string when it matches.
inline std::string check_layout(const uint8_t *buf, size_t buf_len, const Layout &l, uint64_t seed,
                                int gap) {
    std::vector<uint8_t> msg(layout_total(l));
    rt::fill_pattern(msg.data(), msg.size(), seed);
    size_t at = 0;
    for (size_t i = 0; i < l.size(); ++i) {
        const Piece &p = l[i];
        size_t d = rt::first_diff(buf + p.off, msg.data() + at, p.len);
        if (d != SIZE_MAX)
            return "piece " + std::to_string(i) + " differs at message offset " +
                   std::to_string(at + d) + " (buffer offset " + std::to_string(p.off + d) + ")";
        at += p.len;
    }
    if (gap < 0) return {};
    // Walk the complement of the pieces (pieces are in increasing, disjoint order).
    size_t pos = 0;
    uint8_t ref[4096];
    std::memset(ref, gap, sizeof ref);
    auto expect_gap = [&](size_t from, size_t to) -> std::string {
        for (size_t k = from; k < to; k += sizeof ref) {
            size_t n = std::min(sizeof ref, to - k);
            if (std::memcmp(buf + k, ref, n) == 0) continue;
            size_t d = rt::first_diff(buf + k, ref, n);
            return "byte outside the pieces changed at buffer offset " + std::to_string(k + d);
        }
        return {};
    };
    for (const Piece &p : l) {
        if (p.off < pos) return "pieces overlap";
        if (auto e = expect_gap(pos, p.off); !e.empty()) return e;
        pos = p.off + p.len;
    }
    return expect_gap(pos, buf_len);
}

}  // namespace twoproc
