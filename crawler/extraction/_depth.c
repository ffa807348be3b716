/* The shape of a document of crawler/extraction/budget.py in one call, without the GIL: how
 * deeply its elements nest and the most attributes a tag has, the same as the regular
 * expressions there give, about ten times faster, which hold the GIL while they run. Built in
 * place by scripts/compile.sh; without it the Python ones run.
 *
 * A tag is "<", an optional "/", an ASCII letter, then ASCII letters, digits and "-" (budget.py's
 * _TAG). A start tag opens an element and an end tag closes one, unless its name (in ASCII lower
 * case) is one of ``not_nesting``: a bytes object of names separated by spaces, none longer than
 * eight bytes, so that each is compared as one 64-bit word. The depth is the most elements open
 * at once, counted from the lowest level reached before (stray end tags do not go below zero).
 * A tag's attributes are read as HTML's tokenizer reads them after a tag's name. Every "<" and a
 * letter is read as a tag, in a comment or a script too: a page can hide its tags from this. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define LONGEST_NAME 8
#define MOST_NAMES 64

static int is_letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static int is_name_char(unsigned char c) { return is_letter(c) || (c >= '0' && c <= '9') || c == '-'; }

/* A name of at most LONGEST_NAME bytes as one word, in ASCII lower case. */
static uint64_t packed(const char *name, Py_ssize_t length) {
    uint64_t word = 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)name[i];
        word = word << 8 | (c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    return word;
}

#define SLOTS 256 /* a power of two, several times MOST_NAMES: few names share a slot */

/* The names as an open-addressing table of their words (0: an empty slot; no name is empty). */
typedef struct {
    uint64_t slots[SLOTS];
} NameSet;

static unsigned slot_of(uint64_t word) { return (unsigned)((word * 0x9E3779B97F4A7C15u) >> 56) & (SLOTS - 1); }

static void add_name(NameSet *set, uint64_t word) {
    unsigned i = slot_of(word);
    while (set->slots[i] != 0 && set->slots[i] != word) i = (i + 1) & (SLOTS - 1);
    set->slots[i] = word;
}

/* The names of ``text`` (separated by spaces); -1 when one is too long or there are too many. */
static int read_names(const char *text, Py_ssize_t size, NameSet *set) {
    memset(set, 0, sizeof *set);
    int count = 0;
    for (Py_ssize_t i = 0; i < size;) {
        Py_ssize_t start = i;
        while (i < size && text[i] != ' ') i++;
        if (i > start) {
            if (i - start > LONGEST_NAME || count == MOST_NAMES) return -1;
            add_name(set, packed(text + start, i - start));
            count++;
        }
        i++;
    }
    return 0;
}

static int nests(uint64_t word, const NameSet *not_nesting) {
    for (unsigned i = slot_of(word); not_nesting->slots[i] != 0; i = (i + 1) & (SLOTS - 1))
        if (not_nesting->slots[i] == word) return 0;
    return 1;
}

/* What separates attributes in a tag, as HTML's tokenizer reads it. */
static int is_tag_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'; }

/* The attributes of a tag, read from just after its name as HTML's tokenizer reads them (any
 * character but a space, "/" and ">" starts a name, "<" too; a quoted value may hold ">"):
 * how many, in ``count``, and where the tag ends (past its ">", or the document's end). */
static const char *read_attributes(const char *p, const char *end, long long *count) {
    *count = 0;
    for (;;) {
        while (p < end && (is_tag_space(*p) || *p == '/')) p++;
        if (p == end) return end;
        if (*p == '>') return p + 1;
        (*count)++;
        for (p++; p < end && !is_tag_space(*p) && *p != '/' && *p != '>' && *p != '='; p++) {
        }
        const char *value = p;
        while (value < end && is_tag_space(*value)) value++;
        if (value == end || *value != '=') continue;
        for (p = value + 1; p < end && is_tag_space(*p); p++) {
        }
        if (p < end && (*p == '"' || *p == '\'')) {
            const char *close = memchr(p + 1, *p, (size_t)(end - p - 1));
            p = close != NULL ? close + 1 : end;
        } else {
            while (p < end && !is_tag_space(*p) && *p != '>') p++;
        }
    }
}

typedef struct {
    long long depth, attributes;
} Shape;

static Shape shape_of(const char *html, Py_ssize_t size, const NameSet *not_nesting) {
    long long level = 0, lowest = 0;
    Shape shape = {0, 0};
    const char *end = html + size, *p = html;
    const char *read_to = html; /* the attributes before this were read, as some tag's */
    while ((p = memchr(p, '<', (size_t)(end - p))) != NULL) {
        const char *name = p + 1;
        int closing = name < end && *name == '/';
        if (closing) name++;
        if (name >= end || !is_letter((unsigned char)*name)) {
            p++;
            continue;
        }
        /* The name read once: its word, while it is short enough to be one of the names. */
        uint64_t word = 0;
        const char *after = name;
        for (; after < end && is_name_char((unsigned char)*after); after++)
            if (after - name < LONGEST_NAME) word = word << 8 | (unsigned char)(*after | ('A' <= *after && *after <= 'Z' ? 32 : 0));
        if (after - name > LONGEST_NAME || nests(word, not_nesting)) {
            level += closing ? -1 : 1;
            if (level < lowest) lowest = level;
            if (level - lowest > shape.depth) shape.depth = level - lowest;
        }
        /* A "<" inside another tag's attributes starts no attributes of its own: each byte is
         * read as an attribute once, whatever a page builds to make it read again. */
        if (p >= read_to) {
            long long attributes;
            read_to = read_attributes(after, end, &attributes);
            if (attributes > shape.attributes) shape.attributes = attributes;
        }
        p = after;
    }
    return shape;
}

static PyObject *document_shape(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "document_shape(html, not_nesting) takes two bytes objects");
        return NULL;
    }
    if (!PyBytes_Check(args[0]) || !PyBytes_Check(args[1])) {
        PyErr_Format(PyExc_TypeError, "document_shape takes two bytes objects, not %s and %s",
                     Py_TYPE(args[0])->tp_name, Py_TYPE(args[1])->tp_name);
        return NULL;
    }
    NameSet not_nesting;
    if (read_names(PyBytes_AS_STRING(args[1]), PyBytes_GET_SIZE(args[1]), &not_nesting) < 0) {
        PyErr_Format(PyExc_ValueError, "not_nesting: at most %d names of at most %d bytes", MOST_NAMES, LONGEST_NAME);
        return NULL;
    }
    /* Immutable and held by the caller: read without the GIL, which the reactor needs. */
    const char *html = PyBytes_AS_STRING(args[0]);
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
    Shape shape;
    Py_BEGIN_ALLOW_THREADS
    shape = shape_of(html, size, &not_nesting);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(LL)", shape.depth, shape.attributes);
}

static PyMethodDef methods[] = {
    {"document_shape", (PyCFunction)(void (*)(void))document_shape, METH_FASTCALL,
     "document_shape(html, not_nesting) -> (the most elements open at once, the most attributes of a tag)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_depth", NULL, -1, methods};

PyMODINIT_FUNC PyInit__depth(void) { return PyModule_Create(&module); }
