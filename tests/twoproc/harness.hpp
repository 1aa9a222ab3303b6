// Test-side harness of the two-process tests: starting the peer executable (fork + exec with
// an inherited control socket), bounded request/reply calls, an RAII guard that SIGKILLs and
// reaps the peer on every path, network namespaces for the connect-timeout test, and the
// fixture shared by the suites (one local RNIC + QP, one peer, the CM in between).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common.hpp"

namespace twoproc {

using namespace std::chrono_literals;

inline constexpr std::chrono::milliseconds kCallTimeout{30000};

struct Reply {
    bool ok = false;
    bool timed_out = false;
    std::string cmd;   // what was asked
    std::string text;  // the reply after the sequence number (or what went wrong)
    std::map<std::string, std::string> kv;

    bool has(const std::string &k) const { return kv.count(k) != 0; }
    std::string str(const std::string &k) const {
        auto it = kv.find(k);
        return it == kv.end() ? std::string() : it->second;
    }
    // Missing or malformed: the all-ones value (never a valid answer here).
    uint64_t u64(const std::string &k) const { return to_num<uint64_t>(str(k)).value_or(~0ull); }
    int64_t i64(const std::string &k) const { return to_num<int64_t>(str(k)).value_or(-1); }
};
std::ostream &operator<<(std::ostream &os, const Reply &r);

// One peer process. The destructor kills (SIGKILL) and reaps it if it is still there, so no
// test path leaves a process behind.
class PeerProcess {
  public:
    struct Options {
        std::string netns_path;  // join this network namespace before anything else
    };
    // Starts the peer and checks it answers a ping. nullptr (and *why) on failure.
    static std::unique_ptr<PeerProcess> spawn(const Options &o, std::string *why);
    ~PeerProcess();
    PeerProcess(const PeerProcess &) = delete;
    PeerProcess &operator=(const PeerProcess &) = delete;

    // Sends one request and waits at most `to` for its reply. Replies to earlier requests
    // that timed out are recognised by their sequence number and dropped.
    Reply call(const std::string &cmd, std::chrono::milliseconds to = kCallTimeout);
    // The same in two steps, to work while the peer does: send() returns the request's
    // sequence number (0 and *why on failure), wait() its reply.
    uint64_t send(const std::string &cmd, std::string *why);
    Reply wait(uint64_t seq, const std::string &cmd, std::chrono::milliseconds to = kCallTimeout);

    // Asks the peer to exit and waits (bounded) for it. Returns its exit status, 128 + signal
    // when it was killed by one, or -1 when it had to be killed because it did not exit.
    int exit_and_wait(std::chrono::milliseconds to = 20s);
    // The same in two steps (begin_exit returns the request's sequence number).
    uint64_t begin_exit();
    int finish_exit(uint64_t seq, std::chrono::milliseconds to = 20s);
    // SIGKILL now and reap. Returns false if the process was already gone.
    bool kill_now();
    // Waits (bounded) for the process to end on its own; true when reaped.
    bool wait_gone(std::chrono::milliseconds to, int *status = nullptr);

    pid_t pid() const { return pid_; }
    bool running() const { return pid_ > 0; }

  private:
    PeerProcess() = default;
    pid_t pid_ = -1;
    int ctl_ = -1;
    uint64_t seq_ = 0;
};

// Runs a command (argv[0] looked up in PATH) with a time limit; returns its exit status
// (-1: could not run or timed out, then killed). Output (stdout + stderr) goes to *out.
int run_command(const std::vector<std::string> &argv, std::chrono::milliseconds to,
                std::string *out = nullptr);

// A named network namespace (`ip netns add`) deleted by the destructor. Stale namespaces
// left by earlier runs that were killed (their creator's pid is gone) are removed first.
class NetNs {
  public:
    static std::unique_ptr<NetNs> create(std::string *why);
    ~NetNs();
    NetNs(const NetNs &) = delete;
    NetNs &operator=(const NetNs &) = delete;
    const std::string &name() const { return name_; }
    std::string path() const { return "/run/netns/" + name_; }
    // Runs `ip -n <name> <args...>`.
    bool ip(const std::vector<std::string> &args, std::string *why);

  private:
    NetNs() = default;
    std::string name_;
};

// Open descriptors of this process (/proc/self/fd), for leak checks.
int count_open_fds();

// CM events of the test process's connection manager, waited on by the test thread.
class CmLog {
  public:
    std::function<void(softrnic::cm::Event &)> react;
    softrnic::cm::Handler handler();
    template <class T>
    std::optional<T> take(softrnic::cm::ConnId id = 0, std::chrono::milliseconds to = 20s) {
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
    // Closes the sockets of Established events nobody claimed and forgets every event.
    void clear();
    ~CmLog() { clear(); }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<softrnic::cm::Event> events_;
};

struct Mode {
    int family;
    bool crc;
};
std::string mode_name(const ::testing::TestParamInfo<Mode> &i);
inline void PrintTo(const Mode &m, std::ostream *os) {
    *os << (m.family == AF_INET ? "127.0.0.1" : "::1") << (m.crc ? ", CRC on" : ", CRC off");
}
inline auto all_modes() {
    return ::testing::Values(Mode{AF_INET, true}, Mode{AF_INET, false}, Mode{AF_INET6, true},
                             Mode{AF_INET6, false});
}
bool have_family(int family);
inline const char *fam_token(int family) {
    return family == AF_INET ? "v4" : "v6";
}

// A peer buffer as the test sees it.
struct RemoteBuf {
    std::string id;
    uint64_t va = 0;
    ri_rtag_t rtag = 0;
    size_t len = 0;
};

// The fixture of the parameterised suites: one local RNIC with one QP (opened when first
// needed), the test's CM, and one peer. TearDown asks the peer to exit (its exit status must be 0:
// its own teardown checks passed), tears down the local side and checks that no descriptor leaked.
class TwoProcTest : public ::testing::TestWithParam<Mode> {
  protected:
    void SetUp() override;
    void TearDown() override;

    int family() const { return GetParam().family; }
    bool crc() const { return GetParam().crc; }

    // Opens the local RNIC instance and creates the QP (connect_to_peer/peer_connects do it;
    // tests that only exercise the CM never pay for an instance).
    void open_local();
    // Starts the peer if needed and opens both instances in parallel.
    void open_both();
    // Starts the peer (again, if one ran before). Fatal failure when it cannot.
    void start_peer(const PeerProcess::Options &o = {});
    Reply pc(const std::string &cmd, std::chrono::milliseconds to = kCallTimeout);

    // The peer listens, the test connects and both QPs go to RTS. Checks the private data
    // and CRC each side saw.
    void connect_to_peer(const std::string &req_pd = "twoproc initiator (test)",
                         const std::string &rep_pd = "twoproc responder (peer)", uint16_t port = 0);
    // The test listens and accepts, the peer connects; both QPs go to RTS.
    void peer_connects(const std::string &req_pd = "twoproc initiator (peer)",
                       const std::string &rep_pd = "twoproc responder (test)");

    // A guarded local buffer (kept past the RNIC: registrations must end first).
    rt::Buf &buf(size_t len, uint8_t fill = 0);
    // Allocates + registers a buffer in the peer.
    RemoteBuf peer_buf(const std::string &id, size_t len, unsigned access);

    // Local QP attribute query.
    ri_qp_attr_t local_query() { return rt::query(qp_); }

    std::vector<std::unique_ptr<rt::Buf>> bufs_;  // first: destroyed last
    std::unique_ptr<rt::Rnic> rnic_;
    rt::Qp *qp_ = nullptr;
    CmLog log_;
    std::unique_ptr<softrnic::cm::ConnectionManager> cm_;
    std::unique_ptr<PeerProcess> peer_;
    int fds_before_ = -1;
};

// ri_qp_modify(IDLE -> RTS) with an LLP handle.
ri_api_return_t to_rts(rt::Qp *q, ri_llp_stream_handle_t h);

}  // namespace twoproc
