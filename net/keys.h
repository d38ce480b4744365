// net/keys.h: a node's long-term CURVE key pair (Z85 text, 40 characters per key) and its files.
// The secret file is written with mode 0600 and refused on load if group or others can read it;
// the public key also goes to PATH.pub, which is safe to share. Keys are never logged: use
// fingerprint().
#pragma once

#include <string>

namespace arch::net {

struct KeyPair {
    std::string public_key;  // Z85, 40 chars (32 bytes)
    std::string secret_key;  // Z85, 40 chars (32 bytes)
};

KeyPair generate_keypair();

// Writes PATH (both keys, mode 0600) and PATH.pub (public key, mode 0644). Refuses to replace an
// existing PATH unless overwrite is set, so a stray keygen cannot destroy a node's identity.
void save_keypair(const KeyPair& keys, const std::string& path, bool overwrite = false);

// Reads PATH written by save_keypair; checks the permissions (no group/other access), that both
// keys are valid Z85 and that the public key belongs to the secret key.
KeyPair load_keypair(const std::string& path);

// Reads a public key from PATH.pub (or from a secret file: only its public line is used).
std::string load_public_key(const std::string& path);

// True when `key` is 40 Z85 characters that decode to 32 bytes.
bool is_valid_public_key(const std::string& key);

// Throws arch::Error naming `what` unless is_valid_public_key(key).
void check_public_key(const std::string& key, const std::string& what);

// First 8 bytes of BLAKE2b(public key bytes) as 16 hex digits: short, safe to log and show.
std::string fingerprint(const std::string& public_key);

}  // namespace arch::net
