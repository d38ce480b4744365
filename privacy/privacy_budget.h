// privacy/privacy_budget.h: a run's island-level DP settings (run.toml's [privacy]) and what they
// allow: the noise multiplier, derived from the (ε, δ) budget for the planned updates when run.toml
// does not give one, the ε spent after a number of updates, and how many updates the budget covers.
// Every update counts as one Gaussian mechanism on every island's data (sampling rate 1: which islands
// a round uses is not a secret random sample, so no amplification is claimed; docs/privacy.md).
#pragma once

#include <cstdint>
#include <string>

namespace arch::privacy {

struct DpSettings {
    std::string mode = "off";     // off | central | distributed
    double clip = 0;              // C: the L2 bound of a pseudo-gradient
    double epsilon = 0;           // the budget
    double delta = 1e-5;
    double noise_multiplier = 0;  // σ; 0 in run.toml: derived from the budget for the planned updates
    int honest = 0;               // distributed: islands assumed to add their share (h)
    bool on() const { return mode != "off"; }
    bool distributed() const { return mode == "distributed"; }
};

class PrivacyBudget {
public:
    // settings.on(); planned: the run's updates. Derives σ when settings.noise_multiplier is 0; throws
    // arch::Error when the budget does not cover even one update.
    PrivacyBudget(const DpSettings& settings, uint64_t planned);

    const DpSettings& settings() const { return s_; }
    double noise_multiplier() const { return sigma_; }
    bool derived() const { return derived_; }  // σ came from the budget
    double spent(uint64_t updates) const;      // ε after that many updates
    uint64_t affordable() const { return affordable_; }  // updates within the budget, at most `planned`
    // Distributed mode: the host sees each island's Δ with that island's share only, σ/√h.
    double spent_against_host(uint64_t updates) const;

private:
    DpSettings s_;
    double sigma_ = 0;
    bool derived_ = false;
    uint64_t affordable_ = 0;
};

}  // namespace arch::privacy
