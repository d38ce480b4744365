// privacy/privacy_budget.cpp: the noise multiplier a run uses and the ε its updates spend.
#include "privacy/privacy_budget.h"

#include <cmath>

#include "core/error.h"
#include "privacy/rdp_accountant.h"

namespace arch::privacy {

PrivacyBudget::PrivacyBudget(const DpSettings& settings, uint64_t planned) : s_(settings) {
    if (!s_.on()) throw Error("privacy: a budget for a run without privacy");
    derived_ = s_.noise_multiplier == 0;
    sigma_ = derived_ ? noise_for_epsilon(1.0, planned, s_.epsilon, s_.delta) : s_.noise_multiplier;
    // The most updates within the budget: ε grows with the updates, so a bisection finds the last.
    uint64_t lo = 0, hi = planned;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo + 1) / 2;
        if (spent(mid) <= s_.epsilon) lo = mid;
        else hi = mid - 1;
    }
    affordable_ = lo;
    if (affordable_ == 0)
        throw Error("privacy: one update at noise multiplier " + std::to_string(sigma_) + " spends epsilon " +
                    std::to_string(spent(1)) + ", above the budget of " + std::to_string(s_.epsilon) +
                    " (raise privacy.noise_multiplier or privacy.epsilon)");
}

double PrivacyBudget::spent(uint64_t updates) const {
    return updates == 0 ? 0.0 : epsilon_spent(1.0, sigma_, updates, s_.delta).epsilon;
}

double PrivacyBudget::spent_against_host(uint64_t updates) const {
    if (!s_.distributed() || updates == 0) return spent(updates);
    return epsilon_spent(1.0, sigma_ / std::sqrt(static_cast<double>(s_.honest)), updates, s_.delta).epsilon;
}

}  // namespace arch::privacy
