// net/invite.cpp: the invite file (TOML, read through core/toml_file.h) and its validation.
#include "net/invite.h"

#include <sodium.h>

#include <cstdio>
#include <sstream>

#include "core/error.h"
#include "net/endpoint.h"
#include "net/keys.h"
#include "core/file_io.h"
#include "core/toml_file.h"
#include "net/legacy_format.h"

namespace arch::net {
namespace {

void check_endpoint(const std::string& endpoint, const std::string& what) {
    if (!split_tcp_endpoint(endpoint))
        throw Error(what +
                    ": host-endpoint must look like tcp://HOST:PORT (port 1..65535), found '" +
                    endpoint + "'");
}

}  // namespace

uint64_t random_run_id() {
    if (sodium_init() < 0) throw Error("libsodium failed to initialise");
    uint64_t id = 0;
    while (id == 0) randombytes_buf(&id, sizeof(id));
    return id;
}

void Invite::validate(const std::string& what) const {
    check_endpoint(host_endpoint, what);
    if (more_endpoints.size() > kMoreEndpoints) throw Error(what + ": more-endpoints holds more than 8 addresses");
    for (const std::string& e : more_endpoints) check_endpoint(e, what);
    check_public_key(host_public_key, what + ": host-public-key");
    if (run_id == 0) throw Error(what + ": run-id must be nonzero");
}

std::vector<std::string> Invite::endpoints() const {
    std::vector<std::string> all{host_endpoint};
    all.insert(all.end(), more_endpoints.begin(), more_endpoints.end());
    return all;
}

std::string Invite::to_text() const {
    char id[17];
    std::snprintf(id, sizeof(id), "%016llx", static_cast<unsigned long long>(run_id));
    toml::table t{{"host-endpoint", host_endpoint}, {"host-public-key", host_public_key}, {"run-id", std::string(id)}};
    if (!more_endpoints.empty()) {
        toml::array more;
        for (const std::string& e : more_endpoints) more.push_back(e);
        t.insert("more-endpoints", std::move(more));
    }
    std::ostringstream out;
    out << "# archipelago invite: give this file to the peer that will join (it holds no secret)\n" << t << "\n";
    return out.str();
}

void Invite::save(const std::string& path) const {
    validate("invite");
    write_text_file_atomic(path, to_text(), 0644);
}

Invite Invite::load(const std::string& path) {
    return parse(read_text_file(path, 4096), path);
}

Invite Invite::parse(const std::string& text, const std::string& what) {
    const toml::table file = parse_net_file(text, what, "invite");
    toml_file::Fields f(file, what, "");
    Invite invite;
    std::string id;
    for (const char* name : {"host-endpoint", "host-public-key", "run-id"}) f.require(name);
    f.text("host-endpoint", invite.host_endpoint);
    f.texts("more-endpoints", invite.more_endpoints, Invite::kMoreEndpoints);
    f.text("host-public-key", invite.host_public_key);
    f.text("run-id", id);
    f.finish();
    if (id.empty() || id.size() > 16 || id.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
        f.fail("run-id", "must be 1..16 hex digits, found '" + id + "'");
    invite.run_id = std::stoull(id, nullptr, 16);
    invite.validate(what);
    return invite;
}

}  // namespace arch::net
