// libFuzzer target: the dat.conf parser (src/api/dat/registry/dat_conf.cpp), which reads
// /etc/dat.conf and the file DAT_OVERRIDE names: text any local user may have written.
// Whatever the bytes, it reads nothing outside them, and every entry it returns has the
// eight well-formed fields dat_conf.hpp promises, on a line of the input, in order.
// Seeds: fuzz/corpus/dat_conf/ (fuzz/make_corpus.py).
#include <dat2/dat.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "dat_conf.hpp"

namespace sd = softrnic::dat;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    // A copy exactly as long as the input, so ASan sees any read past it.
    auto buf = std::make_unique<char[]>(size ? size : 1);
    for (size_t i = 0; i < size; ++i)
        buf[i] = static_cast<char>(data[i]);
    const std::string_view text(buf.get(), size);
    size_t lines = 0;
    for (size_t i = 0; i < size; ++i)
        lines += text[i] == '\n';
    if (size && text.back() != '\n') ++lines;

    const sd::ConfParseResult r = sd::parse_dat_conf(text);
    if (r.entries.size() + r.rejected_lines.size() > lines) std::abort();
    int last = 0;
    for (const sd::ConfEntry &e : r.entries) {
        if (e.line <= last || static_cast<size_t>(e.line) > lines) std::abort();
        last = e.line;
        if (e.ia_name.empty() || e.ia_name.size() >= DAT_NAME_MAX_LENGTH) std::abort();
        if (e.api_kind != 'u' && e.api_kind != 'k') std::abort();
        if (e.library_path.empty() || e.provider_id.empty()) std::abort();
        if (e.ia_params.size() > sd::kMaxConfLineLength) std::abort();
    }
    last = 0;
    for (int l : r.rejected_lines) {
        if (l <= last || static_cast<size_t>(l) > lines) std::abort();
        last = l;
    }
    return 0;
}
