// shm transport, placement grants: the target publishes STag ranges its peer may write
// into itself (layout.hpp, "Placement grants"), and the initiator places small RDMA Writes
// there directly.
#include "base/stats.hpp"
#include "transport/shm/shm_core.hpp"

namespace softrnic::transport::shm::detail {

std::mutex g_grant_mu;
std::vector<ShmConnection *> g_granting;  // guarded by g_grant_mu

// ------------------------------------------------------------------ placement grants

namespace {
// A grant slot as one consistent copy (the owner may be rewriting it: seqlock).
struct GrantCopy {
    uint32_t stag = 0;
    uint64_t gen = 0, to = 0, len = 0, addr = 0;
};
// Without fences (ThreadSanitizer does not model them): the owner stores the fields with
// release after making `seq` odd, so a field value of a newer write carries that odd `seq`
// with it; our field loads are acquire, so the second `seq` load cannot move before them.
bool read_grant(L::Grant &g, GrantCopy &out) {
    uint32_t s1 = std::atomic_ref<uint32_t>(g.seq).load(std::memory_order_acquire);
    if (s1 & 1) return false;
    out.stag = std::atomic_ref<uint32_t>(g.stag).load(std::memory_order_acquire);
    out.gen = std::atomic_ref<uint64_t>(g.gen).load(std::memory_order_acquire);
    out.to = std::atomic_ref<uint64_t>(g.to).load(std::memory_order_acquire);
    out.len = std::atomic_ref<uint64_t>(g.len).load(std::memory_order_acquire);
    out.addr = std::atomic_ref<uint64_t>(g.addr).load(std::memory_order_acquire);
    return std::atomic_ref<uint32_t>(g.seq).load(std::memory_order_relaxed) == s1;
}
}  // namespace

// A small RDMA Write placed into the peer's memory by us (one process_vm_writev), instead
// of an entry its progress thread would have to wake up for. Only when the peer says its
// application polls no CQ (direct_hint), our posts come apart (a ping-pong, not a
// stream), every request we gave the peer before has been consumed (so the write is
// ordered after them, as on the ring: an earlier Send with Invalidate, say), and the peer
// granted a range of that STag that holds the whole write. False: use the ring (which
// also reports any error: the target validates again there).
bool ShmConnection::try_direct_write(const OutboundOp &op) {
    if (op.kind != OpKind::RdmaWrite || op.length == 0 || op.length > kDirectMax || !link_->cma ||
        no_direct_ || op.local.size() > L::kMaxIov || !direct_writes_enabled())
        return false;
    if (std::atomic_ref<uint32_t>(peer_->direct_hint).load(std::memory_order_relaxed) == 0)
        return false;
    // Gaps are measured from the end of the previous post (a direct one takes longer than
    // the gap itself: from its start, a stream would keep itself direct).
    const int64_t now = base::mono_ns();
    const bool long_gap = now - last_post_ns_ >= kDirectMinGapNs;
    last_post_ns_ = now;
    long_gaps_ = long_gap ? long_gaps_ + 1 : 0;
    if (long_gaps_ < kDirectAfterGaps) return false;
    // Acquire: the peer's handling of what it consumed (an invalidation, say, and the
    // grant_gen bump that came with it) is then visible to us. Our responses (acks, read
    // data) go through the other ring, whose order with our requests the peer's progress
    // never kept (it takes responses first in each pass): they need not be consumed.
    if (req_tx_.published() != load_acquire(peer_->req_cons)) return false;
    // Slots of an older generation are void: skip them (one that happens to match the STag
    // would fail the check below every time, while a current grant sits in another slot).
    const uint64_t gen_now =
        std::atomic_ref<uint64_t>(peer_->grant_gen).load(std::memory_order_acquire);
    GrantCopy g;
    bool found = false;
    for (L::Grant &slot : peer_->grants) {
        if (!read_grant(slot, g) || g.gen != gen_now || g.stag != op.remote_stag) continue;
        // [to, to + length) inside [g.to, g.to + g.len), written so that nothing wraps.
        if (op.remote_to >= g.to && op.length <= g.len &&
            op.remote_to - g.to <= g.len - op.length) {
            found = true;
            break;
        }
    }
    if (!found) return false;
    std::array<iovec, L::kMaxIov> local;
    size_t nlocal = 0;
    for (const IoSpan &s : op.local)
        if (s.len) local[nlocal++] = {s.ptr, static_cast<size_t>(s.len)};
    // The last byte in a segment of its own, copied after the rest: an application polls
    // it to learn that the write arrived (the kernel copies the segments in order, and a
    // string copy's stores are not reordered with later stores).
    const uintptr_t dst = static_cast<uintptr_t>(g.addr + (op.remote_to - g.to));
    std::array<iovec, 2> remote;
    size_t nremote = 0;
    if (op.length > 1)
        remote[nremote++] = {reinterpret_cast<void *>(dst), static_cast<size_t>(op.length - 1)};
    remote[nremote++] = {reinterpret_cast<void *>(dst + op.length - 1), 1};
    // Announce the write, then check that the grant still stands: the owner bumps
    // grant_gen first and then waits for direct_inflight to drop (the Dekker pair).
    std::atomic_ref<uint32_t> inflight(peer_->direct_inflight);
    inflight.fetch_add(1, std::memory_order_seq_cst);
    bool ok = false;
    if (std::atomic_ref<uint64_t>(peer_->grant_gen).load(std::memory_order_seq_cst) == g.gen &&
        !peer_gone_.load(std::memory_order_acquire) && link_->peer_alive()) {
        ssize_t n =
            ::process_vm_writev(link_->peer_pid, local.data(), nlocal, remote.data(), nremote, 0);
        ok = n == static_cast<ssize_t>(op.length);
        // The connection's CMA probe read; writing may still be refused (a security module,
        // seccomp): then never again on this connection.
        if (n < 0 && (errno == EPERM || errno == ENOSYS || errno == EACCES)) no_direct_ = true;
    }
    inflight.fetch_sub(1, std::memory_order_release);
    last_post_ns_ = base::mono_ns();
    if (ok) {
        counters().direct_writes.fetch_add(1, std::memory_order_relaxed);
        base::stat_add(base::Stat::ShmDirectWrites);
    }
    return ok;
}

// The generation a grant made from here on is stamped with. Read before the engine
// validates the STag (rx_tagged_acquire): a revocation after this read voids the grant;
// one before it was also before the validation, which therefore saw the change. Joining
// g_granting first makes every later revocation reach us.
uint64_t ShmConnection::grant_generation() {
    if (!granting_) {
        std::lock_guard lk(g_grant_mu);
        g_granting.push_back(this);
        granting_ = true;
    }
    return std::atomic_ref<uint64_t>(me_->grant_gen).load(std::memory_order_seq_cst);
}

// Publishes the whole range of the STag `ref` pins, as validated for this connection,
// under generation `gen` (see grant_generation).
void ShmConnection::grant(uint32_t stag, void *ref, uint64_t gen) {
    for (const GrantMemo &m : grant_memo_)
        if (m.stag == stag && m.gen == gen) return;  // already there
    // A stream closed after `gen` was read bumped it when it closed (revoke_grants), and
    // that bump is visible here if the close is.
    if (!rx_open_.load(std::memory_order_acquire)) return;
    uint64_t to = 0, len = 0;
    std::byte *host = nullptr;
    if (!ep_->rx_tagged_grant(ref, to, len, host) || len == 0) return;
    // The slot that holds this STag already (of an older generation), else one of an older
    // generation, else the next in turn.
    uint32_t i = L::kGrantSlots;
    for (uint32_t k = 0; k < L::kGrantSlots && i == L::kGrantSlots; ++k)
        if (grant_memo_[k].stag == stag) i = k;
    for (uint32_t k = 0; k < L::kGrantSlots && i == L::kGrantSlots; ++k)
        if (grant_memo_[k].gen != gen) i = k;
    if (i == L::kGrantSlots) {
        i = next_grant_;
        next_grant_ = (next_grant_ + 1) % L::kGrantSlots;
    }
    L::Grant &g = me_->grants[i];
    std::atomic_ref<uint32_t> seq(g.seq);
    const uint32_t s = seq.load(std::memory_order_relaxed);
    // Seqlock write (read_grant): odd, the fields with release (each then orders the odd
    // `seq` before it), even.
    seq.store(s + 1, std::memory_order_relaxed);
    std::atomic_ref<uint32_t>(g.stag).store(stag, std::memory_order_release);
    std::atomic_ref<uint64_t>(g.gen).store(gen, std::memory_order_release);
    std::atomic_ref<uint64_t>(g.to).store(to, std::memory_order_release);
    std::atomic_ref<uint64_t>(g.len).store(len, std::memory_order_release);
    std::atomic_ref<uint64_t>(g.addr).store(reinterpret_cast<uintptr_t>(host),
                                            std::memory_order_release);
    seq.store(s + 2, std::memory_order_release);
    grant_memo_[i] = {stag, gen};
}

void ShmConnection::set_hint(uint32_t v) {
    idle_polls_ = 0;
    if (v == hint_) return;
    hint_ = v;
    std::atomic_ref<uint32_t>(me_->direct_hint).store(v, std::memory_order_relaxed);
}

// Waits for as long as the peer process lives: a write it announced may still land, and
// the caller (a dereg, say) is about to let the memory go. Only the peer's death (its
// pidfd; grants are given only where there is one) ends the wait otherwise. A live peer's
// write is one system call; one stopped between its announcement and its write (SIGSTOP,
// a debugger) holds the revocation until it runs again, as a DMA in flight holds a NIC's.
void ShmConnection::revoke_grants() {
    std::atomic_ref<uint64_t>(me_->grant_gen).fetch_add(1, std::memory_order_seq_cst);
    std::atomic_ref<uint32_t> inflight(me_->direct_inflight);
    for (uint32_t spins = 0; inflight.load(std::memory_order_seq_cst) != 0; ++spins) {
        if (spins < 64) {
            base::cpu_relax();
        } else if (!link_ || !link_->peer_alive()) {
            break;  // a peer that died inside its write never decrements
        } else if (spins < 1024) {
            std::this_thread::yield();
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(kRevokeSleepUs));
        }
    }
}

void ShmConnection::leave_grants() {
    std::lock_guard lk(g_grant_mu);
    if (!granting_) return;
    revoke_grants();
    std::erase(g_granting, this);
    granting_ = false;
}

// Called only for an STag that was granted (engine::withdraw_grants). A target that joins
// g_granting after this walk validates after it too, so it sees the change the caller made
// before calling (g_grant_mu orders the two).
void revoke_all_grants() {
    std::lock_guard lk(g_grant_mu);
    for (ShmConnection *c : g_granting)
        c->revoke_grants();
}

}  // namespace softrnic::transport::shm::detail
