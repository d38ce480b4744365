// peers/island_data.h: an island's training data on a peer, from the assignment in its welcome
// (protocol::DataAssignment: shards and chunks named by BLAKE2b hash, never by a host path).
// Each chunk comes from one of the user's own data folders (--data: a shard whose whole-file hash is
// the manifest's, whatever its name) or from the host (fetched into WORKDIR/data/chunks, one file per
// verified chunk, so an interrupted fetch resumes). The island trains on one llm.c shard of its
// chunks in order, WORKDIR/data/island-<id>.bin, written piece by piece at the assignment's token
// width (uint16 or uint32); chunks travel and are stored as the shard's own bytes. A chunk whose tokens do not
// hash to the manifest's is refused, naming its shard, and never stored or used.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "peers/protocol.h"

namespace arch {

class IslandData {
public:
    IslandData(protocol::DataAssignment assignment, const std::string& workdir, const std::vector<std::string>& data_dirs,
               std::function<void(const std::string&)> log);

    bool complete() const { return missing_.empty(); }
    uint64_t missing_bytes() const;
    std::size_t missing_chunks() const { return missing_.size(); }
    // The next chunks to ask the host for: at most protocol::kMaxRequestChunks chunks and kMaxReplyTokens tokens.
    protocol::DataRequest next_request() const;
    // A chunk from the host: checked against its hash, then kept. Throws arch::Error naming the shard
    // (and stores nothing) when it does not match. A chunk already stored is ignored.
    void store(uint32_t index, const std::vector<std::byte>& bytes);
    // What is still missing, for the error when the host does not serve data: shard, hash, size.
    std::string describe_missing() const;
    // Writes the island's shard (or finds it written already) and returns its path. Call when complete().
    std::string assemble();
    uint64_t bytes() const;  // of the island's whole assignment

private:
    std::string chunk_file(const DataChunk& c) const;
    uint64_t tokens() const;
    std::string shard_label(const DataChunk& c) const;

    protocol::DataAssignment a_;
    std::string dir_;                               // WORKDIR/data
    std::map<uint32_t, std::string> local_;         // shard index -> a matching file in the user's folders
    std::vector<uint32_t> missing_;                 // chunk indices neither local nor fetched yet
    std::function<void(const std::string&)> log_;
};

}  // namespace arch
