// peers/cli/cmd_privacy.cpp: `archipelago privacy`: the (ε, δ) a planned run of island-level DP spends,
// or the noise multiplier that spends a budget, without running anything (privacy/rdp_accountant.h).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "peers/cli/commands.h"
#include "privacy/rdp_accountant.h"

namespace arch::cli {

namespace {

struct PrivacyFlags {
    uint64_t rounds = 0;
    double sampling_rate = 1.0, noise_multiplier = 0, epsilon = 0, delta = 1e-5;
    bool json = false;
};

void run_privacy(const PrivacyFlags& f, bool budget) {
    const double sigma = budget ? privacy::noise_for_epsilon(f.sampling_rate, f.rounds, f.epsilon, f.delta) : f.noise_multiplier;
    const privacy::Spent spent = privacy::epsilon_spent(f.sampling_rate, sigma, f.rounds, f.delta);
    if (f.json) {
        std::printf("%s\n", nlohmann::json{{"epsilon", spent.epsilon},
                                           {"delta", f.delta},
                                           {"order", spent.order},
                                           {"rounds", f.rounds},
                                           {"sampling_rate", f.sampling_rate},
                                           {"noise_multiplier", sigma}}
                                .dump()
                                .c_str());
        return;
    }
    if (budget) std::printf("noise multiplier %.4f spends epsilon %.4f\n", sigma, spent.epsilon);
    std::printf("epsilon %.4f at delta %g after %llu rounds, sampling rate %g, noise multiplier %.4f (RDP order %g)\n",
                spent.epsilon, f.delta, static_cast<unsigned long long>(f.rounds), f.sampling_rate, sigma, spent.order);
}

}  // namespace

void add_privacy(CLI::App& app, int& exit_code) {
    auto f = std::make_shared<PrivacyFlags>();
    CLI::App* cmd = app.add_subcommand(
        "privacy", "the epsilon a planned run with island-level differential privacy spends, or the noise for a budget");
    cmd->add_option("--rounds", f->rounds, "rounds of the run")->required()->check(CLI::Range(uint64_t{1}, uint64_t{100000000}));
    cmd->add_option("--sampling-rate", f->sampling_rate, "the share of islands whose pseudo-gradient a round uses")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    auto* noise = cmd->add_option("--noise-multiplier", f->noise_multiplier, "sigma: the noise's standard deviation over the clip")
                      ->check(CLI::Range(0.0, 1e6));
    auto* eps = cmd->add_option("--epsilon", f->epsilon, "a budget: print the noise multiplier that spends it")
                    ->check(CLI::Range(1e-6, 1e6));
    noise->excludes(eps);
    cmd->add_option("--delta", f->delta, "delta of (epsilon, delta)")->check(CLI::Range(1e-30, 0.999999))->capture_default_str();
    cmd->add_flag("--json", f->json, "one JSON object");
    cmd->callback([f, &exit_code, noise, eps] {
        if (!*noise && !*eps) throw Error("privacy: give --noise-multiplier (to print epsilon) or --epsilon (to print the noise)");
        run_privacy(*f, static_cast<bool>(*eps));
        exit_code = 0;
    });
}

}  // namespace arch::cli
