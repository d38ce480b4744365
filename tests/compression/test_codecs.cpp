// tests/compression/test_codecs.cpp: every codec round-trips within the bound it documents
// (compression/codec.h, docs/codecs.md) on Gaussian and adversarial inputs; non-finite input is
// rejected; zstd keeps the bytes lossless; specs parse and print canonically.
#include <catch2/catch.hpp>

#include <cstring>

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "compression/codec.h"
#include "compression/detail.h"
#include "core/error.h"
#include "tests/compression/codec_test_data.h"

using namespace arch::compression;
using arch::compression::testing::adversarial_inputs;
using arch::compression::testing::gaussian;
using arch::compression::testing::rel_l2;

namespace {

std::vector<float> round_trip(const std::string& spec, const std::vector<float>& x) {
    auto codec = make_codec(spec);
    const std::vector<std::byte> bytes = codec->encode(x);
    const WireInfo info = inspect(bytes);
    REQUIRE(info.count == x.size());
    std::vector<float> y(x.size(), -12345.0f);
    decode(bytes, y);
    for (float v : y) REQUIRE(std::isfinite(v));
    return y;
}

float block_absmax(const std::vector<float>& x, std::size_t first, std::size_t len) {
    float m = 0;
    for (std::size_t i = first; i < first + len; ++i) m = std::max(m, std::fabs(x[i]));
    return m;
}

// |x - y| <= scale * half_steps (+ slack) per element of each block, scale = absmax / qmax.
void check_uniform_bound(const std::vector<float>& x, const std::vector<float>& y,
                         std::size_t block, float qmax) {
    for (std::size_t b = 0; b < x.size(); b += block) {
        const std::size_t len = std::min(block, x.size() - b);
        const double s = double(block_absmax(x, b, len)) / qmax;
        for (std::size_t i = b; i < b + len; ++i) {
            INFO("element " << i << " x=" << x[i] << " y=" << y[i] << " scale=" << s);
            REQUIRE(std::fabs(double(x[i]) - y[i]) <= s * (0.5 + 0x1p-15) + 0x1p-140);
        }
    }
}

}  // namespace

TEST_CASE("fp32 is exact", "[codec]") {
    for (const auto& [name, x] : adversarial_inputs()) {
        INFO(name);
        REQUIRE(round_trip("fp32", x) == x);
    }
}

TEST_CASE("fp16 and bf16 round to nearest within their documented bounds", "[codec]") {
    for (const auto& [name, x] : adversarial_inputs()) {
        INFO(name);
        const auto h = round_trip("fp16", x);
        const auto b = round_trip("bf16", x);
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double a = std::fabs(double(x[i]));
            INFO("x=" << x[i] << " fp16=" << h[i] << " bf16=" << b[i]);
            const double eh = std::fabs(double(x[i]) - h[i]);
            if (a > 65504.0) {
                REQUIRE(h[i] == std::copysign(65504.0f, x[i]));
            } else if (a >= 0x1p-14) {
                REQUIRE(eh <= 0x1p-11 * a);
            } else {
                REQUIRE(eh <= 0x1p-25);
            }
            const double eb = std::fabs(double(x[i]) - b[i]);
            REQUIRE(eb <= (a >= FLT_MIN ? 0x1p-8 * a : 0x1p-134));
        }
    }
}

TEST_CASE("int8 and int4 blockwise absmax: |error| <= scale/2", "[codec]") {
    for (std::size_t block : {8u, 64u, 256u}) {
        for (const auto& [name, x] : adversarial_inputs()) {
            INFO(name << " block " << block);
            const std::string b = ":block=" + std::to_string(block);
            check_uniform_bound(x, round_trip("int8" + b, x), block, 127.0f);
            check_uniform_bound(x, round_trip("int4" + b, x), block, 7.0f);
        }
    }
}

TEST_CASE("fp4 e2m1 blockwise: |error| <= max(scale, |x|)/4", "[codec]") {
    for (const auto& [name, x] : adversarial_inputs()) {
        INFO(name);
        const std::size_t block = 128;
        const auto y = round_trip("fp4", x);
        for (std::size_t b = 0; b < x.size(); b += block) {
            const std::size_t len = std::min(block, x.size() - b);
            const double s = double(block_absmax(x, b, len)) / 6.0;
            for (std::size_t i = b; i < b + len; ++i) {
                INFO("x=" << x[i] << " y=" << y[i] << " scale=" << s);
                const double bound = std::max(s, std::fabs(double(x[i]))) / 4.0;
                REQUIRE(std::fabs(double(x[i]) - y[i]) <= bound * (1 + 0x1p-15) + 0x1p-140);
            }
        }
    }
}

TEST_CASE("sign: each block decodes to +-mean|x| and its L2 error is at most its L2 norm", "[codec]") {
    for (const auto& [name, x] : adversarial_inputs()) {
        INFO(name);
        const std::size_t block = 64;
        const auto y = round_trip("sign:block=64", x);
        for (std::size_t b = 0; b < x.size(); b += block) {
            const std::size_t len = std::min(block, x.size() - b);
            double err = 0, norm = 0, mean_abs = 0;
            for (std::size_t i = b; i < b + len; ++i) {
                err += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
                norm += double(x[i]) * x[i];
                mean_abs += std::fabs(double(x[i])) / double(len);
            }
            REQUIRE(std::sqrt(err) <= std::sqrt(norm) * (1 + 1e-6) + 1e-30);
            for (std::size_t i = b; i < b + len; ++i) {
                REQUIRE(std::fabs(y[i]) == Approx(mean_abs).epsilon(1e-6).margin(1e-44));
                if (x[i] != 0) REQUIRE(std::signbit(y[i]) == std::signbit(x[i]));
            }
        }
    }
}

TEST_CASE("uint8 sigma codebook: |error| <= 6 sigma/256 inside the range", "[codec]") {
    for (const auto& [name, x] : adversarial_inputs()) {
        INFO(name);
        const auto y = round_trip("uint8", x);
        if (x.empty()) continue;
        double mean = 0, var = 0;
        for (float v : x) mean += v;
        mean /= double(x.size());
        for (float v : x) var += (v - mean) * (v - mean);
        const double sigma = std::sqrt(var / double(x.size()));
        const double w = 6 * sigma / 256, lo = mean - 3 * sigma, hi = mean + 3 * sigma;
        for (std::size_t i = 0; i < x.size(); ++i) {
            if (x[i] > lo + w && x[i] < hi - w) {  // bins 1..254
                INFO("x=" << x[i] << " y=" << y[i] << " w=" << w);
                REQUIRE(std::fabs(double(x[i]) - y[i]) <= w * (1 + 1e-5) + 1e-44);
            }
        }
        if (sigma == 0) REQUIRE(y == x);  // all equal: the codebook holds the value itself
    }
    const auto x = gaussian(100000, 1);
    REQUIRE(rel_l2(x, round_trip("uint8", x)) < 0.02);  // tails beyond 3 sigma are clipped
}

TEST_CASE("topk keeps the k largest magnitudes exactly", "[codec]") {
    for (const auto& [name, x] : adversarial_inputs()) {
        for (double frac : {0.001, 0.05, 0.5, 1.0}) {
            INFO(name << " frac " << frac);
            char spec[64];
            std::snprintf(spec, sizeof spec, "topk:frac=%g", frac);
            const auto y = round_trip(spec, x);
            const std::size_t k =
                x.empty() ? 0 : std::min(x.size(), std::max<std::size_t>(1, std::ceil(frac * x.size())));
            float min_kept = INFINITY;
            std::size_t kept = 0;
            for (std::size_t i = 0; i < x.size(); ++i) {
                if (y[i] != 0.0f) {
                    REQUIRE(y[i] == x[i]);
                    min_kept = std::min(min_kept, std::fabs(x[i]));
                    ++kept;
                }
            }
            REQUIRE(kept <= k);  // kept zeros do not show
            for (std::size_t i = 0; i < x.size(); ++i) {
                if (y[i] == 0.0f) REQUIRE(std::fabs(x[i]) <= min_kept);
            }
        }
    }
}

TEST_CASE("relative L2 error on Gaussian data stays within each codec's class", "[codec]") {
    const auto x = gaussian(1 << 18, 42);
    struct Row { const char* spec; double max_rel; };
    for (const Row& r : {Row{"fp16", 1e-3}, Row{"bf16", 5e-3}, Row{"int8", 0.01},
                         Row{"int8+zstd", 0.01}, Row{"uint8+zstd:3", 0.02}, Row{"int4", 0.12},
                         Row{"fp4", 0.12}, Row{"sign", 0.7}, Row{"topk:frac=0.1", 0.8}}) {
        INFO(r.spec);
        REQUIRE(rel_l2(x, round_trip(r.spec, x)) < r.max_rel);
    }
}

TEST_CASE("compression ratios meet the issue's goals on Gaussian data", "[codec]") {
    const auto x = gaussian(1 << 20, 43);
    const double raw = 4.0 * x.size();
    auto ratio = [&](const char* spec) { return raw / double(make_codec(spec)->encode(x).size()); };
    CHECK(ratio("int8+zstd") >= 4.0);
    CHECK(ratio("int4") >= 7.5);
    CHECK(ratio("fp4") >= 7.5);
    CHECK(ratio("sign") >= 30.0);
}

TEST_CASE("zstd stage is lossless and stores incompressible chunks raw", "[codec][zstd]") {
    const auto x = gaussian((1 << 20) + 333, 5);  // several 1 MiB chunks plus a partial one
    for (const char* spec : {"fp32+zstd", "int8+zstd:3", "fp4:block=64+zstd:-1", "topk:frac=0.02+zstd"}) {
        INFO(spec);
        const std::string plain = std::string(spec).substr(0, std::string(spec).find('+'));
        REQUIRE(round_trip(spec, x) == round_trip(plain, x));
    }
    // fp32 Gaussian barely compresses: the body must not grow by more than the chunk table.
    const auto bytes = make_codec("fp32+zstd")->encode(x);
    REQUIRE(bytes.size() <= kWireHeaderBytes + 4 * x.size() + 8 + 4 * 6);
}

TEST_CASE("a blockwise codec's zstd stage, made a window at a time, is the payload's zstd stage byte for byte", "[codec][zstd]") {
    // Sizes where every code shares a chunk with the scales, where the scales end on a chunk's edge
    // (int8, block 8: 2^21 values have 1 MiB of scales), where the last block and byte are partial;
    // several windows of codes below.
    struct Case {
        const char* codec;
        std::size_t n;
    };
    for (const Case c : {Case{"fp4:block=32", 1000}, Case{"int8:block=8", std::size_t{1} << 21},
                         Case{"int4:block=64", (std::size_t{1} << 20) + 7}, Case{"sign:block=256", (std::size_t{1} << 20) + 3}}) {
        for (const bool feedback : {false, true}) {
            INFO(c.codec << ", " << c.n << " values" << (feedback ? ", error feedback" : ""));
            const std::vector<float> x = gaussian(c.n, 11);
            const std::string plain = std::string(c.codec) + (feedback ? "+ef" : "");
            std::vector<float> y_plain = x, y_zstd = x;
            const auto blob_plain = feedback ? make_codec(plain)->encode_feedback(y_plain) : make_codec(plain)->encode(x);
            const auto blob_zstd =
                feedback ? make_codec(plain + "+zstd:1")->encode_feedback(y_zstd) : make_codec(plain + "+zstd:1")->encode(x);
            REQUIRE(y_zstd == y_plain);  // the residual, where error feedback takes each decode off
            const std::span<const std::byte> payload = std::span(blob_plain).subspan(kWireHeaderBytes);
            const auto want = detail::zstd_compress(payload, 1, kWireHeaderBytes);
            REQUIRE(blob_zstd.size() == want.size());
            REQUIRE(std::equal(blob_zstd.begin() + kWireHeaderBytes, blob_zstd.end(), want.begin() + kWireHeaderBytes));
            REQUIRE(inspect(blob_zstd).payload_bytes == payload.size());
            std::vector<float> decoded(c.n);
            decode(blob_zstd, decoded);
            std::vector<float> decoded_plain(c.n);
            decode(blob_plain, decoded_plain);
            REQUIRE(decoded == decoded_plain);
        }
    }
}

TEST_CASE("the zstd stage made over several windows of codes is the payload's, byte for byte", "[codec][zstd]") {
    // Windows of 2 chunks (8 by default): int8 codes of 3 Mi values take two windows and a partial one.
    const std::vector<float> x = gaussian(3 * (std::size_t{1} << 20) + 5, 12);
    for (const bool feedback : {false, true}) {
        INFO((feedback ? "error feedback" : "plain"));
        std::vector<float> y_whole = x, y_windows = x;
        const detail::Bytes payload = detail::encode_int8(y_whole, 256, feedback ? y_whole.data() : nullptr);
        detail::ZstdTarget target;
        target.window_chunks = 2;
        const detail::Bytes stage = detail::encode_int8(y_windows, 256, feedback ? y_windows.data() : nullptr, nullptr, &target);
        REQUIRE(target.payload_bytes == payload.size());
        REQUIRE(stage == detail::zstd_compress(payload, 1));
        REQUIRE(y_windows == y_whole);
    }
}

TEST_CASE("wire_bytes_limit bounds every codec's encoded size, and is reached by what zstd cannot shrink", "[codec][zstd]") {
    const auto x = gaussian((1 << 20) + 333, 9);
    for (const char* spec : {"fp32", "fp32+zstd", "bf16+zstd", "int8+zstd:3", "int4:block=64", "fp4+ef+zstd:1",
                             "uint8+zstd", "sign+zstd", "topk:frac=0.5+zstd", "topk:frac=1", "topk:frac=0.01+zstd",
                             "topk:frac=0.001"}) {
        INFO(spec);
        const std::vector<std::byte> bytes = make_codec(spec)->encode(x);
        CHECK(bytes.size() <= wire_bytes_limit(spec, x.size()));
    }
    // topk's limit is for the k its fraction keeps (values and their longest gaps), not for any k a
    // decoder takes: a receiver bounds a topk run's Δ at a fraction of fp32's size.
    const std::uint64_t k = (x.size() + 99) / 100;
    CHECK(payload_bytes_limit("topk:frac=0.01", x.size()) == 8 + 14 * k);
    CHECK(wire_bytes_limit("topk:frac=0.01", x.size()) < wire_bytes_limit("fp32", x.size()) / 25);
    // fp32 of Gaussian values: zstd takes little more than their exponents' redundancy off, so the
    // limit is not loose.
    const std::vector<std::byte> raw = make_codec("fp32+zstd")->encode(x);
    CHECK(static_cast<double>(raw.size()) >= 0.9 * static_cast<double>(wire_bytes_limit("fp32+zstd", x.size())));
    CHECK(wire_bytes_limit("fp32", x.size()) == kWireHeaderBytes + 4 * x.size());
}

TEST_CASE("encode rejects NaN and infinite input with a clear error", "[codec]") {
    for (const char* spec : {"fp32", "fp16", "bf16", "int8", "uint8", "int4", "fp4", "topk", "sign",
                             "int8+ef+zstd"}) {
        for (float bad : {NAN, INFINITY, -INFINITY}) {
            INFO(spec << " " << bad);
            auto x = gaussian(1000, 3);
            x[517] = bad;
            auto codec = make_codec(spec);
            REQUIRE_THROWS_AS(codec->encode(x), arch::Error);
            REQUIRE_THROWS_WITH(codec->encode(x), Catch::Contains("517"));
        }
    }
    // With error feedback a refused input leaves the residual bit for bit as it was.
    auto ef = make_codec("fp4+ef");
    ef->encode(gaussian(1000, 4));
    const std::vector<float> before(ef->residual(0).begin(), ef->residual(0).end());
    auto x = gaussian(1000, 5);
    x[3] = INFINITY;
    REQUIRE_THROWS_WITH(ef->encode(x), Catch::Contains("3"));
    REQUIRE(std::equal(before.begin(), before.end(), ef->residual(0).begin(), ef->residual(0).end()));
}

TEST_CASE("error feedback leaves the input less its decode, bit for bit, on every adversarial input", "[codec][ef]") {
    // fp4 takes each value's decode off as it codes it; the others decode each block again. Either way
    // the residual must be exactly x - decode(encode(x)), signed zeros included.
    auto sets = adversarial_inputs();
    std::vector<float> signed_zeros(515, -0.0f);
    for (std::size_t i = 0; i < signed_zeros.size(); i += 3) signed_zeros[i] = 1e-3f * float(i % 7) - 2e-3f;
    sets.emplace_back("signed zeros", signed_zeros);
    for (const char* spec : {"fp4", "fp4:block=64", "int8:block=256", "int4", "sign"}) {
        for (const auto& [name, x] : sets) {
            INFO(spec << " on " << name);
            std::vector<float> y = x;
            const std::vector<std::byte> payload = make_codec(spec)->encode_feedback(y);
            std::vector<float> decoded(x.size());
            decode(payload, decoded);
            for (std::size_t i = 0; i < x.size(); ++i) {
                const float want = x[i] - decoded[i];
                if (std::memcmp(&want, &y[i], sizeof(float)) != 0) {
                    FAIL_CHECK("value " << i << ": residual " << y[i] << ", x - decode " << want);
                    break;
                }
            }
        }
    }
}

TEST_CASE("error feedback: the sum of decoded updates tracks the sum of inputs over 100 rounds",
          "[codec][ef]") {
    const std::size_t n = 4096;
    const auto g = gaussian(n, 100);  // a persistent direction, as pseudo-gradients have
    struct Pair { const char* plain; const char* ef; };
    for (const Pair& p : {Pair{"sign:block=256", "sign:block=256+ef"},
                          Pair{"topk:frac=0.05", "topk:frac=0.05+ef"}, Pair{"int4", "int4+ef"},
                          Pair{"fp4+zstd", "fp4+ef+zstd"}}) {
        INFO(p.ef);
        auto with_ef = make_codec(p.ef);
        auto without = make_codec(p.plain);
        std::vector<double> sum_in(n, 0), sum_ef(n, 0), sum_plain(n, 0);
        std::vector<float> y(n);
        for (int round = 0; round < 100; ++round) {
            auto noise = gaussian(n, 1000 + round, 0.5f);
            std::vector<float> x(n);
            for (std::size_t i = 0; i < n; ++i) x[i] = 0.01f * (g[i] + noise[i]);
            for (std::size_t i = 0; i < n; ++i) sum_in[i] += x[i];
            decode(with_ef->encode(x, 7), y);
            for (std::size_t i = 0; i < n; ++i) sum_ef[i] += y[i];
            decode(without->encode(x), y);
            for (std::size_t i = 0; i < n; ++i) sum_plain[i] += y[i];
        }
        // Telescoping: sum of inputs - sum of decoded = the final residual, whatever the codec.
        const auto r = with_ef->residual(7);
        REQUIRE(r.size() == n);
        double err_ef = 0, err_plain = 0, norm = 0, r_gap = 0;
        for (std::size_t i = 0; i < n; ++i) {
            err_ef += (sum_in[i] - sum_ef[i]) * (sum_in[i] - sum_ef[i]);
            err_plain += (sum_in[i] - sum_plain[i]) * (sum_in[i] - sum_plain[i]);
            norm += sum_in[i] * sum_in[i];
            r_gap = std::max(r_gap, std::fabs(sum_in[i] - sum_ef[i] - r[i]));
        }
        const double rel_ef = std::sqrt(err_ef / norm), rel_plain = std::sqrt(err_plain / norm);
        INFO("relative error of the sum: with ef " << rel_ef << ", without " << rel_plain);
        REQUIRE(r_gap < 1e-4);
        REQUIRE(rel_ef < 0.1);
        REQUIRE(rel_ef < rel_plain);
    }
    auto ef = make_codec("sign+ef");
    std::vector<float> x(8, 1.0f);
    ef->encode(x, 1);
    REQUIRE_THROWS_AS(ef->encode(std::vector<float>(9, 1.0f), 1), arch::Error);
    ef->reset(1);
    REQUIRE(ef->residual(1).empty());
    REQUIRE_NOTHROW(ef->encode(std::vector<float>(9, 1.0f), 1));
}

TEST_CASE("specs parse, print canonically and reject bad input", "[codec][spec]") {
    REQUIRE(make_codec("int8:block=256+zstd:1")->spec() == "int8:block=256+zstd:1");
    REQUIRE(make_codec("fp4+ef+zstd")->spec() == "fp4:block=128+ef+zstd:1");
    REQUIRE(make_codec("topk:frac=0.25")->spec() == "topk:frac=0.25");
    REQUIRE(make_codec("int4+zstd:level=5")->spec() == "int4:block=128+zstd:5");
    REQUIRE(make_codec("sign")->spec() == "sign:block=4096");
    for (const char* spec : {"int8:block=256+zstd:1", "fp4+ef+zstd", "uint8+zstd:19", "topk:frac=0.001+ef",
                             "bf16", "fp16+zstd:-3"}) {
        auto c = make_codec(spec);
        REQUIRE(make_codec(c->spec())->spec() == c->spec());
    }
    struct Bad { const char* spec; const char* says; };
    for (const Bad& b : {Bad{"", "empty"}, Bad{"int9", "unknown codec"}, Bad{"int8:block=7", "multiple of 8"},
                         Bad{"int8:block=abc", "integer"}, Bad{"int8:frac=0.1", "no parameter"},
                         Bad{"topk:frac=0", "(0, 1]"}, Bad{"topk:frac=1.5", "(0, 1]"},
                         Bad{"fp32:block=8", "no parameter"}, Bad{"int8+zstd:99", "zstd level"},
                         Bad{"int8+zstd+zstd", "only once"}, Bad{"int8+foo", "unknown stage"},
                         Bad{"int8+zstd+ef", "right after"}, Bad{"fp4+ef+ef", "once"},
                         Bad{"int8:block", "key=value"}, Bad{"int8+", "unknown stage"},
                         Bad{"+zstd", "unknown codec"}}) {
        INFO(b.spec);
        REQUIRE_THROWS_AS(make_codec(b.spec), arch::Error);
        REQUIRE_THROWS_WITH(make_codec(b.spec), Catch::Contains(b.says));
    }
}

TEST_CASE("a blob's memory given back through the recycler is where the next encode writes, with the same bytes", "[codec]") {
    // A round's buffers are allocated once: the update or Δ a round sent gives its pages back, and the
    // next round's blob is written in them (no fresh pages for the kernel to clear), bit for bit what a
    // codec with nothing given back makes; with or without zstd, with or without error feedback.
    for (const std::string spec : {"int8:block=256+zstd:1", "int8:block=64", "fp4+ef+zstd:1", "fp4+ef"}) {
        INFO(spec);
        auto codec = make_codec(spec), plain = make_codec(spec);
        const auto recycle = codec->recycler();
        REQUIRE(recycle);
        for (std::uint32_t round = 0; round < 3; ++round) {
            const std::vector<float> x = gaussian(20000, 40 + round);
            std::vector<std::byte> blob = codec->encode(x);
            CHECK(blob == plain->encode(x));
            const std::byte* memory = blob.data();
            recycle(std::move(blob));
            const std::vector<float> next = gaussian(20000, 50 + round);
            std::vector<std::byte> again = codec->encode(next);
            CHECK(again.data() == memory);  // the same pages
            CHECK(again == plain->encode(next));
            recycle(std::move(again));
        }
    }
    // A recycler outlives its codec: giving memory back then frees it.
    auto gone = make_codec("int8");
    const auto recycle = gone->recycler();
    gone.reset();
    recycle(std::vector<std::byte>(1000));
}
