// peers/cli/commands.h: the archipelago subcommands. Each add_* registers one subcommand on the CLI11
// app: its flags (bound to the command's settings, defaults shown in --help) and a callback that runs
// it when chosen and sets exit_code. Errors are thrown as arch::Error and printed by main.
#pragma once

#include <CLI/CLI.hpp>

#include "core/log.h"

namespace arch::cli {

void add_commands(CLI::App& app, int& exit_code);  // all of those below, in the order --help lists them

void add_train(CLI::App& app, int& exit_code);
void add_prepare(CLI::App& app, int& exit_code);
void add_sample(CLI::App& app, int& exit_code);
void add_export(CLI::App& app, int& exit_code);
void add_import(CLI::App& app, int& exit_code);
void add_keygen(CLI::App& app, int& exit_code);
void add_invite(CLI::App& app, int& exit_code);
void add_revoke(CLI::App& app, int& exit_code);  // takes a key off the allow-list
void add_host(CLI::App& app, int& exit_code);
void add_peer(CLI::App& app, int& exit_code);
void add_daemon(CLI::App& app, int& exit_code);  // control API; host or join when told
void add_status(CLI::App& app, int& exit_code);  // a control API client
void add_info(CLI::App& app, int& exit_code);    // backends, devices, compiled CUDA architectures
void add_plan(CLI::App& app, int& exit_code);    // memory per device by category: what fits on a rig
void add_privacy(CLI::App& app, int& exit_code); // epsilon of a planned DP run, or the noise for a budget
void add_completion(CLI::App& app, int& exit_code);  // the bash completion script, made from `app`

// --log-level, --log-file, --log-format on a long-running command; configure_logging() applies them.
void add_log_flags(CLI::App& command, log::Options& options);

}  // namespace arch::cli
