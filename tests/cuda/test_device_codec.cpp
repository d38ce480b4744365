// tests/cuda/test_device_codec.cpp (GPU): the device codecs give compression's bytes and values bit
// for bit: encode_on_device == make_codec(spec)->encode on the CPU, decode_on_device ==
// compression::decode, for int8 / int4 / fp4 with and without zstd; NaN/inf input, unsupported
// specs and corrupt or truncated buffers are rejected with the CPU's messages, leaving the output
// buffer untouched. main: gpu_main.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "core/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_codec.h"
#include "tests/compression/codec_test_data.h"

using arch::compression::testing::adversarial_inputs;
using arch::compression::testing::gaussian;
using arch::cuda::check;
using arch::cuda::DeviceBuffer;
namespace compression = arch::compression;

namespace {

DeviceBuffer upload(const std::vector<float>& x) {
    DeviceBuffer d(x.size() * sizeof(float));
    if (!x.empty())
        check(cudaMemcpy(d.get(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice),
              "upload");
    return d;
}

std::vector<float> download(const DeviceBuffer& d, std::size_t n) {
    std::vector<float> x(n);
    if (n > 0)
        check(cudaMemcpy(x.data(), d.get(), n * sizeof(float), cudaMemcpyDeviceToHost), "download");
    return x;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), 4 * a.size()) == 0);
}

// Pseudo-gradient-like data with some adversarial values spread through it.
std::vector<float> test_input(std::size_t n, std::uint32_t seed) {
    std::vector<float> x = gaussian(n, seed, 1e-3f);
    for (std::size_t i = 5; i < n; i += 997) x[i] = 0.0f;
    for (std::size_t i = 11; i < n; i += 4001) x[i] = -1e-40f;  // subnormal
    for (std::size_t i = 17; i < n; i += 100003) x[i] = FLT_MAX / 3;
    if (n > 300)
        std::fill(x.begin() + 128, x.begin() + 256, 0.0f);  // a block of zeros (block <= 128)
    return x;
}

// encode_on_device == CPU encode; decode_on_device == CPU decode.
void check_spec(const std::string& spec, const std::vector<float>& x, cudaStream_t stream) {
    INFO(spec << ", n = " << x.size());
    const DeviceBuffer dx = upload(x);
    const std::vector<std::byte> cpu = compression::make_codec(spec)->encode(x);
    const std::vector<std::byte> gpu =
        arch::cuda::encode_on_device(spec, dx.as<float>(), x.size(), stream);
    REQUIRE(gpu.size() == cpu.size());
    REQUIRE(gpu == cpu);
    std::vector<float> want(x.size());
    compression::decode(cpu, want);
    DeviceBuffer dy(x.size() * sizeof(float));
    arch::cuda::decode_on_device(cpu, dy.as<float>(), x.size(), stream);
    REQUIRE(same_bits(download(dy, x.size()), want));
}

std::string message_of(auto&& f) {
    try {
        f();
    } catch (const arch::Error& e) {
        return e.what();
    }
    return "";
}

const char* const kSpecs[] = {
    "int8",     "int4",         "fp4",          "int8+zstd",      "int4+zstd:3",
    "fp4+zstd", "int8:block=8", "int4:block=8", "fp4:block=4104", "int8:block=2056+zstd"};

}  // namespace

TEST_CASE("device codecs give the CPU codecs' bytes and values", "[cuda][device_codec]") {
    for (std::size_t n : {std::size_t{1}, std::size_t{1000}, (std::size_t{1} << 20) + 7}) {
        const std::vector<float> x = test_input(n, static_cast<std::uint32_t>(n));
        for (const char* spec : kSpecs) check_spec(spec, x, nullptr);
    }
}

TEST_CASE("device codecs match on adversarial inputs and on a non-blocking stream",
          "[cuda][device_codec]") {
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    for (const auto& [what, x] : adversarial_inputs()) {
        INFO(what);
        for (const char* spec : {"int8:block=16", "int4:block=8", "fp4:block=128+zstd"})
            check_spec(spec, x, stream);
    }
    // Blocks longer than one warp's segment (1024), with a short last block.
    check_spec("int8:block=5000", test_input(23456, 3), stream);
    check_spec("fp4:block=16777216", test_input(70001, 4), stream);
    check(cudaStreamDestroy(stream), "cudaStreamDestroy");
}

TEST_CASE("device encode rejects non-finite input with the CPU's message", "[cuda][device_codec]") {
    for (const char* spec : {"int8", "int4+zstd", "fp4"}) {
        for (float bad : {NAN, INFINITY, -INFINITY}) {
            std::vector<float> x = test_input(100000, 9);
            x[77777] = bad;
            x[99999] = NAN;  // a later one: the first is named
            const DeviceBuffer dx = upload(x);
            const std::string cpu = message_of([&] { compression::make_codec(spec)->encode(x); });
            const std::string gpu = message_of(
                [&] { arch::cuda::encode_on_device(spec, dx.as<float>(), x.size(), nullptr); });
            INFO(spec << ": " << cpu);
            REQUIRE(!cpu.empty());
            REQUIRE(gpu == cpu);
        }
    }
}

TEST_CASE("device codecs take only the specs they support", "[cuda][device_codec]") {
    using arch::cuda::device_codec_supports;
    for (const char* spec : {"int8", "int4:block=64", "fp4+zstd:3", "int8:block=8+zstd:level=2"}) {
        REQUIRE(device_codec_supports(spec));
    }
    const DeviceBuffer dx = upload(gaussian(100, 1));
    for (const char* spec :
         {"int8+ef", "fp4+ef+zstd", "topk", "sign", "fp32", "bf16", "uint8", "int8:block=7", ""}) {
        INFO(spec);
        REQUIRE_FALSE(device_codec_supports(spec));
        REQUIRE_THROWS_AS(arch::cuda::encode_on_device(spec, dx.as<float>(), 100, nullptr),
                          arch::Error);
    }
    // n = 0 gives the CPU's (header-only) bytes.
    for (const char* spec : {"int8", "fp4+zstd"}) {
        REQUIRE(arch::cuda::encode_on_device(spec, nullptr, 0, nullptr) ==
                compression::make_codec(spec)->encode({}));
    }
}

TEST_CASE("device decode rejects bad buffers and leaves out untouched", "[cuda][device_codec]") {
    const std::size_t n = 4097;  // odd: int4/fp4 have a padding nibble
    const std::vector<float> x = test_input(n, 12);
    const std::vector<float> sentinel(n, -12345.0f);
    DeviceBuffer out = upload(sentinel);
    auto expect_rejected = [&](const std::vector<std::byte>& bytes, std::size_t count,
                               const std::string& what) {
        INFO(what);
        std::vector<float> host(count, 1.0f);
        const std::string cpu = message_of([&] { compression::decode(bytes, host); });
        const std::string gpu = message_of(
            [&] { arch::cuda::decode_on_device(bytes, out.as<float>(), count, nullptr); });
        INFO("CPU: " << cpu << "\nGPU: " << gpu);
        REQUIRE(!gpu.empty());
        if (!cpu.empty() && what.find("codec") == std::string::npos) REQUIRE(gpu == cpu);
        REQUIRE(same_bits(download(out, n), sentinel));
    };
    for (const char* spec : {"int8:block=64", "int4:block=64", "fp4:block=64+zstd"}) {
        const std::vector<std::byte> good = compression::make_codec(spec)->encode(x);
        const std::string s = spec;
        expect_rejected(std::vector<std::byte>(good.begin(), good.end() - 1), n,
                        s + " truncated by one byte");
        expect_rejected(std::vector<std::byte>(good.begin(), good.begin() + 20), n,
                        s + " truncated header");
        expect_rejected(good, n - 1, s + " wrong count");
        std::vector<std::byte> bad = good;
        bad[0] = std::byte{'Q'};
        expect_rejected(bad, n, s + " bad magic");
        if (s.find("zstd") == std::string::npos) {
            bad = good;
            const float nan = NAN, negative = -2.0f;
            std::memcpy(bad.data() + compression::kWireHeaderBytes + 4 * 5, &nan, 4);
            expect_rejected(bad, n, s + " NaN scale");
            std::memcpy(bad.data() + compression::kWireHeaderBytes + 4 * 5, &negative, 4);
            expect_rejected(bad, n, s + " negative scale");
            if (s.rfind("int8", 0) != 0) {
                bad = good;
                bad.back() |= std::byte{0xf0};
                expect_rejected(bad, n, s + " padding nibble");
            }
        } else {
            bad = good;
            bad[compression::kWireHeaderBytes + 8] ^= std::byte{0x40};  // first chunk's stored size
            expect_rejected(bad, n, s + " zstd chunk table");
        }
    }
    expect_rejected(compression::make_codec("fp32")->encode(x), n, "fp32 codec has no GPU decoder");
    expect_rejected(compression::make_codec("sign")->encode(x), n, "sign codec has no GPU decoder");
}
