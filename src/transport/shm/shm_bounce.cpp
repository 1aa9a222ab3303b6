// shm transport, the copy path without CMA (shm_core.hpp): the target moves a request's
// data through its bounce chunks, up to kBounceChunks at a time. For a Send or Write it asks
// the initiator to copy chunk k into slot i (Pull), the initiator answers PullDone and the
// target places the slot; for a Read the target copies source chunks into its slots
// (ReadChunk) and the initiator copies them out and frees the slot (ChunkFree).
#include "transport/shm/shm_core.hpp"

namespace softrnic::transport::shm::detail {

// Without CMA: keeps up to kBounceChunks chunks moving for the current request.
void ShmConnection::pump_target() {
    TargetOp &t = cur_;
    if (!t.active) return;
    bool push = t.type == L::Type::ReadReq;
    while (t.next < t.length) {
        uint32_t idx = kNoChunk;
        for (uint32_t i = 0; i < L::kBounceChunks; ++i)
            if (chunk_[i] == ChunkUse::Free) {
                idx = i;
                break;
            }
        if (idx == kNoChunk) return;
        uint64_t len = std::min<uint64_t>(L::kBounceChunk, t.length - t.next);
        Ctl c;
        c.seq = t.seq;
        c.stag = idx;
        c.a = t.next;
        c.b = len;
        chunk_seq_[idx] = t.seq;
        chunk_off_[idx] = t.next;
        chunk_len_[idx] = len;
        if (push) {
            std::memcpy(my_bounce_ + idx * L::kBounceChunk, t.mem.ptr + t.next, len);
            chunk_[idx] = ChunkUse::Push;
            c.type = L::Type::ReadChunk;
        } else {
            chunk_[idx] = ChunkUse::Pull;
            c.type = L::Type::Pull;
        }
        t.next += len;
        if (!push_ctl(c)) {
            chunk_[idx] = ChunkUse::Free;
            return;
        }
    }
    if (push && t.next == t.length) {
        // Every byte is in a chunk: the source may go; the initiator completes the read
        // when it has copied the last chunk out.
        if (t.ref) ep_->rx_tagged_release(t.ref);
        t.ref = nullptr;
        t.active = false;
    }
}

// The bounce entries on the resp ring, at either end, whose shape check_resp() accepted
// (the chunk index is in range). False: the entry does not match our state.
bool ShmConnection::handle_bounce(const L::EntryHdr &h) {
    switch (h.type) {
        case L::Type::Pull: {
            InflightOp *rec;
            {
                std::lock_guard lk(mu_);
                rec = find_locked(h.seq);
            }
            // A record we hold is completed only by a report from this progress context
            // (or after detach), and stays where it is while others are appended: it can
            // be read without the lock.
            ShmOp *r = rec ? &rec->state_as<ShmOp>() : nullptr;
            if (!r || r->inline_data ||
                (r->kind != OpKind::Send && r->kind != OpKind::SendInvalidate &&
                 r->kind != OpKind::SendImmediate && r->kind != OpKind::RdmaWrite &&
                 r->kind != OpKind::RdmaWriteImmediate) ||
                h.a > r->length || h.b > r->length - h.a)
                return false;
            gather(r->local.data(), r->nlocal, h.a, peer_bounce_ + h.stag * L::kBounceChunk, h.b);
            Ctl c;
            c.type = L::Type::PullDone;
            c.seq = h.seq;
            c.stag = h.stag;
            c.a = h.a;
            c.b = h.b;
            push_ctl(c);
            return true;
        }
        case L::Type::ReadChunk: {
            InflightOp *rec;
            {
                std::lock_guard lk(mu_);
                rec = find_locked(h.seq);
            }
            ShmOp *r = rec ? &rec->state_as<ShmOp>() : nullptr;
            if (!r || r->kind != OpKind::RdmaRead || h.a != r->placed ||
                h.b > r->length - r->placed)
                return false;
            scatter(r->local.data(), r->nlocal, h.a, peer_bounce_ + h.stag * L::kBounceChunk, h.b);
            Ctl c;
            c.type = L::Type::ChunkFree;
            c.stag = h.stag;
            push_ctl(c);
            std::lock_guard lk(mu_);
            r->placed += h.b;
            // Unless a close failed it meanwhile (it is then finished already).
            if (r->placed == r->length && !rec->finished.load(std::memory_order_relaxed))
                recs_.finish(*rec, {OpOutcome::Done, {}});
            return true;
        }
        case L::Type::PullDone: {
            uint32_t i = h.stag;
            TargetOp &t = cur_;
            if (chunk_[i] != ChunkUse::Pull || chunk_seq_[i] != h.seq || chunk_off_[i] != h.a ||
                chunk_len_[i] != h.b || !t.active || t.seq != h.seq)
                return false;
            const std::byte *src = my_bounce_ + i * L::kBounceChunk;
            if (t.type == L::Type::SendRemote) {
                RxStatus st = ep_->rx_recv_place(t.recv, h.a, {src, static_cast<size_t>(h.b)});
                if (!st.ok) {
                    t.recv_open = false;  // completed with the fault by the engine
                    chunk_[i] = ChunkUse::Free;
                    release_target();
                    target_failed(st, 0, 0);
                    return true;
                }
            } else {
                place_last_byte_last(t.mem.ptr + h.a, src, h.b);
            }
            chunk_[i] = ChunkUse::Free;
            t.done += h.b;
            if (t.done == t.length)
                finish_target();
            else
                pump_target();
            return true;
        }
        case L::Type::ChunkFree: {
            uint32_t i = h.stag;
            if (chunk_[i] != ChunkUse::Push) return false;
            chunk_[i] = ChunkUse::Free;
            pump_target();
            return true;
        }
        default:
            return false;
    }
}

}  // namespace softrnic::transport::shm::detail
