// JSON text for the `softrnic` command's --json outputs: strings with the escapes RFC 8259
// requires, so a detail holding a path, quote or control character stays valid.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace softrnic::tools {

inline std::string json_escape(std::string_view s) {
    std::string out;
    for (char ch : s) {
        if (ch == '"' || ch == '\\') {
            out += '\\';
            out += ch;
        } else if (static_cast<unsigned char>(ch) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(ch));
            out += buf;
        } else {
            out += ch;
        }
    }
    return out;
}

inline std::string json_string(std::string_view s) {
    return "\"" + json_escape(s) + "\"";
}

}  // namespace softrnic::tools
