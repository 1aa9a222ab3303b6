// Counted references between engine objects (engine/object.hpp).
#include <gtest/gtest.h>

#include <utility>

#include "engine/object.hpp"

namespace softrnic::engine {
namespace {

struct Thing {
    UseCount users;
};

TEST(Use, HoldsOneUseWhileItNamesTheObject) {
    Thing t;
    EXPECT_FALSE(t.users.in_use());
    {
        Use<Thing> a(&t);
        EXPECT_EQ(t.users.count(), 1u);
        Use<Thing> b(&t);
        EXPECT_EQ(t.users.count(), 2u);
        EXPECT_EQ(a.get(), &t);
        Thing *plain = b;  // reads like the pointer it wraps
        EXPECT_EQ(plain, &t);
    }
    EXPECT_EQ(t.users.count(), 0u);
}

TEST(Use, MoveTransfersTheUseResetSwitchesIt) {
    Thing t, u;
    Use<Thing> a(&t);
    Use<Thing> b(std::move(a));
    EXPECT_EQ(a.get(), nullptr);
    EXPECT_EQ(t.users.count(), 1u);
    b.reset(&u);
    EXPECT_EQ(t.users.count(), 0u);
    EXPECT_EQ(u.users.count(), 1u);
    b.reset(&u);  // naming the same object again keeps exactly one use
    EXPECT_EQ(u.users.count(), 1u);
    Use<Thing> c;
    c = std::move(b);
    EXPECT_EQ(u.users.count(), 1u);
    c.reset();
    EXPECT_EQ(u.users.count(), 0u);
    EXPECT_EQ(c.get(), nullptr);
}

}  // namespace
}  // namespace softrnic::engine
