// The event queue's descriptor: the system calls behind EventFd (event_queue.hpp), out of
// line because only a face that enabled the descriptor ever makes them.
#include "api/common/event_queue.hpp"

#include <linux/kcmp.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace softrnic::api {

EventFd::~EventFd() {
    if (fd_ >= 0) ::close(fd_);
}

bool EventFd::open() {
    fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    raised_ = false;
    return fd_ >= 0;
}

bool EventFd::same_file(int other) const {
    if (fd_ < 0 || other < 0) return false;
    const pid_t self = ::getpid();
    return ::syscall(SYS_kcmp, self, self, KCMP_FILE, fd_, other) == 0;
}

void EventFd::write_one() {
    const uint64_t one = 1;
    ssize_t r;
    do {
        r = ::write(fd_, &one, sizeof one);
    } while (r < 0 && errno == EINTR);
    // EAGAIN: the counter is at its maximum, so the descriptor is readable already.
    raised_ = r == sizeof one || (r < 0 && errno == EAGAIN);
}

void EventFd::read_all() {
    uint64_t count = 0;
    ssize_t r;
    do {
        r = ::read(fd_, &count, sizeof count);
    } while (r < 0 && errno == EINTR);
    // One read zeroes the counter; EAGAIN: it was zero already. Either way it is now.
    raised_ = false;
}

}  // namespace softrnic::api
