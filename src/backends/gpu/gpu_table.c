/*
 * gpu_table.c — the ops table every GPU backend starts from. A backend's
 * own table is a copy of ct_gpu_ops with its few entries put over it (in
 * its prepare hook: OpenCL adds its BLAS matmul and the supports query;
 * CUDA adds cuBLAS and cuDNN), so the entries that are the same for every
 * GPU are listed once, here, and no backend forwards calls to another.
 */
#include "gpu.h"

const ct_backend_ops ct_gpu_ops = {
    .copy = ct_gpu_copy,
    .fill = ct_gpu_fill,
    .arange = ct_gpu_arange,
    .random = ct_gpu_random,
    .unary = ct_gpu_unary,
    .binary = ct_gpu_binary,
    .where = ct_gpu_where,
    .reduce = ct_gpu_reduce,
    .matmul = NULL, /* each backend's BLAS (with ct_gpu_matmul_int for integers) */
    .softmax = ct_gpu_softmax,
    .index_select = ct_gpu_index_select,
    .gather = ct_gpu_gather,
    .conv = &ct_gpu_conv_ops,
    .nn = &ct_gpu_nn_ops,
    .loss = &ct_gpu_loss_ops,
    .supports = NULL,
};
