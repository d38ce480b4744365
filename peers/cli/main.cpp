// peers/cli/main.cpp: `archipelago COMMAND ...`: builds the command line (CLI11) from every
// subcommand, runs the chosen one, and is the one place where errors are caught, printed as
// "error: ..." (with the closest spelling of a mistyped flag or command) and turned into an exit code.
#include <CLI/CLI.hpp>
#include <malloc.h>

#include <cstdio>
#include <exception>
#include <string>

#include "core/error.h"
#include "core/log.h"
#include "peers/cli/commands.h"
#include "peers/cli/parse_error.h"

int main(int argc, char** argv) {
    // glibc gives threads that allocate arenas of their own (up to 8 per core), and each arena keeps
    // what it once held: a host's socket reader, event loop and checkpoint writer then hold freed
    // message and blob memory several times over (test_hostile_peer: 44 MB more peak RSS under a
    // flood of hellos, 3 model sizes of its run). Two arenas keep the peak what the process uses.
    mallopt(M_ARENA_MAX, 2);
    CLI::App app("Archipelago: train language models across islands of GPUs joined by slow links (DiLoCo).",
                 "archipelago");
    app.set_version_flag("--version", std::string("archipelago ") + ARCH_VERSION);
    app.require_subcommand(1);
    // Defaults show in --help; a flag given twice keeps its last value (a script can override one).
    app.option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.get_formatter()->column_width(34);
    int exit_code = 0;
    arch::cli::add_commands(app, exit_code);
    try {
        app.parse(argc, argv);
        return exit_code;
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "error: %s\n", arch::cli::explain_parse_error(e, app).c_str());
        return 2;
    } catch (const arch::Error& e) {  // it may quote what a peer or the host sent: shown printable
        std::fprintf(stderr, "error: %s\n", arch::log::printable(e.what()).c_str());
        return 1;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "error: out of memory (try a smaller model, batch or sequence length)\n");
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", arch::log::printable(e.what()).c_str());
        return 1;
    }
}
