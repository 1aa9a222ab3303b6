// The InfiniBand extension's reliable-connection operations (dat_ib_extensions.h) through our
// libdat2 and the softrnic provider, over each transport (softrnic-shm, softrnic-tcp with
// RFC 7306): RDMA Write with immediate data (the bytes, the immediate in the receiver's
// DAT_IB_DTO_EVENT), fetch-and-add and compare-and-swap (the original values, and the final
// value exact while several EPs, each on its own IA and thread, hit one word), and the
// argument checks of every extended call.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <dat2/dat_ib_extensions.h>
#include <dat2/udat.h>

namespace {

constexpr DAT_TIMEOUT kWait = 10 * 1000 * 1000;  // 10 s in microseconds
constexpr DAT_MEM_PRIV_FLAGS kAllWithAtomics = static_cast<DAT_MEM_PRIV_FLAGS>(
    unsigned(DAT_MEM_PRIV_ALL_FLAG) | unsigned(DAT_IB_MEM_PRIV_REMOTE_ATOMIC));

DAT_RETURN type_of(DAT_RETURN r) {
    return DAT_GET_TYPE(r);
}

// An error code with its subtype, as the provider returns it.
constexpr DAT_RETURN bad_arg(DAT_RETURN arg) {
    return DAT_RETURN(DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | arg);
}

DAT_DTO_COOKIE cookie(uint64_t v) {
    DAT_DTO_COOKIE c;
    c.as_64 = v;
    return c;
}

// Registered memory: 64-byte aligned, so its first word is a valid atomic target.
struct Region {
    std::unique_ptr<uint64_t[]> words;
    size_t bytes = 0;
    DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lctx = 0;
    DAT_RMR_CONTEXT rctx = 0;
    uint8_t *data() { return reinterpret_cast<uint8_t *>(words.get()); }
    DAT_LMR_TRIPLET local(size_t off = 0, size_t len = SIZE_MAX) {
        DAT_LMR_TRIPLET t{};
        t.lmr_context = lctx;
        t.virtual_address = reinterpret_cast<uintptr_t>(data() + off);
        t.segment_length = DAT_VLEN(len == SIZE_MAX ? bytes - off : len);
        return t;
    }
    DAT_RMR_TRIPLET remote(size_t off = 0) {
        DAT_RMR_TRIPLET t{};
        t.rmr_context = rctx;
        t.virtual_address = reinterpret_cast<uintptr_t>(data() + off);
        t.segment_length = DAT_VLEN(bytes - off);
        return t;
    }
};

// One IA with its PZ and EVDs (connection, CR, requests, receives).
struct Side {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE conn = DAT_HANDLE_NULL, cr = DAT_HANDLE_NULL, req = DAT_HANDLE_NULL,
                   rcv = DAT_HANDLE_NULL;
    std::vector<std::unique_ptr<Region>> regions;

    void open(const std::string &name) {
        ASSERT_EQ(dat_ia_open(const_cast<char *>(name.c_str()), 16, &async, &ia), DAT_SUCCESS);
        ASSERT_EQ(dat_pz_create(ia, &pz), DAT_SUCCESS);
        ASSERT_EQ(dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn),
                  DAT_SUCCESS);
        ASSERT_EQ(dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr), DAT_SUCCESS);
        ASSERT_EQ(dat_evd_create(ia, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req), DAT_SUCCESS);
        ASSERT_EQ(dat_evd_create(ia, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &rcv), DAT_SUCCESS);
    }
    Region *region(size_t bytes, DAT_MEM_PRIV_FLAGS priv = kAllWithAtomics) {
        auto r = std::make_unique<Region>();
        r->words.reset(new uint64_t[(bytes + 7) / 8]());
        r->bytes = bytes;
        DAT_REGION_DESCRIPTION d{};
        d.for_va = r->data();
        DAT_VLEN size = 0;
        DAT_VADDR addr = 0;
        EXPECT_EQ(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, d, bytes, pz, priv, DAT_VA_TYPE_VA,
                                 &r->lmr, &r->lctx, &r->rctx, &size, &addr),
                  DAT_SUCCESS);
        regions.push_back(std::move(r));
        return regions.back().get();
    }
    DAT_EP_HANDLE ep() {
        DAT_EP_HANDLE e = DAT_HANDLE_NULL;
        EXPECT_EQ(dat_ep_create(ia, pz, rcv, req, conn, nullptr, &e), DAT_SUCCESS);
        return e;
    }
    ~Side() {
        if (ia) {
            EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        }
    }
};

DAT_EVENT wait_event(DAT_EVD_HANDLE evd) {
    DAT_EVENT e{};
    DAT_COUNT more = 0;
    EXPECT_EQ(dat_evd_wait(evd, kWait, 1, &e, &more), DAT_SUCCESS);
    return e;
}

// The extension record at the start of event_extension_data, as consumers read it.
DAT_IB_EXTENSION_EVENT_DATA ext_of(const DAT_EVENT &e) {
    DAT_IB_EXTENSION_EVENT_DATA x;
    static_assert(sizeof x <= sizeof e.event_extension_data);
    std::memcpy(&x, e.event_extension_data, sizeof x);
    return x;
}

// A server IA with a PSP, and a way to connect client EPs (of any IA) to fresh server EPs.
class ExtIb : public ::testing::TestWithParam<const char *> {
  protected:
    Side srv;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    DAT_CONN_QUAL qual = 0;

    void SetUp() override {
        srv.open(GetParam());
        ASSERT_EQ(dat_psp_create_any(srv.ia, &qual, srv.cr, DAT_PSP_CONSUMER_FLAG, &psp),
                  DAT_SUCCESS);
    }
    DAT_EP_HANDLE connect(Side &cli, DAT_EP_HANDLE cep) {
        DAT_EP_HANDLE sep = srv.ep();
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(dat_ep_connect(cep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&a), qual, kWait, 0,
                                 nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
                  DAT_SUCCESS);
        DAT_EVENT e = wait_event(srv.cr);
        EXPECT_EQ(e.event_number, DAT_CONNECTION_REQUEST_EVENT);
        EXPECT_EQ(dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, sep, 0, nullptr),
                  DAT_SUCCESS);
        EXPECT_EQ(wait_event(cli.conn).event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
        EXPECT_EQ(wait_event(srv.conn).event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
        return sep;
    }
};

TEST(ExtIbAttributes, EveryIaReportsTheIbExtension) {
    for (const char *name : {"softrnic", "softrnic-shm", "softrnic-tcp"}) {
        SCOPED_TRACE(name);
        Side s;
        s.open(name);
        DAT_IA_ATTR attr{};
        ASSERT_EQ(dat_ia_query(s.ia, nullptr, DAT_IA_FIELD_ALL, &attr, 0, nullptr), DAT_SUCCESS);
        EXPECT_EQ(attr.extension_supported, DAT_EXTENSION_IB);
        EXPECT_EQ(attr.extension_version, DAT_IB_EXTENSION_VERSION);
    }
}

TEST_P(ExtIb, WriteWithImmediateLandsByteExactAndReportsTheImmediate) {
    Side cli;
    cli.open(GetParam());
    DAT_EP_HANDLE cep = cli.ep();
    DAT_EP_HANDLE sep = connect(cli, cep);
    constexpr size_t kBytes = 5000;  // more than one frame over TCP
    Region *src = cli.region(kBytes);
    Region *dst = srv.region(kBytes + 64);
    Region *unused_recv = srv.region(64);
    for (size_t i = 0; i < kBytes; ++i)
        src->data()[i] = uint8_t(i * 7 + 3);
    std::memset(dst->data(), 0xEE, dst->bytes);
    DAT_LMR_TRIPLET recv_iov = unused_recv->local();
    ASSERT_EQ(dat_ep_post_recv(sep, 1, &recv_iov, cookie(0x4444), DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);

    DAT_LMR_TRIPLET iov = src->local();
    DAT_RMR_TRIPLET target = dst->remote(32);
    ASSERT_EQ(dat_ib_post_rdma_write_immed(cep, 1, &iov, cookie(0x9999), &target, 0xC0FFEE12u,
                                           DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);

    DAT_EVENT sent = wait_event(cli.req);
    ASSERT_EQ(sent.event_number, DAT_IB_DTO_EVENT);
    const auto &sd = sent.event_data.dto_completion_event_data;
    EXPECT_EQ(sd.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(sd.operation, DAT_IB_DTO_RDMA_WRITE_IMMED);
    EXPECT_EQ(sd.user_cookie.as_64, 0x9999u);
    EXPECT_EQ(sd.transfered_length, kBytes);
    EXPECT_EQ(sd.ep_handle, cep);
    EXPECT_EQ(ext_of(sent).type, DAT_IB_RDMA_WRITE_IMMED);
    EXPECT_EQ(ext_of(sent).status, DAT_OP_SUCCESS);

    DAT_EVENT got = wait_event(srv.rcv);
    ASSERT_EQ(got.event_number, DAT_IB_DTO_EVENT);
    const auto &rd = got.event_data.dto_completion_event_data;
    EXPECT_EQ(rd.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(rd.operation, DAT_IB_DTO_RECV_IMMED);
    EXPECT_EQ(rd.user_cookie.as_64, 0x4444u);
    EXPECT_EQ(rd.transfered_length, kBytes);
    EXPECT_EQ(rd.ep_handle, sep);
    EXPECT_EQ(ext_of(got).type, DAT_IB_RDMA_WRITE_IMMED_DATA);
    EXPECT_EQ(ext_of(got).status, DAT_OP_SUCCESS);
    EXPECT_EQ(ext_of(got).val.immed.data, 0xC0FFEE12u);

    // The bytes at the offset, and nothing either side of them.
    EXPECT_EQ(std::memcmp(dst->data() + 32, src->data(), kBytes), 0);
    for (size_t i = 0; i < 32; ++i)
        ASSERT_EQ(dst->data()[i], 0xEE) << i;
    for (size_t i = 32 + kBytes; i < dst->bytes; ++i)
        ASSERT_EQ(dst->data()[i], 0xEE) << i;
}

// One atomic from `ep`, waited for; returns the original value the event's buffer holds.
uint64_t run_atomic(Side &side, DAT_EP_HANDLE ep, Region *result, DAT_RMR_TRIPLET target,
                    bool fetch_add, uint64_t a, uint64_t b = 0) {
    DAT_LMR_TRIPLET out = result->local(0, 8);
    const DAT_RETURN r = fetch_add ? dat_ib_post_fetch_and_add(ep, a, &out, cookie(0x77), &target,
                                                               DAT_COMPLETION_DEFAULT_FLAG)
                                   : dat_ib_post_cmp_and_swap(ep, a, b, &out, cookie(0x33), &target,
                                                              DAT_COMPLETION_DEFAULT_FLAG);
    EXPECT_EQ(r, DAT_SUCCESS);
    DAT_EVENT e = wait_event(side.req);
    EXPECT_EQ(e.event_number, DAT_IB_DTO_EVENT);
    const auto &d = e.event_data.dto_completion_event_data;
    EXPECT_EQ(d.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(d.user_cookie.as_64, fetch_add ? 0x77u : 0x33u);
    EXPECT_EQ(d.transfered_length, 8u);
    EXPECT_EQ(d.operation, fetch_add ? DAT_IB_DTO_FETCH_ADD : DAT_IB_DTO_CMP_SWAP);
    EXPECT_EQ(ext_of(e).type, fetch_add ? DAT_IB_FETCH_AND_ADD : DAT_IB_CMP_AND_SWAP);
    EXPECT_EQ(ext_of(e).status, DAT_OP_SUCCESS);
    return result->words[0];
}

TEST_P(ExtIb, AtomicsReturnTheOriginalValue) {
    Side cli;
    cli.open(GetParam());
    DAT_EP_HANDLE cep = cli.ep();
    connect(cli, cep);
    Region *word = srv.region(8);
    Region *result = cli.region(8);
    word->words[0] = 0x12345;
    EXPECT_EQ(run_atomic(cli, cep, result, word->remote(), false, 0x54321, 0x1), 0x12345u);
    EXPECT_EQ(word->words[0], 0x12345u);  // no match: unchanged
    EXPECT_EQ(run_atomic(cli, cep, result, word->remote(), false, 0x12345, 0x98765), 0x12345u);
    EXPECT_EQ(word->words[0], 0x98765u);
    EXPECT_EQ(run_atomic(cli, cep, result, word->remote(), true, 0x100), 0x98765u);
    EXPECT_EQ(word->words[0], 0x98865u);
    EXPECT_EQ(run_atomic(cli, cep, result, word->remote(), true, ~uint64_t{0}), 0x98865u);
    EXPECT_EQ(word->words[0], 0x98864u);  // wraps modulo 2^64
}

// Several client IAs, an EP each on its own thread, all on one word of the server.
class ExtIbContention : public ExtIb {
  protected:
    static constexpr int kClients = 3;
    static constexpr int kOpsPerClient = 150;
    Side clients[kClients];
    DAT_EP_HANDLE eps[kClients] = {};
    Region *results[kClients] = {};
    Region *word = nullptr;

    void SetUp() override {
        ExtIb::SetUp();
        word = srv.region(8);
        for (int i = 0; i < kClients; ++i) {
            clients[i].open(GetParam());
            eps[i] = clients[i].ep();
            connect(clients[i], eps[i]);
            results[i] = clients[i].region(8);
        }
    }
};

TEST_P(ExtIbContention, FetchAndAddFromSeveralEpsIsExact) {
    std::vector<uint64_t> originals[kClients];
    std::vector<std::thread> threads;
    for (int i = 0; i < kClients; ++i) {
        threads.emplace_back([&, i] {
            for (int n = 0; n < kOpsPerClient; ++n)
                originals[i].push_back(
                    run_atomic(clients[i], eps[i], results[i], word->remote(), true, 1));
        });
    }
    for (auto &t : threads)
        t.join();
    EXPECT_EQ(word->words[0], uint64_t(kClients) * kOpsPerClient);
    // Every value from 0 to the total was seen exactly once as someone's original.
    std::vector<uint64_t> all;
    for (auto &o : originals)
        all.insert(all.end(), o.begin(), o.end());
    std::sort(all.begin(), all.end());
    std::vector<uint64_t> want(all.size());
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(all, want);
}

TEST_P(ExtIbContention, CompareAndSwapCounterFromSeveralEpsIsExact) {
    int wins[kClients] = {};
    std::vector<std::thread> threads;
    for (int i = 0; i < kClients; ++i) {
        threads.emplace_back([&, i] {
            uint64_t guess = 0;
            while (wins[i] < kOpsPerClient) {
                const uint64_t seen = run_atomic(clients[i], eps[i], results[i], word->remote(),
                                                 false, guess, guess + 1);
                if (seen == guess) {
                    ++wins[i];
                    guess = seen + 1;
                } else {
                    guess = seen;
                }
            }
        });
    }
    for (auto &t : threads)
        t.join();
    EXPECT_EQ(word->words[0], uint64_t(kClients) * kOpsPerClient);
}

TEST_P(ExtIb, ExtendedCallsCheckTheirArguments) {
    Side cli;
    cli.open(GetParam());
    DAT_EP_HANDLE unconnected = cli.ep();
    DAT_EP_HANDLE cep = cli.ep();
    connect(cli, cep);
    Region *word = srv.region(16);
    Region *result = cli.region(8);
    DAT_LMR_TRIPLET out = result->local(0, 8);
    DAT_LMR_TRIPLET short_out = result->local(0, 4);
    DAT_RMR_TRIPLET target = word->remote();
    DAT_RMR_TRIPLET misaligned = word->remote(4);
    const auto flags = DAT_COMPLETION_DEFAULT_FLAG;
    const auto c = cookie(1);

    EXPECT_EQ(type_of(dat_ib_post_fetch_and_add(cli.pz, 1, &out, c, &target, flags)),
              DAT_INVALID_HANDLE);
    EXPECT_EQ(type_of(dat_ib_post_fetch_and_add(unconnected, 1, &out, c, &target, flags)),
              DAT_INVALID_STATE);
    EXPECT_EQ(dat_ib_post_fetch_and_add(cep, 1, nullptr, c, &target, flags),
              bad_arg(DAT_INVALID_ARG4));
    EXPECT_EQ(type_of(dat_ib_post_fetch_and_add(cep, 1, &short_out, c, &target, flags)),
              DAT_LENGTH_ERROR);
    EXPECT_EQ(dat_ib_post_fetch_and_add(cep, 1, &out, c, nullptr, flags),
              bad_arg(DAT_INVALID_ARG6));
    EXPECT_EQ(dat_ib_post_fetch_and_add(cep, 1, &out, c, &misaligned, flags),
              bad_arg(DAT_INVALID_ARG6));
    EXPECT_EQ(dat_ib_post_cmp_and_swap(cep, 1, 2, &out, c, &misaligned, flags),
              bad_arg(DAT_INVALID_ARG7));
    EXPECT_EQ(dat_ib_post_cmp_and_swap(cep, 1, 2, nullptr, c, &target, flags),
              bad_arg(DAT_INVALID_ARG5));
    EXPECT_EQ(type_of(dat_ib_post_cmp_and_swap(unconnected, 1, 2, &out, c, &target, flags)),
              DAT_INVALID_STATE);
    EXPECT_EQ(dat_ib_post_cmp_and_swap(cep, 1, 2, &out, c, &target,
                                       static_cast<DAT_COMPLETION_FLAGS>(0x4000)),
              bad_arg(DAT_INVALID_ARG8));

    Region *src = cli.region(64);
    DAT_LMR_TRIPLET iov = src->local();
    DAT_RMR_TRIPLET small = word->remote();  // 16 bytes: too small for 64
    EXPECT_EQ(type_of(dat_ib_post_rdma_write_immed(cep, 1, &iov, c, &small, 7, flags)),
              DAT_LENGTH_ERROR);
    EXPECT_EQ(dat_ib_post_rdma_write_immed(cep, 1, &iov, c, nullptr, 7, flags),
              bad_arg(DAT_INVALID_ARG6));
    EXPECT_EQ(dat_ib_post_rdma_write_immed(cep, -1, &iov, c, &small, 7, flags),
              bad_arg(DAT_INVALID_ARG3));
    EXPECT_EQ(dat_ib_post_rdma_write_immed(cep, 1, nullptr, c, &small, 7, flags),
              bad_arg(DAT_INVALID_ARG4));
    EXPECT_EQ(type_of(dat_ib_post_rdma_write_immed(unconnected, 1, &iov, c, &small, 7, flags)),
              DAT_INVALID_STATE);

    // Not offered here: UD (needs the InfiniBand personality) and counters.
    DAT_IB_ADDR_HANDLE ah{};
    EXPECT_EQ(type_of(dat_ib_post_send_ud(cep, 1, &iov, &ah, c, flags)), DAT_NOT_IMPLEMENTED);
    DAT_UINT64 counters[DCNT_IA_ALL_COUNTERS] = {};
    EXPECT_EQ(type_of(dat_query_counters(cli.ia, DCNT_IA_ALL_COUNTERS, counters, 0)),
              DAT_NOT_IMPLEMENTED);
    EXPECT_EQ(type_of(dat_print_counters(cli.ia, DCNT_IA_ALL_COUNTERS, 0)), DAT_NOT_IMPLEMENTED);
    DAT_EP_PARAM p{};
    ASSERT_EQ(dat_ep_query(cep, DAT_EP_FIELD_ALL, &p), DAT_SUCCESS);
    DAT_EP_ATTR ud = p.ep_attr;
    ud.service_type = static_cast<DAT_SERVICE_TYPE>(DAT_IB_SERVICE_TYPE_UD);
    DAT_EP_HANDLE e = DAT_HANDLE_NULL;
    EXPECT_EQ(type_of(dat_ep_create(cli.ia, cli.pz, cli.rcv, cli.req, cli.conn, &ud, &e)),
              DAT_MODEL_NOT_SUPPORTED);

    // The word is untouched and nothing was posted: the request EVD stays empty.
    EXPECT_EQ(word->words[0], 0u);
    DAT_EVENT none{};
    EXPECT_EQ(type_of(dat_evd_dequeue(cli.req, &none)), DAT_QUEUE_EMPTY);
}

// An atomic on memory registered without DAT_IB_MEM_PRIV_REMOTE_ATOMIC fails at the peer.
TEST_P(ExtIb, AtomicOnMemoryWithoutTheAtomicPrivilegeFails) {
    Side cli;
    cli.open(GetParam());
    DAT_EP_HANDLE cep = cli.ep();
    connect(cli, cep);
    Region *word = srv.region(8, DAT_MEM_PRIV_ALL_FLAG);
    word->words[0] = 5;
    Region *result = cli.region(8);
    DAT_LMR_TRIPLET out = result->local(0, 8);
    DAT_RMR_TRIPLET target = word->remote();
    ASSERT_EQ(
        dat_ib_post_fetch_and_add(cep, 1, &out, cookie(2), &target, DAT_COMPLETION_DEFAULT_FLAG),
        DAT_SUCCESS);
    DAT_EVENT e = wait_event(cli.req);
    EXPECT_EQ(e.event_number, DAT_IB_DTO_EVENT);
    EXPECT_NE(e.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(ext_of(e).status, DAT_IB_OP_ERR);
    EXPECT_EQ(word->words[0], 5u);
}

INSTANTIATE_TEST_SUITE_P(Transports, ExtIb, ::testing::Values("softrnic-shm", "softrnic-tcp"));
INSTANTIATE_TEST_SUITE_P(Transports, ExtIbContention,
                         ::testing::Values("softrnic-shm", "softrnic-tcp"));

}  // namespace
