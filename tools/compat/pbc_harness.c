/*
 * pbc-harness: protobuf-c as Pushline's reference peer.
 *
 * Generic over protobuf-c's reflection (ProtobufCMessageDescriptor), so every message of
 * proto/ is covered without per-type code. Record formats (little-endian) are in README.md.
 *
 *   pbc-harness roundtrip            named records in, result records out: unpack, then pack
 *   pbc-harness generate COUNT SEED  COUNT random messages of every type, as named records
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "onboarding.pb-c.h"
#include "rpc.pb-c.h"
#include "tracker.pb-c.h"

static const ProtobufCMessageDescriptor *const all_types[] = {
    &pushline__tracker__tracker_card__descriptor,
    &pushline__tracker__tracker_card_payload__descriptor,
    &pushline__tracker__tracker_recent_trips_card__descriptor,
    &pushline__tracker__money__descriptor,
    &pushline__tracker__tracker_daily_earnings_card__descriptor,
    &pushline__tracker__tracker_weekly_earnings_card__descriptor,
    &pushline__tracker__dx_gy_tier__descriptor,
    &pushline__tracker__tracker_dx_gy_progress_card__descriptor,
    &pushline__tracker__tracker_dx_gy_completion_card__descriptor,
    &pushline__tracker__outage_state__descriptor,
    &pushline__tracker__tracker_card_batch__descriptor,
    &pushline__onboarding__question__descriptor,
    &pushline__onboarding__answer_value__descriptor,
    &pushline__onboarding__answer__descriptor,
    &pushline__onboarding__answer_batch__descriptor,
    &pushline__onboarding__validation_error__descriptor,
    &pushline__onboarding__session__descriptor,
    &pushline__onboarding__answer_response__descriptor,
    &pushline__rpc__metadata_entry__descriptor,
    &pushline__rpc__limits__descriptor,
    &pushline__rpc__client_hello__descriptor,
    &pushline__rpc__server_hello__descriptor,
    &pushline__rpc__call_start__descriptor,
    &pushline__rpc__call_status__descriptor,
    &pushline__rpc__go_away__descriptor,
    &pushline__rpc__health_check_request__descriptor,
    &pushline__rpc__health_check_response__descriptor,
};
#define TYPE_COUNT (sizeof all_types / sizeof all_types[0])

static void die(const char *message) {
    fprintf(stderr, "pbc-harness: %s\n", message);
    exit(2);
}

static const ProtobufCMessageDescriptor *find_type(const char *name) {
    for (size_t i = 0; i < TYPE_COUNT; i++)
        if (strcmp(all_types[i]->name, name) == 0) return all_types[i];
    return NULL;
}

/* ---- record I/O ---------------------------------------------------------------------- */

static int read_exact(void *buffer, size_t count) {
    return count == 0 || fread(buffer, 1, count, stdin) == count;
}

static uint32_t read_le(size_t width) {
    uint8_t bytes[4] = {0};
    if (!read_exact(bytes, width)) die("truncated record");
    uint32_t value = 0;
    for (size_t i = 0; i < width; i++) value |= (uint32_t)bytes[i] << (8 * i);
    return value;
}

static void write_le(uint32_t value, size_t width) {
    uint8_t bytes[4];
    for (size_t i = 0; i < width; i++) bytes[i] = (uint8_t)(value >> (8 * i));
    fwrite(bytes, 1, width, stdout);
}

static void write_named(const char *name, const uint8_t *data, size_t length) {
    write_le((uint32_t)strlen(name), 2);
    fwrite(name, 1, strlen(name), stdout);
    write_le((uint32_t)length, 4);
    fwrite(data, 1, length, stdout);
}

static uint8_t *pack(const ProtobufCMessage *message, size_t *length) {
    *length = protobuf_c_message_get_packed_size(message);
    uint8_t *buffer = malloc(*length ? *length : 1);
    if (!buffer) die("out of memory");
    if (protobuf_c_message_pack(message, buffer) != *length) die("pack wrote an unexpected size");
    return buffer;
}

static int roundtrip(void) {
    int first;
    while ((first = fgetc(stdin)) != EOF) {
        ungetc(first, stdin);
        size_t name_length = read_le(2);
        char name[256];
        if (name_length >= sizeof name || !read_exact(name, name_length)) die("bad type name");
        name[name_length] = 0;
        const ProtobufCMessageDescriptor *type = find_type(name);
        if (!type) {
            fprintf(stderr, "pbc-harness: unknown type %s\n", name);
            exit(2);
        }
        size_t length = read_le(4);
        uint8_t *input = malloc(length ? length : 1);
        if (!input || !read_exact(input, length)) die("truncated record");
        ProtobufCMessage *message = protobuf_c_message_unpack(type, NULL, length, input);
        free(input);
        if (!message) {
            fputc(1, stdout);
            write_le(0, 4);
            continue;
        }
        size_t packed_length;
        uint8_t *packed = pack(message, &packed_length);
        fputc(0, stdout);
        write_le((uint32_t)packed_length, 4);
        fwrite(packed, 1, packed_length, stdout);
        free(packed);
        protobuf_c_message_free_unpacked(message, NULL);
    }
    return 0;
}

/* ---- an arena for generated messages, released after each is packed ------------------- */

typedef struct Chunk {
    struct Chunk *next;
    size_t used, size;
    _Alignas(16) uint8_t data[];
} Chunk;

static Chunk *arena;

static void *arena_alloc(size_t size) {
    size = (size + 15) & ~(size_t)15;
    if (!arena || arena->size - arena->used < size) {
        size_t chunk_size = size > (1 << 20) ? size : (1 << 20);
        Chunk *chunk = malloc(sizeof(Chunk) + chunk_size);
        if (!chunk) die("out of memory");
        chunk->next = arena;
        chunk->used = 0;
        chunk->size = chunk_size;
        arena = chunk;
    }
    void *result = arena->data + arena->used;
    arena->used += size;
    memset(result, 0, size);
    return result;
}

static void arena_reset(void) {
    while (arena) {
        Chunk *next = arena->next;
        free(arena);
        arena = next;
    }
}

/* ---- random values, aimed at the corners codecs get wrong ------------------------------ */

static uint64_t rng_state;

static uint64_t next_random(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t below(uint64_t bound) { return next_random() % bound; }

static const uint64_t boundaries[] = {
    0, 1, 127, 128, 16383, 16384, (1ull << 21) - 1, 1ull << 21, (1ull << 28) - 1, 1ull << 28,
    (1ull << 35) - 1, 1ull << 35, 1ull << 42, 1ull << 49, 1ull << 56, (1ull << 63) - 1, 1ull << 63, UINT64_MAX,
};
#define BOUNDARY_COUNT (sizeof boundaries / sizeof boundaries[0])

static int64_t random_int64(void) {
    switch (below(4)) {
    case 0: return (int64_t)boundaries[below(BOUNDARY_COUNT)];
    case 1: return -(int64_t)(boundaries[below(BOUNDARY_COUNT)] & (UINT64_MAX >> 1));
    case 2: {
        static const int64_t extremes[] = {INT64_MIN, INT64_MAX, -1, 0};
        return extremes[below(4)];
    }
    default: return (int64_t)below(4000000000ull) - 1000000;
    }
}

static uint32_t random_uint32(void) {
    if (below(2)) {
        uint64_t value;
        do value = boundaries[below(BOUNDARY_COUNT)]; while (value > UINT32_MAX);
        return (uint32_t)value;
    }
    return (uint32_t)next_random();
}

static double random_double(void) {
    static const double corners[] = {0.0, -0.0, 0.1, 1.5, -2.25, 1.7976931348623157e308, -1.7976931348623157e308,
                                     4.9406564584124654e-324, 2.2250738585072014e-308, NAN, INFINITY, -INFINITY, 1e300, 1e-300};
    switch (below(3)) {
    case 0: return corners[below(sizeof corners / sizeof corners[0])];
    case 1: {
        uint64_t bits = next_random();
        double value;
        memcpy(&value, &bits, sizeof value);
        return value;
    }
    default: return ((double)below(2000000001) - 1e9) / 1000.0;
    }
}

static float random_float(void) {
    static const float corners[] = {0.0f, -0.0f, 0.1f, 0.5f, 1.0f, 3.40282347e38f, 1.40129846e-45f, NAN, INFINITY, -INFINITY};
    switch (below(3)) {
    case 0: return corners[below(sizeof corners / sizeof corners[0])];
    case 1: {
        uint32_t bits = (uint32_t)next_random();
        float value;
        memcpy(&value, &bits, sizeof value);
        return value;
    }
    default: return (float)below(1000001) / 1e6f;
    }
}

/* UTF-8 pieces: ASCII, 2-, 3- and 4-byte sequences; never a NUL (protobuf-c truncates). */
static const char *const alphabet[] = {
    "a", "Z", "0", " ", "$", ".", "\xc3\xa9", "\xc3\xbc", "\xc3\x9f", "\xe4\xb8\xad", "\xe6\x96\x87", "\xe2\x82\xac",
    "\xf0\x9f\x98\x80", "\xf0\x9f\x9a\x97", "\x7f", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xef\xbf\xbf",
    "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "\"", "\\", "\n",
};
#define ALPHABET_COUNT (sizeof alphabet / sizeof alphabet[0])

static char *random_string(void) {
    size_t characters;
    switch (below(50)) {
    case 0: case 1: case 2: case 3: case 4: characters = 0; break;
    case 5: case 6: case 7: case 8: case 9: characters = 125 + below(6); break;
    case 10: characters = 2000 + below(3001); break;
    default: characters = 1 + below(24); break;
    }
    char *string = arena_alloc(characters * 4 + 1);
    size_t length = 0;
    for (size_t i = 0; i < characters; i++) {
        const char *piece = alphabet[below(ALPHABET_COUNT)];
        size_t piece_length = strlen(piece);
        memcpy(string + length, piece, piece_length);
        length += piece_length;
    }
    string[length] = 0;
    return string;
}

static size_t put_varint(uint8_t *out, uint64_t value) {
    size_t length = 0;
    while (value >= 0x80) {
        out[length++] = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    out[length++] = (uint8_t)value;
    return length;
}

/* One to three unknown fields, numbered outside the message's own fields. */
static void add_unknown_fields(ProtobufCMessage *message) {
    const ProtobufCMessageDescriptor *type = message->descriptor;
    unsigned count = 1 + (unsigned)below(3);
    message->unknown_fields = arena_alloc(count * sizeof *message->unknown_fields);
    message->n_unknown_fields = count;
    for (unsigned i = 0; i < count; i++) {
        ProtobufCMessageUnknownField *field = &message->unknown_fields[i];
        uint32_t number;
        do number = below(10) == 0 ? (1u << 29) - 1 : 12 + (uint32_t)below(4989);
        while (protobuf_c_message_descriptor_get_field(type, number) != NULL);
        field->tag = number;
        uint8_t *data = arena_alloc(32);
        switch (below(4)) {
        case 0:
            field->wire_type = PROTOBUF_C_WIRE_TYPE_VARINT;
            field->len = put_varint(data, boundaries[below(BOUNDARY_COUNT)]);
            break;
        case 1:
            field->wire_type = PROTOBUF_C_WIRE_TYPE_64BIT;
            for (int b = 0; b < 8; b++) data[b] = (uint8_t)next_random();
            field->len = 8;
            break;
        case 2: {
            field->wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
            size_t payload = below(21);
            size_t prefix = put_varint(data, payload);
            for (size_t b = 0; b < payload; b++) data[prefix + b] = (uint8_t)next_random();
            field->len = prefix + payload;
            break;
        }
        default:
            field->wire_type = PROTOBUF_C_WIRE_TYPE_32BIT;
            for (int b = 0; b < 4; b++) data[b] = (uint8_t)next_random();
            field->len = 4;
            break;
        }
        field->data = data;
    }
}

static ProtobufCMessage *random_message(const ProtobufCMessageDescriptor *type, int depth);

static size_t value_size(ProtobufCType type) {
    switch (type) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_ENUM: return 4;
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: return 8;
    case PROTOBUF_C_TYPE_FLOAT: return sizeof(float);
    case PROTOBUF_C_TYPE_DOUBLE: return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING: return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE: return sizeof(ProtobufCMessage *);
    }
    die("unsupported field type");
    return 0;
}

/* Writes one random value of `field`'s type at `slot`. */
static void random_value(const ProtobufCFieldDescriptor *field, void *slot, int depth) {
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
        *(int64_t *)slot = random_int64(); break;
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
        *(uint32_t *)slot = random_uint32(); break;
    case PROTOBUF_C_TYPE_DOUBLE: *(double *)slot = random_double(); break;
    case PROTOBUF_C_TYPE_FLOAT: *(float *)slot = random_float(); break;
    case PROTOBUF_C_TYPE_BOOL: *(protobuf_c_boolean *)slot = (protobuf_c_boolean)below(2); break;
    case PROTOBUF_C_TYPE_STRING: *(char **)slot = random_string(); break;
    case PROTOBUF_C_TYPE_BYTES: {
        ProtobufCBinaryData *bytes = slot;
        bytes->len = below(41);
        bytes->data = arena_alloc(bytes->len + 1);
        for (size_t b = 0; b < bytes->len; b++) bytes->data[b] = (uint8_t)next_random();
        break;
    }
    case PROTOBUF_C_TYPE_ENUM: {
        /* Only defined values: protobuf-c keeps undefined ones in the field, an expected divergence. */
        const ProtobufCEnumDescriptor *values = field->descriptor;
        *(int *)slot = values->values[below(values->n_values)].value;
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        *(ProtobufCMessage **)slot = random_message(field->descriptor, depth + 1); break;
    default: die("unsupported field type");
    }
}

static ProtobufCMessage *random_message(const ProtobufCMessageDescriptor *type, int depth) {
    ProtobufCMessage *message = arena_alloc(type->sizeof_message);
    protobuf_c_message_init(type, message);
    for (unsigned i = 0; i < type->n_fields; i++) {
        const ProtobufCFieldDescriptor *field = &type->fields[i];
        uint8_t *member = (uint8_t *)message + field->offset;
        int is_message = field->type == PROTOBUF_C_TYPE_MESSAGE;
        if (field->label == PROTOBUF_C_LABEL_REQUIRED) {
            random_value(field, member, depth);
        } else if (field->label == PROTOBUF_C_LABEL_OPTIONAL) {
            if (below(2) == 0 || (is_message && depth >= 4)) continue;
            random_value(field, member, depth);
            /* Strings and messages are present when non-NULL; scalars have a has_ flag. */
            if (field->type != PROTOBUF_C_TYPE_STRING && !is_message)
                *(protobuf_c_boolean *)((uint8_t *)message + field->quantifier_offset) = 1;
        } else {
            size_t count = depth >= 4 ? 0 : below(5);
            size_t size = value_size(field->type);
            uint8_t *elements = arena_alloc(count * size + 1);
            for (size_t e = 0; e < count; e++) random_value(field, elements + e * size, depth);
            *(size_t *)((uint8_t *)message + field->quantifier_offset) = count;
            *(void **)member = elements;
        }
    }
    if (below(4) == 0) add_unknown_fields(message);
    return message;
}

static int generate(unsigned long count, uint64_t seed) {
    rng_state = seed;
    for (size_t t = 0; t < TYPE_COUNT; t++) {
        for (unsigned long i = 0; i < count; i++) {
            ProtobufCMessage *message = random_message(all_types[t], 0);
            size_t length;
            uint8_t *packed = pack(message, &length);
            write_named(all_types[t]->name, packed, length);
            free(packed);
            arena_reset();
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "roundtrip") == 0) return roundtrip();
    if (argc == 4 && strcmp(argv[1], "generate") == 0)
        return generate(strtoul(argv[2], NULL, 10), strtoull(argv[3], NULL, 10));
    fprintf(stderr, "usage: pbc-harness roundtrip | pbc-harness generate COUNT SEED\n");
    return 2;
}
