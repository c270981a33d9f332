/*
 * ctorch/nn.h — modules, as torch.nn: layers that own parameters and
 * buffers, nest as named children, switch between train and eval, move to a
 * device, and list their parameters under PyTorch's state_dict names
 * ("layer1.0.conv1.weight", "bn1.running_mean", …).
 *
 * Ownership: a module is an object you free with ct_module_free (which
 * frees its children). Adding a child to a container or another module
 * transfers ownership of the child. Parameters and buffers are tensors owned
 * by their module; accessors return borrowed pointers that stay valid while
 * the module lives (ct_module_to moves them to a device in place, keeping
 * the same tensor objects, so optimizers created earlier stay valid).
 * ct_forward returns a new reference, like every op.
 */
#ifndef CTORCH_NN_H
#define CTORCH_NN_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"
#include "functional_loss.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_module ct_module;

/* The forward function of a module: returns a new reference or NULL. */
typedef ct_tensor *(*ct_forward_fn)(ct_module *self, const ct_tensor *input);
/* Copies a module's private state for ct_module_clone: returns a new state
 * that the clone owns (freed with the module's free_state), or NULL with
 * ct_set_error on failure. */
typedef void *(*ct_state_clone_fn)(const void *state);

/* ---- using modules ---- */
CT_API ct_tensor *ct_forward(ct_module *m, const ct_tensor *input);
/* ct_relu(ct_forward(m, input)), fused into the convolution when m is a
 * Conv2d (ct_conv2d_relu): for forward functions of the form
 * `F.relu(self.conv(x))`, which they compute in one pass where the backend
 * can. Same values, gradients and errors as the two calls. */
CT_API ct_tensor *ct_forward_relu(ct_module *m, const ct_tensor *input);
CT_API void ct_module_free(ct_module *m);
/* module.to(device): moves parameters, buffers and their gradients in place
 * (the tensor handles stay, so optimizers keep working) and returns m. All
 * or nothing: on failure (e.g. out of device memory half-way) it returns
 * NULL — ct_module_to_checked returns the error — and m is unchanged, on
 * its old device and still yours: keep your pointer rather than writing
 * `m = ct_module_to(m, dev)`. */
CT_API ct_module *ct_module_to(ct_module *m, ct_device device);
CT_API ct_status ct_module_to_checked(ct_module *m, ct_device device);
/* copy.deepcopy(m).to(device): a new module (the caller frees it) with
 * m's structure, sharing nothing with m. Each module of the tree is copied
 * with its type, forward function, printed options, training flag, private
 * state (see ct_module_set_state_clone) and children under the same names
 * in the same order; each parameter and buffer becomes a new contiguous
 * tensor on device with the same values, dtype and requires_grad, and a
 * parameter's .grad is copied too, as deepcopy does (optimizers made for m
 * do not see the copy). A tensor registered twice in m (tied weights) is
 * one tensor in the copy too. On failure — a module whose state cannot be
 * copied (the error names it), out of memory on device — it returns NULL
 * with the error set, having freed everything it made; m is unchanged. */
CT_API ct_module *ct_module_clone(const ct_module *m, ct_device device);
CT_API void ct_module_train(ct_module *m, bool training);   /* recursive */
#define ct_module_eval(m) ct_module_train((m), false)
CT_API bool ct_module_is_training(const ct_module *m);
CT_API const char *ct_module_type(const ct_module *m);      /* "Linear", "Sequential", … */

/* Parameters in registration order, children depth-first (as
 * named_parameters()). Write up to max borrowed pointers (and their full
 * dotted names, if names != NULL; names are valid while m lives); return
 * how many exist (-1 for a NULL module or a negative max). */
CT_API int ct_module_parameters(ct_module *m, ct_tensor **params, const char **names, int max);
/* Buffers (running_mean, running_var, num_batches_tracked, …), same rules. */
CT_API int ct_module_buffers(ct_module *m, ct_tensor **buffers, const char **names, int max);
/* Number of scalar parameters (sum of numel). */
CT_API int64_t ct_module_num_parameters(ct_module *m);
/* A parameter or buffer by its dotted name ("0.weight"), borrowed, or NULL. */
CT_API ct_tensor *ct_module_get(ct_module *m, const char *name);
/* A child by name ("layer1", "0"), borrowed, or NULL. */
CT_API ct_module *ct_module_child(ct_module *m, const char *name);
/* Print the module tree as PyTorch's repr does. */
CT_API ct_status ct_module_print(const ct_module *m);

/* ---- writing modules ---- */
/* A module with a forward function and optional private state (freed with
 * free_state when the module is freed). */
CT_API ct_module *ct_module_new(const char *type, ct_forward_fn forward, void *state, void (*free_state)(void *));
CT_API void *ct_module_state(ct_module *m);
/* How ct_module_clone copies m's private state (m's own, not its
 * children's): with clone_state, whose result the clone frees with the
 * same free_state. A module with state and no clone function cannot be
 * cloned (ct_module_clone fails naming it); one without state needs none.
 * The built-in layers have theirs. State should hold options, not pointers
 * to the module's tensors or children: a forward function finds those by
 * name (ct_module_param, ct_module_child), and so finds the clone's. NULL
 * clone_state removes the function. */
CT_API ct_status ct_module_set_state_clone(ct_module *m, ct_state_clone_fn clone_state);
/* Register a parameter (takes the reference you pass; sets requires_grad),
 * a buffer (takes the reference), or a child (takes ownership). Names
 * follow PyTorch: no dots, unique within the module. */
CT_API ct_status ct_module_add_parameter(ct_module *m, const char *name, ct_tensor *t);
CT_API ct_status ct_module_add_buffer(ct_module *m, const char *name, ct_tensor *t);
CT_API ct_status ct_module_add_child(ct_module *m, const char *name, ct_module *child);
/* Registered entries of this module only (not children), borrowed. */
CT_API ct_tensor *ct_module_param(ct_module *m, const char *name);
CT_API ct_tensor *ct_module_buffer(ct_module *m, const char *name);
CT_API int ct_module_num_children(const ct_module *m);
/* The i-th child; NULL and CT_ERR_INDEX when i is out of range. */
CT_API ct_module *ct_module_child_at(ct_module *m, int i);

/* F.linear: input [*, in] @ weightᵀ + bias (bias may be NULL). */
CT_API ct_tensor *ct_linear(const ct_tensor *input, const ct_tensor *weight, const ct_tensor *bias);

/* ---- layers (PyTorch's default initialisation) ---- */
CT_API ct_module *ct_nn_linear(int64_t in_features, int64_t out_features, bool bias);
CT_API ct_module *ct_nn_relu(void);
CT_API ct_module *ct_nn_gelu(void);
CT_API ct_module *ct_nn_sigmoid(void);
CT_API ct_module *ct_nn_tanh(void);
CT_API ct_module *ct_nn_identity(void);
CT_API ct_module *ct_nn_flatten(int start_dim, int end_dim);  /* nn.Flatten(): 1, -1 */
/* nn.Sequential: takes ownership of the n modules; children are named "0", "1", … */
CT_API ct_module *ct_nn_sequential(ct_module *const *modules, int n);
#define CT_SEQUENTIAL(...) \
    ct_nn_sequential((ct_module *const[]){__VA_ARGS__}, \
                     (int)(sizeof((ct_module *const[]){__VA_ARGS__}) / sizeof(ct_module *)))
/* Appends m (taking ownership, also on failure) to a Sequential; any other
 * module is refused with CT_ERR_INVALID_ARG. */
CT_API ct_status ct_sequential_append(ct_module *seq, ct_module *m);

/* nn.Conv2d(in, out, kernel_size, stride=1, padding=0, dilation=1, groups=1,
 * bias=True): square kernels; zero fields mean PyTorch's defaults. */
typedef struct ct_conv2d_opts {
    int64_t stride, padding, dilation, groups;
    bool no_bias;
} ct_conv2d_opts;
CT_API ct_module *ct_nn_conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, ct_conv2d_opts o);
/* nn.BatchNorm1d/2d(num_features, eps=1e-5, momentum=0.1): parameters
 * weight, bias; buffers running_mean, running_var, num_batches_tracked. */
typedef struct ct_batchnorm_opts {
    double eps, momentum;  /* 0: defaults */
} ct_batchnorm_opts;
CT_API ct_module *ct_nn_batchnorm1d(int64_t num_features, ct_batchnorm_opts o);
CT_API ct_module *ct_nn_batchnorm2d(int64_t num_features, ct_batchnorm_opts o);
CT_API ct_module *ct_nn_layernorm(ct_shape normalized_shape, double eps); /* eps <= 0: 1e-5 */
/* padding_idx: CT_NO_PADDING_IDX (ctorch/functional_nn.h) for none. */
CT_API ct_module *ct_nn_embedding(int64_t num_embeddings, int64_t embedding_dim, int64_t padding_idx);
CT_API ct_module *ct_nn_dropout(double p);
/* stride 0 means stride = kernel, as PyTorch's default. */
CT_API ct_module *ct_nn_maxpool2d(int64_t kernel, int64_t stride, int64_t padding);
CT_API ct_module *ct_nn_avgpool2d(int64_t kernel, int64_t stride, int64_t padding);
CT_API ct_module *ct_nn_adaptive_avgpool2d(int64_t out_h, int64_t out_w);

/* ---- losses (criterions) ----
 * nn.CrossEntropyLoss, nn.MSELoss, nn.NLLLoss and nn.BCEWithLogitsLoss,
 * with the options of the functional losses (ct_loss_opts,
 * ctorch/functional_loss.h), given once when the criterion is made:
 *
 *     criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
 *  -> ct_module *criterion = ct_nn_cross_entropy_loss(.label_smoothing = 0.1);
 *     loss = criterion(model(x), y)
 *  -> ct_tensor *loss = ct_loss(criterion, ct_forward(model, x), y);
 *
 * A weight (and BCEWithLogitsLoss's pos_weight) becomes the buffer "weight"
 * ("pos_weight"), as PyTorch registers it: it moves with ct_module_to and
 * is in the state_dict. The buffer is a new handle on the tensor's data (a
 * detached one: ct_module_to moves the module's handle, not yours). Each
 * criterion refuses the options its loss does not take. */
#define ct_nn_cross_entropy_loss(...) ct_nn_cross_entropy_loss_opts(CT_LOSS_OPTS(__VA_ARGS__))
#define ct_nn_mse_loss(...) ct_nn_mse_loss_opts(CT_LOSS_OPTS(__VA_ARGS__))
#define ct_nn_nll_loss(...) ct_nn_nll_loss_opts(CT_LOSS_OPTS(__VA_ARGS__))
#define ct_nn_bce_with_logits_loss(...) ct_nn_bce_with_logits_loss_opts(CT_LOSS_OPTS(__VA_ARGS__))
CT_API ct_module *ct_nn_cross_entropy_loss_opts(ct_loss_opts o);
CT_API ct_module *ct_nn_mse_loss_opts(ct_loss_opts o);
CT_API ct_module *ct_nn_nll_loss_opts(ct_loss_opts o);
CT_API ct_module *ct_nn_bce_with_logits_loss_opts(ct_loss_opts o);
/* criterion(input, target): the loss of a criterion above, computed by its
 * functional with the criterion's options and buffers (exactly the same
 * values and gradients). A criterion takes two tensors, so ct_forward on it
 * fails and points here; ct_loss on any other module fails too. */
CT_API ct_tensor *ct_loss(ct_module *criterion, const ct_tensor *input, const ct_tensor *target);

/* ---- state_dict and checkpoints (ctorch/io.h) ---- */
struct ct_tensor_dict;
/* model.state_dict(): parameters and buffers under PyTorch's names,
 * detached, sharing the module's data; free with ct_tensor_dict_free. */
CT_API struct ct_tensor_dict *ct_module_state_dict(ct_module *m);
/* model.load_state_dict(d, strict): copies values into the module's tensors
 * (converting device and dtype). Shape mismatches are always errors; with
 * strict, missing and unexpected keys are too (PyTorch's messages). Nothing
 * is changed when an error is reported. A missing BatchNorm
 * num_batches_tracked is set to 0, as PyTorch does for old checkpoints. */
CT_API ct_status ct_module_load_state_dict(ct_module *m, const struct ct_tensor_dict *d, bool strict);
/* Save / load the state_dict as a safetensors file (atomic save). */
CT_API ct_status ct_module_save(ct_module *m, const char *path);
CT_API ct_status ct_module_load(ct_module *m, const char *path, bool strict);

/* ---- model zoo ---- */
/* MLP: Flatten, then Linear+ReLU for each hidden size, then Linear. */
CT_API ct_module *ct_model_mlp(int64_t in_features, const int64_t *hidden, int n_hidden, int64_t num_classes);
/* The Fashion-MNIST CNN of WORKLOADS.md (children c1, c2, f1, f2). */
CT_API ct_module *ct_model_fmnist_cnn(void);
/* torchvision.models.resnet18(num_classes) with torchvision's layout,
 * initialisation and state_dict names. */
CT_API ct_module *ct_model_resnet18(int64_t num_classes);

/* ---- fusion for inference (docs/training.md) ---- */
/* torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn): a NEW Conv2d (caller
 * frees; conv and bn are untouched) with conv's stride, padding, dilation
 * and groups and always a bias, computing bn(conv(x)) of the eval-mode bn:
 *   weight = w * gamma / sqrt(running_var + eps)   per output channel
 *   bias   = (b - running_mean) * gamma / sqrt(running_var + eps) + beta
 * (b = 0 without a conv bias). Computed in float64, rounded once to the
 * parameters' dtype, on conv's device; the module is in eval mode. As in
 * PyTorch, weight requires grad iff conv's weight does, bias iff conv had a
 * bias that does. Both modules must be in eval mode ("Fusion only for
 * eval!"), a Conv2d and a BatchNorm2d of ct_nn_*, with matching channel
 * counts and all tensors on one device in one dtype. */
CT_API ct_module *ct_fuse_conv_bn_eval(ct_module *conv, ct_module *bn);
/* torch.ao.quantization.fuse_modules(m, [conv_name, bn_name]) in eval mode:
 * the child at dotted path conv_name ("layer1.0.conv1") becomes the fused
 * conv and the one at bn_name ("layer1.0.bn1") an Identity, so the
 * parent's forward runs the fused model. The replaced modules are freed:
 * pointers to their parameters (an optimizer's, ct_module_get's) dangle.
 * All or nothing: on error the model is unchanged. */
CT_API ct_status ct_module_fuse_conv_bn(ct_module *m, const char *conv_name, const char *bn_name);
/* Fuse every pair of m (recursively), as ct_module_fuse_conv_bn does:
 * inside a Sequential, a Conv2d child directly followed by a BatchNorm2d
 * child; elsewhere, torchvision's naming, a Conv2d child "conv<s>" with a
 * BatchNorm2d sibling "bn<s>" (conv1/bn1, conv2/bn2). ct_model_resnet18
 * gets all its 20 pairs fused (stem, blocks, downsample.0/1). Returns the
 * number of pairs fused (0: none found; running it again finds none), or -1
 * on error with the model unchanged. */
CT_API int ct_module_fuse_conv_bn_all(ct_module *m);

#ifdef __cplusplus
}
#endif
#endif /* CTORCH_NN_H */
