// core/log.cpp: the sinks (stderr, file), the text pattern and the JSON-lines formatter.
#include "core/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"

namespace arch::log {

std::string printable(std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7f) {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 15];
        } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                   static_cast<unsigned char>(text[i + 1]) <= 0x9f) {  // a C1 control in UTF-8 (0x9b: CSI)
            const auto d = static_cast<unsigned char>(text[++i]);
            out += "\\u00";
            out += kHex[d >> 4];
            out += kHex[d & 15];
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

namespace {

// %* in a text pattern: the message, printable().
class PrintableMessage : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
        const std::string text = printable(std::string_view(msg.payload.data(), msg.payload.size()));
        dest.append(text.data(), text.data() + text.size());
    }
    std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<PrintableMessage>(); }
};

std::unique_ptr<spdlog::formatter> text_formatter(const std::string& pattern) {
    auto f = std::make_unique<spdlog::pattern_formatter>();
    f->add_flag<PrintableMessage>('*').set_pattern(pattern);
    return f;
}

// One JSON object per line: {"time", "level", "component", "message"}; nlohmann does the escaping.
class JsonLines : public spdlog::formatter {
public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        const auto t = msg.time.time_since_epoch();
        const std::time_t seconds = std::chrono::duration_cast<std::chrono::seconds>(t).count();
        const long ms = static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(t).count() % 1000);
        std::tm utc{};
        gmtime_r(&seconds, &utc);
        char when[40];
        const std::size_t n = std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &utc);
        std::snprintf(when + n, sizeof(when) - n, ".%03ldZ", ms);
        nlohmann::ordered_json j;
        j["time"] = when;
        j["level"] = std::string(spdlog::level::to_string_view(msg.level).data(), spdlog::level::to_string_view(msg.level).size());
        j["component"] = std::string(msg.logger_name.data(), msg.logger_name.size());
        j["message"] = std::string(msg.payload.data(), msg.payload.size());
        const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
        dest.append(line.data(), line.data() + line.size());
    }
    std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonLines>(); }
};

struct State {
    std::mutex mutex;
    std::vector<spdlog::sink_ptr> sinks;
    spdlog::level::level_enum level = spdlog::level::info;
};

State& state() {
    static State s;
    return s;
}

std::vector<spdlog::sink_ptr> default_sinks() {
    auto err = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    err->set_formatter(text_formatter("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ [%n] %*"));
    return {err};
}

}  // namespace

void configure(const Options& options) {
    const spdlog::level::level_enum level = spdlog::level::from_str(options.level);
    if (level == spdlog::level::off && options.level != "off")
        throw Error("--log-level must be trace, debug, info, warn, error or off, found '" + options.level + "'");
    if (options.format != "text" && options.format != "jsonl")
        throw Error("--log-format must be text or jsonl, found '" + options.format + "'");
    std::vector<spdlog::sink_ptr> sinks = default_sinks();
    if (!options.file.empty()) {
        try {
            sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.file));
        } catch (const spdlog::spdlog_ex& e) {
            throw Error("cannot open the log file '" + options.file + "': " + e.what());
        }
        sinks.back()->set_formatter(text_formatter("%Y-%m-%d %H:%M:%S.%e %-5l [%n] %*"));
    }
    if (options.format == "jsonl")
        for (auto& s : sinks) s->set_formatter(std::make_unique<JsonLines>());
    State& st = state();
    std::lock_guard<std::mutex> lock(st.mutex);
    st.sinks = std::move(sinks);
    st.level = level;
    spdlog::apply_all([&](const std::shared_ptr<spdlog::logger>& l) {
        l->sinks() = st.sinks;
        l->set_level(level);
        l->flush_on(spdlog::level::trace);
    });
}

std::shared_ptr<spdlog::logger> get(const std::string& component) {
    State& st = state();
    std::lock_guard<std::mutex> lock(st.mutex);
    if (auto l = spdlog::get(component)) return l;
    if (st.sinks.empty()) st.sinks = default_sinks();
    auto l = std::make_shared<spdlog::logger>(component, st.sinks.begin(), st.sinks.end());
    l->set_level(st.level);
    l->flush_on(spdlog::level::trace);  // lines reach the terminal and the file as they happen
    spdlog::register_logger(l);
    return l;
}

}  // namespace arch::log
