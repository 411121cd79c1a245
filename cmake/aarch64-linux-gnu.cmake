# Cross build for 64-bit Arm Linux (scripts/test-arm, docs/arm.md): Debian's
# aarch64-linux-gnu cross compiler with the arm64 libraries installed through
# multiarch (libhwy-dev:arm64, libgtest-dev:arm64, libsleef-dev:arm64; the
# header-only nlohmann-json and CLI11 are shared). Programs the build runs
# (actgrad-tablegen, gtest discovery) and the tests run under QEMU user
# emulation; the CPU it emulates comes from the environment (QEMU_CPU, e.g.
# cortex-a72 for NEON only, max,sve-default-vector-length=64 for SVE2 at 512
# bits; qemu's default is max).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Packages and libraries from the arm64 multiarch directories (and the
# architecture-independent CMake configs under /usr/share and /usr/lib/cmake),
# never the host's x86 ones; programs (qemu, python) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
find_program(ACTGRAD_QEMU_AARCH64 qemu-aarch64 REQUIRED)
# No -L /usr/aarch64-linux-gnu: the programs run on the arm64 multiarch
# runtime (libc6:arm64, libstdc++6:arm64, libgomp1:arm64 in /lib/aarch64-linux-gnu,
# the loader at /lib/ld-linux-aarch64.so.1). Under qemu 7.2 the cross
# toolchain's own libc (libc6-arm64-cross 2.36-8cross1) hangs in the first
# pthread_create, before the clone call.
set(CMAKE_CROSSCOMPILING_EMULATOR ${ACTGRAD_QEMU_AARCH64})
