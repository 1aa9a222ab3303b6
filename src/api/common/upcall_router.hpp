// Routes RNICPI upcalls to face objects. A face hands RNICPI its own object as the os_data of
// each RNIC, CQ, QP and SRQ it creates, and RNICPI hands it back with every CQ notification
// and asynchronous event, on its event thread, possibly after the face freed the object.
// The router says what an event means to a face (by the kind of object it concerns) and
// gives the object back only while the face's registry still holds it live, so a late
// upcall for a freed object is dropped before the face dereferences anything.
#pragma once

#include <rnicpi/rnicpi.h>

#include <cstdint>
#include <optional>

#include "api/common/object_registry.hpp"

namespace softrnic::api {

// What an asynchronous event means to the face.
enum class AsyncUpcall : uint8_t {
    QpClosed,      // a QP's LLP connection closed, gracefully or not
    QpRqLimit,     // a QP on an SRQ took more SRQ buffers than its armed RQ limit
    SrqLimit,      // an SRQ fell below its limit
    CqError,       // a CQ overflowed or failed
    Catastrophic,  // the RNIC failed (the object is the face's RNIC object)
    QpError,       // any other event of a QP: its connection is broken
};

// The registry kinds of the face objects the face passed to RNICPI as os_data.
struct UpcallKinds {
    int rnic;
    int cq;
    int qp;
    int srq;
};

struct RoutedAsync {
    AsyncUpcall what;
    void *rnic;    // the face's RNIC object (live)
    void *object;  // the face object the event concerns (live)
};

class UpcallRouter {
  public:
    UpcallRouter(const ObjectRegistry &registry, UpcallKinds kinds)
        : registry_(registry), kinds_(kinds) {}

    // The face object a CQ notification is for, or null once it is gone.
    void *cq(ri_os_data_t cq_os) const { return live(cq_os, kinds_.cq); }

    // What an asynchronous event means and the face objects it concerns; nothing when the
    // RNIC object or the concerned object is no longer live.
    std::optional<RoutedAsync> async(ri_os_data_t rnic_os, const ri_event_record_t *ev) const {
        if (ev == nullptr || live(rnic_os, kinds_.rnic) == nullptr) return std::nullopt;
        AsyncUpcall what = AsyncUpcall::QpError;
        int kind = kinds_.qp;
        switch (ev->event_type) {
            case RI_EVENT_QP_LLQ_CLOSE_COMPLETE:
            case RI_EVENT_TYPE_BAD_CLOSE:
            case RI_EVENT_QP_BAD_LLQ_CLOSE:
            case RI_EVENT_QP_LLQ_CONNECTION_RESET:
                what = AsyncUpcall::QpClosed;
                break;
            case RI_EVENT_SRQ_LIMIT_REACHED:
                what = AsyncUpcall::SrqLimit;
                kind = kinds_.srq;
                break;
            case RI_EVENT_QP_RQ_LIMIT_REACHED:
                what = AsyncUpcall::QpRqLimit;
                break;
            case RI_EVENT_CQ_OVERFLOW_DETECTED:
            case RI_EVENT_CQ_OP_ERROR:
            case RI_EVENT_CQ_ERROR:
                what = AsyncUpcall::CqError;
                kind = kinds_.cq;
                break;
            case RI_EVENT_LOCAL_CATASTROPHIC_ERROR:
                return RoutedAsync{AsyncUpcall::Catastrophic, rnic_os, rnic_os};
            default:
                break;
        }
        void *object = live(ev->event_data.resource_os_data, kind);
        if (object == nullptr) return std::nullopt;
        return RoutedAsync{what, rnic_os, object};
    }

  private:
    void *live(ri_os_data_t os, int kind) const { return registry_.valid(os, kind) ? os : nullptr; }
    const ObjectRegistry &registry_;
    UpcallKinds kinds_;
};

}  // namespace softrnic::api
