/*
 * ctorch/functional.h — torch.nn.functional: the neural-network ops as plain
 * functions (convolution, pooling, normalisation, activations' relatives,
 * losses), on every backend. Modules (ctorch/nn.h) are built from these.
 */
#ifndef CTORCH_FUNCTIONAL_H
#define CTORCH_FUNCTIONAL_H

#include "functional_conv.h"
#include "functional_nn.h"
#include "functional_loss.h"

#endif /* CTORCH_FUNCTIONAL_H */
