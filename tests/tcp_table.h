// tests/tcp_table.h: the kernel's own count of TCP connections, for tests that state how many a
// socket holds open (read from /proc/net/tcp, which lists this network namespace's IPv4 sockets).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace arch::test {

// ESTABLISHED connections whose local port is `port`: a listening socket's accepted ends.
inline int established_at(int port) {
    std::ifstream table("/proc/net/tcp");
    std::string line;
    std::getline(table, line);  // the header
    int n = 0;
    while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state;
        fields >> slot >> local >> remote >> state;
        if (state == "01" && std::stoi(local.substr(local.find(':') + 1), nullptr, 16) == port) ++n;
    }
    return n;
}

}  // namespace arch::test
