// The benchmark operands: tools/inputs (the same bytes the tuner measures on,
// for our kernels and for the peers) and the default op parameters.
#include "common/bench_common.h"
#include "tools/inputs/op_inputs.h"

namespace actgrad::bench {

OpParams DefaultParams(Op op) {
  OpParams p;
  (void)op;
  p.gelu_approx = GeluApprox::kNone;
  p.lambd = 0.5f;
  p.eps = -1.0f;
  return p;
}

void FillG(Op op, DType dt, void* dst, size_t count) { inputs::FillOperand(op, dt, inputs::Role::kG, dst, count); }
void FillX(Op op, DType dt, void* dst, size_t count) { inputs::FillOperand(op, dt, inputs::Role::kX, dst, count); }

}  // namespace actgrad::bench
