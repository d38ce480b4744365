// tests/core/test_log.cpp: printable() escapes what a terminal would act on and nothing else; a text
// log line shows a message's controls escaped on its one line, a JSON-lines log keeps them as JSON does.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/file_io.h"
#include "core/log.h"
#include "tests/core/temp_dir.h"

using arch::log::printable;

TEST_CASE("printable escapes C0, DEL and C1 controls; text and UTF-8 pass unchanged") {
    CHECK(printable("plain text, θ and 日本") == "plain text, θ and 日本");
    CHECK(printable("a\nb\rc\td") == "a\\nb\\rc\\td");
    CHECK(printable(std::string("\x1b[31mred\x07\x7f\x00z", 12)) == "\\x1b[31mred\\x07\\x7f\\x00z");
    CHECK(printable("\xc2\x9b" "1m") == "\\u009b1m");  // CSI as a UTF-8 C1 control
    CHECK(printable("\xc2\xa0") == "\xc2\xa0");         // U+00A0 is not a control
    CHECK(printable("trailing \xc2") == "trailing \xc2");
    CHECK(printable("") == "");
}

TEST_CASE("a text log file shows a message's controls escaped on its one line; jsonl keeps the message") {
    TempDir dir;
    const std::string message = "peer evil\n2026-01-01 00:00:00.000 info  [host] forged\x1b[2J";
    for (const std::string format : {"text", "jsonl"}) {
        INFO(format);
        const std::string path = dir.file(format + ".log");
        arch::log::configure({.level = "info", .file = path, .format = format});
        arch::log::get("test")->info(message);
        const std::string text = arch::read_text_file(path);
        std::istringstream lines(text);
        std::string line;
        int n = 0;
        while (std::getline(lines, line)) ++n;
        CHECK(n == 1);
        CHECK(text.find('\x1b') == std::string::npos);
        if (format == "text") CHECK(text.find("peer evil\\n2026-01-01 00:00:00.000 info  [host] forged\\x1b[2J") != std::string::npos);
        else CHECK(nlohmann::json::parse(text).at("message").get<std::string>() == message);
    }
    arch::log::configure({});
}
