# CMake toolchain file: strata for aarch64 Linux with Debian's cross compiler,
# its tests run through qemu-user.  tools/deps.sh --aarch64 installs what it
# needs (gcc-aarch64-linux-gnu, qemu-user, the -dev packages :arm64 through
# multiarch); tools/test.sh's aarch64 stage uses it:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#   ctest --test-dir build-aarch64     (each test under qemu-aarch64)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)

# The cross C library is in /usr/aarch64-linux-gnu; the libraries strata
# links (libinih-dev:arm64, ...) are multiarch ones, in the host's
# /usr/lib/aarch64-linux-gnu, which CMake searches by the compiler's
# architecture (never .../x86_64-linux-gnu): so both the prefix and the host
# root, but programs (pkg-config, bash, node) from the host alone.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config reads the arm64 .pc files only (and the arch-independent ones).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# ctest runs every test executable through this (add_test with a target as
# its COMMAND), and the programs the tests start go through it too
# (CMakeLists.txt: build-aarch64/emu/, STRATA_TEST_EMULATOR).  No -L /usr/aarch64-linux-gnu: the ELF interpreter
# /lib/ld-linux-aarch64.so.1 is then libc6:arm64's (multiarch, which the
# :arm64 -dev packages bring), the same glibc build as the libc.so.6 its
# search path finds in /lib/aarch64-linux-gnu.  With -L the cross package's
# ld.so (libc6-arm64-cross, another build) loads that libc.so.6, and the
# first pthread_create never returns.
find_program(STRATA_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(STRATA_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${STRATA_QEMU_AARCH64}")
endif()
