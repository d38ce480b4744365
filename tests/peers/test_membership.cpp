// tests/peers/test_membership.cpp: invite and revoke while a run goes on. A host started with 2 of
// its 3 islands admits a third invited with `archipelago invite` mid-run, which then ends rounds in
// step with the others; `archipelago revoke --name` cuts a peer off within about a heartbeat, later
// rounds go on without it and its reconnect is refused at the handshake. Also the allow-list watch
// on its own (a change, a half-written file, a rename), the shared invite/revoke logic, and host.reachable.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "net/allow_list.h"
#include "net/keys.h"
#include "peers/cli/host_files.h"
#include "peers/cli/host_reachable.h"
#include "peers/cli/membership.h"
#include "peers/run_config.h"
#include "tests/core/temp_dir.h"
#include "tests/peers/process.h"
#include "tests/peers/run_fixture.h"

using namespace arch;
using namespace arch::test;

namespace {


std::string all_logs(Run& run, Process& host) {
    std::string out = "--- host\n" + host.log();
    for (int i = 1; i <= 3; ++i) out += "\n--- peer " + std::to_string(i) + "\n" + slurp(run.dir.file("peer-" + std::to_string(i) + ".log"));
    return out;
}

void stop_host(Process& host) {
    host.kill(SIGTERM);
    const int rc = host.wait(60);
    // Its whole log (stderr too: an abort's message) when it does not stop cleanly.
    if (rc != 0) FAIL_CHECK("the host stopped with " << rc << "\n" << host.log());
}

}  // namespace

TEST_CASE("a peer invited with `archipelago invite` while the run goes on joins it without a restart") {
    Run run(200, 3, 128, "join_timeout_s = 2\nround_timeout_s = 30\nheartbeat_timeout_s = 2\n");
    run.make_peer(1);
    run.make_peer(2);
    auto host = run.host();
    auto p1 = run.peer(1);
    auto p2 = run.peer(2);
    // It starts with the two it has (join_timeout_s), rounds go by.
    if (!host->wait_event({.kind = "round_started", .round = 2}, 180)) FAIL(all_logs(run, *host));

    run.make_peer(3);  // keygen + `archipelago invite` against the same run.toml
    if (!host->wait_event({.kind = "allow_list", .peer = "peer-3", .type = "added"}, 10)) FAIL(all_logs(run, *host));
    auto p3 = run.peer(3);
    if (!host->wait_event({.kind = "admitted", .island = 2, .peer = "peer-3"}, 60)) FAIL(all_logs(run, *host));

    // A round later it is one of three, and its θ matches the host's.
    if (!host->wait_event({.kind = "round_started", .islands = 3}, 60)) FAIL(all_logs(run, *host));
    if (!p3->wait_event({.kind = "round_applied", .islands = 3}, 60)) FAIL(all_logs(run, *host));
    CHECK(p3->count({.kind = "theta_differs"}) == 0);
    CHECK(p1->wait_event({.kind = "round_applied", .islands = 3}, 30));
    stop_host(*host);
}

TEST_CASE("`archipelago revoke` cuts a peer off within a heartbeat; its reconnect is refused at the handshake") {
    // join_timeout_s short: with an island free again the host waits for a newcomer only until then.
    Run run(200, 2, 128, "join_timeout_s = 3\nround_timeout_s = 30\nheartbeat_timeout_s = 2\n");
    run.make_peer(1);
    run.make_peer(2);
    auto host = run.host();
    auto p1 = run.peer(1);
    auto p2 = run.peer(2);
    if (!host->wait_event({.kind = "round_started", .round = 2, .islands = 2}, 180)) FAIL(all_logs(run, *host));

    // A name that is not listed: a clear error, and nothing changes.
    const std::string allow_path = run.dir.file("host/allow_list.txt");
    const std::string before = slurp(allow_path);
    Process wrong({"revoke", "--config", run.config, "--name", "nobody"}, run.dir.file("revoke.log"));
    CHECK(wrong.wait(30) != 0);
    CHECK(wrong.log().find("no peer named 'nobody'") != std::string::npos);
    CHECK(slurp(allow_path) == before);

    Process revoke({"revoke", "--config", run.config, "--name", "peer-2"}, run.dir.file("revoke.log"));
    REQUIRE(revoke.wait(30) == 0);
    const auto revoked_at = Clock::real().now();
    const EventMatch cut{.kind = "revoked", .peer = "peer-2"};
    if (!host->wait_event(cut, 10)) FAIL(all_logs(run, *host));
    CHECK(std::chrono::duration<double>(Clock::real().now() - revoked_at).count() < 2.0 + 1.5);  // a heartbeat, and the poll
    CHECK(first_event(host->events(), cut).island >= 0);  // its island is free for a later invitee
    // It was told why, and stops with an error.
    CHECK(p2->wait_event({.kind = "left", .type = "revoked"}, 20));
    CHECK(p2->wait(30) > 0);

    // Later rounds go on without it.
    const EventMatch with_one{.kind = "round_started", .islands = 1}, with_two{.kind = "round_started", .islands = 2};
    if (!host->wait_event(with_one, 60)) FAIL(all_logs(run, *host));
    CHECK(count_events(events_after(host->events(), cut), with_two) == 0);

    // Started again with the same key and invite, it does not get through the handshake: it is told so.
    const std::string key2 = net::load_public_key(run.key(2) + ".pub");
    auto again = run.peer(2);
    if (!again->wait_event({.kind = "key_refused"}, 30)) FAIL(all_logs(run, *host));
    // And the host's operator why: the line the host writes on its own thread, maybe a poll after the
    // peer has heard the refusal.
    CHECK(host->wait_until([&] { return host->log().find(key2 + ") is not on the allow-list") != std::string::npos; }, 10));
    // Rounds keep going, and it is never admitted: the next round starts with 1 island still.
    if (!host->wait_event(with_one, 60, host->count(with_one) + 1)) FAIL(all_logs(run, *host));
    const std::vector<RunEvent> after = events_after(host->events(), cut);
    CHECK(count_events(after, {.kind = "admitted", .peer = "peer-2"}) == 0);
    CHECK(count_events(after, with_two) == 0);
    stop_host(*host);
    CHECK(p1->count({.kind = "theta_differs"}) == 0);
}

TEST_CASE("the allow-list watch reports changes, keeps the old list through a bad file, and logs it once") {
    TempDir dir;
    const std::string path = dir.file("allow_list.txt");
    const net::KeyPair a = net::generate_keypair(), b = net::generate_keypair();
    net::AllowList list;
    list.add(a.public_key, "alice");
    list.save(path);
    std::vector<std::string> logged;
    cli::AllowListWatch watch(path, [&](const std::string& line) { logged.push_back(line); });
    CHECK(watch.list().contains(a.public_key));
    CHECK_FALSE(watch.check());  // nothing moved

    list.add(b.public_key, "bob");
    list.save(path);
    std::optional<cli::AllowListWatch::Change> change = watch.check();
    REQUIRE(change);
    CHECK(change->added == std::vector<std::string>{b.public_key});
    CHECK(change->removed.empty());

    write_file(path, a.public_key + " alice\n" + b.public_key.substr(0, 20));  // half written
    CHECK_FALSE(watch.check());
    CHECK_FALSE(watch.check());
    REQUIRE(logged.size() == 1);
    CHECK(logged[0].find("cannot be read") != std::string::npos);
    CHECK(watch.list().contains(b.public_key));  // the old list stays

    list.remove(a.public_key);
    list.save(path);
    change = watch.check();
    REQUIRE(change);
    CHECK(change->removed == std::vector<std::string>{a.public_key});
    CHECK_FALSE(change->list.contains(a.public_key));
}

TEST_CASE("invite_peer and revoke_peer: bad input is refused with a clear message and changes nothing") {
    TempDir dir;
    write_file(dir.file("run.toml"), "[run]\nname = \"t\"\nislands = 2\nbind = \"tcp://127.0.0.1:7000\"\ncheckpoint_dir = \"" +
                                         dir.file("host") + "\"\n");
    const RunConfig c = load_run_config(dir.file("run.toml"));
    const net::KeyPair a = net::generate_keypair();
    const cli::Invitation made = cli::invite_peer(c, a.public_key, "alice");
    CHECK(made.listed == 1);
    const net::Invite invite = net::Invite::parse(made.invite_text, "invite");
    CHECK(invite.host_endpoint == "tcp://127.0.0.1:7000");
    const std::string allow_path = cli::host_files(c).allow_list;
    const std::string before = slurp(allow_path);

    CHECK_THROWS_WITH(cli::invite_peer(c, "not-a-key", "bob"), Catch::Contains("public key"));
    CHECK_THROWS_WITH(cli::invite_peer(c, net::generate_keypair().public_key, "two\nlines"), Catch::Contains("one line"));
    CHECK_THROWS_WITH(cli::revoke_peer(c, "bob", ""), Catch::Contains("no peer named 'bob'") && Catch::Contains("alice"));
    CHECK_THROWS_WITH(cli::revoke_peer(c, "", net::generate_keypair().public_key), Catch::Contains("is not on the allow-list"));
    CHECK_THROWS_WITH(cli::revoke_peer(c, "alice", a.public_key), Catch::Contains("either"));
    CHECK(slurp(allow_path) == before);

    const cli::Revocation gone = cli::revoke_peer(c, "alice", "");
    CHECK(gone.public_key == a.public_key);
    CHECK(gone.listed == 0);
    CHECK_FALSE(net::AllowList::load(allow_path).contains(a.public_key));
}

TEST_CASE("host.reachable: written as TOML by the host, read back for invites, a file of another shape refused") {
    TempDir dir;
    const std::string path = dir.file("host.reachable");
    CHECK(cli::read_mapped_endpoint(path).empty());  // no file: no mapped address
    cli::write_host_reachable(path, "mapped", "tcp://203.0.113.7:5555");
    CHECK(cli::read_mapped_endpoint(path) == "tcp://203.0.113.7:5555");
    cli::write_host_reachable(path, "no gateway answered", "");
    CHECK(cli::read_mapped_endpoint(path).empty());
    write_file(path, "state = mapped\nendpoint = tcp://203.0.113.7:5555\n");  // stop 50's hand-written shape
    CHECK_THROWS_WITH(cli::read_mapped_endpoint(path), Catch::Contains(path + ":1:"));
    write_file(path, "state = \"mapped\"\nendpoint = \"tcp://203.0.113.7:5555\"\nextra = 1\n");
    CHECK_THROWS_WITH(cli::read_mapped_endpoint(path), Catch::Contains("extra"));
}
