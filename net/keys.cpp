// net/keys.cpp: key generation through libzmq (libsodium underneath), key files (TOML), fingerprints.
#include "net/keys.h"

#include <sodium.h>
#include <sys/stat.h>
#include <zmq.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"
#include "core/toml_file.h"
#include "net/legacy_format.h"

namespace arch::net {
namespace {

constexpr std::size_t kZ85KeyChars = 40;

bool decode_key(const std::string& z85, uint8_t out[32]) {
    if (z85.size() != kZ85KeyChars) return false;
    return zmq_z85_decode(out, z85.c_str()) != nullptr;
}

// A key file: "public-key" and, in the secret file, "secret-key"; nothing else.
struct KeyFields {
    std::string public_key, secret_key;
};

KeyFields read_key_file(const std::string& path, bool need_secret) {
    const std::string text = read_text_file(path, 4096);
    const toml::table file = parse_net_file(text, path, "key file");
    toml_file::Fields f(file, path, "");
    KeyFields k;
    f.require("public-key");
    if (need_secret) f.require("secret-key");
    f.text("public-key", k.public_key);
    f.text("secret-key", k.secret_key);
    f.finish();
    return k;
}

std::string key_file_text(const std::string& comment, const toml::table& keys) {
    std::ostringstream out;
    out << comment << "\n" << keys << "\n";
    return out.str();
}

}  // namespace

KeyPair generate_keypair() {
    char pub[41], sec[41];
    if (zmq_curve_keypair(pub, sec) != 0)
        throw Error(std::string("cannot generate a CURVE key pair: ") + zmq_strerror(zmq_errno()) +
                    " (libzmq built without CURVE?)");
    return KeyPair{pub, sec};
}

bool is_valid_public_key(const std::string& key) {
    uint8_t bytes[32];
    return decode_key(key, bytes);
}

void check_public_key(const std::string& key, const std::string& what) {
    if (!is_valid_public_key(key))
        throw Error(what + ": expected a 40-character Z85 CURVE public key, found '" + key + "' (" +
                    std::to_string(key.size()) + " characters)");
}

void save_keypair(const KeyPair& keys, const std::string& path, bool overwrite) {
    check_public_key(keys.public_key, "public key");
    check_public_key(keys.secret_key, "secret key");
    struct stat st;
    if (!overwrite && ::stat(path.c_str(), &st) == 0)
        throw Error(
            "key file '" + path +
            "' already exists; remove it first if you really mean to replace this node's identity");
    write_text_file_atomic(path,
                           key_file_text("# archipelago CURVE key pair: keep this file private (mode 0600)",
                                         toml::table{{"public-key", keys.public_key}, {"secret-key", keys.secret_key}}),
                           0600);
    write_text_file_atomic(path + ".pub",
                           key_file_text("# archipelago CURVE public key (fingerprint " + fingerprint(keys.public_key) + ")",
                                         toml::table{{"public-key", keys.public_key}}),
                           0644);
}

KeyPair load_keypair(const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
        throw Error("cannot open key file '" + path + "': " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw Error("key file '" + path + "' is not a regular file");
    if ((st.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
        throw Error("secret key file '" + path + "' is readable by group or others (mode " + mode +
                    "); run 'chmod 600 " + path + "' and check nobody copied it");
    }
    const KeyFields fields = read_key_file(path, true);
    KeyPair keys{fields.public_key, fields.secret_key};
    check_public_key(keys.public_key, "key file '" + path + "' public-key");
    check_public_key(keys.secret_key, "key file '" + path + "' secret-key");
    char derived[41];
    if (zmq_curve_public(derived, keys.secret_key.c_str()) != 0 || keys.public_key != derived)
        throw Error("key file '" + path + "': the public key does not belong to the secret key");
    return keys;
}

std::string load_public_key(const std::string& path) {
    const std::string key = read_key_file(path, false).public_key;
    check_public_key(key, "key file '" + path + "' public-key");
    return key;
}

std::string fingerprint(const std::string& public_key) {
    uint8_t raw[32];
    if (!decode_key(public_key, raw)) return "invalid-key";
    uint8_t
        digest[crypto_generichash_BYTES_MIN];  // 16, the smallest BLAKE2b output libsodium allows
    crypto_generichash(digest, sizeof(digest), raw, sizeof(raw), nullptr, 0);
    char hex[2 * 8 + 1];
    sodium_bin2hex(hex, sizeof(hex), digest, 8);
    return hex;
}

}  // namespace arch::net
