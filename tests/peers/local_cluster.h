// tests/peers/local_cluster.h: a real Host and real Peers in one process over a LocalNet
// (tests/peers/local_net.h), each node on its own thread with its own folder, log and run events, and every
// island's error-feedback residual events kept, for tests that reach into the nodes: the round
// policies (test_rounds_run.cpp) and a peer whose island is a ZeRO-3 island of GPUs
// (tests/cuda/test_cuda_peer_run.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/token_shard.h"
#include "peers/host.h"
#include "peers/peer.h"
#include "peers/protocol.h"
#include "peers/run_config.h"
#include "tests/core/temp_dir.h"
#include "tests/peers/event_match.h"
#include "tests/peers/local_net.h"

namespace arch::test {

struct ResidualSeen {
    ResidualEvent what;
    uint64_t round;
    std::vector<float> residual;
};

// A host and its islands on threads over a LocalNet, each with its own folder; logs kept per node.
// The run: a 1-layer, 32-channel GPT-2 on random tokens, 8 inner steps per round.
class Cluster {
public:
    Cluster(int islands, int rounds, const std::string& mode_and_more, const std::string& codec, double round_timeout_s) {
        std::mt19937 rng(9);
        std::vector<uint16_t> tokens(60'000);
        for (uint16_t& t : tokens) t = static_cast<uint16_t>(rng() % 256);
        write_token_shard(dir_.file("train_000.bin"), tokens);
        tokens.resize(4'000);
        write_token_shard(dir_.file("val_000.bin"), tokens);
        toml_ = "[run]\nname = \"local\"\nrounds = " + std::to_string(rounds) + "\nislands = " + std::to_string(islands) +
                "\ncheckpoint_dir = \"" + dir_.file("ckpt") + "\"\n" + mode_and_more +
                "\n[model]\nconfig = \"tiny\"\nlayers = 1\nchannels = 32\nheads = 2\nmax_seq_len = 16\nvocab = 256\n"
                "[data]\ntrain = \"" + dir_.file("train_*.bin") + "\"\nval = \"" + dir_.file("val_000.bin") +
                "\"\n[inner]\nsteps_per_round = 8\nbatch = 2\nseq_len = 16\nwarmup = 2\nval_batches = 2\n"
                "[wire]\ncodec = \"" + codec + "\"\n[deadlines]\njoin_timeout_s = 30\nround_timeout_s = " +
                std::to_string(round_timeout_s) + "\nheartbeat_timeout_s = 1\n";
    }
    ~Cluster() {
        if (host_) host_->stop();
        for (auto& p : peers_) p->stop();
        for (std::thread& t : threads_)
            if (t.joinable()) t.join();
    }

    // Adds island `name` (its key too). hook: its residual events, from its own thread; configure:
    // anything more of its options (its devices).
    void add_peer(const std::string& name, double throttle = 1.0,
                  std::function<void(ResidualEvent, uint64_t)> hook = {},
                  const std::function<void(PeerOptions&)>& configure = {}) {
        PeerOptions o;
        o.name = name;
        o.throttle = throttle;
        if (configure) configure(o);
        o.workdir = dir_.file(name);
        o.log = [this, name](const std::string& line) { append(name, line); };
        o.event = [this, name](const RunEvent& e) { record(name, e); };
        o.on_residual = [this, name, hook](ResidualEvent what, uint64_t round, std::span<const float> r) {
            {
                std::lock_guard lock(mutex_);
                residuals_[name].push_back({what, round, std::vector<float>(r.begin(), r.end())});
            }
            if (hook) hook(what, round);
        };
        peers_.push_back(std::make_unique<Peer>(std::move(o)));
        names_.push_back(name);
    }

    // The host reads the time from `clock` (a test's ManualClock) rather than the real one.
    void set_host_clock(const Clock& clock) { host_clock_ = &clock; }

    // Runs the host and every island until the host is done (true) or timeout_s passes (false).
    bool run(double timeout_s) {
        HostOptions ho;
        ho.clock = host_clock_;
        ho.config = config();
        ho.log = [this](const std::string& line) { append("host", line); };
        ho.event = [this](const RunEvent& e) { record("host", e); };
        ho.on_round = [this](const RoundRow& row) {
            std::lock_guard lock(mutex_);
            rows_.push_back(row);
        };
        host_ = std::make_unique<Host>(std::move(ho));
        std::atomic<bool> done{false};
        threads_.emplace_back([&] {
            try {
                host_->run(net_.host());
            } catch (const std::exception& e) {
                append("host", std::string("HOST THREW: ") + e.what());
            }
            done = true;
        });
        std::atomic<std::size_t> peers_done{0};
        for (std::size_t i = 0; i < peers_.size(); ++i)
            threads_.emplace_back([this, i, &peers_done] {
                try {
                    peers_[i]->run(net_.peer(names_[i]), LocalNet::kHostKey);
                } catch (const std::exception& e) {
                    append(names_[i], std::string("PEER THREW: ") + e.what());
                }
                ++peers_done;
            });
        const Clock& real = Clock::real();  // the test's own deadlines, whatever the host's clock
        const auto end = real.after(timeout_s);
        while (!done && real.now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const bool finished = done;  // read before stop(), which ends the host's thread too
        if (!finished) host_->stop();
        // The host says bye once every island holds its last θ: let them read it.
        const auto byes = real.after(30);
        while (peers_done < peers_.size() && real.now() < byes) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        for (auto& p : peers_) p->stop();
        for (std::thread& t : threads_) t.join();
        threads_.clear();
        return finished;
    }

    RunConfig config() const { return parse_run_config(toml_, "local.toml"); }  // the run.toml the host serves
    std::string log(const std::string& node) const {
        std::lock_guard lock(mutex_);
        const auto it = logs_.find(node);
        return it == logs_.end() ? "" : it->second;
    }
    std::string all_logs() const {
        std::string out = "--- host\n" + log("host");
        for (const std::string& n : names_) out += "--- " + n + "\n" + log(n);
        return out;
    }
    std::vector<RunEvent> events(const std::string& node) const {
        std::lock_guard lock(mutex_);
        const auto it = events_.find(node);
        return it == events_.end() ? std::vector<RunEvent>{} : it->second;
    }
    int count(const std::string& node, const EventMatch& m) const { return count_events(events(node), m); }
    std::vector<ResidualSeen> residuals(const std::string& name) const {
        std::lock_guard lock(mutex_);
        const auto it = residuals_.find(name);
        return it == residuals_.end() ? std::vector<ResidualSeen>{} : it->second;
    }
    const Peer& peer(int i) const { return *peers_[i]; }
    std::vector<RoundRow> rows() const {  // the host's, one per finished round
        std::lock_guard lock(mutex_);
        return rows_;
    }
    std::string host_hash() const { return host_->theta_hash(); }
    LocalNet& net() { return net_; }

    // The island index the host gave `name` (from its welcome).
    uint32_t island_of(const std::string& name) const {
        for (const LocalNet::Sent& s : net_.sent_by_host())
            if (s.to == name && s.type == protocol::Type::welcome) return protocol::decode_welcome(s.payload).island_index;
        FAIL("no welcome for " << name);
        return 0;
    }
    std::vector<protocol::UpdateMeta> updates() const {  // as everyone got them, once each
        std::vector<protocol::UpdateMeta> out;
        for (const LocalNet::Sent& s : net_.sent_by_host()) {
            if (s.type != protocol::Type::update) continue;
            ByteReader r(s.payload, "update");
            protocol::UpdateMeta m = protocol::decode_update(r.bytes(4096));
            if (out.empty() || out.back().round != m.round) out.push_back(std::move(m));
        }
        return out;
    }
    std::vector<protocol::RoundStart> round_starts(const std::string& name) const {
        std::vector<protocol::RoundStart> out;
        for (const LocalNet::Sent& s : net_.sent_by_host())
            if (s.to == name && s.type == protocol::Type::round_start) out.push_back(protocol::decode_round_start(s.payload));
        return out;
    }

private:
    void append(const std::string& node, const std::string& line) {
        std::lock_guard lock(mutex_);
        logs_[node] += line + "\n";
    }
    void record(const std::string& node, const RunEvent& e) {
        std::lock_guard lock(mutex_);
        events_[node].push_back(e);
    }

    TempDir dir_;
    std::string toml_;
    LocalNet net_;
    std::unique_ptr<Host> host_;
    const Clock* host_clock_ = &Clock::real();
    std::vector<std::unique_ptr<Peer>> peers_;
    std::vector<std::string> names_;
    std::vector<std::thread> threads_;
    mutable std::mutex mutex_;
    std::map<std::string, std::string> logs_;
    std::map<std::string, std::vector<RunEvent>> events_;
    std::map<std::string, std::vector<ResidualSeen>> residuals_;
    std::vector<RoundRow> rows_;
};

void check_in_sync(const Cluster& c, int islands) {
    for (int i = 0; i < islands; ++i) {
        INFO("island " << i);
        REQUIRE(c.peer(i).theta_hash());
        CHECK(*c.peer(i).theta_hash() == c.host_hash());
    }
}

}  // namespace arch::test
