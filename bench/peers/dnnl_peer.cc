// oneDNN's eltwise backward on our buffers (user-pointer memory objects, no
// copy): gelu_erf, gelu_tanh and hardswish (alpha = 1/6, beta = 1/2: PyTorch's
// and Ascend's definition). oneDNN has no SELU (its elu_use_dst computes g, not
// g*scale, for y > 0), no softshrink and no logit: those ops have no oneDNN peer.
// oneDNN 3.x (PyPI) or 2.x (Debian), by DNNL_VERSION_MAJOR.
// No views (PrepareViews stays the default: unsupported): eltwise backward
// takes one memory descriptor for diff_dst and diff_src, so a strided or
// transposed gradient with a contiguous result needs a reorder, and it does
// not broadcast.
#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <unordered_map>
#include <mutex>
#include <string>

#include "peers/peer.h"
#include "peers/peers_internal.h"
#if __has_include(<oneapi/dnnl/dnnl.hpp>)
#include <oneapi/dnnl/dnnl.hpp>
#else
#include <dnnl.hpp>
#endif

namespace actgrad::peers {
namespace {

bool DataTypeOf(DType dt, dnnl::memory::data_type* out) {
  switch (dt) {
    case DType::kF32: *out = dnnl::memory::data_type::f32; return true;
    case DType::kF16: *out = dnnl::memory::data_type::f16; return true;
    case DType::kBF16: *out = dnnl::memory::data_type::bf16; return true;
    default: return false;
  }
}

struct Alg {
  dnnl::algorithm alg;
  float alpha = 0.f, beta = 0.f;
};

// The CPUs this process may run on.
int AffinityCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

// oneDNN's CPU threading: OpenMP (Debian's build) follows omp_set_num_threads;
// TBB and SYCL (PyPI's) size their pool from the process's CPU affinity at
// start-up, and changing it per call (tbb::global_control) costs tens of
// microseconds and leaves the pool slower after.
bool ThreadsFollowOpenMp() { return dnnl_version()->cpu_runtime == DNNL_RUNTIME_OMP; }

const char* RuntimeName(unsigned r) {
  switch (r) {
    case DNNL_RUNTIME_OMP: return "omp";
    case DNNL_RUNTIME_TBB: return "tbb";
    case DNNL_RUNTIME_SEQ: return "seq";
    case DNNL_RUNTIME_THREADPOOL: return "threadpool";
#ifdef DNNL_RUNTIME_SYCL
    case DNNL_RUNTIME_SYCL: return "sycl";
#endif
    default: return "other";
  }
}

// PyPI's build runs its CPU engine as a SYCL CPU device through Intel's
// OpenCL CPU runtime, which the OpenCL loader finds through
// OCL_ICD_FILENAMES. Set before the engine is made; a user's value wins.
dnnl::engine MakeCpuEngine() {
#ifdef ACTGRAD_DNNL_OPENCL_CPU_RUNTIME
  setenv("OCL_ICD_FILENAMES", ACTGRAD_DNNL_OPENCL_CPU_RUNTIME, /*overwrite=*/0);
#endif
  return dnnl::engine(dnnl::engine::kind::cpu, 0);
}

bool AlgOf(Op op, const OpParams& p, Alg* a) {
  switch (op) {
    case Op::kGeluBwd:
      a->alg = p.gelu_approx == GeluApprox::kTanh ? dnnl::algorithm::eltwise_gelu_tanh
                                                  : dnnl::algorithm::eltwise_gelu_erf;
      return true;
    case Op::kHardswishBwd:
      a->alg = dnnl::algorithm::eltwise_hardswish;  // oneDNN 2.6 ignores alpha and beta
      a->alpha = 1.f / 6.f;
      a->beta = 0.5f;
      return true;
    default:
      return false;
  }
}

class DnnlPeer final : public Peer {
 public:
  DnnlPeer() : eng_(MakeCpuEngine()), stream_(eng_) {}

  std::string Name() const override { return "dnnl"; }

  bool RunsWithThreads(int threads) const override {
    return ThreadsFollowOpenMp() || threads == AffinityCpus();
  }

  bool Supports(Op op, DType dtype, const OpParams& p) const override {
    dnnl::memory::data_type dt;
    Alg a;
    if (!DataTypeOf(dtype, &dt) || !AlgOf(op, p, &a)) return false;
    const int key = static_cast<int>(op) * 16 + static_cast<int>(dtype) * 2 +
                    (p.gelu_approx == GeluApprox::kTanh ? 1 : 0);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = probed_.find(key);
    if (it != probed_.end()) return it->second;
    bool ok = true;
    try {
      (void)MakePd(dt, a, 64);
    } catch (const dnnl::error&) {
      ok = false;  // e.g. f16 eltwise backward on CPU in oneDNN 2.6
    }
    probed_[key] = ok;
    return ok;
  }

  std::function<void()> Prepare(Op op, DType dtype, size_t n, const void* g, const void* x, void* out,
                                const OpParams& p, int threads) override {
    if (!Supports(op, dtype, p)) return {};
    dnnl::memory::data_type dt;
    Alg a;
    DataTypeOf(dtype, &dt);
    AlgOf(op, p, &a);
    try {
      auto pd = MakePd(dt, a, n);
      auto prim = std::make_shared<dnnl::eltwise_backward>(pd);
      const dnnl::memory::desc md = pd.diff_src_desc();
      dnnl::memory mg(md, eng_, const_cast<void*>(g));
      dnnl::memory mx(md, eng_, const_cast<void*>(x));
      dnnl::memory mo(md, eng_, out);
      auto args = std::make_shared<std::unordered_map<int, dnnl::memory>>();
      (*args)[DNNL_ARG_SRC] = mx;
      (*args)[DNNL_ARG_DIFF_DST] = mg;
      (*args)[DNNL_ARG_DIFF_SRC] = mo;
      const int t = threads < 1 ? 1 : threads;
      dnnl::stream* s = &stream_;
      return [prim, args, t, s]() {
        // oneDNN's OpenMP runtime uses omp_get_max_threads() of the caller.
        if (ThreadsFollowOpenMp()) omp_set_num_threads(t);
        prim->execute(*s, *args);
        s->wait();
      };
    } catch (const dnnl::error&) {
      return {};
    }
  }

  // oneDNN's reorder between two memory descriptors of the same dims, the
  // source with the view's strides (its JIT transpose kernels, jit:uni).
  std::function<void()> PrepareViewCopy(DType dtype, const StridedView& src, const void* src_data, void* dst,
                                        int threads) override {
    dnnl::memory::data_type dt;
    if (!DataTypeOf(dtype, &dt)) return {};
    try {
      const dnnl::memory::dims dims(src.dims.begin(), src.dims.end());
      const dnnl::memory::desc from(dims, dt, dnnl::memory::dims(src.strides.begin(), src.strides.end()));
      const std::vector<int64_t> rm = RowMajorStrides(src.dims);
      const dnnl::memory::desc to(dims, dt, dnnl::memory::dims(rm.begin(), rm.end()));
      dnnl::memory mf(from, eng_, const_cast<void*>(src_data)), mt(to, eng_, dst);
      auto prim = std::make_shared<dnnl::reorder>(mf, mt);
      const int t = threads < 1 ? 1 : threads;
      dnnl::stream* s = &stream_;
      return [prim, mf, mt, t, s]() mutable {
        if (ThreadsFollowOpenMp()) omp_set_num_threads(t);
        prim->execute(*s, mf, mt);
        s->wait();
      };
    } catch (const dnnl::error&) {
      return {};
    }
  }

 private:
  dnnl::eltwise_backward::primitive_desc MakePd(dnnl::memory::data_type dt, const Alg& a, size_t n) const {
    const dnnl::memory::desc md({static_cast<dnnl::memory::dim>(n)}, dt, dnnl::memory::format_tag::a);
#if DNNL_VERSION_MAJOR >= 3
    dnnl::eltwise_forward::primitive_desc fwd_pd(eng_, dnnl::prop_kind::forward_training, a.alg, md, md, a.alpha,
                                                 a.beta);
    return dnnl::eltwise_backward::primitive_desc(eng_, a.alg, md, md, md, a.alpha, a.beta, fwd_pd);
#else
    dnnl::eltwise_forward::desc fwd(dnnl::prop_kind::forward_training, a.alg, md, a.alpha, a.beta);
    dnnl::eltwise_forward::primitive_desc fwd_pd(fwd, eng_);
    dnnl::eltwise_backward::desc bwd(a.alg, md, md, a.alpha, a.beta);
    return dnnl::eltwise_backward::primitive_desc(bwd, eng_, fwd_pd);
#endif
  }

  dnnl::engine eng_;
  dnnl::stream stream_;
  mutable std::mutex mu_;
  mutable std::map<int, bool> probed_;
};

}  // namespace

std::unique_ptr<Peer> MakeDnnlPeer() { return std::make_unique<DnnlPeer>(); }

std::string DnnlVersion() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
         " (" + RuntimeName(v->cpu_runtime) + " runtime)";
}

}  // namespace actgrad::peers
