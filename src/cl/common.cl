// Prepended to every kernel source by the program cache.
#ifndef DLCAFFE_COMMON_CL
#define DLCAFFE_COMMON_CL
// Index of a work-item in a 1-D launch (Context::Launch1D).
#define GLOBAL_INDEX ((int)get_global_id(0))
#endif
