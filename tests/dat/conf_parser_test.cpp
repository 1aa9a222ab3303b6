// conf_parser_test.cpp - the dat.conf parser on its own (src/api/dat/registry/dat_conf.cpp).
#include <gtest/gtest.h>

#include <string>

#include "dat_conf.hpp"

using softrnic::dat::ConfEntry;
using softrnic::dat::parse_dat_conf;

namespace {

const std::string kDebianLine =
    "ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"";

}  // namespace

TEST(DatConf, ParsesTheDeployedLineFormat) {
    auto result = parse_dat_conf(kDebianLine + "\n");
    ASSERT_EQ(result.entries.size(), 1u);
    EXPECT_TRUE(result.rejected_lines.empty());
    const ConfEntry &e = result.entries[0];
    EXPECT_EQ(e.ia_name, "ofa-v2-ib0");
    EXPECT_EQ(e.api_kind, 'u');
    EXPECT_EQ(e.api_major, 2u);
    EXPECT_EQ(e.api_minor, 0u);
    EXPECT_FALSE(e.thread_safe);
    EXPECT_TRUE(e.is_default);
    EXPECT_EQ(e.library_path, "libdaplofa.so.2");
    EXPECT_EQ(e.provider_id, "dapl");
    EXPECT_EQ(e.provider_major, 2u);
    EXPECT_EQ(e.provider_minor, 0u);
    EXPECT_EQ(e.ia_params, "ib0 0");
    EXPECT_EQ(e.platform_params, "");
    EXPECT_EQ(e.line, 1);
}

TEST(DatConf, QuotingEscapesAndComments) {
    auto result = parse_dat_conf(
        "# header\n"
        "\n"
        "  a k1.12 threadsafe nondefault /x/lib.so my.prov.3.4 \"say \\\"hi\\\" \\\\ #no\" "
        "plain # trailing\n"
        "b\tu2.0\tnonthreadsafe\tdefault\tl.so\tp.1.0\t\"\"\t\"\"\r\n"
        "c u2.0 nonthreadsafe default l.so p.1.0 unquoted \"\"");
    ASSERT_EQ(result.entries.size(), 3u) << result.rejected_lines.size();
    const ConfEntry &a = result.entries[0];
    EXPECT_EQ(a.api_kind, 'k');
    EXPECT_EQ(a.api_minor, 12u);
    EXPECT_TRUE(a.thread_safe);
    EXPECT_FALSE(a.is_default);
    EXPECT_EQ(a.provider_id, "my.prov");
    EXPECT_EQ(a.provider_major, 3u);
    EXPECT_EQ(a.provider_minor, 4u);
    EXPECT_EQ(a.ia_params, "say \"hi\" \\ #no");
    EXPECT_EQ(a.platform_params, "plain");
    EXPECT_EQ(a.line, 3);
    EXPECT_EQ(result.entries[1].ia_name, "b");
    EXPECT_EQ(result.entries[1].line, 4);
    EXPECT_EQ(result.entries[2].ia_params, "unquoted");
}

TEST(DatConf, MalformedLinesAreSkippedAndReported) {
    const char *bad_lines[] = {
        "short u2.0 nonthreadsafe default",
        "api x2.0 nonthreadsafe default l.so p.1.0 \"\" \"\"",
        "api u2 nonthreadsafe default l.so p.1.0 \"\" \"\"",
        "api u.0 nonthreadsafe default l.so p.1.0 \"\" \"\"",
        "api u2.0x nonthreadsafe default l.so p.1.0 \"\" \"\"",
        "api u9999999999.0 nonthreadsafe default l.so p.1.0 \"\" \"\"",
        "ts u2.0 safe default l.so p.1.0 \"\" \"\"",
        "def u2.0 nonthreadsafe sometimes l.so p.1.0 \"\" \"\"",
        "ver u2.0 nonthreadsafe default l.so dapl \"\" \"\"",
        "ver u2.0 nonthreadsafe default l.so dapl.2 \"\" \"\"",
        "ver u2.0 nonthreadsafe default l.so .2.0 \"\" \"\"",
        "ver u2.0 nonthreadsafe default l.so dapl.x.0 \"\" \"\"",
        "quote u2.0 nonthreadsafe default l.so p.1.0 \"unterminated \"\"",
        "quote u2.0 nonthreadsafe default l.so p.1.0 \"a\"b \"\"",
        "quote u2.0 nonthreadsafe default l.so p.1.0 a\"b \"\"",
        "extra u2.0 nonthreadsafe default l.so p.1.0 \"\" \"\" extra",
        "\"\" u2.0 nonthreadsafe default l.so p.1.0 \"\" \"\"",
        "empty u2.0 nonthreadsafe default \"\" p.1.0 \"\" \"\"",
    };
    std::string text;
    for (const char *line : bad_lines)
        text += std::string(line) + "\n";
    text += std::string(300, 'n') + " u2.0 nonthreadsafe default l.so p.1.0 \"\" \"\"\n";
    const char with_nul[] = "nul u2.0 nonthreadsafe default l\0.so p.1.0 \"\" \"\"\n";
    text += std::string(with_nul, sizeof with_nul - 1);
    text += std::string(softrnic::dat::kMaxConfLineLength + 1, 'z') + "\n";
    text += kDebianLine;  // the one good line, last, without a newline

    auto result = parse_dat_conf(text);
    ASSERT_EQ(result.entries.size(), 1u);
    EXPECT_EQ(result.entries[0].ia_name, "ofa-v2-ib0");
    std::size_t expected_rejected = sizeof bad_lines / sizeof bad_lines[0] + 3;
    EXPECT_EQ(result.rejected_lines.size(), expected_rejected);
    EXPECT_EQ(result.rejected_lines.front(), 1);
}

TEST(DatConf, EmptyAndCommentOnlyInput) {
    EXPECT_TRUE(parse_dat_conf("").entries.empty());
    auto result = parse_dat_conf("# nothing\n\n   \n#\n");
    EXPECT_TRUE(result.entries.empty());
    EXPECT_TRUE(result.rejected_lines.empty());
}
