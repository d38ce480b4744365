// tests/net/test_net_files.cpp: key files (mode 0600, refusal of readable secrets), allow-list and
// invite files: round trips and rejection of malformed input with a message naming the problem;
// invites and key files of the pre-TOML format are refused with a command that converts them. What
// a router port mapping's states say to the user, and which external addresses mean a provider's NAT.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "core/error.h"
#include "net/allow_list.h"
#include "net/invite.h"
#include "net/keys.h"
#include "net/port_mapping.h"
#include "core/file_io.h"
#include "net_fixture.h"

using namespace arch::net;
using arch::net::test::TempDir;

namespace {
void write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
}
mode_t mode_of(const std::string& path) {
    struct stat st;
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}
}  // namespace

TEST_CASE("key pairs are saved with mode 0600 and load back", "[net][keys]") {
    TempDir dir;
    const KeyPair keys = generate_keypair();
    REQUIRE(keys.public_key.size() == 40);
    REQUIRE(keys.secret_key.size() == 40);
    CHECK(generate_keypair().public_key != keys.public_key);
    const std::string path = dir.file("node.key");
    save_keypair(keys, path);
    CHECK(mode_of(path) == 0600);
    const KeyPair loaded = load_keypair(path);
    CHECK(loaded.public_key == keys.public_key);
    CHECK(loaded.secret_key == keys.secret_key);
    CHECK(load_public_key(path + ".pub") == keys.public_key);
    CHECK(fingerprint(keys.public_key).size() == 16);
    CHECK(fingerprint(keys.public_key) == fingerprint(loaded.public_key));
    CHECK_THROWS_WITH(save_keypair(generate_keypair(), path), Catch::Contains("already exists"));
    // The .pub file holds no secret.
    CHECK(arch::read_text_file(path + ".pub").find(keys.secret_key) ==
          std::string::npos);
}

TEST_CASE("a secret key readable by others is refused", "[net][keys]") {
    TempDir dir;
    const std::string path = dir.file("node.key");
    save_keypair(generate_keypair(), path);
    REQUIRE(::chmod(path.c_str(), 0644) == 0);
    CHECK_THROWS_WITH(load_keypair(path), Catch::Contains("readable by group or others") &&
                                              Catch::Contains("chmod 600"));
}

TEST_CASE("key files with bad or mismatched keys are refused", "[net][keys]") {
    TempDir dir;
    const KeyPair a = generate_keypair(), b = generate_keypair();
    const std::string path = dir.file("bad.key");
    write(path, "public-key = \"" + a.public_key + "\"\nsecret-key = \"" + b.secret_key + "\"\n");
    ::chmod(path.c_str(), 0600);
    CHECK_THROWS_WITH(load_keypair(path), Catch::Contains("does not belong"));
    write(path, "public-key = \"tooshort\"\nsecret-key = \"" + b.secret_key + "\"\n");
    CHECK_THROWS_WITH(load_keypair(path), Catch::Contains("40-character Z85"));
    write(path, "secret-key = \"" + b.secret_key + "\"\n");
    CHECK_THROWS_WITH(load_keypair(path), Catch::Contains("missing key 'public-key'"));
    write(path, "public-key = \"" + b.public_key + "\"\nsecret-key = \"" + b.secret_key + "\"\ncomment = \"x\"\n");
    CHECK_THROWS_WITH(load_keypair(path), Catch::Contains(":3: unknown key 'comment'"));
    CHECK_THROWS_AS(load_keypair(dir.file("missing.key")), arch::Error);
}

TEST_CASE("allow-list round trip, edits and malformed lines", "[net][allow]") {
    TempDir dir;
    const KeyPair a = generate_keypair(), b = generate_keypair(), c = generate_keypair();
    AllowList list;
    list.add(a.public_key, "alice's 4090s");
    list.add(b.public_key, "");
    CHECK(list.contains(a.public_key));
    CHECK_FALSE(list.contains(c.public_key));
    CHECK(list.name_of(a.public_key) == "alice's 4090s");
    list.save(dir.file("allow.txt"));
    AllowList loaded = AllowList::load(dir.file("allow.txt"));
    CHECK(loaded.size() == 2);
    CHECK(loaded.name_of(a.public_key) == "alice's 4090s");
    CHECK(loaded.remove(b.public_key));
    CHECK_FALSE(loaded.remove(b.public_key));
    CHECK_FALSE(loaded.contains(b.public_key));
    CHECK_THROWS_WITH(list.add("not-a-key", "x"), Catch::Contains("Z85"));

    CHECK(AllowList::parse("# comment\n\n#\n  " + c.public_key + "   lab box  \n", "t")
              .name_of(c.public_key) == "lab box");
    CHECK_THROWS_WITH(AllowList::parse(a.public_key + " x\ngarbage here\n", "allow"),
                      Catch::Contains("allow line 2"));
    CHECK_THROWS_WITH(AllowList::parse(a.public_key + "\n" + a.public_key + "\n", "allow"),
                      Catch::Contains("listed twice"));
}

TEST_CASE("invites round trip and reject bad fields", "[net][invite]") {
    TempDir dir;
    Invite invite{"tcp://127.0.0.1:5555", generate_keypair().public_key, random_run_id()};
    CHECK(invite.run_id != 0);
    invite.save(dir.file("run.invite"));
    const Invite loaded = Invite::load(dir.file("run.invite"));
    CHECK(loaded.host_endpoint == invite.host_endpoint);
    CHECK(loaded.host_public_key == invite.host_public_key);
    CHECK(loaded.run_id == invite.run_id);

    const std::string key = invite.host_public_key;
    auto parse = [&](const std::string& endpoint, const std::string& k, const std::string& id) {
        return Invite::parse(
            "host-endpoint = \"" + endpoint + "\"\nhost-public-key = \"" + k + "\"\nrun-id = \"" + id + "\"\n",
            "inv");
    };
    CHECK_THROWS_WITH(parse("http://x:1", key, "1"), Catch::Contains("tcp://HOST:PORT"));
    CHECK_THROWS_WITH(parse("tcp://x:70000", key, "1"), Catch::Contains("tcp://HOST:PORT"));
    CHECK_THROWS_WITH(parse("tcp://x:1", "short", "1"), Catch::Contains("host-public-key"));
    CHECK_THROWS_WITH(parse("tcp://x:1", key, "0"), Catch::Contains("nonzero"));
    CHECK_THROWS_WITH(parse("tcp://x:1", key, "xyz"), Catch::Contains("hex"));
    CHECK_THROWS_WITH(Invite::parse("host-endpoint = \"tcp://x:1\"\n", "inv"),
                      Catch::Contains("missing key 'host-public-key'"));
    CHECK_THROWS_WITH(Invite::parse("", "inv"), Catch::Contains("missing key"));
    const std::string good = invite.to_text();
    CHECK_THROWS_WITH(Invite::parse(good + "host-endpoint = \"tcp://y:2\"\n", "inv"), Catch::Contains("inv:"));
    CHECK_THROWS_WITH(Invite::parse(good + "host-endpont = \"tcp://y:2\"\n", "inv"),
                      Catch::Contains("inv:5: unknown key 'host-endpont' (did you mean 'host-endpoint'?)"));
    CHECK_THROWS_WITH(Invite::parse(good + "[colour]\nred = 1\n", "inv"), Catch::Contains("inv:5: unknown"));
    CHECK_THROWS_WITH(Invite::parse("host-endpoint = 5\nhost-public-key = \"" + key + "\"\nrun-id = \"1\"\n", "inv"),
                      Catch::Contains("inv:1: host-endpoint must be a string, found an integer"));
}

TEST_CASE("pre-TOML invites and key files get a one-line migration command that works", "[net][invite][keys]") {
    TempDir dir;
    const KeyPair keys = generate_keypair();
    const std::string invite = dir.file("old.invite"), key = dir.file("old.key");
    write(invite, "# archipelago invite\nhost-endpoint = tcp://127.0.0.1:5555\nhost-public-key = " + keys.public_key +
                      "\nrun-id = 00000000deadbeef\n");
    write(key, "# archipelago CURVE key pair\npublic-key = " + keys.public_key + "\nsecret-key = " + keys.secret_key + "\n");
    REQUIRE(::chmod(key.c_str(), 0600) == 0);
    for (const std::string& path : {invite, key}) {
        std::string message;
        try {
            if (path == invite) Invite::load(path);
            else load_keypair(path);
        } catch (const arch::Error& e) {
            message = e.what();
        }
        INFO(message);
        REQUIRE(message.find("pre-TOML format") != std::string::npos);
        CHECK(message.find('\n') == std::string::npos);  // one line
        const std::string command = message.substr(message.find("with: ") + 6);
        REQUIRE(std::system(command.c_str()) == 0);  // the command the message gives converts the file
    }
    const Invite loaded = Invite::load(invite);
    CHECK(loaded.host_endpoint == "tcp://127.0.0.1:5555");
    CHECK(loaded.run_id == 0xdeadbeefULL);
    CHECK(load_keypair(key).secret_key == keys.secret_key);
    CHECK(mode_of(key) == 0600);  // sed -i keeps the mode
}

TEST_CASE("port mapping: which external addresses mean a provider's NAT, and what each state tells the user", "[net][nat]") {
    using arch::net::is_private_ipv4;
    for (const char* a : {"10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1", "100.127.255.254", "127.0.0.1",
                          "169.254.3.4"})
        CHECK(is_private_ipv4(a));
    for (const char* a : {"11.77.0.1", "172.32.0.1", "100.128.0.1", "192.169.0.1", "8.8.8.8", "not an address", ""})
        CHECK_FALSE(is_private_ipv4(a));
    using arch::net::MappingState;
    using arch::net::Reachability;
    const MappingState mapped{.state = Reachability::mapped, .method = "UPnP IGD", .external_address = "11.77.0.1",
                              .external_port = 5555, .lan_address = "192.168.77.2", .detail = ""};
    CHECK(mapped.external_endpoint() == "tcp://11.77.0.1:5555");
    CHECK(mapped.describe(5555) == "UPnP IGD mapped tcp://11.77.0.1:5555 to port 5555, and the gateway lists it");
    MappingState none = mapped;
    none.state = Reachability::no_gateway;
    CHECK(none.external_endpoint().empty());  // only a mapping is an address peers can use
    CHECK_THAT(none.describe(5555), Catch::Contains("forward TCP port 5555 on your router to this machine (192.168.77.2) by hand") &&
                                        Catch::Contains("SSH reverse tunnel"));
    MappingState cgnat = mapped;
    cgnat.state = Reachability::carrier_grade;
    cgnat.external_address = "100.72.1.9";
    CHECK(cgnat.external_endpoint().empty());
    CHECK_THAT(cgnat.describe(5555), Catch::Contains("100.72.1.9 is private or shared space") && Catch::Contains("IPv6"));
}

TEST_CASE("an invite's further host addresses round-trip, in order, and each is checked", "[net][invite]") {
    arch::net::Invite invite;
    invite.host_endpoint = "tcp://11.77.0.1:5555";
    invite.more_endpoints = {"tcp://192.168.77.2:5555", "tcp://[2001:db8:77::2]:5555"};
    invite.host_public_key = arch::net::generate_keypair().public_key;
    invite.run_id = 42;
    const arch::net::Invite back = arch::net::Invite::parse(invite.to_text(), "invite");
    CHECK(back.endpoints() ==
          std::vector<std::string>{"tcp://11.77.0.1:5555", "tcp://192.168.77.2:5555", "tcp://[2001:db8:77::2]:5555"});
    std::string text = invite.to_text();
    text.replace(text.find("tcp://192.168.77.2:5555"), 23, "udp://192.168.77.2:5555");
    CHECK_THROWS_WITH(arch::net::Invite::parse(text, "invite"), Catch::Contains("tcp://HOST:PORT"));
    invite.more_endpoints.assign(9, "tcp://10.0.0.1:5555");
    CHECK_THROWS_WITH(invite.validate("invite"), Catch::Contains("more than 8"));
}
