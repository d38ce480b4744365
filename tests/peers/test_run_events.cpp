// tests/peers/test_run_events.cpp: a run event to a JSON line and back, field by field; what is not an
// event is refused by name; the events file appends whole lines.
#include <catch2/catch.hpp>

#include <string>

#include "core/error.h"
#include "core/file_io.h"
#include "peers/run_events.h"
#include "tests/core/temp_dir.h"
#include "tests/peers/event_match.h"

using namespace arch;
using namespace arch::test;

TEST_CASE("a run event survives its JSON line; unset fields stay out of it") {
    const RunEvent full{.kind = "round_applied", .round = 7, .islands = 3, .island = 2, .peer = "peer-1",
                        .type = "pseudo_grad", .theta = "0123456789ab", .val_loss = 4.25, .steps = 5, .fragment = 1,
                        .bytes = 1 << 20, .stale = 4, .scale = 0.4, .hash = "fedcba9876543210",
                        .detail = "a \"quoted\" path\tand θ"};
    const RunEvent back = parse_event(event_json(full));
    CHECK(back.kind == full.kind);
    CHECK(back.round == full.round);
    CHECK(back.islands == full.islands);
    CHECK(back.island == full.island);
    CHECK(back.peer == full.peer);
    CHECK(back.type == full.type);
    CHECK(back.theta == full.theta);
    CHECK(back.val_loss == full.val_loss);
    CHECK(back.steps == full.steps);
    CHECK(back.fragment == full.fragment);
    CHECK(back.bytes == full.bytes);
    CHECK(back.stale == full.stale);
    CHECK(back.scale == full.scale);
    CHECK(back.hash == full.hash);
    CHECK(back.detail == full.detail);
    CHECK(event_json(full).find('\n') == std::string::npos);  // one line

    const std::string bare = event_json({.kind = "finished", .round = 3});
    CHECK(bare == R"({"kind":"finished","round":3})");
    const RunEvent b = parse_event(bare);
    CHECK(b.islands == -1);
    CHECK(b.peer.empty());
    CHECK(b.val_loss == -1);
}

TEST_CASE("what is not a run event is refused, with the line") {
    for (const std::string bad : {"", "not json", "[1,2]", R"({"round":3})", R"({"kind":3})"}) {
        INFO(bad);
        CHECK_THROWS_AS(parse_event(bad), Error);
    }
    CHECK_THROWS_WITH(parse_event(R"({"kind":"finished","round":"three"})"), Catch::Contains("run event 'finished'"));
}

TEST_CASE("the events file appends whole lines, and a match picks events by their figures") {
    TempDir dir;
    const std::string path = dir.file("node.events");
    {
        EventFile file(path);
        file.write({.kind = "round_started", .round = 0, .islands = 2});
        file.write({.kind = "round_started", .round = 1, .islands = 1});
    }
    {
        EventFile again(path);  // a node started again appends
        again.write({.kind = "finished", .round = 2});
    }
    const std::vector<RunEvent> events = read_events(path);
    REQUIRE(events.size() == 3);
    const std::string text = read_text_file(path);
    CHECK(read_events(path, text.find('\n') + 1).size() == 2);  // from the second line on
    CHECK(text.find(R"("time":)") != std::string::npos);        // each line says when it was written
    CHECK(count_events(events, {.kind = "round_started"}) == 2);
    CHECK(count_events(events, {.kind = "round_started", .islands = 1}) == 1);
    CHECK(first_event(events, {.kind = "round_started", .round = 1}).islands == 1);
    CHECK(events_after(events, {.kind = "round_started", .round = 1}).front().kind == "finished");
    CHECK_THROWS_AS(EventFile(dir.file("no/such/folder/x.events")), Error);
}
