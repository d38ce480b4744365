// net/text_file.cpp: POSIX file reads and mode-preserving atomic writes for net/'s text files.
#include "net/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "core/error.h"

namespace arch::net::detail {

std::string read_text_file(const std::string& path, std::size_t max_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot open '" + path + "': " + std::strerror(errno));
    std::string text;
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof(buffer));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const std::string why = std::strerror(errno);
            ::close(fd);
            throw Error("cannot read '" + path + "': " + why);
        }
        if (n == 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
        if (text.size() > max_bytes) {
            ::close(fd);
            throw Error("'" + path + "' is larger than " + std::to_string(max_bytes) +
                        " bytes; is it the right file?");
        }
    }
    ::close(fd);
    return text;
}

void write_text_file_atomic(const std::string& path, const std::string& text, mode_t mode) {
    const std::string tmp = path + ".tmp";
    ::unlink(tmp.c_str());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) throw Error("cannot create '" + tmp + "': " + std::strerror(errno));
    bool ok = ::fchmod(fd, mode) == 0;  // the umask may have narrowed or the caller widened nothing
    std::size_t done = 0;
    while (ok && done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            ok = false;
        else
            done += static_cast<std::size_t>(n);
    }
    const std::string why = ok ? "" : std::strerror(errno);
    if (ok && ::fsync(fd) != 0) ok = false;
    if (::close(fd) != 0) ok = false;
    if (!ok) {
        ::unlink(tmp.c_str());
        throw Error("cannot write '" + tmp + "': " + (why.empty() ? "flush failed" : why));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string err = std::strerror(errno);
        ::unlink(tmp.c_str());
        throw Error("cannot rename '" + tmp + "' to '" + path + "': " + err);
    }
}

std::map<std::string, std::string> parse_fields(const std::string& text, const std::string& what) {
    std::map<std::string, std::string> fields;
    std::istringstream in(text);
    std::string line;
    int number = 0;
    auto trim = [](std::string s) {
        const auto b = s.find_first_not_of(" \t\r");
        if (b == std::string::npos) return std::string();
        const auto e = s.find_last_not_of(" \t\r");
        return s.substr(b, e - b + 1);
    };
    while (std::getline(in, line)) {
        ++number;
        const std::string t = trim(line);
        if (t.empty() || t[0] == '#') continue;
        const auto eq = t.find('=');
        if (eq == std::string::npos)
            throw Error(what + " line " + std::to_string(number) +
                        ": expected 'name = value', found '" + t + "'");
        const std::string name = trim(t.substr(0, eq));
        const std::string value = trim(t.substr(eq + 1));
        if (!fields.emplace(name, value).second)
            throw Error(what + " line " + std::to_string(number) + ": '" + name +
                        "' appears twice");
    }
    return fields;
}

std::string to_hex(std::span<const uint8_t> bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (uint8_t b : bytes) {
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 15]);
    }
    return out;
}

}  // namespace arch::net::detail
