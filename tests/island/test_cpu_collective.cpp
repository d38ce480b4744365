// tests/island/test_cpu_collective.cpp: every CPU collective op for world sizes 1..5 and sizes that do
// not divide by the world (0, 1, 7, 1001), in place and not; results bit-equal to a sum in rank order
// on every rank and from run to run; mismatched calls and abort fail every rank instead of hanging.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>

#include "core/error.h"
#include "core/rng.h"
#include "kernels/cpu/cpu_collective.h"
#include "tests/island/run_ranks.h"

using namespace arch;

namespace {

// A rank's input: values of mixed magnitude, so the order of the sum shows in the low bits.
std::vector<float> input(int rank, std::size_t n, uint64_t seed) {
    Rng rng(seed * 131 + static_cast<uint64_t>(rank));
    std::vector<float> x(n);
    for (auto& v : x) v = rng.normal() * (rng.uniform() < 0.5f ? 1e-3f : 1e3f);
    return x;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

const int kWorlds[] = {1, 2, 3, 4, 5};
const std::size_t kSizes[] = {0, 1, 7, 1001};

}  // namespace

TEST_CASE("all_reduce_sum equals the rank-order sum on every rank, bit for bit") {
    for (int N : kWorlds)
        for (std::size_t n : kSizes) {
            std::vector<float> expected = input(0, n, 1);
            for (int q = 1; q < N; ++q) {
                const auto x = input(q, n, 1);
                for (std::size_t i = 0; i < n; ++i) expected[i] += x[i];
            }
            auto comms = make_cpu_collectives(N);
            std::vector<std::vector<float>> out(N);
            for (int repeat = 0; repeat < 2; ++repeat) {  // the same again (the group is reusable)
                run_ranks(N, [&](int r) {
                    out[r] = input(r, n, 1);
                    comms[r]->all_reduce_sum(out[r].data(), n);
                });
                for (int r = 0; r < N; ++r) {
                    INFO("world " << N << " n " << n << " rank " << r);
                    CHECK(bit_equal(out[r], expected));
                }
            }
        }
}

TEST_CASE("reduce_scatter_sum gives each rank its slot of the sum, also in place") {
    for (int N : kWorlds)
        for (std::size_t count : kSizes)
            for (bool in_place : {false, true}) {
                auto comms = make_cpu_collectives(N);
                std::vector<std::vector<float>> send(N), recv(N);
                run_ranks(N, [&](int r) {
                    send[r] = input(r, count * N, 2);
                    std::vector<float> buf = send[r], out(count, -1.0f);
                    float* dst = in_place ? buf.data() + static_cast<std::size_t>(r) * count : out.data();
                    comms[r]->reduce_scatter_sum(dst, buf.data(), count);
                    recv[r].assign(dst, dst + count);
                });
                for (int r = 0; r < N; ++r) {
                    std::vector<float> expected(send[0].begin() + r * count, send[0].begin() + (r + 1) * count);
                    for (int q = 1; q < N; ++q)
                        for (std::size_t i = 0; i < count; ++i) expected[i] += send[q][r * count + i];
                    INFO("world " << N << " count " << count << " rank " << r << " in place " << in_place);
                    CHECK(bit_equal(recv[r], expected));
                }
            }
}

TEST_CASE("all_gather concatenates in rank order, also in place") {
    for (int N : kWorlds)
        for (std::size_t count : kSizes)
            for (bool in_place : {false, true}) {
                auto comms = make_cpu_collectives(N);
                std::vector<std::vector<float>> recv(N);
                run_ranks(N, [&](int r) {
                    const auto mine = input(r, count, 3);
                    recv[r].assign(count * N, -1.0f);
                    if (in_place) {
                        std::copy(mine.begin(), mine.end(), recv[r].begin() + r * count);
                        comms[r]->all_gather(recv[r].data(), recv[r].data() + r * count, count);
                    } else {
                        comms[r]->all_gather(recv[r].data(), mine.data(), count);
                    }
                });
                std::vector<float> expected;
                for (int q = 0; q < N; ++q) {
                    const auto x = input(q, count, 3);
                    expected.insert(expected.end(), x.begin(), x.end());
                }
                for (int r = 0; r < N; ++r) {
                    INFO("world " << N << " count " << count << " rank " << r);
                    CHECK(bit_equal(recv[r], expected));
                }
            }
}

TEST_CASE("broadcast copies the root's buffer to every rank, for every root") {
    for (int N : kWorlds)
        for (std::size_t n : kSizes)
            for (int root = 0; root < N; ++root) {
                auto comms = make_cpu_collectives(N);
                std::vector<std::vector<float>> buf(N);
                run_ranks(N, [&](int r) {
                    buf[r] = input(r, n, 4);
                    comms[r]->broadcast(buf[r].data(), n, root);
                });
                for (int r = 0; r < N; ++r) CHECK(bit_equal(buf[r], input(root, n, 4)));
            }
    auto comms = make_cpu_collectives(2);
    float x = 0;
    CHECK_THROWS_AS(comms[0]->broadcast(&x, 1, 2), Error);
}

TEST_CASE("barrier: nobody leaves before everyone arrived, many times over") {
    for (int N : kWorlds) {
        auto comms = make_cpu_collectives(N);
        std::atomic<int> arrived{0};
        std::atomic<int> early{0};
        run_ranks(N, [&](int r) {
            for (int round = 1; round <= 50; ++round) {
                arrived.fetch_add(1);
                comms[r]->barrier();
                if (arrived.load() < round * N) early.fetch_add(1);
                comms[r]->barrier();  // keeps round + 1's increments after every check of round
            }
        });
        CHECK(early.load() == 0);
    }
}

TEST_CASE("a mismatched call fails every rank with a message, it does not hang") {
    auto comms = make_cpu_collectives(2);
    std::vector<float> a(10), b(11);
    std::atomic<int> failures{0};
    std::string message;
    run_ranks(2, [&](int r) {
        try {
            comms[r]->all_reduce_sum(r == 0 ? a.data() : b.data(), r == 0 ? 10 : 11);
        } catch (const Error& e) {
            if (r == 0) message = e.what();
            failures.fetch_add(1);
        }
    });
    CHECK(failures.load() == 2);
    CHECK(message.find("mismatch") != std::string::npos);
    // The group stays failed: later ops throw at once instead of waiting.
    CHECK_THROWS_AS(comms[0]->barrier(), Error);
}

TEST_CASE("abort wakes a rank blocked in a collective") {
    auto comms = make_cpu_collectives(3);
    std::atomic<int> failures{0};
    run_ranks(3, [&](int r) {
        try {
            if (r == 2) comms[r]->abort();  // never joins the barrier
            else comms[r]->barrier();
        } catch (const Error&) {
            failures.fetch_add(1);
        }
    });
    CHECK(failures.load() == 2);
}

TEST_CASE("bytes_sent counts a ring algorithm's traffic") {
    auto comms = make_cpu_collectives(4);
    run_ranks(4, [&](int r) {
        std::vector<float> buf(400), small(100);
        comms[r]->all_reduce_sum(buf.data(), 400);          // 2*3/4*400 floats
        comms[r]->reduce_scatter_sum(small.data(), buf.data(), 100);  // 3*100
        comms[r]->all_gather(buf.data(), small.data(), 100);          // 3*100
        comms[r]->broadcast(small.data(), 100, 1);                    // 100 from rank 1
    });
    CHECK(comms[0]->bytes_sent() == (600 + 300 + 300) * 4);
    CHECK(comms[1]->bytes_sent() == (600 + 300 + 300 + 100) * 4);
    CHECK(make_cpu_collectives(1)[0]->world_size() == 1);
    CHECK_THROWS_AS(make_cpu_collectives(0), Error);
}
