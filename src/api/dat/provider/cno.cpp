// CNOs: triggers, waits, FD-CNOs and proxy agents (dat_cno_*). See provider.hpp for what the
// sources share.
#include <sys/eventfd.h>

#include <unistd.h>
#include <chrono>
#include <mutex>

#include "provider.hpp"

namespace softrnic::dapl {

// ------------------------------------------------------------------------------ CNO

void cno_trigger(Cno *c, Evd *evd) {
    DAT_OS_WAIT_PROXY_AGENT agent{nullptr, nullptr};
    {
        std::lock_guard lk(c->mu);
        c->last = evd;
        c->triggered = true;
        c->cv.notify_all();
        if (c->fd >= 0) {
            uint64_t one = 1;
            ssize_t w = ::write(c->fd, &one, sizeof one);
            (void)w;
        }
        if (c->agent.proxy_agent_func) {
            // Invoking an agent disassociates it (L2779).
            agent = c->agent;
            c->agent = DAT_OS_WAIT_PROXY_AGENT{nullptr, nullptr};
            c->proxy = DAT_PROXY_TYPE_NONE;
        }
    }
    if (agent.proxy_agent_func) agent.proxy_agent_func(agent.instance_data, evd);
}

// ------------------------------------------------------------------------------ CNO

DAT_RETURN cno_create(DAT_IA_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE *out) {
    Ia *ia = as_ia(h);
    if (!ia) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    if (!out) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    auto *c = new Cno(ia->provider, DAT_HANDLE_TYPE_CNO, ia);
    c->agent = agent;
    c->proxy = agent.proxy_agent_func ? DAT_PROXY_TYPE_AGENT : DAT_PROXY_TYPE_NONE;
    add_child(ia, c);
    *out = c;
    return DAT_SUCCESS;
}
DAT_RETURN cno_fd_create(DAT_IA_HANDLE h, DAT_FD *fd, DAT_CNO_HANDLE *out) {
    Ia *ia = as_ia(h);
    if (!ia) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    if (!fd) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!out) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    auto *c = new Cno(ia->provider, DAT_HANDLE_TYPE_CNO, ia);
    c->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->fd < 0) {
        delete c;
        return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    }
    c->proxy = DAT_PROXY_TYPE_FD;
    add_child(ia, c);
    *fd = c->fd;
    *out = c;
    return DAT_SUCCESS;
}
DAT_RETURN cno_modify_agent(DAT_CNO_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent) {
    auto *c = as<Cno>(h, DAT_HANDLE_TYPE_CNO);
    if (!c) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
    std::lock_guard lk(c->mu);
    c->agent = agent;
    if (c->fd < 0) c->proxy = agent.proxy_agent_func ? DAT_PROXY_TYPE_AGENT : DAT_PROXY_TYPE_NONE;
    return DAT_SUCCESS;
}
DAT_RETURN cno_query(DAT_CNO_HANDLE h, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM *p) {
    auto *c = as<Cno>(h, DAT_HANDLE_TYPE_CNO);
    if (!c) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
    if (unsigned(mask) > unsigned(DAT_CNO_FIELD_ALL))
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!p) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    std::lock_guard lk(c->mu);
    p->ia_handle = c->ia;
    p->proxy_type = c->proxy;
    if (c->proxy == DAT_PROXY_TYPE_FD)
        p->proxy.fd = c->fd;
    else if (c->proxy == DAT_PROXY_TYPE_AGENT)
        p->proxy.agent = c->agent;
    else
        p->proxy.none = nullptr;
    return DAT_SUCCESS;
}
DAT_RETURN cno_wait(DAT_CNO_HANDLE h, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd) {
    auto *c = as<Cno>(h, DAT_HANDLE_TYPE_CNO);
    if (!c) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
    if (!evd) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    std::unique_lock lk(c->mu);
    ++c->waiters;
    auto ready = [&] { return c->triggered || c->dead; };
    bool ok = timeout == DAT_TIMEOUT_INFINITE
                  ? (c->cv.wait(lk, ready), true)
                  : c->cv.wait_for(lk, std::chrono::microseconds(timeout), ready);
    --c->waiters;
    if (c->dead) {
        *evd = DAT_HANDLE_NULL;
        return DAT_SUCCESS;
    }
    if (!ok) {
        *evd = DAT_HANDLE_NULL;
        return err(DAT_QUEUE_EMPTY);  // the seed's timeout code for CNOs (L3143)
    }
    c->triggered = false;
    *evd = c->last;
    return DAT_SUCCESS;
}
DAT_RETURN cno_trigger_query(DAT_CNO_HANDLE h, DAT_EVD_HANDLE *evd) {
    auto *c = as<Cno>(h, DAT_HANDLE_TYPE_CNO);
    if (!c) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
    if (!evd) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    std::lock_guard lk(c->mu);
    *evd = c->last;
    if (c->fd >= 0) {
        uint64_t v = 0;
        ssize_t r = ::read(c->fd, &v, sizeof v);
        (void)r;
    }
    return DAT_SUCCESS;
}
DAT_RETURN cno_free(DAT_CNO_HANDLE h) {
    auto *c = as<Cno>(h, DAT_HANDLE_TYPE_CNO);
    if (!c) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
    {
        std::lock_guard lk(c->mu);
        if (c->evds.load(std::memory_order_acquire) > 0 || c->waiters > 0)
            return err(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE);
        if (c->fd >= 0) ::close(c->fd);
        c->fd = -1;
    }
    retire(c);
    return DAT_SUCCESS;
}

}  // namespace softrnic::dapl
