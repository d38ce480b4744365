// peers/cli/cmd_daemon.cpp: `archipelago daemon`: an idle node that serves the control API and, when
// told (POST /api/host or /api/join), runs one host or one peer on a worker thread through the same
// sessions as `archipelago host` and `archipelago peer`. While it hosts, POST /api/invite and
// /api/revoke change that run's allow-list (peers/cli/membership.h). After that run ends (finished, left, or
// failed) it keeps serving and may be told to host or join again. SIGINT/SIGTERM: leave, then exit.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include "core/error.h"
#include "core/file_io.h"
#include "net/keys.h"
#include "peers/cli/commands.h"
#include "peers/cli/host_files.h"
#include "peers/cli/membership.h"
#include "peers/cli/sessions.h"

namespace arch::cli {

namespace {

volatile std::sig_atomic_t g_quit = 0;
void on_quit(int) { g_quit = 1; }

// Runs at most one session at a time on a worker thread; the control API's actions start it.
class Daemon {
public:
    Daemon(RunStatus& status, PeerSession peer_defaults) : status_(status), peer_defaults_(std::move(peer_defaults)) {}
    ~Daemon() { finish(); }

    bool busy() const { return running_; }

    void host(const std::string& toml) {
        RunConfig config = parse_run_config(toml, "the posted run config");
        const HostFiles files = host_files(config);
        if (!file_exists(files.allow_list))
            throw Error("no allow-list at '" + files.allow_list + "': invite peers first (archipelago invite)");
        status_.begin("host", config.name, static_cast<int>(run_updates(config)), mode_name(config.mode), config.islands);
        {
            std::lock_guard lock(hosted_mutex_);
            hosted_ = config;
        }
        start([this, config] { return run_host_session(config, status_, false); });
    }

    // The run this daemon hosts now, for invite and revoke; nullopt while it hosts none.
    std::optional<RunConfig> hosted() const {
        std::lock_guard lock(hosted_mutex_);
        if (!running_) return std::nullopt;
        return hosted_;
    }

    void join(const std::string& invite_text, const std::string& key_path) {
        PeerSession session = peer_defaults_;
        session.invite = net::Invite::parse(invite_text, "the posted invite");
        session.key_path = key_path;
        net::load_keypair(key_path);  // a missing or bad key is the caller's error (400), found now
        status_.begin("peer", "", 0, "", 0);
        {
            std::lock_guard lock(hosted_mutex_);
            hosted_.reset();
        }
        start([this, session] { return run_peer_session(session, status_, false); });
    }

    void finish() {
        status_.request_leave();
        if (worker_.joinable()) worker_.join();
    }

private:
    template <class F>
    void start(F session) {
        if (worker_.joinable()) worker_.join();  // the last run has ended (not busy)
        status_.clear_commands();
        running_ = true;
        worker_ = std::thread([this, session] {
            try {
                session();
            } catch (const std::exception& e) {
                status_.log(std::string("error: ") + e.what());
                status_.set_state("failed");
                log::get("daemon")->error("the run failed: {}", e.what());
            }
            status_.log("daemon: idle");
            running_ = false;
        });
    }

    RunStatus& status_;
    PeerSession peer_defaults_;
    std::thread worker_;
    std::atomic<bool> running_{false};
    mutable std::mutex hosted_mutex_;
    std::optional<RunConfig> hosted_;  // the config of the last run hosted, if the last run was hosted
};


struct DaemonFlags {
    PeerSession peer;
    ControlFlags control;
    log::Options log;
};

void run_daemon(DaemonFlags& f) {
    log::configure(f.log);
    check_peer_flags(f.peer);
    resolve_control_flags(f.control);
    if (f.control.port < 0) throw Error("daemon: --control-port must be in [0, 65535]");
    const PeerSession& defaults = f.peer;
    const ControlFlags& control = f.control;
    RunStatus status;
    Daemon daemon(status, defaults);
    ControlActions actions;
    actions.busy = [&] { return daemon.busy(); };
    actions.host = [&](const std::string& toml) { daemon.host(toml); };
    actions.join = [&](const std::string& invite, const std::string& key) { daemon.join(invite, key); };
    add_membership_actions(actions, [&] { return daemon.hosted(); });  // invite, revoke: while it hosts
    ControlEndpoint endpoint(control, status, std::move(actions));
    std::signal(SIGINT, on_quit);
    std::signal(SIGTERM, on_quit);
    status.log("daemon: idle");
    log::get("daemon")->info("idle; host or join through the control API");
    while (!g_quit) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the server has its own thread
    log::get("daemon")->info("stopping");
    daemon.finish();
}

}  // namespace

void add_daemon(CLI::App& app, int& exit_code) {
    auto f = std::make_shared<DaemonFlags>();
    f->control.port = kDefaultControlPort;
    CLI::App* cmd = app.add_subcommand(
        "daemon", "serve the control API; host or join a run when told (the desktop app's backend; peer flags apply to runs it joins)");
    add_peer_flags(*cmd, f->peer);
    add_control_flags(*cmd, f->control);
    add_log_flags(*cmd, f->log);
    cmd->callback([f, &exit_code] {
        run_daemon(*f);
        exit_code = 0;
    });
}

}  // namespace arch::cli
