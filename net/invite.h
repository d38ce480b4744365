// net/invite.h: what a peer needs to join a run: the host's endpoint, its public key and the run
// id. It is not secret (no secret key inside) but it is what a peer trusts: a wrong host key means
// the peer refuses the host. File format: "name = value" lines, see docs/net.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace arch::net {

struct Invite {
    std::string host_endpoint;    // "tcp://HOST:PORT"
    std::string host_public_key;  // Z85, 40 chars
    uint64_t run_id = 0;          // random, nonzero; every message of the run carries it
    // The same host's other addresses (its LAN's, a global IPv6), tried in order after host_endpoint
    // (net/endpoint_probe.h); file key more-endpoints, at most kMoreEndpoints.
    std::vector<std::string> more_endpoints = {};
    static constexpr std::size_t kMoreEndpoints = 8;

    void save(const std::string& path) const;  // validates first; atomic write, mode 0644
    static Invite load(const std::string& path);
    static Invite parse(const std::string& text, const std::string& what);
    std::string to_text() const;
    void validate(const std::string& what) const;  // throws arch::Error naming the bad field
    std::vector<std::string> endpoints() const;    // host_endpoint, then more_endpoints
};

uint64_t random_run_id();  // nonzero, from libsodium's CSPRNG

}  // namespace arch::net
