# expect.cmake - run one command of the Windows build (under Wine: the
# caller puts the emulator first) and check its exit status and output.
#   cmake -DCMD=<list> [-DRC=0] [-DMATCH=<regex list>] [-DNOMATCH=<regex list>]
#         (each list joined with "@@")
#         -P expect.cmake
# RC: the exit status wanted (default 0; "nonzero" for any failure).  Every
# MATCH regex must be found in stdout + stderr, no NOMATCH one.  A check that
# fails prints the command's whole output.
if(NOT DEFINED RC)
  set(RC 0)
endif()
foreach(v CMD MATCH NOMATCH)   # lists come joined with "@@" (CMakeLists.txt)
  string(REPLACE "@@" ";" ${v} "${${v}}")
endforeach()
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out
                TIMEOUT 600)
string(REPLACE "\r" "" out "${out}")   # Windows console text: CR LF
message("${out}")
set(bad "")
if(RC STREQUAL "nonzero")
  if(rc STREQUAL "0")
    string(APPEND bad "exit status 0, wanted a failure\n")
  endif()
elseif(NOT rc STREQUAL "${RC}")
  string(APPEND bad "exit status ${rc}, wanted ${RC}\n")
endif()
foreach(re IN LISTS MATCH)
  if(NOT out MATCHES "${re}")
    string(APPEND bad "no match for: ${re}\n")
  endif()
endforeach()
foreach(re IN LISTS NOMATCH)
  if(out MATCHES "${re}")
    string(APPEND bad "unwanted match for: ${re}\n")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "${bad}")
endif()
