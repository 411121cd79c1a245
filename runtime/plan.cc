#include "runtime/plan.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "aclnn/aclnn_base.h"
#include "runtime/error.h"
#include "runtime/objects.h"
#include "runtime/row_walker.h"
#include "tiling/dispatch.h"
#include "tiling/layout.h"
#include "variants/variant.h"

namespace actgrad::rt {

namespace {
uint64_t AbsU(int64_t v) { return v < 0 ? 0 - uint64_t(v) : uint64_t(v); }
}  // namespace

int CheckTensor(const char* op, const char* name, const aclTensor* t, size_t esize, bool report) {
  if (t->dims.size() > size_t(kMaxDims))
    return FailIf(report, ACLNN_ERR_PARAM_INVALID, "%s: %s has %zu dims, at most %d are supported", op, name, t->dims.size(),
                kMaxDims);
  if (!IsAclFormat(t->format))
    return FailIf(report, ACLNN_ERR_PARAM_INVALID, "%s: %s has format %d, which is no aclFormat", op, name, int(t->format));
  if (t->strides_overflow)
    return FailIf(report, ACLNN_ERR_PARAM_INVALID, "%s: %s has no strides and its contiguous strides overflow int64", op, name);
  bool empty = false;
  for (size_t i = 0; i < t->dims.size(); ++i) {
    if (t->dims[i] < 0) return FailIf(report, ACLNN_ERR_PARAM_INVALID, "%s: %s has negative dim %zu (%lld)", op, name, i, (long long)t->dims[i]);
    empty |= t->dims[i] == 0;
  }
  if (empty) return ACLNN_SUCCESS;  // never touched
  int64_t numel = 1;
  for (int64_t d : t->dims)
    if (__builtin_mul_overflow(numel, d, &numel))
      return FailIf(report, ACLNN_ERR_PARAM_INVALID, "%s: %s has more than 2^63-1 elements", op, name);
  if (t->offset < 0) return FailIf(report, ACLNN_ERR_PARAM_INVALID, "%s: %s has negative offset %lld", op, name, (long long)t->offset);
  int64_t storage = 1;
  for (int64_t d : t->storage_dims) {
    if (d < 0) return FailIf(report, ACLNN_ERR_PARAM_INVALID, "%s: %s has a negative storage dim", op, name);
    if (__builtin_mul_overflow(storage, d, &storage))
      return FailIf(report, ACLNN_ERR_PARAM_INVALID, "%s: %s has a storage of more than 2^63-1 elements", op, name);
  }
  // lo..hi: the elements the view covers; their byte offsets must fit too.
  // (Phase two's walk never steps past an element of the view: ForEachRun.)
  int64_t lo = t->offset, hi = t->offset;
  for (size_t i = 0; i < t->dims.size(); ++i) {
    int64_t span;
    if (__builtin_mul_overflow(t->dims[i] - 1, t->strides[i], &span) ||
        __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi))
      return FailIf(report, ACLNN_ERR_PARAM_INVALID,
                  "%s: %s view overflows int64 (dim %zu: size %lld, stride %lld; offset %lld)", op, name, i,
                  (long long)t->dims[i], (long long)t->strides[i], (long long)t->offset);
  }
  if (lo < 0 || hi >= storage)
    return FailIf(report, ACLNN_ERR_PARAM_INVALID,
                "%s: %s view (offset %lld, elements %lld..%lld) does not fit its storage of %lld elements", op, name,
                (long long)t->offset, (long long)lo, (long long)hi, (long long)storage);
  int64_t end_byte;
  if (__builtin_mul_overflow(hi + 1, int64_t(esize), &end_byte))  // hi < storage: hi + 1 fits
    return FailIf(report, ACLNN_ERR_PARAM_INVALID,
                "%s: %s view reaches element %lld, whose byte offset (element size %zu) overflows int64", op, name,
                (long long)hi, esize);
  if (!t->data) return FailIf(report, ACLNN_ERR_PARAM_NULLPTR, "%s: %s has no data (null tensorData)", op, name);
  return ACLNN_SUCCESS;
}

int CheckNoSelfOverlap(const char* op, const char* name, const aclTensor* out, bool report) {
  for (int64_t d : out->dims)
    if (d == 0) return ACLNN_SUCCESS;  // an empty view writes nothing
  if (out->dims.size() > size_t(kMaxDims))  // CheckTensor refused it already
    return FailIf(report, ACLNN_ERR_PARAM_INVALID, "%s: %s has %zu dims, at most %d are supported", op, name, out->dims.size(),
                kMaxDims);
  std::pair<uint64_t, uint64_t> dims[kMaxDims];  // (|stride|, size)
  size_t nd = 0;
  for (size_t i = 0; i < out->dims.size(); ++i)
    if (out->dims[i] > 1) dims[nd++] = {AbsU(out->strides[i]), uint64_t(out->dims[i])};
  for (size_t i = 1; i < nd; ++i)  // insertion sort (at most kMaxDims)
    for (size_t j = i; j > 0 && dims[j] < dims[j - 1]; --j) std::swap(dims[j], dims[j - 1]);
  uint64_t extent = 1;  // elements spanned by the dims so far
  for (size_t k = 0; k < nd; ++k) {
    auto [stride, size] = dims[k];
    if (stride < extent)
      return FailIf(report, ACLNN_ERR_PARAM_INVALID, "%s: the %s view overlaps itself (stride %llu)", op, name,
                  (unsigned long long)stride);
    if (__builtin_mul_overflow(stride, size - 1, &stride) || __builtin_add_overflow(extent, stride, &extent))
      return FailIf(report, ACLNN_ERR_PARAM_INVALID, "%s: the %s view's extent overflows", op, name);
  }
  return ACLNN_SUCCESS;
}

int BroadcastShapes(const char* op, const aclTensor* a, const aclTensor* b, int64_t out[kMaxDims], size_t* ndim) {
  const size_t n = std::max(a->dims.size(), b->dims.size());
  if (n > size_t(kMaxDims))  // CheckTensor refused it already
    return Fail(ACLNN_ERR_PARAM_INVALID, "%s: shapes of more than %d dims", op, kMaxDims);
  *ndim = n;
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a->dims.size() ? 1 : a->dims[i - (n - a->dims.size())];
    const int64_t db = i < n - b->dims.size() ? 1 : b->dims[i - (n - b->dims.size())];
    if (da != db && da != 1 && db != 1)
      return Fail(ACLNN_ERR_PARAM_INVALID, "%s: shapes do not broadcast (dim %zu: %lld vs %lld)", op, i,
                  (long long)da, (long long)db);
    out[i] = da == 1 ? db : da;
  }
  return ACLNN_SUCCESS;
}

namespace {

// Strides of t seen as a tensor of shape shape[0..nd) (right-aligned
// broadcast; t has at most nd dims), into s[0..nd).
void BroadcastStrides(const aclTensor* t, const int64_t* shape, size_t nd, int64_t* s) {
  const size_t lead = nd - t->dims.size();
  for (size_t i = 0; i < lead; ++i) s[i] = 0;
  for (size_t i = 0; i < t->dims.size(); ++i)
    s[lead + i] = (t->dims[i] == 1 && shape[lead + i] != 1) ? 0 : t->strides[i];
}

// The operand's base pointer is data + offset * element size (fits: CheckTensor).
int MakeOperand(const char* op, const char* name, const aclTensor* t, const int64_t* shape, size_t nd,
                OperandView* v) {
  FromAclDataType(t->dtype, &v->dtype);
  int64_t byte_offset;
  if (__builtin_mul_overflow(t->offset, int64_t(DTypeSize(v->dtype)), &byte_offset))
    return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s offset %lld in bytes overflows int64", op, name, (long long)t->offset);
  v->base = static_cast<char*>(t->data) + byte_offset;
  BroadcastStrides(t, shape, nd, v->strides);
  return ACLNN_SUCCESS;
}

// An empty output: nothing runs, nothing of the views is looked at.
void EmptyPlan(Plan* plan, const aclTensor* const t[3]) {
  plan->ndim = 1;
  plan->shape[0] = 0;
  OperandView* ops[3] = {&plan->g, &plan->x, &plan->out};
  for (int k = 0; k < 3; ++k) {
    FromAclDataType(t[k]->dtype, &ops[k]->dtype);
    ops[k]->base = static_cast<char*>(t[k]->data);
    ops[k]->strides[0] = 1;
    ops[k]->flat = ops[k]->dtype == plan->dtype;
  }
}

// An inner-run view (out's innermost dim, after the sort by out's strides,
// has stride 1 in out and 1 or 0 in each input): the outer dims are then
// walked in the inputs' memory order, not out's, as TensorIterator's rule
// with the inputs first: two streams read in order and one written in runs
// out of order beat the reverse from beyond the cache (a [n/1024, 4, 4, 64]
// view with dims 1 and 2 swapped, f32 16M, 256-byte runs, one thread:
// 15.1 ms in out's order, 10.5 in the inputs', 6.8 with streaming stores,
// 6.6 contiguous; /tmp microbenchmark of the access pattern). In the cache
// the order costs nothing. The first operand whose strides differ and are
// both non-zero decides a pair of dims (g, then x, then out).
void OrderOuterDimsByInputs(const OperandView ops[3], int perm[], int pn) {
  const int in = perm[pn - 1];
  if (ops[2].strides[in] != 1) return;
  for (int k = 0; k < 2; ++k)
    if (ops[k].strides[in] != 1 && ops[k].strides[in] != 0) return;
  auto before = [&](int a, int b) {  // dim a walks outside dim b
    for (int k = 0; k < 3; ++k) {
      const int64_t sa = ops[k].strides[a], sb = ops[k].strides[b];
      if (sa == 0 || sb == 0 || sa == sb) continue;
      return sa > sb;
    }
    return false;
  };
  for (int i = 1; i < pn - 1; ++i)
    for (int j = i; j > 0 && before(perm[j], perm[j - 1]); --j) std::swap(perm[j], perm[j - 1]);
}

// The general plan: shape, numel, operands and broadcast of the plan from the
// three views (broadcast strides, coalesced dims). Returns a status.
int GeneralPlan(const char* op, const char* const names[3], Plan* plan, const aclTensor* const t[3]) {
  const std::vector<int64_t>& shape = t[2]->dims;  // at most kMaxDims (CheckTensor)
  plan->numel = 1;
  plan->broadcast = false;
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    plan->numel = 0;
    EmptyPlan(plan, t);
  } else {
    for (int64_t d : shape)  // fits: out passed CheckTensor
      if (__builtin_mul_overflow(plan->numel, uint64_t(d), &plan->numel))
        return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has too many elements", op, names[2]);
    const size_t nd = shape.size();
    OperandView ops[3];
    for (int k = 0; k < 3; ++k)
      if (const int st = MakeOperand(op, names[k], t[k], shape.data(), nd, &ops[k])) return st;
    for (auto& o : ops)
      for (size_t i = 0; i < nd; ++i) plan->broadcast |= (o.strides[i] == 0 && shape[i] != 1);

    // The order of the elements is free (elementwise): flip the dims out
    // walks backwards, then order the dims by out's strides, largest first
    // (as PyTorch's TensorIterator does), so that out's innermost dim is its
    // smallest stride and PlanPath::kRuns applies to a transposed out too.
    int perm[kMaxDims];
    int pn = 0;
    for (size_t i = 0; i < nd; ++i) {
      if (shape[i] == 1) continue;
      if (ops[2].strides[i] < 0)
        for (auto& o : ops) {  // within the view: CheckTensor
          o.base += (shape[i] - 1) * o.strides[i] * int64_t(DTypeSize(o.dtype));
          o.strides[i] = -o.strides[i];
        }
      perm[pn++] = int(i);
    }
    for (int i = 1; i < pn; ++i)  // stable insertion sort (at most kMaxDims)
      for (int j = i; j > 0 && ops[2].strides[perm[j]] > ops[2].strides[perm[j - 1]]; --j) std::swap(perm[j], perm[j - 1]);
    if (pn > 2) OrderOuterDimsByInputs(ops, perm, pn);

    // Coalesce: drop size-1 dims, merge a dim into the next when every operand
    // walks them as one (a stride * size that overflows merges nothing).
    int64_t* cs = plan->shape;  // cn dims so far (cn <= i: in place is safe for the operands' strides)
    int cn = 0;
    int64_t* cst[3] = {plan->g.strides, plan->x.strides, plan->out.strides};
    for (int q = 0; q < pn; ++q) {
      const size_t i = size_t(perm[q]);
      bool merge = cn > 0;
      for (int k = 0; k < 3 && merge; ++k) {
        int64_t outer;
        merge = !__builtin_mul_overflow(ops[k].strides[i], shape[i], &outer) && cst[k][cn - 1] == outer;
      }
      if (merge) {
        cs[cn - 1] *= shape[i];  // at most numel
        for (int k = 0; k < 3; ++k) cst[k][cn - 1] = ops[k].strides[i];
      } else {
        cs[cn] = shape[i];
        for (int k = 0; k < 3; ++k) cst[k][cn] = ops[k].strides[i];
        ++cn;
      }
    }
    if (cn == 0) {
      cs[0] = 1;
      for (int k = 0; k < 3; ++k) cst[k][0] = 1;
      cn = 1;
    }
    plan->ndim = cn;
    OperandView* views[3] = {&plan->g, &plan->x, &plan->out};
    for (int k = 0; k < 3; ++k) {
      views[k]->base = ops[k].base;
      views[k]->dtype = ops[k].dtype;
      bool flat = ops[k].dtype == plan->dtype;
      int64_t expect = 1;
      for (int i = cn; i-- > 0 && flat;) {
        flat = cs[i] == 1 || cst[k][i] == expect;
        expect *= cs[i];  // a product of dims, at most numel
      }
      views[k]->flat = flat;
    }
  }
  return ACLNN_SUCCESS;
}

// The plan of three contiguous views of one shape in the plan's dtype (the
// common call; the caller checked shape and dtypes), straight from the facts
// aclCreateTensor cached: what GeneralPlan makes of them (every dim
// coalesces into one of numel elements, stride 1, flat), without its walk
// over the dims. False: a view is not contiguous.
bool ContiguousPlan(Plan* plan, const aclTensor* const t[3]) {
  const aclTensor* out = t[2];
  if (!t[0]->contiguous || !t[1]->contiguous || !out->contiguous) return false;
  const size_t esize = DTypeSize(plan->dtype);
  plan->numel = out->numel;
  plan->ndim = 1;
  plan->shape[0] = int64_t(out->numel);
  plan->broadcast = t[0]->zero_stride || t[1]->zero_stride || t[2]->zero_stride;
  OperandView* views[3] = {&plan->g, &plan->x, &plan->out};
  for (int k = 0; k < 3; ++k) {
    views[k]->base = static_cast<char*>(t[k]->data) + t[k]->offset * int64_t(esize);  // fits: CheckTensor
    views[k]->dtype = plan->dtype;
    views[k]->flat = true;
    views[k]->strides[0] = 1;
  }
  return true;
}

// Decides plan->path (and the operands' `gathered`); returns the layout
// whose table cell picks the kernel.
tables::Layout ChoosePath(Plan* p) {
  p->g.gathered = p->x.gathered = p->out.gathered = false;
  if (p->g.flat && p->x.flat && p->out.flat) {
    p->path = PlanPath::kFlat;
    return tables::Layout::kContig;
  }
  const int d = p->ndim - 1;
  const size_t esize = DTypeSize(p->dtype);
  const bool same_dtype = p->g.dtype == p->dtype && p->x.dtype == p->dtype && p->out.dtype == p->dtype;
  if (!same_dtype || p->out.strides[d] != 1 || uint64_t(p->shape[d]) * esize < kMinRunBytes) {
    p->path = PlanPath::kBuffered;
    return p->broadcast ? tables::Layout::kBcast : tables::Layout::kTransposed;
  }
  p->path = PlanPath::kRuns;
  p->inputs_in_order = true;
  for (const OperandView* v : {&p->g, &p->x})
    for (int i = 0, last = -1; i < p->ndim; ++i) {
      if (v->strides[i] == 0) continue;
      p->inputs_in_order &= last < 0 || v->strides[last] > v->strides[i];
      last = i;
    }
  bool splat = false;
  for (OperandView* v : {&p->g, &p->x}) {
    v->gathered = v->strides[d] != 0 && v->strides[d] != 1;
    splat |= v->strides[d] == 0;
  }
  if (p->g.gathered || p->x.gathered) return tables::Layout::kTransposed;
  return splat ? tables::Layout::kBcast : tables::Layout::kStrided;
}

// kRuns: the tile of one kernel call and each thread's workspace (run
// pointers, gathered tiles). A tile without a gathered input
// holds about a chunk (Split::chunk, or the default) of whole runs where the
// runs are short, a chunk of one run where they are long; with one, the
// table's tile (Split::tile_rows x tile_cols) or the default
// (kGatheredTileRows x kGatheredTileOutBytes of out); so does a tile with a
// splat g (expanded: Plan::packed), its default 256 x 256.
void SizeTile(Plan* p) {
  const int d = p->ndim - 1;
  const int64_t cols = p->shape[d];
  const bool gathered = p->g.gathered || p->x.gathered;
  const int64_t rows = gathered ? (d >= 1 ? p->shape[d - 1] : 1) : int64_t(p->numel / uint64_t(cols));
  const Split& split = p->kernel.split;
  const size_t esize = DTypeSize(p->dtype);
  p->packed = gathered || p->g.strides[d] == 0;
  int64_t tc, tr;
  if (p->packed) {
    const int64_t def_cols = gathered ? kGatheredTileOutBytes / int64_t(esize) : kDefaultTileCols;
    tc = split.tile_cols > 0 ? split.tile_cols : def_cols;
    tr = split.tile_rows > 0 ? split.tile_rows : gathered ? kGatheredTileRows : kDefaultTileRows;
  } else {
    const int64_t chunk = split.chunk > 0 ? split.chunk : int64_t(DefaultChunk(size_t(p->numel), split.threads));
    tc = std::min(cols, chunk);
    tr = chunk / tc;
  }
  p->tile_rows = std::max<int64_t>(1, std::min({tr, rows, kMaxTileRows}));
  if (p->packed) tc = std::min(tc, kMaxTileElems / p->tile_rows);  // bounds the buffers
  p->tile_cols = std::max<int64_t>(1, std::min(tc, cols));
  // The result transposed (Plan::transpose_result): the kernel's runs are the
  // tile's columns (tile_cols of them, tile_rows long) into one scratch tile.
  p->transpose_result = split.transpose_result && p->g.gathered && p->x.gathered && d >= 1 &&
                        p->g.strides[d - 1] == 1 && p->x.strides[d - 1] == 1;
  constexpr int64_t kLine = int64_t(kCacheLineBytes);
  p->scratch_ld = p->tile_rows + kLine / int64_t(esize);
  const uint64_t r = uint64_t(p->transpose_result ? std::max(p->tile_rows, p->tile_cols) : p->tile_rows);
  uint64_t bytes = Align64(3 * r * sizeof(void*)) + Align64(3 * r * sizeof(int64_t));  // row pointers, offsets
  if (p->transpose_result) bytes += Align64(uint64_t(p->scratch_ld * p->tile_cols) * esize);
  else if (p->packed) bytes += 2 * Align64(uint64_t(p->tile_rows * p->tile_cols) * esize);
  p->thread_bytes = bytes;
}

// kRuns with a gathered input: each tile writes out in pieces of tile_cols
// elements; true where every piece is whole, aligned cache lines (out's
// base, its row strides, its rows and the tile's width in multiples of 64
// bytes), where streaming stores need no peel (StreamingOnWholeLines).
bool OutInWholeLines(const Plan& p) {
  if (!p.g.gathered && !p.x.gathered) return false;
  constexpr int64_t kLine = int64_t(kCacheLineBytes);
  const int64_t es = int64_t(DTypeSize(p.dtype)), d = p.ndim - 1;
  if (reinterpret_cast<uintptr_t>(p.out.base) % kLine || p.tile_cols * es % kLine || p.shape[d] * es % kLine)
    return false;
  for (int64_t i = 0; i < d; ++i)
    if (p.out.strides[i] * es % kLine) return false;
  return true;
}

}  // namespace

int BuildPlan(const char* op, const char* const names[3], Plan* plan, const aclTensor* g, const aclTensor* x,
              const aclTensor* out, bool same_dims_and_dtype) {
  const aclTensor* const t[3] = {g, x, out};
  if (out->dims.size() > size_t(kMaxDims))  // CheckTensor refused it already
    return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has %zu dims, at most %d are supported", op, names[2],
                out->dims.size(), kMaxDims);
  if (!same_dims_and_dtype || !ContiguousPlan(plan, t))
    if (const int st = GeneralPlan(op, names, plan, t)) return st;
  const tables::Layout layout = ChoosePath(plan);
  plan->kernel = ChooseKernel(plan->op, plan->dtype, plan->params.gelu_approx, plan->numel, layout);
  // A dispatch posing as another machine (tests: PoseAsMachine) chooses what
  // that machine runs; this CPU then runs its own default instead.
  if (plan->kernel.variant && !plan->kernel.variant->supported)
    plan->kernel = Resolve(DefaultChoice(plan->op, plan->dtype, plan->params.gelu_approx, plan->numel,
                                         ActiveTable().accuracy_class));
  // A factor-table variant builds its table now, not in its first phase two.
  if (plan->kernel.variant) PrepareVariant(*plan->kernel.variant, plan->params);
  plan->workspace = 0;
  plan->thread_bytes = 0;
  if (plan->numel == 0 || plan->path == PlanPath::kFlat) return ACLNN_SUCCESS;
  if (plan->path == PlanPath::kRuns) {
    SizeTile(plan);
    // A transposed result is written by CopyTileTo, not by the variant,
    // whose stores go to the scratch tile: streaming would send that to memory.
    if (!plan->transpose_result && OutInWholeLines(*plan)) {
      const Variant* was = plan->kernel.variant;
      plan->kernel = StreamingOnWholeLines(plan->kernel, plan->dtype, plan->numel);
      if (plan->kernel.variant != was) PrepareVariant(*plan->kernel.variant, plan->params);
    }
    plan->rows.Build(*plan);
  } else plan->thread_bytes = 3 * kBufferElems * DTypeSize(plan->dtype);  // a buffer per operand
  if (__builtin_mul_overflow(uint64_t(std::max(1, plan->kernel.split.threads)), plan->thread_bytes, &plan->workspace))
    return Fail(ACLNN_ERR_PARAM_INVALID, "%s: the workspace size overflows", op);
  return ACLNN_SUCCESS;
}

}  // namespace actgrad::rt
