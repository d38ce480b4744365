// net/port_mapping.cpp: UPnP IGD and NAT-PMP port mapping for a host at home (port_mapping.h).
#include "net/port_mapping.h"

#include <arpa/inet.h>
#include <miniupnpc/miniupnpc.h>
#include <miniupnpc/upnpcommands.h>
#include <miniupnpc/upnperrors.h>
#define ENABLE_STRNATPMPERR  // natpmp.h declares strnatpmperr only then (the library has it)
#include <natpmp.h>
#include <sys/select.h>

#include <chrono>
#include <cstring>

namespace arch::net {

const EnumNames<NatMode>& nat_mode_names() {
    static const EnumNames<NatMode> names = {
        {"auto", NatMode::automatic}, {"upnp", NatMode::upnp}, {"natpmp", NatMode::natpmp}, {"off", NatMode::off}};
    return names;
}

const char* reachability_name(Reachability r) {
    switch (r) {
        case Reachability::off: return "off";
        case Reachability::trying: return "trying";
        case Reachability::mapped: return "mapped";
        case Reachability::no_gateway: return "no gateway answered";
        case Reachability::refused: return "mapping refused";
        case Reachability::carrier_grade: return "behind carrier-grade NAT";
    }
    return "?";
}

bool is_private_ipv4(const std::string& address) {
    in_addr a{};
    if (inet_pton(AF_INET, address.c_str(), &a) != 1) return false;
    const uint32_t x = ntohl(a.s_addr);
    auto in = [&](uint32_t net, int bits) { return (x >> (32 - bits)) == (net >> (32 - bits)); };
    return in(0x0A000000, 8) || in(0xAC100000, 12) || in(0xC0A80000, 16) || in(0x64400000, 10) || in(0x7F000000, 8) ||
           in(0xA9FE0000, 16);
}

std::string MappingState::external_endpoint() const {
    if (state != Reachability::mapped || external_address.empty()) return "";
    return "tcp://" + external_address + ":" + std::to_string(external_port);
}

std::string MappingState::describe(uint16_t port) const {
    const std::string p = std::to_string(port);
    const std::string by_hand = "forward TCP port " + p + " on your router to this machine" +
                                (lan_address.empty() ? "" : " (" + lan_address + ")") + " by hand";
    const std::string other_ways = "a global IPv6 address, or an SSH reverse tunnel to a machine with a public address "
                                   "(docs/net.md, \"Hosting from home\")";
    const std::string said = detail.empty() ? "" : " (" + detail + ")";
    switch (state) {
        case Reachability::off: return "port mapping off" + said;
        case Reachability::trying: return "asking the gateway to map port " + p;
        case Reachability::mapped:
            return method + " mapped " + external_endpoint() + " to port " + p + ", and the gateway lists it";
        case Reachability::no_gateway:
            return "no gateway answered (UPnP or NAT-PMP)" + said + ": peers outside this network cannot reach the host; " +
                   by_hand + ", or use " + other_ways;
        case Reachability::refused:
            return method + " refused the mapping" + said + ": " + by_hand + ", or use " + other_ways;
        case Reachability::carrier_grade:
            return method + " mapped port " + p + ", but the gateway's external address " + external_address +
                   " is private or shared space: your provider's NAT sits in front of your router, so a forward on "
                   "the router cannot help; use " + other_ways;
    }
    return "";
}

// The protocol that answered, holding what a renewal and the removal need.
struct PortMapping::Gateway {
    virtual ~Gateway() = default;
    virtual std::string renew() = 0;  // "" when the gateway took it, else what it said
    virtual void remove() = 0;
};

namespace {

std::string lease_text(int lease_s) { return std::to_string(lease_s); }

struct UpnpGateway : PortMapping::Gateway {
    UPNPUrls urls{};
    IGDdatas data{};
    std::string port, lan, lease;
    ~UpnpGateway() override { FreeUPNPUrls(&urls); }
    std::string add() {
        int e = UPNP_AddPortMapping(urls.controlURL, data.first.servicetype, port.c_str(), port.c_str(), lan.c_str(),
                                    "archipelago host", "TCP", nullptr, lease.c_str());
        if (e == 725) {  // OnlyPermanentLeasesSupported: the gateway wants 0, which the removal at exit undoes
            lease = "0";
            e = UPNP_AddPortMapping(urls.controlURL, data.first.servicetype, port.c_str(), port.c_str(), lan.c_str(),
                                    "archipelago host", "TCP", nullptr, lease.c_str());
        }
        return e == UPNPCOMMAND_SUCCESS ? "" : "AddPortMapping: " + std::string(strupnperror(e) ? strupnperror(e) : "error") +
                                                   " (" + std::to_string(e) + ")";
    }
    // The IGD's own entry for our port: it must name this machine and this port.
    std::string verify() {
        char client[64] = {}, internal_port[8] = {}, desc[96] = {}, enabled[8] = {}, duration[16] = {};
        const int e = UPNP_GetSpecificPortMappingEntry(urls.controlURL, data.first.servicetype, port.c_str(), "TCP",
                                                       nullptr, client, internal_port, desc, enabled, duration);
        if (e != UPNPCOMMAND_SUCCESS) return "the gateway took the mapping but does not list it (" + std::to_string(e) + ")";
        if (lan != client || port != internal_port)
            return "the gateway lists port " + port + " for " + client + ":" + internal_port + ", not for this machine";
        return "";
    }
    std::string renew() override {
        const std::string e = add();
        return e.empty() ? verify() : e;
    }
    void remove() override { UPNP_DeletePortMapping(urls.controlURL, data.first.servicetype, port.c_str(), "TCP", nullptr); }
};

// Waits for the answer to the request in flight, at most `ms`: 0 and the response, or a NATPMP_ERR_*.
int natpmp_answer(natpmp_t& n, natpmpresp_t& response, int ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    for (int turn = 0; turn < 64; ++turn) {
        const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return NATPMP_ERR_NOGATEWAYSUPPORT;
        timeval tv{};
        getnatpmprequesttimeout(&n, &tv);
        const long long wanted = tv.tv_sec * 1000000LL + tv.tv_usec;
        const long long wait = std::max(0LL, std::min<long long>(wanted, left.count()));
        tv.tv_sec = static_cast<time_t>(wait / 1000000);
        tv.tv_usec = static_cast<suseconds_t>(wait % 1000000);
        fd_set fds;
        FD_ZERO(&fds);
        FD_SET(n.s, &fds);
        select(n.s + 1, &fds, nullptr, nullptr, &tv);
        const int r = readnatpmpresponseorretry(&n, &response);
        if (r != NATPMP_TRYAGAIN) return r < 0 ? r : 0;
    }
    return NATPMP_ERR_NOGATEWAYSUPPORT;
}

struct NatpmpGateway : PortMapping::Gateway {
    natpmp_t n{};
    uint16_t port = 0;
    int lease_s = 0, answer_ms = 0;
    uint16_t external_port = 0;
    bool open = false;  // initnatpmp succeeded
    ~NatpmpGateway() override {
        if (open) closenatpmp(&n);
    }
    std::string renew() override {
        if (sendnewportmappingrequest(&n, NATPMP_PROTOCOL_TCP, port, port, static_cast<uint32_t>(lease_s)) < 0)
            return "NAT-PMP: the request could not be sent";
        natpmpresp_t r{};
        const int e = natpmp_answer(n, r, answer_ms);
        if (e != 0) return std::string("NAT-PMP: ") + strnatpmperr(e);
        external_port = r.pnu.newportmapping.mappedpublicport;
        return "";
    }
    void remove() override {
        if (sendnewportmappingrequest(&n, NATPMP_PROTOCOL_TCP, port, 0, 0) < 0) return;
        natpmpresp_t r{};
        natpmp_answer(n, r, answer_ms);
    }
};

std::unique_ptr<PortMapping::Gateway> try_upnp(const PortMappingOptions& o, MappingState& s) {
    // Internet gateways only (v1, then v2): each search waits discover_ms at most.
    static const char* const kinds[] = {"urn:schemas-upnp-org:device:InternetGatewayDevice:1",
                                        "urn:schemas-upnp-org:device:InternetGatewayDevice:2", nullptr};
    int error = 0;
    UPNPDev* devices = upnpDiscoverDevices(kinds, o.discover_ms, nullptr, nullptr, UPNP_LOCAL_PORT_ANY, 0, 2, &error, 0);
    if (!devices) {
        s.detail = "no UPnP device answered the search";
        return nullptr;
    }
    auto g = std::make_unique<UpnpGateway>();
    char lan[64] = {};
    const int found = UPNP_GetValidIGD(devices, &g->urls, &g->data, lan, sizeof(lan));
    freeUPNPDevlist(devices);
    if (found == 0) {
        s.detail = "UPnP devices answered, none an Internet gateway";
        return nullptr;
    }
    s.method = "UPnP IGD";
    s.lan_address = lan;
    if (found != 1) {
        s.state = Reachability::refused;
        s.detail = found == 2 ? "the gateway says its WAN link is not connected" : "the UPnP device is not an Internet gateway";
        return nullptr;
    }
    char external[64] = {};
    if (UPNP_GetExternalIPAddress(g->urls.controlURL, g->data.first.servicetype, external) == UPNPCOMMAND_SUCCESS)
        s.external_address = external;
    g->port = std::to_string(o.port);
    g->lan = lan;
    g->lease = lease_text(o.lease_s);
    if (std::string e = g->renew(); !e.empty()) {
        s.state = Reachability::refused;
        s.detail = e;
        g->remove();
        return nullptr;
    }
    s.external_port = o.port;
    return g;
}

std::unique_ptr<PortMapping::Gateway> try_natpmp(const PortMappingOptions& o, MappingState& s) {
    auto g = std::make_unique<NatpmpGateway>();
    if (initnatpmp(&g->n, 0, 0) < 0) {
        s.detail += (s.detail.empty() ? "" : "; ") + std::string("no default gateway for NAT-PMP");
        return nullptr;
    }
    g->open = true;
    g->port = o.port;
    g->lease_s = o.lease_s;
    g->answer_ms = o.discover_ms;
    natpmpresp_t r{};
    int e = sendpublicaddressrequest(&g->n) < 0 ? NATPMP_ERR_SENDERR : natpmp_answer(g->n, r, o.discover_ms);
    if (e != 0) {
        s.detail += (s.detail.empty() ? "" : "; ") + std::string("NAT-PMP: ") + strnatpmperr(e);
        return nullptr;
    }
    s.method = "NAT-PMP";
    char external[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &r.pnu.publicaddress.addr, external, sizeof(external));
    s.external_address = external;
    if (std::string failed = g->renew(); !failed.empty()) {
        s.state = Reachability::refused;
        s.detail = failed;
        return nullptr;
    }
    s.external_port = g->external_port;
    return g;
}

}  // namespace

PortMapping::PortMapping(PortMappingOptions options) : options_(std::move(options)) {
    if (options_.mode == NatMode::off) {
        state_.detail = "run.nat = \"off\"";
        return;
    }
    thread_ = std::thread([this] { run(); });
}

PortMapping::~PortMapping() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

MappingState PortMapping::state() const {
    std::lock_guard lock(mu_);
    return state_;
}

void PortMapping::set(MappingState s) {
    {
        std::lock_guard lock(mu_);
        state_ = s;
    }
    if (options_.on_change) options_.on_change(s);
}

void PortMapping::run() {
    set({.state = Reachability::trying});
    MappingState s{.state = Reachability::no_gateway};
    if (options_.mode != NatMode::natpmp) gateway_ = try_upnp(options_, s);
    if (!gateway_ && s.state == Reachability::no_gateway && options_.mode != NatMode::upnp) gateway_ = try_natpmp(options_, s);
    if (gateway_) s.state = is_private_ipv4(s.external_address) ? Reachability::carrier_grade : Reachability::mapped;
    set(s);
    if (!gateway_) return;
    std::unique_lock lock(mu_);
    const auto every = std::chrono::seconds(std::max(options_.lease_s / 2, 1));
    while (!wake_.wait_for(lock, every, [&] { return stopping_; })) {
        lock.unlock();
        const std::string failed = gateway_->renew();
        if (!failed.empty()) {
            MappingState lost = s;
            lost.state = Reachability::refused;
            lost.detail = "the renewal failed: " + failed;
            set(lost);
        } else if (state().state != s.state) {
            set(s);
        }
        lock.lock();
    }
    lock.unlock();
    gateway_->remove();
    gateway_.reset();
}

}  // namespace arch::net
