// tests/core/test_muon.cpp: Newton-Schulz against a second computation of the same thing: a matrix
// built from chosen singular vectors and values, G = U diag(s) Vᵀ, must come out as
// U diag(φ(s / ‖s‖)) Vᵀ, φ being the quintic applied to one number, for wide and tall matrices.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/muon.h"
#include "core/rng.h"

using namespace arch;

namespace {

// k orthonormal columns of length n (Gram-Schmidt on seeded Gaussian vectors), column-major.
std::vector<double> orthonormal(int n, int k, uint64_t seed) {
    Rng rng(seed);
    std::vector<double> q(static_cast<std::size_t>(n) * k);
    for (int j = 0; j < k; ++j) {
        double* v = &q[static_cast<std::size_t>(j) * n];
        for (int i = 0; i < n; ++i) v[i] = rng.normal();
        for (int p = 0; p < j; ++p) {
            const double* u = &q[static_cast<std::size_t>(p) * n];
            double dot = 0;
            for (int i = 0; i < n; ++i) dot += u[i] * v[i];
            for (int i = 0; i < n; ++i) v[i] -= dot * u[i];
        }
        double norm = 0;
        for (int i = 0; i < n; ++i) norm += v[i] * v[i];
        for (int i = 0; i < n; ++i) v[i] /= std::sqrt(norm);
    }
    return q;
}

// U diag(s) Vᵀ, rows x cols row-major.
std::vector<float> compose(const std::vector<double>& U, const std::vector<double>& V, const std::vector<double>& s,
                           int rows, int cols) {
    std::vector<float> out(static_cast<std::size_t>(rows) * cols);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) {
            double sum = 0;
            for (std::size_t p = 0; p < s.size(); ++p) sum += U[p * rows + i] * s[p] * V[p * cols + j];
            out[static_cast<std::size_t>(i) * cols + j] = static_cast<float>(sum);
        }
    return out;
}

}  // namespace

TEST_CASE("Newton-Schulz maps every singular value through the quintic and keeps the singular vectors") {
    for (const auto& [rows, cols] : {std::pair{24, 40}, std::pair{40, 24}, std::pair{32, 32}}) {
        INFO(rows << " x " << cols);
        const int k = std::min(rows, cols);
        std::vector<double> s(static_cast<std::size_t>(k));
        for (int p = 0; p < k; ++p) s[p] = 5.0 * std::pow(0.8, p);  // 5 down to 0.0025
        const std::vector<double> U = orthonormal(rows, k, 1), V = orthonormal(cols, k, 2);
        std::vector<float> g = compose(U, V, s, rows, cols);
        double norm = 0;
        for (double v : s) norm += v * v;
        norm = std::sqrt(norm);
        std::vector<double> phi(s.size());
        for (std::size_t p = 0; p < s.size(); ++p) phi[p] = newton_schulz_scalar(static_cast<float>(s[p] / norm), 5);
        const std::vector<float> want = compose(U, V, phi, rows, cols);
        newton_schulz(g, rows, cols, 5);
        float worst = 0;
        for (std::size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - want[i]));
        CHECK(worst < 2e-5f);
        // The point of it: the large singular values all land near 1 (Jordan's coefficients keep
        // them within about 0.7 to 1.2), the smallest are lifted by orders of magnitude.
        for (std::size_t p = 0; p < 6; ++p) CHECK((phi[p] > 0.65 && phi[p] < 1.25));
        CHECK(phi.back() > 50 * s.back() / norm);
    }
    std::vector<float> zero(12, 0.0f);
    newton_schulz(zero, 3, 4, 5);
    for (float v : zero) CHECK(v == 0.0f);
    CHECK_THROWS(newton_schulz(zero, 5, 5, 5));
}
