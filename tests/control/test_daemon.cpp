// tests/control/test_daemon.cpp: two `archipelago daemon` processes on 127.0.0.1 driven only through
// the control API, as the desktop app drives them: one is told to host a tiny run, the other to join
// it with an invite. Pausing the host holds round 0 back; pausing the peer holds back its answer to
// round_start; after resume the run finishes, /api/rounds and /api/peers show it, and both daemons
// keep serving (idle) afterwards. Also `archipelago status` against the host daemon.
#include <catch2/catch.hpp>

#include <csignal>
#include <regex>

#include "peers/control/control_server.h"
#include "peers/control/json.h"
#include "peers/control/token.h"
#include "tests/control/http_test_util.h"
#include "tests/core/temp_dir.h"
#include "tests/peers/process.h"

using namespace arch;
using arch::test::eventually;
using arch::test::free_port;
using arch::test::Process;
using Kind = json::Value::Kind;

namespace {

const std::vector<std::string> kEnv = {"OMP_NUM_THREADS=1"};

// A daemon process on an ephemeral control port; its port is read from the line it logs.
struct Daemon {
    std::unique_ptr<Process> process;
    int port = -1;
    std::string token;

    Daemon(const TempDir& dir, const std::string& name) {
        const std::string token_file = dir.file(name + ".token");
        process = std::make_unique<Process>(
            std::vector<std::string>{"daemon", "--control-port", "0", "--token-file", token_file, "--name", name},
            dir.file(name + ".log"), kEnv);
        REQUIRE(process->wait_for("daemon: idle", 30));
        std::smatch m;
        const std::string log = process->log();
        REQUIRE(std::regex_search(log, m, std::regex("control API on 127\\.0\\.0\\.1:(\\d+)")));
        port = std::stoi(m[1]);
        token = load_token(token_file);
    }
    json::Value get(const std::string& target) {
        const HttpReply r = http_request(port, "GET", target, token);
        INFO(target << " -> " << r.status << " " << r.body);
        REQUIRE(r.status == 200);
        return json::parse(r.body);
    }
    HttpReply post(const std::string& target, const std::string& body = "") {
        return http_request(port, "POST", target, token, body);
    }
    std::string state() { return get("/api/status").get("state")->s; }
    std::size_t rounds() { return get("/api/rounds").get("rounds")->items.size(); }
    bool log_has(const std::string& needle) {
        const json::Value log = get("/api/log?lines=500");
        for (const json::Value& l : log.get("lines")->items)
            if (l.s.find(needle) != std::string::npos) return true;
        return false;
    }
};

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

    const json::Value idle = host.get("/api/status");
    CHECK(idle.get("role")->s == "idle");
    CHECK(peer.post("/api/pause").status == 409);  // nothing to pause yet
    CHECK(peer.post("/api/join", "{\"invite\":\"garbage\",\"key\":\"" + dir.file("peer.key") + "\"}").status == 400);
    CHECK(peer.post("/api/join", "{\"invite\":" + json::quote(read_file_bytes(dir.file("peer.invite"))) +
                                     ",\"key\":\"" + dir.file("missing.key") + "\"}")
              .status == 400);

    // Host, paused at once: round 0 must wait for resume even when the island is ready.
    REQUIRE(host.post("/api/host", "{\"config\":" + json::quote(config) + "}").status == 200);
    CHECK(host.post("/api/host", "{\"config\":" + json::quote(config) + "}").status == 409);
    REQUIRE(host.post("/api/pause").status == 200);
    const std::string invite = read_file_bytes(dir.file("peer.invite"));
    REQUIRE(peer.post("/api/join", "{\"invite\":" + json::quote(invite) + ",\"key\":" + json::quote(dir.file("peer.key")) +
                                       "}")
                .status == 200);
    CHECK(peer.post("/api/join", "{\"invite\":" + json::quote(invite) + ",\"key\":\"k\"}").status == 409);
    REQUIRE(eventually(
        [&] {
            const json::Value p = host.get("/api/peers");
            const auto& list = p.get("peers")->items;
            return list.size() == 1 && list[0].get("connected")->b && list[0].get("in_sync")->b;
        },
        60));
    const json::Value ps = host.get("/api/peers").get("peers")->items[0];
    CHECK(ps.get("name")->s == "peerd");
    CHECK(ps.get("fingerprint")->s.size() > 8);
    CHECK(ps.get("island")->n == 0);
    CHECK(ps.get("devices")->n == 1);
    // The island is ready: a host that ignored the pause would start round 0 within its 50 ms loop.
    CHECK_FALSE(eventually([&] { return host.log_has("round 0 started"); }, 1.0));
    CHECK(host.get("/api/status").get("state")->s == "paused");
    CHECK(host.get("/api/status").get("paused")->b);

    // Pause the peer too, then resume the host: round 0 starts but the island holds its answer.
    REQUIRE(peer.post("/api/pause").status == 200);
    REQUIRE(host.post("/api/resume").status == 200);
    REQUIRE(eventually([&] { return peer.log_has("paused: round 0 waits for resume"); }, 30));
    CHECK(host.rounds() == 0);
    REQUIRE(peer.post("/api/resume").status == 200);

    REQUIRE(eventually([&] { return host.state() == "finished" && peer.state() == "finished"; }, 60));
    const json::Value rounds = host.get("/api/rounds");
    REQUIRE(rounds.get("rounds")->items.size() == 3);
    for (const json::Value& r : rounds.get("rounds")->items) {
        CHECK(r.get("islands")->n == 1);
        CHECK(r.get("inner_loss")->n > 0);
        CHECK(r.get("val_loss")->n > 0);
        CHECK(r.get("bytes_up")->n > 0);
        CHECK(r.get("compression_ratio")->n > 1);
    }
    const json::Value st = host.get("/api/status");
    CHECK(st.get("role")->s == "host");
    CHECK(st.get("run")->s == "api-run");
    CHECK(st.get("round")->n == 3);
    const json::Value after = host.get("/api/peers").get("peers")->items[0];
    CHECK(after.get("last_round")->n == 2);
    CHECK(after.get("bytes_up")->n > 0);
    CHECK(after.get("bytes_down")->n > 0);

    const json::Value pst = peer.get("/api/status");
    CHECK(pst.get("role")->s == "peer");
    CHECK(pst.get("run")->s == "api-run");
    CHECK(pst.get("theta_hash")->s == st.get("theta_hash")->s);  // bit-identical θ
    CHECK(peer.rounds() == 3);
    const HttpReply metrics = http_request(host.port, "GET", "/metrics", host.token);
    CHECK(metrics.body.find("archipelago_rounds_total 3") != std::string::npos);

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
    REQUIRE(host.post("/api/host", "{\"config\":" + json::quote(config) + "}").status == 200);
    REQUIRE(peer.post("/api/join", "{\"invite\":" + json::quote(read_file_bytes(dir.file("peer.invite"))) +
                                       ",\"key\":" + json::quote(dir.file("peer.key")) + "}")
                .status == 200);
    REQUIRE(eventually([&] { return host.rounds() >= 1; }, 60));
    REQUIRE(peer.post("/api/leave").status == 200);
    REQUIRE(eventually([&] { return peer.state() == "stopped"; }, 30));
    if (!eventually([&] { return host.log_has("peerd left: peerd left"); }, 30))
        FAIL(host.process->log() + "\n---\n" + peer.process->log());
    CHECK_FALSE(host.get("/api/peers").get("peers")->items[0].get("connected")->b);
    // Stopping the host through the API.
    REQUIRE(host.post("/api/leave").status == 200);
    REQUIRE(eventually([&] { return host.state() == "stopped"; }, 30));
    // Once the worker has wound down the daemon is idle: nothing to pause.
    CHECK(eventually([&] { return host.post("/api/pause").status == 409; }, 30));
}
