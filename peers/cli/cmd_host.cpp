// peers/cli/cmd_host.cpp: `archipelago host --config run.toml`: binds the encrypted host socket
// (allow-list from the run folder), runs the rounds, and prints one table row per round. With
// --control-port it also serves the control API (status, pause/resume/leave, invite/revoke;
// docs/control-api.md).
#include "core/error.h"
#include "peers/cli/commands.h"
#include "peers/cli/membership.h"
#include "peers/cli/sessions.h"

namespace arch::cli {

namespace {

struct HostFlags {
    std::string config, bind;
    ControlFlags control;
    log::Options log;
};

}  // namespace

void add_host(CLI::App& app, int& exit_code) {
    auto f = std::make_shared<HostFlags>();
    CLI::App* cmd = app.add_subcommand("host", "host a DiLoCo run (run.toml)");
    cmd->add_option("--config", f->config, "the run's run.toml (docs/run-config.md)")->required();
    cmd->add_option("--bind", f->bind, "tcp://ADDR:PORT to listen on (default: run.bind)");
    add_control_flags(*cmd, f->control);
    add_log_flags(*cmd, f->log);
    cmd->callback([f, &exit_code] {
        log::configure(f->log);
        resolve_control_flags(f->control);
        RunConfig config = load_run_config(f->config);
        if (!f->bind.empty()) config.bind = f->bind;
        RunStatus status;
        ControlActions actions{[] { return true; }, {}, {}};
        add_membership_actions(actions, [config] { return std::optional<RunConfig>(config); });  // invite, revoke
        ControlEndpoint endpoint(f->control, status, std::move(actions));
        exit_code = run_host_session(std::move(config), status, true) || stopped_by_signal() ? 0 : 1;
    });
}

}  // namespace arch::cli
