// The contract between the host tiling (atlas/host/) and the AscendC
// kernels (atlas/kernels/): the tiling data a launch carries in GM, the
// per-core element range, and the UB layout both sides size identically.
// Plain C++ that compiles for the host, for g++ against the emulator and for
// the device with CANN's toolchain.
#pragma once
#if !defined(__CCE_AICORE__)
#include <cstdint>
#endif
#ifndef __aicore__
#define __aicore__
#define ATLAS_TILING_DEFINED_AICORE 1
#endif

namespace actgrad::atlas {

enum AtlasOp : uint32_t { kOpSelu = 0, kOpHardswish = 1, kOpGelu = 2, kOpSoftshrink = 3, kOpLogit = 4 };
// Storage type of g, x and out.
enum AtlasDType : uint32_t { kDtF32 = 0, kDtF16 = 1, kDtBF16 = 2, kDtI32 = 3, kDtI8 = 4 };
// How a tile is computed.
enum AtlasCompute : uint32_t {
  kComputeNone = 0,       // storage is fp32: compute in place, no Cast
  kComputeUpcastF32 = 1,  // Cast the tile to fp32, compute, Cast back
  kComputeF16Native = 2,  // compute in fp16 on the fp16 tile
};
enum AtlasApprox : uint32_t { kApproxExact = 0, kApproxErf = 0, kApproxTanh = 1 };

constexpr uint32_t kTilingMagic = 0x534C5441u;  // "ATLS"
constexpr uint32_t kBlockBytes = 32;            // DataCopy granule
constexpr uint32_t kRepeatBytes = 256;          // one vector repeat
// Tile lengths are multiples of this many elements: a whole number of 256-byte
// repeats for fp32 and fp16 compute (Compare needs whole repeats) and a whole
// number of 32-byte blocks for every storage type and for the 1-bit masks.
constexpr uint32_t kTileAlign = 256;

struct AtlasTilingData {
  uint32_t magic;
  uint32_t op;          // AtlasOp
  uint32_t dtype;       // AtlasDType
  uint32_t compute;     // AtlasCompute
  uint32_t approx;      // AtlasApprox (GELU)
  uint32_t bufferNum;   // 1 or 2 buffers per queue
  uint32_t blockDim;    // cores launched
  uint32_t tileLength;  // elements per tile, multiple of kTileAlign
  uint64_t totalLength;      // elements
  uint64_t bigCoreLength;    // elements per big core (multiple of the 32-byte block)
  uint64_t smallCoreLength;  // elements per small core (multiple of the 32-byte block)
  uint32_t bigCoreNum;       // the first bigCoreNum cores are big
  uint32_t tilingKey;        // op*10000 + dtype*1000 + compute*100 + approx*10 + bufferNum
  float scalar0;             // Softshrink lambd | LogitGrad eps
  float scalar1;             // LogitGrad 1 - eps (rounded once in fp32)
  float scalarHalf;          // Softshrink: lambd rounded toward -inf to fp16 (exact in fp16; native fp16 compute)
  uint32_t reserved;
};

__aicore__ inline uint32_t DTypeBytes(uint32_t dtype) {
  return dtype == kDtF32 || dtype == kDtI32 ? 4u : dtype == kDtI8 ? 1u : 2u;
}
__aicore__ inline uint32_t ComputeBytes(uint32_t compute) { return compute == kComputeF16Native ? 2u : 4u; }
__aicore__ inline uint64_t RoundUpU64(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

__aicore__ inline uint32_t MakeTilingKey(uint32_t op, uint32_t dtype, uint32_t compute, uint32_t approx, uint32_t bufs) {
  return op * 10000u + dtype * 1000u + compute * 100u + approx * 10u + bufs;
}

// Elements [start, start + len) of core `idx`: big cores first, then small
// cores; the last core stops at totalLength (its last 32-byte block may be
// partial).
__aicore__ inline void CoreRange(const AtlasTilingData& t, uint32_t idx, uint64_t* start, uint64_t* len) {
  uint64_t s, l;
  if (idx < t.bigCoreNum) {
    s = uint64_t(idx) * t.bigCoreLength;
    l = t.bigCoreLength;
  } else {
    s = uint64_t(t.bigCoreNum) * t.bigCoreLength + uint64_t(idx - t.bigCoreNum) * t.smallCoreLength;
    l = t.smallCoreLength;
  }
  if (s >= t.totalLength) {
    s = t.totalLength;
    l = 0;
  } else if (s + l > t.totalLength || idx + 1 == t.blockDim) {
    l = t.totalLength - s;
  }
  *start = s;
  *len = l;
}

// Scratch tiles of the compute type each op needs besides g, x and out.
__aicore__ inline uint32_t ScratchTiles(uint32_t op, uint32_t approx) {
  switch (op) {
    case kOpSelu: return 1;
    case kOpHardswish: return 1;
    case kOpGelu: return approx == kApproxTanh ? 5 : 6;
    case kOpSoftshrink: return 2;
    case kOpLogit: return 2;
    default: return 8;
  }
}

// The UB layout of one core, in bytes, for a tile of `tile` elements. The
// kernels call InitBuffer with exactly these sizes; the host tiling keeps
// UbBytes() within the core's UB.
struct UbLayout {
  uint32_t ioBytes;       // one buffer of a VECIN/VECOUT queue (storage type)
  uint32_t castBytes;     // one compute-type tile (g, x, out copies when casting; 0 otherwise)
  uint32_t scratchBytes;  // all scratch tiles of the compute type
  uint32_t stageBytes;    // int8 <-> fp16 staging tile (0 unless int8)
  uint32_t maskBytes;     // 1-bit compare mask
  uint32_t total;
};

__aicore__ inline uint32_t Align32(uint64_t v) { return uint32_t(RoundUpU64(v, kBlockBytes)); }

__aicore__ inline UbLayout MakeUbLayout(uint32_t op, uint32_t dtype, uint32_t compute, uint32_t approx, uint32_t bufs,
                                        uint32_t tile) {
  UbLayout l;
  const uint32_t cb = ComputeBytes(compute);
  const bool casts = compute == kComputeUpcastF32;
  l.ioBytes = Align32(uint64_t(tile) * DTypeBytes(dtype));
  l.castBytes = casts ? Align32(uint64_t(tile) * cb) : 0u;
  l.scratchBytes = Align32(uint64_t(tile) * cb) * ScratchTiles(op, approx);
  l.stageBytes = dtype == kDtI8 ? Align32(uint64_t(tile) * 2u) : 0u;
  l.maskBytes = Align32(tile / 8u);
  l.total = 3u * bufs * l.ioBytes + 3u * l.castBytes + l.scratchBytes + l.stageBytes + l.maskBytes;
  return l;
}

}  // namespace actgrad::atlas

#ifdef ATLAS_TILING_DEFINED_AICORE
#undef __aicore__
#undef ATLAS_TILING_DEFINED_AICORE
#endif
