// tests/cuda/test_cuda_peer_run.cpp: a DiLoCo run whose island is a ZeRO-3 island of GPUs: a real Host
// and a real Peer (peers/host.h, peers/peer.h) in one process over a LocalNet
// (tests/peers/local_cluster.h), the peer training on 2 GPUs under ZeRO-3 (1 where the machine has
// one). Every round the peer encodes its pseudo-gradient per shard on the GPUs (it says so in its
// log), the host's outer Nesterov step is applied on both sides, and the peer's θ is bit-identical
// to the host's after every round. Under the emulator the CPU collective stands in for NCCL
// (tests/cuda/emulator/nccl_host.cpp), as in test_cuda_island. A peer whose island cannot be built
// on its machine (a GPU it does not have) stops with that reason instead of waiting in the run.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compression/codec.h"
#include "core/param_layout.h"
#include "tests/cuda/island_fixture.h"
#include "tests/peers/local_cluster.h"
#include "tests/peers/run_fixture.h"

using namespace arch;
using namespace arch::test;

// Built only where islands of GPUs can be made (tests/cuda/CMakeLists.txt: NCCL, or the emulator).
static_assert(ARCH_TEST_GPU_ISLANDS, "test_cuda_peer_run needs islands of several GPUs");

TEST_CASE("a DiLoCo peer whose island is a ZeRO-3 island of GPUs: Δ encoded per shard, θ the host's every round", "[cuda][island][zero3]") {
    const int rounds = 3, gpus = cuda_test::usable_gpus() >= 2 ? 2 : 1;
    const std::string codec = "int8:block=64";
    Cluster c(1, rounds, "mode = \"sync\"", codec, 300.0);
    c.add_peer("gpus", 1.0, {}, [&](PeerOptions& o) {
        o.device = "cuda:0";
        o.devices = gpus;
        o.parallel = Parallel::zero3;
        o.device_options.attention = "unfused";  // the run's head size, 16, is below the fused kernel's 32
    });
    const bool done = c.run(120);
    const std::string log = c.log("gpus");
    INFO(c.all_logs());
    REQUIRE(done);
    // int8's bytes depend on the model's size only.
    const ModelConfig model = run_model_config(c.config(), 0);
    const std::size_t bytes =
        compression::make_codec(codec)->encode(std::vector<float>(ParamLayout(model).num_params(), 0.5f)).size();
    // An island of one GPU is one model (no shards): Δ is encoded on that GPU as a whole.
    const std::string where = gpus >= 2 ? "per shard on " + std::to_string(gpus) + " GPUs" : "on the GPU";
    for (int r = 0; r < rounds; ++r) {
        INFO("round " << r);
        CHECK(first_event(c.events("gpus"), {.kind = "sent", .round = r}).bytes == static_cast<int64_t>(bytes));
        CHECK(count(log, "round " + std::to_string(r) + " sent pseudo-gradient: " + std::to_string(bytes) +
                             " bytes, encoded " + where) == 1);  // where it tells its user the Δ was encoded
        CHECK(c.count("gpus", {.kind = "round_applied", .round = r, .islands = 1}) == 1);
    }
    CHECK(c.count("gpus", {.kind = "theta_differs"}) == 0);
    check_in_sync(c, 1);
}

TEST_CASE("a peer whose island cannot be built on its machine stops with the reason, instead of waiting in the run", "[cuda][island]") {
    Cluster c(1, 1, "mode = \"sync\"", "int8:block=64", 30.0);
    const std::string missing = "cuda:" + std::to_string(arch::cuda::device_count());  // one past the last GPU
    c.add_peer("no-such-gpu", 1.0, {}, [&](PeerOptions& o) {
        o.device = missing;
        o.device_options.attention = "unfused";
    });
    CHECK_FALSE(c.run(10));  // the host waits for an island within its deadlines; the peer does not
    const std::string log = c.log("no-such-gpu");
    INFO(c.all_logs());
    CHECK(count(log, "PEER THREW: the island could not be started on 1 x " + missing + ": cuda: device") == 1);
    CHECK(c.count("no-such-gpu", {.kind = "rejected"}) == 0);
}
