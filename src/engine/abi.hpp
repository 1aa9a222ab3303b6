// Reading enum-typed values that come from C callers.
//
// A C caller may store any int in an enum-typed argument or field; in C++ loading such a
// value through the enum type is undefined (UBSan's -fsanitize=enum flags it). Every
// caller-provided enum is therefore read as its underlying integer first.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace softrnic::engine {

template <class E>
inline uint32_t raw(const E &e) {
    static_assert(std::is_enum_v<E>);
    std::underlying_type_t<E> v;
    std::memcpy(&v, &e, sizeof v);
    return static_cast<uint32_t>(v);
}

}  // namespace softrnic::engine
