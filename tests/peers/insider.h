// tests/peers/insider.h: what the tests of a hostile insider share: a raw socket with an invited
// peer's key (frames go out as written; nothing is read unless the test reads it), and a process's
// memory and CPU time read from /proc, to state what an attack may cost the host, and the run's clean
// stop once the attack is over.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "net/invite.h"
#include "net/keys.h"
#include "net/peer_socket.h"
#include "tests/peers/run_fixture.h"

namespace arch::test {

// VmHWM (peak) or VmRSS of a process, in bytes.
inline uint64_t memory_of(pid_t pid, const std::string& field) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
    return 0;
}

// User and system CPU seconds a process has used, all its threads together.
inline double cpu_seconds_of(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const std::size_t close = text.rfind(')');  // the command name may hold spaces
    if (close == std::string::npos) return 0;
    std::istringstream fields(text.substr(close + 2));
    std::string skip;
    for (int i = 3; i < 14; ++i) fields >> skip;  // state .. cmajflt: fields 3 to 13
    unsigned long long utime = 0, stime = 0;
    fields >> utime >> stime;
    return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// A raw socket with peer i's key: frames go out as they are, and closing it drops the connection at
// once (linger 0). `limits` may change the rest of its limits (its queues, its reconnects).
inline std::unique_ptr<net::PeerSocket> raw_socket(const Run& run, int i,
                                                   const std::function<void(net::Limits&)>& limits = {}) {
    const net::Invite invite = net::Invite::load(run.invite(i));
    net::PeerSocketOptions so;
    so.host_endpoint = invite.host_endpoint;
    so.host_public_key = invite.host_public_key;
    so.keys = net::load_keypair(run.key(i));
    so.run_id = invite.run_id;
    so.limits.linger_ms = 0;
    if (limits) limits(so.limits);
    so.log = [](const std::string&) {};
    return std::make_unique<net::PeerSocket>(so);
}

// False when the frame could not be queued within the socket's send timeout (a host that is gone).
inline bool send_raw(net::PeerSocket& socket, uint16_t type, std::span<const std::byte> payload, uint64_t round = 0) {
    net::Header h;
    h.type = type;
    h.round = round;
    return socket.send(h, payload);
}

// SIGTERM to the host, then to each peer: every one ends cleanly (exit 0) within a minute.
// A failure shows the end of that node's log, written after the signal (what libzmq or glibc said).
inline void stop_cleanly(Process& host, std::vector<std::unique_ptr<Process>>& peers) {
    const auto stop = [](Process& p) {
        p.kill(SIGTERM);
        const int code = p.wait(60);
        const std::string log = p.log();
        INFO("the end of its log:\n" << log.substr(log.size() > 6000 ? log.size() - 6000 : 0));
        CHECK(code == 0);
    };
    stop(host);
    for (auto& p : peers) stop(*p);
}

}  // namespace arch::test
