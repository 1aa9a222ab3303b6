// Writes the seed corpora of shm_ring_fuzz and shm_hello_fuzz with the production encoders:
// ring entries are laid out by the production Producer (ring.hpp) with the fields the
// connection writes (shm_initiator.cpp), and hellos come from make_hello (hello.hpp).
//
//   shm_corpus_gen fuzz/corpus      (rewrites shm_ring/* and shm_hello/*)
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "transport/shm/hello.hpp"
#include "transport/shm/layout.hpp"
#include "transport/shm/ring.hpp"

namespace L = softrnic::transport::shm::layout;
namespace sd = softrnic::transport::shm::detail;
namespace sh = softrnic::transport::shm;

namespace {

using Bytes = std::vector<uint8_t>;

template <class T>
void put(Bytes &out, T v) {
    const auto *p = reinterpret_cast<const uint8_t *>(&v);
    out.insert(out.end(), p, p + sizeof v);
}

void write_file(const std::string &path, const Bytes &b) {
    FILE *f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(b.data(), 1, b.size(), f) != b.size() || std::fclose(f) != 0) {
        std::perror(path.c_str());
        std::exit(1);
    }
}

// A script (see shm_ring_fuzz.cpp) that mirrors what a well-behaved peer writes into one
// of our rings: each entry, with the Pad before it when it wraps, copied slot for slot into
// the ring, then taken by our consumer.
class Script {
  public:
    explicit Script(bool req) : req_(req), n_(req ? L::kReqSlots : L::kRespSlots) {
        ring_.resize(size_t{n_} * L::kSlot);
        producer_.init(ring_.data(), n_, &cons_, nullptr);
    }
    struct Fields {
        L::Type type;
        uint8_t flags = 0;
        uint32_t stag = 0;
        uint64_t a = 0, b = 0;
        uint32_t seq = 0, imm = 0;
        Bytes payload;
    };
    void entry(const Fields &f) {
        const uint64_t before = producer_.published();
        const uint32_t k = L::slots_for(f.payload.size());
        bool broken = false;
        cons_ = before;  // we consume everything before the next entry comes
        L::EntryHdr *e = producer_.reserve(k, broken);
        if (!e) std::abort();
        e->type = f.type;
        e->flags = f.flags;
        e->stag = f.stag;
        e->a = f.a;
        e->b = f.b;
        e->seq = f.seq;
        e->imm = f.imm;
        e->len = static_cast<uint16_t>(f.payload.size());
        if (!f.payload.empty())
            std::memcpy(reinterpret_cast<std::byte *>(e) + L::kHdrBytes, f.payload.data(),
                        f.payload.size());
        producer_.publish(e, k);
        const uint64_t after = producer_.published();
        const uint32_t from = static_cast<uint32_t>(before % n_);
        const uint32_t to = static_cast<uint32_t>(after % n_);
        if (from < to) {
            copy(from, to);
        } else {  // wrapped: the Pad to the end, then the entry from slot 0
            copy(from, n_);
            copy(0, to);
        }
        out_.push_back(static_cast<uint8_t>(2 | (req_ ? 0 : 8)));  // consume one entry
        out_.push_back(0);
    }
    // Our producer against the peer's index `back` slots behind what we published.
    void produce(int8_t back, uint8_t k) {
        out_.push_back(static_cast<uint8_t>(3 | (req_ ? 0 : 8)));
        out_.push_back(0);
        put<uint64_t>(out_, static_cast<uint64_t>(static_cast<int64_t>(back)));
        out_.push_back(k);
    }
    const Bytes &bytes() const { return out_; }

  private:
    void copy(uint32_t from, uint32_t to) {
        if (from == to) return;
        out_.push_back(static_cast<uint8_t>(0 | (req_ ? 0 : 8)));
        put<uint16_t>(out_, static_cast<uint16_t>(from * L::kSlot));
        put<uint16_t>(out_, static_cast<uint16_t>((to - from) * L::kSlot));
        const auto *p = reinterpret_cast<const uint8_t *>(ring_.data()) + from * L::kSlot;
        out_.insert(out_.end(), p, p + (to - from) * L::kSlot);
    }
    bool req_;
    uint32_t n_;
    std::vector<std::byte> ring_;
    uint64_t cons_ = 0;
    sd::Producer producer_;
    Bytes out_;
};

Bytes iovs(std::initializer_list<L::Iov> v) {
    Bytes b;
    for (const L::Iov &i : v) {
        put(b, i.addr);
        put(b, i.len);
    }
    return b;
}

Bytes filled(size_t n, uint8_t seed) {
    Bytes b(n);
    for (size_t i = 0; i < n; ++i)
        b[i] = static_cast<uint8_t>(seed + i);
    return b;
}

void requests(Script &s, uint32_t seq) {
    using T = L::Type;
    s.entry({T::SendInline, L::kFlagSolicited, 0, 0, 5, seq++, 0, filled(5, 'h')});
    s.entry({T::SendInline, L::kFlagInvalidate, 0x1234, 0, 0, seq++, 0, {}});
    s.entry({T::WriteInline, 0, 0x100, 0x2000, 64, seq++, 0, filled(64, 1)});
    s.entry({T::WriteInline, L::kFlagImmediate, 0x100, 0, 0, seq++, 7, {}});
    s.entry({T::SendRemote, L::kFlagImmediate, 0, 0, 3000, seq++, 9,
             iovs({{0x7f0000001000, 1000}, {0x7f0000010000, 2000}})});
    s.entry({T::WriteRemote, 0, 0x200, 0x10000, 65536, seq++, 0, iovs({{0x7f0000100000, 65536}})});
    s.entry({T::ReadReq, 0, 0x300, 0x40, 512, seq++, 0, iovs({{0x7f0000002000, 512}})});
    s.entry({T::ReadReq, 0, 0x300, 0, 0, seq++, 0, {}});
    Bytes ops = filled(16, 0);
    s.entry({T::Atomic, 0, 0x400, 0x80, 8, seq++, 0, ops});
    s.entry({T::Atomic, L::kFlagCmpSwap, 0x400, 0x88, 8, seq++, 0, ops});
    s.entry({T::WriteInline, 0, 0x100, 0, L::kInlineMax, seq++, 0, filled(L::kInlineMax, 3)});
}

void responses(Script &s, uint32_t seq) {
    using T = L::Type;
    s.entry({T::Ack, 0, 0, 0, 0, seq, 0, {}});
    s.entry({T::ReadRespInline, 0, 0, 0, 0, seq + 1, 0, filled(512, 9)});
    s.entry({T::AtomicResp, 0, 0, 42, 0, seq + 2, 0, {}});
    s.entry({T::Pull, 0, 1, 0, L::kBounceChunk, seq + 3, 0, {}});
    s.entry({T::PullDone, 0, 1, 0, L::kBounceChunk, seq + 3, 0, {}});
    s.entry({T::ReadChunk, 0, 2, L::kBounceChunk, 100, seq + 4, 0, {}});
    s.entry({T::ChunkFree, 0, 2, 0, 0, 0, 0, {}});
    s.entry({T::ReadRespInline, 0, 0, 0, 0, seq + 5, 0, filled(L::kInlineMax, 5)});
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];

    {  // every request type, then enough of them to wrap the ring (with a Pad)
        Script s(true);
        for (uint32_t round = 0; round < 10; ++round)
            requests(s, round * 16);
        write_file(dir + "/shm_ring/req_wrap", s.bytes());
    }
    {
        Script s(true);
        requests(s, 1);
        write_file(dir + "/shm_ring/req_once", s.bytes());
    }
    {  // every response type around the ring, then a Terminate and the Close
        Script s(false);
        for (uint32_t round = 0; round < 6; ++round)
            responses(s, round * 8);
        s.entry({L::Type::Terminate, 0, 0x020600, 0, 0, 0, 0, filled(28, 0x40)});
        s.entry({L::Type::Close, 0, 0, 0, 0, 0, 0, {}});
        write_file(dir + "/shm_ring/resp_wrap", s.bytes());
    }
    {  // our producer against the peer's index: caught up, lagging, full, then impossible
        Script s(false);
        for (int i = 0; i < 8; ++i)
            s.produce(0, 16);
        s.produce(120, 16);
        s.produce(100, 16);
        s.produce(1, 4);
        s.produce(-1, 16);
        write_file(dir + "/shm_ring/produce", s.bytes());
    }

    const auto hello = [&](const std::string &name, uint8_t meta, const sh::Hello &h) {
        Bytes b{meta};
        const auto *p = reinterpret_cast<const uint8_t *>(&h);
        b.insert(b.end(), p, p + sizeof h);
        write_file(dir + "/shm_hello/" + name, b);
    };
    hello("cma", 1, sh::make_hello(0x7ffd12345678, 0x9e3779b97f4a7c15, true));
    hello("no_cma", 1, sh::make_hello(0x7ffd12345678, 0x1, false));
    hello("two_fds", 2, sh::make_hello(0x7ffd12345678, 0x1, true));
    hello("ctrunc", 1 | 8, sh::make_hello(0x7ffd12345678, 0x1, true));
    return 0;
}
