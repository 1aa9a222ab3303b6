// What the engine logs about completions in error (issue 27: every error that becomes a
// completion status is logged at info with its reason). A flush is the consequence of an
// error logged already (the QP's async event), so flushed completions stay at debug.
#include "../base/log_capture.hpp"
#include "../rnicpi/fixture.hpp"

using namespace rt;

namespace {

TEST(CompletionLog, AnErrorCompletionIsLoggedAtInfoWithItsStatusAndWr) {
    Rnic ra("log-a"), rb("log-b");
    ASSERT_TRUE(ra.ok() && rb.ok());
    Pair p(ra, rb);
    ASSERT_TRUE(p.ok());
    p.up();
    logtest::Capture cap("info", "engine");
    // An RDMA Write to an STag the target never made: the initiator's completion fails
    // (remote termination); a send posted after it is flushed.
    ri_data_seg_t s = sge(p.scratch_a->data(), 8, p.sa->ltag);
    ASSERT_EQ(post_write(p.a, kSig, 0x5151, &s, 1, 0x1000, 0x00dead00), RI_RET_SUCCESS);
    ri_rc_wc_t wc = must_poll(ra, p.a->scq);
    ASSERT_NE(wc.op_status, RI_WC_STATUS_SUCCESS);
    ASSERT_TRUE(wait_state(p.a, RI_QP_STATE_ERROR));
    ASSERT_EQ(post_send(p.a, RI_WR_TYPE_SEND, kSig, 0x5252, &s, 1), RI_RET_SUCCESS);
    wc = must_poll(ra, p.a->scq);
    ASSERT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    const std::string text = cap.text();
    EXPECT_NE(text.find(" INFO engine: "), std::string::npos) << text;
    EXPECT_NE(text.find("work request 0x5151"), std::string::npos) << text;
    EXPECT_EQ(text.find("work request 0x5252"), std::string::npos)
        << "a flushed completion was logged at info:\n"
        << text;
}

TEST(CompletionLog, AFlushedCompletionIsLoggedAtDebug) {
    Rnic ra("log-c"), rb("log-d");
    ASSERT_TRUE(ra.ok() && rb.ok());
    Pair p(ra, rb);
    ASSERT_TRUE(p.ok());
    p.up();
    logtest::Capture cap("debug", "engine");
    ASSERT_EQ(modify_state(p.a, RI_QP_STATE_ERROR), RI_RET_SUCCESS);
    ri_data_seg_t s = sge(p.scratch_a->data(), 8, p.sa->ltag);
    ASSERT_EQ(post_send(p.a, RI_WR_TYPE_SEND, kSig, 0x5353, &s, 1), RI_RET_SUCCESS);
    ASSERT_EQ(must_poll(ra, p.a->scq).op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    const std::string text = cap.text();
    EXPECT_NE(text.find(" DEBUG engine: "), std::string::npos) << text;
    EXPECT_NE(text.find("work request 0x5353"), std::string::npos) << text;
}

}  // namespace
