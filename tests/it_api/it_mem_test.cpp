// libitapi.so.2 memory management through its public calls: LMRs (create in the three
// bindings, query, modify, free), RMRs (create, query, free), the synchronisation calls, I/O
// mappings, and what they do to PZs and IAs. Each test names the lines of the IT-API 2.1
// specification it checks (IT-API Lnnnn).
#define ITAPI_ENABLE_V21_BINDINGS
#include <gtest/gtest.h>
#include <it_api.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "it_raw_calls.h"

namespace {

// An address no mapping can cover: below the kernel's lowest mmap address
// (vm.mmap_min_addr, at least a page). Not a page just unmapped, which another thread (the
// RNIC's, the sanitizer's) may map again before the call.
void *const kUnmapped = reinterpret_cast<void *>(uintptr_t(0x100));

class ItMem : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(it_ia_create("softrnic", 2, 1, &ia), IT_SUCCESS);
        ASSERT_EQ(it_pz_create(ia, &pz), IT_SUCCESS);
    }
    void TearDown() override {
        if (ia) {
            EXPECT_EQ(it_ia_free(ia), IT_SUCCESS);
        }
    }

    it_lmr_handle_t lmr(it_mem_priv_t privs = IT_PRIV_LOCAL, it_rmr_context_t *ctx = nullptr,
                        void *addr = nullptr, it_length_t len = 0) {
        it_lmr_handle_t h = nullptr;
        EXPECT_EQ(it_lmr_create(pz, addr ? addr : buf.data(), nullptr, len ? len : buf.size(),
                                IT_ADDR_MODE_ABSOLUTE, privs, IT_LMR_FLAG_NONE, 0, &h, ctx),
                  IT_SUCCESS);
        return h;
    }
    static bool live(it_handle_t h) {
        it_handle_type_enum_t t;
        return it_get_handle_type(h, &t) == IT_SUCCESS;
    }
    // Runs `f` in a child that gave up root: what a non-privileged consumer gets.
    static void as_unprivileged(const std::function<bool()> &f) {
        if (::geteuid() != 0) {
            EXPECT_TRUE(f());
            return;
        }
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            if (::seteuid(65534) != 0) ::_exit(2);
            ::_exit(f() ? 0 : 1);
        }
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status));
        EXPECT_EQ(WEXITSTATUS(status), 0);
    }

    it_ia_handle_t ia = nullptr;
    it_pz_handle_t pz = nullptr;
    std::vector<char> buf = std::vector<char>(8192);
};

// IT-API L6477-L6480, L7310-L7410: the LMR's attributes as created, byte-exact.
TEST_F(ItMem, LmrCreateQueryRoundTrip_L7310) {
    it_rmr_context_t ctx = 0;
    it_lmr_handle_t h = nullptr;
    char *addr = buf.data() + 3;  // byte granularity: any start, any length
    ASSERT_EQ(it_lmr_create(pz, addr, nullptr, 4001, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_ALL,
                            IT_LMR_FLAG_NON_SHAREABLE, 77, &h, &ctx),
              IT_SUCCESS);
    it_handle_type_enum_t t;
    ASSERT_EQ(it_get_handle_type(h, &t), IT_SUCCESS);
    EXPECT_EQ(t, IT_HANDLE_TYPE_LMR);
    EXPECT_NE(ctx, 0u);
    it_lmr_param_t p;
    std::memset(&p, 0xee, sizeof p);
    ASSERT_EQ(it_lmr_query(h, IT_LMR_PARAM_ALL, &p), IT_SUCCESS);
    EXPECT_EQ(p.ia, ia);
    EXPECT_EQ(p.pz, pz);
    EXPECT_EQ(p.addr, addr);
    EXPECT_EQ(p.length, 4001u);
    EXPECT_EQ(p.privs, IT_PRIV_ALL);
    EXPECT_EQ(p.flags, IT_LMR_FLAG_NON_SHAREABLE);
    EXPECT_EQ(p.shared_id, 77u);
    EXPECT_EQ(p.rmr_context, ctx);
    EXPECT_EQ(p.actual_addr, addr);
    EXPECT_EQ(p.actual_length, 4001u);
    EXPECT_EQ(p.addr_mode, IT_ADDR_MODE_ABSOLUTE);
    EXPECT_EQ(p.linked, IT_TRUE);
    EXPECT_EQ(p.iobl_num_elts, 0u);
    // One field at a time: only that one is written.
    std::memset(&p, 0xee, sizeof p);
    ASSERT_EQ(it_lmr_query(h, IT_LMR_PARAM_LENGTH, &p), IT_SUCCESS);
    EXPECT_EQ(p.length, 4001u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.addr), uintptr_t(0xeeeeeeeeeeeeeeeeull));
    // An empty mask needs no parameters.
    EXPECT_EQ(it_lmr_query(h, it_lmr_param_mask_t(0), nullptr), IT_SUCCESS);
    EXPECT_EQ(it_lmr_query(h, IT_LMR_PARAM_PZ, nullptr), IT_ERR_FAULT);
    EXPECT_EQ(raw_lmr_query(h, 0x8000, &p), IT_ERR_INVALID_MASK);
    EXPECT_EQ(it_lmr_free(h), IT_SUCCESS);
    EXPECT_FALSE(live(h));
}

// IT-API L6549-L6557: an RMR Context only with remote privileges; each LMR has its own.
TEST_F(ItMem, RmrContextOnlyWithRemotePrivileges_L6552) {
    it_rmr_context_t ctx = 0x12345678;
    it_lmr_handle_t local = lmr(IT_PRIV_LOCAL, &ctx);
    EXPECT_EQ(ctx, 0x12345678u);  // not written: undefined without remote rights
    it_lmr_param_t p{};
    ASSERT_EQ(it_lmr_query(local, IT_LMR_PARAM_RMR_CONTEXT, &p), IT_SUCCESS);
    EXPECT_EQ(p.rmr_context, 0u);
    it_rmr_context_t c1 = 0, c2 = 0;
    it_lmr_handle_t r1 = lmr(it_mem_priv_t(IT_PRIV_LOCAL_READ | IT_PRIV_REMOTE_READ), &c1);
    it_lmr_handle_t r2 = lmr(it_mem_priv_t(IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE), &c2);
    EXPECT_NE(c1, 0u);
    EXPECT_NE(c2, 0u);
    EXPECT_NE(c1, c2);
    // Remote read without local read is allowed on iWARP (only the IB page forbids it).
    it_lmr_handle_t r3 = lmr(IT_PRIV_REMOTE_READ);
    EXPECT_NE(r3, nullptr);
    // A NULL rmr_context is allowed (IT_NO_ADDR): nothing is returned.
    EXPECT_NE(lmr(IT_PRIV_REMOTE_READ, nullptr), nullptr);
    for (it_lmr_handle_t h : {local, r1, r2, r3})
        EXPECT_EQ(it_lmr_free(h), IT_SUCCESS);
}

// IT-API L6589-L6591, Appendix C: the 1.0 and 2.0 bindings; Relative Addressing, which the IA
// reports in addr_mode_relative_support.
TEST_F(ItMem, BindingsAndRelativeAddressing_L6600) {
    it_ia_info_t *info = nullptr;
    ASSERT_EQ(it_ia_query(ia, &info), IT_SUCCESS);
    const bool relative = info->addr_mode_relative_support == IT_TRUE;
    it_ia_info_free(info);
    it_lmr_handle_t h10 = nullptr, h20 = nullptr;
    ASSERT_EQ(
        it_lmr_create10(pz, buf.data(), 64, IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &h10, nullptr),
        IT_SUCCESS);
    it_lmr_param_t p{};
    ASSERT_EQ(it_lmr_query(h10, IT_LMR_PARAM_ADDR_MODE, &p), IT_SUCCESS);
    EXPECT_EQ(p.addr_mode, IT_ADDR_MODE_ABSOLUTE);
    const it_status_t rel = it_lmr_create20(pz, buf.data() + 100, 64, IT_ADDR_MODE_RELATIVE,
                                            IT_PRIV_ALL, IT_LMR_FLAG_NONE, 0, &h20, nullptr);
    if (!relative) {
        EXPECT_EQ(rel, IT_ERR_INVALID_ADDR_MODE);
    } else {
        ASSERT_EQ(rel, IT_SUCCESS);
        ASSERT_EQ(it_lmr_query(h20, IT_LMR_PARAM_ALL, &p), IT_SUCCESS);
        EXPECT_EQ(p.addr_mode, IT_ADDR_MODE_RELATIVE);
        EXPECT_EQ(p.addr, buf.data() + 100);  // absolute, whatever the mode (IT-API L7379)
        EXPECT_EQ(it_lmr_free(h20), IT_SUCCESS);
    }
    EXPECT_EQ(it_lmr_free(h10), IT_SUCCESS);
}

// IT-API L6594-L6626: each error of it_lmr_create, and nothing created.
TEST_F(ItMem, LmrCreateErrors_L6594) {
    it_lmr_handle_t h = nullptr;
    char *b = buf.data();
    const size_t n = buf.size();
    auto create = [&](it_pz_handle_t z, void *a, it_length_t len, it_mem_priv_t privs) {
        return it_lmr_create(z, a, nullptr, len, IT_ADDR_MODE_ABSOLUTE, privs, IT_LMR_FLAG_NONE, 0,
                             &h, nullptr);
    };
    EXPECT_EQ(create(nullptr, b, n, IT_PRIV_LOCAL), IT_ERR_INVALID_PZ);
    EXPECT_EQ(create(reinterpret_cast<it_pz_handle_t>(ia), b, n, IT_PRIV_LOCAL), IT_ERR_INVALID_PZ);
    EXPECT_EQ(it_lmr_create(pz, b, nullptr, n, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                            IT_LMR_FLAG_NONE, 0, nullptr, nullptr),
              IT_ERR_FAULT);
    // Privileges: none, an unknown bit, remote write without local write (IT-API L6505-L6506).
    EXPECT_EQ(raw_lmr_create(pz, b, n, IT_ADDR_MODE_ABSOLUTE, 0, 0, &h, nullptr),
              IT_ERR_INVALID_PRIVS);
    EXPECT_EQ(raw_lmr_create(pz, b, n, IT_ADDR_MODE_ABSOLUTE, 0x21, 0, &h, nullptr),
              IT_ERR_INVALID_PRIVS);
    EXPECT_EQ(create(pz, b, n, it_mem_priv_t(IT_PRIV_LOCAL_READ | IT_PRIV_REMOTE_WRITE)),
              IT_ERR_INVALID_PRIVS);
    EXPECT_EQ(raw_lmr_create(pz, b, n, 2, IT_PRIV_LOCAL, 0, &h, nullptr), IT_ERR_INVALID_ADDR_MODE);
    EXPECT_EQ(raw_lmr_create(pz, b, n, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL, 0x10, &h, nullptr),
              IT_ERR_INVALID_FLAGS);
    // Flag 0 and every defined flag are accepted.
    for (unsigned f : {0u, 1u, 2u, 4u, 8u, 0xfu}) {
        it_lmr_handle_t ok = nullptr;
        ASSERT_EQ(raw_lmr_create(pz, b, n, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL, f, &ok, nullptr),
                  IT_SUCCESS)
            << f;
        it_lmr_param_t p{};
        ASSERT_EQ(it_lmr_query(ok, IT_LMR_PARAM_FLAG, &p), IT_SUCCESS);
        // Never matched (SHARED clear), always coherent (NONCOHERENT ignored, IT-API L6542).
        EXPECT_EQ(unsigned(p.flags), f & (IT_LMR_FLAG_NONE | IT_LMR_FLAG_NON_SHAREABLE)) << f;
        EXPECT_EQ(it_lmr_free(ok), IT_SUCCESS);
    }
    EXPECT_EQ(create(pz, b, 0, IT_PRIV_LOCAL), IT_ERR_INVALID_LENGTH);
    // Addresses: NULL, a range that wraps, memory that is not mapped.
    EXPECT_EQ(create(pz, nullptr, n, IT_PRIV_LOCAL), IT_ERR_FAULT);
    EXPECT_EQ(create(pz, reinterpret_cast<void *>(UINTPTR_MAX - 10), 100, IT_PRIV_LOCAL),
              IT_ERR_FAULT);
    EXPECT_EQ(create(pz, kUnmapped, 64, IT_PRIV_LOCAL_READ), IT_ERR_FAULT);
    EXPECT_EQ(create(pz, kUnmapped, 64, IT_PRIV_LOCAL), IT_ERR_FAULT);
    const long page = ::sysconf(_SC_PAGESIZE);
    // Read-only memory: reading may be granted, writing not (IT-API L6513-L6519).
    void *ro = ::mmap(nullptr, size_t(page), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(ro, MAP_FAILED);
    EXPECT_EQ(create(pz, ro, 64, IT_PRIV_LOCAL), IT_ERR_ACCESS);
    EXPECT_EQ(create(pz, ro, 64, IT_PRIV_ALL), IT_ERR_ACCESS);
    it_lmr_handle_t rd = nullptr;
    EXPECT_EQ(it_lmr_create(pz, ro, nullptr, 64, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL_READ,
                            IT_LMR_FLAG_NONE, 0, &rd, nullptr),
              IT_SUCCESS);
    EXPECT_EQ(it_lmr_free(rd), IT_SUCCESS);
    ::munmap(ro, size_t(page));
    // Nothing was left behind: the PZ is not busy.
    EXPECT_EQ(it_pz_free(pz), IT_SUCCESS);
    pz = nullptr;
}

// IT-API L6480, L6617, L6621-L6622: an IOBL is for a Privileged Consumer, and this IA supports
// no IOBL type.
TEST_F(ItMem, IoblNeedsPrivilegeAndIsNotSupported_L6480) {
    it_io_addr_t elt = reinterpret_cast<it_io_addr_t>(buf.data());
    it_iobl_t iobl{};
    iobl.iobl_type = IT_IOBL_PAGE_LIST;
    iobl.list.ce_list.list_elt = &elt;
    iobl.list.ce_list.elt_len = 4096;
    iobl.num_elts = 1;
    auto create = [this, &iobl] {
        it_lmr_handle_t h = nullptr;
        return it_lmr_create(pz, buf.data(), &iobl, 64, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                             IT_LMR_FLAG_NONE, 0, &h, nullptr);
    };
    if (::geteuid() == 0) {
        EXPECT_EQ(create(), IT_ERR_INVALID_IOBL);
    }
    as_unprivileged([&] { return create() == IT_ERR_NO_PERMISSION; });
}

// IT-API L6888-L6930: free, then the handle is invalid; a handle of another kind is invalid.
TEST_F(ItMem, LmrFree_L6905) {
    it_lmr_handle_t h = lmr();
    EXPECT_EQ(it_lmr_free(nullptr), IT_ERR_INVALID_LMR);
    EXPECT_EQ(it_lmr_free(reinterpret_cast<it_lmr_handle_t>(pz)), IT_ERR_INVALID_LMR);
    EXPECT_EQ(it_lmr_free(h), IT_SUCCESS);
    EXPECT_EQ(it_lmr_free(h), IT_ERR_INVALID_LMR);
    it_lmr_param_t p{};
    EXPECT_EQ(it_lmr_query(h, IT_LMR_PARAM_ALL, &p), IT_ERR_INVALID_LMR);
    EXPECT_EQ(raw_lmr_modify(h, IT_LMR_PARAM_MEM_PRIV, nullptr, IT_PRIV_LOCAL), IT_ERR_INVALID_LMR);
}

// IT-API L10302-L10305: a PZ named by an LMR or an RMR cannot be freed.
TEST_F(ItMem, PzBusyWhileAnLmrOrRmrNamesIt_L10302) {
    it_lmr_handle_t l = lmr();
    EXPECT_EQ(it_pz_free(pz), IT_ERR_PZ_BUSY);
    it_rmr_handle_t r = nullptr;
    ASSERT_EQ(it_rmr_create(pz, IT_RMR_TYPE_DEFAULT, &r), IT_SUCCESS);
    EXPECT_EQ(it_lmr_free(l), IT_SUCCESS);
    EXPECT_EQ(it_pz_free(pz), IT_ERR_PZ_BUSY);
    EXPECT_EQ(it_rmr_free(r), IT_SUCCESS);
    EXPECT_EQ(it_pz_free(pz), IT_SUCCESS);
    pz = nullptr;
}

// IT-API L7246-L7281: new privileges issue a new RMR Context; a new PZ moves the LMR.
TEST_F(ItMem, LmrModifyPrivilegesAndPz_L7255) {
    it_rmr_context_t old_ctx = 0;
    it_lmr_handle_t h = lmr(it_mem_priv_t(IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ), &old_ctx);
    ASSERT_EQ(raw_lmr_modify(h, IT_LMR_PARAM_MEM_PRIV, nullptr, IT_PRIV_ALL), IT_SUCCESS);
    it_lmr_param_t p{};
    ASSERT_EQ(it_lmr_query(h, IT_LMR_PARAM_ALL, &p), IT_SUCCESS);
    EXPECT_EQ(p.privs, IT_PRIV_ALL);
    EXPECT_NE(p.rmr_context, 0u);
    EXPECT_NE(p.rmr_context, old_ctx);  // the old context is revoked (IT-API L7255-L7260)
    EXPECT_EQ(p.addr, buf.data());
    EXPECT_EQ(p.length, buf.size());
    // Without remote rights no context remains.
    ASSERT_EQ(raw_lmr_modify(h, IT_LMR_PARAM_MEM_PRIV, nullptr, IT_PRIV_LOCAL_READ), IT_SUCCESS);
    ASSERT_EQ(raw_lmr_query(h, IT_LMR_PARAM_RMR_CONTEXT | IT_LMR_PARAM_MEM_PRIV, &p), IT_SUCCESS);
    EXPECT_EQ(p.privs, IT_PRIV_LOCAL_READ);
    EXPECT_EQ(p.rmr_context, 0u);
    // Another PZ: the first is free, the second busy.
    it_pz_handle_t pz2 = nullptr;
    ASSERT_EQ(it_pz_create(ia, &pz2), IT_SUCCESS);
    ASSERT_EQ(raw_lmr_modify(h, IT_LMR_PARAM_PZ, pz2, 0), IT_SUCCESS);
    ASSERT_EQ(raw_lmr_query(h, IT_LMR_PARAM_PZ | IT_LMR_PARAM_MEM_PRIV, &p), IT_SUCCESS);
    EXPECT_EQ(p.pz, pz2);
    EXPECT_EQ(p.privs, IT_PRIV_LOCAL_READ);
    EXPECT_EQ(it_pz_free(pz2), IT_ERR_PZ_BUSY);
    EXPECT_EQ(it_pz_free(pz), IT_SUCCESS);
    pz = pz2;
    // Both at once, and an empty mask changes nothing.
    ASSERT_EQ(raw_lmr_modify(h, IT_LMR_PARAM_PZ | IT_LMR_PARAM_MEM_PRIV, pz2, IT_PRIV_LOCAL),
              IT_SUCCESS);
    EXPECT_EQ(it_lmr_modify(h, it_lmr_param_mask_t(0), nullptr), IT_SUCCESS);
    ASSERT_EQ(it_lmr_query(h, IT_LMR_PARAM_MEM_PRIV, &p), IT_SUCCESS);
    EXPECT_EQ(p.privs, IT_PRIV_LOCAL);
    EXPECT_EQ(it_lmr_free(h), IT_SUCCESS);
}

// IT-API L7275-L7277: a bad handle or mask leaves the LMR as it was.
TEST_F(ItMem, LmrModifyBadMaskLeavesTheLmr_L7275) {
    it_lmr_handle_t h = lmr();
    EXPECT_EQ(raw_lmr_modify(nullptr, IT_LMR_PARAM_MEM_PRIV, nullptr, IT_PRIV_ALL),
              IT_ERR_INVALID_LMR);
    EXPECT_EQ(raw_lmr_modify(h, IT_LMR_PARAM_ADDR, nullptr, IT_PRIV_ALL), IT_ERR_INVALID_MASK);
    EXPECT_EQ(raw_lmr_modify(h, IT_LMR_PARAM_ALL, nullptr, IT_PRIV_ALL), IT_ERR_INVALID_MASK);
    EXPECT_EQ(raw_lmr_modify(h, 0x8000, nullptr, IT_PRIV_ALL), IT_ERR_INVALID_MASK);
    EXPECT_EQ(it_lmr_modify(h, IT_LMR_PARAM_MEM_PRIV, nullptr), IT_ERR_FAULT);
    EXPECT_TRUE(live(h));
    it_lmr_param_t p{};
    ASSERT_EQ(it_lmr_query(h, IT_LMR_PARAM_MEM_PRIV, &p), IT_SUCCESS);
    EXPECT_EQ(p.privs, IT_PRIV_LOCAL);
    EXPECT_EQ(it_lmr_free(h), IT_SUCCESS);
}

// IT-API L7279-L7281: every other error frees the LMR, and with it its hold on the PZ.
TEST_F(ItMem, LmrModifyOtherErrorsFreeTheLmr_L7279) {
    it_lmr_handle_t h = lmr();
    EXPECT_EQ(raw_lmr_modify(h, IT_LMR_PARAM_MEM_PRIV, nullptr, 0), IT_ERR_INVALID_PRIVS);
    EXPECT_FALSE(live(h));
    h = lmr();
    EXPECT_EQ(raw_lmr_modify(h, IT_LMR_PARAM_MEM_PRIV, nullptr,
                             IT_PRIV_LOCAL_READ | IT_PRIV_REMOTE_WRITE),
              IT_ERR_INVALID_PRIVS);
    EXPECT_FALSE(live(h));
    h = lmr();
    EXPECT_EQ(raw_lmr_modify(h, IT_LMR_PARAM_PZ, reinterpret_cast<it_pz_handle_t>(ia), 0),
              IT_ERR_INVALID_PZ);
    EXPECT_FALSE(live(h));
    // A PZ of another IA is not one this LMR can move to.
    it_ia_handle_t ia2 = nullptr;
    it_pz_handle_t other = nullptr;
    ASSERT_EQ(it_ia_create("softrnic", 2, 1, &ia2), IT_SUCCESS);
    ASSERT_EQ(it_pz_create(ia2, &other), IT_SUCCESS);
    h = lmr();
    EXPECT_EQ(raw_lmr_modify(h, IT_LMR_PARAM_PZ, other, 0), IT_ERR_INVALID_PZ);
    EXPECT_FALSE(live(h));
    EXPECT_EQ(it_ia_free(ia2), IT_SUCCESS);
    // Write rights on read-only memory: not allowed, and the LMR is gone.
    const long page = ::sysconf(_SC_PAGESIZE);
    void *ro = ::mmap(nullptr, size_t(page), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(ro, MAP_FAILED);
    h = lmr(IT_PRIV_LOCAL_READ, nullptr, ro, 128);
    EXPECT_EQ(raw_lmr_modify(h, IT_LMR_PARAM_MEM_PRIV, nullptr, IT_PRIV_LOCAL), IT_ERR_ACCESS);
    EXPECT_FALSE(live(h));
    ::munmap(ro, size_t(page));
    EXPECT_EQ(it_pz_free(pz), IT_SUCCESS);  // no LMR holds it any more
    pz = nullptr;
}

// IT-API L10484-L10545, L16585-L16605: RMR types, as the IA reports them.
TEST_F(ItMem, RmrCreateTypes_L10528) {
    it_ia_info_t *info = nullptr;
    ASSERT_EQ(it_ia_query(ia, &info), IT_SUCCESS);
    const unsigned types = info->rmr_types_supported;
    it_ia_info_free(info);
    EXPECT_TRUE(types & IT_RMR_TYPE_NARROW);  // every iWARP IA (IT-API L10543)
    it_rmr_handle_t r = nullptr;
    it_rmr_param_t p{};
    ASSERT_EQ(it_rmr_create(pz, IT_RMR_TYPE_DEFAULT, &r), IT_SUCCESS);
    ASSERT_EQ(it_rmr_query(r, IT_RMR_PARAM_TYPE, &p), IT_SUCCESS);
    EXPECT_EQ(p.type, IT_RMR_TYPE_NARROW);
    EXPECT_EQ(it_rmr_free(r), IT_SUCCESS);
    ASSERT_EQ(it_rmr_create(pz, IT_RMR_TYPE_NARROW, &r), IT_SUCCESS);
    EXPECT_EQ(it_rmr_free(r), IT_SUCCESS);
    const it_status_t wide = it_rmr_create(pz, IT_RMR_TYPE_WIDE, &r);
    if (types & IT_RMR_TYPE_WIDE) {
        ASSERT_EQ(wide, IT_SUCCESS);
        ASSERT_EQ(it_rmr_query(r, IT_RMR_PARAM_TYPE, &p), IT_SUCCESS);
        EXPECT_EQ(p.type, IT_RMR_TYPE_WIDE);
        EXPECT_EQ(it_rmr_free(r), IT_SUCCESS);
        // IT-API 1.0 makes Wide RMRs (IT-API L10552-L10553).
        ASSERT_EQ(it_rmr_create10(pz, &r), IT_SUCCESS);
        ASSERT_EQ(it_rmr_query(r, IT_RMR_PARAM_TYPE, &p), IT_SUCCESS);
        EXPECT_EQ(p.type, IT_RMR_TYPE_WIDE);
        EXPECT_EQ(it_rmr_free(r), IT_SUCCESS);
    } else {
        EXPECT_EQ(wide, IT_ERR_INVALID_RMR_TYPE);
    }
    EXPECT_EQ(raw_rmr_create(pz, 3, &r), IT_ERR_INVALID_RMR_TYPE);
    EXPECT_EQ(raw_rmr_create(pz, 0x100, &r), IT_ERR_INVALID_RMR_TYPE);
    EXPECT_EQ(it_rmr_create(nullptr, IT_RMR_TYPE_DEFAULT, &r), IT_ERR_INVALID_PZ);
    EXPECT_EQ(it_rmr_create(reinterpret_cast<it_pz_handle_t>(ia), IT_RMR_TYPE_DEFAULT, &r),
              IT_ERR_INVALID_PZ);
    EXPECT_EQ(it_rmr_create(pz, IT_RMR_TYPE_DEFAULT, nullptr), IT_ERR_FAULT);
    EXPECT_EQ(it_pz_free(pz), IT_SUCCESS);  // nothing was left behind
    pz = nullptr;
}

// IT-API L10915-L11049, L10612-L10625: an unlinked RMR's attributes; free.
TEST_F(ItMem, RmrQueryAndFree_L11014) {
    it_rmr_handle_t r = nullptr;
    ASSERT_EQ(it_rmr_create(pz, IT_RMR_TYPE_NARROW, &r), IT_SUCCESS);
    it_handle_type_enum_t t;
    ASSERT_EQ(it_get_handle_type(r, &t), IT_SUCCESS);
    EXPECT_EQ(t, IT_HANDLE_TYPE_RMR);
    it_rmr_param_t p;
    std::memset(&p, 0xee, sizeof p);
    ASSERT_EQ(it_rmr_query(r, IT_RMR_PARAM_ALL, &p), IT_SUCCESS);
    EXPECT_EQ(p.ia, ia);
    EXPECT_EQ(p.pz, pz);
    EXPECT_EQ(p.linked, IT_FALSE);
    EXPECT_EQ(p.type, IT_RMR_TYPE_NARROW);
    std::memset(&p, 0xee, sizeof p);
    ASSERT_EQ(it_rmr_query(r, IT_RMR_PARAM_PZ, &p), IT_SUCCESS);
    EXPECT_EQ(p.pz, pz);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.ia), uintptr_t(0xeeeeeeeeeeeeeeeeull));
    EXPECT_EQ(it_rmr_query(r, it_rmr_param_mask_t(0), nullptr), IT_SUCCESS);
    EXPECT_EQ(it_rmr_query(r, IT_RMR_PARAM_IA, nullptr), IT_ERR_FAULT);
    EXPECT_EQ(raw_rmr_query(r, 0x800, &p), IT_ERR_INVALID_MASK);
    EXPECT_EQ(it_rmr_query(reinterpret_cast<it_rmr_handle_t>(pz), IT_RMR_PARAM_ALL, &p),
              IT_ERR_INVALID_RMR);
    EXPECT_EQ(it_rmr_free(reinterpret_cast<it_rmr_handle_t>(pz)), IT_ERR_INVALID_RMR);
    EXPECT_EQ(it_rmr_free(nullptr), IT_ERR_INVALID_RMR);
    EXPECT_EQ(it_rmr_free(r), IT_SUCCESS);
    EXPECT_EQ(it_rmr_free(r), IT_ERR_INVALID_RMR);
    EXPECT_EQ(it_rmr_query(r, IT_RMR_PARAM_ALL, &p), IT_ERR_INVALID_RMR);
}

// IT-API L6704-L6766, L7117, L7633: the IA has no LMR Link support.
TEST_F(ItMem, NoLmrLinkSupport_L6766) {
    it_ia_info_t *info = nullptr;
    ASSERT_EQ(it_ia_query(ia, &info), IT_SUCCESS);
    EXPECT_EQ(info->lmr_link_support, IT_FALSE);
    it_ia_info_free(info);
    it_lmr_handle_t h = nullptr;
    EXPECT_EQ(it_lmr_create_unlinked(pz, 4, IT_LMR_FLAG_NONE, 0, &h), IT_ERR_OP_NOT_SUPPORTED);
    EXPECT_EQ(h, nullptr);
    EXPECT_EQ(it_lmr_create_unlinked(nullptr, 4, IT_LMR_FLAG_NONE, 0, &h), IT_ERR_INVALID_PZ);
    EXPECT_EQ(it_lmr_create_unlinked(pz, 4, it_lmr_flag_t(IT_LMR_FLAG_NONE | 0x8), 0, &h),
              IT_ERR_OP_NOT_SUPPORTED);
    it_lmr_handle_t l = lmr();
    EXPECT_EQ(it_lmr_unlink(l, nullptr, it_dto_cookie_t{}, IT_COMPLETION_FLAG),
              IT_ERR_OP_NOT_SUPPORTED);
    EXPECT_EQ(it_lmr_free(l), IT_SUCCESS);
}

// IT-API L6856-L6864, L7482-L7490: every LMR is coherent: both calls are no-ops that succeed.
TEST_F(ItMem, SyncCallsAreNoOps_L6862) {
    it_lmr_handle_t h = lmr();
    it_lmr_triplet_t seg{};
    seg.lmr = h;
    seg.addr.abs = buf.data();
    seg.length = buf.size();
    EXPECT_EQ(it_lmr_flush_to_mem(&seg, 1), IT_SUCCESS);
    EXPECT_EQ(it_lmr_refresh_from_mem(&seg, 1), IT_SUCCESS);
    EXPECT_EQ(it_lmr_sync_rdma_read(&seg, 1), IT_SUCCESS);  // the 1.0 names (Appendix C)
    EXPECT_EQ(it_lmr_sync_rdma_write(&seg, 1), IT_SUCCESS);
    seg.length = buf.size() * 2;  // out of range: IT_ERR_RANGE is for non-coherent LMRs only
    EXPECT_EQ(it_lmr_flush_to_mem(&seg, 1), IT_SUCCESS);
    EXPECT_EQ(it_lmr_refresh_from_mem(nullptr, 0), IT_SUCCESS);
    EXPECT_EQ(it_lmr_free(h), IT_SUCCESS);
}

// IT-API L7737-L7850: a buffer maps to itself in one piece; unmap takes exactly what map gave.
TEST_F(ItMem, MemMapUnmap_L7775) {
    if (::geteuid() != 0) GTEST_SKIP() << "it_mem_map needs a Privileged Consumer (euid 0)";
    it_io_addr_t io = nullptr;
    size_t mapped = 0;
    ASSERT_EQ(it_mem_map(ia, buf.data(), 0, buf.size(), &io, &mapped), IT_SUCCESS);
    EXPECT_EQ(reinterpret_cast<void *>(io), buf.data());
    EXPECT_EQ(mapped, buf.size());
    EXPECT_EQ(it_mem_unmap(ia, io, mapped - 1), IT_ERR_FAULT);
    EXPECT_EQ(it_mem_unmap(nullptr, io, mapped), IT_ERR_INVALID_IA);
    EXPECT_EQ(it_mem_unmap(ia, io, mapped), IT_SUCCESS);
    EXPECT_EQ(it_mem_unmap(ia, io, mapped), IT_ERR_FAULT);  // already undone
    EXPECT_EQ(it_mem_map(nullptr, buf.data(), 0, buf.size(), &io, &mapped), IT_ERR_INVALID_IA);
    EXPECT_EQ(it_mem_map(ia, nullptr, 0, 64, &io, &mapped), IT_ERR_FAULT);
    EXPECT_EQ(it_mem_map(ia, buf.data(), 0, 0, &io, &mapped), IT_ERR_FAULT);
    EXPECT_EQ(it_mem_map(ia, buf.data(), 0, 64, nullptr, &mapped), IT_ERR_FAULT);
    EXPECT_EQ(it_mem_map(ia, reinterpret_cast<void *>(UINTPTR_MAX - 10), 0, 100, &io, &mapped),
              IT_ERR_FAULT);
    EXPECT_EQ(it_mem_map(ia, kUnmapped, 0, 64, &io, &mapped), IT_ERR_FAULT);
    // A terabyte: checked in steps, so a fault and not a lack of memory.
    EXPECT_EQ(it_mem_map(ia, kUnmapped, 0, size_t(1) << 40, &io, &mapped), IT_ERR_FAULT);
    // Left mapped: it_ia_free undoes it (TearDown).
    ASSERT_EQ(it_mem_map(ia, buf.data(), 0, 64, &io, &mapped), IT_SUCCESS);
}

// IT-API L7762, L7829: a non-privileged consumer may not map.
TEST_F(ItMem, MemMapNeedsAPrivilegedConsumer_L7762) {
    as_unprivileged([this] {
        it_io_addr_t io = nullptr;
        size_t mapped = 0;
        return it_mem_map(ia, buf.data(), 0, buf.size(), &io, &mapped) == IT_ERR_NO_PERMISSION &&
               it_mem_unmap(ia, reinterpret_cast<it_io_addr_t>(buf.data()), buf.size()) ==
                   IT_ERR_NO_PERMISSION;
    });
}

// IT-API L5909-L5922: it_ia_free frees the LMRs and RMRs left.
TEST_F(ItMem, IaFreeFreesLmrsAndRmrs_L5909) {
    it_lmr_handle_t l1 = lmr(IT_PRIV_ALL);
    it_lmr_handle_t l2 = lmr();
    it_rmr_handle_t r1 = nullptr, r2 = nullptr;
    ASSERT_EQ(it_rmr_create(pz, IT_RMR_TYPE_NARROW, &r1), IT_SUCCESS);
    ASSERT_EQ(it_rmr_create(pz, IT_RMR_TYPE_DEFAULT, &r2), IT_SUCCESS);
    ASSERT_EQ(it_ia_free(ia), IT_SUCCESS);
    for (it_handle_t h : {it_handle_t(ia), it_handle_t(pz), it_handle_t(l1), it_handle_t(l2),
                          it_handle_t(r1), it_handle_t(r2)})
        EXPECT_FALSE(live(h));
    EXPECT_EQ(it_lmr_free(l1), IT_ERR_INVALID_LMR);
    EXPECT_EQ(it_rmr_free(r1), IT_ERR_INVALID_RMR);
    ia = nullptr;
}

}  // namespace
