/*
 * main.c — ctorch-info: what users check first when something does not work
 * (python -m torch.utils.collect_env plus nvidia-smi, in one program). It
 * prints the ctorch version and build, the system and CPU, the versions of
 * the CUDA driver and libraries, OpenCL, BLAS and oneDNN, and a table of the
 * devices ctorch can use with their memory. A missing library or GPU is
 * reported, never an error: the program exits 0 whatever it finds.
 *
 *   ctorch-info                 text for humans and bug reports
 *   ctorch-info --format json   one JSON object with stable keys, for scripts
 */
#include <stdlib.h>
#include <string.h>

#include "info.h"

/* Exit codes: 0 report printed; 2 bad command line. */
enum { INFO_EXIT_OK = 0, INFO_EXIT_USAGE = 2 };

const char *const info_env_names[INFO_NUM_ENV] = {
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING",
    "OMP_NUM_THREADS",      "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
    "OCL_ICD_VENDORS",      "POCL_DEVICES",     "LD_LIBRARY_PATH"};

static void usage(FILE *f) {
    fputs("Usage: ctorch-info [--format text|json]\n"
          "\n"
          "Prints the environment ctorch runs in, for bug reports: the ctorch version and\n"
          "build options, OS, libc, CPU (model, ISA features, cores, threads), the CUDA\n"
          "toolkit ctorch was built with and the versions of the CUDA driver, cuBLAS,\n"
          "cuDNN, NCCL, OpenCL platforms, OpenBLAS and oneDNN found on this machine, and\n"
          "each device ctorch can use with its memory (like nvidia-smi).\n"
          "\n"
          "  --format text   human-readable report (default)\n"
          "  --format json   one JSON object with stable keys, for scripts\n"
          "  --help          this message\n"
          "\n"
          "Missing libraries and GPUs are reported, not errors: the exit status is 0,\n"
          "or 2 for a bad command line.\n",
          f);
}

typedef enum { FORMAT_TEXT, FORMAT_JSON } info_format;

/* Returns -1 to go on, otherwise the exit code. */
static int parse_args(int argc, char **argv, info_format *format) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return INFO_EXIT_OK;
        }
        if (strcmp(arg, "--format") == 0) {
            if (i + 1 >= argc) {
                fputs("ctorch-info: --format needs a value: text or json\n", stderr);
                return INFO_EXIT_USAGE;
            }
            value = argv[++i];
        } else if (strncmp(arg, "--format=", 9) == 0) {
            value = arg + 9;
        } else {
            fprintf(stderr, "ctorch-info: unknown option '%s' (see --help)\n", arg);
            return INFO_EXIT_USAGE;
        }
        if (strcmp(value, "text") == 0) *format = FORMAT_TEXT;
        else if (strcmp(value, "json") == 0) *format = FORMAT_JSON;
        else {
            fprintf(stderr, "ctorch-info: --format must be text or json, got '%s'\n", value);
            return INFO_EXIT_USAGE;
        }
    }
    return -1;
}

int main(int argc, char **argv) {
    info_format format = FORMAT_TEXT;
    int rc = parse_args(argc, argv, &format);
    if (rc >= 0) return rc;

    static info_report report; /* large (fixed-size strings): not on the stack */
    info_collect_build(&report.build);
    info_collect_system(&report.system);
    info_collect_cpu(&report.cpu);
    info_collect_libs(&report.libs, &report.build);
    info_collect_devices(&report.devices, &report.build, &report.cpu, &report.libs);

    if (format == FORMAT_JSON) info_print_json(stdout, &report);
    else info_print_text(stdout, &report);
    fflush(stdout);
    return INFO_EXIT_OK;
}
