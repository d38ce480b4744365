// outer_optimizer/aggregator.cpp: mean, norm clipping, median, trimmed mean, centered clipping.
// Equations at each class in aggregator.h. Reductions run peers in the given order and norms over
// fixed chunks in double, so results do not depend on the number of threads.
#include "outer_optimizer/aggregator.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace arch::outer {
namespace {

constexpr std::size_t kNormChunk = std::size_t{1} << 16;

void check_inputs(std::string_view who, std::span<const WeightedDelta> in, std::size_t n,
                  std::size_t min_peers = 1) {
    if (in.size() < min_peers) {
        throw Error(std::string(who) + ": needs at least " + std::to_string(min_peers) +
                    " contributions, got " + std::to_string(in.size()));
    }
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i].delta.size() != n) {
            throw Error(std::string(who) + ": contribution " + std::to_string(i) + " holds " +
                        std::to_string(in[i].delta.size()) + " elements, expected " + std::to_string(n));
        }
        if (!(in[i].tokens > 0.0 && std::isfinite(in[i].tokens))) {
            throw Error(std::string(who) + ": contribution " + std::to_string(i) +
                        " has token weight " + std::to_string(in[i].tokens) + " (expected > 0)");
        }
    }
}

// ||a - b||_2 (b may be empty: ||a||), chunked in double: thread-count independent.
double distance(std::span<const float> a, std::span<const float> b) {
    const std::size_t n = a.size(), chunks = (n + kNormChunk - 1) / kNormChunk;
    std::vector<double> part(chunks);
#pragma omp parallel for schedule(static) if (chunks > 4)
    for (std::size_t c = 0; c < chunks; ++c) {
        double s = 0.0;
        const std::size_t e = std::min(n, (c + 1) * kNormChunk);
        for (std::size_t i = c * kNormChunk; i < e; ++i) {
            const double d = double(a[i]) - (b.empty() ? 0.0 : double(b[i]));
            s += d * d;
        }
        part[c] = s;
    }
    double total = 0.0;
    for (double p : part) total += p;
    return std::sqrt(total);
}

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t k = v.size();
    return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

// out[j] = sum_i coeff_i * x_i[j] (+ base[j] if given), in double, peers in order. A tile of values at a
// time, peer after peer into the tile's sums (loops the compiler vectorizes): each sum still adds the
// peers in order, so the bits are those of a loop over peers for each value.
void weighted_sum(std::span<const WeightedDelta> in, std::span<const double> coeff,
                  std::span<const float> base, std::span<float> out) {
    constexpr std::size_t kTile = 512;
    const std::size_t n = out.size(), peers = in.size(), tiles = (n + kTile - 1) / kTile;
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (std::size_t t = 0; t < tiles; ++t) {
        const std::size_t first = t * kTile, len = std::min(kTile, n - first);
        double s[kTile];
        std::fill(s, s + len, 0.0);
        for (std::size_t i = 0; i < peers; ++i) {
            const float* x = in[i].delta.data() + first;
            const double c = coeff[i];
#pragma omp simd
            for (std::size_t j = 0; j < len; ++j) s[j] += c * double(x[j]);
        }
        float* o = out.data() + first;
        if (base.empty()) {
#pragma omp simd
            for (std::size_t j = 0; j < len; ++j) o[j] = static_cast<float>(s[j]);
        } else {
            const float* b = base.data() + first;
#pragma omp simd
            for (std::size_t j = 0; j < len; ++j) o[j] = static_cast<float>(double(b[j]) + s[j]);
        }
    }
}

// Sorted values of coordinate j over all peers into v (small n: insertion sort, deterministic).
inline void sorted_column(std::span<const WeightedDelta> in, std::size_t j, float* v) {
    const std::size_t peers = in.size();
    for (std::size_t i = 0; i < peers; ++i) {
        float x = in[i].delta[j];
        std::size_t k = i;
        for (; k > 0 && v[k - 1] > x; --k) v[k] = v[k - 1];
        v[k] = x;
    }
}

std::string fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

}  // namespace

void WeightedMean::aggregate(std::span<const WeightedDelta> in, std::span<float> out) {
    check_inputs("mean", in, out.size());
    double total = 0.0;
    for (const WeightedDelta& c : in) total += c.tokens;
    std::vector<double> coeff;
    for (const WeightedDelta& c : in) coeff.push_back(c.tokens / total);
    weighted_sum(in, coeff, {}, out);
}

std::string NormClipping::name() const { return tau_ > 0 ? "clip:tau=" + fmt(tau_) : "clip"; }

void NormClipping::aggregate(std::span<const WeightedDelta> in, std::span<float> out) {
    check_inputs("norm clipping", in, out.size());
    std::vector<double> norms;
    for (const WeightedDelta& c : in) norms.push_back(distance(c.delta, {}));
    const double tau = tau_ > 0 ? tau_ : median_of(norms);
    double total = 0.0;
    for (const WeightedDelta& c : in) total += c.tokens;
    std::vector<double> coeff;
    for (std::size_t i = 0; i < in.size(); ++i) {
        const double clip = norms[i] > tau ? tau / norms[i] : 1.0;
        coeff.push_back(in[i].tokens / total * clip);
    }
    weighted_sum(in, coeff, {}, out);
}

void CoordinateMedian::aggregate(std::span<const WeightedDelta> in, std::span<float> out) {
    check_inputs("median", in, out.size());
    const std::size_t n = out.size(), peers = in.size();
#pragma omp parallel if (n > (1 << 16))
    {
        std::vector<float> v(peers);
#pragma omp for schedule(static)
        for (std::size_t j = 0; j < n; ++j) {
            sorted_column(in, j, v.data());
            out[j] = peers % 2 ? v[peers / 2]
                               : static_cast<float>(0.5 * (double(v[peers / 2 - 1]) + v[peers / 2]));
        }
    }
}

std::string TrimmedMean::name() const { return "trimmed:trim=" + std::to_string(trim_); }

void TrimmedMean::aggregate(std::span<const WeightedDelta> in, std::span<float> out) {
    check_inputs("trimmed mean", in, out.size(), 2 * trim_ + 1);
    const std::size_t n = out.size(), peers = in.size(), keep = peers - 2 * trim_;
#pragma omp parallel if (n > (1 << 16))
    {
        std::vector<float> v(peers);
#pragma omp for schedule(static)
        for (std::size_t j = 0; j < n; ++j) {
            sorted_column(in, j, v.data());
            double s = 0.0;
            for (std::size_t k = trim_; k < trim_ + keep; ++k) s += v[k];
            out[j] = static_cast<float>(s / double(keep));
        }
    }
}

std::string CenteredClipping::name() const {
    return "centered_clip:tau=" + fmt(tau_) + ",iters=" + std::to_string(iterations_) +
           ",history=" + (use_history_ ? "1" : "0");
}

void CenteredClipping::aggregate(std::span<const WeightedDelta> in, std::span<float> out) {
    check_inputs("centered clipping", in, out.size());
    if (iterations_ < 1) throw Error("centered clipping: iterations must be >= 1");
    const std::size_t n = out.size(), peers = in.size();
    std::vector<float> v(n);
    if (use_history_ && previous_.size() == n) {
        v = previous_;
    } else {
        CoordinateMedian().aggregate(in, v);
    }
    std::vector<double> dist(peers), coeff(peers);
    for (int l = 0; l < iterations_; ++l) {
        for (std::size_t i = 0; i < peers; ++i) dist[i] = distance(in[i].delta, v);
        const double tau = tau_ > 0 ? tau_ : median_of(dist);
        for (std::size_t i = 0; i < peers; ++i) {
            coeff[i] = (dist[i] > tau ? tau / dist[i] : 1.0) / double(peers);
        }
#pragma omp parallel for schedule(static) if (n > (1 << 16))
        for (std::size_t j = 0; j < n; ++j) {
            const double vj = v[j];
            double s = 0.0;
            for (std::size_t i = 0; i < peers; ++i) s += coeff[i] * (double(in[i].delta[j]) - vj);
            v[j] = static_cast<float>(vj + s);
        }
    }
    std::copy(v.begin(), v.end(), out.begin());
    if (use_history_) previous_ = std::move(v);
}

namespace {

[[noreturn]] void bad_aggregator(std::string_view spec, const std::string& why) {
    throw Error("aggregator spec '" + std::string(spec) + "': " + why);
}

double number(std::string_view spec, std::string_view key, std::string_view v) {
    const std::string s(v);
    char* end = nullptr;
    const double d = s.empty() ? NAN : std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(d)) {
        bad_aggregator(spec, std::string(key) + " must be a number, got '" + s + "'");
    }
    return d;
}

}  // namespace

std::unique_ptr<Aggregator> make_aggregator(std::string_view spec) {
    const std::size_t colon = spec.find(':');
    const std::string_view kind = spec.substr(0, colon);
    double tau = 0.0, trim = 1.0, iters = 3.0, history = 0.0;
    if (colon != std::string_view::npos) {
        std::string_view rest = spec.substr(colon + 1);
        while (true) {
            const std::size_t comma = rest.find(',');
            const std::string_view kv = rest.substr(0, comma);
            const std::size_t eq = kv.find('=');
            if (eq == std::string_view::npos) bad_aggregator(spec, "expected key=value, got '" + std::string(kv) + "'");
            const std::string_view key = kv.substr(0, eq), value = kv.substr(eq + 1);
            const bool ok = (key == "tau" && (kind == "clip" || kind == "centered_clip")) ||
                            (key == "trim" && kind == "trimmed") ||
                            ((key == "iters" || key == "history") && kind == "centered_clip");
            if (!ok) {
                std::string why = "'";  // built with += : GCC 12 -Wrestrict misfires on a + chain
                why += kind;
                why += "' has no parameter '";
                why += key;
                why += "'";
                bad_aggregator(spec, why);
            }
            const double d = number(spec, key, value);
            if (key == "tau") tau = d;
            if (key == "trim") trim = d;
            if (key == "iters") iters = d;
            if (key == "history") history = d;
            if (comma == std::string_view::npos) break;
            rest.remove_prefix(comma + 1);
        }
    }
    if (trim < 0 || trim != std::floor(trim) || trim > 1e6) bad_aggregator(spec, "trim must be a whole number >= 0");
    if (iters < 1 || iters != std::floor(iters) || iters > 1000) bad_aggregator(spec, "iters must be a whole number in [1, 1000]");
    if (history != 0.0 && history != 1.0) bad_aggregator(spec, "history must be 0 or 1");
    if (kind == "mean") return std::make_unique<WeightedMean>();
    if (kind == "clip") return std::make_unique<NormClipping>(tau);
    if (kind == "median") return std::make_unique<CoordinateMedian>();
    if (kind == "trimmed") return std::make_unique<TrimmedMean>(static_cast<std::size_t>(trim));
    if (kind == "centered_clip") {
        return std::make_unique<CenteredClipping>(tau, static_cast<int>(iters), history == 1.0);
    }
    bad_aggregator(spec, "unknown aggregator '" + std::string(kind) +
                             "' (expected mean, clip, median, trimmed or centered_clip)");
}

}  // namespace arch::outer
