// compression/sigma_codebook.cpp: uint8 codes over [mean - 3 sigma, mean + 3 sigma] with a codebook of
// bin means (the INTELLECT-1 scheme). Payload: [256 x f32 codebook][n x u8 code].
// The range is split into 256 equal bins of width w = 6 sigma / 256; values outside are clipped into
// the end bins; each code decodes to the mean of the values that fell in its bin (bin centre if empty).
// Error bound: |e| <= w for values in bins 1..254; in the two end bins |e| <= the spread of the values
// clipped into that bin (outliers are not preserved). Sums are in double over fixed chunks, so the
// codebook does not depend on the thread count.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>

#include "compression/detail.h"
#include "core/error.h"

namespace arch::compression::detail {
namespace {

constexpr std::size_t kBins = 256;
constexpr std::size_t kSigmaChunk = std::size_t{1} << 20;

struct Bins {
    std::array<double, kBins> sum{};
    std::array<std::uint64_t, kBins> count{};
};

inline int bin_of(float x, double lo, double inv) {
    const double t = (double(x) - lo) * inv;
    return static_cast<int>(std::min(std::max(t, 0.0), double(kBins - 1)));
}

// Sums f(x_i) in double over fixed chunks combined in order: the same result on any thread count.
template <class F>
double chunked_sum(std::span<const float> x, F&& f) {
    const std::size_t chunks = (x.size() + kSigmaChunk - 1) / kSigmaChunk;
    std::vector<double> part(chunks, 0.0);
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (std::size_t c = 0; c < chunks; ++c) {
        const std::size_t e = std::min(x.size(), (c + 1) * kSigmaChunk);
        double s = 0.0;
        for (std::size_t i = c * kSigmaChunk; i < e; ++i) s += f(x[i]);
        part[c] = s;
    }
    double total = 0.0;
    for (double p : part) total += p;
    return total;
}

}  // namespace

Bytes encode_uint8_sigma(std::span<const float> x) {
    require_finite(x, "uint8");
    const std::size_t n = x.size();
    Bytes out = payload_buffer(kBins * 4 + n);
    if (n == 0) {
        for (std::size_t b = 0; b < kBins; ++b) store_le(out.data() + 4 * b, 0.0f);
        return out;
    }
    const double mean = chunked_sum(x, [](float v) { return double(v); }) / double(n);
    const double var = chunked_sum(x, [mean](float v) { return (v - mean) * (v - mean); }) / n;
    const double sigma = std::sqrt(var);
    const double lo = mean - 3.0 * sigma, width = 6.0 * sigma / kBins;
    const double inv = width > 0.0 ? 1.0 / width : 0.0;  // sigma == 0: everything in bin 0

    auto* codes = reinterpret_cast<std::uint8_t*>(out.data() + kBins * 4);
    const std::size_t chunks = (n + kSigmaChunk - 1) / kSigmaChunk;
    std::vector<Bins> part(chunks);
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (std::size_t c = 0; c < chunks; ++c) {
        const std::size_t e = std::min(n, (c + 1) * kSigmaChunk);
        Bins& p = part[c];
        for (std::size_t i = c * kSigmaChunk; i < e; ++i) {
            const int b = bin_of(x[i], lo, inv);
            codes[i] = static_cast<std::uint8_t>(b);
            p.sum[b] += x[i];
            p.count[b] += 1;
        }
    }
    Bins total;
    for (const Bins& p : part) {
        for (std::size_t b = 0; b < kBins; ++b) {
            total.sum[b] += p.sum[b];
            total.count[b] += p.count[b];
        }
    }
    for (std::size_t b = 0; b < kBins; ++b) {
        const double c = total.count[b] ? total.sum[b] / double(total.count[b])
                                        : lo + (double(b) + 0.5) * width;
        store_le(out.data() + 4 * b, static_cast<float>(std::clamp(c, -double(FLT_MAX), double(FLT_MAX))));
    }
    return out;
}

void decode_uint8_sigma(ByteSpan payload, std::span<float> out) {
    require_finite_payload(payload.data(), kBins, "uint8 codebook entry");
    float book[kBins];
    for (std::size_t b = 0; b < kBins; ++b) book[b] = load_le<float>(payload.data() + 4 * b);
    const auto* codes = reinterpret_cast<const std::uint8_t*>(payload.data() + kBins * 4);
    const std::size_t n = out.size();
#pragma omp parallel for schedule(static) if (n > 4 * kChunk)
    for (std::size_t i = 0; i < n; ++i) out[i] = book[codes[i]];
}

}  // namespace arch::compression::detail
