// The pipeline every actgrad AscendC kernel shares: per core, a contiguous
// element range (big/small core split from the host tiling), processed tile
// by tile as CopyIn (MTE2: GM -> VECIN queues), Compute (V: optional Cast to
// the compute type, the op, Cast back) and CopyOut (MTE3: VECOUT -> GM).
// With two buffers per queue the MTE2 load of tile i+1 and the MTE3 store of
// tile i-1 overlap the vector work on tile i.
//
// The op supplies a compute policy (see the *_grad_custom.cpp files):
//   Init(tiling, scratch, tile)  once per core (constants into scratch)
//   Compute(y, g, x, mask, count) on compute-type tiles
#pragma once
#include "kernel_operator.h"
#include "atlas_tiling_data.h"

// A tiling this kernel cannot run stops the core loudly, never returns with
// the output unwritten: AscendC::Trap() halts the AI Core and the launch
// fails on the host (an AI Core exception at the stream's synchronisation);
// the emulator's trap throws a Breach naming the reason. The return is never
// reached; it keeps the code after a trap dead for any reader or compiler.
#if defined(ASCEND_EMULATOR)
#define ATLAS_TRAP_CALL(msg) ::AscendC::emu::Trap(msg)
#else
#define ATLAS_TRAP_CALL(msg) ::AscendC::Trap()
#endif
#define ATLAS_TRAP(msg)   \
  do {                    \
    ATLAS_TRAP_CALL(msg); \
    return;               \
  } while (0)

namespace actgrad::atlas {

using namespace AscendC;

// Tiling data is read from GM word by word (scalar GM reads), as kernels
// launched with <<<>>> receive it.
__aicore__ inline void LoadTiling(GM_ADDR tiling, AtlasTilingData* t) {
  const __gm__ uint32_t* src = reinterpret_cast<const __gm__ uint32_t*>(tiling);
  uint32_t* dst = reinterpret_cast<uint32_t*>(t);
  for (uint32_t i = 0; i < sizeof(AtlasTilingData) / sizeof(uint32_t); ++i) dst[i] = src[i];
}

// Compare works on whole 256-byte repeats: round the count up (the tile
// buffers are whole repeats long, the extra lanes are never stored).
template <typename C>
__aicore__ inline uint32_t CompareCount(uint32_t count) {
  constexpr uint32_t per = kRepeatBytes / sizeof(C);
  return (count + per - 1) / per * per;
}

template <typename T, typename C, int BUFS, typename OpC>
class ElementwiseGrad {
 public:
  __aicore__ inline ElementwiseGrad() {}

  __aicore__ inline void Init(GM_ADDR g, GM_ADDR x, GM_ADDR y, const AtlasTilingData& t, TPipe* pipe) {
    uint64_t start = 0, len = 0;
    CoreRange(t, static_cast<uint32_t>(GetBlockIdx()), &start, &len);
    length_ = len;
    tile_ = t.tileLength;
    gGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(g) + start, len);
    xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x) + start, len);
    yGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(y) + start, len);
    if (len == 0) return;

    const UbLayout l = MakeUbLayout(t.op, t.dtype, t.compute, t.approx, BUFS, tile_);
    pipe->InitBuffer(inG_, BUFS, l.ioBytes);
    pipe->InitBuffer(inX_, BUFS, l.ioBytes);
    pipe->InitBuffer(outY_, BUFS, l.ioBytes);
    if (l.castBytes != 0) pipe->InitBuffer(castBuf_, 3 * l.castBytes);
    pipe->InitBuffer(scratchBuf_, l.scratchBytes);
    if (l.stageBytes != 0) pipe->InitBuffer(stageBuf_, l.stageBytes);
    pipe->InitBuffer(maskBuf_, l.maskBytes);
    op_.Init(t, scratchBuf_.template Get<C>(), tile_);
  }

  __aicore__ inline void Process() {
    if (length_ == 0) return;
    const uint64_t tiles = (length_ + tile_ - 1) / tile_;
    for (uint64_t i = 0; i < tiles; ++i) {
      const uint64_t off = i * tile_;
      const uint32_t count = static_cast<uint32_t>(length_ - off < tile_ ? length_ - off : tile_);
      CopyIn(off, count);
      Compute(count);
      CopyOut(off, count);
    }
  }

 private:
  __aicore__ inline void LoadTile(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count) {
    const uint32_t bytes = count * sizeof(T);
    if (bytes % kBlockBytes == 0) {
      DataCopy(dst, src, count);
    } else {
      DataCopyExtParams p{1, bytes, 0, 0, 0};
      DataCopyPadExtParams<T> pad{false, 0, 0, T(0)};
      DataCopyPad(dst, src, p, pad);
    }
  }

  __aicore__ inline void CopyIn(uint64_t off, uint32_t count) {
    LocalTensor<T> g = inG_.template AllocTensor<T>();
    LocalTensor<T> x = inX_.template AllocTensor<T>();
    LoadTile(g, gGm_[off], count);
    LoadTile(x, xGm_[off], count);
    inG_.EnQue(g);
    inX_.EnQue(x);
  }

  __aicore__ inline void ToCompute(const LocalTensor<C>& dst, const LocalTensor<T>& src, uint32_t count) {
    if constexpr (IsSame<T, int8_t>()) {
      LocalTensor<half> stage = stageBuf_.template Get<half>();
      Cast(stage, src, RoundMode::CAST_NONE, count);
      Cast(dst, stage, RoundMode::CAST_NONE, count);
    } else {
      Cast(dst, src, RoundMode::CAST_NONE, count);
    }
  }

  __aicore__ inline void FromCompute(const LocalTensor<T>& dst, const LocalTensor<C>& src, uint32_t count) {
    if constexpr (IsSame<T, half>()) {
      Cast(dst, src, RoundMode::CAST_NONE, count);  // fp32 -> fp16: round to nearest even
    } else if constexpr (IsSame<T, bfloat16_t>()) {
      Cast(dst, src, RoundMode::CAST_RINT, count);
    } else if constexpr (IsSame<T, int32_t>()) {
      Cast(dst, src, RoundMode::CAST_TRUNC, count);  // toward zero, saturating
    } else if constexpr (IsSame<T, int8_t>()) {
      // Saturate in fp32, then truncate twice: toward zero into fp16 keeps
      // trunc() exact (every integer of int8 is an fp16), then into int8.
      Maxs(src, src, static_cast<C>(-128.0f), count);
      Mins(src, src, static_cast<C>(127.0f), count);
      LocalTensor<half> stage = stageBuf_.template Get<half>();
      Cast(stage, src, RoundMode::CAST_TRUNC, count);
      Cast(dst, stage, RoundMode::CAST_TRUNC, count);
    }
  }

  __aicore__ inline void Compute(uint32_t count) {
    LocalTensor<T> g = inG_.template DeQue<T>();
    LocalTensor<T> x = inX_.template DeQue<T>();
    LocalTensor<T> y = outY_.template AllocTensor<T>();
    LocalTensor<uint8_t> mask = maskBuf_.template Get<uint8_t>();
    if constexpr (IsSame<T, C>()) {
      op_.Compute(y, g, x, mask, count);
    } else {
      LocalTensor<C> cast = castBuf_.template Get<C>();
      LocalTensor<C> gc = cast;
      LocalTensor<C> xc = cast[tile_];
      LocalTensor<C> yc = cast[2 * tile_];
      ToCompute(gc, g, count);
      ToCompute(xc, x, count);
      op_.Compute(yc, gc, xc, mask, count);
      FromCompute(y, yc, count);
    }
    outY_.EnQue(y);
    inG_.FreeTensor(g);
    inX_.FreeTensor(x);
  }

  __aicore__ inline void CopyOut(uint64_t off, uint32_t count) {
    LocalTensor<T> y = outY_.template DeQue<T>();
    const uint32_t bytes = count * sizeof(T);
    if (bytes % kBlockBytes == 0) {
      DataCopy(yGm_[off], y, count);
    } else {
      DataCopyExtParams p{1, bytes, 0, 0, 0};
      DataCopyPad(yGm_[off], y, p);
    }
    outY_.FreeTensor(y);
  }

  template <typename A, typename B>
  static constexpr bool IsSame() {
    return IsSameType<A, B>::value;
  }

  TQue<QuePosition::VECIN, BUFS> inG_;
  TQue<QuePosition::VECIN, BUFS> inX_;
  TQue<QuePosition::VECOUT, BUFS> outY_;
  TBuf<TPosition::VECCALC> castBuf_;
  TBuf<TPosition::VECCALC> scratchBuf_;
  TBuf<TPosition::VECCALC> stageBuf_;
  TBuf<TPosition::VECCALC> maskBuf_;
  GlobalTensor<T> gGm_, xGm_, yGm_;
  OpC op_;
  uint64_t length_ = 0;
  uint32_t tile_ = 0;
};

template <typename T, typename C, typename OpC>
__aicore__ inline void RunTyped(GM_ADDR g, GM_ADDR x, GM_ADDR y, const AtlasTilingData& t) {
  TPipe pipe;
  if (t.bufferNum == 2) {
    ElementwiseGrad<T, C, 2, OpC> k;
    k.Init(g, x, y, t, &pipe);
    k.Process();
  } else {
    ElementwiseGrad<T, C, 1, OpC> k;
    k.Init(g, x, y, t, &pipe);
    k.Process();
  }
}

// Dispatches on the tiling key fields. OpT<C> is the op's compute policy;
// kNative / kInts say which fp16-native and integer instances exist.
template <template <typename> class OpT, bool kNative, bool kInts>
__aicore__ inline void Dispatch(GM_ADDR g, GM_ADDR x, GM_ADDR y, GM_ADDR tiling) {
  AtlasTilingData t;
  LoadTiling(tiling, &t);
  if (t.magic != kTilingMagic) ATLAS_TRAP("tiling data without the ATLS magic");
  if (t.bufferNum != 1 && t.bufferNum != 2) ATLAS_TRAP("bufferNum must be 1 or 2");
  switch (t.dtype) {
    case kDtF32:
      if (t.compute != kComputeNone) ATLAS_TRAP("fp32 storage computes without Cast");
      RunTyped<float, float, OpT<float>>(g, x, y, t);
      return;
    case kDtF16:
      if (t.compute == kComputeUpcastF32) {
        RunTyped<half, float, OpT<float>>(g, x, y, t);
        return;
      }
      if constexpr (kNative) {
        if (t.compute == kComputeF16Native) {
          RunTyped<half, half, OpT<half>>(g, x, y, t);
          return;
        }
      }
      ATLAS_TRAP("fp16 compute mode not built for this op");
    case kDtBF16:
      if (t.compute != kComputeUpcastF32) ATLAS_TRAP("bf16 is computed in fp32");
      RunTyped<bfloat16_t, float, OpT<float>>(g, x, y, t);
      return;
    case kDtI32:
    case kDtI8:
      if constexpr (kInts) {
        if (t.compute != kComputeUpcastF32) ATLAS_TRAP("integers are computed in fp32");
        if (t.dtype == kDtI32) RunTyped<int32_t, float, OpT<float>>(g, x, y, t);
        else RunTyped<int8_t, float, OpT<float>>(g, x, y, t);
        return;
      }
      ATLAS_TRAP("integer dtype not built for this op");
    default:
      ATLAS_TRAP("unknown dtype in tiling data");
  }
}

}  // namespace actgrad::atlas
