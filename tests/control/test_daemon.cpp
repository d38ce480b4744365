// tests/control/test_daemon.cpp: two `archipelago daemon` processes on 127.0.0.1 driven only through
// the control API, as the desktop app drives them: one is told to host a tiny run, the other to join
// it with an invite. Pausing the host holds round 0 back; pausing the peer holds back its answer to
// round_start; after resume the run finishes, /api/rounds and /api/peers show it, and both daemons
// keep serving (idle) afterwards. Also `archipelago status` against the host daemon.
#include <catch2/catch.hpp>

#include <csignal>

#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "peers/control/control_server.h"
#include "peers/control/token.h"
#include "tests/control/http_test_util.h"
#include "tests/core/temp_dir.h"
#include "tests/peers/process.h"

using namespace arch;
using arch::test::eventually;
using arch::test::free_port;
using arch::test::Process;
using nlohmann::json;

namespace {

const std::vector<std::string> kEnv = {"OMP_NUM_THREADS=1"};

// A daemon process on a free control port, ready once its API answers; its run events in NAME.events.
struct Daemon {
    std::unique_ptr<Process> process;
    int port = free_port();
    std::string token;

    Daemon(const TempDir& dir, const std::string& name) {
        const std::string token_file = dir.file(name + ".token"), events = dir.file(name + ".events");
        process = std::make_unique<Process>(std::vector<std::string>{"daemon", "--control-port", std::to_string(port),
                                                                     "--token-file", token_file, "--name", name,
                                                                     "--events", events},
                                            dir.file(name + ".log"), kEnv);
        process->watch_events(events);
        const bool up = process->wait_until(
            [&] {
                if (!file_exists(token_file)) return false;
                try {
                    token = load_token(token_file);
                    return http_request(port, "GET", "/api/status", token, "", 1).status == 200;
                } catch (const std::exception&) {
                    return false;  // not listening yet
                }
            },
            30);
        if (!up) FAIL(process->log());
    }
    json get(const std::string& target) {
        const HttpReply r = http_request(port, "GET", target, token);
        INFO(target << " -> " << r.status << " " << r.body);
        REQUIRE(r.status == 200);
        return json::parse(r.body);
    }
    HttpReply post(const std::string& target, const std::string& body = "") {
        return http_request(port, "POST", target, token, body);
    }
    std::string state() { return get("/api/status").at("state").get<std::string>(); }
    std::size_t rounds() { return get("/api/rounds").at("rounds").size(); }
    int events(const arch::test::EventMatch& m) { return process->count(m); }
};

// The bodies of POST /api/host and /api/join.
std::string host_body(const std::string& config) { return json{{"config", config}}.dump(); }
std::string join_body(const std::string& invite, const std::string& key) {
    return json{{"invite", invite}, {"key", key}}.dump();
}

// A tiny one-island run in dir: run.toml (returned as text), the peer's key pair peer.key and its
// invite peer.invite (which also writes the host's allow-list).
std::string make_run(const TempDir& dir, const std::string& name, int rounds) {
    const std::string config = "[run]\nname = \"" + name + "\"\nrounds = " + std::to_string(rounds) +
                               "\nislands = 1\nbind = \"tcp://127.0.0.1:" + std::to_string(free_port()) +
                               "\"\ncheckpoint_dir = \"" + dir.file("host") +
                               "\"\n[model]\nconfig = \"tiny\"\nlayers = 1\nchannels = 64\nheads = 2\nmax_seq_len = 32\n"
                               "[inner]\nsteps_per_round = 3\nbatch = 2\nseq_len = 16\nlr = 1e-3\nwarmup = 1\n"
                               "val_batches = 2\n[deadlines]\njoin_timeout_s = 60\nround_timeout_s = 30\n"
                               "heartbeat_timeout_s = 2\n";
    write_file(dir.file("run.toml"), config);
    Process kg({"keygen", "--out", dir.file("peer.key")}, dir.file("setup.log"));
    REQUIRE(kg.wait(30) == 0);
    Process inv({"invite", "--config", dir.file("run.toml"), "--peer-key", dir.file("peer.key.pub"), "--name",
                 "island-a", "--out", dir.file("peer.invite")},
                dir.file("setup.log"));
    REQUIRE(inv.wait(30) == 0);
    return config;
}

}  // namespace

TEST_CASE("daemons host and join a run through the control API, with pause and resume") {
    TempDir dir;
    const std::string config = make_run(dir, "api-run", 3);
    Daemon host(dir, "hostd");
    Daemon peer(dir, "peerd");
    INFO(host.process->log());
    INFO(peer.process->log());

    const json idle = host.get("/api/status");
    CHECK(idle.at("role").get<std::string>() == "idle");
    CHECK(peer.post("/api/pause").status == 409);  // nothing to pause yet
    CHECK(peer.post("/api/join", join_body("garbage", dir.file("peer.key"))).status == 400);
    CHECK(peer.post("/api/join", join_body(read_file_bytes(dir.file("peer.invite")), dir.file("missing.key"))).status ==
          400);

    // Host, paused at once: round 0 must wait for resume even when the island is ready.
    REQUIRE(host.post("/api/host", host_body(config)).status == 200);
    CHECK(host.post("/api/host", host_body(config)).status == 409);
    REQUIRE(host.post("/api/pause").status == 200);
    const std::string invite = read_file_bytes(dir.file("peer.invite"));
    REQUIRE(peer.post("/api/join", join_body(invite, dir.file("peer.key"))).status == 200);
    CHECK(peer.post("/api/join", join_body(invite, "k")).status == 409);
    REQUIRE(eventually(
        [&] {
            const json p = host.get("/api/peers");
            const auto& list = p.at("peers");
            return list.size() == 1 && list[0].at("connected").get<bool>() && list[0].at("in_sync").get<bool>();
        },
        60));
    const json ps = host.get("/api/peers").at("peers")[0];
    CHECK(ps.at("name").get<std::string>() == "peerd");
    CHECK(ps.at("fingerprint").get<std::string>().size() > 8);
    CHECK(ps.at("island").get<double>() == 0);
    CHECK(ps.at("devices").get<double>() == 1);
    // The island is ready: a host that ignored the pause would start round 0 within its 50 ms loop.
    CHECK_FALSE(eventually([&] { return host.events({.kind = "round_started"}) > 0; }, 1.0));
    CHECK(host.get("/api/status").at("state").get<std::string>() == "paused");
    CHECK(host.get("/api/status").at("paused").get<bool>());

    // Pause the peer too, then resume the host: round 0 starts but the island holds its answer.
    REQUIRE(peer.post("/api/pause").status == 200);
    REQUIRE(host.post("/api/resume").status == 200);
    REQUIRE(peer.process->wait_event({.kind = "paused", .round = 0}, 30));
    CHECK(host.rounds() == 0);
    REQUIRE(peer.post("/api/resume").status == 200);

    REQUIRE(eventually([&] { return host.state() == "finished" && peer.state() == "finished"; }, 60));
    const json rounds = host.get("/api/rounds");
    REQUIRE(rounds.at("rounds").size() == 3);
    for (const json& r : rounds.at("rounds")) {
        CHECK(r.at("islands").get<double>() == 1);
        CHECK(r.at("inner_loss").get<double>() > 0);
        CHECK(r.at("val_loss").get<double>() > 0);
        CHECK(r.at("bytes_up").get<double>() > 0);
        CHECK(r.at("compression_ratio").get<double>() > 1);
    }
    const json st = host.get("/api/status");
    CHECK(st.at("role").get<std::string>() == "host");
    CHECK(st.at("run").get<std::string>() == "api-run");
    CHECK(st.at("round").get<double>() == 3);
    const json after = host.get("/api/peers").at("peers")[0];
    CHECK(after.at("last_round").get<double>() == 2);
    CHECK(after.at("bytes_up").get<double>() > 0);
    CHECK(after.at("bytes_down").get<double>() > 0);
    // Its rounds by the host's clock (its Δ before to its last Δ), and the host's address it came in on.
    const double compute = after.at("compute_s_per_round").get<double>();
    const double busy = after.at("utilisation").get<double>();
    CHECK(compute > 0);
    CHECK(busy > 0);
    CHECK(busy <= 1);
    CHECK(after.at("communication_s_per_round").get<double>() >= 0);
    CHECK(compute / busy == Approx(compute + after.at("communication_s_per_round").get<double>()).epsilon(1e-6));
    const std::size_t bind = config.find("tcp://127.0.0.1:");
    REQUIRE(bind != std::string::npos);
    CHECK(after.at("came_in_on").get<std::string>() == config.substr(bind + 6, config.find('"', bind) - bind - 6));
    CHECK(after.at("came_from").get<std::string>().rfind("127.0.0.1:", 0) == 0);
    CHECK(host.process->log().find("came in on 127.0.0.1:") != std::string::npos);

    const json pst = peer.get("/api/status");
    CHECK(pst.at("role").get<std::string>() == "peer");
    CHECK(pst.at("run").get<std::string>() == "api-run");
    CHECK(pst.at("theta_hash").get<std::string>() == st.at("theta_hash").get<std::string>());  // bit-identical θ
    CHECK(peer.rounds() == 3);
    const HttpReply metrics = http_request(host.port, "GET", "/metrics", host.token);
    CHECK(metrics.body.find("archipelago_rounds_total 3") != std::string::npos);
    CHECK(metrics.body.find("archipelago_peer_utilisation{peer=\"peerd\"") != std::string::npos);

    // The daemons keep serving after the run: idle again, nothing to leave.
    CHECK(eventually([&] { return host.post("/api/leave").status == 409; }, 10));
    CHECK(eventually([&] { return peer.post("/api/leave").status == 409; }, 10));

    // `archipelago status` prints the same from the command line.
    Process status({"status", "--control-port", std::to_string(host.port), "--token-file", dir.file("hostd.token")},
                   dir.file("status.log"));
    REQUIRE(status.wait(30) == 0);
    const std::string out = status.log();
    INFO(out);
    CHECK(out.find("host api-run: finished") != std::string::npos);
    CHECK(out.find("peerd") != std::string::npos);
    CHECK(out.find("inner loss") != std::string::npos);
    CHECK(out.find(" (127.0.0.1:") != std::string::npos);  // came in on (from)

    host.process->kill(SIGTERM);
    peer.process->kill(SIGTERM);
    CHECK(host.process->wait(20) == 0);
    CHECK(peer.process->wait(20) == 0);
}

TEST_CASE("a peer told to leave says bye; the host goes on without it") {
    TempDir dir;
    const std::string config = make_run(dir, "leave-run", 50);
    Daemon host(dir, "hostd");
    Daemon peer(dir, "peerd");
    INFO(host.process->log());
    INFO(peer.process->log());
    REQUIRE(host.post("/api/host", host_body(config)).status == 200);
    REQUIRE(peer.post("/api/join", join_body(read_file_bytes(dir.file("peer.invite")), dir.file("peer.key"))).status == 200);
    REQUIRE(eventually([&] { return host.rounds() >= 1; }, 60));
    REQUIRE(peer.post("/api/leave").status == 200);
    REQUIRE(eventually([&] { return peer.state() == "stopped"; }, 30));
    if (!host.process->wait_event({.kind = "peer_left", .peer = "peerd", .type = "left"}, 30))
        FAIL(host.process->log() + "\n---\n" + peer.process->log());
    CHECK_FALSE(host.get("/api/peers").at("peers")[0].at("connected").get<bool>());
    // Stopping the host through the API.
    REQUIRE(host.post("/api/leave").status == 200);
    REQUIRE(eventually([&] { return host.state() == "stopped"; }, 30));
    // Once the worker has wound down the daemon is idle: nothing to pause.
    CHECK(eventually([&] { return host.post("/api/pause").status == 409; }, 30));
}
