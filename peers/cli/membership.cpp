// peers/cli/membership.cpp: invite and revoke on the run's allow-list file, and the watch a running
// host keeps on that file. The file is only ever replaced whole (AllowList::save renames a finished
// temporary over it), so a reader sees the old list or the new one.
#include "peers/cli/membership.h"

#include <sys/stat.h>

#include <filesystem>

#include "core/error.h"
#include "core/file_io.h"
#include "net/endpoint.h"
#include "net/invite.h"
#include "net/keys.h"
#include "net/local_addresses.h"
#include "peers/cli/host_files.h"
#include "peers/cli/host_reachable.h"

namespace arch::cli {

namespace {

net::AllowList load_or_empty(const std::string& path) {
    return file_exists(path) ? net::AllowList::load(path) : net::AllowList();
}

std::string listed_names(const net::AllowList& allow) {
    std::string out;
    for (const std::string& key : allow.keys()) {
        const std::string name = allow.name_of(key);
        out += (out.empty() ? "" : ", ") + (name.empty() ? net::fingerprint(key) : name);
    }
    return out.empty() ? "nobody" : out;
}

}  // namespace

std::string public_key_argument(const std::string& key_or_file) {
    if (net::is_valid_public_key(key_or_file)) return key_or_file;
    if (!file_exists(key_or_file))
        throw Error("'" + key_or_file + "' is neither a Z85 public key (40 characters) nor a public key file");
    return net::load_public_key(key_or_file);
}

Invitation invite_peer(const RunConfig& c, const std::string& public_key, const std::string& name,
                       const std::string& endpoint) {
    net::check_public_key(public_key, "the peer's public key");
    if (name.empty()) throw Error("the peer needs a name (for the host's log and status)");
    std::filesystem::create_directories(c.checkpoint_dir);
    const HostFiles files = host_files(c);
    net::AllowList allow = load_or_empty(files.allow_list);
    allow.add(public_key, name);  // checks the name before anything is written
    net::Invite invite;
    invite.host_endpoint = endpoint;
    if (endpoint.empty()) {  // every address the host may be reached at, the router's first
        std::vector<std::string> all;
        if (const std::string mapped = read_mapped_endpoint(files.reachable); !mapped.empty()) all.push_back(mapped);
        const std::optional<net::TcpEndpoint> bind = net::split_tcp_endpoint(c.bind);
        if (bind && c.bind.starts_with(net::kEveryIpv4)) {
            for (const std::string& e : net::local_endpoints(static_cast<uint16_t>(std::stoi(bind->port)))) all.push_back(e);
            all.push_back("tcp://127.0.0.1:" + bind->port);  // last: a peer on this machine
        } else {
            all.push_back(c.bind);
        }
        if (all.empty()) all.push_back(c.bind);
        if (all.size() > net::Invite::kMoreEndpoints + 1) all.resize(net::Invite::kMoreEndpoints + 1);
        invite.host_endpoint = all.front();
        invite.more_endpoints.assign(all.begin() + 1, all.end());
    }
    invite.host_public_key = ensure_host_key(files).public_key;
    invite.run_id = ensure_run_id(files);
    invite.validate("the invite");
    allow.save(files.allow_list);
    return {name, public_key, invite.to_text(), allow.size()};
}

Revocation revoke_peer(const RunConfig& c, const std::string& name, const std::string& public_key) {
    if (name.empty() == public_key.empty()) throw Error("revoke: give either a peer's name or its public key");
    const HostFiles files = host_files(c);
    if (!file_exists(files.allow_list))
        throw Error("revoke: the run has no allow-list at '" + files.allow_list + "' (nobody was invited)");
    net::AllowList allow = net::AllowList::load(files.allow_list);
    std::string key = public_key;
    if (!key.empty()) {
        net::check_public_key(key, "the public key to revoke");
        if (!allow.contains(key))
            throw Error("revoke: key " + net::fingerprint(key) + " is not on the allow-list '" + files.allow_list +
                        "' (it lists " + listed_names(allow) + ")");
    } else {
        std::vector<std::string> matches;
        for (const std::string& k : allow.keys())
            if (allow.name_of(k) == name) matches.push_back(k);
        if (matches.empty())
            throw Error("revoke: no peer named '" + name + "' on the allow-list '" + files.allow_list + "' (it lists " +
                        listed_names(allow) + ")");
        if (matches.size() > 1)
            throw Error("revoke: " + std::to_string(matches.size()) + " keys are named '" + name +
                        "' on the allow-list; revoke one by its key");
        key = matches.front();
    }
    const std::string listed_as = allow.name_of(key);
    allow.remove(key);
    allow.save(files.allow_list);
    return {listed_as, key, allow.size()};
}

AllowListWatch::AllowListWatch(std::string path, std::function<void(const std::string&)> log)
    : path_(std::move(path)), log_(std::move(log)) {
    seen_ = stamp();  // before reading: an edit in between is seen by the first check()
    current_ = net::AllowList::load(path_);
}

void add_membership_actions(ControlActions& actions, std::function<std::optional<RunConfig>()> hosted) {
    actions.hosting = [hosted] { return hosted().has_value(); };
    auto config = [hosted] {
        std::optional<RunConfig> c = hosted();
        if (!c) throw Error("no run is hosted here");  // hosting() said yes a moment ago: the run just ended
        return *c;
    };
    actions.invite = [config](const std::string& name, const std::string& key, const std::string& endpoint) {
        const Invitation made = invite_peer(config(), key, name, endpoint);
        return MemberChange{made.name, made.public_key, made.invite_text};
    };
    actions.revoke = [config](const std::string& name, const std::string& key) {
        const Revocation gone = revoke_peer(config(), name, key);
        return MemberChange{gone.name, gone.public_key, ""};
    };
}

AllowListWatch::Stamp AllowListWatch::stamp() const {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) return {};
    Stamp s;
    s.exists = true;
    s.size = static_cast<uint64_t>(st.st_size);
    s.inode = static_cast<uint64_t>(st.st_ino);
    s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    return s;
}

std::optional<AllowListWatch::Change> AllowListWatch::check() {
    const Stamp now = stamp();
    if (now == seen_) return std::nullopt;
    seen_ = now;  // a bad version is reported once, and read again only when the file moves on
    if (!now.exists) {
        if (log_) log_("allow-list '" + path_ + "' is gone; keeping the " + std::to_string(current_.size()) + " keys it held");
        return std::nullopt;
    }
    net::AllowList next;
    try {
        next = net::AllowList::load(path_);
    } catch (const std::exception& e) {
        if (log_) log_(std::string("allow-list changed but cannot be read (keeping the old one): ") + e.what());
        return std::nullopt;
    }
    Change change;
    for (const std::string& key : next.keys())
        if (!current_.contains(key)) change.added.push_back(key);
    for (const std::string& key : current_.keys())
        if (!next.contains(key)) change.removed.push_back(key);
    current_ = next;
    change.list = std::move(next);
    return change;
}

}  // namespace arch::cli
