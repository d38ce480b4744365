// peers/cli/commands.cpp: the list of subcommands, and the log flags every long-running one shares.
#include "peers/cli/commands.h"

namespace arch::cli {

void add_commands(CLI::App& app, int& exit_code) {
    add_train(app, exit_code);
    add_prepare(app, exit_code);
    add_sample(app, exit_code);
    add_export(app, exit_code);
    add_import(app, exit_code);
    add_keygen(app, exit_code);
    add_invite(app, exit_code);
    add_revoke(app, exit_code);
    add_host(app, exit_code);
    add_peer(app, exit_code);
    add_daemon(app, exit_code);
    add_status(app, exit_code);
    add_info(app, exit_code);
    add_plan(app, exit_code);
    add_privacy(app, exit_code);
    add_completion(app, exit_code);
}

void add_log_flags(CLI::App& command, log::Options& options) {
    command.add_option("--log-level", options.level, "trace, debug, info, warn, error or off")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
        ->group("Logging");
    command.add_option("--log-file", options.file, "also append the log lines to FILE (never the progress line)")
        ->group("Logging");
    command.add_option("--log-format", options.format, "text, or jsonl: one JSON object per line, for machines")
        ->check(CLI::IsMember({"text", "jsonl"}))
        ->group("Logging");
}

}  // namespace arch::cli
