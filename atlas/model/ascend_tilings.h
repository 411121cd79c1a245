// Ascend's own tilings of these ops on Atlas A2 (dav-c220, 910B), computed
// the way their host tiling code (op_host/*_tiling.cpp) computes them and
// split over cores the way their kernels (op_kernel/) split, so the cost
// model can price them beside ours (actgrad-atlas compare). Read from the
// public CANN operator repositories; the source of each is in `source`
// and in docs/atlas.md ("Our tilings against Ascend's").
//
//   LogitGrad        8192-element chunks (PP_ELEMENT_NUM), needCoreNum =
//                    min(cores, ceil(n / 8192)); each core takes a contiguous
//                    run of whole chunks (the first totalTimes % needCoreNum
//                    cores one more; the partial chunk ends the last of those)
//                    -- not round-robin; ping-pong over two 96 KiB halves of
//                    a 192 KiB TBuf.
//   HardSwishGradV2  chunk = UB / 10 / 4 elements aligned down to 256
//                    (4864 with the 192 KiB UB), the same core split and
//                    ping-pong over two halves of the UB.
//   SeluGrad         (experimental) cores by 8 KiB of data each up to 8
//                    cores, else by 32 KiB; blockFactor = ceil(n / cores)
//                    aligned up to 512 bytes; ubFactor from (UB - 8 KiB) /
//                    (6 raw + compute buffers + 1 mask byte) per element;
//                    double buffered when a core holds more than one pass.
//   SoftshrinkGrad   (experimental) one core up to 64 KiB, else cores by
//                    16 KiB each; blockFactor aligned up to 512 bytes;
//                    ubFactor from (UB - 16 KiB); double buffered when a
//                    core holds at least two double-buffer passes.
//   GeluGrad         none published for 910B (see AscendTilingFor).
//
// UB size: their tiling reads GetCoreMemSize(UB), which on a device returns
// the platform file's ub_size (196608 on 910B); that is SocInfo::ub_bytes,
// not our UbBudget() (which keeps the AscendC temporary area free).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "actgrad/types.h"
#include "soc.h"

namespace actgrad::atlas {

struct AscendTiling {
  std::string name;     // Ascend's op name, e.g. "LogitGrad"
  std::string source;   // repository and paths of the tiling and kernel read
  uint32_t block_dim = 0;
  uint32_t tile = 0;     // elements per UB pass
  uint32_t buffers = 0;  // 1 or 2 (ping-pong halves or TQue depth)
  uint64_t ub_bytes = 0;                // UB their kernel allocates per core
  std::vector<uint64_t> core_lengths;   // elements of each launched core, in order
  // The tiling data as their code names it (e.g. needCoreNum, blockFactor).
  std::vector<std::pair<std::string, int64_t>> fields;
  std::string note;  // what differs per core, if anything
};

// Ascend's tiling of (op, dtype, n) on `soc`. False, with the reason in
// *why, when Ascend publishes none for the op or dtype on this SoC.
bool AscendTilingFor(Op op, DType dtype, uint64_t n, const SocInfo& soc, AscendTiling* out, std::string* why);

}  // namespace actgrad::atlas
