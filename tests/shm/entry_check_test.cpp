// What the shm transport accepts from a hostile same-host peer, checked on the pure pieces
// the connection uses (and fuzz/shm_ring_fuzz.cpp, fuzz/shm_hello_fuzz.cpp run): the
// consumer over a ring the peer wrote (ring.hpp), the entry shape checks (entry.hpp) and
// the hello parser (hello.hpp).
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "transport/shm/entry.hpp"
#include "transport/shm/hello.hpp"
#include "transport/shm/layout.hpp"
#include "transport/shm/ring.hpp"

namespace L = softrnic::transport::shm::layout;
namespace sd = softrnic::transport::shm::detail;
namespace sh = softrnic::transport::shm;

namespace {

// A ring of n slots as the peer left it, with our consumer over it.
struct PeerRing {
    explicit PeerRing(uint32_t n) : slots(size_t{n} * L::kSlot / sizeof(uint64_t)), n(n) {
        consumer.init(base(), n, &cons, nullptr);
    }
    std::byte *base() { return reinterpret_cast<std::byte *>(slots.data()); }
    L::EntryHdr &at(uint32_t slot) {
        return *reinterpret_cast<L::EntryHdr *>(base() + size_t{slot} * L::kSlot);
    }
    // An entry at `slot`, stamped for position `pos` (slot + a multiple of n).
    L::EntryHdr &put(uint64_t pos, L::Type type, uint16_t nslots, uint16_t len) {
        L::EntryHdr &h = at(static_cast<uint32_t>(pos % n));
        h = {};
        h.stamp = pos + 1;
        h.type = type;
        h.nslots = nslots;
        h.len = len;
        return h;
    }
    std::vector<uint64_t> slots;  // 8-byte aligned, as the mapping is
    uint32_t n;
    uint64_t cons = 0;
    sd::Consumer consumer;
};

sd::Consumer::Peek peek(PeerRing &r, L::EntryHdr &h) {
    const std::byte *payload = nullptr;
    return r.consumer.peek(h, payload);
}

}  // namespace

TEST(ShmEntryCheck, EntryMustEndInsideTheRing) {
    PeerRing r(L::kRespSlots);
    L::EntryHdr h;
    r.put(0, L::Type::Ack, L::kRespSlots + 1, 0);  // runs past the ring's end
    EXPECT_EQ(peek(r, h), sd::Consumer::Peek::Bad);
    r.put(0, L::Type::Ack, 0, 0);  // covers no slot
    EXPECT_EQ(peek(r, h), sd::Consumer::Peek::Bad);
    r.put(0, L::Type::Ack, 1, L::kSlot - L::kHdrBytes + 1);  // payload past its slots
    EXPECT_EQ(peek(r, h), sd::Consumer::Peek::Bad);
    r.put(0, L::Type::Ack, 1, L::kSlot - L::kHdrBytes);
    EXPECT_EQ(peek(r, h), sd::Consumer::Peek::Entry);
}

TEST(ShmEntryCheck, PadToTheEndThenEntryAtSlotZero) {
    PeerRing r(L::kRespSlots);
    L::EntryHdr h;
    // Consume up to the last slot, one-slot entries.
    for (uint64_t p = 0; p + 1 < L::kRespSlots; ++p) {
        r.put(p, L::Type::Ack, 1, 0);
        ASSERT_EQ(peek(r, h), sd::Consumer::Peek::Entry);
        r.consumer.pop(h);
    }
    const uint64_t pos = L::kRespSlots - 1;
    // A pad claiming more than the one slot left is refused, not followed past the end.
    r.put(pos, L::Type::Pad, 2, 0);
    EXPECT_EQ(peek(r, h), sd::Consumer::Peek::Bad);
    r.put(pos, L::Type::Pad, 1, 0);
    // Slot 0 still holds lap 0's stamp: nothing new yet.
    EXPECT_EQ(peek(r, h), sd::Consumer::Peek::Empty);
    r.put(L::kRespSlots, L::Type::Close, 1, 0);
    EXPECT_EQ(peek(r, h), sd::Consumer::Peek::Entry);
    EXPECT_EQ(h.type, L::Type::Close);
}

TEST(ShmEntryCheck, StaleOrFutureStampsAreNotEntries) {
    PeerRing r(L::kReqSlots);
    L::EntryHdr h;
    r.put(L::kReqSlots, L::Type::SendInline, 1, 0);  // lap 1's stamp where lap 0 is due
    EXPECT_EQ(peek(r, h), sd::Consumer::Peek::Empty);
}

TEST(ShmEntryCheck, RequestShapes) {
    std::array<iovec, L::kMaxIov> iov;
    uint32_t niov = 0;
    std::array<std::byte, 16 * (L::kMaxIov + 1)> payload{};
    L::EntryHdr h{};
    h.type = L::Type::SendInline;
    h.len = L::kInlineMax;
    EXPECT_TRUE(sd::check_req(h, payload.data(), iov, niov));
    h.len = L::kInlineMax + 1;
    EXPECT_FALSE(sd::check_req(h, payload.data(), iov, niov));

    h = {};
    h.type = L::Type::Atomic;
    h.len = 8;
    EXPECT_FALSE(sd::check_req(h, payload.data(), iov, niov));

    // Iovecs: must add up to b, none empty, none wrapping, at most kMaxIov.
    const auto set_iov = [&](size_t i, uint64_t addr, uint64_t len) {
        const L::Iov v{addr, len};
        std::memcpy(payload.data() + i * sizeof v, &v, sizeof v);
    };
    h = {};
    h.type = L::Type::WriteRemote;
    h.len = 2 * sizeof(L::Iov);
    h.b = 300;
    set_iov(0, 0x1000, 100);
    set_iov(1, 0x9000, 200);
    ASSERT_TRUE(sd::check_req(h, payload.data(), iov, niov));
    EXPECT_EQ(niov, 2u);
    h.b = 301;
    EXPECT_FALSE(sd::check_req(h, payload.data(), iov, niov));
    h.b = 300;
    set_iov(1, ~uint64_t{0} - 10, 200);  // wraps the address space
    EXPECT_FALSE(sd::check_req(h, payload.data(), iov, niov));
    set_iov(0, 0x1000, 0);  // empty
    set_iov(1, 0x9000, 300);
    EXPECT_FALSE(sd::check_req(h, payload.data(), iov, niov));
    h.len = (L::kMaxIov + 1) * sizeof(L::Iov);
    EXPECT_FALSE(sd::check_req(h, payload.data(), iov, niov));
    h.len = sizeof(L::Iov) + 1;  // not whole Iovs
    EXPECT_FALSE(sd::check_req(h, payload.data(), iov, niov));
    h = {};
    h.type = L::Type::SendRemote;  // a remote Send of nothing is not a thing
    EXPECT_FALSE(sd::check_req(h, payload.data(), iov, niov));

    for (L::Type t : {L::Type::Pad, L::Type::Ack, L::Type::Close, static_cast<L::Type>(0),
                      static_cast<L::Type>(200)}) {
        h = {};
        h.type = t;
        EXPECT_FALSE(sd::check_req(h, payload.data(), iov, niov)) << int(t);
    }
}

TEST(ShmEntryCheck, ResponseShapes) {
    L::EntryHdr h{};
    h.type = L::Type::Pull;
    h.stag = L::kBounceChunks - 1;
    h.b = L::kBounceChunk;
    EXPECT_TRUE(sd::check_resp(h));
    h.stag = L::kBounceChunks;  // no such chunk
    EXPECT_FALSE(sd::check_resp(h));
    h.stag = 0;
    h.b = L::kBounceChunk + 1;
    EXPECT_FALSE(sd::check_resp(h));
    h.b = 0;
    EXPECT_FALSE(sd::check_resp(h));
    h = {};
    h.type = L::Type::ChunkFree;
    h.stag = 0xffffffff;
    EXPECT_FALSE(sd::check_resp(h));
    // An inline read response is at most kInlineMax bytes (larger reads go by CMA or chunks).
    h = {};
    h.type = L::Type::ReadRespInline;
    h.len = L::kInlineMax + 1;
    EXPECT_FALSE(sd::check_resp(h));
    for (L::Type t : {L::Type::Pad, L::Type::SendInline, L::Type::Atomic, static_cast<L::Type>(0),
                      static_cast<L::Type>(200)}) {
        h = {};
        h.type = t;
        EXPECT_FALSE(sd::check_resp(h)) << int(t);
    }
}

TEST(ShmHello, ParsesOnlyOneWholeHelloWithOneDescriptor) {
    const sh::Hello sent = sh::make_hello(0x7ffd0000, 0x1234567, true);
    std::array<std::byte, sizeof(sh::Hello) + 1> buf{};
    std::memcpy(buf.data(), &sent, sizeof sent);
    sh::Hello got{};
    ASSERT_TRUE(sh::parse_hello({buf.data(), sizeof sent}, 1, false, got));
    EXPECT_EQ(got.probe_addr, sent.probe_addr);
    EXPECT_EQ(got.probe_value, sent.probe_value);
    EXPECT_EQ(got.cma_wanted, 1u);
    EXPECT_FALSE(sh::parse_hello({buf.data(), sizeof sent - 1}, 1, false, got));
    EXPECT_FALSE(sh::parse_hello({buf.data(), sizeof sent + 1}, 1, false, got));
    EXPECT_FALSE(sh::parse_hello({buf.data(), sizeof sent}, 0, false, got));
    EXPECT_FALSE(sh::parse_hello({buf.data(), sizeof sent}, 2, false, got));
    EXPECT_FALSE(sh::parse_hello({buf.data(), sizeof sent}, 1, true, got));
    EXPECT_FALSE(sh::parse_hello({}, 1, false, got));
    sh::Hello bad = sent;
    bad.version = L::kVersion + 1;
    std::memcpy(buf.data(), &bad, sizeof bad);
    EXPECT_FALSE(sh::parse_hello({buf.data(), sizeof bad}, 1, false, got));
    bad = sent;
    bad.seg_bytes = static_cast<uint32_t>(L::kSegmentBytes) * 2;
    std::memcpy(buf.data(), &bad, sizeof bad);
    EXPECT_FALSE(sh::parse_hello({buf.data(), sizeof bad}, 1, false, got));
    bad = sent;
    bad.magic ^= 1;
    std::memcpy(buf.data(), &bad, sizeof bad);
    EXPECT_FALSE(sh::parse_hello({buf.data(), sizeof bad}, 1, false, got));
}
