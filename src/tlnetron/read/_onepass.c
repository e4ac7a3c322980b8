/* One read of each captured tensor for its activation statistics (tlnetron.read.stats).
 *
 * onepass(items) takes a list of (data_ptr, kind, sizes, strides) for float32 (kind 0) and
 * float64 (kind 1) CPU tensors and returns, per item, (min, max, sum, sum of squares, zeros,
 * non-finite): sums in double, exact counts, read once. The caller keeps the tensors alive;
 * the whole list is read without the GIL, so a Python thread can run beside it. Whatever is
 * not plain (a NaN or Inf present, a sum out of range) the caller measures again with torch.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXDIM 16
#define CHUNK (1 << 20) /* elements per block: its 32-bit counters cannot overflow */

typedef struct {
    const char *data;
    int kind, ndim;
    Py_ssize_t size[MAXDIM], stride[MAXDIM]; /* strides in elements */
    double lo, hi, sum, sq;
    long long zeros, nonfinite;
    int seen;
} item_t;

typedef struct {
    double lo, hi, sum, sq;
    uint32_t zeros, nonfinite;
} block_t;

/* The dense runs are most of the work: on x86-64 Linux they are also built for AVX2, chosen
 * when the CPU has it (the wheel stays baseline x86-64). */
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

/* A dense run of float32: every lane independent, so the compiler reads it in vectors. */
VECTOR_CLONES static void run_f32(const float *p, Py_ssize_t n, block_t *b) {
    float lo = p[0], hi = p[0];
    double s = 0.0, q = 0.0;
    uint32_t z = 0, nf = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        float x = p[i];
        uint32_t bits;
        memcpy(&bits, &x, sizeof bits);
        nf += (bits & 0x7f800000u) == 0x7f800000u;
        z += x == 0.0f;
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        double d = (double)x;
        s += d;
        q += d * d;
    }
    b->lo = lo; b->hi = hi; b->sum = s; b->sq = q; b->zeros = z; b->nonfinite = nf;
}

VECTOR_CLONES static void run_f64(const double *p, Py_ssize_t n, block_t *b) {
    double lo = p[0], hi = p[0], s = 0.0, q = 0.0;
    uint32_t z = 0, nf = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double x = p[i];
        uint64_t bits;
        memcpy(&bits, &x, sizeof bits);
        nf += (bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
        z += x == 0.0;
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        s += x;
        q += x * x;
    }
    b->lo = lo; b->hi = hi; b->sum = s; b->sq = q; b->zeros = z; b->nonfinite = nf;
}

static void add_block(item_t *it, const block_t *b) {
    if (!it->seen) { it->lo = b->lo; it->hi = b->hi; it->seen = 1; }
    else {
        it->lo = b->lo < it->lo ? b->lo : it->lo;
        it->hi = b->hi > it->hi ? b->hi : it->hi;
    }
    it->sum += b->sum; it->sq += b->sq; it->zeros += b->zeros; it->nonfinite += b->nonfinite;
}

/* A strided run (one element every `step`), gathered into a dense buffer a block at a time. */
static void run_strided(item_t *it, const char *p, Py_ssize_t n, Py_ssize_t step) {
    union { float f[4096]; double d[2048]; } buf;
    Py_ssize_t cap = it->kind == 0 ? 4096 : 2048;
    for (Py_ssize_t done = 0; done < n; done += cap) {
        Py_ssize_t m = n - done < cap ? n - done : cap;
        block_t b;
        if (it->kind == 0) {
            const float *f = (const float *)p + done * step;
            for (Py_ssize_t i = 0; i < m; i++) buf.f[i] = f[i * step];
            run_f32(buf.f, m, &b);
        } else {
            const double *f = (const double *)p + done * step;
            for (Py_ssize_t i = 0; i < m; i++) buf.d[i] = f[i * step];
            run_f64(buf.d, m, &b);
        }
        add_block(it, &b);
    }
}

/* A run of n elements `step` apart; a dense one in blocks of CHUNK. */
static void run(item_t *it, const char *p, Py_ssize_t n, Py_ssize_t step) {
    if (step != 1) { run_strided(it, p, n, step); return; }
    for (Py_ssize_t done = 0; done < n; done += CHUNK) {
        Py_ssize_t m = n - done < CHUNK ? n - done : CHUNK;
        block_t b;
        if (it->kind == 0) run_f32((const float *)p + done, m, &b);
        else run_f64((const double *)p + done, m, &b);
        add_block(it, &b);
    }
}

/* Statistics do not depend on the order of reading: drop size-1 dims, put the largest
 * strides first and merge what is contiguous, so a transposed tensor reads as one run. */
static void simplify(item_t *it) {
    int n = 0;
    for (int k = 0; k < it->ndim; k++)
        if (it->size[k] != 1) { it->size[n] = it->size[k]; it->stride[n] = it->stride[k]; n++; }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && it->stride[j] > it->stride[j - 1]; j--) {
            Py_ssize_t s = it->size[j], t = it->stride[j];
            it->size[j] = it->size[j - 1]; it->stride[j] = it->stride[j - 1];
            it->size[j - 1] = s; it->stride[j - 1] = t;
        }
    int m = 0;
    for (int k = 0; k < n; k++) {
        if (m > 0 && it->stride[m - 1] == it->stride[k] * it->size[k]) {
            it->size[m - 1] *= it->size[k]; it->stride[m - 1] = it->stride[k];
        } else { it->size[m] = it->size[k]; it->stride[m] = it->stride[k]; m++; }
    }
    it->ndim = m;
}

static void measure(item_t *it) {
    simplify(it);
    Py_ssize_t width = it->kind == 0 ? 4 : 8;
    if (it->ndim == 0) { run(it, it->data, 1, 1); return; }
    int last = it->ndim - 1;
    Py_ssize_t index[MAXDIM] = {0};
    for (;;) {
        Py_ssize_t offset = 0;
        for (int k = 0; k < last; k++) offset += index[k] * it->stride[k];
        run(it, it->data + offset * width, it->size[last], it->stride[last]);
        int k = last - 1;
        while (k >= 0 && ++index[k] == it->size[k]) index[k--] = 0;
        if (k < 0) return;
    }
}

static int read_dims(PyObject *seq, Py_ssize_t *out, int *ndim) {
    PyObject *fast = PySequence_Fast(seq, "sizes and strides must be sequences");
    if (fast == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > MAXDIM) { Py_DECREF(fast); PyErr_SetString(PyExc_ValueError, "too many dimensions"); return -1; }
    for (Py_ssize_t k = 0; k < n; k++) {
        out[k] = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(fast, k));
        if (out[k] == -1 && PyErr_Occurred()) { Py_DECREF(fast); return -1; }
    }
    Py_DECREF(fast);
    *ndim = (int)n;
    return 0;
}

static PyObject *onepass(PyObject *self, PyObject *arg) {
    PyObject *items = PySequence_Fast(arg, "onepass takes a list of (data_ptr, kind, sizes, strides)");
    if (items == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    item_t *all = calloc(n ? (size_t)n : 1, sizeof(item_t));
    if (all == NULL) { Py_DECREF(items); return PyErr_NoMemory(); }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *ptr, *sizes, *strides;
        item_t *it = &all[i];
        int ndim_strides;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(items, i), "OiOO", &ptr, &it->kind, &sizes, &strides)
            || (it->data = PyLong_AsVoidPtr(ptr), PyErr_Occurred())
            || read_dims(sizes, it->size, &it->ndim) < 0 || read_dims(strides, it->stride, &ndim_strides) < 0)
            goto fail;
        if (ndim_strides != it->ndim || (it->kind != 0 && it->kind != 1) || it->data == NULL) {
            PyErr_SetString(PyExc_ValueError, "an item is not a float32 / float64 tensor's (ptr, kind, sizes, strides)");
            goto fail;
        }
        for (int k = 0; k < it->ndim; k++)
            if (it->size[k] <= 0 || it->stride[k] < 0) {
                PyErr_SetString(PyExc_ValueError, "sizes must be positive and strides not negative");
                goto fail;
            }
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) measure(&all[i]);
    Py_END_ALLOW_THREADS
    PyObject *out = PyList_New(n);
    if (out == NULL) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        item_t *it = &all[i];
        PyObject *row = Py_BuildValue("(ddddLL)", it->lo, it->hi, it->sum, it->sq, it->zeros, it->nonfinite);
        if (row == NULL) { Py_DECREF(out); goto fail; }
        PyList_SET_ITEM(out, i, row);
    }
    free(all);
    Py_DECREF(items);
    return out;
fail:
    free(all);
    Py_DECREF(items);
    return NULL;
}

static PyMethodDef methods[] = {
    {"onepass", onepass, METH_O, "Per (data_ptr, kind, sizes, strides): (min, max, sum, sum of squares, zeros, non-finite)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_onepass", NULL, -1, methods};

PyMODINIT_FUNC PyInit__onepass(void) { return PyModule_Create(&module); }
