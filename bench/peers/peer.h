// Peer implementations (PyTorch CPU kernels, oneDNN eltwise backward) run on
// the very same inputs as our kernels, for side-by-side benchmarks.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actgrad/types.h"

namespace actgrad::peers {

class Peer {
 public:
  virtual ~Peer() = default;
  virtual std::string Name() const = 0;  // "torch" or "dnnl"
  virtual bool Supports(Op op, DType dtype, const OpParams& p) const = 0;
  // Wraps the caller's contiguous buffers (n elements of dtype each; no copy
  // where the peer allows it) and returns a callable that computes out once
  // with `threads` threads. Returns an empty function when unsupported.
  virtual std::function<void()> Prepare(Op op, DType dtype, size_t n, const void* g, const void* x,
                                        void* out, const OpParams& p, int threads) = 0;
};

// The peers compiled into this binary (empty when none was found at configure time).
std::vector<std::unique_ptr<Peer>> AvailablePeers();

}  // namespace actgrad::peers
