// peers/cli/cmd_keys.cpp: `archipelago keygen` (a node's CURVE key pair), `archipelago invite`
// (adds a peer's public key to the host's allow-list and writes the invite it joins with) and
// `archipelago revoke` (takes one off; a running host notices both, peers/cli/membership.h).
// The host's files live in its run folder (run.checkpoint_dir): host.key, run_id, allow_list.txt.
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "net/allow_list.h"
#include "net/invite.h"
#include "net/keys.h"
#include "peers/cli/commands.h"
#include "peers/cli/host_files.h"
#include "peers/cli/membership.h"
#include "peers/run_config.h"

namespace arch::cli {

HostFiles host_files(const RunConfig& c) {
    return {c.checkpoint_dir + "/host.key", c.checkpoint_dir + "/run_id", c.checkpoint_dir + "/allow_list.txt",
            c.checkpoint_dir + "/host.reachable"};
}

uint64_t ensure_run_id(const HostFiles& files) {
    if (file_exists(files.run_id)) {
        const std::string text = read_text_file(files.run_id, 64);
        try {
            const uint64_t id = std::stoull(text);
            if (id != 0) return id;
        } catch (const std::exception&) {
        }
        throw Error("run id file '" + files.run_id + "' is corrupt (expected a nonzero number)");
    }
    const uint64_t id = net::random_run_id();
    const std::string text = std::to_string(id) + "\n";
    write_text_file_atomic(files.run_id, text);
    return id;
}

net::KeyPair ensure_host_key(const HostFiles& files) {
    if (file_exists(files.key)) return net::load_keypair(files.key);
    const net::KeyPair keys = net::generate_keypair();
    net::save_keypair(keys, files.key);
    log::get("host")->info("created the host key {} (fingerprint {})", files.key, net::fingerprint(keys.public_key));
    return keys;
}

void add_keygen(CLI::App& app, int& exit_code) {
    auto out = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("keygen", "make a node's CURVE key pair (FILE, mode 0600, and FILE.pub)");
    cmd->add_option("--out", *out, "the secret key file to write")->required();
    cmd->callback([out, &exit_code] {
        const std::filesystem::path parent = std::filesystem::path(*out).parent_path();
        if (!parent.empty()) std::filesystem::create_directories(parent);
        const net::KeyPair keys = net::generate_keypair();
        net::save_keypair(keys, *out);
        std::printf("wrote %s (secret, mode 0600) and %s.pub; fingerprint %s\n", out->c_str(), out->c_str(),
                    net::fingerprint(keys.public_key).c_str());
        exit_code = 0;
    });
}

namespace {

struct InviteFlags {
    std::string config, peer_key, out, name, endpoint;
};

void run_invite(InviteFlags f) {
    const RunConfig c = load_run_config(f.config);
    const std::string peer_key = net::load_public_key(f.peer_key);
    if (f.name.empty()) f.name = std::filesystem::path(f.peer_key).stem().string();
    const Invitation made = invite_peer(c, peer_key, f.name, f.endpoint);
    write_text_file_atomic(f.out, made.invite_text, 0644);
    const std::string allow_list = host_files(c).allow_list;
    std::printf("invited %s (%s): wrote %s; allow-list %s holds %zu peers\n", f.name.c_str(),
                net::fingerprint(peer_key).c_str(), f.out.c_str(), allow_list.c_str(), made.listed);
    if (made.listed > static_cast<std::size_t>(c.islands))
        std::printf("note: %zu keys for %d islands: the host admits a new island only while one is free "
                    "(revoke one with archipelago revoke)\n", made.listed, c.islands);
}

struct RevokeFlags {
    std::string config, name, key;
};

void run_revoke(const RevokeFlags& f) {
    const RunConfig c = load_run_config(f.config);
    const std::string key = f.key.empty() ? "" : public_key_argument(f.key);
    const Revocation gone = revoke_peer(c, f.name, key);
    std::printf("revoked %s (%s): a running host cuts it off within a second or so; allow-list %s holds %zu peers\n",
                gone.name.empty() ? "an unnamed peer" : gone.name.c_str(), net::fingerprint(gone.public_key).c_str(),
                host_files(c).allow_list.c_str(), gone.listed);
}

}  // namespace

void add_invite(CLI::App& app, int& exit_code) {
    auto f = std::make_shared<InviteFlags>();
    CLI::App* cmd = app.add_subcommand("invite", "allow a peer's key and write the invite it joins with");
    cmd->add_option("--config", f->config, "the run's run.toml")->required();
    cmd->add_option("--peer-key", f->peer_key, "the peer's public key file (PEER.pub)")->required();
    cmd->add_option("--out", f->out, "the invite file to write")->required();
    cmd->add_option("--name", f->name, "the peer's name (default: the key file's name)");
    cmd->add_option("--endpoint", f->endpoint, "the host address peers connect to (default: run.bind)");
    cmd->callback([f, &exit_code] {
        run_invite(*f);
        exit_code = 0;
    });
}

void add_revoke(CLI::App& app, int& exit_code) {
    auto f = std::make_shared<RevokeFlags>();
    CLI::App* cmd = app.add_subcommand("revoke", "take a peer off the allow-list; a running host cuts it off");
    cmd->add_option("--config", f->config, "the run's run.toml")->required();
    CLI::Option* name = cmd->add_option("--name", f->name, "the peer's name on the allow-list");
    CLI::Option* key = cmd->add_option("--key", f->key, "the peer's public key: a .pub file or the Z85 text");
    name->excludes(key);
    cmd->callback([f, &exit_code] {
        if (f->name.empty() && f->key.empty()) throw Error("revoke: give --name or --key");
        run_revoke(*f);
        exit_code = 0;
    });
}

}  // namespace arch::cli
