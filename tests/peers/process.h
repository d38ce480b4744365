// tests/peers/process.h: start the real archipelago binary as a child process (stdout and stderr to
// a log file, extra environment), read its run events (--events FILE), wait for one of them or for
// its exit with a deadline, and kill it; and a free loopback port. For tests that drive hosts and
// peers as a user would. Its log is for the failure message, and for tests of what a user is told.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/peers/event_match.h"

namespace arch::test {

inline std::string archipelago_binary(const std::string& program = "archipelago") {
    const char* dir = std::getenv("ARCH_BIN_DIR");
    return std::string(dir ? dir : "build/bin") + "/" + program;
}

// A TCP port on 127.0.0.1 that was free a moment ago.
inline int free_port() {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(s);
    return ntohs(a.sin_port);
}

class Process {
public:
    // cwd: the folder it runs in ("": this process's), as a node with its own file system would;
    // program: another program of the build's bin folder (a bench's own build of archipelago).
    Process(const std::vector<std::string>& args, const std::string& log_path,
            const std::vector<std::string>& env = {}, const std::string& cwd = "",
            const std::string& program = "archipelago")
        : log_(log_path) {
        const std::string bin = archipelago_binary(program);
        pid_ = ::fork();
        if (pid_ == 0) {
            if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
            const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
            std::vector<char*> argv;
            argv.push_back(const_cast<char*>(bin.c_str()));
            for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            ::execv(bin.c_str(), argv.data());
            ::_exit(127);
        }
    }
    ~Process() {
        if (running()) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;

    bool running() {
        if (exited_) return false;
        int status = 0;
        const pid_t r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            exited_ = true;
            status_ = status;
        }
        return !exited_;
    }
    // Waits for the exit; returns the exit code, or -signal, or -1000 on timeout.
    int wait(double timeout_s) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        while (running()) {
            if (std::chrono::steady_clock::now() > end) return -1000;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return WIFEXITED(status_) ? WEXITSTATUS(status_) : -WTERMSIG(status_);
    }
    void kill(int sig) { ::kill(pid_, sig); }
    pid_t pid() const { return pid_; }
    std::string log() const { return slurp(log_); }

    // The file its --events flag names (as this process sees the path); events() reads from byte
    // `from` on: what this start of a node appends (take the file's size before starting it again).
    Process& watch_events(const std::string& path, std::size_t from = 0) {
        events_ = path;
        events_from_ = from;
        return *this;
    }
    // The events this process added to its events file so far.
    std::vector<RunEvent> events() const { return read_events(events_, events_from_); }
    int count(const EventMatch& m) const { return count_events(events(), m); }
    // Waits until `times` of its events match m; false on timeout or if the process ended first.
    bool wait_event(const EventMatch& m, double timeout_s, int times = 1) {
        return wait_until([&] { return count(m) >= times; }, timeout_s);
    }
    // Waits until `seen()` holds; false on timeout or if the process ended first (then seen() once more).
    bool wait_until(const std::function<bool()>& seen, double timeout_s) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        while (std::chrono::steady_clock::now() < end) {
            if (seen()) return true;
            if (!running()) return seen();
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }

private:
    pid_t pid_ = -1;
    std::string log_;
    std::string events_;
    std::size_t events_from_ = 0;
    bool exited_ = false;
    int status_ = 0;
};

}  // namespace arch::test
