// The engine's object handles: slots of base::SlotTable tagged with the object's kind, so a
// handle of one kind is never taken for another.
#pragma once

#include <cstdint>

#include "base/slot_table.hpp"

namespace softrnic::engine {

enum class ObjKind : uint8_t { Pd = 1, Cq = 2, Qp = 3, Srq = 4, Mr = 5, Mw = 6, Ah = 7 };

constexpr uint8_t kind_tag(ObjKind k) {
    return static_cast<uint8_t>(k);
}

// One table per object kind (Device::pds, cqs, qps, srqs).
template <class T>
class ObjectTable : public base::SlotTable<T> {
  public:
    ObjectTable(ObjKind kind, uint32_t capacity) : base::SlotTable<T>(kind_tag(kind), capacity) {}
};

}  // namespace softrnic::engine
