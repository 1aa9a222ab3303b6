// The logger (src/base/log.hpp): levels and their default, the subsystem filter, invalid
// values, the line format, SOFTRNIC_LOG_FILE, lines of concurrent threads, and the
// one-time reading of the environment.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/config.hpp"
#include "base/log.hpp"
#include "log_capture.hpp"

namespace base = softrnic::base;
using logtest::Capture;

namespace {

TEST(Log, DefaultLevelIsWarn) {
    Capture cap(nullptr);
    SOFTRNIC_LOG(Error, Cm, "an error");
    SOFTRNIC_LOG(Warn, Cm, "a warning");
    SOFTRNIC_LOG(Info, Cm, "some info");
    SOFTRNIC_LOG(Debug, Engine, "some debug");
    EXPECT_EQ(cap.count("an error"), 1u);
    EXPECT_EQ(cap.count("a warning"), 1u);
    EXPECT_EQ(cap.count("some info"), 0u);
    EXPECT_EQ(cap.count("some debug"), 0u);
    EXPECT_EQ(cap.lines().size(), 2u) << cap.text();
}

TEST(Log, LineCarriesTimePidThreadLevelSubsystemAndMessage) {
    Capture cap("info");
    SOFTRNIC_LOG(Info, Shm, "ring %d of %s", 3, "peer");
    auto lines = cap.lines();
    ASSERT_EQ(lines.size(), 1u) << cap.text();
    const std::string expect_ids = "softrnic[" + std::to_string(::getpid()) + ":" +
                                   std::to_string(::syscall(SYS_gettid)) + "]";
    std::regex format(
        R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z softrnic\[\d+:\d+\] INFO shm: ring 3 of peer$)");
    EXPECT_TRUE(std::regex_match(lines[0], format)) << lines[0];
    EXPECT_NE(lines[0].find(expect_ids), std::string::npos) << lines[0];
}

TEST(Log, EveryLevelName) {
    const char *names[] = {"error", "warn", "info", "debug", "TRACE"};
    for (int i = 0; i < 5; ++i) {
        Capture cap(names[i]);
        SOFTRNIC_LOG(Error, Engine, "e");
        SOFTRNIC_LOG(Warn, Engine, "w");
        SOFTRNIC_LOG(Info, Engine, "i");
        SOFTRNIC_LOG(Debug, Engine, "d");
        SOFTRNIC_LOG(Trace, Engine, "t");
        EXPECT_EQ(cap.lines().size(), size_t(i + 1)) << names[i] << ":\n" << cap.text();
        EXPECT_EQ(cap.count("SOFTRNIC_LOG"), 0u) << "a valid level is not complained about";
    }
}

TEST(Log, ErrorLevelPrintsNothingAtWarnOrInfo) {
    Capture cap("error");
    SOFTRNIC_LOG(Warn, Cm, "a warning");
    SOFTRNIC_LOG(Info, Cm, "some info");
    SOFTRNIC_LOG(Warn, Dat, "another warning");
    EXPECT_EQ(cap.text(), "");
    SOFTRNIC_LOG(Error, Cm, "an error");
    EXPECT_EQ(cap.lines().size(), 1u);
}

TEST(Log, SubsystemFilter) {
    {
        Capture cap("info", "shm");
        SOFTRNIC_LOG(Warn, Cm, "from cm");
        SOFTRNIC_LOG(Info, Shm, "from shm");
        EXPECT_EQ(cap.count("from cm"), 0u);
        EXPECT_EQ(cap.count("from shm"), 1u);
    }
    {
        Capture cap("info", " CM , dat,");  // case, blanks and an empty entry are fine
        SOFTRNIC_LOG(Info, Cm, "from cm");
        SOFTRNIC_LOG(Info, Dat, "from dat");
        SOFTRNIC_LOG(Info, Tcp, "from tcp");
        EXPECT_EQ(cap.count("from cm"), 1u);
        EXPECT_EQ(cap.count("from dat"), 1u);
        EXPECT_EQ(cap.count("from tcp"), 0u);
        EXPECT_EQ(cap.lines().size(), 2u) << cap.text();
    }
    {
        Capture cap("info", "all");
        for (size_t s = 0; s < base::kLogSubsysCount; ++s)
            softrnic_log_write(uint8_t(base::LogLevel::Info), uint8_t(s), "x");
        EXPECT_EQ(cap.lines().size(), base::kLogSubsysCount);
    }
}

TEST(Log, InvalidLevelFallsBackToWarnAndWarnsOnce) {
    Capture cap("verbose");
    for (int i = 0; i < 3; ++i) {
        SOFTRNIC_LOG(Warn, Cm, "a warning");
        SOFTRNIC_LOG(Info, Cm, "some info");
    }
    EXPECT_EQ(cap.count("SOFTRNIC_LOG=verbose is not a level"), 1u) << cap.text();
    EXPECT_EQ(cap.count("WARN base: SOFTRNIC_LOG=verbose"), 1u) << cap.text();
    EXPECT_EQ(cap.count("a warning"), 3u);
    EXPECT_EQ(cap.count("some info"), 0u);
}

TEST(Log, UnknownSubsystemWarnsOnceAndKeepsTheKnownOnes) {
    Capture cap("info", "cm,nic");
    SOFTRNIC_LOG(Info, Cm, "from cm");
    SOFTRNIC_LOG(Info, Shm, "from shm");
    SOFTRNIC_LOG(Info, Cm, "from cm");
    EXPECT_EQ(cap.count("SOFTRNIC_LOG_SUBSYS: no subsystem named nic"), 1u) << cap.text();
    EXPECT_EQ(cap.count("from cm"), 2u);
    EXPECT_EQ(cap.count("from shm"), 0u);
}

TEST(Log, OnlyUnknownSubsystemsMeanAll) {
    Capture cap("info", "nic,,wire");
    SOFTRNIC_LOG(Info, Shm, "from shm");
    EXPECT_EQ(cap.count("SOFTRNIC_LOG_SUBSYS: no subsystem named nic,wire"), 1u) << cap.text();
    EXPECT_EQ(cap.count("from shm"), 1u);
}

TEST(Log, DisabledLogPointEvaluatesNothing) {
    Capture cap("warn");
    int evaluated = 0;
    auto arg = [&] { return ++evaluated; };
    SOFTRNIC_LOG(Debug, Engine, "%d", arg());
    SOFTRNIC_LOG(Trace, Engine, "%d", arg());
    EXPECT_EQ(evaluated, 0);
    SOFTRNIC_LOG(Warn, Engine, "%d", arg());
    EXPECT_EQ(evaluated, 1);
}

TEST(Log, LongMessageIsCutToOneLine) {
    Capture cap("info");
    std::string big(5000, 'x');
    SOFTRNIC_LOG(Info, Cm, "%s", big.c_str());
    auto lines = cap.lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_LE(lines[0].size(), 1023u);
    EXPECT_EQ(lines[0].substr(lines[0].size() - 3), "...");
}

// Lines of concurrent threads never interleave, even in a sink that has no O_APPEND (this
// capture is a memfd without it: unserialised writes there shared the file position).
TEST(Log, ConcurrentLinesStayWhole) {
    Capture cap("info");
    constexpr int kThreads = 4, kLines = 500;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([t] {
            for (int i = 0; i < kLines; ++i)
                SOFTRNIC_LOG(Info, Engine, "thread %d line %d %s", t, i,
                             "padding-padding-padding-padding-padding-padding-padding");
        });
    for (auto &th : threads)
        th.join();
    std::regex line(
        R"(^\S+ softrnic\[\d+:\d+\] INFO engine: thread (\d) line (\d+) (padding-){6}padding$)");
    std::set<std::pair<int, int>> seen;
    for (const std::string &l : cap.lines()) {
        std::smatch m;
        ASSERT_TRUE(std::regex_match(l, m, line)) << l;
        seen.emplace(std::stoi(m[1]), std::stoi(m[2]));
    }
    EXPECT_EQ(seen.size(), size_t(kThreads * kLines));
}

TEST(Log, LogFileWithPid) {
    auto dir = std::filesystem::temp_directory_path() /
               ("softrnic-log-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string pattern = (dir / "run.%p.log").string();
    ::setenv("SOFTRNIC_LOG", "info", 1);
    ::setenv("SOFTRNIC_LOG_FILE", pattern.c_str(), 1);
    base::log_reload();
    SOFTRNIC_LOG(Info, Cm, "to the file");
    ::unsetenv("SOFTRNIC_LOG_FILE");
    ::unsetenv("SOFTRNIC_LOG");
    base::log_reload();  // closes the file, back to stderr
    const auto file = dir / ("run." + std::to_string(::getpid()) + ".log");
    std::ifstream in(file);
    std::stringstream ss;
    ss << in.rdbuf();
    std::filesystem::remove_all(dir);
    EXPECT_NE(ss.str().find("INFO cm: to the file\n"), std::string::npos) << ss.str();
}

TEST(Log, UnopenableLogFileFallsBackToStderrWithAWarning) {
    Capture cap("info");
    ::setenv("SOFTRNIC_LOG_FILE", "/nonexistent-dir/softrnic.log", 1);
    base::log_reload();
    ::unsetenv("SOFTRNIC_LOG_FILE");
    EXPECT_EQ(cap.count("SOFTRNIC_LOG_FILE=/nonexistent-dir/softrnic.log cannot be opened"), 1u)
        << cap.text();
}

// The environment is read once, at the first log point: later changes are not seen.
// Meaningful only as the first log point of the process (ctest runs each test alone).
TEST(LogOnce, EnvironmentReadAtFirstLogPointOnly) {
    for (size_t s = 0; s < base::kLogSubsysCount; ++s)
        if (softrnic_log_threshold[s].load(std::memory_order_relaxed) != base::kLogUnread)
            GTEST_SKIP() << "the logger was used earlier in this process";
    ::setenv("SOFTRNIC_LOG", "debug", 1);
    ::setenv("SOFTRNIC_LOG_SUBSYS", "engine", 1);
    int pipefd[2];
    ASSERT_EQ(::pipe(pipefd), 0);
    SOFTRNIC_LOG(Debug, Engine, "first");  // reads the environment: to stderr
    base::log_redirect(pipefd[1]);
    ::setenv("SOFTRNIC_LOG", "error", 1);
    SOFTRNIC_LOG(Debug, Engine, "second");  // still debug
    SOFTRNIC_LOG(Debug, Cm, "not cm");      // still engine only
    base::log_redirect(-1);
    ::close(pipefd[1]);
    char buf[512] = {};
    ssize_t n = ::read(pipefd[0], buf, sizeof buf - 1);
    ::close(pipefd[0]);
    ::unsetenv("SOFTRNIC_LOG");
    ::unsetenv("SOFTRNIC_LOG_SUBSYS");
    ASSERT_GT(n, 0);
    std::string got(buf, size_t(n));
    EXPECT_NE(got.find("DEBUG engine: second\n"), std::string::npos) << got;
    EXPECT_EQ(got.find("not cm"), std::string::npos) << got;
}

TEST(LogConfig, DeclaredInTheTable) {
    std::set<std::string> names;
    for (const softrnic_env_var_t &v : base::env_vars())
        names.insert(v.name);
    EXPECT_TRUE(names.count("SOFTRNIC_LOG"));
    EXPECT_TRUE(names.count("SOFTRNIC_LOG_SUBSYS"));
    EXPECT_TRUE(names.count("SOFTRNIC_LOG_FILE"));
    EXPECT_STREQ(base::env_vars()[size_t(base::EnvVar::Log)].default_value, "warn");
    EXPECT_STREQ(base::env_vars()[size_t(base::EnvVar::LogSubsys)].default_value, "all");
}

}  // namespace
