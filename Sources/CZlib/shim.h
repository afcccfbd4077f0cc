// zlib for Pushline's per-message deflate (apt: zlib1g-dev).
#include <zlib.h>
