// The thread registry and the process-wide barrier behind ScopedGate (see sync.hpp).
#include "base/sync.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cassert>
#include <cstdlib>
#include <new>

#include "base/config.hpp"

namespace softrnic::base::detail {

namespace {

// Every block ever allocated, newest first. Pushed with a CAS, never unlinked.
std::atomic<ReaderSlots *> g_blocks{nullptr};

int membarrier(int cmd) {
    return static_cast<int>(::syscall(__NR_membarrier, cmd, 0u, 0));
}

// Decided once, while the library loads and before any thread can use a gate: users and
// closers must agree on who pays for the ordering.
bool decide_asymmetric() {
    // SOFTRNIC_GATE_FENCED=1 keeps the fenced users (for tests of that path, and to rule
    // membarrier in or out when chasing a problem).
    if (const char *e = env_value(EnvVar::GateFenced); e && e[0] == '1') return false;
    int cmds = membarrier(MEMBARRIER_CMD_QUERY);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
    return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

// Gives the block back when its thread exits. A thread_local object with a destructor,
// reached only from the slow path: the fast path reads the initial-exec pointer.
struct Registration {
    ReaderSlots *block = nullptr;
    ~Registration() {
        // Scopes end before their thread: every slot of the block is empty here.
        assert(block == nullptr || block->depth == 0);
        tls_reader_slots = nullptr;
        exited = true;
        if (block) block->owned.store(false, std::memory_order_release);
    }
    static inline thread_local bool exited = false;
};

}  // namespace

[[gnu::tls_model("initial-exec")]] constinit thread_local ReaderSlots *tls_reader_slots = nullptr;

bool g_asymmetric_fences = false;

namespace {
// A load-time constructor rather than a dynamic initialiser: it runs before anything in
// the library can be called, whatever the order of the library's other initialisers.
[[gnu::constructor]] void decide_fences_at_load() {
    g_asymmetric_fences = decide_asymmetric();
}
}  // namespace

ReaderSlots *reader_slots_first_use() {
    if (Registration::exited) return nullptr;
    static thread_local Registration reg;
    if (reg.block) return reg.block;
    ReaderSlots *b = nullptr;
    // A block an exited thread left: its slots are all empty (scopes end before threads).
    for (ReaderSlots *p = g_blocks.load(std::memory_order_acquire); p; p = p->next) {
        bool unowned = false;
        if (!p->owned.load(std::memory_order_relaxed) &&
            p->owned.compare_exchange_strong(unowned, true, std::memory_order_acquire)) {
            b = p;
            break;
        }
    }
    if (b == nullptr) {
        // No exception may leave here (C entry points call in): without memory the
        // thread's entries count instead.
        b = new (std::nothrow) ReaderSlots;
        if (b == nullptr) return nullptr;
        for (auto &h : b->held)
            h.store(nullptr, std::memory_order_relaxed);
        b->owned.store(true, std::memory_order_relaxed);
        ReaderSlots *head = g_blocks.load(std::memory_order_relaxed);
        do {
            b->next = head;
        } while (!g_blocks.compare_exchange_weak(head, b, std::memory_order_release,
                                                 std::memory_order_relaxed));
    }
    b->depth = 0;
    reg.block = b;
    tls_reader_slots = b;
    return b;
}

void process_wide_barrier() {
    if (!g_asymmetric_fences) return;  // users fence their own stores
    // Registered when the library loaded (a forked child inherits the registration, an
    // exec'd image starts over and loads us again). Register again if the kernel disagrees;
    // an ordering we cannot get must not be assumed, so failing that is fatal.
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
    if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
        membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return;
    std::abort();
}

void wait_scoped_users(const void *gate) {
    for (ReaderSlots *p = g_blocks.load(std::memory_order_acquire); p; p = p->next) {
        for (auto &h : p->held) {
            unsigned spins = 0;
            // seq_cst: the fenced users' half of the store-load pairing (see sync.hpp).
            while (h.load(std::memory_order_seq_cst) == gate)
                relax(spins);
        }
    }
}

}  // namespace softrnic::base::detail

namespace softrnic::base {

void GateScope::enter_slow(ScopedGate &g, bool wait) {
    detail::ReaderSlots *s = detail::tls_reader_slots;
    if (s == nullptr) s = detail::reader_slots_first_use();
    if (s == nullptr || s->depth == detail::kScopedDepth) {
        // No slot (the thread is exiting, or too deeply nested): count instead.
        if (wait ? g.enter() : g.try_enter()) counted_ = &g;
        return;
    }
    std::atomic<const void *> &slot = s->held[s->depth];
    unsigned spins = 0;
    for (;;) {
        if (detail::g_asymmetric_fences) {
            slot.store(&g, std::memory_order_release);
            std::atomic_signal_fence(std::memory_order_seq_cst);
        } else {
            slot.store(&g, std::memory_order_seq_cst);
        }
        if (!g.closed_.load(std::memory_order_seq_cst)) break;
        slot.store(nullptr, std::memory_order_release);
        if (!wait) return;
        // Wait without a claim on the slot (a closer scanning it would wait for us), and
        // claim again only once the gate looks open.
        while (g.closed_.load(std::memory_order_acquire)) {
            if (g.dead_.load(std::memory_order_acquire)) return;
            relax(spins);
        }
    }
    ++s->depth;
    slot_ = &slot;
}

}  // namespace softrnic::base
