// tests/peers/test_rate_limit.cpp: the host's message budgets (peers/rate_limit.h) on a ManualClock
// (core/clock.h): a burst, then the rate, refilled only by time that passed, never above the burst.
#include <catch2/catch.hpp>

#include "core/clock.h"
#include "peers/rate_limit.h"

using namespace arch;

TEST_CASE("a token bucket gives its burst at once, then its rate as the clock moves") {
    ManualClock clock;
    TokenBucket bucket(2.0, 3);  // 2 a second, 3 at once
    for (int i = 0; i < 3; ++i) CHECK(bucket.take(clock.now()));
    CHECK_FALSE(bucket.take(clock.now()));  // no time passed: nothing refilled
    clock.advance(0.25);
    CHECK_FALSE(bucket.take(clock.now()));  // half a token
    clock.advance(0.25);
    CHECK(bucket.take(clock.now()));        // one
    CHECK_FALSE(bucket.take(clock.now()));
    clock.advance(3600);                    // an hour idle refills the burst, not 7200
    int taken = 0;
    while (bucket.take(clock.now()) && taken < 100) ++taken;
    CHECK(taken == 3);
}

TEST_CASE("a manual clock moves only when advanced, and the real one moves by itself") {
    ManualClock clock;
    const Clock::time_point t = clock.now();
    CHECK(clock.now() == t);
    clock.advance(1.5);
    CHECK(clock.seconds_since(t) == Approx(1.5));
    CHECK(clock.after(2.0) - t == std::chrono::milliseconds(3500));
    const Clock::time_point r = Clock::real().now();
    while (Clock::real().now() == r) {}  // steady_clock ticks in nanoseconds
    CHECK(Clock::real().seconds_since(r) > 0);
}
