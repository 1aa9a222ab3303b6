// The faces' memory registration (src/api/common/memory_registration.hpp): a region registered,
// changed and deregistered over RNICPI, each failure sorted as the faces need it, and windows.
#include "api/common/memory_registration.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "api/common/rnic_instance.hpp"

namespace {

using softrnic::api::MemFailure;
using softrnic::api::MemoryRegion;
using softrnic::api::MemoryWindow;
using softrnic::api::RnicInstance;

constexpr auto kLocal = ri_mem_attr_t(RI_MEM_FLAGS_LOCAL_READ | RI_MEM_FLAGS_LOCAL_WRITE);
constexpr auto kAll =
    ri_mem_attr_t(RI_MEM_FLAGS_LOCAL | RI_MEM_FLAGS_REMOTE | RI_MEM_FLAGS_BINDING);

class MemoryRegistration : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(dev.open("memreg", nullptr));
        ri_err_data_t e = 0;
        ASSERT_EQ(ri_pd_alloc(dev.rnic(), &pd, nullptr, nullptr, &e), RI_RET_SUCCESS);
        ASSERT_EQ(ri_pd_alloc(dev.rnic(), &pd2, nullptr, nullptr, &e), RI_RET_SUCCESS);
    }
    void TearDown() override {
        ri_err_data_t e = 0;
        EXPECT_EQ(ri_pd_dealloc(dev.rnic(), pd, &e), RI_RET_SUCCESS);
        EXPECT_EQ(ri_pd_dealloc(dev.rnic(), pd2, &e), RI_RET_SUCCESS);
    }
    uint64_t va(void *p) const { return reinterpret_cast<uintptr_t>(p); }
    // One page mapped with `prot`, unmapped with the fixture.
    void *page(int prot) {
        void *p = ::mmap(nullptr, size_t(::sysconf(_SC_PAGESIZE)), prot,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        EXPECT_NE(p, MAP_FAILED);
        pages.push_back(p);
        return p;
    }
    ~MemoryRegistration() override {
        for (void *p : pages)
            ::munmap(p, size_t(::sysconf(_SC_PAGESIZE)));
    }

    RnicInstance dev;
    ri_pd_handle_t pd = nullptr, pd2 = nullptr;
    std::vector<char> buf = std::vector<char>(4096);
    std::vector<void *> pages;
};

TEST_F(MemoryRegistration, RegistersQueriesAndDeregisters) {
    MemoryRegion mr;
    EXPECT_FALSE(mr.registered());
    ASSERT_EQ(mr.reg(dev.rnic(), pd, va(buf.data()), buf.size(), kAll, nullptr), MemFailure::None);
    EXPECT_TRUE(mr.registered());
    EXPECT_EQ(mr.va(), va(buf.data()));
    EXPECT_EQ(mr.length(), buf.size());
    ri_mr_info_t info{};
    ri_err_data_t e = 0;
    ASSERT_EQ(ri_mr_query(dev.rnic(), mr.handle(), &info, &e), RI_RET_SUCCESS);
    EXPECT_EQ(info.ltag, mr.ltag());
    EXPECT_EQ(info.rtag, mr.rtag());
    EXPECT_EQ(info.attr.pd, pd);
    EXPECT_EQ(mr.reg(dev.rnic(), pd, va(buf.data()), 8, kAll, nullptr), MemFailure::Other);
    EXPECT_EQ(mr.dereg(), MemFailure::None);
    EXPECT_FALSE(mr.registered());
    EXPECT_EQ(mr.dereg(), MemFailure::None);  // harmless twice
}

TEST_F(MemoryRegistration, SortsFailures) {
    MemoryRegion mr;
    EXPECT_EQ(mr.reg(dev.rnic(), pd, va(buf.data()), 0, kLocal, nullptr), MemFailure::Length);
    EXPECT_EQ(mr.reg(dev.rnic(), pd, 0, 64, kLocal, nullptr), MemFailure::Fault);
    EXPECT_EQ(mr.reg(dev.rnic(), pd, UINT64_MAX - 10, 100, kLocal, nullptr), MemFailure::Fault);
    // Below the kernel's lowest mmap address (vm.mmap_min_addr, at least a page) nothing can
    // be mapped; a page just unmapped could be mapped again by another thread before the call.
    EXPECT_EQ(mr.reg(dev.rnic(), pd, 0x100, 64, kLocal, nullptr), MemFailure::Fault);
    EXPECT_EQ(mr.reg(dev.rnic(), pd, 0x100, 64, RI_MEM_FLAGS_LOCAL_READ, nullptr),
              MemFailure::Fault);
    // Mapped, but only for reading: the write rights are what failed.
    void *ro = page(PROT_READ);
    EXPECT_EQ(mr.reg(dev.rnic(), pd, va(ro), 64, kLocal, nullptr), MemFailure::Access);
    EXPECT_EQ(mr.reg(dev.rnic(), pd, va(buf.data()), 64,
                     ri_mem_attr_t(RI_MEM_FLAGS_LOCAL_READ | RI_MEM_FLAGS_REMOTE_WRITE), nullptr),
              MemFailure::Rights);
    EXPECT_EQ(mr.reg(dev.rnic(), nullptr, va(buf.data()), 64, kLocal, nullptr), MemFailure::Pd);
    EXPECT_FALSE(mr.registered());
    // Read-only rights on read-only memory are fine.
    ASSERT_EQ(mr.reg(dev.rnic(), pd, va(ro), 64, RI_MEM_FLAGS_LOCAL_READ, nullptr),
              MemFailure::None);
    // Write rights on it: refused, and the region is gone (RNICPI frees it).
    EXPECT_EQ(mr.modify(pd, kLocal), MemFailure::Access);
    EXPECT_FALSE(mr.registered());
}

TEST_F(MemoryRegistration, ModifyIssuesANewStagInTheNewPd) {
    MemoryRegion mr;
    ASSERT_EQ(mr.reg(dev.rnic(), pd, va(buf.data()), buf.size(), kAll, nullptr), MemFailure::None);
    const ri_rtag_t old = mr.rtag();
    ASSERT_EQ(mr.modify(pd2, kLocal), MemFailure::None);
    EXPECT_NE(mr.rtag(), old);
    ri_mr_info_t info{};
    ri_err_data_t e = 0;
    ASSERT_EQ(ri_mr_query(dev.rnic(), mr.handle(), &info, &e), RI_RET_SUCCESS);
    EXPECT_EQ(info.attr.pd, pd2);
    EXPECT_FALSE(info.attr.mem_attr & RI_MEM_FLAGS_REMOTE);
    // A bad PD: the region is gone.
    EXPECT_EQ(mr.modify(nullptr, kLocal), MemFailure::Pd);
    EXPECT_FALSE(mr.registered());
}

TEST_F(MemoryRegistration, WindowsOfBothTypes) {
    MemoryWindow narrow, wide;
    ASSERT_EQ(narrow.alloc(dev.rnic(), pd, RI_MW_TYPE_NARROW, nullptr), MemFailure::None);
    ASSERT_EQ(wide.alloc(dev.rnic(), pd, RI_MW_TYPE_WIDE, nullptr), MemFailure::None);
    EXPECT_TRUE(narrow.allocated());
    EXPECT_EQ(narrow.type(), RI_MW_TYPE_NARROW);
    EXPECT_EQ(wide.type(), RI_MW_TYPE_WIDE);
    EXPECT_NE(narrow.rtag(), wide.rtag());
    ri_mw_type_t t{};
    ri_pd_handle_t owner = nullptr;
    ri_err_data_t e = 0;
    ASSERT_EQ(ri_mw_query(dev.rnic(), narrow.handle(), &t, nullptr, &owner, nullptr, nullptr, &e),
              RI_RET_SUCCESS);
    EXPECT_EQ(t, RI_MW_TYPE_2);
    EXPECT_EQ(owner, pd);
    MemoryWindow bad;
    EXPECT_EQ(bad.alloc(dev.rnic(), nullptr, RI_MW_TYPE_NARROW, nullptr), MemFailure::Pd);
    EXPECT_FALSE(bad.allocated());
    narrow.dealloc();
    wide.dealloc();
    EXPECT_FALSE(narrow.allocated());
    narrow.dealloc();  // harmless twice
}

}  // namespace
