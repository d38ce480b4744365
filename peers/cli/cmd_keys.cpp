// peers/cli/cmd_keys.cpp: `archipelago keygen` (a node's CURVE key pair) and `archipelago invite`
// (adds a peer's public key to the host's allow-list and writes the invite it joins with).
// The host's files live in its run folder (run.checkpoint_dir): host.key, run_id, allow_list.txt.
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "core/file_io.h"
#include "net/allow_list.h"
#include "net/invite.h"
#include "net/keys.h"
#include "peers/cli/args.h"
#include "peers/cli/commands.h"
#include "peers/cli/host_files.h"
#include "peers/run_config.h"

namespace arch::cli {

HostFiles host_files(const RunConfig& c) {
    return {c.checkpoint_dir + "/host.key", c.checkpoint_dir + "/run_id", c.checkpoint_dir + "/allow_list.txt"};
}

uint64_t ensure_run_id(const HostFiles& files) {
    if (file_exists(files.run_id)) {
        const std::vector<uint8_t> b = read_file(files.run_id);
        const std::string text(b.begin(), b.end());
        try {
            const uint64_t id = std::stoull(text);
            if (id != 0) return id;
        } catch (const std::exception&) {
        }
        throw Error("run id file '" + files.run_id + "' is corrupt (expected a nonzero number)");
    }
    const uint64_t id = net::random_run_id();
    const std::string text = std::to_string(id) + "\n";
    write_file_atomic(files.run_id, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    return id;
}

net::KeyPair ensure_host_key(const HostFiles& files) {
    if (file_exists(files.key)) return net::load_keypair(files.key);
    const net::KeyPair keys = net::generate_keypair();
    net::save_keypair(keys, files.key);
    std::fprintf(stderr, "created the host key %s (fingerprint %s)\n", files.key.c_str(),
                 net::fingerprint(keys.public_key).c_str());
    return keys;
}

int cmd_keygen(const std::vector<std::string>& argv) {
    Args args("keygen", argv, "usage: archipelago keygen --out FILE   (writes FILE, mode 0600, and FILE.pub)\n");
    if (args.help()) {
        std::fputs(args.usage().c_str(), stdout);
        return 0;
    }
    const std::string out = args.str("out", "");
    args.finish();
    if (out.empty()) throw Error("keygen: give --out FILE\n" + args.usage());
    const std::filesystem::path parent = std::filesystem::path(out).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    const net::KeyPair keys = net::generate_keypair();
    net::save_keypair(keys, out);
    std::printf("wrote %s (secret, mode 0600) and %s.pub; fingerprint %s\n", out.c_str(), out.c_str(),
                net::fingerprint(keys.public_key).c_str());
    return 0;
}

int cmd_invite(const std::vector<std::string>& argv) {
    Args args("invite", argv,
              "usage: archipelago invite --config run.toml --peer-key PEER.pub [--name NAME] --out INVITE\n"
              "       adds the peer's public key to the host's allow-list and writes the invite for it\n");
    if (args.help()) {
        std::fputs(args.usage().c_str(), stdout);
        return 0;
    }
    const std::string config_path = args.str("config", "");
    const std::string peer_key_path = args.str("peer-key", "");
    const std::string out = args.str("out", "");
    std::string name = args.str("name", "");
    const std::string endpoint_override = args.str("endpoint", "");
    args.finish();
    if (config_path.empty() || peer_key_path.empty() || out.empty())
        throw Error("invite: give --config, --peer-key and --out\n" + args.usage());
    const RunConfig c = load_run_config(config_path);
    std::filesystem::create_directories(c.checkpoint_dir);
    const HostFiles files = host_files(c);
    const net::KeyPair host = ensure_host_key(files);
    const std::string peer_key = net::load_public_key(peer_key_path);
    if (name.empty()) name = std::filesystem::path(peer_key_path).stem().string();
    net::AllowList allow = file_exists(files.allow_list) ? net::AllowList::load(files.allow_list) : net::AllowList();
    allow.add(peer_key, name);
    net::Invite invite;
    invite.host_endpoint = endpoint_override.empty() ? c.bind : endpoint_override;
    invite.host_public_key = host.public_key;
    invite.run_id = ensure_run_id(files);
    invite.save(out);  // validates before anything is written
    allow.save(files.allow_list);
    std::printf("invited %s (%s): wrote %s; allow-list %s holds %zu peers\n", name.c_str(),
                net::fingerprint(peer_key).c_str(), out.c_str(), files.allow_list.c_str(), allow.size());
    return 0;
}

}  // namespace arch::cli
