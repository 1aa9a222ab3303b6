// Helper process for the two-process shm tests (started by shm_process_test.cpp).
//
//   shm_peer serve <expect>       listen on 127.0.0.1:0 (shm only), print "port N"; accept
//                                 every connection with private data {va, rtag, len} of a
//                                 16 MiB remote-accessible region; echo every message
//                                 received; print "count N" once <expect> messages came
//                                 in; exit 0 on a zero-length message ("bye").
//   shm_peer client <port>        connect (shm only) and hammer the peer's region with
//                                 1 MiB writes and reads and 4 KiB sends until killed;
//                                 prints "running" once traffic flows.
//   shm_peer attack <port> <pid>  (started as root) drop to nobody, then try to reach the
//                                 listener and the peer's memory; exit 0 when every
//                                 attempt was refused.
//   shm_peer pingpong <rounds> <size>...
//                                 listen (shm only), print "port N"; accept one connection
//                                 whose private data names the initiator's region (PpRegion)
//                                 and answer with ours; then play the responder of <rounds>
//                                 memory-polled RDMA Write ping-pongs per size (shm_util.hpp:
//                                 poll the last byte, never the CQ, check every byte, write
//                                 back and poll the CQ for that write); print "pingpong ok"
//                                 or the first problem, and exit 0.
//
// SOFTRNIC_SHM_CMA=0 in the environment forces the bounce-buffer path, as documented.
#include <grp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <cstdio>
#include <deque>

#include "shm_util.hpp"

using namespace st;

namespace {

constexpr size_t kRegion = 16 << 20;
constexpr uint32_t kMsg = 64 << 10;

struct RegionInfo {
    uint64_t va;
    uint32_t rtag;
    uint32_t len;
};

void say(const std::string &s) {
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
}

cm::Options shm_only() {
    cm::Options o;
    o.transport = cm::Transport::Shm;
    return o;
}

// Established events handed from the CM thread to the main thread (which owns the RNIC).
class Inbox {
  public:
    void push(cm::Event e) {
        std::lock_guard lk(mu_);
        q_.push_back(std::move(e));
    }
    bool pop(cm::Event &e) {
        std::lock_guard lk(mu_);
        if (q_.empty()) return false;
        e = std::move(q_.front());
        q_.pop_front();
        return true;
    }

  private:
    std::mutex mu_;
    std::deque<cm::Event> q_;
};

int serve(long expect) {
    Buf region(kRegion), rx(size_t{kMsg} * 8192 / 16);
    Rnic r("serve");
    if (!r.ok()) return 2;
    Cq *scq = r.new_cq(16384), *rcq = r.new_cq(16384);
    Mr *mreg = r.reg(region, kAllRemote), *mrx = r.reg(rx, kLocalRW);
    RegionInfo info{region.va(), mreg->rtag, static_cast<uint32_t>(kRegion)};
    cm::ConnParams reply;
    reply.private_data.assign(reinterpret_cast<uint8_t *>(&info),
                              reinterpret_cast<uint8_t *>(&info) + sizeof info);
    Inbox inbox;
    cm::ConnectionManager *m = nullptr;
    cm::ConnectionManager mgr(
        [&](cm::Event &e) {
            if (auto *req = std::get_if<cm::ConnectRequest>(&e)) {
                m->accept(req->id, reply);
                return;
            }
            inbox.push(std::move(e));
        },
        shm_only());
    m = &mgr;
    cm::Address l = loopback4();
    auto lid = mgr.listen(l.get(), l.len, 1024);
    if (!lid.ok()) return 3;
    say("port " + std::to_string(port_of(mgr.local_address(lid.value).value)));
    // Receive buffers: a pool of kMsg slots shared by all QPs, reposted after each echo.
    const size_t slots = rx.size() / kMsg;
    size_t next_slot = 0;
    auto post_one = [&](Qp *q) {
        ri_data_seg_t s = sge(rx.data() + (next_slot % slots) * kMsg, kMsg, mrx->ltag);
        ++next_slot;
        return post_recv(q, reinterpret_cast<uintptr_t>(s.addr.vaddr), &s, 1);
    };
    const int per_qp = expect > 16 ? 2 : 32;
    long received = 0;
    for (;;) {
        cm::Event e;
        while (inbox.pop(e)) {
            auto *est = std::get_if<cm::Established>(&e);
            if (!est) continue;
            QpOpts o;
            o.scq = scq;
            o.rcq = rcq;
            o.sq = 256;
            o.rq = 256;
            Qp *q = r.new_qp(o);
            if (!q) return 4;
            for (int i = 0; i < per_qp; ++i)
                post_one(q);
            if (to_rts(q, est->llp) != RI_RET_SUCCESS) return 5;
        }
        ri_rc_wc_t wc{};
        if (poll_one(r, rcq, &wc, std::chrono::milliseconds(1))) {
            auto *q = static_cast<Qp *>(wc.qp_os_data);
            if (wc.op_status != RI_WC_STATUS_SUCCESS) continue;  // a peer went away
            if (wc.bytes_transferred == 0) {
                say("bye");
                return 0;
            }
            if (++received == expect) say("count " + std::to_string(received));
            // Echo from the receive buffer, then repost a receive.
            ri_data_seg_t s = sge(reinterpret_cast<void *>(wc.id), wc.bytes_transferred, mrx->ltag);
            post_send(q, RI_WR_TYPE_SEND, kSig, 1, &s, 1);
            post_one(q);
        }
        ri_rc_wc_t sw{};
        while (poll_one(r, scq, &sw, std::chrono::milliseconds(0))) {
        }
    }
}

int client(uint16_t port) {
    Buf src(kRegion), sink(kRegion), msg(4096);
    Rnic r("client");
    if (!r.ok()) return 2;
    QpOpts o;
    o.sq = 1024;
    o.scq = r.new_cq(4096);
    Qp *q = r.new_qp(o);
    src.fill(7);
    Mr *ms = r.reg(src, kLocalRW), *mk = r.reg(sink, kLocalRW), *mm = r.reg(msg, kLocalRW);
    Slot<cm::Established> est;
    cm::ConnectionManager mgr(
        [&](cm::Event &e) {
            if (auto *x = std::get_if<cm::Established>(&e)) est.set(std::move(*x));
        },
        shm_only());
    cm::Address dst = loopback4(port);
    if (!mgr.connect(dst.get(), dst.len, {}).ok()) return 3;
    auto e = est.wait();
    if (!e || e->private_data.size() != sizeof(RegionInfo)) return 4;
    RegionInfo info;
    std::memcpy(&info, e->private_data.data(), sizeof info);
    if (to_rts(q, e->llp) != RI_RET_SUCCESS) return 5;
    long done = 0, posted = 0, sends = 0;
    for (;;) {
        while (posted - done < 32) {
            uint64_t off = (posted % 16) * (1 << 20);
            ri_data_seg_t s = sge(src.data() + off, 1 << 20, ms->ltag);
            ri_data_seg_t k = sge(sink.data() + off, 1 << 20, mk->ltag);
            ri_data_seg_t m = sge(msg.data(), 4096, mm->ltag);
            ri_api_return_t rc;
            // At most 48 sends: the peer posts 64 receives and never reposts (iWARP has no
            // receiver-not-ready flow control; the application provisions receives).
            if (posted % 3 == 0 || sends >= 48) {
                rc = posted % 2 ? post_read(q, kSig, posted, &k, 1, info.va + off, info.rtag)
                                : post_write(q, kSig, posted, &s, 1, info.va + off, info.rtag);
            } else if (posted % 3 == 1) {
                rc = post_read(q, kSig, posted, &k, 1, info.va + off, info.rtag);
            } else {
                rc = post_send(q, RI_WR_TYPE_SEND, kSig, posted, &m, 1);
                ++sends;
            }
            if (rc != RI_RET_SUCCESS) return 6;
            ++posted;
        }
        ri_rc_wc_t wc{};
        if (poll_one(r, q->scq, &wc, std::chrono::milliseconds(100))) {
            if (wc.op_status != RI_WC_STATUS_SUCCESS) {
                say("wc id " + std::to_string(wc.id) + " status " + std::to_string(wc.op_status) +
                    " events " + r.rec.describe_events());
                return 7;
            }
            if (++done == 64) say("running");
        }
    }
}

int pingpong(uint32_t rounds, const std::vector<size_t> &sizes) {
    size_t max = 1;
    for (size_t l : sizes)
        max = std::max(max, l);
    Buf rx(max), tx(max);
    Rnic r("pingpong");
    if (!r.ok()) return 2;
    Qp *q = r.new_qp();
    if (!q) return 2;
    Mr *mrx = r.reg(rx, kAllRemote), *mtx = r.reg(tx, kLocalRW);
    PpRegion mine{rx.va(), mrx->rtag, static_cast<uint32_t>(max)};
    cm::ConnParams reply;
    reply.private_data.assign(reinterpret_cast<uint8_t *>(&mine),
                              reinterpret_cast<uint8_t *>(&mine) + sizeof mine);
    Slot<PpRegion> peer;
    Slot<cm::Established> est;
    cm::ConnectionManager *m = nullptr;
    cm::ConnectionManager mgr(
        [&](cm::Event &e) {
            if (auto *req = std::get_if<cm::ConnectRequest>(&e)) {
                PpRegion p{};
                if (req->private_data.size() != sizeof p) {
                    m->reject(req->id);
                    return;
                }
                std::memcpy(&p, req->private_data.data(), sizeof p);
                peer.set(p);
                m->accept(req->id, reply);
            } else if (auto *x = std::get_if<cm::Established>(&e)) {
                est.set(std::move(*x));
            }
        },
        shm_only());
    m = &mgr;
    cm::Address l = loopback4();
    auto lid = mgr.listen(l.get(), l.len, 1);
    if (!lid.ok()) return 3;
    say("port " + std::to_string(port_of(mgr.local_address(lid.value).value)));
    auto e = est.wait();
    auto p = peer.wait(std::chrono::milliseconds(1));
    if (!e || !p) return 4;
    if (to_rts(q, e->llp) != RI_RET_SUCCESS) return 5;
    std::string problem;
    for (size_t len : sizes) {
        if (len < 2 || len > p->len) return 6;
        for (uint32_t k = 1; k <= rounds; ++k) {
            auto at = [&] { return "size " + std::to_string(len) + " round " + std::to_string(k); };
            if (!pp_wait_last(rx.data(), len, pp_last(k))) {
                say("pingpong timeout waiting for the last byte, " + at());
                return 0;
            }
            size_t bad = pp_check(rx.data(), len, pp_fill(k));
            if (bad != SIZE_MAX && problem.empty())
                problem = "pingpong bad data at offset " + std::to_string(bad) + " of " + at();
            pp_prepare(tx.data(), len, static_cast<uint8_t>(~pp_fill(k)), pp_last(k));
            ri_data_seg_t s = sge(tx.data(), static_cast<uint32_t>(len), mtx->ltag);
            if (post_write(q, kSig, k, &s, 1, p->va, p->rtag) != RI_RET_SUCCESS) return 7;
            ri_rc_wc_t wc{};
            if (!poll_one(r, q->scq, &wc) || wc.op_status != RI_WC_STATUS_SUCCESS) {
                say("pingpong write did not complete, " + at());
                return 0;
            }
        }
    }
    say(problem.empty() ? "pingpong ok" : problem);
    return 0;
}

// Every attempt must fail; returns the number that did not.
int attack(uint16_t port, pid_t victim) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) return 100;
    if (::geteuid() != 65534) return 101;
    int bad = 0;
    // 1. Raw connect to the rendezvous: the listener closes at once, never sending a byte
    //    or a descriptor.
    shm::UnixName name;
    cm::Address a = loopback4(port);
    if (!shm::rendezvous_name(a.get(), false, name)) return 102;
    int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(s, reinterpret_cast<const sockaddr *>(&name.sa), name.len) == 0) {
        // Send a valid-looking MPA request; whatever we send, nothing must come back.
        const char junk[] = "MPA ID Req Frame";
        [[maybe_unused]] ssize_t w = ::send(s, junk, sizeof junk, MSG_NOSIGNAL);
        pollfd pf{s, POLLIN, 0};
        if (::poll(&pf, 1, 5000) == 1) {
            char buf[256];
            alignas(cmsghdr) char ctl[256];
            iovec iov{buf, sizeof buf};
            msghdr mh{};
            mh.msg_iov = &iov;
            mh.msg_iovlen = 1;
            mh.msg_control = ctl;
            mh.msg_controllen = sizeof ctl;
            ssize_t n = ::recvmsg(s, &mh, MSG_DONTWAIT);
            // EOF (0) or a reset (the listener closed with our bytes unread) is the
            // refusal; any byte or descriptor is a failure.
            if (n > 0 || (n == 0 && mh.msg_controllen > 0)) {
                say("raw connect got data or descriptors");
                ++bad;
            }
        } else {
            say("raw connect: listener did not close");
            ++bad;
        }
    }
    ::close(s);
    // 2. The connection manager, shm only: Unreachable (EACCES), never Established.
    Slot<std::string> outcome;
    {
        cm::ConnectionManager mgr(
            [&](cm::Event &e) {
                if (std::get_if<cm::Established>(&e)) outcome.set("established");
                if (auto *u = std::get_if<cm::Unreachable>(&e))
                    outcome.set("unreachable " + std::to_string(u->sys_errno));
                if (std::get_if<cm::Rejected>(&e)) outcome.set("rejected");
                if (std::get_if<cm::Failed>(&e)) outcome.set("failed");
            },
            shm_only());
        if (!mgr.connect(a.get(), a.len, {}).ok()) return 103;
        auto o = outcome.wait(std::chrono::seconds(10));
        say("cm: " + o.value_or("nothing"));
        if (!o || *o == "established") ++bad;
    }
    // 3. The victim's memory: no CMA, no /proc/<pid>/mem, maps or map_files.
    uint64_t v = 0;
    iovec l{&v, sizeof v}, r{reinterpret_cast<void *>(0x10000), sizeof v};
    if (::process_vm_readv(victim, &l, 1, &r, 1, 0) >= 0 || errno != EPERM) {
        say("process_vm_readv was allowed");
        ++bad;
    }
    for (const char *what : {"mem", "maps", "map_files"}) {
        std::string p = "/proc/" + std::to_string(victim) + "/" + what;
        int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (std::string(what) == "map_files") {
                if (DIR *d = ::fdopendir(fd)) {
                    int n = 0;
                    while (dirent *e = ::readdir(d))
                        if (e->d_name[0] != '.') ++n;
                    ::closedir(d);
                    if (n > 0) {
                        say(p + " listable");
                        ++bad;
                    }
                    continue;
                }
            }
            char c;
            if (::read(fd, &c, 1) > 0) {
                say(p + " readable");
                ++bad;
            }
            ::close(fd);
        }
    }
    return bad;
}

}  // namespace

int main(int argc, char **argv) {
    // Die with the parent (a crashed test must not leave helpers behind).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (argc >= 3 && std::string(argv[1]) == "serve") return serve(std::atol(argv[2]));
    if (argc >= 3 && std::string(argv[1]) == "client")
        return client(static_cast<uint16_t>(std::atoi(argv[2])));
    if (argc >= 4 && std::string(argv[1]) == "pingpong") {
        std::vector<size_t> sizes;
        for (int i = 3; i < argc; ++i)
            sizes.push_back(static_cast<size_t>(std::atoll(argv[i])));
        return pingpong(static_cast<uint32_t>(std::atol(argv[2])), sizes);
    }
    if (argc >= 4 && std::string(argv[1]) == "attack")
        return attack(static_cast<uint16_t>(std::atoi(argv[2])), std::atoi(argv[3]));
    std::fprintf(stderr,
                 "usage: shm_peer serve N | client PORT | attack PORT PID | pingpong ROUNDS "
                 "SIZE...\n");
    return 64;
}
