// tests/privacy/test_privacy_budget.cpp: a run's budget: σ derived from (ε, δ) for the planned
// updates spends at most ε at the last of them; a given σ that cannot last the run covers exactly the
// updates whose ε stays within the budget; distributed mode's figure against the host uses σ/√h.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/error.h"
#include "privacy/privacy_budget.h"
#include "privacy/rdp_accountant.h"

using namespace arch::privacy;

TEST_CASE("a derived noise multiplier lasts the planned updates and spends the budget at the last one") {
    DpSettings s;
    s.mode = "central";
    s.clip = 1;
    s.epsilon = 8;
    const PrivacyBudget b(s, 40);
    CHECK(b.derived());
    CHECK(b.affordable() == 40);
    CHECK(b.spent(0) == 0);
    CHECK(b.spent(40) <= 8);
    CHECK(b.spent(40) > 8 * 0.999);
    CHECK(b.spent(41) > 8);
    for (uint64_t n = 1; n < 40; ++n) CHECK(b.spent(n) < b.spent(n + 1));
    CHECK(b.spent_against_host(40) == b.spent(40));  // central: the host's view is the updates'
}

TEST_CASE("a given noise multiplier that cannot last the run covers the updates within the budget") {
    DpSettings s;
    s.mode = "distributed";
    s.clip = 1;
    s.epsilon = 4;
    s.noise_multiplier = 2;
    s.honest = 4;
    const PrivacyBudget b(s, 1000);
    CHECK_FALSE(b.derived());
    CHECK(b.noise_multiplier() == 2);
    REQUIRE(b.affordable() > 0);
    REQUIRE(b.affordable() < 1000);
    CHECK(epsilon_spent(1, 2, b.affordable(), 1e-5).epsilon <= 4);
    CHECK(epsilon_spent(1, 2, b.affordable() + 1, 1e-5).epsilon > 4);
    // The host sees each island's Δ with one share, σ/√h = 1.
    CHECK(b.spent_against_host(10) == epsilon_spent(1, 1, 10, 1e-5).epsilon);
    CHECK(b.spent_against_host(10) > b.spent(10));
    s.epsilon = 0.5;  // not even one update
    CHECK_THROWS_AS(PrivacyBudget(s, 10), arch::Error);
}
