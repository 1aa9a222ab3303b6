// Shared by the ri_op_* files (one per object kind): the handle checks every call starts
// with, the exception wall, and the per-table serialisation.
//
// Two tables are built from the same code: consumer-serialised (no locks on the data path)
// and provider-serialised (each call holds the RNIC handle's mutex), per RNICPI
// L1316-1363. Each *_ops.cpp file holds a `template <bool Locked>` struct of static
// calls and fills its entries of both tables (fill_*_ops). No exception crosses this
// boundary.
#pragma once

#include <mutex>
#include <new>

#include "engine/abi.hpp"
#include "engine/device.hpp"
#include "engine/qp.hpp"
#include "rnicpi/rnicpi.h"

namespace softrnic::rnicpi::ops {

using namespace softrnic::engine;

// Runs a slow-path call: clears *err and turns any exception into a return code.
template <class F>
ri_api_return_t guarded(ri_err_data_t *err, F &&f) noexcept {
    if (err) *err = 0;
    try {
        return f();
    } catch (const std::bad_alloc &) {
        return RI_RET_RESOURCE_SHORTAGE;
    } catch (...) {
        return RI_RET_FAIL;
    }
}

// Slow-path RNIC handle check: the handle must be one this provider issued and still owns.
inline RnicHandle *slow_rnic(ri_rnic_handle_t h) {
    return rnic_from_handle(h);
}

// Fast-path check: one compare (a forged pointer may fault, as L1413 allows).
inline RnicHandle *fast_rnic(ri_rnic_handle_t h) {
    auto *r = static_cast<RnicHandle *>(h);
    return (r && r->magic == RnicHandle::kMagic) ? r : nullptr;
}

// The object behind `h` when it is one of `r`'s.
template <class T>
T *owned(ObjectTable<T> &t, void *h, RnicHandle *r) {
    T *o = t.lookup(h);
    return (o && o->owner == r) ? o : nullptr;
}

inline MemEntry *owned_mem(Device &d, void *h, bool window, RnicHandle *r) {
    return d.owned_mem(h, window, r);
}

// Provider-serialised calls take the handle's mutex; consumer-serialised take nothing.
// Calls the engine serialises itself (the destroys) are told which applies: kBy.
template <bool Locked>
struct SerialScope {
    static constexpr Serialisation kBy =
        Locked ? Serialisation::ByProvider : Serialisation::ByConsumer;
    explicit SerialScope(RnicHandle *r) : r_(Locked ? r : nullptr) {
        if (r_) r_->serial.lock();
    }
    ~SerialScope() {
        if (r_) r_->serial.unlock();
    }
    SerialScope(const SerialScope &) = delete;
    SerialScope &operator=(const SerialScope &) = delete;
    RnicHandle *r_;
};

// A file's entries go into both tables: Ops<true> for the provider-serialised one (its
// calls take the per-table lock), Ops<false> for the consumer-serialised one.
template <template <bool> class Ops>
void fill_both(ri_ops_t &t, bool locked) {
    if (locked)
        Ops<true>::fill(t);
    else
        Ops<false>::fill(t);
}

// Each fills its calls' entries of one table (provider-serialised when `locked`).
void fill_rnic_ops(ri_ops_t &t, bool locked);
void fill_pd_ops(ri_ops_t &t, bool locked);
void fill_cq_ops(ri_ops_t &t, bool locked);
void fill_srq_ops(ri_ops_t &t, bool locked);
void fill_qp_ops(ri_ops_t &t, bool locked);
void fill_mem_ops(ri_ops_t &t, bool locked);
void fill_wr_ops(ri_ops_t &t, bool locked);
void fill_personality_ops(ri_ops_t &t, bool locked);

}  // namespace softrnic::rnicpi::ops
