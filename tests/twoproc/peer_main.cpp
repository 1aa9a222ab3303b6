// twoproc_peer: the far end of the two-process tests. It opens one software RNIC instance
// with one QP, uses the connection manager to listen or connect (TCP + MPA v2), registers
// buffers and obeys the test's commands on an inherited control socket (common.hpp has the
// protocol; the verbs are listed in dispatch()).
//
//   twoproc_peer --ctl FD [--netns PATH]
//
// --netns: join that network namespace (setns) before anything else, so every socket of
// this process lives there. The peer exits when the control socket closes, when it has
// been idle for kIdleExit, or when its parent dies (PR_SET_PDEATHSIG, set by the test
// before exec). Exit status: 0 after "exit" with a clean teardown, 1 when a teardown check
// failed, 2 on bad arguments, 3 on the idle timeout, 4 when the control socket failed.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>

#include "common.hpp"
#include "transport/tcp/tcp_channel.hpp"

using namespace rt;
using namespace twoproc;
namespace cm = softrnic::cm;
namespace tcp = softrnic::transport::tcp;

namespace {

constexpr std::chrono::seconds kIdleExit{180};

// "fill" and "check" touch buffers that the test process writes and reads with RDMA, placed
// here by this process's progress thread. What orders the two is a chain through the other
// process (our reply on the control socket, its post and completion, the wire), which
// ThreadSanitizer cannot see: the control socket was inherited, so TSan never learnt it is a
// socket, and it cannot follow another process anyway. Under TSan this thread's accesses in
// such a scope are ignored; the data checks themselves prove the ordering.
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
struct CrossProcessAccess {
    CrossProcessAccess() { __tsan_ignore_thread_begin(); }
    ~CrossProcessAccess() { __tsan_ignore_thread_end(); }
    CrossProcessAccess(const CrossProcessAccess &) = delete;
    CrossProcessAccess &operator=(const CrossProcessAccess &) = delete;
};
#else
struct CrossProcessAccess {};
#endif

// CM events, waited on by the command thread.
class Events {
  public:
    std::function<void(cm::Event &)> react;
    cm::Handler handler() {
        return [this](cm::Event &e) {
            if (react) react(e);
            std::lock_guard lk(mu_);
            q_.push_back(std::move(e));
            cv_.notify_all();
        };
    }
    // First event whose type is one of Ts..., as the variant.
    template <class... Ts>
    std::optional<cm::Event> take(std::chrono::milliseconds to) {
        std::unique_lock lk(mu_);
        std::optional<cm::Event> out;
        cv_.wait_for(lk, to, [&] {
            for (auto it = q_.begin(); it != q_.end(); ++it)
                if ((std::holds_alternative<Ts>(*it) || ...)) {
                    out = std::move(*it);
                    q_.erase(it);
                    return true;
                }
            return false;
        });
        return out;
    }
    ~Events() {
        for (auto &e : q_)
            if (auto *est = std::get_if<cm::Established>(&e)) cm::release_unclaimed(est->llp);
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<cm::Event> q_;
};

struct PeerBuf {
    std::unique_ptr<Buf> buf;
    Mr *mr = nullptr;
};

class Peer {
  public:
    explicit Peer(int ctl) : ctl_(ctl) {}

    // The RNIC and its QP are made on first use: opening an instance is the expensive part
    // of a peer's start (tests that only exercise the CM never need one).
    bool ensure_rnic() {
        if (rnic_) return qp_ != nullptr;
        rnic_ = std::make_unique<Rnic>("peer");
        if (!rnic_->ok()) return false;
        QpOpts o;
        o.sq = 256;
        o.rq = 256;
        o.scq = rnic_->new_cq(1024);
        o.rcq = rnic_->new_cq(1024);
        qp_ = rnic_->new_qp(o);
        return qp_ != nullptr;
    }

    int run() {
        std::vector<char> msg(kMaxCtlMessage + 1);
        for (;;) {
            pollfd pf{ctl_, POLLIN, 0};
            int pr = ::poll(&pf, 1, static_cast<int>(kIdleExit.count() * 1000));
            if (pr == 0) {
                std::fprintf(stderr, "[twoproc_peer %d] idle for %llds: exiting\n", ::getpid(),
                             static_cast<long long>(kIdleExit.count()));
                return 3;
            }
            if (pr < 0) {
                if (errno == EINTR) continue;
                return 4;
            }
            ssize_t n = ::recv(ctl_, msg.data(), kMaxCtlMessage, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return n == 0 ? 0 : 4;  // the test went away: nothing left to do
            std::string line(msg.data(), static_cast<size_t>(n));
            auto toks = split_ws(line);
            if (toks.size() < 2) continue;
            const std::string seq = toks[0];
            toks.erase(toks.begin());
            bool exit_now = false;
            std::string reply = dispatch(toks, exit_now);
            std::string out = seq + " " + reply;
            if (::send(ctl_, out.data(), out.size(), MSG_NOSIGNAL) < 0) return 4;
            if (exit_now) return teardown();
        }
    }

    bool torn_down() const { return torn_down_; }

    int teardown() {
        torn_down_ = true;
        stop_stream();
        {
            // The connect-request handler uses cm_ on the manager's thread, under
            // listen_mu_: detach the pointer under that lock (the handler then sees none),
            // and destroy the manager (joining its thread) outside it.
            std::unique_ptr<cm::ConnectionManager> gone;
            {
                std::lock_guard lk(listen_mu_);
                gone = std::move(cm_);
            }
        }  // no more events (the handler touches nothing below)
        events_.reset();
        if (rnic_) rnic_->teardown();  // QPs, MRs... (buffers outlive the registrations)
        rnic_.reset();
        bufs_.clear();
        return ::testing::UnitTest::GetInstance()->ad_hoc_test_result().Failed() ? 1 : 0;
    }

  private:
    static std::string ok(const std::string &kv = {}) { return kv.empty() ? "OK" : "OK " + kv; }
    static std::string err(const std::string &why) { return "ERR " + why; }

    Cq *cq_of(const std::string &s) { return s == "s" ? qp_->scq : s == "r" ? qp_->rcq : nullptr; }

    ri_api_return_t to_rts(ri_llp_stream_handle_t h) {
        ri_err_data_t e = 0;
        ri_qp_attr_t at{};
        at.state = RI_QP_STATE_READY_TO_SEND;
        at.qp_xport.qp_iwarp.llp_stream_handle = h;
        return ri_qp_modify(rnic_->rnic, qp_->h,
                            QM(RI_QP_ATTR_NEXT_STATE | RI_QP_ATTR_LLQ_STREAM_HANDLE), &at, &e);
    }

    bool ensure_cm() {
        if (cm_) return cm_->ok();
        events_ = std::make_unique<Events>();
        events_->react = [this](cm::Event &e) {
            auto *r = std::get_if<cm::ConnectRequest>(&e);
            if (!r) return;
            std::lock_guard lk(listen_mu_);
            if (!cm_) return;  // tearing down
            if (reject_) {
                cm_->reject(r->id, listen_pd_);
            } else {
                cm::ConnParams p;
                p.private_data = listen_pd_;
                p.crc = listen_crc_;
                cm_->accept(r->id, p);
            }
        };
        auto m = std::make_unique<cm::ConnectionManager>(events_->handler());
        std::lock_guard lk(listen_mu_);  // the handler reads cm_ under it
        cm_ = std::move(m);
        return cm_->ok();
    }

    std::string established(const cm::Established &e) {
        if (!ensure_rnic()) {
            cm::release_unclaimed(e.llp);
            return err("RNIC/QP set-up failed");
        }
        ri_api_return_t r = to_rts(e.llp);
        if (r != RI_RET_SUCCESS) {
            cm::release_unclaimed(e.llp);
            return err("ri_qp_modify(RTS) returned " + std::to_string(r));
        }
        return ok("event=established pd=" + to_hex(e.private_data) +
                  " crc=" + std::to_string(e.params.crc) + " ird=" + std::to_string(e.params.ird) +
                  " ord=" + std::to_string(e.params.ord) +
                  " initiator=" + std::to_string(e.initiator));
    }

    PeerBuf *buf_of(const std::string &id) {
        auto it = bufs_.find(id);
        return it == bufs_.end() ? nullptr : &it->second;
    }

    std::vector<ri_data_seg_t> sges(PeerBuf &b, const Layout &l) {
        std::vector<ri_data_seg_t> s;
        for (const Piece &p : l)
            s.push_back(sge(b.buf->data() + p.off, static_cast<uint32_t>(p.len), b.mr->ltag));
        return s;
    }

    void stop_stream() {
        stream_stop_.store(true);
        if (stream_.joinable()) stream_.join();
    }

    std::string dispatch(const std::vector<std::string> &t, bool &exit_now) {
        const std::string &v = t[0];
        static const char *const kNeedRnic[] = {"buf",    "recv",     "poll",  "empty",
                                                "event",  "events",   "qp",    "wait_state",
                                                "modify", "mr_state", "stream"};
        for (const char *k : kNeedRnic)
            if (v == k && !ensure_rnic()) return err("RNIC/QP set-up failed");
        auto n = [&](size_t i) -> std::optional<uint64_t> {
            return i < t.size() ? to_num<uint64_t>(t[i]) : std::nullopt;
        };
        auto ms = [&](size_t i) { return std::chrono::milliseconds(n(i).value_or(10000)); };

        if (v == "ping") return ok("pid=" + std::to_string(::getpid()));
        if (v == "open") return ensure_rnic() ? ok() : err("RNIC/QP set-up failed");

        if (v == "exit") {
            exit_now = true;
            return ok();
        }

        if (v == "hang") {
            // Never answers: the test's bounded wait and kill path are what is exercised.
            for (;;)
                ::pause();
        }

        // listen <v4|v6> <port> <crc 0|1> <pd hex> <accept|reject>
        if (v == "listen") {
            if (t.size() < 6) return err("usage");
            auto port = n(2);
            auto pd = from_hex(t[4]);
            if (!port || !pd) return err("bad arguments");
            auto addr = parse_address(t[1], static_cast<uint16_t>(*port));
            if (!addr) return err("bad address");
            if (!ensure_cm()) return err("connection manager failed to start");
            {
                std::lock_guard lk(listen_mu_);
                listen_pd_ = *pd;
                listen_crc_ = t[3] == "1";
                reject_ = t[5] == "reject";
            }
            auto l = cm_->listen(addr->get(), addr->len, 16);
            if (!l.ok())
                return err(std::string("listen: ") + cm::to_string(l.status) + " errno " +
                           std::to_string(l.sys_errno));
            listener_ = l.value;
            auto la = cm_->local_address(l.value);
            if (!la.ok()) return err("local_address failed");
            return ok("port=" + std::to_string(port_of(la.value)));
        }

        if (v == "stop_listen") {
            if (!cm_ || listener_ == 0) return err("not listening");
            auto s = cm_->stop_listen(listener_);
            listener_ = 0;
            return s == cm::CmStatus::Ok ? ok() : err(cm::to_string(s));
        }

        // wait_conn <timeout ms>: the responder's Established (then RTS) or its failure.
        if (v == "wait_conn") {
            if (!events_) return err("not listening");
            auto e = events_->take<cm::Established, cm::Failed>(ms(1));
            if (!e) return err("timeout");
            if (auto *est = std::get_if<cm::Established>(&*e)) return established(*est);
            auto &f = std::get<cm::Failed>(*e);
            return ok("event=failed errno=" + std::to_string(f.sys_errno) + " wire=" +
                      std::to_string(f.protocol_code) + " reason=" + cm::to_string(f.reason));
        }

        // connect <v4|v6|literal> <port> <crc 0|1> <pd hex> <timeout ms>
        if (v == "connect") {
            if (t.size() < 6) return err("usage");
            auto port = n(2);
            auto pd = from_hex(t[4]);
            auto to = n(5);
            if (!port || !pd || !to) return err("bad arguments");
            auto addr = parse_address(t[1], static_cast<uint16_t>(*port));
            if (!addr) return err("bad address");
            if (!ensure_cm()) return err("connection manager failed to start");
            cm::ConnParams p;
            p.private_data = *pd;
            p.crc = t[3] == "1";
            p.timeout = std::chrono::milliseconds(*to);
            auto t0 = Clock::now();
            auto c = cm_->connect(addr->get(), addr->len, p);
            if (!c.ok())
                return err(std::string("connect: ") + cm::to_string(c.status) + " errno " +
                           std::to_string(c.sys_errno));
            // Every outcome is an event; the CM's own timeout bounds it, plus a margin.
            auto e = events_->take<cm::Established, cm::Rejected, cm::Unreachable, cm::TimedOut,
                                   cm::Failed>(std::chrono::milliseconds(*to + 10000));
            auto elapsed =
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
            if (!e) return err("no outcome within the connect timeout + 10 s");
            const std::string el = " ms=" + std::to_string(elapsed);
            if (auto *est = std::get_if<cm::Established>(&*e)) return established(*est);
            if (auto *r = std::get_if<cm::Rejected>(&*e))
                return ok("event=rejected pd=" + to_hex(r->private_data) + el);
            if (auto *u = std::get_if<cm::Unreachable>(&*e))
                return ok("event=unreachable errno=" + std::to_string(u->sys_errno) + el);
            if (std::holds_alternative<cm::TimedOut>(*e)) return ok("event=timedout" + el);
            auto &f = std::get<cm::Failed>(*e);
            return ok("event=failed errno=" + std::to_string(f.sys_errno) + " wire=" +
                      std::to_string(f.protocol_code) + " reason=" + cm::to_string(f.reason) + el);
        }

        // buf <id> <len> <access flags>: (re)allocates a guarded buffer and registers it.
        if (v == "buf") {
            auto len = n(2);
            auto acc = n(3);
            if (t.size() < 4 || !len || !acc || *len > (size_t{64} << 20)) return err("usage");
            if (auto *old = buf_of(t[1])) {
                if (old->mr && rnic_->destroy(old->mr) != RI_RET_SUCCESS)
                    return err("ri_mr_dereg of the previous buffer failed");
                bufs_.erase(t[1]);
            }
            PeerBuf b;
            b.buf = std::make_unique<Buf>(*len, 0);
            b.mr =
                rnic_->reg(b.buf->data(), std::max<uint64_t>(*len, 1), static_cast<unsigned>(*acc));
            if (!b.mr) return err("ri_mr_reg failed");
            std::string r = "va=" + std::to_string(b.buf->va()) +
                            " ltag=" + std::to_string(b.mr->ltag) +
                            " rtag=" + std::to_string(b.mr->rtag);
            bufs_.emplace(t[1], std::move(b));
            return ok(r);
        }

        // fill|check <id> <seed> <gap byte or -1> <layout...>
        if (v == "fill" || v == "check") {
            PeerBuf *b = buf_of(t.size() > 1 ? t[1] : "");
            auto seed = n(2);
            // -2: missing (a plain int: gcc 12 sees a false maybe-uninitialized in optional)
            const int gap = t.size() > 3 ? to_num<int>(t[3]).value_or(-2) : -2;
            auto l = parse_layout(t, 4);
            if (!b || !seed || gap < -1 || gap > 255 || !l) return err("usage");
            if (!layout_fits(*l, b->buf->size())) return err("layout outside the buffer");
            [[maybe_unused]] CrossProcessAccess unordered_for_tsan;
            if (v == "fill") {
                fill_layout(b->buf->data(), b->buf->size(), *l, *seed, gap);
                return ok();
            }
            std::string e = check_layout(b->buf->data(), b->buf->size(), *l, *seed, gap);
            if (!e.empty()) return err(e);
            if (!b->buf->guards_intact()) return err("guard bytes around the buffer changed");
            return ok();
        }

        // recv <id> <wr id> <layout...>: posts one receive.
        if (v == "recv") {
            PeerBuf *b = buf_of(t.size() > 1 ? t[1] : "");
            auto wrid = n(2);
            auto l = parse_layout(t, 3);
            if (!b || !wrid || !l || !layout_fits(*l, b->buf->size())) return err("usage");
            auto s = sges(*b, *l);
            ri_api_return_t r = post_recv(qp_, *wrid, s.data(), static_cast<uint_t>(s.size()));
            return r == RI_RET_SUCCESS ? ok() : err("ri_qp_postrq returned " + std::to_string(r));
        }

        // poll <s|r> <timeout ms>
        if (v == "poll") {
            Cq *c = cq_of(t.size() > 1 ? t[1] : "");
            if (!c) return err("usage");
            ri_rc_wc_t wc{};
            if (!poll_one(*rnic_, c, &wc, ms(2))) return err("timeout");
            return ok("id=" + std::to_string(wc.id) + " status=" + std::to_string(wc.op_status) +
                      " type=" + std::to_string(wc.op_type) + " len=" +
                      std::to_string(wc.bytes_transferred) + " flags=" + std::to_string(wc.flags) +
                      " inv=" + std::to_string(wc.invalidated_rtag) +
                      " qp=" + std::to_string(wc.qp_os_data == qp_->os()) +
                      " cq=" + std::to_string(wc.cq_os_data == c->os()));
        }

        // empty <s|r>: 1 when no completion is queued right now.
        if (v == "empty") {
            Cq *c = cq_of(t.size() > 1 ? t[1] : "");
            if (!c) return err("usage");
            ri_wc_t wc;
            std::memset(&wc, 0, sizeof wc);
            uint_t k = 1;
            ri_api_return_t r = poll_raw(*rnic_, c, &wc, &k);
            if (r == RI_RET_SUCCESS && k == 1)
                return ok("empty=0 id=" + std::to_string(wc.rc_wc.id) +
                          " status=" + std::to_string(wc.rc_wc.op_status));
            return r == RI_RET_CQ_EMPTY ? ok("empty=1")
                                        : err("ri_cq_poll returned " + std::to_string(r));
        }

        // event <type> <timeout ms>: waits for an async event on the QP.
        if (v == "event") {
            auto ty = n(1);
            if (!ty) return err("usage");
            auto type = static_cast<ri_async_event_type_t>(*ty);
            if (wait_event(*rnic_, type, qp_->os(), ms(2))) return ok();
            return err("not seen; events: " + rnic_->rec.describe_events());
        }
        if (v == "events") {
            rnic_->drain();
            std::string s;
            for (auto &e : rnic_->rec.events())
                s += (s.empty() ? "" : ",") + std::to_string(e.type) +
                     (e.os_data == qp_->os() ? "" : "@other");
            return ok("list=" + (s.empty() ? std::string("-") : s));
        }

        // qp: state and the recorded Terminate.
        if (v == "qp") {
            ri_qp_attr_t a{};
            ri_err_data_t e = 0;
            ri_api_return_t r = ri_qp_query(rnic_->rnic, qp_->h, &a, &e);
            if (r != RI_RET_SUCCESS) return err("ri_qp_query returned " + std::to_string(r));
            const auto &iw = a.qp_xport.qp_iwarp;
            auto b = [&](int i) {
                return std::to_string(static_cast<uint8_t>(iw.terminate_buffer[i]));
            };
            return ok("state=" + std::to_string(a.state) +
                      " tlen=" + std::to_string(iw.terminate_msg_length) + " tlocal=" +
                      std::to_string(iw.is_terminate_local) + " t0=" + b(0) + " t1=" + b(1));
        }
        if (v == "wait_state") {
            auto st = n(1);
            if (!st) return err("usage");
            if (wait_state(qp_, static_cast<ri_qp_state_t>(*st), ms(2))) return ok();
            return err("state is " + std::to_string(state_of(qp_)));
        }
        if (v == "modify") {
            auto st = n(1);
            if (!st) return err("usage");
            return ok("ret=" + std::to_string(modify_state(qp_, static_cast<ri_qp_state_t>(*st))));
        }
        if (v == "mr_state") {
            PeerBuf *b = buf_of(t.size() > 1 ? t[1] : "");
            if (!b) return err("usage");
            ri_mr_info_t info{};
            ri_api_return_t r = ri_mr_query(rnic_->rnic, b->mr->h, &info, &rnic_->err);
            if (r != RI_RET_SUCCESS) return err("ri_mr_query returned " + std::to_string(r));
            return ok("state=" + std::to_string(info.stag_state));
        }

        // stream <id> <len> <raddr> <rtag>: a thread keeps RDMA Writes of `len` bytes from
        // buffer <id> to the remote range in flight until the QP fails or the process dies.
        if (v == "stream") {
            PeerBuf *b = buf_of(t.size() > 1 ? t[1] : "");
            auto len = n(2);
            auto raddr = n(3);
            auto rtag = n(4);
            if (!b || !len || !raddr || !rtag || *len > b->buf->size()) return err("usage");
            stop_stream();
            stream_stop_.store(false);
            stream_posted_.store(0);
            ri_data_seg_t s = sge(b->buf->data(), static_cast<uint32_t>(*len), b->mr->ltag);
            stream_ = std::thread([this, s, raddr = *raddr, rtag = *rtag]() mutable {
                uint64_t id = 0, inflight = 0;
                while (!stream_stop_.load()) {
                    while (inflight < 32) {
                        if (post_write(qp_, kSig, ++id, &s, 1, raddr,
                                       static_cast<ri_rtag_t>(rtag)) != RI_RET_SUCCESS)
                            return;
                        ++inflight;
                        stream_posted_.fetch_add(1);
                    }
                    ri_wc_t wc;
                    std::memset(&wc, 0, sizeof wc);
                    uint_t k = 1;
                    if (poll_raw(*rnic_, qp_->scq, &wc, &k) == RI_RET_SUCCESS && k == 1) {
                        --inflight;
                        if (wc.rc_wc.op_status != RI_WC_STATUS_SUCCESS) return;
                    } else {
                        std::this_thread::yield();
                    }
                }
            });
            // Answer once the stream is really flowing.
            auto deadline = Clock::now() + std::chrono::seconds(10);
            while (stream_posted_.load() < 64 && Clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            uint64_t p = stream_posted_.load();
            if (p < 64) {
                stop_stream();
                return err("stream did not get going: " + std::to_string(p) + " writes posted");
            }
            return ok("posted=" + std::to_string(p));
        }

        return err("unknown verb " + v);
    }

    int ctl_;
    bool torn_down_ = false;
    // Buffers first: they outlive the registrations in rnic_ (destroyed in reverse order).
    std::map<std::string, PeerBuf> bufs_;
    std::unique_ptr<Rnic> rnic_;
    Qp *qp_ = nullptr;
    std::unique_ptr<Events> events_;
    std::unique_ptr<cm::ConnectionManager> cm_;
    cm::ConnId listener_ = 0;
    std::mutex listen_mu_;
    std::vector<uint8_t> listen_pd_;
    bool listen_crc_ = false;
    bool reject_ = false;
    std::thread stream_;
    std::atomic<bool> stream_stop_{false};
    std::atomic<uint64_t> stream_posted_{0};
};

}  // namespace

int main(int argc, char **argv) {
    int ctl = -1;
    const char *netns = nullptr;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--ctl") ctl = to_num<int>(argv[i + 1]).value_or(-1);
        if (a == "--netns") netns = argv[i + 1];
    }
    if (ctl < 0 || ::fcntl(ctl, F_GETFD) < 0) {
        std::fprintf(stderr, "usage: twoproc_peer --ctl FD [--netns PATH]\n");
        return 2;
    }
    ::fcntl(ctl, F_SETFD, FD_CLOEXEC);
    // Belt and braces with the parent's PR_SET_PDEATHSIG: never outlive the test.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (netns) {
        // Before any thread exists: threads created later inherit the namespace.
        int fd = ::open(netns, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
            std::string e = "0 ERR setns(" + std::string(netns) + "): " + std::strerror(errno);
            ::send(ctl, e.data(), e.size(), MSG_NOSIGNAL);
            return 2;
        }
        ::close(fd);
    }
    Peer p(ctl);
    int rc = p.run();  // "exit" tears down and returns its verdict
    if (!p.torn_down()) p.teardown();
    return rc;
}
