// PyTorch's CPU kernels (libtorch / ATen) on our buffers, wrapped without a
// copy (at::from_blob; on the benchmark views with their sizes and strides). Where ATen has a structured out= kernel we write into
// the caller's `out` buffer (gelu, elu, softshrink, logit); hardswish_backward
// has only the functional form in PyTorch 1.13 (its out= overload computes a
// temporary and copies it), so that peer allocates its result per call as
// PyTorch's autograd does. On views the result must land in the out view (a
// functional result takes the inputs' layout: on a transposed view that is
// another task, all three tensors in one memory order), so there hardswish
// goes through the out= overload, temporary and copy included. To time the kernel and not glibc's mmap/munmap and
// page faults of a fresh 64 MB block, the peer installs a small caching CPU
// allocator (freed blocks are reused by size): PyTorch's best case.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "peers/peer.h"
#include "peers/peers_internal.h"
#include "reference/reference.h"

namespace actgrad::peers {
namespace {

bool ScalarTypeOf(DType dt, at::ScalarType* st) {
  switch (dt) {
    case DType::kF32: *st = at::kFloat; return true;
    case DType::kF16: *st = at::kHalf; return true;
    case DType::kBF16: *st = at::kBFloat16; return true;
    default: return false;
  }
}

// One call of the op; `out` is written (or, for hardswish without
// hardswish_out, replaced).
void Call(Op op, const at::Tensor& g, const at::Tensor& x, at::Tensor& out, const OpParams& p,
          bool hardswish_out = false) {
  switch (op) {
    case Op::kSeluBwd:
      at::elu_backward_out(out, g, ref::kSeluAlpha, ref::kSeluScale, 1.0, /*is_result=*/true, x);
      return;
    case Op::kHardswishBwd:
      if (hardswish_out)
        at::hardswish_backward_out(out, g, x);
      else
        out = at::hardswish_backward(g, x);
      return;
    case Op::kGeluBwd:
      at::gelu_backward_out(out, g, x, p.gelu_approx == GeluApprox::kTanh ? "tanh" : "none");
      return;
    case Op::kSoftshrinkBwd:
      at::softshrink_backward_out(out, g, x, static_cast<double>(p.lambd));
      return;
    case Op::kLogitGrad: {
      c10::optional<double> eps;
      if (p.eps >= 0) eps = static_cast<double>(p.eps);
      at::logit_backward_out(out, g, x, eps);
      return;
    }
  }
}

// Reuses freed blocks of the same size; never returns memory to the system.
// The deleter context is the data pointer itself (raw_allocate requires it).
class CachingCpuAllocator final : public c10::Allocator {
 public:
  static CachingCpuAllocator& Get() {
    static CachingCpuAllocator* a = new CachingCpuAllocator();  // never destroyed
    return *a;
  }
  // PyTorch 2.x: allocate is non-const and copy_data is pure virtual.
#if TORCH_VERSION_MAJOR >= 2
  c10::DataPtr allocate(size_t n) override {
#else
  c10::DataPtr allocate(size_t n) const override {
#endif
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(n);
      if (it != free_.end()) {
        p = it->second;
        free_.erase(it);
      }
    }
    if (p == nullptr) p = c10::alloc_cpu(n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      live_[p] = n;
    }
    return {p, p, &Release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &Release; }
#if TORCH_VERSION_MAJOR >= 2
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }
#endif

 private:
  static void Release(void* p) {
    if (p == nullptr) return;
    CachingCpuAllocator& a = Get();
    std::lock_guard<std::mutex> lock(a.mu_);
    auto it = a.live_.find(p);
    if (it == a.live_.end()) return;  // not ours
    a.free_.emplace(it->second, p);
    a.live_.erase(it);
  }
  mutable std::mutex mu_;
  mutable std::multimap<size_t, void*> free_;
  mutable std::unordered_map<void*, size_t> live_;
};

class TorchPeer final : public Peer {
 public:
  std::string Name() const override { return "torch"; }

  // Probed once per (op, dtype): PyTorch 1.13 lacks some reduced-precision
  // CPU kernels ("not implemented for 'Half'").
  bool Supports(Op op, DType dtype, const OpParams& p) const override {
    at::ScalarType st;
    if (!ScalarTypeOf(dtype, &st)) return false;
    const int key = static_cast<int>(op) * 16 + static_cast<int>(dtype) * 2 +
                    (p.gelu_approx == GeluApprox::kTanh ? 1 : 0);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = probed_.find(key);
    if (it != probed_.end()) return it->second;
    bool ok = true;
    try {
      auto opts = at::TensorOptions().dtype(st);
      at::Tensor g = at::ones({64}, opts);
      at::Tensor x = at::rand({64}, opts);
      at::Tensor out = at::empty({64}, opts);
      Call(op, g, x, out, p);
    } catch (const std::exception& e) {
      if (std::getenv("ACTGRAD_BENCH_VERBOSE"))
        std::fprintf(stderr, "torch peer: %s %s unsupported: %s\n", std::string(OpName(op)).c_str(),
                     std::string(DTypeName(dtype)).c_str(), e.what());
      ok = false;
    }
    probed_[key] = ok;
    return ok;
  }

  std::function<void()> Prepare(Op op, DType dtype, size_t n, const void* g, const void* x, void* out,
                                const OpParams& p, int threads) override {
    if (!Supports(op, dtype, p)) return {};
    at::ScalarType st;
    ScalarTypeOf(dtype, &st);
    const int t = threads < 1 ? 1 : threads;
    at::set_num_threads(t);
    const auto opts = at::TensorOptions().dtype(st);
    const int64_t len = static_cast<int64_t>(n);
    at::Tensor tg = at::from_blob(const_cast<void*>(g), {len}, opts);
    at::Tensor tx = at::from_blob(const_cast<void*>(x), {len}, opts);
    at::Tensor to = at::from_blob(out, {len}, opts);
    return [op, tg, tx, to, p, t]() mutable {
      // Another peer (oneDNN) may have changed this thread's OpenMP default.
      if (at::get_num_threads() != t) at::set_num_threads(t);
      at::Tensor o = to;
      Call(op, tg, tx, o, p);
    };
  }

  // at::from_blob with sizes and strides: ATen's TensorIterator takes the
  // views as they are (its own strided loops, its own broadcasting of the
  // [rows, 1] self in the binary out= kernels of GELU and Softshrink).
  bool HasViews() const override { return true; }
  std::function<void()> PrepareViews(Op op, DType dtype, const OperandViews& v, const void* g, const void* x,
                                     void* out, const OpParams& p, int threads, bool copy_result) override {
    if (!Supports(op, dtype, p)) return {};
    at::ScalarType st;
    ScalarTypeOf(dtype, &st);
    const int t = threads < 1 ? 1 : threads;
    at::set_num_threads(t);
    const auto opts = at::TensorOptions().dtype(st);
    try {
      at::Tensor tg = at::from_blob(const_cast<void*>(g), v.g.dims, v.g.strides, opts);
      at::Tensor tx = at::from_blob(const_cast<void*>(x), v.x.dims, v.x.strides, opts);
      // A broadcast self ([rows, 1] against [rows, 64]) as a stride-0
      // expanded view of the same storage: ATen's GELU backward takes the
      // oneDNN (ideep) path for float and bf16, which requires self's shape
      // to be grad's (a [rows, 1] self fails there with "could not create a
      // primitive descriptor for a reorder primitive"); Softshrink's
      // TensorIterator would broadcast it either way.
      if (v.x.dims != v.g.dims) tx = tx.expand(v.g.dims);
      at::Tensor to = at::from_blob(out, v.out.dims, v.out.strides, opts);
      auto fn = [op, tg, tx, to, p, t, copy_result]() mutable {
        if (at::get_num_threads() != t) at::set_num_threads(t);
        at::Tensor o = to;
        Call(op, tg, tx, o, p, /*hardswish_out=*/true);
        if (copy_result && !o.is_same(to)) to.copy_(o);
      };
      fn();  // ATen rejects what it cannot do here, not inside a timed loop
      return fn;
    } catch (const std::exception& e) {
      if (std::getenv("ACTGRAD_BENCH_VERBOSE"))
        std::fprintf(stderr, "torch peer: %s %s on views: %s\n", std::string(OpName(op)).c_str(),
                     std::string(DTypeName(dtype)).c_str(), e.what());
      return {};
    }
  }

  std::function<void()> PrepareViewCopy(DType dtype, const StridedView& src, const void* src_data, void* dst,
                                        int threads) override {
    at::ScalarType st;
    if (!ScalarTypeOf(dtype, &st)) return {};
    const int t = threads < 1 ? 1 : threads;
    at::set_num_threads(t);
    const auto opts = at::TensorOptions().dtype(st);
    try {
      at::Tensor from = at::from_blob(const_cast<void*>(src_data), src.dims, src.strides, opts);
      at::Tensor to = at::from_blob(dst, src.dims, RowMajorStrides(src.dims), opts);
      auto fn = [from, to, t]() mutable {
        if (at::get_num_threads() != t) at::set_num_threads(t);
        to.copy_(from);
      };
      fn();
      return fn;
    } catch (const std::exception&) {
      return {};
    }
  }

 private:
  mutable std::mutex mu_;
  mutable std::map<int, bool> probed_;
};

}  // namespace

std::unique_ptr<Peer> MakeTorchPeer() {
  static const bool installed = [] {
    c10::SetCPUAllocator(&CachingCpuAllocator::Get(), /*priority=*/100);
    return true;
  }();
  (void)installed;
  return std::make_unique<TorchPeer>();
}

std::string TorchVersion() {
#ifdef TORCH_VERSION
  return TORCH_VERSION;
#else
  return "libtorch";
#endif
}

}  // namespace actgrad::peers
