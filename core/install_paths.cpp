// core/install_paths.cpp: the search for shipped files and the XDG data directory.
#include "core/install_paths.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/error.h"

namespace arch {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

// The folders that may hold shipped files, in the order they are tried.
std::vector<fs::path> shipped_dirs() {
    std::vector<fs::path> dirs;
    if (const std::string home = env("ARCH_HOME"); !home.empty()) dirs.push_back(fs::path(home) / "data");
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        fs::path dir = exe.parent_path();
        for (int up = 0; up < 4 && !dir.empty() && dir != dir.root_path(); ++up) {
            if (fs::exists(dir / "CMakeLists.txt") && fs::exists(dir / "data")) dirs.push_back(dir / "data");  // a checkout
            dir = dir.parent_path();
        }
        dirs.push_back(exe.parent_path().parent_path() / "share" / "archipelago");  // PREFIX/bin -> PREFIX/share
    }
    return dirs;
}

}  // namespace

std::string shipped_file(const std::string& name) {
    std::string looked;
    for (const fs::path& dir : shipped_dirs()) {
        const fs::path p = dir / name;
        if (fs::is_regular_file(p)) return p.string();
        looked += (looked.empty() ? "" : ", ") + p.string();
    }
    throw Error("cannot find the shipped file '" + name + "' (looked in: " + (looked.empty() ? "nowhere" : looked) +
                "); set ARCH_HOME to a checkout of archipelago, or reinstall it");
}

std::string user_data_dir() {
    fs::path dir;
    if (const std::string d = env("ARCH_DATA_DIR"); !d.empty()) dir = d;
    else if (const std::string x = env("XDG_DATA_HOME"); !x.empty() && fs::path(x).is_absolute()) dir = fs::path(x) / "archipelago";
    else if (const std::string h = env("HOME"); !h.empty()) dir = fs::path(h) / ".local" / "share" / "archipelago";
    else throw Error("no data directory: set HOME, XDG_DATA_HOME or ARCH_DATA_DIR");
    std::error_code ec;
    if (!fs::is_directory(dir)) {
        fs::create_directories(dir, ec);
        if (ec) throw Error("cannot create the data directory '" + dir.string() + "': " + ec.message());
        fs::permissions(dir, fs::perms::owner_all, ec);
    }
    return dir.string();
}

}  // namespace arch
