// The softrnic RNIC instance behind a face's IA (a DAT IA, an IT-API IA; an IB Access Layer
// CA next): created, opened through RNICPI and handed over as the consumer-serialised
// handle, queried, and closed again, in that order, by every face alike.
//
// The consumer-serialised view (RNICPI L1316-1363): the face serialises the calls on each
// critical object itself, per object, rather than RNICPI taking the RNIC handle's lock on
// every call (two more locked instructions on every CQ poll).
#pragma once

#include <netinet/in.h>
#include <rnicpi/rnicpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace softrnic::api {

class RnicInstance {
  public:
    RnicInstance() = default;
    ~RnicInstance() { close(); }
    RnicInstance(const RnicInstance &) = delete;
    RnicInstance &operator=(const RnicInstance &) = delete;

    // Creates an instance named "<prefix>-<pid>-<n>" (unique in the process), opens it in
    // page-list mode with `os_data` (what RNICPI passes the face's async handler), lets
    // `before_handle(vp)` install the face's event handlers, and takes the
    // consumer-serialised handle with `os_data` again. False, with everything undone, when a
    // step fails.
    bool open(const char *prefix, void *os_data,
              const std::function<void(ri_vp_handle_t)> &before_handle = {});
    // Frees the handle, closes and destroys the instance; harmless when not open.
    void close();

    ri_vp_handle_t vp() const { return vp_; }
    ri_rnic_handle_t rnic() const { return rnic_; }
    const std::string &name() const { return name_; }

    // ri_rnic_query: the attributes (their transport pointer cleared: it pointed into the
    // query's buffer), the iWARP flags, and with `ports` the iWARP ports' addresses.
    struct Attributes {
        ri_rnic_attr_t attr{};
        uint32_t iwarp_flags = 0;
        std::vector<in_addr> ipv4;
        std::vector<in6_addr> ipv6;
    };
    // False when the instance is not open or the query fails (`out` then unchanged).
    bool query(Attributes &out, bool ports = true) const;

  private:
    std::string name_;
    ri_vp_handle_t vp_ = nullptr;
    ri_rnic_handle_t rnic_ = nullptr;
};

}  // namespace softrnic::api
