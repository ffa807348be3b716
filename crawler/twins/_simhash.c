/* The SimHash of crawler/twins/simhash.py in one call: the same fingerprint, bit for bit, of the
 * words a page's extraction split (a list of bytes), five times faster than the Python one, whose
 * floor is a C call a word. Built in place by scripts/compile.sh; without it the Python one runs.
 *
 * A word's feature is its CRC-32 (zlib's: the polynomial of ISO-HDLC, reflected); a shingle of
 * three words (a, b, c) has the 64 bits  a ^ rotl(b, 8) ^ rotl(c, 16)  (high half) and
 * rotl(a, 24) ^ rotl(b, 16) ^ c  (low half); a bit of the fingerprint is set when it is set in
 * more than half of the shingles. The counts are kept eight to a 64-bit word, a byte a bit
 * position, and added up every 255 shingles, before a byte can overflow. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#define ONES 0x0101010101010101ull
#define FLUSH_EVERY 255

static uint32_t crc_table[256];

static void make_crc_table(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc32_of(const unsigned char *p, Py_ssize_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n--) c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static inline uint32_t rotl(uint32_t x, int k) { return k ? x << k | x >> (32 - k) : x; }

static void add_lanes(uint64_t totals[64], uint64_t lanes[8]) {
    for (int k = 0; k < 8; k++) {
        for (int byte = 0; byte < 8; byte++) totals[8 * byte + k] += lanes[k] >> (8 * byte) & 0xff;
        lanes[k] = 0;
    }
}

/* The fingerprint of the shingles of ``count`` (at least three) words, from their CRCs. */
static uint64_t fingerprint_of(const uint32_t *crcs, Py_ssize_t count) {
    Py_ssize_t shingles = count - 2;
    uint64_t totals[64] = {0}; /* shingles with each bit set */
    uint64_t lanes[8] = {0};   /* lanes[k], byte j: the count for bit 8j + k since the last flush */
    for (Py_ssize_t i = 0; i < shingles; i++) {
        uint32_t a = crcs[i], b = crcs[i + 1], c = crcs[i + 2];
        uint64_t shingle = (uint64_t)(a ^ rotl(b, 8) ^ rotl(c, 16)) << 32 | (rotl(a, 24) ^ rotl(b, 16) ^ c);
        for (int k = 0; k < 8; k++) lanes[k] += shingle >> k & ONES;
        if ((i + 1) % FLUSH_EVERY == 0) add_lanes(totals, lanes);
    }
    add_lanes(totals, lanes);
    uint64_t fingerprint = 0;
    for (int bit = 0; bit < 64; bit++)
        if (2 * totals[bit] > (uint64_t)shingles) fingerprint |= 1ull << bit;
    return fingerprint;
}

static PyObject *simhash_of_words(PyObject *module, PyObject *words) {
    if (!PyList_Check(words))
        return PyErr_Format(PyExc_TypeError, "words: a list of bytes, not %.200s", Py_TYPE(words)->tp_name);
    Py_ssize_t count = PyList_GET_SIZE(words);
    if (count < 3) return PyErr_Format(PyExc_ValueError, "a SimHash of three-word shingles needs three words");
    uint32_t *crcs = PyMem_New(uint32_t, count);
    if (crcs == NULL) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *word = PyList_GET_ITEM(words, i);
        if (!PyBytes_Check(word)) {
            PyMem_Free(crcs);
            return PyErr_Format(PyExc_TypeError, "words: a list of bytes, not of %.200s", Py_TYPE(word)->tp_name);
        }
        crcs[i] = crc32_of((const unsigned char *)PyBytes_AS_STRING(word), PyBytes_GET_SIZE(word));
    }
    uint64_t fingerprint = fingerprint_of(crcs, count);
    PyMem_Free(crcs);
    return PyLong_FromUnsignedLongLong(fingerprint);
}

/* What ``bytes.split()`` splits on: ASCII whitespace. */
static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* The CRCs of the words of ``text`` (split as ``bytes.split()`` splits), in ``crcs`` (a new
 * buffer, NULL when out of memory), and how many. */
static Py_ssize_t word_crcs(const unsigned char *text, Py_ssize_t size, uint32_t **crcs) {
    Py_ssize_t count = 0, room = 1024;
    *crcs = malloc(room * sizeof **crcs);
    for (Py_ssize_t i = 0; *crcs != NULL && i < size;) {
        while (i < size && is_space(text[i])) i++;
        if (i == size) break;
        Py_ssize_t start = i;
        while (i < size && !is_space(text[i])) i++;
        if (count == room) {
            uint32_t *more = realloc(*crcs, (room *= 2) * sizeof **crcs);
            if (more == NULL) {
                free(*crcs);
                *crcs = NULL;
                break;
            }
            *crcs = more;
        }
        (*crcs)[count++] = crc32_of(text + start, i - start);
    }
    return count;
}

static PyObject *simhash_of_text(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t min_words;
    if (nargs != 2 || !PyBytes_Check(args[0]) || (min_words = PyLong_AsSsize_t(args[1])) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "simhash_of_text(text: bytes, min_words: int)");
        return NULL;
    }
    /* Immutable and held by the caller: read without the GIL, which the reactor needs. */
    const unsigned char *text = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]), count;
    uint32_t *crcs;
    uint64_t fingerprint = 0;
    int out_of_memory;
    Py_BEGIN_ALLOW_THREADS
    count = word_crcs(text, size, &crcs);
    out_of_memory = crcs == NULL;
    if (!out_of_memory && count >= 3 && count >= min_words) fingerprint = fingerprint_of(crcs, count);
    free(crcs);
    Py_END_ALLOW_THREADS
    if (out_of_memory) return PyErr_NoMemory();
    if (count < 3 || count < min_words) Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(fingerprint);
}

static PyMethodDef methods[] = {
    {"simhash_of_words", simhash_of_words, METH_O,
     "The 64-bit SimHash of the three-word shingles of ``words`` (a list of at least three bytes)."},
    {"simhash_of_text", (PyCFunction)(void (*)(void))simhash_of_text, METH_FASTCALL,
     "simhash_of_text(text, min_words): the SimHash of the words of ``text`` (bytes, split as bytes.split() "
     "splits), None for fewer than ``min_words`` (or three)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_simhash", NULL, -1, methods};

PyMODINIT_FUNC PyInit__simhash(void) {
    make_crc_table();
    return PyModule_Create(&module);
}
