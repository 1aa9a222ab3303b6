// The handle registry, object destruction and the privilege rule. See it_internal.hpp for
// what the sources share.
#include <unistd.h>

#include <mutex>

#include "it_internal.hpp"

namespace softrnic::itapi {

api::LibraryRegistry g_handles;

void destroy_obj(void *p) {
    auto *o = static_cast<Obj *>(p);
    switch (o->type) {
        case IT_HANDLE_TYPE_IA:
            delete static_cast<Ia *>(o);
            break;
        case IT_HANDLE_TYPE_EVD:
            delete static_cast<Evd *>(o);
            break;
        case IT_HANDLE_TYPE_PZ:
            delete static_cast<Pz *>(o);
            break;
        case IT_HANDLE_TYPE_LMR:
            delete static_cast<Lmr *>(o);
            break;
        case IT_HANDLE_TYPE_RMR:
            delete static_cast<Rmr *>(o);
            break;
        default:
            delete o;
            break;
    }
}

void add_child(Obj *o) {
    handles().add(o, o->type);
    std::lock_guard lk(o->ia->mu);
    o->ia->children.insert(o);
}

void retire(Obj *o) {
    if (o->ia && o->ia != o) {
        std::lock_guard lk(o->ia->mu);
        o->ia->children.erase(o);
    }
    handles().retire(o, destroy_obj);
}

bool privileged() {
    return ::geteuid() == 0;
}

}  // namespace softrnic::itapi
