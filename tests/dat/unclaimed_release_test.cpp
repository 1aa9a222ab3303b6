// An EP freed while its connection is being set up over shared memory: the connection the
// connection manager then hands over (Established for an EP that is gone) belongs to nobody,
// and the provider must release it whatever its transport. Released through TCP's table only,
// the shm stream kept its Unix socket and both mapped segments for good, and the peer kept a
// connection nobody would ever close.
//
// Two processes (the test binary re-executed as the server, a pipe each way), both loading
// libdaplsoftrnic through our libdat2 with DAT_OVERRIDE, IA softrnic-shm (shm forced).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include <dat2/dat_registry.h>
#include <dat2/udat.h>

namespace {

using namespace std::chrono_literals;
constexpr DAT_TIMEOUT kWait = 10 * 1000 * 1000;  // 10 s in microseconds
// How long the server waits for the end of a connection the client abandoned.
constexpr DAT_TIMEOUT kEndWait = 5 * 1000 * 1000;
constexpr char kIa[] = "softrnic-shm";
constexpr char kServerEnv[] = "SOFTRNIC_TEST_RELEASE_SERVER";

// Open descriptors of this process: number -> what it refers to (socket:[...], /memfd:...).
std::map<int, std::string> open_fds() {
    std::map<int, std::string> fds;
    DIR *d = ::opendir("/proc/self/fd");
    if (d == nullptr) return fds;
    const int own = ::dirfd(d);
    while (dirent *e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        const int fd = std::atoi(e->d_name);
        if (fd == own) continue;
        char target[256] = {};
        std::string path = std::string("/proc/self/fd/") + e->d_name;
        const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
        fds[fd] = n > 0 ? std::string(target, size_t(n)) : std::string("?");
    }
    ::closedir(d);
    return fds;
}

// Mappings of shm segments (memfd "softrnic-shm") in this process.
int shm_maps() {
    std::ifstream f("/proc/self/maps");
    std::string line;
    int n = 0;
    while (std::getline(f, line))
        if (line.find("softrnic-shm") != std::string::npos) ++n;
    return n;
}

std::string describe(const std::map<int, std::string> &fds) {
    std::string s;
    for (const auto &[fd, what] : fds)
        s += std::to_string(fd) + " -> " + what + "\n";
    return s;
}

bool read_full(int fd, void *p, size_t n, int timeout_ms) {
    auto *c = static_cast<uint8_t *>(p);
    while (n) {
        pollfd pf{fd, POLLIN, 0};
        if (::poll(&pf, 1, timeout_ms) != 1) return false;
        const ssize_t r = ::read(fd, c, n);
        if (r <= 0) return false;
        c += r;
        n -= size_t(r);
    }
    return true;
}

// IA, PZ, the four EVDs and one EP.
struct Side {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL, cr = DAT_HANDLE_NULL,
                   req = DAT_HANDLE_NULL, rcv = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;

    bool open() {
        return dat_ia_open(const_cast<char *>(kIa), 16, &async, &ia) == DAT_SUCCESS &&
               dat_pz_create(ia, &pz) == DAT_SUCCESS &&
               dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn) ==
                   DAT_SUCCESS &&
               dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr) == DAT_SUCCESS &&
               dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req) == DAT_SUCCESS &&
               dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &rcv) == DAT_SUCCESS &&
               dat_ep_create(ia, pz, rcv, req, conn, nullptr, &ep) == DAT_SUCCESS;
    }
    void close() {
        if (ia != DAT_HANDLE_NULL) dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
        ia = DAT_HANDLE_NULL;
    }
};

// The server: sends its connection qualifier, says "R" once the request has arrived, accepts
// when told "G", and reports how the accepted connection went: 'D' disconnected or 'B' broken
// within kEndWait, 'T' still up then, 'E' something else failed.
int server(int out, int in) {
    Side s;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    DAT_CONN_QUAL qual = 0;
    auto fail = [&] {
        char c = 'E';
        (void)!::write(out, &c, 1);
        s.close();
        return 1;
    };
    if (!s.open() ||
        dat_psp_create_any(s.ia, &qual, s.cr, DAT_PSP_CONSUMER_FLAG, &psp) != DAT_SUCCESS)
        return fail();
    if (::write(out, &qual, sizeof qual) != sizeof qual) return fail();
    DAT_EVENT e{};
    DAT_COUNT n = 0;
    if (dat_evd_wait(s.cr, kWait, 1, &e, &n) != DAT_SUCCESS ||
        e.event_number != DAT_CONNECTION_REQUEST_EVENT)
        return fail();
    if (::write(out, "R", 1) != 1) return fail();
    char go = 0;
    if (!read_full(in, &go, 1, 20000) || go != 'G') return fail();
    if (dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, s.ep, 0, nullptr) !=
            DAT_SUCCESS ||
        dat_evd_wait(s.conn, kWait, 1, &e, &n) != DAT_SUCCESS ||
        e.event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
        return fail();
    char verdict = 'T';
    if (dat_evd_wait(s.conn, kEndWait, 1, &e, &n) == DAT_SUCCESS) {
        verdict = e.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ? 'D'
                  : e.event_number == DAT_CONNECTION_EVENT_BROKEN     ? 'B'
                                                                      : 'E';
    }
    if (::write(out, &verdict, 1) != 1) return fail();
    dat_psp_free(psp);
    s.close();
    return 0;
}

TEST(DatUnclaimedRelease, EpFreedDuringShmConnectLeavesNoDescriptorOrSegment) {
    int up[2], down[2];  // server -> client, client -> server
    ASSERT_EQ(::pipe2(up, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(down, O_CLOEXEC), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        const int w = ::dup(up[1]);  // without O_CLOEXEC: they survive the exec
        const int r = ::dup(down[0]);
        const std::string v = std::to_string(w) + ":" + std::to_string(r);
        ::setenv(kServerEnv, v.c_str(), 1);
        ::execl("/proc/self/exe", "dat_unclaimed_release_tests", static_cast<char *>(nullptr));
        ::_exit(127);
    }
    ::close(up[1]);
    ::close(down[0]);
    struct Reap {
        pid_t pid;
        int in, out;
        ~Reap() {
            ::close(out);  // a server still waiting for "G" gives up
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            ::close(in);
        }
    } reap{child, up[0], down[1]};

    DAT_CONN_QUAL qual = 0;
    ASSERT_TRUE(read_full(up[0], &qual, sizeof qual, 20000)) << "the server did not start";
    Side cli;
    ASSERT_TRUE(cli.open());
    const auto before = open_fds();
    const int maps_before = shm_maps();

    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(dat_ep_connect(cli.ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&a), qual, kWait, 0,
                             nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
              DAT_SUCCESS);
    char ready = 0;
    ASSERT_TRUE(read_full(up[0], &ready, 1, 20000) && ready == 'R') << "no request at the server";
    // The connection is half set up (the server holds the request): the EP goes now, and
    // the Established that follows the accept finds nobody.
    ASSERT_EQ(dat_ep_free(cli.ep), DAT_SUCCESS);
    cli.ep = DAT_HANDLE_NULL;
    ASSERT_EQ(::write(down[1], "G", 1), 1);

    char verdict = 0;
    ASSERT_TRUE(read_full(up[0], &verdict, 1, 30000)) << "no verdict from the server";
    EXPECT_TRUE(verdict == 'D' || verdict == 'B')
        << "the peer's connection did not end (verdict " << verdict << ")";

    // Everything of that connection is gone in this process (bounded wait: the release
    // runs on the connection manager's thread).
    auto after = open_fds();
    int maps_after = shm_maps();
    for (auto deadline = std::chrono::steady_clock::now() + 5s;
         (after != before || maps_after != maps_before) &&
         std::chrono::steady_clock::now() < deadline;
         after = open_fds(), maps_after = shm_maps())
        std::this_thread::sleep_for(10ms);
    EXPECT_EQ(after, before) << "descriptors before:\n"
                             << describe(before) << "after:\n"
                             << describe(after);
    EXPECT_EQ(maps_after, maps_before) << "shm segment mappings left behind";
    cli.close();
}

}  // namespace

int main(int argc, char **argv) {
    // The registry reads DAT_OVERRIDE on its first call: point it at the provider's conf.
    if (!std::getenv("DAT_OVERRIDE")) ::setenv("DAT_OVERRIDE", DAPL_SOFTRNIC_CONF, 1);
    if (const char *v = std::getenv(kServerEnv)) {
        const std::string arg = v;  // "<write fd>:<read fd>"
        ::unsetenv(kServerEnv);
        const size_t colon = arg.find(':');
        if (colon == std::string::npos) return 2;
        return server(std::atoi(arg.c_str()), std::atoi(arg.c_str() + colon + 1));
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
