# cmake/opencl.cmake — the optional OpenCL backend (included from the main
# CMakeLists.txt). CTORCH_OPENCL=AUTO builds it when the OpenCL headers, an
# ICD loader and CLBlast are all found; ON makes their absence an error; OFF
# leaves the build CPU-only. The kernels of src/kernels/ are embedded into
# the library as string literals by cmake/embed_kernels.cmake, so the library
# needs no files at run time.
set(CTORCH_OPENCL AUTO CACHE STRING "Build the OpenCL backend: AUTO (when OpenCL and CLBlast are found), ON or OFF")
set_property(CACHE CTORCH_OPENCL PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${CTORCH_OPENCL}" _ct_ocl_mode)
set(CTORCH_HAVE_OPENCL OFF)

if(_ct_ocl_mode STREQUAL "OFF")
  message(STATUS "OpenCL backend: off (CTORCH_OPENCL=OFF)")
  return()
endif()

# ---- find OpenCL and CLBlast ------------------------------------------------------
set(CL_TARGET_OPENCL_VERSION 120) # the API level we use; silences FindOpenCL's notice
find_package(OpenCL QUIET)
set(_ct_clblast_target "")
if(OpenCL_FOUND)
  pkg_check_modules(CLBLAST QUIET IMPORTED_TARGET clblast)
  if(CLBLAST_FOUND)
    set(_ct_clblast_target PkgConfig::CLBLAST)
  else()
    find_library(CTORCH_CLBLAST_LIBRARY clblast)
    find_path(CTORCH_CLBLAST_INCLUDE_DIR clblast_c.h)
    if(CTORCH_CLBLAST_LIBRARY AND CTORCH_CLBLAST_INCLUDE_DIR)
      add_library(ctorch_clblast UNKNOWN IMPORTED)
      set_target_properties(ctorch_clblast PROPERTIES IMPORTED_LOCATION "${CTORCH_CLBLAST_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${CTORCH_CLBLAST_INCLUDE_DIR}")
      set(_ct_clblast_target ctorch_clblast)
    endif()
  endif()
endif()

if(NOT OpenCL_FOUND OR NOT _ct_clblast_target)
  if(NOT OpenCL_FOUND)
    set(_ct_missing "OpenCL headers and ICD loader (Debian: ocl-icd-opencl-dev opencl-headers)")
  else()
    set(_ct_missing "CLBlast (Debian: libclblast-dev)")
  endif()
  if(_ct_ocl_mode STREQUAL "ON")
    message(FATAL_ERROR "CTORCH_OPENCL=ON but ${_ct_missing} not found")
  endif()
  message(STATUS "OpenCL backend: off (${_ct_missing} not found)")
  return()
endif()
set(CTORCH_HAVE_OPENCL ON)
message(STATUS "OpenCL backend: on (OpenCL ${OpenCL_VERSION_STRING}, CLBlast)")

# ---- the embedded kernel program -------------------------------------------------
# kdefs.h (the dialect layer) and philox.h come first, then every .kh file in
# name order; a new .kh file is picked up at the next configure.
file(GLOB CTORCH_KERNEL_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/kernels/*.kh)
file(GLOB CTORCH_KERNEL_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/kernels/*.h ${PROJECT_SOURCE_DIR}/src/kernels/*.def)
list(SORT CTORCH_KERNEL_SOURCES)
set(CTORCH_KERNEL_PROGRAM "")
foreach(_ct_first kdefs.h philox.h)
  if(EXISTS ${PROJECT_SOURCE_DIR}/src/kernels/${_ct_first})
    list(APPEND CTORCH_KERNEL_PROGRAM ${PROJECT_SOURCE_DIR}/src/kernels/${_ct_first})
  endif()
endforeach()
list(APPEND CTORCH_KERNEL_PROGRAM ${CTORCH_KERNEL_SOURCES})
set(_ct_cl_generated ${CMAKE_CURRENT_BINARY_DIR}/generated/cl_program_source.c)
add_custom_command(OUTPUT ${_ct_cl_generated}
  COMMAND ${CMAKE_COMMAND} "-DOUT=${_ct_cl_generated}" "-DINPUTS=${CTORCH_KERNEL_PROGRAM}"
          -P ${PROJECT_SOURCE_DIR}/cmake/embed_kernels.cmake
  DEPENDS ${PROJECT_SOURCE_DIR}/cmake/embed_kernels.cmake ${CTORCH_KERNEL_HEADERS} ${CTORCH_KERNEL_SOURCES}
  COMMENT "Embedding the OpenCL kernel program"
  VERBATIM)

# ---- the backend's sources -----------------------------------------------------
file(GLOB CTORCH_OPENCL_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backends/opencl/*.c)
target_sources(ctorch_obj PRIVATE ${CTORCH_OPENCL_SOURCES} ${_ct_cl_generated})
target_compile_definitions(ctorch_obj PRIVATE CTORCH_HAVE_OPENCL=1 CL_TARGET_OPENCL_VERSION=120)
target_include_directories(ctorch_obj PRIVATE ${PROJECT_SOURCE_DIR}/src/backends/opencl)
target_link_libraries(ctorch_obj PRIVATE OpenCL::OpenCL ${_ct_clblast_target})

# The installed static library's users link these themselves (plain names);
# the build tree uses the found targets.
list(APPEND CTORCH_BACKEND_LIBS
  $<BUILD_INTERFACE:OpenCL::OpenCL> $<BUILD_INTERFACE:${_ct_clblast_target}>
  $<INSTALL_INTERFACE:clblast> $<INSTALL_INTERFACE:OpenCL>)
# For Libs.private of ctorch.pc.
set(CTORCH_BACKEND_PC_LIBS "${CTORCH_BACKEND_PC_LIBS} -lclblast -lOpenCL")

# tests/CMakeLists.txt runs every test on PoCL's two CPU devices (ENVIRONMENT).
