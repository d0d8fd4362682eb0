/* h5io.c - the one HDF5 layer of the harness (dl_h5.h): checked calls, one message
 * style, typed scalar attributes written and read with their checks. */
#include "dl_h5.h"

#include <stdio.h>
#include <string.h>

#include "../ref/dl_common.h"

static herr_t h5_err_walk(unsigned n, const H5E_error2_t *e, void *data)
{
    if (n == 0 && e->desc) snprintf((char *)data, 200, "%s", e->desc);
    return 0;
}

/* Record the failure of an HDF5 call: the function name is the identifier
 * before '(' in the stringified call (after any "x = "). */
void dl_h5_fail(const char *path, const char *call, const char *obj)
{
    char fn[64] = "HDF5 call", detail[200] = "";
    const char *s = strstr(call, "H5");
    if (s) {
        size_t k = 0;
        while (s[k] && s[k] != '(' && k + 1 < sizeof fn) k++;
        memcpy(fn, s, k);
        fn[k] = 0;
    }
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, h5_err_walk, detail);
    H5Eclear2(H5E_DEFAULT);
    dl_fail("%s: %s failed on %s%s%s%s", path, fn, obj, detail[0] ? " (" : "", detail, detail[0] ? ")" : "");
}

void dl_h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

int dl_h5_has(const dl_h5 *h, const char *objname, const char *name)
{
    htri_t ex = H5Aexists_by_name(h->file, objname, name, H5P_DEFAULT);
    return ex > 0 ? 1 : ex == 0 ? 0 : -1;
}

static int attr_write(const dl_h5 *w, hid_t obj, const char *objname, const char *name, hid_t ftype, hid_t mtype,
                      const void *val)
{
    const char *path = w->path;
    char where[160];
    hid_t s = -1, a = -1;
    int rc = -1;
    snprintf(where, sizeof where, "attribute %s@%s", objname, name);
    H5_CHECK(s = H5Screate(H5S_SCALAR), where);
    H5_CHECK(a = H5Acreate2(obj, name, ftype, s, H5P_DEFAULT, H5P_DEFAULT), where);
    H5_CHECK(H5Awrite(a, mtype, val), where);
    rc = 0;
fail:
    if (a >= 0) H5Aclose(a);
    if (s >= 0) H5Sclose(s);
    return rc;
}

int dl_h5_put_i64(const dl_h5 *w, hid_t obj, const char *objname, const char *name, int64_t v)
{
    return attr_write(w, obj, objname, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}
int dl_h5_put_u64(const dl_h5 *w, hid_t obj, const char *objname, const char *name, uint64_t v)
{
    return attr_write(w, obj, objname, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v);
}
int dl_h5_put_f64(const dl_h5 *w, hid_t obj, const char *objname, const char *name, double v)
{
    return attr_write(w, obj, objname, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}
int dl_h5_put_str(const dl_h5 *w, hid_t obj, const char *objname, const char *name, const char *v)
{
    const char *path = w->path;
    char where[160];
    hid_t t = -1;
    int rc = -1;
    snprintf(where, sizeof where, "attribute %s@%s", objname, name);
    H5_CHECK(t = H5Tcopy(H5T_C_S1), where);
    H5_CHECK(H5Tset_size(t, H5T_VARIABLE), where);
    H5_CHECK(H5Tset_cset(t, H5T_CSET_UTF8), where);
    rc = attr_write(w, obj, objname, name, t, t, &v);
fail:
    if (t >= 0) H5Tclose(t);
    return rc;
}

/* Open attribute objname@name; checks it is scalar (one element) and of class cls. */
static hid_t attr_open(const dl_h5 *r, const char *objname, const char *name, H5T_class_t cls)
{
    const char *path = r->path;
    char where[160];
    hid_t a = -1, t = -1, s = -1;
    snprintf(where, sizeof where, "attribute %s@%s", objname, name);
    htri_t ex = H5Aexists_by_name(r->file, objname, name, H5P_DEFAULT);
    if (ex <= 0) {
        dl_fail("%s: attribute %s@%s is missing", path, objname, name);
        return -1;
    }
    H5_CHECK(a = H5Aopen_by_name(r->file, objname, name, H5P_DEFAULT, H5P_DEFAULT), where);
    H5_CHECK(t = H5Aget_type(a), where);
    H5_CHECK(s = H5Aget_space(a), where);
    if (H5Tget_class(t) != cls || H5Sget_simple_extent_npoints(s) != 1) {
        dl_fail("%s: attribute %s@%s must be a single %s", path, objname, name,
                cls == H5T_STRING ? "string" : cls == H5T_INTEGER ? "integer" : "float");
        goto fail;
    }
    H5Tclose(t);
    H5Sclose(s);
    return a;
fail:
    if (t >= 0) H5Tclose(t);
    if (s >= 0) H5Sclose(s);
    if (a >= 0) H5Aclose(a);
    return -1;
}

static int attr_read_num(const dl_h5 *r, const char *objname, const char *name, H5T_class_t cls, hid_t mtype,
                         void *out)
{
    const char *path = r->path;
    char where[160];
    snprintf(where, sizeof where, "attribute %s@%s", objname, name);
    hid_t a = attr_open(r, objname, name, cls);
    int rc = -1;
    if (a < 0) return -1;
    H5_CHECK(H5Aread(a, mtype, out), where);
    rc = 0;
fail:
    H5Aclose(a);
    return rc;
}
int dl_h5_get_i64(const dl_h5 *r, const char *o, const char *name, int64_t *v)
{
    return attr_read_num(r, o, name, H5T_INTEGER, H5T_NATIVE_INT64, v);
}
int dl_h5_get_u64(const dl_h5 *r, const char *o, const char *name, uint64_t *v)
{
    return attr_read_num(r, o, name, H5T_INTEGER, H5T_NATIVE_UINT64, v);
}
int dl_h5_get_num(const dl_h5 *r, const char *o, const char *name, double *v)
{
    hid_t a = -1, t = -1;
    const int cls = (a = H5Aopen_by_name(r->file, o, name, H5P_DEFAULT, H5P_DEFAULT)) >= 0 && (t = H5Aget_type(a)) >= 0
                        ? (int)H5Tget_class(t)
                        : -1;
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    if (cls == H5T_INTEGER) {
        int64_t i;
        DL_TRY(dl_h5_get_i64(r, o, name, &i));
        *v = (double)i;
        return 0;
    }
    return dl_h5_get_f64(r, o, name, v);
}
int dl_h5_get_f64(const dl_h5 *r, const char *o, const char *name, double *v)
{
    return attr_read_num(r, o, name, H5T_FLOAT, H5T_NATIVE_DOUBLE, v);
}

int dl_h5_get_str(const dl_h5 *r, const char *objname, const char *name, char *buf, size_t n)
{
    const char *path = r->path;
    char where[160];
    snprintf(where, sizeof where, "attribute %s@%s", objname, name);
    hid_t a = attr_open(r, objname, name, H5T_STRING), ft = -1, mt = -1;
    int rc = -1;
    if (a < 0) return -1;
    H5_CHECK(ft = H5Aget_type(a), where);
    H5_CHECK(mt = H5Tcopy(H5T_C_S1), where);
    H5_CHECK(H5Tset_cset(mt, H5Tget_cset(ft)), where);
    if (H5Tis_variable_str(ft) > 0) {
        char *s = NULL;
        H5_CHECK(H5Tset_size(mt, H5T_VARIABLE), where);
        H5_CHECK(H5Aread(a, mt, &s), where);
        if (!s || strlen(s) >= n) {
            dl_fail("%s: attribute %s@%s is empty or longer than %zu characters", path, objname, name, n - 1);
            if (s) H5free_memory(s);
            goto fail;
        }
        snprintf(buf, n, "%s", s);
        H5free_memory(s);
    } else {
        size_t sz = H5Tget_size(ft);
        if (sz + 1 > n) {
            dl_fail("%s: attribute %s@%s is %zu characters, over %zu", path, objname, name, sz, n - 1);
            goto fail;
        }
        H5_CHECK(H5Tset_size(mt, sz + 1), where);
        H5_CHECK(H5Aread(a, mt, buf), where);
        buf[sz] = 0;
    }
    rc = 0;
fail:
    if (mt >= 0) H5Tclose(mt);
    if (ft >= 0) H5Tclose(ft);
    H5Aclose(a);
    return rc;
}

