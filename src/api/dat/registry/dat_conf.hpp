// dat_conf.hpp - the static registry file (dat.conf): one provider entry per line.
//
//   <ia_name> <[u|k]major.minor> <threadsafe|nonthreadsafe> <default|nondefault>
//   <library path> <provider_id.major.minor> "<ia params>" "<platform params>"
//
// Fields are separated by blanks; '#' at the start of a field begins a comment
// that runs to the end of the line; double-quoted fields may contain blanks and
// the escapes \\ and \". A line that does not have exactly these eight
// well-formed fields is skipped (and reported), never fatal: dat.conf is shared
// by every provider installed on the machine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace softrnic::dat {

struct ConfEntry {
    std::string ia_name;
    char api_kind = 'u';  // 'u' (uDAPL) or 'k' (kDAPL)
    std::uint32_t api_major = 0;
    std::uint32_t api_minor = 0;
    bool thread_safe = false;
    bool is_default = false;
    std::string library_path;
    std::string provider_id;
    std::uint32_t provider_major = 0;
    std::uint32_t provider_minor = 0;
    std::string ia_params;        // passed to dat_provider_init
    std::string platform_params;  // reserved for the platform, unused
    int line = 0;                 // 1-based line number in the file
};

struct ConfParseResult {
    std::vector<ConfEntry> entries;   // well-formed lines, in file order
    std::vector<int> rejected_lines;  // line numbers of malformed lines
};

// Longest line considered; longer lines are rejected rather than truncated.
inline constexpr std::size_t kMaxConfLineLength = 16 * 1024;
// Bytes of a dat.conf read; anything after that is ignored.
inline constexpr std::size_t kMaxConfFileSize = 4 * 1024 * 1024;

ConfParseResult parse_dat_conf(std::string_view text);

}  // namespace softrnic::dat
