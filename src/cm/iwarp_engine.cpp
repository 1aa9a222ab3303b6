#include "cm/iwarp_engine.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/log.hpp"
#include "transport/llp_registry.hpp"
#include "transport/shm/shm.hpp"
#include "transport/tcp/tcp_channel.hpp"
#include "transport/tcp/wire/ddp_rdmap.hpp"
#include "transport/tcp/wire/fpdu.hpp"
#include "transport/tcp/wire/mpa.hpp"

namespace softrnic::cm::detail {

namespace w = transport::tcp::wire;
namespace tcp = transport::tcp;
namespace shm = transport::shm;

namespace {

static_assert(kMaxPrivateData == w::kMpaMaxPrivateData - w::kMpaIrdOrdLen,
              "ConnParams::private_data must fit MPA's PD_Length beside the IRD/ORD block");

// Hand-over keys are process-wide: a deferred message is sent only to the stream it was
// made for, even when its descriptor was closed and reused by another manager meanwhile.
uint64_t next_handover_key() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
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

struct IwConn : Conn {
    State state = State::Connecting;
    w::MpaParser parser{w::MpaKind::Request};
    // The Request we sent (initiator) and its private data, which the frame points to.
    ConnParams params;
    w::MpaFrame request{};
    std::array<uint8_t, w::kMpaMaxFrame> out{};
    size_t out_len = 0, out_off = 0;
    bool close_after_send = false;  // reject / refusal: close once the Reply is out
    w::MpaResult result{};          // what the exchange negotiated
    bool ulp_knows = false;         // ConnectRequest delivered: report a failure
    bool shm = false;               // over the Unix rendezvous socket
    std::unique_ptr<shm::Handshake> hs;
    std::vector<uint8_t> peer_pd;  // shm: the peer's private data, kept for Established
};

IwConn &iw(Conn &c) {
    return static_cast<IwConn &>(c);  // every Conn of this engine is one
}

// The steps of the set-up, on one connection at a time (ManagerCore::mu held).
struct Machine {
    ManagerCore &core;

    void fail(IwConn &c, w::Status ws, int err) {
        if (c.close_after_send) {
            // Closing with unread input makes the kernel send RST, which can destroy the
            // refusal Reply in flight: half-close, then discard what the peer sent.
            ::shutdown(c.fd.get(), SHUT_WR);
            std::array<uint8_t, 1024> sink;
            for (int i = 0; i < 64; ++i)
                if (::recv(c.fd.get(), sink.data(), sink.size(), MSG_DONTWAIT) <= 0) break;
        }
        bool report = c.initiator || c.ulp_knows;
        core.finish(c, failed_of(c.id, ws, err), report);
    }

    // MPA is done on an shm connection: send our hello, then wait for the peer's.
    void start_hello(IwConn &c, const w::MpaResult &r, std::span<const uint8_t> peer_pd) {
        c.result = r;
        c.peer_pd.assign(peer_pd.begin(), peer_pd.end());
        c.hs = std::make_unique<shm::Handshake>();
        // The responder's hello is its last handshake message: deferred like the TCP
        // Reply (Established::handover_key), it follows the initiator's.
        if (!c.hs->start(c.fd.get(), core.policy.shm_cma, /*defer_hello=*/!c.initiator)) {
            fail(c, w::Status::Ok, errno);
            return;
        }
        c.state = State::ShmHello;
        if (!c.initiator && core.opts.request_timeout.count() > 0)
            c.deadline = Clock::now() + core.opts.request_timeout;
        if (!core.arm(c, EPOLLIN, false)) fail(c, w::Status::Ok, errno);
    }

    void on_hello(IwConn &c) {
        switch (c.hs->receive(c.fd.get())) {
            case shm::Handshake::Step::NeedMore:
                return;
            case shm::Handshake::Step::Failed:
                fail(c, w::Status::Ok, errno ? errno : EPROTO);
                return;
            case shm::Handshake::Step::Done:
                break;
        }
        core.disarm(c);
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
        core.deliver(c, std::move(e));
        core.forget(c);
    }

    // Hands the socket to the TCP transport and reports Established. `preamble`: the
    // responder's Reply, deferred (Established::handover_key): the claiming channel or
    // the event thread, once the handler returned, sends it.
    void establish(IwConn &c, const w::MpaResult &r, std::span<const uint8_t> peer_pd,
                   std::span<const uint8_t> preamble = {}) {
        if (c.shm) {
            start_hello(c, r, peer_pd);
            return;
        }
        core.disarm(c);
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
        core.deliver(c, std::move(e));
        core.forget(c);
    }

    // Writes what is left of `out`; true when all of it is out (false: wait or failed,
    // and in the failed case `c` is gone: check `gone`).
    bool flush(IwConn &c, bool &gone) {
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
                if (!(c.armed & EPOLLOUT)) core.arm(c, EPOLLOUT, false);
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
    bool read_frame(IwConn &c) {
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

    void on_connected(IwConn &c) {
        int err = 0;
        socklen_t sl = sizeof err;
        if (::getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &sl) != 0) err = errno;
        if (err == EINPROGRESS || err == EALREADY) return;  // spurious wake-up
        if (err != 0) {
            if (err == ETIMEDOUT)
                core.finish(c, TimedOut{c.id}, true);
            else
                core.finish(c, Unreachable{c.id, err}, true);
            return;
        }
        // From here on the peer can vanish without a word: bound how long that goes unseen
        // (the deadline covers the exchange, these options the rest of the connection).
        if (!c.shm) tcp::apply_liveness(c.fd.get(), tcp::liveness_bound_ms());
        c.state = State::SendRequest;
        bool gone = false;
        if (!flush(c, gone)) return;
        c.state = State::AwaitReply;
        c.parser = w::MpaParser(w::MpaKind::Reply);
        core.arm(c, EPOLLIN, false);
    }

    void on_reply(IwConn &c) {
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
            core.finish(c, Rejected{c.id, {rep.private_data.begin(), rep.private_data.end()}},
                        true);
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
    void send_terminate(IwConn &c, w::TermCode code, bool crc) {
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
    void on_rtr(IwConn &c, uint32_t events) {
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
    void reply_sent(IwConn &c) {
        if (!c.result.p2p || c.result.rtr != w::Rtr::Read) {
            establish(c, c.result, c.parser.frame().private_data);
            return;
        }
        c.state = State::AwaitRtr;
        if (core.opts.request_timeout.count() > 0)
            c.deadline = Clock::now() + core.opts.request_timeout;
        core.arm(c, EPOLLIN | EPOLLRDHUP, false);
        on_rtr(c, 0);  // it may be here already
    }

    // Sends a refusal Reply (best effort) and closes.
    void refuse(IwConn &c, const w::MpaFrame &reply) {
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

    void on_request(IwConn &c) {
        if (!read_frame(c)) return;
        if (c.parser.state() == w::MpaParser::State::NeedMore) return;
        if (c.parser.state() == w::MpaParser::State::Error) {
            w::Status e = c.parser.error();
            SOFTRNIC_LOG(Warn, Cm,
                         "connection %llu: request from %s refused: %s (protocol code %u)",
                         static_cast<unsigned long long>(c.id), address_text(c.peer).text,
                         to_string(reason_of(e)), unsigned(e));
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
        core.arm(c, EPOLLRDHUP, false);
        core.deliver(c, std::move(ev));
    }

    void on_ready(IwConn &c, uint32_t events) {
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
                    core.arm(c, EPOLLIN, false);
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
                if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                    // A reset or FIN, or the peer timed out (apply_liveness): say which.
                    int err = 0;
                    socklen_t sl = sizeof err;
                    if (::getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &sl) != 0 || err == 0)
                        err = ECONNRESET;
                    fail(c, w::Status::Ok, err);
                }
                return;
            case State::ShmHello:
                on_hello(c);
                return;
        }
    }
};

}  // namespace

bool IwarpEngine::valid(const ConnParams &p) const {
    return p.private_data.size() <= kMaxPrivateData && p.ird <= w::kIrdOrdMax &&
           p.ord <= w::kIrdOrdMax && p.timeout.count() >= 0;
}

std::unique_ptr<Conn> IwarpEngine::new_initiator(const ConnParams &params, bool over_shm) {
    auto c = std::make_unique<IwConn>();
    c->engine = this;
    c->initiator = true;
    c->params = params;
    // Over shm no FPDU ever crosses the socket: no peer-to-peer RTR there.
    if (over_shm) c->params.p2p = false;
    c->request = w::mpa_make_request(config_of(c->params), c->params.private_data);
    size_t n = 0;
    if (w::build_mpa_frame(c->request, c->out, n) != w::Status::Ok) return nullptr;
    c->out_len = n;
    c->shm = over_shm;
    return c;
}

std::unique_ptr<Conn> IwarpEngine::new_responder(bool over_shm) {
    auto c = std::make_unique<IwConn>();
    c->engine = this;
    c->shm = over_shm;
    c->state = State::AwaitRequest;
    c->parser = w::MpaParser(w::MpaKind::Request);
    return c;
}

void IwarpEngine::on_ready(Conn &c, uint32_t events) {
    Machine{core_}.on_ready(iw(c), events);
}

void IwarpEngine::on_deadline(Conn &c) {
    if (c.initiator)
        core_.finish(c, TimedOut{c.id}, true);
    else
        Machine{core_}.fail(iw(c), w::Status::Ok, ETIMEDOUT);
}

CmStatus IwarpEngine::accept(Conn &conn, const ConnParams &params) {
    IwConn &c = iw(conn);
    if (c.initiator || c.state != State::AwaitUlp) return CmStatus::WrongState;
    w::MpaFrame reply;
    w::Status st =
        w::mpa_respond(config_of(params), c.parser.frame(), params.private_data, reply, c.result);
    size_t n = 0;
    if (st != w::Status::Ok || w::build_mpa_frame(reply, c.out, n) != w::Status::Ok)
        return CmStatus::InvalidArgument;
    c.params = params;
    c.out_len = n;
    c.out_off = 0;
    c.state = State::SendReply;
    Machine m{core_};
    if (!c.shm && !(c.result.p2p && c.result.rtr == w::Rtr::Read)) {
        // TCP: the Reply is the responder's last handshake message; it is deferred
        // (Established::handover_key) so that the initiator cannot see the connection, use
        // it or close it before the responder's consumer has handled Established. Without
        // this, dtestcm's server, which counts ESTABLISHED events before DISCONNECTED ones,
        // got a fast client's first DISCONNECTED ahead of its last ESTABLISHED.
        m.establish(c, c.result, c.parser.frame().private_data, {c.out.data(), n});
    } else {
        // A Read RTR must be read here before the stream is handed over (the Reply goes
        // now, and Established follows the RTR); shm defers its hello instead.
        bool gone = false;
        if (m.flush(c, gone)) m.reply_sent(c);
    }
    return CmStatus::Ok;
}

CmStatus IwarpEngine::reject(Conn &conn, std::span<const uint8_t> private_data) {
    IwConn &c = iw(conn);
    if (c.initiator || c.state != State::AwaitUlp) return CmStatus::WrongState;
    // The ULP already knows the outcome: the close that follows is not reported.
    c.ulp_knows = false;
    SOFTRNIC_LOG(Info, Cm, "connection %llu from %s refused: rejected by the consumer",
                 static_cast<unsigned long long>(c.id), address_text(c.peer).text);
    Machine{core_}.refuse(c, w::mpa_make_reject(c.parser.frame(), private_data));
    return CmStatus::Ok;
}

void IwarpEngine::hand_over(ri_llp_stream_handle_t llp, LlpTransport, uint64_t key) {
    // The shm hello or the MPA Reply, whichever the stream's transport deferred.
    transport::llp::send_deferred(llp, key);
}

}  // namespace softrnic::cm::detail
