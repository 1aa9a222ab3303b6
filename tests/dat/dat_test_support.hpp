// dat_test_support.hpp - helpers of the DAT registry tests.
//
// The registry is per-process state that reads dat.conf once, so every test
// runs its body in a forked child with its own DAT_OVERRIDE (run_isolated);
// the parent only waits, with a deadline, and reports the child's failures.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

#include <dat2/dat_registry.h>
#include <dat2/udat.h>

#include "test_provider.h"

// Present only in sanitizer builds (LeakSanitizer); children leave with
// _exit, which skips the automatic leak check, so they ask for it.
extern "C" int __lsan_do_recoverable_leak_check() __attribute__((weak));

namespace dat_test {

// A private directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
  public:
    TempDir() {
        const char *base = std::getenv("TMPDIR");
        std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/dat-test-XXXXXX";
        if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;

    // Writes `text` to a file in the directory; returns its path.
    std::string write(const std::string &name, const std::string &text) const {
        std::string file = path_ + "/" + name;
        std::ofstream(file, std::ios::binary) << text;
        return file;
    }
    const std::string &path() const { return path_; }

  private:
    std::string path_;
};

// One dat.conf line for `ia_name`, served by `library` (the test provider by default).
inline std::string conf_line(const std::string &ia_name, const std::string &ia_params = "dev 0",
                             const std::string &library = DAT_TEST_PROVIDER_PATH,
                             const std::string &api = "u2.0",
                             const std::string &thread_safety = "nonthreadsafe",
                             const std::string &default_flag = "default") {
    return ia_name + " " + api + " " + thread_safety + " " + default_flag + " " + library +
           " softrnic.0.1 \"" + ia_params + "\" \"\"\n";
}

// The test provider's counters (loads it, and keeps it loaded, in this process).
inline DAT_TEST_PROVIDER_STATE &provider_state() {
    static void *library = dlopen(DAT_TEST_PROVIDER_PATH, RTLD_NOW | RTLD_GLOBAL);
    if (library == nullptr) {
        ADD_FAILURE() << "cannot load the test provider: " << dlerror();
        std::abort();
    }
    auto state = reinterpret_cast<DAT_TEST_PROVIDER_STATE_FUNC_T>(
        dlsym(library, DAT_TEST_PROVIDER_STATE_FUNC));
    return *state();
}

// Runs `body` in a child process with DAT_OVERRIDE set to `conf` (unset if
// empty) and returns whether it passed. The child keeps the test provider
// resident so its counters survive the registry unloading it.
inline bool run_isolated(const std::string &conf, const std::function<void()> &body,
                         std::chrono::seconds limit = std::chrono::seconds(60)) {
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t child = fork();
    if (child < 0) {
        ADD_FAILURE() << "fork failed";
        return false;
    }
    if (child == 0) {
        provider_state();  // load it now, so the counters outlive registry unloads
        if (conf.empty()) {
            unsetenv("DAT_OVERRIDE");
        } else {
            setenv("DAT_OVERRIDE", conf.c_str(), 1);
        }
        body();
        bool leaked =
            __lsan_do_recoverable_leak_check != nullptr && __lsan_do_recoverable_leak_check() != 0;
        std::fflush(stdout);
        std::fflush(stderr);
        _exit(::testing::Test::HasFailure() || leaked ? 1 : 0);
    }
    auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (true) {
        pid_t done = waitpid(child, &status, WNOHANG);
        if (done == child) break;
        if (done < 0 || std::chrono::steady_clock::now() > deadline) {
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
            ADD_FAILURE() << "isolated test body did not finish in " << limit.count() << " s";
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (WIFSIGNALED(status)) {
        ADD_FAILURE() << "isolated test body died with signal " << WTERMSIG(status);
        return false;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The interface takes IA names as `char *const`; C++ string literals are const.
inline DAT_RETURN open_ia(const char *name, DAT_COUNT qlen, DAT_EVD_HANDLE *async_evd,
                          DAT_IA_HANDLE *ia) {
    return dat_ia_open(const_cast<DAT_NAME_PTR>(name), qlen, async_evd, ia);
}
inline DAT_RETURN open_iav(const char *name, DAT_COUNT qlen, DAT_EVD_HANDLE *async_evd,
                           DAT_IA_HANDLE *ia, DAT_UINT32 major, DAT_UINT32 minor,
                           DAT_BOOLEAN thread_safe) {
    return dat_ia_openv(const_cast<DAT_NAME_PTR>(name), qlen, async_evd, ia, major, minor,
                        thread_safe);
}
inline DAT_RETURN providers_related(const char *a, const char *b, DAT_HA_RELATIONSHIP *r) {
    return dat_registry_providers_related(const_cast<DAT_NAME_PTR>(a), const_cast<DAT_NAME_PTR>(b),
                                          r);
}

}  // namespace dat_test
