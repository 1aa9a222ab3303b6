// What every RNICPI resource object shares (PD, CQ, SRQ, QP; memory entries hold the same
// references), and the counted references objects hold on each other.
//
// A destroy call refuses while anything still uses the object (RI_RET_PD_INUSE,
// RI_RET_CQ_INUSE, RI_RET_SRQ_INUSE, RI_RET_RNIC_INUSE): a QP uses its PD, CQs and SRQ,
// an SRQ or a memory entry its PD, and every object the RNIC handle it was created on.
// Those uses are Use<T> members, so taking one is constructing it and giving it back is
// destroying (or resetting) it: no count is edited by hand.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

#include "rnicpi/rnicpi.h"

namespace softrnic::engine {

class Device;
struct RnicHandle;

// How many Use<T> references name an object.
class UseCount {
  public:
    uint32_t count() const { return n_.load(std::memory_order_acquire); }
    bool in_use() const { return count() != 0; }

  private:
    template <class T>
    friend class Use;
    void add() { n_.fetch_add(1, std::memory_order_acq_rel); }
    void drop() { n_.fetch_sub(1, std::memory_order_acq_rel); }
    std::atomic<uint32_t> n_{0};
};

// A counted reference to a T that has a `UseCount users` member: it holds one use while it
// names the object. Reads like the plain pointer it wraps (->, conversion to T *), so code
// on the data path sees no difference.
template <class T>
class Use {
  public:
    Use() = default;
    explicit Use(T *p) : p_(p) {
        if (p_) p_->users.add();
    }
    Use(Use &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    Use &operator=(Use &&o) noexcept {
        if (this != &o) {
            reset();
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    Use(const Use &) = delete;
    Use &operator=(const Use &) = delete;
    ~Use() { reset(); }

    // Names `p` instead (taking its use before giving back the old one), or nothing.
    void reset(T *p = nullptr) {
        if (p) p->users.add();
        if (p_) p_->users.drop();
        p_ = p;
    }

    T *get() const { return p_; }
    T *operator->() const { return p_; }
    operator T *() const { return p_; }

  private:
    T *p_ = nullptr;
};

// The common part of a PD, CQ, SRQ or QP.
struct Object {
    Device *dev = nullptr;
    // The consumer's RNIC handle the object was created on; ri_rnic_free_hdl refuses while
    // the handle still owns anything (L2456).
    Use<RnicHandle> owner;
    // The handle the consumer knows the object by (ObjectTable::insert).
    void *handle = nullptr;
    // Passed back with every event about the object.
    ri_os_data_t os_data = nullptr;
    // Other objects using this one (Use<T> references to it).
    UseCount users;
};

}  // namespace softrnic::engine
