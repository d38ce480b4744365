// tests/cuda/device_data.h: what the kernel tests share: bf16-representable random inputs, device
// buffers with spare bytes (so a test can offset pointers off 16-byte alignment), downloads, and
// the element-wise comparison |gpu - cpu| <= atol + rtol |cpu| that reports the worst element.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace cuda_test {

using arch::cuda::bf16;
using arch::cuda::check;
using arch::cuda::DeviceBuffer;

// One bf16 rounding is at most 2^-8 relative (half the 2^-7 spacing, at the bottom of a binade), so
// 2^-8 alone leaves no room for the fp32 differences under the rounding: 5% more.
constexpr double kBf16Rtol = 1.05 / 256;

// ---- host data ----------------------------------------------------------------------------------
inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo, float hi) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> x(n);
    for (float& v : x) v = dist(rng);
    return x;
}

inline float round_bf16(float x) {
    return arch::cuda::bf16_bits_to_float(arch::cuda::float_to_bf16_bits(x));
}

// Random values already rounded to bf16, so the GPU and the CPU see the same numbers.
inline std::vector<float> random_bf16(std::size_t n, std::uint32_t seed, float lo, float hi) {
    std::vector<float> x = random_floats(n, seed, lo, hi);
    for (float& v : x) v = round_bf16(v);
    return x;
}

inline std::vector<std::uint16_t> bits_of(const std::vector<float>& x) {
    std::vector<std::uint16_t> b(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) b[i] = arch::cuda::float_to_bf16_bits(x[i]);
    return b;
}

// ---- device data: a buffer with 64 spare bytes so tests can offset pointers off 16-byte alignment
struct Dev {
    DeviceBuffer buf;
    std::size_t offset_bytes = 0;
    template <class T>
    T* as() const {
        return reinterpret_cast<T*>(static_cast<char*>(buf.get()) + offset_bytes);
    }
};

inline Dev dev_bytes(std::size_t bytes, std::size_t offset_bytes = 0) {
    return Dev{DeviceBuffer(bytes + 64), offset_bytes};
}

inline void upload(const Dev& d, const void* src, std::size_t bytes) {
    check(cudaMemcpy(d.as<char>(), src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
}

// bf16 on the device from floats that are bf16 values; offset in elements.
inline Dev dev_bf16(const std::vector<float>& x, std::size_t offset = 0) {
    Dev d = dev_bytes(x.size() * 2, offset * 2);
    const std::vector<std::uint16_t> b = bits_of(x);
    upload(d, b.data(), b.size() * 2);
    return d;
}

template <class T>
inline Dev dev_vec(const std::vector<T>& x, std::size_t offset = 0) {
    Dev d = dev_bytes(x.size() * sizeof(T), offset * sizeof(T));
    upload(d, x.data(), x.size() * sizeof(T));
    return d;
}

inline std::vector<std::uint16_t> get_bits(const Dev& d, std::size_t n) {
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::vector<std::uint16_t> b(n);
    check(cudaMemcpy(b.data(), d.as<char>(), n * 2, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    return b;
}

inline std::vector<float> get_bf16(const Dev& d, std::size_t n) {
    const std::vector<std::uint16_t> b = get_bits(d, n);
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = arch::cuda::bf16_bits_to_float(b[i]);
    return x;
}

template <class T>
inline std::vector<T> get_vec(const Dev& d, std::size_t n) {
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::vector<T> x(n);
    check(cudaMemcpy(x.data(), d.as<char>(), n * sizeof(T), cudaMemcpyDeviceToHost),
          "cudaMemcpy to host");
    return x;
}

// ---- comparisons --------------------------------------------------------------------------------
// |gpu - cpu| <= atol[i] + rtol |cpu| everywhere (NaN fails); reports the count and the worst
// element. With ARCH_PRINT_ERRORS set, prints the largest |gpu - cpu| and the largest share of its
// tolerance used (the figures docs/cuda.md quotes).
inline void check_close(const std::string& what, const std::vector<float>& gpu,
                        const std::vector<float>& cpu, const std::vector<double>& atol,
                        double rtol) {
    REQUIRE(gpu.size() == cpu.size());
    std::size_t bad = 0, worst = 0;
    double worst_excess = -1.0, max_abs = 0.0, max_share = 0.0;
    for (std::size_t i = 0; i < gpu.size(); ++i) {
        const double d = std::fabs(static_cast<double>(gpu[i]) - cpu[i]);
        const double tol =
            atol[atol.size() == 1 ? 0 : i] + rtol * std::fabs(static_cast<double>(cpu[i]));
        const double excess = std::isnan(d) ? 1e300 : d - tol;
        if (!(d <= tol)) ++bad;
        if (excess > worst_excess) worst_excess = excess, worst = i;
        max_abs = std::max(max_abs, d);
        if (d > 0) max_share = std::max(max_share, tol > 0 ? d / tol : INFINITY);
    }
    if (std::getenv("ARCH_PRINT_ERRORS") != nullptr)
        std::printf("%s: max |gpu - cpu| %.3g, %.0f%% of its tolerance\n", what.c_str(), max_abs,
                    100 * max_share);
    INFO(what << ": " << bad << " of " << gpu.size() << " outside tolerance; worst at " << worst
              << ": gpu " << gpu[worst] << " cpu " << cpu[worst]);
    CHECK(bad == 0);
}

inline void check_close(const std::string& what, const std::vector<float>& gpu,
                        const std::vector<float>& cpu, double atol, double rtol) {
    check_close(what, gpu, cpu, std::vector<double>{atol}, rtol);
}

inline void check_bits_equal(const std::string& what, const void* a, const void* b,
                             std::size_t bytes) {
    INFO(what << ": a rerun must give identical bits");
    CHECK(std::memcmp(a, b, bytes) == 0);
}

// Tolerance for a sum of fp32 terms added in a different order: 1e-5 of the sum of |terms| (fp32
// epsilon is 6e-8, so this leaves room for ~170 roundings' worth of drift) plus a floor.
inline std::vector<double> sum_tolerance(const std::vector<double>& sum_abs) {
    std::vector<double> tol(sum_abs.size());
    for (std::size_t i = 0; i < tol.size(); ++i) tol[i] = 1e-5 * sum_abs[i] + 1e-6;
    return tol;
}

}  // namespace cuda_test
