// dat_conf.cpp - parsing dat.conf (see dat_conf.hpp for the format).
#include "dat_conf.hpp"

#include <dat2/dat.h>

#include <charconv>
#include <optional>

namespace softrnic::dat {
namespace {

bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// Splits one line into fields. nullopt: the line is malformed (unterminated
// quote, a quote glued to other text, a NUL byte).
std::optional<std::vector<std::string>> split_fields(std::string_view line) {
    std::vector<std::string> fields;
    std::size_t i = 0;
    while (true) {
        while (i < line.size() && is_blank(line[i]))
            ++i;
        if (i == line.size() || line[i] == '#') return fields;
        std::string field;
        if (line[i] == '"') {
            ++i;
            bool closed = false;
            while (i < line.size()) {
                char c = line[i++];
                if (c == '"') {
                    closed = true;
                    break;
                }
                if (c == '\\' && i < line.size() && (line[i] == '"' || line[i] == '\\'))
                    c = line[i++];
                if (c == '\0') return std::nullopt;
                field.push_back(c);
            }
            if (!closed) return std::nullopt;
            // A closing quote must end the field.
            if (i < line.size() && !is_blank(line[i]) && line[i] != '#') return std::nullopt;
        } else {
            while (i < line.size() && !is_blank(line[i])) {
                if (line[i] == '\0' || line[i] == '"') return std::nullopt;
                field.push_back(line[i++]);
            }
        }
        fields.push_back(std::move(field));
    }
}

// A decimal number of at most nine digits (so it fits DAT_UINT32).
std::optional<std::uint32_t> parse_number(std::string_view text) {
    if (text.empty() || text.size() > 9) return std::nullopt;
    std::uint32_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// "major.minor"
bool parse_version(std::string_view text, std::uint32_t &major, std::uint32_t &minor) {
    std::size_t dot = text.find('.');
    if (dot == std::string_view::npos) return false;
    auto ma = parse_number(text.substr(0, dot));
    auto mi = parse_number(text.substr(dot + 1));
    if (!ma || !mi) return false;
    major = *ma;
    minor = *mi;
    return true;
}

std::optional<ConfEntry> parse_entry(const std::vector<std::string> &f) {
    if (f.size() != 8) return std::nullopt;
    ConfEntry e;

    e.ia_name = f[0];
    if (e.ia_name.empty() || e.ia_name.size() >= DAT_NAME_MAX_LENGTH) return std::nullopt;

    std::string_view api = f[1];
    if (api.size() < 4 || (api[0] != 'u' && api[0] != 'k')) return std::nullopt;
    e.api_kind = api[0];
    if (!parse_version(api.substr(1), e.api_major, e.api_minor)) return std::nullopt;

    if (f[2] == "threadsafe") {
        e.thread_safe = true;
    } else if (f[2] != "nonthreadsafe") {
        return std::nullopt;
    }

    if (f[3] == "default") {
        e.is_default = true;
    } else if (f[3] != "nondefault") {
        return std::nullopt;
    }

    e.library_path = f[4];
    if (e.library_path.empty()) return std::nullopt;

    // provider_id.major.minor: the id itself may contain dots.
    std::string_view version = f[5];
    std::size_t last = version.rfind('.');
    if (last == std::string_view::npos || last == 0) return std::nullopt;
    std::size_t before = version.rfind('.', last - 1);
    if (before == std::string_view::npos || before == 0) return std::nullopt;
    if (!parse_version(version.substr(before + 1), e.provider_major, e.provider_minor)) {
        return std::nullopt;
    }
    e.provider_id = std::string(version.substr(0, before));

    e.ia_params = f[6];
    e.platform_params = f[7];
    return e;
}

}  // namespace

ConfParseResult parse_dat_conf(std::string_view text) {
    ConfParseResult result;
    int line_number = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++line_number;

        if (line.size() > kMaxConfLineLength) {
            result.rejected_lines.push_back(line_number);
            continue;
        }
        auto fields = split_fields(line);
        if (!fields) {
            result.rejected_lines.push_back(line_number);
            continue;
        }
        if (fields->empty()) continue;  // blank or comment-only line
        auto entry = parse_entry(*fields);
        if (!entry) {
            result.rejected_lines.push_back(line_number);
            continue;
        }
        entry->line = line_number;
        result.entries.push_back(std::move(*entry));
    }
    return result;
}

}  // namespace softrnic::dat
