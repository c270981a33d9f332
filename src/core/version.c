/*
 * version.c — run-time version and build description, so a program can
 * detect a header/library mismatch and report how ctorch was built.
 */
#include <stdio.h>

#include "ctorch/version.h"
#include "internal.h"

unsigned ct_version_number(void) { return CTORCH_VERSION_NUMBER; }
const char *ct_version_string(void) { return CTORCH_VERSION_STRING; }
