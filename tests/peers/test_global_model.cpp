// tests/peers/test_global_model.cpp: an outer step that would make θ non-finite (a finite aggregate whose
// step overflows fp32) is refused with θ, the momentum and the hash unchanged, and the next good
// update applies exactly as if the bad one had never come; an update is the change of θ (in fp32 the
// optimizer's own step, bit for bit), which a replica with no optimizer follows exactly; the update
// of Δs held encoded and aggregated slice by slice is, bit for bit, the update of the same Δs decoded
// whole, for the mean, the median and the trimmed mean, with a screen's clip on one of them; the
// replica state a host ships is θ where it lies, and a replica takes it over where it arrived.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "compression/held_payload.h"
#include "core/error.h"
#include "outer_optimizer/outer_optimizer.h"
#include "peers/diloco/global_model.h"

using arch::diloco::GlobalModel;
using arch::diloco::OuterConfig;

namespace {
std::vector<std::byte> make_update(GlobalModel& model, const std::vector<float>& delta, int fragment = 0) {
    const arch::outer::WeightedDelta one{delta, 1.0};
    return model.make_update(std::span(&one, 1), fragment);
}
}  // namespace

TEST_CASE("an outer step that overflows θ is refused; θ and the optimizer stay as they were") {
    OuterConfig config;  // nesterov, lr 0.7, momentum 0.9, fp32 down codec
    GlobalModel model(std::vector<float>(64, 1.0f), config);
    GlobalModel twin(std::vector<float>(64, 1.0f), config);
    const std::vector<float> good(64, 0.01f);
    model.apply_update(make_update(model, good));
    twin.apply_update(make_update(twin, good));
    const std::string before = model.hash();
    const std::vector<std::byte> state = model.save_state();

    std::vector<float> huge(64, 0.0f);
    huge[3] = -3.0e38f;  // finite, but θ - lr·(Δ + μ·m) leaves fp32
    CHECK_THROWS_WITH(make_update(model, huge), Catch::Contains("non-finite"));
    CHECK(model.hash() == before);
    CHECK(model.save_state() == state);  // θ, the momentum and the step count
    for (float x : model.theta()) REQUIRE(std::isfinite(x));

    model.apply_update(make_update(model, good));
    twin.apply_update(make_update(twin, good));
    CHECK(model.hash() == twin.hash());  // momentum untouched by the refused step

    // A replica refuses a change that would make its θ non-finite (a host is a stranger too), unchanged.
    GlobalModel replica(std::vector<float>(64, 1.0e38f), config, {}, GlobalModel::Holder::replica);
    std::vector<float> change(64, 0.0f);
    change[7] = 3.0e38f;  // 1e38 + 3e38 leaves fp32
    const std::string replica_before = replica.hash();
    CHECK_THROWS_WITH(replica.apply_update(arch::compression::make_codec("fp32")->encode(change)), Catch::Contains("non-finite"));
    CHECK(replica.hash() == replica_before);
    CHECK(replica.updates_applied() == 0);
}

TEST_CASE("the check before the step holds for every outer optimizer and for a fragment of θ") {
    for (const auto& [name, optimizer] : arch::diloco::outer_optimizer_names()) {
        for (int fragments : {1, 2}) {
            CAPTURE(name, fragments);
            OuterConfig config;
            config.optimizer = optimizer;
            config.period = 2;
            GlobalModel model(std::vector<float>(64, 3.0e38f), config, arch::diloco::make_fragments(4, 16, 64, fragments));
            GlobalModel twin(std::vector<float>(64, 3.0e38f), config, arch::diloco::make_fragments(4, 16, 64, fragments));
            const std::size_t n = model.fragment(fragments - 1).size;
            const std::vector<float> good(n, 0.01f);
            std::vector<float> huge(n, 0.0f);
            huge[5] = -3.4e38f;  // from θ = 3e38 every optimizer steps past FLT_MAX
            for (int round = 0; round < 3; ++round) {  // delayed-nesterov: a plain step, then a momentum step
                const std::vector<std::byte> state = model.save_state();
                CHECK_THROWS_WITH(make_update(model, huge, fragments - 1), Catch::Contains("non-finite"));
                CHECK(model.save_state() == state);
                model.apply_update(make_update(model, good, fragments - 1), fragments - 1);
                twin.apply_update(make_update(twin, good, fragments - 1), fragments - 1);
                CHECK(model.hash() == twin.hash());
                CHECK(model.save_state() == twin.save_state());
            }
            CHECK(model.state_bytes() == model.save_state().size());
        }
    }
}

TEST_CASE("an update is the change of θ: in fp32 the optimizer's own step, bit for bit; a replica follows any codec") {
    const std::size_t n = 3'000'001;  // three slices and a short block
    std::mt19937 rng(5);
    std::normal_distribution<float> d(0.0f, 0.02f);
    std::vector<float> theta0(n);
    for (float& x : theta0) x = d(rng);
    for (const char* down : {"fp32", "int8:block=256+zstd:1", "fp4+zstd:1"}) {
        INFO(down);
        OuterConfig config;
        config.down_codec = down;
        GlobalModel host(theta0, config);
        GlobalModel replica(theta0, config, {}, GlobalModel::Holder::replica);
        std::vector<float> reference = theta0;  // the optimizer stepping θ itself
        arch::outer::Nesterov nesterov(n, {config.lr, config.momentum});
        for (int round = 0; round < 3; ++round) {
            std::vector<float> delta(n);
            for (float& x : delta) x = d(rng);
            const std::vector<std::byte> update = make_update(host, delta);
            host.apply_update(update);
            replica.apply_update(update);
            nesterov.step(reference, delta);
            CHECK(replica.hash() == host.hash());
            CHECK(replica.updates_applied() == static_cast<uint64_t>(round + 1));
        }
        if (std::string(down) == "fp32")
            CHECK(arch::diloco::hash_floats(reference) == host.hash());
        else
            CHECK(arch::diloco::hash_floats(reference) != host.hash());  // the codec's rounding
    }
    // Where int8's rounding of the change could carry θ past fp32's range, the change goes out in fp32.
    OuterConfig config;
    config.down_codec = "int8:block=256";
    GlobalModel host(std::vector<float>(512, 1.6e38f), config);
    std::vector<float> delta(512, 0.0f);
    delta[0] = 1.0e37f;
    const std::vector<std::byte> update = make_update(host, delta);
    CHECK(arch::compression::open_payload(update, 512).info.codec == arch::compression::CodecId::fp32);
    host.apply_update(update);
    for (float x : host.theta()) REQUIRE(std::isfinite(x));
}

TEST_CASE("Δs held encoded and aggregated slice by slice give the update of the Δs decoded whole, bit for bit") {
    // Over two slices of a million values and a short last block; a codec per island, as a host may
    // receive them (each island sends what its own codec makes).
    const std::size_t n = 2'500'003;
    const char* codecs[] = {"fp4:block=32+zstd:1", "int8:block=256", "fp32", "topk:frac=0.01", "uint8+zstd:1"};
    std::mt19937 rng(11);
    std::vector<std::vector<std::byte>> encoded;
    for (std::size_t i = 0; i < 5; ++i) {
        std::normal_distribution<float> d(0.0f, 0.01f * static_cast<float>(i + 1));
        std::vector<float> delta(n);
        for (float& x : delta) x = d(rng);
        encoded.push_back(arch::compression::make_codec(codecs[i])->encode(delta));
    }
    const double tokens[] = {512, 256, 512, 384, 128};
    const float clip = 0.37f;  // island 3's Δ clipped by a screen
    for (const char* aggregator : {"mean", "median", "trimmed:trim=1"}) {
        INFO(aggregator);
        OuterConfig config;
        config.aggregator = aggregator;
        config.down_codec = "int8:block=256+zstd:1";
        GlobalModel whole(std::vector<float>(n, 0.5f), config);
        GlobalModel sliced(std::vector<float>(n, 0.5f), config);
        REQUIRE(sliced.aggregates_per_coordinate());

        std::vector<std::vector<float>> decoded(encoded.size(), std::vector<float>(n));
        std::vector<arch::outer::WeightedDelta> cs;
        std::vector<std::unique_ptr<arch::compression::HeldPayload>> payloads;
        std::vector<GlobalModel::HeldDelta> held;
        for (std::size_t i = 0; i < encoded.size(); ++i) {
            arch::compression::decode(encoded[i], decoded[i]);
            const float scale = i == 3 ? clip : 1.0f;
            for (float& x : decoded[i]) x *= scale;  // as NormScreen::screen clips
            cs.push_back({decoded[i], tokens[i]});
            payloads.push_back(std::make_unique<arch::compression::HeldPayload>(encoded[i], n));
            held.push_back({payloads.back().get(), tokens[i], scale});
        }
        const std::vector<std::byte> want = whole.make_update(cs);
        const std::vector<std::byte> got = sliced.make_update(held);
        CHECK(got == want);
        whole.apply_update(want);
        sliced.apply_update(got);
        CHECK(sliced.hash() == whole.hash());
    }
    OuterConfig clipping;
    clipping.aggregator = "clip";  // norms of whole Δs: not by slices
    GlobalModel model(std::vector<float>(n, 0.5f), clipping);
    CHECK_FALSE(model.aggregates_per_coordinate());
    const arch::compression::HeldPayload one(encoded[0], n);
    std::vector<GlobalModel::HeldDelta> held = {{&one, 1.0, 1.0f}};
    CHECK_THROWS_AS(model.make_update(held), arch::Error);
}

TEST_CASE("the aggregation pass over held Δs gives the same aggregate, norms and clamp counts on any number of threads") {
    // Three slices of a million values, each on a thread of its own or all on one: the aggregate bit for
    // bit, each Δ's sum of squares as l2_norm gives it for the Δ decoded whole, and the clamp's count.
    const std::size_t n = 2'500'003;
    std::mt19937 rng(12);
    std::vector<std::vector<std::byte>> encoded;
    std::vector<std::vector<float>> decoded;
    for (std::size_t i = 0; i < 3; ++i) {
        std::normal_distribution<float> d(0.0f, 0.01f * static_cast<float>(i + 1));
        std::vector<float> delta(n);
        for (float& x : delta) x = d(rng);
        encoded.push_back(arch::compression::make_codec(i == 0 ? "fp4+zstd:1" : "int8:block=256")->encode(delta));
        decoded.emplace_back(n);
        arch::compression::decode(encoded.back(), decoded.back());
    }
    std::vector<std::unique_ptr<arch::compression::HeldPayload>> payloads;
    std::vector<GlobalModel::HeldDelta> held;
    const float limit = 0.02f;  // island 1's values beyond it are clamped
    for (std::size_t i = 0; i < encoded.size(); ++i) {
        payloads.push_back(std::make_unique<arch::compression::HeldPayload>(encoded[i], n));
        held.push_back({payloads.back().get(), 100.0 * static_cast<double>(i + 1), 1.0f, i == 1 ? limit : 0.0f});
    }
    std::vector<std::vector<float>> aggregates;
    for (const int threads : {1, 2, 3}) {
        INFO(threads << " threads");
        const int was = omp_get_max_threads();
        omp_set_num_threads(threads);
        OuterConfig config;
        config.aggregator = "median";
        GlobalModel model(std::vector<float>(n, 0.5f), config);
        std::vector<float> aggregate(n);
        std::vector<GlobalModel::Seen> seen(held.size());
        model.aggregate_held(held, 0, aggregate, seen);
        omp_set_num_threads(was);
        for (std::size_t i = 0; i < held.size(); ++i) {
            const double norm = arch::outer::l2_norm(decoded[i]);
            CHECK(std::sqrt(seen[i].squares.total()) == norm);
            CHECK(seen[i].beyond == (i == 1 ? arch::outer::count_beyond(decoded[i], limit) : 0));
        }
        CHECK(seen[1].beyond > 0);
        aggregates.push_back(std::move(aggregate));
    }
    CHECK(aggregates[1] == aggregates[0]);
    CHECK(aggregates[2] == aggregates[0]);
}

TEST_CASE("a snapshot of θ stays as it was while held: the next change of θ copies it, and only then") {
    OuterConfig config;
    std::vector<float> theta0(1000, 0.5f);
    theta0[7] = 3.0e38f;  // a change of 1e38 there leaves fp32
    GlobalModel host(theta0, config);
    GlobalModel twin(theta0, config);
    const std::vector<float> delta(1000, 0.01f);
    host.apply_update(make_update(host, delta));  // nobody holds θ: changed where it lies
    twin.apply_update(make_update(twin, delta));
    CHECK(host.theta_copies() == 0);

    std::shared_ptr<const arch::FloatStore> held = host.theta_snapshot();
    const float* where = host.theta().data();
    CHECK(held->data() == where);  // no copy to take it
    const std::string at_snapshot = host.hash();
    std::vector<float> overflow(1000, 0.0f);
    overflow[7] = 1.0e38f;
    CHECK_THROWS_WITH(host.apply_update(arch::compression::make_codec("fp32")->encode(overflow)), Catch::Contains("non-finite"));
    CHECK(host.theta_copies() == 0);  // a refused update copies nothing
    host.apply_update(make_update(host, delta));
    twin.apply_update(make_update(twin, delta));
    CHECK(host.theta_copies() == 1);
    CHECK(host.theta().data() != where);
    CHECK(arch::diloco::hash_floats(held->values()) == at_snapshot);  // the reader's θ did not move
    CHECK(host.hash() == twin.hash());                                // and the model's did, as without one

    held.reset();  // let go: the next change is in place again
    where = host.theta().data();
    host.apply_update(make_update(host, delta));
    CHECK(host.theta_copies() == 1);
    CHECK(host.theta().data() == where);

    held = host.theta_snapshot();  // loading a state changes θ too
    const std::string before_load = host.hash();
    twin.apply_update(make_update(twin, delta));
    host.load_state(twin.save_state());
    CHECK(host.theta_copies() == 2);
    CHECK(host.hash() == twin.hash());
    CHECK(arch::diloco::hash_floats(held->values()) == before_load);
}

TEST_CASE("a host's replica state is θ where it lies; a replica takes it where it came, not copied, and follows bit for bit") {
    OuterConfig config;
    std::vector<float> theta0(4099);
    for (std::size_t i = 0; i < theta0.size(); ++i) theta0[i] = std::sin(static_cast<float>(i));
    GlobalModel host(theta0, config);
    const std::vector<float> delta(theta0.size(), 0.01f);
    host.apply_update(make_update(host, delta));

    GlobalModel::ReplicaState pieces = host.replica_state();
    CHECK(pieces.theta_bytes().data() == reinterpret_cast<const std::byte*>(host.theta().data()));  // no copy
    std::vector<std::byte> joined = pieces.head;
    joined.insert(joined.end(), pieces.theta_bytes().begin(), pieces.theta_bytes().end());
    joined.insert(joined.end(), pieces.tail.begin(), pieces.tail.end());
    std::vector<std::byte> whole(host.replica_state_bytes());
    host.save_replica_state(whole);
    CHECK(joined == whole);

    for (const std::size_t at : {std::size_t{16}, std::size_t{3}}) {  // aligned: taken over; not: copied
        GlobalModel replica(arch::FloatStore::zeros(theta0.size()), config, {}, GlobalModel::Holder::replica);
        std::vector<std::byte> blob(at, std::byte{1});
        blob.insert(blob.end(), whole.begin(), whole.end());
        const std::byte* came = blob.data();
        replica.load_replica_state(std::move(blob), at);
        CHECK(replica.hash() == host.hash());
        CHECK((reinterpret_cast<const std::byte*>(replica.theta().data()) == came + at + 8) == (at % 4 == 0));
        const std::vector<std::byte> update = make_update(host, delta);
        host.apply_update(update);
        replica.apply_update(update);
        CHECK(replica.hash() == host.hash());
        host.save_replica_state(whole);
    }

    GlobalModel replica(arch::FloatStore::zeros(theta0.size()), config, {}, GlobalModel::Holder::replica);
    const std::string zeros = replica.hash();
    CHECK(zeros == arch::diloco::hash_floats(std::vector<float>(theta0.size(), 0.0f)));
    std::vector<std::byte> bad = whole;
    const float nan = std::nanf("");
    std::memcpy(bad.data() + 8 + 4 * 1000, &nan, sizeof(nan));
    CHECK_THROWS_WITH(replica.load_replica_state(std::move(bad), 0), Catch::Contains("non-finite"));
    CHECK(replica.hash() == zeros);  // refused whole: θ as it was
}

TEST_CASE("an update added in one pass (its scales bound it) or checked first leaves θ + decode(update), bit for bit") {
    const std::size_t n = 2'500'003;
    std::mt19937 rng(11);
    std::normal_distribution<float> d(0.0f, 0.02f);
    std::vector<float> theta0(n), change(n);
    for (float& x : theta0) x = d(rng);
    for (float& x : change) x = d(rng);
    for (const char* codec : {"int8:block=256+zstd:1", "fp4", "fp32"}) {  // fp32 has no scales: two passes
        INFO(codec);
        GlobalModel replica(theta0, OuterConfig{}, {}, GlobalModel::Holder::replica);
        const std::vector<std::byte> update = arch::compression::make_codec(codec)->encode(change);
        std::vector<float> expected(n), decoded(n);
        arch::compression::decode(update, decoded);
        for (std::size_t i = 0; i < n; ++i) expected[i] = theta0[i] + decoded[i];
        for (int round = 0; round < 2; ++round) {  // the bound of θ known from the last addition, the second time
            replica.apply_update(update);
            CHECK(replica.hash() == arch::diloco::hash_floats(expected));
            for (std::size_t i = 0; i < n; ++i) expected[i] = expected[i] + decoded[i];
        }
    }
    // A scaled update that would carry θ past fp32 is still refused, θ unchanged.
    std::vector<float> big(1024, 1.0f);
    big[5] = 3.0e38f;
    GlobalModel replica(big, OuterConfig{}, {}, GlobalModel::Holder::replica);
    std::vector<float> push(1024, 0.0f);
    push[5] = 1.0e38f;
    const std::string before = replica.hash();
    CHECK_THROWS_WITH(replica.apply_update(arch::compression::make_codec("int8:block=256")->encode(push)), Catch::Contains("non-finite"));
    CHECK(replica.hash() == before);
    // The same with the change held in its zstd frames (a replica's blockwise update: two passes over them).
    CHECK_THROWS_WITH(replica.apply_update(arch::compression::make_codec("int8:block=256+zstd:1")->encode(push)),
                      Catch::Contains("non-finite"));
    CHECK(replica.hash() == before);
}
