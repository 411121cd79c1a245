// ascend-emu: a header-only CPU implementation of the subset of the AscendC
// API (CANN, dav-c220 = Atlas A2 / Ascend 910B vector cores) that the actgrad
// kernels use, in the spirit of CANN's CPU-twin debug mode. The same kernel
// source compiles with CANN's toolchain against the real "kernel_operator.h"
// and with g++ against this file.
//
// What it enforces (a breach throws AscendEmu::Breach naming kernel, core and
// call; nothing is silently corrupted):
//  - UB is a per-core arena of the real capacity; TPipe::InitBuffer beyond it
//    is a breach; every tensor access stays inside its buffer.
//  - TQue depth and FIFO order; AllocTensor with no free buffer, EnQue on a
//    full queue, DeQue of an empty queue, double free are breaches.
//  - Pipe discipline: a VECIN buffer is written by MTE2 only while allocated
//    and read by vector instructions only after DeQue; a VECOUT buffer is
//    written by vector instructions only before EnQue and read by MTE3 only
//    after DeQue (a missing EnQue/DeQue is a race on the device).
//  - 32-byte alignment of UB operands, DataCopy lengths in whole 32-byte
//    blocks (DataCopyPad for the rest), Compare counts in whole 256-byte
//    repeats (the device silently drops the remainder), supported Cast
//    conversions and round modes of dav-c220.
//  - GM accesses inside the buffers registered for the launch.
//  - The kernel's task type: KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY)
//    (or MIX_AIV_1_0) declared once per launch; cube, mixed and missing
//    types are breaches. AscendC::Trap() stops the launch with a Breach.
//  - At compile time: vector arithmetic only on the element types dav-c220
//    computes (no double), Duplicate on 16/32-bit types. What a compiler
//    check of the objects adds (no namespace-scope data, no host calls,
//    recursion or double in kernel code) is atlas/tests/device_code_check.py.
// What it counts per core: bytes GM->UB and UB->GM, copy instructions,
// vector instructions and repeats by kind; optionally a pipe trace (MTE2, V,
// MTE3 and the queue flags between them) for the cost model.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "emu_fp.h"
#include "emu_runtime.h"

#define __aicore__
#define __global__
#define __gm__
#define __ubuf__
#define GM_ADDR uint8_t*
// The kernel's task type, as CANN spells it (enum KernelMetaType in the
// global namespace). On the device KERNEL_TASK_TYPE_DEFAULT is a compile-time
// mark that decides which cores a launch starts; here it records the type in
// the core's context: a cube or mixed type, or a second declaration, is a
// breach at once, and a body that never declares one fails at its end
// (emu_runtime.h). KERNEL_TASK_TYPE(key, value) is not emulated.
enum KernelMetaType : uint8_t {
  KERNEL_TYPE_AIV_ONLY,
  KERNEL_TYPE_AIC_ONLY,
  KERNEL_TYPE_MIX_AIV_1_0,
  KERNEL_TYPE_MIX_AIC_1_0,
  KERNEL_TYPE_MIX_AIC_1_1,
  KERNEL_TYPE_MIX_AIC_1_2,
  KERNEL_TYPE_AICORE,
  KERNEL_TYPE_VECTORCORE,
  KERNEL_TYPE_MIX_AICORE,
  KERNEL_TYPE_MIX_VECTOR_CORE,
  KERNEL_TYPE_MAX,
};
#define KERNEL_TASK_TYPE_DEFAULT(value) ::AscendC::emu::DeclareTaskType(value)
#define ASCEND_IS_AIV (true)
#define ASCEND_IS_AIC (false)
#ifndef ASCENDC_CPU_DEBUG
#define ASCENDC_CPU_DEBUG 1
#endif
#define ASCEND_EMULATOR 1

// fp16 as the device sees it: storage is IEEE binary16; conversions round to
// nearest even; arithmetic goes through the vector API, not operators.
struct half {
  uint16_t bits = 0;
  half() = default;
  half(double v) : bits(AscendEmu::fp::EncodeHalf(AscendEmu::fp::RoundTo(v, AscendEmu::fp::kHalf, AscendEmu::fp::Mode::kRint))) {}
  half(float v) : half(double(v)) {}
  half(int v) : half(double(v)) {}
  operator float() const { return float(AscendEmu::fp::DecodeHalf(bits)); }
  static half FromBits(uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
};

struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  bfloat16_t(double v) : bits(AscendEmu::fp::EncodeBF16(AscendEmu::fp::RoundTo(v, AscendEmu::fp::kBF16, AscendEmu::fp::Mode::kRint))) {}
  bfloat16_t(float v) : bfloat16_t(double(v)) {}
  bfloat16_t(int v) : bfloat16_t(double(v)) {}
  operator float() const { return AscendEmu::fp::DecodeBF16(bits); }
  static bfloat16_t FromBits(uint16_t b) {
    bfloat16_t h;
    h.bits = b;
    return h;
  }
};

namespace AscendC {

using AscendEmu::VecKind;
using AscendEmu::detail::Ctx;
using AscendEmu::detail::CoreContext;

constexpr uint32_t ONE_BLK_SIZE = 32;
constexpr uint32_t ONE_REPEAT_BYTE_SIZE = 256;
constexpr uint32_t MAX_REPEAT_TIMES = 255;
constexpr uint32_t DEFAULT_BLK_NUM = 8;

enum class TPosition : uint8_t { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, MAX };
using QuePosition = TPosition;

enum class RoundMode : uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE = 1, VSEL_TENSOR_TENSOR_MODE = 2 };
enum pipe_t : uint8_t { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL };

struct DataCopyParams {
  DataCopyParams() {}
  DataCopyParams(uint16_t count, uint16_t len, uint16_t srcStrideIn, uint16_t dstStrideIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
  uint16_t blockCount = 1;
  uint16_t blockLen = 0;   // in 32-byte blocks
  uint16_t srcStride = 0;  // gap between blocks, in 32-byte blocks
  uint16_t dstStride = 0;
};

struct DataCopyExtParams {
  DataCopyExtParams() {}
  DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcStrideIn, uint32_t dstStrideIn, uint32_t rsvIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
  uint16_t blockCount = 1;
  uint32_t blockLen = 0;   // bytes
  uint32_t srcStride = 0;  // GM side: bytes; UB side: 32-byte blocks
  uint32_t dstStride = 0;
  uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
  DataCopyPadExtParams() {}
  DataCopyPadExtParams(bool isPadValue, uint8_t leftPadValue, uint8_t rightPadValue, T padValue)
      : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
  bool isPad = false;
  uint8_t leftPadding = 0;
  uint8_t rightPadding = 0;
  T paddingValue = T(0);
};

struct UnaryRepeatParams {
  UnaryRepeatParams() {}
  UnaryRepeatParams(uint16_t dBlk, uint16_t sBlk, uint8_t dRep, uint8_t sRep)
      : dstBlkStride(dBlk), srcBlkStride(sBlk), dstRepStride(dRep), srcRepStride(sRep) {}
  uint16_t dstBlkStride = 1;
  uint16_t srcBlkStride = 1;
  uint8_t dstRepStride = 8;
  uint8_t srcRepStride = 8;
};

struct BinaryRepeatParams {
  BinaryRepeatParams() {}
  BinaryRepeatParams(uint8_t dBlk, uint8_t s0Blk, uint8_t s1Blk, uint8_t dRep, uint8_t s0Rep, uint8_t s1Rep)
      : dstBlkStride(dBlk), src0BlkStride(s0Blk), src1BlkStride(s1Blk), dstRepStride(dRep),
        src0RepStride(s0Rep), src1RepStride(s1Rep) {}
  uint8_t dstBlkStride = 1;
  uint8_t src0BlkStride = 1;
  uint8_t src1BlkStride = 1;
  uint8_t dstRepStride = 8;
  uint8_t src0RepStride = 8;
  uint8_t src1RepStride = 8;
};

template <typename T, typename U>
struct IsSameType {
  static constexpr bool value = std::is_same_v<T, U>;
};

inline int64_t GetBlockIdx() { return Ctx().core; }
inline int64_t GetBlockNum() { return Ctx().block_dim; }
template <pipe_t p>
inline void PipeBarrier() {}

namespace emu {

template <typename T> constexpr const char* TypeName() {
  if constexpr (std::is_same_v<T, float>) return "float";
  else if constexpr (std::is_same_v<T, half>) return "half";
  else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16_t";
  else if constexpr (std::is_same_v<T, int32_t>) return "int32_t";
  else if constexpr (std::is_same_v<T, int16_t>) return "int16_t";
  else if constexpr (std::is_same_v<T, int8_t>) return "int8_t";
  else if constexpr (std::is_same_v<T, uint8_t>) return "uint8_t";
  else if constexpr (std::is_same_v<T, uint16_t>) return "uint16_t";
  else if constexpr (std::is_same_v<T, uint32_t>) return "uint32_t";
  else return "?";
}

inline const char* ModeName(RoundMode m) {
  static const char* const k[] = {"CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
  return k[int(m)];
}

inline uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

inline const char* TaskTypeName(KernelMetaType t) {
  static const char* const k[] = {"KERNEL_TYPE_AIV_ONLY",    "KERNEL_TYPE_AIC_ONLY",   "KERNEL_TYPE_MIX_AIV_1_0",
                                  "KERNEL_TYPE_MIX_AIC_1_0", "KERNEL_TYPE_MIX_AIC_1_1", "KERNEL_TYPE_MIX_AIC_1_2",
                                  "KERNEL_TYPE_AICORE",      "KERNEL_TYPE_VECTORCORE", "KERNEL_TYPE_MIX_AICORE",
                                  "KERNEL_TYPE_MIX_VECTOR_CORE"};
  return t < KERNEL_TYPE_MAX ? k[t] : "KERNEL_TYPE_MAX";
}

// KERNEL_TASK_TYPE_DEFAULT(t). The emulator has AI Vector cores of dav-c220
// only: AIV_ONLY and MIX_AIV_1_0 (vector cores with the hardware SyncAll)
// start nothing else; every other type starts cube cores or names another
// architecture's cores.
inline void DeclareTaskType(KernelMetaType t) {
  CoreContext& c = Ctx();
  c.Begin("KERNEL_TASK_TYPE_DEFAULT");
  if (c.task_type >= 0)
    c.Fail(std::string("task type declared twice (") + TaskTypeName(KernelMetaType(c.task_type)) + ", then " +
           TaskTypeName(t) + "): bisheng rejects the second KERNEL_TASK_TYPE_DEFAULT");
  switch (t) {
    case KERNEL_TYPE_AIV_ONLY:
    case KERNEL_TYPE_MIX_AIV_1_0:
      c.task_type = int(t);
      return;
    case KERNEL_TYPE_AIC_ONLY:
    case KERNEL_TYPE_MIX_AIC_1_0:
    case KERNEL_TYPE_MIX_AIC_1_1:
    case KERNEL_TYPE_MIX_AIC_1_2:
      c.Fail(std::string(TaskTypeName(t)) +
             " starts cube (AIC) cores: the emulator runs AI Vector cores only, and a vector-only kernel "
             "declares KERNEL_TYPE_AIV_ONLY");
    default:
      c.Fail(std::string(TaskTypeName(t)) + " is not a task type of dav-c220 (Atlas A2 / Ascend 910B): use "
             "KERNEL_TYPE_AIV_ONLY for a vector-only kernel");
  }
}

}  // namespace emu

// Stops the kernel: on the device the AI Core halts and the launch fails on
// the host; here the launch stops with a Breach.
inline void Trap() {
  CoreContext& c = Ctx();
  c.Begin("Trap");
  c.Fail("AscendC::Trap() stopped the kernel");
}

namespace emu {
// Trap with the kernel's reason in the Breach (ATLAS_TRAP; Trap() on the device).
[[noreturn]] inline void Trap(const char* why) {
  CoreContext& c = Ctx();
  c.Begin("Trap");
  c.Fail(std::string("AscendC::Trap(): ") + why);
}
}  // namespace emu

// ---------------------------------------------------------------- tensors

template <typename T>
class LocalTensor {
 public:
  LocalTensor() = default;
  using PrimType = T;
  uint32_t GetSize() const { return size_; }
  uint64_t GetPhyAddr() const { return off_; }
  LocalTensor operator[](uint32_t offset) const {
    if (offset > size_) Ctx().Fail("LocalTensor[] offset " + std::to_string(offset) + " beyond tensor size " + std::to_string(size_));
    LocalTensor t = *this;
    t.off_ += offset * sizeof(T);
    t.size_ -= offset;
    return t;
  }
  template <typename U>
  LocalTensor<U> ReinterpretCast() const {
    LocalTensor<U> t;
    t.off_ = off_;
    t.size_ = uint32_t(uint64_t(size_) * sizeof(T) / sizeof(U));
    t.slot_ = slot_;
    t.lo_ = lo_;
    t.hi_ = hi_;
    return t;
  }
  T GetValue(uint32_t i) const {
    CoreContext& c = Ctx();
    if (i >= size_) c.Fail("LocalTensor::GetValue index beyond tensor");
    if (c.Dry()) return T{};
    T v;
    std::memcpy(&v, c.ub.data() + off_ + i * sizeof(T), sizeof(T));
    return v;
  }
  void SetValue(uint32_t i, T v) const {
    CoreContext& c = Ctx();
    if (i >= size_) c.Fail("LocalTensor::SetValue index beyond tensor");
    if (!c.Dry()) std::memcpy(c.ub.data() + off_ + i * sizeof(T), &v, sizeof(T));
  }

  // emulator internals (public so the free functions below can reach them)
  T* Ptr() const { return reinterpret_cast<T*>(Ctx().ub.data() + off_); }
  uint32_t off_ = 0;     // byte offset in UB
  uint32_t size_ = 0;    // elements
  int32_t slot_ = -1;    // owning buffer slot
  uint32_t lo_ = 0, hi_ = 0;  // byte bounds of the owning buffer
};

template <typename T>
class GlobalTensor {
 public:
  void SetGlobalBuffer(T* buffer, uint64_t bufferSize) {
    base_ = buffer;
    size_ = bufferSize;
    sized_ = true;
  }
  void SetGlobalBuffer(T* buffer) {
    base_ = buffer;
    sized_ = false;
  }
  GlobalTensor operator[](uint64_t offset) const {
    GlobalTensor g = *this;
    g.base_ = base_ + offset;
    if (sized_) {
      if (offset > size_) Ctx().Fail("GlobalTensor[] offset beyond the buffer size given to SetGlobalBuffer");
      g.size_ = size_ - offset;
    }
    return g;
  }
  T* GetPhyAddr() const { return base_; }
  uint64_t GetSize() const { return size_; }
  T GetValue(uint64_t i) const {
    CoreContext& c = Ctx();
    c.Begin("GlobalTensor::GetValue");
    CheckRange(c, i, 1, "GetValue");
    ++c.stats.scalar_gm_reads;
    if (c.Dry()) return T{};
    return base_[i];
  }
  void SetValue(uint64_t i, T v) const {
    CoreContext& c = Ctx();
    c.Begin("GlobalTensor::SetValue");
    CheckRange(c, i, 1, "SetValue");
    if (!c.Dry()) base_[i] = v;
  }
  void CheckRange(const CoreContext& c, uint64_t first, uint64_t count, const char* what) const {
    if (sized_ && first + count > size_)
      c.Fail(std::string(what) + ": " + std::to_string(first + count) + " elements from a GlobalTensor of " +
             std::to_string(size_));
    AscendEmu::detail::CheckGm(c, base_ + first, count * sizeof(T), what);
  }

  T* base_ = nullptr;
  uint64_t size_ = 0;
  bool sized_ = false;
};

// ---------------------------------------------------------------- pipe, queues

namespace emu {
inline uint8_t PosCode(TPosition p) {
  return p == TPosition::VECIN ? 0 : p == TPosition::VECOUT ? 1 : 2;
}
inline AscendEmu::Pipe Producer(uint8_t pos) { return pos == 0 ? AscendEmu::Pipe::MTE2 : AscendEmu::Pipe::V; }
inline AscendEmu::Pipe Consumer(uint8_t pos) { return pos == 0 ? AscendEmu::Pipe::V : AscendEmu::Pipe::MTE3; }
inline const char* StateName(uint8_t s) {
  static const char* const k[] = {"free", "allocated", "enqueued", "dequeued"};
  return k[s];
}
}  // namespace emu

template <TPosition pos, int32_t depth = 1>
class TQue {
 public:
  static_assert(depth >= 1, "TQue depth must be at least 1");
  template <typename T>
  LocalTensor<T> AllocTensor() {
    CoreContext& c = Ctx();
    c.Begin("TQue::AllocTensor");
    if (id_ < 0) c.Fail("AllocTensor on a queue that TPipe::InitBuffer never initialised");
    if (free_.empty())
      c.Fail("AllocTensor: all " + std::to_string(slots_.size()) +
             " buffers of the queue are in use (the device would wait forever)");
    const int s = free_.front();
    free_.pop_front();
    auto& sl = c.slots[s];
    sl.state = AscendEmu::detail::kAllocated;
    c.Rec(AscendEmu::TraceEvent::kWaitFlag, emu::Producer(sl.position), uint32_t(2 * s + 1));
    LocalTensor<T> t;
    t.off_ = sl.off;
    t.size_ = sl.len / sizeof(T);
    t.slot_ = s;
    t.lo_ = sl.off;
    t.hi_ = sl.off + sl.len;
    return t;
  }
  template <typename T>
  bool EnQue(const LocalTensor<T>& t) {
    CoreContext& c = Ctx();
    c.Begin("TQue::EnQue");
    CheckMine(c, t.slot_, "EnQue");
    auto& sl = c.slots[t.slot_];
    if (sl.state != AscendEmu::detail::kAllocated)
      c.Fail(std::string("EnQue of a buffer that is ") + emu::StateName(sl.state) + ", not allocated");
    if (int32_t(queued_.size()) >= depth)
      c.Fail("EnQue on a full queue (depth " + std::to_string(depth) + ")");
    queued_.push_back(t.slot_);
    sl.state = AscendEmu::detail::kQueued;
    ++c.stats.enque;
    c.Rec(AscendEmu::TraceEvent::kSetFlag, emu::Producer(sl.position), uint32_t(2 * t.slot_));
    return true;
  }
  template <typename T>
  LocalTensor<T> DeQue() {
    CoreContext& c = Ctx();
    c.Begin("TQue::DeQue");
    if (queued_.empty()) c.Fail("DeQue of an empty queue");
    const int s = queued_.front();
    queued_.pop_front();
    auto& sl = c.slots[s];
    sl.state = AscendEmu::detail::kDequeued;
    ++c.stats.deque;
    c.Rec(AscendEmu::TraceEvent::kWaitFlag, emu::Consumer(sl.position), uint32_t(2 * s));
    LocalTensor<T> t;
    t.off_ = sl.off;
    t.size_ = sl.len / sizeof(T);
    t.slot_ = s;
    t.lo_ = sl.off;
    t.hi_ = sl.off + sl.len;
    return t;
  }
  template <typename T>
  void FreeTensor(LocalTensor<T>& t) {
    CoreContext& c = Ctx();
    c.Begin("TQue::FreeTensor");
    CheckMine(c, t.slot_, "FreeTensor");
    auto& sl = c.slots[t.slot_];
    if (sl.state == AscendEmu::detail::kFree) c.Fail("FreeTensor of a buffer that is already free (double free)");
    if (sl.state == AscendEmu::detail::kQueued) c.Fail("FreeTensor of a buffer that is still enqueued");
    const bool consumed = sl.state == AscendEmu::detail::kDequeued;
    sl.state = AscendEmu::detail::kFree;
    free_.push_back(t.slot_);
    c.Rec(AscendEmu::TraceEvent::kSetFlag, consumed ? emu::Consumer(sl.position) : emu::Producer(sl.position),
          uint32_t(2 * t.slot_ + 1));
  }
  // emulator internals
  void CheckMine(const CoreContext& c, int32_t slot, const char* what) const {
    if (std::find(slots_.begin(), slots_.end(), slot) == slots_.end())
      c.Fail(std::string(what) + " of a tensor that was not allocated from this queue");
  }
  int id_ = -1;
  std::vector<int> slots_;
  std::deque<int> free_;
  std::deque<int> queued_;
};

template <TPosition pos = TPosition::VECCALC>
class TBuf {
 public:
  template <typename T>
  LocalTensor<T> Get() const {
    return Get<T>(len_ / sizeof(T));
  }
  template <typename T>
  LocalTensor<T> Get(uint32_t count) const {
    CoreContext& c = Ctx();
    if (slot_ < 0) c.Fail("TBuf::Get on a buffer that TPipe::InitBuffer never initialised");
    if (uint64_t(count) * sizeof(T) > len_)
      c.Fail("TBuf::Get of " + std::to_string(count) + " elements exceeds the buffer of " + std::to_string(len_) + " bytes");
    LocalTensor<T> t;
    t.off_ = off_;
    t.size_ = count;
    t.slot_ = slot_;
    t.lo_ = off_;
    t.hi_ = off_ + len_;
    return t;
  }
  int32_t slot_ = -1;
  uint32_t off_ = 0, len_ = 0;
};

class TPipe {
 public:
  TPipe() {
    CoreContext& c = Ctx();
    c.Begin("TPipe::TPipe");
    if (c.pipe_alive) c.Fail("a second TPipe while one is alive on this core");
    c.pipe_alive = true;
    c.ub_used = 0;
    c.slots.clear();
    owner_ = &c;
  }
  ~TPipe() {
    if (AscendEmu::detail::g_ctx == owner_ && owner_) {
      owner_->pipe_alive = false;
      owner_->ub_used = 0;
    }
  }
  TPipe(const TPipe&) = delete;
  TPipe& operator=(const TPipe&) = delete;

  template <TPosition pos, int32_t depth>
  bool InitBuffer(TQue<pos, depth>& que, uint8_t num, uint32_t len) {
    CoreContext& c = Ctx();
    c.Begin("TPipe::InitBuffer(TQue)");
    static_assert(pos == TPosition::VECIN || pos == TPosition::VECOUT, "emulated queues: VECIN, VECOUT");
    if (que.id_ >= 0) c.Fail("InitBuffer on a queue that is already initialised");
    if (num < 1) c.Fail("InitBuffer with 0 buffers");
    if (len == 0) c.Fail("InitBuffer with 0 bytes");
    que.id_ = c.next_que_id++;
    for (int i = 0; i < num; ++i) {
      const int s = Alloc(c, len, que.id_, emu::PosCode(pos));
      que.slots_.push_back(s);
      que.free_.push_back(s);
    }
    return true;
  }
  template <TPosition pos>
  bool InitBuffer(TBuf<pos>& buf, uint32_t len) {
    CoreContext& c = Ctx();
    c.Begin("TPipe::InitBuffer(TBuf)");
    if (buf.slot_ >= 0) c.Fail("InitBuffer on a TBuf that is already initialised");
    if (len == 0) c.Fail("InitBuffer with 0 bytes");
    buf.slot_ = Alloc(c, len, -1, 2);
    buf.off_ = c.slots[buf.slot_].off;
    buf.len_ = c.slots[buf.slot_].len;
    return true;
  }
  void Destroy() {
    CoreContext& c = Ctx();
    c.ub_used = 0;
    c.slots.clear();
  }

 private:
  static int Alloc(CoreContext& c, uint32_t len, int que, uint8_t position) {
    const uint64_t rounded = emu::RoundUp(len, ONE_BLK_SIZE);
    if (c.ub_used + rounded > c.opts->ub_capacity)
      c.Fail("UB overflow: InitBuffer needs " + std::to_string(rounded) + " bytes with " + std::to_string(c.ub_used) +
             " of " + std::to_string(c.opts->ub_capacity) + " already allocated");
    AscendEmu::detail::Slot s{c.ub_used, uint32_t(rounded), que, AscendEmu::detail::kFree, position};
    c.ub_used += uint32_t(rounded);
    c.stats.ub_peak_bytes = std::max<uint64_t>(c.stats.ub_peak_bytes, c.ub_used);
    c.slots.push_back(s);
    return int(c.slots.size()) - 1;
  }
  CoreContext* owner_ = nullptr;
};

// ---------------------------------------------------------------- checks

namespace emu {

enum class Use : uint8_t { kVector, kMte2Dst, kMte3Src };

template <typename T>
inline void CheckUse(const CoreContext& c, const LocalTensor<T>& t, Use use, const char* role) {
  if (t.hi_ == 0) c.Fail(std::string(role) + ": uninitialised LocalTensor");
  if (t.slot_ < 0) return;
  const auto& sl = c.slots[t.slot_];
  if (sl.position == 2) return;  // VECCALC: always usable
  using namespace AscendEmu::detail;
  const bool in = sl.position == 0;
  uint8_t need;
  const char* who;
  switch (use) {
    case Use::kMte2Dst:
      need = kAllocated;
      who = "MTE2 write";
      if (!in) c.Fail(std::string(role) + ": GM->UB copy into a VECOUT buffer");
      break;
    case Use::kMte3Src:
      need = kDequeued;
      who = "MTE3 read";
      if (in) c.Fail(std::string(role) + ": UB->GM copy from a VECIN buffer");
      break;
    default:
      need = in ? kDequeued : kAllocated;
      who = "vector access";
      break;
  }
  if (sl.state != need)
    c.Fail(std::string(role) + ": " + who + " to a " + (in ? "VECIN" : "VECOUT") + " buffer that is " +
           StateName(sl.state) + " (expected " + StateName(need) + "; missing EnQue/DeQue is a race on the device)");
}

// Operand of a vector instruction touching `count` elements from its start.
template <typename T>
inline void CheckVecOperand(const CoreContext& c, const LocalTensor<T>& t, uint64_t count, const char* role) {
  CheckUse(c, t, Use::kVector, role);
  if (t.off_ % ONE_BLK_SIZE != 0)
    c.Fail(std::string(role) + ": UB address " + std::to_string(t.off_) + " is not 32-byte aligned");
  if (count > t.size_)
    c.Fail(std::string(role) + ": " + std::to_string(count) + " elements exceed the tensor's " +
           std::to_string(t.size_) + " (UB overflow)");
}

inline void CheckOverlap(const CoreContext& c, uint64_t d0, uint64_t dlen, uint64_t s0, uint64_t slen, const char* role) {
  if (d0 == s0) return;  // in place: allowed
  if (d0 < s0 + slen && s0 < d0 + dlen)
    c.Fail(std::string("dst partially overlaps ") + role + " (only fully in-place operands are allowed)");
}

inline void RecVec(CoreContext& c, VecKind k, uint64_t repeats, uint64_t instr = 1) {
  c.stats.vec_instr[int(k)] += instr;
  c.stats.vec_repeats[int(k)] += repeats;
  if (c.opts->record_trace) {
    // one trace event per hardware instruction
    uint64_t left = repeats;
    for (uint64_t i = 0; i < instr; ++i) {
      const uint64_t r = i + 1 == instr ? left : std::min<uint64_t>(left, 252);
      left -= r;
      c.Rec(AscendEmu::TraceEvent::kVec, AscendEmu::Pipe::V, uint32_t(r), uint8_t(k));
    }
  }
}

inline uint64_t Repeats(uint64_t bytes) { return (bytes + ONE_REPEAT_BYTE_SIZE - 1) / ONE_REPEAT_BYTE_SIZE; }

// Arithmetic of the vector unit per element type: float in IEEE single,
// half computed exactly in double and rounded once to fp16.
template <typename T> struct Arith {
  static_assert(sizeof(T) == 0,
                "no vector arithmetic on this element type on dav-c220 (Ascend 910B): the vector unit computes "
                "half, float, int16_t and int32_t (no double; Cast bfloat16_t to float first)");
};
template <> struct Arith<float> {
  using W = float;
  static W In(float v) { return v; }
  static float Out(W v) { return v; }
  static W Exp(W v) { return std::exp(v); }
  static W Ln(W v) { return std::log(v); }
  static W Sqrt(W v) { return std::sqrt(v); }
};
template <> struct Arith<half> {
  using W = double;
  static W In(half v) { return AscendEmu::fp::DecodeHalf(v.bits); }
  static half Out(W v) { return half(v); }
  static W Exp(W v) { return std::exp(v); }
  static W Ln(W v) { return std::log(v); }
  static W Sqrt(W v) { return std::sqrt(v); }
};
template <> struct Arith<int32_t> {
  using W = int64_t;
  static W In(int32_t v) { return v; }
  static int32_t Out(W v) { return int32_t(v); }
};
template <> struct Arith<int16_t> {
  using W = int32_t;
  static W In(int16_t v) { return v; }
  static int16_t Out(W v) { return int16_t(v); }
};

template <typename W>
inline W MaxOf(W a, W b, bool nan_prop) {
  if constexpr (std::is_floating_point_v<W>) {
    if (std::isnan(a) || std::isnan(b)) return nan_prop ? std::numeric_limits<W>::quiet_NaN() : (std::isnan(a) ? b : a);
  }
  return a > b ? a : b;
}
template <typename W>
inline W MinOf(W a, W b, bool nan_prop) {
  if constexpr (std::is_floating_point_v<W>) {
    if (std::isnan(a) || std::isnan(b)) return nan_prop ? std::numeric_limits<W>::quiet_NaN() : (std::isnan(a) ? b : a);
  }
  return a < b ? a : b;
}

// ---- Level 2 (count) engines
template <typename T, typename F>
inline void Binary2(const char* api, VecKind k, const LocalTensor<T>& dst, const LocalTensor<T>& a,
                    const LocalTensor<T>& b, uint32_t count, F f) {
  CoreContext& c = Ctx();
  c.Begin(api);
  CheckVecOperand(c, dst, count, "dst");
  CheckVecOperand(c, a, count, "src0");
  CheckVecOperand(c, b, count, "src1");
  CheckOverlap(c, dst.off_, count * sizeof(T), a.off_, count * sizeof(T), "src0");
  CheckOverlap(c, dst.off_, count * sizeof(T), b.off_, count * sizeof(T), "src1");
  RecVec(c, k, Repeats(uint64_t(count) * sizeof(T)));
  if (c.Dry()) return;
  T* d = dst.Ptr();
  const T* x = a.Ptr();
  const T* y = b.Ptr();
  for (uint32_t i = 0; i < count; ++i) d[i] = Arith<T>::Out(f(Arith<T>::In(x[i]), Arith<T>::In(y[i])));
}

template <typename T, typename F>
inline void Unary2(const char* api, VecKind k, const LocalTensor<T>& dst, const LocalTensor<T>& a, uint32_t count, F f) {
  CoreContext& c = Ctx();
  c.Begin(api);
  CheckVecOperand(c, dst, count, "dst");
  CheckVecOperand(c, a, count, "src");
  CheckOverlap(c, dst.off_, count * sizeof(T), a.off_, count * sizeof(T), "src");
  RecVec(c, k, Repeats(uint64_t(count) * sizeof(T)));
  if (c.Dry()) return;
  T* d = dst.Ptr();
  const T* x = a.Ptr();
  for (uint32_t i = 0; i < count; ++i) d[i] = Arith<T>::Out(f(Arith<T>::In(x[i])));
}

// ---- Level 0 (mask + repeat) engine for same-type operands.
struct Mask0 {
  bool bits;
  uint64_t m0, m1;
};

template <typename T>
inline bool LaneOn(const CoreContext& c, const Mask0& m, uint32_t lane) {
  constexpr uint32_t lanes = ONE_REPEAT_BYTE_SIZE / sizeof(T);
  (void)c;
  if (!m.bits) return lane < m.m0;
  if (sizeof(T) >= 4) return lane < 64 && ((m.m0 >> lane) & 1);  // b32: mask[1] unused
  return lane < 64 ? ((m.m0 >> lane) & 1) : (lane < lanes && ((m.m1 >> (lane - 64)) & 1));
}

template <typename T>
inline void CheckMask0(const CoreContext& c, const Mask0& m) {
  constexpr uint32_t lanes = ONE_REPEAT_BYTE_SIZE / sizeof(T);
  if (!m.bits && (m.m0 < 1 || m.m0 > lanes))
    c.Fail("continuous mask " + std::to_string(m.m0) + " outside [1, " + std::to_string(lanes) + "] for " + TypeName<T>());
}

// Element index (in T) of lane `lane` of repeat `r` for an operand with the
// given block and repeat strides (both in 32-byte blocks).
template <typename T>
inline uint64_t LaneIndex(uint32_t r, uint32_t lane, uint32_t blk_stride, uint32_t rep_stride) {
  constexpr uint32_t epb = ONE_BLK_SIZE / sizeof(T);
  return (uint64_t(r) * rep_stride + uint64_t(lane / epb) * blk_stride) * epb + lane % epb;
}

template <typename T>
inline void CheckLane0(const CoreContext& c, const LocalTensor<T>& t, uint64_t idx, const char* role) {
  const uint64_t byte = t.off_ + idx * sizeof(T);
  if (byte < t.lo_ || byte + sizeof(T) > t.hi_)
    c.Fail(std::string(role) + ": repeat/stride addressing reaches UB byte " + std::to_string(byte) +
           " outside its buffer " + AscendEmu::detail::Range(t.lo_, t.hi_ - t.lo_) + " (UB overflow)");
}

template <typename T, typename F>
inline void Binary0(const char* api, VecKind k, const LocalTensor<T>& dst, const LocalTensor<T>& a,
                    const LocalTensor<T>& b, Mask0 m, uint8_t repeat, const BinaryRepeatParams& p, F f) {
  CoreContext& c = Ctx();
  c.Begin(api);
  CheckUse(c, dst, Use::kVector, "dst");
  CheckUse(c, a, Use::kVector, "src0");
  CheckUse(c, b, Use::kVector, "src1");
  for (const uint32_t off : {dst.off_, a.off_, b.off_})
    if (off % ONE_BLK_SIZE) c.Fail("operand UB address not 32-byte aligned");
  CheckMask0<T>(c, m);
  RecVec(c, k, repeat);
  constexpr uint32_t lanes = ONE_REPEAT_BYTE_SIZE / sizeof(T);
  for (uint32_t r = 0; r < repeat; ++r)
    for (uint32_t l = 0; l < lanes; ++l) {
      if (!LaneOn<T>(c, m, l)) continue;
      const uint64_t id = LaneIndex<T>(r, l, p.dstBlkStride, p.dstRepStride);
      const uint64_t ia = LaneIndex<T>(r, l, p.src0BlkStride, p.src0RepStride);
      const uint64_t ib = LaneIndex<T>(r, l, p.src1BlkStride, p.src1RepStride);
      CheckLane0(c, dst, id, "dst");
      CheckLane0(c, a, ia, "src0");
      CheckLane0(c, b, ib, "src1");
      if (!c.Dry()) dst.Ptr()[id] = Arith<T>::Out(f(Arith<T>::In(a.Ptr()[ia]), Arith<T>::In(b.Ptr()[ib])));
    }
}

template <typename T, typename F>
inline void Unary0(const char* api, VecKind k, const LocalTensor<T>& dst, const LocalTensor<T>& a, Mask0 m,
                   uint8_t repeat, const UnaryRepeatParams& p, F f) {
  CoreContext& c = Ctx();
  c.Begin(api);
  CheckUse(c, dst, Use::kVector, "dst");
  CheckUse(c, a, Use::kVector, "src");
  if (dst.off_ % ONE_BLK_SIZE || a.off_ % ONE_BLK_SIZE) c.Fail("operand UB address not 32-byte aligned");
  CheckMask0<T>(c, m);
  RecVec(c, k, repeat);
  constexpr uint32_t lanes = ONE_REPEAT_BYTE_SIZE / sizeof(T);
  for (uint32_t r = 0; r < repeat; ++r)
    for (uint32_t l = 0; l < lanes; ++l) {
      if (!LaneOn<T>(c, m, l)) continue;
      const uint64_t id = LaneIndex<T>(r, l, p.dstBlkStride, p.dstRepStride);
      const uint64_t ia = LaneIndex<T>(r, l, p.srcBlkStride, p.srcRepStride);
      CheckLane0(c, dst, id, "dst");
      CheckLane0(c, a, ia, "src");
      if (!c.Dry()) dst.Ptr()[id] = Arith<T>::Out(f(Arith<T>::In(a.Ptr()[ia])));
    }
}

inline bool NanProp() { return Ctx().opts->nan_propagating_minmax; }

}  // namespace emu

// ---------------------------------------------------------------- vector API
// Level 2: (dst, src..., calCount). Level 0: (dst, src..., mask, repeatTimes, params)
// with mask either a count of leading lanes (uint64_t) or a bit mask (uint64_t[2]).

#define ASCEND_EMU_BINARY(NAME, KIND, EXPR)                                                                   \
  template <typename T>                                                                                      \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,         \
                   const int32_t& calCount) {                                                                \
    const bool np = emu::NanProp(); (void)np;                                                                 \
    emu::Binary2(#NAME, VecKind::KIND, dst, src0, src1, uint32_t(calCount),                                  \
                 [np](typename emu::Arith<T>::W a, typename emu::Arith<T>::W b) { return EXPR; });          \
  }                                                                                                          \
  template <typename T, bool isSetMask = true>                                                               \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,         \
                   uint64_t mask, const uint8_t repeatTimes, const BinaryRepeatParams& p) {                  \
    const bool np = emu::NanProp(); (void)np;                                                                 \
    emu::Binary0(#NAME, VecKind::KIND, dst, src0, src1, emu::Mask0{false, mask, 0}, repeatTimes, p,          \
                 [np](typename emu::Arith<T>::W a, typename emu::Arith<T>::W b) { return EXPR; });          \
  }                                                                                                          \
  template <typename T, bool isSetMask = true>                                                               \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,         \
                   const uint64_t mask[], const uint8_t repeatTimes, const BinaryRepeatParams& p) {          \
    const bool np = emu::NanProp(); (void)np;                                                                 \
    emu::Binary0(#NAME, VecKind::KIND, dst, src0, src1, emu::Mask0{true, mask[0], mask[1]}, repeatTimes, p,  \
                 [np](typename emu::Arith<T>::W a, typename emu::Arith<T>::W b) { return EXPR; });          \
  }

ASCEND_EMU_BINARY(Add, Add, a + b)
ASCEND_EMU_BINARY(Sub, Sub, a - b)
ASCEND_EMU_BINARY(Mul, Mul, a * b)
ASCEND_EMU_BINARY(Div, Div, a / b)
ASCEND_EMU_BINARY(Max, Max, emu::MaxOf(a, b, np))
ASCEND_EMU_BINARY(Min, Min, emu::MinOf(a, b, np))
#undef ASCEND_EMU_BINARY

#define ASCEND_EMU_UNARY(NAME, KIND, EXPR)                                                                    \
  template <typename T>                                                                                      \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& calCount) {          \
    emu::Unary2(#NAME, VecKind::KIND, dst, src, uint32_t(calCount),                                          \
                [](typename emu::Arith<T>::W a) { return EXPR; });                                           \
  }                                                                                                          \
  template <typename T, bool isSetMask = true>                                                               \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask,                      \
                   const uint8_t repeatTimes, const UnaryRepeatParams& p) {                                  \
    emu::Unary0(#NAME, VecKind::KIND, dst, src, emu::Mask0{false, mask, 0}, repeatTimes, p,                  \
                [](typename emu::Arith<T>::W a) { return EXPR; });                                           \
  }                                                                                                          \
  template <typename T, bool isSetMask = true>                                                               \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],              \
                   const uint8_t repeatTimes, const UnaryRepeatParams& p) {                                  \
    emu::Unary0(#NAME, VecKind::KIND, dst, src, emu::Mask0{true, mask[0], mask[1]}, repeatTimes, p,          \
                [](typename emu::Arith<T>::W a) { return EXPR; });                                           \
  }

ASCEND_EMU_UNARY(Exp, Exp, emu::Arith<T>::Exp(a))
ASCEND_EMU_UNARY(Ln, Ln, emu::Arith<T>::Ln(a))
ASCEND_EMU_UNARY(Sqrt, Sqrt, emu::Arith<T>::Sqrt(a))
ASCEND_EMU_UNARY(Abs, Abs, std::fabs(a))
ASCEND_EMU_UNARY(Reciprocal, Reciprocal, decltype(a)(1) / a)
ASCEND_EMU_UNARY(Relu, Relu, (a > 0 ? a : decltype(a)(0)))
#undef ASCEND_EMU_UNARY

#define ASCEND_EMU_SCALAR(NAME, KIND, EXPR)                                                                   \
  template <typename T>                                                                                      \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,               \
                   const int32_t& calCount) {                                                                \
    const auto s = emu::Arith<T>::In(scalarValue);                                                           \
    const bool np = emu::NanProp(); (void)np;                                                                 \
    emu::Unary2(#NAME, VecKind::KIND, dst, src, uint32_t(calCount),                                          \
                [s, np](typename emu::Arith<T>::W a) { return EXPR; });                                      \
  }                                                                                                          \
  template <typename T, bool isSetMask = true>                                                               \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask, \
                   const uint8_t repeatTimes, const UnaryRepeatParams& p) {                                  \
    const auto s = emu::Arith<T>::In(scalarValue);                                                           \
    const bool np = emu::NanProp(); (void)np;                                                                 \
    emu::Unary0(#NAME, VecKind::KIND, dst, src, emu::Mask0{false, mask, 0}, repeatTimes, p,                  \
                [s, np](typename emu::Arith<T>::W a) { return EXPR; });                                      \
  }                                                                                                          \
  template <typename T, bool isSetMask = true>                                                               \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,               \
                   const uint64_t mask[], const uint8_t repeatTimes, const UnaryRepeatParams& p) {           \
    const auto s = emu::Arith<T>::In(scalarValue);                                                           \
    const bool np = emu::NanProp(); (void)np;                                                                 \
    emu::Unary0(#NAME, VecKind::KIND, dst, src, emu::Mask0{true, mask[0], mask[1]}, repeatTimes, p,          \
                [s, np](typename emu::Arith<T>::W a) { return EXPR; });                                      \
  }

ASCEND_EMU_SCALAR(Adds, Adds, a + s)
ASCEND_EMU_SCALAR(Muls, Muls, a * s)
ASCEND_EMU_SCALAR(Maxs, Maxs, emu::MaxOf(a, s, np))
ASCEND_EMU_SCALAR(Mins, Mins, emu::MinOf(a, s, np))
#undef ASCEND_EMU_SCALAR

namespace emu {
template <typename T>
constexpr bool kDuplicateType = std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t> || std::is_same_v<T, float> ||
                                std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t> ||
                                std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>;
}  // namespace emu

template <typename T>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& calCount) {
  static_assert(emu::kDuplicateType<T>, "Duplicate on dav-c220 fills 16- and 32-bit elements only (no double)");
  CoreContext& c = Ctx();
  c.Begin("Duplicate");
  emu::CheckVecOperand(c, dst, uint32_t(calCount), "dst");
  emu::RecVec(c, VecKind::Duplicate, emu::Repeats(uint64_t(calCount) * sizeof(T)));
  if (c.Dry()) return;
  T* d = dst.Ptr();
  for (int32_t i = 0; i < calCount; ++i) d[i] = scalarValue;
}

template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask, const uint8_t repeatTimes,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride) {
  static_assert(emu::kDuplicateType<T>, "Duplicate on dav-c220 fills 16- and 32-bit elements only (no double)");
  CoreContext& c = Ctx();
  c.Begin("Duplicate");
  emu::CheckUse(c, dst, emu::Use::kVector, "dst");
  if (dst.off_ % ONE_BLK_SIZE) c.Fail("dst UB address not 32-byte aligned");
  const emu::Mask0 m{false, mask, 0};
  emu::CheckMask0<T>(c, m);
  emu::RecVec(c, VecKind::Duplicate, repeatTimes);
  constexpr uint32_t lanes = ONE_REPEAT_BYTE_SIZE / sizeof(T);
  for (uint32_t r = 0; r < repeatTimes; ++r)
    for (uint32_t l = 0; l < lanes; ++l) {
      if (!emu::LaneOn<T>(c, m, l)) continue;
      const uint64_t id = emu::LaneIndex<T>(r, l, dstBlockStride, dstRepeatStride);
      emu::CheckLane0(c, dst, id, "dst");
      if (!c.Dry()) dst.Ptr()[id] = scalarValue;
    }
}

// ---------------------------------------------------------------- Cast

namespace emu {

// Supported conversions and round modes of dav-c220 (Ascend 910B), as in
// CANN's kernel_operator_vec_vconv_impl.h for that core: bit i = RoundMode i.
constexpr uint32_t kAllModes = 0x7F;
constexpr uint32_t kNoneOnly = 1u << int(RoundMode::CAST_NONE);
constexpr uint32_t kDirected = (1u << int(RoundMode::CAST_RINT)) | (1u << int(RoundMode::CAST_FLOOR)) |
                               (1u << int(RoundMode::CAST_CEIL)) | (1u << int(RoundMode::CAST_ROUND)) |
                               (1u << int(RoundMode::CAST_TRUNC));

template <typename D, typename S>
constexpr uint32_t CastModes() {
  if constexpr (std::is_same_v<S, half> && std::is_same_v<D, float>) return kNoneOnly;
  else if constexpr (std::is_same_v<S, bfloat16_t> && std::is_same_v<D, float>) return kNoneOnly;
  else if constexpr (std::is_same_v<S, int8_t> && std::is_same_v<D, half>) return kNoneOnly;
  else if constexpr (std::is_same_v<S, uint8_t> && std::is_same_v<D, half>) return kNoneOnly;
  else if constexpr (std::is_same_v<S, int32_t> && std::is_same_v<D, float>) return kDirected | kNoneOnly;
  else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, half>) return kAllModes;
  else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, bfloat16_t>) return kDirected;
  else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, int32_t>) return kDirected;
  else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, float>) return kDirected;
  else if constexpr (std::is_same_v<S, half> && std::is_same_v<D, int32_t>) return kDirected;
  else if constexpr (std::is_same_v<S, half> && std::is_same_v<D, int8_t>) return kDirected | kNoneOnly;
  else if constexpr (std::is_same_v<S, half> && std::is_same_v<D, uint8_t>) return kDirected | kNoneOnly;
  else if constexpr (std::is_same_v<S, bfloat16_t> && std::is_same_v<D, int32_t>) return kDirected;
  else return 0;
}

inline AscendEmu::fp::Mode FpMode(RoundMode m) {
  using AscendEmu::fp::Mode;
  switch (m) {
    case RoundMode::CAST_FLOOR: return Mode::kFloor;
    case RoundMode::CAST_CEIL: return Mode::kCeil;
    case RoundMode::CAST_ROUND: return Mode::kRound;
    case RoundMode::CAST_TRUNC: return Mode::kTrunc;
    case RoundMode::CAST_ODD: return Mode::kOdd;
    default: return Mode::kRint;  // CAST_RINT, and CAST_NONE where the conversion is lossy
  }
}

template <typename S> inline double ToDouble(S v) {
  if constexpr (std::is_same_v<S, half>) return AscendEmu::fp::DecodeHalf(v.bits);
  else if constexpr (std::is_same_v<S, bfloat16_t>) return AscendEmu::fp::DecodeBF16(v.bits);
  else return double(v);
}

template <typename D>
inline D FromDouble(double v, RoundMode rm) {
  using namespace AscendEmu::fp;
  const Mode m = FpMode(rm);
  if constexpr (std::is_same_v<D, half>) return half::FromBits(EncodeHalf(RoundTo(v, kHalf, m)));
  else if constexpr (std::is_same_v<D, bfloat16_t>) return bfloat16_t::FromBits(EncodeBF16(RoundTo(v, kBF16, m)));
  else if constexpr (std::is_same_v<D, float>) return float(RoundTo(v, kF32, m));
  else return D(ToIntSat(v, m, int64_t(std::numeric_limits<D>::min()), int64_t(std::numeric_limits<D>::max())));
}

}  // namespace emu

// Cast with a round mode. Float->float rounds to an integral value. Float to
// integer conversions saturate (NaN gives 0): an assumption, see docs/atlas.md.
template <typename T1, typename T2>
inline void Cast(const LocalTensor<T1>& dst, const LocalTensor<T2>& src, const RoundMode& roundMode,
                 const uint32_t calCount) {
  CoreContext& c = Ctx();
  c.Begin("Cast");
  constexpr uint32_t modes = emu::CastModes<T1, T2>();
  if ((modes & (1u << int(roundMode))) == 0)
    c.Fail(std::string("Cast ") + emu::TypeName<T2>() + " -> " + emu::TypeName<T1>() + " with " +
           emu::ModeName(roundMode) + " is not supported on dav-c220 (Ascend 910B)");
  emu::CheckVecOperand(c, dst, calCount, "dst");
  emu::CheckVecOperand(c, src, calCount, "src");
  emu::CheckOverlap(c, dst.off_, uint64_t(calCount) * sizeof(T1), src.off_, uint64_t(calCount) * sizeof(T2), "src");
  if (sizeof(T1) != sizeof(T2) && dst.off_ == src.off_)
    c.Fail("Cast between types of different width must not be in place");
  emu::RecVec(c, VecKind::Cast, emu::Repeats(uint64_t(calCount) * std::max(sizeof(T1), sizeof(T2))));
  if (c.Dry()) return;
  T1* d = dst.Ptr();
  const T2* s = src.Ptr();
  const bool to_integral = std::is_same_v<T1, float> && std::is_same_v<T2, float>;
  for (uint32_t i = 0; i < calCount; ++i) {
    const double v = emu::ToDouble(s[i]);
    if (to_integral)
      d[i] = T1(std::isfinite(v) ? AscendEmu::fp::RoundToIntegral(v, emu::FpMode(roundMode)) : v);
    else
      d[i] = emu::FromDouble<T1>(v, roundMode);
  }
}

// ---------------------------------------------------------------- Compare / Select

namespace emu {
inline bool Cmp(double a, double b, CMPMODE m) {
  switch (m) {
    case CMPMODE::LT: return a < b;
    case CMPMODE::GT: return a > b;
    case CMPMODE::EQ: return a == b;
    case CMPMODE::LE: return a <= b;
    case CMPMODE::GE: return a >= b;
    default: return a != b;
  }
}

template <typename T, typename U>
inline void CompareCommon(CoreContext& c, const LocalTensor<U>& dst, uint32_t count, VecKind kind) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, int32_t>,
                "Compare: half, float or int32_t");
  constexpr uint32_t per_repeat = ONE_REPEAT_BYTE_SIZE / sizeof(T);
  if (count % per_repeat != 0)
    c.Fail("Compare count " + std::to_string(count) + " is not a multiple of " + std::to_string(per_repeat) +
           " (256 bytes): the device compares only whole repeats and drops the rest");
  CheckVecOperand(c, dst, 0, "dst");
  if (uint64_t(dst.size_) * sizeof(U) < count / 8)
    c.Fail("Compare dst mask holds " + std::to_string(uint64_t(dst.size_) * sizeof(U)) + " bytes, needs " +
           std::to_string(count / 8));
  const uint64_t rep = Repeats(uint64_t(count) * sizeof(T));
  RecVec(c, kind, rep, (rep + 251) / 252);
}
}  // namespace emu

template <typename T, typename U>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    uint32_t calCount) {
  CoreContext& c = Ctx();
  c.Begin("Compare");
  emu::CheckVecOperand(c, src0, calCount, "src0");
  emu::CheckVecOperand(c, src1, calCount, "src1");
  if constexpr (std::is_same_v<T, int32_t>)
    if (cmpMode != CMPMODE::EQ) c.Fail("Compare of int32_t supports only CMPMODE::EQ");
  emu::CompareCommon<T>(c, dst, calCount, VecKind::Compare);
  emu::CheckOverlap(c, dst.off_, calCount / 8, src0.off_, uint64_t(calCount) * sizeof(T), "src0");
  if (c.Dry()) return;
  uint8_t* m = reinterpret_cast<uint8_t*>(dst.Ptr());
  const T* a = src0.Ptr();
  const T* b = src1.Ptr();
  for (uint32_t i = 0; i < calCount; i += 8) {
    uint8_t byte = 0;
    for (uint32_t j = 0; j < 8; ++j)
      if (emu::Cmp(emu::ToDouble(a[i + j]), emu::ToDouble(b[i + j]), cmpMode)) byte |= uint8_t(1u << j);
    m[i / 8] = byte;
  }
}

template <typename T, typename U>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,
                          uint32_t calCount) {
  CoreContext& c = Ctx();
  c.Begin("CompareScalar");
  emu::CheckVecOperand(c, src0, calCount, "src0");
  if constexpr (std::is_same_v<T, int32_t>)
    if (cmpMode != CMPMODE::EQ) c.Fail("CompareScalar of int32_t supports only CMPMODE::EQ");
  emu::CompareCommon<T>(c, dst, calCount, VecKind::CompareScalar);
  emu::CheckOverlap(c, dst.off_, calCount / 8, src0.off_, uint64_t(calCount) * sizeof(T), "src0");
  if (c.Dry()) return;
  uint8_t* m = reinterpret_cast<uint8_t*>(dst.Ptr());
  const T* a = src0.Ptr();
  const double s = emu::ToDouble(src1Scalar);
  for (uint32_t i = 0; i < calCount; i += 8) {
    uint8_t byte = 0;
    for (uint32_t j = 0; j < 8; ++j)
      if (emu::Cmp(emu::ToDouble(a[i + j]), s, cmpMode)) byte |= uint8_t(1u << j);
    m[i / 8] = byte;
  }
}

namespace emu {
template <typename T, typename U>
inline void SelectCommon(CoreContext& c, const LocalTensor<T>& dst, const LocalTensor<U>& sel, uint32_t count) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, half>, "Select: half or float");
  CheckVecOperand(c, dst, count, "dst");
  CheckVecOperand(c, sel, 0, "selMask");
  if (uint64_t(sel.size_) * sizeof(U) * 8 < count)
    c.Fail("Select mask holds " + std::to_string(uint64_t(sel.size_) * sizeof(U) * 8) + " bits, needs " +
           std::to_string(count));
  RecVec(c, VecKind::Select, Repeats(uint64_t(count) * sizeof(T)));
}
}  // namespace emu

template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint32_t calCount) {
  CoreContext& c = Ctx();
  c.Begin("Select");
  if (selMode != SELMODE::VSEL_TENSOR_TENSOR_MODE)
    c.Fail("Select(tensor, tensor) in the emulator supports VSEL_TENSOR_TENSOR_MODE only");
  emu::CheckVecOperand(c, src0, calCount, "src0");
  emu::CheckVecOperand(c, src1, calCount, "src1");
  emu::SelectCommon(c, dst, selMask, calCount);
  emu::CheckOverlap(c, dst.off_, uint64_t(calCount) * sizeof(T), src0.off_, uint64_t(calCount) * sizeof(T), "src0");
  emu::CheckOverlap(c, dst.off_, uint64_t(calCount) * sizeof(T), src1.off_, uint64_t(calCount) * sizeof(T), "src1");
  if (c.Dry()) return;
  const uint8_t* m = reinterpret_cast<const uint8_t*>(selMask.Ptr());
  T* d = dst.Ptr();
  const T* a = src0.Ptr();
  const T* b = src1.Ptr();
  for (uint32_t i = 0; i < calCount; ++i) d[i] = ((m[i / 8] >> (i % 8)) & 1) ? a[i] : b[i];
}

template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, T src1,
                   SELMODE selMode, uint32_t calCount) {
  CoreContext& c = Ctx();
  c.Begin("Select");
  if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE)
    c.Fail("Select(tensor, scalar) needs VSEL_TENSOR_SCALAR_MODE");
  emu::CheckVecOperand(c, src0, calCount, "src0");
  emu::SelectCommon(c, dst, selMask, calCount);
  emu::CheckOverlap(c, dst.off_, uint64_t(calCount) * sizeof(T), src0.off_, uint64_t(calCount) * sizeof(T), "src0");
  if (c.Dry()) return;
  const uint8_t* m = reinterpret_cast<const uint8_t*>(selMask.Ptr());
  T* d = dst.Ptr();
  const T* a = src0.Ptr();
  for (uint32_t i = 0; i < calCount; ++i) d[i] = ((m[i / 8] >> (i % 8)) & 1) ? a[i] : src1;
}

// ---------------------------------------------------------------- data movement

namespace emu {
inline void RecCopy(CoreContext& c, bool in, uint64_t bytes) {
  if (in) {
    c.stats.gm_to_ub_bytes += bytes;
    ++c.stats.dma_in;
  } else {
    c.stats.ub_to_gm_bytes += bytes;
    ++c.stats.dma_out;
  }
  c.Rec(AscendEmu::TraceEvent::kCopy, in ? AscendEmu::Pipe::MTE2 : AscendEmu::Pipe::MTE3, uint32_t(bytes));
}

template <typename T>
inline void CheckUbSpan(const CoreContext& c, const LocalTensor<T>& t, uint64_t byte_off, uint64_t bytes, const char* role) {
  const uint64_t lo = t.off_ + byte_off;
  if (lo < t.off_ || lo + bytes > uint64_t(t.off_) + uint64_t(t.size_) * sizeof(T))
    c.Fail(std::string(role) + ": UB range " + AscendEmu::detail::Range(lo, bytes) + " exceeds the tensor " +
           AscendEmu::detail::Range(t.off_, uint64_t(t.size_) * sizeof(T)) + " (UB overflow)");
}
}  // namespace emu

// GM -> UB, whole 32-byte blocks.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t calCount) {
  CoreContext& c = Ctx();
  c.Begin("DataCopy(GM->UB)");
  emu::CheckUse(c, dst, emu::Use::kMte2Dst, "dst");
  const uint64_t bytes = uint64_t(calCount) * sizeof(T);
  if (bytes % ONE_BLK_SIZE)
    c.Fail("DataCopy moves " + std::to_string(bytes) + " bytes, not a whole number of 32-byte blocks (use DataCopyPad)");
  if (dst.off_ % ONE_BLK_SIZE) c.Fail("DataCopy UB address " + std::to_string(dst.off_) + " is not 32-byte aligned");
  emu::CheckUbSpan(c, dst, 0, bytes, "dst");
  src.CheckRange(c, 0, calCount, "DataCopy(GM->UB) src");
  emu::RecCopy(c, true, bytes);
  if (!c.Dry()) std::memcpy(dst.Ptr(), src.base_, bytes);
}

// UB -> GM, whole 32-byte blocks.
template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount) {
  CoreContext& c = Ctx();
  c.Begin("DataCopy(UB->GM)");
  emu::CheckUse(c, src, emu::Use::kMte3Src, "src");
  const uint64_t bytes = uint64_t(calCount) * sizeof(T);
  if (bytes % ONE_BLK_SIZE)
    c.Fail("DataCopy moves " + std::to_string(bytes) + " bytes, not a whole number of 32-byte blocks (use DataCopyPad)");
  if (src.off_ % ONE_BLK_SIZE) c.Fail("DataCopy UB address " + std::to_string(src.off_) + " is not 32-byte aligned");
  emu::CheckUbSpan(c, src, 0, bytes, "src");
  dst.CheckRange(c, 0, calCount, "DataCopy(UB->GM) dst");
  emu::RecCopy(c, false, bytes);
  if (!c.Dry()) std::memcpy(dst.base_, src.Ptr(), bytes);
}

// GM -> UB with DataCopyParams (lengths and strides in 32-byte blocks).
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p) {
  CoreContext& c = Ctx();
  c.Begin("DataCopy(GM->UB, params)");
  emu::CheckUse(c, dst, emu::Use::kMte2Dst, "dst");
  if (dst.off_ % ONE_BLK_SIZE) c.Fail("DataCopy UB address is not 32-byte aligned");
  if (p.blockCount == 0 || p.blockLen == 0) c.Fail("DataCopy with zero blockCount or blockLen");
  const uint64_t len = uint64_t(p.blockLen) * ONE_BLK_SIZE;
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    const uint64_t g = b * (len + uint64_t(p.srcStride) * ONE_BLK_SIZE);
    const uint64_t u = b * (len + uint64_t(p.dstStride) * ONE_BLK_SIZE);
    if (g % sizeof(T)) c.Fail("DataCopy GM offset not a multiple of the element size");
    emu::CheckUbSpan(c, dst, u, len, "dst");
    src.CheckRange(c, g / sizeof(T), len / sizeof(T), "DataCopy(GM->UB) src");
    if (!c.Dry()) std::memcpy(reinterpret_cast<uint8_t*>(dst.Ptr()) + u, reinterpret_cast<const uint8_t*>(src.base_) + g, len);
  }
  emu::RecCopy(c, true, len * p.blockCount);
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
  CoreContext& c = Ctx();
  c.Begin("DataCopy(UB->GM, params)");
  emu::CheckUse(c, src, emu::Use::kMte3Src, "src");
  if (src.off_ % ONE_BLK_SIZE) c.Fail("DataCopy UB address is not 32-byte aligned");
  if (p.blockCount == 0 || p.blockLen == 0) c.Fail("DataCopy with zero blockCount or blockLen");
  const uint64_t len = uint64_t(p.blockLen) * ONE_BLK_SIZE;
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    const uint64_t u = b * (len + uint64_t(p.srcStride) * ONE_BLK_SIZE);
    const uint64_t g = b * (len + uint64_t(p.dstStride) * ONE_BLK_SIZE);
    if (g % sizeof(T)) c.Fail("DataCopy GM offset not a multiple of the element size");
    emu::CheckUbSpan(c, src, u, len, "src");
    dst.CheckRange(c, g / sizeof(T), len / sizeof(T), "DataCopy(UB->GM) dst");
    if (!c.Dry()) std::memcpy(reinterpret_cast<uint8_t*>(dst.base_) + g, reinterpret_cast<const uint8_t*>(src.Ptr()) + u, len);
  }
  emu::RecCopy(c, false, len * p.blockCount);
}

// GM -> UB of any byte length per block; each block lands on a 32-byte
// boundary in UB (padded with paddingValue when isPad).
template <typename T, typename U = T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                        const DataCopyPadExtParams<U>& pad) {
  static_assert(std::is_same_v<T, U>, "DataCopyPad padding type");
  CoreContext& c = Ctx();
  c.Begin("DataCopyPad(GM->UB)");
  emu::CheckUse(c, dst, emu::Use::kMte2Dst, "dst");
  if (dst.off_ % ONE_BLK_SIZE) c.Fail("DataCopyPad UB address is not 32-byte aligned");
  if (p.blockLen % sizeof(T)) c.Fail("DataCopyPad blockLen must be a multiple of the element size");
  if (p.blockLen > 2097151) c.Fail("DataCopyPad blockLen beyond 21 bits");
  if (pad.isPad && pad.leftPadding) c.Fail("DataCopyPad leftPadding is not emulated");
  const uint64_t ub_block = emu::RoundUp(p.blockLen, ONE_BLK_SIZE);
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    const uint64_t g = b * (uint64_t(p.blockLen) + p.srcStride);
    const uint64_t u = b * (ub_block + uint64_t(p.dstStride) * ONE_BLK_SIZE);
    if (g % sizeof(T)) c.Fail("DataCopyPad GM offset not a multiple of the element size");
    emu::CheckUbSpan(c, dst, u, ub_block, "dst");
    src.CheckRange(c, g / sizeof(T), p.blockLen / sizeof(T), "DataCopyPad(GM->UB) src");
    if (c.Dry()) continue;
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.Ptr()) + u;
    std::memcpy(d, reinterpret_cast<const uint8_t*>(src.base_) + g, p.blockLen);
    if (pad.isPad)
      for (uint64_t k = p.blockLen; k + sizeof(T) <= ub_block; k += sizeof(T)) std::memcpy(d + k, &pad.paddingValue, sizeof(T));
  }
  emu::RecCopy(c, true, uint64_t(p.blockLen) * p.blockCount);
}

// UB -> GM of any byte length per block.
template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p) {
  CoreContext& c = Ctx();
  c.Begin("DataCopyPad(UB->GM)");
  emu::CheckUse(c, src, emu::Use::kMte3Src, "src");
  if (src.off_ % ONE_BLK_SIZE) c.Fail("DataCopyPad UB address is not 32-byte aligned");
  if (p.blockLen % sizeof(T)) c.Fail("DataCopyPad blockLen must be a multiple of the element size");
  const uint64_t ub_block = emu::RoundUp(p.blockLen, ONE_BLK_SIZE);
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    const uint64_t u = b * (ub_block + uint64_t(p.srcStride) * ONE_BLK_SIZE);
    const uint64_t g = b * (uint64_t(p.blockLen) + p.dstStride);
    if (g % sizeof(T)) c.Fail("DataCopyPad GM offset not a multiple of the element size");
    emu::CheckUbSpan(c, src, u, p.blockLen, "src");
    dst.CheckRange(c, g / sizeof(T), p.blockLen / sizeof(T), "DataCopyPad(UB->GM) dst");
    if (!c.Dry())
      std::memcpy(reinterpret_cast<uint8_t*>(dst.base_) + g, reinterpret_cast<const uint8_t*>(src.Ptr()) + u, p.blockLen);
  }
  emu::RecCopy(c, false, uint64_t(p.blockLen) * p.blockCount);
}

}  // namespace AscendC
