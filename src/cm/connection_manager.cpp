#include "cm/connection_manager.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <utility>

#include "transport/llp_registry.hpp"
#include "transport/shm/shm.hpp"
#include "transport/tcp/tcp_channel.hpp"
#include "transport/tcp/wire/ddp_rdmap.hpp"
#include "transport/tcp/wire/fpdu.hpp"
#include "transport/tcp/wire/mpa.hpp"

namespace softrnic::cm {

namespace w = transport::tcp::wire;
namespace tcp = transport::tcp;
namespace shm = transport::shm;
using Clock = std::chrono::steady_clock;

const char *to_string(LlpTransport t) {
    return t == LlpTransport::Shm ? "shm" : "tcp";
}

bool release_unclaimed(ri_llp_stream_handle_t h) {
    return transport::llp::release(h);
}

const char *to_string(FailReason r) {
    switch (r) {
        case FailReason::None:
            return "None";
        case FailReason::Malformed:
            return "Malformed";
        case FailReason::Unsupported:
            return "Unsupported";
        case FailReason::Incompatible:
            return "Incompatible";
        case FailReason::NoReadyToReceive:
            return "NoReadyToReceive";
    }
    return "?";
}

const char *to_string(CmStatus s) {
    switch (s) {
        case CmStatus::Ok:
            return "Ok";
        case CmStatus::InvalidArgument:
            return "InvalidArgument";
        case CmStatus::UnknownId:
            return "UnknownId";
        case CmStatus::WrongState:
            return "WrongState";
        case CmStatus::SystemError:
            return "SystemError";
        case CmStatus::Stopped:
            return "Stopped";
    }
    return "?";
}

namespace {

// Hand-over keys are process-wide: a deferred message is sent only to the stream it was
// made for, even when its descriptor was closed and reused by another manager meanwhile.
uint64_t next_handover_key() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
}

void send_handover(ri_llp_stream_handle_t llp, LlpTransport t, uint64_t key) {
    if (t == LlpTransport::Shm)
        shm::send_deferred_hello(llp, key);
    else
        tcp::send_preamble(llp, key);
}

// Owns one descriptor; closes it unless released.
class Fd {
  public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd &operator=(Fd &&o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    ~Fd() { reset(); }
    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }
    void reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

  private:
    int fd_ = -1;
};

bool valid_address(const sockaddr *a, socklen_t len) {
    if (a == nullptr) return false;
    if (a->sa_family == AF_INET) return len >= sizeof(sockaddr_in);
    if (a->sa_family == AF_INET6) return len >= sizeof(sockaddr_in6);
    return false;
}

Address copy_address(const sockaddr *a, socklen_t len) {
    Address out;
    out.len = std::min<socklen_t>(len, sizeof out.storage);
    std::memcpy(&out.storage, a, out.len);
    return out;
}

bool valid_params(const ConnParams &p) {
    return p.private_data.size() <= kMaxPrivateData && p.ird <= w::kIrdOrdMax &&
           p.ord <= w::kIrdOrdMax && p.timeout.count() >= 0;
}

w::MpaConfig config_of(const ConnParams &p) {
    w::MpaConfig c;
    c.rev = 2;
    c.want_crc = p.crc;
    c.p2p = p.p2p;
    c.offer_write = true;  // the one RTR that costs the channel nothing (no MSN used)
    c.offer_read = false;
    c.offer_send = false;
    c.ird = c.max_ird = p.ird;
    c.ord = c.max_ord = p.ord;
    return c;
}

// A listener's address as the ConnectRequest of an shm connection reports the peer: the
// same family, the listener's address (loopback for a wildcard listener), port 0 (the
// initiator has no TCP port).
Address shm_peer_address(const Address &listener) {
    Address a = listener;
    if (a.storage.ss_family == AF_INET) {
        auto *s = reinterpret_cast<sockaddr_in *>(&a.storage);
        if (shm::is_any_address(a.get())) s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        s->sin_port = 0;
    } else if (a.storage.ss_family == AF_INET6) {
        auto *s = reinterpret_cast<sockaddr_in6 *>(&a.storage);
        if (shm::is_any_address(a.get())) s->sin6_addr = in6addr_loopback;
        s->sin6_port = 0;
    }
    return a;
}

// Connects to the shm rendezvous of `addr`: the listener bound to exactly that address,
// else (when the address is one of ours) a wildcard listener on the port. Returns a
// connected Unix socket run by our user, or -1 with `err` (ECONNREFUSED: nobody there,
// EACCES: another user's listener).
int connect_unix(const sockaddr *addr, int &err) {
    err = ECONNREFUSED;
    for (int pass = 0; pass < 2; ++pass) {
        bool wildcard = pass == 1;
        if (wildcard && (shm::is_any_address(addr) || !shm::is_local_address(addr))) break;
        shm::UnixName name;
        if (!shm::rendezvous_name(addr, wildcard, name)) continue;
        Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (fd.get() < 0) {
            err = errno;
            return -1;
        }
        int rc = -1;
        // A full backlog answers EAGAIN (non-blocking): the event thread accepts quickly,
        // so retry briefly rather than give up on shm.
        for (int attempt = 0; attempt < 200; ++attempt) {
            rc = ::connect(fd.get(), reinterpret_cast<const sockaddr *>(&name.sa), name.len);
            if (rc == 0 || (errno != EAGAIN && errno != EINTR)) break;
            std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
        if (rc != 0) {
            if (errno != ECONNREFUSED && errno != ENOENT) err = errno;
            continue;
        }
        // Abstract names have no permissions: anyone may bind one. Only a listener run by
        // our own user gets our segments.
        if (!shm::same_user(fd.get())) {
            err = EACCES;
            continue;
        }
        return fd.release();
    }
    return -1;
}

static_assert(kMaxPrivateData == w::kMpaMaxPrivateData - w::kMpaIrdOrdLen,
              "ConnParams::private_data must fit MPA's PD_Length beside the IRD/ORD block");

NegotiatedParams negotiated_of(const w::MpaResult &r, const ConnParams &p, bool initiator) {
    NegotiatedParams s;
    s.crc = r.crc;
    s.ird = r.ird;
    s.ord = r.ord;
    s.rfc7306 = p.rfc7306;
    // A Read RTR consumed Read Request MSN 1 before the channel took over.
    s.reads_consumed = r.p2p && r.rtr == w::Rtr::Read ? 1 : 0;
    // Responder, Write RTR: the channel consumes it (the QP is usable once the Reply is out).
    s.await_ready = !initiator && r.p2p && r.rtr == w::Rtr::Write;
    return s;
}

// The TCP channel's view of the same negotiation (its first inbound Read Request MSN, the
// RTR it still has to consume).
tcp::StreamParams stream_params_of(const NegotiatedParams &n) {
    tcp::StreamParams s;
    s.crc = n.crc;
    s.ird = n.ird;
    s.ord = n.ord;
    s.rfc7306 = n.rfc7306;
    s.rx_read_msn_base = 1 + n.reads_consumed;
    s.await_rtr = n.await_ready;
    return s;
}

// The neutral reason a wire status stands for.
FailReason reason_of(w::Status s) {
    switch (s) {
        case w::Status::Ok:
            return FailReason::None;
        case w::Status::MpaMarkersRequested:
            return FailReason::Unsupported;
        case w::Status::MpaNotEnhanced:
        case w::Status::MpaInsufficientIrd:
            return FailReason::Incompatible;
        case w::Status::MpaNoMatchingRtr:
            return FailReason::NoReadyToReceive;
        default:
            return FailReason::Malformed;
    }
}

Failed failed_of(ConnId id, w::Status s, int err) {
    return Failed{id, reason_of(s), static_cast<uint16_t>(s), err};
}

// The RTR FPDU for `r` (initiator, Write RTR only: we offer nothing else), or the
// zero-length Read Response answering a Read RTR (responder). Returns its length.
size_t build_rtr_fpdu(bool crc, bool read_response, std::span<uint8_t> out) {
    w::DdpHeader h{};
    h.opcode = read_response ? w::Opcode::ReadResponse : w::Opcode::RdmaWrite;
    h.last = true;
    h.stag = read_response ? 0 : 1;  // dummy STag, never validated (brief 2.4, as siw)
    h.to = 0;
    uint8_t hdr[w::kMaxHeaderLen];
    size_t hl = w::encode_ddp_header(h, hdr);
    w::FpduFrame f;
    if (hl == 0 || w::build_fpdu_frame({hdr, hl}, {}, crc, f) != w::Status::Ok) return 0;
    if (out.size() < f.total()) return 0;
    std::memcpy(out.data(), f.prefix.data(), f.prefix_len);
    std::memcpy(out.data() + f.prefix_len, f.trailer.data(), f.trailer_len);
    return f.total();
}

// Bytes of the RTR FPDU the responder waits for: a zero-length tagged Write (14-byte
// header) or Read Request (18 + 28), plus the 2-byte length, pad and the CRC field (sent
// as zero when CRC is off, RFC 5044 4.1).
size_t rtr_fpdu_len(w::Rtr rtr) {
    size_t ulpdu =
        rtr == w::Rtr::Read ? w::kUntaggedHeaderLen + w::kReadRequestBodyLen : w::kTaggedHeaderLen;
    size_t framed = 2 + ulpdu;
    framed = (framed + 3) & ~size_t{3};
    return framed + 4;
}

}  // namespace

struct ConnectionManager::Impl {
    enum class State : uint8_t {
        Connecting,    // initiator: TCP connect in progress
        SendRequest,   // initiator: Request partly written
        AwaitReply,    // initiator
        AwaitRequest,  // responder: TCP accepted, Request not complete yet
        AwaitUlp,      // responder: ConnectRequest delivered, waiting for accept/reject
        SendReply,     // responder: Reply (accept or reject) partly written
        SendRtr,       // initiator: the RTR FPDU partly written
        AwaitRtr,      // responder: Reply sent in P2P mode, waiting for the initiator's RTR
        SendRtrReply,  // responder: zero-length Read Response to a Read RTR partly written
        ShmHello,      // shm: MPA done, waiting for the peer's hello (segment, CMA probe)
    };
    struct Conn {
        ConnId id = 0;
        ConnId listener = 0;  // responder: where it arrived
        bool initiator = false;
        State state = State::Connecting;
        Fd fd;
        Address peer;
        Clock::time_point deadline = Clock::time_point::max();
        w::MpaParser parser{w::MpaKind::Request};
        // The Request we sent (initiator) and its private data, which the frame points to.
        ConnParams params;
        w::MpaFrame request{};
        std::array<uint8_t, w::kMpaMaxFrame> out{};
        size_t out_len = 0, out_off = 0;
        bool close_after_send = false;  // reject / refusal: close once the Reply is out
        w::MpaResult result{};          // what the exchange negotiated
        bool ulp_knows = false;         // ConnectRequest delivered: report a failure
        uint32_t armed = 0;             // epoll interest currently registered
        bool shm = false;               // over the Unix rendezvous socket
        std::unique_ptr<shm::Handshake> hs;
        std::vector<uint8_t> peer_pd;  // shm: the peer's private data, kept for Established
    };
    struct Listener {
        Fd fd;
        Fd unix_fd;          // shm rendezvous (may be absent)
        ConnId unix_id = 0;  // its epoll id
        Address addr;
    };

    Handler handler;
    Options opts;
    Transport mode = Transport::Auto;
    std::unordered_map<ConnId, ConnId> unix_listeners;  // unix_id -> listener
    Fd ep, wake;
    std::thread thread;
    std::atomic<bool> stop{false};

    mutable std::mutex mu;  // guards everything below
    ConnId next_id = 1;
    std::unordered_map<ConnId, Listener> listeners;
    std::unordered_map<ConnId, std::unique_ptr<Conn>> conns;
    std::vector<Event> pending;  // delivered by the event thread, outside `mu`

    void poke() {
        uint64_t one = 1;
        // A full counter (never in practice) still leaves the fd readable: ignore.
        [[maybe_unused]] ssize_t r = ::write(wake.get(), &one, sizeof one);
    }

    bool arm(Conn &c, uint32_t events, bool add) {
        epoll_event ev{};
        ev.events = events;
        ev.data.u64 = c.id;
        if (::epoll_ctl(ep.get(), add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c.fd.get(), &ev) != 0)
            return false;
        c.armed = events;
        return true;
    }

    // Ends a connection the manager still owns; reports it when someone is waiting for it.
    template <class Ev>
    void finish(Conn &c, Ev ev, bool report) {
        ::epoll_ctl(ep.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
        if (report) pending.emplace_back(std::move(ev));
        conns.erase(c.id);  // closes the fd; `c` is gone
    }
    void fail(Conn &c, w::Status ws, int err) {
        if (c.close_after_send) {
            // Closing with unread input makes the kernel send RST, which can destroy the
            // refusal Reply in flight: half-close, then discard what the peer sent.
            ::shutdown(c.fd.get(), SHUT_WR);
            std::array<uint8_t, 1024> sink;
            for (int i = 0; i < 64; ++i)
                if (::recv(c.fd.get(), sink.data(), sink.size(), MSG_DONTWAIT) <= 0) break;
        }
        bool report = c.initiator || c.ulp_knows;
        finish(c, failed_of(c.id, ws, err), report);
    }

    // MPA is done on an shm connection: send our hello, then wait for the peer's.
    void start_hello(Conn &c, const w::MpaResult &r, std::span<const uint8_t> peer_pd) {
        c.result = r;
        c.peer_pd.assign(peer_pd.begin(), peer_pd.end());
        c.hs = std::make_unique<shm::Handshake>();
        // The responder's hello is its last handshake message: deferred like the TCP
        // Reply (Established::handover_key), it follows the initiator's.
        if (!c.hs->start(c.fd.get(), opts.shm_cma, /*defer_hello=*/!c.initiator)) {
            fail(c, w::Status::Ok, errno);
            return;
        }
        c.state = State::ShmHello;
        if (!c.initiator && opts.request_timeout.count() > 0)
            c.deadline = Clock::now() + opts.request_timeout;
        if (!arm(c, EPOLLIN, false)) fail(c, w::Status::Ok, errno);
    }

    void on_hello(Conn &c) {
        switch (c.hs->receive(c.fd.get())) {
            case shm::Handshake::Step::NeedMore:
                return;
            case shm::Handshake::Step::Failed:
                fail(c, w::Status::Ok, errno ? errno : EPROTO);
                return;
            case shm::Handshake::Step::Done:
                break;
        }
        ::epoll_ctl(ep.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
        Established e;
        e.id = c.id;
        e.initiator = c.initiator;
        e.private_data = std::move(c.peer_pd);
        e.params = negotiated_of(c.result, c.params, c.initiator);
        e.peer = c.peer;
        e.transport = LlpTransport::Shm;
        e.shm_cma = c.hs->cma();
        if (!c.initiator) e.handover_key = next_handover_key();
        e.llp = c.hs->adopt(c.fd.get(), e.handover_key);
        if (e.llp < 0) {
            fail(c, w::Status::Ok, EBADF);
            return;
        }
        c.fd.release();  // the transport owns it now (and the consumer the handle)
        pending.emplace_back(std::move(e));
        conns.erase(c.id);
    }

    // Hands the socket to the TCP transport and reports Established. `preamble`: the
    // responder's Reply, deferred (Established::handover_key): the claiming channel or
    // the event thread, once the handler returned, sends it.
    void establish(Conn &c, const w::MpaResult &r, std::span<const uint8_t> peer_pd,
                   std::span<const uint8_t> preamble = {}) {
        if (c.shm) {
            start_hello(c, r, peer_pd);
            return;
        }
        ::epoll_ctl(ep.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
        Established e;
        e.id = c.id;
        e.initiator = c.initiator;
        e.private_data.assign(peer_pd.begin(), peer_pd.end());
        e.params = negotiated_of(r, c.params, c.initiator);
        tcp::StreamParams sp = stream_params_of(e.params);
        if (!preamble.empty()) {
            sp.preamble.assign(preamble.begin(), preamble.end());
            sp.preamble_key = e.handover_key = next_handover_key();
        }
        e.peer = c.peer;
        e.llp = tcp::adopt_socket(c.fd.get(), sp);
        if (e.llp < 0) {
            fail(c, w::Status::Ok, EBADF);
            return;
        }
        c.fd.release();  // the consumer owns it now
        pending.emplace_back(std::move(e));
        conns.erase(c.id);
    }

    // Writes what is left of `out`; true when all of it is out (false: wait or failed,
    // and in the failed case `c` is gone: check `gone`).
    bool flush(Conn &c, bool &gone) {
        gone = false;
        while (c.out_off < c.out_len) {
            ssize_t n =
                ::send(c.fd.get(), c.out.data() + c.out_off, c.out_len - c.out_off, MSG_NOSIGNAL);
            if (n > 0) {
                c.out_off += static_cast<size_t>(n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if (!(c.armed & EPOLLOUT)) arm(c, EPOLLOUT, false);
                return false;
            }
            fail(c, w::Status::Ok, n < 0 ? errno : EPIPE);
            gone = true;
            return false;
        }
        return true;
    }

    // Reads into the parser without taking anything past the frame (see the header).
    // Returns false when `c` was finished (error or peer close).
    bool read_frame(Conn &c) {
        std::array<uint8_t, w::kMpaMaxFrame> buf;
        while (c.parser.state() == w::MpaParser::State::NeedMore) {
            ssize_t n = ::recv(c.fd.get(), buf.data(), buf.size(), MSG_PEEK);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
            if (n <= 0) {
                fail(c, w::Status::Ok, n == 0 ? ECONNRESET : errno);
                return false;
            }
            auto r = c.parser.feed({buf.data(), static_cast<size_t>(n)});
            // Drop exactly what the parser took; the peek guarantees it is there.
            size_t left = r.consumed;
            while (left > 0) {
                ssize_t d = ::recv(c.fd.get(), buf.data(), left, 0);
                if (d < 0 && errno == EINTR) continue;
                if (d <= 0) {
                    fail(c, w::Status::Ok, d == 0 ? ECONNRESET : errno);
                    return false;
                }
                left -= static_cast<size_t>(d);
            }
        }
        return true;
    }

    void on_connected(Conn &c) {
        int err = 0;
        socklen_t sl = sizeof err;
        if (::getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &sl) != 0) err = errno;
        if (err == EINPROGRESS || err == EALREADY) return;  // spurious wake-up
        if (err != 0) {
            if (err == ETIMEDOUT)
                finish(c, TimedOut{c.id}, true);
            else
                finish(c, Unreachable{c.id, err}, true);
            return;
        }
        c.state = State::SendRequest;
        bool gone = false;
        if (!flush(c, gone)) return;
        c.state = State::AwaitReply;
        c.parser = w::MpaParser(w::MpaKind::Reply);
        arm(c, EPOLLIN, false);
    }

    void on_reply(Conn &c) {
        if (!read_frame(c)) return;
        switch (c.parser.state()) {
            case w::MpaParser::State::NeedMore:
                return;
            case w::MpaParser::State::Error:
                // Bad key, revision, length...: tell the peer why (LLP/MPA) and close.
                send_terminate(c, w::term_code(c.parser.error()), false);
                fail(c, c.parser.error(), 0);
                return;
            case w::MpaParser::State::Complete:
                break;
        }
        const w::MpaFrame &rep = c.parser.frame();
        w::MpaResult r;
        w::Status st = w::mpa_finish_initiator(config_of(c.params), c.request, rep, r);
        if (st == w::Status::MpaRejected) {
            finish(c, Rejected{c.id, {rep.private_data.begin(), rep.private_data.end()}}, true);
            return;
        }
        if (st != w::Status::Ok) {
            send_terminate(c, w::term_code(st), rep.crc);
            fail(c, st, 0);
            return;
        }
        c.result = r;
        if (!r.p2p) {
            establish(c, r, rep.private_data);
            return;
        }
        // P2P: our first FPDU is the RTR (we only offer the Write form), then the QP.
        c.out_len = build_rtr_fpdu(r.crc, false, c.out);
        c.out_off = 0;
        c.state = State::SendRtr;
        bool gone = false;
        if (flush(c, gone)) establish(c, c.result, c.parser.frame().private_data);
    }

    // Best effort, one non-blocking write: the connection is being torn down anyway.
    void send_terminate(Conn &c, w::TermCode code, bool crc) {
        w::TerminateSpec t{};
        t.code = code;
        uint8_t hdr[w::kMaxHeaderLen + w::kTerminateBodyMax];
        size_t hl = w::encode_terminate(t, hdr);
        w::FpduFrame f;
        if (hl == 0 || w::build_fpdu_frame({hdr, hl}, {}, crc, f) != w::Status::Ok) return;
        std::array<uint8_t, sizeof f.prefix + sizeof f.trailer> buf;
        std::memcpy(buf.data(), f.prefix.data(), f.prefix_len);
        std::memcpy(buf.data() + f.prefix_len, f.trailer.data(), f.trailer_len);
        [[maybe_unused]] ssize_t n =
            ::send(c.fd.get(), buf.data(), f.total(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }

    // Responder in P2P mode: the initiator's RTR must be the first FPDU. It is consumed
    // here (exactly its bytes), so the channel starts with the QP's own traffic.
    void on_rtr(Conn &c, uint32_t events) {
        const size_t need = rtr_fpdu_len(c.result.rtr);
        std::array<uint8_t, 64> buf;
        ssize_t n = ::recv(c.fd.get(), buf.data(), need, MSG_PEEK);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        if (n <= 0) {
            fail(c, w::Status::Ok, n == 0 ? ECONNRESET : errno);
            return;
        }
        if (static_cast<size_t>(n) < need) {
            if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) fail(c, w::Status::Ok, ECONNRESET);
            return;  // the rest is on its way
        }
        w::FpduDecoder dec({c.result.crc, 128});  // an RTR is tiny: no 64 KiB buffer
        auto fr = dec.feed({buf.data(), need});
        w::Segment seg;
        w::Status st = w::Status::Ok;
        if (fr.state == w::FeedState::Error)
            st = dec.error();
        else if (fr.state != w::FeedState::Segment || fr.consumed != need)
            st = w::Status::FramingLength;
        else
            st = w::decode_segment(dec.segment(), seg);
        bool write_rtr = c.result.rtr != w::Rtr::Read;
        if (st == w::Status::Ok) {
            bool good = write_rtr ? seg.hdr.opcode == w::Opcode::RdmaWrite && seg.hdr.last &&
                                        seg.payload.empty()
                                  : seg.hdr.opcode == w::Opcode::ReadRequest && seg.read.size == 0;
            if (!good) st = w::Status::MpaNoMatchingRtr;
        }
        if (st != w::Status::Ok) {
            send_terminate(c, w::term_code(st), c.result.crc);
            fail(c, st, 0);
            return;
        }
        for (size_t left = need; left > 0;) {  // drop exactly the RTR (it was peeked)
            ssize_t d = ::recv(c.fd.get(), buf.data(), left, 0);
            if (d < 0 && errno == EINTR) continue;
            if (d <= 0) {
                fail(c, w::Status::Ok, d == 0 ? ECONNRESET : errno);
                return;
            }
            left -= static_cast<size_t>(d);
        }
        c.deadline = Clock::time_point::max();
        if (write_rtr) {
            establish(c, c.result, c.parser.frame().private_data);
            return;
        }
        // Read RTR: answer it with the zero-length Read Response it asks for.
        c.out_len = build_rtr_fpdu(c.result.crc, true, c.out);
        c.out_off = 0;
        c.state = State::SendRtrReply;
        bool gone = false;
        if (flush(c, gone)) establish(c, c.result, c.parser.frame().private_data);
    }

    // Responder: the accepting Reply is out. With the Write RTR the connection is usable
    // now: the channel consumes the RTR and holds its sends until it arrived. Reporting
    // Established here rather than at the RTR also keeps the responder's event ahead of the
    // initiator's (some ULP test programs count on that across connections).
    void reply_sent(Conn &c) {
        if (!c.result.p2p || c.result.rtr != w::Rtr::Read) {
            establish(c, c.result, c.parser.frame().private_data);
            return;
        }
        c.state = State::AwaitRtr;
        if (opts.request_timeout.count() > 0) c.deadline = Clock::now() + opts.request_timeout;
        arm(c, EPOLLIN | EPOLLRDHUP, false);
        on_rtr(c, 0);  // it may be here already
    }

    // Sends a refusal Reply (best effort) and closes.
    void refuse(Conn &c, const w::MpaFrame &reply) {
        size_t n = 0;
        if (w::build_mpa_frame(reply, c.out, n) == w::Status::Ok) {
            c.out_len = n;
            c.out_off = 0;
            c.close_after_send = true;
            c.state = State::SendReply;
            bool gone = false;
            if (!flush(c, gone)) return;  // waits for EPOLLOUT, or already gone
        }
        fail(c, w::Status::Ok, 0);
    }

    void on_request(Conn &c) {
        if (!read_frame(c)) return;
        if (c.parser.state() == w::MpaParser::State::NeedMore) return;
        if (c.parser.state() == w::MpaParser::State::Error) {
            w::Status e = c.parser.error();
            if (e == w::Status::MpaBadKey) {
                fail(c, e, 0);  // not an MPA peer: close without a reply (like siw)
                return;
            }
            w::MpaFrame reply{};
            if (e == w::Status::MpaMarkersRequested) {
                reply = w::mpa_make_reject(c.parser.frame());
            } else {
                // Bad revision / length / IRD-ORD block: the frame is unusable, so answer
                // with the plainest reject every revision understands.
                reply.kind = w::MpaKind::Reply;
                reply.reject = true;
                reply.rev = 1;
            }
            refuse(c, reply);
            return;
        }
        const w::MpaFrame &req = c.parser.frame();
        ConnectRequest ev;
        ev.id = c.id;
        ev.peer = c.peer;
        ev.private_data.assign(req.private_data.begin(), req.private_data.end());
        ev.ird = req.enhanced ? req.ird_ord.ird : 0;
        ev.ord = req.enhanced ? req.ird_ord.ord : 0;
        ev.crc = req.crc;
        ev.listener = c.listener;
        c.state = State::AwaitUlp;
        c.ulp_knows = true;
        c.deadline = Clock::time_point::max();  // the ULP decides at its own pace
        // Only the peer giving up (FIN or error) matters until the ULP answers; early bytes
        // from it are a protocol error the QP will see, not our business.
        arm(c, EPOLLRDHUP, false);
        pending.emplace_back(std::move(ev));
    }

    void on_listen(ConnId lid, int lfd, bool unix_side) {
        for (;;) {
            sockaddr_storage ss{};
            socklen_t sl = sizeof ss;
            int fd = ::accept4(lfd, reinterpret_cast<sockaddr *>(&ss), &sl,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                // EAGAIN: done. EMFILE and friends: the connection stays queued and the
                // level-triggered listener fires again; nothing better to do here.
                return;
            }
            if (unix_side && !shm::same_user(fd)) {
                // Another user: close before reading a byte (no MPA, no segment). Abstract
                // sockets have no permissions; this is what keeps other users out.
                ::close(fd);
                continue;
            }
            auto c = std::make_unique<Conn>();
            c->id = next_id++;
            c->fd = Fd(fd);
            c->shm = unix_side;
            c->peer = unix_side ? shm_peer_address(listeners.at(lid).addr)
                                : copy_address(reinterpret_cast<sockaddr *>(&ss), sl);
            c->state = State::AwaitRequest;
            c->parser = w::MpaParser(w::MpaKind::Request);
            c->listener = lid;
            if (opts.request_timeout.count() > 0) c->deadline = Clock::now() + opts.request_timeout;
            if (!arm(*c, EPOLLIN, true)) continue;  // `c` closes its fd
            conns.emplace(c->id, std::move(c));
        }
    }

    void on_event(ConnId id, uint32_t events) {
        if (auto l = listeners.find(id); l != listeners.end()) {
            on_listen(id, l->second.fd.get(), false);
            return;
        }
        if (auto u = unix_listeners.find(id); u != unix_listeners.end()) {
            on_listen(u->second, listeners.at(u->second).unix_fd.get(), true);
            return;
        }
        auto it = conns.find(id);
        if (it == conns.end()) return;  // finished earlier in this batch
        Conn &c = *it->second;
        switch (c.state) {
            case State::Connecting:
                on_connected(c);
                return;
            case State::SendRequest:
            case State::SendReply:
            case State::SendRtr:
            case State::SendRtrReply: {
                bool gone = false;
                if (!flush(c, gone)) return;
                if (c.state == State::SendRequest) {
                    c.state = State::AwaitReply;
                    c.parser = w::MpaParser(w::MpaKind::Reply);
                    arm(c, EPOLLIN, false);
                } else if (c.close_after_send) {
                    fail(c, w::Status::Ok, 0);
                } else if (c.state == State::SendReply) {
                    reply_sent(c);
                } else {
                    establish(c, c.result, c.parser.frame().private_data);
                }
                return;
            }
            case State::AwaitRtr:
                on_rtr(c, events);
                return;
            case State::AwaitReply:
                on_reply(c);
                return;
            case State::AwaitRequest:
                on_request(c);
                return;
            case State::AwaitUlp:
                if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) fail(c, w::Status::Ok, ECONNRESET);
                return;
            case State::ShmHello:
                on_hello(c);
                return;
        }
    }

    void expire(Clock::time_point now) {
        std::vector<ConnId> dead;
        for (auto &[id, c] : conns)
            if (c->deadline <= now) dead.push_back(id);
        for (ConnId id : dead) {
            Conn &c = *conns.at(id);
            if (c.initiator)
                finish(c, TimedOut{id}, true);
            else
                fail(c, w::Status::Ok, ETIMEDOUT);
        }
    }

    int wait_ms(Clock::time_point now) const {
        auto next = Clock::time_point::max();
        for (auto &[id, c] : conns)
            next = std::min(next, c->deadline);
        if (next == Clock::time_point::max()) return -1;  // idle: sleep until woken
        if (next <= now) return 0;
        auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
        return static_cast<int>(std::min<int64_t>(ms, 60000));
    }
};

ConnectionManager::ConnectionManager(Handler handler, Options opts)
    : impl_(std::make_unique<Impl>()) {
    impl_->handler = std::move(handler);
    if (!impl_->handler) return;  // nobody to deliver to: refuse to start
    impl_->opts = opts;
    if (!shm::cma_allowed_by_env()) impl_->opts.shm_cma = false;
    impl_->mode = opts.transport;
    if (impl_->mode == Transport::Env) {
        switch (shm::mode_from_env()) {
            case shm::Mode::Auto:
                impl_->mode = Transport::Auto;
                break;
            case shm::Mode::Shm:
                impl_->mode = Transport::Shm;
                break;
            case shm::Mode::Tcp:
                impl_->mode = Transport::Tcp;
                break;
        }
    }
    impl_->ep = Fd(::epoll_create1(EPOLL_CLOEXEC));
    impl_->wake = Fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (impl_->ep.get() < 0 || impl_->wake.get() < 0) return;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = 0;  // id 0: the wake-up eventfd
    if (::epoll_ctl(impl_->ep.get(), EPOLL_CTL_ADD, impl_->wake.get(), &ev) != 0) return;
    // std::thread throws on failure; keep it inside so nothing escapes.
    try {
        impl_->thread = std::thread([this] { run(); });
    } catch (...) {
        return;
    }
    ep_ = impl_->ep.get();
}

ConnectionManager::~ConnectionManager() {
    if (impl_->thread.joinable()) {
        impl_->stop.store(true, std::memory_order_release);
        impl_->poke();
        impl_->thread.join();
    }
    // Sockets handed over in Established events nobody received are still ours to close.
    for (Event &e : impl_->pending)
        if (auto *est = std::get_if<Established>(&e)) release_unclaimed(est->llp);
    // Listeners, connections, epoll and eventfd close through their Fd members.
}

void ConnectionManager::run() {
    Impl &m = *impl_;
    std::array<epoll_event, 64> evs;
    std::vector<Event> batch;
    while (!m.stop.load(std::memory_order_acquire)) {
        int timeout;
        {
            std::lock_guard lk(m.mu);
            timeout = m.wait_ms(Clock::now());
        }
        int n = ::epoll_wait(m.ep.get(), evs.data(), static_cast<int>(evs.size()), timeout);
        if (m.stop.load(std::memory_order_acquire)) break;
        {
            std::lock_guard lk(m.mu);
            for (int i = 0; i < n; ++i) {
                if (evs[i].data.u64 == 0) {
                    uint64_t v;
                    [[maybe_unused]] ssize_t r = ::read(m.wake.get(), &v, sizeof v);
                    continue;
                }
                m.on_event(evs[i].data.u64, evs[i].events);
            }
            m.expire(Clock::now());
            batch.swap(m.pending);
        }
        // Outside the lock so the handler can call accept()/reject()/connect().
        for (Event &e : batch) {
            // The handler may move the event's fields: keep what the hand-over needs.
            const auto *est = std::get_if<Established>(&e);
            const uint64_t key = est ? est->handover_key : 0;
            const ri_llp_stream_handle_t llp = est ? est->llp : -1;
            const LlpTransport xport = est ? est->transport : LlpTransport::Tcp;
            // A throwing handler must not take the event thread (and the process) down;
            // the event counts as delivered (an Established socket is the consumer's).
            try {
                m.handler(e);
            } catch (...) {
            }
            // The consumer has handled Established: let the initiator see the connection
            // (a no-op when a QP claimed the stream in the handler; it sent the message).
            if (key != 0) send_handover(llp, xport, key);
        }
        batch.clear();
    }
}

CmResult<ConnId> ConnectionManager::listen(const sockaddr *addr, socklen_t len, int backlog) {
    CmResult<ConnId> res;
    if (!ok()) return {CmStatus::Stopped, 0, 0};
    if (!valid_address(addr, len) || backlog < 0) return {CmStatus::InvalidArgument, 0, 0};
    Fd fd(::socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return {CmStatus::SystemError, errno, 0};
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (addr->sa_family == AF_INET6)  // ::1 means IPv6 only; no surprise v4-mapped peers
        ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (::bind(fd.get(), addr, len) != 0 || ::listen(fd.get(), backlog) != 0)
        return {CmStatus::SystemError, errno, 0};
    Impl::Listener l;
    l.addr.len = sizeof l.addr.storage;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr *>(&l.addr.storage), &l.addr.len) != 0)
        return {CmStatus::SystemError, errno, 0};
    // The shm rendezvous, named after the bound address and port. Best effort: if the
    // name is taken (another listener on the same address and port, e.g. SO_REUSEPORT)
    // this listener is reachable over TCP only.
    if (impl_->mode != Transport::Tcp) {
        shm::UnixName name;
        Fd u(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (u.get() >= 0 &&
            shm::rendezvous_name(l.addr.get(), shm::is_any_address(l.addr.get()), name) &&
            ::bind(u.get(), reinterpret_cast<const sockaddr *>(&name.sa), name.len) == 0 &&
            ::listen(u.get(), std::max(backlog, SOMAXCONN)) == 0)
            l.unix_fd = std::move(u);
    }
    l.fd = std::move(fd);
    std::lock_guard lk(impl_->mu);
    ConnId id = impl_->next_id++;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    if (::epoll_ctl(ep_, EPOLL_CTL_ADD, l.fd.get(), &ev) != 0)
        return {CmStatus::SystemError, errno, 0};
    if (l.unix_fd.get() >= 0) {
        l.unix_id = impl_->next_id++;
        ev.data.u64 = l.unix_id;
        if (::epoll_ctl(ep_, EPOLL_CTL_ADD, l.unix_fd.get(), &ev) != 0) {
            ::epoll_ctl(ep_, EPOLL_CTL_DEL, l.fd.get(), nullptr);
            return {CmStatus::SystemError, errno, 0};
        }
        impl_->unix_listeners.emplace(l.unix_id, id);
    }
    impl_->listeners.emplace(id, std::move(l));
    res.value = id;
    return res;
}

CmStatus ConnectionManager::stop_listen(ConnId listener) {
    if (!ok()) return CmStatus::Stopped;
    std::lock_guard lk(impl_->mu);
    auto it = impl_->listeners.find(listener);
    if (it == impl_->listeners.end()) return CmStatus::UnknownId;
    ::epoll_ctl(ep_, EPOLL_CTL_DEL, it->second.fd.get(), nullptr);
    if (it->second.unix_fd.get() >= 0) {
        ::epoll_ctl(ep_, EPOLL_CTL_DEL, it->second.unix_fd.get(), nullptr);
        impl_->unix_listeners.erase(it->second.unix_id);
    }
    impl_->listeners.erase(it);  // connections already accepted on it carry on
    return CmStatus::Ok;
}

CmResult<Address> ConnectionManager::local_address(ConnId id) const {
    if (!ok()) return {CmStatus::Stopped, 0, {}};
    std::lock_guard lk(impl_->mu);
    int fd = -1;
    if (auto l = impl_->listeners.find(id); l != impl_->listeners.end())
        fd = l->second.fd.get();
    else if (auto c = impl_->conns.find(id); c != impl_->conns.end())
        fd = c->second->fd.get();
    else
        return {CmStatus::UnknownId, 0, {}};
    CmResult<Address> res;
    res.value.len = sizeof res.value.storage;
    if (::getsockname(fd, reinterpret_cast<sockaddr *>(&res.value.storage), &res.value.len) != 0)
        return {CmStatus::SystemError, errno, {}};
    return res;
}

CmResult<ConnId> ConnectionManager::connect(const sockaddr *addr, socklen_t len,
                                            const ConnParams &params) {
    if (!ok()) return {CmStatus::Stopped, 0, 0};
    if (!valid_address(addr, len) || !valid_params(params))
        return {CmStatus::InvalidArgument, 0, 0};
    // Same host and netns (the abstract name answers): shm. Otherwise TCP, unless the
    // caller insists on shm.
    bool use_shm = false;
    int shm_err = 0;
    Fd fd;
    if (impl_->mode != Transport::Tcp) {
        fd = Fd(connect_unix(addr, shm_err));
        use_shm = fd.get() >= 0;
    }
    bool shm_only_failed = !use_shm && impl_->mode == Transport::Shm;
    if (!use_shm && !shm_only_failed) {
        fd = Fd(::socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (fd.get() < 0) return {CmStatus::SystemError, errno, 0};
    }

    auto c = std::make_unique<Impl::Conn>();
    c->initiator = true;
    c->peer = copy_address(addr, len);
    c->params = params;
    // Over shm no FPDU ever crosses the socket: no peer-to-peer RTR there.
    if (use_shm) c->params.p2p = false;
    c->request = w::mpa_make_request(config_of(c->params), c->params.private_data);
    size_t n = 0;
    if (w::build_mpa_frame(c->request, c->out, n) != w::Status::Ok)
        return {CmStatus::InvalidArgument, 0, 0};
    c->out_len = n;
    if (params.timeout.count() > 0) c->deadline = Clock::now() + params.timeout;
    c->shm = use_shm;

    if (shm_only_failed) {
        std::lock_guard lk(impl_->mu);
        c->id = impl_->next_id++;
        impl_->pending.emplace_back(Unreachable{c->id, shm_err});
        impl_->poke();
        return {CmStatus::Ok, 0, c->id};
    }
    // A Unix connect() has already completed; Connecting then just checks SO_ERROR (0)
    // on the first EPOLLOUT and sends the Request, as for TCP.
    int rc = use_shm ? 0 : ::connect(fd.get(), addr, len);
    int err = rc == 0 ? 0 : errno;
    if (rc != 0 && err != EINPROGRESS && err != EINTR) {
        // Local misuse fails now; a peer that cannot be reached is an event like any other.
        if (err != ECONNREFUSED && err != ENETUNREACH && err != EHOSTUNREACH && err != ETIMEDOUT &&
            err != ECONNRESET)
            return {CmStatus::SystemError, err, 0};
    }
    std::lock_guard lk(impl_->mu);
    c->id = impl_->next_id++;
    ConnId id = c->id;
    c->fd = std::move(fd);
    if (rc != 0 && err != EINPROGRESS && err != EINTR) {
        impl_->pending.emplace_back(Unreachable{id, err});
        impl_->poke();
        return {CmStatus::Ok, 0, id};
    }
    // Connecting: EPOLLOUT says done (success or not, SO_ERROR tells).
    if (!impl_->arm(*c, EPOLLOUT, true)) return {CmStatus::SystemError, errno, 0};
    impl_->conns.emplace(id, std::move(c));
    impl_->poke();  // the deadline may be the earliest now
    return {CmStatus::Ok, 0, id};
}

Transport ConnectionManager::transport() const {
    return impl_->mode;
}

CmStatus ConnectionManager::accept(ConnId id, const ConnParams &params) {
    if (!ok()) return CmStatus::Stopped;
    if (!valid_params(params)) return CmStatus::InvalidArgument;
    std::lock_guard lk(impl_->mu);
    auto it = impl_->conns.find(id);
    if (it == impl_->conns.end()) return CmStatus::UnknownId;
    Impl::Conn &c = *it->second;
    if (c.initiator || c.state != Impl::State::AwaitUlp) return CmStatus::WrongState;
    w::MpaFrame reply;
    w::Status st =
        w::mpa_respond(config_of(params), c.parser.frame(), params.private_data, reply, c.result);
    size_t n = 0;
    if (st != w::Status::Ok || w::build_mpa_frame(reply, c.out, n) != w::Status::Ok)
        return CmStatus::InvalidArgument;
    c.params = params;
    c.out_len = n;
    c.out_off = 0;
    c.state = Impl::State::SendReply;
    if (!c.shm && !(c.result.p2p && c.result.rtr == w::Rtr::Read)) {
        // TCP: the Reply is the responder's last handshake message; it is deferred
        // (Established::handover_key) so that the initiator cannot see the connection, use
        // it or close it before the responder's consumer has handled Established. Without
        // this, dtestcm's server, which counts ESTABLISHED events before DISCONNECTED ones,
        // got a fast client's first DISCONNECTED ahead of its last ESTABLISHED.
        impl_->establish(c, c.result, c.parser.frame().private_data, {c.out.data(), n});
    } else {
        // A Read RTR must be read here before the stream is handed over (the Reply goes
        // now, and Established follows the RTR); shm defers its hello instead.
        bool gone = false;
        if (impl_->flush(c, gone)) impl_->reply_sent(c);
    }
    impl_->poke();  // deliver Established (or Failed) from the event thread
    return CmStatus::Ok;
}

CmStatus ConnectionManager::reject(ConnId id, std::span<const uint8_t> private_data) {
    if (!ok()) return CmStatus::Stopped;
    if (private_data.size() > kMaxPrivateData) return CmStatus::InvalidArgument;
    std::lock_guard lk(impl_->mu);
    auto it = impl_->conns.find(id);
    if (it == impl_->conns.end()) return CmStatus::UnknownId;
    Impl::Conn &c = *it->second;
    if (c.initiator || c.state != Impl::State::AwaitUlp) return CmStatus::WrongState;
    // The ULP already knows the outcome: the close that follows is not reported.
    c.ulp_knows = false;
    impl_->refuse(c, w::mpa_make_reject(c.parser.frame(), private_data));
    impl_->poke();
    return CmStatus::Ok;
}

}  // namespace softrnic::cm
