// AscendEmu: the CPU side of the AscendC emulator (launch, per-core context,
// breach reporting, counters, pipe trace). Plain C++, no AscendC types, so
// host code (runner, cost model, tests) can include it without pulling in the
// kernel-side API in kernel_operator.h.
//
// The idea follows CANN's CPU-twin debug mode (ICPU_RUN_KF): every core of a
// launch runs the kernel body on the CPU with its own Unified Buffer arena of
// the real capacity, in sequence or as threads.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace AscendEmu {

// The pipes of an AI Vector core that the model distinguishes.
enum class Pipe : uint8_t { S = 0, MTE2 = 1, V = 2, MTE3 = 3 };
inline constexpr int kNumPipes = 4;

// Vector instruction kinds counted per core (and priced by the cost model).
enum class VecKind : uint8_t {
  Add, Sub, Mul, Div, Max, Min,
  Adds, Muls, Maxs, Mins,
  Exp, Ln, Abs, Reciprocal, Sqrt, Relu,
  Duplicate, Cast, Compare, CompareScalar, Select, Copy,
  kCount
};
inline constexpr int kNumVecKinds = static_cast<int>(VecKind::kCount);

inline const char* VecKindName(VecKind k) {
  static const char* const kNames[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Adds", "Muls",
                                       "Maxs", "Mins", "Exp", "Ln", "Abs", "Reciprocal", "Sqrt",
                                       "Relu", "Duplicate", "Cast", "Compare", "CompareScalar",
                                       "Select", "Copy"};
  const int i = static_cast<int>(k);
  return i >= 0 && i < kNumVecKinds ? kNames[i] : "?";
}

// Per-core counters.
struct CoreStats {
  uint64_t gm_to_ub_bytes = 0;   // MTE2 payload (bytes actually read from GM)
  uint64_t ub_to_gm_bytes = 0;   // MTE3 payload
  uint64_t dma_in = 0;           // number of GM->UB copy instructions
  uint64_t dma_out = 0;          // number of UB->GM copy instructions
  uint64_t vec_instr[kNumVecKinds] = {};
  uint64_t vec_repeats[kNumVecKinds] = {};
  uint64_t scalar_gm_reads = 0;  // GlobalTensor::GetValue etc.
  uint64_t enque = 0, deque = 0;
  uint64_t ub_peak_bytes = 0;    // highest TPipe allocation
  uint64_t VecInstrTotal() const {
    uint64_t s = 0;
    for (uint64_t v : vec_instr) s += v;
    return s;
  }
  uint64_t VecRepeatsTotal() const {
    uint64_t s = 0;
    for (uint64_t v : vec_repeats) s += v;
    return s;
  }
};

// One entry of a core's pipe trace, replayed by the cost model.
struct TraceEvent {
  enum Type : uint8_t { kCopy = 0, kVec = 1, kSetFlag = 2, kWaitFlag = 3 };
  uint8_t type;
  uint8_t pipe;     // Pipe
  uint8_t kind;     // VecKind for kVec
  uint8_t pad = 0;
  uint32_t amount;  // bytes (kCopy), repeats (kVec), flag id (flags)
};

// A GM buffer the kernel may touch: every copy must fall inside one.
struct GmRegion {
  const void* base;
  uint64_t bytes;
  std::string name;
};

struct LaunchOptions {
  int threads = 1;              // 1: cores run one after the other; >1: that many at once
  bool dry_run = false;         // count and check only; GM and UB data are not touched
  bool record_trace = false;    // keep the pipe trace per core
  uint32_t ub_capacity = 196608 - 8192;  // bytes a TPipe may allocate per core
  std::vector<int> only_cores;  // run only these block indices (empty: all)
  bool nan_propagating_minmax = true;  // Max/Min/Maxs/Mins with a NaN operand give NaN
  std::vector<GmRegion> gm;     // registered GM buffers (empty: GM is not checked)
};

struct LaunchResult {
  uint32_t block_dim = 0;
  std::vector<int> cores;                     // block indices that ran
  std::vector<CoreStats> stats;               // parallel to `cores`
  std::vector<std::vector<TraceEvent>> trace; // parallel to `cores` (empty unless record_trace)
};

// A breach of the programming model: the emulator stops the launch and says
// which kernel, core and call. Never silent corruption.
class Breach : public std::runtime_error {
 public:
  explicit Breach(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {

// State of one queue buffer slot (TQue buffers; TBuf buffers are always usable).
enum SlotState : uint8_t { kFree = 0, kAllocated = 1, kQueued = 2, kDequeued = 3 };

struct Slot {
  uint32_t off;    // byte offset in the UB arena
  uint32_t len;    // bytes
  int32_t que;     // owning queue id, -1 for TBuf
  uint8_t state;
  uint8_t position;  // 0 VECIN, 1 VECOUT, 2 VECCALC
};

// Everything one emulated core owns.
struct CoreContext {
  const char* kernel = "?";
  int core = 0;
  uint32_t block_dim = 1;
  const LaunchOptions* opts = nullptr;
  std::vector<uint8_t> ub;    // the Unified Buffer arena (ub_capacity bytes)
  uint32_t ub_used = 0;       // bump allocator of the live TPipe
  bool pipe_alive = false;
  int next_que_id = 0;
  uint64_t call = 0;          // API calls made so far on this core
  const char* api = "";       // name of the call in progress
  CoreStats stats;
  std::vector<TraceEvent> trace;
  std::vector<Slot> slots;
  int task_type = -1;         // KernelMetaType from KERNEL_TASK_TYPE_DEFAULT (-1: none yet)

  [[noreturn]] void Fail(const std::string& detail) const {
    char head[256];
    std::snprintf(head, sizeof head, "ascend-emu breach: kernel '%s', core %d of %u, call #%llu %s: ",
                  kernel, core, block_dim, static_cast<unsigned long long>(call), api);
    throw Breach(std::string(head) + detail);
  }
  void Begin(const char* name) {
    ++call;
    api = name;
  }
  bool Dry() const { return opts->dry_run; }
  void Rec(TraceEvent::Type t, Pipe p, uint32_t amount, uint8_t kind = 0) {
    if (opts->record_trace) trace.push_back(TraceEvent{uint8_t(t), uint8_t(p), kind, 0, amount});
  }
};

inline thread_local CoreContext* g_ctx = nullptr;

inline CoreContext& Ctx() {
  if (!g_ctx) throw Breach("ascend-emu breach: AscendC API used outside an emulated launch");
  return *g_ctx;
}

// Formats a GM/UB range for messages.
inline std::string Range(uint64_t lo, uint64_t len) {
  char b[96];
  std::snprintf(b, sizeof b, "[0x%llx, 0x%llx)", static_cast<unsigned long long>(lo),
                static_cast<unsigned long long>(lo + len));
  return b;
}

// Checks a GM access against the registered regions.
inline void CheckGm(const CoreContext& c, const void* p, uint64_t bytes, const char* what) {
  if (c.opts->gm.empty() || bytes == 0) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  for (const GmRegion& r : c.opts->gm) {
    const uintptr_t b = reinterpret_cast<uintptr_t>(r.base);
    if (a >= b && a + bytes <= b + r.bytes) return;
  }
  c.Fail(std::string(what) + ": GM range " + Range(a, bytes) + " lies outside every registered GM buffer");
}

}  // namespace detail

// Runs `body` once per core with that core's context installed
// (GetBlockIdx() etc.). Throws Breach on the first breach of any core, and
// when a core's body ends without having declared the kernel's task type
// (KERNEL_TASK_TYPE_DEFAULT, checked in kernel_operator.h).
inline LaunchResult Launch(const char* kernel_name, uint32_t block_dim, const LaunchOptions& opts,
                           const std::function<void()>& body) {
  LaunchResult res;
  res.block_dim = block_dim;
  if (block_dim == 0) return res;
  if (opts.only_cores.empty()) {
    for (uint32_t i = 0; i < block_dim; ++i) res.cores.push_back(int(i));
  } else {
    for (int c : opts.only_cores) {
      if (c < 0 || uint32_t(c) >= block_dim)
        throw Breach("ascend-emu: only_cores names core " + std::to_string(c) + " outside block_dim " +
                     std::to_string(block_dim));
      res.cores.push_back(c);
    }
  }
  const size_t n = res.cores.size();
  res.stats.resize(n);
  res.trace.resize(n);
  std::vector<std::exception_ptr> errors(n);

  auto run_one = [&](size_t i) {
    detail::CoreContext ctx;
    ctx.kernel = kernel_name;
    ctx.core = res.cores[i];
    ctx.block_dim = block_dim;
    ctx.opts = &opts;
    // Poison: uninitialised UB reads give NaN-like garbage, not zeros.
    ctx.ub.assign(opts.ub_capacity, opts.dry_run ? 0 : 0xFF);
    detail::g_ctx = &ctx;
    try {
      body();
      if (ctx.task_type < 0) {
        ctx.Begin("end of kernel");
        ctx.Fail("the kernel declared no task type: a vector kernel says KERNEL_TASK_TYPE_DEFAULT("
                 "KERNEL_TYPE_AIV_ONLY) in its entry, as Ascend's own kernels do, so the launch starts "
                 "AI Vector cores only");
      }
      if (ctx.pipe_alive) ctx.pipe_alive = false;
    } catch (...) {
      errors[i] = std::current_exception();
    }
    detail::g_ctx = nullptr;
    res.stats[i] = ctx.stats;
    res.trace[i] = std::move(ctx.trace);
  };

  const int threads = std::max(1, opts.threads);
  if (threads == 1 || n == 1) {
    for (size_t i = 0; i < n; ++i) {
      run_one(i);
      if (errors[i]) std::rethrow_exception(errors[i]);
    }
  } else {
    size_t next = 0;
    std::mutex mu;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads && size_t(t) < n; ++t) {
      pool.emplace_back([&] {
        for (;;) {
          size_t i;
          {
            std::lock_guard<std::mutex> lock(mu);
            if (next >= n) return;
            i = next++;
          }
          run_one(i);
        }
      });
    }
    for (auto& th : pool) th.join();
    for (size_t i = 0; i < n; ++i)
      if (errors[i]) std::rethrow_exception(errors[i]);
  }
  return res;
}

}  // namespace AscendEmu
