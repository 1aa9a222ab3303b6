// Global operator new/delete replacement for alloc_counter.hpp. In its own translation
// unit: the compiler must not see these next to inlined allocations (it would pair
// new with free and warn).
#include "alloc_counter.hpp"

#include <cstdlib>
#include <new>

namespace alloc_counter {
std::atomic<bool> counting{false};
std::atomic<uint64_t> count{0};
}  // namespace alloc_counter

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
void *operator new(std::size_t n) {
    if (alloc_counter::counting.load(std::memory_order_relaxed))
        alloc_counter::count.fetch_add(1, std::memory_order_relaxed);
    if (void *p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void *operator new[](std::size_t n) {
    return ::operator new(n);
}
void operator delete(void *p) noexcept {
    std::free(p);
}
void operator delete[](void *p) noexcept {
    std::free(p);
}
void operator delete(void *p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void *p, std::size_t) noexcept {
    std::free(p);
}
#endif
