// The emulator's enforcement and counting: every breach stops the launch with
// a message naming kernel, core and call; counters are exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernel_operator.h"

using namespace AscendC;
using AscendEmu::Breach;
using AscendEmu::LaunchOptions;

// Kernels compiled only into this test: the same body (64 floats of 7 into
// GM, one block per core) under each task type.
namespace {
__aicore__ inline void Fill7(GM_ADDR out) {
  TPipe pipe;
  TQue<QuePosition::VECOUT, 1> q;
  pipe.InitBuffer(q, 1, 256);
  LocalTensor<float> t = q.AllocTensor<float>();
  Duplicate(t, 7.0f, 64);
  q.EnQue(t);
  LocalTensor<float> d = q.DeQue<float>();
  GlobalTensor<float> g;
  g.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(out) + 64 * GetBlockIdx(), 64);
  DataCopy(g, d, 64);
  q.FreeTensor(d);
}
}  // namespace

extern "C" __global__ __aicore__ void emu_test_fill_aiv(GM_ADDR out) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  Fill7(out);
}
extern "C" __global__ __aicore__ void emu_test_fill_mix_aiv(GM_ADDR out) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  Fill7(out);
}
extern "C" __global__ __aicore__ void emu_test_fill_undeclared(GM_ADDR out) { Fill7(out); }
extern "C" __global__ __aicore__ void emu_test_fill_aic(GM_ADDR out) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
  Fill7(out);
}
extern "C" __global__ __aicore__ void emu_test_fill_mix_aic_1_2(GM_ADDR out) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  Fill7(out);
}
extern "C" __global__ __aicore__ void emu_test_fill_aicore(GM_ADDR out) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AICORE);  // Atlas inference (dav-m200) cores
  Fill7(out);
}
extern "C" __global__ __aicore__ void emu_test_fill_twice(GM_ADDR out) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  Fill7(out);
}
extern "C" __global__ __aicore__ void emu_test_trap_on_core1(GM_ADDR out) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  if (GetBlockIdx() == 1) {
    AscendC::Trap();
    return;
  }
  Fill7(out);
}

namespace {

// Launches `body` as the body of a vector kernel: it declares the task type
// the emulator requires of every kernel, then runs.
AscendEmu::LaunchResult LaunchVec(const char* name, uint32_t cores, const LaunchOptions& o,
                                  const std::function<void()>& body) {
  return AscendEmu::Launch(name, cores, o, [&body] {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    body();
  });
}

// Runs `body` as kernel `name` on `cores` cores and returns the breach text ("" if none).
std::string BreachOf(const char* name, uint32_t cores, const std::function<void()>& body, LaunchOptions o = {}) {
  try {
    LaunchVec(name, cores, o, body);
  } catch (const Breach& b) {
    return b.what();
  }
  return "";
}

TEST(Emulator, UbOverflowNamesKernelCoreAndCall) {
  const std::string msg = BreachOf("k_overflow", 4, [] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> q;
    TBuf<TPosition::VECCALC> b;
    if (GetBlockIdx() == 2) pipe.InitBuffer(b, 200 * 1024);  // beyond 184 KiB
    pipe.InitBuffer(q, 2, 1024);
  });
  EXPECT_NE(msg.find("kernel 'k_overflow', core 2 of 4, call #"), std::string::npos) << msg;
  EXPECT_NE(msg.find("UB overflow"), std::string::npos) << msg;
  EXPECT_NE(msg.find("InitBuffer"), std::string::npos) << msg;
}

TEST(Emulator, UbCapacityIsExact) {
  LaunchOptions o;
  o.ub_capacity = 4096;
  EXPECT_EQ(BreachOf("k", 1, [] { TPipe p; TBuf<> b; p.InitBuffer(b, 4096); }, o), "");
  EXPECT_NE(BreachOf("k", 1, [] { TPipe p; TBuf<> b, c; p.InitBuffer(b, 4064); p.InitBuffer(c, 33); }, o), "");
}

TEST(Emulator, MisalignedAndPartialCopies) {
  std::vector<float> gm(1024, 1.0f);
  LaunchOptions o;
  o.gm = {{gm.data(), gm.size() * 4, "gm"}};
  auto k = [&](int which) {
    return [&gm, which] {
      TPipe pipe;
      TQue<QuePosition::VECIN, 1> q;
      pipe.InitBuffer(q, 1, 4096);
      GlobalTensor<float> g;
      g.SetGlobalBuffer(gm.data(), gm.size());
      LocalTensor<float> t = q.AllocTensor<float>();
      if (which == 0) DataCopy(t[1], g, 8);   // UB address 4: misaligned
      if (which == 1) DataCopy(t, g, 5);      // 20 bytes: not whole blocks
      if (which == 2) DataCopy(t, g[1020], 8);  // beyond the GM buffer
      if (which == 3) {                       // DataCopyPad handles 20 bytes
        DataCopyExtParams p{1, 20, 0, 0, 0};
        DataCopyPad(t, g, p, DataCopyPadExtParams<float>{true, 0, 3, -7.0f});
      }
    };
  };
  EXPECT_NE(BreachOf("k", 1, k(0), o).find("not 32-byte aligned"), std::string::npos);
  EXPECT_NE(BreachOf("k", 1, k(1), o).find("not a whole number of 32-byte blocks"), std::string::npos);
  EXPECT_NE(BreachOf("k", 1, k(2), o), "");
  EXPECT_EQ(BreachOf("k", 1, k(3), o), "");
}

TEST(Emulator, QueueDisciplineBreaches) {
  auto run = [](int which) {
    return BreachOf("k_queue", 1, [which] {
      TPipe pipe;
      TQue<QuePosition::VECIN, 1> in;
      TQue<QuePosition::VECOUT, 1> out;
      pipe.InitBuffer(in, 2, 1024);
      pipe.InitBuffer(out, 1, 1024);
      if (which == 0) in.DeQue<float>();  // empty
      if (which == 1) {                   // depth 1: second EnQue
        auto a = in.AllocTensor<float>();
        auto b = in.AllocTensor<float>();
        in.EnQue(a);
        in.EnQue(b);
      }
      if (which == 2) {  // no free buffer left
        in.AllocTensor<float>();
        in.AllocTensor<float>();
        in.AllocTensor<float>();
      }
      if (which == 3) {  // vector read of a VECIN buffer before DeQue (race with MTE2)
        auto a = in.AllocTensor<float>();
        auto y = out.AllocTensor<float>();
        Adds(y, a, 1.0f, 64);
      }
      if (which == 4) {  // double free
        auto a = in.AllocTensor<float>();
        in.FreeTensor(a);
        in.FreeTensor(a);
      }
      if (which == 5) {  // FIFO order and the legal round trip
        auto a = in.AllocTensor<float>();
        in.EnQue(a);
        auto d = in.DeQue<float>();
        auto y = out.AllocTensor<float>();
        Adds(y, d, 1.0f, 64);
        out.EnQue(y);
        in.FreeTensor(d);
        auto z = out.DeQue<float>();
        out.FreeTensor(z);
      }
    });
  };
  EXPECT_NE(run(0).find("DeQue of an empty queue"), std::string::npos);
  EXPECT_NE(run(1).find("EnQue on a full queue"), std::string::npos);
  EXPECT_NE(run(2).find("in use"), std::string::npos);
  EXPECT_NE(run(3).find("missing EnQue/DeQue"), std::string::npos);
  EXPECT_NE(run(4).find("double free"), std::string::npos);
  EXPECT_EQ(run(5), "");
}

TEST(Emulator, VectorRulesBreaches) {
  auto run = [](int which) {
    return BreachOf("k_vec", 1, [which] {
      TPipe pipe;
      TBuf<TPosition::VECCALC> b;
      pipe.InitBuffer(b, 8192);
      LocalTensor<float> t = b.Get<float>();
      LocalTensor<uint8_t> m = t[1024].ReinterpretCast<uint8_t>();
      if (which == 0) Adds(t, t, 1.0f, 2048 + 1);                          // beyond the tensor
      if (which == 1) CompareScalar(m, t, 0.0f, CMPMODE::LT, 100);          // not whole repeats
      if (which == 2) Cast(t.ReinterpretCast<bfloat16_t>()[2048], t, RoundMode::CAST_NONE, 64);  // no NONE to bf16
      if (which == 3) Add(t[8], t, t, 64);                                  // partial overlap
      if (which == 4) CompareScalar(m, t, 0.0f, CMPMODE::LT, 128);          // fine
    });
  };
  EXPECT_NE(run(0).find("UB overflow"), std::string::npos);
  EXPECT_NE(run(1).find("not a multiple of 64"), std::string::npos);
  EXPECT_NE(run(2).find("not supported on dav-c220"), std::string::npos);
  EXPECT_NE(run(3).find("partially overlaps"), std::string::npos);
  EXPECT_EQ(run(4), "");
}

TEST(Emulator, CountsBytesInstructionsRepeats) {
  std::vector<float> a(1000), y(1000, 0.0f);
  for (int i = 0; i < 1000; ++i) a[i] = float(i);
  LaunchOptions o;
  o.gm = {{a.data(), 4000, "a"}, {y.data(), 4000, "y"}};
  o.record_trace = true;
  auto body = [&] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    TQue<QuePosition::VECOUT, 1> out;
    pipe.InitBuffer(in, 1, 4096);
    pipe.InitBuffer(out, 1, 4096);
    GlobalTensor<float> ga, gy;
    ga.SetGlobalBuffer(a.data(), 1000);
    gy.SetGlobalBuffer(y.data(), 1000);
    auto t = in.AllocTensor<float>();
    DataCopyPad(t, ga, DataCopyExtParams{1, 4000, 0, 0, 0}, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
    in.EnQue(t);
    auto d = in.DeQue<float>();
    auto r = out.AllocTensor<float>();
    Muls(r, d, 2.0f, 1000);
    Exp(r[992], r[992], 8);
    out.EnQue(r);
    in.FreeTensor(d);
    auto z = out.DeQue<float>();
    DataCopyPad(gy, z, DataCopyExtParams{1, 4000, 0, 0, 0});
    out.FreeTensor(z);
  };
  const auto res = LaunchVec("k_count", 1, o, body);
  const auto& s = res.stats[0];
  EXPECT_EQ(s.gm_to_ub_bytes, 4000u);
  EXPECT_EQ(s.ub_to_gm_bytes, 4000u);
  EXPECT_EQ(s.dma_in, 1u);
  EXPECT_EQ(s.dma_out, 1u);
  EXPECT_EQ(s.vec_instr[int(AscendEmu::VecKind::Muls)], 1u);
  EXPECT_EQ(s.vec_repeats[int(AscendEmu::VecKind::Muls)], 16u);  // ceil(4000 / 256)
  EXPECT_EQ(s.vec_repeats[int(AscendEmu::VecKind::Exp)], 1u);
  EXPECT_EQ(s.ub_peak_bytes, 8192u);
  EXPECT_FLOAT_EQ(y[10], 20.0f);
  EXPECT_FLOAT_EQ(y[995], std::exp(1990.0f));
  // trace: copy in, flags, 2 vector instructions, copy out
  int copies = 0, vecs = 0, flags = 0;
  for (const auto& e : res.trace[0]) {
    copies += e.type == AscendEmu::TraceEvent::kCopy;
    vecs += e.type == AscendEmu::TraceEvent::kVec;
    flags += e.type >= AscendEmu::TraceEvent::kSetFlag;
  }
  EXPECT_EQ(copies, 2);
  EXPECT_EQ(vecs, 2);
  EXPECT_EQ(flags, 8);
  // a dry run counts the same and touches nothing
  std::fill(y.begin(), y.end(), -1.0f);
  o.dry_run = true;
  const auto dry = LaunchVec("k_count", 1, o, body);
  EXPECT_EQ(dry.stats[0].gm_to_ub_bytes, 4000u);
  EXPECT_EQ(dry.stats[0].VecRepeatsTotal(), s.VecRepeatsTotal());
  EXPECT_EQ(y[10], -1.0f);
}

TEST(Emulator, Level0MaskAndStrides) {
  LaunchOptions o;
  LaunchVec("k_mask", 1, o, [] {
    TPipe pipe;
    TBuf<> b;
    pipe.InitBuffer(b, 4096);
    LocalTensor<float> t = b.Get<float>();
    Duplicate(t, 0.0f, 1024);
    LocalTensor<float> src = t[512];
    Duplicate(src, 3.0f, 256);
    // continuous mask: 10 lanes, 2 repeats, dst repeat stride 16 blocks
    Adds(t, src, 1.0f, uint64_t(10), uint8_t(2), UnaryRepeatParams(1, 1, 16, 8));
    EXPECT_EQ(t.GetValue(0), 4.0f);
    EXPECT_EQ(t.GetValue(9), 4.0f);
    EXPECT_EQ(t.GetValue(10), 0.0f);
    EXPECT_EQ(t.GetValue(128), 4.0f);  // repeat 1 at 16 blocks * 8 floats
    EXPECT_EQ(t.GetValue(64), 0.0f);
    // bit mask on half: lanes 0 and 100 only
    LocalTensor<half> h = t.ReinterpretCast<half>();
    Duplicate(h, half(0.0f), 128);
    const uint64_t mask[2] = {1ull, 1ull << 36};
    Duplicate(h[256], half(2.0f), 128);
    Muls(h, h[256], half(1.5f), mask, uint8_t(1), UnaryRepeatParams());
    EXPECT_EQ(float(h.GetValue(0)), 3.0f);
    EXPECT_EQ(float(h.GetValue(1)), 0.0f);
    EXPECT_EQ(float(h.GetValue(100)), 3.0f);
  });
  // a stride that leaves the buffer is a breach
  const std::string msg = BreachOf("k_mask", 1, [] {
    TPipe pipe;
    TBuf<> b;
    pipe.InitBuffer(b, 1024);
    LocalTensor<float> t = b.Get<float>();
    Adds(t, t, 1.0f, uint64_t(64), uint8_t(3), UnaryRepeatParams(1, 1, 8, 8));  // 3 x 256 B = 768 ok
    Adds(t, t, 1.0f, uint64_t(64), uint8_t(5), UnaryRepeatParams(1, 1, 8, 8));  // 1280 B > 1024
  });
  EXPECT_NE(msg.find("outside its buffer"), std::string::npos) << msg;
}

TEST(Emulator, ThreadsAndSequenceAgree) {
  std::vector<float> out(8 * 64, 0.0f);
  auto body = [&] {
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 256);
    auto t = q.AllocTensor<float>();
    Duplicate(t, float(GetBlockIdx()), 64);
    q.EnQue(t);
    auto d = q.DeQue<float>();
    GlobalTensor<float> g;
    g.SetGlobalBuffer(out.data() + 64 * GetBlockIdx(), 64);
    DataCopy(g, d, 64);
    q.FreeTensor(d);
  };
  LaunchOptions seq, par;
  par.threads = 4;
  const auto a = LaunchVec("k", 8, seq, body);
  const auto snapshot = out;
  std::fill(out.begin(), out.end(), 0.0f);
  const auto b = LaunchVec("k", 8, par, body);
  EXPECT_EQ(out, snapshot);
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(out[64 * c + 5], float(c));
    EXPECT_EQ(a.stats[c].ub_to_gm_bytes, b.stats[c].ub_to_gm_bytes);
  }
  // a breach in one thread stops the launch with that core's message
  par.only_cores = {5};
  const std::string msg = BreachOf("k_thr", 8, [] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    q.DeQue<float>();
  }, par);
  EXPECT_NE(msg.find("core 5 of 8"), std::string::npos) << msg;
}

TEST(Emulator, SelectAndCompareSemantics) {
  LaunchVec("k_sel", 1, {}, [] {
    TPipe pipe;
    TBuf<> b;
    pipe.InitBuffer(b, 4096);
    LocalTensor<float> x = b.Get<float>(64);
    LocalTensor<float> y = b.Get<float>()[64];
    LocalTensor<uint8_t> m = b.Get<float>()[256].ReinterpretCast<uint8_t>();
    for (int i = 0; i < 64; ++i) x.SetValue(i, float(i) - 10.0f);
    x.SetValue(3, std::numeric_limits<float>::quiet_NaN());
    CompareScalar(m, x, 0.0f, CMPMODE::GE, 64);
    Select(y, m, x, -1.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, 64);
    EXPECT_EQ(y.GetValue(0), -1.0f);   // -10 < 0
    EXPECT_EQ(y.GetValue(3), -1.0f);   // NaN compares false
    EXPECT_EQ(y.GetValue(10), 0.0f);
    EXPECT_EQ(y.GetValue(63), 53.0f);
    Compare(m, x, x, CMPMODE::EQ, 64);
    EXPECT_EQ(m.GetValue(0) & 0x08, 0);  // lane 3 (NaN) is not equal to itself
  });
}

// Launches `kernel` on 2 cores over 128 floats of -1 and returns the breach
// text ("" if none); *out receives the GM afterwards.
std::string RunFill(void (*kernel)(GM_ADDR), std::vector<float>* out) {
  out->assign(128, -1.0f);
  LaunchOptions o;
  o.gm = {{out->data(), out->size() * sizeof(float), "out"}};
  uint8_t* p = reinterpret_cast<uint8_t*>(out->data());
  try {
    AscendEmu::Launch("k_fill", 2, o, [&] { kernel(p); });
  } catch (const Breach& b) {
    return b.what();
  }
  return "";
}

bool All(const std::vector<float>& v, float x) {
  return std::all_of(v.begin(), v.end(), [x](float e) { return e == x; });
}

TEST(Emulator, VectorTaskTypesRun) {
  std::vector<float> out;
  EXPECT_EQ(RunFill(emu_test_fill_aiv, &out), "");
  EXPECT_TRUE(All(out, 7.0f));
  EXPECT_EQ(RunFill(emu_test_fill_mix_aiv, &out), "");
  EXPECT_TRUE(All(out, 7.0f));
}

TEST(Emulator, KernelWithoutTaskTypeIsRefused) {
  std::vector<float> out;
  const std::string msg = RunFill(emu_test_fill_undeclared, &out);
  EXPECT_NE(msg.find("kernel 'k_fill', core 0 of 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("declared no task type"), std::string::npos) << msg;
  EXPECT_NE(msg.find("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY)"), std::string::npos) << msg;
}

TEST(Emulator, CubeAndForeignTaskTypesAreRefusedBeforeAnyWork) {
  std::vector<float> out;
  std::string msg = RunFill(emu_test_fill_aic, &out);
  EXPECT_NE(msg.find("KERNEL_TYPE_AIC_ONLY starts cube (AIC) cores"), std::string::npos) << msg;
  EXPECT_NE(msg.find("call #1 KERNEL_TASK_TYPE_DEFAULT"), std::string::npos) << msg;
  EXPECT_TRUE(All(out, -1.0f)) << "GM written by a refused kernel";
  msg = RunFill(emu_test_fill_mix_aic_1_2, &out);
  EXPECT_NE(msg.find("KERNEL_TYPE_MIX_AIC_1_2 starts cube (AIC) cores"), std::string::npos) << msg;
  EXPECT_TRUE(All(out, -1.0f));
  msg = RunFill(emu_test_fill_aicore, &out);
  EXPECT_NE(msg.find("KERNEL_TYPE_AICORE is not a task type of dav-c220"), std::string::npos) << msg;
  EXPECT_TRUE(All(out, -1.0f));
  msg = RunFill(emu_test_fill_twice, &out);
  EXPECT_NE(msg.find("task type declared twice (KERNEL_TYPE_AIV_ONLY, then KERNEL_TYPE_MIX_AIV_1_0)"),
            std::string::npos) << msg;
  EXPECT_TRUE(All(out, -1.0f));
}

TEST(Emulator, TrapStopsTheLaunchWithABreach) {
  std::vector<float> out;
  const std::string msg = RunFill(emu_test_trap_on_core1, &out);
  EXPECT_NE(msg.find("core 1 of 2, call #2 Trap: AscendC::Trap() stopped the kernel"), std::string::npos) << msg;
  EXPECT_TRUE(std::all_of(out.begin() + 64, out.end(), [](float e) { return e == -1.0f; }))
      << "the trapped core wrote its block";
  // the reason of the emulator's trap (ATLAS_TRAP) reaches the host
  const std::string why = BreachOf("k_why", 1, [] { AscendC::emu::Trap("bufferNum must be 1 or 2"); });
  EXPECT_NE(why.find("AscendC::Trap(): bufferNum must be 1 or 2"), std::string::npos) << why;
}

}  // namespace
