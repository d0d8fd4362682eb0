/* golden_mutate.h - test helpers that damage a golden file in one precise way
 * (through the HDF5 API, or by flipping a raw byte), so that the suites can
 * check each refusal of the reader and the CLI. Each returns 0 on success. */
#ifndef DL_GOLDEN_MUTATE_H
#define DL_GOLDEN_MUTATE_H

#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GM_FN static __attribute__((unused))

GM_FN int gm_copy(const char *src, const char *dst)
{
    FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
    char buf[65536];
    size_t n;
    int rc = (a && b) ? 0 : -1;
    while (!rc && (n = fread(buf, 1, sizeof buf, a)) > 0)
        if (fwrite(buf, 1, n, b) != n) rc = -1;
    if (a) fclose(a);
    if (b) fclose(b);
    return rc;
}

GM_FN hid_t gm_open(const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    return H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
}

/* Replace attribute obj@name with a scalar of type ftype holding *val (memory type mtype). */
GM_FN int gm_set_attr(const char *path, const char *obj, const char *name, hid_t ftype, hid_t mtype, const void *val)
{
    hid_t f = gm_open(path), s = H5Screate(H5S_SCALAR);
    if (f < 0) return -1;
    if (H5Aexists_by_name(f, obj, name, H5P_DEFAULT) > 0) H5Adelete_by_name(f, obj, name, H5P_DEFAULT);
    hid_t a = H5Acreate_by_name(f, obj, name, ftype, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = (a >= 0 && H5Awrite(a, mtype, val) >= 0) ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    H5Sclose(s);
    H5Fclose(f);
    return rc;
}

GM_FN int gm_set_attr_i64(const char *path, const char *obj, const char *name, int64_t v)
{
    return gm_set_attr(path, obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

GM_FN int gm_set_attr_str(const char *path, const char *obj, const char *name, const char *v)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    int rc = gm_set_attr(path, obj, name, t, t, &v);
    H5Tclose(t);
    return rc;
}

GM_FN int gm_delete(const char *path, const char *obj)
{
    hid_t f = gm_open(path);
    if (f < 0) return -1;
    int rc = H5Ldelete(f, obj, H5P_DEFAULT) >= 0 ? 0 : -1;
    H5Fclose(f);
    return rc;
}

/* Delete the attribute obj@name. */
GM_FN int gm_delete_attr(const char *path, const char *obj, const char *name)
{
    hid_t f = gm_open(path);
    if (f < 0) return -1;
    int rc = H5Adelete_by_name(f, obj, name, H5P_DEFAULT) >= 0 ? 0 : -1;
    H5Fclose(f);
    return rc;
}

/* Overwrite element `index` (row-major linear index) of dataset ds with *val (memory type mtype). */
GM_FN int gm_write_elem(const char *path, const char *ds, long long index, hid_t mtype, const void *val)
{
    hid_t f = gm_open(path);
    if (f < 0) return -1;
    hid_t d = H5Dopen2(f, ds, H5P_DEFAULT), s = d >= 0 ? H5Dget_space(d) : -1;
    int rc = -1;
    if (s >= 0) {
        hsize_t dims[8], coord[8], one = 1;
        int rank = H5Sget_simple_extent_dims(s, dims, NULL);
        long long rem = index;
        for (int i = rank - 1; i >= 0; i--) {
            coord[i] = (hsize_t)(rem % (long long)dims[i]);
            rem /= (long long)dims[i];
        }
        hid_t ms = H5Screate_simple(1, &one, NULL);
        if (H5Sselect_elements(s, H5S_SELECT_SET, 1, coord) >= 0 && H5Dwrite(d, mtype, ms, s, H5P_DEFAULT, val) >= 0)
            rc = 0;
        H5Sclose(ms);
        H5Sclose(s);
    }
    if (d >= 0) H5Dclose(d);
    H5Fclose(f);
    return rc;
}

/* Replace dataset ds by a zero-filled one of the given shape and type, with dtype attribute `dtype`. */
GM_FN int gm_replace(const char *path, const char *ds, hid_t ftype, int rank, const hsize_t *dims, const char *dtype)
{
    hid_t f = gm_open(path);
    if (f < 0) return -1;
    H5Ldelete(f, ds, H5P_DEFAULT);
    hid_t s = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(f, ds, ftype, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = d >= 0 ? 0 : -1;
    H5Sclose(s);
    if (d >= 0) H5Dclose(d);
    H5Fclose(f);
    if (rc == 0 && dtype) rc = gm_set_attr_str(path, ds, "dtype", dtype);
    return rc;
}

/* Flip one byte of the raw (stored) data of the first chunk of dataset ds, at
 * offset `at` into the chunk, without going through HDF5 (so no checksum is updated). */
GM_FN int gm_flip_raw_byte(const char *path, const char *ds, long long at)
{
    hid_t f = gm_open(path);
    if (f < 0) return -1;
    hid_t d = H5Dopen2(f, ds, H5P_DEFAULT);
    hsize_t off[8];
    unsigned mask;
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    int rc = (sp >= 0 && H5Dget_chunk_info(d, sp, 0, off, &mask, &addr, &size) >= 0) ? 0 : -1;
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    H5Fclose(f);
    if (rc || addr == HADDR_UNDEF || (hsize_t)at >= size) return -1;
    int fd = open(path, O_RDWR);
    if (fd < 0) return -1;
    unsigned char b;
    rc = -1;
    if (pread(fd, &b, 1, (off_t)(addr + (haddr_t)at)) == 1) {
        b ^= 0x5A;
        if (pwrite(fd, &b, 1, (off_t)(addr + (haddr_t)at)) == 1) rc = 0;
    }
    close(fd);
    return rc;
}

#endif
