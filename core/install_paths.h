// core/install_paths.h: where Archipelago finds what it ships, and where it keeps what it makes.
// Shipped, read-only (the bundled corpus, default configs): $ARCH_HOME/data; else a checkout's data/
// found upward from the executable; else PREFIX/share/archipelago beside an installed PREFIX/bin.
// Made (the prepared corpus, island slices, default run folders): the user's data directory,
// $ARCH_DATA_DIR, else $XDG_DATA_HOME/archipelago, else ~/.local/share/archipelago. Never beside the
// binary, never inside the checkout.
#pragma once

#include <string>

namespace arch {

// The path of a shipped file ("kjv.txt.zst", "demo-run.toml"); throws arch::Error naming the places
// it looked when none holds it.
std::string shipped_file(const std::string& name);

// The user's data directory, created (mode 0700) if missing.
std::string user_data_dir();

}  // namespace arch
