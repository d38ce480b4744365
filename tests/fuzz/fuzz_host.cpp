// tests/fuzz/fuzz_host.cpp: libFuzzer target for arch::Host's round state machine, driven through a
// scripted Link by four authenticated peers (honest, well-formed with fuzzed fields, or raw bytes;
// encoding in host_steps.h), DES-LOC's moments included when the input's run syncs them. It never sleeps: every deadline is either already past or never reached.
// Aborts when an exception leaves run(), θ is not finite, the round goes back, or a queue passes its bound.
#include <omp.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "compression/codec.h"
#include "core/token_shard.h"
#include "net/keys.h"
#include "peers/control/run_status.h"
#include "peers/host.h"
#include "peers/link.h"
#include "peers/moment_sync.h"
#include "peers/protocol.h"
#include "peers/run_config.h"
#include "tests/fuzz/host_steps.h"

namespace {

using arch::LinkEvent;
using arch::protocol::Type;
using fuzz_host::Action;
using fuzz_host::Bytes;
using fuzz_host::kPeers;
using fuzz_host::read_step;
using fuzz_host::Step;
namespace variant = fuzz_host::variant;

constexpr const char* kKeys[kPeers] = {R"(<>&#WkT?wJTUV&=7)d00!K*0M7p96{<Zgy><4$kR)",
                                       R"(qZFODO[WF0./}ABUjL8{O:S@j7W+^JiOX#V^NO>N)",
                                       R"(wD=Gv8[O{3?MG?}CgN:HokS1PdWBK*hSwXG>@?Zm)",
                                       R"(OoNFL!6t2A(4Uqo@{FIcAH[9cK0lm[G):HTP5q+x)"};
constexpr std::size_t kMaxQueuedMessages = 4096;  // small messages queued for one peer that does not read
constexpr std::size_t kMaxQueuedBlobs = 3;        // blobs a peer may have waiting (NetLink's bound)
constexpr int kRounds = 3, kIslands = 3;
constexpr double kTokensPerRound = 2 * 1 * 8;  // H x B x T x grad_accum of the config below
const std::string kWrongHash(64, 'a');

[[noreturn]] void fail(const std::string& what);
const std::string* g_temp_dir = nullptr;  // removed at exit, and by fail()

// Files shared by every input: the token shards and the folder the host checkpoints into (emptied
// before each input, so no state leaks from one to the next).
struct Fixture {
    std::string dir, checkpoint_dir;
    std::map<uint16_t, arch::RunConfig> configs;  // by variant bytes, parsed on first use
    std::vector<std::unique_ptr<arch::compression::Codec>> codecs;
};

Fixture& fixture() {
    static Fixture* f = [] {
        auto* fx = new Fixture;
        // tmpfs when there is one: the host fsyncs each checkpoint, and an input writes several.
        const char* base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        std::string tmpl = std::string(base) + "/fuzz_host.XXXXXX";
        if (!mkdtemp(tmpl.data())) fail("cannot create a temporary folder under " + std::string(base));
        fx->dir = tmpl;
        g_temp_dir = &fx->dir;
        fx->checkpoint_dir = fx->dir + "/ckpt";
        // Training data: enough for every island to get a chunk of its own (1024 tokens, the smallest).
        std::vector<uint16_t> tokens(4096);
        for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>((i * 7) % 16);
        arch::write_token_shard(fx->dir + "/train.bin", tokens);
        tokens.resize(64);
        arch::write_token_shard(fx->dir + "/val.bin", tokens);
        for (const char* spec : {"fp32", "int8:block=256+zstd:1", "topk:frac=0.25", "fp16"})
            fx->codecs.push_back(arch::compression::make_codec(spec));
        for (const char* key : kKeys)
            if (!arch::net::is_valid_public_key(key)) fail(std::string("harness key is not valid Z85: ") + key);
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove_all(*g_temp_dir, ignored);
        });
        return fx;
    }();
    return *f;
}

const arch::RunConfig& config_for(uint8_t run_bits, uint8_t outer_bits) {
    Fixture& fx = fixture();
    run_bits &= 0x3F;  // the bits host_steps.h names
    outer_bits %= 24;  // 4 aggregators x 3 screens x DES-LOC (off, or every round; sync only)
    const uint16_t id = static_cast<uint16_t>(run_bits << 8 | outer_bits);
    if (auto it = fx.configs.find(id); it != fx.configs.end()) return it->second;
    static const char* kAggregators[] = {"mean", "median", "trimmed:trim=1", "clip:tau=1.5"};
    static const char* kScreens[] = {"clip", "reject", "off"};
    auto seconds = [&](uint8_t bit) { return (run_bits & bit) ? "1e-9" : "1e6"; };
    // Async has one pseudo-gradient per update, so the config refuses trimmed there: use median.
    std::string aggregator = kAggregators[outer_bits % 4];
    if ((run_bits & variant::async) && aggregator.rfind("trimmed", 0) == 0) aggregator = "median";
    const int moments_every = (outer_bits / 12 && !(run_bits & variant::async)) ? 1 : 0;  // async refuses it
    const std::string toml =
        "[run]\nname = \"fuzz\"\nrounds = " + std::to_string(kRounds) + "\nislands = " + std::to_string(kIslands) +
        "\nmode = \"" + ((run_bits & variant::async) ? "async" : "sync") + "\"\ncheckpoint_dir = \"" +
        fx.checkpoint_dir + "\"\nseed = 1\n"
        "[model]\nconfig = \"tiny\"\nlayers = 1\nchannels = 4\nheads = 1\nmax_seq_len = 8\nvocab = 16\n"
        "[data]\ntrain = \"" + fx.dir + "/train.bin\"\nval = \"" + fx.dir + "/val.bin\"\n"
        "[inner]\nsteps_per_round = 2\nbatch = 1\nseq_len = 8\nval_batches = 1\n"
        "[outer]\naggregator = \"" + aggregator + "\"\nscreen = \"" + kScreens[(outer_bits / 4) % 3] +
        "\"\nsync_moments_every = " + std::to_string(moments_every) + "\n[wire]\ncodec = \"fp32\"\n"
        "[deadlines]\njoin_timeout_s = " + seconds(variant::join_past) + "\nround_timeout_s = " +
        seconds(variant::round_past) + "\nheartbeat_timeout_s = " + seconds(variant::heartbeat_past) +
        "\nstraggler = \"" + ((run_bits & variant::fold) ? "fold" : "drop") + "\"\n";
    return fx.configs.emplace(id, arch::parse_run_config(toml, "fuzz_host.toml")).first->second;
}

std::vector<std::byte> as_bytes(const std::string& s) {
    std::vector<std::byte> b(s.size());
    if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
    return b;
}

struct Trace {  // the last events, for the message of a failure
    int peer;
    LinkEvent::Kind kind;
    Type type;
    uint64_t round;
    std::size_t bytes;
};

// The network as one process sees it: what the host sent each peer stays queued until that peer
// reads it (a deliver step, or an honest step, which reads first).
class ScriptedLink final : public arch::Link {
public:
    ScriptedLink(Bytes& in, arch::Host& host, arch::RunStatus* status, int moments_every)
        : in_(in), host_(host), status_(status), moments_every_(moments_every) {
        model_bytes_ = host_.global().theta().size() * sizeof(float);
    }

    std::optional<LinkEvent> poll(int) override {
        check_host();
        while (true) {
            if (repeat_ > 0) {
                --repeat_;
            } else {
                if (in_.empty()) {
                    host_.stop();
                    return std::nullopt;
                }
                step_ = read_step(in_);
                if (step_.action == Action::burst) {
                    repeat_ = 16 * (1 + step_.a) - 1;
                    step_ = read_step(in_);
                }
            }
            std::optional<LinkEvent> e;
            try {
                e = perform(step_);
            } catch (const std::exception& err) {
                fail(std::string("the harness could not make its message (a fuzz_host bug): ") + err.what());
            }
            if (e) {
                received_[e->type] += e->payload.size();
                trace_.push_back({step_.peer, e->kind, e->type, e->round, e->payload.size()});
                if (trace_.size() > 24) trace_.pop_front();
                return e;
            }
        }
    }

    bool send(const std::string& key, Type type, uint64_t round, std::span<const std::byte> payload) override {
        Island& p = island(key);
        sent_[type] += payload.size();
        if (++p.queued_messages >= kMaxQueuedMessages)
            fail(std::to_string(p.queued_messages) + " small messages queued for peer " + std::to_string(index(key)) +
                 ", which reads none of them (last: " + arch::protocol::type_name(type) + ")");
        if (type == Type::welcome) {
            p.welcomed = true;
        } else if (type == Type::reject) {
            p.welcomed = false;
        } else if (type == Type::round_start) {
            try {
                p.started_round = arch::protocol::decode_round_start(payload).round;
            } catch (const std::exception& e) {
                fail(std::string("the host sent a round_start it cannot decode itself: ") + e.what());
            }
            if (p.started_round != round) fail("a round_start whose envelope round differs from its payload's");
            p.moments_sent = false;
        }
        return true;
    }

    // Link's contract (link.h): the same blob is not queued twice, a state replaces an older state
    // queued for the peer, and a peer with kMaxQueuedBlobs waiting gets nothing more.
    bool send_blob(const std::string& key, Type type, uint64_t round, arch::SharedBlob blob) override {
        if (!blob) fail(std::string("the host queued a null ") + arch::protocol::type_name(type) + " blob");
        Island& p = island(key);
        if (std::find(p.blobs.begin(), p.blobs.end(), blob) != p.blobs.end()) return true;
        if (type == Type::state)
            std::erase_if(p.blobs, [](const Queued& q) { return q.type == Type::state; });
        if (p.blobs.size() >= kMaxQueuedBlobs) return false;
        sent_[type] += blob->size();
        if (type == Type::update || type == Type::state) p.needs_report = true;
        p.blobs.push_back({type, std::move(blob)});
        std::unordered_set<const void*> seen;
        std::size_t bytes = 0;
        for (const Island& other : islands_)
            for (const Queued& q : other.blobs)
                if (seen.insert(q.blob.get()).second) bytes += q.blob->size();
        // DES-LOC: an update also carries the moments' mean, one model size in bf16 (3 updates at most).
        const std::size_t limit = (kIslands + 4 + (moments_every_ > 0 ? 3 : 0)) * model_bytes_;
        if (bytes >= limit) {
            std::string queues;
            for (int i = 0; i < kPeers; ++i) {
                queues += "\n  peer " + std::to_string(i) + ":";
                for (const Queued& q : islands_[i].blobs)
                    queues += std::string(" ") + arch::protocol::type_name(q.type) + " (" +
                              std::to_string(q.blob->size()) + " bytes)";
            }
            fail(std::to_string(bytes) + " bytes of distinct blobs queued (" + std::to_string(seen.size()) +
                 " blobs), the bound is (islands + 4) x " + std::to_string(model_bytes_) + " = " +
                 std::to_string(limit) + "; the last, a " + arch::protocol::type_name(type) + " of round " +
                 std::to_string(round) + ", to peer " + std::to_string(index(key)) + queues);
        }
        return true;
    }

    void withdraw(const arch::SharedBlob& blob) override {
        for (Island& p : islands_) std::erase(p.blobs, blob);
    }

    void forget(const std::string& key) override {
        Island& p = island(key);
        p.blobs.clear();
        p.queued_messages = 0;
    }

    uint64_t bytes_sent(Type type) const override { return count(sent_, type); }
    uint64_t bytes_received(Type type) const override { return count(received_, type); }

    // After every event (and once more after run()): the invariants that hold whatever the peers send.
    // Not instrumented for coverage: a loop over θ would only slow the fuzzer down.
    __attribute__((no_sanitize("coverage"))) void check_host() {
        if (host_.round() < last_round_)
            fail("the host's round went back from " + std::to_string(last_round_) + " to " +
                 std::to_string(host_.round()));
        last_round_ = host_.round();
        for (float v : host_.global().theta())
            if (!std::isfinite(v)) fail("θ holds a non-finite value at round " + std::to_string(host_.round()));
    }

    void describe_trace() const {
        for (const Trace& t : trace_)
            std::fprintf(stderr, "  peer %d %s %s round %llu, %zu bytes\n", t.peer,
                         t.kind == LinkEvent::Kind::message ? "message"
                         : t.kind == LinkEvent::Kind::connected ? "connected"
                                                                : "disconnected",
                         t.kind == LinkEvent::Kind::message ? arch::protocol::type_name(t.type) : "",
                         static_cast<unsigned long long>(t.round), t.bytes);
    }

private:
    struct Queued {
        Type type;
        arch::SharedBlob blob;
        bool operator==(const arch::SharedBlob& b) const { return blob == b; }
    };
    struct Island {  // one peer's view of what the host sent it
        std::size_t queued_messages = 0;
        std::vector<Queued> blobs;
        bool welcomed = false;
        bool needs_report = false;  // an update or a state was sent since its last hash report
        std::optional<uint64_t> started_round;  // the last round_start it has not answered
        bool moments_sent = false;              // DES-LOC: its moments for that round went first
    };

    static uint64_t count(const std::map<Type, uint64_t>& m, Type t) {
        const auto it = m.find(t);
        return it == m.end() ? 0 : it->second;
    }
    static int index(const std::string& key) {
        for (int i = 0; i < kPeers; ++i)
            if (key == kKeys[i]) return i;
        fail("the host sent to a key no peer has: '" + key + "'");
    }
    Island& island(const std::string& key) { return islands_[index(key)]; }

    // The host's θ hash, hashed again only after θ changed (an outer step is the only way it can).
    const std::string& theta_hash() {
        const uint64_t updates = host_.global().updates_applied();
        if (hash_.empty() || updates != hash_updates_) {
            hash_ = host_.theta_hash();
            hash_updates_ = updates;
        }
        return hash_;
    }

    LinkEvent message(int peer, Type type, uint64_t round, std::vector<std::byte> payload) const {
        LinkEvent e;
        e.kind = LinkEvent::Kind::message;
        e.peer = kKeys[peer];
        e.type = type;
        e.round = round;
        e.payload = std::move(payload);
        return e;
    }
    LinkEvent connection(int peer, LinkEvent::Kind kind) const {
        LinkEvent e;
        e.kind = kind;
        e.peer = kKeys[peer];
        return e;
    }

    // Choice bits -> a round near the host's, or the peer's last round_start.
    uint64_t round_choice(int peer, uint8_t bits, uint8_t fuzzed) const {
        const uint64_t now = host_.round();
        switch (bits & 3) {
            case 0: return islands_[peer].started_round.value_or(now);
            case 1: return now;
            case 2: return now - 1;  // round 0 - 1 wraps: a far-away round
            default: return fuzzed;
        }
    }
    std::string hash_choice(uint8_t bits) {
        switch (bits & 3) {
            case 0: return theta_hash();
            case 1: return "";
            case 2: return kWrongHash;
            default: return "not a hash";
        }
    }

    static void mangle(const Step& s, std::vector<std::byte>& payload) {
        if (s.mangle < 0xE0 || payload.empty()) return;
        const std::size_t at = s.at % payload.size();
        if (s.mangle & 1) payload.resize(at);
        else payload[at] ^= static_cast<std::byte>(s.mangle | 1);
    }

    std::optional<LinkEvent> perform(const Step& s) {
        Island& p = islands_[s.peer];
        switch (s.action) {
            case Action::honest: return honest(s.peer);
            case Action::hello: {
                static constexpr float kSpeeds[] = {0, 1, 5, 1e30f, 3e38f, INFINITY, NAN, -1};
                arch::protocol::Hello h;
                h.protocol_version = (s.a & 0x80) ? s.b : arch::protocol::kProtocolVersion;
                h.name = s.text;
                h.devices = s.b;
                h.steps_per_s = kSpeeds[(s.a >> 4) & 7];
                h.round = round_choice(s.peer, s.a, s.b);
                h.theta_hash = hash_choice(s.a >> 2);
                std::vector<std::byte> payload = arch::protocol::encode(h);
                mangle(s, payload);
                return message(s.peer, Type::hello, h.round, std::move(payload));
            }
            case Action::hash_report: {
                const arch::protocol::HashReport h{round_choice(s.peer, s.a + 1, s.a >> 4), hash_choice(s.a >> 2)};
                std::vector<std::byte> payload = arch::protocol::encode(h);
                mangle(s, payload);
                if (h.theta_hash == theta_hash()) p.needs_report = false;
                return message(s.peer, Type::hash_report, h.round, std::move(payload));
            }
            case Action::pseudo_grad: return pseudo_grad(s);
            case Action::connected: return connection(s.peer, LinkEvent::Kind::connected);
            case Action::disconnected: return connection(s.peer, LinkEvent::Kind::disconnected);
            case Action::bye: return message(s.peer, Type::bye, host_.round(), arch::protocol::encode(arch::protocol::Reason{arch::protocol::ReasonCode::left, s.text}));
            case Action::deliver:
                read_all(s.peer);
                return std::nullopt;
            case Action::raw: {
                static constexpr Type kTypes[] = {Type::hello,       Type::welcome,     Type::reject, Type::round_start,
                                                  Type::pseudo_grad, Type::update,      Type::hash_report,
                                                  Type::state,       Type::bye,         Type::data_request,
                                                  Type::data,        Type::moments,     static_cast<Type>(0x0001)};
                return message(s.peer, kTypes[s.a % 13], s.b, as_bytes(s.text));
            }
            case Action::control:
                if (status_ && s.a % 8 == 7) status_->request_leave();
                else if (status_) status_->set_paused(s.a & 1);
                return std::nullopt;
            case Action::burst: return std::nullopt;  // a burst of bursts: the inner one repeats nothing
        }
        return std::nullopt;
    }

    void read_all(int peer) {
        islands_[peer].queued_messages = 0;
        islands_[peer].blobs.clear();
    }

    // An honest island reads what was sent to it, then says hello, reports its θ after an update or
    // a state, or answers its round_start; else its connection flickers.
    std::optional<LinkEvent> honest(int peer) {
        Island& p = islands_[peer];
        read_all(peer);
        if (!p.welcomed) {
            arch::protocol::Hello h;
            h.name = "island-" + std::to_string(peer);
            h.steps_per_s = 1.0f + static_cast<float>(peer);
            h.round = host_.round();
            h.theta_hash = theta_hash();
            return message(peer, Type::hello, h.round, arch::protocol::encode(h));
        }
        if (p.needs_report) {
            p.needs_report = false;
            return message(peer, Type::hash_report, host_.round(),
                           arch::protocol::encode(arch::protocol::HashReport{host_.round(), theta_hash()}));
        }
        if (p.started_round) {
            Step s;
            s.peer = peer;
            // DES-LOC: in a round that carries them, the island's moments go just before its Δ.
            if (!p.moments_sent && arch::moments_round(moments_every_, *p.started_round)) {
                p.moments_sent = true;
                return moments(s);
            }
            return pseudo_grad(s);  // all-zero choices: the honest one
        }
        return connection(peer, LinkEvent::Kind::connected);
    }

    // Choice bytes: a = round (2 bits) | scale (3) | token weight (3); b = codec (2) | size (2) | speed (3);
    // c seeds the values and the loss. All zero: the honest pseudo-gradient for the peer's round_start.
    std::optional<LinkEvent> pseudo_grad(const Step& s) {
        if (s.b & 0x80) return moments(s);  // b's top bit: DES-LOC's moments instead, with the same choices
        static constexpr float kScales[] = {1, 1, 1000, 1e30f, NAN, INFINITY, 0, -1e3f};
        static constexpr double kTokens[] = {kTokensPerRound, 8, 1e12, 0, -1, NAN, INFINITY, 1e-300};
        static constexpr float kSpeeds[] = {1, 0.5f, 0, 1e30f, 3e38f, INFINITY, NAN, -1};
        Island& p = islands_[s.peer];
        const uint64_t round = round_choice(s.peer, s.a, s.c);
        const float scale = kScales[(s.a >> 2) & 7];
        const std::size_t n = host_.global().theta().size();
        static constexpr std::ptrdiff_t kSizes[] = {0, 1, -1, 0};
        std::size_t count = n + kSizes[(s.b >> 2) & 3];
        if (((s.b >> 2) & 3) == 3) count = s.c % 4;  // a handful of values
        // A burst sends the same Δ again: encode it once (topk's encoder is slow when instrumented).
        const std::array<std::size_t, 4> key{count, static_cast<std::size_t>((s.a >> 2) & 7),
                                             static_cast<std::size_t>(s.peer * 11 + s.c), s.b & 3u};
        if (key != encoded_key_ || encoded_.empty()) {
            const std::vector<float> delta = make_delta(count, scale, key[2]);
            encoded_ = std::isfinite(scale) ? fixture().codecs[key[3]]->encode(delta) : raw_fp32(delta);
            encoded_key_ = key;
        }
        const arch::protocol::PseudoGradMeta meta{round, kTokens[s.a >> 5], 4.0f + s.c / 64.0f, 2,
                                                  kSpeeds[(s.b >> 4) & 7] * (1.0f + static_cast<float>(s.peer))};
        arch::ByteWriter w;
        w.bytes(arch::protocol::encode(meta));
        w.bytes(encoded_);
        std::vector<std::byte> payload = w.take();
        mangle(s, payload);
        if (p.started_round == round) p.started_round.reset();
        return message(s.peer, Type::pseudo_grad, round, std::move(payload));
    }

    // DES-LOC's moments with the pseudo-gradient's choice bytes: a = round (2 bits) | scale (3), where a
    // negative scale makes v negative; b = size (bits 2-3: m and v of n, n + 1, n − 1, or a handful of
    // values); c seeds the values. All zero: the honest moments for the peer's round_start.
    std::optional<LinkEvent> moments(const Step& s) {
        static constexpr float kScales[] = {1, 1, 1000, 1e30f, NAN, INFINITY, 0, -1e3f};
        const uint64_t round = round_choice(s.peer, s.a, s.c);
        const float scale = kScales[(s.a >> 2) & 7];
        static constexpr std::ptrdiff_t kSizes[] = {0, 1, -1, 0};
        std::size_t count = host_.global().theta().size() + kSizes[(s.b >> 2) & 3];
        if (((s.b >> 2) & 3) == 3) count = s.c % 4;
        const std::vector<float> m = make_delta(count, scale, static_cast<std::size_t>(s.peer * 11 + s.c));
        std::vector<float> v = make_delta(count, scale, static_cast<std::size_t>(s.peer * 13 + s.c));
        for (float& x : v) x = x * x * (scale < 0 ? -1.0f : 1.0f);
        std::vector<std::byte> payload = arch::protocol::encode_moments(round, m, v);  // encodes whatever it is given
        mangle(s, payload);
        return message(s.peer, Type::moments, round, std::move(payload));
    }

    // Values of about 1e-3 times scale, in a pattern that differs by peer and seed.
    __attribute__((no_sanitize("coverage"))) static std::vector<float> make_delta(std::size_t count, float scale,
                                                                               std::size_t seed) {
        std::vector<float> delta(count);
        for (std::size_t i = 0; i < count; ++i)
            delta[i] = scale * 1e-3f * static_cast<float>(static_cast<int>((i * 37 + seed) % 17) - 8);
        return delta;
    }

    // Codecs refuse to encode a non-finite value, so those travel as fp32 written over a finite one's
    // body (the wire header, then the floats as they are).
    static std::vector<std::byte> raw_fp32(const std::vector<float>& delta) {
        std::vector<std::byte> out = fixture().codecs[0]->encode(std::vector<float>(delta.size()));
        if (out.size() != arch::compression::kWireHeaderBytes + delta.size() * sizeof(float))
            fail("fp32's wire layout is not the header then the floats any more: fix raw_fp32");
        if (!delta.empty())
            std::memcpy(out.data() + arch::compression::kWireHeaderBytes, delta.data(), delta.size() * sizeof(float));
        return out;
    }

    Bytes& in_;
    arch::Host& host_;
    arch::RunStatus* status_;
    int moments_every_ = 0;  // DES-LOC's K in this input's run (0: off)
    std::size_t model_bytes_ = 0;
    Island islands_[kPeers];
    std::map<Type, uint64_t> sent_, received_;
    Step step_;
    int repeat_ = 0;
    uint64_t last_round_ = 0;
    std::string hash_;
    uint64_t hash_updates_ = 0;
    std::array<std::size_t, 4> encoded_key_{};  // count, scale, seed, codec of the last Δ encoded
    std::vector<std::byte> encoded_;
    std::deque<Trace> trace_;
};

// The failure message names the invariant, then the host's last log lines and the last events.
std::deque<std::string>* g_log = nullptr;
ScriptedLink* g_link = nullptr;

void fail(const std::string& what) {
    std::fprintf(stderr, "fuzz_host: %s\n", what.c_str());
    if (g_log) {
        std::fprintf(stderr, "last host log lines:\n");
        for (const std::string& line : *g_log) std::fprintf(stderr, "  %s\n", line.c_str());
    }
    if (g_link) {
        std::fprintf(stderr, "last events:\n");
        g_link->describe_trace();
    }
    if (g_temp_dir) {
        std::error_code ignored;
        std::filesystem::remove_all(*g_temp_dir, ignored);
    }
    std::abort();
}

uint64_t g_inputs = 0, g_past_round_0 = 0;

}  // namespace

// One OpenMP thread: the model and the payloads are a few thousand floats, and idle workers that
// spin between regions would take the CPU from the fuzzer.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    omp_set_num_threads(1);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    Bytes in(data, size);
    const uint8_t run_bits = in.u8(), outer_bits = in.u8();
    const arch::RunConfig& config = config_for(run_bits, outer_bits);
    std::filesystem::remove_all(fixture().checkpoint_dir);  // a fresh run: nothing to resume from

    std::deque<std::string> log;
    auto status = (run_bits & variant::with_status) ? std::make_unique<arch::RunStatus>() : nullptr;
    arch::HostOptions options;
    options.config = config;
    static const bool print_log = std::getenv("FUZZ_HOST_LOG") != nullptr;  // =1: every line to stderr
    options.log = [&log](const std::string& line) {
        if (print_log) std::fprintf(stderr, "host: %s\n", line.c_str());
        log.push_back(line);
        if (log.size() > 16) log.pop_front();
    };
    options.status = status.get();
    std::optional<arch::Host> host;
    try {
        host.emplace(std::move(options));
    } catch (const std::exception& e) {
        fail(std::string("the host refused the harness's run (a fuzz_host bug): ") + e.what());
    }
    ScriptedLink link(in, *host, status.get(), config.sync_moments_every);
    g_log = &log;
    g_link = &link;
    try {
        host->run(link);
    } catch (const std::exception& e) {
        fail(std::string("an exception left Host::run: ") + e.what());
    } catch (...) {
        fail("an exception of unknown type left Host::run");
    }
    link.check_host();
    g_log = nullptr;
    g_link = nullptr;

    ++g_inputs;
    g_past_round_0 += host->round() > 0;
    // FUZZ_HOST_STATS=1: how many inputs got past round 0, at every power of two; =all: each input's round.
    const char* stats = std::getenv("FUZZ_HOST_STATS");
    if (stats && std::strcmp(stats, "all") == 0)
        std::fprintf(stderr, "fuzz_host: input of %zu bytes ended at round %llu\n", size,
                     static_cast<unsigned long long>(host->round()));
    else if (stats && (g_inputs & (g_inputs - 1)) == 0)
        std::fprintf(stderr, "fuzz_host: %llu inputs, %llu reached round >= 1\n",
                     static_cast<unsigned long long>(g_inputs), static_cast<unsigned long long>(g_past_round_0));
    return 0;
}
