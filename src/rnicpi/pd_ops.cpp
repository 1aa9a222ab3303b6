// Protection domains (ri_pd_alloc, ri_pd_dealloc).
#include "rnicpi/ops.hpp"

namespace softrnic::rnicpi::ops {

namespace {

template <bool Locked>
struct PdOps {
    using Serial = SerialScope<Locked>;

    static ri_api_return_t pd_alloc(ri_rnic_handle_t h, ri_pd_handle_t *pd, ri_vp_data_t,
                                    ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!pd) return RI_RET_INVALID_PARAMETER;
            Pd *p = nullptr;
            ri_api_return_t ret = r->dev->create_pd(*r, os, p);
            if (ret == RI_RET_SUCCESS) *pd = p->handle;
            return ret;
        });
    }

    static ri_api_return_t pd_dealloc(ri_rnic_handle_t h, ri_pd_handle_t pd, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            return r->dev->destroy_pd(*r, pd, Serial::kBy);
        });
    }

    static void fill(ri_ops_t &t) {
        t.ri_op_pd_alloc = pd_alloc;
        t.ri_op_pd_dealloc = pd_dealloc;
    }
};

}  // namespace

void fill_pd_ops(ri_ops_t &t, bool locked) {
    fill_both<PdOps>(t, locked);
}

}  // namespace softrnic::rnicpi::ops
