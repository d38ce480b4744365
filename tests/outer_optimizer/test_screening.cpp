// tests/outer_optimizer/test_screening.cpp: NormScreen against hand-computed norms: a Δ far above the
// round's median norm is clipped to factor × median (or rejected), honest ones are untouched, rounds
// too small for a median use the history (also as restored from a checkpoint), and off screens nothing;
// l2_norm's sum of squares is the same bits however its values come in slices, and near a sum in long
// double; the per-value bound's clamp, count and largest magnitude match a value-by-value reading.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/error.h"
#include "outer_optimizer/screening.h"

using namespace arch::outer;
using Outcome = ScreenVerdict::Outcome;

namespace {

std::vector<float> filled(std::size_t n, float v) { return std::vector<float>(n, v); }

std::vector<ScreenVerdict> run(NormScreen& s, std::vector<std::vector<float>>& deltas) {
    std::vector<std::span<float>> spans;
    for (auto& d : deltas) spans.emplace_back(d);
    return s.screen(spans);
}

}  // namespace

TEST_CASE("a pseudo-gradient far above the round's median norm is clipped to factor x median") {
    NormScreen s(ScreenPolicy{ScreenPolicy::Action::clip, 10.0});
    // Norms: 1·2, 1.5·2, 2·2 (n = 4 values each, so norm = 2|v|), and 1000·2.
    std::vector<std::vector<float>> d = {filled(4, 1.0f), filled(4, 1.5f), filled(4, 2.0f), filled(4, 1000.0f)};
    const auto v = run(s, d);
    REQUIRE(v.size() == 4);
    CHECK(v[0].outcome == Outcome::kept);
    CHECK(v[1].outcome == Outcome::kept);
    CHECK(v[2].outcome == Outcome::kept);
    CHECK(v[3].outcome == Outcome::clipped);
    CHECK(v[3].norm == Approx(2000.0));
    const double median = 0.5 * (3.0 + 4.0);  // of 2, 3, 4, 2000
    CHECK(v[3].limit == Approx(10.0 * median));
    CHECK(l2_norm(d[3]) == Approx(10.0 * median).epsilon(1e-6));
    CHECK(d[3][0] == Approx(d[3][1]));  // the direction is kept
    CHECK(d[0] == filled(4, 1.0f));     // honest ones untouched
}

TEST_CASE("finite values near FLT_MAX do not overflow the norm, and are clipped or rejected") {
    NormScreen clip(ScreenPolicy{ScreenPolicy::Action::clip, 10.0});
    std::vector<std::vector<float>> d = {filled(1000, 0.01f), filled(1000, 0.02f), filled(1000, 0.015f), filled(1000, 1e30f)};
    auto v = run(clip, d);
    CHECK(std::isfinite(v[3].norm));
    CHECK(v[3].outcome == Outcome::clipped);
    for (float x : d[3]) REQUIRE(std::isfinite(x));
    CHECK(l2_norm(d[3]) == Approx(v[3].limit).epsilon(1e-6));  // 10 x the median of the four norms
    CHECK(v[3].limit == Approx(10.0 * 0.5 * (l2_norm(d[2]) + l2_norm(d[1]))));

    NormScreen reject(ScreenPolicy{ScreenPolicy::Action::reject, 10.0});
    d = {filled(8, 1.0f), filled(8, 1.1f), filled(8, 0.9f), filled(8, 3e38f)};
    v = run(reject, d);
    CHECK(v[3].outcome == Outcome::rejected);
    CHECK(d[3][0] == 3e38f);  // left as it was: the caller drops it
    CHECK(v[0].outcome == Outcome::kept);
}

TEST_CASE("rounds with fewer than three pseudo-gradients are screened against the history") {
    NormScreen s(ScreenPolicy{ScreenPolicy::Action::clip, 5.0});
    std::vector<std::vector<float>> one = {filled(4, 100.0f)};
    CHECK(run(s, one)[0].outcome == Outcome::kept);  // nothing to compare with yet
    for (float v : {1.0f, 1.2f, 0.8f}) {
        std::vector<std::vector<float>> d = {filled(4, v)};
        run(s, d);
    }
    // History norms: 200, 2, 2.4, 1.6: median 2.2, limit 11.
    std::vector<std::vector<float>> big = {filled(4, 50.0f)};
    const auto v = run(s, big);
    CHECK(v[0].outcome == Outcome::clipped);
    CHECK(v[0].limit == Approx(5.0 * 2.2));
}

TEST_CASE("the history taken out and restored screens as the original does; what is not a norm is left out") {
    NormScreen s(ScreenPolicy{ScreenPolicy::Action::clip, 5.0}, 4);
    for (float v : {1.0f, 1.2f, 0.8f, 1.1f, 0.9f}) {  // five rounds of one Δ: the last four are kept
        std::vector<std::vector<float>> d = {filled(4, v)};
        run(s, d);
    }
    const std::vector<double> kept = s.history();
    REQUIRE(kept.size() == 4);
    CHECK(kept[0] == Approx(2.4));  // the norms of 1.2, 0.8, 1.1 and 0.9 four times
    CHECK(kept[3] == Approx(1.8));
    NormScreen restored(ScreenPolicy{ScreenPolicy::Action::clip, 5.0}, 4);
    std::vector<double> saved = s.history();
    saved.insert(saved.begin(), {std::nan(""), -1.0, 0.0});  // a corrupt or hostile file's
    restored.restore(saved);
    CHECK(restored.history() == s.history());
    const std::vector<double> big = {100.0};
    CHECK(restored.judge(big)[0].outcome == Outcome::clipped);
    CHECK(restored.judge(big)[0].limit == Approx(s.judge(big)[0].limit));  // 5 x the median, 2.0
    CHECK(restored.judge(big)[0].limit == Approx(10.0));
}

TEST_CASE("screening off keeps everything; bad settings are refused") {
    NormScreen s(ScreenPolicy{ScreenPolicy::Action::off, 10.0});
    std::vector<std::vector<float>> d = {filled(4, 1.0f), filled(4, 1.0f), filled(4, 1.0f), filled(4, 1e6f)};
    const auto v = run(s, d);
    CHECK(v[3].outcome == Outcome::kept);
    CHECK(d[3][0] == 1e6f);
    CHECK_THROWS_AS(NormScreen(ScreenPolicy{ScreenPolicy::Action::clip, 1.0}), arch::Error);
    CHECK_THROWS_AS(parse_screen_action("maybe"), arch::Error);
    CHECK(parse_screen_action("reject") == ScreenPolicy::Action::reject);
}

TEST_CASE("a ceiling bounds every Δ, and stands alone when there is no median yet") {
    NormScreen s(ScreenPolicy{ScreenPolicy::Action::clip, 10.0});
    // Two Δs, no history: no median. Without a ceiling a finite 1e30 Δ passes; with one it is clipped to it.
    std::vector<std::vector<float>> d = {filled(4, 0.01f), filled(4, 1e30f)};
    auto v = run(s, d);
    CHECK(v[1].outcome == Outcome::kept);
    d = {filled(4, 0.01f), filled(4, 1e30f)};
    std::vector<std::span<float>> spans = {d[0], d[1]};
    v = s.screen(spans, 5.0);
    CHECK(v[0].outcome == Outcome::kept);
    REQUIRE(v[1].outcome == Outcome::clipped);
    CHECK(v[1].limit == 5.0);
    CHECK(l2_norm(d[1]) == Approx(5.0).epsilon(1e-6));
    // With a median, the lower of factor x median and the ceiling.
    NormScreen m(ScreenPolicy{ScreenPolicy::Action::clip, 10.0});
    const std::vector<double> norms = {1.0, 2.0, 3.0, 100.0};
    CHECK(m.judge(norms, 5.0)[3].limit == 5.0);    // 10 x 2.5 = 25 is higher
    CHECK(m.judge(norms, 500.0)[3].limit == 25.0);  // the median's is lower
    CHECK(m.judge(norms, 0.0)[3].limit == 25.0);    // no ceiling
    // Off is off.
    NormScreen off(ScreenPolicy{ScreenPolicy::Action::off, 10.0});
    CHECK(off.judge(norms, 5.0)[3].outcome == Outcome::kept);
}

TEST_CASE("the sum of squares is the same bits however the values are sliced, scaled or summed run by run, and near a long double sum") {
    std::mt19937 rng(9);
    std::normal_distribution<float> normal(0.0f, 1e-3f);
    std::vector<float> x(2 * SquareSum::kRun + 1003);  // two whole runs and a short last one
    for (float& v : x) v = normal(rng);
    x[17] = 3e30f;  // squares past fp32's range: the sum is in double
    long double reference = 0;
    for (const float v : x) reference += static_cast<long double>(v) * v;
    const double whole = l2_norm(x);
    CHECK(whole == Approx(std::sqrt(static_cast<double>(reference))).epsilon(1e-13));
    const float scale = 0.37f;
    std::vector<float> scaled = x;
    for (float& v : scaled) v *= scale;
    for (const std::size_t cut : {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{1000}, std::size_t{65537}, x.size()}) {
        INFO("slices of " << cut);
        SquareSum plain, times;
        for (std::size_t at = 0; at < x.size(); at += cut) {
            const std::span<const float> slice = std::span<const float>(x).subspan(at, std::min(cut, x.size() - at));
            plain.add(slice);
            times.add(slice, scale);
        }
        CHECK(std::sqrt(plain.total()) == whole);
        CHECK(std::sqrt(times.total()) == l2_norm(scaled));  // what the host remembers for a clipped Δ
    }
    // Each run summed on its own (as on several threads), then merged in order.
    SquareSum runs;
    for (std::size_t at = 0; at < x.size(); at += SquareSum::kRun) {
        const std::size_t len = std::min<std::size_t>(SquareSum::kRun, x.size() - at);
        runs.merge(SquareSum::of_run(std::span<const float>(x).subspan(at, len)), len);
    }
    CHECK(std::sqrt(runs.total()) == whole);
    SquareSum misplaced;
    misplaced.add(std::span<const float>(x).first(5));
    const SquareSum::Lanes first_run = SquareSum::of_run(std::span<const float>(x).first(SquareSum::kRun));
    CHECK_THROWS_AS(misplaced.merge(first_run, SquareSum::kRun), arch::Error);  // not at a run's start
    CHECK_THROWS_AS(SquareSum::of_run(x), arch::Error);                        // more than a run
}

TEST_CASE("the per-value bound clamps and counts as a value-by-value reading does, NaN left alone") {
    std::mt19937 rng(4);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(100'003);
    for (float& v : x) v = normal(rng);
    x[5] = std::nanf("");
    x[6] = -std::numeric_limits<float>::infinity();
    const float limit = 2.0f;
    std::vector<float> expected = x;
    uint64_t beyond = 0;
    float most = 0.0f;
    for (float& v : expected) {
        if (std::fabs(v) > limit) {
            v = std::copysign(limit, v);
            ++beyond;
        }
    }
    for (const float v : x)
        if (std::fabs(v) > most) most = std::fabs(v);
    CHECK(count_beyond(x, limit) == beyond);
    CHECK(largest_magnitude(x) == most);  // the Inf; the NaN is left out
    std::vector<float> clamped = x;
    CHECK(clamp_values(clamped, limit) == beyond);
    CHECK(std::memcmp(clamped.data(), expected.data(), x.size() * sizeof(float)) == 0);  // the NaN's bits too
    CHECK(clamp_values(clamped, 0.0f) == 0);  // no bound: nothing touched
}
