// tests/peers/run_fixture.h: what the tests of whole runs share: a run folder with its run.toml,
// keys and invites, the host and peer processes, and HandPeer, a peer the test drives by hand over
// the real net stack to send what an honest peer never would.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "core/file_io.h"
#include "net/invite.h"
#include "net/keys.h"
#include "net/peer_socket.h"
#include "peers/net_link.h"
#include "peers/protocol.h"
#include "tests/core/temp_dir.h"
#include "tests/peers/process.h"

namespace arch::test {

inline const std::vector<std::string> kEnv = {"OMP_NUM_THREADS=1"};

struct Run {
    TempDir dir;
    int port = free_port();
    std::string config = dir.file("run.toml");

    explicit Run(int rounds, int islands, int channels = 128,
                 const std::string& deadlines = "join_timeout_s = 60\nround_timeout_s = 30\nheartbeat_timeout_s = 2\n") {
        // A model big enough that its fp32 pseudo-gradient spans several 1 MiB transfer chunks.
        write_file(config, "[run]\nname = \"test\"\nrounds = " + std::to_string(rounds) +
                               "\nislands = " + std::to_string(islands) + "\nbind = \"tcp://127.0.0.1:" +
                               std::to_string(port) + "\"\ncheckpoint_dir = \"" + dir.file("host") +
                               "\"\n[model]\nconfig = \"tiny\"\nlayers = 1\nchannels = " + std::to_string(channels) +
                               "\nheads = 2\nmax_seq_len = 32\n"
                               "[inner]\nsteps_per_round = 3\nbatch = 2\nseq_len = 16\nlr = 1e-3\nwarmup = 1\n"
                               "val_batches = 2\n[wire]\ncodec = \"fp32\"\ndown_codec = \"int8:block=256+zstd:1\"\n"
                               "[deadlines]\n" + deadlines);
    }
    std::string key(int i) const { return dir.file("peer-" + std::to_string(i) + ".key"); }
    std::string invite(int i) const { return dir.file("peer-" + std::to_string(i) + ".invite"); }
    // The same run in async mode (run.toml's mode = "async"), before the host starts.
    void make_async() const {
        std::string toml = read_file_bytes(config);
        toml.replace(toml.find("name = \"test\""), 13, "name = \"test\"\nmode = \"async\"");
        write_file(config, toml);
    }
    void make_peer(int i, const std::string& endpoint = "") {
        Process kg({"keygen", "--out", key(i)}, dir.file("setup.log"));
        REQUIRE(kg.wait(30) == 0);
        std::vector<std::string> args = {"invite", "--config", config, "--peer-key", key(i) + ".pub", "--name",
                                         "peer-" + std::to_string(i), "--out", invite(i)};
        if (!endpoint.empty()) {
            args.push_back("--endpoint");
            args.push_back(endpoint);
        }
        Process inv(args, dir.file("setup.log"));
        REQUIRE(inv.wait(30) == 0);
    }
    // Each start of a node appends to its log and its events file (node.log, node.events).
    std::unique_ptr<Process> host() {
        const std::string events = dir.file("host.events");
        const std::size_t from = slurp(events).size();
        auto p = std::make_unique<Process>(std::vector<std::string>{"host", "--config", config, "--events", events},
                                           dir.file("host.log"), kEnv);
        p->watch_events(events, from);
        return p;
    }
    // Once `host` says a checkpoint of round 2 or later is written (the writer works in the background
    // and may skip one), SIGKILLs it and starts the host again from that checkpoint; returns the new
    // host once it says it resumed. Fails the test with the logs (the hosts', and `peer`'s) otherwise.
    std::unique_ptr<Process> restart_host_after_checkpoint(Process& host, const Process& peer) {
        const auto checkpoint_from_round_2 = [&] {
            for (const RunEvent& e : host.events())
                if (e.kind == "checkpoint_written" && e.round >= 2) return true;
            return false;
        };
        if (!host.wait_until(checkpoint_from_round_2, 180)) FAIL(host.log() + "\n--- peer\n" + peer.log());
        host.kill(SIGKILL);
        host.wait(10);
        auto again = this->host();
        if (!again->wait_event({.kind = "resumed"}, 120)) FAIL(host.log() + "\n--- second host\n" + again->log());
        return again;
    }
    std::unique_ptr<Process> peer(int i, std::vector<std::string> env = kEnv, std::vector<std::string> extra = {}) {
        const std::string name = "peer-" + std::to_string(i), events = dir.file(name + ".events");
        std::vector<std::string> args = {"peer", "--invite", invite(i), "--key", key(i), "--name", name, "--events", events};
        args.insert(args.end(), extra.begin(), extra.end());
        const std::size_t from = slurp(events).size();
        auto p = std::make_unique<Process>(args, dir.file(name + ".log"), env);
        p->watch_events(events, from);
        return p;
    }
};

inline int count(const std::string& text, const std::string& needle) {
    int n = 0;
    for (std::size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
    return n;
}

inline bool contains_bytes(const std::vector<std::byte>& hay, const void* needle, std::size_t n) {
    const auto* p = static_cast<const std::byte*>(needle);
    return std::search(hay.begin(), hay.end(), p, p + n) != hay.end();
}

// A peer this test drives by hand over the real net stack (CURVE, chunked transfers), to send what
// an honest peer never would.
struct HandPeer {
    net::Invite invite;
    std::unique_ptr<net::PeerSocket> socket;
    std::unique_ptr<PeerLink> link;
    std::string host_key;
    uint32_t island = 0;  // the island index its welcome gave it
    std::vector<float> theta;  // θ of the state it joined with

    HandPeer(const Run& run, int i) : invite(net::Invite::load(run.invite(i))), host_key(invite.host_public_key) {
        net::PeerSocketOptions so;
        so.host_endpoint = invite.host_endpoint;
        so.host_public_key = invite.host_public_key;
        so.keys = net::load_keypair(run.key(i));
        so.run_id = invite.run_id;
        so.log = [](const std::string&) {};
        socket = std::make_unique<net::PeerSocket>(so);
        link = std::make_unique<PeerLink>(*socket, [](const std::string&) {});
    }
    std::optional<LinkEvent> wait_event(protocol::Type type, double timeout_s) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        while (std::chrono::steady_clock::now() < end)
            if (auto e = link->poll(50); e && e->kind == LinkEvent::Kind::message && e->type == type) return e;
        return std::nullopt;
    }
    // Keeps this side's transfers moving until `times` of the host's events match m.
    bool wait_host(Process& host, const EventMatch& m, int times, int timeout_s = 30) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
        while (std::chrono::steady_clock::now() < end) {
            if (host.count(m) >= times) return true;
            link->poll(50);
        }
        return false;
    }
    // Hello, welcome, the state (θ kept in `theta`), a hash report in sync: returns the model's
    // parameter count.
    std::size_t join(const std::string& name) {
        protocol::Hello hello;
        hello.name = name;
        link->send(host_key, protocol::Type::hello, 0, protocol::encode(hello));
        const std::optional<LinkEvent> welcome = wait_event(protocol::Type::welcome, 60);
        REQUIRE(welcome);
        island = protocol::decode_welcome(welcome->payload).island_index;
        const std::optional<LinkEvent> state = wait_event(protocol::Type::state, 60);
        REQUIRE(state);
        ByteReader reader(state->payload, "state");
        const protocol::StateMeta meta = protocol::decode_state(reader.bytes(4096));
        const std::vector<std::byte> global = reader.bytes(state->payload.size());  // count (u64), θ, update counts
        std::size_t params = 0;
        std::memcpy(&params, global.data(), 8);
        theta.resize(params);
        std::memcpy(theta.data(), global.data() + 8, params * sizeof(float));
        report(meta.round, meta.theta_hash);
        return params;
    }
    void report(uint64_t round, const std::string& theta_hash) {
        link->send(host_key, protocol::Type::hash_report, round, protocol::encode(protocol::HashReport{round, theta_hash}));
    }
    protocol::RoundStart wait_round_start() {
        const std::optional<LinkEvent> start = wait_event(protocol::Type::round_start, 120);
        REQUIRE(start);
        return protocol::decode_round_start(start->payload);
    }
    void send_grad(uint64_t round, const std::vector<float>& delta, double tokens) {
        ByteWriter w;
        w.bytes(protocol::encode(protocol::PseudoGradMeta{round, tokens, 4.0f, 3, 1.0f}));
        w.bytes(compression::make_codec("fp32")->encode(delta));
        link->send_blob(host_key, protocol::Type::pseudo_grad, round, share_blob(w.take()));
    }
    void leave() {
        link.reset();
        socket.reset();
    }
};

// The val losses the host measured, in order: the starting θ's, then θ's after the rounds it evaluated
// (one at a time, beside the rounds: a fast round's θ may be passed over), the run's last θ always.
inline std::vector<double> measured_val_losses(const Process& host) {
    std::vector<double> out;
    for (const RunEvent& e : host.events())
        if (e.kind == "evaluated" && e.val_loss >= 0) out.push_back(e.val_loss);
    return out;
}

// The val loss of the run's last θ: the host's last round row (the run's end waits for its evaluation).
inline double last_val_loss(const Process& host) {
    const std::vector<RunEvent> events = host.events();
    const auto last = std::find_if(events.rbegin(), events.rend(), EventMatch{.kind = "round_finished"});
    REQUIRE(last != events.rend());
    REQUIRE(last->val_loss >= 0);
    return last->val_loss;
}

}  // namespace arch::test
