#include "runtime/plan.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "actgrad/half.h"
#include "aclnn/aclnn_base.h"
#include "runtime/error.h"
#include "runtime/objects.h"
#include "tiling/dispatch.h"
#include "tiling/layout.h"
#include "variants/thread_pool.h"
#include "variants/tile_copy.h"
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
    p->path = PlanPath::kBlocks;
    return p->broadcast ? tables::Layout::kBcast : tables::Layout::kTransposed;
  }
  p->path = PlanPath::kRuns;
  bool splat = false;
  for (OperandView* v : {&p->g, &p->x}) {
    v->gathered = v->strides[d] != 0 && v->strides[d] != 1;
    splat |= v->strides[d] == 0;
  }
  if (p->g.gathered || p->x.gathered) return tables::Layout::kTransposed;
  return splat ? tables::Layout::kBcast : tables::Layout::kStrided;
}

uint64_t Align64(uint64_t b) { return (b + 63) / 64 * 64; }

// kRuns: the tile of one kernel call and each thread's workspace (run
// pointers, splat vectors, gathered tiles). A tile without a gathered input
// holds about a chunk (Split::chunk, or the default) of whole runs where the
// runs are short, a chunk of one run where they are long; with one, the
// table's tile (Split::tile_rows x tile_cols) or the default 64 x 64.
void SizeTile(Plan* p) {
  const int d = p->ndim - 1;
  const int64_t cols = p->shape[d];
  const int64_t rows = p->g.gathered || p->x.gathered ? (d >= 1 ? p->shape[d - 1] : 1) : int64_t(p->numel / uint64_t(cols));
  const Split& split = p->kernel.split;
  const size_t esize = DTypeSize(p->dtype);
  p->packed = p->g.gathered || p->x.gathered;
  int64_t tc, tr;
  if (p->g.gathered || p->x.gathered) {
    tc = split.tile_cols > 0 ? split.tile_cols : kDefaultTileCols;
    tr = split.tile_rows > 0 ? split.tile_rows : kDefaultTileRows;
  } else {
    const int64_t chunk = split.chunk > 0 ? split.chunk : int64_t(DefaultChunk(size_t(p->numel), split.threads));
    tc = std::min(cols, chunk);
    tr = chunk / tc;
  }
  p->tile_rows = std::max<int64_t>(1, std::min({tr, rows, kMaxTileRows}));
  if (p->g.gathered || p->x.gathered) tc = std::min(tc, kMaxTileElems / p->tile_rows);  // bounds the buffers
  p->tile_cols = std::max<int64_t>(1, std::min(tc, cols));
  const uint64_t r = uint64_t(p->tile_rows);
  uint64_t bytes = Align64(3 * r * sizeof(void*));
  for (const OperandView* v : {&p->g, &p->x}) {
    if (p->packed) bytes += Align64(r * uint64_t(p->tile_cols) * esize);
    else if (v->strides[d] == 0) bytes += r * kSplatBytes;
  }
  p->thread_bytes = bytes;
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
  // A factor-table variant builds its table now, not in its first phase two.
  if (plan->kernel.variant) PrepareVariant(*plan->kernel.variant, plan->params);
  plan->workspace = 0;
  plan->thread_bytes = 0;
  if (plan->numel == 0 || plan->path == PlanPath::kFlat) return ACLNN_SUCCESS;
  if (plan->path == PlanPath::kRuns) SizeTile(plan);
  else plan->thread_bytes = 3 * kBlockElems * DTypeSize(plan->dtype);  // a block per operand
  if (__builtin_mul_overflow(uint64_t(std::max(1, plan->kernel.split.threads)), plan->thread_bytes, &plan->workspace))
    return Fail(ACLNN_ERR_PARAM_INVALID, "%s: the workspace size overflows", op);
  return ACLNN_SUCCESS;
}

namespace {

float LoadAsFloat(const char* p, DType t) {
  switch (t) {
    case DType::kF32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::kF16: { uint16_t h; std::memcpy(&h, p, 2); return HalfToFloat(h); }
    case DType::kBF16: { uint16_t h; std::memcpy(&h, p, 2); return BF16ToFloat(h); }
    default: return 0.0f;
  }
}

void StoreFloat(char* p, DType t, float f) {
  switch (t) {
    case DType::kF32: std::memcpy(p, &f, 4); break;
    case DType::kF16: { const uint16_t h = FloatToHalf(f); std::memcpy(p, &h, 2); break; }
    case DType::kBF16: { const uint16_t h = FloatToBF16(f); std::memcpy(p, &h, 2); break; }
    default: break;
  }
}

template <size_t kSize>
void StridedCopy(char* dst, int64_t dst_stride, const char* src, int64_t src_stride, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * dst_stride * int64_t(kSize), src + i * src_stride * int64_t(kSize), kSize);
}

// Walks the elements [start, start+len) of the plan's index space in runs
// along the innermost dim, calling fn(element offset of v, run start, run length).
// The running offset only ever points at elements of the view (never one
// stride past a dim's end), so it stays within what CheckTensor validated.
template <class Fn>
void ForEachRun(const int64_t* shape, size_t nd, const int64_t* strides, uint64_t start, uint64_t len, Fn&& fn) {
  const size_t in = nd - 1;
  int64_t idx[kMaxDims + 1];
  uint64_t rest = start;
  int64_t off = 0;
  for (size_t i = nd; i-- > 0;) {
    idx[i] = int64_t(rest % uint64_t(shape[i]));
    rest /= uint64_t(shape[i]);
    off += idx[i] * strides[i];
  }
  uint64_t done = 0;
  while (true) {
    const int64_t run = std::min<int64_t>(shape[in] - idx[in], int64_t(len - done));
    fn(off, done, run);
    done += uint64_t(run);
    if (done == len) return;
    // Only the range's last run ends inside a row: back to this row's start, carry.
    off -= idx[in] * strides[in];
    idx[in] = 0;
    for (size_t i = in; i-- > 0;) {
      if (idx[i] + 1 < shape[i]) {
        ++idx[i];
        off += strides[i];
        break;
      }
      off -= idx[i] * strides[i];
      idx[i] = 0;
    }
  }
}

// Copies operand elements [start, start+len) into dst (compute dtype `to`).
void Gather(const Plan& p, const OperandView& v, uint64_t start, uint64_t len, char* dst) {
  const size_t in_size = DTypeSize(v.dtype), out_size = DTypeSize(p.dtype);
  const int64_t inner = v.strides[p.ndim - 1];
  ForEachRun(p.shape, size_t(p.ndim), v.strides, start, len, [&](int64_t off, uint64_t at, int64_t run) {
    const char* src = v.base + off * int64_t(in_size);
    char* d = dst + at * out_size;
    if (v.dtype == p.dtype) {
      if (inner == 1) std::memcpy(d, src, size_t(run) * in_size);
      else if (in_size == 4) StridedCopy<4>(d, 1, src, inner, run);
      else if (in_size == 2) StridedCopy<2>(d, 1, src, inner, run);
      else StridedCopy<1>(d, 1, src, inner, run);
    } else {  // GELU's dtype promotion
      for (int64_t i = 0; i < run; ++i)
        StoreFloat(d + i * int64_t(out_size), p.dtype, LoadAsFloat(src + i * inner * int64_t(in_size), v.dtype));
    }
  });
}

void Scatter(const Plan& p, const char* src, uint64_t start, uint64_t len) {
  const OperandView& v = p.out;
  const size_t size = DTypeSize(p.dtype);
  const int64_t inner = v.strides[p.ndim - 1];
  ForEachRun(p.shape, size_t(p.ndim), v.strides, start, len, [&](int64_t off, uint64_t at, int64_t run) {
    char* d = v.base + off * int64_t(size);
    const char* s = src + at * size;
    if (inner == 1) std::memcpy(d, s, size_t(run) * size);
    else if (size == 4) StridedCopy<4>(d, inner, s, 1, run);
    else if (size == 2) StridedCopy<2>(d, inner, s, 1, run);
    else StridedCopy<1>(d, inner, s, 1, run);
  });
}

// Prefetches an nr x nc tile at src (strides rs, cs in elements) a cache
// line at a time along its contiguous side; nothing when it has none.
void PrefetchTile(const char* src, int64_t rs, int64_t cs, int64_t nr, int64_t nc, size_t esize) {
  const int64_t e = int64_t(esize);
  if (rs == 1 || rs == -1) {
    for (int64_t c = 0; c < nc; ++c)
      for (int64_t o = 0; o < nr * e; o += 64) PrefetchLine(src + c * cs * e + rs * o);
  } else if (cs == 1 || cs == -1) {
    for (int64_t r = 0; r < nr; ++r)
      for (int64_t o = 0; o < nc * e; o += 64) PrefetchLine(src + r * rs * e + cs * o);
  }
}

// kSplatBytes of copies of the element at src (Runs: a splat input).
template <typename T>
void FillSplatOf(char* dst, const char* src) {
  T v;
  std::memcpy(&v, src, sizeof(T));
  T lanes[kSplatBytes / sizeof(T)];
  for (T& l : lanes) l = v;  // vector stores
  std::memcpy(dst, lanes, kSplatBytes);
}
void FillSplat(char* dst, const char* src, size_t esize) {
  if (esize == 4) FillSplatOf<uint32_t>(dst, src);
  else if (esize == 2) FillSplatOf<uint16_t>(dst, src);
  else FillSplatOf<uint8_t>(dst, src);
}

// PlanPath::kRuns: the rows (runs along dim ndim-1, counted over all outer
// dims) as tiles of up to tile_rows rows x tile_cols elements, one kernel
// call per tile, the tiles shared among the threads. With a gathered input a
// tile's rows stay within one stretch of dim ndim-2, so that they step by
// one stride there and the copy is a 2-D tile.
void ExecuteRuns(const Plan& p, void* workspace) {
  const Variant& v = *p.kernel.variant;
  const int d = p.ndim - 1;
  const int64_t cols = p.shape[d];
  const int64_t total_rows = int64_t(p.numel / uint64_t(cols));
  const bool gathered = p.g.gathered || p.x.gathered;
  const int64_t seg = gathered && d >= 1 ? p.shape[d - 1] : total_rows;  // rows a tile may not cross
  const int64_t tr = p.tile_rows, tc = p.tile_cols;
  const int64_t seg_tiles = (seg + tr - 1) / tr, col_tiles = (cols + tc - 1) / tc;
  const int64_t tiles = total_rows / seg * seg_tiles * col_tiles;  // <= numel
  const size_t esize = DTypeSize(p.dtype);
  const OperandView* ops[3] = {&p.g, &p.x, &p.out};
  int64_t cs[3], rs[3], rb[3];  // each operand's stride along the columns, along dim ndim-2, and that in bytes
  for (int k = 0; k < 3; ++k) {
    cs[k] = ops[k]->strides[d];
    rs[k] = d >= 1 ? ops[k]->strides[d - 1] : 0;
    rb[k] = rs[k] * int64_t(esize);
  }
  const int threads = int(std::min<int64_t>(std::max(1, p.kernel.split.threads), tiles));
  ParallelFor(threads, tiles, [&](int64_t first, int64_t last, int thread) {
    char* ws = static_cast<char*>(workspace) + size_t(thread) * p.thread_bytes;
    const void** ptr[2] = {reinterpret_cast<const void**>(ws), reinterpret_cast<const void**>(ws) + tr};
    void** outp = reinterpret_cast<void**>(ws) + 2 * tr;
    char* next = ws + Align64(3 * uint64_t(tr) * sizeof(void*));
    char* splat[2] = {};  // not packed: the splat vectors of a stride-0 input
    char* tile[2] = {};   // packed: the input's tile
    for (int k = 0; k < 2; ++k) {
      if (p.packed) tile[k] = next, next += Align64(uint64_t(tr * tc) * esize);
      else if (cs[k] == 0) splat[k] = next, next += uint64_t(tr) * kSplatBytes;
    }
    Runs runs;
    runs.g = ptr[0];
    runs.x = ptr[1];
    runs.out = outp;
    runs.splat_g = !p.packed && cs[0] == 0;
    runs.splat_x = !p.packed && cs[1] == 0;
    for (int64_t t = first; t < last; ++t) {
      // Tile order: with a gathered input, down the columns first (its
      // contiguous side: the next tile continues the same cache lines and
      // pages), else along the rows first (out's contiguous side).
      int64_t ct, rt, o;  // column tile, row tile within the stretch, stretch
      if (gathered) {
        rt = t % seg_tiles;
        ct = t / seg_tiles % col_tiles;
        o = t / seg_tiles / col_tiles;
      } else {
        ct = t % col_tiles;
        rt = t / col_tiles % seg_tiles;
        o = t / col_tiles / seg_tiles;
      }
      const int64_t c0 = ct * tc, r0 = o * seg + rt * tr;
      const int64_t nr = std::min(tr, seg - rt * tr), nc = std::min(tc, cols - c0);
      // The first row's index over dims 0..ndim-2, and each operand's byte
      // address there.
      int64_t idx[kMaxDims];
      const char* cur[3];
      {
        int64_t off[3] = {c0 * cs[0], c0 * cs[1], c0 * cs[2]};
        int64_t rest = r0;
        for (int i = d - 1; i >= 0; --i) {
          idx[i] = rest % p.shape[i];
          rest /= p.shape[i];
          for (int k = 0; k < 3; ++k) off[k] += idx[i] * ops[k]->strides[i];
        }
        for (int k = 0; k < 3; ++k) cur[k] = ops[k]->base + off[k] * int64_t(esize);
      }
      for (int k = 0; k < 2; ++k) {  // a gathered tile: its rows step by rs[k]
        if (!ops[k]->gathered) continue;
        // The next tile down the columns (the next in this thread's order):
        // fetched while this one is copied.
        if (r0 + nr < o * seg + seg && t + 1 < last)
          PrefetchTile(cur[k] + nr * rs[k] * int64_t(esize), rs[k], cs[k], std::min(tr, o * seg + seg - r0 - nr), nc, esize);
        CopyTile(tile[k], cur[k], rs[k], cs[k], nr, nc, esize);
      }
      const size_t row_bytes = size_t(nc) * esize;
      // The rows, a stretch of dim ndim-2 at a time (no carry inside one).
      for (int64_t r = 0; r < nr;) {
        const int64_t len = d >= 1 ? std::min(nr - r, p.shape[d - 1] - idx[d - 1]) : nr - r;
        for (int k = 0; k < 2; ++k) {
          const void** dst = ptr[k] + r;
          if (splat[k]) {
            for (int64_t j = 0; j < len; ++j) {
              char* sv = splat[k] + (r + j) * int64_t(kSplatBytes);
              FillSplat(sv, cur[k] + j * rb[k], esize);
              dst[j] = sv;
            }
          } else if (ops[k]->gathered) {  // packed by CopyTile
            for (int64_t j = 0; j < len; ++j) dst[j] = tile[k] + (r + j) * int64_t(row_bytes);
          } else {  // in place, or (packed) the source rows PackRows reads below
            for (int64_t j = 0; j < len; ++j) dst[j] = cur[k] + j * rb[k];
          }
        }
        for (int64_t j = 0; j < len; ++j) outp[r + j] = const_cast<char*>(cur[2]) + j * rb[2];
        r += len;
        if (r == nr) break;
        // Dim ndim-2 wrapped (d >= 1 here): back to its first row, step the outer dims.
        for (int k = 0; k < 3; ++k) cur[k] -= idx[d - 1] * rb[k];
        idx[d - 1] = 0;
        for (int i = d - 2; i >= 0; --i) {
          for (int k = 0; k < 3; ++k) cur[k] += ops[k]->strides[i] * int64_t(esize);
          if (++idx[i] < p.shape[i]) break;
          for (int k = 0; k < 3; ++k) cur[k] -= idx[i] * ops[k]->strides[i] * int64_t(esize);
          idx[i] = 0;
        }
      }
      KernelArgs a{nullptr, nullptr, nullptr, size_t(nc), p.params, size_t(p.kernel.split.stage_tile), &runs};
      runs.count = size_t(nr);
      if (p.packed) {
        for (int k = 0; k < 2; ++k) {
          if (ops[k]->gathered) continue;
          PackRows(tile[k], ptr[k], nr, nc, esize, cs[k] == 0);
          for (int64_t r = 0; r < nr; ++r) ptr[k][r] = tile[k] + r * int64_t(row_bytes);
        }
        // Out rows adjacent: the tile is one contiguous call.
        bool adjacent = true;
        for (int64_t r = 1; r < nr && adjacent; ++r)
          adjacent = static_cast<char*>(outp[r]) == static_cast<char*>(outp[0]) + r * int64_t(row_bytes);
        if (adjacent) a = KernelArgs{tile[0], tile[1], outp[0], size_t(nr * nc), p.params, size_t(p.kernel.split.stage_tile)};
      }
      v.fn(a);
    }
  });
}

}  // namespace

void Execute(const Plan& p, void* workspace) {
  if (p.numel == 0) return;
  const Variant& v = *p.kernel.variant;
  const Split& split = p.kernel.split;
  KernelArgs args{p.g.base, p.x.base, p.out.base, size_t(p.numel), p.params, size_t(split.stage_tile)};
  if (p.path == PlanPath::kFlat) {
    RunVariant(v, args, split);
    return;
  }
  if (p.path == PlanPath::kRuns) {
    ExecuteRuns(p, workspace);
    return;
  }
  const size_t esize = DTypeSize(p.dtype);
  const int64_t blocks = int64_t((p.numel + kBlockElems - 1) / kBlockElems);
  // Blocks of kBlockElems, not split.chunk: a block is what one gather fills.
  const int threads = int(std::min<int64_t>(std::max(1, split.threads), blocks));
  ParallelFor(threads, blocks, [&](int64_t first, int64_t last, int thread) {
    char* buf = static_cast<char*>(workspace) + size_t(thread) * 3 * kBlockElems * esize;
    for (int64_t b = first; b < last; ++b) {
      const uint64_t start = uint64_t(b) * kBlockElems;
      const uint64_t len = std::min<uint64_t>(kBlockElems, p.numel - start);
      KernelArgs a = args;
      a.n = size_t(len);
      char* gb = buf;
      char* xb = buf + kBlockElems * esize;
      char* ob = buf + 2 * kBlockElems * esize;
      if (p.g.flat) a.g = p.g.base + start * esize;
      else Gather(p, p.g, start, len, gb), a.g = gb;
      if (p.x.flat) a.x = p.x.base + start * esize;
      else Gather(p, p.x, start, len, xb), a.x = xb;
      a.out = p.out.flat ? p.out.base + start * esize : ob;
      v.fn(a);
      if (!p.out.flat) Scatter(p, ob, start, len);
    }
  });
}

}  // namespace actgrad::rt
