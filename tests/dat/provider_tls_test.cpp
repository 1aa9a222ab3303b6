// The provider's TLS block: libdaplsoftrnic.so.2 is dlopen'ed with initial-exec TLS.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>

namespace {

// The provider reads its per-thread state through initial-exec TLS (one %fs-relative
// load instead of a __tls_get_addr call per access). A dlopen'ed library with
// initial-exec TLS must fit its whole TLS block in the static surplus glibc reserves, or
// the dlopen fails ("cannot allocate memory in static TLS block"). The block stays a few
// words: per-thread tables belong on the heap, reached through a pointer.
TEST(DatProviderTls, ProviderTlsBlockFitsTheStaticSurplus) {
    std::ifstream f(DAPL_SOFTRNIC_LIB, std::ios::binary);
    ASSERT_TRUE(f) << DAPL_SOFTRNIC_LIB;
    Elf64_Ehdr eh{};
    ASSERT_TRUE(f.read(reinterpret_cast<char *>(&eh), sizeof eh));
    ASSERT_EQ(eh.e_ident[EI_CLASS], ELFCLASS64);
    ASSERT_EQ(eh.e_phentsize, sizeof(Elf64_Phdr));
    uint64_t tls_bytes = 0;
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph{};
        f.seekg(std::streamoff(eh.e_phoff + i * sizeof ph));
        ASSERT_TRUE(f.read(reinterpret_cast<char *>(&ph), sizeof ph));
        if (ph.p_type == PT_TLS) tls_bytes = ph.p_memsz;
    }
    // glibc keeps at least 512 bytes of optional static TLS for dlopen'ed libraries;
    // libsoftrnic, loaded with the provider, takes a few words of it too.
    EXPECT_LE(tls_bytes, 256u);
}

}  // namespace
