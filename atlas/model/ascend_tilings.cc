#include "ascend_tilings.h"

#include <algorithm>

namespace actgrad::atlas {

namespace {

// Ops::Base::CeilDiv / CeilAlign / FloorAlign of ops-nn, for non-negative values.
int64_t CeilDiv(int64_t a, int64_t b) { return b == 0 ? a : (a + b - 1) / b; }
int64_t CeilAlign(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }
int64_t FloorAlign(int64_t a, int64_t b) { return b == 0 ? a : a / b * b; }

// The core split LogitGrad and HardSwishGradV2 (dav-c220) share, from their
// kernels' Process(): totalTimes = ceil(n / chunk) chunks; core i takes
// totalTimes / cores of them, plus one for the first totalTimes % cores
// cores, as one contiguous range; the partial last chunk ends the range of
// core lastCoreNum (the last core that got the extra chunk).
std::vector<uint64_t> ContiguousChunks(uint64_t n, uint64_t chunk, uint32_t cores) {
  const uint64_t total = (n + chunk - 1) / chunk, remain = n % chunk;
  const uint64_t loops = total / cores, extra = total % cores;
  const uint64_t last = extra == 0 ? cores - 1 : extra - 1;
  std::vector<uint64_t> len(cores);
  for (uint32_t i = 0; i < cores; ++i) {
    len[i] = (loops + (i < extra ? 1 : 0)) * chunk;
    if (remain > 0 && i == last) len[i] -= chunk - remain;
  }
  return len;
}

// needCoreNum of both: ceil(n / chunk), at least 1, at most the AIV cores.
uint32_t NeedCoreNum(uint64_t n, uint64_t chunk, uint32_t cores) {
  const uint64_t need = std::max<uint64_t>(1, (n + chunk - 1) / chunk);
  return uint32_t(std::min<uint64_t>(need, cores));
}

// Cores of blockFactor elements, the last one the rest (SeluGrad and
// SoftshrinkGrad: blockOffset = blockIdx * blockFactor).
std::vector<uint64_t> BlockFactorSplit(uint64_t n, uint64_t block_factor, uint32_t cores) {
  std::vector<uint64_t> len(cores, 0);
  for (uint32_t i = 0; i < cores; ++i) {
    const uint64_t off = uint64_t(i) * block_factor;
    len[i] = off >= n ? 0 : std::min(block_factor, n - off);
  }
  return len;
}

// hicann/ops-nn loss/logit_grad: the tiling (MAX_ELEMENT_NUM_EACH_CORE =
// 8 * 1024) and the kernel (PP_ELEMENT_NUM = 8 * 1024, MAX_UB_SIZE = 192 KiB
// split in two ping-pong halves).
void LogitGrad(uint64_t n, const SocInfo& soc, AscendTiling* t) {
  constexpr uint64_t kChunk = 8 * 1024;
  t->name = "LogitGrad";
  t->source =
      "tiling: jbgztxdy/ops-nn (fork of hicann/ops-nn) loss/logit_grad/op_host/logit_grad_tiling.cpp; "
      "kernel: hicann/ops-nn loss/logit_grad/op_kernel/logit_grad.h";
  t->block_dim = NeedCoreNum(n, kChunk, soc.vector_cores);
  t->tile = uint32_t(kChunk);
  t->buffers = 2;
  t->ub_bytes = 192 * 1024;
  t->core_lengths = ContiguousChunks(n, kChunk, t->block_dim);
  t->fields = {{"elementNum", int64_t(n)}, {"needCoreNum", t->block_dim}, {"PP_ELEMENT_NUM", int64_t(kChunk)}};
}

// hicann/ops-nn activation/hard_swish_grad_v2, arch22 tiling and the _220
// kernel: elementNumEachCore = ubSize / 10 / sizeof(float) / 256 * 256.
void HardSwishGradV2(uint64_t n, const SocInfo& soc, AscendTiling* t) {
  const uint64_t ub = soc.ub_bytes;  // GetCoreMemSize(UB)
  const uint64_t chunk = ub / 10 / sizeof(float) / 256 * 256;
  t->name = "HardSwishGradV2";
  t->source =
      "tiling: hicann/ops-nn activation/hard_swish_grad_v2/op_host/arch22/hard_swish_grad_v2_tiling.cpp; "
      "kernel: jbgztxdy/ops-nn (fork of hicann/ops-nn) activation/hard_swish_grad_v2/op_kernel/"
      "hard_swish_grad_v2_220.h";
  t->block_dim = NeedCoreNum(n, chunk, soc.vector_cores);
  t->tile = uint32_t(chunk);
  t->buffers = 2;
  t->ub_bytes = ub;
  t->core_lengths = ContiguousChunks(n, chunk, t->block_dim);
  t->fields = {{"elementNum", int64_t(n)}, {"needCoreNum", t->block_dim}, {"ubSize", int64_t(ub)},
               {"elementNumEachCore", int64_t(chunk)}};
}

// Storage and compute sizes of SeluGrad's dtypes (GetRawTypeSize,
// GetComputeTypeSize): fp16 and int8 compute in half, the rest in float.
int64_t SeluRawSize(DType d) { return d == DType::kF16 || d == DType::kBF16 ? 2 : d == DType::kI8 ? 1 : 4; }
int64_t SeluComputeSize(DType d) { return d == DType::kF16 || d == DType::kI8 ? 2 : 4; }

// hicann/ops-nn experimental/activation/selu_grad.
void SeluGrad(uint64_t n, const SocInfo& soc, DType dt, AscendTiling* t) {
  constexpr int64_t kSmallBytesPerCore = 8 * 1024, kLargeBytesPerCore = 32 * 1024, kSmallCoreLimit = 8;
  constexpr int64_t kReservedUb = 8 * 1024, kGmAlignBytes = 512;
  const int64_t raw = SeluRawSize(dt), comp = SeluComputeSize(dt);
  const bool direct = dt == DType::kF16 || dt == DType::kF32;  // no Cast: compute in the storage type
  const int64_t bytes_per_elem = 6 * raw + (direct ? 1 : 4) * comp + 1;
  const int64_t total = int64_t(n), align = std::max<int64_t>(1, kGmAlignBytes / raw);
  t->name = "SeluGrad";
  t->source =
      "hicann/ops-nn experimental/activation/selu_grad/op_host/selu_grad_tiling.cpp and "
      "op_kernel/selu_grad.h (experimental)";
  t->fields = {{"totalNum", total}};
  if (total == 0) {
    t->block_dim = 1;
    t->core_lengths = {0};
    t->fields.push_back({"blockFactor", 0});
    t->fields.push_back({"ubFactor", 0});
    return;
  }
  const int64_t total_bytes = total * raw;
  int64_t used = std::max<int64_t>(1, CeilDiv(total_bytes, kSmallBytesPerCore));
  if (used > kSmallCoreLimit) used = std::max<int64_t>(1, CeilDiv(total_bytes, kLargeBytesPerCore));
  used = std::min<int64_t>(used, soc.vector_cores);
  const int64_t block_factor = CeilAlign(CeilDiv(total, used), align);
  used = std::max<int64_t>(1, CeilDiv(total, block_factor));
  const int64_t ub = int64_t(soc.ub_bytes);
  const int64_t avail = ub > kReservedUb ? ub - kReservedUb : ub;
  const int64_t max_ub_factor = std::max(align, FloorAlign(avail / bytes_per_elem, align));
  const int64_t ub_factor = std::max(align, std::min(block_factor, max_ub_factor));
  t->block_dim = uint32_t(used);
  t->tile = uint32_t(ub_factor);
  t->core_lengths = BlockFactorSplit(n, uint64_t(block_factor), t->block_dim);
  // Init(): bufferNum = blockLength > ubLength ? 2 : 1, per core.
  t->buffers = t->core_lengths.front() > uint64_t(ub_factor) ? 2 : 1;
  if (t->core_lengths.back() <= uint64_t(ub_factor) && t->buffers == 2)
    t->note = "last core single-buffered (one pass)";
  t->ub_bytes = uint64_t(3 * t->buffers * ub_factor * raw + (direct ? 0 : 3 * ub_factor * comp) +
                         ub_factor * comp + ub_factor);
  t->fields.push_back({"blockFactor", block_factor});
  t->fields.push_back({"ubFactor", ub_factor});
  t->fields.push_back({"blockDim", used});
}

// mirror-cann/ops-nn experimental/activation/softshrink_grad:
// CalcUbFactor(ubSize, dtype, bufferNum, totalNum).
int64_t SoftshrinkUbFactor(int64_t ub, int64_t type_size, bool f32, int64_t buffers, int64_t total) {
  constexpr int64_t kOverhead = 16 * 1024, kMainAlignBytes = 512, kVectorAlignBytes = 256;
  const int64_t avail = ub - kOverhead;
  if (avail <= 0) return 0;
  int64_t bytes_per_elem = 3 * buffers * type_size + 1;
  if (!f32) bytes_per_elem += 2 * int64_t(sizeof(float));
  const int64_t align = std::max(kMainAlignBytes / type_size, kVectorAlignBytes / int64_t(sizeof(float)));
  int64_t f = FloorAlign(avail / bytes_per_elem, align);
  if (f <= 0) return 0;
  if (total > 0 && total < f) f = CeilAlign(total, align);
  return f;
}

bool SoftshrinkGrad(uint64_t n, const SocInfo& soc, DType dt, AscendTiling* t, std::string* why) {
  constexpr int64_t kSingleCoreThreshold = 64 * 1024, kTargetBytesPerCore = 16 * 1024, kMainAlignBytes = 512;
  const bool f32 = dt == DType::kF32;
  const int64_t type_size = f32 ? 4 : 2, total = int64_t(n), ub = int64_t(soc.ub_bytes);
  t->name = "SoftshrinkGrad";
  t->source =
      "mirror-cann/ops-nn experimental/activation/softshrink_grad/op_host/softshrink_grad_tiling.cpp and "
      "op_kernel/softshrink_grad.h (experimental)";
  // CalcBlockFactor
  int64_t used = 1, block_factor = 0;
  if (total > 0) {
    const int64_t total_bytes = total * type_size;
    if (total_bytes <= kSingleCoreThreshold) {
      block_factor = total;
    } else {
      used = std::max<int64_t>(1, std::min<int64_t>(soc.vector_cores, CeilDiv(total_bytes, kTargetBytesPerCore)));
      block_factor = CeilAlign(CeilDiv(total, used), kMainAlignBytes / type_size);
      used = CeilDiv(total, block_factor);
    }
  }
  const int64_t single = SoftshrinkUbFactor(ub, type_size, f32, 1, total);
  if (single <= 0) {
    *why = "SoftshrinkGrad: no UB factor for a UB of " + std::to_string(ub) + " bytes";
    return false;
  }
  bool double_buffer = false;
  int64_t ub_factor = single;
  if (block_factor > single) {
    const int64_t dbl = SoftshrinkUbFactor(ub, type_size, f32, 2, total);
    if (dbl <= 0) {
      *why = "SoftshrinkGrad: no double-buffer UB factor";
      return false;
    }
    if (CeilDiv(block_factor, dbl) >= 2) {
      double_buffer = true;
      ub_factor = dbl;
    }
  }
  // The kernel rounds ubFactor up to whole 256-byte vectors of T.
  const int64_t ub_length = CeilAlign(ub_factor, 256 / type_size);
  t->block_dim = uint32_t(used);
  t->tile = uint32_t(ub_length);
  t->buffers = double_buffer ? 2 : 1;
  t->core_lengths = BlockFactorSplit(n, uint64_t(block_factor), t->block_dim);
  t->ub_bytes = uint64_t(3 * t->buffers * ub_length * type_size + ub_length + (f32 ? 0 : 2 * ub_length * 4));
  t->fields = {{"totalNum", total}, {"blockFactor", block_factor}, {"ubFactor", ub_factor},
               {"blockDim", used}, {"doubleBuffer", double_buffer ? 1 : 0}};
  return true;
}

bool Supported(Op op, DType dt) {
  switch (op) {
    case Op::kLogitGrad:
    case Op::kHardswishBwd:
    case Op::kSoftshrinkBwd:
      return dt == DType::kF32 || dt == DType::kF16 || dt == DType::kBF16;
    case Op::kSeluBwd:
      return dt == DType::kF32 || dt == DType::kF16 || dt == DType::kBF16 || dt == DType::kI32 || dt == DType::kI8;
    default:
      return false;
  }
}

}  // namespace

bool AscendTilingFor(Op op, DType dtype, uint64_t n, const SocInfo& soc, AscendTiling* out, std::string* why) {
  if (op == Op::kGeluBwd) {
    *why =
        "no Ascend GeluGrad tiling for 910B is published: hicann/ops-nn activation/gelu_grad and "
        "activation/gelu_grad_v2 carry op_host tilings for arch35 (Ascend 950) only";
    return false;
  }
  if (!Supported(op, dtype)) {
    *why = std::string("Ascend's kernel for ") + std::string(OpName(op)) + " does not take " +
           std::string(DTypeName(dtype));
    return false;
  }
  AscendTiling t;
  switch (op) {
    case Op::kLogitGrad: LogitGrad(n, soc, &t); break;
    case Op::kHardswishBwd: HardSwishGradV2(n, soc, &t); break;
    case Op::kSeluBwd: SeluGrad(n, soc, dtype, &t); break;
    case Op::kSoftshrinkBwd:
      if (!SoftshrinkGrad(n, soc, dtype, &t, why)) return false;
      break;
    default: return false;
  }
  *out = std::move(t);
  return true;
}

}  // namespace actgrad::atlas
