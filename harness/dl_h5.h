/* dl_h5.h - the one HDF5 layer of the harness (harness/h5io.c): HDF5 calls checked
 * with one message style ("<file>: <H5 function> failed on <object> (<HDF5's
 * innermost message>)"), libhdf5's own error printing silenced, and typed scalar
 * attributes - int64, uint64, float64, UTF-8 string - written and read with
 * their checks (present, one element, of the expected class, fits the buffer).
 * Used by the golden file (golden.c), candidates (candidate.c) and results
 * tables (results.c). */
#ifndef DL_H5_H
#define DL_H5_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

/* A file being read or written: its path (for messages) and its id. */
typedef struct {
    const char *path;
    hid_t file;
} dl_h5;

/* Silence libhdf5's error printing (we report one line instead). */
void dl_h5_quiet(void);
/* Record the failure of an HDF5 call `call` (its text) on object `obj` of file path. */
void dl_h5_fail(const char *path, const char *call, const char *obj);

/* H5_CHECK(call, obj): run an HDF5 call; if it returns a negative value, record
 * the failure with dl_h5_fail and jump to `fail`. Needs `path` (the file) and a
 * `fail:` label in scope. */
#define H5_CHECK(call, obj)                                  \
    do {                                                     \
        if ((call) < 0) {                                    \
            dl_h5_fail(path, #call, (obj));                  \
            goto fail;                                       \
        }                                                    \
    } while (0)

/* Write a scalar attribute `name` on obj (objname names it in messages). */
int dl_h5_put_i64(const dl_h5 *h, hid_t obj, const char *objname, const char *name, int64_t v);
int dl_h5_put_u64(const dl_h5 *h, hid_t obj, const char *objname, const char *name, uint64_t v);
int dl_h5_put_f64(const dl_h5 *h, hid_t obj, const char *objname, const char *name, double v);
/* A variable-length UTF-8 string (h5py reads it as str). */
int dl_h5_put_str(const dl_h5 *h, hid_t obj, const char *objname, const char *name, const char *v);

/* 1 if objname@name exists, 0 if not, -1 if the object itself cannot be queried. */
int dl_h5_has(const dl_h5 *h, const char *objname, const char *name);
/* Read objname@name: a single integer / float (or integer) / string (variable or
 * fixed length, at most n-1 characters). 0 read; -1 recorded ("<file>: attribute
 * <obj>@<name> is missing", "must be a single integer", "is N characters, over M"...). */
int dl_h5_get_i64(const dl_h5 *h, const char *objname, const char *name, int64_t *v);
int dl_h5_get_u64(const dl_h5 *h, const char *objname, const char *name, uint64_t *v);
int dl_h5_get_f64(const dl_h5 *h, const char *objname, const char *name, double *v);
/* A float or an integer attribute, as a double. */
int dl_h5_get_num(const dl_h5 *h, const char *objname, const char *name, double *v);
int dl_h5_get_str(const dl_h5 *h, const char *objname, const char *name, char *buf, size_t n);

#endif
