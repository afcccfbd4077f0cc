// A small C surface over protobuf-c for the benchmark: unpack, size, pack, free.
#ifndef PBC_PEER_H
#define PBC_PEER_H
#include <stddef.h>
#include <stdint.h>

/// Unpacks a pushline.tracker.TrackerCard; NULL on failure. Free with pbc_free.
void *pbc_unpack_card(const uint8_t *data, size_t length);
/// Unpacks a pushline.tracker.TrackerCardBatch; NULL on failure. Free with pbc_free.
void *pbc_unpack_batch(const uint8_t *data, size_t length);
/// The packed size of an unpacked message.
size_t pbc_packed_size(const void *message);
/// Packs an unpacked message into `out`, which holds pbc_packed_size bytes; returns the size.
size_t pbc_pack(const void *message, uint8_t *out);
/// Frees a message returned by pbc_unpack_*.
void pbc_free(void *message);
#endif
