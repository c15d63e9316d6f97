#ifndef WSPEC_LAYOUT_H
#define WSPEC_LAYOUT_H
#include "abi.h"
typedef struct wspec_layout_entry { const char *name; size_t offset; size_t size; int is_struct; } wspec_layout_entry;
int wspec_layout_count(void);
wspec_layout_entry wspec_layout_at(int i);
#endif
