// tests/peers/test_checkpoint_writer.cpp: the host's checkpoints off the round's path. CheckpointWriter
// writes its one snapshot on its own thread (the snapshot cannot be touched, nor a second write
// started, until it is done), reports each result once, and reports a failed write instead of dying.
// A host SIGTERMed while it runs writes a final checkpoint a new host resumes from; a writer SIGKILLed
// in the middle of a checkpoint leaves the previous one whole (the write is to a .tmp, renamed once
// complete).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <regex>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"
#include "peers/checkpoint_writer.h"
#include "peers/staged_write.h"
#include "tests/core/temp_dir.h"
#include "tests/peers/run_fixture.h"
#include "tests/test_bytes.h"

using namespace arch;
using namespace arch::test;

namespace {

// A write that holds until the test lets it go.
struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false, entered = false;
    uint64_t seen_round = 0;
    void pass(const CheckpointSnapshot& s) {
        std::unique_lock lock(mu);
        entered = true;
        seen_round = s.round;
        cv.notify_all();
        cv.wait(lock, [&] { return open; });
    }
    void wait_entered() {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return entered; });
    }
    void release() {
        std::lock_guard lock(mu);
        open = true;
        cv.notify_all();
    }
};

}  // namespace

TEST_CASE("the writer writes its snapshot on its own thread, refuses a second while busy, and reports each result once") {
    Gate gate;
    CheckpointWriter w([&](const CheckpointSnapshot& s) { gate.pass(s); });
    CHECK_FALSE(w.busy());
    CHECK_FALSE(w.take_result());
    w.snapshot().round = 7;
    auto theta = std::make_shared<const FloatStore>(std::vector<float>(16, 1.0f));
    w.snapshot().theta = theta;
    w.start();
    gate.wait_entered();
    CHECK(w.busy());
    CHECK_THROWS_AS(w.snapshot(), Error);  // the snapshot is the writer's until it is written
    CHECK_THROWS_AS(w.start(), Error);
    CHECK_FALSE(w.take_result());
    gate.release();
    w.wait();
    CHECK_FALSE(w.busy());
    CHECK(gate.seen_round == 7);
    CHECK(theta.use_count() == 1);  // written, the writer holds θ no longer
    const std::optional<CheckpointWriter::Result> r = w.take_result();
    REQUIRE(r);
    CHECK(r->round == 7);
    CHECK(r->error.empty());
    CHECK_FALSE(w.take_result());  // once
}

TEST_CASE("a failed write is reported, not thrown; write_now writes on the caller's thread") {
    const std::thread::id caller = std::this_thread::get_id();
    std::thread::id wrote_on;
    bool fail = true;
    CheckpointWriter w([&](const CheckpointSnapshot&) {
        wrote_on = std::this_thread::get_id();
        if (fail) throw Error("disk full");
    });
    w.snapshot().round = 3;
    w.snapshot().theta = std::make_shared<const FloatStore>(std::vector<float>(2, 2.0f));
    w.start();
    w.wait();
    const std::optional<CheckpointWriter::Result> r = w.take_result();
    REQUIRE(r);
    CHECK(r->error == "disk full");
    CHECK(wrote_on != caller);
    fail = false;
    CHECK(w.write_now().error == "the checkpoint snapshot holds no θ");  // the last write let go of it
    w.snapshot().theta = std::make_shared<const FloatStore>(std::vector<float>(2, 2.0f));
    const CheckpointWriter::Result now = w.write_now();
    CHECK(now.error.empty());
    CHECK(now.round == 3);
    CHECK(wrote_on == caller);
}

TEST_CASE("a file written in parts, out of order and by two threads, replaces the old one only when committed") {
    TempDir dir;
    const std::string path = dir.file("host.state");
    const std::vector<std::byte> before = arch::test::filled(64, 0xAB);
    write_file_atomic(path, before);
    const std::vector<std::byte> head = arch::test::bytes_of({1, 2, 3, 4}), tail = arch::test::bytes_of({5, 6, 7, 8});
    {
        AtomicFile dropped(path);
        dropped.write_at(4, tail);
        dropped.write_at(0, head);
    }  // never committed: removed, the old file as it was
    CHECK(read_file(path) == before);
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
    AtomicFile file(path);
    file.write_at(4, tail);  // the host's part first, beyond the end
    std::thread([&] { file.write_at(0, head); }).join();  // the writer's part, on its thread
    CHECK(read_file(path) == before);  // nothing shows until the commit
    file.commit();
    CHECK(read_file(path) == arch::test::bytes_of({1, 2, 3, 4, 5, 6, 7, 8}));
    CHECK_THROWS_AS(file.write_at(0, head), Error);
}

TEST_CASE("large parts go around the page cache, at any offset and from any address, byte for byte") {
    TempDir dir;
    const std::string path = dir.file("model.bin");
    // Parts of 3 MiB + 5 and 2 MiB + 1 from addresses that are not page-aligned, after a 100-byte
    // header, written out of order: each has ragged ends that must go the buffered way.
    std::vector<std::byte> big(5u << 20 | 123);
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::byte>(i * 2654435761u >> 13);
    const std::span<const std::byte> head = std::span(big).first(100), a = std::span(big).subspan(3, (3u << 20) + 5),
                                     b = std::span(big).subspan(7, (2u << 20) + 1);
    {
        AtomicFile file(path);
        file.write_at(head.size() + a.size(), b);
        file.write_at(0, head);
        file.write_at(head.size(), a);
        file.commit();
    }
    std::vector<std::byte> expected(head.size() + a.size() + b.size());
    std::copy(b.begin(), b.end(), std::copy(a.begin(), a.end(), std::copy(head.begin(), head.end(), expected.begin())));

    // Where this file system takes O_DIRECT, the whole pages were never in the page cache: at most
    // the ragged ends' pages are (mincore before anything reads the file back).
    const int probe = ::open((dir.file("probe")).c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
    if (probe >= 0) {
        ::close(probe);
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        REQUIRE(fd >= 0);
        void* map = ::mmap(nullptr, expected.size(), PROT_READ, MAP_SHARED, fd, 0);
        REQUIRE(map != MAP_FAILED);
        const std::size_t pages = (expected.size() + 4095) / 4096;
        std::vector<unsigned char> resident(pages);
        REQUIRE(::mincore(map, expected.size(), resident.data()) == 0);
        ::munmap(map, expected.size());
        ::close(fd);
        const auto cached = std::count_if(resident.begin(), resident.end(), [](unsigned char r) { return (r & 1) != 0; });
        CHECK(cached <= 4);
    } else {
        WARN("this file system refuses O_DIRECT: every write was buffered");
    }
    CHECK(read_file(path) == expected);
}

TEST_CASE("a staged write puts its parts after one another a budget at a time, hashed as one checksum") {
    TempDir dir;
    const std::string path = dir.file("host.state");
    std::vector<std::byte> big(10000);
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::byte>(i * 7);
    std::vector<std::byte> head = {std::byte{1}, std::byte{2}, std::byte{3}};
    AtomicFile file(path);
    diloco::Checksum sum;
    StagedWrite staged(file, 5, sum);
    staged.add(head);  // small: copied, so the caller's buffer may change at once
    staged.add(big);   // large: a view
    head.assign(3, std::byte{9});
    int turns = 0;
    while (!staged.advance(4096)) ++turns;
    CHECK(turns == 2);  // 10003 bytes at 4096 a turn: the third turn ends it
    CHECK(staged.end() == 5 + 3 + big.size());
    file.write_at(0, arch::test::filled(5, 0xEE));
    file.commit();
    std::vector<std::byte> want = {std::byte{1}, std::byte{2}, std::byte{3}};
    want.insert(want.end(), big.begin(), big.end());
    const std::span<const std::byte> parts[] = {want};
    CHECK(sum.hex() == diloco::checksum(parts));
    const std::vector<std::byte> got = read_file(path);
    REQUIRE(got.size() == 5 + want.size());
    CHECK(std::equal(want.begin(), want.end(), got.begin() + 5));
}

TEST_CASE("a writer killed in the middle of a checkpoint leaves the previous one whole") {
    TempDir dir;
    const std::string path = dir.file("host.state");
    const std::vector<std::byte> before = arch::test::filled(1 << 20, 0xAB);
    write_file_atomic(path, before);
    // A child writes 512 MiB over it and is SIGKILLed once its .tmp holds some of them.
    const pid_t child = ::fork();
    if (child == 0) {
        const std::vector<std::byte> big = arch::test::filled(512u << 20, 0xCD);
        write_file_atomic(path, big);
        ::_exit(0);
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool writing = false;
    while (!writing && std::chrono::steady_clock::now() < end) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(path + ".tmp", ec);
        writing = !ec && size > (1u << 20);
        if (!writing) std::this_thread::yield();
    }
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(writing);
    REQUIRE(WIFSIGNALED(status));
    CHECK(read_file(path) == before);
}

TEST_CASE("a host stopped by SIGTERM writes a final checkpoint, and a new host resumes from it") {
    Run run(50, 1);
    run.make_peer(1);
    auto host = run.host();
    auto peer = run.peer(1);
    // A checkpoint due while the writer is busy waits for the next chance: the first one written at
    // round 2 or later (the rounds of this tiny model outrun the writer on a busy machine).
    const bool wrote = host->wait_until(
        [&] {
            for (const RunEvent& e : host->events())
                if (e.kind == "checkpoint_written" && e.round >= 2) return true;
            return false;
        },
        180);
    INFO(host->log());
    REQUIRE(wrote);
    host->kill(SIGTERM);
    const int rc = host->wait(60);
    INFO(host->log());
    REQUIRE(rc == 0);
    // The last checkpoint written holds the round the host stopped at.
    const std::vector<RunEvent> events = host->events();
    const auto last = std::find_if(events.rbegin(), events.rend(), EventMatch{.kind = "checkpoint_written"});
    REQUIRE(last != events.rend());
    const int64_t written = last->round;
    CHECK(written >= 2);
    CHECK(host->count({.kind = "stopped"}) == 1);
    peer->kill(SIGKILL);
    peer->wait(10);
    auto again = run.host();
    REQUIRE(again->wait_event({.kind = "resumed"}, 60));
    CHECK(first_event(again->events(), {.kind = "resumed"}).round == written);
    again->kill(SIGTERM);
    CHECK(again->wait(60) == 0);
}
