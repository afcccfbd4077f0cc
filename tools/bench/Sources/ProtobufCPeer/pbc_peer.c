#include "pbc_peer.h"
#include "tracker.pb-c.h"

void *pbc_unpack_card(const uint8_t *data, size_t length) {
  return pushline__tracker__tracker_card__unpack(NULL, length, data);
}

void *pbc_unpack_batch(const uint8_t *data, size_t length) {
  return pushline__tracker__tracker_card_batch__unpack(NULL, length, data);
}

size_t pbc_packed_size(const void *message) {
  return protobuf_c_message_get_packed_size((const ProtobufCMessage *)message);
}

size_t pbc_pack(const void *message, uint8_t *out) {
  return protobuf_c_message_pack((const ProtobufCMessage *)message, out);
}

void pbc_free(void *message) {
  protobuf_c_message_free_unpacked((ProtobufCMessage *)message, NULL);
}
