// The host clock's state as the control thread reads it: adjtimex's answer, the test
// double's file (errors name the line), and what counts as a step.
#include <gtest/gtest.h>

#include <sys/timex.h>

#include "control/clock_monitor.hpp"

namespace linecap {
namespace {

TEST(ClockFromTimex, UnsyncFlagOrTimeErrorIsUnsynchronised) {
    const ClockSample ok = clock_sample_from_timex(TIME_OK, STA_PLL, 250, 16000);
    EXPECT_EQ(ok.sync, ClockSync::synced);
    EXPECT_EQ(ok.est_error_ns, 250'000u);
    EXPECT_EQ(ok.max_error_ns, 16'000'000u);
    EXPECT_EQ(clock_sample_from_timex(TIME_OK, STA_UNSYNC, 0, 16000000).sync, ClockSync::unsynchronised);
    EXPECT_EQ(clock_sample_from_timex(TIME_ERROR, 0, 0, 0).sync, ClockSync::unsynchronised);
    EXPECT_EQ(clock_sample_from_timex(-1, 0, 0, 0).sync, ClockSync::unknown);
}

TEST(ClockStatusFile, ReadsKeysAndNamesTheBadLine) {
    auto s = parse_clock_status("# the test double\nsync unsynchronised\nest_error_ns 16000000\nmax_error_ns 9\n");
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(s->sync, ClockSync::unsynchronised);
    EXPECT_EQ(s->est_error_ns, 16'000'000u);
    EXPECT_EQ(s->max_error_ns, 9u);

    EXPECT_EQ(parse_clock_status("sync maybe\n").error().message,
              "line 1: sync must be synced, unsynchronised or unknown, not 'maybe'");
    EXPECT_EQ(parse_clock_status("sync synced\nest_error_ns 1ms\n").error().message,
              "line 2: est_error_ns must be a number of ns");
    EXPECT_EQ(parse_clock_status("sync synced\noffset 3\n").error().message,
              "line 2: unknown key 'offset' (sync, est_error_ns, max_error_ns)");
    EXPECT_EQ(parse_clock_status("est_error_ns 3\n").error().message, "no 'sync' line");
}

TEST(ClockStep, MoreThanAMillisecondEitherWay) {
    EXPECT_FALSE(is_clock_step(5'000'000'000, 5'000'000'000 + kStepNs));
    EXPECT_TRUE(is_clock_step(5'000'000'000, 5'000'000'000 + kStepNs + 1));
    EXPECT_TRUE(is_clock_step(5'000'000'000, 4'000'000'000));
}

}  // namespace
}  // namespace linecap
