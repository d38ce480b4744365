// peers/cli/membership.h: who may be in a run, changed while it goes on. invite_peer and revoke_peer
// edit the run's allow-list file (run.checkpoint_dir/allow_list.txt) for `archipelago invite` /
// `revoke` and the control API alike; AllowListWatch is how a running host notices those edits.
// Nothing here touches a socket or a Host: run_host_session applies what the watch reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "net/allow_list.h"
#include "peers/control/control_api.h"
#include "peers/run_config.h"

namespace arch::cli {

struct Invitation {
    std::string name;
    std::string public_key;   // Z85
    std::string invite_text;  // what the peer joins with (net::Invite::to_text)
    std::size_t listed = 0;   // keys on the allow-list now
};

// Puts public_key (Z85 text) on the run's allow-list as `name` (renaming it if listed) and makes its
// invite; the host key and run id are created on first use. endpoint: the address peers dial
// ("": run.bind). Throws arch::Error on a malformed key or name before anything is written.
Invitation invite_peer(const RunConfig& config, const std::string& public_key, const std::string& name,
                       const std::string& endpoint = "");

struct Revocation {
    std::string name;
    std::string public_key;
    std::size_t listed = 0;  // keys left on the allow-list
};

// Takes one key off the run's allow-list, chosen by name or by Z85 key (give exactly one). Throws
// arch::Error, changing nothing, when no listed peer matches, or a name is held by several keys.
Revocation revoke_peer(const RunConfig& config, const std::string& name, const std::string& public_key);

// A Z85 key given as itself or as the path of a .pub file.
std::string public_key_argument(const std::string& key_or_file);

// The control API's invite and revoke (POST /api/invite, /api/revoke) for a process that hosts a
// run: `hosted` returns that run's config, or nullopt while it hosts none (the routes answer 409).
void add_membership_actions(ControlActions& actions, std::function<std::optional<RunConfig>()> hosted);

// Watches the allow-list file by its size, modification time and inode. check() reads it again when
// one of them moved; a file that is missing or does not parse (half written by hand, say) keeps the
// old list, logged once per bad version of the file.
class AllowListWatch {
public:
    struct Change {
        net::AllowList list;                       // the file's new contents
        std::vector<std::string> added, removed;   // keys, against the previous list
    };
    // Reads the file now (throws arch::Error if it is missing or bad: the host cannot start on it).
    AllowListWatch(std::string path, std::function<void(const std::string&)> log);
    std::optional<Change> check();  // nullopt: nothing changed (or nothing usable)
    const net::AllowList& list() const { return current_; }

private:
    struct Stamp {
        bool exists = false;
        uint64_t size = 0, inode = 0;
        int64_t mtime_ns = 0;
        bool operator==(const Stamp&) const = default;
    };
    Stamp stamp() const;

    std::string path_;
    net::AllowList current_;
    std::function<void(const std::string&)> log_;
    Stamp seen_;
};

}  // namespace arch::cli
