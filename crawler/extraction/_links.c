/* The links of a page from its anchors, in one call: what crawler/extraction/html.py's
 * ``_collect_links`` does with a resolver of crawler/identity/resolve.py for an http(s) base, the
 * same result, with the answers the resolver's cache holds read without a Python call a link.
 * Built in place by scripts/compile.sh; without it the Python one runs.
 *
 *     collect_links(anchors, max_links, skipped_prefixes, parts, cache, miss)
 *         -> (links, followable, invalid)
 *
 * ``anchors`` is the walk's list of (href, rel); ``skipped_prefixes`` a tuple of ASCII strings
 * (links not followed at all, compared in lower case); ``parts`` the resolver's parts of the base
 * (origin, scheme with its colon, folder, the whole base) that a link's cache key takes by its
 * kind; ``cache`` the resolver's dict; ``miss(key, base)`` resolves a link the cache does not hold,
 * and keeps it there. A character that lower case could turn into several (outside ASCII) sends
 * that comparison to Python's own ``str.lower``. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

enum { ROOTED, ABSOLUTE, RELATIVE, OTHER };

typedef struct {
    Py_ssize_t max_links;
    PyObject *prefixes, *parts, *cache, *miss, *empty;
} Reading;

static Py_UCS4 at(PyObject *text, Py_ssize_t i) { return PyUnicode_READ_CHAR(text, i); }

static int is_slash(Py_UCS4 c) { return c == '/' || c == '\\'; }

static int is_alpha(Py_UCS4 c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static int in(Py_UCS4 c, const char *set) { return c < 128 && c != 0 && strchr(set, (int)c) != NULL; }

/* Which part of the base a link's answer depends on: resolve.py's _KIND, alternative by
 * alternative. The link is stripped, so it never ends with the newline before which the
 * expression's "$" would also match. */
static int kind_of(PyObject *href) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(href);
    if (n == 0) return OTHER;
    Py_UCS4 first = at(href, 0);
    if (is_slash(first)) {
        if (n == 1 || !in(at(href, 1), "/\\\t\r\n")) return ROOTED;
    }
    Py_ssize_t i = 0;
    if (is_alpha(first)) {
        for (i = 1; i < n; i++) {
            Py_UCS4 c = at(href, i);
            if (!(is_alpha(c) || (c >= '0' && c <= '9') || c == '+' || c == '.' || c == '-')) break;
        }
        i = i < n && at(href, i) == ':' ? i + 1 : 0;
    }
    if (i + 1 < n && is_slash(at(href, i)) && is_slash(at(href, i + 1))) return ABSOLUTE;
    if (first > 0x20 && !in(first, "/?#\\")) {
        for (i = 1; i < n && !in(at(href, i), ":/?#\\"); i++) {
        }
        if (i == n || in(at(href, i), "/?\\")) return RELATIVE;
    }
    return OTHER;
}

/* resolve.py's _without_fragment: a new reference. */
static PyObject *without_fragment(PyObject *href) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(href);
    Py_ssize_t hash = PyUnicode_FindChar(href, '#', 0, n, 1);
    if (hash == -2) return NULL;
    if (hash <= 0) return Py_NewRef(href);
    Py_UCS4 last = at(href, hash - 1);
    if (last <= ' ' || Py_UNICODE_ISSPACE(last)) return Py_NewRef(href);
    return PyUnicode_Substring(href, 0, hash);
}

/* Whether ``text`` (not empty) starts with one of the prefixes, in lower case: 1, 0 or -1. */
static int skipped(PyObject *text, PyObject *prefixes) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t p = 0; p < PyTuple_GET_SIZE(prefixes); p++) {
        PyObject *prefix = PyTuple_GET_ITEM(prefixes, p);
        Py_ssize_t length = PyUnicode_GET_LENGTH(prefix);
        if (length > n) continue;
        Py_ssize_t i = 0;
        for (; i < length; i++) {
            Py_UCS4 c = at(text, i);
            if (c >= 128) goto in_python;
            if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != at(prefix, i)) break;
        }
        if (i == length) return 1;
    }
    return 0;
in_python:;
    PyObject *lower = PyObject_CallMethod(text, "lower", NULL);
    if (lower == NULL) return -1;
    PyObject *name = PyUnicode_FromString("startswith");
    PyObject *starts = name == NULL ? NULL : PyObject_CallMethodOneArg(lower, name, prefixes);
    Py_XDECREF(name);
    Py_DECREF(lower);
    if (starts == NULL) return -1;
    int answer = PyObject_IsTrue(starts);
    Py_DECREF(starts);
    return answer;
}

/* Whether ``rel`` has "nofollow" in lower case: 1, 0 or -1. */
static int nofollow(PyObject *rel) {
    if (PyUnicode_IS_ASCII(rel)) {
        const char *text = (const char *)PyUnicode_DATA(rel);
        Py_ssize_t n = PyUnicode_GET_LENGTH(rel);
        for (Py_ssize_t i = 0; i + 8 <= n; i++) {
            Py_ssize_t k = 0;
            while (k < 8 && (text[i + k] | (text[i + k] >= 'A' && text[i + k] <= 'Z' ? 32 : 0)) == "nofollow"[k]) k++;
            if (k == 8) return 1;
        }
        return 0;
    }
    PyObject *lower = PyObject_CallMethod(rel, "lower", NULL);
    if (lower == NULL) return -1;
    PyObject *word = PyUnicode_FromString("nofollow");
    int answer = word == NULL ? -1 : PySequence_Contains(lower, word);
    Py_XDECREF(word);
    Py_DECREF(lower);
    return answer;
}

/* The link an href leads to (a new reference): "" where it is not followed at all, None where
 * it is not a fetchable URL; the resolver's cache is asked first. */
static PyObject *link_of(Reading *reading, PyObject *href) {
    PyObject *stripped;
    Py_ssize_t n = PyUnicode_GET_LENGTH(href);
    if (n && !Py_UNICODE_ISSPACE(at(href, 0)) && !Py_UNICODE_ISSPACE(at(href, n - 1)))
        stripped = Py_NewRef(href);
    else if ((stripped = PyObject_CallMethod(href, "strip", NULL)) == NULL)
        return NULL;
    int skip = PyUnicode_GET_LENGTH(stripped) == 0 ? 1 : skipped(stripped, reading->prefixes);
    if (skip != 0) {
        Py_DECREF(stripped);
        return skip < 0 ? NULL : Py_NewRef(reading->empty);
    }
    PyObject *reference = without_fragment(stripped);
    Py_DECREF(stripped);
    if (reference == NULL) return NULL;
    PyObject *key = PyTuple_Pack(2, PyTuple_GET_ITEM(reading->parts, kind_of(reference)), reference);
    Py_DECREF(reference);
    if (key == NULL) return NULL;
    PyObject *link = PyDict_GetItemWithError(reading->cache, key);
    if (link != NULL)
        Py_INCREF(link);
    else if (!PyErr_Occurred())
        link = PyObject_CallFunctionObjArgs(reading->miss, key, PyTuple_GET_ITEM(reading->parts, OTHER), NULL);
    Py_DECREF(key);
    return link;
}

/* One anchor into ``seen`` (its link) or ``invalid``: 0, or -1 with an exception. */
static int read_anchor(Reading *reading, PyObject *anchor, PyObject *read, PyObject *seen, Py_ssize_t *invalid) {
    PyObject *href = PyTuple_GET_ITEM(anchor, 0), *rel = PyTuple_GET_ITEM(anchor, 1);
    PyObject *link = PyDict_GetItemWithError(read, href);
    if (link == NULL) {
        if (PyErr_Occurred() || (link = link_of(reading, href)) == NULL) return -1;
        if (link != Py_None && !PyUnicode_Check(link)) {
            PyErr_Format(PyExc_TypeError, "a link resolves to a string or None, not %.200s", Py_TYPE(link)->tp_name);
            Py_DECREF(link);
            return -1;
        }
        int stored = PyDict_SetItem(read, href, link);
        Py_DECREF(link); /* held by ``read`` */
        if (stored < 0) return -1;
    }
    if (link == Py_None) {
        (*invalid)++;
        return 0;
    }
    if (PyUnicode_GET_LENGTH(link) == 0) return 0;
    int unfollowed = rel == Py_None ? 0 : PyUnicode_Check(rel) ? nofollow(rel) : -1;
    if (unfollowed < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "an anchor's rel is a string or None");
        return -1;
    }
    if (!unfollowed) return PyDict_SetItem(seen, link, Py_True);
    return PyDict_SetDefault(seen, link, Py_False) == NULL ? -1 : 0;
}

static int read_anchors(Reading *reading, PyObject *anchors, PyObject *seen, Py_ssize_t *invalid) {
    PyObject *read = PyDict_New(); /* href -> its link: a page repeats its links */
    if (read == NULL) return -1;
    int failed = -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(anchors); i++) {
        if (reading->max_links && PyDict_GET_SIZE(seen) >= reading->max_links) break;
        PyObject *anchor = PyList_GET_ITEM(anchors, i);
        if (!PyTuple_Check(anchor) || PyTuple_GET_SIZE(anchor) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(anchor, 0))) {
            PyErr_SetString(PyExc_TypeError, "an anchor is a tuple (href, rel)");
            goto done;
        }
        /* Held: resolving a link calls Python, which could change the list. */
        Py_INCREF(anchor);
        int read_one = read_anchor(reading, anchor, read, seen, invalid);
        Py_DECREF(anchor);
        if (read_one < 0) goto done;
    }
    failed = 0;
done:
    Py_DECREF(read);
    return failed;
}

static PyObject *collect_links(PyObject *module, PyObject *args) {
    PyObject *anchors;
    Reading reading;
    if (!PyArg_ParseTuple(args, "O!nO!O!O!O:collect_links", &PyList_Type, &anchors, &reading.max_links, &PyTuple_Type,
                          &reading.prefixes, &PyTuple_Type, &reading.parts, &PyDict_Type, &reading.cache, &reading.miss))
        return NULL;
    if (PyTuple_GET_SIZE(reading.parts) != 4) {
        PyErr_SetString(PyExc_ValueError, "parts: (origin, scheme, folder, base)");
        return NULL;
    }
    for (Py_ssize_t p = 0; p < PyTuple_GET_SIZE(reading.prefixes); p++) {
        PyObject *prefix = PyTuple_GET_ITEM(reading.prefixes, p);
        if (!PyUnicode_Check(prefix) || !PyUnicode_IS_ASCII(prefix)) {
            PyErr_SetString(PyExc_ValueError, "skipped_prefixes: ASCII strings");
            return NULL;
        }
    }
    PyObject *seen = PyDict_New(); /* link -> followable, in the order links first appear */
    reading.empty = PyUnicode_New(0, 0);
    Py_ssize_t invalid = 0;
    PyObject *result = NULL, *links = NULL, *followable = NULL;
    if (seen == NULL || reading.empty == NULL || read_anchors(&reading, anchors, seen, &invalid) < 0) goto done;
    if ((links = PyDict_Keys(seen)) == NULL || (followable = PyList_New(0)) == NULL) goto done;
    PyObject *link, *follows;
    Py_ssize_t position = 0;
    while (PyDict_Next(seen, &position, &link, &follows))
        if (follows == Py_True && PyList_Append(followable, link) < 0) goto done;
    result = Py_BuildValue("(OOn)", links, followable, invalid);
done:
    Py_XDECREF(links);
    Py_XDECREF(followable);
    Py_XDECREF(seen);
    Py_XDECREF(reading.empty);
    return result;
}

static PyMethodDef methods[] = {
    {"collect_links", collect_links, METH_VARARGS, "The links of a page from its anchors (see html.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_links", NULL, -1, methods};

PyMODINIT_FUNC PyInit__links(void) { return PyModule_Create(&module); }
