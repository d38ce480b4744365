// peers/cli/cmd_completion.cpp: `archipelago completion`: prints a bash completion script made from
// the command line itself (every subcommand and its flags, as CLI11 knows them), so it can never
// fall behind. The install puts its output in share/bash-completion/completions/archipelago.
#include <cstdio>
#include <string>

#include "peers/cli/commands.h"

namespace arch::cli {

namespace {

std::string flags_of(const CLI::App& command) {
    std::string flags;
    for (const CLI::Option* o : command.get_options())
        for (const std::string& name : o->get_lnames()) flags += (flags.empty() ? "--" : " --") + name;
    return flags;
}

std::string bash_script(const CLI::App& app) {
    std::string commands, cases;
    for (const CLI::App* sub : app.get_subcommands({})) {
        commands += sub->get_name() + " ";
        cases += "    " + sub->get_name() + ") flags=\"" + flags_of(*sub) + "\" ;;\n";
    }
    return "# bash completion for archipelago (made by `archipelago completion`)\n"
           "_archipelago() {\n"
           "  local cur=${COMP_WORDS[COMP_CWORD]} flags=\"\"\n"
           "  if [[ $COMP_CWORD -eq 1 ]]; then\n"
           "    COMPREPLY=($(compgen -W \"" + commands + flags_of(app) + "\" -- \"$cur\"))\n"
           "    return\n"
           "  fi\n"
           "  case ${COMP_WORDS[1]} in\n" + cases +
           "  esac\n"
           "  if [[ $cur == -* ]]; then\n"
           "    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
           "  else\n"
           "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
           "  fi\n"
           "}\n"
           "complete -o filenames -F _archipelago archipelago\n";
}

}  // namespace

void add_completion(CLI::App& app, int& exit_code) {
    CLI::App* cmd = app.add_subcommand("completion", "print the bash completion script (source it, or see the install)");
    cmd->callback([&app, &exit_code] {
        std::fputs(bash_script(app).c_str(), stdout);
        exit_code = 0;
    });
}

}  // namespace arch::cli
