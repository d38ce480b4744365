// privacy/rdp_accountant.cpp: the Poisson-subsampled Gaussian's RDP in log space, as dp-accounting's
// rdp_privacy_accountant.py computes it (its function names are given beside ours), and the conversion.
#include "privacy/rdp_accountant.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"

namespace arch::privacy {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// log(exp(a) + exp(b)) (_log_add).
double log_add(double a, double b) {
    const double lo = std::min(a, b), hi = std::max(a, b);
    if (lo == -kInf) return hi;
    return std::log1p(std::exp(lo - hi)) + hi;
}

// log of the binomial coefficient, for real n (_log_comb: gammaln is log |Γ|, as std::lgamma is).
double log_comb(double n, double k) { return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1); }

// log(erfc(x)), accurate where erfc(x) underflows (_log_erfc).
double log_erfc(double x) {
    const double r = std::erfc(x);
    if (r > 0) return std::log(r);
    // The asymptotic series at infinity: erfc(x) ~ exp(-x^2 - .5/x^2 + .625/x^4 ...) / (x sqrt(pi)).
    return -std::log(M_PI) / 2 - std::log(x) - x * x - 0.5 / (x * x) + 0.625 / std::pow(x, 4) -
           37.0 / 24.0 / std::pow(x, 6) + 353.0 / 64.0 / std::pow(x, 8);
}

// log(A_alpha) for integer alpha, 0 < q < 1 (_compute_log_a_int).
double log_a_int(double q, double sigma, int alpha) {
    double log_a = -kInf;
    const double log1mq = std::log1p(-q);
    for (int i = 0; i <= alpha; ++i) {
        const double log_coef = log_comb(alpha, i) + i * std::log(q) + (alpha - i) * log1mq;
        log_a = log_add(log_a, log_coef + (static_cast<double>(i) * i - i) / (2 * sigma * sigma));
    }
    return log_a;
}

// log(A_alpha) for fractional alpha, 0 < q < 1: two series, summed until both terms fall and are
// 30 nats below the total (_compute_log_a_frac); infinite if they have not after 1000 terms.
double log_a_frac(double q, double sigma, double alpha) {
    double log_a0 = -kInf, log_a1 = -kInf, last_s0 = -kInf, last_s1 = -kInf;
    const double z0 = sigma * sigma * std::log(1 / q - 1) + 0.5;
    const double log1mq = std::log1p(-q);
    for (int i = 0; i < 1000; ++i) {
        const double log_coef = log_comb(alpha, i), j = alpha - i;
        const double log_t0 = log_coef + i * std::log(q) + j * log1mq;
        const double log_t1 = log_coef + j * std::log(q) + i * log1mq;
        const double log_e0 = std::log(0.5) + log_erfc((i - z0) / (std::sqrt(2.0) * sigma));
        const double log_e1 = std::log(0.5) + log_erfc((z0 - j) / (std::sqrt(2.0) * sigma));
        const double log_s0 = log_t0 + (static_cast<double>(i) * i - i) / (2 * sigma * sigma) + log_e0;
        const double log_s1 = log_t1 + (j * j - j) / (2 * sigma * sigma) + log_e1;
        log_a0 = log_add(log_a0, log_s0);
        log_a1 = log_add(log_a1, log_s1);
        const double total = log_add(log_a0, log_a1);
        if (log_s0 < last_s0 && log_s1 < last_s1 && std::max(log_s0, log_s1) < total - 30) return total;
        last_s0 = log_s0;
        last_s1 = log_s1;
    }
    return kInf;  // excluded from the minimum, as dp-accounting excludes it
}

void check(double q, double sigma, double delta) {
    if (!(q >= 0 && q <= 1)) throw Error("privacy: the sampling rate must be in [0, 1], got " + std::to_string(q));
    if (!(sigma >= 0)) throw Error("privacy: the noise multiplier must be at least 0, got " + std::to_string(sigma));
    if (!(delta > 0 && delta < 1)) throw Error("privacy: delta must be in (0, 1), got " + std::to_string(delta));
}

}  // namespace

const std::vector<double>& rdp_orders() {
    static const std::vector<double> orders = [] {
        std::vector<double> o;
        for (int x = 1; x < 100; ++x) o.push_back(1 + x / 10.0);
        for (int a = 11; a < 64; ++a) o.push_back(a);
        for (double a : {128.0, 256.0, 512.0, 1024.0}) o.push_back(a);
        return o;
    }();
    return orders;
}

double rdp_per_round(double q, double sigma, double order) {
    if (q == 0) return 0;
    if (std::isinf(order) || sigma == 0) return kInf;
    if (q == 1) return order / (2 * sigma * sigma);
    const double log_a = order == std::floor(order) ? log_a_int(q, sigma, static_cast<int>(order)) : log_a_frac(q, sigma, order);
    return log_a / (order - 1);
}

Spent epsilon_spent(double q, double sigma, uint64_t rounds, double delta) {
    check(q, sigma, delta);
    Spent best{kInf, 0};
    for (double a : rdp_orders()) {
        const double r = static_cast<double>(rounds) * rdp_per_round(q, sigma, a);
        double eps;
        if (r < 0) eps = 0;                                    // numerical noise of extreme settings
        else if (delta * delta + std::expm1(-r) > 0) eps = 0;  // the KL bound already gives delta
        else if (a > 1.01) eps = r + std::log1p(-1 / a) - std::log(delta * a) / (a - 1);
        else eps = kInf;
        if (eps < best.epsilon) best = {eps, a};
    }
    best.epsilon = std::max(0.0, best.epsilon);
    return best;
}

double noise_for_epsilon(double q, uint64_t rounds, double epsilon, double delta) {
    check(q, 1, delta);
    if (!(epsilon > 0)) throw Error("privacy: the epsilon budget must be above 0, got " + std::to_string(epsilon));
    double lo = 0, hi = 1;
    while (epsilon_spent(q, hi, rounds, delta).epsilon > epsilon) {
        lo = hi;
        hi *= 2;
        if (hi > 1e6)
            throw Error("privacy: no noise multiplier up to 1e6 keeps " + std::to_string(rounds) + " rounds within epsilon " +
                        std::to_string(epsilon) + " at delta " + std::to_string(delta));
    }
    while (hi - lo > 1e-4 * hi) {  // epsilon falls as sigma grows
        const double mid = (lo + hi) / 2;
        (epsilon_spent(q, mid, rounds, delta).epsilon > epsilon ? lo : hi) = mid;
    }
    return hi;
}

}  // namespace arch::privacy
