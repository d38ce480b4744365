// tests/island/test_nccl_collective.cpp: the NCCL Collective on this machine's GPUs: every op on a world
// of 1 (one GPU) and of all GPUs (one thread each), uneven sizes, results equal to the CPU rank-order
// sum within fp32 rounding and identical on every rank. Without a GPU it prints "SKIPPED: <reason>"
// and exits 77, which ctest reports as skipped (never as passed).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/nccl_collective.h"
#include "tests/island/run_ranks.h"

using namespace arch;

namespace {

std::vector<float> input(int rank, std::size_t n) {
    Rng rng(1000 + static_cast<uint64_t>(rank));
    std::vector<float> x(n);
    for (auto& v : x) v = rng.normal();
    return x;
}

// A device buffer on GPU `device` holding host, freed at the end of the scope.
struct DeviceBuffer {
    float* ptr = nullptr;
    std::size_t n;
    DeviceBuffer(int device, const std::vector<float>& host, std::size_t size) : n(size) {
        cudaSetDevice(device);
        REQUIRE(cudaMalloc(&ptr, std::max<std::size_t>(n, 1) * sizeof(float)) == cudaSuccess);
        cudaMemset(ptr, 0, std::max<std::size_t>(n, 1) * sizeof(float));
        if (!host.empty()) cudaMemcpy(ptr, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
    }
    ~DeviceBuffer() { cudaFree(ptr); }
    std::vector<float> get(int device) const {
        std::vector<float> out(n);
        cudaSetDevice(device);
        if (n > 0) cudaMemcpy(out.data(), ptr, n * sizeof(float), cudaMemcpyDeviceToHost);
        return out;
    }
};

std::vector<std::vector<int>> worlds() {
    const int n = cuda::device_count();
    std::vector<std::vector<int>> w{{0}};
    if (n > 1) {
        std::vector<int> all(n);
        std::iota(all.begin(), all.end(), 0);
        w.push_back(all);
    }
    return w;
}

void check_close(const std::vector<float>& got, const std::vector<float>& expected, int world) {
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        REQUIRE(std::fabs(got[i] - expected[i]) <= 1e-6f * world * (1.0f + std::fabs(expected[i])));
}

}  // namespace

TEST_CASE("NCCL all_reduce, reduce_scatter, all_gather, broadcast, barrier") {
    for (const auto& devices : worlds()) {
        const int N = static_cast<int>(devices.size());
        auto comms = make_nccl_collectives(devices);
        for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1001}, std::size_t{1} << 20}) {
            INFO("world " << N << " n " << n);
            std::vector<float> sum = input(0, n * N);
            for (int q = 1; q < N; ++q) {
                const auto x = input(q, n * N);
                for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += x[i];
            }
            std::vector<std::vector<float>> reduced(N), scattered(N), gathered(N), broadcasted(N);
            run_ranks(N, [&](int r) {
                const int dev = devices[r];
                DeviceBuffer a(dev, input(r, n * N), n * N);
                comms[r]->all_reduce_sum(a.ptr, n * N);
                reduced[r] = a.get(dev);
                DeviceBuffer s(dev, input(r, n * N), n * N), out(dev, {}, n);
                comms[r]->reduce_scatter_sum(out.ptr, s.ptr, n);
                scattered[r] = out.get(dev);
                DeviceBuffer mine(dev, input(r, n), n), all(dev, {}, n * N);
                comms[r]->all_gather(all.ptr, mine.ptr, n);
                gathered[r] = all.get(dev);
                DeviceBuffer b(dev, input(r, n), n);
                comms[r]->broadcast(b.ptr, n, N - 1);
                broadcasted[r] = b.get(dev);
                comms[r]->barrier();
            });
            for (int r = 0; r < N; ++r) {
                check_close(reduced[r], sum, N);
                CHECK(reduced[r] == reduced[0]);
                check_close(scattered[r], std::vector<float>(sum.begin() + r * n, sum.begin() + (r + 1) * n), N);
                std::vector<float> cat;
                for (int q = 0; q < N; ++q) {
                    const auto x = input(q, n);
                    cat.insert(cat.end(), x.begin(), x.end());
                }
                CHECK(gathered[r] == cat);
                CHECK(broadcasted[r] == input(N - 1, n));
            }
        }
        CHECK((comms[0]->bytes_sent() > 0 || N == 1));
    }
}

TEST_CASE("NCCL: an aborted collective throws instead of hanging; bad GPUs are refused") {
    auto comms = make_nccl_collectives({0});
    comms[0]->abort();
    CHECK_THROWS_AS(comms[0]->barrier(), Error);
    CHECK_THROWS_AS(make_nccl_collectives({cuda::device_count()}), Error);
}

int main(int argc, char** argv) {
    const std::string why = cuda::no_device_reason();
    if (!why.empty()) {
        std::printf("SKIPPED: %s; the NCCL collective tests need a GPU\n", why.c_str());
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
