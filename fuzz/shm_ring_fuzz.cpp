// libFuzzer target: the shm transport's rings as a hostile same-host peer sees them. The
// peer maps our segment read-write, so it writes whatever it likes into our req and resp
// rings (stamps, headers, lengths, payloads) whenever it likes, and it writes the consumer
// index our producer reads from its segment. The input is a script of such writes
// interleaved with our side's work: the production Consumer (ring.hpp) takes entries and
// the production checks (entry.hpp) judge them, and the production Producer reserves room
// against a consumer index the script sets. Whatever the script, nothing is read or
// written outside the rings, and what is accepted is consistent with the checks made.
//
// Script (shm_ring_fuzz_ops below); every op byte: bits 0-2 the op, bit 3 the ring
// (0 req, 1 resp). Seeds: fuzz/corpus/shm_ring/, written by fuzz/shm_corpus_gen.cpp.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "transport/shm/entry.hpp"
#include "transport/shm/layout.hpp"
#include "transport/shm/ring.hpp"

namespace L = softrnic::transport::shm::layout;
namespace sd = softrnic::transport::shm::detail;

namespace {

enum Op : uint8_t {
    kWrite = 0,    // u16 offset, u16 length, bytes: raw bytes into the ring
    kStamp = 1,    // u8 slot, u8 lap: stamp the slot as lap `lap` would
    kConsume = 2,  // u8 count: take up to count+1 entries, as process_req/process_resp do
    kProduce = 3,  // u8 mode, u64 value, u8 k: set the peer's consumer index, reserve k slots
    kPlace = 4,    // header fields and payload: an entry at the slot the consumer waits on
};

struct Reader {
    const uint8_t *p;
    size_t n;
    bool empty() const { return n == 0; }
    template <class T>
    T get() {
        T v{};
        size_t k = n < sizeof v ? n : sizeof v;
        std::memcpy(&v, p, k);
        p += k;
        n -= k;
        return v;
    }
    const uint8_t *take(size_t &len) {
        if (len > n) len = n;
        const uint8_t *r = p;
        p += len;
        n -= len;
        return r;
    }
};

[[noreturn]] void fail() {
    std::abort();
}

// One ring as both of its ends see it: the consumer over our copy, and our producer into the
// peer's copy (a separate buffer: the peer's segment), whose consumer index the peer owns.
struct Ring {
    std::byte *rx = nullptr;  // exactly n * kSlot bytes: ASan reports any access outside
    std::byte *tx = nullptr;
    uint32_t n = 0;
    uint64_t rx_cons = 0;  // our segment's index (we write it)
    uint64_t tx_cons = 0;  // the peer's segment's index (hostile)
    sd::Consumer consumer;
    sd::Producer producer;
    uint64_t pos = 0;  // where the consumer waits (mirrors its private position)
    bool rx_broken = false;
    bool tx_broken = false;

    explicit Ring(uint32_t slots) : n(slots) {
        rx = static_cast<std::byte *>(std::aligned_alloc(64, size_t{n} * L::kSlot));
        tx = static_cast<std::byte *>(std::aligned_alloc(64, size_t{n} * L::kSlot));
        if (!rx || !tx) fail();
        std::memset(rx, 0, size_t{n} * L::kSlot);
        std::memset(tx, 0, size_t{n} * L::kSlot);
        consumer.init(rx, n, &rx_cons, nullptr);
        producer.init(tx, n, &tx_cons, nullptr);
    }
    ~Ring() {
        std::free(rx);
        std::free(tx);
    }
    Ring(const Ring &) = delete;
    Ring &operator=(const Ring &) = delete;
    size_t bytes() const { return size_t{n} * L::kSlot; }
};

void consume(Ring &r, bool req, unsigned count) {
    for (unsigned i = 0; i < count && !r.rx_broken; ++i) {
        L::EntryHdr h;
        const std::byte *payload = nullptr;
        const sd::Consumer::Peek pk = r.consumer.peek(h, payload);
        if (pk == sd::Consumer::Peek::Empty) {
            r.consumer.commit();  // Pad entries skipped on the way count as consumed
            r.pos = r.rx_cons;
            return;
        }
        if (pk == sd::Consumer::Peek::Bad) {
            r.rx_broken = true;  // the connection fails with a protocol error
            return;
        }
        if (h.type == L::Type::Pad || h.nslots == 0) fail();
        // The entry and its payload lie inside the ring, in the slots the header claims.
        const std::byte *entry = payload - L::kHdrBytes;
        if (entry < r.rx || entry + size_t{h.nslots} * L::kSlot > r.rx + r.bytes()) fail();
        if (payload + h.len > r.rx + r.bytes()) fail();
        if ((entry - r.rx) % L::kSlot != 0) fail();
        // Touch every payload byte (ASan checks the bounds).
        volatile uint8_t sum = 0;
        for (size_t k = 0; k < h.len; ++k)
            sum = sum + static_cast<uint8_t>(payload[k]);
        if (req) {
            std::array<iovec, L::kMaxIov> iov;
            uint32_t niov = 0;
            if (sd::check_req(h, payload, iov, niov)) {
                if (niov > L::kMaxIov) fail();
                uint64_t total = 0;
                for (uint32_t k = 0; k < niov; ++k) {
                    if (iov[k].iov_len == 0) fail();
                    total += iov[k].iov_len;
                }
                const bool remote = h.type == L::Type::SendRemote ||
                                    h.type == L::Type::WriteRemote || h.type == L::Type::ReadReq;
                if (remote && total != h.b) fail();
                if ((h.type == L::Type::SendRemote || h.type == L::Type::WriteRemote) && h.b == 0)
                    fail();
                if ((h.type == L::Type::SendInline || h.type == L::Type::WriteInline) &&
                    h.len > L::kInlineMax)
                    fail();
                if (h.type == L::Type::Atomic && h.len != 16) fail();
            }
        } else if (sd::check_resp(h)) {
            const bool bounce = h.type == L::Type::Pull || h.type == L::Type::ReadChunk ||
                                h.type == L::Type::PullDone || h.type == L::Type::ChunkFree;
            if (bounce && h.stag >= L::kBounceChunks) fail();
            if ((h.type == L::Type::Pull || h.type == L::Type::ReadChunk) &&
                (h.b == 0 || h.b > L::kBounceChunk))
                fail();
            if (h.type < L::Type::Ack || h.type > L::Type::Close) fail();
        }
        r.consumer.pop(h);
        r.consumer.commit();
        r.pos = r.rx_cons;
    }
}

void produce(Ring &r, Reader &in) {
    const uint8_t mode = in.get<uint8_t>();
    const uint64_t value = in.get<uint64_t>();
    const uint32_t k = 1 + in.get<uint8_t>() % L::slots_for(L::kInlineMax);
    if (r.tx_broken) return;  // the connection is closed: nothing more is produced
    // The peer's index: any value, or one near what we published (the plausible ones).
    if (mode & 1)
        r.tx_cons = value;
    else
        r.tx_cons = r.producer.published() - static_cast<uint64_t>(static_cast<int8_t>(value));
    bool broken = false;
    L::EntryHdr *e = r.producer.reserve(k, broken);
    if (broken) {
        if (e) fail();
        r.tx_broken = true;
        return;
    }
    if (!e) return;
    const auto *b = reinterpret_cast<const std::byte *>(e);
    if (b < r.tx || (b - r.tx) % L::kSlot != 0 || b + size_t{k} * L::kSlot > r.tx + r.bytes())
        fail();
    e->type = L::Type::Ack;
    e->flags = 0;
    e->len = 0;
    r.producer.publish(e, k);
}

void place(Ring &r, Reader &in) {
    L::EntryHdr h{};
    h.type = static_cast<L::Type>(in.get<uint8_t>());
    h.flags = in.get<uint8_t>();
    h.nslots = in.get<uint16_t>();
    h.stag = in.get<uint32_t>();
    h.a = in.get<uint64_t>();
    h.b = in.get<uint64_t>();
    h.seq = in.get<uint32_t>();
    h.len = in.get<uint16_t>();
    h.stamp = r.pos + 1;
    const size_t at = (r.pos % r.n) * L::kSlot;
    // The peer writes where it likes; here the header lands in the slot the consumer waits
    // on and the payload runs as far as the ring lets it.
    size_t len = in.get<uint16_t>();
    if (len > r.bytes() - at - L::kHdrBytes) len = r.bytes() - at - L::kHdrBytes;
    const uint8_t *src = in.take(len);
    std::memcpy(r.rx + at + L::kHdrBytes, src, len);
    std::memcpy(r.rx + at, &h, sizeof h);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Ring rings[2] = {Ring(L::kReqSlots), Ring(L::kRespSlots)};
    Reader in{data, size};
    unsigned ops = 0;
    while (!in.empty() && ops++ < 4096) {
        const uint8_t op = in.get<uint8_t>();
        const bool req = (op & 8) == 0;
        Ring &r = rings[req ? 0 : 1];
        switch (op & 7) {
            case kWrite: {
                const size_t off = in.get<uint16_t>() % r.bytes();
                size_t len = in.get<uint16_t>();
                if (len > r.bytes() - off) len = r.bytes() - off;
                const uint8_t *src = in.take(len);
                std::memcpy(r.rx + off, src, len);
                break;
            }
            case kStamp: {
                const uint32_t slot = in.get<uint8_t>() % r.n;
                const uint64_t lap = in.get<uint8_t>();
                const uint64_t stamp = lap * r.n + slot + 1;
                std::memcpy(r.rx + size_t{slot} * L::kSlot, &stamp, sizeof stamp);
                break;
            }
            case kConsume:
                consume(r, req, 1u + in.get<uint8_t>() % 64);
                break;
            case kProduce:
                produce(r, in);
                break;
            case kPlace:
                place(r, in);
                break;
            default:
                break;
        }
    }
    return 0;
}
