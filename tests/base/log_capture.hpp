// Captures the logger's lines in a test: sets SOFTRNIC_LOG* as asked, reads them again
// (base::log_reload) and redirects the sink into a memory file until destroyed, when the
// variables are unset and read again.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/log.hpp"

namespace logtest {

class Capture {
  public:
    // nullptr: the variable unset.
    explicit Capture(const char *level, const char *subsys = nullptr) {
        set("SOFTRNIC_LOG", level);
        set("SOFTRNIC_LOG_SUBSYS", subsys);
        ::unsetenv("SOFTRNIC_LOG_FILE");
        fd_ = ::memfd_create("softrnic-log-test", MFD_CLOEXEC);
        softrnic::base::log_redirect(fd_);
        softrnic::base::log_reload();  // warnings about the values land in the capture too
    }
    ~Capture() {
        softrnic::base::log_redirect(-1);
        ::unsetenv("SOFTRNIC_LOG");
        ::unsetenv("SOFTRNIC_LOG_SUBSYS");
        softrnic::base::log_reload();
        ::close(fd_);
    }
    Capture(const Capture &) = delete;
    Capture &operator=(const Capture &) = delete;

    // Everything written so far.
    std::string text() const {
        std::string out;
        char buf[4096];
        for (off_t off = 0;;) {
            ssize_t n = ::pread(fd_, buf, sizeof buf, off);
            if (n <= 0) break;
            out.append(buf, size_t(n));
            off += n;
        }
        return out;
    }
    std::vector<std::string> lines() const {
        std::vector<std::string> out;
        std::string t = text();
        for (size_t pos = 0; pos < t.size();) {
            size_t nl = t.find('\n', pos);
            if (nl == std::string::npos) nl = t.size();
            out.push_back(t.substr(pos, nl - pos));
            pos = nl + 1;
        }
        return out;
    }
    // Lines containing `needle`.
    size_t count(const std::string &needle) const {
        size_t n = 0;
        for (const std::string &l : lines())
            n += l.find(needle) != std::string::npos;
        return n;
    }

  private:
    static void set(const char *name, const char *value) {
        if (value)
            ::setenv(name, value, 1);
        else
            ::unsetenv(name);
    }
    int fd_ = -1;
};

}  // namespace logtest
