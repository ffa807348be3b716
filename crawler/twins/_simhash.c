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
    PyMem_Free(crcs);
    uint64_t fingerprint = 0;
    for (int bit = 0; bit < 64; bit++)
        if (2 * totals[bit] > (uint64_t)shingles) fingerprint |= 1ull << bit;
    return PyLong_FromUnsignedLongLong(fingerprint);
}

static PyMethodDef methods[] = {
    {"simhash_of_words", simhash_of_words, METH_O,
     "The 64-bit SimHash of the three-word shingles of ``words`` (a list of at least three bytes)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_simhash", NULL, -1, methods};

PyMODINIT_FUNC PyInit__simhash(void) {
    make_crc_table();
    return PyModule_Create(&module);
}
