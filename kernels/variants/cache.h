// The memory hierarchy as the kernels, the runtime and the tools see it: the
// one home of the cache line's size, the L2 fallback and the /sys cache
// reader (the tuner's provenance and refinements read the same levels).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace actgrad {

// Bytes of a cache line on every target the suite builds for (x86-64, and
// the Arm cores it tunes on): what "whole lines" means for streaming stores,
// tile strides and operand placements.
inline constexpr size_t kCacheLineBytes = 64;

// One core's L2 where neither glibc nor /sys says (as on many Arm hosts):
// 1 MiB, the L2 of the Arm server cores that take this path (Neoverse N1, N2,
// V1) and of most x86 server cores.
inline constexpr size_t kFallbackL2Bytes = size_t(1) << 20;

// One cache of cpu0 as /sys/devices/system/cpu/cpu0/cache/index<i> lists it.
struct CacheLevel {
  int level = 0;     // 1, 2, 3
  std::string type;  // "Data", "Instruction" or "Unified"
  size_t bytes = 0;  // 0 where the size is missing or unreadable
  int shared_cpus = 0;  // CPUs in its shared_cpu_list; 0 where missing
};

// "32768K" -> 33554432 (suffixes K, M, G; a bare number is bytes; 0 if none).
size_t ParseCacheSize(std::string_view s);
// How many CPUs a list such as "0-3,8,10-11" names (7); 0 for a malformed one.
int CountCpuList(std::string_view s);
// The caches of cpu0 in index order, read from `dir` (one subfolder
// index<i> each with files level, type, size and shared_cpu_list); empty
// where /sys is absent.
std::vector<CacheLevel> ReadCacheLevels(const std::string& dir = "/sys/devices/system/cpu/cpu0/cache");

// One core's L2 in bytes (glibc's sysconf, else kFallbackL2Bytes): the run
// prefetch gate and the streaming-store guard.
size_t L2CacheBytes();
// The last-level cache in bytes: the largest level ReadCacheLevels lists,
// else glibc's L3, else L2CacheBytes(). /sys first: on some VMs glibc reports
// the package's whole L3 (256 MiB) where /sys lists the 32 MiB a core can
// use. The streaming-store rule for whole lines.
size_t LastLevelCacheBytes();
// One CPU's part of the last-level cache: LastLevelCacheBytes over the CPUs
// that share it (its shared_cpu_list; where /sys does not say, the online
// CPUs). What a thread's data may fill before it spills to memory; the
// streaming-store rule of other machines' tables (tiling/dispatch.cc).
size_t LastLevelCachePartBytes();

}  // namespace actgrad
