// net/zmq_common.h (internal to net/): the libzmq plumbing HostSocket and PeerSocket share:
// applying Limits, a socket monitor and its events in words, and receiving/validating one frame.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "net/socket_types.h"

namespace arch::net::detail {

// For net/'s own threads (ZAP, the host's reader): SIGINT/SIGTERM go to the application's threads,
// never here, where an interrupted recv would end the thread.
void block_signals_in_this_thread();

void set_int(zmq::socket_t& socket, int option, int value, const char* name);
void set_string(zmq::socket_t& socket, int option, const std::string& value, const char* name);
void apply_limits(zmq::socket_t& socket, const Limits& limits);

struct MonitorEvent {
    uint16_t event = 0;
    uint32_t value = 0;  // fd, errno, ZAP status or protocol error code, depending on the event
    std::string endpoint;
};

// Starts a monitor on `socket` and returns the PAIR socket that receives its events.
zmq::socket_t start_monitor(zmq::context_t& context, zmq::socket_t& socket, int events);
std::optional<MonitorEvent> read_monitor_event(zmq::socket_t& monitor);  // non-blocking
std::string describe_handshake_failure(const MonitorEvent& event);

// Validates a received frame against the run; on success fills header and payload (which then holds
// the frame: its bytes are not copied), on failure counts it as rejected and returns the reason.
bool accept_frame(zmq::message_t& frame, uint64_t run_id, Header& header, Payload& payload, Traffic& traffic,
                  std::string& reason);

// Stamps run id, sequence and length and builds the single frame: the header, then the payload's
// pieces one after another (a chunk's prefix and its data where the blob lies: one copy, into the frame).
zmq::message_t build_frame(Header header, Pieces payload, uint64_t run_id,
                           uint64_t sequence, const Limits& limits);
void count(std::map<uint16_t, TypeTraffic>& table, uint16_t type, std::size_t bytes);

}  // namespace arch::net::detail
