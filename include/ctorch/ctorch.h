/*
 * ctorch/ctorch.h — the umbrella header: include this to get all of ctorch.
 */
#ifndef CTORCH_CTORCH_H
#define CTORCH_CTORCH_H

#include "ctorch/version.h" /* generated into the build tree */
#include "status.h"
#include "dtype.h"
#include "device.h"
#include "tensor.h"
#include "ops.h"
#include "random.h"
#include "stream.h"
#include "memory.h"
#include "autograd.h"
#include "nn.h"
#include "prune.h"
#include "functional.h"
#include "optim.h"
#include "io.h"
#include "data.h"
#include "summary.h"
#include "backends.h"
#include "amp.h"
#include "distributed.h"
#include "profiler.h"
#include "extension.h"
#include "quantization.h"

#endif /* CTORCH_CTORCH_H */
