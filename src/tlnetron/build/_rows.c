/* The companion's many small rows, made and surveyed in C (tlnetron.build.companion,
 * tlnetron.check.validation); both have a Python twin that gives the same answers.
 *
 * value_rows(out, kind, names, pairs) appends to ``out`` each (target, TensorStats)'s value
 * rows, as tlnetron.words.facts.stats_rows words them and tlnetron.build.companion._row
 * writes them: min, max, mean, std when present (floats to 7 significant digits), the NaN and
 * Inf counts, and the zero fraction when the tensor has elements; integers past 2**53 as
 * their digits. ``names`` are those seven rows' names, in that order.
 *
 * survey(rows) reads a schema-valid section once: (distinct, pairs, total, odd) = whether no
 * two rows share kind, target and name; the distinct (kind, target) pairs; the sum of the
 * float values; the values that are neither str, int nor float.
 *
 * rows_match(rows, spec) is the generated validators' fast answer for a list of objects
 * (codegen/compile_schema.py writes ``spec`` from their schema: scalars, arrays and nested
 * objects, patterns by the validator's own compiled search): True only when every row surely
 * matches it; False when one does not, or is of a kind it leaves to Python (a subclass, a
 * tuple, a value the spec has no check for), and the Python validator then decides and words
 * the failure.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static PyObject *K_KIND, *K_TARGET, *K_NAME, *K_VALUE;
static PyObject *A_STATS[4], *A_NAN, *A_INF, *A_ZERO, *A_NUMEL;

static const double P10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* float(f"{v:.7g}"): the double nearest the decimal v rounds to at 7 significant digits. */
static PyObject *sig7(double v) {
    double a = fabs(v);
    if (a == 0.0) return PyFloat_FromDouble(v); /* most tensors' zero fraction; keeps -0.0 */
    if (a >= 1e-15 && a < 1e15) {
        /* a * 10**k rounded once (10**k is exact): off by under 2e-9 from the exact product, so
         * it rounds to the same integer unless it lies that close to a half; r / 10**k is then
         * the correctly rounded quotient, which is what reading r's decimal digits back gives. */
        int k = 6 - (int)floor(log10(a));
        double scaled = k >= 0 ? a * P10[k] : a / P10[-k];
        double half = scaled - floor(scaled) - 0.5;
        if (scaled >= 1e6 && scaled < 1e7 && fabs(half) > 1e-6) {
            double r = nearbyint(scaled);
            return PyFloat_FromDouble(copysign(k >= 0 ? r / P10[k] : r * P10[-k], v));
        }
    }
    char *text = PyOS_double_to_string(v, 'g', 7, 0, NULL);
    if (text == NULL) return NULL;
    double back = PyOS_string_to_double(text, NULL, NULL);
    PyMem_Free(text);
    if (back == -1.0 && PyErr_Occurred()) return NULL;
    return PyFloat_FromDouble(back);
}

/* Netron reads numbers as doubles: an int (not a bool) past 2**53 is written as its digits. */
static PyObject *js_safe(PyObject *v) {
    if (!PyLong_Check(v) || PyBool_Check(v)) return Py_NewRef(v);
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred()) return NULL;
    const long long limit = 1LL << 53;
    if (overflow || x > limit || x < -limit) return PyObject_Str(v);
    return Py_NewRef(v);
}

/* Appends {kind, target, name, value} to out; steals value. */
static int append_row(PyObject *out, PyObject *kind, PyObject *target, PyObject *name, PyObject *value) {
    if (value == NULL) return -1;
    PyObject *row = _PyDict_NewPresized(4);
    int bad = row == NULL || PyDict_SetItem(row, K_KIND, kind) < 0 || PyDict_SetItem(row, K_TARGET, target) < 0
              || PyDict_SetItem(row, K_NAME, name) < 0 || PyDict_SetItem(row, K_VALUE, value) < 0
              || PyList_Append(out, row) < 0;
    Py_DECREF(value);
    Py_XDECREF(row);
    return bad ? -1 : 0;
}

static int stats_into(PyObject *out, PyObject *kind, PyObject *names, PyObject *target, PyObject *st) {
    for (int i = 0; i < 4; i++) {
        PyObject *v = PyObject_GetAttr(st, A_STATS[i]);
        if (v == NULL) return -1;
        if (v == Py_None) { Py_DECREF(v); continue; }
        PyObject *value = PyFloat_Check(v) ? sig7(PyFloat_AS_DOUBLE(v)) : js_safe(v);
        Py_DECREF(v);
        if (append_row(out, kind, target, PyTuple_GET_ITEM(names, i), value) < 0) return -1;
    }
    PyObject *counts[2] = {A_NAN, A_INF};
    for (int i = 0; i < 2; i++) {
        PyObject *v = PyObject_GetAttr(st, counts[i]);
        if (v == NULL) return -1;
        PyObject *value = js_safe(v);
        Py_DECREF(v);
        if (append_row(out, kind, target, PyTuple_GET_ITEM(names, 4 + i), value) < 0) return -1;
    }
    PyObject *numel = PyObject_GetAttr(st, A_NUMEL);
    if (numel == NULL) return -1;
    int any = PyObject_IsTrue(numel);
    PyObject *share = NULL;
    if (any > 0) {
        PyObject *zeros = PyObject_GetAttr(st, A_ZERO);
        share = zeros ? PyNumber_TrueDivide(zeros, numel) : NULL;
        Py_XDECREF(zeros);
    }
    Py_DECREF(numel);
    if (any < 0 || (any > 0 && share == NULL)) return -1;
    if (any == 0) return 0;
    double fraction = PyFloat_AsDouble(share);
    Py_DECREF(share);
    if (fraction == -1.0 && PyErr_Occurred()) return -1;
    return append_row(out, kind, target, PyTuple_GET_ITEM(names, 6), sig7(fraction));
}

static PyObject *value_rows(PyObject *self, PyObject *args) {
    PyObject *out, *kind, *names, *pairs;
    if (!PyArg_ParseTuple(args, "O!UO!O:value_rows", &PyList_Type, &out, &kind, &PyTuple_Type, &names, &pairs))
        return NULL;
    if (PyTuple_GET_SIZE(names) != 7) {
        PyErr_SetString(PyExc_ValueError, "names are the seven value rows' names");
        return NULL;
    }
    PyObject *fast = PySequence_Fast(pairs, "pairs are (target, statistics)");
    if (fast == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0))) {
            PyErr_SetString(PyExc_TypeError, "pairs are (target, statistics)");
            Py_DECREF(fast);
            return NULL;
        }
        if (stats_into(out, kind, names, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1)) < 0) {
            Py_DECREF(fast);
            return NULL;
        }
    }
    Py_DECREF(fast);
    Py_RETURN_NONE;
}

/* An open-addressing set of rows by some of their keys (row indices, 0 = empty). */
typedef struct {
    Py_ssize_t *slot;
    uint64_t *hash;
    size_t mask;
} table_t;

static int table_init(table_t *t, Py_ssize_t n) {
    size_t size = 8;
    while (size < (size_t)n * 2) size <<= 1;
    t->mask = size - 1;
    t->slot = calloc(size, sizeof(Py_ssize_t));
    t->hash = calloc(size, sizeof(uint64_t));
    return t->slot && t->hash ? 0 : -1;
}

static void table_free(table_t *t) {
    free(t->slot);
    free(t->hash);
}

static int same(PyObject *a, PyObject *b) {
    return a == b ? 1 : PyObject_RichCompareBool(a, b, Py_EQ);
}

/* Adds row i keyed by its first ``width`` fields: 1 when added, 0 when a row with equal keys is in, -1 on error. */
static int table_add(table_t *t, PyObject *(*keys)[3], Py_ssize_t i, int width) {
    uint64_t h = 0x345678;
    for (int k = 0; k < width; k++) {
        Py_hash_t part = PyObject_Hash(keys[i][k]);
        if (part == -1) return -1;
        h = (h ^ (uint64_t)part) * 0x100000001b3ull;
    }
    h ^= h >> 29;
    size_t at = (size_t)h & t->mask;
    while (t->slot[at]) {
        Py_ssize_t j = t->slot[at] - 1;
        if (t->hash[at] == h) {
            int equal = 1;
            for (int k = 0; k < width && equal > 0; k++) equal = same(keys[i][k], keys[j][k]);
            if (equal != 0) return equal < 0 ? -1 : 0;
        }
        at = (at + 1) & t->mask;
    }
    t->slot[at] = i + 1;
    t->hash[at] = h;
    return 1;
}

static PyObject *survey(PyObject *self, PyObject *arg) {
    PyObject *rows = PySequence_Fast(arg, "survey takes a list of rows");
    if (rows == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rows);
    PyObject *(*keys)[3] = malloc((n ? (size_t)n : 1) * sizeof *keys);
    table_t triples = {0}, doubles = {0};
    PyObject *pairs = PyList_New(0), *odd = PyList_New(0), *result = NULL;
    int distinct = 1;
    double total = 0.0;
    if (keys == NULL || table_init(&triples, n) < 0 || table_init(&doubles, n) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (pairs == NULL || odd == NULL) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PySequence_Fast_GET_ITEM(rows, i), *value;
        if (!PyDict_Check(row)) {
            PyErr_SetString(PyExc_TypeError, "a row is not an object");
            goto done;
        }
        PyObject *names[4] = {K_KIND, K_TARGET, K_NAME, K_VALUE}, *got[4];
        for (int k = 0; k < 4; k++) {
            got[k] = PyDict_GetItemWithError(row, names[k]);
            if (got[k] == NULL) {
                if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, names[k]);
                goto done;
            }
        }
        keys[i][0] = got[0], keys[i][1] = got[1], keys[i][2] = got[2], value = got[3];
        if (distinct) {
            int added = table_add(&triples, keys, i, 3);
            if (added < 0) goto done;
            distinct = added;
        }
        int new_pair = table_add(&doubles, keys, i, 2);
        if (new_pair < 0) goto done;
        if (new_pair) {
            PyObject *pair = PyTuple_Pack(2, keys[i][0], keys[i][1]);
            if (pair == NULL || PyList_Append(pairs, pair) < 0) { Py_XDECREF(pair); goto done; }
            Py_DECREF(pair);
        }
        PyTypeObject *cls = Py_TYPE(value);
        if (cls == &PyFloat_Type) total += PyFloat_AS_DOUBLE(value);
        else if (cls != &PyUnicode_Type && cls != &PyLong_Type && PyList_Append(odd, value) < 0) goto done;
    }
    result = Py_BuildValue("(OOdO)", distinct ? Py_True : Py_False, pairs, total, odd);
done:
    free(keys);
    table_free(&triples);
    table_free(&doubles);
    Py_XDECREF(pairs);
    Py_XDECREF(odd);
    Py_DECREF(rows);
    return result;
}

/* JSON types as the spec's masks spell them (codegen/compile_schema.py, ROW_TYPE_BITS). */
enum { T_STRING = 1, T_INTEGER = 2, T_NUMBER = 4, T_BOOLEAN = 8, T_ARRAY = 16, T_OBJECT = 32, T_NULL = 64 };

/* One property's check, read from the spec once per call:
 * (mask, enum, min_len, max_len, one_line, not_enum, items, pattern, object, minimum). */
typedef struct check {
    long mask;
    PyObject *in_set, *out_set; /* borrowed frozensets, or NULL */
    Py_ssize_t lo, hi;          /* hi < 0: no maximum */
    int one_line;
    PyObject *pattern;     /* borrowed: the validator's compiled search, or NULL */
    struct check *items;   /* NULL: any items */
    struct object *object; /* NULL: an object value is left to Python */
    PyObject *minimum;     /* borrowed int or float a number may not be below, or NULL */
} check_t;

typedef struct {
    PyObject *key; /* borrowed */
    int required;
    check_t check;
} prop_t;

/* An object's spec: (n_required, extra_allowed, {key: (required, check)}). */
typedef struct object {
    Py_ssize_t n_required;
    int extra_allowed, n_props;
    prop_t *props;
} object_t;

static int spec_error(void) {
    PyErr_SetString(PyExc_TypeError, "rows_match: malformed spec");
    return -1;
}

static int set_or_none(PyObject *v, PyObject **out) {
    if (v == Py_None) { *out = NULL; return 0; }
    if (!PyFrozenSet_CheckExact(v)) return spec_error();
    *out = v;
    return 0;
}

static void free_object(object_t *o);

static void free_check(check_t *c) {
    if (c->items != NULL) { free_check(c->items); free(c->items); }
    if (c->object != NULL) free_object(c->object);
}

static void free_object(object_t *o) {
    for (int k = 0; k < o->n_props; k++) free_check(&o->props[k].check);
    free(o->props);
    free(o);
}

static object_t *read_object(PyObject *spec, int depth);

/* Reads ``spec`` into ``c`` (freed by free_check, also after a failure). */
static int read_check(PyObject *spec, check_t *c, int depth) {
    c->items = NULL;
    c->object = NULL;
    if (depth > 32 || !PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != 10) return spec_error();
    PyObject *minimum = PyTuple_GET_ITEM(spec, 9);
    if (minimum != Py_None && !PyLong_CheckExact(minimum) && !PyFloat_CheckExact(minimum)) return spec_error();
    c->minimum = minimum == Py_None ? NULL : minimum;
    c->mask = PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    c->lo = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 2));
    c->hi = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 3));
    if (PyErr_Occurred()) return -1;
    c->one_line = PyTuple_GET_ITEM(spec, 4) == Py_True;
    if (set_or_none(PyTuple_GET_ITEM(spec, 1), &c->in_set) < 0 || set_or_none(PyTuple_GET_ITEM(spec, 5), &c->out_set) < 0)
        return -1;
    PyObject *pattern = PyTuple_GET_ITEM(spec, 7), *object = PyTuple_GET_ITEM(spec, 8), *items = PyTuple_GET_ITEM(spec, 6);
    if (pattern != Py_None && !PyCallable_Check(pattern)) return spec_error();
    c->pattern = pattern == Py_None ? NULL : pattern;
    if (object != Py_None && (c->object = read_object(object, depth + 1)) == NULL) return -1;
    if (items == Py_None) return 0;
    if ((c->items = calloc(1, sizeof(check_t))) == NULL) { PyErr_NoMemory(); return -1; }
    return read_check(items, c->items, depth + 1);
}

static object_t *read_object(PyObject *spec, int depth) {
    if (!PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != 3 || !PyDict_CheckExact(PyTuple_GET_ITEM(spec, 2))) {
        spec_error();
        return NULL;
    }
    PyObject *table = PyTuple_GET_ITEM(spec, 2), *key, *entry;
    object_t *o = calloc(1, sizeof(object_t));
    if (o == NULL || (o->props = calloc((size_t)PyDict_GET_SIZE(table) + 1, sizeof(prop_t))) == NULL) {
        free(o);
        PyErr_NoMemory();
        return NULL;
    }
    o->n_required = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 0));
    o->extra_allowed = PyObject_IsTrue(PyTuple_GET_ITEM(spec, 1));
    if (PyErr_Occurred() || o->extra_allowed < 0) { free_object(o); return NULL; }
    Py_ssize_t pos = 0, n_req = 0;
    while (PyDict_Next(table, &pos, &key, &entry)) {
        if (!PyUnicode_CheckExact(key) || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2) {
            spec_error();
            free_object(o);
            return NULL;
        }
        prop_t *p = &o->props[o->n_props++];
        p->key = key;
        p->required = PyTuple_GET_ITEM(entry, 0) == Py_True;
        n_req += p->required;
        if (read_check(PyTuple_GET_ITEM(entry, 1), &p->check, depth) < 0) { free_object(o); return NULL; }
    }
    if (n_req != o->n_required) { spec_error(); free_object(o); return NULL; }
    return o;
}

/* Whether a string holds a line break (CR or LF); -1 on an error. */
static int has_break(PyObject *v) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(v);
    if (PyUnicode_KIND(v) == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *p = PyUnicode_1BYTE_DATA(v);
        return memchr(p, '\n', (size_t)n) != NULL || memchr(p, '\r', (size_t)n) != NULL;
    }
    Py_ssize_t at = PyUnicode_FindChar(v, '\n', 0, n, 1);
    if (at == -1) at = PyUnicode_FindChar(v, '\r', 0, n, 1);
    return at == -2 ? -1 : at != -1;
}

static int object_matches(PyObject *row, const object_t *o);

/* 1: ``v`` surely matches ``c``; 0: it does not, or Python must decide; -1: an error. */
static int value_matches(PyObject *v, const check_t *c) {
    PyTypeObject *cls = Py_TYPE(v);
    int is_str = cls == &PyUnicode_Type;
    long bits;
    if (is_str) bits = T_STRING;
    else if (cls == &PyBool_Type) bits = T_BOOLEAN;
    else if (cls == &PyLong_Type) bits = T_INTEGER | T_NUMBER;
    else if (cls == &PyFloat_Type) bits = T_NUMBER; /* an integral float as "integer": Python decides */
    else if (cls == &PyList_Type) bits = T_ARRAY;
    else if (cls == &PyDict_Type) bits = T_OBJECT;
    else if (v == Py_None) bits = T_NULL;
    else return 0; /* tuples, subclasses: left to Python */
    if (!(c->mask & bits)) return 0;
    if (c->in_set != NULL) { /* every member is a string: only a string can equal one */
        if (!is_str) return 0;
        int found = PySet_Contains(c->in_set, v);
        if (found <= 0) return found;
    }
    if (is_str) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(v);
        if (n < c->lo || (c->hi >= 0 && n > c->hi)) return 0;
        if (c->one_line) {
            int broken = has_break(v);
            if (broken) return broken < 0 ? -1 : 0;
        }
        if (c->out_set != NULL) {
            int found = PySet_Contains(c->out_set, v);
            if (found) return found < 0 ? -1 : 0;
        }
        if (c->pattern != NULL) {
            PyObject *found = PyObject_CallOneArg(c->pattern, v);
            if (found == NULL) return -1;
            int hit = found != Py_None;
            Py_DECREF(found);
            if (!hit) return 0;
        }
    }
    if ((bits & T_NUMBER) && c->minimum != NULL) { /* Python's own comparison: NaN is below nothing */
        int below = PyObject_RichCompareBool(v, c->minimum, Py_LT);
        if (below) return below < 0 ? -1 : 0;
    }
    if (bits == T_ARRAY && c->items != NULL) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
            int ok = value_matches(PyList_GET_ITEM(v, i), c->items);
            if (ok <= 0) return ok;
        }
    }
    if (bits == T_OBJECT) return c->object == NULL ? 0 : object_matches(v, c->object);
    return 1;
}

/* 1: ``row`` is a dict that surely matches ``o``; 0: not, or Python must decide; -1: an error. */
static int object_matches(PyObject *row, const object_t *o) {
    PyObject *key, *value;
    if (!PyDict_CheckExact(row)) return 0;
    /* Required keys by lookup (the rows' keys are the interned names): no walk over the row. */
    for (int k = 0; k < o->n_props; k++) {
        if (!o->props[k].required) continue;
        value = PyDict_GetItemWithError(row, o->props[k].key);
        if (value == NULL) return PyErr_Occurred() ? -1 : 0;
        int ok = value_matches(value, &o->props[k].check);
        if (ok <= 0) return ok;
    }
    if (PyDict_GET_SIZE(row) == o->n_required) return 1;
    /* More keys than required: each other one is an optional property, or extra. */
    Py_ssize_t at = 0;
    while (PyDict_Next(row, &at, &key, &value)) {
        if (!PyUnicode_CheckExact(key)) return 0;
        int k = 0;
        while (k < o->n_props && o->props[k].key != key) k++; /* the keys are mostly the same interned names */
        if (k == o->n_props)
            for (k = 0; k < o->n_props && PyUnicode_Compare(o->props[k].key, key) != 0; k++) {}
        if (PyErr_Occurred()) return -1;
        if (k == o->n_props) {
            if (!o->extra_allowed) return 0;
            continue;
        }
        if (o->props[k].required) continue;
        int ok = value_matches(value, &o->props[k].check);
        if (ok <= 0) return ok;
    }
    return 1;
}

/* spec = (n_required, extra_allowed, {key: (required, check)}) */
static PyObject *rows_match(PyObject *self, PyObject *args) {
    PyObject *rows, *spec;
    if (!PyArg_ParseTuple(args, "OO!:rows_match", &rows, &PyTuple_Type, &spec)) return NULL;
    object_t *o = read_object(spec, 0);
    if (o == NULL) return NULL;
    int ok = PyList_CheckExact(rows);
    for (Py_ssize_t i = 0; ok > 0 && i < PyList_GET_SIZE(rows); i++) ok = object_matches(PyList_GET_ITEM(rows, i), o);
    free_object(o);
    if (ok < 0) return NULL;
    return PyBool_FromLong(ok);
}

static PyMethodDef methods[] = {
    {"value_rows", value_rows, METH_VARARGS, "Append each (target, TensorStats)'s value rows to out."},
    {"survey", survey, METH_O, "(distinct, pairs, float total, odd values) of a schema-valid section's rows."},
    {"rows_match", rows_match, METH_VARARGS, "True when every row surely matches the generated row spec."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rows", NULL, -1, methods};

static PyObject *intern(const char *s) { return PyUnicode_InternFromString(s); }

PyMODINIT_FUNC PyInit__rows(void) {
    K_KIND = intern("kind"), K_TARGET = intern("target"), K_NAME = intern("name"), K_VALUE = intern("value");
    A_STATS[0] = intern("min"), A_STATS[1] = intern("max"), A_STATS[2] = intern("mean"), A_STATS[3] = intern("std");
    A_NAN = intern("nan_count"), A_INF = intern("inf_count"), A_ZERO = intern("zero_count"), A_NUMEL = intern("numel");
    if (!K_KIND || !K_TARGET || !K_NAME || !K_VALUE || !A_STATS[0] || !A_STATS[1] || !A_STATS[2] || !A_STATS[3]
        || !A_NAN || !A_INF || !A_ZERO || !A_NUMEL)
        return NULL;
    return PyModule_Create(&module);
}
