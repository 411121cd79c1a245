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

const std::vector<OpForm>& OpForms() {
  static const std::vector<OpForm> forms = {{Op::kSeluBwd},     {Op::kHardswishBwd},
                                            {Op::kGeluBwd},     {Op::kGeluBwd, GeluApprox::kTanh},
                                            {Op::kSoftshrinkBwd}, {Op::kLogitGrad}};
  return forms;
}

std::string FormToken(const OpForm& f) {
  std::string s(OpName(f.op));
  if (f.op == Op::kGeluBwd && f.gelu == GeluApprox::kTanh) s += "_tanh";
  return s;
}

OpParams ParamsOf(const OpForm& f) {
  OpParams p = DefaultParams(f.op);
  p.gelu_approx = f.gelu;
  return p;
}

void FillG(Op op, DType dt, void* dst, size_t count) { inputs::FillOperand(op, dt, inputs::Role::kG, dst, count); }
void FillX(Op op, DType dt, void* dst, size_t count) { inputs::FillOperand(op, dt, inputs::Role::kX, dst, count); }

}  // namespace actgrad::bench
