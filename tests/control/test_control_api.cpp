// tests/control/test_control_api.cpp: the control API over real HTTP on 127.0.0.1 (a ControlServer
// on an ephemeral port, a RunStatus filled as a host fills it): the JSON shapes of every GET route,
// refusal without the token and with a wrong one, 400/404/405/409/413 and malformed HTTP (the
// server keeps serving), /metrics parsed here and checked by `promtool check metrics` where it is
// installed; the token file's creation and permission checks; strict parsing of request bodies;
// invite and revoke on a real run folder (409 where no run is hosted, 400 that changes nothing).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "net/allow_list.h"
#include "net/invite.h"
#include "net/keys.h"
#include "peers/cli/host_files.h"
#include "peers/cli/membership.h"
#include "peers/control/control_server.h"
#include "peers/control/token.h"
#include "tests/control/http_test_util.h"
#include "tests/core/temp_dir.h"

using namespace arch;
using arch::test::has;
using nlohmann::json;

namespace {

const std::string kToken = "test-token-0123456789abcdef";

// A status as a host fills it during a run: two peers, two rounds, traffic, a log.
void fill(RunStatus& s) {
    s.begin("host", "demo", 5, "sync", 2);
    s.set_state("training");
    s.set_round(2, std::string(64, 'a'));
    s.set_tokens_per_s(1234.5);
    for (int i = 0; i < 2; ++i) {
        s.peer("key" + std::to_string(i), [&](PeerRow& p) {
            p.name = "peer-" + std::to_string(i);
            p.fingerprint = "ab:cd:" + std::to_string(i);
            p.island = static_cast<uint32_t>(i);
            p.devices = 2;
            p.steps_per_s = 3.5;
            p.last_round = 1;
            p.bytes_up = 1000;
            p.bytes_down = 2000;
            p.connected = i == 0;
            p.in_sync = true;
        });
    }
    for (uint64_t r = 0; r < 2; ++r) {
        RoundRow row;
        row.round = r;
        row.islands = 2;
        row.mean_inner_loss = 4.5f - static_cast<float>(r);
        row.val_loss = 4.6f - static_cast<float>(r);
        row.bytes_up = 100;
        row.bytes_down = 200;
        row.compression_ratio = 3.9;
        row.seconds = 1.5;
        s.add_round(row);
    }
    for (int i = 0; i < 600; ++i) s.log("line " + std::to_string(i) + (i == 599 ? " \"quoted\"\ttab" : ""));
}

struct Served {
    RunStatus status;
    bool busy = true;
    std::string hosted, joined_invite, joined_key;
    ControlApi api;
    ControlServer server;

    explicit Served(bool metrics_public = false)
        : api(status, kToken,
              ControlActions{[this] { return busy; },
                             [this](const std::string& config) {
                                 if (config == "bad") throw Error("the posted run config is not TOML");
                                 hosted = config;
                             },
                             [this](const std::string& invite, const std::string& key) {
                                 joined_invite = invite;
                                 joined_key = key;
                             }},
              metrics_public),
          server(api, 0) {
        fill(status);
    }
    HttpReply get(const std::string& target, const std::string& token = kToken) {
        return http_request(server.port(), "GET", target, token);
    }
    HttpReply post(const std::string& target, const std::string& body, const std::string& token = kToken) {
        return http_request(server.port(), "POST", target, token, body);
    }
};

json parse_ok(const HttpReply& r) {
    INFO(r.body);
    REQUIRE(r.status == 200);
    REQUIRE(r.content_type == "application/json");
    return json::parse(r.body);
}

std::string error_of(const HttpReply& r) {
    const json v = json::parse(r.body);
    const auto e = v.find("error");
    return e != v.end() && e->is_string() ? e->get<std::string>() : "";
}

}  // namespace

TEST_CASE("the control API serves a run's status, peers, rounds and log as JSON") {
    Served s;
    REQUIRE(s.server.port() > 0);

    const json st = parse_ok(s.get("/api/status"));
    for (const char* k : {"role", "run", "state", "mode", "theta_hash"}) CHECK(has(st, k, &json::is_string));
    for (const char* k : {"round", "rounds", "islands", "rounds_finished"}) CHECK(has(st, k, &json::is_number_integer));
    for (const char* k : {"tokens_per_s", "uptime_s"}) CHECK(has(st, k, &json::is_number_float));
    CHECK(has(st, "paused", &json::is_boolean));
    CHECK(st.at("role").get<std::string>() == "host");
    CHECK(st.at("run").get<std::string>() == "demo");
    CHECK(st.at("state").get<std::string>() == "training");
    CHECK(st.at("round").get<double>() == 2);
    CHECK(st.at("rounds").get<double>() == 5);
    CHECK(st.at("islands").get<double>() == 2);
    CHECK(st.at("theta_hash").get<std::string>() == std::string(64, 'a'));
    CHECK(st.at("tokens_per_s").get<double>() == Approx(1234.5));

    const json peers = parse_ok(s.get("/api/peers"));
    REQUIRE(has(peers, "peers", &json::is_array));
    REQUIRE(peers.at("peers").size() == 2);
    for (const json& p : peers.at("peers")) {
        for (const char* k : {"name", "fingerprint"}) CHECK(has(p, k, &json::is_string));
        for (const char* k : {"island", "devices", "last_round", "bytes_up", "bytes_down"})
            CHECK(has(p, k, &json::is_number_integer));
        CHECK(has(p, "steps_per_s", &json::is_number_float));
        for (const char* k : {"connected", "in_sync"}) CHECK(has(p, k, &json::is_boolean));
    }
    CHECK(peers.at("peers")[0].at("name").get<std::string>() == "peer-0");
    CHECK(peers.at("peers")[0].at("connected").get<bool>());
    CHECK_FALSE(peers.at("peers")[1].at("connected").get<bool>());

    const json rounds = parse_ok(s.get("/api/rounds"));
    REQUIRE(has(rounds, "rounds", &json::is_array));
    REQUIRE(rounds.at("rounds").size() == 2);
    for (const json& r : rounds.at("rounds")) {
        for (const char* k : {"round", "islands", "bytes_up", "bytes_down"}) CHECK(has(r, k, &json::is_number_integer));
        for (const char* k : {"inner_loss", "val_loss", "compression_ratio", "seconds"})
            CHECK(has(r, k, &json::is_number_float));
    }
    CHECK(rounds.at("rounds")[1].at("round").get<double>() == 1);
    CHECK(rounds.at("rounds")[1].at("val_loss").get<double>() == Approx(3.6));

    const json log = parse_ok(s.get("/api/log?lines=3"));
    REQUIRE(has(log, "lines", &json::is_array));
    REQUIRE(log.at("lines").size() == 3);
    CHECK(log.at("lines")[2].get<std::string>() == "line 599 \"quoted\"\ttab");  // escaped and read back
    CHECK(parse_ok(s.get("/api/log?lines=100000")).at("lines").size() == RunStatus::kLogLines);
    CHECK(parse_ok(s.get("/api/log")).at("lines").size() == 100);
}

TEST_CASE("the control API refuses requests without the token or with a wrong one") {
    Served s;
    for (const std::string target : {"/api/status", "/api/peers", "/api/rounds", "/api/log", "/metrics", "/nope"}) {
        INFO(target);
        const HttpReply none = s.get(target, "");
        CHECK(none.status == 401);
        CHECK(error_of(none) == "missing bearer token");
        const HttpReply wrong = s.get(target, kToken + "x");
        CHECK(wrong.status == 401);
        CHECK(error_of(wrong) == "wrong bearer token");
        CHECK(s.get(target, kToken.substr(0, 5)).status == 401);
    }
    CHECK(s.post("/api/pause", "", "").status == 401);
    CHECK_FALSE(s.status.paused());
    // Not a bearer scheme at all.
    const std::string reply = arch::test::raw_http(
        s.server.port(), "GET /api/status HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " + kToken + "\r\nConnection: close\r\n\r\n");
    CHECK(arch::test::raw_status(reply) == 401);
    CHECK(reply.find("WWW-Authenticate: Bearer") != std::string::npos);
}

TEST_CASE("bad requests get the right status and the server keeps serving") {
    Served s;
    const int port = s.server.port();
    CHECK(s.get("/api/nothing").status == 404);
    CHECK(s.get("/").status == 404);
    CHECK(s.post("/api/status", "{}").status == 405);
    CHECK(s.get("/api/pause").status == 405);
    CHECK(http_request(port, "DELETE", "/api/peers", kToken).status == 405);
    CHECK(s.get("/api/log?lines=abc").status == 400);
    CHECK(s.get("/api/log?lines=0").status == 400);

    // Malformed JSON and missing or mistyped fields: 400 with a message.
    for (const std::string body : {"", "{", "{\"config\": }", "[1,2]", "{\"config\":\"x\"} trailing", "\"str\"",
                                   "{\"config\":\"\\ud800\"}"}) {
        INFO(body);
        const HttpReply r = s.post("/api/host", body);
        CHECK(r.status == 400);
        CHECK_FALSE(error_of(r).empty());
    }
    CHECK(error_of(s.post("/api/host", "{}")) == "the body has no \"config\" field");
    CHECK(error_of(s.post("/api/host", "{\"config\":5}")) == "\"config\" must be a string");
    CHECK(s.post("/api/join", "{\"invite\":\"x\"}").status == 400);
    std::string deep(200, '[');
    CHECK(s.post("/api/join", deep).status == 400);

    // 409: host and join while a run is in progress; leave/pause/resume when there is none.
    CHECK(s.post("/api/host", "{\"config\":\"[run]\"}").status == 409);
    CHECK(s.post("/api/join", "{\"invite\":\"i\",\"key\":\"/k\"}").status == 409);
    CHECK(s.hosted.empty());
    s.busy = false;
    CHECK(s.post("/api/pause", "").status == 409);
    CHECK(s.post("/api/leave", "").status == 409);
    const HttpReply hosted = s.post("/api/host", "{\"config\":\"[run]\\nname = \\\"x\\\"\\n\"}");
    CHECK(hosted.status == 200);
    CHECK(hosted.body == "{\"ok\":true}");
    CHECK(s.hosted == "[run]\nname = \"x\"\n");
    CHECK(s.post("/api/host", "{\"config\":\"bad\"}").status == 400);  // the action's own error
    CHECK(s.post("/api/join", "{\"invite\":\"inv\",\"key\":\"/tmp/k\",\"extra\":1}").status == 200);
    CHECK(s.joined_key == "/tmp/k");

    // 413: a body over 1 MiB is refused from its Content-Length, before it is read.
    const std::string big = arch::test::raw_http(
        port, "POST /api/host HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kToken +
                  "\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n{\"config\":\"");
    CHECK(arch::test::raw_status(big) == 413);
    // ... and a chunked body that grows past it.
    std::string chunked = "POST /api/host HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kToken +
                          "\r\nTransfer-Encoding: chunked\r\n\r\n";
    const std::string chunk(256 * 1024, 'a');
    for (int i = 0; i < 5; ++i) chunked += "40000\r\n" + chunk + "\r\n";
    CHECK(arch::test::raw_status(arch::test::raw_http(port, chunked)) == 413);

    // Garbage instead of HTTP, a truncated request, binary noise: 400 or a closed connection.
    CHECK(arch::test::raw_status(arch::test::raw_http(port, "HELLO THERE\r\n\r\n")) == 400);
    CHECK(arch::test::raw_status(arch::test::raw_http(port, std::string("\x00\xff\x10\r\n\r\n", 7))) == 400);
    (void)arch::test::raw_http(port, "GET /api/status HTTP/1.1\r\nHost", 0.3);
    CHECK(arch::test::raw_status(arch::test::raw_http(
              port, "GET /api/status HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n")) == 400);

    // Still serving, and keep-alive works across several requests on one connection.
    CHECK(s.get("/api/status").status == 200);
    const std::string two = arch::test::raw_http(
        port, "GET /api/status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kToken +
                  "\r\n\r\nGET /api/peers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kToken +
                  "\r\nConnection: close\r\n\r\n");
    std::size_t replies = 0;
    for (std::size_t p = two.find("HTTP/1.1 200"); p != std::string::npos; p = two.find("HTTP/1.1 200", p + 1)) ++replies;
    CHECK(replies == 2);
}

TEST_CASE("pause, resume and leave set the commands a run reads") {
    Served s;
    CHECK(s.post("/api/pause", "").body == "{\"ok\":true}");
    CHECK(s.status.paused());
    const json st = parse_ok(s.get("/api/status"));
    CHECK(st.at("paused").get<bool>());
    CHECK(st.at("state").get<std::string>() == "paused");
    CHECK(s.post("/api/resume", "").status == 200);
    CHECK_FALSE(s.status.paused());
    CHECK(parse_ok(s.get("/api/status")).at("state").get<std::string>() == "training");
    CHECK(s.post("/api/leave", "").status == 200);
    CHECK(s.status.leave_requested());
}

namespace {

// Parses the text exposition format strictly enough to catch what Prometheus would reject:
// every sample's family has HELP and TYPE before it, values are numbers, label syntax is right.
std::map<std::string, double> parse_metrics(const std::string& text) {
    std::map<std::string, double> samples;
    std::set<std::string> helped, typed;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        INFO(line);
        REQUIRE_FALSE(line.empty());
        if (line.rfind("# HELP ", 0) == 0) {
            helped.insert(line.substr(7, line.find(' ', 7) - 7));
            continue;
        }
        if (line.rfind("# TYPE ", 0) == 0) {
            const std::string rest = line.substr(7);
            const std::string name = rest.substr(0, rest.find(' '));
            const std::string type = rest.substr(rest.find(' ') + 1);
            CHECK((type == "gauge" || type == "counter"));
            typed.insert(name);
            continue;
        }
        const std::size_t space = line.rfind(' ');
        REQUIRE(space != std::string::npos);
        const std::string series = line.substr(0, space);
        const std::string name = series.substr(0, series.find('{'));
        CHECK(helped.count(name));
        CHECK(typed.count(name));
        if (series.find('{') != std::string::npos) {
            CHECK(series.back() == '}');
            CHECK(series.find("=\"") != std::string::npos);
        }
        const std::string value = line.substr(space + 1);
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        CHECK(*end == '\0');
        samples[series] = v;
    }
    return samples;
}

}  // namespace

TEST_CASE("/metrics is Prometheus text that promtool accepts") {
    Served s;
    const HttpReply r = s.get("/metrics");
    REQUIRE(r.status == 200);
    CHECK(r.content_type.rfind("text/plain; version=0.0.4", 0) == 0);
    const std::map<std::string, double> m = parse_metrics(r.body);
    CHECK(m.at("archipelago_round") == 2);
    CHECK(m.at("archipelago_rounds_total") == 2);
    CHECK(m.at("archipelago_inner_loss") == Approx(3.5));
    CHECK(m.at("archipelago_val_loss") == Approx(3.6));
    CHECK(m.at("archipelago_compression_ratio") == Approx(3.9));
    CHECK(m.at("archipelago_inner_tokens_per_second") == Approx(1234.5));
    CHECK(m.at("archipelago_peers_connected") == 1);
    CHECK(m.count("archipelago_bytes_sent_total{type=\"pseudo_grad\"}"));
    CHECK(m.count("archipelago_bytes_received_total{type=\"update\"}"));

    // Before any round: unknown losses are NaN, still valid.
    RunStatus fresh;
    const std::map<std::string, double> f = parse_metrics(metrics_text(fresh.snapshot()));
    CHECK(std::isnan(f.at("archipelago_val_loss")));
    // A run without differential privacy: NaN; with it, what it spent of its budget.
    CHECK(std::isnan(f.at("archipelago_privacy_epsilon_spent")));
    CHECK(std::isnan(f.at("archipelago_privacy_epsilon_budget")));
    PrivacyFigures dp;
    dp.mode = "central";
    dp.epsilon_budget = 8;
    dp.epsilon_spent = 2.25;
    fresh.set_privacy(dp);
    const std::map<std::string, double> p = parse_metrics(metrics_text(fresh.snapshot()));
    CHECK(p.at("archipelago_privacy_epsilon_spent") == 2.25);
    CHECK(p.at("archipelago_privacy_epsilon_budget") == 8);
    fresh.set_privacy({});

    if (!std::filesystem::exists("/usr/bin/promtool")) {
        WARN("skipped promtool check metrics: /usr/bin/promtool not installed (Debian package prometheus)");
        return;
    }
    TempDir dir;
    for (const std::string& text : {r.body, metrics_text(fresh.snapshot())}) {
        write_file(dir.file("metrics.txt"), text);
        const std::string cmd = "/usr/bin/promtool check metrics < " + dir.file("metrics.txt") + " > " +
                                dir.file("promtool.out") + " 2>&1";
        const int rc = std::system(cmd.c_str());
        INFO(read_file_bytes(dir.file("promtool.out")));
        CHECK(rc == 0);
    }
}

TEST_CASE("/metrics needs the token unless served with metrics_public") {
    Served closed;
    CHECK(closed.get("/metrics", "").status == 401);
    Served open(true);
    CHECK(open.get("/metrics", "").status == 200);
    CHECK(open.get("/api/status", "").status == 401);  // only /metrics is public
}

TEST_CASE("the token file is made 0600 on first use and refused when others can read it") {
    TempDir dir;
    const std::string path = dir.file("conf/archipelago/token");
    const std::string token = load_or_create_token(path);
    CHECK(token.size() == 64);
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(load_or_create_token(path) == token);  // the same token next time
    CHECK(load_token(path) == token);
    ::chmod(path.c_str(), 0644);
    CHECK_THROWS_WITH(load_or_create_token(path), Catch::Contains("readable by others") && Catch::Contains("chmod 600"));
    CHECK_THROWS_WITH(load_token(dir.file("missing")), Catch::Contains("cannot be read"));
    write_file(dir.file("empty"), "\n");
    ::chmod(dir.file("empty").c_str(), 0600);
    CHECK_THROWS_WITH(load_token(dir.file("empty")), Catch::Contains("is empty"));

    CHECK(token_equal("abc", "abc"));
    CHECK_FALSE(token_equal("abc", "abd"));
    CHECK_FALSE(token_equal("abc", "abcd"));
    CHECK_FALSE(token_equal("", "a"));
}

TEST_CASE("request bodies are parsed strictly, nested at most 64 levels deep") {
    RunStatus status;
    std::string hosted;
    const ControlApi api(status, kToken,
                         ControlActions{[] { return false; }, [&](const std::string& config) { hosted = config; }, {}});
    auto post = [&](const std::string& body) { return api.handle({"POST", "/api/host", "Bearer " + kToken, body}); };
    auto error = [](const ApiResponse& r) { return json::parse(r.body).at("error").get<std::string>(); };

    CHECK(post("{\"config\": \"x\\n\\u00e9\\ud83d\\ude00\", \"o\": {}, \"a\": [1, -2.5e3, true, null]} ").status == 200);
    CHECK(hosted == "x\n\xc3\xa9\xf0\x9f\x98\x80");
    for (const std::string bad : {"", "{", "{\"a\":1,}", "[01]", "nul", "\"\\x\"", "{\"a\" 1}", "1 2", "\"a\nb\"", "-",
                                  "1.", "[1,]", "{\"config\":\"\\ud800\"}", "{\"config\":\"\xff\"}", "{'config':'x'}"}) {
        INFO(bad);
        const ApiResponse r = post(bad);
        CHECK(r.status == 400);
        CHECK_THAT(error(r), Catch::StartsWith("malformed JSON: ") && !Catch::Contains("json.exception"));
    }
    // 64 levels below the body's object are fine, 65 are not (the bound the old parser had).
    const auto nested = [](int levels) {
        return "{\"config\":\"c\",\"a\":" + std::string(levels, '[') + std::string(levels, ']') + "}";
    };
    CHECK(post(nested(64)).status == 200);
    const ApiResponse deep = post(nested(65));
    CHECK(deep.status == 400);
    CHECK(error(deep) == "malformed JSON: nested more than 64 levels deep");
    CHECK(error(post(std::string(100000, '['))) == "malformed JSON: nested more than 64 levels deep");
    CHECK(error(post("[1]")) == "the body must be a JSON object");
}

TEST_CASE("invite and revoke: served while a run is hosted, 409 elsewhere, 400 on bad input that changes nothing") {
    TempDir dir;
    write_file(dir.file("run.toml"), "[run]\nname = \"t\"\nislands = 2\nbind = \"tcp://127.0.0.1:7001\"\ncheckpoint_dir = \"" +
                                         dir.file("host") + "\"\n");
    const RunConfig config = load_run_config(dir.file("run.toml"));
    const std::string allow_path = cli::host_files(config).allow_list;
    RunStatus status;
    bool hosting = true;
    ControlActions actions{[] { return true; }, {}, {}};
    cli::add_membership_actions(actions, [&]() -> std::optional<RunConfig> {
        return hosting ? std::optional<RunConfig>(config) : std::nullopt;
    });
    const ControlApi api(status, kToken, actions);
    auto post = [&](const std::string& path, const json& body) {
        return api.handle({"POST", path, "Bearer " + kToken, body.dump()});
    };
    auto error = [](const ApiResponse& r) { return json::parse(r.body).at("error").get<std::string>(); };
    const std::string alice = net::generate_keypair().public_key, bob = net::generate_keypair().public_key;

    const ApiResponse made = post("/api/invite", {{"name", "alice"}, {"public_key", alice}});
    INFO(made.body);
    REQUIRE(made.status == 200);
    const json j = json::parse(made.body);
    CHECK(j.at("name") == "alice");
    CHECK(j.at("fingerprint") == net::fingerprint(alice));
    const net::Invite invite = net::Invite::parse(j.at("invite").get<std::string>(), "the answer's invite");
    CHECK(invite.host_endpoint == "tcp://127.0.0.1:7001");
    CHECK(invite.host_public_key == net::load_public_key(cli::host_files(config).key + ".pub"));
    CHECK(net::AllowList::load(allow_path).name_of(alice) == "alice");
    const ApiResponse elsewhere =
        post("/api/invite", {{"name", "bob"}, {"public_key", bob}, {"endpoint", "tcp://example.org:7001"}});
    REQUIRE(elsewhere.status == 200);
    CHECK(net::Invite::parse(json::parse(elsewhere.body).at("invite").get<std::string>(), "invite").host_endpoint ==
          "tcp://example.org:7001");
    CHECK(api.handle({"GET", "/api/invite", "Bearer " + kToken, ""}).status == 405);

    const std::string before = read_text_file(allow_path);
    const ApiResponse bad_key = post("/api/invite", {{"name", "carol"}, {"public_key", "not-a-key"}});
    CHECK(bad_key.status == 400);
    CHECK_THAT(error(bad_key), Catch::Contains("public key"));
    CHECK(post("/api/invite", {{"name", "carol"}}).status == 400);
    const ApiResponse unknown = post("/api/revoke", {{"name", "nobody"}});
    CHECK(unknown.status == 400);
    CHECK_THAT(error(unknown), Catch::Contains("no peer named 'nobody'"));
    CHECK(post("/api/revoke", json::object()).status == 400);
    CHECK(post("/api/revoke", {{"name", "alice"}, {"public_key", alice}}).status == 400);
    CHECK(post("/api/revoke", {{"public_key", net::generate_keypair().public_key}}).status == 400);
    CHECK(read_text_file(allow_path) == before);

    const ApiResponse gone = post("/api/revoke", {{"name", "alice"}});
    REQUIRE(gone.status == 200);
    CHECK(json::parse(gone.body).at("fingerprint") == net::fingerprint(alice));
    CHECK(post("/api/revoke", {{"public_key", bob}}).status == 200);
    CHECK(net::AllowList::load(allow_path).size() == 0);

    hosting = false;  // the run ended, or this process joins one
    CHECK(post("/api/invite", {{"name", "alice"}, {"public_key", alice}}).status == 409);
    CHECK(post("/api/revoke", {{"name", "alice"}}).status == 409);
    const ControlApi peer_api(status, kToken, ControlActions{[] { return true; }, {}, {}});
    CHECK(peer_api.handle({"POST", "/api/revoke", "Bearer " + kToken, "{\"name\":\"alice\"}"}).status == 409);
    CHECK(net::AllowList::load(allow_path).size() == 0);
}
