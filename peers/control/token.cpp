// peers/control/token.cpp: token file creation (O_EXCL, 0600), permission checks, constant-time compare.
#include "peers/control/token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <sodium.h>

#include "core/error.h"

namespace arch {

std::string default_token_file() {
    if (const char* f = std::getenv("ARCH_TOKEN_FILE"); f && *f) return f;
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.config/archipelago/token";
}

std::string load_token(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw Error("control token file '" + path + "' cannot be read: " + std::strerror(errno));
    if (st.st_mode & 077)
        throw Error("control token file '" + path + "' is readable by others (mode " +
                    std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                    std::to_string(st.st_mode & 7) + "); run: chmod 600 '" + path + "'");
    std::ifstream f(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.erase(text.begin());
    if (text.empty()) throw Error("control token file '" + path + "' is empty");
    return text;
}

std::string load_or_create_token(const std::string& path) {
    if (!std::filesystem::exists(path)) {
        const std::filesystem::path parent = std::filesystem::path(path).parent_path();
        if (!parent.empty() && !std::filesystem::exists(parent)) {
            std::filesystem::create_directories(parent);
            std::filesystem::permissions(parent, std::filesystem::perms::owner_all);
        }
        if (sodium_init() < 0) throw Error("libsodium failed to initialise");
        unsigned char raw[32];
        randombytes_buf(raw, sizeof(raw));
        char hex[sizeof(raw) * 2 + 1];
        sodium_bin2hex(hex, sizeof(hex), raw, sizeof(raw));
        const std::string text = std::string(hex) + "\n";
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {
            const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
            ::close(fd);
            if (!ok) throw Error("cannot write the control token file '" + path + "'");
        } else if (errno != EEXIST) {  // EEXIST: another process made it first; read theirs
            throw Error("cannot create the control token file '" + path + "': " + std::strerror(errno));
        }
    }
    return load_token(path);
}

bool token_equal(const std::string& a, const std::string& b) {
    // Compare fixed-size hashes so neither the contents nor the length leak through timing.
    unsigned char ha[crypto_generichash_BYTES], hb[crypto_generichash_BYTES];
    crypto_generichash(ha, sizeof(ha), reinterpret_cast<const unsigned char*>(a.data()), a.size(), nullptr, 0);
    crypto_generichash(hb, sizeof(hb), reinterpret_cast<const unsigned char*>(b.data()), b.size(), nullptr, 0);
    return sodium_memcmp(ha, hb, sizeof(ha)) == 0;
}

}  // namespace arch
