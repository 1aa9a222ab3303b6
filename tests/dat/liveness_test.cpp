// Failure detection through uDAPL: a connection over TCP/iWARP whose peer's link goes down
// (no FIN, no RST) ends in DAT_CONNECTION_EVENT_BROKEN within the bound
// (SOFTRNIC_TCP_TIMEOUT_MS, 2 s here), with every outstanding DTO completed, those not
// handed to TCP flushed. Two IAs in one process, each on the address of its own network
// namespace's link to a bridge (a dat.conf written here); the server's listening socket is
// made in namespace A, the client's connecting socket in namespace B. Root and `ip netns`
// needed (skipped otherwise); the namespaces are deleted on every exit path.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <dat2/dat_registry.h>
#include <dat2/udat.h>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char *kBoundMs = "2000";
// The bound, a second of keepalive tick, and room for a loaded 2-vCPU machine.
constexpr auto kDetectWithin = 5000ms;
constexpr DAT_TIMEOUT kWait = 10 * 1000 * 1000;  // 10 s in microseconds
constexpr const char *kServerAddr = "10.213.1.1";
constexpr const char *kClientAddr = "10.213.1.2";
constexpr size_t kWriteLen = size_t{1} << 20;
constexpr int kWrites = 24;  // 24 MiB: far more than TCP's send buffer (4 MiB by default)

std::string g_conf_path;  // the dat.conf of the two IAs (main writes it)

// Runs a command quietly; true when it exits with 0.
bool run(const std::string &cmd) {
    const std::string quiet = "timeout 20 " + cmd + " >/dev/null 2>&1";
    const int st = std::system(quiet.c_str());
    return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

// Three namespaces: the server's (A) and the client's (B), each with a veth link to a
// bridge in a third (the switch, S). Taking the server's link down is then what the client
// sees when a host's cable is pulled: its own link stays up, its packets reach the switch
// and go no further, nothing comes back. Deleted (with the links) by the destructor.
class Topology {
  public:
    bool create(std::string *why) {
        if (::geteuid() != 0) {
            *why = "not root: cannot create network namespaces";
            return false;
        }
        if (!run("ip netns list")) {
            *why = "`ip netns` is not available";
            return false;
        }
        remove_stale();
        const std::string base =
            kPrefix + std::to_string(::getpid()) + "-" + std::to_string(++counter_);
        for (const char *suffix : {"a", "b", "s"}) {
            if (!run("ip netns add " + base + suffix)) {
                *why = "ip netns add failed";
                return false;
            }
            names_.push_back(base + suffix);
        }
        const std::string &a = names_[0], &b = names_[1], &sw = names_[2];
        const bool ok =
            run("ip -n " + sw + " link add br0 type bridge") &&
            run("ip -n " + sw + " link set br0 up") &&
            run("ip -n " + a + " link add la type veth peer name pa netns " + sw) &&
            run("ip -n " + b + " link add lb type veth peer name pb netns " + sw) &&
            run("ip -n " + sw + " link set pa master br0") &&
            run("ip -n " + sw + " link set pb master br0") &&
            run("ip -n " + sw + " link set pa up") && run("ip -n " + sw + " link set pb up") &&
            run("ip -n " + a + " addr add " + kServerAddr + "/24 dev la") &&
            run("ip -n " + b + " addr add " + kClientAddr + "/24 dev lb") &&
            run("ip -n " + a + " link set la up") && run("ip -n " + b + " link set lb up") &&
            run("ip -n " + a + " link set lo up") && run("ip -n " + b + " link set lo up");
        if (!ok) *why = "cannot join two namespaces through a bridge";
        return ok;
    }
    ~Topology() {
        for (const std::string &n : names_)
            run("ip netns del " + n);
    }
    std::string path_a() const { return "/run/netns/" + names_[0]; }
    std::string path_b() const { return "/run/netns/" + names_[1]; }
    bool server_link_down() { return run("ip -n " + names_[0] + " link set la down"); }

  private:
    static constexpr const char *kPrefix = "softrnic-datlv-";
    // Namespaces left by a run that was killed (their creator's pid is gone).
    static void remove_stale() {
        std::error_code ec;
        for (auto &e : std::filesystem::directory_iterator("/run/netns", ec)) {
            const std::string n = e.path().filename().string();
            if (n.rfind(kPrefix, 0) != 0) continue;
            const pid_t pid = static_cast<pid_t>(std::atol(n.c_str() + std::strlen(kPrefix)));
            if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
            run("ip netns del " + n);
        }
    }
    static inline int counter_ = 0;
    std::vector<std::string> names_;
};

// This thread in another network namespace until destroyed: sockets and threads made
// meanwhile belong to it.
class ScopedNetns {
  public:
    explicit ScopedNetns(const std::string &path) {
        self_ = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        entered_ = self_ >= 0 && fd >= 0 && ::setns(fd, CLONE_NEWNET) == 0;
        if (fd >= 0) ::close(fd);
    }
    ~ScopedNetns() {
        if (entered_ && ::setns(self_, CLONE_NEWNET) != 0) std::abort();  // never stay there
        if (self_ >= 0) ::close(self_);
    }
    ScopedNetns(const ScopedNetns &) = delete;
    ScopedNetns &operator=(const ScopedNetns &) = delete;
    bool entered() const { return entered_; }

  private:
    int self_ = -1;
    bool entered_ = false;
};

DAT_DTO_COOKIE cookie(uint64_t v) {
    DAT_DTO_COOKIE c;
    c.as_64 = v;
    return c;
}

struct Buf {
    std::vector<uint8_t> v;
    DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lctx = 0;
    DAT_RMR_CONTEXT rctx = 0;
    DAT_LMR_TRIPLET iov() {
        DAT_LMR_TRIPLET t{};
        t.virtual_address = reinterpret_cast<uintptr_t>(v.data());
        t.segment_length = DAT_SEG_LENGTH(v.size());
        t.lmr_context = lctx;
        return t;
    }
    DAT_RMR_TRIPLET rmr() {
        DAT_RMR_TRIPLET t{};
        t.virtual_address = reinterpret_cast<uintptr_t>(v.data());
        t.segment_length = DAT_SEG_LENGTH(v.size());
        t.rmr_context = rctx;
        return t;
    }
};

// One IA with its PZ and EVDs, opened inside its namespace.
struct Side {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL, cr = DAT_HANDLE_NULL,
                   req = DAT_HANDLE_NULL, rcv = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    std::vector<std::unique_ptr<Buf>> bufs;

    void open(const char *name) {
        ASSERT_EQ(dat_ia_open(const_cast<char *>(name), 16, &async, &ia), DAT_SUCCESS) << name;
        ASSERT_EQ(dat_pz_create(ia, &pz), DAT_SUCCESS);
        ASSERT_EQ(dat_evd_create(ia, 32, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn),
                  DAT_SUCCESS);
        ASSERT_EQ(dat_evd_create(ia, 32, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr), DAT_SUCCESS);
        ASSERT_EQ(dat_evd_create(ia, 128, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req), DAT_SUCCESS);
        ASSERT_EQ(dat_evd_create(ia, 128, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &rcv), DAT_SUCCESS);
        ASSERT_EQ(dat_ep_create(ia, pz, rcv, req, conn, nullptr, &ep), DAT_SUCCESS);
    }
    Buf *buf(size_t n) {
        auto b = std::make_unique<Buf>();
        b->v.assign(n, 0x5A);
        DAT_REGION_DESCRIPTION r{};
        r.for_va = b->v.data();
        DAT_VLEN rs = 0;
        DAT_VADDR ra = 0;
        EXPECT_EQ(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, r, n, pz, DAT_MEM_PRIV_ALL_FLAG,
                                 DAT_VA_TYPE_VA, &b->lmr, &b->lctx, &b->rctx, &rs, &ra),
                  DAT_SUCCESS);
        bufs.push_back(std::move(b));
        return bufs.back().get();
    }
    void close() {
        if (ia) {
            EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        }
        ia = DAT_HANDLE_NULL;
    }
};

bool wait_event(DAT_EVD_HANDLE evd, DAT_EVENT &e, DAT_TIMEOUT to = kWait) {
    DAT_COUNT nmore = 0;  // what is left queued, not what was returned
    return dat_evd_wait(evd, to, 1, &e, &nmore) == DAT_SUCCESS;
}

DAT_TIMEOUT left_us(Clock::time_point t0) {
    const auto left = kDetectWithin - (Clock::now() - t0);
    return DAT_TIMEOUT(
        std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::microseconds>(left).count()));
}

class DatLiveness : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string why;
        if (!ns_.create(&why)) GTEST_SKIP() << why;
        ::setenv("SOFTRNIC_TCP_TIMEOUT_MS", kBoundMs, 1);
        {
            ScopedNetns in_a(ns_.path_a());
            ASSERT_TRUE(in_a.entered());
            ASSERT_NO_FATAL_FAILURE(srv_.open("lv-server-tcp"));
            ASSERT_EQ(dat_psp_create_any(srv_.ia, &qual_, srv_.cr, DAT_PSP_CONSUMER_FLAG, &psp_),
                      DAT_SUCCESS);
        }
        {
            ScopedNetns in_b(ns_.path_b());
            ASSERT_TRUE(in_b.entered());
            ASSERT_NO_FATAL_FAILURE(cli_.open("lv-client-tcp"));
        }
    }
    void TearDown() override {
        cli_.close();
        srv_.close();
        ::unsetenv("SOFTRNIC_TCP_TIMEOUT_MS");
    }

    // The client (namespace B) connects to the server's PSP (namespace A); both ESTABLISHED.
    // Two receives are posted at each end first (they must flush when the link goes).
    void connect() {
        for (Side *s : {&srv_, &cli_})
            for (uint64_t i = 0; i < 2; ++i) {
                DAT_LMR_TRIPLET t = s->buf(64)->iov();
                ASSERT_EQ(
                    dat_ep_post_recv(s->ep, 1, &t, cookie(100 + i), DAT_COMPLETION_DEFAULT_FLAG),
                    DAT_SUCCESS);
            }
        sockaddr_in a{};
        a.sin_family = AF_INET;
        ASSERT_EQ(inet_pton(AF_INET, kServerAddr, &a.sin_addr), 1);
        {
            ScopedNetns in_b(ns_.path_b());
            ASSERT_TRUE(in_b.entered());
            ASSERT_EQ(
                dat_ep_connect(cli_.ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&a), qual_, kWait, 0,
                               nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
                DAT_SUCCESS);
        }
        DAT_EVENT e{};
        ASSERT_TRUE(wait_event(srv_.cr, e));
        ASSERT_EQ(e.event_number, DAT_CONNECTION_REQUEST_EVENT);
        ASSERT_EQ(dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, srv_.ep, 0, nullptr),
                  DAT_SUCCESS);
        ASSERT_TRUE(wait_event(cli_.conn, e));
        ASSERT_EQ(e.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
        ASSERT_TRUE(wait_event(srv_.conn, e));
        ASSERT_EQ(e.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    }

    // `s` sees DAT_CONNECTION_EVENT_BROKEN within the bound of `t0`, and its two receives
    // complete flushed.
    void expect_broken(Side &s, Clock::time_point t0, const char *who) {
        DAT_EVENT e{};
        ASSERT_TRUE(wait_event(s.conn, e, left_us(t0)))
            << who << ": no connection event within " << kDetectWithin.count()
            << " ms of the link going down";
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
        EXPECT_EQ(e.event_number, DAT_CONNECTION_EVENT_BROKEN) << who;
        EXPECT_GE(took.count(), std::atoi(kBoundMs) / 2) << who;
        for (int i = 0; i < 2; ++i) {
            ASSERT_TRUE(wait_event(s.rcv, e, 2 * 1000 * 1000)) << who << ": receive not flushed";
            EXPECT_EQ(e.event_number, DAT_DTO_COMPLETION_EVENT);
            EXPECT_EQ(e.event_data.dto_completion_event_data.status, DAT_DTO_ERR_FLUSHED) << who;
        }
        std::printf(
            "[ dat      ] %s: DAT_CONNECTION_EVENT_BROKEN seen %lld ms after the link went "
            "down (bound %s ms)\n",
            who, static_cast<long long>(took.count()), kBoundMs);
    }

    Topology ns_;
    Side srv_, cli_;
    DAT_PSP_HANDLE psp_ = DAT_HANDLE_NULL;
    DAT_CONN_QUAL qual_ = 0;
};

// Idle: both ends are found out by their keepalive probes.
TEST_F(DatLiveness, IdleConnectionIsBrokenWithinBound) {
    ASSERT_NO_FATAL_FAILURE(connect());
    ASSERT_TRUE(ns_.server_link_down());
    const auto t0 = Clock::now();
    ASSERT_NO_FATAL_FAILURE(expect_broken(cli_, t0, "client"));
    ASSERT_NO_FATAL_FAILURE(expect_broken(srv_, t0, "server"));
}

// Busy: the client has 24 MiB of RDMA Writes outstanding when the link is down; TCP gives
// up retransmitting at the bound. Every write completes, in order, no success after a
// failure, and those TCP never took (at least 24 - its send buffer) flushed.
TEST_F(DatLiveness, BusyConnectionIsBrokenWithinBound) {
    ASSERT_NO_FATAL_FAILURE(connect());
    Buf *target = srv_.buf(kWriteLen);
    Buf *src = cli_.buf(kWriteLen);
    DAT_LMR_TRIPLET l = src->iov();
    DAT_RMR_TRIPLET r = target->rmr();
    // The link works.
    ASSERT_EQ(dat_ep_post_rdma_write(cli_.ep, 1, &l, cookie(1), &r, DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    DAT_EVENT e{};
    ASSERT_TRUE(wait_event(cli_.req, e));
    ASSERT_EQ(e.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);

    ASSERT_TRUE(ns_.server_link_down());
    const auto t0 = Clock::now();
    for (int i = 0; i < kWrites; ++i)
        ASSERT_EQ(
            dat_ep_post_rdma_write(cli_.ep, 1, &l, cookie(10 + i), &r, DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
    int flushed = 0;
    for (int i = 0; i < kWrites; ++i) {
        ASSERT_TRUE(wait_event(cli_.req, e, left_us(t0)))
            << "write " << i << " not completed within " << kDetectWithin.count() << " ms";
        const auto &d = e.event_data.dto_completion_event_data;
        EXPECT_EQ(d.user_cookie.as_64, uint64_t(10 + i));
        if (flushed) {
            EXPECT_EQ(d.status, DAT_DTO_ERR_FLUSHED) << "write " << i;
        }
        if (d.status != DAT_DTO_SUCCESS) {
            EXPECT_EQ(d.status, DAT_DTO_ERR_FLUSHED) << "write " << i;
            ++flushed;
        }
    }
    EXPECT_GE(flushed, kWrites - 6) << "more than TCP's send buffer completed";
    ASSERT_NO_FATAL_FAILURE(expect_broken(cli_, t0, "client (busy)"));
    ASSERT_NO_FATAL_FAILURE(expect_broken(srv_, t0, "server (idle)"));
    std::printf("[ dat      ] %d of %d outstanding 1 MiB writes flushed\n", flushed, kWrites);
}

}  // namespace

int main(int argc, char **argv) {
    // The registry reads DAT_OVERRIDE once: two IAs on the veth addresses, TCP only.
    char dir[] = "/tmp/dat-liveness-XXXXXX";
    if (!mkdtemp(dir)) return 2;
    g_conf_path = std::string(dir) + "/dat.conf";
    {
        std::ofstream conf(g_conf_path);
        for (auto [name, addr] :
             {std::pair{"lv-server-tcp", kServerAddr}, std::pair{"lv-client-tcp", kClientAddr}})
            conf << name << " u2.0 nonthreadsafe default " << DAPL_SOFTRNIC_LIB << " dapl.2.0 \""
                 << addr << " 0\" \"\"\n";
    }
    ::setenv("DAT_OVERRIDE", g_conf_path.c_str(), 1);
    ::testing::InitGoogleTest(&argc, argv);
    const int rc = RUN_ALL_TESTS();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return rc;
}
