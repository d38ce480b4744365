// bench/bench_codecs.cpp: compression ratio, relative L2 error and encode/decode GB/s (of fp32 input)
// of each codec on 64M floats, on 1 and 2 threads, beside memcpy GB/s measured in the same run.
// Data: (a) Gaussian N(0,1), seeded; (b) --pseudo-grad FILE, raw little-endian float32 (a real
// pseudo-gradient). Prints a table, or one JSON object per row with --json. Times are best of --reps.
//   bench_codecs [--n N] [--threads 1,2] [--reps R] [--codecs a,b,...] [--pseudo-grad FILE] [--json]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_cli.h"
#include "compression/codec.h"
#include "core/error.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace cz = arch::compression;

struct Options {
    std::size_t n = std::size_t{64} << 20;
    std::vector<int> threads = {1, 2};
    int reps = 2;
    bool json = false;
    std::string pseudo_grad;
    std::vector<std::string> codecs = {"fp32",          "fp16",       "bf16",       "int8",
                                       "int8+zstd",     "uint8",      "uint8+zstd", "int4",
                                       "int4+zstd",     "fp4",        "fp4+zstd",   "topk:frac=0.01",
                                       "topk:frac=0.01+zstd", "sign", "int8+ef+zstd"};
};

struct Row {
    std::string codec, data;
    int threads;
    double ratio, rel_l2, encode_gbps, decode_gbps;
};

// The flags, each bound to its field of o (whose initial values are the defaults --help shows).
void add_options(CLI::App& app, Options& o) {
    app.add_option("--n", o.n, "floats per data set (the pseudo-gradient is cut to this many)");
    app.add_option("--threads", o.threads, "OpenMP thread counts to time, comma-separated")
        ->delimiter(',')
        ->check(arch::bench::at_least_one());
    app.add_option("--reps", o.reps, "repetitions per timing; the best is kept")->check(arch::bench::at_least_one());
    app.add_option("--codecs", o.codecs, "codec specs to time, comma-separated")->delimiter(',');
    app.add_option("--pseudo-grad", o.pseudo_grad,
                   "raw little-endian float32 file (make_pseudo_grad) as a second data set");
    app.add_flag("--json", o.json, "one JSON object per row instead of the table");
}

std::vector<float> gaussian(std::size_t n) {
    std::vector<float> x(n);
    const std::size_t chunks = 64;
#pragma omp parallel for schedule(static)
    for (std::size_t c = 0; c < chunks; ++c) {
        std::mt19937 rng(1234 + c);
        std::normal_distribution<float> d(0.0f, 1.0f);
        for (std::size_t i = c * n / chunks; i < (c + 1) * n / chunks; ++i) x[i] = d(rng);
    }
    return x;
}

std::vector<float> read_floats(const std::string& path, std::size_t max_n) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) throw arch::Error("bench_codecs: cannot open pseudo-gradient file '" + path + "'");
    const auto bytes = static_cast<std::size_t>(f.tellg());
    if (bytes % 4 != 0) {
        throw arch::Error("bench_codecs: '" + path + "' holds " + std::to_string(bytes) +
                          " bytes, not a whole number of float32");
    }
    const std::size_t n = std::min(bytes / 4, max_n);
    std::vector<float> x(n);
    f.seekg(0);
    f.read(reinterpret_cast<char*>(x.data()), static_cast<std::streamsize>(n * 4));
    return x;
}

template <class F>
double best_seconds(int reps, F&& f) {
    double best = 1e300;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = Clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return best;
}

double memcpy_gbps(std::size_t n, int reps) {
    std::vector<float> a(n, 1.0f), b(n, 0.0f);
    const double s = best_seconds(reps, [&] {
        const std::size_t chunks = 64;
#pragma omp parallel for schedule(static)
        for (std::size_t c = 0; c < chunks; ++c) {
            const std::size_t lo = c * n / chunks, hi = (c + 1) * n / chunks;
            std::memcpy(b.data() + lo, a.data() + lo, (hi - lo) * 4);
        }
    });
    return 4.0 * n / s / 1e9;
}

double rel_l2(const std::vector<float>& x, const std::vector<float>& y) {
    double num = 0, den = 0;
#pragma omp parallel for reduction(+ : num, den) schedule(static)
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double d = double(x[i]) - y[i];
        num += d * d;
        den += double(x[i]) * x[i];
    }
    return den > 0 ? std::sqrt(num / den) : 0.0;
}

Row measure(const std::string& spec, const std::string& data, int threads,
            const std::vector<float>& x, std::vector<float>& y, int reps) {
    auto codec = cz::make_codec(spec);
    std::vector<std::byte> bytes;
    // Error feedback keeps state: a fresh stream per repetition keeps the rounds comparable.
    std::uint64_t stream = 0;
    const double enc = best_seconds(reps, [&] {
        codec->reset(stream);
        bytes = codec->encode(x, stream);
    });
    const double dec = best_seconds(reps, [&] { cz::decode(bytes, y); });
    const double in_bytes = 4.0 * x.size();
    return {spec, data, threads, in_bytes / double(bytes.size()), rel_l2(x, y), in_bytes / enc / 1e9,
            in_bytes / dec / 1e9};
}

void print(const Row& r, bool json) {
    if (json) {
        arch::bench::print_row({{"codec", r.codec},
                                {"data", r.data},
                                {"threads", r.threads},
                                {"ratio", arch::bench::rounded(r.ratio, 4)},
                                {"rel_l2_error", r.rel_l2},
                                {"encode_gbps", arch::bench::rounded(r.encode_gbps, 3)},
                                {"decode_gbps", arch::bench::rounded(r.decode_gbps, 3)}});
    } else {
        std::printf("%-22s %-12s %7d %8.2f %12.3e %11.2f %11.2f\n", r.codec.c_str(), r.data.c_str(),
                    r.threads, r.ratio, r.rel_l2, r.encode_gbps, r.decode_gbps);
        std::fflush(stdout);
    }
}

void run(const Options& o) {
    std::vector<std::pair<std::string, std::vector<float>>> sets;
    sets.emplace_back("gaussian", gaussian(o.n));
    if (!o.pseudo_grad.empty()) sets.emplace_back("pseudo-grad", read_floats(o.pseudo_grad, o.n));
    for (const auto& c : o.codecs) cz::make_codec(c);  // reject bad specs before the long run
    if (!o.json) {
        std::printf("bench_codecs: %zu floats (%.0f MiB fp32), best of %d; GB/s of fp32 input\n",
                    o.n, 4.0 * o.n / (1 << 20), o.reps);
        std::printf("%-22s %-12s %7s %8s %12s %11s %11s\n", "codec", "data", "threads", "ratio",
                    "rel_l2_error", "encode_GB/s", "decode_GB/s");
    }
    for (int t : o.threads) {
        omp_set_num_threads(t);
        const double mc = memcpy_gbps(o.n, o.reps);
        print({"memcpy", "-", t, 1.0, 0.0, mc, mc}, o.json);
        for (const auto& [name, x] : sets) {
            std::vector<float> y(x.size());
            for (const auto& spec : o.codecs) print(measure(spec, name, t, x, y, o.reps), o.json);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_codecs: ratio, relative L2 error and encode/decode GB/s of each codec, beside memcpy"};
    app.option_defaults()->always_capture_default();
    Options o;
    add_options(app, o);
    return arch::bench::run_main(app, argc, argv, [&] { run(o); });
}
