# Precompiled headers: the standard library and the third-party headers most of tessera's
# sources include (fmt, spdlog, nlohmann-json, yaml-cpp; GoogleTest for the tests), parsed
# once per build instead of once per source file. That is about a fifth of a source's
# compile time (docs/benchmarks.md#the-test-suites-own-time). TESSERA_PCH=OFF turns it off.
#
# GCC uses a precompiled header only in compilations whose macro definitions include the
# ones it was built with and add none that it reads: libtorch's consumers (they define
# _GLIBCXX_USE_CXX11_ABI, which the standard library reads) and targets without spdlog's
# definitions get none, the tests get one with GoogleTest (GTEST_HAS_PTHREAD). A consumer
# that breaks that rule compiles without it and GCC says so (-Winvalid-pch): the build
# stays correct and shows the warning.
option(TESSERA_PCH "Precompile the common headers (standard library, fmt, spdlog, json, yaml)" ON)

set(TESSERA_PCH_HEADERS
  <algorithm> <array> <atomic> <chrono> <cmath> <cstdint> <cstdio> <cstdlib> <cstring>
  <deque> <filesystem> <fstream> <functional> <iostream> <limits> <map> <memory> <mutex>
  <optional> <set> <sstream> <stdexcept> <string> <string_view> <thread> <unordered_map>
  <unordered_set> <utility> <variant> <vector>
  <fmt/format.h> <spdlog/spdlog.h> <nlohmann/json.hpp> <yaml-cpp/yaml.h>)

# The donors: one object library each, compiled from an empty source, whose precompiled
# header the consumers reuse (REUSE_FROM). Their definitions are the consumers' own.
function(tessera_pch_donor name)
  add_library(${name} OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_donor.cpp)
  target_link_libraries(${name} PRIVATE spdlog::spdlog fmt::fmt nlohmann_json::nlohmann_json
                                        yaml-cpp ${ARGN})
  target_precompile_headers(${name} PRIVATE ${TESSERA_PCH_HEADERS})
endfunction()

# Whether `target` compiles with libtorch's usage requirements: it links libtorch, or a
# library whose interface carries it (a PRIVATE link, $<LINK_ONLY:...>, carries none).
function(tessera_links_torch target out)
  get_target_property(todo ${target} LINK_LIBRARIES)
  if(NOT todo)
    set(todo "")
  endif()
  set(seen "")
  set(found FALSE)
  while(todo)
    list(POP_FRONT todo t)
    if(t MATCHES "^\\$<LINK_ONLY:" OR t IN_LIST seen OR NOT TARGET ${t})
      continue()
    endif()
    list(APPEND seen ${t})
    if(t MATCHES "^(torch|torch_library|torch_cpu|c10)$")
      set(found TRUE)
      break()
    endif()
    get_target_property(iface ${t} INTERFACE_LINK_LIBRARIES)
    if(iface)
      list(APPEND todo ${iface})
    endif()
  endwhile()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# tessera_use_pch(DONOR targets...): each target that does not link libtorch reuses DONOR's
# precompiled header.
function(tessera_use_pch donor)
  if(NOT TESSERA_PCH OR NOT TARGET ${donor})
    return()
  endif()
  foreach(target IN LISTS ARGN)
    tessera_links_torch(${target} torch)
    if(NOT torch)
      target_precompile_headers(${target} REUSE_FROM ${donor})
    endif()
  endforeach()
endfunction()

# The donor of src/, cli/ and bench/ (tests/CMakeLists.txt makes the tests' one).
if(TESSERA_PCH)
  tessera_pch_donor(tessera_pch)
endif()
