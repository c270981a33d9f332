/*
 * cu_nvtx.c — NVTX ranges for the profiler's named ranges, so that Nsight
 * Systems shows CT_RECORD_FUNCTION blocks on the CUDA timeline. NVTX 3 is
 * header-only: without a tool attached (nsys sets NVTX_INJECTION64_PATH) a
 * push or pop returns at once, so linking it costs nothing.
 */
#include <nvtx3/nvToolsExt.h>

#include "cu_internal.h"

void ct_cu_nvtx_push(const char *name) { nvtxRangePushA(name); }
void ct_cu_nvtx_pop(void) { nvtxRangePop(); }
