// A tiny work-sharing loop on pthreads with a large explicit stack.
//
// Why not OpenMP: the variants' staging buffers are `static thread_local`
// arrays inside a function template (kernels/variants/driver-inl.h), one
// 2 x 32 KB pair per instantiation: ~18 MB of static TLS, which glibc carves
// out of every thread's stack. libgomp sizes its workers' stacks to the TLS
// plus a few KB, so a worker that calls fprintf (8 KB of stack) crashes.
// Our workers reserve 256 MB of stack (address space only).
#pragma once
#include <cstddef>
#include <functional>

namespace actgrad::acc {

// Calls fn(i) for i in [0, count) on `threads` threads (the caller is one of
// them), handing out indices in increasing order.
void ParallelFor(int threads, size_t count, const std::function<void(size_t)>& fn);

}  // namespace actgrad::acc
