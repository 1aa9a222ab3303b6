// `softrnic doctor`: checks this machine for what softrnic needs and says, for each thing
// that is missing, the one change that fixes it. Every check tries the real operation
// (a cross-memory read between two processes, a sealed memfd, binding the ports) rather
// than guessing from configuration files, because containers and seccomp policies make the
// files lie.
#include "doctor.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "json_out.hpp"
#include "softrnic/softrnic.h"

namespace softrnic::tools {
namespace {

enum class Status : uint8_t { Ok, Warn, Fail };

const char *status_name(Status s) {
    switch (s) {
        case Status::Ok:
            return "ok";
        case Status::Warn:
            return "warn";
        case Status::Fail:
            return "fail";
    }
    return "?";
}

struct Check {
    std::string name;
    Status status = Status::Ok;
    std::string detail;  // what was found
    std::string fix;     // one line; empty when nothing needs changing
};

std::string first_line_of(const char *path) {
    std::ifstream in(path);
    std::string line;
    if (!in || !std::getline(in, line)) return {};
    return line;
}

std::string errno_text(int e) {
    return std::string(std::strerror(e));
}

// A SOFTRNIC_* variable's value, looked up through the library's declared table (the
// variables it reads), so the tool never reads one the library does not.
const char *declared_env(std::string_view name) {
    for (unsigned i = 0; const softrnic_env_var_t *v = softrnic_env_var(i); ++i)
        if (name == v->name) return std::getenv(v->name);
    return nullptr;
}

// Cross-memory attach as two unrelated processes see it: the child reads its parent, which
// is not its descendant, so Yama's ptrace_scope 1 refuses it as it would refuse two
// applications started apart. The value is written after the fork, so only a real read of
// the parent's memory returns it.
Check check_cma() {
    Check c{"cma", Status::Ok, {}, {}};
    const std::string scope = first_line_of("/proc/sys/kernel/yama/ptrace_scope");
    const char *env = declared_env("SOFTRNIC_SHM_CMA");
    if (env && std::string(env) == "0") {
        c.status = Status::Warn;
        c.detail = "disabled by SOFTRNIC_SHM_CMA=0: shared memory copies through bounce buffers";
        c.fix = "unset SOFTRNIC_SHM_CMA";
        return c;
    }
    static volatile uint64_t value = 0;
    int ready[2];
    if (::pipe(ready) != 0) {
        c.status = Status::Warn;
        c.detail = "could not test (pipe: " + errno_text(errno) + ")";
        return c;
    }
    const pid_t parent = ::getpid();
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(ready[1]);
        char b = 0;
        if (::read(ready[0], &b, 1) != 1) ::_exit(100);
        uint64_t got = 0;
        iovec l{&got, sizeof got};
        iovec r{const_cast<uint64_t *>(&value), sizeof got};
        if (::process_vm_readv(parent, &l, 1, &r, 1, 0) != static_cast<ssize_t>(sizeof got))
            ::_exit(errno == EPERM ? 1 : errno == ENOSYS ? 2 : 3);
        ::_exit(got == 0x5eedc0ffee ? 0 : 4);
    }
    ::close(ready[0]);
    int status = -1;
    if (child > 0) {
        value = 0x5eedc0ffee;
        (void)!::write(ready[1], "x", 1);
        ::close(ready[1]);
        while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
        }
    } else {
        ::close(ready[1]);
    }
    const int code = child > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const std::string scope_note = scope.empty() ? "" : " (kernel.yama.ptrace_scope " + scope + ")";
    if (code == 0) {
        c.detail = "process_vm_readv works between unrelated processes" + scope_note +
                   ": single-copy shared memory";
        return c;
    }
    c.status = Status::Warn;
    if (code == 1) {
        c.detail = "process_vm_readv refused (EPERM)" + scope_note +
                   ": shared memory falls back to bounce buffers (two copies)";
        c.fix = scope.empty() || scope == "0"
                    ? "allow ptrace between the processes (seccomp or container policy: "
                      "docker --cap-add SYS_PTRACE)"
                    : "sysctl -w kernel.yama.ptrace_scope=0 (or give the processes "
                      "CAP_SYS_PTRACE)";
    } else if (code == 2) {
        c.detail = "process_vm_readv is not available (ENOSYS): bounce buffers (two copies)";
        c.fix = "a kernel with CONFIG_CROSS_MEMORY_ATTACH (or allow the system call in seccomp)";
    } else {
        c.detail = "could not test cross-memory attach (child exit " + std::to_string(code) + ")";
    }
    return c;
}

// The shm transport's segments are sealed memfds; its peers are watched through pidfds.
Check check_shm_segments() {
    Check c{"shm-segments", Status::Ok, {}, {}};
    int fd = static_cast<int>(::memfd_create("softrnic-doctor", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (fd < 0) {
        c.status = Status::Fail;
        c.detail = "memfd_create: " + errno_text(errno) + ": no shared-memory transport";
        c.fix = "allow memfd_create (seccomp), or run with SOFTRNIC_TRANSPORT=tcp";
        return c;
    }
    constexpr size_t kBytes = size_t{1} << 20;
    bool ok = ::ftruncate(fd, kBytes) == 0 &&
              ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0;
    void *p = ok ? ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    const int err = errno;
    if (p != MAP_FAILED) ::munmap(p, kBytes);
    ::close(fd);
    if (!ok || p == MAP_FAILED) {
        c.status = Status::Fail;
        c.detail = "a sealed 1 MiB memfd could not be made and mapped: " + errno_text(err);
        c.fix = "check the memory cgroup limit, or run with SOFTRNIC_TRANSPORT=tcp";
        return c;
    }
    int pfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
    if (pfd < 0) {
        c.status = Status::Warn;
        c.detail = "sealed memfds work; pidfd_open: " + errno_text(errno) +
                   ": a dead shm peer is noticed only when its socket closes";
        c.fix = "Linux 5.3 or later (or allow pidfd_open in seccomp)";
        return c;
    }
    ::close(pfd);
    c.detail = "sealed memfd segments and pidfds work";
    return c;
}

// Each connection holds a socket per process (and shm a segment while it is set up), so a
// run of N connections needs about 3 N + 64 descriptors, as `softrnic bench` computes.
Check check_descriptors(unsigned connections) {
    Check c{"descriptors", Status::Ok, {}, {}};
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        c.status = Status::Warn;
        c.detail = "getrlimit: " + errno_text(errno);
        return c;
    }
    const rlim_t need = static_cast<rlim_t>(3) * connections + 64;
    auto text = [](rlim_t v) {
        return v == RLIM_INFINITY ? std::string("unlimited") : std::to_string(v);
    };
    const std::string now = "soft " + text(rl.rlim_cur) + ", hard " + text(rl.rlim_max) + "; " +
                            std::to_string(connections) + " connections need about " +
                            std::to_string(need);
    if (rl.rlim_cur >= need) {
        c.detail = now;
    } else if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need) {
        c.status = Status::Warn;
        c.detail = now + " (softrnic bench raises its own soft limit; other programs do not)";
        c.fix = "ulimit -n " + std::to_string(need) + " before starting the application";
    } else {
        c.status = Status::Fail;
        c.detail = now + ": the hard limit is too low";
        c.fix = "raise the hard limit to " + std::to_string(need) +
                " (nofile in /etc/security/limits.conf, LimitNOFILE= for a systemd unit)";
    }
    return c;
}

// RDMA hardware pins registered memory, so its users raise RLIMIT_MEMLOCK; softrnic never
// locks memory, so the limit does not matter. Reported so nobody raises it for us.
Check check_memlock() {
    Check c{"memlock", Status::Ok, {}, {}};
    rlimit rl{};
    std::string now = "unknown";
    if (::getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
        now = rl.rlim_cur == RLIM_INFINITY ? "unlimited"
                                           : std::to_string(rl.rlim_cur / 1024) + " KiB";
    c.detail = "not needed: softrnic registers memory without locking it (limit now " + now + ")";
    return c;
}

// dat.conf's fields, with the quoted ones (instance and platform data) kept whole.
std::vector<std::string> conf_fields(const std::string &line) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
            ++i;
        if (i >= line.size()) break;
        std::string f;
        if (line[i] == '"') {
            size_t end = line.find('"', i + 1);
            if (end == std::string::npos) end = line.size();
            f = line.substr(i + 1, end - i - 1);
            i = end + 1;
        } else {
            while (i < line.size() && line[i] != ' ' && line[i] != '\t')
                f += line[i++];
        }
        out.push_back(f);
    }
    return out;
}

// The static registry's file ($DAT_OVERRIDE, else /etc/dat.conf) names softrnic's IA names,
// and each one's library loads and has the provider entry points.
Check check_dat_conf() {
    Check c{"dat.conf", Status::Ok, {}, {}};
    const char *override_path = std::getenv("DAT_OVERRIDE");
    const std::string path = override_path && *override_path ? override_path : "/etc/dat.conf";
    std::ifstream in(path);
    if (!in) {
        c.status = Status::Warn;
        c.detail = path + " cannot be read: DAT programs will not find softrnic";
        c.fix = "softrnic dat-conf >> " + path + " (or point DAT_OVERRIDE at such a file)";
        return c;
    }
    // The provider imports the registry's dat_registry_add_provider, so it loads only into a
    // process that has libdat2 already, as every DAT program has. Neither is closed again:
    // the command ends right after, and what their constructors allocated stays reachable
    // (LeakSanitizer cannot even name a module that is gone).
    void *registry = ::dlopen("libdat2.so.2", RTLD_NOW | RTLD_GLOBAL);
    std::vector<std::string> names, broken;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        auto f = conf_fields(line);
        if (f.size() < 5 || f[4].find("daplsoftrnic") == std::string::npos) continue;
        names.push_back(f[0]);
        void *h = ::dlopen(f[4].c_str(), (registry ? RTLD_NOW : RTLD_LAZY) | RTLD_LOCAL);
        if (!h) {
            const char *why = ::dlerror();
            broken.push_back(f[0] + ": " + (why ? why : f[4] + " does not load"));
            continue;
        }
        if (!::dlsym(h, "dat_provider_init") || !::dlsym(h, "dat_provider_fini"))
            broken.push_back(f[0] + ": " + f[4] + " has no dat_provider_init/fini");
    }
    if (names.empty()) {
        c.status = Status::Warn;
        c.detail = path + " names no softrnic IA";
        c.fix = "softrnic dat-conf >> " + path + " (or point DAT_OVERRIDE at such a file)";
        return c;
    }
    std::string list;
    for (const auto &n : names)
        list += (list.empty() ? "" : ", ") + n;
    if (!broken.empty()) {
        c.status = Status::Fail;
        c.detail =
            path + ": " + broken.front() +
            (broken.size() > 1 ? " (and " + std::to_string(broken.size() - 1) + " more)" : "");
        c.fix =
            "rewrite the softrnic lines with the installed library: softrnic dat-conf "
            "--prefix PREFIX";
        return c;
    }
    c.detail = path + " names " + list + "; the provider loads";
    if (!registry) {
        c.status = Status::Warn;
        c.detail += ", but libdat2.so.2 (the DAT registry) is not installed";
        c.fix = "apt-get install libdat2-2 (or put softrnic's libdat2.so.2 on the library path)";
    }
    return c;
}

// `softrnic bench` listens on PORT (control), PORT+1 (connection manager), PORT+2 (raw TCP).
Check check_ports(unsigned port) {
    Check c{"ports", Status::Ok, {}, {}};
    std::string busy;
    for (unsigned p = port; p < port + 3; ++p) {
        int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0) continue;
        int one = 1;
        ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(p));
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        if (::bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0)
            busy += (busy.empty() ? "" : ", ") + std::to_string(p) + " (" + errno_text(errno) + ")";
        ::close(s);
    }
    const std::string range = std::to_string(port) + "-" + std::to_string(port + 2);
    if (busy.empty()) {
        c.detail = "TCP ports " + range + " (softrnic bench --server) are free";
        return c;
    }
    c.status = Status::Warn;
    c.detail = "TCP ports in use: " + busy;
    c.fix = "softrnic bench --port N with three free ports N..N+2 (or --port 0: ephemeral)";
    return c;
}

void usage_error(const char *what) {
    std::fprintf(stderr,
                 "softrnic doctor: %s\nusage: softrnic doctor [--connections N] [--port N] "
                 "[--json]\n",
                 what);
}

}  // namespace

int doctor(int argc, char **argv) {
    unsigned connections = 1000, port = 18515;
    bool json = false;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        auto number = [&](unsigned lo, unsigned hi, unsigned &out) {
            if (i + 1 >= argc) return false;
            char *end = nullptr;
            errno = 0;
            unsigned long v = std::strtoul(argv[++i], &end, 10);
            if (errno || !end || *end || v < lo || v > hi) return false;
            out = static_cast<unsigned>(v);
            return true;
        };
        if (a == "--json") {
            json = true;
        } else if (a == "--connections") {
            if (!number(1, 1000000, connections)) return usage_error("bad --connections"), 2;
        } else if (a == "--port") {
            if (!number(1, 65533, port)) return usage_error("bad --port (1-65533)"), 2;
        } else {
            usage_error(("unknown option '" + a + "'").c_str());
            return 2;
        }
    }
    std::fflush(stdout);  // the CMA check forks
    const std::vector<Check> checks = {
        check_cma(),     check_shm_segments(), check_descriptors(connections),
        check_memlock(), check_dat_conf(),     check_ports(port)};
    bool failed = false;
    for (const Check &c : checks)
        failed |= c.status == Status::Fail;
    if (json) {
        std::string out = "{\"checks\":[";
        for (size_t i = 0; i < checks.size(); ++i) {
            const Check &c = checks[i];
            out += std::string(i ? "," : "") + "{\"name\":" + json_string(c.name) +
                   ",\"status\":\"" + status_name(c.status) +
                   "\",\"detail\":" + json_string(c.detail) + ",\"fix\":" + json_string(c.fix) +
                   "}";
        }
        out += std::string("],\"ok\":") + (failed ? "false" : "true") + "}\n";
        std::fputs(out.c_str(), stdout);
    } else {
        for (const Check &c : checks) {
            std::printf("%-5s %-13s %s\n", status_name(c.status), c.name.c_str(), c.detail.c_str());
            if (!c.fix.empty()) std::printf("      %-13s fix: %s\n", "", c.fix.c_str());
        }
        std::printf("%s\n", failed ? "softrnic doctor: something softrnic needs is missing"
                                   : "softrnic doctor: nothing missing");
    }
    return failed ? 1 : 0;
}

}  // namespace softrnic::tools
