// Peer implementations (PyTorch CPU kernels, oneDNN eltwise backward) run on
// the very same inputs as our kernels, for side-by-side benchmarks.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <cstdint>
#include <string>
#include <vector>

#include "actgrad/types.h"

namespace actgrad::peers {

// One operand's view over the caller's buffer: dims and strides in elements
// (offset 0), as at::from_blob / an aclTensor takes them.
struct StridedView {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
};
struct OperandViews {
  StridedView g, x, out;
};

class Peer {
 public:
  virtual ~Peer() = default;
  virtual std::string Name() const = 0;  // "torch" or "dnnl"
  virtual bool Supports(Op op, DType dtype, const OpParams& p) const = 0;
  // Whether this process can run the peer on `threads` threads (oneDNN's TBB
  // and SYCL runtimes take their thread count from the process's CPU affinity).
  virtual bool RunsWithThreads(int threads) const {
    (void)threads;
    return true;
  }
  // Wraps the caller's contiguous buffers (n elements of dtype each; no copy
  // where the peer allows it) and returns a callable that computes out once
  // with `threads` threads. Returns an empty function when unsupported.
  virtual std::function<void()> Prepare(Op op, DType dtype, size_t n, const void* g, const void* x,
                                        void* out, const OpParams& p, int threads) = 0;
  // The same on views of the caller's buffers (the benchmark layouts of
  // tools/inputs/views.h: strided, transposed, a broadcast self). The
  // peer computes on the views as they are (no copy to contiguous memory
  // outside what its own kernels do). With copy_result, every call leaves
  // its result in `out`'s view even where the peer computes it elsewhere
  // (PyTorch's functional hardswish_backward): for checking, not timing.
  // Returns an empty function when the peer cannot compute on these views
  // (the default).
  // PrepareViews computes on views (not only returns an empty function).
  virtual bool HasViews() const { return false; }
  virtual std::function<void()> PrepareViews(Op op, DType dtype, const OperandViews& v, const void* g,
                                             const void* x, void* out, const OpParams& p, int threads,
                                             bool copy_result) {
    (void)op, (void)dtype, (void)v, (void)g, (void)x, (void)out, (void)p, (void)threads, (void)copy_result;
    return {};
  }
  // The peer's own copy of one operand's view `src` (dims, strides over
  // `src_data`) into `dst` in row-major order of the same dims: oneDNN's
  // reorder primitive, ATen's copy_. On a transposed view, what a vendor's
  // transpose costs to make one input contiguous: the yardstick beside the
  // transposed path's two (actgrad-transpose-probe). Empty when unsupported.
  virtual std::function<void()> PrepareViewCopy(DType dtype, const StridedView& src, const void* src_data, void* dst,
                                                int threads) {
    (void)dtype, (void)src, (void)src_data, (void)dst, (void)threads;
    return {};
  }
};

// Row-major strides of dims (in elements).
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims);

// The peers compiled into this binary (empty when none was found at configure time).
std::vector<std::unique_ptr<Peer>> AvailablePeers();

}  // namespace actgrad::peers
