/* What extraction reads from an HTML document, in one walk over lexbor's tree, without the GIL.
 *
 * The document is parsed by the lexbor that selectolax is built with, reached through the C
 * functions its module exports (looked up once, at import), so the tree is the one selectolax
 * builds for the same bytes. The walk in Python (crawler/extraction/html.py's
 * ``_walk_in_python``) made a Python object of every element it looked at, and a text node for
 * every separator around a block; here nothing is made for them, and the Python objects are
 * built once, from what the walk found, after the document is done with.
 *
 *     walk(html: bytes, kinds: bytes, seconds: float = 0, chunk: int = 16384)
 *         -> (has_head, title, base, metas, links, anchors, text, squashed)
 *
 * ``seconds`` (0: no limit) bounds the parse and the walk: past it, TimeoutError. The document
 * is parsed ``chunk`` bytes at a time (the tests give small chunks to cut it everywhere).
 *
 * ``text`` is squashed (``squashed`` true) where it is UTF-8: each run of what ``str.split``
 * splits on made one space, none at either end; else it is lexbor's bytes as they are.
 *
 * ``kinds[tag_id]`` is what an element (or a text node) is to the walk (the KIND_ values below,
 * 0: nothing); the numbers come from selectolax at import, in html.py. The functions' types are
 * lexbor's, declared here as the selectolax of requirements.txt builds it; the tests compare
 * this walk with the one in Python on generated documents, so a selectolax whose lexbor
 * differs shows there. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned char lxb_char_t;

enum { KIND_BLOCK = 1, KIND_ANCHOR, KIND_INVISIBLE, KIND_TITLE, KIND_META, KIND_LINK, KIND_BASE, KIND_TEXT };

typedef struct {
    void *(*document_create)(void);
    void *(*document_destroy)(void *document);
    unsigned int (*parse_chunk_begin)(void *document);
    unsigned int (*parse_chunk)(void *document, const lxb_char_t *html, size_t size);
    unsigned int (*parse_chunk_end)(void *document);
    void *(*document_element)(void *document);
    void *(*body_element)(void *document);
    void *(*head_element)(void *document);
    void *(*first_child)(void *node);
    void *(*next)(void *node);
    void *(*parent)(void *node);
    uintptr_t (*tag_id)(void *node);
    lxb_char_t *(*text_content)(void *node, size_t *length);
    lxb_char_t *(*destroy_text)(void *document, lxb_char_t *text);
    void *(*first_attribute)(void *element);
    void *(*next_attribute)(void *attribute);
    const lxb_char_t *(*attribute_name)(void *attribute, size_t *length);
    const lxb_char_t *(*attribute_value)(void *attribute, size_t *length);
} Lexbor;

static Lexbor lxb;

static const struct {
    const char *name;
    size_t offset;
} lxb_functions[] = {
    {"lxb_html_document_create", offsetof(Lexbor, document_create)},
    {"lxb_html_document_destroy", offsetof(Lexbor, document_destroy)},
    {"lxb_html_document_parse_chunk_begin", offsetof(Lexbor, parse_chunk_begin)},
    {"lxb_html_document_parse_chunk", offsetof(Lexbor, parse_chunk)},
    {"lxb_html_document_parse_chunk_end", offsetof(Lexbor, parse_chunk_end)},
    {"lxb_dom_document_element_noi", offsetof(Lexbor, document_element)},
    {"lxb_html_document_body_element_noi", offsetof(Lexbor, body_element)},
    {"lxb_html_document_head_element_noi", offsetof(Lexbor, head_element)},
    {"lxb_dom_node_first_child_noi", offsetof(Lexbor, first_child)},
    {"lxb_dom_node_next_noi", offsetof(Lexbor, next)},
    {"lxb_dom_node_parent_noi", offsetof(Lexbor, parent)},
    {"lxb_dom_node_tag_id_noi", offsetof(Lexbor, tag_id)},
    {"lxb_dom_node_text_content", offsetof(Lexbor, text_content)},
    {"lxb_dom_document_destroy_text_noi", offsetof(Lexbor, destroy_text)},
    {"lxb_dom_element_first_attribute_noi", offsetof(Lexbor, first_attribute)},
    {"lxb_dom_element_next_attribute_noi", offsetof(Lexbor, next_attribute)},
    {"lxb_dom_attr_qualified_name", offsetof(Lexbor, attribute_name)},
    {"lxb_dom_attr_value_noi", offsetof(Lexbor, attribute_value)},
};

/* An attribute's value: NULL where the attribute has none (``<a href>``) or is absent. */
typedef struct {
    const lxb_char_t *data;
    size_t size;
} Value;

typedef struct {
    Value first, second;
} Pair;

typedef struct {
    Pair *items;
    size_t count, capacity;
} Pairs;

typedef struct {
    char *data;
    size_t size, capacity;
} Buffer;

typedef struct {
    void *document;
    double deadline; /* on the thread's CPU clock (CLOCK_THREAD_CPUTIME_ID); 0: none */
    int has_head, has_title, has_base, failed, overtime, squashed;
    Buffer title, text;
    Value base;
    Pairs metas, links, anchors;
} Found;

static int append(Buffer *buffer, const void *data, size_t size) {
    if (size == 0) return 0;
    if (buffer->size + size > buffer->capacity) {
        size_t capacity = buffer->capacity ? buffer->capacity : 4096;
        while (capacity < buffer->size + size) capacity *= 2;
        char *grown = realloc(buffer->data, capacity);
        if (grown == NULL) return -1;
        buffer->data = grown;
        buffer->capacity = capacity;
    }
    memcpy(buffer->data + buffer->size, data, size);
    buffer->size += size;
    return 0;
}

static int add_pair(Pairs *pairs, Value first, Value second) {
    if (pairs->count == pairs->capacity) {
        size_t capacity = pairs->capacity ? pairs->capacity * 2 : 64;
        Pair *grown = realloc(pairs->items, capacity * sizeof(Pair));
        if (grown == NULL) return -1;
        pairs->items = grown;
        pairs->capacity = capacity;
    }
    pairs->items[pairs->count++] = (Pair){first, second};
    return 0;
}

/* Whether the element has the attribute ``name`` (by its name as written, as selectolax's
 * ``attrs`` looks it up); its value in ``value``. */
static int attribute(void *element, const char *name, Value *value) {
    size_t length = strlen(name);
    for (void *attr = lxb.first_attribute(element); attr != NULL; attr = lxb.next_attribute(attr)) {
        size_t name_length = 0;
        const lxb_char_t *attr_name = lxb.attribute_name(attr, &name_length);
        if (attr_name != NULL && name_length == length && memcmp(attr_name, name, length) == 0) {
            value->size = 0;
            value->data = lxb.attribute_value(attr, &value->size);
            return 1;
        }
    }
    value->data = NULL;
    value->size = 0;
    return 0;
}

static int append_text(Found *found, void *node, Buffer *buffer) {
    size_t length = 0;
    lxb_char_t *text = lxb.text_content(node, &length);
    if (text == NULL) return -1; /* lexbor makes a copy even of an empty text: out of memory */
    int status = append(buffer, text, length);
    lxb.destroy_text(found->document, text);
    return status;
}

/* The element ``node`` as the walk enters it: what it is to extraction. */
static int enter(Found *found, void *node, int kind) {
    Value first, second;
    switch (kind) {
    case KIND_ANCHOR:
        if (attribute(node, "href", &first) && first.size > 0) {
            attribute(node, "rel", &second);
            return add_pair(&found->anchors, first, second);
        }
        return 0;
    case KIND_META:
        if (attribute(node, "name", &first) && attribute(node, "content", &second))
            return add_pair(&found->metas, first, second);
        return 0;
    case KIND_LINK:
        if (attribute(node, "rel", &first) && attribute(node, "href", &second))
            return add_pair(&found->links, first, second);
        return 0;
    case KIND_BASE:
        if (!found->has_base && attribute(node, "href", &found->base)) found->has_base = 1;
        return 0;
    }
    return 0;
}

/* The CPU time of the thread walking: what the document costs, which a busy machine (another
 * process on the core) does not make longer. */
static double now(void) {
    struct timespec time;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time);
    return (double)time.tv_sec + (double)time.tv_nsec / 1e9;
}

/* Whether the deadline has passed (and so the walk is given up). */
static int late(Found *found) {
    if (found->deadline && now() > found->deadline) found->overtime = 1;
    return found->overtime;
}

/* The document parsed a chunk at a time, the deadline looked at between chunks: lexbor's costs
 * that grow faster than the document (a select's options, elements nested deep) are spread over
 * its chunks, so a document it cannot read in time is given up within about a chunk's work past
 * the deadline (a chunk costs more the further a slow document has got). An element's
 * attributes are read at once, in one chunk: nothing here bounds that (see _depth.c). 0, or
 * lexbor's status. */
static unsigned int parse(Found *found, const lxb_char_t *html, size_t size, size_t chunk) {
    unsigned int status = lxb.parse_chunk_begin(found->document);
    if (status != 0) return status; /* no parser to end */
    for (size_t at = 0; status == 0 && at < size && !late(found); at += chunk)
        status = lxb.parse_chunk(found->document, html + at, size - at < chunk ? size - at : chunk);
    unsigned int ended = lxb.parse_chunk_end(found->document);
    return status ? status : ended;
}

/* Every element and text node in document order. The visible text is that of the body (of the
 * whole document where there is none) outside the invisible elements, with a space on either
 * side of each block, so that "<b>para</b>graph" stays one word and "<p>a</p><p>b</p>" is two
 * (a body that a frameset replaced is not in the document: the whole document is read then).
 * The title is the text of the first ``title``, wherever it is. */
static int walk_tree(Found *found, const unsigned char *kinds, size_t kinds_size) {
    void *root = lxb.document_element(found->document);
    void *body = lxb.body_element(found->document);
    found->has_head = lxb.head_element(found->document) != NULL;
    if (root == NULL) return 0;
    if (body != NULL && lxb.parent(body) == NULL) body = NULL; /* a frameset took its place */
    void *title = NULL;
    size_t invisible = 0;
    int in_body = body == NULL;
    void *node = root;
    for (size_t seen = 1; node != NULL; seen++) {
        if (seen % 4096 == 0 && late(found)) return 0;
        uintptr_t tag = lxb.tag_id(node);
        int kind = tag < kinds_size ? kinds[tag] : 0;
        int visible = in_body && invisible == 0;
        if (kind == KIND_TEXT) {
            if (visible && append_text(found, node, &found->text)) return -1;
            if (title != NULL && append_text(found, node, &found->title)) return -1;
        } else if (kind == KIND_INVISIBLE) {
            invisible++;
        } else if (kind == KIND_BLOCK) {
            if (visible && append(&found->text, " ", 1)) return -1;
        } else if (kind == KIND_TITLE && !found->has_title) {
            found->has_title = 1;
            title = node;
        } else if (kind && enter(found, node, kind)) {
            return -1;
        }
        if (node == body) in_body = 1;
        void *child = lxb.first_child(node);
        if (child != NULL) {
            node = child;
            continue;
        }
        /* No children: leave this node, and each parent whose last child it was. */
        while (node != NULL) {
            tag = lxb.tag_id(node);
            kind = tag < kinds_size ? kinds[tag] : 0;
            if (kind == KIND_INVISIBLE) {
                invisible--;
            } else if (kind == KIND_BLOCK && in_body && invisible == 0) {
                if (append(&found->text, " ", 1)) return -1;
            }
            if (node == body) in_body = 0;
            if (node == title) title = NULL;
            if (node == root) return 0;
            void *next = lxb.next(node);
            if (next != NULL) {
                node = next;
                break;
            }
            node = lxb.parent(node);
        }
    }
    return 0;
}

/* The length of the whitespace character (as ``str.split`` reads it) at ``text``, 0 if none. */
static size_t space_at(const unsigned char *text, size_t left) {
    unsigned char c = text[0];
    if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f)) return 1;
    if (c == 0xc2 && left >= 2 && (text[1] == 0x85 || text[1] == 0xa0)) return 2;
    if (left < 3) return 0;
    if (c == 0xe1 && text[1] == 0x9a && text[2] == 0x80) return 3; /* U+1680 */
    if (c == 0xe2 && text[1] == 0x80 && (text[2] <= 0x8a || text[2] == 0xa8 || text[2] == 0xa9 || text[2] == 0xaf))
        return 3;                                                   /* U+2000 to U+200A, U+2028, U+2029, U+202F */
    if (c == 0xe2 && text[1] == 0x81 && text[2] == 0x9f) return 3; /* U+205F */
    if (c == 0xe3 && text[1] == 0x80 && text[2] == 0x80) return 3; /* U+3000 */
    return 0;
}

/* The length of the UTF-8 character at ``text`` as Python's strict decoder takes it, 0 where
 * it is not one (a stray or missing continuation byte, an overlong form, a surrogate, past
 * U+10FFFF). */
static size_t utf8_at(const unsigned char *text, size_t left) {
    unsigned char c = text[0];
    size_t length;
    unsigned char low = 0x80, high = 0xbf;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) length = 2;
    else if (c >= 0xe0 && c <= 0xef) length = 3;
    else if (c >= 0xf0 && c <= 0xf4) length = 4;
    else return 0;
    if (left < length) return 0;
    if (c == 0xe0) low = 0xa0;
    else if (c == 0xed) high = 0x9f;
    else if (c == 0xf0) low = 0x90;
    else if (c == 0xf4) high = 0x8f;
    if (text[1] < low || text[1] > high) return 0;
    for (size_t i = 2; i < length; i++)
        if (text[i] < 0x80 || text[i] > 0xbf) return 0;
    return length;
}

/* ``text`` squashed in place where it is UTF-8 (1), else left as it is (0). */
static int squash(Buffer *text) {
    unsigned char *data = (unsigned char *)text->data;
    size_t size = text->size, i = 0, out = 0, length;
    for (i = 0; i < size; i += length)
        if ((length = utf8_at(data + i, size - i)) == 0) return 0;
    int pending = 0;
    for (i = 0; i < size;) {
        size_t space = space_at(data + i, size - i);
        if (space) {
            pending = out > 0;
            i += space;
            continue;
        }
        if (pending) data[out++] = ' ';
        pending = 0;
        for (length = utf8_at(data + i, size - i); length > 0; length--) data[out++] = data[i++];
    }
    text->size = out;
    return 1;
}

static PyObject *value_object(Value value) {
    if (value.data == NULL) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8((const char *)value.data, (Py_ssize_t)value.size, "replace");
}

static PyObject *pairs_list(Pairs *pairs) {
    PyObject *list = PyList_New((Py_ssize_t)pairs->count);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < pairs->count; i++) {
        PyObject *first = value_object(pairs->items[i].first);
        PyObject *second = first ? value_object(pairs->items[i].second) : NULL;
        PyObject *pair = second ? PyTuple_Pack(2, first, second) : NULL;
        Py_XDECREF(first);
        Py_XDECREF(second);
        if (pair == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, pair);
    }
    return list;
}

static PyObject *result(Found *found) {
    PyObject *title, *base, *metas = NULL, *links = NULL, *anchors = NULL, *text = NULL;
    if (found->has_title)
        title = PyUnicode_DecodeUTF8(found->title.data ? found->title.data : "", (Py_ssize_t)found->title.size,
                                     "replace");
    else
        title = Py_NewRef(Py_None);
    base = found->has_base ? value_object(found->base) : Py_NewRef(Py_None);
    if (title && base && (metas = pairs_list(&found->metas)) && (links = pairs_list(&found->links)) &&
        (anchors = pairs_list(&found->anchors)))
        text = PyBytes_FromStringAndSize(found->text.data ? found->text.data : "", (Py_ssize_t)found->text.size);
    PyObject *walked = NULL;
    if (text != NULL)
        walked = Py_BuildValue("(OOOOOOOO)", found->has_head ? Py_True : Py_False, title, base, metas, links,
                               anchors, text, found->squashed ? Py_True : Py_False);
    Py_XDECREF(title);
    Py_XDECREF(base);
    Py_XDECREF(metas);
    Py_XDECREF(links);
    Py_XDECREF(anchors);
    Py_XDECREF(text);
    return walked;
}

static PyObject *walk(PyObject *self, PyObject *args) {
    Py_buffer html, kinds;
    double seconds = 0;
    Py_ssize_t chunk = 16384;
    if (!PyArg_ParseTuple(args, "y*y*|dn:walk", &html, &kinds, &seconds, &chunk)) return NULL;
    Found found = {0};
    unsigned int status = 1;
    Py_BEGIN_ALLOW_THREADS
    found.deadline = seconds > 0 ? now() + seconds : 0;
    found.document = lxb.document_create();
    if (found.document != NULL) {
        status = parse(&found, html.buf, (size_t)html.len, chunk > 0 ? (size_t)chunk : (size_t)html.len + 1);
        if (status == 0 && !found.overtime) found.failed = walk_tree(&found, kinds.buf, (size_t)kinds.len);
        if (status == 0 && !found.failed && !found.overtime) found.squashed = squash(&found.text);
    }
    Py_END_ALLOW_THREADS
    PyObject *walked = NULL;
    if (found.document == NULL || found.failed)
        PyErr_NoMemory();
    else if (found.overtime) {
        char message[64];
        snprintf(message, sizeof message, "not read within %g s of CPU", seconds);
        PyErr_SetString(PyExc_TimeoutError, message);
    }
    else if (status != 0)
        PyErr_Format(PyExc_ValueError, "lexbor could not parse the document (status %u)", status);
    else
        walked = result(&found);
    /* The values point into the document: freed once the Python objects are made. */
    Py_BEGIN_ALLOW_THREADS
    if (found.document != NULL) lxb.document_destroy(found.document);
    free(found.title.data);
    free(found.text.data);
    free(found.metas.items);
    free(found.links.items);
    free(found.anchors.items);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&html);
    PyBuffer_Release(&kinds);
    return walked;
}

/* lexbor's functions from selectolax's module, already loaded by its import. */
static int find_lexbor(void) {
    PyObject *module = PyImport_ImportModule("selectolax.lexbor");
    if (module == NULL) return -1;
    PyObject *file = PyObject_GetAttrString(module, "__file__");
    Py_DECREF(module);
    if (file == NULL) return -1;
    const char *path = PyUnicode_AsUTF8(file);
    void *library = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (library == NULL) {
        if (path) PyErr_Format(PyExc_ImportError, "selectolax's module %s is not loaded", path);
        Py_DECREF(file);
        return -1;
    }
    Py_DECREF(file);
    for (size_t i = 0; i < sizeof lxb_functions / sizeof lxb_functions[0]; i++) {
        void *function = dlsym(library, lxb_functions[i].name);
        if (function == NULL) {
            PyErr_Format(PyExc_ImportError, "selectolax's lexbor has no %s", lxb_functions[i].name);
            return -1;
        }
        memcpy((char *)&lxb + lxb_functions[i].offset, &function, sizeof function);
    }
    return 0;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS,
     "What extraction reads from an HTML document (UTF-8), in one walk, within ``seconds`` if not 0."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", NULL, -1, methods};

PyMODINIT_FUNC PyInit__walk(void) {
    if (find_lexbor() < 0) return NULL;
    return PyModule_Create(&module);
}
