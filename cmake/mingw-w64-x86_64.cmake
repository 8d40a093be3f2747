# CMake toolchain file: strata for Windows x86-64, cross-compiled with Debian's
# mingw-w64 (gcc-mingw-w64-x86-64-posix), its tests run through wine64.
# tools/win-deps.sh builds the libraries it links (pcre2, utf8proc, cJSON,
# inih; static) into build-win/deps first:
#   tools/win-deps.sh                       (or: tools/win-deps.sh PREFIX)
#   cmake -S . -B build-win/strata -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake
#         [-DSTRATA_WIN_DEPS=PREFIX]
#   ctest --test-dir build-win/strata       (each test .exe under wine64)
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

# The -posix variants: the threads model is POSIX (winpthreads), which the
# core's pthread code needs; the -win32 ones have no <pthread.h> support in
# libgcc/libstdc++.  Only C is enabled by the project; the C++ compiler (from
# g++-mingw-w64-x86-64-posix, not installed here) is named for projects built
# with this file that do enable C++.
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)

# Where the Windows libraries are: the prefix tools/win-deps.sh fills
# (default build-win/deps in the source tree: this file is in cmake/, so
# relative to it, not to CMAKE_SOURCE_DIR, which is another directory when
# CMake re-reads this file for a try_compile).
if(NOT DEFINED STRATA_WIN_DEPS)
  get_filename_component(STRATA_WIN_DEPS "${CMAKE_CURRENT_LIST_DIR}/../build-win/deps" ABSOLUTE)
endif()
set(STRATA_WIN_DEPS "${STRATA_WIN_DEPS}" CACHE PATH
    "Prefix holding the Windows builds of strata's dependencies (tools/win-deps.sh)")
# try_compile projects get a -DSTRATA_WIN_DEPS=... override passed on too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES STRATA_WIN_DEPS)

# Headers and libraries only from the mingw sysroot and that prefix, never
# the host's /usr/include or /usr/lib (ONLY); programs (pkg-config, bash,
# wine) only from the host (NEVER).  An absolute path already under one of
# these roots (pkg-config's -L/-I into the prefix) is used as it is.
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32 "${STRATA_WIN_DEPS}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg_check_modules reads the prefix's .pc files and nothing else: LIBDIR
# replaces pkg-config's built-in search path (the host's /usr/lib/.../
# pkgconfig, whose x86-64 Linux libraries would link and fail), PATH would
# only add to it.  Their paths are absolute, so no sysroot prefixing either.
# The environment is not cached: this is set again on every run of CMake.
set(ENV{PKG_CONFIG_LIBDIR} "${STRATA_WIN_DEPS}/lib/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
unset(ENV{PKG_CONFIG_SYSROOT_DIR})

# Link libgcc and winpthreads statically (-static: every -l prefers the .a;
# the Windows system DLLs still come through their import libraries), so a
# .exe or .dll needs no mingw DLL (libwinpthread-1.dll, libgcc_s_seh-1.dll)
# beside it and runs as it is, under Wine or on Windows.  Each module then
# has its own copy of winpthreads: a pthread_t made in one module must not be
# joined in another (mutexes and keys work across them).  Without -static,
# libwinpthread-1.dll (/usr/x86_64-w64-mingw32/lib/) must sit beside the
# .exe, or Wine be told where it is: WINEPATH=/usr/x86_64-w64-mingw32/lib.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-static")

# ctest runs every test executable (add_test with a target as its COMMAND)
# through Wine.  Debian's wine64 package puts the 64-bit loader in
# /usr/lib/wine (its /usr/bin/wine64 link comes with wine64 only on some
# releases), so look there too.  Set WINEDEBUG=-all in the environment to
# silence Wine's fixme: lines; the first run creates ~/.wine (seconds).
find_program(STRATA_WINE64 NAMES wine64 PATHS /usr/lib/wine /usr/lib/wine64 NO_CMAKE_FIND_ROOT_PATH)
if(STRATA_WINE64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${STRATA_WINE64}")
endif()
