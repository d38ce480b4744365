// net/local_addresses.cpp: local_endpoints from getifaddrs (local_addresses.h).
#include "net/local_addresses.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

namespace arch::net {

std::vector<std::string> local_endpoints(uint16_t port) {
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return {};
    std::vector<std::string> v4, v6;
    const std::string p = std::to_string(port);
    for (ifaddrs* i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
        char text[INET6_ADDRSTRLEN] = {};
        if (i->ifa_addr->sa_family == AF_INET) {
            const in_addr& a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
            if ((ntohl(a.s_addr) >> 24) == 127) continue;
            inet_ntop(AF_INET, &a, text, sizeof(text));
            v4.push_back("tcp://" + std::string(text) + ":" + p);
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr;
            const bool global = (a.s6_addr[0] & 0xe0) == 0x20;  // 2000::/3, global unicast
            if (!global) continue;
            inet_ntop(AF_INET6, &a, text, sizeof(text));
            v6.push_back("tcp://[" + std::string(text) + "]:" + p);
        }
    }
    ::freeifaddrs(list);
    v4.insert(v4.end(), v6.begin(), v6.end());
    return v4;
}

}  // namespace arch::net
