// One-off recorder (not built): what the dispatch of commit e563dcd (tiling
// schema version 2, before the Choice/Split types) picks for every committed
// CPU table, written to choices_v2.txt for the replay test
// (tests/tiling/choice_replay_test.cc). Built against that commit's
// actgrad_internal: g++ -std=c++20 -fopenmp -Iinclude -Ikernels -I. ... .
//
// A line: <machine> <op> <dtype> <mode> <layout> <n> then, per thread cap
// 1, 2, 64 (omp_set_num_threads), "<variant>,<threads>,<chunk>" or
// "<variant>,<threads>,<chunk>/<fallback variant>,<threads>,<chunk>" or
// "default". The list is CPU-independent: it names the table's variant even
// where this CPU cannot run it (the dispatch then gives the default, or, for a
// one-thread choice, the entry's main variant at 1 thread: the fallback).
// Cells this CPU can run are checked against ChooseKernel here.
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "tiling/dispatch.h"
#include "tiling/table.h"
#include "variants/variant.h"

using namespace actgrad;

namespace {

bool Runs(const std::string& name) {
  const Variant* v = FindVariant(name);
  return v && v->supported;
}

// The entry of n's octave, else the nearest (lower first), as in dispatch.cc.
const tables::Entry* Lookup(const tables::Table& t, Op op, DType dt, GeluApprox m, bool bcast, uint64_t n) {
  const int b = SizeOctave(n);
  for (int d = 0; d <= tables::kMaxOctaveIndex; ++d)
    for (int s : {b - d, b + d})
      for (const auto& e : t.entries)
        if (e.op == op && e.dtype == dt && e.mode == m && (e.layout == tables::Layout::kBcast) == bcast &&
            e.octave == s)
          return &e;
  return nullptr;
}

std::string Triple(const std::string& v, int threads, int64_t chunk) {
  return v + "," + std::to_string(threads) + "," + std::to_string(chunk);
}

}  // namespace

int main() {
  std::vector<uint64_t> sizes = {1, 2, 100, 1000, 1023};
  for (int h = 10; h <= 26; ++h) {
    sizes.push_back(uint64_t(1) << h);
    sizes.push_back(uint64_t(std::llround(std::ldexp(std::sqrt(2.0), h))));
    sizes.push_back((uint64_t(2) << h) - 1);
  }
  sizes.push_back(uint64_t(1) << 27);
  sizes.push_back(uint64_t(3) << 29);
  int bad = 0;
  for (const char* id : {"authenticamd-25-17", "genuineintel-6-143", "default"}) {
    tables::Table t;
    std::string err;
    if (!tables::LoadTableFile(std::string("tiling/tables/") + id + ".json", &t, &err)) {
      std::fprintf(stderr, "%s\n", err.c_str());
      return 1;
    }
    ReloadTilingTable(id, "none");
    for (int op = 0; op < kNumOps; ++op)
      for (int dt = 0; dt < kNumDTypes; ++dt)
        for (int m = 0; m < (Op(op) == Op::kGeluBwd ? 2 : 1); ++m)
          for (int bc = 0; bc < 2; ++bc)
            for (uint64_t n : sizes) {
              std::printf("%s %s %s %d %s %llu", id, OpName(Op(op)).data(), DTypeName(DType(dt)).data(), m,
                          bc ? "bcast" : "contig", (unsigned long long)n);
              for (int cap : {1, 2, 64}) {
                omp_set_num_threads(cap);
                const KernelChoice got = ChooseKernel(Op(op), DType(dt), GeluApprox(m), n, bc);
                const tables::Entry* e = Lookup(t, Op(op), DType(dt), GeluApprox(m), bc, n);
                std::string rec, want;  // recorded; what this CPU should get
                if (!e) {
                  rec = "default";
                } else {
                  const std::string main = Triple(e->variant, std::min(e->threads, cap), e->tile);
                  if (cap == 1 && e->threads > 1 && !e->one_thread_variant.empty()) {
                    rec = Triple(e->one_thread_variant, 1, e->one_thread_tile) + "/" +
                          Triple(e->variant, 1, e->tile);
                    want = !Runs(e->variant) ? "" : Runs(e->one_thread_variant)
                               ? Triple(e->one_thread_variant, 1, e->one_thread_tile)
                               : Triple(e->variant, 1, e->tile);
                  } else {
                    rec = main;
                    want = Runs(e->variant) ? main : "";
                  }
                }
                // Check against the dispatch of this commit on this CPU.
                const std::string g =
                    got.from_table ? Triple(got.variant->name, got.threads, int64_t(got.chunk)) : "";
                const KernelChoice d = DefaultChoice(Op(op), DType(dt), GeluApprox(m), n);
                if (g != want || (!got.from_table && (got.variant != d.variant || got.threads != d.threads ||
                                                      got.chunk != d.chunk))) {
                  std::fprintf(stderr, "mismatch %s %d %d %d %d %llu cap %d: got %s want %s\n", id, op, dt, m, bc,
                               (unsigned long long)n, cap, g.c_str(), want.c_str());
                  ++bad;
                }
                std::printf(" %s", rec.c_str());
              }
              std::printf("\n");
            }
  }
  return bad ? 1 : 0;
}
