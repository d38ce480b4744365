// peers/cli/host_reachable.cpp: host.reachable written with toml++ and read through core/toml_file.h.
#include "peers/cli/host_reachable.h"

#include <sstream>
#include <toml++/toml.h>

#include "core/file_io.h"
#include "core/toml_file.h"

namespace arch::cli {

void write_host_reachable(const std::string& path, const std::string& state, const std::string& endpoint) {
    std::ostringstream out;
    out << toml::table{{"state", state}, {"endpoint", endpoint}} << "\n";
    write_text_file_atomic(path, out.str());
}

std::string read_mapped_endpoint(const std::string& path) {
    if (!file_exists(path)) return "";
    const toml::table file = toml_file::parse(read_text_file(path, 4096), path);
    toml_file::Fields fields(file, path, "");
    std::string state, endpoint;
    fields.text("state", state);
    fields.text("endpoint", endpoint);
    fields.finish();
    return endpoint;
}

}  // namespace arch::cli
