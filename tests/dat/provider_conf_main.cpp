// main() of the provider test programs that need nothing but the provider's dat.conf.
#include <gtest/gtest.h>

#include <cstdlib>

int main(int argc, char **argv) {
    // The registry reads DAT_OVERRIDE on its first call: point it at the provider's conf.
    if (!std::getenv("DAT_OVERRIDE")) ::setenv("DAT_OVERRIDE", DAPL_SOFTRNIC_CONF, 1);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
