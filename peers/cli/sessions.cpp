// peers/cli/sessions.cpp: the setup of a host run and of a peer run, shared by the host and peer
// commands and the daemon; and the control API flags and endpoint.
#include "peers/cli/sessions.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "core/file_io.h"
#include "core/install_paths.h"
#include "net/host_socket.h"
#include "net/keys.h"
#include "net/endpoint.h"
#include "net/endpoint_probe.h"
#include "net/peer_socket.h"
#include "net/port_mapping.h"
#include "peers/cli/host_reachable.h"
#include "peers/cli/commands.h"
#include "peers/cli/host_files.h"
#include "peers/cli/membership.h"
#include "core/log.h"
#include "peers/cli/round_table.h"
#include "peers/diloco/model_factory.h"
#include "peers/control/token.h"
#include "peers/host.h"
#include "peers/net_link.h"
#include "peers/peer.h"

namespace arch::cli {

namespace {
Host* g_host = nullptr;
Peer* g_peer = nullptr;
volatile std::sig_atomic_t g_signalled = 0;
void on_signal(int) {
    g_signalled = 1;
    if (g_host) g_host->stop();
    if (g_peer) g_peer->stop();
}
void catch_signals() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
}


// The router's mapping for the host's port (net/port_mapping.h): logged, in the status and its events,
// and in host.reachable for `archipelago invite`. Returns the mapping, or nothing where none is tried.
std::unique_ptr<net::PortMapping> map_host_port(const RunConfig& config, const HostFiles& files, const std::string& endpoint,
                                                RunStatus& status, const std::function<void(const std::string&)>& line,
                                                const std::function<void()>& give_up) {
    const std::optional<net::TcpEndpoint> bound = net::split_tcp_endpoint(endpoint);  // as HostSocket::endpoint() says it
    const bool loopback = bound && (bound->host.starts_with("127.") || bound->host == "localhost" || bound->host == "::1");
    if (config.nat == net::NatMode::off || !bound || loopback) {
        status.set_reachability("off", "", config.nat == net::NatMode::off ? "run.nat = \"off\""
                                           : loopback                   ? "the host listens on loopback only"
                                                                        : "the host's endpoint is not tcp://HOST:PORT");
        return nullptr;
    }
    const auto port = static_cast<uint16_t>(std::stoi(bound->port));
    const net::NatMode mode = config.nat;
    net::PortMappingOptions o{.mode = mode, .port = port};
    o.on_change = [&status, line, give_up, files, port, mode](const net::MappingState& m) {
        const std::string said = m.describe(port);
        line("reachability: " + said);
        status.set_reachability(net::reachability_name(m.state), m.external_endpoint(), said);
        status.event({.kind = "reachability", .type = net::reachability_name(m.state), .detail = said});
        if (m.state == net::Reachability::trying) return;
        write_host_reachable(files.reachable, net::reachability_name(m.state), m.external_endpoint());
        if (mode != net::NatMode::automatic && m.state != net::Reachability::mapped) {
            line("run.nat = \"" + name_in(net::nat_mode_names(), mode) + "\" insists on a mapping: the host stops");
            give_up();
        }
    };
    return std::make_unique<net::PortMapping>(std::move(o));
}
}  // namespace

bool stopped_by_signal() {
    return g_signalled != 0;
}

bool run_host_session(RunConfig config, RunStatus& status, bool stop_on_signal) {
    if (stop_on_signal) catch_signals();  // from the start: a signal while the host starts stops it once it can
    const HostFiles files = host_files(config);
    if (!file_exists(files.allow_list))
        throw Error("host: no allow-list at '" + files.allow_list + "': invite peers first (archipelago invite)");
    const auto lg = log::get("host"), net_lg = log::get("net");
    auto line = [&](const std::string& text) {
        lg->info(text);
        status.log(text);
    };
    auto net_line = [&](const std::string& text) {
        net_lg->info(text);
        status.log("net: " + text);
    };
    status.begin("host", config.name, static_cast<int>(run_updates(config)), mode_name(config.mode), config.islands);

    net::HostSocketOptions so;
    so.bind_endpoint = config.bind;
    so.keys = ensure_host_key(files);
    AllowListWatch watch(files.allow_list, line);  // `archipelago invite` / `revoke` edit it while we run
    so.allow = watch.list();
    so.run_id = ensure_run_id(files);
    so.limits.heartbeat_timeout_ms = static_cast<int>(config.heartbeat_timeout_s * 1000);
    so.limits.heartbeat_ttl_ms = so.limits.heartbeat_timeout_ms * 2;
    so.log = net_line;

    HostOptions ho;
    ho.config = config;
    ho.log = line;
    ho.status = &status;
    ho.event = [&](const RunEvent& e) { status.event(e); };
    RoundTable table;
    ho.on_round = [&](const RoundRow& row) { table.print(row); };
    net::HostSocket* live = nullptr;
    ho.revoked = [&]() -> std::vector<std::string> {
        const net::AllowList before = watch.list();
        std::optional<AllowListWatch::Change> change = watch.check();
        if (!change || !live) return {};
        live->set_allow_list(change->list);  // new handshakes at once; removed keys' messages dropped
        for (const std::string& key : change->added) {
            line("allow-list: " + change->list.name_of(key) + " (" + net::fingerprint(key) + ") may join now");
            status.event({.kind = "allow_list", .peer = change->list.name_of(key), .type = "added"});
        }
        for (const std::string& key : change->removed) {
            line("allow-list: " + before.name_of(key) + " (" + net::fingerprint(key) + ") was taken off");
            status.event({.kind = "allow_list", .peer = before.name_of(key), .type = "removed"});
        }
        return change->removed;
    };
    Host host(std::move(ho));
    net::HostSocket socket(std::move(so));
    live = &socket;
    line("listening on " + socket.endpoint() + " for run " + config.name + " (" + std::to_string(config.islands) +
         " islands, " + std::to_string(run_updates(config)) + " rounds, " + mode_name(config.mode) + ")");
    std::atomic<bool> unmapped{false};  // run.nat insisted on a mapping and got none
    const std::unique_ptr<net::PortMapping> mapping = map_host_port(config, files, socket.endpoint(), status, line, [&] {
        unmapped = true;
        host.stop();
    });
    HostLink link(socket, [&](const std::string& text) { net_line("transfer: " + text); });
    link.on_refused([&](const std::string& reason) { status.event({.kind = "transfer_refused", .detail = reason}); });
    if (stop_on_signal) {
        g_host = &host;
        if (g_signalled) host.stop();
    }
    host.run(link);
    g_host = nullptr;
    table.summary();
    line("θ " + host.theta_hash().substr(0, 16) + "; checkpoint " + config.checkpoint_dir + "/model.bin");
    return host.round() >= run_updates(config) && !unmapped;
}

void add_peer_flags(CLI::App& command, PeerSession& s) {
    command.add_option("--name", s.name, "this island's name, for the host's logs and status")->group("Island");
    command.add_option("--throttle", s.throttle, "F < 1 makes this island artificially slower (tests and demos)")
        ->check(CLI::Range(1e-6, 1.0))
        ->group("Island");
    command.add_option("--devices", s.devices, "this island's devices (CPU threads, or GPUs)")->check(CLI::Range(1, 64))->group("Island");
    command.add_option("--parallel", s.parallel, "ddp or zero3")->check(CLI::IsMember({"ddp", "zero3"}))->group("Island");
    command.add_option("--recompute", s.recompute, "none, attention or block: recompute activations in backward")
        ->check(CLI::IsMember({"none", "attention", "block"}))
        ->group("Island");
    command.add_option("--offload", s.offload, "none or optimizer: master weights and AdamW state in host memory (GPU)")
        ->check(CLI::IsMember({"none", "optimizer"}))
        ->group("Island");
    command.add_option("--device", s.device, "cpu, cuda or cuda:N")->group("Island");
    command.add_option("--workdir", s.workdir,
                       "where this peer keeps what it writes: fetched data, the island's shard, its log "
                       "(default: a folder per run under the user's data directory)")
        ->group("Data");
    command.add_option("--data", s.data_dirs,
                       "a folder holding your own copy of the run's data set (llm.c shards, matched by hash, not by "
                       "name); repeatable. What is not found there is fetched from the host")
        ->check(CLI::ExistingDirectory)
        ->group("Data");
    command.add_flag("--state-on-disk", s.state_on_disk,
                     "keep the DiLoCo state that lasts across rounds, the replica of the global θ and the error-feedback "
                     "residual (P = 4 bytes a parameter each), in memory-mapped files in the working directory instead of "
                     "in RAM: for a big model on a machine short of RAM (docs/run-config.md, \"Memory\")")
        ->group("Island");
    command.add_option("--max-params", s.max_params,
                       "refuse a run whose model has more parameters than this (default: as many as one fp32 copy "
                       "that fits this machine's RAM): a host's welcome never makes this machine allocate what it cannot hold")
        ->group("Island");
    // Fault injection for tests (docs/protocol.md): hidden from --help (no group).
    command.add_option("--fault-kill-after-chunks", s.fault_kill_after_chunks)->check(CLI::NonNegativeNumber)->group("");
}

std::string peer_workdir(const PeerSession& s) {
    if (!s.workdir.empty()) return s.workdir;
    return user_data_dir() + "/peers/" + std::to_string(s.invite.run_id) + "-" + s.name;
}

void check_peer_flags(const PeerSession& s) {
    diloco::DeviceOptions options;  // a clear error now rather than after joining
    options.recompute = parse_recompute(s.recompute);
    options.offload = parse_offload(s.offload);
    diloco::check_device_options(s.device, options);
}

bool run_peer_session(const PeerSession& session, RunStatus& status, bool stop_on_signal) {
    if (stop_on_signal) catch_signals();  // from the start, as the host's
    const net::Invite& invite = session.invite;
    const auto lg = log::get("peer"), net_lg = log::get("net");
    auto line = [&](const std::string& text) {
        lg->info(text);
        status.log(text);
    };
    auto net_line = [&](const std::string& text) {
        net_lg->info(text);
        status.log("net: " + text);
    };
    net::PeerSocketOptions so;
    so.host_endpoint = invite.host_endpoint;
    if (!invite.more_endpoints.empty()) {  // the host's addresses in the invite's order: the first that answers
        const net::ProbeResult probe = net::first_reachable(invite.endpoints(), 3000);
        for (const std::string& failed : probe.failed) line("host address not reachable: " + failed);
        if (!probe.reached.empty()) {
            so.host_endpoint = probe.reached;
            line("host reachable at " + probe.reached);
        } else {
            line("none of the invite's " + std::to_string(invite.endpoints().size()) + " host addresses answered; trying " +
                 invite.host_endpoint + " until it does");
        }
    }
    so.host_public_key = invite.host_public_key;
    so.keys = net::load_keypair(session.key_path);
    so.run_id = invite.run_id;
    so.log = net_line;
    const std::string fingerprint = net::fingerprint(so.keys.public_key);
    const std::string socket_endpoint = so.host_endpoint;
    status.begin("peer", "", 0, "", 0);
    status.peer("self", [&](PeerRow& row) { row.fingerprint = fingerprint; });
    net::PeerSocket socket(std::move(so));
    PeerLink link(socket, [&](const std::string& text) { net_line("transfer: " + text); });
    link.on_refused([&](const std::string& reason) { status.event({.kind = "transfer_refused", .detail = reason}); });
    if (session.fault_kill_after_chunks > 0)
        link.on_chunk_sent([left = session.fault_kill_after_chunks]() mutable {
            if (--left == 0) ::raise(SIGKILL);  // in the middle of sending a blob
        });

    PeerOptions po;
    po.name = session.name;
    po.throttle = session.throttle;
    po.devices = session.devices;
    po.parallel = parse_parallel(session.parallel);
    po.device = session.device;
    po.device_options.recompute = parse_recompute(session.recompute);
    po.device_options.offload = parse_offload(session.offload);
    po.log = line;
    po.status = &status;
    po.event = [&](const RunEvent& e) { status.event(e); };
    po.workdir = peer_workdir(session);
    po.data_dirs = session.data_dirs;
    po.state_on_disk = session.state_on_disk;
    po.max_params = session.max_params;
    std::filesystem::create_directories(po.workdir);
    Peer peer(std::move(po));
    if (stop_on_signal) {
        g_peer = &peer;
        if (g_signalled) peer.stop();
    }
    line("connecting to " + socket_endpoint + " (host " + net::fingerprint(invite.host_public_key) + ")");
    const bool finished = peer.run(link, invite.host_public_key);
    g_peer = nullptr;
    return finished;
}

void add_control_flags(CLI::App& command, ControlFlags& f) {
    command.add_option("--control-port", f.port, "serve the control API on 127.0.0.1:P (0: any free port, -1: none)")
        ->check(CLI::Range(-1, 65535))
        ->group("Control API");
    command.add_option("--token-file", f.token_file,
                       "its bearer token (default $ARCH_TOKEN_FILE or ~/.config/archipelago/token, made 0600)")
        ->group("Control API");
    command.add_flag("--metrics-public", f.metrics_public, "serve /metrics without the token")->group("Control API");
    command.add_option("--events", f.events_file,
                       "append the run's events to FILE, one JSON object a line (docs/events.md), for scripts")
        ->group("Control API");
}

void resolve_control_flags(ControlFlags& f) {
    if (f.token_file.empty()) f.token_file = default_token_file();
}

ControlEndpoint::ControlEndpoint(const ControlFlags& flags, RunStatus& status, ControlActions actions) {
    if (!flags.events_file.empty()) {
        events_ = std::make_unique<EventFile>(flags.events_file);
        status.set_event_sink([events = events_.get()](const RunEvent& e) { events->write(e); });
    }
    if (flags.port < 0) return;
    api_ = std::make_unique<ControlApi>(status, load_or_create_token(flags.token_file), std::move(actions),
                                        flags.metrics_public);
    server_ = std::make_unique<ControlServer>(*api_, flags.port);
    log::get("control")->info("control API on 127.0.0.1:{} (token in {})", server_->port(), flags.token_file);
}

}  // namespace arch::cli
