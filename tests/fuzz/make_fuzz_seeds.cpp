// tests/fuzz/make_fuzz_seeds.cpp: writes the seed corpora in tests/fuzz/corpus/<target>/ (run from
// the repository root: build-fuzz/bin/make_fuzz_seeds). Seeds are small valid buffers, so the
// fuzzers start from the real formats instead of discovering the header by chance.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "outer_optimizer/outer_optimizer.h"
#include "tests/fuzz/host_steps.h"

namespace {

void write(const std::string& dir, const std::string& name, const std::vector<std::byte>& b) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/" + name, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// fuzz_host: two variant bytes, then steps (host_steps.h). Honest rounds among islands 0-2 finish
// the run; the other seeds add a fourth peer that floods, lies or sends garbage.
void write_host_seeds(const std::string& dir) {
    using fuzz_host::Action;
    using fuzz_host::op;
    namespace v = fuzz_host::variant;
    auto honest_rounds = [](std::vector<uint8_t>& b, int steps) {
        for (int i = 0; i < steps; ++i) b.push_back(op(Action::honest, i % 3));
    };
    auto save = [&](const std::string& name, const std::vector<uint8_t>& b) {
        std::vector<std::byte> out(b.size());
        std::memcpy(out.data(), b.data(), b.size());
        write(dir, name, out);
    };
    std::vector<uint8_t> sync = {0, 0};
    honest_rounds(sync, 30);
    save("sync", sync);
    std::vector<uint8_t> async = {v::async, 0};
    honest_rounds(async, 30);
    save("async", async);
    // Fold stragglers, round deadline past: peer 3 floods hellos and sends garbage, peer 0 a 1e30 pseudo-gradient.
    std::vector<uint8_t> flood = {v::fold | v::round_past | v::with_status, 1};
    honest_rounds(flood, 3);
    for (uint8_t b : {op(Action::burst, 3), uint8_t{12}, op(Action::hello, 3), uint8_t{0}, uint8_t{1}, uint8_t{4}})
        flood.push_back(b);
    for (char ch : std::string("liar")) flood.push_back(static_cast<uint8_t>(ch));
    flood.push_back(0);  // not mangled
    for (uint8_t b : {op(Action::pseudo_grad, 0), uint8_t{3 << 2}, uint8_t{0}, uint8_t{0}, uint8_t{0}})
        flood.push_back(b);
    for (uint8_t b : {op(Action::raw, 3), uint8_t{4}, uint8_t{0}, uint8_t{3}, uint8_t{1}, uint8_t{2}, uint8_t{3}})
        flood.push_back(b);
    honest_rounds(flood, 27);
    save("flood", flood);
    // Join and heartbeat deadlines past: peer 3 asks to join a full run, peer 1 drops out and comes back.
    std::vector<uint8_t> churn = {v::join_past | v::heartbeat_past | v::with_status, 6};
    honest_rounds(churn, 4);
    churn.push_back(op(Action::hello, 3));
    for (uint8_t b : {uint8_t{1 << 2}, uint8_t{1}, uint8_t{0}, uint8_t{0}}) churn.push_back(b);  // no θ, no name
    churn.push_back(op(Action::disconnected, 1));
    honest_rounds(churn, 5);
    churn.push_back(op(Action::connected, 1));
    churn.push_back(op(Action::deliver, 2));
    honest_rounds(churn, 20);
    save("churn", churn);
    // DES-LOC every round (variant byte 1 / 12 = 1): honest islands send moments before each Δ; peer 0
    // also sends moments of one value too many, then a NaN's worth (scale NaN), in round 0.
    std::vector<uint8_t> desloc = {0, 12};
    honest_rounds(desloc, 3);  // the hellos: round 0 starts
    for (uint8_t b : {op(Action::pseudo_grad, 0), uint8_t{0}, uint8_t{0x80 | 1 << 2}, uint8_t{0}, uint8_t{0}})
        desloc.push_back(b);
    for (uint8_t b : {op(Action::pseudo_grad, 0), uint8_t{4 << 2}, uint8_t{0x80}, uint8_t{0}, uint8_t{0}})
        desloc.push_back(b);
    honest_rounds(desloc, 40);
    save("desloc", desloc);
}

}  // namespace

// fuzz_link: steps of an op byte (kind << 2 | peer) and that kind's bytes, in the order fuzz_link.cpp
// reads them. One peer sends a 4 KiB pseudo-gradient whole (its begin with the true digest, then its
// four chunks of 1 KiB in session 1), and again after declaring the same id once more with another
// size; another asks for the host's state (a status) and credits it, then floods it with statuses
// and credits of a million chunks.
void write_link_seeds(const std::string& dir) {
    auto bytes = [](std::initializer_list<uint8_t> b) {
        std::vector<std::byte> out;
        for (uint8_t x : b) out.push_back(static_cast<std::byte>(x));
        return out;
    };
    std::vector<std::byte> whole = bytes({0 << 2 | 0, 0, 1, 0, 0, 1, 0, 1});  // begin: id 1, 4096 bytes, chunks of 1024
    for (uint8_t k = 0; k < 4; ++k)
        for (uint8_t b : {uint8_t{1 << 2 | 0}, uint8_t{0}, uint8_t{0}, k, uint8_t{1}, uint8_t{1}}) whole.push_back(static_cast<std::byte>(b));
    write(dir, "whole_transfer", whole);
    // The same id declared again with another size (and its true digest) while the first is under way:
    // refused, so the first one's chunks complete the first blob.
    std::vector<std::byte> redeclared = bytes({0 << 2 | 0, 0, 1, 0, 0, 1, 0, 1, 0 << 2 | 0, 0, 2, 0, 0, 1, 0, 1});
    for (uint8_t k = 0; k < 4; ++k)
        for (uint8_t b : {uint8_t{1 << 2 | 0}, uint8_t{0}, uint8_t{0}, k, uint8_t{1}, uint8_t{1}}) redeclared.push_back(static_cast<std::byte>(b));
    write(dir, "redeclared", redeclared);
    // status: its id (the state's), 2 chunks, neither held, session 1, a window of 8; then credits of 1.
    std::vector<std::byte> state = bytes({2 << 2 | 1, 1, 2, 0, 0, 1, 8, 0});
    for (int i = 0; i < 4; ++i)
        for (uint8_t b : {uint8_t{3 << 2 | 1}, uint8_t{1}, uint8_t{1}, uint8_t{1}, uint8_t{0}, uint8_t{1}}) state.push_back(static_cast<std::byte>(b));
    write(dir, "state_taken", state);
    std::vector<std::byte> flood;
    for (int i = 0; i < 50; ++i)
        for (uint8_t b : {uint8_t{2 << 2 | 2}, uint8_t{1}, uint8_t{2}, uint8_t{0}, uint8_t{0}, uint8_t{1}, uint8_t{255}, uint8_t{12},
                          uint8_t{3 << 2 | 2}, uint8_t{1}, uint8_t{1}, uint8_t{255}, uint8_t{12}, uint8_t{0}, uint8_t{0}})
            flood.push_back(static_cast<std::byte>(b));
    write(dir, "flood", flood);
}

int main() {
    const std::string root = "tests/fuzz/corpus/";
    const std::vector<float> inputs[] = {
        {}, {0.5f}, {1, -2, 3, -4, 5, -6, 7, -8, 9, 0, 0, 0, 1e-3f, -1e-3f, 2.5f, 100.0f, -0.0f}};
    std::vector<float> big(300);
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = float((i * 37) % 101) / 50.0f - 1.0f;
    const char* codecs[] = {"fp32", "fp16", "bf16", "int8:block=16", "uint8", "int4:block=16",
                            "fp4:block=16", "topk:frac=0.2", "sign:block=16"};
    const char* targets[] = {"fp32", "fp16", "bf16", "int8", "uint8", "int4", "fp4", "topk", "sign"};
    for (int c = 0; c < 9; ++c) {
        const std::string dir = root + "fuzz_decode_" + targets[c];
        int k = 0;
        for (const std::string stage : {"", "+zstd"}) {
            auto codec = arch::compression::make_codec(std::string(codecs[c]) + stage);
            for (const auto& x : inputs) write(dir, "seed" + std::to_string(k++), codec->encode(x));
            write(dir, "seed" + std::to_string(k++), codec->encode(big));
        }
    }
    const std::string specs[] = {"int8:block=256+zstd:1", "fp4+ef+zstd", "topk:frac=0.01+ef",
                                 "sign:block=64", "uint8+zstd:3", "median", "trimmed:trim=2",
                                 "centered_clip:tau=2,iters=3,history=1", "clip:tau=1.5"};
    int k = 0;
    for (const auto& s : specs) {
        std::vector<std::byte> b(s.size());
        std::memcpy(b.data(), s.data(), s.size());
        write(root + "fuzz_spec", "seed" + std::to_string(k++), b);
    }
    arch::outer::Nesterov n(16);
    arch::outer::DelayedNesterov d(16, {0.7f, 0.9f, 4, 0.0f});
    std::vector<float> p(16, 1.0f), g(16, 0.25f);
    n.step(p, g);
    d.step(p, g);
    write(root + "fuzz_outer_state", "nesterov", n.save_state());
    write(root + "fuzz_outer_state", "delayed", d.save_state());
    write_host_seeds(root + "fuzz_host");
    write_link_seeds(root + "fuzz_link");
    std::printf("make_fuzz_seeds: wrote %s\n", root.c_str());
    return 0;
}
