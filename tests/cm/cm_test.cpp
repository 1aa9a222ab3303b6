// Connection manager end to end over 127.0.0.1 and ::1: MPA v2 set-up with private data
// and IRD/ORD negotiation feeding two QPs that then move data over the adopted sockets;
// reject, unreachable, timeout, hostile requests, argument validation and 100 concurrent
// set-ups.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "../rnicpi/fixture.hpp"
#include "cm/connection_manager.hpp"
#include "transport/tcp/tcp_channel.hpp"
#include "transport/tcp/wire/ddp_rdmap.hpp"
#include "transport/tcp/wire/fpdu.hpp"
#include "transport/tcp/wire/mpa.hpp"

using namespace rt;
namespace cm = softrnic::cm;
namespace tcp = softrnic::transport::tcp;
namespace w = softrnic::transport::tcp::wire;

namespace {

std::vector<uint8_t> bytes(const std::string &s) {
    return {s.begin(), s.end()};
}

// Events seen by one manager's handler, waited on from the test thread. An optional
// reaction runs on the event thread first (accepting from inside the handler is the
// pattern the CM is designed for).
class Log {
  public:
    std::function<void(cm::Event &)> react;

    cm::Handler handler() {
        return [this](cm::Event &e) {
            if (react) react(e);
            std::lock_guard lk(mu_);
            events_.push_back(std::move(e));
            cv_.notify_all();
        };
    }
    // Removes and returns the first event of type T (optionally for `id`).
    template <class T>
    std::optional<T> take(cm::ConnId id = 0, std::chrono::milliseconds to = kTimeout) {
        std::unique_lock lk(mu_);
        std::optional<T> out;
        cv_.wait_for(lk, to, [&] {
            for (auto it = events_.begin(); it != events_.end(); ++it)
                if (auto *t = std::get_if<T>(&*it); t && (id == 0 || t->id == id)) {
                    out = std::move(*t);
                    events_.erase(it);
                    return true;
                }
            return false;
        });
        return out;
    }
    size_t size() {
        std::lock_guard lk(mu_);
        return events_.size();
    }
    // Closes sockets from Established events nobody claimed.
    ~Log() {
        for (auto &e : events_)
            if (auto *est = std::get_if<cm::Established>(&e)) release(est->llp);
    }
    static void release(ri_llp_stream_handle_t h) { cm::release_unclaimed(h); }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<cm::Event> events_;
};

cm::Address loopback(int family, uint16_t port = 0) {
    cm::Address a;
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
uint16_t port_of(const cm::Address &a) {
    return ntohs(a.storage.ss_family == AF_INET
                     ? reinterpret_cast<const sockaddr_in *>(&a.storage)->sin_port
                     : reinterpret_cast<const sockaddr_in6 *>(&a.storage)->sin6_port);
}

bool have_family(int family) {
    int s = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return false;
    cm::Address a = loopback(family);
    bool ok = ::bind(s, a.get(), a.len) == 0;
    ::close(s);
    return ok;
}

// Listens with `srv` on the loopback address of `family`; returns the address to dial.
cm::Address listen_on(cm::ConnectionManager &srv, int family, cm::ConnId *lid = nullptr) {
    cm::Address a = loopback(family);
    auto l = srv.listen(a.get(), a.len, 128);
    EXPECT_TRUE(l.ok()) << cm::to_string(l.status) << " errno " << l.sys_errno;
    if (lid) *lid = l.value;
    auto la = srv.local_address(l.value);
    EXPECT_TRUE(la.ok());
    EXPECT_NE(port_of(la.value), 0);
    return la.value;
}

ri_api_return_t to_rts(Qp *q, ri_llp_stream_handle_t h) {
    ri_err_data_t e = 0;
    ri_qp_attr_t at{};
    at.state = RI_QP_STATE_READY_TO_SEND;
    at.qp_xport.qp_iwarp.llp_stream_handle = h;
    return ri_qp_modify(q->owner->rnic, q->h,
                        QM(RI_QP_ATTR_NEXT_STATE | RI_QP_ATTR_LLQ_STREAM_HANDLE), &at, &e);
}

// A port nobody listens on: bind an ephemeral one, then close it.
uint16_t closed_port(int family) {
    int s = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cm::Address a = loopback(family);
    socklen_t sl = a.len;
    ::bind(s, a.get(), a.len);
    ::getsockname(s, reinterpret_cast<sockaddr *>(&a.storage), &sl);
    ::close(s);
    return port_of(a);
}

class CmTest : public ::testing::TestWithParam<int> {
  protected:
    void SetUp() override {
        if (!have_family(GetParam())) GTEST_SKIP() << "no loopback for this family";
    }
    int family() const { return GetParam(); }
};

// ---------------------------------------------------------------------------------------

TEST_P(CmTest, ConnectAcceptThenData) {
    std::vector<std::unique_ptr<Buf>> keep;  // outlives the RNICs (see tcp_channel_test)
    Rnic ra{"A"}, rb{"B"};
    ASSERT_TRUE(ra.ok() && rb.ok());
    Qp *a = ra.new_qp();
    Qp *b = rb.new_qp();
    ASSERT_TRUE(a && b);

    Log cli, srv;
    cm::ConnParams sp;
    sp.private_data = bytes("responder says hi");
    sp.ird = 8;
    sp.ord = 4;
    cm::ConnectionManager srv_cm(srv.handler());
    srv.react = [&](cm::Event &e) {
        if (auto *r = std::get_if<cm::ConnectRequest>(&e)) {
            EXPECT_EQ(srv_cm.accept(r->id, sp), cm::CmStatus::Ok);
        }
    };
    cm::ConnectionManager cli_cm(cli.handler());
    ASSERT_TRUE(srv_cm.ok() && cli_cm.ok());
    cm::Address dst = listen_on(srv_cm, family());

    cm::ConnParams cp;
    cp.private_data = bytes("initiator payload \x01\x02");
    cp.ird = 6;
    cp.ord = 3;
    cp.crc = true;
    auto c = cli_cm.connect(dst.get(), dst.len, cp);
    ASSERT_TRUE(c.ok());

    auto req = srv.take<cm::ConnectRequest>();
    ASSERT_TRUE(req);
    EXPECT_EQ(req->private_data, cp.private_data);
    EXPECT_EQ(req->ird, 6);
    EXPECT_EQ(req->ord, 3);
    EXPECT_TRUE(req->crc);
    EXPECT_EQ(req->peer.storage.ss_family, family());

    auto ei = cli.take<cm::Established>(c.value);
    auto er = srv.take<cm::Established>(req->id);
    ASSERT_TRUE(ei && er);
    EXPECT_TRUE(ei->initiator);
    EXPECT_FALSE(er->initiator);
    EXPECT_EQ(ei->private_data, sp.private_data);
    EXPECT_EQ(er->private_data, cp.private_data);
    // Relaxed negotiation: reply IRD = min(3, 8), reply ORD = min(6, 4); each side's ORD
    // fits the other's IRD.
    EXPECT_EQ(er->params.ird, 3u);
    EXPECT_EQ(er->params.ord, 4u);
    EXPECT_EQ(ei->params.ird, 4u);
    EXPECT_EQ(ei->params.ord, 3u);
    EXPECT_TRUE(ei->params.crc);
    EXPECT_TRUE(er->params.crc);
    EXPECT_EQ(port_of(ei->peer), port_of(dst));

    ASSERT_EQ(to_rts(a, ei->llp), RI_RET_SUCCESS);
    ASSERT_EQ(to_rts(b, er->llp), RI_RET_SUCCESS);

    // One send/recv, byte-exact.
    keep.push_back(std::make_unique<Buf>(4099));
    Buf &src = *keep.back();
    keep.push_back(std::make_unique<Buf>(4099 + 64, 0x11));
    Buf &dstb = *keep.back();
    src.fill(7);
    Mr *ms = ra.reg(src, kLocalRW);
    Mr *md = rb.reg(dstb, kLocalRW);
    ASSERT_TRUE(ms && md);
    ri_data_seg_t r = sge(dstb.data(), 4099 + 64, md->ltag);
    ASSERT_EQ(post_recv(b, 7, &r, 1), RI_RET_SUCCESS);
    ri_data_seg_t s = sge(src.data(), 4099, ms->ltag);
    ASSERT_EQ(post_send(a, RI_WR_TYPE_SEND, kSig, 5, &s, 1), RI_RET_SUCCESS);
    ri_rc_wc_t wc = must_poll(ra, a->scq);
    EXPECT_WC(wc, RI_WC_TYPE_SEND, RI_WC_STATUS_SUCCESS, 5, 4099);
    wc = must_poll(rb, b->rcq);
    EXPECT_WC(wc, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_SUCCESS, 7, 4099);
    EXPECT_EQ(first_diff(src.data(), dstb.data(), 4099), SIZE_MAX);
    EXPECT_EQ(dstb.data()[4099], 0x11);

    // One RDMA Write from the responder side, byte-exact.
    const size_t len = (256 << 10) + 5;
    keep.push_back(std::make_unique<Buf>(len));
    Buf &wsrc = *keep.back();
    keep.push_back(std::make_unique<Buf>(len, 0));
    Buf &wdst = *keep.back();
    wsrc.fill(11);
    Mr *mws = rb.reg(wsrc, kLocalRW);
    Mr *mwd = ra.reg(wdst, kAllRemote);
    ASSERT_TRUE(mws && mwd);
    ri_data_seg_t ws = sge(wsrc.data(), static_cast<uint32_t>(len), mws->ltag);
    ASSERT_EQ(post_write(b, kSig, 9, &ws, 1, wdst.va(), mwd->rtag), RI_RET_SUCCESS);
    wc = must_poll(rb, b->scq);
    EXPECT_WC(wc, RI_WC_TYPE_RDMA_WRITE, RI_WC_STATUS_SUCCESS, 9, len);
    // The write completes at the sender once sent; a Read back orders after it on the wire.
    keep.push_back(std::make_unique<Buf>(8, 0));
    Buf &probe = *keep.back();
    Mr *mp = rb.reg(probe, kLocalRW);
    ri_data_seg_t ps = sge(probe.data(), 8, mp->ltag);
    ASSERT_EQ(post_read(b, kSig, 10, &ps, 1, wdst.va(), mwd->rtag), RI_RET_SUCCESS);
    wc = must_poll(rb, b->scq);
    EXPECT_WC(wc, RI_WC_TYPE_RDMA_READ, RI_WC_STATUS_SUCCESS, 10, 8);
    EXPECT_EQ(first_diff(wsrc.data(), wdst.data(), len), SIZE_MAX);
    EXPECT_TRUE(wdst.guards_intact());
}

TEST_P(CmTest, RejectWithPrivateData) {
    Log cli, srv;
    cm::ConnectionManager srv_cm(srv.handler());
    const auto why = bytes("go away, politely");
    srv.react = [&](cm::Event &e) {
        if (auto *r = std::get_if<cm::ConnectRequest>(&e)) {
            EXPECT_EQ(srv_cm.reject(r->id, why), cm::CmStatus::Ok);
            EXPECT_EQ(srv_cm.reject(r->id, why), cm::CmStatus::UnknownId);  // answered
        }
    };
    cm::ConnectionManager cli_cm(cli.handler());
    cm::Address dst = listen_on(srv_cm, family());
    cm::ConnParams cp;
    cp.private_data = bytes("please");
    auto c = cli_cm.connect(dst.get(), dst.len, cp);
    ASSERT_TRUE(c.ok());
    auto rej = cli.take<cm::Rejected>(c.value);
    ASSERT_TRUE(rej);
    EXPECT_EQ(rej->private_data, why);
    EXPECT_FALSE(cli.take<cm::Established>(0, std::chrono::milliseconds(50)));
}

TEST_P(CmTest, ClosedPortIsUnreachable) {
    Log cli;
    cm::ConnectionManager cli_cm(cli.handler());
    cm::Address dst = loopback(family(), closed_port(family()));
    auto c = cli_cm.connect(dst.get(), dst.len, {});
    ASSERT_TRUE(c.ok());
    auto u = cli.take<cm::Unreachable>(c.value);
    ASSERT_TRUE(u);
    EXPECT_EQ(u->sys_errno, ECONNREFUSED);
}

// A raw listener that completes the TCP handshake (kernel backlog) and never speaks MPA.
TEST_P(CmTest, SilentPeerTimesOut) {
    int l = ::socket(family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(l, 0);
    cm::Address a = loopback(family());
    socklen_t sl = sizeof a.storage;
    ASSERT_EQ(::bind(l, a.get(), a.len), 0);
    ASSERT_EQ(::listen(l, 4), 0);
    ASSERT_EQ(::getsockname(l, reinterpret_cast<sockaddr *>(&a.storage), &sl), 0);
    a.len = sl;

    Log cli;
    cm::ConnectionManager cli_cm(cli.handler());
    cm::ConnParams cp;
    cp.timeout = std::chrono::milliseconds(300);
    auto t0 = Clock::now();
    auto c = cli_cm.connect(a.get(), a.len, cp);
    ASSERT_TRUE(c.ok());
    auto to = cli.take<cm::TimedOut>(c.value);
    auto dt = Clock::now() - t0;
    ASSERT_TRUE(to);
    EXPECT_GE(dt, std::chrono::milliseconds(300));
    // Bounded, with room for a loaded 2-vCPU machine: the point is that it fires, not
    // how promptly.
    EXPECT_LT(dt, std::chrono::milliseconds(300 + 5000));
    ::close(l);
}

TEST_P(CmTest, HundredConcurrent) {
    constexpr int kN = 100;
    Log cli, srv;
    cm::ConnectionManager srv_cm(srv.handler());
    srv.react = [&](cm::Event &e) {
        if (auto *r = std::get_if<cm::ConnectRequest>(&e)) {
            cm::ConnParams p;
            p.private_data = r->private_data;  // echo: proves the pairing
            EXPECT_EQ(srv_cm.accept(r->id, p), cm::CmStatus::Ok);
        }
    };
    cm::ConnectionManager cli_cm(cli.handler());
    cm::Address dst = listen_on(srv_cm, family());
    std::vector<cm::ConnId> ids;
    auto t0 = Clock::now();
    for (int i = 0; i < kN; ++i) {
        cm::ConnParams p;
        p.private_data = bytes("conn " + std::to_string(i));
        auto c = cli_cm.connect(dst.get(), dst.len, p);
        ASSERT_TRUE(c.ok());
        ids.push_back(c.value);
    }
    int got = 0;
    for (int i = 0; i < kN; ++i) {
        auto e = cli.take<cm::Established>(ids[i]);
        ASSERT_TRUE(e) << "connection " << i;
        EXPECT_EQ(e->private_data, bytes("conn " + std::to_string(i)));
        Log::release(e->llp);
        ++got;
    }
    for (int i = 0; i < kN; ++i) {
        auto e = srv.take<cm::Established>();
        ASSERT_TRUE(e);
        Log::release(e->llp);
    }
    auto ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    std::printf("[ cm       ] %d concurrent MPA set-ups (%s): %.2f ms\n", got,
                family() == AF_INET ? "IPv4" : "IPv6", ms);
    EXPECT_EQ(got, kN);
}

// The responder's last handshake message (TCP: the MPA Reply; shm: its hello) waits until
// its handler has returned from Established, so the initiator can never see, use or close
// a connection the responder's consumer has not seen yet. dtestcm's server counts 1000
// ESTABLISHED events before it waits for 1000 DISCONNECTED ones; its client disconnects
// as soon as it saw its own 1000 ESTABLISHED, and used to be ahead of a busy server.
TEST_P(CmTest, InitiatorEstablishedWaitsForTheResponderHandler) {
    constexpr int kN = 4;
    std::atomic<int> order{0};
    std::mutex mu;
    std::map<std::string, int> responder_done, initiator_seen;
    Log cli, srv;
    cm::ConnectionManager srv_cm(srv.handler());
    srv.react = [&](cm::Event &e) {
        if (auto *r = std::get_if<cm::ConnectRequest>(&e)) {
            cm::ConnParams p;
            p.private_data = r->private_data;
            EXPECT_EQ(srv_cm.accept(r->id, p), cm::CmStatus::Ok);
        } else if (auto *est = std::get_if<cm::Established>(&e)) {
            // A slow consumer: without the deferral, every initiator is connected by now.
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
            std::lock_guard lk(mu);
            responder_done[std::string(est->private_data.begin(), est->private_data.end())] =
                order.fetch_add(1, std::memory_order_relaxed);
        }
    };
    cm::ConnectionManager cli_cm(cli.handler());
    cli.react = [&](cm::Event &e) {
        if (auto *est = std::get_if<cm::Established>(&e)) {
            std::lock_guard lk(mu);
            initiator_seen[std::string(est->private_data.begin(), est->private_data.end())] =
                order.fetch_add(1, std::memory_order_relaxed);
        }
    };
    cm::Address dst = listen_on(srv_cm, family());
    std::vector<cm::ConnId> ids;
    for (int i = 0; i < kN; ++i) {
        cm::ConnParams p;
        p.private_data = bytes("conn " + std::to_string(i));
        auto c = cli_cm.connect(dst.get(), dst.len, p);
        ASSERT_TRUE(c.ok());
        ids.push_back(c.value);
    }
    for (int i = 0; i < kN; ++i) {
        auto e = cli.take<cm::Established>(ids[i]);
        ASSERT_TRUE(e) << "connection " << i;
        Log::release(e->llp);
    }
    for (int i = 0; i < kN; ++i) {
        auto e = srv.take<cm::Established>();
        ASSERT_TRUE(e);
        Log::release(e->llp);
    }
    std::lock_guard lk(mu);
    ASSERT_EQ(responder_done.size(), size_t{kN});
    ASSERT_EQ(initiator_seen.size(), size_t{kN});
    for (const auto &[name, seen] : initiator_seen)
        EXPECT_LT(responder_done.at(name), seen) << name;
}

INSTANTIATE_TEST_SUITE_P(Families, CmTest, ::testing::Values(AF_INET, AF_INET6),
                         [](const auto &i) { return i.param == AF_INET ? "IPv4" : "IPv6"; });

// ---------------------------------------------------------------------------------------

TEST(Cm, ArgumentValidation) {
    Log log;
    cm::ConnectionManager m(log.handler());
    ASSERT_TRUE(m.ok());
    cm::Address a = loopback(AF_INET, closed_port(AF_INET));
    EXPECT_EQ(m.listen(nullptr, 16, 4).status, cm::CmStatus::InvalidArgument);
    EXPECT_EQ(m.listen(a.get(), 4, 4).status, cm::CmStatus::InvalidArgument);
    EXPECT_EQ(m.listen(a.get(), a.len, -1).status, cm::CmStatus::InvalidArgument);
    EXPECT_EQ(m.connect(nullptr, 0, {}).status, cm::CmStatus::InvalidArgument);
    cm::ConnParams big;
    big.private_data.assign(cm::kMaxPrivateData + 1, 0);
    EXPECT_EQ(m.connect(a.get(), a.len, big).status, cm::CmStatus::InvalidArgument);
    cm::ConnParams bad_ird;
    bad_ird.ird = 0x4000;
    EXPECT_EQ(m.connect(a.get(), a.len, bad_ird).status, cm::CmStatus::InvalidArgument);
    sockaddr unix_like{};
    unix_like.sa_family = AF_UNIX;
    EXPECT_EQ(m.connect(&unix_like, sizeof unix_like, {}).status, cm::CmStatus::InvalidArgument);
    EXPECT_EQ(m.accept(12345, {}), cm::CmStatus::UnknownId);
    EXPECT_EQ(m.reject(12345), cm::CmStatus::UnknownId);
    EXPECT_EQ(m.stop_listen(12345), cm::CmStatus::UnknownId);
    EXPECT_EQ(m.local_address(12345).status, cm::CmStatus::UnknownId);
    std::vector<uint8_t> pd(cm::kMaxPrivateData + 1);
    EXPECT_EQ(m.reject(1, pd), cm::CmStatus::InvalidArgument);

    // Max-size private data goes through; accept() on an initiator is a state error. The
    // peer is a plain listener that never answers the MPA Request, so the connection is
    // still being set up when accept() is tried (a closed port could already have failed
    // it and forgotten the id).
    int silent = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(silent, 0);
    cm::Address sa = loopback(AF_INET);
    ASSERT_EQ(::bind(silent, sa.get(), sa.len), 0);
    ASSERT_EQ(::listen(silent, 4), 0);
    ASSERT_EQ(::getsockname(silent, reinterpret_cast<sockaddr *>(&sa.storage), &sa.len), 0);
    cm::ConnParams max;
    max.private_data.assign(cm::kMaxPrivateData, 0x5A);
    max.timeout = std::chrono::milliseconds(300);
    auto c = m.connect(sa.get(), sa.len, max);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(m.accept(c.value, {}), cm::CmStatus::WrongState);
    EXPECT_TRUE(log.take<cm::TimedOut>(c.value));
    ::close(silent);

    // stop_listen twice.
    cm::Address l = loopback(AF_INET);
    auto lid = m.listen(l.get(), l.len, 4);
    ASSERT_TRUE(lid.ok());
    EXPECT_EQ(m.stop_listen(lid.value), cm::CmStatus::Ok);
    EXPECT_EQ(m.stop_listen(lid.value), cm::CmStatus::UnknownId);
}

// Raw initiator sending hostile Requests: the manager answers with a reject (or closes)
// and never reports them to the ULP.
int raw_connect(const cm::Address &a) {
    int s = ::socket(a.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s >= 0 && ::connect(s, a.get(), a.len) != 0) {
        ::close(s);
        return -1;
    }
    return s;
}
// Reads until EOF (bounded); returns what came.
std::vector<uint8_t> read_to_eof(int s) {
    std::vector<uint8_t> out;
    uint8_t buf[1024];
    for (;;) {
        pollfd pf{s, POLLIN, 0};
        if (::poll(&pf, 1, 5000) != 1) break;
        ssize_t n = ::recv(s, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.insert(out.end(), buf, buf + n);
    }
    return out;
}

TEST(Cm, BadRequestsAreDropped) {
    Log srv;
    cm::ConnectionManager srv_cm(srv.handler());
    cm::Address dst = listen_on(srv_cm, AF_INET);

    w::MpaConfig cfg;
    w::MpaFrame req = w::mpa_make_request(cfg);
    uint8_t good[w::kMpaMaxFrame];
    size_t n = 0;
    ASSERT_EQ(w::build_mpa_frame(req, good, n), w::Status::Ok);

    struct Case {
        const char *what;
        std::function<void(std::vector<uint8_t> &)> mutate;
        bool expect_reply;
    };
    std::vector<Case> cases = {
        {"bad key", [](auto &f) { f[3] ^= 0xFF; }, false},
        {"revision 3", [](auto &f) { f[17] = 3; }, true},
        {"PD_Length 513", [](auto &f) { w::store_be16(&f[18], 513); }, true},
        {"markers", [](auto &f) { f[16] |= w::kMpaFlagM; }, true},
    };
    for (auto &c : cases) {
        std::vector<uint8_t> f(good, good + n);
        c.mutate(f);
        int s = raw_connect(dst);
        ASSERT_GE(s, 0);
        // One write: the responder stops reading at the first bad byte, and a peer still
        // sending after its close would earn an RST that can destroy the reject in flight.
        // (Byte-by-byte arrival is covered by PartialRequestReads.)
        ASSERT_EQ(::send(s, f.data(), f.size(), MSG_NOSIGNAL), static_cast<ssize_t>(f.size()));
        auto got = read_to_eof(s);
        ::close(s);
        if (!c.expect_reply) {
            EXPECT_TRUE(got.empty()) << c.what;
            continue;
        }
        w::MpaFrame rep;
        size_t used = 0;
        ASSERT_EQ(w::parse_mpa_frame(got, w::MpaKind::Reply, rep, used), w::Status::Ok) << c.what;
        EXPECT_TRUE(rep.reject) << c.what;
        EXPECT_FALSE(rep.markers) << c.what;
    }
    EXPECT_FALSE(srv.take<cm::ConnectRequest>(0, std::chrono::milliseconds(50)));
    EXPECT_EQ(srv.size(), 0u);
}

// A well-formed Request written one byte at a time is still reported once, intact.
TEST(Cm, PartialRequestReads) {
    Log srv;
    cm::ConnectionManager srv_cm(srv.handler());
    cm::Address dst = listen_on(srv_cm, AF_INET);
    w::MpaConfig cfg;
    const auto pd = bytes("slow but steady");
    w::MpaFrame req = w::mpa_make_request(cfg, pd);
    uint8_t f[w::kMpaMaxFrame];
    size_t n = 0;
    ASSERT_EQ(w::build_mpa_frame(req, f, n), w::Status::Ok);
    int s = raw_connect(dst);
    ASSERT_GE(s, 0);
    for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(::send(s, &f[i], 1, MSG_NOSIGNAL), 1);
        if (i % 7 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    auto r = srv.take<cm::ConnectRequest>();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->private_data, pd);
    // Peer closes while the ULP decides: reported as Failed, accept then fails cleanly.
    ::close(s);
    auto f2 = srv.take<cm::Failed>(r->id);
    EXPECT_TRUE(f2);
    EXPECT_EQ(srv_cm.accept(r->id, {}), cm::CmStatus::UnknownId);
}

// Destroying a manager with everything in flight leaks nothing (checked by fd count).
TEST(Cm, TeardownClosesEverything) {
    auto count_fds = [] {
        int n = 0;
        for (int fd = 0; fd < 4096; ++fd)
            if (::fcntl(fd, F_GETFD) >= 0) ++n;
        return n;
    };
    int before = count_fds();
    {
        Log cli, srv;  // srv never answers: requests stay pending
        cm::ConnectionManager srv_cm(srv.handler());
        cm::ConnectionManager cli_cm(cli.handler());
        cm::Address dst = listen_on(srv_cm, AF_INET);
        for (int i = 0; i < 10; ++i)
            ASSERT_TRUE(cli_cm.connect(dst.get(), dst.len, {}).ok());
        for (int i = 0; i < 10; ++i)
            ASSERT_TRUE(srv.take<cm::ConnectRequest>());
    }
    EXPECT_EQ(count_fds(), before);
}

// ---- RFC 6581 peer-to-peer start-up -----------------------------------------------------

// Reads one FPDU (blocking socket, bounded) and decodes it.
bool read_fpdu(int s, bool crc, w::Segment &seg, std::vector<uint8_t> &keep) {
    w::FpduDecoder dec({crc, 0xFFFF});
    uint8_t c;
    auto deadline = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < deadline) {
        pollfd pf{s, POLLIN, 0};
        if (::poll(&pf, 1, 100) != 1) continue;
        if (::recv(s, &c, 1, 0) != 1) return false;
        auto r = dec.feed({&c, 1});
        if (r.state == w::FeedState::Error) return false;
        if (r.state == w::FeedState::Segment) {
            keep.assign(dec.segment().begin(), dec.segment().end());
            return w::decode_segment(keep, seg) == w::Status::Ok;
        }
    }
    return false;
}

std::vector<uint8_t> rtr_fpdu(bool read) {
    w::DdpHeader h{};
    h.last = true;
    uint8_t hdr[w::kMaxHeaderLen];
    size_t hl;
    if (read) {
        h.opcode = w::Opcode::ReadRequest;
        h.qn = 1;
        h.msn = 1;
        w::ReadRequestBody b{};
        b.src_stag = 1;
        hl = w::encode_read_request(h, b, hdr);
    } else {
        h.opcode = w::Opcode::RdmaWrite;
        h.stag = 1;
        hl = w::encode_ddp_header(h, hdr);
    }
    uint8_t out[128];
    size_t n = 0;
    EXPECT_EQ(w::encode_fpdu(std::span<const uint8_t>(hdr, hl), std::span<const uint8_t>(), false,
                             out, n),
              w::Status::Ok);
    return {out, out + n};
}

// A raw initiator asks for P2P offering `write`/`read` RTRs: the manager's Reply picks one,
// and Established is reported only after the RTR arrived (the responder's QP must not send
// first, RFC 5044 7.1.2). A Read RTR is answered with a zero-length Read Response.
void p2p_as_responder(bool offer_write, bool offer_read) {
    Log srv;
    cm::ConnectionManager srv_cm(srv.handler());
    srv.react = [&](cm::Event &e) {
        if (auto *r = std::get_if<cm::ConnectRequest>(&e)) {
            EXPECT_EQ(srv_cm.accept(r->id, {}), cm::CmStatus::Ok);
        }
    };
    cm::Address dst = listen_on(srv_cm, AF_INET);
    w::MpaConfig cfg;
    cfg.p2p = true;
    cfg.offer_write = offer_write;
    cfg.offer_read = offer_read;
    w::MpaFrame req = w::mpa_make_request(cfg);
    uint8_t f[w::kMpaMaxFrame];
    size_t n = 0;
    ASSERT_EQ(w::build_mpa_frame(req, f, n), w::Status::Ok);
    int s = raw_connect(dst);
    ASSERT_GE(s, 0);
    ASSERT_EQ(::send(s, f, n, MSG_NOSIGNAL), static_cast<ssize_t>(n));
    w::MpaParser rp(w::MpaKind::Reply);
    uint8_t c;
    while (rp.state() == w::MpaParser::State::NeedMore) {
        pollfd pf{s, POLLIN, 0};
        ASSERT_EQ(::poll(&pf, 1, 5000), 1);
        ASSERT_EQ(::recv(s, &c, 1, 0), 1);
        rp.feed({&c, 1});
    }
    ASSERT_EQ(rp.state(), w::MpaParser::State::Complete);
    w::MpaResult res;
    ASSERT_EQ(w::mpa_finish_initiator(cfg, req, rp.frame(), res), w::Status::Ok);
    EXPECT_TRUE(res.p2p);
    EXPECT_EQ(res.rtr, offer_write ? w::Rtr::Write : w::Rtr::Read);
    if (res.rtr == w::Rtr::Write) {
        // Usable as soon as the Reply is out: the channel consumes the RTR and holds its
        // sends until then (tests/tcp TcpRtr.*).
        auto est = srv.take<cm::Established>();
        ASSERT_TRUE(est);
        EXPECT_TRUE(est->params.await_ready);
        EXPECT_EQ(est->params.reads_consumed, 0u);
        Log::release(est->llp);
        ::close(s);
        return;
    }
    // Read RTR: consumed by the manager, so no Established before it.
    EXPECT_FALSE(srv.take<cm::Established>(0, std::chrono::milliseconds(200)));
    auto rtr = rtr_fpdu(res.rtr == w::Rtr::Read);
    ASSERT_EQ(::send(s, rtr.data(), rtr.size(), MSG_NOSIGNAL), static_cast<ssize_t>(rtr.size()));
    if (res.rtr == w::Rtr::Read) {
        w::Segment seg;
        std::vector<uint8_t> keep;
        ASSERT_TRUE(read_fpdu(s, false, seg, keep));
        EXPECT_EQ(seg.hdr.opcode, w::Opcode::ReadResponse);
        EXPECT_TRUE(seg.hdr.last);
        EXPECT_TRUE(seg.payload.empty());
    }
    auto est = srv.take<cm::Established>();
    ASSERT_TRUE(est);
    // The Read RTR was consumed by the manager and used up Read Request MSN 1.
    EXPECT_EQ(est->params.reads_consumed, 1u);
    EXPECT_FALSE(est->params.await_ready);
    Log::release(est->llp);
    ::close(s);
}

TEST(CmP2p, ResponderEstablishedOnceReplyIsOutWithWriteRtr) {
    p2p_as_responder(true, true);
}
TEST(CmP2p, ResponderAnswersReadRtr) {
    p2p_as_responder(false, true);
}

// The manager as initiator asks for P2P by default and sends a zero-length Write RTR as
// its first FPDU, before reporting Established.
TEST(CmP2p, InitiatorSendsWriteRtrFirst) {
    int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cm::Address a = loopback(AF_INET);
    ASSERT_EQ(::bind(l, a.get(), a.len), 0);
    ASSERT_EQ(::listen(l, 1), 0);
    ASSERT_EQ(::getsockname(l, reinterpret_cast<sockaddr *>(&a.storage), &a.len), 0);
    Log cli;
    cm::ConnectionManager cli_cm(cli.handler());
    auto id = cli_cm.connect(a.get(), a.len, {});
    ASSERT_TRUE(id.ok());
    int s = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(s, 0);
    w::MpaParser qp(w::MpaKind::Request);
    uint8_t c;
    while (qp.state() == w::MpaParser::State::NeedMore) {
        pollfd pf{s, POLLIN, 0};
        ASSERT_EQ(::poll(&pf, 1, 5000), 1);
        ASSERT_EQ(::recv(s, &c, 1, 0), 1);
        qp.feed({&c, 1});
    }
    ASSERT_EQ(qp.state(), w::MpaParser::State::Complete);
    EXPECT_TRUE(qp.frame().ird_ord.p2p);
    EXPECT_TRUE(qp.frame().ird_ord.rtr_write);
    w::MpaFrame rep;
    w::MpaResult res;
    ASSERT_EQ(w::mpa_respond(w::MpaConfig{}, qp.frame(), {}, rep, res), w::Status::Ok);
    uint8_t f[w::kMpaMaxFrame];
    size_t n = 0;
    ASSERT_EQ(w::build_mpa_frame(rep, f, n), w::Status::Ok);
    ASSERT_EQ(::send(s, f, n, MSG_NOSIGNAL), static_cast<ssize_t>(n));
    w::Segment seg;
    std::vector<uint8_t> keep;
    ASSERT_TRUE(read_fpdu(s, false, seg, keep));
    EXPECT_EQ(seg.hdr.opcode, w::Opcode::RdmaWrite);
    EXPECT_TRUE(seg.hdr.last);
    EXPECT_TRUE(seg.payload.empty());
    auto est = cli.take<cm::Established>(id.value);
    ASSERT_TRUE(est);
    Log::release(est->llp);
    ::close(s);
    ::close(l);
}

// A Reply the initiator cannot use is answered with a Terminate LLP/MPA naming the fault,
// then the connection is reported Failed: a P2P Reply choosing no RTR we offered (0x07),
// and a Reply with a wrong key (0x04, the code siw uses).
void bad_reply(const std::function<void(std::vector<uint8_t> &)> &mutate, w::TermCode want,
               w::Status status, cm::FailReason reason) {
    int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cm::Address a = loopback(AF_INET);
    ASSERT_EQ(::bind(l, a.get(), a.len), 0);
    ASSERT_EQ(::listen(l, 1), 0);
    ASSERT_EQ(::getsockname(l, reinterpret_cast<sockaddr *>(&a.storage), &a.len), 0);
    Log cli;
    cm::ConnectionManager cli_cm(cli.handler());
    auto id = cli_cm.connect(a.get(), a.len, {});
    ASSERT_TRUE(id.ok());
    int s = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(s, 0);
    w::MpaParser qp(w::MpaKind::Request);
    uint8_t c;
    while (qp.state() == w::MpaParser::State::NeedMore) {
        pollfd pf{s, POLLIN, 0};
        ASSERT_EQ(::poll(&pf, 1, 5000), 1);
        ASSERT_EQ(::recv(s, &c, 1, 0), 1);
        qp.feed({&c, 1});
    }
    w::MpaFrame rep;
    w::MpaResult res;
    ASSERT_EQ(w::mpa_respond(w::MpaConfig{}, qp.frame(), {}, rep, res), w::Status::Ok);
    uint8_t f[w::kMpaMaxFrame];
    size_t n = 0;
    ASSERT_EQ(w::build_mpa_frame(rep, f, n), w::Status::Ok);
    std::vector<uint8_t> frame(f, f + n);
    mutate(frame);
    ASSERT_EQ(::send(s, frame.data(), frame.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(frame.size()));
    w::Segment seg;
    std::vector<uint8_t> keep;
    ASSERT_TRUE(read_fpdu(s, false, seg, keep));
    EXPECT_EQ(seg.hdr.opcode, w::Opcode::Terminate);
    EXPECT_EQ(seg.term.code, want);
    auto failed = cli.take<cm::Failed>(id.value);
    ASSERT_TRUE(failed);
    EXPECT_EQ(failed->reason, reason);
    EXPECT_EQ(failed->protocol_code, static_cast<uint16_t>(status));
    ::close(s);
    ::close(l);
}

TEST(CmP2p, ReplyWithoutMatchingRtrEarnsTerminate) {
    // Clear the RTR choice bits of the IRD/ORD block (Send in the IRD word, Write/Read in
    // the ORD word), keeping P2P set.
    bad_reply(
        [](std::vector<uint8_t> &f) {
            f[w::kMpaHeaderLen] &= 0xBF;
            f[w::kMpaHeaderLen + 2] &= 0x3F;
        },
        w::term_code(w::Status::MpaNoMatchingRtr), w::Status::MpaNoMatchingRtr,
        cm::FailReason::NoReadyToReceive);
}

TEST(CmP2p, ReplyWithBadKeyEarnsTerminate) {
    bad_reply([](std::vector<uint8_t> &f) { f[0] ^= 0x20; }, w::term_code(w::Status::MpaBadKey),
              w::Status::MpaBadKey, cm::FailReason::Malformed);
}

}  // namespace
