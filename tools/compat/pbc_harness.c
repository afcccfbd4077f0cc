/*
 * pbc-harness: protobuf-c as Pushline's reference peer.
 *
 * Generic over protobuf-c's reflection (ProtobufCMessageDescriptor: fields, labels, types,
 * offsets, quantifier offsets), so every message of proto/ is covered without per-type code.
 * The table of types comes from protoc-c's headers: build.sh writes it to gen/pbc_types.h.
 * Record formats (little-endian) are in README.md.
 *
 *   pbc-harness roundtrip            named records in, result records out: unpack, then pack
 *   pbc-harness generate COUNT SEED  COUNT random messages of every type, as named records
 *
 * Exit status: 0 on success, 2 on bad usage, an unknown type name, truncated input or a
 * generator bug (a generated message that protobuf-c itself does not round-trip).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "pbc_types.h" /* includes every *.pb-c.h and defines PBC_ALL_TYPES */

static const ProtobufCMessageDescriptor *const all_types[] = {PBC_ALL_TYPES};
#define TYPE_COUNT (sizeof all_types / sizeof all_types[0])
#define COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))

/* Nesting cap for generated messages (Question.alternates is recursive). */
#define MAX_DEPTH 4
/* Repeated fields get 0..MAX_REPEATED elements. */
#define MAX_REPEATED 5

static void die(const char *message) {
    fprintf(stderr, "pbc-harness: %s\n", message);
    exit(2);
}

static const ProtobufCMessageDescriptor *find_type(const char *name) {
    for (size_t i = 0; i < TYPE_COUNT; i++)
        if (strcmp(all_types[i]->name, name) == 0) return all_types[i];
    return NULL;
}

static void *checked_malloc(size_t size) {
    void *result = malloc(size ? size : 1);
    if (!result) die("out of memory");
    return result;
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

static void write_bytes(const void *data, size_t length) {
    if (length && fwrite(data, 1, length, stdout) != length) die("write to stdout failed");
}

static void write_le(uint32_t value, size_t width) {
    uint8_t bytes[4];
    for (size_t i = 0; i < width; i++) bytes[i] = (uint8_t)(value >> (8 * i));
    write_bytes(bytes, width);
}

static void write_named(const char *name, const uint8_t *data, size_t length) {
    write_le((uint32_t)strlen(name), 2);
    write_bytes(name, strlen(name));
    write_le((uint32_t)length, 4);
    write_bytes(data, length);
}

static int finish_output(void) {
    if (fflush(stdout) != 0 || ferror(stdout)) die("write to stdout failed");
    return 0;
}

static uint8_t *pack(const ProtobufCMessage *message, size_t *length) {
    *length = protobuf_c_message_get_packed_size(message);
    uint8_t *buffer = checked_malloc(*length);
    if (protobuf_c_message_pack(message, buffer) != *length) die("pack wrote an unexpected size");
    return buffer;
}

static int roundtrip(void) {
    int first;
    while ((first = fgetc(stdin)) != EOF) {
        ungetc(first, stdin);
        size_t name_length = read_le(2);
        char *name = checked_malloc(name_length + 1);
        if (!read_exact(name, name_length)) die("truncated record");
        name[name_length] = 0;
        const ProtobufCMessageDescriptor *type = find_type(name);
        if (!type) {
            fprintf(stderr, "pbc-harness: unknown message type \"%s\"\n", name);
            exit(2);
        }
        free(name);
        size_t length = read_le(4);
        uint8_t *input = checked_malloc(length);
        if (!read_exact(input, length)) die("truncated record");
        ProtobufCMessage *message = protobuf_c_message_unpack(type, NULL, length, input);
        free(input);
        if (!message) {
            write_le(1, 1);
            write_le(0, 4);
            continue;
        }
        size_t packed_length;
        uint8_t *packed = pack(message, &packed_length);
        protobuf_c_message_free_unpacked(message, NULL);
        write_le(0, 1);
        write_le((uint32_t)packed_length, 4);
        write_bytes(packed, packed_length);
        free(packed);
    }
    if (ferror(stdin)) die("read from stdin failed");
    return finish_output();
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
    if (size == 0) size = 16;
    if (!arena || arena->size - arena->used < size) {
        size_t chunk_size = size > (1u << 16) ? size : (1u << 16);
        Chunk *chunk = checked_malloc(sizeof(Chunk) + chunk_size);
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

/* Varint length boundaries (2^(7k) - 1 and 2^(7k)) and the type limits. */
static const uint64_t boundaries[] = {
    0, 1, 2, 127, 128, 255, 256, 16383, 16384, (1ull << 21) - 1, 1ull << 21, (1ull << 28) - 1, 1ull << 28,
    (1ull << 31) - 1, 1ull << 31, UINT32_MAX - 1, UINT32_MAX, 1ull << 32, (1ull << 35) - 1, 1ull << 35,
    (1ull << 42) - 1, 1ull << 42, (1ull << 49) - 1, 1ull << 49, (1ull << 56) - 1, 1ull << 56,
    (1ull << 63) - 1, 1ull << 63, UINT64_MAX - 1, UINT64_MAX,
};

static uint64_t random_boundary(uint64_t maximum) {
    uint64_t value;
    do value = boundaries[below(COUNT_OF(boundaries))]; while (value > maximum);
    return value;
}

static uint64_t random_uint64(void) {
    switch (below(4)) {
    case 0: case 1: return random_boundary(UINT64_MAX);
    case 2: return next_random() >> below(64); /* every varint length */
    default: return below(100000);
    }
}

static int64_t random_int64(void) {
    switch (below(5)) {
    case 0: return (int64_t)random_boundary(INT64_MAX);
    case 1: return -(int64_t)random_boundary(INT64_MAX);
    case 2: {
        static const int64_t extremes[] = {INT64_MIN, INT64_MIN + 1, INT64_MAX, -1, 0, 1};
        return extremes[below(COUNT_OF(extremes))];
    }
    case 3: return (int64_t)(next_random() >> below(64)) * (below(2) ? -1 : 1);
    default: return (int64_t)below(4000000000ull) - 1000000;
    }
}

static uint32_t random_uint32(void) {
    switch (below(4)) {
    case 0: case 1: return (uint32_t)random_boundary(UINT32_MAX);
    case 2: return (uint32_t)(next_random() >> (32 + below(32)));
    default: return (uint32_t)below(100000);
    }
}

static int32_t random_int32(void) {
    switch (below(4)) {
    case 0: return (int32_t)random_boundary(INT32_MAX);
    case 1: return -(int32_t)random_boundary(INT32_MAX);
    case 2: {
        static const int32_t extremes[] = {INT32_MIN, INT32_MIN + 1, INT32_MAX, -1, 0, 1};
        return extremes[below(COUNT_OF(extremes))];
    }
    default: return (int32_t)below(2000001) - 1000000;
    }
}

static double double_from_bits(uint64_t bits) {
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static float float_from_bits(uint32_t bits) {
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static double random_double(void) {
    static const double corners[] = {
        0.0, -0.0, 0.1, -0.1, 0.5, 1.0, -1.0, 1.5, -2.25, 1.0 / 3.0, 100.0, 1e15, 1e16, 1e21, 1e22, 1e23,
        9007199254740992.0, 9007199254740993.0, 123456789012345680.0, DBL_MAX, -DBL_MAX,
        DBL_MIN, -DBL_MIN, 4.9406564584124654e-324, -4.9406564584124654e-324, 2.2250738585072009e-308,
        1e300, -1e300, 1e-300, 1e-7, 1e-5, 5e-324, NAN, INFINITY, -INFINITY, FLT_MAX, FLT_MIN,
    };
    switch (below(4)) {
    case 0: return corners[below(COUNT_OF(corners))];
    case 1: return double_from_bits(next_random()); /* includes NaN payloads and subnormals */
    case 2: {
        static const uint64_t special_bits[] = {
            0x7FF8000000000000ull, 0xFFF8000000000000ull, /* quiet NaN, negative quiet NaN */
            0x7FF0000000000001ull, 0x7FF4000000000000ull, /* signalling NaNs */
            0x7FFFFFFFFFFFFFFFull, 0x000FFFFFFFFFFFFFull, /* NaN all ones, largest subnormal */
            0x0000000000000001ull, 0x8000000000000001ull,
        };
        return double_from_bits(special_bits[below(COUNT_OF(special_bits))]);
    }
    default: return ((double)below(2000000001) - 1e9) / 1000.0;
    }
}

static float random_float(void) {
    static const float corners[] = {
        0.0f, -0.0f, 0.1f, -0.1f, 0.5f, 1.0f, -1.0f, 1.0f / 3.0f, 16777216.0f, 16777217.0f, 1e10f, 1e-10f,
        FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 1.40129846e-45f, -1.40129846e-45f, 1e-40f, NAN, INFINITY, -INFINITY,
    };
    switch (below(4)) {
    case 0: return corners[below(COUNT_OF(corners))];
    case 1: return float_from_bits((uint32_t)next_random());
    case 2: {
        static const uint32_t special_bits[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FA00000u, 0x7FFFFFFFu, 0x007FFFFFu, 1u};
        return float_from_bits(special_bits[below(COUNT_OF(special_bits))]);
    }
    default: return (float)below(1000001) / 1e6f;
    }
}

/* UTF-8 pieces: ASCII (JSON-special characters included), 2-, 3- and 4-byte sequences at
 * the ends of their ranges; never a NUL (protobuf-c truncates at it). */
static const char *const alphabet[] = {
    "a", "Z", "0", " ", "$", ".", "\"", "\\", "/", "\n", "\t", "\r", "\x01", "\x1f", "\x7f",
    "\xc3\xa9" /* é */, "\xc3\xbc" /* ü */, "\xc3\x9f" /* ß */, "\xc2\x80" /* U+0080 */, "\xdf\xbf" /* U+07FF */,
    "\xe4\xb8\xad" /* 中 */, "\xe6\x96\x87" /* 文 */, "\xe2\x82\xac" /* € */, "\xe0\xa0\x80" /* U+0800 */,
    "\xe2\x80\xa8" /* U+2028 */, "\xef\xbb\xbf" /* U+FEFF */, "\xed\x9f\xbf" /* U+D7FF */,
    "\xee\x80\x80" /* U+E000 */, "\xef\xbf\xbd" /* U+FFFD */, "\xef\xbf\xbf" /* U+FFFF */,
    "\xf0\x9f\x98\x80" /* 😀 */, "\xf0\x9f\x9a\x97" /* 🚗 */, "\xf0\x90\x80\x80" /* U+10000 */,
    "\xf4\x8f\xbf\xbf" /* U+10FFFF */,
};

/* A byte length for a string or bytes value: empty, short, around the 1- and 2-byte length
 * prefix boundaries (127/128, 16383/16384), or a few KiB. */
static size_t random_length(void) {
    switch (below(64)) {
    case 0: case 1: case 2: case 3: case 4: case 5: return 0;
    case 6: case 7: case 8: case 9: case 10: case 11: return 126 + below(4);
    case 12: return 1000 + below(4001);
    case 13: return below(8) == 0 ? 16382 + below(4) : 255 + below(3);
    default: return 1 + below(32);
    }
}

/* Valid UTF-8 of exactly random_length() bytes; some pure ASCII, most mixed. */
static char *random_string(void) {
    size_t length = random_length();
    char *string = arena_alloc(length + 1);
    int ascii_only = below(4) == 0;
    size_t used = 0;
    while (used < length) {
        const char *piece = ascii_only ? alphabet[below(15)] : alphabet[below(COUNT_OF(alphabet))];
        size_t piece_length = strlen(piece);
        if (piece_length > length - used) { /* fill up to the exact length */
            piece = "x";
            piece_length = 1;
        }
        memcpy(string + used, piece, piece_length);
        used += piece_length;
    }
    string[length] = 0;
    return string;
}

static void random_bytes(ProtobufCBinaryData *bytes) {
    bytes->len = below(2) ? below(41) : random_length();
    bytes->data = arena_alloc(bytes->len);
    int pattern = (int)below(4); /* random, all zeros (NULs), all 0xFF, random */
    for (size_t b = 0; b < bytes->len; b++)
        bytes->data[b] = pattern == 1 ? 0 : pattern == 2 ? 0xFF : (uint8_t)next_random();
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

/*
 * One to three unknown fields, numbered outside the message's own fields. protobuf-c packs an
 * unknown field as the tag (number, wire type) followed by `len` bytes of `data` verbatim, and
 * unpack fills `data` with everything after the tag. So `data` holds: VARINT, the varint's
 * bytes; 64BIT, 8 bytes; 32BIT, 4 bytes; LENGTH_PREFIXED, the length varint AND the payload.
 * Groups (wire types 3/4) are left out: protobuf-c fails the whole parse on them.
 */
static void add_unknown_fields(ProtobufCMessage *message) {
    const ProtobufCMessageDescriptor *type = message->descriptor;
    unsigned count = 1 + (unsigned)below(3);
    message->unknown_fields = arena_alloc(count * sizeof *message->unknown_fields);
    message->n_unknown_fields = count;
    for (unsigned i = 0; i < count; i++) {
        ProtobufCMessageUnknownField *field = &message->unknown_fields[i];
        uint32_t number;
        do {
            switch (below(20)) {
            case 0: number = (1u << 29) - 1; break; /* the largest field number */
            case 1: case 2: number = 20000 + (uint32_t)below((1u << 29) - 1 - 20000); break; /* 3-5 byte tags */
            default: number = 1 + (uint32_t)below(5000); break;
            }
        } while (protobuf_c_message_descriptor_get_field(type, number) != NULL);
        field->tag = number;
        switch (below(4)) {
        case 0:
            field->wire_type = PROTOBUF_C_WIRE_TYPE_VARINT;
            field->data = arena_alloc(10);
            field->len = put_varint(field->data, random_uint64());
            break;
        case 1:
            field->wire_type = PROTOBUF_C_WIRE_TYPE_64BIT;
            field->data = arena_alloc(8);
            for (int b = 0; b < 8; b++) field->data[b] = (uint8_t)next_random();
            field->len = 8;
            break;
        case 2: {
            field->wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
            size_t payload = below(4) ? below(21) : 126 + below(4);
            field->data = arena_alloc(10 + payload);
            size_t prefix = put_varint(field->data, payload);
            for (size_t b = 0; b < payload; b++) field->data[prefix + b] = (uint8_t)next_random();
            field->len = prefix + payload;
            break;
        }
        default:
            field->wire_type = PROTOBUF_C_WIRE_TYPE_32BIT;
            field->data = arena_alloc(4);
            for (int b = 0; b < 4; b++) field->data[b] = (uint8_t)next_random();
            field->len = 4;
            break;
        }
    }
}

static ProtobufCMessage *random_message(const ProtobufCMessageDescriptor *type, int depth);

/* The size of one element of a repeated field's array, as protobuf-c lays it out. */
static size_t element_size(ProtobufCType type) {
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

/* Writes one random value of `field`'s type at `slot`; a message is one level deeper. */
static void random_value(const ProtobufCFieldDescriptor *field, void *slot, int depth) {
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
        *(int32_t *)slot = random_int32(); break;
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
        *(uint32_t *)slot = random_uint32(); break;
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
        *(int64_t *)slot = random_int64(); break;
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
        *(uint64_t *)slot = random_uint64(); break;
    case PROTOBUF_C_TYPE_DOUBLE: *(double *)slot = random_double(); break;
    case PROTOBUF_C_TYPE_FLOAT: *(float *)slot = random_float(); break;
    case PROTOBUF_C_TYPE_BOOL: *(protobuf_c_boolean *)slot = (protobuf_c_boolean)below(2); break;
    case PROTOBUF_C_TYPE_STRING: *(char **)slot = random_string(); break;
    case PROTOBUF_C_TYPE_BYTES: random_bytes(slot); break;
    case PROTOBUF_C_TYPE_ENUM: {
        /* Only defined values: protobuf-c keeps undefined ones in the field (the spec makes them
         * unknown fields of a closed enum), an expected divergence kept out of the corpus. */
        const ProtobufCEnumDescriptor *values = field->descriptor;
        *(int32_t *)slot = values->values[below(values->n_values)].value;
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        *(ProtobufCMessage **)slot = random_message(field->descriptor, depth + 1); break;
    }
}

static ProtobufCMessage *random_message(const ProtobufCMessageDescriptor *type, int depth) {
    ProtobufCMessage *message = arena_alloc(type->sizeof_message);
    protobuf_c_message_init(type, message); /* descriptor, defaults, has_ flags clear */
    for (unsigned i = 0; i < type->n_fields; i++) {
        const ProtobufCFieldDescriptor *field = &type->fields[i];
        uint8_t *member = (uint8_t *)message + field->offset;
        void *quantifier = (uint8_t *)message + field->quantifier_offset;
        int is_message = field->type == PROTOBUF_C_TYPE_MESSAGE;
        int capped = is_message && depth >= MAX_DEPTH;
        if (field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            /* quantifier is the oneof's case (the chosen field's number); set one at most. */
            if (*(uint32_t *)quantifier != 0 || below(3) == 0 || capped) continue;
            random_value(field, member, depth);
            *(uint32_t *)quantifier = field->id;
        } else if (field->label == PROTOBUF_C_LABEL_REQUIRED) {
            random_value(field, member, depth);
        } else if (field->label == PROTOBUF_C_LABEL_NONE) { /* proto3 implicit presence */
            if (!capped) random_value(field, member, depth);
        } else if (field->label == PROTOBUF_C_LABEL_OPTIONAL) {
            if (below(2) == 0 || capped) continue;
            random_value(field, member, depth);
            /* Strings and messages are present when non-NULL; other types have a has_ flag. */
            if (field->type != PROTOBUF_C_TYPE_STRING && !is_message) *(protobuf_c_boolean *)quantifier = 1;
        } else { /* repeated: quantifier is the n_ count */
            size_t count = capped ? 0 : below(MAX_REPEATED + 1);
            size_t size = element_size(field->type);
            uint8_t *elements = arena_alloc(count * size);
            for (size_t e = 0; e < count; e++) random_value(field, elements + e * size, depth);
            *(size_t *)quantifier = count;
            *(void **)member = count ? elements : NULL;
        }
    }
    if (below(4) == 0) add_unknown_fields(message);
    return message;
}

/* The generator's own check: protobuf-c must unpack its bytes and pack them back unchanged. */
static void check_round_trip(const ProtobufCMessageDescriptor *type, const uint8_t *bytes, size_t length,
                             unsigned long index) {
    ProtobufCMessage *message = protobuf_c_message_unpack(type, NULL, length, bytes);
    if (!message) {
        fprintf(stderr, "pbc-harness: generated %s #%lu does not unpack\n", type->name, index);
        exit(2);
    }
    size_t again_length;
    uint8_t *again = pack(message, &again_length);
    protobuf_c_message_free_unpacked(message, NULL);
    if (again_length != length || memcmp(again, bytes, length) != 0) {
        fprintf(stderr, "pbc-harness: generated %s #%lu does not round-trip through protobuf-c\n", type->name, index);
        exit(2);
    }
    free(again);
}

static int generate(unsigned long count, uint64_t seed) {
    rng_state = seed;
    for (size_t t = 0; t < TYPE_COUNT; t++) {
        for (unsigned long i = 0; i < count; i++) {
            ProtobufCMessage *message = random_message(all_types[t], 0);
            size_t length;
            uint8_t *packed = pack(message, &length);
            arena_reset();
            check_round_trip(all_types[t], packed, length, i);
            write_named(all_types[t]->name, packed, length);
            free(packed);
        }
    }
    return finish_output();
}

static int parse_number(const char *text, unsigned long long *value) {
    char *end;
    if (*text < '0' || *text > '9') return 0;
    *value = strtoull(text, &end, 10);
    return *end == 0;
}

int main(int argc, char **argv) {
    static char output_buffer[1 << 16];
    setvbuf(stdout, output_buffer, _IOFBF, sizeof output_buffer);
    unsigned long long count, seed;
    if (argc == 2 && strcmp(argv[1], "roundtrip") == 0) return roundtrip();
    if (argc == 4 && strcmp(argv[1], "generate") == 0 && parse_number(argv[2], &count) && parse_number(argv[3], &seed))
        return generate((unsigned long)count, (uint64_t)seed);
    fprintf(stderr, "usage: pbc-harness roundtrip < named-records > result-records\n"
                    "       pbc-harness generate COUNT SEED > named-records\n");
    return 2;
}
