/*
 * cuda_testutil.cu — the stream hold of cuda_testutil.h: a kernel that spins
 * on a flag the host sets. The flags live in one page of mapped pinned host
 * memory allocated once per process and never freed (freeing pinned memory
 * waits for the whole device, which a held stream may not let finish).
 */
#include <cuda_runtime_api.h>
#include <stdio.h>

#define CT_CU_GATE_SLOTS 256

struct ct_cu_gate {
    volatile int *flag; /* host address of this gate's slot */
};

static volatile int *g_flags;       /* host view of the slots */
static int *g_flags_device;         /* the same page as the GPU sees it */
static int g_next_slot;
static struct ct_cu_gate g_gates[CT_CU_GATE_SLOTS];

/* One thread polls the host flag; volatile makes every iteration read the
 * memory again and __nanosleep keeps the polling gentle on the bus. */
__global__ void ct_cu_spin_until_set(const volatile int *flag) {
    while (*flag == 0) __nanosleep(1000);
}

static cudaError_t map_flags(void) {
    if (g_flags) return cudaSuccess;
    void *host = NULL;
    cudaError_t err = cudaHostAlloc(&host, CT_CU_GATE_SLOTS * sizeof(int), cudaHostAllocMapped);
    if (err == cudaSuccess) err = cudaHostGetDevicePointer((void **)&g_flags_device, host, 0);
    if (err == cudaSuccess) g_flags = (volatile int *)host;
    return err;
}

extern "C" ct_cu_gate *ct_cu_hold_stream(void *cuda_stream, char *why, size_t why_size) {
    cudaError_t err = map_flags();
    if (err != cudaSuccess) {
        snprintf(why, why_size, "mapping the flags: %s", cudaGetErrorString(err));
        return NULL;
    }
    if (g_next_slot >= CT_CU_GATE_SLOTS) {
        snprintf(why, why_size, "more than %d holds in one process", CT_CU_GATE_SLOTS);
        return NULL;
    }
    int slot = g_next_slot++;
    g_flags[slot] = 0;
    ct_cu_spin_until_set<<<1, 1, 0, (cudaStream_t)cuda_stream>>>(g_flags_device + slot);
    err = cudaGetLastError();
    if (err != cudaSuccess) {
        snprintf(why, why_size, "launching the spin kernel: %s", cudaGetErrorString(err));
        return NULL;
    }
    g_gates[slot].flag = g_flags + slot;
    return &g_gates[slot];
}

extern "C" void ct_cu_gate_open(ct_cu_gate *g) {
    if (!g) return;
    __sync_synchronize();
    *g->flag = 1;
    __sync_synchronize();
}
