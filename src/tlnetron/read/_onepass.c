/* One read of each captured tensor for its activation statistics (tlnetron.read.stats).
 *
 * onepass(items) takes a list of (data_ptr, kind, sizes, strides) for CPU tensors (kinds:
 * float32, float64, int64, int32, int16, int8, uint8, bool, numbered from 0) and returns,
 * per item, (min, max, mean, var, zeros, nans, infs) over the finite elements, then numel:
 * sums in double, exact counts and extremes (ints for the integer kinds). Most tensors are read
 * once; one holding a NaN or Inf is read again to measure its finite elements, and one whose
 * spread is too small beside its mean for the sum of squares to state it is read again for
 * the spread about the mean. mean and var are None when nothing is finite, or when the sums
 * leave double's range (the caller then asks torch). The caller keeps the tensors alive;
 * the whole list is read without the GIL, so a Python thread can run beside it.
 *
 * start(items, keep) runs the same read on a native thread, begun at once (see there).
 *
 * enqueue(state, at, t) queues one tensor for it, with the checks the caller's Python would
 * make for a plain CPU tensor done in one call (see there).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <pthread.h>
#include <unistd.h>
#endif

#define MAXDIM 16
#define CHUNK (1 << 20) /* elements per block: its 32-bit counters cannot overflow */
#define GATHER 2048     /* elements gathered into a dense buffer at a time */

enum { K_F32, K_F64, K_I64, K_I32, K_I16, K_I8, K_U8, K_BOOL, K_COUNT };
static const Py_ssize_t WIDTH[K_COUNT] = {4, 8, 8, 4, 2, 1, 1, 1};
/* The kinds' torch dtype names, in kind order: the module's KINDS, which the caller numbers by. */
static const char *KIND_NAMES[K_COUNT] = {"float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"};
enum { P_MAIN, P_FINITE, P_SPREAD };

typedef struct {
    const char *data;
    int kind, ndim, pass, seen, ok;
    Py_ssize_t size[MAXDIM], stride[MAXDIM]; /* strides in elements */
    double lo, hi, sum, sq, mean, var, spread;
    long long ilo, ihi, numel, zeros, nonfinite, nans, infs;
} item_t;

typedef struct {
    double lo, hi, sum, sq;
    long long ilo, ihi;
    uint32_t zeros, nonfinite;
} block_t;

/* Built with finite-math flags (so min and max vectorise): NaN and Inf are told by their bits. */
#define EXP64 0x7ff0000000000000ull
static int finite_bits(double x) {
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    return (bits & EXP64) != EXP64;
}

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
        nf += (bits & EXP64) == EXP64;
        z += x == 0.0;
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        s += x;
        q += x * x;
    }
    b->lo = lo; b->hi = hi; b->sum = s; b->sq = q; b->zeros = z; b->nonfinite = nf;
}

/* Integers: exact extremes, sums in double (as torch's std_mean of t.double()). */
VECTOR_CLONES static void run_i64(const int64_t *p, Py_ssize_t n, block_t *b) {
    int64_t lo = p[0], hi = p[0];
    double s = 0.0, q = 0.0;
    uint32_t z = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t x = p[i];
        z += x == 0;
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        double d = (double)x;
        s += d;
        q += d * d;
    }
    b->ilo = lo; b->ihi = hi; b->sum = s; b->sq = q; b->zeros = z; b->nonfinite = 0;
}

static void add_block(item_t *it, const block_t *b) {
    if (!it->seen) { it->lo = b->lo; it->hi = b->hi; it->ilo = b->ilo; it->ihi = b->ihi; it->seen = 1; }
    else {
        it->lo = b->lo < it->lo ? b->lo : it->lo;
        it->hi = b->hi > it->hi ? b->hi : it->hi;
        it->ilo = b->ilo < it->ilo ? b->ilo : it->ilo;
        it->ihi = b->ihi > it->ihi ? b->ihi : it->ihi;
    }
    it->sum += b->sum; it->sq += b->sq; it->zeros += b->zeros; it->nonfinite += b->nonfinite;
}

/* m elements `step` apart, converted to int64 / double (one switch per buffer, not per element). */
#define GATHER_AS(T, kind, p, m, step, out)                                                   \
    switch (kind) {                                                                           \
    case K_F32: for (Py_ssize_t i = 0; i < m; i++) out[i] = (T)((const float *)p)[i * step]; break; \
    case K_F64: for (Py_ssize_t i = 0; i < m; i++) out[i] = (T)((const double *)p)[i * step]; break; \
    case K_I64: for (Py_ssize_t i = 0; i < m; i++) out[i] = (T)((const int64_t *)p)[i * step]; break; \
    case K_I32: for (Py_ssize_t i = 0; i < m; i++) out[i] = (T)((const int32_t *)p)[i * step]; break; \
    case K_I16: for (Py_ssize_t i = 0; i < m; i++) out[i] = (T)((const int16_t *)p)[i * step]; break; \
    case K_I8: for (Py_ssize_t i = 0; i < m; i++) out[i] = (T)((const int8_t *)p)[i * step]; break;  \
    default: for (Py_ssize_t i = 0; i < m; i++) out[i] = (T)((const uint8_t *)p)[i * step]; break;  \
    }

/* The second reads (rare): the finite elements of a tensor holding a NaN or Inf, or the
 * spread about a known mean. */
static void finite_block(item_t *it, const double *x, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        double v = x[i];
        if (!finite_bits(v)) {
            uint64_t bits;
            memcpy(&bits, &v, sizeof bits);
            if (bits & 0x000fffffffffffffull) it->nans++;
            else it->infs++;
            continue;
        }
        if (!it->seen) { it->lo = it->hi = v; it->seen = 1; }
        it->zeros += v == 0.0;
        it->lo = v < it->lo ? v : it->lo;
        it->hi = v > it->hi ? v : it->hi;
        it->sum += v;
        it->sq += v * v;
    }
}

static void spread_block(item_t *it, const double *x, Py_ssize_t n) {
    double mean = it->mean, acc = 0.0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (finite_bits(x[i])) { double d = x[i] - mean; acc += d * d; }
    it->spread += acc;
}

/* A run of n elements `step` apart. */
static void run(item_t *it, const char *p, Py_ssize_t n, Py_ssize_t step) {
    Py_ssize_t width = WIDTH[it->kind];
    if (it->pass != P_MAIN) {
        double buf[GATHER];
        for (Py_ssize_t done = 0; done < n; done += GATHER) {
            Py_ssize_t m = n - done < GATHER ? n - done : GATHER;
            const char *q = p + done * step * width;
            GATHER_AS(double, it->kind, q, m, step, buf)
            if (it->pass == P_FINITE) finite_block(it, buf, m);
            else spread_block(it, buf, m);
        }
        return;
    }
    int dense = step == 1 && (it->kind == K_F32 || it->kind == K_F64 || it->kind == K_I64);
    Py_ssize_t cap = dense ? CHUNK : GATHER;
    for (Py_ssize_t done = 0; done < n; done += cap) {
        Py_ssize_t m = n - done < cap ? n - done : cap;
        const char *q = p + done * step * width;
        block_t b;
        if (it->kind == K_F32) {
            float buf[GATHER];
            if (!dense) for (Py_ssize_t i = 0; i < m; i++) buf[i] = ((const float *)q)[i * step];
            run_f32(dense ? (const float *)q : buf, m, &b);
        } else if (it->kind == K_F64) {
            double buf[GATHER];
            if (!dense) for (Py_ssize_t i = 0; i < m; i++) buf[i] = ((const double *)q)[i * step];
            run_f64(dense ? (const double *)q : buf, m, &b);
        } else {
            int64_t buf[GATHER];
            if (!dense) { GATHER_AS(int64_t, it->kind, q, m, step, buf) }
            run_i64(dense ? (const int64_t *)q : buf, m, &b);
        }
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

/* Every element once, in runs along the innermost (smallest-stride) dim. */
static void traverse(item_t *it) {
    Py_ssize_t width = WIDTH[it->kind];
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

static void measure(item_t *it) {
    /* from nothing: a forked child measures again what its parent's thread had begun */
    it->seen = it->ok = 0;
    it->sum = it->sq = it->spread = 0.0;
    it->zeros = it->nonfinite = it->nans = it->infs = 0;
    simplify(it);
    it->pass = P_MAIN;
    traverse(it);
    if (it->nonfinite) { /* counted again: the first read's compares may take a NaN for a zero */
        it->seen = 0; it->sum = it->sq = 0.0; it->zeros = 0;
        it->pass = P_FINITE;
        traverse(it);
    }
    long long finite = it->numel - it->nans - it->infs;
    if (finite == 0 || !finite_bits(it->sum) || !finite_bits(it->sq)) return;
    double mean = it->sum / (double)finite;
    double var = it->sq / (double)finite - mean * mean;
    if (var < 1e-3 * mean * mean) { /* also a negative var (rounding) when the mean is 0 */
        it->mean = mean; it->spread = 0.0;
        it->pass = P_SPREAD;
        traverse(it);
        var = it->spread / (double)finite;
        if (!finite_bits(var)) return;
    }
    it->mean = mean; it->var = var; it->ok = 1;
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

static PyObject *extreme(const item_t *it, int high) {
    if (it->numel == it->nans + it->infs) Py_RETURN_NONE;
    if (it->kind <= K_F64) return PyFloat_FromDouble(high ? it->hi : it->lo);
    return PyLong_FromLongLong(high ? it->ihi : it->ilo);
}

static PyObject *result(const item_t *it) {
    PyObject *lo = extreme(it, 0), *hi = extreme(it, 1);
    PyObject *mean = it->ok ? PyFloat_FromDouble(it->mean) : Py_NewRef(Py_None);
    PyObject *var = it->ok ? PyFloat_FromDouble(it->var) : Py_NewRef(Py_None);
    PyObject *row = NULL;
    if (lo && hi && mean && var)
        row = Py_BuildValue("(OOOOLLLL)", lo, hi, mean, var, it->zeros, it->nans, it->infs, it->numel);
    Py_XDECREF(lo); Py_XDECREF(hi); Py_XDECREF(mean); Py_XDECREF(var);
    return row;
}

/* The items, checked and copied into C: NULL (an exception set) when one is malformed. */
static item_t *parse(PyObject *arg, Py_ssize_t *count) {
    PyObject *items = PySequence_Fast(arg, "onepass takes a list of (data_ptr, kind, sizes, strides)");
    if (items == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    item_t *all = calloc(n ? (size_t)n : 1, sizeof(item_t));
    if (all == NULL) { Py_DECREF(items); PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *ptr, *sizes, *strides;
        item_t *it = &all[i];
        int ndim_strides;
        PyObject *item = PySequence_Fast_GET_ITEM(items, i), *kind;
        if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == 4 && PyLong_CheckExact(kind = PyTuple_GET_ITEM(item, 1))) {
            /* the tuples enqueue and Gather.add make, read without parsing a format */
            long k = PyLong_AsLong(kind);
            ptr = PyTuple_GET_ITEM(item, 0); sizes = PyTuple_GET_ITEM(item, 2); strides = PyTuple_GET_ITEM(item, 3);
            it->kind = k < 0 || k >= K_COUNT ? -1 : (int)k;
            if (k == -1 && PyErr_Occurred()) goto fail;
        } else if (!PyArg_ParseTuple(item, "OiOO", &ptr, &it->kind, &sizes, &strides))
            goto fail;
        if ((it->data = PyLong_AsVoidPtr(ptr), PyErr_Occurred())
            || read_dims(sizes, it->size, &it->ndim) < 0 || read_dims(strides, it->stride, &ndim_strides) < 0)
            goto fail;
        if (ndim_strides != it->ndim || it->kind < 0 || it->kind >= K_COUNT || it->data == NULL) {
            PyErr_SetString(PyExc_ValueError, "an item is not a (ptr, kind, sizes, strides) of a tensor kind read here");
            goto fail;
        }
        it->numel = 1;
        for (int k = 0; k < it->ndim; k++) {
            if (it->size[k] <= 0 || it->stride[k] < 0) {
                PyErr_SetString(PyExc_ValueError, "sizes must be positive and strides not negative");
                goto fail;
            }
            it->numel *= it->size[k];
        }
    }
    Py_DECREF(items);
    *count = n;
    return all;
fail:
    free(all);
    Py_DECREF(items);
    return NULL;
}

static void measure_all(item_t *all, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) measure(&all[i]);
}

static PyObject *results(const item_t *all, Py_ssize_t n) {
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = result(&all[i]);
        if (row == NULL) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, i, row);
    }
    return out;
}

static PyObject *onepass(PyObject *self, PyObject *arg) {
    Py_ssize_t n;
    item_t *all = parse(arg, &n);
    if (all == NULL) return NULL;
    Py_BEGIN_ALLOW_THREADS
    measure_all(all, n);
    Py_END_ALLOW_THREADS
    PyObject *out = results(all, n);
    free(all);
    return out;
}

/* start(items, keep): the same read on a native thread, begun at once; the Reading it returns
 * gives onepass's list from .result(), joining the thread (without the GIL) the first time.
 * A Python thread would hold the GIL while it starts and while it ends; this one never takes it.
 * ``keep`` (the tensors) is held until the thread is done, so their memory outlives the read. */
typedef struct {
    PyObject_HEAD
    item_t *all;
    Py_ssize_t n;
    PyObject *keep, *done;
    int running;
#ifndef _WIN32
    pthread_t thread;
    pid_t pid; /* the process whose thread it is: a forked child has none to join */
#endif
} reading_t;

#ifndef _WIN32
static void *reading_main(void *arg) {
    reading_t *r = arg;
    measure_all(r->all, r->n);
    return NULL;
}
#endif

/* Waits for the thread; in a forked child (no thread) reads again when the answer is wanted. */
static void reading_join(reading_t *r, int wanted) {
#ifndef _WIN32
    if (r->running) {
        Py_BEGIN_ALLOW_THREADS
        if (r->pid == getpid()) pthread_join(r->thread, NULL);
        else if (wanted) measure_all(r->all, r->n);
        Py_END_ALLOW_THREADS
        r->running = 0;
    }
#endif
}

static PyObject *reading_result(PyObject *self, PyObject *unused) {
    reading_t *r = (reading_t *)self;
    if (r->done == NULL) {
        reading_join(r, 1);
        if ((r->done = results(r->all, r->n)) == NULL) return NULL;
        free(r->all);
        r->all = NULL;
        Py_CLEAR(r->keep);
    }
    return Py_NewRef(r->done);
}

static void reading_dealloc(PyObject *self) {
    reading_t *r = (reading_t *)self;
    reading_join(r, 0);
    free(r->all);
    Py_XDECREF(r->keep);
    Py_XDECREF(r->done);
    PyObject_Free(self);
}

static PyMethodDef reading_methods[] = {
    {"result", reading_result, METH_NOARGS, "onepass's list for the items, waiting for the read once."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReadingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tlnetron.read._onepass.Reading",
    .tp_basicsize = sizeof(reading_t),
    .tp_dealloc = reading_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A single pass running on its own thread (see start).",
    .tp_methods = reading_methods,
};

static PyObject *start(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "start takes (items, keep)");
        return NULL;
    }
    Py_ssize_t n;
    item_t *all = parse(args[0], &n);
    if (all == NULL) return NULL;
    reading_t *r = PyObject_New(reading_t, &ReadingType);
    if (r == NULL) { free(all); return NULL; }
    r->all = all;
    r->n = n;
    r->keep = Py_NewRef(args[1]);
    r->done = NULL;
    r->running = 0;
#ifndef _WIN32
    r->pid = getpid();
    r->running = n > 0 && pthread_create(&r->thread, NULL, reading_main, r) == 0;
#endif
    if (!r->running) { /* no thread to be had: read here, as onepass does */
        Py_BEGIN_ALLOW_THREADS
        measure_all(all, n);
        Py_END_ALLOW_THREADS
    }
    return (PyObject *)r;
}

static PyObject *S_DTYPE, *S_SHAPE, *S_LAYOUT, *S_IS_CPU;

/* Appends ``v`` to ``lists[0..n)`` in turn, or to none of them. */
static int append_all(PyObject *const *lists, PyObject *const *v, int n) {
    for (int k = 0; k < n; k++) {
        if (PyList_Append(lists[k], v[k]) < 0) {
            while (k-- > 0) PySequence_DelItem(lists[k], PyList_GET_SIZE(lists[k]) - 1);
            return -1;
        }
    }
    return 0;
}

/* enqueue(state, at, t) with state = (kinds, strided, types, is_neg, data_ptr, stride, ats,
 * tensors, items): queues a CPU tensor onepass reads as it is (at, t and its item appended)
 * and answers True, or answers False, queueing nothing, for anything else: the caller's
 * Python path then decides (half floats, empty, off the CPU, subclasses, ...). */
static PyObject *enqueue(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyTuple_CheckExact(args[0]) || PyTuple_GET_SIZE(args[0]) != 9) {
        PyErr_SetString(PyExc_TypeError, "enqueue takes (state, at, tensor)");
        return NULL;
    }
    PyObject *const *st = &PyTuple_GET_ITEM(args[0], 0);
    PyObject *kinds = st[0], *strided = st[1], *types = st[2], *lists[3] = {st[6], st[7], st[8]};
    if (!PyDict_CheckExact(kinds) || !PyTuple_CheckExact(types) || !PyList_CheckExact(lists[0])
        || !PyList_CheckExact(lists[1]) || !PyList_CheckExact(lists[2])) {
        PyErr_SetString(PyExc_TypeError, "enqueue: malformed state");
        return NULL;
    }
    PyObject *t = args[2];
    int typed = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(types); k++) typed |= (PyObject *)Py_TYPE(t) == PyTuple_GET_ITEM(types, k);
    if (!typed) Py_RETURN_FALSE;
    PyObject *dtype = NULL, *layout = NULL, *cpu = NULL, *shape = NULL, *neg = NULL, *ptr = NULL, *stride = NULL;
    PyObject *item = NULL, *answer = NULL;
    if ((dtype = PyObject_GetAttr(t, S_DTYPE)) == NULL) goto done;
    PyObject *kind = PyDict_GetItemWithError(kinds, dtype);
    if (kind == NULL) { if (!PyErr_Occurred()) answer = Py_NewRef(Py_False); goto done; }
    if ((layout = PyObject_GetAttr(t, S_LAYOUT)) == NULL) goto done;
    if (layout != strided) { answer = Py_NewRef(Py_False); goto done; }
    if ((cpu = PyObject_GetAttr(t, S_IS_CPU)) == NULL) goto done;
    if (cpu != Py_True) { answer = Py_NewRef(Py_False); goto done; }
    if ((shape = PyObject_GetAttr(t, S_SHAPE)) == NULL) goto done;
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > MAXDIM) { answer = Py_NewRef(Py_False); goto done; }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(shape); k++) {
        PyObject *dim = PyTuple_GET_ITEM(shape, k);
        if (!PyLong_CheckExact(dim) || PyLong_AsSsize_t(dim) <= 0) {
            if (PyErr_Occurred()) goto done;
            answer = Py_NewRef(Py_False);
            goto done;
        }
    }
    if ((neg = PyObject_CallOneArg(st[3], t)) == NULL) goto done;
    if (neg != Py_False) { answer = Py_NewRef(Py_False); goto done; }
    if ((ptr = PyObject_CallOneArg(st[4], t)) == NULL || (stride = PyObject_CallOneArg(st[5], t)) == NULL) goto done;
    if ((item = PyTuple_Pack(4, ptr, kind, shape, stride)) == NULL) goto done;
    PyObject *values[3] = {args[1], t, item};
    if (append_all(lists, values, 3) == 0) answer = Py_NewRef(Py_True);
done:
    Py_XDECREF(dtype); Py_XDECREF(layout); Py_XDECREF(cpu); Py_XDECREF(shape);
    Py_XDECREF(neg); Py_XDECREF(ptr); Py_XDECREF(stride); Py_XDECREF(item);
    return answer;
}

static PyMethodDef methods[] = {
    {"onepass", onepass, METH_O,
     "Per (data_ptr, kind, sizes, strides): (min, max, mean, var, zeros, nans, infs) of the finite elements, and numel."},
    {"start", (PyCFunction)(void (*)(void))start, METH_FASTCALL,
     "onepass(items) on a native thread begun now: a Reading whose result() waits for it."},
    {"enqueue", (PyCFunction)(void (*)(void))enqueue, METH_FASTCALL,
     "Queue a CPU tensor onepass reads as it is (True), or queue nothing (False)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_onepass", NULL, -1, methods};

PyMODINIT_FUNC PyInit__onepass(void) {
    if ((S_DTYPE = PyUnicode_InternFromString("dtype")) == NULL || (S_SHAPE = PyUnicode_InternFromString("shape")) == NULL
        || (S_LAYOUT = PyUnicode_InternFromString("layout")) == NULL || (S_IS_CPU = PyUnicode_InternFromString("is_cpu")) == NULL)
        return NULL;
    if (PyType_Ready(&ReadingType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    PyObject *kinds = m ? PyTuple_New(K_COUNT) : NULL;
    for (int k = 0; kinds && k < K_COUNT; k++) {
        PyObject *name = PyUnicode_FromString(KIND_NAMES[k]);
        if (name == NULL) { Py_CLEAR(kinds); break; }
        PyTuple_SET_ITEM(kinds, k, name);
    }
    if (kinds == NULL || PyModule_AddObject(m, "KINDS", kinds) < 0) {
        Py_XDECREF(kinds);
        Py_XDECREF(m);
        return NULL;
    }
    return m;
}
