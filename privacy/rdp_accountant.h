// privacy/rdp_accountant.h: what island-level differential privacy has spent. Rényi DP of the
// Poisson-subsampled Gaussian mechanism (each island's clipped Δ is used with probability q a round,
// Gaussian noise of σ times the clip is added to the sum), composed over rounds and converted to
// (ε, δ), computed as Google's dp-accounting computes them (RdpAccountant, PoissonSampledDpEvent of a
// GaussianDpEvent): A_α by Mironov, Talwar and Zhang 2019 (the binomial sum for integer orders, the
// series of its Sec. 3.3 for fractional ones), and the conversion of Canonne, Kamath and Steinke 2020
// (Prop. 12), minimised over dp-accounting's default orders. Pure arithmetic: no model, no file.
#pragma once

#include <cstdint>
#include <vector>

namespace arch::privacy {

// 1.1, 1.2, ..., 10.9, 11, 12, ..., 63, 128, 256, 512, 1024 (dp-accounting's DEFAULT_RDP_ORDERS).
const std::vector<double>& rdp_orders();

// The RDP of one round at `order`: q the sampling rate in [0, 1], sigma the noise multiplier (>= 0).
// Infinite for sigma 0 (and q > 0).
double rdp_per_round(double q, double sigma, double order);

struct Spent {
    double epsilon = 0;  // the smallest over the orders (0 when nothing was spent)
    double order = 0;    // the order that gave it
};

// (ε, δ) after `rounds` rounds; throws arch::Error for q outside [0, 1], sigma < 0 or delta outside (0, 1).
Spent epsilon_spent(double q, double sigma, uint64_t rounds, double delta);

// The smallest noise multiplier (to 0.01% relative) for which `rounds` rounds spend at most epsilon;
// throws arch::Error when even a noise multiplier of 1e6 does not reach it.
double noise_for_epsilon(double q, uint64_t rounds, double epsilon, double delta);

}  // namespace arch::privacy
