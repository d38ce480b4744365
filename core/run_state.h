// core/run_state.h: the training state that sits beside an llm.c model checkpoint (CKPT.state):
// step, AdamW m and v, and the data cursor, so that `train --resume` continues bit for bit.
// Layout (little-endian): "ARCHRUN1" magic, u32 version, i32 step, u64 num_params, u64 shard,
// u64 position, 4 x u64 data RNG state, num_params f32 m, num_params f32 v, then a 32-byte BLAKE2b
// of everything before it. Reads check size and checksum before anything is used.
#pragma once

#include <string>
#include <vector>

#include "core/data_loader.h"

namespace arch {

struct RunState {
    int step = 0;  // optimizer steps completed
    DataCursor train_cursor;
    std::vector<float> m, v;  // ParamLayout order
};

void write_run_state(const std::string& path, const RunState& state);
// expected_params: the model's parameter count; a mismatch is an error.
RunState read_run_state(const std::string& path, std::size_t expected_params);

}  // namespace arch
