// net/port_mapping.h: a host at home asks its router to forward its port. UPnP IGD (libminiupnpc) or
// NAT-PMP (libnatpmp) maps the host's TCP port at start, the IGD's own entry query checks that the
// gateway holds it, the lease is renewed while the run lasts and the mapping is removed when the
// PortMapping ends (the host's exit, SIGTERM included). Every exchange with the gateway is bounded in
// time. docs/net.md ("Hosting from home") says what each outcome means and what to do about it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/named_enum.h"

namespace arch::net {

// run.nat: which protocol asks the router; auto tries UPnP, then NAT-PMP.
enum class NatMode { automatic, upnp, natpmp, off };
const EnumNames<NatMode>& nat_mode_names();  // "auto", "upnp", "natpmp", "off"

// Where the host stands. Only `mapped` makes it reachable through the router.
enum class Reachability {
    off,            // run.nat = "off", or the host listens on loopback only
    trying,         // asking the gateway
    mapped,         // mapped, and the gateway's own entry says so
    no_gateway,     // no UPnP or NAT-PMP gateway answered
    refused,        // a gateway answered but did not map the port
    carrier_grade,  // mapped, but the gateway's external address is private or shared space (100.64/10)
};
const char* reachability_name(Reachability r);  // "off", "trying", "mapped", "no gateway answered", ...

struct MappingState {
    Reachability state = Reachability::off;
    std::string method = {};            // "UPnP IGD" or "NAT-PMP" when a gateway answered
    std::string external_address = {};  // the gateway's, when it gave one
    uint16_t external_port = 0;
    std::string lan_address = {};  // ours, as the gateway sees us (UPnP)
    std::string detail = {};       // what the gateway said, in words
    // "tcp://ADDRESS:PORT" when mapped, else empty.
    std::string external_endpoint() const;
    // One line: the state and, when not mapped, what to do (forward by hand, IPv6, an SSH tunnel).
    std::string describe(uint16_t port) const;
};

// True for 10/8, 172.16/12, 192.168/16, 100.64/10 (carrier-grade NAT's shared space), 127/8, 169.254/16.
bool is_private_ipv4(const std::string& address);

struct PortMappingOptions {
    NatMode mode = NatMode::automatic;
    uint16_t port = 0;                // the host's TCP port; the external port asked for is the same
    int lease_s = 3600;               // asked for, renewed at half of it
    int discover_ms = 1000;           // each UPnP SSDP search (2) and NAT-PMP answer at most this
    std::function<void(const MappingState&)> on_change = {};  // from the mapping's thread: each new state
};

// Maps in the background from construction (the host listens meanwhile); the destructor stops the
// renewals and removes the mapping, waiting at most about discover_ms for the gateway.
class PortMapping {
public:
    explicit PortMapping(PortMappingOptions options);
    ~PortMapping();
    PortMapping(const PortMapping&) = delete;
    PortMapping& operator=(const PortMapping&) = delete;
    MappingState state() const;
    struct Gateway;  // the protocol that answered, and what it needs to renew and remove (port_mapping.cpp)

private:
    void run();
    void set(MappingState s);
    PortMappingOptions options_;
    mutable std::mutex mu_;
    std::condition_variable wake_;
    bool stopping_ = false;
    MappingState state_;
    std::unique_ptr<Gateway> gateway_;
    std::thread thread_;
};

}  // namespace arch::net
