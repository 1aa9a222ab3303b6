// The provider's handle registry (src/dat/provider/handle_table.hpp): validation answers
// and its per-thread cache. Handles are plain addresses here, never dereferenced.
#include "../../src/dat/provider/handle_table.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace {

using softrnic::api::HandleTable;

void *handle_at(uintptr_t address) {
    return reinterpret_cast<void *>(address);
}

// Addresses spread like heap objects of a few hundred bytes.
std::vector<void *> handles(size_t n, uintptr_t base = 0x5555'0000'1000) {
    std::vector<void *> out;
    for (size_t i = 0; i < n; ++i)
        out.push_back(handle_at(base + i * 0x1a0));
    return out;
}

TEST(DatHandleTable, KindsFreedAndUnknownHandles) {
    HandleTable t;
    auto hs = handles(3);
    t.add(hs[0], 1);
    t.add(hs[1], 2);
    EXPECT_TRUE(t.valid(hs[0], 1));
    EXPECT_TRUE(t.valid(hs[0], -1));
    EXPECT_FALSE(t.valid(hs[0], 2));
    EXPECT_TRUE(t.valid(hs[1], 2));
    EXPECT_FALSE(t.valid(hs[2], 1));
    EXPECT_FALSE(t.valid(nullptr, -1));
    // Answered from the cache now; a removal must still be seen at once.
    EXPECT_TRUE(t.valid(hs[0], 1));
    t.remove(hs[0]);
    EXPECT_FALSE(t.valid(hs[0], 1));
    EXPECT_FALSE(t.valid(hs[0], -1));
    EXPECT_TRUE(t.valid(hs[1], 2));
    // Parked in quarantine, not destroyed: still invalid.
    int destroyed = 0;
    t.retire(hs[1], [&](void *) { ++destroyed; });
    EXPECT_FALSE(t.valid(hs[1], 2));
    EXPECT_EQ(destroyed, 0);
}

// Two tables never answer for each other, even for the same address.
TEST(DatHandleTable, AnswersAreKeyedByTable) {
    HandleTable a, b;
    void *h = handles(1)[0];
    a.add(h, 7);
    EXPECT_TRUE(a.valid(h, 7));
    EXPECT_FALSE(b.valid(h, 7));
    b.add(h, 8);
    EXPECT_TRUE(b.valid(h, 8));
    EXPECT_TRUE(a.valid(h, 7));
    EXPECT_FALSE(a.valid(h, 8));
}

// A thread cycling through a dozen objects (EPs, EVDs, LMRs of an MPI rank's progress
// loop) finds them in its cache after the first pass: no lookups under the table's lock.
// The 4-entry cache this replaced missed on every call of such a loop.
TEST(DatHandleTable, ADozenHandlesInALoopAreAnsweredFromTheCache) {
    HandleTable t;
    auto hs = handles(12);
    for (void *h : hs)
        t.add(h, 3);
    for (void *h : hs)
        ASSERT_TRUE(t.valid(h, 3));
    const uint64_t before = HandleTable::thread_misses();
    for (int pass = 0; pass < 100; ++pass)
        for (void *h : hs)
            ASSERT_TRUE(t.valid(h, 3));
    EXPECT_EQ(HandleTable::thread_misses() - before, 0u);
}

// Each thread has its own cache, and each sees a removal made by another.
TEST(DatHandleTable, RemovalOnAnotherThreadIsSeen) {
    HandleTable t;
    auto hs = handles(2);
    t.add(hs[0], 1);
    t.add(hs[1], 1);
    ASSERT_TRUE(t.valid(hs[0], 1));
    std::thread([&] { t.remove(hs[0]); }).join();
    EXPECT_FALSE(t.valid(hs[0], 1));
    EXPECT_TRUE(t.valid(hs[1], 1));
}

}  // namespace
