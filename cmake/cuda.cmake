# cmake/cuda.cmake — the optional CUDA backend (included from the main
# CMakeLists.txt). CTORCH_CUDA=AUTO builds it when the CUDA toolkit and nvcc
# are found (also under /usr/local/cuda); ON makes their absence an error; OFF
# leaves the build without CUDA.
#
# The portable kernels of src/kernels/ are compiled by nvcc in one
# translation unit (src/backends/cuda/cu_kernels.cu) as SASS for every real
# architecture the installed nvcc knows from sm_75 to sm_90, plus PTX of the
# newest of them so that later GPUs can JIT it. The CUDA runtime is linked
# statically (it dlopens libcuda.so.1 itself) and cuBLAS/cuDNN are dlopened
# at first use (cu_dl.c), so libctorch loads and runs CPU-only on machines
# without a GPU, a driver or the toolkit.
set(CTORCH_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (when the CUDA toolkit is found), ON or OFF")
set_property(CACHE CTORCH_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${CTORCH_CUDA}" _ct_cuda_mode)
set(CTORCH_HAVE_CUDA OFF)

if(_ct_cuda_mode STREQUAL "OFF")
  message(STATUS "CUDA backend: off (CTORCH_CUDA=OFF)")
  return()
endif()

# ---- find nvcc and the toolkit ------------------------------------------------------
# An explicit CMAKE_CUDA_COMPILER or CUDACXX wins; else PATH, CUDA_PATH, /usr/local/cuda.
# check_language also makes sure nvcc works with the host compiler, so that
# AUTO turns the backend off instead of failing in enable_language.
if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(CTORCH_NVCC nvcc HINTS ENV CUDA_PATH ENV CUDA_HOME PATH_SUFFIXES bin
               PATHS /usr/local/cuda/bin /opt/cuda/bin)
  if(CTORCH_NVCC)
    set(ENV{CUDACXX} "${CTORCH_NVCC}")
  endif()
endif()
include(CheckLanguage)
check_language(CUDA)
set(_ct_nvcc "${CMAKE_CUDA_COMPILER}")
if(_ct_nvcc AND NOT CUDAToolkit_ROOT)
  get_filename_component(_ct_nvcc_bin "${_ct_nvcc}" DIRECTORY)
  get_filename_component(CUDAToolkit_ROOT "${_ct_nvcc_bin}" DIRECTORY)
endif()
find_package(CUDAToolkit QUIET)

if(NOT _ct_nvcc OR NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cudart_static)
  set(_ct_missing "a working nvcc or the CUDA toolkit's static runtime")
  if(_ct_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "CTORCH_CUDA=ON but ${_ct_missing} was not found (set CUDACXX or CUDAToolkit_ROOT)")
  endif()
  message(STATUS "CUDA backend: off (${_ct_missing} not found; set CUDACXX or CUDAToolkit_ROOT)")
  return()
endif()

# ---- architectures: SASS for sm_75..sm_90 as supported, PTX for the newest -----------
if(NOT CMAKE_CUDA_ARCHITECTURES)
  execute_process(COMMAND "${_ct_nvcc}" --list-gpu-arch OUTPUT_VARIABLE _ct_arch_list
                  RESULT_VARIABLE _ct_arch_rc ERROR_QUIET)
  set(_ct_archs "")
  if(_ct_arch_rc EQUAL 0)
    string(REGEX MATCHALL "compute_[0-9]+" _ct_arch_list "${_ct_arch_list}")
    foreach(_ct_a ${_ct_arch_list})
      string(REPLACE "compute_" "" _ct_a "${_ct_a}")
      if(_ct_a GREATER_EQUAL 75 AND _ct_a LESS_EQUAL 90)
        list(APPEND _ct_archs ${_ct_a})
      endif()
    endforeach()
  endif()
  if(NOT _ct_archs) # an nvcc without --list-gpu-arch (before CUDA 11): Turing to Ampere
    set(_ct_archs 75 80 86)
  endif()
  list(REMOVE_DUPLICATES _ct_archs)
  list(SORT _ct_archs COMPARE NATURAL)
  list(GET _ct_archs -1 _ct_newest)
  set(CMAKE_CUDA_ARCHITECTURES "")
  foreach(_ct_a ${_ct_archs})
    list(APPEND CMAKE_CUDA_ARCHITECTURES ${_ct_a}-real)
  endforeach()
  list(APPEND CMAKE_CUDA_ARCHITECTURES ${_ct_newest}-virtual)
  set(CMAKE_CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}" CACHE STRING "CUDA architectures ctorch is built for")
endif()

enable_language(CUDA)
# Link with the C compiler, as without CUDA: the kernels' objects do not make
# libctorch, or the programs that link its static archive, CUDA-linked (nvcc's
# host compiler would replace the C compiler in links, e.g. clang's for the
# fuzz targets); the C++ runtime they need is named below.
set(CMAKE_CUDA_LINKER_PREFERENCE_PROPAGATES 0)
cmake_language(DEFER CALL set_target_properties ctorch ctorch_static PROPERTIES LINKER_LANGUAGE C)
set(CTORCH_HAVE_CUDA ON)
message(STATUS "CUDA backend: on (CUDA ${CUDAToolkit_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")

# ---- the kernels: one nvcc translation unit in an object library of its own ---------
# (its flags are nvcc's, not the C flags of ctorch_obj); its objects are added
# to libctorch below, once the library targets exist.
set(CTORCH_CUDA_WARNINGS -Werror=all-warnings)
set(_ct_cuda_host_warnings -Wall,-Wextra,-Wshadow,-Wno-unused-parameter)
if(CTORCH_WERROR)
  string(APPEND _ct_cuda_host_warnings ",-Werror")
else()
  set(CTORCH_CUDA_WARNINGS "")
endif()
add_library(ctorch_cuda_obj OBJECT ${PROJECT_SOURCE_DIR}/src/backends/cuda/cu_kernels.cu)
set_target_properties(ctorch_cuda_obj PROPERTIES
  CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON CUDA_EXTENSIONS OFF
  CUDA_VISIBILITY_PRESET hidden POSITION_INDEPENDENT_CODE ON
  CUDA_RUNTIME_LIBRARY None) # the runtime comes from CUDA::cudart_static, linked once below
target_include_directories(ctorch_cuda_obj PRIVATE
  ${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_BINARY_DIR}/include ${PROJECT_SOURCE_DIR}/src
  ${PROJECT_SOURCE_DIR}/src/backends/cuda)
target_compile_definitions(ctorch_cuda_obj PRIVATE CTORCH_BUILDING_SHARED CTORCH_HAVE_CUDA=1)
# Directory-wide options (the sanitizer and fuzzer flags of CMakeLists.txt)
# are gcc/clang flags that nvcc rejects; the kernels take none of them.
set_property(TARGET ctorch_cuda_obj PROPERTY COMPILE_OPTIONS "")
# Exact IEEE float division and square root, like the CPU and OpenCL paths;
# no fused multiply-add contraction, like gcc on the CPU (kdefs.h relies on it).
target_compile_options(ctorch_cuda_obj PRIVATE ${CTORCH_CUDA_WARNINGS} -Xcompiler=${_ct_cuda_host_warnings}
  --prec-div=true --prec-sqrt=true --fmad=false)
# The architectures are compiled in parallel (nvcc >= 11.2): the one .cu file
# is the longest step of an incremental build.
if(CUDAToolkit_VERSION VERSION_GREATER_EQUAL 11.2)
  target_compile_options(ctorch_cuda_obj PRIVATE --threads=0)
endif()

# ---- the host side: C files in ctorch_obj ----------------------------------------------
file(GLOB CTORCH_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backends/cuda/*.c)
target_sources(ctorch_obj PRIVATE ${CTORCH_CUDA_SOURCES})
string(REPLACE ";" " " _ct_archs_text "${CMAKE_CUDA_ARCHITECTURES}")
target_compile_definitions(ctorch_obj PRIVATE CTORCH_HAVE_CUDA=1 "CTORCH_CUDA_ARCHS=\"${_ct_archs_text}\"")
target_include_directories(ctorch_obj PRIVATE ${PROJECT_SOURCE_DIR}/src/backends/cuda)
target_include_directories(ctorch_obj SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})

# libctorch gets the kernel objects, the static CUDA runtime and libdl (for
# cu_dl.c); the shared library re-exports nothing of the static runtime.
cmake_language(DEFER CALL target_sources ctorch PRIVATE $<TARGET_OBJECTS:ctorch_cuda_obj>)
cmake_language(DEFER CALL target_sources ctorch_static PRIVATE $<TARGET_OBJECTS:ctorch_cuda_obj>)
cmake_language(DEFER CALL target_link_options ctorch PRIVATE "LINKER:--exclude-libs,ALL")

# The installed static library's users link the static CUDA runtime through
# the CUDAToolkit package (ctorchConfig.cmake looks for it); users of the
# shared library need no toolkit.
# nvcc's host code needs the C++ runtime (thread-safe statics in the launch
# stubs), which a C program linking the static library must name.
list(APPEND CTORCH_BACKEND_LIBS CUDA::cudart_static ${CMAKE_DL_LIBS} stdc++)
# For Libs.private of ctorch.pc: the runtime archive by its path, and what it needs.
set(CTORCH_BACKEND_PC_LIBS
  "${CTORCH_BACKEND_PC_LIBS} -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt -lpthread -lstdc++")
