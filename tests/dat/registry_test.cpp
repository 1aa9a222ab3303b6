// registry_test.cpp - libdat2 (softrnic's DAT registry) against the test provider.
//
// Each test writes a dat.conf into a temporary directory, points DAT_OVERRIDE
// at it and runs in a child process (dat_test_support.hpp), because the
// registry reads its configuration once per process.
#include <dat2/dat_registry.h>
#include <dat2/udat.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "dat_test_support.hpp"

using dat_test::conf_line;
using dat_test::open_ia;
using dat_test::open_iav;
using dat_test::provider_state;
using dat_test::providers_related;
using dat_test::run_isolated;
using dat_test::TempDir;

// Not in the public headers (the reference providers import it from libdat2).
extern "C" DAT_RETURN DAT_API dats_get_ia_handle(DAT_IA_HANDLE, DAT_IA_HANDLE *);

namespace {

DAT_RETURN type_of(DAT_RETURN status) {
    return DAT_GET_TYPE(status);
}
DAT_RETURN subtype_of(DAT_RETURN status) {
    return DAT_GET_SUBTYPE(status);
}

DAT_IA_HANDLE provider_handle(DAT_IA_HANDLE ia) {
    DAT_IA_HANDLE provider_ia = DAT_HANDLE_NULL;
    EXPECT_EQ(dats_get_ia_handle(ia, &provider_ia), DAT_SUCCESS);
    return provider_ia;
}

}  // namespace

// ---------------------------------------------------------------------------
// Opening and closing
// ---------------------------------------------------------------------------

TEST(DatRegistry, OpenLoadsTheProviderAndCloseUnloadsIt) {
    TempDir dir;
    std::string conf = dir.write("dat.conf", conf_line("test0", "dev 0"));
    EXPECT_TRUE(run_isolated(conf, [] {
        auto &state = provider_state();
        DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        ASSERT_EQ(open_ia("test0", 8, &async_evd, &ia), DAT_SUCCESS);

        EXPECT_EQ(state.init_calls, 1);
        EXPECT_STREQ(state.last_init_info.ia_name, "test0");
        EXPECT_EQ(state.last_init_info.dapl_version_major, 2u);
        EXPECT_EQ(state.last_init_info.dapl_version_minor, 0u);
        EXPECT_EQ(state.last_init_info.is_thread_safe, DAT_FALSE);
        EXPECT_STREQ(state.last_init_params, "dev 0");
        EXPECT_EQ(state.open_calls, 1);
        EXPECT_EQ(state.last_open_qlen, 8);
        EXPECT_NE(async_evd, DAT_HANDLE_NULL);  // created by the provider

        // Consumers get a small integer; the provider keeps its own pointer.
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(ia), 1u);
        EXPECT_NE(provider_handle(ia), ia);

        DAT_PROVIDER_ATTR attr{};
        ASSERT_EQ(dat_ia_query(ia, nullptr, 0, nullptr, DAT_PROVIDER_FIELD_ALL, &attr),
                  DAT_SUCCESS);
        EXPECT_STREQ(attr.provider_name, "dat_test_provider");
        EXPECT_EQ(std::string(state.last_slot), "ia_query_func");
        EXPECT_EQ(state.last_handle, provider_handle(ia));

        ASSERT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        EXPECT_EQ(state.close_calls, 1);
        EXPECT_EQ(state.fini_calls, 1);

        // Opening again initialises the provider again.
        ASSERT_EQ(open_ia("test0", 8, &async_evd, &ia), DAT_SUCCESS);
        EXPECT_EQ(state.init_calls, 2);
        EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
        EXPECT_EQ(state.last_close_flags, DAT_CLOSE_GRACEFUL_FLAG);
        EXPECT_EQ(state.fini_calls, 2);
    }));
}

TEST(DatRegistry, SeveralInstancesShareOneLoad) {
    TempDir dir;
    std::string conf = dir.write("dat.conf", conf_line("multi0") + conf_line("multi1"));
    EXPECT_TRUE(run_isolated(conf, [] {
        auto &state = provider_state();
        DAT_EVD_HANDLE evd[3] = {};
        DAT_IA_HANDLE ia[3] = {};
        ASSERT_EQ(open_ia("multi0", 4, &evd[0], &ia[0]), DAT_SUCCESS);
        ASSERT_EQ(open_ia("multi0", 4, &evd[1], &ia[1]), DAT_SUCCESS);
        ASSERT_EQ(open_ia("multi1", 4, &evd[2], &ia[2]), DAT_SUCCESS);
        EXPECT_EQ(state.init_calls, 2);  // once per IA name
        EXPECT_NE(ia[0], ia[1]);
        EXPECT_NE(ia[1], ia[2]);
        EXPECT_EQ(dat_ia_close(ia[0], DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        EXPECT_EQ(state.fini_calls, 0);  // multi0 is still open
        EXPECT_EQ(dat_ia_close(ia[1], DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        EXPECT_EQ(state.fini_calls, 1);
        EXPECT_EQ(dat_ia_close(ia[2], DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        EXPECT_EQ(state.fini_calls, 2);

        // A closed handle is not handed out again straight away.
        DAT_IA_HANDLE again = DAT_HANDLE_NULL;
        DAT_EVD_HANDLE again_evd = DAT_HANDLE_NULL;
        ASSERT_EQ(open_ia("multi0", 4, &again_evd, &again), DAT_SUCCESS);
        EXPECT_NE(again, ia[0]);
        EXPECT_NE(again, ia[1]);
        EXPECT_NE(again, ia[2]);
        EXPECT_EQ(dat_ia_close(again, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }));
}

TEST(DatRegistry, UnknownNameIsProviderNotFound) {
    TempDir dir;
    std::string conf = dir.write("dat.conf", conf_line("known0"));
    EXPECT_TRUE(run_isolated(conf, [] {
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        DAT_RETURN status = open_ia("no-such-ia", 4, &evd, &ia);
        EXPECT_EQ(type_of(status), DAT_PROVIDER_NOT_FOUND);
        EXPECT_EQ(subtype_of(status), DAT_NAME_NOT_REGISTERED);
        EXPECT_EQ(status & DAT_CLASS_ERROR, DAT_CLASS_ERROR);
        EXPECT_EQ(ia, DAT_HANDLE_NULL);
        EXPECT_EQ(provider_state().init_calls, 0);  // nothing was loaded
    }));
}

TEST(DatRegistry, VersionOrThreadSafetyMismatchIsRejected) {
    TempDir dir;
    std::string conf = dir.write("dat.conf", conf_line("ver0"));
    EXPECT_TRUE(run_isolated(conf, [] {
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        DAT_RETURN major = open_iav("ver0", 4, &evd, &ia, 1, 2, DAT_FALSE);
        EXPECT_EQ(type_of(major), DAT_PROVIDER_NOT_FOUND);
        EXPECT_EQ(subtype_of(major), DAT_MAJOR_NOT_FOUND);
        DAT_RETURN minor = open_iav("ver0", 4, &evd, &ia, 2, 1, DAT_FALSE);
        EXPECT_EQ(type_of(minor), DAT_PROVIDER_NOT_FOUND);
        EXPECT_EQ(subtype_of(minor), DAT_MINOR_NOT_FOUND);
        DAT_RETURN safety = open_iav("ver0", 4, &evd, &ia, 2, 0, DAT_TRUE);
        EXPECT_EQ(type_of(safety), DAT_PROVIDER_NOT_FOUND);
        EXPECT_EQ(subtype_of(safety), DAT_THREAD_SAFETY_NOT_FOUND);
        EXPECT_EQ(provider_state().init_calls, 0);

        // The version the headers ask for by default does match.
        ASSERT_EQ(
            open_iav("ver0", 4, &evd, &ia, DAT_VERSION_MAJOR, DAT_VERSION_MINOR, DAT_THREADSAFE),
            DAT_SUCCESS);
        EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }));
}

TEST(DatRegistry, DoubleCloseAndBadHandlesAreInvalidHandle) {
    TempDir dir;
    std::string conf = dir.write("dat.conf", conf_line("close0"));
    EXPECT_TRUE(run_isolated(conf, [] {
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        ASSERT_EQ(open_ia("close0", 4, &evd, &ia), DAT_SUCCESS);

        // Unknown flags are refused and leave the IA open.
        EXPECT_EQ(type_of(dat_ia_close(ia, static_cast<DAT_CLOSE_FLAGS>(7))),
                  DAT_INVALID_PARAMETER);
        ASSERT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);

        DAT_RETURN second = dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
        EXPECT_EQ(type_of(second), DAT_INVALID_HANDLE);
        EXPECT_EQ(subtype_of(second), DAT_INVALID_HANDLE_IA);
        EXPECT_EQ(provider_state().close_calls, 1);

        for (std::uintptr_t bogus : {std::uintptr_t{0}, std::uintptr_t{2}, std::uintptr_t{999},
                                     std::uintptr_t{0x12345}, ~std::uintptr_t{0}}) {
            auto handle = reinterpret_cast<DAT_IA_HANDLE>(bogus);
            EXPECT_EQ(type_of(dat_ia_close(handle, DAT_CLOSE_ABRUPT_FLAG)), DAT_INVALID_HANDLE);
            EXPECT_EQ(type_of(dat_ia_query(handle, nullptr, 0, nullptr, 0, nullptr)),
                      DAT_INVALID_HANDLE);
            DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
            EXPECT_EQ(type_of(dat_pz_create(handle, &pz)), DAT_INVALID_HANDLE);
        }
        EXPECT_EQ(type_of(dat_ia_query(ia, nullptr, 0, nullptr, 0, nullptr)), DAT_INVALID_HANDLE);
    }));
}

TEST(DatRegistry, GracefulCloseRefusedLeavesTheIaUsable) {
    TempDir dir;
    std::string conf = dir.write("dat.conf", conf_line("busy0", "dev graceful_busy"));
    EXPECT_TRUE(run_isolated(conf, [] {
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        ASSERT_EQ(open_ia("busy0", 4, &evd, &ia), DAT_SUCCESS);
        EXPECT_EQ(type_of(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG)), DAT_INVALID_STATE);
        EXPECT_EQ(provider_state().fini_calls, 0);
        EXPECT_EQ(dat_ia_query(ia, nullptr, 0, nullptr, 0, nullptr), DAT_SUCCESS);
        EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        EXPECT_EQ(provider_state().fini_calls, 1);
    }));
}

TEST(DatRegistry, FailedOpenReleasesTheProvider) {
    TempDir dir;
    std::string conf = dir.write("dat.conf", conf_line("fail0", "dev fail_open") +
                                                 conf_line("null0", "dev null_handle") +
                                                 conf_line("quiet0", "dev no_register"));
    EXPECT_TRUE(run_isolated(conf, [] {
        auto &state = provider_state();
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;

        DAT_RETURN failed = open_ia("fail0", 4, &evd, &ia);
        EXPECT_EQ(type_of(failed), DAT_INSUFFICIENT_RESOURCES);  // the provider's own code
        EXPECT_EQ(subtype_of(failed), DAT_RESOURCE_DEVICE);
        EXPECT_EQ(state.init_calls, 1);
        EXPECT_EQ(state.fini_calls, 1);

        // A provider that claims success without a handle is not trusted.
        EXPECT_EQ(type_of(open_ia("null0", 4, &evd, &ia)), DAT_INTERNAL_ERROR);
        EXPECT_EQ(state.fini_calls, 2);

        // A provider that does not register is as good as absent.
        DAT_RETURN quiet = open_ia("quiet0", 4, &evd, &ia);
        EXPECT_EQ(type_of(quiet), DAT_PROVIDER_NOT_FOUND);
        EXPECT_EQ(subtype_of(quiet), DAT_NAME_NOT_REGISTERED);
        EXPECT_EQ(state.fini_calls, 3);
    }));
}

TEST(DatRegistry, MissingLibraryFallsBackToTheNextEntryOfTheSameName) {
    TempDir dir;
    std::string conf =
        dir.write("dat.conf", conf_line("gone0", "dev 0", dir.path() + "/libnot-there.so") +
                                  conf_line("fall0", "first", dir.path() + "/libnot-there.so") +
                                  conf_line("fall0", "second"));
    EXPECT_TRUE(run_isolated(conf, [] {
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        DAT_RETURN gone = open_ia("gone0", 4, &evd, &ia);
        EXPECT_EQ(type_of(gone), DAT_PROVIDER_NOT_FOUND);
        EXPECT_EQ(subtype_of(gone), DAT_NAME_NOT_REGISTERED);

        ASSERT_EQ(open_ia("fall0", 4, &evd, &ia), DAT_SUCCESS);
        EXPECT_STREQ(provider_state().last_init_params, "second");
        EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }));
}

// ---------------------------------------------------------------------------
// The static registry: dat.conf and DAT_OVERRIDE
// ---------------------------------------------------------------------------

TEST(DatRegistry, ListProvidersReportsLoadableEntries) {
    TempDir dir;
    std::string conf = dir.write(
        "dat.conf",
        "# comment\n" + conf_line("list0") +
            conf_line("list1", "x", DAT_TEST_PROVIDER_PATH, "u2.0", "threadsafe") +
            conf_line("list2", "x", DAT_TEST_PROVIDER_PATH, "u2.0", "nonthreadsafe", "nondefault") +
            conf_line("list3", "x", DAT_TEST_PROVIDER_PATH, "k2.0") +
            conf_line("list0") /* duplicate key: listed once */);
    EXPECT_TRUE(run_isolated(conf, [] {
        DAT_COUNT count = -1;
        // Asking for nothing returns the size, and fails as the spec says.
        EXPECT_EQ(type_of(dat_registry_list_providers(0, &count, nullptr)), DAT_INVALID_PARAMETER);
        EXPECT_EQ(count, 2);

        DAT_PROVIDER_INFO infos[4] = {};
        DAT_PROVIDER_INFO *list[4] = {&infos[0], &infos[1], &infos[2], &infos[3]};
        ASSERT_EQ(dat_registry_list_providers(4, &count, list), DAT_SUCCESS);
        ASSERT_EQ(count, 2);
        EXPECT_STREQ(infos[0].ia_name, "list0");
        EXPECT_EQ(infos[0].dapl_version_major, 2u);
        EXPECT_EQ(infos[0].dapl_version_minor, 0u);
        EXPECT_EQ(infos[0].is_thread_safe, DAT_FALSE);
        EXPECT_STREQ(infos[1].ia_name, "list1");
        EXPECT_EQ(infos[1].is_thread_safe, DAT_TRUE);

        // A shorter list gets the first entries (deployed behaviour).
        DAT_PROVIDER_INFO one{};
        DAT_PROVIDER_INFO *short_list[1] = {&one};
        ASSERT_EQ(dat_registry_list_providers(1, &count, short_list), DAT_SUCCESS);
        EXPECT_EQ(count, 1);
        EXPECT_STREQ(one.ia_name, "list0");

        EXPECT_EQ(type_of(dat_registry_list_providers(4, nullptr, list)), DAT_INVALID_PARAMETER);
        EXPECT_EQ(type_of(dat_registry_list_providers(4, &count, nullptr)), DAT_INVALID_PARAMETER);
        DAT_PROVIDER_INFO *holes[2] = {&infos[0], nullptr};
        EXPECT_EQ(type_of(dat_registry_list_providers(2, &count, holes)), DAT_INVALID_PARAMETER);
        EXPECT_EQ(count, 2);

        // Only "u" + "default" entries can be opened.
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        EXPECT_EQ(type_of(open_ia("list2", 4, &evd, &ia)), DAT_PROVIDER_NOT_FOUND);
        EXPECT_EQ(type_of(open_ia("list3", 4, &evd, &ia)), DAT_PROVIDER_NOT_FOUND);
        ASSERT_EQ(open_iav("list1", 4, &evd, &ia, 2, 0, DAT_TRUE), DAT_SUCCESS);
        EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }));
}

const char kLineWithNul[] = "nul0 u2.0 nonthreadsafe default lib\0.so dapl.2.0 \"\" \"\"\n";

TEST(DatRegistry, MalformedLinesAreIgnored) {
    TempDir dir;
    std::string garbage =
        "\n"
        "   \t  \n"
        "# a comment line\n"
        "   # an indented comment\n"
        "short0 u2.0 nonthreadsafe default\n" +                              // too few fields
        conf_line("badapi0", "x", DAT_TEST_PROVIDER_PATH, "x2.0") +          // API kind
        conf_line("badapi1", "x", DAT_TEST_PROVIDER_PATH, "u2") +            // no minor
        conf_line("badapi2", "x", DAT_TEST_PROVIDER_PATH, "u2.x") +          // not a number
        conf_line("badts0", "x", DAT_TEST_PROVIDER_PATH, "u2.0", "maybe") +  // thread safety
        conf_line("baddef0", "x", DAT_TEST_PROVIDER_PATH, "u2.0", "nonthreadsafe", "always") +
        "badver0 u2.0 nonthreadsafe default " DAT_TEST_PROVIDER_PATH " dapl \"x\" \"\"\n" +
        "quote0 u2.0 nonthreadsafe default " DAT_TEST_PROVIDER_PATH " dapl.2.0 \"open\n" +
        "glued0 u2.0 nonthreadsafe default " DAT_TEST_PROVIDER_PATH " dapl.2.0 \"a\"b \"\"\n" +
        "extra0 u2.0 nonthreadsafe default " DAT_TEST_PROVIDER_PATH " dapl.2.0 \"\" \"\" x\n" +
        std::string(300, 'n') + " u2.0 nonthreadsafe default lib.so dapl.2.0 \"\" \"\"\n" +
        std::string(kLineWithNul, sizeof kLineWithNul - 1) + std::string(20000, 'z') + "\n" +
        "\x01\x02\xff\xfe binary junk\n";
    std::string good_middle = conf_line("good0", "a \\\"quoted\\\" word # not a comment");
    // The last good line has CRLF, a trailing comment and no final newline.
    std::string good_last = "good1\tu2.0  nonthreadsafe default " DAT_TEST_PROVIDER_PATH
                            " prov.id.1.2 plain \"\" # trailing comment\r";
    std::string conf = dir.write("dat.conf", garbage + good_middle + garbage + good_last);
    EXPECT_TRUE(run_isolated(conf, [] {
        DAT_COUNT count = 0;
        DAT_PROVIDER_INFO infos[8] = {};
        DAT_PROVIDER_INFO *list[8];
        for (int i = 0; i < 8; ++i)
            list[i] = &infos[i];
        ASSERT_EQ(dat_registry_list_providers(8, &count, list), DAT_SUCCESS);
        ASSERT_EQ(count, 2);
        EXPECT_STREQ(infos[0].ia_name, "good0");
        EXPECT_STREQ(infos[1].ia_name, "good1");

        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        ASSERT_EQ(open_ia("good0", 4, &evd, &ia), DAT_SUCCESS);
        EXPECT_STREQ(provider_state().last_init_params, "a \"quoted\" word # not a comment");
        EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        ASSERT_EQ(open_ia("good1", 4, &evd, &ia), DAT_SUCCESS);
        EXPECT_STREQ(provider_state().last_init_params, "plain");
        EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        EXPECT_EQ(type_of(open_ia("badapi0", 4, &evd, &ia)), DAT_PROVIDER_NOT_FOUND);
    }));
}

TEST(DatRegistry, DatOverrideIsHonouredWithoutFallback) {
    TempDir dir;
    std::string conf = dir.write("override.conf", conf_line("ovr0"));
    EXPECT_TRUE(run_isolated(conf, [] {
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        ASSERT_EQ(open_ia("ovr0", 4, &evd, &ia), DAT_SUCCESS);
        EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }));

    // An override that cannot be read means no static registry, even when
    // /etc/dat.conf exists: nothing is listed or loadable.
    std::string missing = dir.path() + "/does-not-exist.conf";
    EXPECT_TRUE(run_isolated(missing, [] {
        DAT_COUNT count = -1;
        DAT_PROVIDER_INFO info{};
        DAT_PROVIDER_INFO *list[1] = {&info};
        EXPECT_EQ(type_of(dat_registry_list_providers(1, &count, list)), DAT_INTERNAL_ERROR);
        EXPECT_EQ(count, 0);
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        EXPECT_EQ(type_of(open_ia("ovr0", 4, &evd, &ia)), DAT_PROVIDER_NOT_FOUND);
    }));
}

// ---------------------------------------------------------------------------
// Argument checking
// ---------------------------------------------------------------------------

TEST(DatRegistry, NullAndOversizedArgumentsAreRejected) {
    TempDir dir;
    std::string conf = dir.write("dat.conf", conf_line("args0"));
    EXPECT_TRUE(run_isolated(conf, [] {
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        DAT_RETURN no_name = open_ia(nullptr, 4, &evd, &ia);
        EXPECT_EQ(type_of(no_name), DAT_INVALID_PARAMETER);
        EXPECT_EQ(subtype_of(no_name), DAT_INVALID_ARG1);
        std::string long_name(DAT_NAME_MAX_LENGTH, 'a');
        EXPECT_EQ(subtype_of(open_ia(long_name.c_str(), 4, &evd, &ia)), DAT_INVALID_ARG1);
        EXPECT_EQ(subtype_of(open_ia("", 4, &evd, &ia)), DAT_INVALID_ARG1);
        DAT_RETURN no_evd = open_ia("args0", 4, nullptr, &ia);
        EXPECT_EQ(type_of(no_evd), DAT_INVALID_PARAMETER);
        EXPECT_EQ(subtype_of(no_evd), DAT_INVALID_ARG3);
        DAT_RETURN no_ia = open_ia("args0", 4, &evd, nullptr);
        EXPECT_EQ(type_of(no_ia), DAT_INVALID_PARAMETER);
        EXPECT_EQ(subtype_of(no_ia), DAT_INVALID_ARG4);
        EXPECT_EQ(provider_state().init_calls, 0);

        DAT_PROVIDER table{};
        DAT_PROVIDER_INFO info{};
        std::strcpy(info.ia_name, "args1");
        EXPECT_EQ(type_of(dat_registry_add_provider(nullptr, &info)), DAT_INVALID_PARAMETER);
        EXPECT_EQ(type_of(dat_registry_add_provider(&table, &info)), DAT_INVALID_PARAMETER);
        EXPECT_EQ(type_of(dat_registry_add_provider(&table, nullptr)), DAT_INVALID_PARAMETER);
        EXPECT_EQ(type_of(dat_registry_remove_provider(nullptr, &info)), DAT_INVALID_PARAMETER);
        EXPECT_EQ(type_of(dat_registry_remove_provider(&table, nullptr)), DAT_INVALID_PARAMETER);
        EXPECT_EQ(type_of(dat_registry_remove_provider(&table, &info)), DAT_INVALID_PARAMETER);

        EXPECT_EQ(type_of(dats_get_ia_handle(reinterpret_cast<DAT_IA_HANDLE>(1), nullptr)),
                  DAT_INVALID_PARAMETER);
        DAT_IA_HANDLE out = DAT_HANDLE_NULL;
        EXPECT_EQ(type_of(dats_get_ia_handle(reinterpret_cast<DAT_IA_HANDLE>(1), &out)),
                  DAT_INVALID_HANDLE);

        DAT_HA_RELATIONSHIP relation = DAT_HA_FALSE;
        EXPECT_EQ(type_of(providers_related(nullptr, "args0", &relation)), DAT_INVALID_PARAMETER);
        EXPECT_EQ(type_of(providers_related("args0", "args0", nullptr)), DAT_INVALID_PARAMETER);
        EXPECT_EQ(type_of(providers_related("args0", "nope", &relation)), DAT_INVALID_PARAMETER);
    }));
}

// ---------------------------------------------------------------------------
// dat_strerror
// ---------------------------------------------------------------------------

TEST(DatStrerror, NamesTypesAndSubtypes) {
    const char *major = nullptr;
    const char *minor = nullptr;
    ASSERT_EQ(dat_strerror(DAT_SUCCESS, &major, &minor), DAT_SUCCESS);
    EXPECT_STREQ(major, "DAT_SUCCESS");
    EXPECT_STREQ(minor, "");

    DAT_RETURN not_found = DAT_CLASS_ERROR | DAT_PROVIDER_NOT_FOUND | DAT_NAME_NOT_REGISTERED;
    ASSERT_EQ(dat_strerror(not_found, &major, &minor), DAT_SUCCESS);
    EXPECT_STREQ(major, "DAT_PROVIDER_NOT_FOUND");
    EXPECT_STREQ(minor, "DAT_NAME_NOT_REGISTERED");

    // Either out pointer may be NULL.
    EXPECT_EQ(dat_strerror(not_found, nullptr, &minor), DAT_SUCCESS);
    EXPECT_STREQ(minor, "DAT_NAME_NOT_REGISTERED");
    EXPECT_EQ(dat_strerror(not_found, &major, nullptr), DAT_SUCCESS);
    EXPECT_EQ(dat_strerror(not_found, nullptr, nullptr), DAT_SUCCESS);

    // A warning is named like the error.
    ASSERT_EQ(dat_strerror(DAT_CLASS_WARNING | DAT_QUEUE_EMPTY, &major, &minor), DAT_SUCCESS);
    EXPECT_STREQ(major, "DAT_QUEUE_EMPTY");

    // Codes that are not defined.
    EXPECT_EQ(type_of(dat_strerror(0x00AB0000, &major, &minor)), DAT_INVALID_PARAMETER);
    EXPECT_EQ(type_of(dat_strerror(DAT_INVALID_STATE | 0xFFFF, &major, &minor)),
              DAT_INVALID_PARAMETER);
    EXPECT_EQ(type_of(dat_strerror(DAT_EXTENSION_BASE, &major, &minor)), DAT_INVALID_PARAMETER);

#define DAT_EXPECT_TYPE_NAME(type)                                                   \
    EXPECT_EQ(dat_strerror(DAT_CLASS_ERROR | (type), &major, nullptr), DAT_SUCCESS); \
    EXPECT_STREQ(major, #type);
    DAT_EXPECT_TYPE_NAME(DAT_ABORT)
    DAT_EXPECT_TYPE_NAME(DAT_CONN_QUAL_IN_USE)
    DAT_EXPECT_TYPE_NAME(DAT_INSUFFICIENT_RESOURCES)
    DAT_EXPECT_TYPE_NAME(DAT_INTERNAL_ERROR)
    DAT_EXPECT_TYPE_NAME(DAT_INVALID_HANDLE)
    DAT_EXPECT_TYPE_NAME(DAT_INVALID_PARAMETER)
    DAT_EXPECT_TYPE_NAME(DAT_INVALID_STATE)
    DAT_EXPECT_TYPE_NAME(DAT_LENGTH_ERROR)
    DAT_EXPECT_TYPE_NAME(DAT_MODEL_NOT_SUPPORTED)
    DAT_EXPECT_TYPE_NAME(DAT_PROVIDER_NOT_FOUND)
    DAT_EXPECT_TYPE_NAME(DAT_PRIVILEGES_VIOLATION)
    DAT_EXPECT_TYPE_NAME(DAT_PROTECTION_VIOLATION)
    DAT_EXPECT_TYPE_NAME(DAT_QUEUE_EMPTY)
    DAT_EXPECT_TYPE_NAME(DAT_QUEUE_FULL)
    DAT_EXPECT_TYPE_NAME(DAT_TIMEOUT_EXPIRED)
    DAT_EXPECT_TYPE_NAME(DAT_PROVIDER_ALREADY_REGISTERED)
    DAT_EXPECT_TYPE_NAME(DAT_PROVIDER_IN_USE)
    DAT_EXPECT_TYPE_NAME(DAT_INVALID_ADDRESS)
    DAT_EXPECT_TYPE_NAME(DAT_INTERRUPTED_CALL)
    DAT_EXPECT_TYPE_NAME(DAT_CONN_QUAL_UNAVAILABLE)
    DAT_EXPECT_TYPE_NAME(DAT_RESERVED_LMR)
    DAT_EXPECT_TYPE_NAME(DAT_PORT_IN_USE)
    DAT_EXPECT_TYPE_NAME(DAT_COMM_NOT_SUPPORTED)
    DAT_EXPECT_TYPE_NAME(DAT_NOT_IMPLEMENTED)
#undef DAT_EXPECT_TYPE_NAME

    // Every subtype, first to last, has a name.
    for (DAT_UINT32 subtype = DAT_NO_SUBTYPE; subtype <= DAT_THREAD_SAFETY_NOT_FOUND; ++subtype) {
        EXPECT_EQ(dat_strerror(DAT_INVALID_PARAMETER | subtype, &major, &minor), DAT_SUCCESS)
            << subtype;
    }
    ASSERT_EQ(dat_strerror(DAT_RETURN{DAT_INVALID_STATE} | DAT_INVALID_STATE_SRQ_SHUTDOWN, &major,
                           &minor),
              DAT_SUCCESS);
    EXPECT_STREQ(minor, "DAT_INVALID_STATE_SRQ_SHUTDOWN");
}

// ---------------------------------------------------------------------------
// The dynamic registry
// ---------------------------------------------------------------------------

TEST(DatRegistry, DynamicRegistrationAndRemoval) {
    TempDir dir;
    std::string conf = dir.write("empty.conf", "# no static entries\n");
    EXPECT_TRUE(run_isolated(conf, [] {
        // An application that links a provider registers it itself, the way
        // the registry would: through the provider's dat_provider_init.
        void *library = dlopen(DAT_TEST_PROVIDER_PATH, RTLD_NOW | RTLD_GLOBAL);
        ASSERT_NE(library, nullptr);
        auto init = reinterpret_cast<DAT_PROVIDER_INIT_FUNC>(dlsym(library, "dat_provider_init"));
        auto fini = reinterpret_cast<DAT_PROVIDER_FINI_FUNC>(dlsym(library, "dat_provider_fini"));
        ASSERT_NE(init, nullptr);
        ASSERT_NE(fini, nullptr);
        DAT_PROVIDER_INFO info{};
        std::strcpy(info.ia_name, "dyn0");
        info.dapl_version_major = 2;
        info.dapl_version_minor = 0;
        info.is_thread_safe = DAT_FALSE;
        init(&info, "linked-in");

        DAT_COUNT count = -1;
        EXPECT_EQ(type_of(dat_registry_list_providers(0, &count, nullptr)), DAT_INVALID_PARAMETER);
        EXPECT_EQ(count, 0);  // the list is the static registry only

        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        ASSERT_EQ(open_ia("dyn0", 4, &evd, &ia), DAT_SUCCESS);

        // Registering the same key twice fails; removing it while open too.
        DAT_PROVIDER another{};
        another.ia_open_func = [](const DAT_NAME_PTR, DAT_COUNT, DAT_EVD_HANDLE *,
                                  DAT_IA_HANDLE *) -> DAT_RETURN { return DAT_SUCCESS; };
        EXPECT_EQ(type_of(dat_registry_add_provider(&another, &info)),
                  DAT_PROVIDER_ALREADY_REGISTERED);
        DAT_PROVIDER_INFO other_version = info;
        other_version.is_thread_safe = DAT_TRUE;
        EXPECT_EQ(dat_registry_add_provider(&another, &other_version), DAT_SUCCESS);
        EXPECT_EQ(dat_registry_remove_provider(&another, &other_version), DAT_SUCCESS);

        fini(&info);  // tries to remove while open
        EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        EXPECT_EQ(provider_state().fini_calls, 1);
        // Still registered, because removal was refused while in use.
        ASSERT_EQ(open_ia("dyn0", 4, &evd, &ia), DAT_SUCCESS);
        EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        fini(&info);
        EXPECT_EQ(type_of(open_ia("dyn0", 4, &evd, &ia)), DAT_PROVIDER_NOT_FOUND);
        dlclose(library);
    }));
}

TEST(DatRegistry, UnregisteredTableIsRemovedBeforeUnload) {
    TempDir dir;
    std::string conf = dir.write("dat.conf", conf_line("keep0", "dev keep_registration"));
    EXPECT_TRUE(run_isolated(conf, [] {
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        ASSERT_EQ(open_ia("keep0", 4, &evd, &ia), DAT_SUCCESS);
        ASSERT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        // The provider's fini left its table registered; the registry removed
        // it, so the next open loads and initialises the provider again.
        ASSERT_EQ(open_ia("keep0", 4, &evd, &ia), DAT_SUCCESS);
        EXPECT_EQ(provider_state().init_calls, 2);
        EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }));
}

TEST(DatRegistry, ConcurrentOpenAndClose) {
    TempDir dir;
    std::string conf = dir.write("dat.conf", conf_line("conc0"));
    EXPECT_TRUE(run_isolated(conf, [] {
        constexpr int kThreads = 4;
        constexpr int kRounds = 50;
        std::atomic<int> failures{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&] {
                for (int i = 0; i < kRounds; ++i) {
                    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
                    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
                    if (open_ia("conc0", 4, &evd, &ia) != DAT_SUCCESS ||
                        dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG) != DAT_SUCCESS) {
                        ++failures;
                    }
                }
            });
        }
        for (auto &thread : threads)
            thread.join();
        EXPECT_EQ(failures.load(), 0);
        auto &state = provider_state();
        EXPECT_EQ(state.open_calls, kThreads * kRounds);
        EXPECT_EQ(state.close_calls, kThreads * kRounds);
        EXPECT_EQ(state.init_calls, state.fini_calls);
    }));
}

// ---------------------------------------------------------------------------
// Extensions and high availability
// ---------------------------------------------------------------------------

TEST(DatRegistry, ExtensionOpsReachOnlyProvidersThatReportExtensions) {
    TempDir dir;
    std::string conf = dir.write("dat.conf", conf_line("plain0") + conf_line("ext0", "dev ext_ib"));
    EXPECT_TRUE(run_isolated(conf, [] {
        auto &state = provider_state();
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE plain = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ext = DAT_HANDLE_NULL;
        ASSERT_EQ(open_ia("plain0", 4, &evd, &plain), DAT_SUCCESS);
        evd = DAT_HANDLE_NULL;
        ASSERT_EQ(open_ia("ext0", 4, &evd, &ext), DAT_SUCCESS);

        EXPECT_EQ(type_of(dat_extension_op(plain, 0, 42)), DAT_NOT_IMPLEMENTED);
        EXPECT_EQ(dat_extension_op(ext, 0, 42), DAT_SUCCESS);
        EXPECT_EQ(std::string(state.last_slot), "handle_extendedop_func");
        EXPECT_EQ(state.last_handle, provider_handle(ext));
        EXPECT_EQ(state.last_extension_arg, 42);

        EXPECT_EQ(type_of(dat_extension_op(DAT_HANDLE_NULL, 0)), DAT_INVALID_HANDLE);
        EXPECT_EQ(type_of(dat_extension_op(DAT_HANDLE_NULL, DAT_OPEN_EXTENSION_BASE)),
                  DAT_NOT_IMPLEMENTED);
        EXPECT_EQ(dat_ia_close(plain, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        EXPECT_EQ(dat_ia_close(ext, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }));
}

TEST(DatRegistry, ProvidersRelatedAsksBothProviders) {
    TempDir dir;
    std::string conf =
        dir.write("dat.conf", conf_line("relA") + conf_line("relB") + conf_line("xyz0"));
    EXPECT_TRUE(run_isolated(conf, [] {
        DAT_HA_RELATIONSHIP relation = DAT_HA_TRUE;
        ASSERT_EQ(providers_related("relA", "relB", &relation), DAT_SUCCESS);
        EXPECT_EQ(relation, DAT_HA_UNKNOWN);  // nothing open to ask

        DAT_EVD_HANDLE evd[3] = {};
        DAT_IA_HANDLE ia[3] = {};
        ASSERT_EQ(open_ia("relA", 4, &evd[0], &ia[0]), DAT_SUCCESS);
        ASSERT_EQ(open_ia("relB", 4, &evd[1], &ia[1]), DAT_SUCCESS);
        ASSERT_EQ(open_ia("xyz0", 4, &evd[2], &ia[2]), DAT_SUCCESS);
        ASSERT_EQ(providers_related("relA", "relB", &relation), DAT_SUCCESS);
        EXPECT_EQ(relation, DAT_HA_TRUE);
        ASSERT_EQ(providers_related("relA", "xyz0", &relation), DAT_SUCCESS);
        EXPECT_EQ(relation, DAT_HA_FALSE);
        for (DAT_IA_HANDLE h : ia)
            EXPECT_EQ(dat_ia_close(h, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }));
}
