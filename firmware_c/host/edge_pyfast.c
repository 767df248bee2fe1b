/* edge_pyfast.c - one CPython function for edge_sdk.runtime.c_interpreter's hot path: invoke without ctypes.
 *
 * ctypes spends ~0.5 us converting arguments on every call, which is most of an invoke of a tiny model. This
 * module is independent of the runtime (no link to libedge.so): Python hands it the address of
 * edge_host_invoke_copies (from ctypes) with the interpreter's arguments, and it calls that with the GIL
 * released. edge_sdk.runtime.c_build builds it beside the host library when Python's headers are installed and falls back
 * to ctypes otherwise.
 *
 *     invoke(function_address, interp_address, copies_address, n_copies) -> status (int)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int (*invoke_copies_fn)(void *interp, const void *copies, int32_t n);

static PyObject *edge_pyfast_invoke(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "invoke(function, interp, copies, n_copies) takes 4 arguments");
        return NULL;
    }
    void *fn = PyLong_AsVoidPtr(args[0]);
    void *interp = PyLong_AsVoidPtr(args[1]);
    void *copies = PyLong_AsVoidPtr(args[2]);
    long n = PyLong_AsLong(args[3]);
    if (PyErr_Occurred()) return NULL;
    if (fn == NULL || interp == NULL || n < 0 || n > INT32_MAX || (n > 0 && copies == NULL)) {
        PyErr_SetString(PyExc_ValueError, "invoke: null function/interpreter address or bad copy count");
        return NULL;
    }
    invoke_copies_fn call;
    memcpy(&call, &fn, sizeof call); /* object pointer -> function pointer without a cast C forbids */
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = call(interp, copies, (int32_t)n);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(status);
}

static PyMethodDef edge_pyfast_methods[] = {
    {"invoke", (PyCFunction)(void (*)(void))edge_pyfast_invoke, METH_FASTCALL,
     "invoke(function_address, interp_address, copies_address, n_copies) -> status"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef edge_pyfast_module = {
    PyModuleDef_HEAD_INIT, "_edge_pyfast", "edge_sdk.runtime.c_interpreter's invoke without ctypes", -1, edge_pyfast_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__edge_pyfast(void) { return PyModule_Create(&edge_pyfast_module); }
