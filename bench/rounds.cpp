// bench/rounds.cpp: bench_rounds: what a DiLoCo round costs beyond its link, at real model sizes. A real
// `archipelago host` and N real `archipelago peer` processes over CURVE on 127.0.0.1 (no bandwidth
// limit), each with its own folder, run a few rounds of a preset's model; the figures come from the
// processes' own log lines and /proc. The islands train for real (H steps of B x T tokens; keep them
// small so the round's overheads, not its compute, are what is measured).
// Columns: params; islands; codec; joins (together, or one by one: --one-by-one); host_threads (the host's OpenMP threads; each peer has one); host_start_s (start to listening); state_mb_per_s (a joiner's state:
// its size over the time from asking for it, by its hello or a hash report, to holding it; the median
// joiner); state_all_mb_per_s (every joiner's state together: their bytes over the time from the first
// asking to the last holding, what the host sent while they shared it);
// curve_ceiling_mb_per_s (libzmq CURVE on one connection, measured here in-process); link_mb_per_s (a blob
// through Archipelago's own stack, HostLink to PeerLink: CURVE, chunks, checksums, credit); idle_s_per_sync (an island's last inner step to its next first
// one, the median over rounds after the first; idle_s_max the longest, a DES-LOC round's when one is
// among them: moments_every); cpu_s_per_round (every process's CPU seconds a round,
// rounds after the first: on `cores` cores a round takes at least that over cores); host_fresh_mb_per_round and
// peer_fresh_mb_per_round (the fresh pages the kernel cleared for the host, and for a peer on average, a
// round: memory allocated anew each round, rounds after the first); host_rss_over_p and peer_rss_over_p (peak RSS over P, the
// fp32 model's bytes); held_deltas_over_p (the islands' Δs as the host holds them, out of their zstd stage,
// at the codec's most); host_bound_over_p (4 P, those Δs and 28 MiB a peer: the bound host_rss_over_p is held to);
// peer_diloco_rss_over_p (a peer's peak less that of `archipelago train` on the same
// model and batch: its DiLoCo state); peer_anon_over_p (a peer's largest anonymous memory, sampled:
// what --state-on-disk moves to mapped files leaves it); peer_compute_s (a round's inner steps and Δ); the host's median seconds a round by phase (receive, decode,
// aggregate+encode, outer step, checkpoint, eval) and send_s (the update sent until every island holds it).
// inner_steps: real, or synthetic (--synthetic: bench_rounds_peer's islands perturb θ instead of
// training, so 360M fits this machine; peer_diloco_rss_over_p is then the peak less θ_i's one P).
// Usage: bench_rounds [--config gpt2-124m] [--islands 2] [--rounds 3] [--codec ...] [--synthetic] [--host-threads 1] [--json]
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_cli.h"
#include "compression/codec.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/model_config.h"
#include "core/param_layout.h"
#include "net/allow_list.h"
#include "net/keys.h"
#include "peers/net_link.h"
#include "peers/run_config.h"
#include "tests/core/temp_dir.h"
#include "tests/peers/process.h"

using namespace arch;

namespace {

struct Options {
    std::string config = "gpt2-124m";
    int vocab = 0;  // 0: the preset's (GPT-2's 50257 for gpt2-124m), not the bundled tokenizer's
    int islands = 2, rounds = 5, steps = 1, batch = 1, seq_len = 16;  // round 3 is DES-LOC's (K = 4), timed by round 4
    int checkpoint_every = 1;  // run.checkpoint_every
    int host_threads = 1;      // the host's OpenMP threads (every peer has one)
    int moments_every = -1;    // outer.sync_moments_every (DES-LOC); < 0: run.toml's default
    std::string codec = "fp4+ef+zstd:1", down_codec = "int8:block=256+zstd:1";
    double ceiling_mb = 1024;
    double timeout_s = 1800;
    bool json = false;
    bool keep = false;  // leave the run folder (logs, checkpoints) behind
    // The islands take synthetic inner steps (bench/synthetic_backend.cpp: bench_rounds_peer), so
    // that a model whose engine would not fit this machine can be measured; everything else is real.
    bool synthetic = false;
    bool state_on_disk = false;  // the peers run with --state-on-disk
    // Each peer starts once the one before it holds its state, so each joiner's state crosses alone,
    // as a late joiner's does; otherwise every joiner asks at once and they share the host.
    bool one_by_one = false;
};

double seconds_since(Clock::time_point t) { return Clock::real().seconds_since(t); }

double median(std::vector<double> v) {
    if (v.empty()) return -1;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// A field of /proc/PID/status in bytes (VmHWM: the peak resident set; RssAnon: anonymous memory now,
// which, unlike a mapped file's pages, the kernel cannot take back without swap); 0 once it is gone.
double status_bytes(pid_t pid, const std::string& field) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) * 1024;
    return 0;
}
double peak_rss(pid_t pid) { return status_bytes(pid, "VmHWM"); }

// Fields first..last of /proc/PID/stat, summed; 0 once the process is gone.
double stat_fields(pid_t pid, int first, int last) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(f, line) || line.rfind(')') == std::string::npos) return 0;
    std::istringstream rest(line.substr(line.rfind(')') + 2));  // from field 3, the state
    std::string field;
    double sum = 0;
    for (int i = 3; i <= last && rest >> field; ++i)
        if (i >= first) sum += std::stod(field);
    return sum;
}
// The CPU seconds a process has used so far, every thread's (utime and stime).
double cpu_seconds(pid_t pid) { return stat_fields(pid, 14, 15) / static_cast<double>(::sysconf(_SC_CLK_TCK)); }
// The MB of pages the kernel has handed it so far, cleared (minor faults, field 10, of 4 KiB pages:
// its heap has no huge pages): fresh memory a round touches, the page clearing a round costs.
double fresh_mb(pid_t pid) { return stat_fields(pid, 10, 10) * 4096.0 / 1e6; }

// Every match of `pattern` in text: its first capture group as a number.
std::vector<double> numbers(const std::string& text, const std::string& pattern) {
    std::vector<double> out;
    const std::regex re(pattern);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
        out.push_back(std::stod((*it)[1].str()));
    return out;
}

void check(int rc, const char* what) {
    if (rc != 0) throw Error(std::string("bench_rounds: ") + what + ": " + zmq_strerror(zmq_errno()));
}

// What libzmq's CURVE carries on one connection here: a DEALER sends `mb` MB in 1 MiB messages to a
// ROUTER on 127.0.0.1 (sender and receiver on their own threads, as two processes would be).
double curve_ceiling_mb_per_s(double mb) {
    char server_public[41], server_secret[41], client_public[41], client_secret[41];
    check(zmq_curve_keypair(server_public, server_secret), "curve keypair");
    check(zmq_curve_keypair(client_public, client_secret), "curve keypair");
    void* ctx = zmq_ctx_new();
    void* router = zmq_socket(ctx, ZMQ_ROUTER);
    const int one = 1;
    check(zmq_setsockopt(router, ZMQ_CURVE_SERVER, &one, sizeof(one)), "curve server");
    check(zmq_setsockopt(router, ZMQ_CURVE_SECRETKEY, server_secret, 40), "server key");
    check(zmq_bind(router, "tcp://127.0.0.1:*"), "bind");
    char endpoint[256];
    size_t size = sizeof(endpoint);
    check(zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, endpoint, &size), "endpoint");
    const std::size_t chunk = 1 << 20;
    const auto messages = static_cast<std::size_t>(mb * 1e6 / chunk) + 1;
    std::thread sender([&] {
        void* dealer = zmq_socket(ctx, ZMQ_DEALER);
        zmq_setsockopt(dealer, ZMQ_CURVE_SERVERKEY, server_public, 40);
        zmq_setsockopt(dealer, ZMQ_CURVE_PUBLICKEY, client_public, 40);
        zmq_setsockopt(dealer, ZMQ_CURVE_SECRETKEY, client_secret, 40);
        const int send_timeout_ms = 30'000;  // a receiver that gave up must not leave this send blocked
        zmq_setsockopt(dealer, ZMQ_SNDTIMEO, &send_timeout_ms, sizeof(send_timeout_ms));
        zmq_connect(dealer, endpoint);
        std::vector<char> payload(chunk, 'x');
        for (std::size_t i = 0; i < messages; ++i)
            if (zmq_send(dealer, payload.data(), payload.size(), 0) < 0) break;
        const int linger = 10'000;
        zmq_setsockopt(dealer, ZMQ_LINGER, &linger, sizeof(linger));
        zmq_close(dealer);
    });
    const int timeout_ms = 30'000;
    zmq_setsockopt(router, ZMQ_RCVTIMEO, &timeout_ms, sizeof(timeout_ms));
    std::vector<char> buffer(chunk + 64);
    Clock::time_point first{};
    double bytes = 0;
    for (std::size_t i = 0; i < messages; ++i) {
        char id[256];
        if (zmq_recv(router, id, sizeof(id), 0) < 0) break;  // the sender's routing id, then its message
        const int n = zmq_recv(router, buffer.data(), buffer.size(), 0);
        if (n < 0) break;
        if (i == 0) first = Clock::real().now();
        else bytes += n;  // the first message starts the clock
    }
    const double took = seconds_since(first);
    sender.join();
    zmq_close(router);
    zmq_ctx_term(ctx);
    return bytes / 1e6 / took;
}

// What Archipelago's own stack carries: one blob of `mb` MB from a HostLink to a PeerLink over CURVE on
// 127.0.0.1 (transfer chunks, checksums, credit), each side polled on its own thread as in two processes.
double link_mb_per_s(double mb) {
    const net::KeyPair host_keys = net::generate_keypair(), peer_keys = net::generate_keypair();
    net::AllowList allow;
    allow.add(peer_keys.public_key, "peer");
    net::HostSocketOptions ho;
    ho.keys = host_keys;
    ho.allow = allow;
    ho.run_id = 1;
    net::HostSocket host_socket(ho);
    net::PeerSocketOptions po;
    po.host_endpoint = host_socket.endpoint();
    po.host_public_key = host_keys.public_key;
    po.keys = peer_keys;
    po.run_id = 1;
    net::PeerSocket peer_socket(po);
    HostLink host(host_socket, {});
    PeerLink peer(peer_socket, {});
    const auto deadline = Clock::real().now() + std::chrono::seconds(120);
    std::atomic<bool> held{false};
    std::thread receiver([&] {
        while (!held && Clock::real().now() < deadline)
            if (std::optional<LinkEvent> e = peer.poll(50))
                if (e->kind == LinkEvent::Kind::message && e->type == protocol::Type::state) held = true;
    });
    peer.send("", protocol::Type::hello, 0, std::vector<std::byte>(8));  // the host learns the peer's key from it
    std::string key;
    while (key.empty() && Clock::real().now() < deadline)
        if (std::optional<LinkEvent> e = host.poll(50)) key = e->peer;
    const SharedBlob blob = share_blob(std::vector<std::byte>(static_cast<std::size_t>(mb * 1e6), std::byte{7}));
    const Clock::time_point start = Clock::real().now();
    if (!key.empty()) host.send_blob(key, protocol::Type::state, 0, blob);
    while (!key.empty() && !held && Clock::real().now() < deadline) host.poll(50);
    const double took = seconds_since(start);
    receiver.join();  // it ends once the blob is held, or at the deadline
    return held ? mb / took : 0;
}

// --keep: the run folder is moved aside when the measurement ends (however it ends), and named.
struct KeptFolder {
    TempDir& dir;
    bool keep;
    ~KeptFolder() {
        if (!keep) return;
        const std::filesystem::path to = std::filesystem::temp_directory_path() / ("bench_rounds_" + std::to_string(::getpid()));
        std::error_code ec;
        std::filesystem::rename(dir.path, to, ec);
        std::filesystem::create_directories(dir.path, ec);
        std::fprintf(stderr, "  the run's folder (logs, checkpoints): %s\n", to.c_str());
    }
};

std::string run_toml(const Options& o, const TempDir& dir, int port) {
    std::ostringstream t;
    t << "[run]\nname = \"bench_rounds\"\nrounds = " << o.rounds << "\nislands = " << o.islands
      << "\nbind = \"tcp://127.0.0.1:" << port << "\"\ncheckpoint_dir = \"" << dir.file("host") << "\"\n"
      << "checkpoint_every = " << o.checkpoint_every << "\n"
      << "[model]\nconfig = \"" << o.config << "\"\n";
    t << "vocab = " << model_preset(o.config, o.vocab).vocab_size << "\n";
    t << "[inner]\nsteps_per_round = " << o.steps << "\nbatch = " << o.batch << "\nseq_len = " << o.seq_len
      << "\nwarmup = 1\nval_batches = 1\n[wire]\ncodec = \"" << o.codec << "\"\ndown_codec = \"" << o.down_codec << "\"\n"
      << "[deadlines]\njoin_timeout_s = 1200\nround_timeout_s = 1200\n";
    if (o.moments_every >= 0) t << "[outer]\nsync_moments_every = " << o.moments_every << "\n";
    return t.str();
}

void setup(const std::vector<std::string>& args, const std::string& log) {
    test::Process p(args, log);
    if (p.wait(120) != 0) throw Error("bench_rounds: archipelago " + args.front() + " failed: " + test::slurp(log));
}

// Peak RSS of a process run to its end.
double run_to_end(const std::vector<std::string>& args, const std::string& log, const std::vector<std::string>& env,
                  double timeout_s) {
    test::Process p(args, log, env);
    double peak = 0;
    const auto end = Clock::real().now() + std::chrono::duration<double>(timeout_s);
    while (p.running() && Clock::real().now() < end) {
        peak = std::max(peak, peak_rss(p.pid()));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (p.wait(1) != 0) throw Error("bench_rounds: archipelago " + args.front() + " failed: " + p.log().substr(0, 2000));
    return peak;
}

nlohmann::ordered_json measure(const Options& o) {
    const ModelConfig model = model_preset(o.config, o.vocab);
    const std::string vocab = std::to_string(model.vocab_size);
    const double params = static_cast<double>(ParamLayout(model).num_params());
    const double P = 4 * params;
    TempDir dir;
    const KeptFolder kept{dir, o.keep};  // after every process below has ended
    const std::vector<std::string> env = {"OMP_NUM_THREADS=1"};
    // The host's own phases (decode, aggregate, encode) run while the islands wait for it, so it may
    // have more threads than a peer; passive, they sleep rather than spin while the islands compute.
    const std::vector<std::string> host_env = {"OMP_NUM_THREADS=" + std::to_string(o.host_threads), "OMP_WAIT_POLICY=passive"};
    std::fprintf(stderr, "bench_rounds: %s (%.0fM parameters, P = %.0f MB), %d islands, %s up, %s down\n",
                 o.config.c_str(), params / 1e6, P / 1e6, o.islands, o.codec.c_str(), o.down_codec.c_str());

    const double ceiling = curve_ceiling_mb_per_s(o.ceiling_mb);
    std::fprintf(stderr, "  CURVE on one connection: %.0f MB/s\n", ceiling);
    const double through_link = link_mb_per_s(o.ceiling_mb / 2);
    std::fprintf(stderr, "  a blob through HostLink/PeerLink: %.0f MB/s\n", through_link);
    // What a peer holds beyond its DiLoCo state: the engine's peak (archipelago train on the same
    // model and batch), or a synthetic island's θ_i alone.
    double engine = P;
    if (o.synthetic) {
        std::fprintf(stderr, "  SYNTHETIC inner steps: each island perturbs θ (no engine); its θ_i is 1 P\n");
    } else {
        std::vector<std::string> train = {"train", "--config", o.config, "--batch", std::to_string(o.batch), "--seq-len",
                                          std::to_string(o.seq_len), "--steps", "2", "--val-every", "0", "--vocab", vocab,
                                          "--out", dir.file("train")};
        engine = run_to_end(train, dir.file("train.log"), env, o.timeout_s);
        std::fprintf(stderr, "  archipelago train (the engine alone): peak RSS %.2f P\n", engine / P);
    }

    const int port = test::free_port();
    const std::string config = dir.file("run.toml");
    write_file(config, run_toml(o, dir, port));
    for (int i = 0; i < o.islands; ++i) {
        const std::string key = dir.file("peer-" + std::to_string(i) + ".key");
        setup({"keygen", "--out", key}, dir.file("setup.log"));
        setup({"invite", "--config", config, "--peer-key", key + ".pub", "--name", "peer-" + std::to_string(i), "--out",
               dir.file("peer-" + std::to_string(i) + ".invite")},
              dir.file("setup.log"));
    }
    const Clock::time_point started = Clock::real().now();
    test::Process host({"host", "--config", config, "--events", dir.file("host.events")}, dir.file("host.log"), host_env);
    host.watch_events(dir.file("host.events"));
    if (!host.wait_event({.kind = "waiting"}, o.timeout_s)) throw Error("bench_rounds: the host did not start: " + host.log());
    const double host_start = seconds_since(started);
    std::fprintf(stderr, "  host listening after %.1f s\n", host_start);
    std::vector<std::unique_ptr<test::Process>> peers;
    for (int i = 0; i < o.islands; ++i) {
        const std::string name = "peer-" + std::to_string(i);
        std::filesystem::create_directories(dir.file(name));
        std::vector<std::string> args = {"peer", "--invite", dir.file(name + ".invite"), "--key", dir.file(name + ".key"), "--name", name};
        if (o.synthetic) {
            args.push_back("--device");
            args.push_back("cuda");  // the synthetic backend stands where a GPU backend would
        }
        if (o.state_on_disk) args.push_back("--state-on-disk");
        peers.push_back(std::make_unique<test::Process>(args, dir.file(name + ".log"), env, dir.file(name),
                                                        o.synthetic ? "bench_rounds_peer" : "archipelago"));
        if (!o.one_by_one) continue;
        const auto deadline = Clock::real().now() + std::chrono::duration<double>(o.timeout_s);
        while (peers.back()->log().find("a state of") == std::string::npos) {
            if (!peers.back()->running() || Clock::real().now() > deadline)
                throw Error("bench_rounds: " + name + " got no state: " + peers.back()->log().substr(0, 4000));
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    double host_peak = 0, peer_peak = 0, peer_anon = 0;  // peer_anon: sampled every 100 ms
    // Every process's CPU seconds when the first round is done and when the last is: what a round
    // costs the machine, which on a few cores bounds how short a sync can be.
    auto all_cpu = [&] {
        double s = cpu_seconds(host.pid());
        for (auto& p : peers) s += cpu_seconds(p->pid());
        return s;
    };
    double cpu_first = 0, cpu_last = 0;
    // The same for fresh pages, the host's and the peers' (their mean).
    auto peers_fresh = [&] {
        double mb = 0;
        for (auto& p : peers) mb += fresh_mb(p->pid());
        return mb / static_cast<double>(std::max<std::size_t>(peers.size(), 1));
    };
    double host_fresh_first = 0, host_fresh_last = 0, peer_fresh_first = 0, peer_fresh_last = 0;
    std::size_t shown = 0;
    const auto end = Clock::real().now() + std::chrono::duration<double>(o.timeout_s);
    while (host.running() && Clock::real().now() < end) {
        host_peak = std::max(host_peak, peak_rss(host.pid()));
        for (auto& p : peers) {
            peer_peak = std::max(peer_peak, peak_rss(p->pid()));
            peer_anon = std::max(peer_anon, status_bytes(p->pid(), "RssAnon"));
        }
        const std::vector<double> done = numbers(host.log(), R"(round (\d+) host seconds)");
        if (done.size() > shown) {
            shown = done.size();
            if (shown == 1) cpu_first = all_cpu(), host_fresh_first = fresh_mb(host.pid()), peer_fresh_first = peers_fresh();
            if (shown == static_cast<std::size_t>(o.rounds))
                cpu_last = all_cpu(), host_fresh_last = fresh_mb(host.pid()), peer_fresh_last = peers_fresh();
            std::fprintf(stderr, "  round %zu/%d done after %.0f s; host peak RSS %.2f P, peer %.2f P\n", shown, o.rounds,
                         seconds_since(started), host_peak / P, peer_peak / P);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (host.wait(30) != 0) throw Error("bench_rounds: the host did not finish: " + host.log().substr(0, 4000));
    for (auto& p : peers) p->wait(60);

    const std::string h = host.log();
    std::vector<double> states, idle, compute;
    double state_mb = 0, first_ask = 1e300, last_held = -1e300;  // every joiner's first state together
    for (auto& p : peers) {
        const std::string log = p->log();
        const std::vector<double> mb = numbers(log, R"(a state of ([0-9.]+) MB in)");
        const std::vector<double> s = numbers(log, R"(MB in ([0-9.]+) s since it was asked for)");
        if (!mb.empty() && !s.empty() && s[0] > 0) states.push_back(mb[0] / s[0]);
        std::smatch at;  // the line's time of day, in seconds
        if (!mb.empty() && !s.empty() && std::regex_search(log, at, std::regex(R"((\d\d):(\d\d):(\d\d\.\d+) [^\n]*a state of)"))) {
            const double held = 3600 * std::stod(at[1].str()) + 60 * std::stod(at[2].str()) + std::stod(at[3].str());
            state_mb += mb[0];
            first_ask = std::min(first_ask, held - s[0]);
            last_held = std::max(last_held, held);
        }
        const std::vector<double> i = numbers(log, R"(idle ([0-9.]+) s since this island's last inner step)");
        idle.insert(idle.end(), i.begin(), i.end());
        const std::vector<double> c = numbers(log, R"(times: compute ([0-9.]+) s)");
        compute.insert(compute.end(), c.begin(), c.end());
    }
    auto phase = [&](const std::string& name) { return median(numbers(h, name + R"( ([0-9.]+))")); };
    nlohmann::ordered_json row;
    row["params"] = static_cast<int64_t>(params);
    row["islands"] = o.islands;
    row["codec"] = o.codec;
    row["down_codec"] = o.down_codec;
    row["checkpoint_every"] = o.checkpoint_every;
    row["host_threads"] = o.host_threads;
    row["moments_every"] = o.moments_every >= 0 ? o.moments_every : RunConfig{}.sync_moments_every;
    row["inner_steps"] = o.synthetic ? "synthetic" : "real";
    row["state_on_disk"] = o.state_on_disk;
    row["joins"] = o.one_by_one ? "one by one" : "together";
    row["host_rss_over_p"] = bench::rounded(host_peak / P, 2);
    // What the host's bound allows beyond its 4 P: the round's Δs, held out of their zstd stage.
    const double held_deltas = static_cast<double>(o.islands) * static_cast<double>(compression::payload_bytes_limit(o.codec, params)) / P;
    row["held_deltas_over_p"] = bench::rounded(held_deltas, 2);
    // The issue's bound: 4 P, the compressed Δs held, and a fixed amount per peer (docs/run-config.md's
    // 28 MiB: what a peer's messages may hold read but not handled, and its data replies).
    constexpr double kPerPeerFixed = 28.0 * (1 << 20);
    row["host_bound_over_p"] = bench::rounded(4.0 + held_deltas + o.islands * kPerPeerFixed / P, 2);
    row["peer_rss_over_p"] = bench::rounded(peer_peak / P, 2);
    row["peer_diloco_rss_over_p"] = bench::rounded((peer_peak - engine) / P, 2);
    row["peer_anon_over_p"] = bench::rounded(peer_anon / P, 2);
    row["peer_compute_s"] = bench::rounded(median(compute), 2);
    row["state_mb_per_s"] = bench::rounded(median(states), 1);
    row["state_all_mb_per_s"] = bench::rounded(last_held > first_ask ? state_mb / (last_held - first_ask) : -1, 1);
    row["curve_ceiling_mb_per_s"] = bench::rounded(ceiling, 1);
    row["link_mb_per_s"] = bench::rounded(through_link, 1);
    row["idle_s_per_sync"] = bench::rounded(median(idle), 2);
    row["idle_s_max"] = bench::rounded(idle.empty() ? -1 : *std::max_element(idle.begin(), idle.end()), 2);
    row["cpu_s_per_round"] = bench::rounded(o.rounds > 1 && cpu_last > 0 ? (cpu_last - cpu_first) / (o.rounds - 1) : -1, 2);
    row["cores"] = static_cast<int>(std::thread::hardware_concurrency());
    const bool counted = o.rounds > 1 && cpu_last > 0;
    row["host_fresh_mb_per_round"] = bench::rounded(counted ? (host_fresh_last - host_fresh_first) / (o.rounds - 1) : -1, 0);
    row["peer_fresh_mb_per_round"] = bench::rounded(counted ? (peer_fresh_last - peer_fresh_first) / (o.rounds - 1) : -1, 0);
    row["host_start_s"] = bench::rounded(host_start, 2);
    row["receive_s"] = bench::rounded(phase("receive"), 2);
    row["decode_s"] = bench::rounded(phase("decode"), 2);
    row["aggregate_encode_s"] = bench::rounded(phase(R"(aggregate\+encode)"), 2);
    row["outer_step_s"] = bench::rounded(phase("outer step"), 2);
    row["checkpoint_s"] = bench::rounded(phase("checkpoint"), 2);
    row["eval_s"] = bench::rounded(phase("eval"), 2);
    row["send_s"] = bench::rounded(median(numbers(h, R"(update held by every island ([0-9.]+) s)")), 2);
    return row;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_rounds: what a DiLoCo round costs beyond its link: real host and peer processes over CURVE on 127.0.0.1"};
    Options o;
    app.add_option("--config", o.config, "model preset (gpt2-124m, smollm-135m, ...)");
    app.add_option("--vocab", o.vocab, "vocabulary size (0: the preset's)")->check(CLI::NonNegativeNumber);
    app.add_option("--islands", o.islands, "peer processes")->check(bench::at_least_one());
    app.add_flag("--synthetic", o.synthetic,
                 "islands take synthetic inner steps (perturb θ, no engine: bench_rounds_peer); the host, net, codecs and DiLoCo code are real");
    app.add_option("--rounds", o.rounds, "rounds")->check(bench::at_least_one());
    app.add_option("--steps", o.steps, "inner steps a round (H)")->check(bench::at_least_one());
    app.add_option("--batch", o.batch, "B")->check(bench::at_least_one());
    app.add_option("--seq-len", o.seq_len, "T")->check(bench::at_least_one());
    app.add_option("--moments-every", o.moments_every,
                   "outer.sync_moments_every: DES-LOC's AdamW moments every this many rounds (0: never; default: run.toml's)");
    app.add_option("--host-threads", o.host_threads, "the host's OpenMP threads (passive: they sleep while idle); each peer has one")
        ->check(bench::at_least_one());
    app.add_option("--checkpoint-every", o.checkpoint_every, "run.checkpoint_every: updates between checkpoints")
        ->check(bench::at_least_one());
    app.add_option("--codec", o.codec, "uplink codec (pseudo-gradients)");
    app.add_option("--down-codec", o.down_codec, "downlink codec (updates)");
    app.add_flag("--state-on-disk", o.state_on_disk, "the peers keep θ's replica and the residual in memory-mapped files");
    app.add_flag("--one-by-one", o.one_by_one,
                 "each peer starts once the last holds its state: a joiner's state crosses alone, as a late joiner's");
    app.add_option("--ceiling-mb", o.ceiling_mb, "MB sent to measure CURVE's ceiling")->check(CLI::PositiveNumber);
    app.add_option("--timeout-s", o.timeout_s, "give up on a process after this long")->check(CLI::PositiveNumber);
    app.add_flag("--json", o.json, "one JSON object per row instead of the table");
    app.add_flag("--keep", o.keep, "keep the run's folder (logs, checkpoints) and print where it is");
    return bench::run_main(app, argc, argv, [&] {
        if (!std::getenv("ARCH_BIN_DIR"))  // the archipelago beside this binary
            setenv("ARCH_BIN_DIR", std::filesystem::absolute(argv[0]).parent_path().c_str(), 1);
        const nlohmann::ordered_json row = measure(o);
        if (o.json) return bench::print_row(row);
        for (const auto& [key, value] : row.items()) std::printf("%-24s %s\n", key.c_str(), value.dump().c_str());
    });
}
