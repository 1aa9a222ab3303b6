// Counts the process's heap allocations (operator new) while a test asks: the global
// replacement in alloc_counter.cpp also serves the libraries the test loads (the
// provider), so a test can check that a path allocates nothing.
#pragma once

#include <atomic>
#include <cstdint>

namespace alloc_counter {
// Sanitizers replace operator new themselves (and pair it with their own delete): under
// them nothing is replaced and nothing is counted.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kAvailable = false;
#else
inline constexpr bool kAvailable = true;
#endif
extern std::atomic<bool> counting;
extern std::atomic<uint64_t> count;
}  // namespace alloc_counter
